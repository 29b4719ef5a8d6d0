//! Compaction inside the agent: when it runs (a model call at the threshold, a summary
//! prepared ahead in the background, `agent/session/compact`, a switch to a smaller model, a
//! context-length answer), the summary call, waiting for a summary in flight, and recording
//! the boundary with what the client sees. Every decision (what to keep, which summary, the
//! fallbacks, the triggers, the target) is `agentls_core::compaction::plan` (pure); this is
//! the IO around it and must not decide what to keep.
//!
//! Here: the requests and jobs (`agent/session/compact`, `setModel`), the window and its
//! triggers; `run`: one compaction; `summary`: the summary call; `prepare`: the summary
//! prepared ahead in the background.

use crate::agent::sessions::Job;
use crate::agent::sessions::SessionHandle;
use crate::agent::tokenizer_for;
use crate::agent::Agent;
use crate::agent::AgentError;
use crate::locks::Locked;
use crate::store::session_log;
use agentls_core::event::Event;
use agentls_core::inspect;
use agentls_core::models;
use agentls_core::session::Session;
use agentls_core::tokens::Calibration;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
mod prepare;
mod run;
mod summary;

use crate::agent::sessions::live::Durability;
use crate::tools::registry::Registry;
use agentls_core::compaction::plan;
pub use agentls_core::compaction::plan::{Trigger, Window};
use agentls_core::context::StaticContext;
use agentls_core::history::History;

/// What a compaction did: what `agent/session/compact` answers.
pub use crate::protocol::lsp::SessionCompactResult as CompactionOutcome;

impl Agent {
    /// The window of `session` (its own, the configured one, or the model's known one).
    pub(in crate::agent) fn window_of(&self, session: &Session) -> Window {
        let config = self.host.config();
        let context_window = models::context_window(
            session.context_window.or(config.context_window),
            Some(session.model.as_str()).filter(|m| !m.is_empty()),
        );
        Window::new(
            context_window,
            config.max_output_tokens,
            session.calibration.ratio,
        )
    }

    /// `agent/session/compact`: queued behind the running turn, like a prompt.
    pub async fn compact(
        self: &Arc<Self>,
        id: &str,
        instructions: Option<String>,
    ) -> Result<CompactionOutcome, AgentError> {
        let handle = self.handle(id).await?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        handle
            .queue
            .send(Job::Compact {
                instructions,
                reply,
            })
            .map_err(|_| AgentError::failed(format!("session {id} is shutting down")))?;
        answer
            .await
            .map_err(|_| AgentError::failed(format!("session {id} stopped before compacting")))?
    }

    /// `agent/session/setModel`: queued like a prompt; true when it compacted first.
    pub async fn set_model(
        self: &Arc<Self>,
        id: &str,
        model: String,
        context_window: Option<usize>,
    ) -> Result<bool, AgentError> {
        if model.trim().is_empty() {
            return Err(AgentError::invalid_params(
                "invalid params: model must not be empty",
            ));
        }
        let handle = self.handle(id).await?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        handle
            .queue
            .send(Job::SetModel {
                model,
                context_window,
                reply,
            })
            .map_err(|_| AgentError::failed(format!("session {id} is shutting down")))?;
        answer
            .await
            .map_err(|_| AgentError::failed(format!("session {id} stopped before switching")))?
    }

    pub(in crate::agent) async fn compact_job(
        self: &Arc<Self>,
        handle: &Arc<SessionHandle>,
        instructions: Option<String>,
    ) -> Result<CompactionOutcome, AgentError> {
        let job_id = format!("compact-{}", session_log::new_session_id());
        let Some(cancel) = handle.start(&job_id) else {
            return Err(AgentError::failed("the compaction was cancelled"));
        };
        let result = async {
            let static_context = self.static_context_now().await?;
            let window = {
                let live = handle.live.lock().await;
                self.window_of(&live.session)
            };
            self.compact_now(
                handle,
                &job_id,
                Trigger::Manual,
                instructions,
                &static_context,
                window,
                &cancel,
            )
            .await
        }
        .await;
        self.end_running(handle);
        let live = handle.live.lock().await;
        self.idle_status(&live.session, None);
        result
    }

