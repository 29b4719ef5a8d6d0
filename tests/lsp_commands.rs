//! Custom slash commands and subagents through the real server and the fake provider:
//! command files expanded into one prompt (arguments, `@file`, an approved `` !`command` ``),
//! `allowed-tools` and `model`, the workspace over the user, `agent/session/commands`; the
//! `task` tool running child sessions with their own context, tools and approvals,
//! concurrently, and cancelled with their parent.

mod common;

use agentls_dev::fake_provider::{FakeProvider, Reply, Step};
use agentls_dev::lsp_client::ServerMessage;
use common::agent::*;
use common::{git, start, Options, Server};
use serde_json::{json, Value};
use std::fs;

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn messages_of<'a>(request: &'a Value, role: &str) -> Vec<&'a Value> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == role)
        .collect()
}

fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

async fn server_with_env(
    ws: &Workspace,
    options: Value,
    responder: Option<agentls_dev::lsp_client::Responder>,
    env: Vec<(&str, String)>,
) -> Server {
    start(Options {
        root: Some(&ws.root),
        init_options: options,
        apply_edit: true,
        responder,
        env,
        ..Options::default()
    })
    .await
}

#[tokio::test]
async fn a_workspace_command_reaches_the_model_as_one_prompt_with_its_tools_and_model() {
    let ws = workspace();
    fs::remove_dir_all(ws.root.join(".git")).unwrap();
    git(&ws.root, &["init", "-q"]);
    git(&ws.root, &["add", "src/lib.rs"]);
    git(&ws.root, &["commit", "-qm", "init"]);
    fs::write(ws.root.join("src/new.rs"), "// new\n").unwrap();
    let commands = ws.root.join(".agents/commands");
    fs::create_dir_all(&commands).unwrap();
    fs::write(
        commands.join("inspect.md"),
        "---\ndescription: Review a file\nargument-hint: FILE [focus]\nallowed-tools: read_file, grep\nmodel: review-model\n---\nReview $1 with care ($ARGUMENTS).\nHere it is: @src/lib.rs\nUncommitted:\n!`git status --short`\nEnd of status.\n",
    )
    .unwrap();
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&["Reviewed."], None));
    let (responder, seen) = responder(&["allowOnce", "rejectOnce"]);
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;

    let turn = prompt(&server, &session, "/inspect src/lib.rs naming").await;
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert_eq!(answer_text(&updates), "Reviewed.");
    // The command ran as a shell call the user approved.
    let permission = seen
        .lock()
        .unwrap()
        .iter()
        .find(|(m, _)| m == "agent/session/requestPermission")
        .map(|(_, p)| p.clone())
        .expect("the command was asked for");
    assert_eq!(
        permission["toolCall"]["input"]["command"],
        "git status --short"
    );
    assert!(tool_updates(&updates, "completed")
        .iter()
        .any(|u| u["output"].as_str().unwrap().contains("?? src/new.rs")));

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(body["model"], "review-model");
    assert_eq!(tool_names(body), ["read_file", "grep"]);
    let users = messages_of(body, "user");
    assert_eq!(users.len(), 1, "one prompt");
    let user = text_of(users[0]);
    assert!(
        user.contains("Review src/lib.rs with care (src/lib.rs naming)."),
        "{user}"
    );
    assert!(user.contains("Uncommitted:\n?? "), "{user}");
    assert!(
        user.contains("?? src/new.rs\n[exit code 0]\nEnd of status."),
        "{user}"
    );
    assert!(!user.contains("!`"), "{user}");
    assert!(
        user.contains("<attached_files>") && user.contains("pub fn answer() -> u32 {"),
        "{user}"
    );

    // The next turn of the session has every tool and the session's model again.
    fake.push(FakeProvider::openai_text(&["Hi."], None));
    run_turn(&server, &session, "hello").await;
    let body = &fake.requests()[1].body;
    assert_eq!(body["model"], "test-model");
    assert!(
        tool_names(body).contains(&"task".to_string()),
        "{:?}",
        tool_names(body)
    );
    assert!(tool_names(body).contains(&"edit_file".to_string()));

    // A command the user rejects sends nothing and says why.
    let (updates, _) = run_turn(&server, &session, "/inspect src/lib.rs").await;
    assert_eq!(stop_reason(&updates), "error", "{updates:?}");
    let error = updates.iter().find(|u| u["kind"] == "error").unwrap();
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("`git status --short` was not run"),
        "{error}"
    );
    assert_eq!(fake.requests().len(), 2, "nothing was sent");
    server.stop().await;
}

