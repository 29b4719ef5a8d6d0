//! The agent loop: sessions, their prompt queues, and turns (model ↔ tools) driven through a
//! [`Host`]. Each session has one worker task that runs its turns in order; a turn's
//! events are written to the session log before the client hears of them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::host::{FileChange, Host, Notice, PermissionOption, PermissionRequest};
use crate::provider::Provider;
use crate::store::files;
use crate::store::session_log::{self, SessionLog, SessionStore};
use crate::tools::{self, Workspace};
use agentls_core::approval::{self, Gate};
use agentls_core::context::AssemblyCache;
use agentls_core::editor_state::EditorState;
use agentls_core::history::{Entry, Item};
use agentls_core::inspect;
use agentls_core::models;
use agentls_core::prompt_text::{self, SlashCommand};
use agentls_core::session::{self, Event, Session};
use agentls_core::tokens::Calibration;
use agentls_core::tokens::TokenizerKind;
use agentls_core::tool_info::{self, ToolKind};
use agentls_core::truncate::{truncate_middle, TruncationPolicy};
use agentls_core::wire::{ErrorKind, ProviderConfig, ProviderEvent, ProviderKind, Usage};

mod compact;
pub mod host;
pub use compact::CompactionOutcome;
use compact::Prepared;

/// Shell output kept in a tool result before the history's own truncation.
const SHELL_OUTPUT_BYTES: usize = 64 * 1024;
const SHELL_DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentError(pub String);

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

struct Prompt {
    turn_id: String,
    text: String,
    editor: Option<EditorState>,
}

struct Live {
    session: Session,
    log: SessionLog,
}

/// Work for a session's worker, run one at a time in arrival order.
enum Job {
    Prompt(Prompt),
    /// `agent/session/compact`, `/compact`.
    Compact {
        instructions: Option<String>,
        reply: tokio::sync::oneshot::Sender<Result<CompactionOutcome, AgentError>>,
    },
    /// `agent/session/setModel`, `/model`.
    SetModel {
        model: String,
        context_window: Option<usize>,
        reply: tokio::sync::oneshot::Sender<Result<bool, AgentError>>,
    },
}

/// Which turns wait and which runs: one lock, so that a cancel sees a consistent picture.
#[derive(Default)]
struct QueueState {
    /// Turn ids queued and not started.
    waiting: Vec<String>,
    /// The running job's turn id and cancellation.
    running: Option<(String, CancellationToken)>,
    /// Queued turns a cancel dropped: the worker skips them.
    dropped: std::collections::HashSet<String>,
}

struct SessionHandle {
    id: String,
    live: tokio::sync::Mutex<Live>,
    queue: mpsc::UnboundedSender<Job>,
    state: Mutex<QueueState>,
    /// A summary prepared in the background for the next compaction.
    prepared: Mutex<Prepared>,
    /// Signalled when a background preparation ends.
    prepared_done: tokio::sync::Notify,
    /// Held while a turn sends an update and while a cancel takes effect: after a cancel
    /// no update of the cancelled turn can be on its way.
    updates: Mutex<()>,
}

impl SessionHandle {
    fn state(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks `turn_id` as running unless a cancel dropped it; its cancellation token.
    fn start(&self, turn_id: &str) -> Option<CancellationToken> {
        let mut state = self.state();
        state.waiting.retain(|t| t != turn_id);
        if state.dropped.remove(turn_id) {
            return None;
        }
        let token = CancellationToken::new();
        state.running = Some((turn_id.to_string(), token.clone()));
        Some(token)
    }

    fn stop(&self) {
        self.state().running = None;
    }
}

pub struct Agent {
    host: Arc<dyn Host>,
    sessions: Mutex<HashMap<String, Arc<SessionHandle>>>,
    cache: Arc<Mutex<AssemblyCache>>,
    provider: Mutex<Option<(String, Arc<Provider>)>>,
}

#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub session_id: String,
    pub title: String,
    pub updated_at: u64,
    pub turns: u32,
}

impl Agent {
    pub fn new(host: Arc<dyn Host>) -> Arc<Agent> {
        Arc::new(Agent {
            host,
            sessions: Mutex::new(HashMap::new()),
            cache: Arc::new(Mutex::new(AssemblyCache::default())),
            provider: Mutex::new(None),
        })
    }

    fn store(&self) -> Result<SessionStore, AgentError> {
        let roots = self.host.roots();
        let workspace = roots
            .first()
            .cloned()
            .or_else(|| std::env::current_dir().ok())
            .ok_or_else(|| AgentError("no workspace root and no current directory".into()))?;
        let state = session_log::state_dir(self.host.config().state_dir.as_deref());
        Ok(SessionStore::for_workspace(&state, &workspace))
    }

    fn default_model(&self) -> String {
        self.host.config().model.unwrap_or_default()
    }

