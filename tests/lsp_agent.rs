//! The agent loop through the real server and a fake provider that speaks the real wire
//! formats (OpenAI and Anthropic SSE) over real HTTP: turns, tools, approvals, edits through
//! workspace/applyEdit, cancellation, queued prompts, faults, durable sessions.

mod common;

use agentls_dev::fake_provider::{FakeProvider, Reply, Step};
use common::agent::*;
use common::{range_json, start, uri, Options};
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test]
async fn a_read_file_turn_streams_the_tool_call_and_the_answer() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_tool_calls(
        &[(
            "call_1",
            "read_file",
            &["{\"pa", "th\": \"src/", "lib.rs\"}"],
        )],
        Some((900, 12)),
    ));
    fake.push(FakeProvider::openai_text(
        &["The function ", "returns 41."],
        Some((1200, 6)),
    ));
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let turn = prompt(&server, &session, "What does answer() return?").await;
    let (updates, others) = updates_until_end(&server, &turn).await;

    assert_eq!(stop_reason(&updates), "endTurn");
    assert_eq!(answer_text(&updates), "The function returns 41.");
    let call = updates
        .iter()
        .find(|u| u["kind"] == "toolCall")
        .expect("toolCall");
    assert_eq!(call["toolCallId"], "call_1");
    assert_eq!(call["name"], "read_file");
    assert_eq!(call["toolKind"], "read");
    assert_eq!(call["input"], json!({"path": "src/lib.rs"}));
    let done = tool_updates(&updates, "completed");
    assert_eq!(done.len(), 1);
    assert!(
        done[0]["output"].as_str().unwrap().contains("L2:     41"),
        "{}",
        done[0]
    );
    assert_eq!(
        updates.last().unwrap()["usage"],
        json!({"inputTokens": 2100, "outputTokens": 18})
    );

    // The status went from an estimate to the provider's figures, and ends idle.
    let statuses: Vec<&Value> = others
        .iter()
        .filter(|m| m.method == "agent/status")
        .map(|m| &m.params)
        .collect();
    assert!(statuses
        .iter()
        .any(|s| s["estimated"] == true && s["state"] == "running"));
    assert!(statuses
        .iter()
        .any(|s| s["estimated"] == false && s["usedTokens"] == 1206));

    // The second request carried the tool result after its call; the first, the user's
    // question with the environment block.
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body["stream"], true);
    assert_eq!(requests[0].body["model"], "test-model");
    let last_user = requests[0].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(last_user["content"]
        .as_str()
        .unwrap()
        .contains("<environment_context>"));
    assert!(last_user["content"]
        .as_str()
        .unwrap()
        .ends_with("What does answer() return?"));
    let tool_message = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool_message["tool_call_id"], "call_1");
    assert!(tool_message["content"]
        .as_str()
        .unwrap()
        .contains("pub fn answer()"));
    assert_invariants(&requests);

    // The transcript and the list show the turn.
    let loaded = session_request(&server, "agent/session/load", &session).await;
    let items = loaded["items"].as_array().unwrap();
    let shown: Vec<&str> = items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(shown, ["user", "toolCall", "assistant"]);
    assert_eq!(items[1]["status"], "completed");
    let list = server
        .client
        .request("agent/session/list", json!({}))
        .await
        .unwrap();
    assert_eq!(list["sessions"][0]["sessionId"], session.as_str());
    assert_eq!(list["sessions"][0]["title"], "What does answer() return?");
    assert_eq!(list["sessions"][0]["turns"], 1);
    server.stop().await;
}

#[tokio::test]
async fn the_anthropic_provider_runs_the_same_turn() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::anthropic_tool_use(
        "Let me look.",
        "toolu_1",
        "grep",
        &["{\"pattern\":", " \"fn answer\"}"],
    ));
    fake.push(FakeProvider::anthropic_text(
        &["Found it in ", "src/lib.rs."],
        Some((800, 9)),
    ));
    let options = json!({
        "provider": {"kind": "anthropic", "baseUrl": fake.base_url(), "model": "claude-test", "maxRetries": 0},
        "stateDir": ws.state.path(),
    });
    let server = server(&ws, options, None).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "Where is answer defined?").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert_eq!(answer_text(&updates), "Let me look.Found it in src/lib.rs.");
    let done = tool_updates(&updates, "completed");
    assert!(
        done[0]["output"]
            .as_str()
            .unwrap()
            .contains("src/lib.rs:1:"),
        "{}",
        done[0]
    );
    let requests = fake.requests();
    assert_eq!(requests[0].path, "/v1/messages");
    let second = &requests[1].body;
    let messages = second["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_1");
    server.stop().await;
}