#[tokio::test]
async fn allowed_tools_refuses_a_call_to_another_tool() {
    let ws = workspace();
    let commands = ws.root.join(".agents/commands");
    fs::create_dir_all(&commands).unwrap();
    fs::write(
        commands.join("look.md"),
        "---\nallowed-tools: [read_file]\n---\nLook at $ARGUMENTS\n",
    )
    .unwrap();
    let fake = FakeProvider::start().await;
    let edit =
        json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string();
    fake.push_call_then_text("call_e", "edit_file", &edit, "I may only read.");
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({"approval": "full-auto"})),
        None,
    )
    .await;
    let session = new_session(&server).await;
    let turn = prompt(&server, &session, "/look src/lib.rs").await;
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn");
    let failed = tool_updates(&updates, "failed");
    assert!(
        failed[0]["output"]
            .as_str()
            .unwrap()
            .contains("edit_file is not available in this turn; the tools are: read_file"),
        "{updates:?}"
    );
    assert_eq!(
        fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(),
        "pub fn answer() -> u32 {\n    41\n}\n"
    );
    for request in fake.requests() {
        assert_eq!(tool_names(&request.body), ["read_file"]);
    }
    server.stop().await;
}

#[tokio::test]
async fn the_workspace_overrides_the_user_and_agent_session_commands_lists_them() {
    let ws = workspace();
    let config_home = tempfile::tempdir().unwrap();
    let user = config_home.path().join("agentls/commands");
    fs::create_dir_all(&user).unwrap();
    fs::write(
        user.join("inspect.md"),
        "---\ndescription: user review\n---\nUSER BODY\n",
    )
    .unwrap();
    fs::write(
        user.join("mine.md"),
        "---\ndescription: only mine\n---\nMINE $1\n",
    )
    .unwrap();
    let commands = ws.root.join(".agents/commands");
    fs::create_dir_all(commands.join("git")).unwrap();
    fs::write(
        commands.join("inspect.md"),
        "---\ndescription: workspace review\n---\nWORKSPACE BODY\n",
    )
    .unwrap();
    fs::write(
        commands.join("git/commit.md"),
        "---\ndescription: Commit\nargument-hint: MESSAGE\n---\nCommit: $ARGUMENTS\n",
    )
    .unwrap();
    let fake = FakeProvider::start().await;
    fake.push(FakeProvider::openai_text(&["ok"], None));
    fake.push(FakeProvider::openai_text(&["ok"], None));
    let server = server_with_env(
        &ws,
        provider_options(&fake, &ws, json!({})),
        None,
        vec![("XDG_CONFIG_HOME", config_home.path().display().to_string())],
    )
    .await;
    let session = new_session(&server).await;

    let listed = session_request(&server, "agent/session/commands", &session).await;
    let rows: Vec<(String, String, Value)> = listed["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["source"].as_str().unwrap().to_string(),
                c["description"].clone(),
            )
        })
        .collect();
    let names: Vec<(&str, &str)> = rows
        .iter()
        .map(|(n, s, _)| (n.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("compact", "builtin"),
            ("new", "builtin"),
            ("context", "builtin"),
            ("model", "builtin"),
            ("remember", "builtin"),
            ("review", "builtin"),
            ("help", "builtin"),
            ("git:commit", "workspace"),
            ("inspect", "workspace"),
            ("mine", "user"),
        ]
    );
    assert_eq!(rows[8].2, "workspace review");
    let commit = &listed["commands"][7];
    assert_eq!(commit["argumentHint"], "MESSAGE");

    run_turn(&server, &session, "/inspect").await;
    run_turn(&server, &session, "/git:commit fix the parser").await;
    let requests = fake.requests();
    let first = text_of(messages_of(&requests[0].body, "user")[0]);
    assert!(
        first.contains("WORKSPACE BODY") && !first.contains("USER BODY"),
        "{first}"
    );
    let second = text_of(messages_of(&requests[1].body, "user").last().unwrap());
    assert!(second.contains("Commit: fix the parser"), "{second}");

    // /help lists both kinds; a file added now counts at once.
    fs::write(commands.join("later.md"), "Added later").unwrap();
    let (updates, _) = run_turn(&server, &session, "/help").await;
    let help = answer_text(&updates);
    assert!(help.contains("/compact [focus]"), "{help}");
    assert!(help.contains("/git:commit MESSAGE"), "{help}");
    assert!(help.contains("only mine (user)"), "{help}");
    assert!(help.contains("/later"), "{help}");
    assert_eq!(fake.requests().len(), 2, "/help asks no model");

    let missing = server
        .client
        .request("agent/session/commands", json!({"sessionId": "nope"}))
        .await;
    assert!(missing.is_err());
    server.stop().await;
}

