//! The standard LSP lifecycle and notifications: initialize (capabilities, the position
//! encoding), initialized, shutdown, code actions, saves, watched files, configuration and
//! workspace folders.

use super::workspace::{roots_from, uri_to_dir};
use super::{Backend, ClientSupport};
use crate::locks::ReadWriteLocked;
use agentls_core::agents_md;
use agentls_core::position::PositionEncoding;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use tower_lsp::jsonrpc;
use tower_lsp::lsp_types::*;
use tower_lsp::LanguageServer;

/// The code action kind of "Ask agent about this selection": a refactor sub-kind, so that
/// VS Code shows it in the lightbulb and the refactor menu.
pub(super) const ASK_ACTION_KIND: &str = "refactor.agentls";

/// What the client can do, as far as the server uses it.
fn client_support(capabilities: &ClientCapabilities) -> ClientSupport {
    let workspace = capabilities.workspace.as_ref();
    let workspace_edit = workspace.and_then(|w| w.workspace_edit.as_ref());
    ClientSupport {
        work_done_progress: capabilities
            .window
            .as_ref()
            .and_then(|w| w.work_done_progress)
            .unwrap_or(false),
        watched_files_registration: workspace
            .and_then(|w| w.did_change_watched_files)
            .and_then(|d| d.dynamic_registration)
            .unwrap_or(false),
        apply_edit: workspace.and_then(|w| w.apply_edit).unwrap_or(false),
        document_changes: workspace_edit
            .and_then(|e| e.document_changes)
            .unwrap_or(false),
        create_files: workspace_edit
            .and_then(|e| e.resource_operations.as_ref())
            .is_some_and(|ops| ops.contains(&ResourceOperationKind::Create)),
        editor_diagnostics: false,
        editor_language_servers: false,
    }
}

/// What `initialize` announces: the negotiated encoding, incremental sync, the code
/// actions, workspace folders.
fn server_capabilities(encoding: PositionEncoding) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(encoding.kind()),
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                    include_text: Some(false),
                })),
                ..Default::default()
            },
        )),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![
                CodeActionKind::QUICKFIX,
                CodeActionKind::from(ASK_ACTION_KIND),
            ]),
            resolve_provider: Some(false),
            ..Default::default()
        })),
        // "Dismiss" of a review finding runs here; "Fix with agent" runs in the editor.
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: vec![super::review::DISMISS_COMMAND.into()],
            ..Default::default()
        }),
        workspace: Some(WorkspaceServerCapabilities {
            workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                supported: Some(true),
                change_notifications: Some(OneOf::Left(true)),
            }),
            file_operations: None,
        }),
        ..Default::default()
    }
}

