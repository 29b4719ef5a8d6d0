//! What the agent loop needs from whoever runs it: the editor over LSP (`lsp::host`) or the
//! terminal (`agentls ask`). The loop is written once against this trait.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use agentls_core::config::Config;
use agentls_core::editor_state::EditorState;
use agentls_core::prompts::Prompts;
use agentls_core::updates::{AgentStatus, FileDiff, ParentCall, PermissionToolCall, Update};

/// What `Host::gather` returns (the recipe is `crate::gather`).
pub use crate::gather::Gathered;

/// A change to a file, planned against `original` (the text the model saw).
#[derive(Debug, Clone)]
pub enum FileChange {
    /// Replace `range` (bytes of `original`) with `new_text`.
    Edit {
        path: PathBuf,
        /// The open buffer's version the edit was planned against; None when read from disk.
        version: Option<i32>,
        original: String,
        range: std::ops::Range<usize>,
        new_text: String,
    },
    /// Create the file, or replace all of `original` (Some when it exists).
    Write {
        path: PathBuf,
        version: Option<i32>,
        original: Option<String>,
        content: String,
    },
}

impl FileChange {
    /// The file the change is to.
    pub fn path(&self) -> &std::path::Path {
        match self {
            FileChange::Edit { path, .. } | FileChange::Write { path, .. } => path,
        }
    }

    /// The file's whole text once the change is made. An edit's range comes from `prepare`
    /// over the same `original`; one that does not fit it leaves the text as it was.
    pub fn new_text(&self) -> String {
        match self {
            FileChange::Edit {
                original,
                range,
                new_text,
                ..
            } => {
                let mut new = original.clone();
                if original.is_char_boundary(range.start)
                    && original.is_char_boundary(range.end)
                    && range.start <= range.end
                    && range.end <= original.len()
                {
                    new.replace_range(range.clone(), new_text);
                }
                new
            }
            FileChange::Write { content, .. } => content.clone(),
        }
    }

    /// Makes the change on disk (no editor to apply it): an edit only while the file still
    /// holds the text the model saw. Blocking.
    pub fn write_to_disk(self) -> Result<(), String> {
        let text = self.new_text();
        match self {
            FileChange::Edit { path, original, .. } => {
                crate::store::files::write_checked(&path, Some(&original), &text)
            }
            FileChange::Write { path, .. } => {
                crate::store::files::write_checked(&path, None, &text)
            }
        }
    }

    /// The text the change was planned against (None: a new file).
    pub fn original(&self) -> Option<&str> {
        match self {
            FileChange::Edit { original, .. } => Some(original),
            FileChange::Write { original, .. } => original.as_deref(),
        }
    }

    /// The change as `{path, oldText, newText}` (whole texts; `oldText` null for a new file).
    pub fn as_diff(&self) -> FileDiff {
        FileDiff {
            path: self.path().to_string_lossy().into_owned(),
            old_text: self.original().map(str::to_string),
            new_text: self.new_text(),
        }
    }
}

/// A shell command to run in the editor's terminal (`Host::run_in_terminal`).
#[derive(Debug, Clone)]
pub struct TerminalRun {
    pub session_id: String,
    pub tool_call_id: String,
    pub command: String,
    pub cwd: PathBuf,
    pub timeout: std::time::Duration,
    pub max_output_bytes: usize,
    /// Variables the command must not see (set empty in the terminal).
    pub hidden_env: Vec<String>,
    /// The sandbox the terminal runs the command in (through `agentls sandbox`).
    pub sandbox: Option<agentls_core::sandbox::SandboxPolicy>,
}

/// How a command run in the editor's terminal ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalOutcome {
    /// What the terminal printed (its own cut, if any).
    pub output: String,
    /// `None` when the command was killed or ended by a signal.
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub timed_out: bool,
    pub cancelled: bool,
}

/// A client terminal's output (`terminal/output`): all it printed that the client kept,
/// and its exit once it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalSnapshot {
    pub output: String,
    pub exit: Option<TerminalExit>,
}