/// The messages seen so far that are updates of sessions other than `parent`.
fn child_updates(others: &[ServerMessage], parent: &str) -> Vec<Value> {
    others
        .iter()
        .filter(|m| m.method == "agent/session/update" && m.params["sessionId"] != parent)
        .map(|m| m.params.clone())
        .collect()
}

#[tokio::test]
async fn a_task_runs_a_child_with_its_own_context_tools_and_approvals() {
    let ws = workspace();
    let agents = ws.root.join(".agents/agents");
    fs::create_dir_all(&agents).unwrap();
    fs::write(
        agents.join("fixer.md"),
        "---\nname: fixer\ndescription: Fixes small things\ntools: read_file, edit_file\n---\nYou are the FIXERAGENT: make the change asked, then say what you did.\n",
    )
    .unwrap();
    let fake = FakeProvider::start().await;
    // The parent's first turn gives it a history the child must not see.
    fake.push(FakeProvider::openai_text(&["PARENTHISTORY noted."], None));
    let task = json!({"agent": "fixer", "prompt": "Make answer() return 42"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("call_task", "task", &[task.as_str()])],
        None,
    ));
    let edit =
        json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string();
    let shell = json!({"command": "rm -rf src"}).to_string();
    fake.push_for(
        "FIXERAGENT",
        FakeProvider::openai_tool_calls(
            &[
                ("c_shell", "shell", &[shell.as_str()]),
                ("c_edit", "edit_file", &[edit.as_str()]),
            ],
            None,
        ),
    );
    fake.push_for(
        "FIXERAGENT",
        FakeProvider::openai_text(&["Changed answer() to return 42 in src/lib.rs:2."], None),
    );
    fake.push(FakeProvider::openai_text(&["The fixer did it."], None));
    let (responder, seen) = responder(&["allowOnce"]);
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    run_turn(&server, &session, "remember PARENTHISTORY").await;

    let turn = prompt(&server, &session, "Fix answer() with the fixer").await;
    let (updates, others) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert_eq!(answer_text(&updates), "The fixer did it.");
    let done = tool_updates(&updates, "completed");
    assert_eq!(done.len(), 1, "{updates:?}");
    assert_eq!(done[0]["toolCallId"], "call_task");
    assert_eq!(
        done[0]["output"],
        "Changed answer() to return 42 in src/lib.rs:2."
    );

    let requests = fake.requests();
    assert_eq!(requests.len(), 5);
    // The parent was offered task, described with the subagents.
    let parent_tools = requests[1].body["tools"].as_array().unwrap();
    let task_tool = parent_tools
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .unwrap();
    let description = task_tool["function"]["description"].as_str().unwrap();
    assert!(
        description.contains("- fixer: Fixes small things"),
        "{description}"
    );
    assert!(description.contains("- explore: "), "{description}");
    // The child: its own system prompt, its tools, the task, no parent history.
    let child = &requests[2].body;
    let system = text_of(messages_of(child, "system")[0]);
    assert!(system.starts_with("You are the FIXERAGENT"), "{system}");
    assert_eq!(tool_names(child), ["read_file", "edit_file"]);
    let child_users = messages_of(child, "user");
    assert_eq!(child_users.len(), 1);
    assert_eq!(text_of(child_users[0]), "Make answer() return 42");
    assert!(!child.to_string().contains("PARENTHISTORY"));
    // Its disallowed call was refused, its edit applied.
    let outputs = messages_of(&requests[3].body, "tool");
    assert!(
        text_of(outputs[0]).contains("not run: shell is not available in this turn"),
        "{:?}",
        outputs[0]
    );
    assert!(
        text_of(outputs[1]).contains("Edited src/lib.rs"),
        "{:?}",
        outputs[1]
    );
    // The parent's next request holds the child's final message only.
    let parent = &requests[4].body;
    let parent_outputs = messages_of(parent, "tool");
    assert_eq!(parent_outputs.len(), 1);
    assert!(text_of(parent_outputs[0]).contains("Changed answer() to return 42"));
    assert!(!parent.to_string().contains("FIXERAGENT"));
    assert!(!parent.to_string().contains("Edited src/lib.rs"));

    // The edit was approved in the parent's session, labelled with the subagent.
    let seen = seen.lock().unwrap().clone();
    let permissions: Vec<&Value> = seen
        .iter()
        .filter(|(m, _)| m == "agent/session/requestPermission")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(permissions.len(), 1, "only the edit asks: {permissions:?}");
    assert_eq!(permissions[0]["sessionId"], session.as_str());
    assert_eq!(permissions[0]["toolCall"]["subagent"], "fixer");
    assert_eq!(permissions[0]["toolCall"]["parentToolCallId"], "call_task");
    assert!(permissions[0]["toolCall"]["title"]
        .as_str()
        .unwrap()
        .starts_with("fixer: Edit src/lib.rs"));
    assert!(seen.iter().any(|(m, _)| m == "workspace/applyEdit"));

    // The editor saw the child's calls as updates of the child session.
    let children = child_updates(&others, &session);
    let child_id = children[0]["sessionId"].as_str().unwrap().to_string();
    assert!(children.iter().all(|u| u["sessionId"] == child_id.as_str()
        && u["update"]["parentToolCallId"] == "call_task"
        && u["update"]["parentSessionId"] == session.as_str()));
    let child_calls: Vec<&str> = children
        .iter()
        .filter(|u| u["update"]["kind"] == "toolCall")
        .map(|u| u["update"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(child_calls, ["shell", "edit_file"]);

    // Listed only when asked; loadable.
    let list = server
        .client
        .request("agent/session/list", json!({}))
        .await
        .unwrap();
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [session.as_str()]);
    let all = server
        .client
        .request("agent/session/list", json!({"includeChildren": true}))
        .await
        .unwrap();
    let child_row = all["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == child_id.as_str())
        .expect("the child is listed with includeChildren");
    assert_eq!(child_row["parentSessionId"], session.as_str());
    assert_eq!(child_row["parentToolCallId"], "call_task");
    let loaded = session_request(&server, "agent/session/load", &child_id).await;
    assert!(loaded["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["kind"] == "assistant"
            && i["text"].as_str().unwrap().contains("Changed answer()")));
    // The parent's log records what the child changed (its ledger keeps it).
    let logs = walk_logs(ws.state.path());
    let parent_log = logs
        .iter()
        .find(|(name, _)| name.contains(&session))
        .expect("the parent's log");
    assert!(
        parent_log.1.contains("\"event\":\"filesChanged\"")
            && parent_log.1.contains("\"command\":\"task (fixer)\"")
            && parent_log.1.contains("src/lib.rs"),
        "{}",
        parent_log.1
    );
    // And the user's answer to the child's edit, so "always" answers hold for the parent.
    assert!(
        parent_log.1.contains("\"event\":\"permission\"")
            && parent_log.1.contains("\"outcome\":\"allowOnce\""),
        "{}",
        parent_log.1
    );
    assert_invariants(&fake.requests());
    server.stop().await;
}

fn walk_logs(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk_logs(&path));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            found.push((
                path.display().to_string(),
                fs::read_to_string(&path).unwrap(),
            ));
        }
    }
    found
}