    /// `agent/session/new`.
    pub async fn new_session(
        self: &Arc<Self>,
        model: Option<String>,
    ) -> Result<String, AgentError> {
        let store = self.store()?;
        let id = session_log::new_session_id();
        let model = model
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| self.default_model());
        let config = self.host.config();
        let workspace = self
            .host
            .roots()
            .first()
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut log = store.open(&id).map_err(|e| {
            AgentError(format!(
                "cannot create the session log in {}: {e}",
                store.dir().display()
            ))
        })?;
        let started = Event::SessionStarted {
            session_id: id.clone(),
            model: model.clone(),
            workspace: workspace.clone(),
            at: session_log::now_millis(),
        };
        log.append(&started)
            .and_then(|()| log.sync())
            .map_err(|e| AgentError(format!("cannot write {}: {e}", log.path().display())))?;
        let tokenizer = tokenizer_for(&config, &model);
        let mut session = Session::new(&id, &model, &workspace, tokenizer);
        session.apply(&started, &self.host.prompts());
        self.spawn_worker(id.clone(), Live { session, log });
        Ok(id)
    }

    /// The session, from memory or replayed from its log.
    async fn handle(self: &Arc<Self>, id: &str) -> Result<Arc<SessionHandle>, AgentError> {
        if let Some(handle) = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
        {
            return Ok(handle.clone());
        }
        let store = self.store()?;
        if !store.exists(id) {
            return Err(AgentError(format!("unknown session {id:?}")));
        }
        let contents = store
            .read(id)
            .map_err(|e| AgentError(format!("cannot read session {id}: {e}")))?;
        for warning in &contents.warnings {
            tracing::warn!("session {id}: {warning}");
            // The user should know their session log was damaged, even if nothing was lost
            // but the torn line.
            self.host
                .show_warning(format!("agentls: session {id}: {warning}"));
        }
        let config = self.host.config();
        let prompts = self.host.prompts();
        let model = contents
            .events
            .iter()
            .rev()
            .find_map(|e| match e {
                Event::ModelChanged { model, .. } | Event::SessionStarted { model, .. } => {
                    Some(model.clone())
                }
                _ => None,
            })
            .unwrap_or_default();
        let tokenizer = tokenizer_for(&config, &model);
        let mut session = Session::replay(id, &contents.events, tokenizer, &prompts);
        let log = store
            .open(id)
            .map_err(|e| AgentError(format!("cannot open session {id}: {e}")))?;
        let mut live = Live { session, log };
        // A turn left open by a crash is closed now, so the log says how it ended.
        if let Some(turn_id) = live.session.open_turn.clone() {
            let report = live.session.history.prompt_items(&prompts).1;
            let mut events = Vec::new();
            for call_id in &report.aborted_calls {
                if let Some(name) = call_name(&live.session, call_id) {
                    let entry = live.session.history.entry_for(
                        Item::ToolOutput {
                            call_id: call_id.clone(),
                            name,
                            content: prompts
                                .aborted(agentls_core::prompts::AbortReason::ServerStopped),
                            success: false,
                        },
                        config.tool_output_limit,
                        &prompts,
                    );
                    events.push(Event::Item {
                        turn_id: turn_id.clone(),
                        entry,
                    });
                }
            }
            events.push(Event::Error {
                turn_id: turn_id.clone(),
                message: "agentls stopped during this turn (a crash or a kill); the turn was closed when the session was loaded again".into(),
                retryable: true,
            });
            events.push(Event::TurnEnded {
                turn_id,
                stop_reason: "error".into(),
                at: session_log::now_millis(),
            });
            for event in &events {
                if let Err(err) = live.log.append(event) {
                    tracing::error!("session {id}: cannot close the interrupted turn: {err}");
                    break;
                }
                live.session.apply(event, &prompts);
            }
            let _ = live.log.sync();
        }
        session = live.session;
        let live = Live {
            session,
            log: live.log,
        };
        Ok(self.spawn_worker(id.to_string(), live))
    }

    fn spawn_worker(self: &Arc<Self>, id: String, live: Live) -> Arc<SessionHandle> {
        let (queue, mut jobs) = mpsc::unbounded_channel::<Job>();
        let handle = Arc::new(SessionHandle {
            id: id.clone(),
            live: tokio::sync::Mutex::new(live),
            queue,
            state: Mutex::new(QueueState::default()),
            prepared: Mutex::new(Prepared::default()),
            prepared_done: tokio::sync::Notify::new(),
            updates: Mutex::new(()),
        });
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = sessions.get(&id) {
            // Loaded twice concurrently: keep the first.
            return existing.clone();
        }
        sessions.insert(id, handle.clone());
        let agent = Arc::downgrade(self);
        let worker = handle.clone();
        tokio::spawn(async move {
            while let Some(job) = jobs.recv().await {
                let Some(agent) = agent.upgrade() else { break };
                match job {
                    Job::Prompt(prompt) => agent.run_turn(&worker, prompt).await,
                    Job::Compact {
                        instructions,
                        reply,
                    } => {
                        let result = agent.compact_job(&worker, instructions).await;
                        let _ = reply.send(result);
                    }
                    Job::SetModel {
                        model,
                        context_window,
                        reply,
                    } => {
                        let result = agent.set_model_job(&worker, model, context_window).await;
                        let _ = reply.send(result);
                    }
                }
            }
        });
        handle
    }

    /// `agent/session/list`: newest first.
    pub async fn list(self: &Arc<Self>) -> Result<Vec<SessionSummary>, AgentError> {
        let store = self.store()?;
        let mut summaries = Vec::new();
        for id in store.ids() {
            let loaded = self
                .sessions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&id)
                .cloned();
            let summary = match loaded {
                Some(handle) => {
                    let live = handle.live.lock().await;
                    summary(&live.session)
                }
                None => match store.read(&id) {
                    Ok(contents) => {
                        let session = Session::replay(
                            &id,
                            &contents.events,
                            Default::default(),
                            &self.host.prompts(),
                        );
                        summary(&session)
                    }
                    Err(err) => {
                        tracing::warn!("skipping session {id}: {err}");
                        continue;
                    }
                },
            };
            summaries.push(summary);
        }
        summaries.sort_by_key(|s| std::cmp::Reverse(s.updated_at));
        Ok(summaries)
    }

    /// The session's history, calibration and model (for `agent/session/context`).
    pub async fn history_of(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<(agentls_core::history::History, Calibration, String), AgentError> {
        let handle = self.handle(id).await?;
        let live = handle.live.lock().await;
        Ok((
            live.session.history.clone(),
            live.session.calibration,
            live.session.model.clone(),
        ))
    }

    /// `agent/session/load`: the transcript to render.
    pub async fn load(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<Vec<session::TranscriptItem>, AgentError> {
        let handle = self.handle(id).await?;
        let _live = handle.live.lock().await;
        let contents = self
            .store()?
            .read(id)
            .map_err(|e| AgentError(format!("cannot read session {id}: {e}")))?;
        Ok(session::transcript(&contents.events))
    }

    /// `agent/session/prompt`: queues the prompt and returns its turn id at once.
    pub async fn prompt(
        self: &Arc<Self>,
        id: &str,
        text: String,
        editor: Option<EditorState>,
    ) -> Result<String, AgentError> {
        let handle = self.handle(id).await?;
        let turn_id = format!("turn-{}", session_log::new_session_id());
        let busy = {
            let mut state = handle.state();
            let busy = state.running.is_some() || !state.waiting.is_empty();
            state.waiting.push(turn_id.clone());
            busy
        };
        if busy {
            self.update(id, &turn_id, json!({"kind": "queued"}));
        }
        handle
            .queue
            .send(Job::Prompt(Prompt {
                turn_id: turn_id.clone(),
                text,
                editor,
            }))
            .map_err(|_| AgentError(format!("session {id} is shutting down")))?;
        Ok(turn_id)
    }

    /// `agent/session/cancel`: stops the running turn and drops the queued ones.
    pub async fn cancel(self: &Arc<Self>, id: &str) -> Result<bool, AgentError> {
        let handle = self.handle(id).await?;
        let (dropped, running) = {
            let mut state = handle.state();
            let dropped = std::mem::take(&mut state.waiting);
            // The worker skips them when it gets to them.
            state.dropped.extend(dropped.iter().cloned());
            (
                dropped,
                state.running.as_ref().map(|(_, token)| token.clone()),
            )
        };
        for turn_id in &dropped {
            self.update(
                id,
                turn_id,
                json!({"kind": "turnEnd", "stopReason": "cancelled"}),
            );
        }
        let cancelled = match running {
            Some(token) => {
                let _quiet = handle.updates.lock().unwrap_or_else(|e| e.into_inner());
                token.cancel();
                true
            }
            None => !dropped.is_empty(),
        };
        // What the turn said before the cancel reaches the client before this answer.
        self.host.flush().await;
        Ok(cancelled)
    }

    fn update(&self, session_id: &str, turn_id: &str, update: Value) {
        self.host.notify(Notice::Update {
            session_id: session_id.to_string(),
            turn_id: turn_id.to_string(),
            update,
        });
    }

    fn status(&self, session: &Session, state: &str, used: usize, estimated: bool) {
        let window = self.window_of(session).context_window;
        self.host.notify(Notice::Status(json!({
            "sessionId": session.id,
            "usedTokens": used,
            "contextWindow": window,
            "fill": if window == 0 { 1.0 } else { used as f64 / window as f64 },
            "estimated": estimated,
            "state": state,
            "compactions": session.compactions,
        })));
    }

    /// Environment variables a shell command must not see: the provider keys.
    fn hidden_env(&self) -> Vec<String> {
        let config = self.host.config();
        let mut names: Vec<String> = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
            .into_iter()
            .map(String::from)
            .collect();
        if let Some(name) = config.api_key_env {
            names.push(name);
        }
        names
    }

    fn provider(&self, model: &str) -> Result<Arc<Provider>, AgentError> {
        let config = self.host.config();
        let kind = ProviderKind::from_name(&config.provider_kind).unwrap_or(ProviderKind::OpenAi);
        if model.is_empty() {
            return Err(AgentError(
                "no model configured: set provider.model (or pass a model to agent/session/new)"
                    .into(),
            ));
        }
        let provider_config = ProviderConfig {
            kind,
            base_url: config
                .base_url
                .clone()
                .unwrap_or_else(|| kind.default_base_url().to_string()),
            model: model.to_string(),
            api_key_env: config
                .api_key_env
                .clone()
                .unwrap_or_else(|| kind.default_api_key_env().to_string()),
            max_output_tokens: config.max_output_tokens,
            timeout: Duration::from_millis(config.timeout_ms),
            max_retries: config.max_retries,
            temperature: config.temperature,
        };
        let key = format!("{provider_config:?}");
        let mut cached = self.provider.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((cached_key, provider)) = cached.as_ref() {
            if *cached_key == key {
                return Ok(provider.clone());
            }
        }
        let provider = Arc::new(Provider::new(provider_config).map_err(|e| AgentError(e.message))?);
        *cached = Some((key, provider.clone()));
        Ok(provider)
    }

    async fn run_turn(self: &Arc<Self>, handle: &Arc<SessionHandle>, prompt: Prompt) {
        let Some(cancel) = handle.start(&prompt.turn_id) else {
            return;
        };
        let mut turn = Turn {
            agent: self.clone(),
            handle: handle.clone(),
            turn_id: prompt.turn_id.clone(),
            cancel,
            usage: (0, 0),
            last_estimate: None,
            changed: Vec::new(),
            evidence: Vec::new(),
            problems: Vec::new(),
            steps: 0,
        };
        let stop = turn.run(prompt).await;
        turn.finish(stop).await;
    }
}

fn summary(session: &Session) -> SessionSummary {
    SessionSummary {
        session_id: session.id.clone(),
        title: if session.title.is_empty() {
            "(empty session)".into()
        } else {
            session.title.clone()
        },
        updated_at: session.updated_at,
        turns: session.turns,
    }
}

fn tokenizer_for(
    config: &agentls_core::config::Config,
    model: &str,
) -> agentls_core::tokens::TokenizerKind {
    config.tokenizer.unwrap_or_else(|| {
        if model.is_empty() {
            config.tokenizer()
        } else {
            agentls_core::tokens::TokenizerKind::for_model(model)
        }
    })
}

fn call_name(session: &Session, call_id: &str) -> Option<String> {
    session
        .history
        .entries()
        .iter()
        .find_map(|e| match &e.item {
            Item::ToolCall {
                call_id: id, name, ..
            } if id == call_id => Some(name.clone()),
            _ => None,
        })
}

/// How a turn ended: the `turnEnd` stop reason.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stop {
    EndTurn,
    Cancelled,
    MaxSteps,
    Error,
}