#[tokio::test]
async fn an_approved_edit_arrives_as_apply_edit_and_a_rejected_one_does_not() {
    let (ws, fake) = workspace_and_fake().await;
    let edit =
        json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string();
    fake.push_call_then_text("call_e1", "edit_file", &edit, "Done.");
    // The editor applied the first (it answered `applied`): the buffer holds 42 now, even
    // before a didChange says so.
    let again =
        json!({"path": "src/lib.rs", "old_text": "    42\n", "new_text": "    43\n"}).to_string();
    fake.push_call_then_text("call_e2", "edit_file", &again, "Understood.");
    let (responder, seen) = responder(&["allowOnce", "rejectOnce"]);
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({})),
        Some(responder),
    )
    .await;
    let lib = uri(&ws.root.join("src/lib.rs"));
    server
        .open(&lib, "rust", 3, "pub fn answer() -> u32 {\n    41\n}\n")
        .await;
    let session = new_session(&server).await;

    let (updates, _) = run_turn(&server, &session, "Make it 42").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    let done = tool_updates(&updates, "completed");
    assert!(
        done[0]["output"]
            .as_str()
            .unwrap()
            .starts_with("Edited src/lib.rs"),
        "{updates:?}"
    );
    let seen_now = seen.lock().unwrap().clone();
    let permission = &seen_now
        .iter()
        .find(|(m, _)| m == "agent/session/requestPermission")
        .unwrap()
        .1;
    assert_eq!(permission["sessionId"], session.as_str());
    assert_eq!(permission["toolCall"]["kind"], "edit");
    let diff = permission["toolCall"]["diff"].as_str().unwrap();
    assert!(
        diff.contains("-    41") && diff.contains("+    42"),
        "{diff}"
    );
    let kinds_offered: Vec<&str> = permission["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds_offered,
        ["allowOnce", "allowAlways", "rejectOnce", "rejectAlways"]
    );
    let apply = &seen_now
        .iter()
        .find(|(m, _)| m == "workspace/applyEdit")
        .expect("applyEdit")
        .1;
    let change = &apply["edit"]["documentChanges"][0];
    assert_eq!(change["textDocument"]["uri"], lib.as_str());
    assert_eq!(change["textDocument"]["version"], 3);
    assert_eq!(change["edits"][0]["newText"], "    42\n");
    assert_eq!(change["edits"][0]["range"], range_json([1, 0, 2, 0]));

    let (updates, _) = run_turn(&server, &session, "Again").await;
    let failed = tool_updates(&updates, "failed");
    assert!(
        failed[0]["output"].as_str().unwrap().contains("rejected"),
        "{updates:?}"
    );
    let applies = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "workspace/applyEdit")
        .count();
    assert_eq!(applies, 1, "a rejected edit must not be applied");
    assert_invariants(&fake.requests());
    server.stop().await;
}

#[tokio::test]
async fn allow_always_is_remembered_and_survives_a_restart() {
    let (ws, fake) = workspace_and_fake().await;
    let shell = json!({"command": "echo hi"}).to_string();
    for _ in 0..3 {
        fake.push(FakeProvider::openai_tool_calls(
            &[("call_s", "shell", &[shell.as_str()])],
            None,
        ));
        fake.push(FakeProvider::openai_text(&["ok"], None));
    }
    let (responder_a, seen_a) = responder(&["allowAlways"]);
    let server_a = server(
        &ws,
        provider_options(&fake, &ws, json!({})),
        Some(responder_a),
    )
    .await;
    let session = new_session(&server_a).await;
    for _ in 0..2 {
        let (updates, _) = run_turn(&server_a, &session, "say hi").await;
        let done = tool_updates(&updates, "completed");
        assert!(
            done[0]["output"].as_str().unwrap().contains("hi\n"),
            "{updates:?}"
        );
    }
    let asked = seen_a
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "agent/session/requestPermission")
        .count();
    assert_eq!(
        asked, 1,
        "allowAlways must be remembered within the session"
    );
    server_a.stop().await;

    let (responder_b, seen_b) = responder(&[]);
    let server_b = server(
        &ws,
        provider_options(&fake, &ws, json!({})),
        Some(responder_b),
    )
    .await;
    let (updates, _) = run_turn(&server_b, &session, "say hi again").await;
    assert_eq!(tool_updates(&updates, "completed").len(), 1, "{updates:?}");
    let asked = seen_b
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "agent/session/requestPermission")
        .count();
    assert_eq!(
        asked, 0,
        "the approval is part of the session's durable state"
    );
    server_b.stop().await;
}

