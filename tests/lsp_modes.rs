//! Per-session approval policies (`agent/session/setMode`) and the `locations` / edit
//! `diff` of tool calls, through the real server and the fake provider.

mod common;

use agentls_dev::fake_provider::FakeProvider;
use common::agent::*;
use serde_json::json;

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
