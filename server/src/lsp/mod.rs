//! The LSP adapter: tower-lsp over stdio. It translates requests and notifications into
//! calls on the core (documents, syntax, AGENTS.md, workspace index, config) and results
//! back into LSP. It owns no logic the core could own.

pub mod document_store;
pub mod transport;

use crate::agent::host::{
    FileChange, Gathered, Host, Notice, PermissionOutcome, PermissionRequest,
};
use crate::agent::{Agent, AgentError};
use crate::lsp::document_store::DocumentStore;
use crate::store::agents_md::DiskFiles;
use crate::store::file_index::{self, WorkspaceIndex};
use crate::store::files;
use agentls_core::agents_md::{self, AgentsChain, Overlay};
use agentls_core::config::Config;
use agentls_core::context::AssemblyCache;
use agentls_core::document::{DocumentSnapshot, TextChange};
use agentls_core::editor_state::{self, EditorState};
use agentls_core::history::History;
use agentls_core::inspect::{self, ActiveDocument, OtherDocument};
use agentls_core::position::{self, PositionEncoding};
use agentls_core::prompts::Prompts;
use agentls_core::syntax;
use agentls_core::tokens::Calibration;
use futures::future::{self, Either, Ready};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use tower_lsp::jsonrpc::{self, Request, Response};
use tower_lsp::lsp_types::notification::Progress;
use tower_lsp::lsp_types::request::WorkDoneProgressCreate;
use tower_lsp::lsp_types::*;
use tower_lsp::{Client, LanguageServer, LspService, Server};
use tower_service::Service;

/// How the session ended, for the process exit code: the LSP spec asks for 0 after
/// shutdown + exit and 1 for an exit without shutdown (or a client that just went away).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    Clean,
    Unclean,
}

/// Runs the server on stdin/stdout until the client sends `exit` or closes stdin.
pub async fn serve_stdio() -> SessionEnd {
    let documents = DocumentStore::spawn();
    let accepting_sync = Arc::new(AtomicBool::new(false));
    let (service, socket) = LspService::build(|client| Backend {
        client,
        state: Arc::new(State::new(documents.clone(), accepting_sync.clone())),
    })
    .custom_method("agentls/debug/document", Backend::debug_document)
    .custom_method("agentls/debug/syntax", Backend::debug_syntax)
    .custom_method("agentls/debug/agentsMd", Backend::debug_agents_md)
    .custom_method("agentls/debug/workspace", Backend::debug_workspace)
    .custom_method("agent/session/context", Backend::session_context)
    .custom_method("agent/session/new", Backend::session_new)
    .custom_method("agent/session/list", Backend::session_list)
    .custom_method("agent/session/load", Backend::session_load)
    .custom_method("agent/session/prompt", Backend::session_prompt)
    .custom_method("agent/session/cancel", Backend::session_cancel)
    .custom_method("agent/session/compact", Backend::session_compact)
    .custom_method("agent/session/setModel", Backend::session_set_model)
    .custom_method(transport::INVALID_REQUEST_METHOD, Backend::invalid_request)
    .custom_method(
        transport::MALFORMED_MESSAGE_METHOD,
        Backend::malformed_message,
    )
    .finish();
    let lifecycle = Arc::new(Lifecycle::default());
    let service = OrderedSync {
        inner: service,
        documents,
        accepting: accepting_sync,
        lifecycle: lifecycle.clone(),
    };
    // tower-lsp keeps reading stdin after `exit` until the client closes it; a client that
    // keeps the pipe open would keep us alive, so `exit` ends the session by itself.
    tokio::select! {
        () = Server::new(transport::sanitized(tokio::io::stdin()), tokio::io::stdout(), socket).serve(service) => {}
        () = lifecycle.exited.notified() => {}
    }
    if lifecycle.shutdown_requested.load(Ordering::Acquire) {
        SessionEnd::Clean
    } else {
        SessionEnd::Unclean
    }
}

#[derive(Default)]
struct Lifecycle {
    shutdown_requested: AtomicBool,
    exited: tokio::sync::Notify,
}

/// Routes didOpen/didChange/didClose to the document worker *synchronously*, in the order
/// the transport read them, before tower-lsp's concurrent handler pool can reorder them
/// (tower-lsp issue #284). Everything else goes to the tower-lsp service unchanged.
struct OrderedSync<S> {
    inner: S,
    documents: DocumentStore,
    /// False until `initialize` has answered: before that, LSP says to drop notifications,
    /// which the inner service does.
    accepting: Arc<AtomicBool>,
    lifecycle: Arc<Lifecycle>,
}

const SYNC_METHODS: [&str; 3] = [
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didClose",
];

impl<S> Service<Request> for OrderedSync<S>
where
    S: Service<Request, Response = Option<Response>>,
{
    type Response = Option<Response>;
    type Error = S::Error;
    type Future = Either<Ready<Result<Option<Response>, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match request.method() {
            "shutdown" => self
                .lifecycle
                .shutdown_requested
                .store(true, Ordering::Release),
            "exit" => self.lifecycle.exited.notify_one(),
            _ => {}
        }
        let is_sync = request.id().is_none() && SYNC_METHODS.contains(&request.method());
        if !is_sync || !self.accepting.load(Ordering::Acquire) {
            return Either::Right(self.inner.call(request));
        }
        let (method, _, params) = request.into_parts();
        route_sync_notification(&self.documents, &method, params.unwrap_or(Value::Null));
        Either::Left(future::ready(Ok(None)))
    }
}

