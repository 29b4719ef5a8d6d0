//! The memories through the real server and the fake provider: a session's durable facts
//! offered for keeping (`agent/memory {sessionId}`) and kept only when the user picks one
//! (`agent/memory/keep`), and an entry over `memory.maxTokens` recalled just in time, with
//! the message that names it.

mod common;

use agentls_dev::fake_provider::FakeProvider;
use common::agent::*;
use serde_json::{json, Value};

async fn memory(server: &common::Server, params: Value) -> Result<Value, String> {
    server
        .client
        .request("agent/memory", params)
        .await
        .map_err(|e| format!("{e:?}"))
}

async fn keep(server: &common::Server, params: Value) -> Result<Value, String> {
    server
        .client
        .request("agent/memory/keep", params)
        .await
        .map_err(|e| format!("{e:?}"))
}

fn offers(state: &Value) -> Vec<(String, String)> {
    state["offers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["source"].as_str().unwrap().to_string(),
                o["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn workspace_entries(state: &Value) -> Vec<(String, String)> {
    state["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scope"] == "workspace")
        .unwrap()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["author"].as_str().unwrap().to_string(),
                e["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_sessions_rules_and_checks_are_offered_and_kept_only_when_picked() {
    let (ws, fake) = workspace_and_fake().await;
    let (server, session) = session_server(&ws, &fake, json!({"approval": "full-auto"})).await;
    let check = json!({"command": "test -f src/lib.rs"}).to_string();
    let failing = json!({"command": "test -f src/missing.rs"}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[
            ("c1", "shell", &[check.as_str()]),
            ("c2", "shell", &[failing.as_str()]),
        ],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Checked."], None));
    run_turn(
        &server,
        &session,
        "Never push to main. Check that the library is there.",
    )
    .await;

    let state = memory(&server, json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(
        offers(&state),
        [
            ("constraint".to_string(), "Never push to main.".to_string()),
            (
                "command".to_string(),
                "`test -f src/lib.rs` works (it exited 0)".to_string()
            ),
        ],
        "the user's rule and the check that worked, not the one that failed"
    );
    assert!(
        workspace_entries(&state).is_empty(),
        "nothing kept by itself"
    );
    assert!(
        offers(&memory(&server, json!({})).await.unwrap()).is_empty(),
        "no session, no offers"
    );

    let kept = keep(&server, json!({"fact": "Never push to main."}))
        .await
        .unwrap();
    assert_eq!(kept["kept"], true);
    let path = kept["path"].as_str().unwrap();
    assert!(
        path.starts_with(ws.state.path().to_str().unwrap()),
        "under agentls's state, not in the repository: {path}"
    );
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("- [user "), "kept as the user's: {text}");
    let again = keep(&server, json!({"fact": "Never push to main."}))
        .await
        .unwrap();
    assert_eq!(again["kept"], false, "kept once");

    let state = memory(&server, json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(
        workspace_entries(&state),
        [("user".to_string(), "Never push to main.".to_string())]
    );
    assert_eq!(offers(&state).len(), 1, "a kept fact is not offered again");

    // Bad input: a clear error, nothing written.
    let unknown = memory(&server, json!({"sessionId": "nope"}))
        .await
        .unwrap_err();
    assert!(unknown.contains("nope"), "{unknown}");
    let scope = keep(&server, json!({"fact": "x y z", "scope": "team"}))
        .await
        .unwrap_err();
    assert!(scope.contains("unknown memory scope"), "{scope}");
    let empty = keep(&server, json!({"fact": "  "})).await.unwrap_err();
    assert!(empty.contains("the fact is empty"), "{empty}");
    let extra = keep(&server, json!({"fact": "x", "author": "model"}))
        .await
        .unwrap_err();
    assert!(extra.contains("author"), "{extra}");
    assert_eq!(std::fs::read_to_string(path).unwrap(), text);
}

/// The reminders of a recorded request's last message (where a due reminder goes).
fn recalled_in(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .filter(|text| text.contains("<agentls_reminder source=\"memory\">"))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn an_entry_over_the_budget_is_recalled_when_a_message_names_it() {
    let (ws, fake) = workspace_and_fake().await;
    let (server, session) = session_server(&ws, &fake, json!({"memory": {"maxTokens": 190}})).await;
    let facts = [
        "The integration tests need `docker compose up db` first.",
        "Release notes go in CHANGELOG.md under Unreleased.",
        "Answers are short and in English.",
        "Prefer small functions and early returns.",
    ];
    for fact in facts {
        keep(&server, json!({"fact": fact})).await.unwrap();
    }

    let turn = |text: &'static str| {
        let fake = &fake;
        let server = &server;
        let session = &session;
        async move {
            fake.push(FakeProvider::openai_text(&["OK."], None));
            run_turn(server, session, text).await;
            fake.requests().last().unwrap().body.clone()
        }
    };
    let body = turn("Why does the integration test fail?").await;
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Prefer small functions") && !system.contains("docker compose"),
        "the block keeps the newest within its budget: {system}"
    );
    let recalled = recalled_in(&body);
    assert_eq!(recalled.len(), 1, "{body}");
    assert!(
        recalled[0].contains("The integration tests need `docker compose up db` first.")
            && recalled[0].contains("workspace memory")
            && recalled[0].contains("written by the user"),
        "{}",
        recalled[0]
    );

    // Once a session: the same words do not bring it twice; words it lacks bring nothing.
    let body = turn("The integration test still fails.").await;
    assert_eq!(
        recalled_in(&body).len(),
        1,
        "the first one, kept in the history"
    );
    let body = turn("Hello there").await;
    assert_eq!(recalled_in(&body).len(), 1);

    // Another session recalls it again, with its own message.
    let other = new_session(&server).await;
    fake.push(FakeProvider::openai_text(&["OK."], None));
    run_turn(&server, &other, "Where do release notes go?").await;
    let body = fake.requests().last().unwrap().body.clone();
    let recalled = recalled_in(&body);
    assert_eq!(recalled.len(), 1, "{body}");
    assert!(recalled[0].contains("CHANGELOG.md"), "{}", recalled[0]);
}