impl Stop {
    fn name(&self) -> &'static str {
        match self {
            Stop::EndTurn => "endTurn",
            Stop::Cancelled => "cancelled",
            Stop::MaxSteps => "maxSteps",
            Stop::Error => "error",
        }
    }
}

struct Turn {
    agent: Arc<Agent>,
    handle: Arc<SessionHandle>,
    turn_id: String,
    cancel: CancellationToken,
    usage: (u64, u64),
    /// The calibrated size of the last request sent (the status at the end of the turn).
    last_estimate: Option<usize>,
    /// For the progress log: files changed, evidence gathered, problems met.
    changed: Vec<String>,
    evidence: Vec<String>,
    problems: Vec<String>,
    steps: usize,
}

/// A tool call the model asked for.
struct Call {
    id: String,
    name: String,
    arguments: String,
}

impl Turn {
    fn host(&self) -> &Arc<dyn Host> {
        &self.agent.host
    }

    /// Tells the client; nothing after a cancel (its only remaining update is `turnEnd`).
    fn update(&self, update: Value) {
        say(
            &self.agent,
            &self.handle,
            &self.turn_id,
            &self.cancel,
            update,
        );
    }

    /// Writes the event, then applies it: what the client hears about is on disk first.
    async fn record(&self, event: Event) -> Result<(), String> {
        let prompts = self.host().prompts();
        let mut live = self.handle.live.lock().await;
        live.log.append(&event).map_err(|e| {
            format!(
                "cannot write the session log {}: {e}",
                live.log.path().display()
            )
        })?;
        live.session.apply(&event, &prompts);
        Ok(())
    }

    async fn record_item(&self, item: Item) -> Result<Entry, String> {
        let config = self.host().config();
        let prompts = self.host().prompts();
        let entry = {
            let live = self.handle.live.lock().await;
            live.session
                .history
                .entry_for(item, config.tool_output_limit, &prompts)
        };
        self.record(Event::Item {
            turn_id: self.turn_id.clone(),
            entry: entry.clone(),
        })
        .await?;
        Ok(entry)
    }

