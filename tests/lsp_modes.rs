//! Per-session approval policies (`agent/session/setMode`), plan mode (read-only: no edit
//! tools offered, a forced edit refused, subagents and MCP tools held to it, and leaving it
//! in the same session to carry the plan out) and the `locations` / edit `diff` of tool
//! calls, through the real server and the fake provider.

mod common;

use agentls_dev::fake_provider::FakeProvider;
use common::agent::*;
use common::Server;
use serde_json::{json, Value};
use std::fs;
use std::path::PathBuf;

/// `agent/session/setMode`'s answer.
async fn set_mode(server: &Server, session: &str, mode: &str) -> Value {
    server
        .client
        .request(
            "agent/session/setMode",
            json!({"sessionId": session, "mode": mode}),
        )
        .await
        .unwrap_or_else(|e| panic!("setMode {mode}: {e:?}"))
}

/// The edit every plan-mode test tries: `41` → `42` in src/lib.rs.
fn edit_to_42() -> String {
    json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string()
}

/// The tokens of the tools section of an `agent/session/context` report.
fn tools_tokens(report: &Value) -> u64 {
    report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "tools")
        .unwrap()["tokens"]
        .as_u64()
        .unwrap()
}

/// The `workspace/applyEdit` requests the editor got.
fn applied_edits(seen: &Seen) -> Vec<Value> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|(method, _)| method == "workspace/applyEdit")
        .map(|(_, params)| params.clone())
        .collect()
}

#[tokio::test]
async fn set_mode_full_auto_stops_the_permission_requests_of_that_session_only() {
    let (ws, fake) = workspace_and_fake().await;
    let echo = json!({"command": "echo from-a"}).to_string();
    fake.push_call_then_text("call_a", "shell", &echo, "A done.");
    let echo_b = json!({"command": "echo from-b"}).to_string();
    fake.push_call_then_text("call_b", "shell", &echo_b, "B done.");
    // The client allows once when asked.
    let (responder, seen) = responder(&["allowOnce"]);
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({"approval": "ask"})),
        Some(responder),
    )
    .await;
    let a = new_session(&server).await;
    let b = new_session(&server).await;
    let answer = server
        .client
        .request(
            "agent/session/setMode",
            json!({"sessionId": a, "mode": "full-auto"}),
        )
        .await
        .unwrap();
    assert_eq!(answer["mode"], "full-auto");

    let (updates, _) = run_turn(&server, &a, "run it").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert_eq!(tool_updates(&updates, "completed").len(), 1, "{updates:?}");
    let asked = |seen: &Seen| {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|(method, _)| method == "agent/session/requestPermission")
            .count()
    };
    assert_eq!(asked(&seen), 0, "full-auto runs without asking");

    // The other session still follows `approval: ask`.
    let (updates, _) = run_turn(&server, &b, "run it").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert_eq!(asked(&seen), 1, "session b asks");

    let bad = server
        .client
        .request(
            "agent/session/setMode",
            json!({"sessionId": a, "mode": "yolo"}),
        )
        .await
        .unwrap_err();
    assert_eq!(bad.code, -32602, "{bad:?}");
    assert!(bad.message.contains("unknown mode yolo"), "{bad:?}");
    assert!(
        bad.message
            .contains("the modes are ask, auto-edit, full-auto, plan"),
        "{bad:?}"
    );
}

