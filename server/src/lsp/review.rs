//! A review's findings as LSP diagnostics (source `agentls review`): kept per document,
//! published by one task (so two publications of a document never cross), dropped when the
//! code under them changes (`Finding::is_stale`, checked after each didOpen/didChange/
//! didClose of their document and each watched-file change), offered "Fix with agent" and
//! "Dismiss" code actions, and dismissed by `workspace/executeCommand`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tower_lsp::lsp_types::*;
use tower_lsp::Client;

use agentls_core::position::PositionEncoding;
use agentls_core::review::{Finding, Severity, DIAGNOSTIC_SOURCE};

use super::State;
use crate::locks::Locked;

/// The server command of "Dismiss": `[findingId]`.
pub(super) const DISMISS_COMMAND: &str = "agentls.review.dismiss";
/// The editor's command of "Fix with agent": `[uri, diagnostic, {sessionId, findingId,
/// prompt}]`; the editor sends `prompt` with `agent/session/prompt`.
pub(super) const FIX_COMMAND: &str = "agentls.review.fix";

/// A finding as kept: its id (in the diagnostic's `data`) and the session that reported it.
struct Kept {
    id: String,
    session_id: String,
    finding: Finding,
}

enum Job {
    /// Compare the document's findings with its text now; publish when some went stale.
    Check(Url),
    /// Publish the document's findings as they are now.
    Publish(Url),
}

/// Every finding, by document.
pub(super) struct Findings {
    kept: Mutex<(u64, HashMap<Url, Vec<Kept>>)>,
    jobs: tokio::sync::mpsc::UnboundedSender<Job>,
}

pub(super) struct Jobs(tokio::sync::mpsc::UnboundedReceiver<Job>);

impl Findings {
    pub(super) fn new() -> (Arc<Findings>, Jobs) {
        let (jobs, queue) = tokio::sync::mpsc::unbounded_channel();
        (
            Arc::new(Findings {
                kept: Mutex::new((0, HashMap::new())),
                jobs,
            }),
            Jobs(queue),
        )
    }

    /// A document was synced (or changed on disk): checked when it has findings. A map
    /// lookup on the keystroke path; the check runs on the findings' task.
    pub(super) fn touched(&self, uri: &Url) {
        if self.kept.locked().1.contains_key(uri) {
            let _ = self.jobs.send(Job::Check(uri.clone()));
        }
    }

    /// Keeps a finding of session `session_id` and publishes its document.
    pub(super) fn add(&self, session_id: &str, finding: &Finding) {
        let Ok(uri) = Url::from_file_path(&finding.file) else {
            return;
        };
        {
            let mut kept = self.kept.locked();
            kept.0 += 1;
            let id = format!("finding-{}", kept.0);
            kept.1.entry(uri.clone()).or_default().push(Kept {
                id,
                session_id: session_id.to_string(),
                finding: finding.clone(),
            });
        }
        let _ = self.jobs.send(Job::Publish(uri));
    }

    /// Removes finding `id`; whether there was one.
    pub(super) fn dismiss(&self, id: &str) -> bool {
        let uri = {
            let mut kept = self.kept.locked();
            let found = kept
                .1
                .iter()
                .find(|(_, list)| list.iter().any(|k| k.id == id))
                .map(|(uri, _)| uri.clone());
            if let Some(uri) = &found {
                if let Some(list) = kept.1.get_mut(uri) {
                    list.retain(|k| k.id != id);
                }
            }
            found
        };
        match uri {
            Some(uri) => {
                let _ = self.jobs.send(Job::Publish(uri));
                true
            }
            None => false,
        }
    }