    /// Records the error, then tells the client (even when the log cannot take it: the
    /// user must hear of a failure). `code` names errors a client can act on.
    async fn fail(&mut self, message: impl Into<String>, retryable: bool, code: Option<&str>) {
        let message = message.into();
        self.problems.push(message.clone());
        let _ = self
            .record(Event::Error {
                turn_id: self.turn_id.clone(),
                message: message.clone(),
                retryable,
            })
            .await;
        let mut update = json!({"kind": "error", "message": message, "retryable": retryable});
        if let Some(code) = code {
            update["code"] = json!(code);
        }
        self.update(update);
    }

    /// Records what a context-length error tells: the request's real size (a calibration
    /// sample) and the model's real window (kept for the session). The window to compact
    /// for.
    async fn learn_from_overflow(
        &mut self,
        message: &str,
        estimated: usize,
        model: &str,
        window: compact::Window,
    ) -> compact::Window {
        let (requested, limit) = agentls_core::wire::faults::context_figures(message);
        if let Some(requested) = requested {
            let _ = self
                .record(Event::Usage {
                    turn_id: self.turn_id.clone(),
                    input_tokens: requested as u64,
                    output_tokens: 0,
                    estimated_input: estimated as u64,
                })
                .await;
        }
        if let Some(limit) = limit.filter(|l| *l > 0 && *l < window.context_window) {
            self.warn(format!(
                "the provider says the model's window is {limit} tokens, not {}: using {limit} for this session",
                window.context_window
            ));
            let _ = self
                .record(Event::ModelChanged {
                    model: model.to_string(),
                    context_window: Some(limit),
                })
                .await;
        }
        let live = self.handle.live.lock().await;
        self.agent.window_of(&live.session)
    }

    fn warn(&self, message: String) {
        self.update(json!({"kind": "warning", "message": message}));
    }

    async fn run(&mut self, prompt: Prompt) -> Stop {
        if let Some(command) = prompt_text::slash_command(&prompt.text) {
            return self.slash(command).await;
        }
        let host = self.host().clone();
        let config = host.config();
        let prompts = host.prompts();
        let gathered = match host.gather(prompt.editor.as_ref()).await {
            Ok(gathered) => gathered,
            Err(message) => {
                let _ = self
                    .record(Event::TurnStarted {
                        turn_id: self.turn_id.clone(),
                        at: session_log::now_millis(),
                    })
                    .await;
                self.fail(message, false, None).await;
                return Stop::Error;
            }
        };
        let model = self.handle.live.lock().await.session.model.clone();
        // The turn block and the static context do not read the history: no copy of it.
        let no_history = agentls_core::history::History::new(config.tokenizer());
        let inputs = gathered.inputs(&config, &prompts, &no_history, Calibration::default());
        let (mut block, static_context) = {
            let mut cache = self.agent.cache.lock().unwrap_or_else(|e| e.into_inner());
            (
                inspect::turn_block(&inputs, &mut cache),
                inspect::static_context(&inputs),
            )
        };
        // @mentions: attached as data, within what the editor block left of its budget.
        let attachments = self
            .attachments(&prompt.text, &block, &config, &prompts)
            .await;
        if !attachments.is_empty() {
            block.text.push_str("\n\n");
            block.text.push_str(&attachments);
        }
        if let Err(message) = self
            .record(Event::TurnStarted {
                turn_id: self.turn_id.clone(),
                at: session_log::now_millis(),
            })
            .await
        {
            self.fail(message, false, None).await;
            return Stop::Error;
        }
        if let Err(message) = self
            .record_item(Item::User {
                text: prompt.text.clone(),
                context: Some(block.text.clone()),
            })
            .await
        {
            self.fail(message, false, None).await;
            return Stop::Error;
        }
        let provider = match self.agent.provider(&model) {
            Ok(provider) => provider,
            Err(err) => {
                self.fail(err.0, false, None).await;
                return Stop::Error;
            }
        };
        let tokenizer = tokenizer_for(&config, &model);
        // Compaction (at the threshold, or after a context-length answer) happens at most
        // once per model call, so a history that cannot shrink does not loop.
        let mut compacted_for_this_call = false;
        loop {
            if self.cancel.is_cancelled() {
                return Stop::Cancelled;
            }
            if self.steps >= config.max_steps {
                return Stop::MaxSteps;
            }
            let (history, calibration, window) = {
                let live = self.handle.live.lock().await;
                (
                    live.session.history.clone(),
                    live.session.calibration,
                    self.agent.window_of(&live.session),
                )
            };
            let assembly = agentls_core::context::AssemblyConfig {
                tokenizer,
                context_window: window.context_window,
                calibration,
            };
            let request = {
                let mut cache = self.agent.cache.lock().unwrap_or_else(|e| e.into_inner());
                agentls_core::context::assemble(
                    &assembly,
                    &static_context,
                    &history,
                    None,
                    &prompts,
                    &mut cache.counts,
                )
            };
            let estimated = request.total_tokens;
            let used = calibration.apply(estimated);
            self.last_estimate = Some(used);
            let (compact, prepare) = {
                let live = self.handle.live.lock().await;
                self.agent.triggers(&live.session, used)
            };
            if compact && !compacted_for_this_call {
                compacted_for_this_call = true;
                let outcome = self
                    .agent
                    .compact_now(
                        &self.handle,
                        &self.turn_id,
                        compact::Trigger::Threshold,
                        None,
                        &static_context,
                        window,
                        &self.cancel,
                    )
                    .await;
                if let Err(err) = outcome {
                    // The call goes out anyway: the provider may still take it.
                    self.warn(format!("compaction failed: {}", err.0));
                }
                continue;
            }
            // Not right after a compaction: its result is what the next summary would cover.
            if prepare && !compacted_for_this_call {
                self.agent
                    .prepare_in_background(&self.handle, &static_context);
            }
            self.steps += 1;
            {
                let live = self.handle.live.lock().await;
                self.agent.status(&live.session, "running", used, true);
            }

            let (events_tx, mut events_rx) = mpsc::unbounded_channel();
            let mut text = String::new();
            let mut calls: Vec<Call> = Vec::new();
            let mut usage = None;
            let result = {
                let stream = provider.stream(&request, &prompts, &events_tx, &self.cancel);
                tokio::pin!(stream);
                loop {
                    tokio::select! {
                        biased;
                        Some(event) = events_rx.recv() => {
                            self.on_provider_event(event, &mut text, &mut calls, &mut usage);
                        }
                        result = &mut stream => {
                            while let Ok(event) = events_rx.try_recv() {
                                self.on_provider_event(event, &mut text, &mut calls, &mut usage);
                            }
                            break result;
                        }
                    }
                }
            };
            let usage = usage.or_else(|| result.as_ref().ok().and_then(|c| c.usage));
            if !text.is_empty() {
                if let Err(message) = self
                    .record_item(Item::Assistant { text: text.clone() })
                    .await
                {
                    self.fail(message, false, None).await;
                    return Stop::Error;
                }
            }
            if let Err(err) = result {
                match err.kind {
                    ErrorKind::Cancelled => return Stop::Cancelled,
                    ErrorKind::ContextLengthExceeded
                        if !compacted_for_this_call && text.is_empty() =>
                    {
                        // Compact and send the call again, once. What the error says is the
                        // provider's own count: it calibrates the estimates, and a smaller
                        // real window replaces the configured one.
                        compacted_for_this_call = true;
                        self.steps -= 1;
                        let window = self
                            .learn_from_overflow(&err.message, estimated, &model, window)
                            .await;
                        match self
                            .agent
                            .compact_now(
                                &self.handle,
                                &self.turn_id,
                                compact::Trigger::Overflow,
                                None,
                                &static_context,
                                window,
                                &self.cancel,
                            )
                            .await
                        {
                            Ok(_) => continue,
                            Err(compaction_error) => {
                                let message = format!(
                                    "{} — the conversation is larger than the model's context window, and compacting it failed: {}",
                                    err.message, compaction_error.0
                                );
                                self.fail(message, false, Some("contextLengthExceeded"))
                                    .await;
                                return Stop::Error;
                            }
                        }
                    }
                    _ => {
                        let (message, code) = match err.kind {
                            ErrorKind::StreamCut if !text.is_empty() => (
                                format!("{} (the partial answer above was kept)", err.message),
                                None,
                            ),
                            ErrorKind::ContextLengthExceeded => (
                                format!(
                                    "{} — the conversation is larger than the model's context window",
                                    err.message
                                ),
                                Some("contextLengthExceeded"),
                            ),
                            _ => (err.message.clone(), None),
                        };
                        self.fail(message, err.retryable, code).await;
                        return Stop::Error;
                    }
                }
            }
            compacted_for_this_call = false;
            if let Some(usage) = usage {
                self.usage.0 += usage.input_tokens;
                self.usage.1 += usage.output_tokens;
                let recorded = self
                    .record(Event::Usage {
                        turn_id: self.turn_id.clone(),
                        input_tokens: usage.input_tokens,
                        output_tokens: usage.output_tokens,
                        estimated_input: estimated as u64,
                    })
                    .await;
                if recorded.is_ok() {
                    let live = self.handle.live.lock().await;
                    self.agent.status(
                        &live.session,
                        "running",
                        (usage.input_tokens + usage.output_tokens) as usize,
                        false,
                    );
                }
            }
            if calls.is_empty() {
                return Stop::EndTurn;
            }
            for call in &calls {
                if let Err(message) = self
                    .record_item(Item::ToolCall {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                    })
                    .await
                {
                    self.fail(message, false, None).await;
                    return Stop::Error;
                }
            }
            for (index, call) in calls.iter().enumerate() {
                if self.cancel.is_cancelled() {
                    for skipped in &calls[index..] {
                        let _ = self
                            .finish_call(
                                skipped,
                                self.host().prompts().aborted(
                                    agentls_core::prompts::AbortReason::CancelledBeforeRun,
                                ),
                                false,
                            )
                            .await;
                    }
                    return Stop::Cancelled;
                }
                let (output, success) = self.run_tool(call).await;
                if let Err(message) = self.finish_call(call, output, success).await {
                    self.fail(message, false, None).await;
                    return Stop::Error;
                }
            }
        }
    }