    pub(in crate::agent) async fn set_model_job(
        self: &Arc<Self>,
        handle: &Arc<SessionHandle>,
        model: String,
        context_window: Option<usize>,
    ) -> Result<bool, AgentError> {
        let job_id = format!("model-{}", session_log::new_session_id());
        let Some(cancel) = handle.start(&job_id) else {
            return Err(AgentError::failed("the model switch was cancelled"));
        };
        let result = self
            .switch_model(handle, &job_id, model, context_window, &cancel)
            .await;
        self.end_running(handle);
        let live = handle.live.lock().await;
        self.idle_status(&live.session, None);
        result
    }

    /// Compacts with the old model when the history would not fit the new one, then
    /// switches.
    pub(in crate::agent) async fn switch_model(
        self: &Arc<Self>,
        handle: &Arc<SessionHandle>,
        job_id: &str,
        model: String,
        context_window: Option<usize>,
        cancel: &CancellationToken,
    ) -> Result<bool, AgentError> {
        let config = self.host.config();
        let static_context = self.static_context_now().await?;
        let (used, next) = {
            let live = handle.live.lock().await;
            let mut next = live.session.clone();
            next.model = model.clone();
            next.context_window = context_window;
            let used =
                self.static_tokens(&static_context, &live.session) + live.session.history.tokens();
            let mut window = self.window_of(&next);
            window.summarizer_usable = self.window_of(&live.session).usable;
            (used, window)
        };
        let mut compacted = false;
        if plan::compact_before_switch(&config.compaction, used, next.usable) {
            // With the old model (its window holds the history), aiming at the new window.
            self.compact_now(
                handle,
                job_id,
                Trigger::ModelSwitch,
                None,
                &static_context,
                next,
                cancel,
            )
            .await?;
            compacted = true;
        }
        let event = Event::ModelChanged {
            model: model.clone(),
            context_window,
        };
        let prompts = self.host.prompts();
        let mut live = handle.live.lock().await;
        live.record(&event, Durability::Synced, Registry::builtin())
            .map_err(AgentError::failed)?;
        let tokenizer = tokenizer_for(&config, &model);
        if tokenizer != live.session.history.tokenizer() {
            live.session.history.retokenize(tokenizer, &prompts);
        }
        Ok(compacted)
    }

    /// The static context for a compaction outside a turn (no editor).
    pub(in crate::agent) async fn static_context_now(&self) -> Result<StaticContext, AgentError> {
        let config = self.host.config();
        let prompts = self.host.prompts();
        let gathered = self.host.gather(None).await.map_err(AgentError::failed)?;
        let history = History::new(config.tokenizer());
        let inputs = gathered.inputs(&config, &prompts, &history, Calibration::default());
        Ok(inspect::static_context(&inputs))
    }

    /// Tokens of a request with `static_context` and no history.
    pub(in crate::agent) fn static_tokens(
        &self,
        static_context: &StaticContext,
        session: &Session,
    ) -> usize {
        let prompts = self.host.prompts();
        let mut cache = self.cache.locked();
        agentls_core::context::static_tokens(
            static_context,
            session.history.tokenizer(),
            &prompts,
            &mut cache.counts,
        )
    }

    /// The status at rest: the provider's figure when it gave one, else `estimate` (the
    /// last whole request, when there was one), else the calibrated history.
    pub(in crate::agent) fn idle_status(&self, session: &Session, estimate: Option<usize>) {
        self.status_now(session, "idle", estimate);
    }

    /// The status in `state` with the fill as `idle_status` measures it (a mode change
    /// tells it between model calls).
    pub(in crate::agent) fn status_now(
        &self,
        session: &Session,
        state: &str,
        estimate: Option<usize>,
    ) {
        let used = session
            .last_usage
            .map(|u| ((u.input_tokens + u.output_tokens) as usize, false))
            .or(estimate.map(|e| (e, true)))
            .unwrap_or_else(|| (session.calibration.apply(session.history.tokens()), true));
        self.status(session, state, used.0, used.1);
    }

    /// Whether the next model call of `session` must wait for a compaction, or a summary
    /// should be prepared: (compact now, prepare).
    pub(in crate::agent) fn triggers(&self, session: &Session, used: usize) -> (bool, bool) {
        let triggers = plan::triggers(
            &self.host.config().compaction,
            session.low_yield_compactions,
            used,
            self.window_of(session).usable,
        );
        (triggers.compact, triggers.prepare)
    }
}
