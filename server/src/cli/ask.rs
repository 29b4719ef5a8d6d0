//! `agentls ask "<question>" [--file path[:line[:col]]] [--session ID] [--approve]
//! [--workspace DIR] [--config JSON]`: one turn through the same agent loop, without an
//! editor. The answer streams to stdout, tool calls and problems to stderr; approvals are
//! asked on the terminal (refused when stdin is not a terminal, unless `--approve`); edits
//! are written to disk; the session is persisted like the server's.

use crate::locks::Locked;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use lsp_types::{Position, Url};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::agent::Agent;
use crate::host::{Host, Notice, PermissionOutcome, PermissionRequest};
use agentls_core::config::Config;
use agentls_core::editor_state::EditorState;
use agentls_core::prompts::Prompts;
use agentls_core::provider_kind::PRESETS;
use agentls_core::updates::{SubagentUpdate, ToolStatus, Update};

#[derive(Debug, Default)]
pub struct AskOptions {
    pub question: String,
    pub file: Option<String>,
    pub session: Option<String>,
    pub approve: bool,
    pub workspace: Option<PathBuf>,
    pub config: Option<String>,
    pub events: Option<PathBuf>,
    /// A new session works in a git worktree of its own (`--worktree`).
    pub worktree: bool,
}

/// The configuration of a run: `--config` (JSON, or `@file` holding JSON) over the user
/// settings file (`~/.config/agentls/settings.json`), else a provider found from the
/// environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`).
pub fn config(options: &AskOptions) -> Result<Config, String> {
    let mut config = settings_config(options.config.as_deref())?;
    let has_key = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if config.model.is_none() && config.base_url.is_none() {
        // The first provider whose key is set and that has a default model.
        let keyed = PRESETS
            .iter()
            .find(|preset| !preset.models.is_empty() && has_key(preset.api_key_env));
        if let Some(preset) = keyed {
            config.provider_kind = preset.name.into();
            config.model = preset.models.first().map(|model| model.to_string());
        } else {
            return Err("no provider configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or pass --config '{\"provider\": {\"kind\": \"openai\", \"baseUrl\": \"http://127.0.0.1:8080/v1\", \"model\": \"…\"}}'".into());
        }
    }
    Ok(config)
}

/// The settings of a command-line run: `--config` (JSON, or `@file` holding JSON) over the
/// user settings file (the flag wins key by key); a bad key is an error. No provider needed.
pub fn settings_config(flag: Option<&str>) -> Result<Config, String> {
    let settings: Value = match flag {
        Some(text) => {
            let text = match text.strip_prefix('@') {
                Some(path) => {
                    std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?
                }
                None => text.to_string(),
            };
            serde_json::from_str(&text).map_err(|e| format!("--config is not JSON: {e}"))?
        }
        None => Value::Null,
    };
    let file = crate::store::settings::read()?;
    let settings = agentls_core::config::merge_settings(&file, &settings);
    let (config, update) = Config::from_settings(&Config::default(), &settings);
    if let Some(problem) = update.problems.first() {
        return Err(format!(
            "configuration key `{}` {}",
            problem.key, problem.message
        ));
    }
    Ok(config)
}

/// Runs the turn; the exit code is 0 when it ended normally.
pub async fn run(options: AskOptions) -> Result<i32, String> {
    let config = config(&options)?;
    let root = match &options.workspace {
        Some(dir) => dir
            .canonicalize()
            .map_err(|e| format!("cannot use workspace {}: {e}", dir.display()))?,
        None => std::env::current_dir()
            .and_then(|d| d.canonicalize())
            .map_err(|e| format!("no current directory: {e}"))?,
    };
    let (prompts, problems) = crate::store::prompts::load(
        crate::store::prompts::override_dir(config.prompts_dir.as_deref()).as_deref(),
        config.compaction.prompt_file.as_deref(),
    );
    for problem in problems {
        eprintln!("agentls: {problem}");
    }
    let editor = match &options.file {
        Some(spec) => Some(editor_state_for(spec, &root)?),
        None => None,
    };
    let events = events_file(options.events.as_deref())?;
    let (ends_tx, mut ends) = mpsc::unbounded_channel();
    let host = Arc::new(CliHost {
        config,
        prompts: Arc::new(prompts),
        root,
        approve: options.approve,
        ends: ends_tx,
        printing: Mutex::new(Printing::default()),
        symbols: Arc::default(),
        events,
    });
    let agent = Agent::new(host.clone());
    let session = match (options.session, options.worktree) {
        (Some(id), _) => id,
        (None, false) => agent.new_session(None).await.map_err(|e| e.message)?,
        (None, true) => {
            agent
                .new_session_apart(None)
                .await
                .map_err(|e| e.message)?
                .0
        }
    };
    let turn = agent
        .prompt(&session, options.question, editor)
        .await
        .map_err(|e| e.message)?;
    let mut interrupted = false;
    let stop = loop {
        tokio::select! {
            end = ends.recv() => match end {
                Some((turn_id, stop)) if turn_id == turn => break stop,
                Some(_) => continue,
                None => return Err("the agent stopped unexpectedly".into()),
            },
            // Ctrl-C cancels the turn (the running command's group is killed); a second
            // one gives up at once.
            _ = tokio::signal::ctrl_c() => {
                if interrupted {
                    crate::process_groups::kill_all();
                    return Ok(130);
                }
                interrupted = true;
                eprintln!("\nagentls: cancelling (Ctrl-C again to quit now)");
                let _ = agent.cancel(&session).await;
            }
        }
    };
    let apart = agent.commit_worktree(&session).await;
    // The one turn was the session's life here.
    agent.end_sessions().await;
    // Let the printer finish the answer's last line.
    println!();
    eprintln!("agentls: session {session} ({stop})");
    say_where_it_worked(&session, apart);
    Ok(if stop == "endTurn" { 0 } else { 1 })
}