    fn on_provider_event(
        &self,
        event: ProviderEvent,
        text: &mut String,
        calls: &mut Vec<Call>,
        usage: &mut Option<agentls_core::wire::Usage>,
    ) {
        match event {
            ProviderEvent::Text(chunk) => {
                text.push_str(&chunk);
                self.update(json!({"kind": "agentMessageChunk", "text": chunk}));
            }
            ProviderEvent::Reasoning(chunk) => {
                self.update(json!({"kind": "agentThoughtChunk", "text": chunk}));
            }
            ProviderEvent::ToolCallStarted { .. } => {}
            ProviderEvent::ToolCall {
                id,
                name,
                arguments,
            } => {
                calls.push(Call {
                    id,
                    name,
                    arguments,
                });
            }
            ProviderEvent::Usage(u) => *usage = Some(u),
            ProviderEvent::Retrying {
                attempt,
                delay,
                reason,
            } => {
                self.update(json!({
                    "kind": "warning",
                    "message": format!("{reason}; retrying in {:.1}s (attempt {attempt})", delay.as_secs_f64()),
                }));
            }
            ProviderEvent::Skipped { line } => {
                tracing::warn!("provider sent a line that is not an event: {line:?}");
            }
        }
    }

    /// Records a call's output and tells the client it finished.
    async fn finish_call(&self, call: &Call, output: String, success: bool) -> Result<(), String> {
        let entry = self
            .record_item(Item::ToolOutput {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: output,
                success,
            })
            .await?;
        let recorded = match &entry.item {
            Item::ToolOutput { content, .. } => content.clone(),
            _ => String::new(),
        };
        self.update(json!({
            "kind": "toolCallUpdate",
            "toolCallId": call.id,
            "status": if success { "completed" } else { "failed" },
            "output": recorded,
        }));
        Ok(())
    }

