//! `agentls-dev bench subagent`: how much a subagent keeps out of its parent's history. A real
//! agentls child serves the current directory (run it at the repository's root); the fake
//! provider scripts a parent that hands one question to the built-in `explore` and a child
//! that greps, lists and reads real files of the workspace before it answers. The figures
//! come from the session logs: the tokens of the child's history (what the parent would hold
//! had it searched itself) against the tokens of the one `task` output the parent keeps.

use serde_json::{json, Value};

use crate::fake_provider::FakeProvider;
use crate::lsp_client::start_agentls;
use agentls_core::event::Event;
use agentls_core::history::Item;

pub struct SubagentReport {
    pub child_calls: usize,
    pub child_history_tokens: usize,
    pub child_tool_output_tokens: usize,
    pub parent_task_output_tokens: usize,
    pub parent_history_tokens: usize,
}

/// The child's script: (tool, arguments) in order, over files of this repository.
const SEARCH: &[(&str, &str)] = &[
    ("grep", r#"{"pattern": "pub fn gate", "path": "crates"}"#),
    ("grep", r#"{"pattern": "approval::gate", "path": "server"}"#),
    ("read_file", r#"{"path": "crates/core/src/approval.rs"}"#),
    (
        "read_file",
        r#"{"path": "server/src/agent/turn/tool_calls.rs"}"#,
    ),
    ("list_dir", r#"{"path": "server/src/lsp"}"#),
    ("read_file", r#"{"path": "server/src/lsp/host.rs"}"#),
];

const ANSWER: &str =
    "The approval decision is `approval::gate` in crates/core/src/approval.rs:19-60 \
(policy, tool kind, remembered answers). It is called from `Turn::run_tool` in \
server/src/agent/turn/tool_calls.rs, which asks the user through `Turn::ask` (same file) and \
`Host::request_permission`; over LSP that is `agent/session/requestPermission`, sent by \
`LspHost` in server/src/lsp/host.rs.";

pub async fn run() -> Result<SubagentReport, String> {
    let root = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| e.to_string())?;
    if !root.join("crates/core/src/approval.rs").is_file() {
        return Err(
            "run `agentls-dev bench subagent` at the root of the agentls repository".into(),
        );
    }
    let state_dir =
        std::env::temp_dir().join(format!("agentls-bench-subagent-{}", std::process::id()));
    std::fs::create_dir_all(&state_dir).map_err(|e| e.to_string())?;
    let result = measure(&root, &state_dir).await;
    let _ = std::fs::remove_dir_all(&state_dir);
    result
}

/// The parent's `task` call, the explore child's searches and answer, the parent's answer.
async fn scripted_provider() -> FakeProvider {
    let fake = FakeProvider::start().await;
    let task = json!({"agent": "explore", "prompt": "Where is it decided whether a tool call needs the user's approval, and where is the user asked? Report paths and lines."}).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("call_task", "task", &[task.as_str()])],
        None,
    ));
    // The child's requests carry explore's system prompt.
    let needle = "read-only search subagent of agentls";
    for (index, (tool, arguments)) in SEARCH.iter().enumerate() {
        let id = format!("search_{index}");
        fake.push_for(
            needle,
            FakeProvider::openai_tool_calls(&[(id.as_str(), tool, &[arguments])], None),
        );
    }
    fake.push_for(needle, FakeProvider::openai_text(&[ANSWER], None));
    fake.push(FakeProvider::openai_text(&["Found it."], None));
    fake
}

async fn measure(
    root: &std::path::Path,
    state: &std::path::Path,
) -> Result<SubagentReport, String> {
    let fake = scripted_provider().await;
    let options = json!({
        "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "bench-model"},
        "stateDir": state,
        "approval": "ask",
    });
    let client = start_agentls(root, options, "error").await?;
    let session = client.new_session().await?;
    client
        .prompt_to_end(&session, "Where are approvals decided?")
        .await?;
    let listed = client
        .request("agent/session/list", json!({"includeChildren": true}))
        .await
        .map_err(|e| e.to_string())?;
    let child = listed["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["parentSessionId"] == session.as_str())
        .and_then(|s| s["sessionId"].as_str())
        .ok_or("no child session was recorded")?
        .to_string();
    let _ = client.request("shutdown", Value::Null).await;
    let _ = client.notify("exit", Value::Null).await;
    let parent_events = events_of(state, &session)?;
    let child_events = events_of(state, &child)?;
    let child_items = items(&child_events);
    let parent_items = items(&parent_events);
    Ok(SubagentReport {
        child_calls: child_items
            .iter()
            .filter(|(i, _)| matches!(i, Item::ToolCall { .. }))
            .count(),
        child_history_tokens: child_items.iter().map(|(_, t)| t).sum(),
        child_tool_output_tokens: child_items
            .iter()
            .filter(|(i, _)| matches!(i, Item::ToolOutput { .. }))
            .map(|(_, t)| t)
            .sum(),
        parent_task_output_tokens: parent_items
            .iter()
            .filter(|(i, _)| matches!(i, Item::ToolOutput { name, .. } if name == "task"))
            .map(|(_, t)| t)
            .sum(),
        parent_history_tokens: parent_items.iter().map(|(_, t)| t).sum(),
    })
}

/// The items of `events` with their token counts.
fn items(events: &[Event]) -> Vec<(Item, usize)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Item { entry, .. } => Some((entry.item.clone(), entry.tokens)),
            _ => None,
        })
        .collect()
}

/// The events of a session's log under `state` (found by its file name).
fn events_of(state: &std::path::Path, id: &str) -> Result<Vec<Event>, String> {
    let mut pending = vec![state.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir)
            .map_err(|e| e.to_string())?
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl")
                && path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(id))
            {
                let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
                return Ok(text
                    .lines()
                    .filter_map(|line| serde_json::from_str(line).ok())
                    .collect());
            }
        }
    }
    Err(format!("no log for session {id}"))
}

pub fn print(report: &SubagentReport) {
    let kept_out = report
        .child_history_tokens
        .saturating_sub(report.parent_task_output_tokens);
    println!(
        "explore over this repository: {} tool calls",
        report.child_calls
    );
    println!(
        "  child history: {} tokens ({} of them tool outputs)",
        report.child_history_tokens, report.child_tool_output_tokens
    );
    println!(
        "  parent keeps:  {} tokens (the task output); parent history {} tokens in all",
        report.parent_task_output_tokens, report.parent_history_tokens
    );
    println!(
        "  kept out of the parent's history: {kept_out} tokens ({:.1}× smaller)",
        report.child_history_tokens as f64 / report.parent_task_output_tokens.max(1) as f64
    );
}