/// The parent calls `task` twice (`call_a`: find ALPHATASK, `call_b`: find BETATASK, both
/// `explore`); A's child's answer is held until `fake.release()`, B's comes at once; then the
/// parent answers "Both found.".
fn push_two_explore_tasks(fake: &FakeProvider) {
    let a = json!({"agent": "explore", "prompt": "find ALPHATASK"}).to_string();
    let b = json!({"agent": "explore", "prompt": "find BETATASK"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("call_a", "task", &[a.as_str()]),
            ("call_b", "task", &[b.as_str()]),
        ],
        None,
    ));
    fake.push_for(
        "ALPHATASK",
        Reply::Sse {
            steps: vec![
                Step::Hold,
                openai_chunk(json!({"role": "assistant", "content": "alpha is in a.rs:1"})),
                openai_finish("stop"),
                Step::Data("[DONE]".into()),
            ],
        },
    );
    fake.push_for(
        "BETATASK",
        FakeProvider::openai_text(&["beta is in b.rs:2"], None),
    );
    fake.push(FakeProvider::openai_text(&["Both found."], None));
}

#[tokio::test]
async fn two_tasks_run_at_the_same_time_and_answer_in_call_order() {
    let (ws, fake) = workspace_and_fake().await;
    // A waits until B has finished: only possible when they run together.
    push_two_explore_tasks(&fake);
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let turn = prompt(&server, &session, "find both").await;
    // B's child ends while A's is held.
    loop {
        let message = server.client.next_message().await.unwrap();
        let update = &message.params["update"];
        if message.method == "agent/session/update"
            && update["kind"] == "turnEnd"
            && update["parentToolCallId"] == "call_b"
        {
            break;
        }
    }
    fake.release();
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let requests = fake.requests();
    let last = &requests.last().unwrap().body;
    let outputs: Vec<(String, String)> = messages_of(last, "tool")
        .iter()
        .map(|m| (m["tool_call_id"].as_str().unwrap().to_string(), text_of(m)))
        .collect();
    assert_eq!(outputs.len(), 2);
    assert_eq!(outputs[0].0, "call_a");
    assert!(outputs[0].1.contains("alpha is in a.rs:1"), "{outputs:?}");
    assert_eq!(outputs[1].0, "call_b");
    assert!(outputs[1].1.contains("beta is in b.rs:2"), "{outputs:?}");
    // explore is read-only.
    let child = requests
        .iter()
        .find(|r| r.body.to_string().contains("BETATASK") && tool_names(&r.body).len() == 4)
        .unwrap();
    assert_eq!(
        tool_names(&child.body),
        ["read_file", "list_dir", "grep", "find_symbol"]
    );
    assert_invariants(&requests);
    server.stop().await;
}

