//! The agent loop's host over LSP: where a turn's inputs come from (the editor's documents
//! through the one gather recipe) and where its outputs go (notifications in order,
//! `workspace/applyEdit`, approvals through `agent/session/requestPermission`, progress).

use super::progress::Progressor;
use super::{client_request, to_proto, Backend, ClientSupport};
use crate::gather::DocumentSource;
use crate::host::{FileChange, Gathered, Host, Notice, PermissionOutcome, PermissionRequest};
use crate::locks::{Locked, ReadWriteLocked};
use crate::protocol::lsp;
use crate::protocol::lsp::{
    EditorDiagnostics, EditorDiagnosticsParams, EditorLsp, EditorLspParams, PermissionOption,
    RequestPermission, SessionUpdate, SessionUpdateParams, Status, SubagentUpdate,
};
use agentls_core::agents_md::InstructionFiles;
use agentls_core::config::Config;
use agentls_core::document::DocumentSnapshot;
use agentls_core::editor_diagnostics::Diagnostic;
use agentls_core::editor_state::EditorState;
use agentls_core::position::PositionEncoding;
use agentls_core::prompts::Prompts;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tower_lsp::lsp_types::{request, ApplyWorkspaceEditParams, MessageType, Url};

/// How long past `diagnostics.settleMs` the server waits for `agent/editor/diagnostics`.
const DIAGNOSTICS_MARGIN_MS: u64 = 1_000;
/// How long an `agent/editor/lsp` request may take before the `lsp` tool answers from the
/// symbol index: the editor bounds its language servers' time below this (a server still
/// indexing a large workspace answers late or not at all).
const EDITOR_LSP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// The agent loop's host over LSP: context from the document store, edits through
/// `workspace/applyEdit`, approvals through `agent/session/requestPermission`, updates as
/// notifications sent in order by one task.
pub(super) struct LspHost {
    pub(super) backend: Backend,
    pub(super) notices: tokio::sync::mpsc::UnboundedSender<Outgoing>,
    /// Progress reports begun and not ended: the sender ends each with its message.
    pub(super) progress: std::sync::Mutex<HashMap<String, tokio::sync::oneshot::Sender<String>>>,
    /// Edits the editor said it applied to an open buffer, by URI: the buffer's version
    /// they were made against and the text they left. Until the editor's didChange brings a
    /// later version (Neovim holds its first change back 150 ms), `buffer` answers with
    /// that text, so a snapshot at the turn's end sees the agent's edit.
    pub(super) applied: std::sync::Mutex<HashMap<Url, (i32, String)>>,
}

/// What the notice task sends, in order.
#[allow(clippy::large_enum_variant)] // as `Notice`: sent and dropped, never stored
pub(super) enum Outgoing {
    Notice(Notice),
    /// Answered once every notice queued before it was handed to the client: a server
    /// request (requestPermission, applyEdit) waits for it so it never overtakes the
    /// `toolCall` it is about.
    Flush(tokio::sync::oneshot::Sender<()>),
}