/// How a command in a client terminal ended: its exit code, else the signal that ended it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalExit {
    pub code: Option<i32>,
    pub signal: Option<String>,
}

/// A command running in the editor's terminal that outlives the call that started it (a
/// background command, `Host::open_terminal`): read, waited for, killed and released by
/// `tools::background`, which owns it.
#[async_trait::async_trait]
pub trait ClientTerminal: Send + Sync {
    /// The terminal's id (`terminalId`).
    fn id(&self) -> &str;
    async fn output(&self) -> Result<TerminalSnapshot, String>;
    /// Returns once the command ended.
    async fn wait_for_exit(&self) -> Result<TerminalExit, String>;
    async fn kill(&self) -> Result<(), String>;
    /// Frees the terminal (killing the command if it still runs); it is not used again.
    async fn release(&self) -> Result<(), String>;
    /// Releases the terminal without waiting for the answer: agentls is exiting.
    fn abandon(&self);
}

/// `agent/session/requestPermission` params, as sent.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    pub session_id: String,
    pub turn_id: String,
    pub tool_call: PermissionToolCall,
    pub options: Vec<PermissionOption>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    pub kind: String,
    pub name: String,
}

impl PermissionOption {
    /// The four answers every request offers (allow/reject, once/always), with their labels.
    pub fn four(
        allow_once: String,
        allow_always: String,
        reject_once: String,
        reject_always: String,
    ) -> Vec<PermissionOption> {
        [
            ("allow-once", "allowOnce", allow_once),
            ("allow-always", "allowAlways", allow_always),
            ("reject-once", "rejectOnce", reject_once),
            ("reject-always", "rejectAlways", reject_always),
        ]
        .into_iter()
        .map(|(id, kind, name)| PermissionOption {
            option_id: id.into(),
            kind: kind.into(),
            name,
        })
        .collect()
    }
}

/// The user's answer: the chosen option's kind (`allowOnce`, `allowAlways`, `rejectOnce`,
/// `rejectAlways`), or `cancelled` (no answer, an error, a timeout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionOutcome {
    pub kind: String,
}

impl PermissionOutcome {
    pub fn allows(&self) -> bool {
        matches!(self.kind.as_str(), "allowOnce" | "allowAlways")
    }

    /// The outcome of a permission request sent as `method` and waited for `timeout`: the
    /// kind of the option the client chose (`answer`: its id), else `cancelled` — the
    /// client's error, no answer in time, or an option that was not offered — logged.
    pub fn from_answer(
        answer: Result<Result<Option<String>, String>, tokio::time::error::Elapsed>,
        options: &[PermissionOption],
        method: &str,
        timeout: std::time::Duration,
    ) -> PermissionOutcome {
        let kind = match answer {
            Ok(Ok(chosen)) => chosen
                .and_then(|id| options.iter().find(|o| o.option_id == id))
                .map(|o| o.kind.clone()),
            Ok(Err(message)) => {
                tracing::warn!("{method} failed: {message}; counted as a rejection");
                None
            }
            Err(_) => {
                tracing::warn!("{method} got no answer in {timeout:?}; counted as a rejection");
                None
            }
        };
        PermissionOutcome {
            kind: kind.unwrap_or_else(|| "cancelled".into()),
        }
    }
}

/// What the loop tells the client: `agent/session/update` and `agent/status` payloads.
// A notice is built, sent and dropped: boxing the update would cost an allocation for every
// streamed chunk and save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    Update {
        session_id: String,
        turn_id: String,
        update: Update,
        /// A subagent's session's updates say whose `task` call they belong to.
        parent: ParentCall,
    },
    Status(AgentStatus),
}

