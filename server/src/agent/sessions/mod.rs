//! The sessions of a server: created, or loaded on demand from their logs (a turn left open
//! by a crash is closed first), each with one worker task that runs its jobs (prompts,
//! compactions, model switches) in arrival order, and a queue a cancel can see whole.

use crate::agent::sessions::live::Live;
use crate::agent::tokenizer_for;
use crate::agent::Agent;
use crate::agent::AgentError;
use crate::locks::Locked;
use crate::protocol::lsp::{SessionCompactResult, SessionSummary};
mod background;
mod lifecycle;
pub(in crate::agent) mod live;
mod modes;
pub(in crate::agent) mod steering;

use crate::agent::sessions::live::Durability;
use crate::tools::registry::Registry;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::store::session_log;
use agentls_core::compaction::plan::PreparedSummary;
use agentls_core::editor_state::EditorState;
use agentls_core::event::Event;
use agentls_core::history::Item;
use agentls_core::session::{self, Session};
use agentls_core::tokens::Calibration;
use agentls_core::updates::Update;

pub(in crate::agent) struct Prompt {
    pub(in crate::agent) turn_id: String,
    pub(in crate::agent) text: String,
    pub(in crate::agent) editor: Option<EditorState>,
    /// Checked before the prompt was queued (`Agent::prompt_images`).
    pub(in crate::agent) images: Vec<agentls_core::image::Image>,
}

