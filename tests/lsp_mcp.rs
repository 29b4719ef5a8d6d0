//! MCP servers through the real binary and the fake provider, against REAL servers: the
//! reference server `@modelcontextprotocol/server-everything` (npm) and `mcp-server-time`
//! (PyPI), installed outside the repository by `scripts/mcp-servers` (run by `./test`, which
//! exports AGENTLS_MCP_EVERYTHING and AGENTLS_MCP_TIME; run here when they are unset).
//! Waiting for a server is a loop over `agent/mcp/status` without a time bound.

mod common;

use agentls_dev::fake_provider::FakeProvider;
use common::agent::*;
use common::mcp::{growing_server, installed, settled, status};
use common::Server;
use serde_json::{json, Value};
use std::path::PathBuf;

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn tool_message(request: &Value, call_id: &str) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .map(|m| m["content"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no tool message for {call_id}"))
}

#[tokio::test]
async fn the_everything_servers_echo_and_sum_are_offered_after_the_builtins_and_run_after_approval()
{
    let (ws, fake) = workspace_and_fake().await;
    let echo = json!({"message": "hello from agentls"}).to_string();
    let sum = json!({"a": 2, "b": 40}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("call_e", "mcp__everything__echo", &[echo.as_str()]),
            ("call_s", "mcp__everything__get-sum", &[sum.as_str()]),
        ],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Both worked."], None));
    let (responder, seen) = responder(&["allowOnce", "allowOnce"]);
    let options = provider_options(
        &fake,
        &ws,
        json!({"approval": "auto-edit", "mcpServers": {
            "everything": {"command": installed().everything, "args": ["stdio"]}
        }}),
    );
    let server = server(&ws, options, Some(responder)).await;
    // Nothing is listed before a session needs the servers.
    assert_eq!(status(&server).await["servers"], json!([]));
    let session = new_session(&server).await;
    let entry = settled(&server, "everything").await;
    assert_eq!(entry["state"], "ready", "{entry}");
    assert!(entry["tools"].as_u64().unwrap() >= 10, "{entry}");
    // Their cost per request is a section of its own.
    let report = session_request(&server, "agent/session/context", &session).await;
    let section = |name: &str| {
        report["sections"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {report}"))["tokens"]
            .as_u64()
            .unwrap()
    };
    assert!(section("mcpTools") > 500, "{report}");
    assert!(section("tools") > 500, "{report}");

    let (updates, _) = run_turn(&server, &session, "Echo and add.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    // Asked like shell (auto-edit asks for commands), the server and tool named.
    let asked: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "agent/session/requestPermission")
        .map(|(_, p)| p["toolCall"]["title"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].contains("everything"), "{asked:?}");
    let done = tool_updates(&updates, "completed");
    assert_eq!(done.len(), 2, "{updates:?}");

    let requests = fake.requests();
    let names = tool_names(&requests[0].body);
    let first_mcp = names.iter().position(|n| n.starts_with("mcp__")).unwrap();
    assert!(
        names[..first_mcp].iter().all(|n| !n.starts_with("mcp__"))
            && names[first_mcp..]
                .iter()
                .all(|n| n.starts_with("mcp__everything__")),
        "built-in tools first, then the server's: {names:?}"
    );
    let mut sorted = names[first_mcp..].to_vec();
    sorted.sort();
    assert_eq!(names[first_mcp..], sorted[..], "a stable order");
    assert!(names.contains(&"mcp__everything__echo".to_string()));
    let echoed = tool_message(&requests[1].body, "call_e");
    assert!(echoed.contains("Echo: hello from agentls"), "{echoed}");
    assert!(echoed.contains("trust=\"untrusted\""), "{echoed}");
    let summed = tool_message(&requests[1].body, "call_s");
    assert!(summed.contains("42"), "{summed}");

    // After a compaction with a poor summary, the ledger still names both calls.
    fake.push_for(
        "CONTEXT CHECKPOINT COMPACTION",
        FakeProvider::openai_text(&["I did some stuff."], None),
    );
    fake.push(FakeProvider::openai_text(&["Go on."], None));
    session_request(&server, "agent/session/compact", &session).await;
    run_turn(&server, &session, "Next.").await;
    let after = fake.requests().last().unwrap().body.to_string();
    assert!(
        after.contains(
            "## MCP calls\\n- `mcp__everything__echo` → ok\\n- `mcp__everything__get-sum` → ok"
        ),
        "{after}"
    );
    assert_invariants(&fake.requests());
    server.stop().await;
}

/// `mcpServers` with the everything server started through a shell that writes its pid to
/// `pid_file`, plus a helper in the server's process group that outlives the server unless
/// the group is killed (it does not read stdin, so the pipe's end does not end it); the
/// helper's pid goes to the returned file.
fn everything_with_a_sleeper(ws: &Workspace, pid_file: &std::path::Path) -> (Value, PathBuf) {
    let sleeper_file = ws.root.parent().unwrap().join("sleeper.pid");
    let wrapper = format!(
        "sleep 3600 & echo $! > {}; echo $$ > {}; exec {} stdio",
        sleeper_file.display(),
        pid_file.display(),
        installed().everything
    );
    let servers = json!({"everything": {"command": "sh", "args": ["-c", wrapper]}});
    (servers, sleeper_file)
}

/// A server with the everything server over stdio, and the fake provider.
async fn server_with(
    ws: &Workspace,
    fake: &FakeProvider,
    servers: Value,
    approval: &str,
) -> Server {
    let options = provider_options(
        fake,
        ws,
        json!({"approval": approval, "mcpServers": servers}),
    );
    server(ws, options, None).await
}

#[tokio::test]
async fn a_python_server_from_pypi_answers_over_stdio() {
    let (ws, fake) = workspace_and_fake().await;
    let args = json!({"timezone": "UTC"}).to_string();
    fake.push_call_then_text("call_t", "mcp__time__get_current_time", &args, "It is now.");
    let server = server_with(
        &ws,
        &fake,
        json!({"time": {"command": installed().time}}),
        "full-auto",
    )
    .await;
    let session = new_session(&server).await;
    let entry = settled(&server, "time").await;
    assert_eq!(entry["state"], "ready", "{entry}");
    let (updates, _) = run_turn(&server, &session, "What time is it?").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let requests = fake.requests();
    let answer = tool_message(&requests[1].body, "call_t");
    assert!(answer.contains("\"timezone\": \"UTC\""), "{answer}");
    assert!(answer.contains("datetime"), "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn the_everything_server_in_streamable_http_mode() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut http = tokio::process::Command::new(&installed().everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the everything server starts");
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (ws, fake) = workspace_and_fake().await;
    let echo = json!({"message": "over http"}).to_string();
    fake.push_call_then_text("call_h", "mcp__web__echo", &echo, "Done.");
    let server = server_with(
        &ws,
        &fake,
        json!({"web": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp"),
                       "headers": {"X-Agentls-Test": "${AGENTLS_TEST_HEADER:-yes}"}}}),
        "full-auto",
    )
    .await;
    let session = new_session(&server).await;
    let entry = settled(&server, "web").await;
    assert_eq!(entry["state"], "ready", "{entry}");
    let (updates, _) = run_turn(&server, &session, "Echo over HTTP.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let answer = tool_message(&fake.requests()[1].body, "call_h");
    assert!(answer.contains("Echo: over http"), "{answer}");
    server.stop().await;
    http.kill().await.unwrap();
}

#[tokio::test]
async fn a_server_that_never_starts_is_failed_and_the_session_works_without_it() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_text(&["Hello."], None));
    let server = server_with(
        &ws,
        &fake,
        json!({
            "missing": {"command": "/nonexistent/mcp-server"},
            // Speaks, but not JSON-RPC: initialize never completes.
            "garbage": {"command": "sh", "args": ["-c", "echo not json; echo '{broken'; sleep 600"],
                        "startupTimeoutMs": 1500},
            "needs-key": {"command": "x", "env": {"KEY": "${AGENTLS_SURELY_UNSET_VAR}"}},
            "off": {"command": "x", "enabled": false}
        }),
        "full-auto",
    )
    .await;
    let session = new_session(&server).await;
    // Each failed, saying why.
    for (name, why) in [
        ("missing", "cannot start"),
        ("garbage", "startupTimeoutMs"),
        ("needs-key", "AGENTLS_SURELY_UNSET_VAR is not set"),
    ] {
        let entry = settled(&server, name).await;
        assert_eq!(entry["state"], "failed", "{entry}");
        assert!(entry["message"].as_str().unwrap().contains(why), "{entry}");
    }
    assert_eq!(settled(&server, "off").await["state"], "disabled");
    let (updates, _) = run_turn(&server, &session, "Hi").await;
    assert_eq!(answer_text(&updates), "Hello.");
    let names = tool_names(&fake.requests()[0].body);
    assert!(names.iter().all(|n| !n.starts_with("mcp__")), "{names:?}");
    assert!(names.contains(&"read_file".to_string()));
    server.stop().await;
}

