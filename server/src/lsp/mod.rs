//! The LSP adapter: tower-lsp over stdio. It translates requests and notifications into
//! calls on the core (documents, syntax, AGENTS.md, workspace index, config) and results
//! back into LSP. It owns no logic the core could own.

mod bounded;
mod checkpoints;
mod client_request;
mod debug;
pub mod document_store;
mod host;
mod lifecycle;
mod live_turn;
mod malformed;
mod mcp_status;
mod progress;
mod review;
mod serve;
mod session;
mod sync;
mod to_proto;
pub mod transport;
mod workspace;

use crate::locks::ReadWriteLocked;
use host::LspHost;
use sync::OrderedSync;

use crate::agent::Agent;
use crate::lsp::document_store::DocumentStore;
use crate::protocol::lsp as ext;
use crate::protocol::{ClientNotification, ClientRequest};
use crate::store::agents_md::DiskFiles;
use crate::store::file_index::FileIndex;
use agentls_core::config::Config;
use agentls_core::context::AssemblyCache;
use agentls_core::position::PositionEncoding;
use agentls_core::prompts::Prompts;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use tower_lsp::jsonrpc::{self, Method};
use tower_lsp::{Client, LspService, LspServiceBuilder};

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
    let (findings, finding_jobs) = review::Findings::new();
    let (service, socket) = custom_methods(LspService::build(|client| {
        let state = Arc::new(State::new(
            documents.clone(),
            accepting_sync.clone(),
            findings.clone(),
        ));
        tokio::spawn(review::run(client.clone(), state.clone(), finding_jobs));
        Backend { client, state }
    }))
    .finish();
    let lifecycle = Arc::new(Lifecycle::default());
    let service = OrderedSync {
        inner: service,
        documents,
        accepting: accepting_sync,
        lifecycle: lifecycle.clone(),
        last_uri: Default::default(),
        findings,
    };
    // `exit` ends the session by itself: a client that keeps the pipe open must not keep us
    // alive. After stdin ends, the loop waits for every handler, even one waiting for an
    // answer the client will never send: the end of the input ends the session soon after.
    let input_closed = transport::InputClosed::default();
    let serving = serve::serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        transport::max_frame_bytes(),
        service,
        socket,
        input_closed.clone(),
    );
    tokio::select! {
        () = serving => {}
        () = lifecycle.exited.notified() => {}
        () = async {
            input_closed.wait().await;
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        } => tracing::info!("stdin closed with handlers still pending: ending the session"),
    }
    if lifecycle.shutdown_requested.load(Ordering::Acquire) {
        SessionEnd::Clean
    } else {
        SessionEnd::Unclean
    }
}

/// The handler of every custom method, by its type in `protocol::lsp` (the method name is
/// the type's), and of the transport's stand-ins for what it could not decode.
fn custom_methods(builder: LspServiceBuilder<Backend>) -> LspServiceBuilder<Backend> {
    builder
        .on::<ext::DebugDocument>(Backend::debug_document)
        .on::<ext::DebugSyntax>(Backend::debug_syntax)
        .on::<ext::DebugAgentsMd>(Backend::debug_agents_md)
        .on::<ext::DebugWorkspace>(Backend::debug_workspace)
        .on::<ext::SessionContext>(Backend::session_context)
        .on::<ext::SessionNew>(Backend::session_new)
        .on::<ext::SessionList>(Backend::session_list)
        .on::<ext::SessionCommands>(Backend::session_commands)
        .on::<ext::SessionLoad>(Backend::session_load)
        .on::<ext::SessionPrompt>(Backend::session_prompt)
        .on::<ext::SessionCancel>(Backend::session_cancel)
        .on::<ext::SessionCompact>(Backend::session_compact)
        .on::<ext::SessionSetModel>(Backend::session_set_model)
        .on::<ext::SessionSetMode>(Backend::session_set_mode)
        .on::<ext::SessionCheckpoints>(Backend::session_checkpoints)
        .on::<ext::SessionChanges>(Backend::session_changes)
        .on::<ext::SessionRevertChanges>(Backend::session_revert_changes)
        .on::<ext::SessionApplyWorktree>(Backend::session_apply_worktree)
        .on::<ext::SessionRewind>(Backend::session_rewind)
        .on::<ext::SessionFork>(Backend::session_fork)
        .on::<ext::McpStatus>(Backend::mcp_status)
        .on::<ext::SandboxStatus>(Backend::sandbox_status)
        .on::<ext::Permissions>(Backend::permissions)
        .on::<ext::Memory>(Backend::memory)
        .on::<ext::MemoryKeep>(Backend::memory_keep)
        .on::<ext::McpResources>(Backend::mcp_resources)
        .on::<ext::SessionSteer>(Backend::session_steer)
        .on::<ext::SessionUnqueue>(Backend::session_unqueue)
        .on::<ext::SessionQueue>(Backend::session_queue)
        .on::<ext::SessionBackground>(Backend::session_background)
        .on::<ext::SessionKillBackground>(Backend::session_kill_background)
        .on::<malformed::InvalidRequest>(Backend::invalid_request)
        .on_notification::<malformed::MalformedMessage>(Backend::malformed_message)
        .on_notification::<bounded::ManyFilesChanged>(Backend::many_files_changed)
}