#[tokio::test]
async fn cancel_stops_a_stream_and_a_shell_command() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(Reply::Sse {
        steps: vec![
            openai_chunk(json!({"role": "assistant", "content": "Thinking about"})),
            Step::Delay(Duration::from_secs(60)),
            openai_chunk(json!({"content": " never sent"})),
            openai_finish("stop"),
            Step::Data("[DONE]".into()),
        ],
    });
    let sleep = json!({"command": "sleep 60"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("call_sleep", "shell", &[sleep.as_str()])],
        None,
    ));
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({"approval": "full-auto"})),
        None,
    )
    .await;
    let session = new_session(&server).await;

    let turn = prompt(&server, &session, "think").await;
    loop {
        let message = server.client.next_message().await.unwrap();
        if message.params["update"]["kind"] == "agentMessageChunk" {
            break;
        }
    }
    let answer = session_request(&server, "agent/session/cancel", &session).await;
    assert_eq!(answer["cancelled"], true);
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(kinds(&updates), ["turnEnd"], "{updates:?}");
    assert_eq!(stop_reason(&updates), "cancelled");

    let turn = prompt(&server, &session, "sleep").await;
    loop {
        let message = server.client.next_message().await.unwrap();
        if message.params["update"]["kind"] == "toolCallUpdate"
            && message.params["update"]["status"] == "in_progress"
        {
            break;
        }
    }
    session_request(&server, "agent/session/cancel", &session).await;
    let (updates, _) = updates_until_end(&server, &turn).await;
    // After the cancel the turn says two things only: how the running call ended, and
    // that the turn did.
    assert_eq!(
        kinds(&updates),
        ["toolCallUpdate", "turnEnd"],
        "{updates:?}"
    );
    assert_eq!(updates[0]["toolCallId"], "call_sleep");
    assert_eq!(updates[0]["status"], "failed");
    assert_eq!(stop_reason(&updates), "cancelled");
    // The log still has the whole story: the call failed because of the cancel.
    let loaded = session_request(&server, "agent/session/load", &session).await;
    let call = loaded["items"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|i| i["kind"] == "toolCall")
        .unwrap()
        .clone();
    assert_eq!(call["status"], "failed");
    assert!(
        call["output"].as_str().unwrap().contains("cancelled"),
        "{call}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_refused() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("call_x", "read_file", &["{\"path\": \"../outside.txt\"}"]),
            ("call_y", "read_file", &["{\"path\": \"/etc/passwd\"}"]),
        ],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["I cannot read that."], None));
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let (updates, _) = run_turn(&server, &session, "read the secret").await;
    let failed = tool_updates(&updates, "failed");
    assert_eq!(failed.len(), 2, "{updates:?}");
    for update in failed {
        let output = update["output"].as_str().unwrap();
        assert!(output.contains("outside"), "{output}");
        assert!(!output.contains("secret"), "{output}");
    }
    assert_invariants(&fake.requests());
    server.stop().await;
}