    /// Runs one tool call, asking for approval when the policy says so. Returns the output
    /// for the model and whether the call succeeded.
    async fn run_tool(&mut self, call: &Call) -> (String, bool) {
        let kind = tool_info::kind_of(&call.name);
        let arguments: Value = match serde_json::from_str(&call.arguments) {
            Ok(value @ Value::Object(_)) => value,
            Ok(_) | Err(_) => {
                self.announce(call, kind, &Value::Null);
                return (
                    format!(
                        "the arguments of {} are not a JSON object: {}",
                        call.name,
                        truncate_middle(
                            &call.arguments,
                            TruncationPolicy::Bytes(200),
                            Default::default()
                        )
                        .text
                    ),
                    false,
                );
            }
        };
        self.announce(call, kind, &arguments);
        let host = self.host().clone();
        let config = host.config();
        let workspace = Workspace {
            roots: host.roots(),
        };
        if workspace.roots.is_empty() && kind != ToolKind::Other {
            return (
                "there is no workspace folder: tools that touch files cannot run".into(),
                false,
            );
        }
        // Edits are planned first: the approval shows their diff, and a bad edit fails
        // before anyone is asked.
        let planned = match call.name.as_str() {
            "edit_file" | "write_file" => {
                match self.plan_change(&workspace, &call.name, &arguments).await {
                    Ok(planned) => Some(planned),
                    Err(message) => return (message, false),
                }
            }
            _ => None,
        };
        let command =
            (call.name == "shell").then(|| arguments["command"].as_str().unwrap_or("").to_string());
        let approvals = self.handle.live.lock().await.session.approvals.clone();
        match approval::gate(
            &config.approval,
            &call.name,
            kind,
            command.as_deref(),
            &approvals,
        ) {
            Gate::Run => {}
            Gate::Refuse(why) => return (format!("not run: {why}"), false),
            Gate::Ask => {
                let diff = planned.as_ref().map(|(_, diff, _)| diff.clone());
                if let Err(message) = self
                    .ask(call, kind, &arguments, command.as_deref(), diff)
                    .await
                {
                    return (message, false);
                }
            }
        }
        self.update(
            json!({"kind": "toolCallUpdate", "toolCallId": call.id, "status": "in_progress"}),
        );
        match call.name.as_str() {
            "read_file" => {
                let path = match workspace.resolve(arguments["path"].as_str().unwrap_or("")) {
                    Ok(path) => path,
                    Err(err) => return (err.0, false),
                };
                let buffer = host.buffer(&path).await.map(|(text, _)| text);
                let args = arguments.clone();
                blocking(move || {
                    tools::read_file(
                        &workspace,
                        args["path"].as_str().unwrap_or(""),
                        args["offset"].as_u64().map(|n| n as usize),
                        args["limit"].as_u64().map(|n| n as usize),
                        buffer.as_deref(),
                    )
                })
                .await
            }
            "list_dir" => {
                let args = arguments.clone();
                blocking(move || {
                    tools::list_dir(
                        &workspace,
                        args["path"].as_str(),
                        args["depth"].as_u64().map(|n| n as usize),
                    )
                })
                .await
            }
            "grep" => {
                let args = arguments.clone();
                blocking(move || {
                    tools::grep(
                        &workspace,
                        args["pattern"].as_str().unwrap_or(""),
                        args["path"].as_str(),
                        args["glob"].as_str(),
                    )
                })
                .await
            }
            "edit_file" | "write_file" => {
                let (change, _, summary) = planned.expect("planned above");
                let path = match &change {
                    FileChange::Edit { path, .. } | FileChange::Write { path, .. } => workspace.display(path),
                };
                match host.apply(change).await {
                    Ok(()) => {
                        self.changed.push(path);
                        (summary, true)
                    }
                    Err(why) => (format!("the edit was not applied: {why}"), false),
                }
            }
            "shell" => self.shell(&workspace, &arguments, call).await,
            "update_plan" => match tool_info::parse_plan(&arguments) {
                Ok(entries) => {
                    let _ = self
                        .record(Event::Plan {
                            turn_id: self.turn_id.clone(),
                            entries: entries.clone(),
                        })
                        .await;
                    self.update(json!({"kind": "plan", "entries": entries}));
                    ("Plan updated.".into(), true)
                }
                Err(err) => (err.0, false),
            },
            other => (
                format!(
                    "unknown tool {other}; the tools are: read_file, list_dir, grep, edit_file, write_file, shell, update_plan"
                ),
                false,
            ),
        }
    }

    fn announce(&self, call: &Call, kind: ToolKind, arguments: &Value) {
        self.update(json!({
            "kind": "toolCall",
            "toolCallId": call.id,
            "name": call.name,
            "title": tool_info::title(&call.name, arguments),
            "toolKind": kind,
            "status": "pending",
            "input": arguments,
        }));
    }