#[tokio::test]
async fn a_long_running_call_is_cancelled_and_the_server_still_answers() {
    let (ws, fake) = workspace_and_fake().await;
    let long = json!({"duration": 600, "steps": 600}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[(
            "call_l",
            "mcp__everything__trigger-long-running-operation",
            &[long.as_str()],
        )],
        None,
    ));
    let echo = json!({"message": "still here"}).to_string();
    fake.push_call_then_text("call_e", "mcp__everything__echo", &echo, "Still here.");
    let server = server_with(
        &ws,
        &fake,
        json!({"everything": {"command": installed().everything, "args": ["stdio"]}}),
        "full-auto",
    )
    .await;
    let session = new_session(&server).await;
    assert_eq!(settled(&server, "everything").await["state"], "ready");
    let turn = prompt(&server, &session, "Run the long operation.").await;
    // Cancel once the call runs.
    let mut updates = Vec::new();
    loop {
        let message = server.client.next_message().await.expect("talking");
        if message.method != "agent/session/update" || message.params["turnId"] != turn {
            continue;
        }
        let update = message.params["update"].clone();
        let running = update["kind"] == "toolCallUpdate" && update["status"] == "in_progress";
        updates.push(update);
        if running {
            break;
        }
    }
    session_request(&server, "agent/session/cancel", &session).await;
    let (rest, _) = updates_until_end(&server, &turn).await;
    updates.extend(rest);
    assert_eq!(stop_reason(&updates), "cancelled", "{updates:?}");
    let failed = tool_updates(&updates, "failed");
    assert_eq!(failed.len(), 1, "{updates:?}");
    // The server is not stuck in the cancelled call: the next turn's echo answers.
    let (updates, _) = run_turn(&server, &session, "Echo.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let requests = fake.requests();
    let echoed = tool_message(&requests.last().unwrap().body, "call_e");
    assert!(echoed.contains("Echo: still here"), "{echoed}");
    assert_invariants(&requests);
    server.stop().await;
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_fails_the_call_restarts_and_answers_the_next() {
    let ws = workspace();
    let pid_file = ws.root.parent().unwrap().join("everything.pid");
    let fake = FakeProvider::start().await;
    let long = json!({"duration": 600, "steps": 600}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[(
            "call_l",
            "mcp__everything__trigger-long-running-operation",
            &[long.as_str()],
        )],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["The server died."], None));
    let echo = json!({"message": "after the crash"}).to_string();
    fake.push_call_then_text("call_e", "mcp__everything__echo", &echo, "Back.");
    let (everything, sleeper_file) = everything_with_a_sleeper(&ws, &pid_file);
    let server = server_with(&ws, &fake, everything, "full-auto").await;
    let session = new_session(&server).await;
    assert_eq!(settled(&server, "everything").await["state"], "ready");
    let first_pid = std::fs::read_to_string(&pid_file).unwrap();
    let first_sleeper = std::fs::read_to_string(&sleeper_file).unwrap();
    let turn = prompt(&server, &session, "Run the long operation.").await;
    loop {
        let message = server.client.next_message().await.expect("talking");
        if message.method == "agent/session/update"
            && message.params["update"]["kind"] == "toolCallUpdate"
            && message.params["update"]["status"] == "in_progress"
        {
            break;
        }
    }
    let killed = std::process::Command::new("kill")
        .args(["-9", first_pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let failed = tool_updates(&updates, "failed");
    assert_eq!(failed.len(), 1, "{updates:?}");
    let output = failed[0]["output"].as_str().unwrap();
    assert!(output.contains("everything"), "{output}");
    // Restarted: a new process, ready again.
    loop {
        let entry = settled(&server, "everything").await;
        let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if entry["state"] == "ready" && !pid.is_empty() && pid != first_pid {
            break;
        }
        assert_ne!(entry["state"], "failed", "{entry}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (updates, _) = run_turn(&server, &session, "Echo.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let requests = fake.requests();
    let echoed = tool_message(&requests.last().unwrap().body, "call_e");
    assert!(echoed.contains("Echo: after the crash"), "{echoed}");
    assert_invariants(&requests);
    // No orphan: the crashed server's group was killed, and the restarted server's group
    // dies with agentls.
    wait_gone(first_sleeper.trim()).await;
    let second_pid = std::fs::read_to_string(&pid_file).unwrap();
    let second_sleeper = std::fs::read_to_string(&sleeper_file).unwrap();
    assert_ne!(second_sleeper, first_sleeper);
    server.stop().await;
    wait_gone(second_pid.trim()).await;
    wait_gone(second_sleeper.trim()).await;
}

#[tokio::test]
async fn a_tool_added_at_run_time_is_offered_from_the_next_request_on() {
    let (ws, fake) = workspace_and_fake().await;
    let grow = json!({"name": "sprout"}).to_string();
    fake.push_call_then_text("call_g", "mcp__growing__grow", &grow, "Grown.");
    fake.push(FakeProvider::openai_tool_calls(
        &[("call_s", "mcp__growing__sprout", &["{}"])],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let server = server_with(
        &ws,
        &fake,
        json!({"growing": growing_server()}),
        "full-auto",
    )
    .await;
    let session = new_session(&server).await;
    let entry = settled(&server, "growing").await;
    assert_eq!(
        (&entry["state"], &entry["tools"]),
        (&json!("ready"), &json!(1)),
        "{entry}"
    );
    let (updates, _) = run_turn(&server, &session, "Grow a sprout.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    // notifications/tools/list_changed made agentls list the tools again.
    while status(&server).await["servers"][0]["tools"] != 2 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (updates, _) = run_turn(&server, &session, "Use it.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let requests = fake.requests();
    let before = tool_names(&requests[0].body);
    assert!(
        before.contains(&"mcp__growing__grow".to_string()),
        "{before:?}"
    );
    assert!(
        !before.contains(&"mcp__growing__sprout".to_string()),
        "{before:?}"
    );
    let after = tool_names(&requests[2].body);
    assert_eq!(
        &after[after.len() - 2..],
        ["mcp__growing__grow", "mcp__growing__sprout"],
        "after the built-in tools, in a stable order: {after:?}"
    );
    assert!(tool_message(&requests[3].body, "call_s").contains("sprout was grown"));
    assert_invariants(&requests);
    server.stop().await;
}

#[tokio::test]
async fn a_key_the_server_echoes_on_stderr_never_reaches_its_failed_message() {
    let (ws, fake) = workspace_and_fake().await;
    let server = server_with(
        &ws,
        &fake,
        json!({"leaky": {
            "command": "sh",
            "args": ["-c", "echo \"rejected key $SERVICE_TOKEN\" >&2; exit 1"],
            "env": {"SERVICE_TOKEN": "tok-4f9a8c7e6d5b"}
        }}),
        "full-auto",
    )
    .await;
    let _session = new_session(&server).await;
    let entry = settled(&server, "leaky").await;
    assert_eq!(entry["state"], "failed", "{entry}");
    let message = entry["message"].as_str().unwrap();
    assert!(message.contains("rejected key [redacted]"), "{message}");
    assert!(!message.contains("tok-4f9a8c7e6d5b"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn a_reopened_session_starts_the_servers_before_its_first_prompt() {
    let (ws, fake) = workspace_and_fake().await;
    let servers = json!({"time": {"command": installed().time}});
    let first = server_with(&ws, &fake, servers.clone(), "full-auto").await;
    let session = new_session(&first).await;
    first.stop().await;
    let second = server_with(&ws, &fake, servers, "full-auto").await;
    session_request(&second, "agent/session/load", &session).await;
    let entry = settled(&second, "time").await;
    assert_eq!(entry["state"], "ready", "{entry}");
    second.stop().await;
}

#[tokio::test]
async fn a_kill_9_of_agentls_leaves_no_server_process_behind() {
    let (ws, fake) = workspace_and_fake().await;
    let pid_file = ws.root.parent().unwrap().join("everything.pid");
    // agentls is killed with SIGKILL, so none of its own code runs.
    let (everything, sleeper_file) = everything_with_a_sleeper(&ws, &pid_file);
    let mut server = server_with(&ws, &fake, everything, "full-auto").await;
    let _session = new_session(&server).await;
    assert_eq!(settled(&server, "everything").await["state"], "ready");
    let server_pid = std::fs::read_to_string(&pid_file).unwrap();
    let sleeper_pid = std::fs::read_to_string(&sleeper_file).unwrap();
    kill9(&mut server).await;
    // A regression leaves the sleeper for an hour: this test then hangs instead of passing.
    wait_gone(sleeper_pid.trim()).await;
    wait_gone(server_pid.trim()).await;
}

#[tokio::test]
async fn a_bad_server_never_takes_agentls_down_or_breaks_the_pairing() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("call_h", "mcp__bad__huge", &["{}"]),
            ("call_g", "mcp__bad__garbage", &["{}"]),
            ("call_r", "mcp__bad__rejected_schema", &[r#"{"a": "x"}"#]),
            ("call_n", "mcp__bad__not_a_tool", &["{}"]),
        ],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Survived."], None));
    fake.push(FakeProvider::openai_text(&["Still fine."], None));
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mcp_bad_server.py");
    let server = server_with(
        &ws,
        &fake,
        json!({"bad": {"command": "python3", "args": [script]}}),
        "full-auto",
    )
    .await;
    let session = new_session(&server).await;
    let entry = settled(&server, "bad").await;
    assert_eq!(entry["state"], "ready", "{entry}");
    assert_eq!(entry["tools"], 3, "{entry}");
    let (updates, _) = run_turn(&server, &session, "Misbehave.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let requests = fake.requests();
    // The schema as sent: an object schema, without what providers reject.
    let rejected = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__bad__rejected_schema")
        .unwrap()["function"]["parameters"]
        .clone();
    assert_eq!(
        rejected,
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    );
    // 10 MB cut head and tail to the output limit.
    let huge = tool_message(&requests[1].body, "call_h");
    assert!(huge.len() < 200_000, "{} bytes", huge.len());
    assert!(
        huge.contains("start\nline 0: some output")
            && huge.contains("line 419999: some output\nend\n</mcp_result>"),
        "head and tail kept: {}[…]{}",
        &huge[..600],
        &huge[huge.len() - 150..]
    );
    // Cut twice (the MCP body's byte cap, then toolOutputLimit), counted once: the real count.
    assert_eq!(
        huge.matches("Total output lines").count(),
        1,
        "{}",
        &huge[..600]
    );
    assert!(
        huge.contains("Total output lines: 420002\n"),
        "{}",
        &huge[..600]
    );
    let garbage = tool_message(&requests[1].body, "call_g");
    assert!(garbage.contains("answered after garbage"), "{garbage}");
    assert!(tool_message(&requests[1].body, "call_r").contains("called rejected_schema"));
    let unknown = tool_message(&requests[1].body, "call_n");
    assert!(unknown.contains("unknown tool"), "{unknown}");
    assert_invariants(&requests);
    // Still serving.
    let (updates, _) = run_turn(&server, &session, "Again.").await;
    assert_eq!(answer_text(&updates), "Still fine.");
    server.stop().await;
}

#[tokio::test]
async fn workspace_mcp_json_servers_start_only_once_the_user_approved_them() {
    let ws = workspace();
    std::fs::write(
        ws.root.join(".mcp.json"),
        json!({"mcpServers": {
            "a-refused": {"command": "sh", "args": ["-c", "touch refused-ran; sleep 600"]},
            "everything": {"command": installed().everything, "args": ["stdio"]}
        }})
        .to_string(),
    )
    .unwrap();
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&["Hello."], None));
    let echo = json!({"message": "from the workspace"}).to_string();
    fake.push_call_then_text("call_w", "mcp__everything__echo", &echo, "Done.");
    let (responder, seen) = responder(&["rejectOnce", "allowOnce"]);
    let options = provider_options(&fake, &ws, json!({"approval": "full-auto"}));
    let server = server(&ws, options, Some(responder)).await;
    let session = new_session(&server).await;
    // Not approved yet: not started, not listed.
    assert_eq!(status(&server).await["servers"], json!([]));
    let turn = prompt(&server, &session, "Hi").await;
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let asked: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "agent/session/requestPermission")
        .map(|(_, p)| p["toolCall"]["title"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        asked[0].starts_with("Workspace MCP server a-refused: sh -c"),
        "{asked:?}"
    );
    assert!(
        asked[1].starts_with("Workspace MCP server everything: "),
        "{asked:?}"
    );
    assert_eq!(settled(&server, "everything").await["state"], "ready");
    let names: Vec<String> = status(&server).await["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["everything"], "the refused server is not started");
    assert!(!ws.root.join("refused-ran").exists());
    // The next turn offers and calls its tools, without asking again.
    let (updates, _) = run_turn(&server, &session, "Echo.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let requests = fake.requests();
    let echoed = tool_message(&requests.last().unwrap().body, "call_w");
    assert!(echoed.contains("Echo: from the workspace"), "{echoed}");
    assert_eq!(
        seen.lock()
            .unwrap()
            .iter()
            .filter(|(m, _)| m == "agent/session/requestPermission")
            .count(),
        2,
        "asked once per entry"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_read_only_server_tool_runs_without_asking_under_auto_edit_and_another_asks() {
    let (ws, fake) = workspace_and_fake().await;
    let echo = json!({"message": "trusted"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("call_e", "mcp__everything__echo", &[echo.as_str()]),
            (
                "call_t",
                "mcp__everything__toggle-simulated-logging",
                &["{}"],
            ),
        ],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let (responder, seen) = responder(&["rejectOnce"]);
    let options = provider_options(
        &fake,
        &ws,
        json!({"approval": "auto-edit", "mcpServers": {
            "everything": {"command": installed().everything, "args": ["stdio"], "trust": "readOnly"}
        }}),
    );
    let server = server(&ws, options, Some(responder)).await;
    let session = new_session(&server).await;
    assert_eq!(settled(&server, "everything").await["state"], "ready");
    let (updates, _) = run_turn(&server, &session, "Echo and toggle.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let asked: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "agent/session/requestPermission")
        .map(|(_, p)| p["toolCall"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(asked, ["mcp__everything__toggle-simulated-logging"]);
    let announced: Vec<(String, String)> = updates
        .iter()
        .filter(|u| u["kind"] == "toolCall")
        .map(|u| {
            (
                u["name"].as_str().unwrap().to_string(),
                u["toolKind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        announced,
        [
            ("mcp__everything__echo".to_string(), "read".to_string()),
            (
                "mcp__everything__toggle-simulated-logging".to_string(),
                "other".to_string()
            )
        ]
    );
    let requests = fake.requests();
    assert!(tool_message(&requests[1].body, "call_e").contains("Echo: trusted"));
    assert!(!tool_message(&requests[1].body, "call_t").contains("mcp_result"));
    assert_invariants(&requests);
    server.stop().await;
}