#[tokio::test]
async fn a_prompt_during_a_turn_is_queued_and_runs_after_it() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(Reply::Sse {
        steps: vec![
            openai_chunk(json!({"role": "assistant", "content": "first "})),
            Step::Delay(Duration::from_millis(300)),
            openai_chunk(json!({"content": "answer"})),
            openai_finish("stop"),
            Step::Data("[DONE]".into()),
        ],
    });
    fake.push(FakeProvider::openai_text(&["second answer"], None));
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let first = prompt(&server, &session, "one").await;
    let _second = prompt(&server, &session, "two").await;
    let mut order = Vec::new();
    while order.len() < 3 {
        let message = server.client.next_message().await.unwrap();
        if message.method != "agent/session/update" {
            continue;
        }
        let kind = message.params["update"]["kind"]
            .as_str()
            .unwrap()
            .to_string();
        let turn = message.params["turnId"].as_str().unwrap().to_string();
        if kind == "queued" || kind == "turnEnd" {
            order.push((if turn == first { "first" } else { "second" }, kind));
        }
    }
    assert_eq!(
        order,
        [
            ("second", "queued".to_string()),
            ("first", "turnEnd".to_string()),
            ("second", "turnEnd".to_string())
        ]
    );
    // The second request holds the first exchange.
    let requests = fake.requests();
    let contents: Vec<String> = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert!(
        contents.iter().any(|c| c.contains("first answer")),
        "{contents:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn provider_faults_become_clear_errors_and_retries() {
    let (ws, fake) = workspace_and_fake().await;
    // 429 then success: retried, with a warning.
    fake.push(Reply::Http {
        status: 429,
        headers: vec![("Retry-After".into(), "0".into())],
        body: "{\"error\":{\"message\":\"slow down\"}}".into(),
    });
    fake.push(FakeProvider::openai_text(&["after the retry"], None));
    // 500 three times (maxRetries 2): an error, retryable.
    for _ in 0..3 {
        fake.push(Reply::Http {
            status: 500,
            headers: vec![],
            body: "{\"error\":{\"message\":\"boom\"}}".into(),
        });
    }
    // A stream cut mid-way: error, retryable, the partial answer kept.
    fake.push(Reply::Sse {
        steps: vec![
            openai_chunk(json!({"role": "assistant", "content": "partial ans"})),
            Step::Cut,
        ],
    });
    // Malformed lines are skipped.
    fake.push(Reply::Sse {
        steps: vec![
            openai_chunk(json!({"role": "assistant", "content": "fine"})),
            Step::Raw("data: {not json\n\n".into()),
            Step::Raw("garbage line\n\n".into()),
            openai_chunk(json!({"content": " anyway"})),
            openai_finish("stop"),
            Step::Data("[DONE]".into()),
        ],
    });
    // Context length exceeded: compacted (the summary call is routed) and sent again.
    fake.push(FakeProvider::openai_context_length_exceeded());
    fake.push(FakeProvider::openai_text(&["recovered"], None));
    fake.push_for(
        "CONTEXT CHECKPOINT COMPACTION",
        FakeProvider::openai_text(&["[Done] a to d"], None),
    );
    let (server, session) = session_server(&ws, &fake, json!({})).await;

    let (updates, _) = run_turn(&server, &session, "a").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert_eq!(answer_text(&updates), "after the retry");
    assert!(
        kinds(&updates).contains(&"warning".to_string()),
        "{updates:?}"
    );

    let (updates, _) = run_turn(&server, &session, "b").await;
    assert_eq!(stop_reason(&updates), "error");
    let error = updates.iter().find(|u| u["kind"] == "error").unwrap();
    assert_eq!(error["retryable"], true);

    let (updates, _) = run_turn(&server, &session, "c").await;
    assert_eq!(stop_reason(&updates), "error");
    assert_eq!(answer_text(&updates), "partial ans");
    assert_eq!(
        updates.iter().find(|u| u["kind"] == "error").unwrap()["retryable"],
        true
    );

    let (updates, _) = run_turn(&server, &session, "d").await;
    assert_eq!(stop_reason(&updates), "endTurn");
    assert_eq!(answer_text(&updates), "fine anyway");

    let (updates, _) = run_turn(&server, &session, "e").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert_eq!(answer_text(&updates), "recovered");
    // The error told the real window: the session uses it from now on.
    let warning = updates.iter().find(|u| u["kind"] == "warning").unwrap();
    assert!(
        warning["message"].as_str().unwrap().contains("8192"),
        "{warning}"
    );

    // The partial answer is in the transcript.
    let loaded = session_request(&server, "agent/session/load", &session).await;
    assert!(loaded["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["kind"] == "assistant" && i["text"] == "partial ans"));
    assert_invariants(&fake.requests());
    server.stop().await;
}

#[tokio::test]
async fn a_missing_key_or_an_unreachable_server_names_the_setting_to_fix() {
    let ws = workspace();
    let server = server(
        &ws,
        json!({"provider": {"kind": "openai", "model": "gpt-4o", "apiKeyEnv": "AGENTLS_TEST_SURELY_UNSET_KEY"}, "stateDir": ws.state.path()}),
        None,
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "hello").await;
    let error = updates
        .iter()
        .find(|u| u["kind"] == "error")
        .expect("error");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("AGENTLS_TEST_SURELY_UNSET_KEY"),
        "{message}"
    );
    server.stop().await;

    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let server = start(Options {
        root: Some(&ws.root),
        init_options: json!({"provider": {"kind": "openai", "baseUrl": format!("http://127.0.0.1:{port}/v1"), "model": "m", "maxRetries": 0}, "stateDir": ws.state.path()}),
        ..Options::default()
    })
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "hello").await;
    let message = updates.iter().find(|u| u["kind"] == "error").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("provider.baseUrl"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn a_server_killed_mid_turn_reloads_with_everything_committed() {
    let (ws, fake) = workspace_and_fake().await;
    // The command's shell writes its pid, then becomes the sleep: after agentls's SIGKILL
    // it must not outlive it (its warden kills it; a regression hangs this test for an hour).
    let pid_file = ws.root.parent().unwrap().join("command.pid");
    let sleep = json!({"command": format!("read -r pid _ < /proc/self/stat; echo $pid > {}; exec sleep 3600", pid_file.display())})
        .to_string();
    fake.push_call_then_text("call_long", "shell", &sleep, "Recovered.");
    let options = provider_options(&fake, &ws, json!({"approval": "full-auto"}));
    let mut server_a = server(&ws, options.clone(), None).await;
    let session = new_session(&server_a).await;
    let turn = prompt(&server_a, &session, "run the long command").await;
    loop {
        let message = server_a.client.next_message().await.unwrap();
        if message.params["turnId"] == turn.as_str()
            && message.params["update"]["status"] == "in_progress"
        {
            break;
        }
    }
    let command_pid = loop {
        match std::fs::read_to_string(&pid_file) {
            Ok(pid) if pid.ends_with('\n') => break pid,
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    kill9(&mut server_a).await;
    wait_gone(command_pid.trim()).await;

    let server_b = server(&ws, options, None).await;
    let loaded = session_request(&server_b, "agent/session/load", &session).await;
    let items = loaded["items"].as_array().unwrap();
    assert_eq!(items[0]["kind"], "user");
    assert_eq!(items[0]["text"], "run the long command");
    assert_eq!(items[1]["kind"], "toolCall");
    assert_eq!(
        items[1]["status"], "failed",
        "the interrupted call is closed as aborted: {items:?}"
    );
    let (updates, _) = run_turn(&server_b, &session, "what happened?").await;
    assert_eq!(answer_text(&updates), "Recovered.");
    assert_invariants(&fake.requests());
    server_b.stop().await;
}

#[tokio::test]
async fn slash_commands_and_mentions_are_handled_by_the_server() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_text(&["Seen."], None));
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let (updates, _) = run_turn(&server, &session, "/help").await;
    assert!(answer_text(&updates).contains("/compact [focus]"));
    let (updates, _) = run_turn(&server, &session, "/frobnicate").await;
    let text = answer_text(&updates);
    assert!(
        text.contains("unknown command /frobnicate") && text.contains("/model NAME"),
        "{text}"
    );
    assert!(
        fake.requests().is_empty(),
        "slash commands never reach the model"
    );

    let turn = prompt(
        &server,
        &session,
        "Compare @src/lib.rs:1-2 with @src/missing.rs",
    )
    .await;
    let (updates, _) = updates_until_end(&server, &turn).await;
    let warning = updates
        .iter()
        .find(|u| u["kind"] == "warning")
        .expect("warning for the missing file");
    assert!(warning["message"]
        .as_str()
        .unwrap()
        .contains("@src/missing.rs"));
    let requests = fake.requests();
    let user = requests[0].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        user.contains("<attached_files>") && user.contains("L1: pub fn answer() -> u32 {"),
        "{user}"
    );
    assert!(!user.contains("missing.rs\""), "{user}");
    server.stop().await;
}

#[tokio::test]
async fn a_turn_stops_after_max_steps() {
    let (ws, fake) = workspace_and_fake().await;
    for i in 0..3 {
        let id = format!("call_{i}");
        fake.push(FakeProvider::openai_tool_calls(
            &[(id.as_str(), "list_dir", &["{}"])],
            None,
        ));
    }
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({"maxSteps": 2})),
        None,
    )
    .await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "loop forever").await;
    assert_eq!(stop_reason(&updates), "maxSteps");
    assert_eq!(fake.requests().len(), 2);
    server.stop().await;
}