    /// The change an edit_file/write_file call asks for, its diff, and the summary the
    /// model gets when it is applied.
    async fn plan_change(
        &self,
        workspace: &Workspace,
        tool: &str,
        arguments: &Value,
    ) -> Result<(FileChange, String, String), String> {
        let path_arg = arguments["path"]
            .as_str()
            .ok_or_else(|| format!("{tool} needs a `path` string"))?;
        let path = workspace.resolve(path_arg).map_err(|e| e.0)?;
        let buffer = self.host().buffer(&path).await;
        let (current, version) = match buffer {
            Some((text, version)) => (Some(text), Some(version)),
            None if path.exists() => {
                let disk = path.clone();
                let text = tokio::task::spawn_blocking(move || files::read_text(&disk))
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|refused| refused.0)?;
                (Some(text), None)
            }
            None => (None, None),
        };
        let shown = workspace.display(&path);
        if tool == "edit_file" {
            let current = current
                .ok_or_else(|| format!("{shown} does not exist; create it with write_file"))?;
            let old_text = arguments["old_text"]
                .as_str()
                .ok_or("edit_file needs an `old_text` string")?;
            let new_text = arguments["new_text"]
                .as_str()
                .ok_or("edit_file needs a `new_text` string")?;
            let planned = tools::plan_edit(workspace, path_arg, &current, old_text, new_text)
                .map_err(|e| e.0)?;
            let summary = format!(
                "Edited {shown}: replaced {} line(s) with {} line(s).",
                old_text.lines().count().max(1),
                new_text.lines().count().max(1)
            );
            Ok((
                FileChange::Edit {
                    path: planned.path.clone(),
                    version,
                    original: current,
                    range: planned.range.clone(),
                    new_text: planned.new_text.clone(),
                },
                planned.diff,
                summary,
            ))
        } else {
            let content = arguments["content"]
                .as_str()
                .ok_or("write_file needs a `content` string")?;
            let planned = tools::plan_write(workspace, path_arg, current.as_deref(), content)
                .map_err(|e| e.0)?;
            let summary = if planned.created {
                format!("Created {shown} ({} lines).", content.lines().count())
            } else {
                format!(
                    "Replaced the content of {shown} ({} lines).",
                    content.lines().count()
                )
            };
            Ok((
                FileChange::Write {
                    path: planned.path.clone(),
                    version,
                    original: current,
                    content: planned.content.clone(),
                },
                planned.diff,
                summary,
            ))
        }
    }

    /// Asks the user; Err(output for the model) when the answer is no.
    async fn ask(
        &mut self,
        call: &Call,
        kind: ToolKind,
        arguments: &Value,
        command: Option<&str>,
        diff: Option<String>,
    ) -> Result<(), String> {
        let always = match command {
            Some(command) => format!(
                "Always allow `{}` commands in this session",
                approval::command_prefix(command)
            ),
            None => format!("Always allow {} in this session", call.name),
        };
        let never = match command {
            Some(command) => format!(
                "Never allow `{}` commands in this session",
                approval::command_prefix(command)
            ),
            None => format!("Never allow {} in this session", call.name),
        };
        let options = [
            ("allow-once", "allowOnce", "Allow".to_string()),
            ("allow-always", "allowAlways", always),
            ("reject-once", "rejectOnce", "Reject".to_string()),
            ("reject-always", "rejectAlways", never),
        ]
        .into_iter()
        .map(|(id, kind, name)| PermissionOption {
            option_id: id.into(),
            kind: kind.into(),
            name,
        })
        .collect();
        let mut tool_call = json!({
            "toolCallId": call.id,
            "name": call.name,
            "title": tool_info::title(&call.name, arguments),
            "kind": kind,
            "input": arguments,
        });
        if let Some(diff) = diff {
            tool_call["diff"] = Value::String(diff);
        }
        let request = PermissionRequest {
            session_id: self.handle.id.clone(),
            turn_id: self.turn_id.clone(),
            tool_call,
            options,
        };
        let outcome = tokio::select! {
            outcome = self.host().request_permission(request) => outcome,
            () = self.cancel.cancelled() => crate::agent::host::PermissionOutcome { kind: "cancelled".into() },
        };
        let prefix = command
            .filter(|_| matches!(outcome.kind.as_str(), "allowAlways" | "rejectAlways"))
            .map(approval::command_prefix);
        let _ = self
            .record(Event::Permission {
                turn_id: self.turn_id.clone(),
                tool_call_id: call.id.clone(),
                tool: call.name.clone(),
                outcome: outcome.kind.clone(),
                prefix,
            })
            .await;
        if outcome.allows() {
            Ok(())
        } else if self.cancel.is_cancelled() {
            Err(self
                .host()
                .prompts()
                .aborted(agentls_core::prompts::AbortReason::CancelledAwaitingApproval))
        } else {
            self.problems.push(format!(
                "{} was rejected by the user",
                tool_info::title(&call.name, arguments)
            ));
            Err(self.host().prompts().tool_rejected.clone())
        }
    }

    async fn shell(
        &mut self,
        workspace: &Workspace,
        arguments: &Value,
        call: &Call,
    ) -> (String, bool) {
        let Some(command) = arguments["command"].as_str() else {
            return ("shell needs a `command` string".into(), false);
        };
        let cwd = match arguments["cwd"].as_str() {
            Some(dir) => match workspace.resolve(dir) {
                Ok(dir) => dir,
                Err(err) => return (err.0, false),
            },
            None => workspace.roots[0].clone(),
        };
        let timeout = arguments["timeout_ms"]
            .as_u64()
            .map(Duration::from_millis)
            .unwrap_or(SHELL_DEFAULT_TIMEOUT);
        let agent = self.agent.clone();
        let turn_id = self.turn_id.clone();
        let call_id = call.id.clone();
        let cancel = self.cancel.clone();
        let handle = self.handle.clone();
        let on_output = move |chunk: &str| {
            say(
                &agent,
                &handle,
                &turn_id,
                &cancel,
                json!({"kind": "toolCallUpdate", "toolCallId": call_id, "status": "in_progress", "output": chunk}),
            );
        };
        match tools::run_shell(
            command,
            &cwd,
            timeout,
            SHELL_OUTPUT_BYTES,
            on_output,
            &self.cancel,
            &self.agent.hidden_env(),
        )
        .await
        {
            Ok(outcome) => {
                let success =
                    outcome.exit_code == Some(0) && !outcome.timed_out && !outcome.cancelled;
                self.evidence.push(match outcome.exit_code {
                    Some(code) => format!("`{command}` exited with {code}"),
                    None if outcome.timed_out => format!("`{command}` timed out"),
                    None => format!("`{command}` was stopped"),
                });
                (outcome.output, success)
            }
            Err(err) => (err.0, false),
        }
    }

    /// Fetches `@path` mentions as untrusted data within the editor budget left.
    async fn attachments(
        &mut self,
        text: &str,
        block: &agentls_core::context::TurnBlock,
        config: &agentls_core::config::Config,
        prompts: &agentls_core::prompts::Prompts,
    ) -> String {
        let mentions = prompt_text::mentions(text);
        if mentions.is_empty() {
            return String::new();
        }
        let workspace = Workspace {
            roots: self.host().roots(),
        };
        let tokenizer = config.tokenizer();
        let used = block.editor.as_ref().map_or(0, |e| e.tokens);
        let mut budget = config.editor_context_max_tokens.saturating_sub(used);
        let mut out = format!("<attached_files>\n{}\n", prompts.data_boundary);
        let mut attached = 0;
        for mention in mentions {
            let resolved = workspace.resolve(&mention.path);
            let path = match resolved {
                Ok(path) if path.is_file() => path,
                _ => {
                    self.update(json!({
                        "kind": "warning",
                        "message": format!("@{} is not a file in the workspace; it was not attached", mention.path),
                    }));
                    continue;
                }
            };
            let buffer = self.host().buffer(&path).await.map(|(text, _)| text);
            let (offset, limit) = match mention.lines {
                Some((start, end)) => (Some(start), Some(end - start + 1)),
                None => (None, None),
            };
            let ws = Workspace {
                roots: workspace.roots.clone(),
            };
            let arg = mention.path.clone();
            let read = tokio::task::spawn_blocking(move || {
                tools::read_file(&ws, &arg, offset, limit, buffer.as_deref())
            })
            .await;
            let content = match read {
                Ok(Ok(content)) => content,
                Ok(Err(err)) => {
                    self.update(json!({"kind": "warning", "message": format!("@{}: {}", mention.path, err.0)}));
                    continue;
                }
                Err(err) => {
                    self.update(
                        json!({"kind": "warning", "message": format!("@{}: {err}", mention.path)}),
                    );
                    continue;
                }
            };
            let lines = mention
                .lines
                .map(|(a, b)| format!(" lines=\"{a}-{b}\""))
                .unwrap_or_default();
            let header = format!("<file path=\"{}\"{lines}>\n", workspace.display(&path));
            let tokens = tokenizer.count(&content) + tokenizer.count(&header) + 4;
            let body = if tokens <= budget {
                content
            } else if budget > 64 {
                let cut =
                    truncate_middle(&content, TruncationPolicy::Tokens(budget - 48), tokenizer)
                        .text;
                format!("[cut to fit the editor-context budget]\n{cut}")
            } else {
                self.update(json!({
                    "kind": "warning",
                    "message": format!("@{} was not attached: the editor-context budget is used up", mention.path),
                }));
                out.push_str(&format!(
                    "[@{} omitted: the editor-context budget is used up]\n",
                    mention.path
                ));
                continue;
            };
            budget = budget.saturating_sub(tokenizer.count(&body) + 16);
            out.push_str(&header);
            out.push_str(body.trim_end());
            out.push_str("\n</file>\n");
            attached += 1;
        }
        if attached == 0 && !out.contains("omitted") {
            return String::new();
        }
        out.push_str("</attached_files>");
        out
    }

    async fn slash(&mut self, command: SlashCommand) -> Stop {
        let reply = match command {
            SlashCommand::Help => format!("Commands:\n{}", prompt_text::COMMANDS),
            SlashCommand::Invalid(why) => format!("{why}. Commands:\n{}", prompt_text::COMMANDS),
            SlashCommand::Compact(focus) => {
                let static_context = match self.agent.static_context_now().await {
                    Ok(context) => context,
                    Err(err) => {
                        self.fail(err.0, false, None).await;
                        return Stop::Error;
                    }
                };
                let window = {
                    let live = self.handle.live.lock().await;
                    self.agent.window_of(&live.session)
                };
                match self
                    .agent
                    .compact_now(
                        &self.handle,
                        &self.turn_id,
                        compact::Trigger::Manual,
                        focus,
                        &static_context,
                        window,
                        &self.cancel,
                    )
                    .await
                {
                    Ok(outcome) => format!(
                        "Compacted: {} → {} tokens of history ({}).",
                        outcome.tokens_before, outcome.tokens_after, outcome.strategy
                    ),
                    Err(err) => format!("Compaction failed: {}", err.0),
                }
            }
            SlashCommand::Model(model) => {
                match self
                    .agent
                    .switch_model(&self.handle, &self.turn_id, model.clone(), None, &self.cancel)
                    .await
                {
                    Ok(true) => format!(
                        "This session now uses {model}; the conversation was compacted first to fit its window."
                    ),
                    Ok(false) => format!("This session now uses {model}."),
                    Err(err) => err.0,
                }
            }
            SlashCommand::New => match self.agent.new_session(None).await {
                Ok(id) => format!("Started a new session: {id}"),
                Err(err) => err.0,
            },
            SlashCommand::Context => {
                let live = self.handle.live.lock().await;
                let window = self.agent.window_of(&live.session).context_window;
                format!(
                    "This session holds {} history items, about {} tokens of a {}-token window (estimated). Ask agent/session/context for the full breakdown.",
                    live.session.history.len(),
                    live.session.calibration.apply(live.session.history.tokens()),
                    window
                )
            }
        };
        self.update(json!({"kind": "agentMessageChunk", "text": reply}));
        Stop::EndTurn
    }

    /// Ends the turn: the log records it (and is synced), the progress log gets its entry,
    /// the client gets `turnEnd` and an idle status.
    async fn finish(&mut self, stop: Stop) {
        // A cancel that arrived after the last call finished still answered `cancelled:
        // true`: the turn ends as cancelled.
        let stop = if self.cancel.is_cancelled() && stop == Stop::EndTurn {
            Stop::Cancelled
        } else {
            stop
        };
        let at = session_log::now_millis();
        let started = self.handle.live.lock().await.session.open_turn.as_deref()
            == Some(self.turn_id.as_str());
        if started {
            let _ = self
                .record(Event::TurnEnded {
                    turn_id: self.turn_id.clone(),
                    stop_reason: stop.name().into(),
                    at,
                })
                .await;
        }
        let (session_id, plan) = {
            let mut live = self.handle.live.lock().await;
            if let Err(err) = live.log.sync() {
                tracing::error!("cannot sync session log: {err}");
            }
            self.agent.idle_status(&live.session, self.last_estimate);
            (live.session.id.clone(), live.session.plan.clone())
        };
        if started {
            let next = plan
                .iter()
                .find(|e| e.status != "completed")
                .map(|e| e.content.clone())
                .unwrap_or_else(|| "none recorded".into());
            let section = format!(
                "## Turn {} — {} ({})\n- Checkpoint: {} model call(s)\n- What changed: {}\n- Evidence: {}\n- Open issues: {}\n- Next action: {}\n\n",
                self.turn_id,
                agentls_core::environment::civil_date((at / 86_400_000) as i64),
                stop.name(),
                self.steps,
                list_or(&self.changed, "no files changed"),
                list_or(&self.evidence, "none"),
                list_or(&self.problems, "none"),
                next
            );
            if let Ok(store) = self.agent.store() {
                if let Err(err) = store.append_progress(&session_id, &section) {
                    tracing::warn!("cannot append to the progress log: {err}");
                }
            }
        }
        let mut end = json!({"kind": "turnEnd", "stopReason": stop.name()});
        if self.usage != (0, 0) {
            end["usage"] = json!({"inputTokens": self.usage.0, "outputTokens": self.usage.1});
        }
        // Not running any more before the client hears so: a cancel after this is a no-op.
        self.handle.stop();
        self.agent.update(&self.handle.id, &self.turn_id, end);
    }
}

/// Sends one update of a turn, unless the turn was cancelled: then its only remaining
/// update is `turnEnd`. The lock makes the check and the send one step for `cancel`.
fn say(
    agent: &Agent,
    handle: &SessionHandle,
    turn_id: &str,
    cancel: &CancellationToken,
    update: Value,
) {
    let _quiet = handle.updates.lock().unwrap_or_else(|e| e.into_inner());
    if !cancel.is_cancelled() {
        agent.update(&handle.id, turn_id, update);
    }
}

fn list_or(items: &[String], empty: &str) -> String {
    if items.is_empty() {
        empty.to_string()
    } else {
        items.join("; ")
    }
}

async fn blocking(
    f: impl FnOnce() -> Result<String, tools::ToolError> + Send + 'static,
) -> (String, bool) {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(output)) => (output, true),
        Ok(Err(err)) => (err.0, false),
        Err(err) => (format!("the tool failed: {err}"), false),
    }
}

/// The model a host falls back to for a path that is not in the workspace: for tests.
pub fn display(path: &Path, roots: &[PathBuf]) -> String {
    inspect::display_path(path, roots)
}