    /// The code actions of the findings of `uri` on the lines of `range`.
    pub(super) fn actions(
        &self,
        uri: &Url,
        range: &Range,
        encoding: PositionEncoding,
        prompts: &agentls_core::prompts::Prompts,
    ) -> Vec<CodeActionOrCommand> {
        let kept = self.kept.locked();
        let Some(list) = kept.1.get(uri) else {
            return Vec::new();
        };
        let (first, last) = (range.start.line as usize + 1, range.end.line as usize + 1);
        let mut actions = Vec::new();
        for k in list
            .iter()
            .filter(|k| k.finding.line <= last && k.finding.end_line >= first)
        {
            let diagnostic = diagnostic(k, encoding);
            let fix = json!({
                "sessionId": k.session_id,
                "findingId": k.id,
                "prompt": k.finding.fix_prompt(prompts),
            });
            actions.push(action(
                "Fix with agent",
                &diagnostic,
                Command {
                    title: "Fix with agent".into(),
                    command: FIX_COMMAND.into(),
                    arguments: Some(vec![json!(uri), json!(diagnostic), fix]),
                },
            ));
            actions.push(action(
                "Dismiss",
                &diagnostic,
                Command {
                    title: "Dismiss".into(),
                    command: DISMISS_COMMAND.into(),
                    arguments: Some(vec![json!(k.id)]),
                },
            ));
        }
        actions
    }
}

fn action(title: &str, diagnostic: &Diagnostic, command: Command) -> CodeActionOrCommand {
    CodeActionOrCommand::CodeAction(CodeAction {
        title: title.into(),
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![diagnostic.clone()]),
        command: Some(command),
        ..Default::default()
    })
}

/// A finding as the editor shows it: its lines, whole (to the end of its last line).
fn diagnostic(kept: &Kept, encoding: PositionEncoding) -> Diagnostic {
    let finding = &kept.finding;
    let whole = finding.lines.len() == finding.end_line - finding.line + 1;
    let end = match finding.lines.last().filter(|_| whole) {
        Some(text) => Position::new((finding.end_line - 1) as u32, units(text, encoding)),
        None => Position::new(finding.end_line as u32, 0),
    };
    let mut message = finding.message.clone();
    if let Some(suggestion) = &finding.suggestion {
        message.push_str(&format!("\nSuggestion: {suggestion}"));
    }
    Diagnostic {
        range: Range::new(Position::new((finding.line - 1) as u32, 0), end),
        severity: Some(match finding.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
            Severity::Info => DiagnosticSeverity::INFORMATION,
        }),
        source: Some(DIAGNOSTIC_SOURCE.into()),
        message,
        data: Some(json!({ "findingId": kept.id, "sessionId": kept.session_id })),
        ..Default::default()
    }
}

fn units(text: &str, encoding: PositionEncoding) -> u32 {
    (match encoding {
        PositionEncoding::Utf8 => text.len(),
        PositionEncoding::Utf16 => text.encode_utf16().count(),
        PositionEncoding::Utf32 => text.chars().count(),
    }) as u32
}

/// The findings' task: every check and publication, one at a time, in order.
pub(super) async fn run(client: Client, state: Arc<State>, Jobs(mut jobs): Jobs) {
    while let Some(job) = jobs.recv().await {
        let uri = match job {
            Job::Publish(uri) => uri,
            Job::Check(uri) => {
                let Some(text) = text_now(&state, &uri).await else {
                    continue;
                };
                let dropped = {
                    let mut kept = state.findings.kept.locked();
                    let Some(list) = kept.1.get_mut(&uri) else {
                        continue;
                    };
                    let before = list.len();
                    list.retain(|k| !k.finding.is_stale(&text));
                    before != list.len()
                };
                if !dropped {
                    continue;
                }
                uri
            }
        };
        let encoding = state.encoding();
        let diagnostics: Vec<Diagnostic> = {
            let mut kept = state.findings.kept.locked();
            let list: Vec<Diagnostic> = kept
                .1
                .get(&uri)
                .map(|list| list.iter().map(|k| diagnostic(k, encoding)).collect())
                .unwrap_or_default();
            if list.is_empty() {
                kept.1.remove(&uri);
            }
            list
        };
        client.publish_diagnostics(uri, diagnostics, None).await;
    }
}

/// The document's text: the editor's buffer when it is open, else the disk's (None when it
/// cannot be read: its findings are kept).
async fn text_now(state: &State, uri: &Url) -> Option<String> {
    if let Some(snapshot) = state.documents.snapshot(uri).await {
        return Some(snapshot.rope.to_string());
    }
    let path = uri.to_file_path().ok()?;
    // A file gone from the disk has no lines: its findings are stale.
    tokio::task::spawn_blocking(move || match crate::store::files::read_text(&path) {
        Ok(text) => Some(text),
        Err(_) if !path.exists() => Some(String::new()),
        Err(_) => None,
    })
    .await
    .ok()
    .flatten()
}