/// `--events FILE`, opened to append.
fn events_file(path: Option<&Path>) -> Result<Option<Mutex<std::fs::File>>, String> {
    let Some(path) = path else {
        return Ok(None);
    };
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map(|file| Some(Mutex::new(file)))
        .map_err(|e| format!("cannot open {}: {e}", path.display()))
}

/// Where a session that works apart left its work, and how to apply it.
fn say_where_it_worked(
    session: &str,
    apart: Result<Option<agentls_core::event::WorktreeLink>, crate::agent::AgentError>,
) {
    match apart {
        Ok(Some(link)) => eprintln!(
            "agentls: it worked in the worktree {} on branch {}: your working tree is as it was. Apply its work with `git merge {}` (or `git diff HEAD...{} | git apply`); go on with --session {session}",
            link.path, link.branch, link.branch, link.branch
        ),
        Ok(None) => {}
        Err(err) => eprintln!("agentls: its worktree's work was not committed: {}", err.message),
    }
}

/// `path[:line[:col]]` as an editor state on the file (1-based line and column).
fn editor_state_for(spec: &str, root: &Path) -> Result<EditorState, String> {
    let mut parts = spec.rsplitn(3, ':').collect::<Vec<_>>();
    parts.reverse();
    let number = |s: &str| s.parse::<u32>().ok().filter(|&n| n > 0);
    let (path, line, column) = match parts.as_slice() {
        [path, line, col] if number(line).is_some() && number(col).is_some() => (
            path.to_string(),
            number(line).unwrap_or(1),
            number(col).unwrap_or(1),
        ),
        [path, line] if number(line).is_some() => (path.to_string(), number(line).unwrap_or(1), 1),
        _ => (spec.to_string(), 1, 1),
    };
    let path = root.join(&path);
    let path = path
        .canonicalize()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let uri =
        Url::from_file_path(&path).map_err(|()| format!("{} has no file: uri", path.display()))?;
    Ok(EditorState {
        uri,
        position: Position::new(line - 1, column - 1),
        selection: None,
        visible_range: None,
        diagnostics: Vec::new(),
    })
}

#[derive(Default)]
struct Printing {
    /// The answer's text ended without a newline (so a stderr line must start a new one).
    mid_line: bool,
    /// The titles of the calls announced, by call id: a call's result line names it.
    titles: std::collections::HashMap<String, String>,
}

/// A finished call's line on stderr: its title and what it returned (how many lines, and
/// the first), so a reader sees what the model saw, never only an id.
fn result_line(title: &str, success: bool, output: &str) -> String {
    let lines = output.lines().filter(|l| !l.trim().is_empty()).count();
    let first = agentls_core::session::shorten(output);
    let shown = match lines {
        0 => "(no output)".to_string(),
        1 => first,
        n => format!("{n} lines: {first}"),
    };
    let mark = if success { '✓' } else { '✗' };
    format!("  {mark} {title}: {shown}")
}

struct CliHost {
    config: Config,
    prompts: Arc<Prompts>,
    root: PathBuf,
    approve: bool,
    ends: mpsc::UnboundedSender<(String, String)>,
    printing: Mutex<Printing>,
    symbols: Arc<std::sync::OnceLock<crate::symbols::Symbols>>,
    /// `--events`: every update, as JSON lines.
    events: Option<Mutex<std::fs::File>>,
}

impl CliHost {
    fn stderr_line(&self, line: &str) {
        let mut printing = self.printing.locked();
        if printing.mid_line {
            println!();
            printing.mid_line = false;
        }
        let _ = std::io::stdout().flush();
        eprintln!("{line}");
    }
}

#[async_trait::async_trait]
impl Host for CliHost {
    fn config(&self) -> Config {
        self.config.clone()
    }

    fn prompts(&self) -> Arc<Prompts> {
        self.prompts.clone()
    }

    fn roots(&self) -> Vec<PathBuf> {
        vec![self.root.clone()]
    }