/// Registration of a handler by the type of its method: params parsed as `R::Params`
/// (tower-lsp answers -32602 naming the serde error when they do not parse), the answer
/// `R::Result`.
trait On {
    fn on<R>(
        self,
        handler: impl for<'a> Method<&'a Backend, (R::Params,), jsonrpc::Result<R::Result>>
            + Clone
            + Send
            + Sync
            + 'static,
    ) -> Self
    where
        R: ClientRequest;

    fn on_notification<N>(
        self,
        handler: impl for<'a> Method<&'a Backend, (N::Params,), ()> + Clone + Send + Sync + 'static,
    ) -> Self
    where
        N: ClientNotification;
}

impl On for LspServiceBuilder<Backend> {
    fn on<R>(
        self,
        handler: impl for<'a> Method<&'a Backend, (R::Params,), jsonrpc::Result<R::Result>>
            + Clone
            + Send
            + Sync
            + 'static,
    ) -> Self
    where
        R: ClientRequest,
    {
        self.custom_method(R::METHOD, handler)
    }

    fn on_notification<N>(
        self,
        handler: impl for<'a> Method<&'a Backend, (N::Params,), ()> + Clone + Send + Sync + 'static,
    ) -> Self
    where
        N: ClientNotification,
    {
        self.custom_method(N::METHOD, handler)
    }
}

#[derive(Default)]
struct Lifecycle {
    shutdown_requested: AtomicBool,
    exited: tokio::sync::Notify,
}

/// What the client said it can do, as far as we use it.
#[derive(Debug, Default, Clone, Copy)]
struct ClientSupport {
    work_done_progress: bool,
    watched_files_registration: bool,
    apply_edit: bool,
    document_changes: bool,
    create_files: bool,
    /// `capabilities.editorDiagnostics` in initializationOptions: the client answers
    /// `agent/editor/diagnostics`.
    editor_diagnostics: bool,
    /// `capabilities.editorLanguageServers`: the client answers `agent/editor/lsp`.
    editor_language_servers: bool,
}

struct State {
    documents: DocumentStore,
    accepting_sync: Arc<AtomicBool>,
    config: RwLock<Config>,
    /// Config problems found in initializationOptions, reported once `initialized` arrives.
    initial_config_problems: RwLock<Vec<String>>,
    encoding: RwLock<PositionEncoding>,
    support: RwLock<ClientSupport>,
    index: FileIndex,
    /// The workspace symbol index, built after the file walk (`workspace.rs`).
    symbols: crate::symbols::Symbols,
    agents_disk: Arc<DiskFiles>,
    progress_tokens: AtomicU64,
    /// The prompt files, reloaded when `prompts.dir` may have changed.
    prompts: RwLock<Arc<Prompts>>,
    /// Token counts and outlines remembered between assemblies.
    assembly_cache: Mutex<AssemblyCache>,
    /// The agent loop, made on first use (it needs the client to talk back).
    agent: std::sync::OnceLock<Arc<Agent>>,
    /// Review findings, published as diagnostics (`review.rs`).
    findings: Arc<review::Findings>,
}

impl State {
    fn new(
        documents: DocumentStore,
        accepting_sync: Arc<AtomicBool>,
        findings: Arc<review::Findings>,
    ) -> Self {
        State {
            documents,
            accepting_sync,
            config: RwLock::new(Config::default()),
            initial_config_problems: RwLock::new(Vec::new()),
            encoding: RwLock::new(PositionEncoding::default()),
            support: RwLock::new(ClientSupport::default()),
            index: FileIndex::default(),
            symbols: crate::symbols::Symbols::default(),
            agents_disk: Arc::new(DiskFiles::default()),
            progress_tokens: AtomicU64::new(0),
            prompts: RwLock::new(Arc::new(Prompts::builtin())),
            assembly_cache: Mutex::new(AssemblyCache::default()),
            agent: std::sync::OnceLock::new(),
            findings,
        }
    }

    fn prompts(&self) -> Arc<Prompts> {
        self.prompts.read_locked().clone()
    }

    fn config(&self) -> Config {
        self.config.read_locked().clone()
    }

    fn encoding(&self) -> PositionEncoding {
        *self.encoding.read_locked()
    }

    /// Applies settings; returns the messages to show the user.
    /// The user settings file (`~/.config/agentls/settings.json`) is read each time, under
    /// the editor's settings (which win key by key).
    fn apply_settings(&self, settings: &Value) -> Vec<String> {
        let (file, file_problem) = match crate::store::settings::read() {
            Ok(file) => (file, None),
            Err(why) => (Value::Null, Some(format!("agentls: {why}; it was ignored"))),
        };
        let settings = &agentls_core::config::merge_settings(&file, settings);
        let mut config = self.config.write_locked();
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
        *self.prompts.write_locked() = Arc::new(prompts);
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
            .chain(file_problem)
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

impl Backend {
    fn agent(&self) -> Arc<Agent> {
        self.state
            .agent
            .get_or_init(|| {
                let agent = Agent::new(Arc::new(LspHost::new(self.clone())));
                mcp_status::forward(self.client.clone(), &agent);
                agent
            })
            .clone()
    }
}