#[tokio::test]
async fn code_actions_offer_to_ask_about_a_selection_and_to_fix_a_diagnostic() {
    let ws = workspace();
    let server = server(&ws, json!({}), None).await;
    let lib = uri(&ws.root.join("src/lib.rs"));
    server
        .open(&lib, "rust", 1, "pub fn answer() -> u32 {\n    41\n}\n")
        .await;
    let diagnostic = json!({"range": range_json([1, 4, 1, 6]), "severity": 1, "message": "expected 42\nnote: more"});
    let actions = server
        .client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": lib}, "range": range_json([0, 0, 2, 1]), "context": {"diagnostics": [diagnostic]}}),
        )
        .await
        .unwrap();
    let actions = actions.as_array().unwrap();
    assert_eq!(actions[0]["title"], "Ask agent about this selection");
    assert!(actions[0]["kind"]
        .as_str()
        .unwrap()
        .starts_with("refactor."));
    assert_eq!(
        actions[0]["command"]["command"],
        "agentls.askAboutSelection"
    );
    assert_eq!(actions[0]["command"]["arguments"][0], lib.as_str());
    assert_eq!(actions[1]["title"], "Ask agent to fix: expected 42");
    assert_eq!(actions[1]["kind"], "quickfix");
    assert_eq!(actions[1]["command"]["command"], "agentls.fixDiagnostic");
    assert_eq!(
        actions[1]["command"]["arguments"][1]["message"],
        "expected 42\nnote: more"
    );
    // An empty selection and no diagnostic: nothing to offer.
    let none = server
        .client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": lib}, "range": range_json([0, 0, 0, 0]), "context": {"diagnostics": []}}),
        )
        .await
        .unwrap();
    assert_eq!(none, json!([]));
    server.stop().await;
}

#[tokio::test]
async fn unknown_sessions_and_bad_params_are_invalid_params() {
    let ws = workspace();
    let server = server(&ws, json!({"stateDir": ws.state.path()}), None).await;
    for (method, params) in [
        (
            "agent/session/prompt",
            json!({"sessionId": "nope", "text": "hi"}),
        ),
        ("agent/session/load", json!({"sessionId": "nope"})),
        ("agent/session/cancel", json!({"sessionId": "../../etc"})),
        ("agent/session/prompt", json!({"sessionId": 3})),
        ("agent/session/context", json!({"sessionId": "nope"})),
    ] {
        let err = server
            .client
            .request(method, params.clone())
            .await
            .expect_err(method);
        assert_eq!(err.code, -32602, "{method} {params}: {}", err.message);
    }
    // No model configured: a clear error at the first prompt, not a crash.
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "hi").await;
    let error = updates.iter().find(|u| u["kind"] == "error").unwrap();
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("provider.model"),
        "{error}"
    );
    server.stop().await;
}

