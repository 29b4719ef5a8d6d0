//! The repository map (`context.repoMap.maxTokens`): with the setting, the system message
//! of a real turn (fake provider over real HTTP) holds the workspace's most used
//! definitions, from files never opened; a small edit leaves the next turn's system
//! message byte-identical (the prompt cache keeps hitting); by default there is no map.

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

const RETRY: &str = "/// How often to try again.\npub struct RetryPolicy {\n    pub attempts: u32,\n}\n\n/// Milliseconds before attempt `n`.\npub fn backoff_delay(n: u32) -> u64 {\n    100 << n\n}\n";

/// A workspace where `src/net/retry.rs` is used by three other files.
fn project(root: &Path) {
    write(root, "src/net/retry.rs", RETRY);
    write(
        root,
        "src/main.rs",
        "mod net;\nuse net::retry::RetryPolicy;\n\nfn run(policy: RetryPolicy) -> u32 {\n    backoff_delay(policy.attempts) as u32\n}\n",
    );
    write(
        root,
        "src/jobs.rs",
        "pub fn schedule(policy: &RetryPolicy) -> u64 {\n    backoff_delay(policy.attempts)\n}\n",
    );
    write(
        root,
        "src/client.rs",
        "pub fn connect(policy: RetryPolicy) {\n    schedule(&policy);\n    backoff_delay(1);\n}\n",
    );
}

/// One turn answered "Done."; the system message the provider was sent.
async fn turn_system(server: &common::Server, fake: &FakeProvider, session: &str) -> String {
    fake.push(FakeProvider::openai_text(&["Done."], None));
    let turn = server
        .client
        .request(
            "agent/session/prompt",
            json!({"sessionId": session, "text": "Where is the retry logic?"}),
        )
        .await
        .expect("prompt")["turnId"]
        .as_str()
        .unwrap()
        .to_string();
    let (updates, _) = updates_until_end(server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn");
    let requests = fake.requests();
    let body = &requests.last().unwrap().body;
    let system = &body["messages"][0];
    assert_eq!(system["role"], "system", "{body}");
    system["content"].as_str().unwrap().to_string()
}

fn section(report: &Value, name: &str) -> (u64, String) {
    let section = report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no section {name}: {report}"));
    (
        section["tokens"].as_u64().unwrap(),
        section["trust"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn the_map_brings_unopened_definitions_and_stays_byte_identical_after_a_small_edit() {
    let (ws, fake) = workspace_and_fake().await;
    project(&ws.root);
    let (server, session) = session_server(
        &ws,
        &fake,
        json!({"context": {"repoMap": {"maxTokens": 1024}}}),
    )
    .await;
    symbols_ready(&server).await;

    // Nothing open: the definitions come from the index alone.
    let first = turn_system(&server, &fake, &session).await;
    let map_at = first
        .find("## Repository map")
        .expect("a map in the system message");
    let map = &first[map_at..];
    for needle in [
        "\n\nsrc/net/retry.rs\n",
        "\n  pub struct RetryPolicy\n",
        "\n  pub fn backoff_delay(n: u32) -> u64",
    ] {
        assert!(map.contains(needle), "{needle:?} not in {map}");
    }

    // `agent/session/context` reports the map as its own section, counted.
    let report = server
        .client
        .request("agent/session/context", json!({"sessionId": session}))
        .await
        .expect("context");
    let (tokens, trust) = section(&report, "repoMap");
    assert!(tokens > 0 && tokens <= 1024, "{tokens}");
    assert_eq!(trust, "untrusted");

    // A small edit: a signature the map shows changes in an open buffer. The index moves,
    // the map's entries do not: the next turn's system message is the same bytes.
    let retry = uri(&ws.root.join("src/net/retry.rs"));
    let edited = RETRY.replace("backoff_delay(n: u32)", "backoff_delay(n: u32, cap: u64)");
    server.open(&retry, "rust", 1, &edited).await;
    let second = turn_system(&server, &fake, &session).await;
    assert_eq!(second, first, "the prefix changed after a small edit");
    server.stop().await;
}

#[tokio::test]
async fn by_default_there_is_no_map() {
    let (ws, fake) = workspace_and_fake().await;
    project(&ws.root);
    let (server, session) = session_server(&ws, &fake, json!({})).await;
    symbols_ready(&server).await;
    let system = turn_system(&server, &fake, &session).await;
    assert!(!system.contains("Repository map"), "{system}");
    assert!(!system.contains("backoff_delay"), "{system}");
    let report = server
        .client
        .request("agent/session/context", json!({"sessionId": session}))
        .await
        .expect("context");
    assert_eq!(section(&report, "repoMap").0, 0);
    server.stop().await;
}