#[async_trait::async_trait]
pub trait Host: Send + Sync + 'static {
    fn config(&self) -> Config;
    fn prompts(&self) -> Arc<Prompts>;
    /// Canonical workspace roots; the first is the default working directory.
    fn roots(&self) -> Vec<PathBuf>;
    /// The context inputs of a turn; an editor state that cannot be used is an error the
    /// user sees. By default the one gather recipe over the disk under `roots` (a host
    /// without an editor); the editor's host reads its open buffers first.
    async fn gather(&self, editor: Option<&EditorState>) -> Result<Gathered, String> {
        let source = crate::gather::DiskSource {
            roots: self.roots(),
            symbols: self.symbols().await,
        };
        crate::gather::gather(&source, &self.config(), &self.prompts(), editor).await
    }
    /// The open buffer's text and version, when the file is open in the editor (never, for
    /// a host without one).
    async fn buffer(&self, _path: &Path) -> Option<(String, i32)> {
        None
    }
    /// Applies a change (through the editor, so it is undoable there); Err says why not.
    /// Without an editor, the change goes to the disk, checked against what the model saw.
    async fn apply(&self, change: FileChange) -> Result<(), String> {
        tokio::task::spawn_blocking(move || change.write_to_disk())
            .await
            .map_err(|e| e.to_string())?
    }
    /// Runs a `shell` command in the editor's terminal, so the user watches it there: None
    /// when the host has no terminal (the command runs in this process). Err says why the
    /// terminal could not run it.
    async fn run_in_terminal(
        &self,
        _run: TerminalRun,
        _cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<Result<TerminalOutcome, String>> {
        None
    }
    /// The editor's diagnostics of files a tool call changed, once its language servers
    /// have reported on the new text (or `diagnostics.settleMs` passed): per file it
    /// answered for. Empty for a host without an editor, an editor that does not offer
    /// them, or one that failed to answer (logged): never an error for the tool.
    async fn diagnostics(
        &self,
        _paths: &[PathBuf],
    ) -> Vec<(PathBuf, Vec<agentls_core::editor_diagnostics::Diagnostic>)> {
        Vec::new()
    }
    /// Whether an editor reports diagnostics of the files a call changed (`diagnostics`
    /// answers): where it does, they are the check after a change.
    fn has_editor_diagnostics(&self) -> bool {
        false
    }
    /// The position encoding of the editor's language servers when the client answers
    /// their requests (`agent/editor/lsp`); None for a host without an editor, or an editor
    /// that does not offer them: the `lsp` tool then answers from the symbol index.
    fn editor_language_servers(&self) -> Option<agentls_core::position::PositionEncoding> {
        None
    }
    /// A standard LSP request (`textDocument/definition`, …) answered by the editor's
    /// language servers; Err says why there is no answer (no server for the file, no
    /// answer in time). Only called where `editor_language_servers` is Some.
    async fn editor_lsp(&self, method: &str, _params: Value) -> Result<Value, String> {
        Err(format!("no editor answers {method} here"))
    }
    /// The workspace symbol index (`find_symbol`), its open buffers brought up to date;
    /// None for a host that keeps none.
    async fn symbols(&self) -> Option<crate::symbols::Symbols> {
        None
    }
    /// Starts a background command in the editor's terminal: None when the host has no
    /// terminal (the command runs in this process). Err says why the terminal could not
    /// start it.
    async fn open_terminal(
        &self,
        _run: TerminalRun,
    ) -> Option<Result<Arc<dyn ClientTerminal>, String>> {
        None
    }
    async fn request_permission(&self, request: PermissionRequest) -> PermissionOutcome;
    /// Sends in order; never blocks the loop.
    fn notify(&self, notice: Notice);
    /// Work-done progress: `end` None begins the progress `id` titled `title`; Some ends
    /// it with that message. Never blocks the loop.
    fn progress(&self, id: &str, title: &str, end: Option<String>);
    /// A problem the user should see outside any turn (a damaged session log).
    fn show_warning(&self, message: String);
    /// A review turn's finding (`report_finding`) of session `session_id`, shown where the
    /// host shows problems (the editor's diagnostics); nothing for a host without them (the
    /// turn's closing message lists the findings everywhere).
    fn publish_finding(&self, _session_id: &str, _finding: &agentls_core::review::Finding) {}
    /// Returns once every notice sent so far has left (so that an answer sent next cannot
    /// overtake them).
    async fn flush(&self) {}
}