#[tokio::test]
async fn plan_mode_offers_no_edit_tool_refuses_a_forced_edit_and_auto_edit_then_edits() {
    let (ws, fake) = workspace_and_fake().await;
    let plan = json!({"entries": [{"content": "Make answer() return 42", "status": "pending"}]})
        .to_string();
    let edit = edit_to_42();
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("call_plan", "update_plan", &[plan.as_str()]),
            ("call_forced", "edit_file", &[edit.as_str()]),
        ],
        None,
    ));
    fake.push(FakeProvider::openai_text(
        &["Plan: change 41 to 42 in src/lib.rs."],
        None,
    ));
    fake.push_call_then_text("call_edit", "edit_file", &edit, "Done.");
    let (responder, seen) = responder(&[]);
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({"approval": "ask"})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let editing = session_request(&server, "agent/session/context", &session).await;
    assert_eq!(set_mode(&server, &session, "plan").await["mode"], "plan");
    // agent/session/context shows the request as plan mode makes it.
    let planning = session_request(&server, "agent/session/context", &session).await;
    assert!(
        tools_tokens(&planning) < tools_tokens(&editing),
        "{planning} {editing}"
    );
    assert!(planning["messages"]
        .to_string()
        .contains("<approval_policy>plan</approval_policy>"));

    let (updates, others) = run_turn(&server, &session, "plan the change").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    // The mode is shown: the status the switch sent, and every status of the turn.
    let shown = statuses(&others);
    assert_eq!(shown[0]["state"], "idle", "{shown:?}");
    assert!(shown.iter().all(|s| s["mode"] == "plan"), "{shown:?}");
    // Its commands run in the read-only sandbox without network, and the status says so.
    assert!(
        shown
            .iter()
            .all(|s| s["sandbox"]["mode"] == "read-only" && s["sandbox"]["network"] == false),
        "{shown:?}"
    );
    let failed = tool_updates(&updates, "failed");
    assert_eq!(failed.len(), 1, "{updates:?}");
    assert_eq!(failed[0]["toolCallId"], "call_forced");
    assert!(updates
        .iter()
        .any(|u| u["kind"] == "plan" && u["entries"][0]["content"] == "Make answer() return 42"));
    assert!(permission_requests(&seen).is_empty(), "nothing is asked");
    assert!(applied_edits(&seen).is_empty(), "nothing is edited");

    let requests = fake.requests();
    let tools = offered_tool_names(&requests[0].body);
    assert!(
        !tools.iter().any(|t| t == "edit_file" || t == "write_file"),
        "{tools:?}"
    );
    for kept in ["read_file", "grep", "shell", "update_plan"] {
        assert!(tools.iter().any(|t| t == kept), "{kept} in {tools:?}");
    }
    let first = requests[0].body.to_string();
    assert!(first.contains("You are in plan mode"), "{first}");
    assert!(
        first.contains("<approval_policy>plan</approval_policy>")
            && first.contains("<sandbox_mode>read-only</sandbox_mode>")
            && first.contains("<network_access>restricted</network_access>"),
        "{first}"
    );
    let refused = tool_output_in(&requests[1].body, "call_forced");
    assert!(
        refused.contains("not run: edit_file is not available in plan mode")
            && refused.contains("switches the session to another mode"),
        "{refused}"
    );

    // Leaving plan mode in the same session: the edit tools come back and the edit runs.
    assert_eq!(
        set_mode(&server, &session, "auto-edit").await["mode"],
        "auto-edit"
    );
    let (updates, others) = run_turn(&server, &session, "carry it out").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let shown = statuses(&others);
    assert_eq!(shown[0]["mode"], "auto-edit");
    assert_eq!(shown[0]["sandbox"]["mode"], "workspace-write", "{shown:?}");
    assert_eq!(tool_updates(&updates, "completed").len(), 1, "{updates:?}");
    // The editor is asked to apply the change (it applies it to the buffer and the disk).
    let edits = applied_edits(&seen);
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert!(edits[0].to_string().contains("    42\\n"), "{edits:?}");
    let requests = fake.requests();
    let tools = offered_tool_names(&requests[2].body);
    assert!(
        tools.iter().any(|t| t == "edit_file") && tools.iter().any(|t| t == "write_file"),
        "{tools:?}"
    );
    let after = requests[2].body.to_string();
    assert!(
        after.contains("left plan mode and is now in auto-edit mode"),
        "{after}"
    );
    // The plan made in plan mode is still the session's.
    assert!(after.contains("Make answer() return 42"), "{after}");
    server.stop().await;
}

#[tokio::test]
async fn a_subagent_under_a_plan_mode_parent_cannot_edit() {
    let (ws, fake) = workspace_and_fake().await;
    let agents = ws.root.join(".agents/agents");
    fs::create_dir_all(&agents).unwrap();
    fs::write(
        agents.join("fixer.md"),
        "---\nname: fixer\ndescription: Fixes small things\ntools: read_file, edit_file\n---\nYou are the FIXERAGENT: make the change asked.\n",
    )
    .unwrap();
    let task = json!({"agent": "fixer", "prompt": "Make answer() return 42"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("call_task", "task", &[task.as_str()])],
        None,
    ));
    let edit = edit_to_42();
    fake.push_for(
        "FIXERAGENT",
        FakeProvider::openai_tool_calls(&[("c_edit", "edit_file", &[edit.as_str()])], None),
    );
    fake.push_for(
        "FIXERAGENT",
        FakeProvider::openai_text(&["I could not edit: plan mode."], None),
    );
    fake.push(FakeProvider::openai_text(&["The fixer could not."], None));
    // Even with the parent's "always" for edits, nothing may be asked or edited.
    let (responder, seen) = responder(&["allowAlways"]);
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({"approval": "full-auto"})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    set_mode(&server, &session, "plan").await;
    let (updates, _) = run_turn(&server, &session, "Fix answer() with the fixer").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert!(permission_requests(&seen).is_empty());
    assert!(applied_edits(&seen).is_empty(), "nothing is edited");

    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    // The child follows its parent's mode: its edit tool is withheld, its call refused,
    // and it is told it is planning.
    let child = &requests[1].body;
    assert_eq!(offered_tool_names(child), ["read_file"]);
    assert!(child.to_string().contains("You are in plan mode"));
    let refused = tool_output_in(&requests[2].body, "c_edit");
    assert!(
        refused.contains("edit_file is not available in plan mode"),
        "{refused}"
    );
    server.stop().await;
}

fn mcp_fixture() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/mcp_security_server.py")
        .display()
        .to_string()
}

