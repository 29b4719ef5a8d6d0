//! MCP prompts as slash commands and MCP resources as `@SERVER:URI` attachments, through
//! the real binary and the fake provider, against the REAL reference server
//! `@modelcontextprotocol/server-everything` (npm) over stdio, installed outside the
//! repository by `scripts/mcp-servers` (run by `./test`, which exports
//! AGENTLS_MCP_EVERYTHING; run here when it is unset). Waiting for the server is a loop over
//! `agent/mcp/status` without a time bound.

mod common;

use agentls_dev::fake_provider::FakeProvider;
use common::agent::*;
use common::mcp::{installed, settled};
use common::Server;
use serde_json::{json, Value};
use std::path::PathBuf;

fn everything() -> &'static str {
    &installed().everything
}

fn options(fake: &FakeProvider, ws: &Workspace) -> Value {
    provider_options(
        fake,
        ws,
        json!({"mcpServers": {
            "everything": {"command": everything(), "args": ["stdio"]}
        }}),
    )
}

/// A server with a session whose everything server is ready.
async fn ready(fake: &FakeProvider, ws: &Workspace) -> (Server, String) {
    let server = server(ws, options(fake, ws), None).await;
    let session = new_session(&server).await;
    let entry = settled(&server, "everything").await;
    assert_eq!(entry["state"], "ready", "{entry}");
    (server, session)
}

fn last_user_content(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_string()
}

fn errors(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["kind"] == "error")
        .map(|u| u["message"].as_str().unwrap().to_string())
        .collect()
}

fn warnings(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["kind"] == "warning")
        .map(|u| u["message"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_everything_servers_prompts_are_commands_and_one_with_arguments_reaches_the_model() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_text(&["Sunny."], None));
    fake.push(FakeProvider::openai_text(&["Analysed."], None));
    let (server, session) = ready(&fake, &ws).await;

    let listed = session_request(&server, "agent/session/commands", &session).await;
    let commands = listed["commands"].as_array().unwrap();
    let row = |name: &str| {
        commands
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {listed}"))
            .clone()
    };
    let args = row("mcp__everything__args-prompt");
    assert_eq!(args["source"], "mcp");
    assert_eq!(args["argumentHint"], "<city> [state]");
    assert!(
        args["description"]
            .as_str()
            .unwrap()
            .contains("one required and one optional"),
        "{args}"
    );
    assert_eq!(
        row("mcp__everything__simple-prompt")["argumentHint"],
        Value::Null
    );
    assert_eq!(
        row("mcp__everything__resource-prompt")["argumentHint"],
        "<resourceType> <resourceId>"
    );
    // The built-ins are still first.
    assert_eq!(commands[0]["source"], "builtin");
    // And /help lists them after the others.
    let (updates, _) = run_turn(&server, &session, "/help").await;
    let help = answer_text(&updates);
    let section = help
        .split("MCP prompts:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{help}"));
    assert!(
        section.contains("/mcp__everything__args-prompt <city> [state]")
            && section.contains("(everything MCP)"),
        "{help}"
    );

    // Quotes group words; the arguments go to the server in order.
    let turn = prompt(
        &server,
        &session,
        "/mcp__everything__args-prompt \"New York\" NY",
    )
    .await;
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let sent = last_user_content(&requests[0].body);
    assert!(
        sent.contains(
            "<mcp_prompt server=\"everything\" prompt=\"args-prompt\" trust=\"untrusted\">\n\
             What's weather in New York, NY?\n</mcp_prompt>"
        ),
        "{sent}"
    );
    assert!(
        sent.contains("/mcp__everything__args-prompt \"New York\" NY"),
        "{sent}"
    );

    // A prompt with an embedded resource: its text is part of what is sent.
    let turn = prompt(
        &server,
        &session,
        "/mcp__everything__resource-prompt Text 1",
    )
    .await;
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let sent = last_user_content(&fake.requests()[1].body);
    assert!(
        sent.contains(
            "[resource demo://resource/dynamic/text/1]\nResource 1: This is a plaintext resource"
        ),
        "{sent}"
    );
    server.stop().await;

    // A reload shows what was sent.
    let again = common::agent::server(&ws, options(&fake, &ws), None).await;
    let loaded = session_request(&again, "agent/session/load", &session).await;
    let users: Vec<&str> = loaded["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "user")
        .map(|i| i["text"].as_str().unwrap())
        .collect();
    assert_eq!(users.len(), 2, "{loaded}");
    assert!(
        users[0].contains("What's weather in New York, NY?")
            && users[0].contains("trust=\"untrusted\""),
        "{loaded}"
    );
    again.stop().await;
}