fn route_sync_notification(documents: &DocumentStore, method: &str, params: Value) {
    fn parse<T: serde::de::DeserializeOwned>(method: &str, params: Value) -> Option<T> {
        serde_json::from_value(params)
            .map_err(|err| tracing::warn!("{method} with invalid params ignored: {err}"))
            .ok()
    }
    match method {
        "textDocument/didOpen" => {
            if let Some(p) = parse::<DidOpenTextDocumentParams>(method, params) {
                let d = p.text_document;
                documents.open(d.uri, d.language_id, d.version, d.text);
            }
        }
        "textDocument/didChange" => {
            if let Some(p) = parse::<DidChangeTextDocumentParams>(method, params) {
                let changes = p
                    .content_changes
                    .into_iter()
                    .map(|c| TextChange {
                        range: c.range,
                        text: c.text,
                    })
                    .collect();
                documents.change(p.text_document.uri, p.text_document.version, changes);
            }
        }
        "textDocument/didClose" => {
            if let Some(p) = parse::<DidCloseTextDocumentParams>(method, params) {
                documents.close(p.text_document.uri);
            }
        }
        _ => {}
    }
}

/// What the client said it can do, as far as we use it.
#[derive(Debug, Default, Clone, Copy)]
struct ClientSupport {
    work_done_progress: bool,
    watched_files_registration: bool,
    apply_edit: bool,
    document_changes: bool,
    create_files: bool,
}

struct State {
    documents: DocumentStore,
    accepting_sync: Arc<AtomicBool>,
    config: RwLock<Config>,
    /// Config problems found in initializationOptions, reported once `initialized` arrives.
    initial_config_problems: RwLock<Vec<String>>,
    encoding: RwLock<PositionEncoding>,
    support: RwLock<ClientSupport>,
    index: WorkspaceIndex,
    agents_disk: DiskFiles,
    progress_tokens: AtomicU64,
    /// The prompt files, reloaded when `prompts.dir` may have changed.
    prompts: RwLock<Arc<Prompts>>,
    /// Token counts and outlines remembered between assemblies.
    assembly_cache: Mutex<AssemblyCache>,
    /// The agent loop, made on first use (it needs the client to talk back).
    agent: std::sync::OnceLock<Arc<Agent>>,
}

impl State {
    fn new(documents: DocumentStore, accepting_sync: Arc<AtomicBool>) -> Self {
        State {
            documents,
            accepting_sync,
            config: RwLock::new(Config::default()),
            initial_config_problems: RwLock::new(Vec::new()),
            encoding: RwLock::new(PositionEncoding::default()),
            support: RwLock::new(ClientSupport::default()),
            index: WorkspaceIndex::default(),
            agents_disk: DiskFiles::default(),
            progress_tokens: AtomicU64::new(0),
            prompts: RwLock::new(Arc::new(Prompts::builtin())),
            assembly_cache: Mutex::new(AssemblyCache::default()),
            agent: std::sync::OnceLock::new(),
        }
    }