impl LspHost {
    pub(super) fn new(backend: Backend) -> LspHost {
        let (notices, mut queue) = tokio::sync::mpsc::unbounded_channel::<Outgoing>();
        let client = backend.client.clone();
        tokio::spawn(async move {
            while let Some(outgoing) = queue.recv().await {
                let notice = match outgoing {
                    Outgoing::Notice(notice) => notice,
                    Outgoing::Flush(done) => {
                        let _ = done.send(());
                        continue;
                    }
                };
                match notice {
                    Notice::Update {
                        session_id,
                        turn_id,
                        update,
                        parent,
                    } => {
                        client
                            .send_notification::<SessionUpdate>(SessionUpdateParams {
                                session_id,
                                turn_id,
                                update: SubagentUpdate { update, parent },
                            })
                            .await
                    }
                    Notice::Status(status) => client.send_notification::<Status>(status).await,
                }
            }
        });
        LspHost {
            backend,
            notices,
            progress: std::sync::Mutex::new(HashMap::new()),
            applied: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Waits until every notice queued so far was handed to the client.
    pub(super) async fn flush_notices(&self) {
        let (done, flushed) = tokio::sync::oneshot::channel();
        if self.notices.send(Outgoing::Flush(done)).is_ok() {
            let _ = flushed.await;
        }
    }

    pub(super) fn support(&self) -> ClientSupport {
        *self.backend.state.support.read_locked()
    }
}

#[tower_lsp::async_trait]
impl Host for LspHost {
    fn config(&self) -> Config {
        self.backend.state.config()
    }

    fn prompts(&self) -> Arc<Prompts> {
        self.backend.state.prompts()
    }

    fn roots(&self) -> Vec<PathBuf> {
        self.backend
            .state
            .index
            .roots()
            .into_iter()
            .map(|root| root.canonicalize().unwrap_or(root))
            .collect()
    }

    async fn gather(&self, editor: Option<&EditorState>) -> Result<Gathered, String> {
        self.backend.gather(editor).await
    }

    async fn symbols(&self) -> Option<crate::symbols::Symbols> {
        Some(self.backend.symbols_current().await)
    }

    async fn buffer(&self, path: &Path) -> Option<(String, i32)> {
        let uri = Url::from_file_path(path).ok()?;
        let snapshot = self.backend.state.documents.snapshot(&uri).await?;
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        match applied.get(&uri) {
            // The editor has not told of its edit yet: its text is what it applied.
            Some((version, text)) if snapshot.version <= *version => {
                return Some((text.clone(), snapshot.version))
            }
            Some(_) => {
                applied.remove(&uri);
            }
            None => {}
        }
        Some((snapshot.rope.to_string(), snapshot.version))
    }

    async fn apply(&self, change: FileChange) -> Result<(), String> {
        let support = self.support();
        if !support.apply_edit {
            return Err("the editor does not support workspace/applyEdit".into());
        }
        // An open buffer's edit: the text it leaves, kept until the editor tells of it.
        let buffered = match &change {
            FileChange::Edit {
                path,
                version: Some(v),
                ..
            }
            | FileChange::Write {
                path,
                version: Some(v),
                ..
            } => Url::from_file_path(path)
                .ok()
                .map(|uri| (uri, *v, change.new_text())),
            _ => None,
        };
        let edit = to_proto::workspace_edit(change, self.backend.state.encoding(), support)?;
        self.flush_notices().await;
        let answer = client_request::send::<request::ApplyWorkspaceEdit>(
            &self.backend.client,
            ApplyWorkspaceEditParams { label: None, edit },
        );
        // An editor that never answers must not hold the turn: past the timeout the wait
        // ends (and the request is withdrawn with `$/cancelRequest`).
        let timeout_ms = self.config().apply_edit_timeout_ms;
        let answer =
            tokio::time::timeout(std::time::Duration::from_millis(timeout_ms), answer.get()).await;
        match answer {
            Err(_) => Err(format!(
                "the editor did not answer workspace/applyEdit within {timeout_ms} ms (lsp.applyEditTimeoutMs); the edit may not have been applied"
            )),
            Ok(Ok(response)) if response.applied => {
                if let Some((uri, version, text)) = buffered {
                    self.applied
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(uri, (version, text));
                }
                Ok(())
            }
            Ok(Ok(response)) => Err(response
                .failure_reason
                .unwrap_or_else(|| "the editor refused the edit".into())),
            Ok(Err(err)) => Err(format!("workspace/applyEdit failed: {}", err.message)),
        }
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionOutcome {
        let timeout = std::time::Duration::from_millis(self.config().approval_timeout_ms);
        let options = request.options.clone();
        let params = permission_params(request);
        self.flush_notices().await;
        // Sent from its own task: a wait that times out here, or a turn cancelled while
        // it waits, leaves the request to take the client's late answer and ignore it.
        let answer = tokio::time::timeout(
            timeout,
            client_request::send::<RequestPermission>(&self.backend.client, params).get(),
        )
        .await
        .map(|answer| {
            answer
                .map(|answer| {
                    answer.value["outcome"]["optionId"]
                        .as_str()
                        .map(str::to_string)
                })
                .map_err(|err| err.message.to_string())
        });
        PermissionOutcome::from_answer(answer, &options, "requestPermission", timeout)
    }

    fn publish_finding(&self, session_id: &str, finding: &agentls_core::review::Finding) {
        self.backend.state.findings.add(session_id, finding);
    }

    fn has_editor_diagnostics(&self) -> bool {
        self.support().editor_diagnostics
    }

    fn editor_language_servers(&self) -> Option<PositionEncoding> {
        self.support()
            .editor_language_servers
            .then(|| self.backend.state.encoding())
    }

    async fn editor_lsp(&self, method: &str, params: Value) -> Result<Value, String> {
        let params = EditorLspParams {
            method: method.to_string(),
            params,
        };
        self.flush_notices().await;
        let answer = tokio::time::timeout(
            EDITOR_LSP_TIMEOUT,
            client_request::send::<EditorLsp>(&self.backend.client, params).get(),
        )
        .await;
        match answer {
            Ok(Ok(answer)) => Ok(answer.result),
            Ok(Err(err)) => Err(err.message.to_string()),
            Err(_) => Err(format!(
                "the editor did not answer in {} s",
                EDITOR_LSP_TIMEOUT.as_secs()
            )),
        }
    }

    async fn diagnostics(&self, paths: &[PathBuf]) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        if !self.support().editor_diagnostics || paths.is_empty() {
            return Vec::new();
        }
        let settle_ms = self.config().diagnostics_settle_ms;
        let uris: Vec<(PathBuf, Url)> = paths
            .iter()
            .filter_map(|p| Some((p.clone(), Url::from_file_path(p).ok()?)))
            .collect();
        let params = EditorDiagnosticsParams {
            uris: uris.iter().map(|(_, uri)| uri.to_string()).collect(),
            settle_ms,
        };
        // The client waits up to settleMs; past that and a margin, the output goes without.
        let bound = std::time::Duration::from_millis(settle_ms + DIAGNOSTICS_MARGIN_MS);
        let answer = tokio::time::timeout(
            bound,
            client_request::send::<EditorDiagnostics>(&self.backend.client, params).get(),
        )
        .await;
        let items = match answer {
            Ok(Ok(result)) => result.items,
            Ok(Err(err)) => {
                tracing::warn!("agent/editor/diagnostics failed: {}", err.message);
                return Vec::new();
            }
            Err(_) => {
                tracing::warn!("agent/editor/diagnostics got no answer in {bound:?}");
                return Vec::new();
            }
        };
        items
            .into_iter()
            .filter_map(|item| {
                let uri = Url::parse(&item.uri).ok()?;
                let (path, _) = uris.iter().find(|(_, asked)| *asked == uri)?;
                let list = item.diagnostics.value.as_array()?;
                Some((
                    path.clone(),
                    list.iter().filter_map(Diagnostic::from_lsp).collect(),
                ))
            })
            .collect()
    }

    fn notify(&self, notice: Notice) {
        let _ = self.notices.send(Outgoing::Notice(notice));
    }

    async fn flush(&self) {
        self.flush_notices().await;
    }

    fn show_warning(&self, message: String) {
        let client = self.backend.client.clone();
        tokio::spawn(async move { client.show_message(MessageType::WARNING, message).await });
    }

    fn progress(&self, id: &str, title: &str, end: Option<String>) {
        let mut running = self.progress.locked();
        match end {
            Some(message) => {
                if let Some(sender) = running.remove(id) {
                    let _ = sender.send(message);
                }
            }
            None => {
                let (sender, ended) = tokio::sync::oneshot::channel::<String>();
                running.insert(id.to_string(), sender);
                let client = self.backend.client.clone();
                let state = self.backend.state.clone();
                let title = title.to_string();
                // Its own task: creating the token is a round trip the loop must not wait for.
                tokio::spawn(async move {
                    let progress = Progressor::start(&client, &state, &title).await;
                    let message = ended.await.unwrap_or_default();
                    progress.end(&client, message).await;
                });
            }
        }
    }
}

/// `agent/session/requestPermission`'s params from the loop's request (every field, by
/// name: a field added there must be placed here).
fn permission_params(request: PermissionRequest) -> lsp::PermissionRequest {
    let PermissionRequest {
        session_id,
        turn_id,
        tool_call,
        options,
    } = request;
    lsp::PermissionRequest {
        session_id,
        turn_id,
        tool_call,
        options: options
            .into_iter()
            .map(
                |crate::host::PermissionOption {
                     option_id,
                     kind,
                     name,
                 }| PermissionOption {
                    option_id,
                    kind,
                    name,
                },
            )
            .collect(),
    }
}

/// The editor's documents: open buffers first, the workspace's files on disk.
#[tower_lsp::async_trait]
impl DocumentSource for Backend {
    fn roots(&self) -> Vec<PathBuf> {
        self.state.index.roots()
    }

    fn root_of(&self, path: &Path) -> Option<PathBuf> {
        self.state.index.root_of(path)
    }

    fn encoding(&self) -> PositionEncoding {
        self.state.encoding()
    }

    async fn open_buffers(&self) -> Vec<(Url, DocumentSnapshot)> {
        self.state.documents.matching(|_| true).await
    }

    async fn open_buffer(&self, uri: &Url) -> Option<DocumentSnapshot> {
        self.state.documents.snapshot(uri).await
    }

    fn instruction_files(&self) -> Arc<dyn InstructionFiles + Send + Sync> {
        self.state.agents_disk.clone()
    }

    async fn symbols(&self) -> Option<crate::symbols::Symbols> {
        Some(self.symbols_current().await)
    }
}