#[tokio::test]
async fn max_concurrent_one_runs_the_tasks_one_after_the_other() {
    let (ws, fake) = workspace_and_fake().await;
    // A's child is held until its request has arrived.
    push_two_explore_tasks(&fake);
    let (server, session) =
        session_server(&ws, &fake, json!({"subagents": {"maxConcurrent": 1}})).await;
    let turn = prompt(&server, &session, "find both").await;
    while !fake
        .requests()
        .iter()
        .any(|r| r.body.to_string().contains("ALPHATASK"))
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    fake.release();
    // Every session update in arrival order, the children's (other turns) included, until
    // the parent's turn ends.
    let mut updates: Vec<Value> = Vec::new();
    loop {
        let message = server.client.next_message().await.expect("talking");
        if message.method != "agent/session/update" {
            continue;
        }
        let mut update = message.params["update"].clone();
        update["turnId"] = message.params["turnId"].clone();
        updates.push(update.clone());
        if update["kind"] == "turnEnd" && message.params["turnId"] == turn.as_str() {
            assert_eq!(update["stopReason"], "endTurn", "{updates:?}");
            break;
        }
    }
    let find = |what: &dyn Fn(&Value) -> bool, label: &str| {
        updates
            .iter()
            .position(what)
            .unwrap_or_else(|| panic!("{label} in {updates:?}"))
    };
    // B's child starts only once A's child has ended. Running both at once, B would be in
    // progress before A's held request was even answered.
    let a_ended = find(
        &|u| u["kind"] == "turnEnd" && u["parentToolCallId"] == "call_a",
        "A's child's end",
    );
    let b_started = find(
        &|u| {
            u["kind"] == "toolCallUpdate"
                && u["toolCallId"] == "call_b"
                && u["status"] == "in_progress"
        },
        "B in progress",
    );
    let b_child = find(
        &|u| u["parentToolCallId"] == "call_b",
        "an update of B's child",
    );
    assert!(a_ended < b_started, "{updates:?}");
    assert!(a_ended < b_child, "{updates:?}");
    // No child request for B before A's child was answered.
    let requests = fake.requests();
    let at = |needle: &str| {
        requests
            .iter()
            .position(|r| r.body.to_string().contains(needle))
            .unwrap()
    };
    assert!(at("ALPHATASK") < at("BETATASK"));
    assert_invariants(&requests);
    server.stop().await;
}