    fn prompts(&self) -> Arc<Prompts> {
        self.prompts
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn config(&self) -> Config {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn encoding(&self) -> PositionEncoding {
        *self.encoding.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies settings; returns the messages to show the user.
    fn apply_settings(&self, settings: &Value) -> Vec<String> {
        let mut config = self.config.write().unwrap_or_else(|e| e.into_inner());
        let (next, update) = Config::from_settings(&config, settings);
        for key in &update.unknown_keys {
            tracing::info!("ignoring unknown configuration key `{key}`");
        }
        self.documents.configure(
            self.encoding(),
            next.syntax_max_document_bytes,
            next.syntax_tree_budget_bytes,
        );
        let (prompts, prompt_problems) = crate::store::prompts::load(
            crate::store::prompts::override_dir(next.prompts_dir.as_deref()).as_deref(),
            next.compaction.prompt_file.as_deref(),
        );
        *self.prompts.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(prompts);
        *config = next;
        update
            .problems
            .iter()
            .map(|p| {
                format!(
                    "agentls: configuration key `{}` {}; keeping the previous value",
                    p.key, p.message
                )
            })
            .chain(prompt_problems.iter().map(|p| format!("agentls: {p}")))
            .collect()
    }
}

#[derive(Clone)]
pub struct Backend {
    client: Client,
    state: Arc<State>,
}

fn invalid_params(message: impl Into<String>) -> jsonrpc::Error {
    jsonrpc::Error {
        code: jsonrpc::ErrorCode::InvalidParams,
        message: message.into().into(),
        data: None,
    }
}

fn internal_error(message: impl Into<String>) -> jsonrpc::Error {
    jsonrpc::Error {
        code: jsonrpc::ErrorCode::InternalError,
        message: message.into().into(),
        data: None,
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionContextParams {
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    editor: Option<EditorState>,
}

/// The code action kind of "Ask agent about this selection": a refactor sub-kind, so that
/// VS Code shows it in the lightbulb and the refactor menu.
const ASK_ACTION_KIND: &str = "refactor.agentls";

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionNewParams {
    #[serde(default)]
    model: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionIdParams {
    session_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionCompactParams {
    session_id: String,
    #[serde(default)]
    instructions: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionSetModelParams {
    session_id: String,
    model: String,
    #[serde(default)]
    context_window: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionPromptParams {
    session_id: String,
    text: String,
    #[serde(default)]
    editor: Option<EditorState>,
}

fn agent_error(err: AgentError) -> jsonrpc::Error {
    if err.0.starts_with("unknown session")
        || err.0.starts_with("no model configured")
        || err.0.starts_with("invalid params")
    {
        invalid_params(err.0)
    } else {
        jsonrpc::Error {
            code: jsonrpc::ErrorCode::ServerError(-32803),
            message: err.0.into(),
            data: None,
        }
    }
}

fn roots_from(params: &InitializeParams) -> Vec<PathBuf> {
    #[allow(deprecated)] // rootPath: still sent by old clients
    let uris: Vec<Url> = match (
        &params.workspace_folders,
        &params.root_uri,
        &params.root_path,
    ) {
        (Some(folders), _, _) if !folders.is_empty() => {
            folders.iter().map(|f| f.uri.clone()).collect()
        }
        (_, Some(uri), _) => vec![uri.clone()],
        (_, _, Some(path)) => Url::from_file_path(path).into_iter().collect(),
        _ => Vec::new(),
    };
    uris.iter().filter_map(uri_to_dir).collect()
}

fn uri_to_dir(uri: &Url) -> Option<PathBuf> {
    match uri.to_file_path() {
        Ok(path) => Some(path),
        Err(()) => {
            tracing::warn!("workspace folder {uri} is not a file: uri; skipped");
            None
        }
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
        *state.encoding.write().unwrap_or_else(|e| e.into_inner()) = encoding;
        *state.support.write().unwrap_or_else(|e| e.into_inner()) = ClientSupport {
            work_done_progress: params
                .capabilities
                .window
                .as_ref()
                .and_then(|w| w.work_done_progress)
                .unwrap_or(false),
            watched_files_registration: params
                .capabilities
                .workspace
                .as_ref()
                .and_then(|w| w.did_change_watched_files)
                .and_then(|d| d.dynamic_registration)
                .unwrap_or(false),
            apply_edit: params
                .capabilities
                .workspace
                .as_ref()
                .and_then(|w| w.apply_edit)
                .unwrap_or(false),
            document_changes: params
                .capabilities
                .workspace
                .as_ref()
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.document_changes)
                .unwrap_or(false),
            create_files: params
                .capabilities
                .workspace
                .as_ref()
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.resource_operations.as_ref())
                .is_some_and(|ops| ops.contains(&ResourceOperationKind::Create)),
        };
        let problems = state.apply_settings(
            params
                .initialization_options
                .as_ref()
                .unwrap_or(&Value::Null),
        );
        *state
            .initial_config_problems
            .write()
            .unwrap_or_else(|e| e.into_inner()) = problems;
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
            capabilities: ServerCapabilities {
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
                code_action_provider: Some(CodeActionProviderCapability::Options(
                    CodeActionOptions {
                        code_action_kinds: Some(vec![
                            CodeActionKind::QUICKFIX,
                            CodeActionKind::from(ASK_ACTION_KIND),
                        ]),
                        resolve_provider: Some(false),
                        ..Default::default()
                    },
                )),
                workspace: Some(WorkspaceServerCapabilities {
                    workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                        supported: Some(true),
                        change_notifications: Some(OneOf::Left(true)),
                    }),
                    file_operations: None,
                }),
                ..Default::default()
            },
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        let problems = std::mem::take(
            &mut *self
                .state
                .initial_config_problems
                .write()
                .unwrap_or_else(|e| e.into_inner()),
        );
        for message in problems {
            self.client
                .show_message(MessageType::WARNING, message)
                .await;
        }
        self.register_agents_md_watchers().await;
        // The first count would otherwise pay for building the encoder (≈100 ms).
        let tokenizer = self.state.config().tokenizer();
        tokio::task::spawn_blocking(move || tokenizer.warm());
        let roots = self.state.index.roots();
        self.reindex(roots).await;
    }

    async fn shutdown(&self) -> jsonrpc::Result<()> {
        Ok(())
    }

    /// "Ask agent about this selection" on a non-empty selection, "Ask agent to fix" for
    /// each diagnostic under the cursor. The commands run in the editor (which opens its
    /// chat with the context attached), so they are not registered as server commands.
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
        for diagnostic in params.context.diagnostics {
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

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        if let Ok(path) = params.text_document.uri.to_file_path() {
            if agents_md::is_instruction_file(&path) {
                self.state.agents_disk.invalidate(&path);
            }
        }
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
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

impl Backend {
    async fn register_agents_md_watchers(&self) {
        let support = *self.state.support.read().unwrap_or_else(|e| e.into_inner());
        if !support.watched_files_registration {
            tracing::info!(
                "client cannot watch files for us: AGENTS.md is re-read at every lookup"
            );
            return;
        }
        let watchers = agents_md::FILE_NAMES
            .iter()
            .map(|name| FileSystemWatcher {
                glob_pattern: GlobPattern::String(format!("**/{name}")),
                kind: None,
            })
            .collect();
        let options = DidChangeWatchedFilesRegistrationOptions { watchers };
        let registration = Registration {
            id: "agentls-agents-md".into(),
            method: "workspace/didChangeWatchedFiles".into(),
            register_options: serde_json::to_value(options).ok(),
        };
        match self.client.register_capability(vec![registration]).await {
            Ok(()) => self.state.agents_disk.enable_cache(),
            Err(err) => tracing::warn!("registering AGENTS.md watchers failed: {err}"),
        }
    }

    /// Indexes `roots` in the background, reporting `$/progress` when the client can show
    /// it. Returns once the walk has started, not when it ends.
    async fn reindex(&self, roots: Vec<PathBuf>) {
        let generation = self.state.index.begin(roots.clone());
        let client = self.client.clone();
        let state = self.state.clone();
        tokio::spawn(async move {
            let progress = Progressor::start(&client, &state, "Indexing workspace").await;
            let (counts, mut counted) = tokio::sync::mpsc::unbounded_channel();
            let walk = tokio::task::spawn_blocking(move || {
                file_index::walk(&roots, |n| {
                    let _ = counts.send(n);
                })
            });
            while let Some(n) = counted.recv().await {
                progress.report(&client, format!("{n} files")).await;
            }
            let message = match walk.await {
                Ok((files, elapsed_ms)) => {
                    let message = format!("Indexed {} files in {elapsed_ms} ms", files.len());
                    if state.index.finish(generation, files, elapsed_ms) {
                        tracing::info!("{message}");
                    }
                    message
                }
                Err(err) => {
                    tracing::error!("workspace index failed: {err}");
                    state.index.finish(generation, Vec::new(), 0);
                    "Indexing failed".to_string()
                }
            };
            progress.end(&client, message).await;
        });
    }

    async fn snapshot(&self, uri: &Url) -> jsonrpc::Result<DocumentSnapshot> {
        self.state
            .documents
            .snapshot(uri)
            .await
            .ok_or_else(|| invalid_params(format!("unknown document {uri}: it is not open")))
    }

    fn to_byte(
        &self,
        uri: &Url,
        doc: &DocumentSnapshot,
        position: Position,
    ) -> jsonrpc::Result<usize> {
        position::position_to_byte(&doc.rope, position, self.state.encoding())
            .map_err(|err| invalid_params(format!("{uri}: {err}")))
    }

    /// The AGENTS.md chain for a directory, with open buffers winning over the disk.
    pub async fn agents_chain(&self, dir: PathBuf) -> AgentsChain {
        let buffers: HashMap<PathBuf, String> = self
            .state
            .documents
            .matching(|uri| {
                uri.to_file_path()
                    .is_ok_and(|p| agents_md::is_instruction_file(&p))
            })
            .await
            .into_iter()
            .filter_map(|(uri, doc)| Some((uri.to_file_path().ok()?, doc.rope.to_string())))
            .collect();
        let state = self.state.clone();
        let max_bytes = state.config().agents_md_max_bytes;
        let root = state.index.root_of(&dir);
        let chain = tokio::task::spawn_blocking(move || {
            let overlay = Overlay {
                buffers,
                below: &state.agents_disk,
            };
            agents_md::collect(&dir, root.as_deref(), &overlay, max_bytes)
        })
        .await;
        chain.unwrap_or_else(|err| {
            tracing::error!("AGENTS.md lookup failed: {err}");
            AgentsChain {
                dir: PathBuf::new(),
                git_root: None,
                files: Vec::new(),
                text: String::new(),
                omitted_bytes: 0,
                warnings: vec![format!("AGENTS.md lookup failed: {err}")],
            }
        })
    }

    /// A path the client named must lie in the workspace (when there is one).
    fn check_in_workspace(&self, path: &Path) -> jsonrpc::Result<()> {
        let roots = self.state.index.roots();
        if roots.is_empty() || self.state.index.root_of(path).is_some() {
            Ok(())
        } else {
            Err(invalid_params(format!(
                "{} is outside the workspace ({})",
                path.display(),
                roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    }

    fn agent(&self) -> Arc<Agent> {
        self.state
            .agent
            .get_or_init(|| Agent::new(Arc::new(LspHost::new(self.clone()))))
            .clone()
    }

    async fn session_new(&self, params: Option<SessionNewParams>) -> jsonrpc::Result<Value> {
        let model = params.unwrap_or_default().model;
        let id = self.agent().new_session(model).await.map_err(agent_error)?;
        Ok(json!({ "sessionId": id }))
    }

    async fn session_list(&self, _: Option<Value>) -> jsonrpc::Result<Value> {
        let sessions = self.agent().list().await.map_err(agent_error)?;
        Ok(json!({ "sessions": sessions }))
    }

    async fn session_load(&self, params: SessionIdParams) -> jsonrpc::Result<Value> {
        let items = self
            .agent()
            .load(&params.session_id)
            .await
            .map_err(agent_error)?;
        Ok(json!({ "sessionId": params.session_id, "items": items }))
    }

    async fn session_prompt(&self, params: SessionPromptParams) -> jsonrpc::Result<Value> {
        let turn_id = self
            .agent()
            .prompt(&params.session_id, params.text, params.editor)
            .await
            .map_err(agent_error)?;
        Ok(json!({ "turnId": turn_id }))
    }

    async fn session_cancel(&self, params: SessionIdParams) -> jsonrpc::Result<Value> {
        let cancelled = self
            .agent()
            .cancel(&params.session_id)
            .await
            .map_err(agent_error)?;
        Ok(json!({ "cancelled": cancelled }))
    }

    async fn session_compact(&self, params: SessionCompactParams) -> jsonrpc::Result<Value> {
        let outcome = self
            .agent()
            .compact(&params.session_id, params.instructions)
            .await
            .map_err(agent_error)?;
        Ok(json!(outcome))
    }

    async fn session_set_model(&self, params: SessionSetModelParams) -> jsonrpc::Result<Value> {
        if params.context_window == Some(0) {
            return Err(invalid_params("contextWindow must be a positive integer"));
        }
        let compacted = self
            .agent()
            .set_model(&params.session_id, params.model, params.context_window)
            .await
            .map_err(agent_error)?;
        Ok(json!({ "compacted": compacted }))
    }

    /// `agent/session/context`: what the model would be sent next, section by section.
    async fn session_context(
        &self,
        params: Option<SessionContextParams>,
    ) -> jsonrpc::Result<Value> {
        // Absent or null params: a fresh session, no editor.
        let params = params.unwrap_or_default();
        let config = self.state.config();
        let session = match &params.session_id {
            Some(id) => Some(self.agent().history_of(id).await.map_err(agent_error)?),
            None => None,
        };
        let gathered = self
            .gather(params.editor.as_ref())
            .await
            .map_err(invalid_params)?;
        let state = self.state.clone();
        let report = tokio::task::spawn_blocking(move || {
            let prompts = state.prompts();
            let (history, calibration, config) = match session {
                Some((history, calibration, model)) => {
                    let mut config = config;
                    if !model.is_empty() {
                        config.model = Some(model);
                    }
                    (history, calibration, config)
                }
                None => (
                    History::new(config.tokenizer()),
                    Calibration::default(),
                    config,
                ),
            };
            let inputs = gathered.inputs(&config, &prompts, &history, calibration);
            let mut cache = state
                .assembly_cache
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            inspect::report(&inputs, "", &mut cache)
        })
        .await
        .map_err(|err| internal_error(format!("context assembly failed: {err}")))?;
        serde_json::to_value(report).map_err(|err| internal_error(err.to_string()))
    }

    /// The context inputs of a turn: the editor's active document (open buffer, else the
    /// file on disk when it is in the workspace), the other open buffers, the AGENTS.md
    /// chain of the active file's directory (else the first root's), the skills, the
    /// environment. An editor state that names an unusable document is an error.
    pub async fn gather(&self, editor: Option<&EditorState>) -> Result<Gathered, String> {
        let state = self.state.clone();
        let config = state.config();
        let roots = state.index.roots();
        let active = match editor {
            Some(editor) => Some(
                self.active_document(editor, &roots)
                    .await
                    .map_err(|e| e.message.to_string())?,
            ),
            None => None,
        };
        let agents_dir = match &active {
            Some((path, _)) => path.parent().map(Path::to_path_buf),
            None => roots.first().cloned(),
        };
        let agents = match agents_dir {
            Some(dir) => Some(self.agents_chain(dir).await),
            None => None,
        };
        let active_uri = editor.map(|e| e.uri.clone());
        let others: Vec<OtherDocument> = state
            .documents
            .matching(|_| true)
            .await
            .into_iter()
            .filter(|(uri, _)| Some(uri) != active_uri.as_ref())
            .map(|(uri, snapshot)| OtherDocument {
                display_path: uri
                    .to_file_path()
                    .map(|p| inspect::display_path(&p, &roots))
                    .unwrap_or_else(|()| uri.to_string()),
                snapshot,
            })
            .collect();
        let skill_roots = roots.clone();
        let skills =
            tokio::task::spawn_blocking(move || crate::store::skills::discover(&skill_roots))
                .await
                .unwrap_or_default();
        let cwd = roots
            .first()
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_default();
        let environment = crate::store::environment::current(
            cwd,
            roots
                .iter()
                .map(|r| r.to_string_lossy().into_owned())
                .collect(),
            &config.approval,
        );
        Ok(Gathered {
            environment,
            agents,
            skills,
            active: active.map(|(_, doc)| doc),
            others,
        })
    }

    /// The document an editor state names: the open buffer, else the file on disk when it
    /// lies in the workspace and is text.
    async fn active_document(
        &self,
        editor: &EditorState,
        roots: &[PathBuf],
    ) -> jsonrpc::Result<(PathBuf, ActiveDocument)> {
        let uri = &editor.uri;
        let path = uri
            .to_file_path()
            .map_err(|()| invalid_params(format!("{uri} is not a file: uri")))?;
        let snapshot = match self.state.documents.snapshot(uri).await {
            Some(snapshot) => snapshot,
            None => {
                if self.state.index.root_of(&path).is_none() {
                    return Err(invalid_params(format!(
                        "{uri} is not open and not inside the workspace ({})",
                        roots
                            .iter()
                            .map(|r| r.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
                let max_syntax = self.state.config().syntax_max_document_bytes;
                let disk_path = path.clone();
                tokio::task::spawn_blocking(move || files::read_document(&disk_path, max_syntax))
                    .await
                    .map_err(|err| internal_error(err.to_string()))?
                    .map_err(|refused| invalid_params(refused.0))?
            }
        };
        let resolved = editor_state::resolve(editor, &snapshot.rope, self.state.encoding());
        let document = ActiveDocument {
            display_path: inspect::display_path(&path, roots),
            snapshot,
            editor: resolved,
        };
        Ok((path, document))
    }

    async fn debug_document(&self, params: DebugDocumentParams) -> jsonrpc::Result<Value> {
        let doc = self.snapshot(&params.uri).await?;
        let encoding = self.state.encoding();
        let text = doc.rope.to_string();
        let outline = match &doc.tree {
            Some(tree) => syntax::outline(doc.language, text.as_bytes(), tree),
            None => Vec::new(),
        };
        let outline: Vec<Value> = outline
            .iter()
            .map(|s| symbol_json(&doc, s, encoding, 0))
            .collect();
        let mut result = json!({
            "uri": params.uri,
            "text": text,
            "version": doc.version,
            "language": doc.language.id(),
            "positionEncoding": encoding.kind(),
            "lineCount": position::line_count(&doc.rope),
            "hasSyntaxTree": doc.tree.is_some(),
            "syntaxErrors": doc.tree.as_ref().is_some_and(|t| t.root_node().has_error()),
            "outline": outline,
        });
        if params.sexp {
            result["sexp"] = json!(doc.tree.as_ref().map(|t| t.root_node().to_sexp()));
        }
        Ok(result)
    }

    async fn debug_syntax(&self, params: DebugSyntaxParams) -> jsonrpc::Result<Value> {
        let uri = &params.uri;
        let doc = self.snapshot(uri).await?;
        let encoding = self.state.encoding();
        let text = doc.rope.to_string();
        let mut result = json!({ "enclosingSymbol": null, "identifiers": [] });
        let Some(tree) = &doc.tree else {
            return Ok(result);
        };
        if let Some(position) = params.position {
            let byte = self.to_byte(uri, &doc, position)?;
            if let Some(found) = syntax::enclosing_symbol(doc.language, text.as_bytes(), tree, byte)
            {
                result["enclosingSymbol"] = json!({
                    "name": found.name,
                    "kind": found.kind,
                    "path": found.path,
                    "range": position::byte_range_to_range(&doc.rope, found.range, encoding),
                    "text": found.text,
                });
            }
        }
        if let Some(range) = params.range {
            let start = self.to_byte(uri, &doc, range.start)?;
            let end = self.to_byte(uri, &doc, range.end)?;
            let identifiers =
                syntax::referenced_identifiers(doc.language, text.as_bytes(), tree, start..end);
            result["identifiers"] = json!(identifiers);
        }
        Ok(result)
    }

    async fn debug_agents_md(&self, params: DebugAgentsMdParams) -> jsonrpc::Result<Value> {
        let dir = match params.uri {
            Some(uri) => {
                let path = uri
                    .to_file_path()
                    .map_err(|()| invalid_params(format!("{uri} is not a file: uri")))?;
                self.check_in_workspace(&path)?;
                if path.is_dir() {
                    path
                } else {
                    path.parent().map(Path::to_path_buf).unwrap_or(path)
                }
            }
            None => match self.state.index.roots().first() {
                Some(root) => root.clone(),
                None => return Err(invalid_params("no uri given and no workspace root")),
            },
        };
        let chain = self.agents_chain(dir).await;
        serde_json::to_value(chain).map_err(|err| jsonrpc::Error {
            code: jsonrpc::ErrorCode::InternalError,
            message: err.to_string().into(),
            data: None,
        })
    }

    /// Stands in for a request the transport could not decode (see transport.rs).
    async fn invalid_request(&self, params: MalformedParams) -> jsonrpc::Result<Value> {
        Err(jsonrpc::Error {
            code: jsonrpc::ErrorCode::InvalidRequest,
            message: params.error.into(),
            data: None,
        })
    }

    /// Stands in for a message the transport could not decode and could not answer.
    async fn malformed_message(&self, params: MalformedParams) {
        self.client
            .log_message(
                MessageType::WARNING,
                format!("agentls: ignored a malformed message: {}", params.error),
            )
            .await;
    }

    async fn debug_workspace(&self, _: Value) -> jsonrpc::Result<Value> {
        let index = self.state.index.state();
        let config = self.state.config();
        Ok(json!({
            "roots": index.roots,
            "status": index.status,
            "fileCount": index.files.len(),
            "indexMillis": index.elapsed_ms,
            "positionEncoding": self.state.encoding().kind(),
            "agentsMdCached": self.state.support.read().unwrap_or_else(|e| e.into_inner()).watched_files_registration,
            "config": {
                "agentsMd": { "maxBytes": config.agents_md_max_bytes },
                "syntax": { "maxDocumentBytes": config.syntax_max_document_bytes },
            },
        }))
    }
}

/// Outline levels reported; deeper children are cut so that converting and serializing a
/// pathological nesting (thousands of nested modules) cannot exhaust the stack, and the
/// answer stays within the nesting limits of JSON parsers (serde_json stops at 128).
const MAX_OUTLINE_DEPTH: usize = 32;

fn symbol_json(
    doc: &DocumentSnapshot,
    symbol: &syntax::Symbol,
    encoding: PositionEncoding,
    depth: usize,
) -> Value {
    let children: Vec<Value> = if depth + 1 < MAX_OUTLINE_DEPTH {
        symbol
            .children
            .iter()
            .map(|c| symbol_json(doc, c, encoding, depth + 1))
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "name": symbol.name,
        "kind": symbol.kind,
        "range": position::byte_range_to_range(&doc.rope, symbol.range.clone(), encoding),
        "selectionRange": position::byte_range_to_range(&doc.rope, symbol.selection_range.clone(), encoding),
        "children": children,
    })
}

#[derive(Deserialize)]
struct DebugDocumentParams {
    uri: Url,
    /// Include the syntax tree as an s-expression.
    #[serde(default)]
    sexp: bool,
}

#[derive(Deserialize)]
struct DebugSyntaxParams {
    uri: Url,
    position: Option<Position>,
    range: Option<tower_lsp::lsp_types::Range>,
}

#[derive(Deserialize)]
struct MalformedParams {
    error: String,
}

#[derive(Deserialize, Serialize)]
struct DebugAgentsMdParams {
    uri: Option<Url>,
}

/// `$/progress` for one piece of work, or nothing when the client cannot show progress.
struct Progressor {
    token: Option<NumberOrString>,
}

impl Progressor {
    async fn start(client: &Client, state: &State, title: &str) -> Progressor {
        let support = *state.support.read().unwrap_or_else(|e| e.into_inner());
        if !support.work_done_progress {
            return Progressor { token: None };
        }
        let n = state.progress_tokens.fetch_add(1, Ordering::Relaxed);
        let token = NumberOrString::String(format!("agentls/progress/{n}"));
        let created = client
            .send_request::<WorkDoneProgressCreate>(WorkDoneProgressCreateParams {
                token: token.clone(),
            })
            .await;
        if let Err(err) = created {
            tracing::debug!("client refused a progress token: {err}");
            return Progressor { token: None };
        }
        let progress = Progressor { token: Some(token) };
        progress
            .send(
                client,
                WorkDoneProgress::Begin(WorkDoneProgressBegin {
                    title: title.into(),
                    cancellable: Some(false),
                    message: None,
                    percentage: None,
                }),
            )
            .await;
        progress
    }

    async fn send(&self, client: &Client, value: WorkDoneProgress) {
        if let Some(token) = &self.token {
            client
                .send_notification::<Progress>(ProgressParams {
                    token: token.clone(),
                    value: ProgressParamsValue::WorkDone(value),
                })
                .await;
        }
    }

    async fn report(&self, client: &Client, message: String) {
        self.send(
            client,
            WorkDoneProgress::Report(WorkDoneProgressReport {
                cancellable: None,
                message: Some(message),
                percentage: None,
            }),
        )
        .await;
    }

    async fn end(&self, client: &Client, message: String) {
        self.send(
            client,
            WorkDoneProgress::End(WorkDoneProgressEnd {
                message: Some(message),
            }),
        )
        .await;
    }
}

/// `agent/session/update`, `agent/status` and `agent/session/requestPermission`.
enum SessionUpdate {}
impl notification::Notification for SessionUpdate {
    type Params = Value;
    const METHOD: &'static str = "agent/session/update";
}
enum AgentStatus {}
impl notification::Notification for AgentStatus {
    type Params = Value;
    const METHOD: &'static str = "agent/status";
}
enum RequestPermission {}
impl request::Request for RequestPermission {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "agent/session/requestPermission";
}

/// The agent loop's host over LSP: context from the document store, edits through
/// `workspace/applyEdit`, approvals through `agent/session/requestPermission`, updates as
/// notifications sent in order by one task.
struct LspHost {
    backend: Backend,
    notices: tokio::sync::mpsc::UnboundedSender<Outgoing>,
    /// Progress reports begun and not ended: the sender ends each with its message.
    progress: std::sync::Mutex<HashMap<String, tokio::sync::oneshot::Sender<String>>>,
}

/// What the notice task sends, in order.
enum Outgoing {
    Notice(Notice),
    /// Answered once every notice queued before it was handed to the client: a server
    /// request (requestPermission, applyEdit) waits for it so it never overtakes the
    /// `toolCall` it is about.
    Flush(tokio::sync::oneshot::Sender<()>),
}

impl LspHost {
    fn new(backend: Backend) -> LspHost {
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
                    } => {
                        client
                            .send_notification::<SessionUpdate>(json!({
                                "sessionId": session_id,
                                "turnId": turn_id,
                                "update": update,
                            }))
                            .await
                    }
                    Notice::Status(status) => client.send_notification::<AgentStatus>(status).await,
                }
            }
        });
        LspHost {
            backend,
            notices,
            progress: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Waits until every notice queued so far was handed to the client.
    async fn flush_notices(&self) {
        let (done, flushed) = tokio::sync::oneshot::channel();
        if self.notices.send(Outgoing::Flush(done)).is_ok() {
            let _ = flushed.await;
        }
    }

    fn support(&self) -> ClientSupport {
        *self
            .backend
            .state
            .support
            .read()
            .unwrap_or_else(|e| e.into_inner())
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

    async fn buffer(&self, path: &Path) -> Option<(String, i32)> {
        let uri = Url::from_file_path(path).ok()?;
        let snapshot = self.backend.state.documents.snapshot(&uri).await?;
        Some((snapshot.rope.to_string(), snapshot.version))
    }

    async fn apply(&self, change: FileChange) -> Result<(), String> {
        let support = self.support();
        if !support.apply_edit {
            return Err("the editor does not support workspace/applyEdit".into());
        }
        let encoding = self.backend.state.encoding();
        let (path, version, edits, create) = match change {
            FileChange::Edit {
                path,
                version,
                original,
                range,
                new_text,
            } => {
                let rope = ropey::Rope::from_str(&original);
                let range = position::byte_range_to_range(&rope, range, encoding);
                (path, version, vec![TextEdit { range, new_text }], false)
            }
            FileChange::Write {
                path,
                version,
                original,
                content,
            } => {
                let create = original.is_none();
                let rope = ropey::Rope::from_str(original.as_deref().unwrap_or(""));
                let end = position::byte_to_position(&rope, rope.len_bytes(), encoding);
                let range = Range::new(Position::new(0, 0), end);
                (
                    path,
                    version,
                    vec![TextEdit {
                        range,
                        new_text: content,
                    }],
                    create,
                )
            }
        };
        let uri = Url::from_file_path(&path)
            .map_err(|()| format!("{} has no file: uri", path.display()))?;
        let edit = if support.document_changes {
            let text_edit = TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier {
                    uri: uri.clone(),
                    version,
                },
                edits: edits.into_iter().map(OneOf::Left).collect(),
            };
            let mut operations = Vec::new();
            if create {
                if !support.create_files {
                    return Err("the editor cannot create files through workspace/applyEdit (no resourceOperations: create)".into());
                }
                operations.push(DocumentChangeOperation::Op(ResourceOp::Create(
                    CreateFile {
                        uri: uri.clone(),
                        options: Some(CreateFileOptions {
                            overwrite: Some(false),
                            ignore_if_exists: Some(true),
                        }),
                        annotation_id: None,
                    },
                )));
            }
            operations.push(DocumentChangeOperation::Edit(text_edit));
            WorkspaceEdit {
                document_changes: Some(DocumentChanges::Operations(operations)),
                ..Default::default()
            }
        } else {
            if create {
                return Err("the editor cannot create files through workspace/applyEdit (no documentChanges)".into());
            }
            WorkspaceEdit {
                changes: Some(HashMap::from([(uri, edits)])),
                ..Default::default()
            }
        };
        self.flush_notices().await;
        match self.backend.client.apply_edit(edit).await {
            Ok(response) if response.applied => Ok(()),
            Ok(response) => Err(response
                .failure_reason
                .unwrap_or_else(|| "the editor refused the edit".into())),
            Err(err) => Err(format!("workspace/applyEdit failed: {}", err.message)),
        }
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionOutcome {
        let timeout = std::time::Duration::from_millis(self.config().approval_timeout_ms);
        let options = request.options.clone();
        let params = serde_json::to_value(&request).unwrap_or(Value::Null);
        self.flush_notices().await;
        let answer = tokio::time::timeout(
            timeout,
            self.backend
                .client
                .send_request::<RequestPermission>(params),
        )
        .await;
        let kind = match answer {
            Ok(Ok(answer)) => answer["outcome"]["optionId"]
                .as_str()
                .and_then(|id| options.iter().find(|o| o.option_id == id))
                .map(|o| o.kind.clone()),
            Ok(Err(err)) => {
                tracing::warn!(
                    "requestPermission failed: {}; counted as a rejection",
                    err.message
                );
                None
            }
            Err(_) => {
                tracing::warn!(
                    "requestPermission got no answer in {timeout:?}; counted as a rejection"
                );
                None
            }
        };
        PermissionOutcome {
            kind: kind.unwrap_or_else(|| "cancelled".into()),
        }
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
        let mut running = self.progress.lock().unwrap_or_else(|e| e.into_inner());
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