/// Work for a session's worker, run one at a time in arrival order.
pub(in crate::agent) enum Job {
    Prompt(Prompt),
    /// `agent/session/compact`, `/compact`.
    Compact {
        instructions: Option<String>,
        /// What `agent/session/compact` answers (`compact::CompactionOutcome`).
        reply: tokio::sync::oneshot::Sender<Result<SessionCompactResult, AgentError>>,
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
pub(in crate::agent) struct QueueState {
    /// Turn ids queued and not started.
    pub(in crate::agent) waiting: Vec<String>,
    /// The running job's turn id and cancellation.
    pub(in crate::agent) running: Option<(String, CancellationToken)>,
    /// Queued turns a cancel dropped: the worker skips them.
    pub(in crate::agent) dropped: std::collections::HashSet<String>,
    /// The text of each waiting turn, for the queue the editor shows.
    pub(in crate::agent) texts: std::collections::HashMap<String, String>,
    /// Messages for the running turn, taken at its next step boundary (`steering.rs`).
    pub(in crate::agent) steering: Vec<steering::Steering>,
}

/// A summary prepared in the background for the next compaction: `compact/prepare.rs`
/// fills it, a compaction takes it. Here with the handle that holds it, so that sessions do
/// not name `compact` (which names them).
#[derive(Default)]
pub(in crate::agent) struct Prepared {
    /// A background summary call is running.
    pub(in crate::agent) pending: bool,
    pub(in crate::agent) result: Option<PreparedSummary>,
}

pub(in crate::agent) struct SessionHandle {
    pub(in crate::agent) id: String,
    pub(in crate::agent) live: tokio::sync::Mutex<Live>,
    pub(in crate::agent) queue: mpsc::UnboundedSender<Job>,
    pub(in crate::agent) state: Mutex<QueueState>,
    /// A summary prepared in the background for the next compaction.
    pub(in crate::agent) prepared: Mutex<Prepared>,
    /// Signalled when a background preparation ends.
    pub(in crate::agent) prepared_done: tokio::sync::Notify,
    /// Held while a turn sends an update and while a cancel takes effect: after a cancel
    /// no update of the cancelled turn can be on its way.
    pub(in crate::agent) updates: Mutex<()>,
    /// A subagent's session: its parent (its updates carry it).
    pub(in crate::agent) parent: Option<agentls_core::event::ParentLink>,
    /// A subagent's session: where its permission requests are asked (set as it starts).
    pub(in crate::agent) asks_in: std::sync::OnceLock<AskedIn>,
    /// What the model has read of each file in this process's life of the session (a
    /// resumed session reads again before it changes a file: the file may have changed).
    pub(in crate::agent) reads: Arc<Mutex<agentls_core::file_reads::FileReads>>,
    /// A subagent's session that works apart (`isolation: worktree`): its host, whose one
    /// root is its worktree (set as it starts; else the agent's).
    pub(in crate::agent) host: std::sync::OnceLock<Arc<dyn crate::host::Host>>,
    /// Its background commands (`shell` with `background: true`): stopped when the
    /// session is released, their client terminals released at agentls's exit.
    pub(in crate::agent) background: Arc<crate::tools::background::Commands>,
}

/// Where a subagent asks its user: the parent's session and turn (the only ones the client
/// knows), with its requests labelled with its name.
#[derive(Debug, Clone)]
pub(in crate::agent) struct AskedIn {
    pub(in crate::agent) agent: String,
    pub(in crate::agent) parent_session_id: String,
    pub(in crate::agent) parent_turn_id: String,
    pub(in crate::agent) parent_call_id: String,
}

impl SessionHandle {
    /// Err while a turn of the session runs or waits: `what` (rewinding, undoing its
    /// changes) must wait for its end.
    pub(in crate::agent) fn refuse_while_running(&self, what: &str) -> Result<(), AgentError> {
        let state = self.state();
        if state.running.is_some() || !state.waiting.is_empty() {
            return Err(AgentError::failed(format!(
                "a turn of session {} is running: cancel it or wait for its end before {what}",
                self.id
            )));
        }
        Ok(())
    }

    /// The session and turn a permission request of this session's turn `turn_id` is asked
    /// in; a subagent's `tool_call` is labelled (its name in the title, `subagent`,
    /// `subagentSessionId`, `parentToolCallId`). The one route of every request: tool calls,
    /// workspace hooks, MCP servers.
    pub(in crate::agent) fn ask_route(
        &self,
        turn_id: &str,
        tool_call: &mut agentls_core::updates::PermissionToolCall,
    ) -> (String, String) {
        let Some(asked_in) = self.asks_in.get() else {
            return (self.id.clone(), turn_id.to_string());
        };
        tool_call.title = format!("{}: {}", asked_in.agent, tool_call.title);
        tool_call.subagent = Some(asked_in.agent.clone());
        tool_call.subagent_session_id = Some(self.id.clone());
        tool_call.parent_tool_call_id = Some(asked_in.parent_call_id.clone());
        (
            asked_in.parent_session_id.clone(),
            asked_in.parent_turn_id.clone(),
        )
    }

    pub(in crate::agent) fn state(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.locked()
    }

    /// Marks `turn_id` as running unless a cancel dropped it; its cancellation token.
    pub(in crate::agent) fn start(&self, turn_id: &str) -> Option<CancellationToken> {
        let mut state = self.state();
        state.waiting.retain(|t| t != turn_id);
        if state.dropped.remove(turn_id) {
            return None;
        }
        let token = CancellationToken::new();
        state.running = Some((turn_id.to_string(), token.clone()));
        Some(token)
    }
}

impl Agent {
    pub async fn new_session(
        self: &Arc<Self>,
        model: Option<String>,
    ) -> Result<String, AgentError> {
        // The first session is when the MCP servers are needed: they start in the background.
        self.ensure_mcp();
        // And the checkpoint store's first snapshot (every file hashed once) is taken now.
        self.warm_checkpoints();
        // Worktrees a killed server's subagents left.
        self.sweep_worktrees();
        self.create_session(model, None).await
    }

    /// A new session; a subagent's names its parent.
    pub(in crate::agent) async fn create_session(
        self: &Arc<Self>,
        model: Option<String>,
        parent: Option<agentls_core::event::ParentLink>,
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
        let log = store.open(&id).map_err(|e| {
            AgentError::failed(format!(
                "cannot create the session log in {}: {e}",
                store.dir().display()
            ))
        })?;
        let started = Event::SessionStarted {
            session_id: id.clone(),
            model: model.clone(),
            workspace: workspace.clone(),
            at: session_log::now_millis(),
            parent,
            forked_from: None,
        };
        let session = Session::new(&id, &model, &workspace, tokenizer_for(&config, &model));
        let mut live = Live { session, log };
        live.record(&started, Durability::Synced, Registry::builtin())
            .map_err(AgentError::failed)?;
        self.spawn_worker(id.clone(), live);
        Ok(id)
    }

    /// Forgets a session's in-memory state (its log stays): a finished subagent's session is
    /// not used again unless loaded, which replays it.
    pub(in crate::agent) fn release(&self, id: &str) {
        self.stop_background(id);
        self.sessions.locked().remove(id);
    }

    /// The session, from memory or replayed from its log.
    pub(in crate::agent) async fn handle(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<Arc<SessionHandle>, AgentError> {
        if let Some(handle) = self.sessions.locked().get(id) {
            return Ok(handle.clone());
        }
        let store = self.store()?;
        if !store.exists(id) {
            return Err(AgentError::unknown_session(id));
        }
        let contents = store
            .read(id)
            .map_err(|e| AgentError::failed(format!("cannot read session {id}: {e}")))?;
        for warning in &contents.warnings {
            tracing::warn!("session {id}: {warning}");
            // The user should know their session log was damaged, even if nothing was lost
            // but the torn line.
            self.host
                .show_warning(format!("agentls: session {id}: {warning}"));
        }
        let config = self.host.config();
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
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| self.default_model());
        let tokenizer = tokenizer_for(&config, &model);
        let mut session = Session::replay(id, &contents.events, tokenizer, Registry::builtin());
        // A log that lost its first line (`sessionStarted`) names no model: the configured
        // one serves, as for a new session, for everything that reads the session's model.
        if session.model.is_empty() {
            session.model = model;
        }
        let log = store
            .open(id)
            .map_err(|e| AgentError::failed(format!("cannot open session {id}: {e}")))?;
        let worktree = session.worktree.clone();
        let mut live = Live { session, log };
        self.close_interrupted_turn(&mut live);
        let handle = self.spawn_worker(id.to_string(), live);
        if let Some(link) = worktree {
            self.work_in(&handle, &link);
        }
        Ok(handle)
    }

    /// A turn left open by a crash is closed now, so the log says how it ended: each call
    /// without an output gets the "server stopped" one, then the error and the turn's end.
    fn close_interrupted_turn(&self, live: &mut Live) {
        let Some(turn_id) = live.session.open_turn.clone() else {
            return;
        };
        let config = self.host.config();
        let prompts = self.host.prompts();
        let report = live.session.history.prompt_items(&prompts).1;
        let mut events = Vec::new();
        for call_id in &report.aborted_calls {
            if let Some(name) = call_name(&live.session, call_id) {
                let entry = live.session.history.entry_for(
                    Item::ToolOutput {
                        call_id: call_id.clone(),
                        name,
                        content: prompts.aborted(agentls_core::prompts::AbortReason::ServerStopped),
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
        let id = live.session.id.clone();
        for event in &events {
            if let Err(err) = live.record(event, Durability::Buffered, Registry::builtin()) {
                tracing::error!("session {id}: cannot close the interrupted turn: {err}");
                break;
            }
        }
        let _ = live.log.sync();
    }

    /// What a session loaded from its log has read: the files its history read, in their
    /// current version (`file_reads::read_in_history`).
    fn reads_from_history(
        &self,
        history: &agentls_core::history::History,
    ) -> agentls_core::file_reads::FileReads {
        let mut reads = agentls_core::file_reads::FileReads::default();
        let boundary = crate::tools::boundary::PathBoundary {
            roots: self.host.roots(),
        };
        for path in agentls_core::file_reads::read_in_history(history) {
            let Ok(resolved) = boundary.resolve(&path) else {
                continue;
            };
            if let Ok(text) = crate::store::files::read_text(&resolved) {
                reads.saw(&resolved, &text);
            }
        }
        reads
    }

    pub(in crate::agent) fn spawn_worker(
        self: &Arc<Self>,
        id: String,
        live: Live,
    ) -> Arc<SessionHandle> {
        let (queue, mut jobs) = mpsc::unbounded_channel::<Job>();
        let parent = live.session.parent.clone();
        let reads = self.reads_from_history(&live.session.history);
        let handle = Arc::new(SessionHandle {
            id: id.clone(),
            live: tokio::sync::Mutex::new(live),
            queue,
            state: Mutex::new(QueueState::default()),
            prepared: Mutex::new(Prepared::default()),
            prepared_done: tokio::sync::Notify::new(),
            updates: Mutex::new(()),
            asks_in: std::sync::OnceLock::new(),
            parent,
            reads: Arc::new(Mutex::new(reads)),
            host: std::sync::OnceLock::new(),
            background: crate::tools::background::Commands::new(&id),
        });
        let mut sessions = self.sessions.locked();
        if let Some(existing) = sessions.get(&id) {
            // Loaded twice concurrently: keep the first.
            return existing.clone();
        }
        sessions.insert(id, handle.clone());
        let agent = Arc::downgrade(self);
        // Weak: a session released from memory (a finished subagent's) drops its handle, and
        // with it the queue's sender, which ends this worker.
        let weak_worker = Arc::downgrade(&handle);
        tokio::spawn(async move {
            while let Some(job) = jobs.recv().await {
                let Some(agent) = agent.upgrade() else { break };
                let Some(worker) = weak_worker.upgrade() else {
                    break;
                };
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

    /// `agent/session/list`: newest first; subagents' sessions only with `include_children`.
    pub async fn list(
        self: &Arc<Self>,
        include_children: bool,
    ) -> Result<Vec<SessionSummary>, AgentError> {
        let store = self.store()?;
        let mut summaries = Vec::new();
        for id in store.ids() {
            let loaded = self.sessions.locked().get(&id).cloned();
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
                            Registry::builtin(),
                        );
                        summary(&session)
                    }
                    Err(err) => {
                        tracing::warn!("skipping session {id}: {err}");
                        continue;
                    }
                },
            };
            if include_children || summary.parent_session_id.is_none() {
                summaries.push(summary);
            }
        }
        summaries.sort_by_key(|s| std::cmp::Reverse(s.updated_at));
        Ok(summaries)
    }

    /// `agent/session/commands`: the built-in and custom slash commands (read now), then the
    /// ready MCP servers' prompts (`mcp__SERVER__PROMPT`).
    pub async fn commands(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<Vec<agentls_core::commands::CommandInfo>, AgentError> {
        self.handle(id).await?;
        let roots = self.host.roots();
        let custom =
            tokio::task::spawn_blocking(move || crate::store::commands::load_commands(&roots))
                .await
                .map_err(|e| AgentError::failed(e.to_string()))?;
        let mut infos = agentls_core::commands::infos(&custom);
        for prompt in self.mcp.prompts() {
            // A custom command of the same name wins (as when it is typed).
            if !infos.iter().any(|i| i.name == prompt.command) {
                infos.push(prompt.info());
            }
        }
        Ok(infos)
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
        // A reopened session needs the MCP servers as a new one does.
        self.ensure_mcp();
        let _live = handle.live.lock().await;
        let contents = self
            .store()?
            .read(id)
            .map_err(|e| AgentError::failed(format!("cannot read session {id}: {e}")))?;
        Ok(session::transcript(&contents.events, Registry::builtin()))
    }

    /// `agent/session/prompt`: queues the prompt and returns its turn id at once.
    pub async fn prompt(
        self: &Arc<Self>,
        id: &str,
        text: String,
        editor: Option<EditorState>,
    ) -> Result<String, AgentError> {
        self.prompt_with_images(id, text, editor, Vec::new()).await
    }

    /// [`Agent::prompt`] with images (given, and `@path` mentions of image files): all
    /// checked first, so a refused image queues nothing.
    pub async fn prompt_with_images(
        self: &Arc<Self>,
        id: &str,
        text: String,
        editor: Option<EditorState>,
        images: Vec<crate::agent::images::ImageInput>,
    ) -> Result<String, AgentError> {
        let images = self.prompt_images(id, &text, images).await?;
        let handle = self.handle(id).await?;
        let turn_id = format!("turn-{}", session_log::new_session_id());
        let busy = {
            let mut state = handle.state();
            let busy = state.running.is_some() || !state.waiting.is_empty();
            state.waiting.push(turn_id.clone());
            if busy {
                state.texts.insert(turn_id.clone(), text.clone());
            }
            busy
        };
        if busy {
            self.update(id, &turn_id, Update::Queued);
            self.announce_queue(&handle);
        }
        handle
            .queue
            .send(Job::Prompt(Prompt {
                turn_id: turn_id.clone(),
                text,
                editor,
                images,
            }))
            .map_err(|_| AgentError::failed(format!("session {id} is shutting down")))?;
        Ok(turn_id)
    }

    /// `agent/session/cancel`: stops the running turn and drops the queued ones.
    pub async fn cancel(self: &Arc<Self>, id: &str) -> Result<bool, AgentError> {
        let handle = self.handle(id).await?;
        let (dropped, running, listed) = {
            let mut state = handle.state();
            let dropped = std::mem::take(&mut state.waiting);
            // The worker skips them when it gets to them.
            state.dropped.extend(dropped.iter().cloned());
            let listed = !state.texts.is_empty() || !state.steering.is_empty();
            state.texts.clear();
            // Steering messages not taken yet go with the turn they were for.
            state.steering.clear();
            (
                dropped,
                state.running.as_ref().map(|(_, token)| token.clone()),
                listed,
            )
        };
        for turn_id in &dropped {
            self.update(id, turn_id, Update::cancelled_before_start());
        }
        if listed {
            self.announce_queue(&handle);
        }
        let cancelled = match running {
            Some(token) => {
                let _quiet = handle.updates.locked();
                token.cancel();
                true
            }
            None => !dropped.is_empty(),
        };
        // What the turn said before the cancel reaches the client before this answer.
        self.host.flush().await;
        Ok(cancelled)
    }
}

pub(in crate::agent) fn summary(session: &Session) -> SessionSummary {
    SessionSummary {
        session_id: session.id.clone(),
        title: if session.title.is_empty() {
            "(empty session)".into()
        } else {
            session.title.clone()
        },
        updated_at: session.updated_at,
        turns: session.turns,
        parent_session_id: session.parent.as_ref().map(|p| p.parent_session_id.clone()),
        parent_tool_call_id: session
            .parent
            .as_ref()
            .map(|p| p.parent_tool_call_id.clone()),
        forked_from: session.forked_from.as_ref().map(|f| f.session_id.clone()),
        forked_from_checkpoint: session
            .forked_from
            .as_ref()
            .and_then(|f| f.checkpoint_id.clone()),
    }
}

pub(in crate::agent) fn call_name(session: &Session, call_id: &str) -> Option<String> {
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