#[tokio::test]
async fn reasoning_streams_as_thought_chunks_and_split_tool_calls_assemble() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(Reply::Sse {
        steps: vec![
            openai_chunk(json!({"role": "assistant", "reasoning_content": "The user wants "})),
            openai_chunk(json!({"reasoning_content": "the answer."})),
            openai_chunk(json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{\"pat"}}]})),
            openai_chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "tern\": \"answer\"}"}}]})),
            openai_finish("tool_calls"),
            Step::Data("[DONE]".into()),
        ],
    });
    fake.push(FakeProvider::openai_text(&["Found."], None));
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let (updates, _) = run_turn(&server, &session, "Where is answer?").await;
    let thoughts: String = updates
        .iter()
        .filter(|u| u["kind"] == "agentThoughtChunk")
        .map(|u| u["text"].as_str().unwrap())
        .collect();
    assert_eq!(thoughts, "The user wants the answer.");
    let call = updates.iter().find(|u| u["kind"] == "toolCall").unwrap();
    assert_eq!(call["input"], json!({"pattern": "answer"}));
    assert_eq!(tool_updates(&updates, "completed").len(), 1, "{updates:?}");
    assert_eq!(answer_text(&updates), "Found.");
    // Reasoning is shown, not sent back to the model as the answer.
    let second = fake.requests()[1].body.to_string();
    assert!(!second.contains("The user wants"), "{second}");
    server.stop().await;
}

#[tokio::test]
async fn a_torn_log_line_is_dropped_and_the_user_is_told() {
    let (ws, fake) = workspace_and_fake().await;
    let (options, session, log) = one_turn_logged(&ws, &fake).await;
    // A crash mid-write: half an event at the end of the log.
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{\"event\":\"item\",\"turnId\":\"t9\",\"entry\":{\"ite");
    std::fs::write(&log, bytes).unwrap();

    let server_b = server(&ws, options, None).await;
    let loaded = session_request(&server_b, "agent/session/load", &session).await;
    let texts: Vec<&str> = loaded["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["text"].as_str())
        .collect();
    assert_eq!(
        texts,
        ["one", "First answer."],
        "nothing before the torn line is lost"
    );
    let shown = loop {
        let message = server_b.client.next_message().await.unwrap();
        if message.method == "window/showMessage" {
            break message.params["message"].as_str().unwrap().to_string();
        }
    };
    assert!(
        shown.contains(&session) && shown.contains("cut short"),
        "{shown}"
    );
    // The session goes on, its log repaired.
    let (updates, _) = run_turn(&server_b, &session, "two").await;
    assert_eq!(answer_text(&updates), "Second answer.");
    assert!(std::fs::read_to_string(&log).unwrap().ends_with('\n'));
    server_b.stop().await;
}

/// A first turn ("one", answered "First answer."; "Second answer." queued for the next) in a
/// new session of a server since stopped: its options, the session and its log on disk.
async fn one_turn_logged(
    ws: &Workspace,
    fake: &FakeProvider,
) -> (Value, String, std::path::PathBuf) {
    fake.push(FakeProvider::openai_text(&["First answer."], None));
    fake.push(FakeProvider::openai_text(&["Second answer."], None));
    let options = provider_options(fake, ws, json!({}));
    let server_a = server(ws, options.clone(), None).await;
    let session = new_session(&server_a).await;
    run_turn(&server_a, &session, "one").await;
    server_a.stop().await;
    let log = walk(ws.state.path())
        .into_iter()
        .find(|p| p.file_name().unwrap().to_string_lossy() == format!("{session}.jsonl"))
        .expect("the session log");
    (options, session, log)
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Answers a server request the client left unanswered (`Answer::Silence`), now.
async fn answer_late(
    server: &common::Server,
    request: &agentls_dev::lsp_client::ServerMessage,
    result: Value,
) {
    let id = request.id.clone().expect("a request");
    server
        .client
        .send_raw(
            json!({"jsonrpc": "2.0", "id": id, "result": result})
                .to_string()
                .as_bytes(),
        )
        .await
        .unwrap();
}

/// Reads messages until a server request `method` arrives; the turn's updates on the way.
async fn until_request(
    server: &common::Server,
    method: &str,
    updates: &mut Vec<Value>,
) -> agentls_dev::lsp_client::ServerMessage {
    loop {
        let message = server.client.next_message().await.expect("server alive");
        if message.method == method {
            return message;
        }
        if message.method == "agent/session/update" {
            updates.push(message.params["update"].clone());
        }
    }
}

#[tokio::test]
async fn a_late_answer_to_a_permission_request_is_logged_and_never_acted_on() {
    let (ws, fake) = workspace_and_fake().await;
    let edit =
        json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string();
    // Turn 1: the request times out; turn 2: the turn is cancelled while it is open.
    fake.push_call_then_text("call_t1", "edit_file", &edit, "Not edited then.");
    fake.push_call_then_text("call_t2", "edit_file", &edit, "Still here.");
    let seen: Seen = Default::default();
    let record = seen.clone();
    let responder: agentls_dev::lsp_client::Responder =
        std::sync::Arc::new(move |method, params| {
            record
                .lock()
                .unwrap()
                .push((method.to_string(), params.clone()));
            match method {
                "agent/session/requestPermission" => agentls_dev::lsp_client::Answer::Silence,
                "workspace/applyEdit" => {
                    agentls_dev::lsp_client::Answer::Result(json!({"applied": true}))
                }
                _ => agentls_dev::lsp_client::Answer::Result(Value::Null),
            }
        });
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({"approvalTimeoutMs": 300})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let allow = json!({"outcome": {"optionId": "allow-once"}});

    // After the timeout: the call was rejected, the turn went on and ended.
    let turn = prompt(&server, &session, "Make it 42").await;
    let (updates, others) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert_eq!(answer_text(&updates), "Not edited then.");
    let asked = others
        .iter()
        .find(|m| m.method == "agent/session/requestPermission")
        .expect("asked");
    answer_late(&server, asked, allow.clone()).await;

    // After a cancel: the request was open when the turn stopped.
    let turn = prompt(&server, &session, "Make it 42 again").await;
    let mut updates = Vec::new();
    let asked = until_request(&server, "agent/session/requestPermission", &mut updates).await;
    let answer = session_request(&server, "agent/session/cancel", &session).await;
    assert_eq!(answer["cancelled"], true);
    let (rest, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&rest), "cancelled");
    answer_late(&server, &asked, allow).await;

    // The server lives on, and neither late "allow" applied the edit.
    let (updates, _) = run_turn(&server, &session, "Are you there?").await;
    assert_eq!(answer_text(&updates), "Still here.");
    assert!(
        !seen
            .lock()
            .unwrap()
            .iter()
            .any(|(m, _)| m == "workspace/applyEdit"),
        "a late answer was acted on"
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(),
        "pub fn answer() -> u32 {\n    41\n}\n"
    );
    let loaded = session_request(&server, "agent/session/load", &session).await;
    let calls: Vec<&Value> = loaded["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "toolCall")
        .collect();
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c["status"] == "failed"), "{calls:?}");
    server.stop().await;
}