    /// Built (or loaded) on first use, then kept for the run.
    async fn symbols(&self) -> Option<crate::symbols::Symbols> {
        let cell = self.symbols.clone();
        let roots = self.roots();
        let config = self.config.clone();
        tokio::task::spawn_blocking(move || {
            cell.get_or_init(|| crate::symbols::Symbols::open(&roots, &config))
                .clone()
        })
        .await
        .ok()
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionOutcome {
        let title = &request.tool_call.title;
        if self.approve {
            self.stderr_line(&format!("agentls: allowed (--approve): {title}"));
            return PermissionOutcome {
                kind: "allowOnce".into(),
            };
        }
        // SAFETY: isatty only reads the descriptor's state.
        let interactive = unsafe { libc::isatty(0) } == 1;
        if !interactive {
            self.stderr_line(&format!(
                "agentls: refused {title}: stdin is not a terminal to ask on (pass --approve to allow)"
            ));
            return PermissionOutcome {
                kind: "cancelled".into(),
            };
        }
        if let Some(diff) = &request.tool_call.diff {
            self.stderr_line(diff);
        }
        // A workspace MCP server's whole entry: its command alone would hide the rest.
        if let Some(details) = &request.tool_call.details {
            self.stderr_line(details);
        }
        self.stderr_line(&format!(
            "agentls: allow {title}? [y]es / [a]lways / [n]o / [N]ever: "
        ));
        let answer = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map(|_| line)
        })
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
        let kind = match answer.trim() {
            "y" | "yes" | "Y" => "allowOnce",
            "a" | "always" => "allowAlways",
            "N" | "never" => "rejectAlways",
            _ => "rejectOnce",
        };
        PermissionOutcome { kind: kind.into() }
    }

    fn show_warning(&self, message: String) {
        self.stderr_line(&message);
    }

    fn progress(&self, _id: &str, title: &str, end: Option<String>) {
        match end {
            None => self.stderr_line(&format!("agentls: {title}…")),
            Some(message) => self.stderr_line(&format!("agentls: {message}")),
        }
    }

    fn notify(&self, notice: Notice) {
        let Notice::Update {
            session_id,
            turn_id,
            update,
            parent,
        } = notice
        else {
            return;
        };
        if let Some(events) = &self.events {
            let update = SubagentUpdate {
                update: update.clone(),
                parent,
            };
            let line = json!({"sessionId": session_id, "turnId": turn_id, "update": update});
            let _ = writeln!(events.locked(), "{line}");
        }
        match update {
            Update::AgentMessageChunk { text } => {
                print!("{text}");
                let _ = std::io::stdout().flush();
                self.printing.locked().mid_line = !text.ends_with('\n');
            }
            Update::ToolCall {
                tool_call_id,
                title,
                ..
            } => {
                self.stderr_line(&format!("→ {title}"));
                self.printing.locked().titles.insert(tool_call_id, title);
            }
            Update::ToolCallUpdate {
                tool_call_id,
                status,
                output,
                ..
            } => {
                let success = match status {
                    ToolStatus::Completed => true,
                    ToolStatus::Failed => false,
                    ToolStatus::Pending | ToolStatus::InProgress => return,
                };
                let title = self
                    .printing
                    .locked()
                    .titles
                    .remove(&tool_call_id)
                    .unwrap_or(tool_call_id);
                let output = output.unwrap_or_default();
                self.stderr_line(&result_line(&title, success, &output));
            }
            Update::Plan { entries } => {
                let lines: Vec<String> = entries
                    .iter()
                    .map(|e| {
                        let mark = match e.status.as_str() {
                            "completed" => "[x]",
                            "in_progress" => "[~]",
                            _ => "[ ]",
                        };
                        format!("  {mark} {}", e.content)
                    })
                    .collect();
                self.stderr_line(&format!("plan:\n{}", lines.join("\n")));
            }
            Update::Warning { message } => {
                self.stderr_line(&format!("agentls: warning: {message}"))
            }
            Update::Error { message, .. } => {
                self.stderr_line(&format!("agentls: error: {message}"))
            }
            Update::Queued => self.stderr_line("agentls: queued behind the running turn"),
            Update::TurnEnd { stop_reason, .. } => {
                let _ = self.ends.send((turn_id, stop_reason.name().to_string()));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_comes_from_the_flag_and_is_validated() {
        let options = AskOptions {
            question: "q".into(),
            config: Some(r#"{"provider": {"kind": "openai", "baseUrl": "http://127.0.0.1:9/v1", "model": "m"}}"#.into()),
            ..AskOptions::default()
        };
        let config = config(&options).unwrap();
        assert_eq!(config.model.as_deref(), Some("m"));
        let bad = AskOptions {
            question: "q".into(),
            config: Some(r#"{"approval": "yolo"}"#.into()),
            ..AskOptions::default()
        };
        assert!(config_err(&bad).contains("approval"));
    }

    #[test]
    fn a_result_line_shows_what_the_call_returned() {
        assert_eq!(
            result_line("Read src/main.rs", true, "L1: fn main() {\nL2: }"),
            "  ✓ Read src/main.rs: 2 lines: L1: fn main() {"
        );
        assert_eq!(
            result_line("Search \"x\"", true, "No matches"),
            "  ✓ Search \"x\": No matches"
        );
        assert_eq!(
            result_line("Run ls", false, "  \n"),
            "  ✗ Run ls: (no output)"
        );
    }

    fn config_err(options: &AskOptions) -> String {
        match config(options) {
            Ok(_) => String::new(),
            Err(e) => e,
        }
    }
}
