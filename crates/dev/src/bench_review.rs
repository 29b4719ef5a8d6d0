//! `agentls-dev bench review`: what preparing a turn's review costs
//! (`agent/session/changes`) on the generated workspace the checkpoint benchmark uses
//! (`--files` files of about 1 KB). A real agentls serves it; the fake provider scripts one
//! turn that changes `--changed` files with one shell command, then the changes are listed
//! `--runs` times, each timed end to end over stdio (what an editor waits for), and one
//! whole-file undo of them (`agent/session/revertChanges`) is timed once. The workspace is
//! a git repository (one commit), so the cost of a subagent that works apart
//! (`isolation: worktree`: a worktree of the 20,000 files made, committed and removed) is
//! timed too, as a `task` turn beside the same turn with a subagent that works in place.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fake_provider::FakeProvider;
use crate::lsp_client::start_agentls;

pub struct ReviewOptions {
    pub files: usize,
    pub changed: usize,
    pub runs: usize,
}

pub struct ReviewReport {
    pub files_listed: usize,
    pub hunks_listed: usize,
    pub listings: Vec<Duration>,
    pub undo: Duration,
    pub turn: Duration,
    /// A turn whose one `task` call runs a subagent that answers at once: working apart,
    /// and in place.
    pub task_apart: Duration,
    pub task_in_place: Duration,
}

pub async fn run(options: &ReviewOptions) -> Result<ReviewReport, String> {
    let base = std::env::temp_dir().join(format!("agentls-bench-review-{}", std::process::id()));
    let root = base.join("workspace");
    let state = base.join("state");
    std::fs::create_dir_all(&state).map_err(|e| e.to_string())?;
    crate::bench_checkpoint::generate(&root, options.files)?;
    repository(&root)?;
    let result = measure(&root, &state, options).await;
    let _ = std::fs::remove_dir_all(&base);
    result
}

/// The workspace as a git repository of one commit, with two subagents that answer at
/// once: one works apart, one in place.
fn repository(root: &std::path::Path) -> Result<(), String> {
    for (name, isolation) in [("apart", "isolation: worktree\n"), ("inplace", "")] {
        let file = root.join(format!(".agents/agents/{name}.md"));
        std::fs::create_dir_all(file.parent().unwrap()).map_err(|e| e.to_string())?;
        std::fs::write(
            &file,
            format!("---\ndescription: answers\ntools: read_file\n{isolation}---\nSUBAGENT-{name}: answer.\n"),
        )
            .map_err(|e| e.to_string())?;
    }
    for args in [
        &["init", "--quiet"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "--quiet",
            "-m",
            "files",
        ],
    ] {
        let status = std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("git {args:?} failed"));
        }
    }
    Ok(())
}

/// One turn that changes the first line of `options.changed` files spread over the
/// workspace (one `sed -i`: the bench's client applies no editor edits), then answers.
async fn scripted(options: &ReviewOptions) -> FakeProvider {
    let fake = FakeProvider::start().await;
    let step = (options.files / options.changed.max(1)).max(1);
    let paths: Vec<String> = (0..options.changed)
        .map(|i| {
            let n = (i * step).min(options.files - 1);
            format!("dir{:03}/file{n}.rs", n / 100)
        })
        .collect();
    let command = format!("sed -i '1s/$/, reviewed/' {}", paths.join(" "));
    let arguments = json!({ "command": command }).to_string();
    fake.push(FakeProvider::openai_tool_calls(
        &[("sed", "shell", &[arguments.as_str()])],
        None,
    ));
    fake.push(FakeProvider::openai_text(&["Done."], None));
    for agent in ["apart", "inplace"] {
        let task = json!({"agent": agent, "prompt": "Go."}).to_string();
        fake.push(FakeProvider::openai_tool_calls(
            &[(agent, "task", &[task.as_str()])],
            None,
        ));
        fake.push_for(
            &format!("SUBAGENT-{agent}"),
            FakeProvider::openai_text(&["Answered."], None),
        );
        fake.push(FakeProvider::openai_text(&["Done."], None));
    }
    fake
}

async fn measure(
    root: &std::path::Path,
    state: &std::path::Path,
    options: &ReviewOptions,
) -> Result<ReviewReport, String> {
    let fake = scripted(options).await;
    let options_json = json!({
        "provider": {"kind": "openai", "baseUrl": format!("{}/v1", fake.base_url()), "model": "bench-model"},
        "stateDir": state,
        "approval": "full-auto",
        "checks": {"afterEdit": "off"},
    });
    let client = start_agentls(root, options_json, "error").await?;
    let session = client.new_session().await?;
    let started = Instant::now();
    client
        .prompt_to_end(&session, "Mark the files reviewed.")
        .await?;
    let turn = started.elapsed();
    let mut listings = Vec::with_capacity(options.runs);
    let mut listed = Value::Null;
    for _ in 0..options.runs {
        let started = Instant::now();
        listed = client
            .request("agent/session/changes", json!({"sessionId": session}))
            .await
            .map_err(|e| e.to_string())?;
        listings.push(started.elapsed());
    }
    let files = listed["files"].as_array().cloned().unwrap_or_default();
    if files.len() != options.changed {
        return Err(format!(
            "expected {} changed files, the server listed {}: {listed}",
            options.changed,
            files.len()
        ));
    }
    let hunks_listed = files
        .iter()
        .map(|f| f["hunks"].as_array().map_or(0, Vec::len))
        .sum();
    let changes: Vec<Value> = files.iter().map(|f| json!({"path": f["path"]})).collect();
    let started = Instant::now();
    let undone = client
        .request(
            "agent/session/revertChanges",
            json!({"sessionId": session, "changes": changes}),
        )
        .await
        .map_err(|e| e.to_string())?;
    let undo = started.elapsed();
    if undone["reverted"].as_array().map_or(0, Vec::len) != options.changed {
        return Err(format!("the undo did not revert every file: {undone}"));
    }
    let mut tasks = Vec::new();
    for agent in ["apart", "inplace"] {
        let started = Instant::now();
        client
            .prompt_to_end(&session, &format!("Ask {agent}."))
            .await?;
        tasks.push(started.elapsed());
    }
    let _ = client.request("shutdown", Value::Null).await;
    let _ = client.notify("exit", Value::Null).await;
    Ok(ReviewReport {
        files_listed: files.len(),
        hunks_listed,
        listings,
        undo,
        turn,
        task_apart: tasks[0],
        task_in_place: tasks[1],
    })
}

pub fn print(options: &ReviewOptions, report: &ReviewReport) {
    let mut sorted = report.listings.clone();
    sorted.sort();
    let at = |q: f64| {
        let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
        sorted[i].as_secs_f64() * 1e3
    };
    println!(
        "review of a turn that changed {} of {} files: agent/session/changes p50 {:.1} ms, p99 {:.1} ms over {} runs ({} files, {} hunks listed); one undo of the {} files {:.1} ms; the turn itself {:.0} ms",
        options.changed,
        options.files,
        at(0.5),
        at(0.99),
        report.listings.len(),
        report.files_listed,
        report.hunks_listed,
        options.changed,
        report.undo.as_secs_f64() * 1e3,
        report.turn.as_secs_f64() * 1e3,
    );
    println!(
        "a task turn whose subagent works apart (a git worktree of the {} files made, committed, removed): {:.0} ms; the same turn with the subagent in place: {:.0} ms",
        options.files,
        report.task_apart.as_secs_f64() * 1e3,
        report.task_in_place.as_secs_f64() * 1e3,
    );
}