#[tokio::test]
async fn late_answers_to_progress_and_registration_requests_are_harmless() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_text(&["Hello."], None));
    let responder: agentls_dev::lsp_client::Responder =
        std::sync::Arc::new(|method, _| match method {
            "window/workDoneProgress/create" | "client/registerCapability" => {
                agentls_dev::lsp_client::Answer::Silence
            }
            _ => agentls_dev::lsp_client::Answer::Result(Value::Null),
        });
    let server = common::start(Options {
        root: Some(&ws.root),
        init_options: provider_options(&fake, &ws, json!({})),
        apply_edit: true,
        progress: true,
        watch_files: true,
        responder: Some(responder),
        ..Options::default()
    })
    .await;
    // An unanswered registration must not hold up indexing (and its progress): both
    // requests arrive, neither waiting for the other's answer.
    let (mut create, mut register) = (None, None);
    while create.is_none() || register.is_none() {
        let message = server.client.next_message().await.expect("server alive");
        match message.method.as_str() {
            "window/workDoneProgress/create" => create = create.take().or(Some(message)),
            "client/registerCapability" => register = Some(message),
            _ => {}
        }
    }
    let (create, register) = (create.unwrap(), register.unwrap());
    // Answered late, twice each, and once with an id the server never used.
    for _ in 0..2 {
        answer_late(&server, &create, Value::Null).await;
        answer_late(&server, &register, Value::Null).await;
    }
    let mut unknown = create.clone();
    unknown.id = Some(json!(987_654));
    answer_late(&server, &unknown, Value::Null).await;
    let session = new_session(&server).await;
    let (updates, _) = run_turn(&server, &session, "hi").await;
    assert_eq!(answer_text(&updates), "Hello.");
    server.stop().await;
}