#[tokio::test]
async fn a_missing_argument_an_unknown_prompt_and_a_server_error_send_nothing_and_the_session_goes_on(
) {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_text(&["Still here."], None));
    let (server, session) = ready(&fake, &ws).await;

    let (updates, _) = run_turn(&server, &session, "/mcp__everything__args-prompt").await;
    assert_eq!(stop_reason(&updates), "error", "{updates:?}");
    assert_eq!(
        errors(&updates),
        [
            "/mcp__everything__args-prompt needs <city> (Name of the city); usage: \
          /mcp__everything__args-prompt <city> [state]; nothing was sent"
        ]
    );

    let (updates, _) = run_turn(&server, &session, "/mcp__everything__no-such-prompt x").await;
    assert_eq!(stop_reason(&updates), "error", "{updates:?}");
    let error = &errors(&updates)[0];
    assert!(
        error.starts_with("/mcp__everything__no-such-prompt is not a prompt of a ready MCP server")
            && error.contains("/mcp__everything__simple-prompt"),
        "{error}"
    );

    // The server refuses the arguments: its reason reaches the editor.
    let turn = prompt(
        &server,
        &session,
        "/mcp__everything__resource-prompt Bogus 1",
    )
    .await;
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "error", "{updates:?}");
    let error = &errors(&updates)[0];
    assert!(
        error.starts_with("/mcp__everything__resource-prompt: the MCP server everything failed")
            && error.contains("Invalid resourceType: Bogus"),
        "{error}"
    );
    assert!(fake.requests().is_empty(), "nothing reached the model");

    // The session is still usable.
    let (updates, _) = run_turn(&server, &session, "hello").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert_eq!(answer_text(&updates), "Still here.");
    assert_eq!(fake.requests().len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn a_resource_mention_attaches_the_servers_document_and_an_unknown_one_is_reported() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_text(&["Read them."], None));
    let (server, session) = ready(&fake, &ws).await;

    // Listed for completion.
    let listed = server
        .client
        .request("agent/mcp/resources", json!({}))
        .await
        .unwrap();
    let uri = "demo://resource/static/document/features.md";
    let row = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == uri)
        .unwrap_or_else(|| panic!("{uri} in {listed}"));
    assert_eq!(row["server"], "everything");
    assert_eq!(row["name"], "features.md");
    assert_eq!(row["mimeType"], "text/markdown");

    let turn = prompt(
        &server,
        &session,
        &format!(
            "Compare @everything:{uri} with @everything:demo://resource/static/document/nope.md, \
             @nowhere:demo://x and @src/lib.rs:1-2."
        ),
    )
    .await;
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let warned = warnings(&updates);
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(
        warned[0].starts_with(
            "@everything:demo://resource/static/document/nope.md: the MCP server everything failed"
        ) && warned[0].ends_with("it was not attached"),
        "{warned:?}"
    );
    assert_eq!(
        warned[1],
        "@nowhere:demo://x is not a file in the workspace nor a resource of a configured MCP \
         server (@SERVER:URI; the servers are: everything); it was not attached"
    );
    let sent = last_user_content(&fake.requests()[0].body);
    let attached = sent
        .split("<attached_files>")
        .nth(1)
        .unwrap_or_else(|| panic!("an attachment block in {sent}"));
    assert!(
        attached.contains(&format!(
            "<resource server=\"everything\" uri=\"{uri}\">\n# Everything Server - Features"
        )),
        "{attached}"
    );
    assert!(
        attached.contains("<file path=\"src/lib.rs\" lines=\"1-2\">"),
        "the file mention beside it: {attached}"
    );
    assert!(!attached.contains("nope.md\">"), "{attached}");
    server.stop().await;
}