#[tokio::test]
async fn in_plan_mode_only_mcp_tools_annotated_read_only_are_offered_and_run() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("call_env", "mcp__sec__env", &["{}"]),
            ("call_peek", "mcp__sec__peek", &["{}"]),
        ],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Peeked."], None));
    let (responder, seen) = responder(&["allowOnce"]);
    // Plan mode as the setting, for every session.
    let extra = json!({"approval": "plan", "mcpServers": {
        "sec": {"command": "python3", "args": [mcp_fixture()]}
    }});
    let server = server(&ws, provider_options(&fake, &ws, extra), Some(responder)).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Look around.").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");

    let requests = fake.requests();
    let tools = offered_tool_names(&requests[0].body);
    assert!(tools.iter().any(|t| t == "mcp__sec__peek"), "{tools:?}");
    assert!(
        !tools
            .iter()
            .any(|t| t == "mcp__sec__env" || t == "mcp__sec__big" || t == "edit_file"),
        "{tools:?}"
    );
    let refused = tool_output_in(&requests[1].body, "call_env");
    assert!(
        refused.contains("mcp__sec__env is not available in plan mode")
            && refused.contains("readOnlyHint"),
        "{refused}"
    );
    // The read-only tool runs, after asking as a command does in plan mode.
    assert!(tool_output_in(&requests[1].body, "call_peek").contains("peeked"));
    let asked = permission_requests(&seen);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["toolCall"]["name"], "mcp__sec__peek");
    server.stop().await;
}

#[tokio::test]
async fn tool_calls_carry_locations_and_edits_their_diff() {
    let (ws, fake) = workspace_and_fake().await;
    let edit =
        json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string();
    fake.push_call_then_text("call_e", "edit_file", &edit, "Changed.");
    let (responder, seen) = responder(&["allowOnce"]);
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({"approval": "ask"})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "make it 42").await;
    let path = ws.root.canonicalize().unwrap().join("src/lib.rs");
    let call = updates.iter().find(|u| u["kind"] == "toolCall").unwrap();
    assert_eq!(call["locations"], json!([{"path": path}]));
    let diff = json!({
        "path": path,
        "oldText": "pub fn answer() -> u32 {\n    41\n}\n",
        "newText": "pub fn answer() -> u32 {\n    42\n}\n",
    });
    let running = updates
        .iter()
        .find(|u| u["kind"] == "toolCallUpdate" && u["status"] == "in_progress")
        .unwrap();
    assert_eq!(running["diff"], diff);
    let seen = seen.lock().unwrap();
    let (_, asked) = seen
        .iter()
        .find(|(method, _)| method == "agent/session/requestPermission")
        .unwrap();
    assert_eq!(asked["toolCall"]["edit"], diff);
    assert_eq!(asked["toolCall"]["locations"], json!([{"path": path}]));
}

#[tokio::test]
async fn the_user_settings_file_lies_under_the_editors_settings() {
    let ws = workspace();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("agentls")).unwrap();
    std::fs::write(
        home.path().join("agentls/settings.json"),
        json!({"approval": "full-auto", "maxSteps": 1}).to_string(),
    )
    .unwrap();
    let fake = FakeProvider::start().await;
    let echo = json!({"command": "echo from-file-policy"}).to_string();
    fake.push_call_then_text("call_s", "shell", &echo, "Done.");
    let (responder, seen) = responder(&[]);
    // The editor's settings say nothing of `approval` and set `maxSteps` to 5: the file's
    // `approval` holds, the editor's `maxSteps` wins (1 would stop before the answer).
    let server = common::start(common::Options {
        root: Some(&ws.root),
        init_options: provider_options(&fake, &ws, json!({"maxSteps": 5})),
        apply_edit: true,
        responder: Some(responder),
        env: vec![("XDG_CONFIG_HOME", home.path().display().to_string())],
        ..common::Options::default()
    })
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "run it").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert_eq!(tool_updates(&updates, "completed").len(), 1, "{updates:?}");
    assert!(
        !seen
            .lock()
            .unwrap()
            .iter()
            .any(|(method, _)| method == "agent/session/requestPermission"),
        "full-auto from the file: nothing asked"
    );
}

#[tokio::test]
async fn in_plan_mode_a_command_asks_then_runs_read_only_and_never_leaves_the_sandbox() {
    let (ws, fake) = workspace_and_fake().await;
    let touch = json!({"command": "touch planned.txt"}).to_string();
    fake.push_call_then_text("call_touch", "shell", &touch, "It could not write.");
    // Allowed to run, and allowed again should it ask to leave the sandbox: it must not ask.
    let (responder, seen) = responder(&["allowOnce", "allowOnce"]);
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({"approval": "plan"})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "try it").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert!(!ws.root.join("planned.txt").exists(), "{updates:?}");
    let asked = permission_requests(&seen);
    assert_eq!(
        asked.len(),
        1,
        "the command is asked, leaving the sandbox is not: {asked:?}"
    );
    let output = tool_output_in(&fake.requests()[1].body, "call_touch");
    assert!(
        output.contains("plan mode runs commands read-only"),
        "{output}"
    );
    server.stop().await;
}
