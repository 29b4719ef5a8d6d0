//! Images through the real server and the fake provider over real HTTP: a prompt's image
//! reaches OpenAI as an `image_url` part and Anthropic as an `image` block; a text-only
//! model refuses it before anything is recorded or sent; `read_file` of a PNG gives the
//! model the image; `@shot.png` is the prompt's image. And `workspace/applyEdit` no longer
//! holds a turn: an editor that never answers times out, a cancel stops the wait, and both
//! withdraw the request with `$/cancelRequest`.

mod common;

use agentls_core::image::{base64_encode, test_png};
use agentls_dev::lsp_client::{Answer, Responder};
use common::agent::*;
use serde_json::{json, Value};
use std::sync::Arc;

fn png_base64(width: u32, height: u32) -> String {
    base64_encode(&test_png(width, height))
}

/// The content parts of every user message of a recorded OpenAI body, flattened.
fn user_parts(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn an_image_prompt_reaches_openai_as_an_image_url_part() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_text(&["A red square."], None));
    let extra = json!({"provider": {"model": "gpt-4o"}});
    let (server, session) = session_server(&ws, &fake, extra).await;
    let answer = server
        .client
        .request(
            "agent/session/prompt",
            json!({"sessionId": session, "text": "What is this?", "images": [{"mimeType": "image/png", "data": png_base64(64, 32)}]}),
        )
        .await
        .expect("prompt with an image");
    let turn = answer["turnId"].as_str().unwrap();
    let (updates, _) = updates_until_end(&server, turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let requests = fake.requests();
    let parts = user_parts(&requests[0].body);
    let image = parts
        .iter()
        .find(|p| p["type"] == "image_url")
        .unwrap_or_else(|| panic!("no image_url part in {parts:?}"));
    let url = image["image_url"]["url"].as_str().unwrap();
    assert_eq!(url, format!("data:image/png;base64,{}", png_base64(64, 32)));
    assert_eq!(image["image_url"]["detail"], "high");
    // The text of the message is still there, and the image's label.
    assert!(parts
        .iter()
        .any(|p| p["type"] == "text" && p["text"].as_str().unwrap().contains("What is this?")));
    assert!(parts.iter().any(|p| p["text"] == "[image: image 1, 64x32]"));
    // The transcript shows the image's label under the message, from the log.
    let loaded = session_request(&server, "agent/session/load", &session).await;
    let user = loaded["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "user")
        .unwrap();
    assert!(
        user["text"]
            .as_str()
            .unwrap()
            .ends_with("\n[image: image 1, 64x32]"),
        "{user}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_image_prompt_reaches_anthropic_as_an_image_block() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::anthropic_text(&["A screenshot."], None));
    let options = json!({
        "provider": {"kind": "anthropic", "baseUrl": fake.base_url(), "model": "claude-test", "maxRetries": 0},
        "stateDir": ws.state.path(),
    });
    let server = server(&ws, options, None).await;
    let session = new_session(&server).await;
    let answer = server
        .client
        .request(
            "agent/session/prompt",
            json!({"sessionId": session, "text": "Look", "images": [{"data": format!("data:image/png;base64,{}", png_base64(300, 200))}]}),
        )
        .await
        .expect("prompt with an image");
    let (updates, _) = updates_until_end(&server, answer["turnId"].as_str().unwrap()).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let body = &fake.requests()[0].body;
    let blocks = body["messages"][0]["content"].as_array().unwrap();
    let image = blocks
        .iter()
        .find(|b| b["type"] == "image")
        .unwrap_or_else(|| panic!("no image block in {blocks:?}"));
    assert_eq!(
        image["source"],
        json!({"type": "base64", "media_type": "image/png", "data": png_base64(300, 200)})
    );
    assert_eq!(blocks[0]["type"], "text", "the text comes first");
    server.stop().await;
}

#[tokio::test]
async fn a_text_only_model_refuses_an_image_and_nothing_is_sent() {
    let (ws, fake) = workspace_and_fake().await;
    // `test-model` is not in the known-models table: text only.
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let err = server
        .client
        .request(
            "agent/session/prompt",
            json!({"sessionId": session, "text": "What is this?", "images": [{"data": png_base64(8, 8)}]}),
        )
        .await
        .expect_err("a text-only model refuses images");
    assert_eq!(err.code, -32602, "{err:?}");
    assert!(
        err.message
            .contains("the model test-model does not take images"),
        "{err:?}"
    );
    // Not an image at all: refused with what it is, for a model that takes images too.
    let (server2, session2) =
        session_server(&ws, &fake, json!({"provider": {"images": true}})).await;
    let err = server2
        .client
        .request(
            "agent/session/prompt",
            json!({"sessionId": session2, "text": "x", "images": [{"data": base64_encode(b"plain text")}]}),
        )
        .await
        .expect_err("not an image");
    assert!(
        err.message.contains("not a PNG, JPEG, GIF or WebP"),
        "{err:?}"
    );
    assert!(fake.requests().is_empty(), "nothing reached the provider");
    server.stop().await;
    server2.stop().await;
}

#[tokio::test]
async fn read_file_of_a_png_gives_the_image_to_a_model_that_sees_images() {
    let (ws, fake) = workspace_and_fake().await;
    std::fs::write(ws.root.join("shot.png"), test_png(100, 50)).unwrap();
    fake.push_call_then_text("call_1", "read_file", r#"{"path":"shot.png"}"#, "I see it.");
    let extra = json!({"provider": {"model": "gpt-4o"}});
    let (server, session) = session_server(&ws, &fake, extra).await;
    let (updates, _) = run_turn(&server, &session, "Read shot.png").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let done = tool_updates(&updates, "completed");
    assert!(
        done[0]["output"]
            .as_str()
            .unwrap()
            .contains("shot.png is an image (image/png, 100x50 pixels"),
        "{}",
        done[0]
    );
    let requests = fake.requests();
    assert_invariants(&requests);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user", "{messages:?}");
    let parts = last["content"].as_array().unwrap();
    assert_eq!(
        parts[0]["text"],
        "[image: shot.png, 100x50] (from tool call call_1)"
    );
    assert_eq!(
        parts[1]["image_url"]["url"],
        format!("data:image/png;base64,{}", png_base64(100, 50))
    );
    server.stop().await;
}

#[tokio::test]
async fn read_file_of_a_png_for_a_text_only_model_is_refused_as_binary() {
    let (ws, fake) = workspace_and_fake().await;
    std::fs::write(ws.root.join("shot.png"), test_png(100, 50)).unwrap();
    fake.push_call_then_text("call_1", "read_file", r#"{"path":"shot.png"}"#, "Binary.");
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let (updates, _) = run_turn(&server, &session, "Read shot.png").await;
    let failed = tool_updates(&updates, "failed");
    assert!(
        failed[0]["output"].as_str().unwrap().contains("binary"),
        "{}",
        failed[0]
    );
    assert!(!fake.requests()[1].body.to_string().contains("image_url"));
    server.stop().await;
}

#[tokio::test]
async fn an_at_mention_of_an_image_file_is_the_prompts_image() {
    let (ws, fake) = workspace_and_fake().await;
    std::fs::write(ws.root.join("bug.png"), test_png(40, 30)).unwrap();
    fake.push(FakeProvider::openai_text(&["Seen."], None));
    let extra = json!({"provider": {"model": "gpt-4o-mini"}});
    let (server, session) = session_server(&ws, &fake, extra).await;
    let (updates, _) = run_turn(&server, &session, "What is wrong in @bug.png?").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let parts = user_parts(&fake.requests()[0].body);
    assert!(
        parts.iter().any(|p| p["text"] == "[image: bug.png, 40x30]"),
        "{parts:?}"
    );
    assert!(parts.iter().any(|p| p["type"] == "image_url"), "{parts:?}");
    assert!(
        !updates.iter().any(|u| u["kind"] == "warning"),
        "an image mention is not a text attachment: {updates:?}"
    );
    server.stop().await;
}

/// Allows every permission; never answers applyEdit, and says when one arrived.
fn silent_editor() -> (Responder, Arc<tokio::sync::Notify>) {
    let asked = Arc::new(tokio::sync::Notify::new());
    let notify = asked.clone();
    let responder: Responder = Arc::new(move |method: &str, params: &Value| match method {
        "agent/session/requestPermission" => {
            let option = params["options"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["kind"] == "allowOnce")
                .unwrap();
            Answer::Result(json!({"outcome": {"optionId": option["optionId"]}}))
        }
        "workspace/applyEdit" => {
            notify.notify_one();
            Answer::Silence
        }
        _ => Answer::Result(Value::Null),
    });
    (responder, asked)
}

const EDIT: &str = r#"{"path": "src/lib.rs", "old_text": "    41\n", "new_text": "    42\n"}"#;

#[tokio::test]
async fn an_editor_that_never_answers_apply_edit_does_not_hold_the_turn() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push_call_then_text("call_e", "edit_file", EDIT, "It did not apply.");
    let (responder, _) = silent_editor();
    let options = provider_options(&fake, &ws, json!({"lsp": {"applyEditTimeoutMs": 200}}));
    let server = server(&ws, options, Some(responder)).await;
    let session = new_session(&server).await;
    let (updates, others) = run_turn(&server, &session, "Make it 42").await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let failed = tool_updates(&updates, "failed");
    assert!(
        failed[0]["output"]
            .as_str()
            .unwrap()
            .contains("did not answer workspace/applyEdit within 200 ms"),
        "{}",
        failed[0]
    );
    assert!(
        others.iter().any(|m| m.method == "$/cancelRequest"),
        "the unanswered request is withdrawn: {:?}",
        others.iter().map(|m| &m.method).collect::<Vec<_>>()
    );
    server.stop().await;
}

#[tokio::test]
async fn a_cancel_stops_the_wait_for_apply_edit() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push_call_then_text("call_e", "edit_file", EDIT, "never asked");
    let (responder, asked) = silent_editor();
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let turn = prompt(&server, &session, "Make it 42").await;
    asked.notified().await;
    let cancelled = session_request(&server, "agent/session/cancel", &session).await;
    assert_eq!(cancelled["cancelled"], true);
    let (updates, others) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "cancelled", "{updates:?}");
    assert!(
        others.iter().any(|m| m.method == "$/cancelRequest"),
        "the applyEdit request is withdrawn: {:?}",
        others.iter().map(|m| &m.method).collect::<Vec<_>>()
    );
    // Only the first model call was made: the turn did not go on after the cancel.
    assert_eq!(fake.requests().len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn a_permission_request_the_server_stops_waiting_for_is_withdrawn() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push_call_then_text("call_s", "shell", r#"{"command":"echo hi"}"#, "never asked");
    let asked = Arc::new(tokio::sync::Notify::new());
    let notify = asked.clone();
    let responder: Responder = Arc::new(move |method: &str, _: &Value| match method {
        "agent/session/requestPermission" => {
            notify.notify_one();
            Answer::Silence
        }
        _ => Answer::Result(Value::Null),
    });
    let server = server(
        &ws,
        provider_options(&fake, &ws, json!({})),
        Some(responder),
    )
    .await;
    let session = new_session(&server).await;
    let turn = prompt(&server, &session, "Run it").await;
    asked.notified().await;
    session_request(&server, "agent/session/cancel", &session).await;
    let (updates, others) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "cancelled", "{updates:?}");
    let request = others
        .iter()
        .find(|m| m.method == "agent/session/requestPermission")
        .expect("the permission request");
    let withdrawn = match others.iter().find(|m| m.method == "$/cancelRequest") {
        Some(message) => message.clone(),
        None => server
            .client
            .wait_for("$/cancelRequest")
            .await
            .expect("$/cancelRequest"),
    };
    assert_eq!(Some(&withdrawn.params["id"]), request.id.as_ref());
    server.stop().await;
}

#[tokio::test]
async fn a_compaction_summary_reads_the_images_label_not_its_bytes() {
    let (ws, fake) = workspace_and_fake().await;
    let big: String = (0..400)
        .map(|i| format!("let value_{i} = compute(&inputs[{i}], \"parser stage {i}\");\n"))
        .collect();
    std::fs::write(ws.root.join("src/big.rs"), big).unwrap();
    fake.push_call_then_text("r1", "read_file", r#"{"path":"src/big.rs"}"#, "Read it.");
    for _ in 0..2 {
        fake.push_for(
            "CONTEXT CHECKPOINT COMPACTION",
            FakeProvider::openai_text(&["The user showed a screenshot; big.rs was read."], None),
        );
    }
    let extra = json!({"approval": "full-auto", "provider": {"model": "gpt-4o", "contextWindow": 12000, "maxRetries": 0}, "compaction": {"prepareAt": 0.99}});
    let (server, session) = session_server(&ws, &fake, extra).await;
    let answer = server
        .client
        .request(
            "agent/session/prompt",
            json!({"sessionId": session, "text": "Read src/big.rs and look at this", "images": [{"data": png_base64(64, 32)}]}),
        )
        .await
        .expect("prompt");
    updates_until_end(&server, answer["turnId"].as_str().unwrap()).await;
    let compacted = server
        .client
        .request("agent/session/compact", json!({"sessionId": session}))
        .await
        .expect("compact");
    // The read put the turn over the threshold (a summary then), and the request compacts
    // again: every summary request read the label, none the bytes.
    assert_eq!(compacted["strategy"], "summary", "{compacted}");
    let summaries: Vec<String> = fake
        .requests()
        .into_iter()
        .map(|r| r.body.to_string())
        .filter(|body| body.contains("CONTEXT CHECKPOINT COMPACTION"))
        .collect();
    assert!(!summaries.is_empty(), "a summary request");
    for body in summaries {
        assert!(body.contains("[image: image 1, 64x32]"), "{body}");
        assert!(
            !body.contains(&png_base64(64, 32)),
            "no image bytes in the summary input"
        );
    }
    server.stop().await;
}
