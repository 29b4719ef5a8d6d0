//! Definitions from anywhere in the workspace reach the model: with only the active file
//! open in the editor, the editor block of a real turn (fake provider over real HTTP) holds
//! the definitions of what the code at the cursor uses, read from the workspace's symbol
//! index, and `agent/session/context` reports what the part took.

mod common;

use common::agent::*;
use common::uri;
use serde_json::{json, Value};
use std::fs;
use std::path::Path;

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
}

const MAIN: &str = "mod net;\nuse net::retry::RetryPolicy;\n\nfn run(policy: RetryPolicy) -> u32 {\n    let delay = backoff_delay(policy.attempts);\n    delay as u32\n}\n";

fn user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_definition_from_an_unopened_file_reaches_the_providers_request() {
    let (ws, fake) = workspace_and_fake().await;
    write(
        &ws.root,
        "src/net/retry.rs",
        "/// How often to try again.\npub struct RetryPolicy {\n    pub attempts: u32,\n}\n\n/// Milliseconds before attempt `n`.\npub fn backoff_delay(n: u32) -> u64 {\n    100 << n\n}\n",
    );
    write(&ws.root, "src/main.rs", MAIN);
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    symbols_ready(&server).await;
    // Only the active file is open.
    let main = uri(&ws.root.join("src/main.rs"));
    server.open(&main, "rust", 1, MAIN).await;
    let editor = json!({"uri": main, "position": {"line": 4, "character": 16}});

    let report = server
        .client
        .request(
            "agent/session/context",
            json!({"sessionId": session, "editor": editor}),
        )
        .await
        .expect("context");
    let parts = report["editorParts"].as_array().unwrap();
    let definitions = parts
        .iter()
        .find(|p| p["name"] == "definitions")
        .unwrap_or_else(|| panic!("no definitions part: {parts:?}"));
    assert!(definitions["tokens"].as_u64().unwrap() > 0, "{definitions}");
    assert_eq!(definitions["omitted"], false);

    fake.push(FakeProvider::openai_text(&["Done."], None));
    let turn = server
        .client
        .request(
            "agent/session/prompt",
            json!({"sessionId": session, "text": "Why is the delay so long?", "editor": editor}),
        )
        .await
        .expect("prompt")["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    let (updates, _) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn");
    let requests = fake.requests();
    let sent = user_text(&requests.last().unwrap().body);
    for needle in [
        r#"<definition name=\"backoff_delay\" kind=\"function\" path=\"src/net/retry.rs\" lines=\"7-9\">"#,
        "/// Milliseconds before attempt `n`.",
        "L7: pub fn backoff_delay(n: u32) -> u64",
        r#"<definition name=\"RetryPolicy\" kind=\"struct\" path=\"src/net/retry.rs\" lines=\"2-4\">"#,
        "L2: pub struct RetryPolicy",
    ] {
        assert!(sent.contains(needle), "{needle} not in {sent}");
    }
    server.stop().await;
}