#[tower_lsp::async_trait]
impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> jsonrpc::Result<InitializeResult> {
        let state = &self.state;
        let offered = params
            .capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.as_deref());
        let encoding = PositionEncoding::negotiate(offered);
        *state.encoding.write_locked() = encoding;
        let mut support = client_support(&params.capabilities);
        let offers = |capability: &str| {
            params
                .initialization_options
                .as_ref()
                .and_then(|o| o.pointer(&format!("/capabilities/{capability}")))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        support.editor_diagnostics = offers("editorDiagnostics");
        support.editor_language_servers = offers("editorLanguageServers");
        *state.support.write_locked() = support;
        let problems = state.apply_settings(
            params
                .initialization_options
                .as_ref()
                .unwrap_or(&Value::Null),
        );
        *state.initial_config_problems.write_locked() = problems;
        state.index.begin(roots_from(&params));
        state.accepting_sync.store(true, Ordering::Release);
        tracing::info!(
            "initialized: position encoding {encoding:?}, roots {:?}",
            state.index.roots()
        );
        Ok(InitializeResult {
            server_info: Some(ServerInfo {
                name: "agentls".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            capabilities: server_capabilities(encoding),
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        let problems = std::mem::take(&mut *self.state.initial_config_problems.write_locked());
        for message in problems {
            self.client
                .show_message(MessageType::WARNING, message)
                .await;
        }
        // Sends the registration and returns: the client may take its time to answer, or
        // never answer, and nothing waits for it (a handler left waiting would hold one of
        // tower-lsp's few request slots, and indexing must not depend on the client).
        self.register_agents_md_watchers().await;
        // The first count would otherwise pay for building the encoder (≈10 ms).
        let tokenizer = self.state.config().tokenizer();
        tokio::task::spawn_blocking(move || tokenizer.warm());
        let roots = self.state.index.roots();
        self.reindex(roots).await;
    }

    /// The sessions' SessionEnd hooks run before the answer: the client waits for it
    /// before `exit`.
    async fn shutdown(&self) -> jsonrpc::Result<()> {
        if let Some(agent) = self.state.agent.get() {
            agent.end_sessions().await;
        }
        Ok(())
    }

    /// "Ask agent about this selection" on a non-empty selection, "Ask agent to fix" for
    /// each diagnostic under the cursor, and "Fix with agent" and "Dismiss" for each review
    /// finding on the range's lines. The editor runs the commands (it opens its chat with
    /// the context attached), so they are not registered as server commands; "Dismiss"
    /// alone is the server's (`execute_command`).
    async fn code_action(
        &self,
        params: CodeActionParams,
    ) -> jsonrpc::Result<Option<CodeActionResponse>> {
        let uri = params.text_document.uri;
        let range = params.range;
        let mut actions = CodeActionResponse::new();
        if range.start != range.end {
            actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: "Ask agent about this selection".into(),
                kind: Some(CodeActionKind::from(ASK_ACTION_KIND)),
                command: Some(Command {
                    title: "Ask agent about this selection".into(),
                    command: "agentls.askAboutSelection".into(),
                    arguments: Some(vec![json!(uri), json!(range)]),
                }),
                ..Default::default()
            }));
        }
        let review =
            self.state
                .findings
                .actions(&uri, &range, self.state.encoding(), &self.state.prompts());
        let reviewed = !review.is_empty();
        actions.extend(review);
        for diagnostic in params.context.diagnostics {
            // A review finding has its own actions (above).
            if diagnostic.source.as_deref() == Some(agentls_core::review::DIAGNOSTIC_SOURCE)
                && reviewed
            {
                continue;
            }
            let message = diagnostic.message.lines().next().unwrap_or("").to_string();
            let title = format!(
                "Ask agent to fix: {}",
                agentls_core::session::shorten(&message)
            );
            actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: title.clone(),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![diagnostic.clone()]),
                command: Some(Command {
                    title,
                    command: "agentls.fixDiagnostic".into(),
                    arguments: Some(vec![json!(uri), json!(diagnostic)]),
                }),
                ..Default::default()
            }));
        }
        Ok(Some(actions))
    }

    /// `agentls.review.dismiss [findingId]`: the finding's diagnostic removed.
    async fn execute_command(
        &self,
        params: ExecuteCommandParams,
    ) -> jsonrpc::Result<Option<Value>> {
        if params.command != super::review::DISMISS_COMMAND {
            return Err(super::invalid_params(format!(
                "unknown command {}",
                params.command
            )));
        }
        let Some(id) = params.arguments.first().and_then(Value::as_str) else {
            return Err(super::invalid_params(format!(
                "{} expects [findingId]",
                params.command
            )));
        };
        Ok(Some(
            json!({ "dismissed": self.state.findings.dismiss(id) }),
        ))
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        if let Ok(path) = params.text_document.uri.to_file_path() {
            if agents_md::is_instruction_file(&path) {
                self.state.agents_disk.invalidate(&path);
            }
        }
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        let sources: Vec<PathBuf> = params
            .changes
            .iter()
            .filter_map(|change| change.uri.to_file_path().ok())
            .collect();
        self.symbols_changed_on_disk(sources);
        for change in &params.changes {
            self.state.findings.touched(&change.uri);
        }
        for change in params.changes {
            match change.uri.to_file_path() {
                Ok(path) if agents_md::is_instruction_file(&path) => {
                    tracing::debug!("{} changed on disk ({:?})", path.display(), change.typ);
                    self.state.agents_disk.invalidate(&path);
                }
                _ => {}
            }
        }
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        for message in self.state.apply_settings(&params.settings) {
            self.client
                .show_message(MessageType::WARNING, message)
                .await;
        }
        // A new model may mean a new tokenizer: build it now, not on the next request.
        let tokenizer = self.state.config().tokenizer();
        tokio::task::spawn_blocking(move || tokenizer.warm());
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        let mut roots = self.state.index.roots();
        let removed: Vec<PathBuf> = params
            .event
            .removed
            .iter()
            .filter_map(|f| uri_to_dir(&f.uri))
            .collect();
        roots.retain(|r| !removed.contains(r));
        for added in params.event.added.iter().filter_map(|f| uri_to_dir(&f.uri)) {
            if !roots.contains(&added) {
                roots.push(added);
            }
        }
        self.reindex(roots).await;
    }
}