#[tokio::test]
async fn a_tool_call_cancelled_during_apply_edit_still_gets_its_final_update() {
    let (ws, fake) = workspace_and_fake().await;
    let edit =
        json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("call_a1", "edit_file", &[edit.as_str()])],
        None,
    ));
    let responder: agentls_dev::lsp_client::Responder =
        std::sync::Arc::new(|method, _| match method {
            "workspace/applyEdit" => agentls_dev::lsp_client::Answer::Silence,
            _ => agentls_dev::lsp_client::Answer::Result(Value::Null),
        });
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({"approval": "full-auto"})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let turn = prompt(&server, &session, "Make it 42").await;
    let mut updates = Vec::new();
    let apply = until_request(&server, "workspace/applyEdit", &mut updates).await;
    session_request(&server, "agent/session/cancel", &session).await;
    // The cancel stops the wait (an editor that never answers must not hold the turn).
    let (rest, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&rest), "cancelled");
    // The row the editor shows ends, before turnEnd, as the log says.
    let finals: Vec<&Value> = rest
        .iter()
        .filter(|u| u["kind"] == "toolCallUpdate" && u["toolCallId"] == "call_a1")
        .collect();
    assert_eq!(finals.len(), 1, "{rest:?}");
    assert_eq!(finals[0]["status"], "failed", "{rest:?}");
    assert!(
        finals[0]["output"]
            .as_str()
            .unwrap()
            .contains("cancelled while the editor was applying it"),
        "{rest:?}"
    );
    assert_eq!(kinds(&rest).last().unwrap(), "turnEnd");
    // The editor answers after all: the late answer is ignored, the server stays up.
    answer_late(&server, &apply, json!({"applied": true})).await;
    let loaded = session_request(&server, "agent/session/load", &session).await;
    let call = loaded["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "toolCall")
        .unwrap()
        .clone();
    assert_eq!(call["status"], "failed");
    server.stop().await;
}

#[tokio::test]
async fn a_200_whose_body_is_an_error_ends_the_turn_with_the_providers_message() {
    let (ws, fake) = workspace_and_fake().await;
    // An empty stream makes the client ask again without streaming; that answer is a 200
    // holding an error, then a 200 holding nothing.
    fake.push(Reply::Sse { steps: vec![] });
    fake.push(Reply::Http {
        status: 200,
        headers: vec![],
        body: "{\"error\":{\"message\":\"model is still loading\"}}".into(),
    });
    fake.push(Reply::Sse { steps: vec![] });
    fake.push(Reply::Http {
        status: 200,
        headers: vec![],
        body: "{}".into(),
    });
    let (server, session) = session_server(&ws, &fake, json!({})).await;

    let (updates, _) = run_turn(&server, &session, "a").await;
    assert_eq!(stop_reason(&updates), "error", "{updates:?}");
    let error = updates
        .iter()
        .find(|u| u["kind"] == "error")
        .expect("an error");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("model is still loading"),
        "{error}"
    );

    let (updates, _) = run_turn(&server, &session, "b").await;
    assert_eq!(stop_reason(&updates), "error", "{updates:?}");
    let error = updates
        .iter()
        .find(|u| u["kind"] == "error")
        .expect("an error");
    assert!(
        error["message"].as_str().unwrap().contains("no message"),
        "{error}"
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[1].body["stream"], false);
    server.stop().await;
}

#[tokio::test]
async fn a_session_log_that_lost_its_first_line_uses_the_configured_model() {
    let (ws, fake) = workspace_and_fake().await;
    let (options, session, log) = one_turn_logged(&ws, &fake).await;
    let text = std::fs::read_to_string(&log).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    assert!(first.contains("test-model"), "{first}");
    std::fs::write(&log, rest).unwrap();

    let server_b = server(&ws, options, None).await;
    let (updates, _) = run_turn(&server_b, &session, "two").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    assert_eq!(answer_text(&updates), "Second answer.");
    assert_eq!(fake.requests().last().unwrap().body["model"], "test-model");
    server_b.stop().await;
}

/// An OpenAI-compatible server that numbers calls per response (`call_0` in every turn):
/// the second turn's call keeps its real outcome (the user's rejection), not "aborted",
/// and every call the provider is sent back has an id of its own.
#[tokio::test]
async fn a_call_id_the_provider_repeats_across_turns_keeps_its_real_outcome() {
    let (ws, fake) = workspace_and_fake().await;
    let edit =
        json!({"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}).to_string();
    let read = json!({"path": "src/lib.rs"}).to_string();
    fake.push_call_then_text("call_0", "read_file", &read, "Read.");
    fake.push_call_then_text("call_0", "edit_file", &edit, "Understood.");
    let (responder, _seen) = responder(&["rejectOnce"]);
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    for text in ["Read it", "Make it 42"] {
        let (updates, _) = run_turn(&server, &session, text).await;
        assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    }
    let requests = fake.requests();
    assert_invariants(&requests);
    let last = requests.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let tool_messages: Vec<&Value> = last.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_messages.len(), 2, "{last:?}");
    assert_ne!(
        tool_messages[0]["tool_call_id"], tool_messages[1]["tool_call_id"],
        "two calls, two ids"
    );
    let rejected = tool_messages[1]["content"].as_str().unwrap();
    assert!(
        rejected.contains("rejected") && !rejected.contains("aborted"),
        "the user's answer reaches the model: {rejected}"
    );
    server.stop().await;
}