#[tokio::test]
async fn cancelling_the_parent_cancels_the_child() {
    let (ws, fake) = workspace_and_fake().await;
    let task = json!({"agent": "explore", "prompt": "find GAMMATASK"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("call_t", "task", &[task.as_str()])],
        None,
    ));
    fake.push_for(
        "GAMMATASK",
        Reply::Sse {
            steps: vec![
                openai_chunk(json!({"role": "assistant", "content": "Searching"})),
                Step::Hold,
                openai_chunk(json!({"content": " never"})),
                openai_finish("stop"),
                Step::Data("[DONE]".into()),
            ],
        },
    );
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let turn = prompt(&server, &session, "search").await;
    // The child is streaming.
    let child_id = loop {
        let message = server.client.next_message().await.unwrap();
        if message.method == "agent/session/update"
            && message.params["update"]["kind"] == "agentMessageChunk"
            && message.params["update"]["parentToolCallId"] == "call_t"
        {
            break message.params["sessionId"].as_str().unwrap().to_string();
        }
    };
    let answer = session_request(&server, "agent/session/cancel", &session).await;
    assert_eq!(answer["cancelled"], true);
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "cancelled", "{updates:?}");
    let failed = tool_updates(&updates, "failed");
    assert_eq!(failed.len(), 1, "{updates:?}");
    assert_eq!(failed[0]["toolCallId"], "call_t");
    assert!(
        failed[0]["output"].as_str().unwrap().contains("cancelled"),
        "{}",
        failed[0]
    );
    // The child's log says it was cancelled too.
    let loaded = server
        .client
        .request("agent/session/list", json!({"includeChildren": true}))
        .await
        .unwrap();
    assert!(loaded["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["sessionId"] == child_id.as_str()));
    let logs = walk_logs(ws.state.path());
    let child_log = logs
        .iter()
        .find(|(name, _)| name.contains(&child_id))
        .expect("the child's log");
    assert!(
        child_log.1.contains("\"stopReason\":\"cancelled\""),
        "{}",
        child_log.1
    );
    server.stop().await;
}

#[tokio::test]
async fn a_child_that_stops_at_its_step_limit_is_a_failed_task_and_the_parent_goes_on() {
    let (ws, fake) = workspace_and_fake().await;
    let task = json!({"agent": "explore", "prompt": "find DELTATASK"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("call_d", "task", &[task.as_str()])],
        None,
    ));
    let read = json!({"path": "src/lib.rs"}).to_string();
    fake.push_for(
        "DELTATASK",
        FakeProvider::openai_tool_calls(&[("r1", "read_file", &[read.as_str()])], None),
    );
    fake.push(FakeProvider::openai_text(
        &["The search failed; I will read it myself."],
        None,
    ));
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({"subagents": {"maxSteps": 1}})),
        None,
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "search").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let failed = tool_updates(&updates, "failed");
    assert_eq!(failed.len(), 1, "{updates:?}");
    assert_eq!(failed[0]["toolCallId"], "call_d");
    assert!(
        failed[0]["output"]
            .as_str()
            .unwrap()
            .contains("the subagent explore stopped at its step limit"),
        "{}",
        failed[0]
    );
    assert_eq!(
        answer_text(&updates),
        "The search failed; I will read it myself."
    );
    // One child call (its limit), then the parent's: three requests in all.
    assert_eq!(fake.requests().len(), 3);
    assert_invariants(&fake.requests());
    server.stop().await;
}