#[tokio::test]
async fn a_prompt_typed_before_the_server_is_ready_waits_for_its_first_start() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let server = server(&ws, options(&fake, &ws), None).await;
    let session = new_session(&server).await;
    // No wait for `ready`: the server is still starting (node takes a while).
    let (updates, _) = run_turn(&server, &session, "/mcp__everything__simple-prompt").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let sent = last_user_content(&fake.requests()[0].body);
    assert!(
        sent.contains("This is a simple prompt without arguments."),
        "{sent}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_resource_named_before_the_server_is_ready_is_read_once_it_is() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let server = server(&ws, options(&fake, &ws), None).await;
    let session = new_session(&server).await;
    let turn = prompt(
        &server,
        &session,
        "Read @everything:demo://resource/static/document/architecture.md",
    )
    .await;
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(warnings(&updates), Vec::<String>::new());
    let sent = last_user_content(&fake.requests()[0].body);
    assert!(
        sent.contains(
            "<resource server=\"everything\" uri=\"demo://resource/static/document/architecture.md\">"
        ),
        "{sent}"
    );
    server.stop().await;
}

/// The names of the `mcp` commands `agent/session/commands` lists.
async fn mcp_commands(server: &Server, session: &str) -> Vec<String> {
    let listed = session_request(server, "agent/session/commands", session).await;
    listed["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["source"] == "mcp")
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_changed_prompt_list_is_listed_again_and_a_huge_prompt_is_cut_to_the_budget() {
    let (ws, fake) = workspace_and_fake().await;
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mcp_prompts_server.py");
    let options = provider_options(
        &fake,
        &ws,
        json!({"approval": "full-auto", "mcpServers": {
            "fixture": {"command": "python3", "args": [fixture]}
        }}),
    );
    let server = server(&ws, options, None).await;
    let session = new_session(&server).await;
    assert_eq!(settled(&server, "fixture").await["state"], "ready");
    assert_eq!(
        mcp_commands(&server, &session).await,
        ["mcp__fixture__greet", "mcp__fixture__huge"]
    );

    // A tool call makes the server add a prompt and say so.
    fake.push(FakeProvider::openai_tool_calls(
        &[("call_a", "mcp__fixture__add_prompt", &["{}"])],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Added."], None));
    let (updates, _) = run_turn(&server, &session, "Add a prompt.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    loop {
        let names = mcp_commands(&server, &session).await;
        if names.len() == 3 {
            assert_eq!(
                names,
                [
                    "mcp__fixture__farewell",
                    "mcp__fixture__greet",
                    "mcp__fixture__huge"
                ]
            );
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    fake.push(FakeProvider::openai_text(&["Bye."], None));
    let (updates, _) = run_turn(&server, &session, "/mcp__fixture__farewell Bob").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let sent = last_user_content(&fake.requests()[2].body);
    assert!(sent.contains("Say goodbye to Bob."), "{sent}");

    // 10 MB from the server: cut head and tail to toolOutputLimit, the cut marked.
    fake.push(FakeProvider::openai_text(&["Long."], None));
    let (updates, _) = run_turn(&server, &session, "/mcp__fixture__huge").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let sent = last_user_content(&fake.requests()[3].body);
    let body = sent
        .split("trust=\"untrusted\">\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{}", &sent[..sent.len().min(2000)]));
    assert!(
        body.starts_with("Total output lines: 500002\n\nstart\nline 0: some text"),
        "{}",
        &body[..200]
    );
    assert!(
        body.ends_with("end\n</mcp_prompt>"),
        "{}",
        &body[body.len() - 200..]
    );
    assert!(body.contains("tokens truncated"));
    assert!(body.len() < 60_000, "{}", body.len());
    eprintln!("a 10 MB prompt was sent as {} bytes", body.len());
    server.stop().await;
}
