//! `agentls-dev bench prefix`: how much of each model request of one turn repeats the
//! request before it, byte for byte. A local server (llama.cpp) keeps the last prompt's
//! evaluated tokens and reads only what follows the common prefix: the share reused is what
//! a step does not pay for again. A real agentls child serves the current directory (run it
//! at the repository's root); the fake provider scripts a turn of tool steps over real files
//! (reads, greps, listings), with the window given, then an answer.

use serde_json::{json, Value};

use crate::fake_provider::FakeProvider;
use crate::lsp_client::start_agentls;

pub struct PrefixOptions {
    /// The model's window (`provider.contextWindow`).
    pub window: usize,
}

impl Default for PrefixOptions {
    fn default() -> Self {
        PrefixOptions { window: 16_384 }
    }
}

/// One request of the turn after the first: its size, the size of the one before, and the
/// bytes they share from the start.
pub struct Step {
    pub bytes: usize,
    pub previous: usize,
    pub reused: usize,
}

pub struct PrefixReport {
    pub steps: Vec<Step>,
    pub compactions: usize,
}

/// The turn's script: (tool, arguments) in order, over files of this repository.
const STEPS: &[(&str, &str)] = &[
    (
        "grep",
        r#"{"pattern": "fn gate", "path": "crates/core/src"}"#,
    ),
    ("read_file", r#"{"path": "crates/core/src/approval.rs"}"#),
    ("list_dir", r#"{"path": "server/src/agent"}"#),
    (
        "read_file",
        r#"{"path": "server/src/agent/turn/dispatch/asking.rs"}"#,
    ),
    (
        "grep",
        r#"{"pattern": "protected_write", "path": "server/src"}"#,
    ),
    (
        "read_file",
        r#"{"path": "server/src/agent/turn/model_step.rs", "limit": 120}"#,
    ),
    (
        "read_file",
        r#"{"path": "crates/core/src/compaction/plan.rs", "offset": 300}"#,
    ),
];

pub async fn run(options: &PrefixOptions) -> Result<PrefixReport, String> {
    let root = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| e.to_string())?;
    if !root.join("crates/core/src/approval.rs").is_file() {
        return Err("run `agentls-dev bench prefix` at the root of the agentls repository".into());
    }
    let state_dir =
        std::env::temp_dir().join(format!("agentls-bench-prefix-{}", std::process::id()));
    std::fs::create_dir_all(&state_dir).map_err(|e| e.to_string())?;
    let result = measure(&root, &state_dir, options).await;
    let _ = std::fs::remove_dir_all(&state_dir);
    result
}

async fn measure(
    root: &std::path::Path,
    state: &std::path::Path,
    options: &PrefixOptions,
) -> Result<PrefixReport, String> {
    let fake = FakeProvider::start().await;
    for (index, (tool, arguments)) in STEPS.iter().enumerate() {
        let id = format!("step_{index}");
        fake.push(FakeProvider::openai_tool_calls(
            &[(id.as_str(), tool, &[arguments])],
            None,
        ));
    }
    fake.push(FakeProvider::openai_text(&["Done."], None));
    fake.respond_to(
        "CONTEXT CHECKPOINT COMPACTION",
        std::sync::Arc::new(|_: &Value| FakeProvider::openai_text(&["[Summary]"], None)),
    );
    let settings = json!({
        "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()),
                     "model": "bench-model", "contextWindow": options.window},
        "stateDir": state,
        "approval": "full-auto",
    });
    let client = start_agentls(root, settings, "error").await?;
    let session = client.new_session().await?;
    let updates = client
        .prompt_to_end(
            &session,
            "Where are approvals decided, and what does a compaction keep?",
        )
        .await?;
    let compactions = updates
        .iter()
        .filter(|u| u["kind"] == "compaction" && u["phase"] == "started")
        .count();
    let _ = client.request("shutdown", Value::Null).await;
    let _ = client.notify("exit", Value::Null).await;
    // The turn's own requests, in order (a summary call is not one of them).
    let bodies: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| !r.body.to_string().contains("CONTEXT CHECKPOINT COMPACTION"))
        .map(|r| prompt_of(&r.body))
        .collect();
    let steps = bodies
        .windows(2)
        .map(|pair| Step {
            bytes: pair[1].len(),
            previous: pair[0].len(),
            reused: common_prefix(&pair[0], &pair[1]),
        })
        .collect();
    Ok(PrefixReport { steps, compactions })
}

/// What a chat template renders, in order: the tools, then each message's role and content
/// (and its calls).
fn prompt_of(body: &Value) -> String {
    let mut out = body["tools"].to_string();
    for message in body["messages"].as_array().into_iter().flatten() {
        out.push_str(&message.to_string());
    }
    out
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

pub fn print(options: &PrefixOptions, report: &PrefixReport) {
    println!(
        "one turn of {} tool steps over this repository, {}-token window, {} compaction(s)",
        STEPS.len(),
        options.window,
        report.compactions
    );
    for (index, step) in report.steps.iter().enumerate() {
        println!(
            "  request {}: {:>7} bytes; keeps {:>5.1}% of the request before; {:>5.1}% of it is reused",
            index + 2,
            step.bytes,
            100.0 * step.reused as f64 / step.previous.max(1) as f64,
            100.0 * step.reused as f64 / step.bytes.max(1) as f64
        );
    }
    let reused: usize = report.steps.iter().map(|s| s.reused).sum();
    let bytes: usize = report.steps.iter().map(|s| s.bytes).sum();
    let kept_lowest = report
        .steps
        .iter()
        .map(|s| s.reused as f64 / s.previous.max(1) as f64)
        .fold(1.0, f64::min);
    println!(
        "  after the first request: {:.1}% of all bytes reused; the lowest share of a previous request kept: {:.1}%",
        100.0 * reused as f64 / bytes.max(1) as f64,
        100.0 * kept_lowest
    );
}
