//! Steering a running turn (`agent/session/steer`), the visible queue and withdrawing from it
//! (`agent/session/unqueue`), through the real server and the fake provider: a steered message
//! reaches the next model request of the same turn after the tool result, a queued prompt
//! waits for its own turn, a withdrawn message is never sent, and the log puts the steered
//! message back in place.

mod common;

use agentls_dev::fake_provider::{FakeProvider, Reply, Step};
use common::agent::*;
use serde_json::{json, Value};

/// The first reply of the turn: a `read_file` call held until the test releases it, so the
/// turn is running while the test steers.
fn held_read_call() -> Reply {
    let mut reply = FakeProvider::openai_tool_calls(
        &[("call_r", "read_file", &[r#"{"path": "src/lib.rs"}"#])],
        None,
    );
    if let Reply::Sse { steps } = &mut reply {
        steps.insert(0, Step::Hold);
    }
    reply
}

async fn wait_for_requests(fake: &FakeProvider, count: usize) {
    while fake.requests().len() < count {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

fn roles_and_texts(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            (m["role"].as_str().unwrap().to_string(), text)
        })
        .collect()
}

async fn request(server: &common::Server, method: &str, params: Value) -> Value {
    server
        .client
        .request(method, params)
        .await
        .unwrap_or_else(|e| panic!("{method}: {e:?}"))
}

#[tokio::test]
async fn a_steered_message_joins_the_running_turn_after_the_tool_result_and_reloads_in_place() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(held_read_call());
    fake.push(FakeProvider::openai_text(&["Steered answer."], None));
    fake.push(FakeProvider::openai_text(&["Queued answer."], None));
    let hook_log = ws.root.parent().unwrap().join("prompts.log");
    let hooks = json!({"UserPromptSubmit": [{"hooks": [{"type": "command", "command": format!("cat >> {}; echo >> {}", hook_log.display(), hook_log.display())}]}]});
    let (server, session) = session_server(&ws, &fake, json!({"hooks": hooks})).await;
    let turn = prompt(&server, &session, "Read the library.").await;
    wait_for_requests(&fake, 1).await;

    // While the model "thinks": one message steered, one queued, one steered and withdrawn.
    let steered = request(
        &server,
        "agent/session/steer",
        json!({"sessionId": session, "text": "Also mention the number."}),
    )
    .await;
    assert_eq!(steered["steered"], true, "{steered}");
    assert_eq!(steered["turnId"], turn.as_str());
    let queued = prompt(&server, &session, "A later question.").await;
    let withdrawn = request(
        &server,
        "agent/session/steer",
        json!({"sessionId": session, "text": "WITHDRAWN-STEER"}),
    )
    .await;
    let queue = request(
        &server,
        "agent/session/queue",
        json!({"sessionId": session}),
    )
    .await;
    let listed: Vec<(&str, &str)> = queue["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["kind"].as_str().unwrap(), i["text"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [
            ("steering", "Also mention the number."),
            ("steering", "WITHDRAWN-STEER"),
            ("queued", "A later question.")
        ]
    );
    let removed = request(
        &server,
        "agent/session/unqueue",
        json!({"sessionId": session, "id": withdrawn["id"]}),
    )
    .await;
    assert_eq!(removed["removed"], true);
    // Withdrawn once: a second try finds nothing.
    let again = request(
        &server,
        "agent/session/unqueue",
        json!({"sessionId": session, "id": withdrawn["id"]}),
    )
    .await;
    assert_eq!(again["removed"], false);

    fake.release();
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    let shown: Vec<&Value> = updates.iter().filter(|u| u["kind"] == "steered").collect();
    assert_eq!(shown.len(), 1, "{updates:?}");
    assert_eq!(shown[0]["id"], steered["id"]);
    assert_eq!(shown[0]["text"], "Also mention the number.");
    let (queued_updates, _) = updates_until_end(&server, &queued).await;
    assert_eq!(answer_text(&queued_updates), "Queued answer.");

    // The second request of the turn: the tool result, then the steered message, last.
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let second = roles_and_texts(&requests[1].body);
    let n = second.len();
    assert_eq!(second[n - 2].0, "tool", "{second:?}");
    assert_eq!(
        second[n - 1],
        ("user".to_string(), "Also mention the number.".to_string())
    );
    // The queued prompt waited for its own turn: not in the steered request, last in the next.
    assert!(!second.iter().any(|(_, t)| t.contains("A later question.")));
    let third = roles_and_texts(&requests[2].body);
    assert!(third.last().unwrap().1.ends_with("A later question."));
    // The withdrawn message was never sent.
    for request in &requests {
        assert!(!request.body.to_string().contains("WITHDRAWN-STEER"));
    }
    assert_invariants(&requests);
    // UserPromptSubmit ran for the steered text too.
    let prompts = std::fs::read_to_string(&hook_log).unwrap();
    assert!(prompts.contains("Also mention the number."), "{prompts}");
    assert!(!prompts.contains("WITHDRAWN-STEER"), "{prompts}");
    server.stop().await;

    // Another server reads the log: the steered message is back in its place.
    let reloaded = server_with_fake(&ws, &fake).await;
    let loaded = session_request(&reloaded, "agent/session/load", &session).await;
    let items: Vec<(String, String)> = loaded["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["kind"].as_str().unwrap().to_string(),
                i["text"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let kinds: Vec<&str> = items.iter().map(|(k, _)| k.as_str()).collect();
    // Each user message after its UserPromptSubmit hook's row, the steered one included.
    assert_eq!(
        kinds,
        [
            "hook",
            "user",
            "toolCall",
            "hook",
            "user",
            "assistant",
            "hook",
            "user",
            "assistant"
        ]
    );
    assert_eq!(items[4].1, "Also mention the number.");
    reloaded.stop().await;
}

async fn server_with_fake(ws: &Workspace, fake: &FakeProvider) -> common::Server {
    server(ws, provider_options(fake, ws, json!({})), None).await
}

#[tokio::test]
async fn a_steer_with_no_turn_running_is_an_ordinary_prompt() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(FakeProvider::openai_text(&["Plain answer."], None));
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let steered = request(
        &server,
        "agent/session/steer",
        json!({"sessionId": session, "text": "Just a question."}),
    )
    .await;
    assert_eq!(steered["steered"], false, "{steered}");
    assert_eq!(steered["id"], steered["turnId"]);
    let turn = steered["turnId"].as_str().unwrap().to_string();
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(answer_text(&updates), "Plain answer.");
    let requests = fake.requests();
    let last = roles_and_texts(&requests[0].body).pop().unwrap();
    assert!(last.1.contains("<environment_context>"), "{last:?}");
    assert!(last.1.ends_with("Just a question."));
    server.stop().await;
}

#[tokio::test]
async fn a_withdrawn_queued_prompt_never_runs() {
    let (ws, fake) = workspace_and_fake().await;
    fake.push(held_read_call());
    fake.push(FakeProvider::openai_text(&["First done."], None));
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    let turn = prompt(&server, &session, "First.").await;
    wait_for_requests(&fake, 1).await;
    let queued = prompt(&server, &session, "WITHDRAWN-PROMPT").await;
    let removed = request(
        &server,
        "agent/session/unqueue",
        json!({"sessionId": session, "id": queued}),
    )
    .await;
    assert_eq!(removed["removed"], true);
    // Its turn ends at once, without having started.
    let (queued_updates, _) = updates_until_end(&server, &queued).await;
    assert_eq!(stop_reason(&queued_updates), "cancelled");
    fake.release();
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(answer_text(&updates), "First done.");
    // A later turn proves the worker went past the withdrawn one without sending it.
    fake.push(FakeProvider::openai_text(&["Later."], None));
    let (later, _) = run_turn(&server, &session, "Later.").await;
    assert_eq!(answer_text(&later), "Later.");
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert!(!request.body.to_string().contains("WITHDRAWN-PROMPT"));
    }
    server.stop().await;
}
