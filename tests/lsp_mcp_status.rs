//! `agent/mcp/didChangeStatus` through the real binary: the MCP servers' status pushed to the
//! editor as it changes, against a server that cannot start and the REAL reference server
//! `@modelcontextprotocol/server-everything`, installed outside the repository by
//! `scripts/mcp-servers` (found by `tests/common/mcp.rs`).
//! Every wait reads the next notification; none has a time bound.

mod common;

use common::agent::*;
use common::mcp::{growing_server, installed};
use common::Server;
use serde_json::{json, Value};

const METHOD: &str = "agent/mcp/didChangeStatus";

fn everything() -> &'static str {
    &installed().everything
}

/// The next `agent/mcp/didChangeStatus`'s payload (other messages are skipped).
async fn next_status(server: &Server) -> Value {
    server
        .client
        .wait_for(METHOD)
        .await
        .expect("the server is still running")
        .params
}

/// `name`'s entry in a status payload.
fn entry<'a>(status: &'a Value, name: &str) -> Option<&'a Value> {
    status["servers"]
        .as_array()
        .unwrap_or_else(|| panic!("a server list in {status}"))
        .iter()
        .find(|s| s["name"] == name)
}

fn state<'a>(status: &'a Value, name: &str) -> &'a str {
    entry(status, name)
        .and_then(|e| e["state"].as_str())
        .unwrap_or("absent")
}

/// Notifications until `done` holds for one; all of them, in order.
async fn statuses_until(server: &Server, done: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let status = next_status(server).await;
        let end = done(&status);
        seen.push(status);
        if end {
            return seen;
        }
    }
}

/// The states `name` went through, repeats folded.
fn states_of(seen: &[Value], name: &str) -> Vec<String> {
    let mut states: Vec<String> = Vec::new();
    for status in seen {
        let now = state(status, name).to_string();
        if states.last() != Some(&now) {
            states.push(now);
        }
    }
    states
}

fn assert_no_repeats(seen: &[Value]) {
    for pair in seen.windows(2) {
        assert_ne!(pair[0], pair[1], "the same status sent twice in a row");
    }
}

#[tokio::test]
async fn a_missing_server_is_pushed_as_failed_and_the_everything_server_as_starting_then_ready() {
    let (ws, fake) = workspace_and_fake().await;
    let options = provider_options(
        &fake,
        &ws,
        json!({"mcpServers": {
            "everything": {"command": everything(), "args": ["stdio"]},
            "missing": {"command": "/nonexistent/mcp-server"},
            "off": {"command": "x", "enabled": false}
        }}),
    );
    let server = server(&ws, options, None).await;
    // The servers start with the first session; the first notification lists them all.
    new_session(&server).await;
    let seen = statuses_until(&server, |s| {
        state(s, "everything") == "ready" && state(s, "missing") == "failed"
    })
    .await;
    assert_eq!(state(&seen[0], "everything"), "starting", "{:?}", seen[0]);
    assert_eq!(state(&seen[0], "off"), "disabled", "{:?}", seen[0]);
    assert_eq!(
        states_of(&seen, "everything"),
        ["starting", "ready"],
        "{seen:?}"
    );
    assert_eq!(
        states_of(&seen, "missing").last().map(String::as_str),
        Some("failed"),
        "{seen:?}"
    );
    assert_eq!(states_of(&seen, "off"), ["disabled"], "{seen:?}");
    assert_no_repeats(&seen);

    let last = seen.last().unwrap();
    let ready = entry(last, "everything").unwrap();
    assert!(ready["tools"].as_u64().unwrap() >= 10, "{ready}");
    assert_eq!(ready["source"], "settings", "{ready}");
    let failed = entry(last, "missing").unwrap();
    assert_eq!(failed["tools"], 0, "{failed}");
    let message = failed["message"].as_str().unwrap_or_default();
    assert!(message.contains("cannot start"), "{failed}");
    // The payload is exactly `agent/mcp/status`'s answer.
    let asked = server
        .client
        .request("agent/mcp/status", json!({}))
        .await
        .unwrap();
    assert_eq!(&asked, last);
    server.stop().await;
}

#[tokio::test]
async fn an_unchanged_status_is_not_sent_again_and_a_configuration_change_is() {
    let (ws, fake) = workspace_and_fake().await;
    let servers = |name: &str| {
        provider_options(
            &fake,
            &ws,
            json!({"mcpServers": {name: {"command": format!("/nonexistent/{name}")}}}),
        )
    };
    let server = server(&ws, servers("first"), None).await;
    // Nothing is configured before a session: no notification precedes the first one.
    new_session(&server).await;
    let seen = statuses_until(&server, |s| state(s, "first") == "failed").await;
    assert_no_repeats(&seen);
    // A second session changes nothing: no notification. The next one is the change below.
    new_session(&server).await;
    server
        .client
        .notify(
            "workspace/didChangeConfiguration",
            json!({"settings": servers("second")}),
        )
        .await
        .unwrap();
    new_session(&server).await;
    let after = statuses_until(&server, |s| state(s, "second") == "failed").await;
    assert_eq!(state(&after[0], "first"), "absent", "{after:?}");
    assert_ne!(state(&after[0], "second"), "absent", "{after:?}");
    assert_no_repeats(&after);
    assert!(
        entry(after.last().unwrap(), "second").unwrap()["message"]
            .as_str()
            .unwrap()
            .contains("cannot start"),
        "{after:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_tool_added_at_run_time_is_pushed_with_the_new_tool_count() {
    let (ws, fake) = workspace_and_fake().await;
    let grow = json!({"name": "sprout"}).to_string();
    fake.push_call_then_text("call_g", "mcp__growing__grow", &grow, "Grown.");
    let options = provider_options(
        &fake,
        &ws,
        json!({"approval": "full-auto", "mcpServers": {"growing": growing_server()}}),
    );
    let server = server(&ws, options, None).await;
    let session = new_session(&server).await;
    let seen = statuses_until(&server, |s| state(s, "growing") == "ready").await;
    assert_eq!(entry(seen.last().unwrap(), "growing").unwrap()["tools"], 1);

    let turn = prompt(&server, &session, "Grow a sprout.").await;
    let (updates, others) = updates_until_end(&server, &turn).await;
    assert_eq!(stop_reason(&updates), "endTurn", "{updates:?}");
    // The re-listed set is pushed: read during the turn, or after it.
    let mut pushed: Vec<Value> = others
        .into_iter()
        .filter(|m| m.method == METHOD)
        .map(|m| m.params)
        .collect();
    let grown = |s: &Value| entry(s, "growing").is_some_and(|e| e["tools"] == 2);
    if !pushed.iter().any(grown) {
        pushed.extend(statuses_until(&server, grown).await);
    }
    let after = pushed.iter().find(|s| grown(s)).unwrap();
    assert_eq!(state(after, "growing"), "ready", "{after}");
    assert_no_repeats(&pushed);
    server.stop().await;
}
