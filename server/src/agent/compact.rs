//! Compaction inside the agent: when it runs (a model call at the threshold, a summary
//! prepared ahead in the background, `agent/session/compact`, a switch to a smaller model, a
//! context-length answer), the summary call, waiting for a summary in flight, and recording
//! the boundary with what the client sees. Every decision (what to keep, which summary, the
//! fallbacks, the triggers, the target) is `agentls_core::compaction::plan` (pure); this is
//! the IO around it and must not decide what to keep.

use std::time::Instant;

use super::live::Durability;
use super::*;
use crate::tools::registry::Registry;
use agentls_core::compaction::plan::{
    self, Decision, NeedSummary, PlanInput, Planned, PreparedSummary, Summary, SummarySource,
};
pub use agentls_core::compaction::plan::{Trigger, Window};
use agentls_core::compaction::{self, Style};
use agentls_core::context::StaticContext;
use agentls_core::history::History;

/// What `agent/session/compact` answers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionOutcome {
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub strategy: String,
}

#[derive(Default)]
pub(super) struct Prepared {
    /// A background summary call is running.
    pending: bool,
    result: Option<PreparedSummary>,
}

/// The note a rule-based fallback leaves where the summary would be: the one place its
/// text lives.
impl Agent {
    /// The window of `session` (its own, the configured one, or the model's known one).
    pub(super) fn window_of(&self, session: &Session) -> Window {
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
            .map_err(|_| AgentError(format!("session {id} is shutting down")))?;
        answer
            .await
            .map_err(|_| AgentError(format!("session {id} stopped before compacting")))?
    }

    /// `agent/session/setModel`: queued like a prompt; true when it compacted first.
    pub async fn set_model(
        self: &Arc<Self>,
        id: &str,
        model: String,
        context_window: Option<usize>,
    ) -> Result<bool, AgentError> {
        if model.trim().is_empty() {
            return Err(AgentError("invalid params: model must not be empty".into()));
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
            .map_err(|_| AgentError(format!("session {id} is shutting down")))?;
        answer
            .await
            .map_err(|_| AgentError(format!("session {id} stopped before switching")))?
    }

    pub(super) async fn compact_job(
        self: &Arc<Self>,
        handle: &Arc<SessionHandle>,
        instructions: Option<String>,
    ) -> Result<CompactionOutcome, AgentError> {
        let job_id = format!("compact-{}", session_log::new_session_id());
        let Some(cancel) = handle.start(&job_id) else {
            return Err(AgentError("the compaction was cancelled".into()));
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
        handle.stop();
        let live = handle.live.lock().await;
        self.idle_status(&live.session, None);
        result
    }

    pub(super) async fn set_model_job(
        self: &Arc<Self>,
        handle: &Arc<SessionHandle>,
        model: String,
        context_window: Option<usize>,
    ) -> Result<bool, AgentError> {
        let job_id = format!("model-{}", session_log::new_session_id());
        let Some(cancel) = handle.start(&job_id) else {
            return Err(AgentError("the model switch was cancelled".into()));
        };
        let result = self
            .switch_model(handle, &job_id, model, context_window, &cancel)
            .await;
        handle.stop();
        let live = handle.live.lock().await;
        self.idle_status(&live.session, None);
        result
    }

    /// Compacts with the old model when the history would not fit the new one, then
    /// switches.
    pub(super) async fn switch_model(
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
            .map_err(AgentError)?;
        let tokenizer = tokenizer_for(&config, &model);
        if tokenizer != live.session.history.tokenizer() {
            live.session.history.retokenize(tokenizer, &prompts);
        }
        Ok(compacted)
    }

    /// The static context for a compaction outside a turn (no editor).
    pub(super) async fn static_context_now(&self) -> Result<StaticContext, AgentError> {
        let config = self.host.config();
        let prompts = self.host.prompts();
        let gathered = self.host.gather(None).await.map_err(AgentError)?;
        let history = History::new(config.tokenizer());
        let inputs = gathered.inputs(&config, &prompts, &history, Calibration::default());
        Ok(inspect::static_context(&inputs))
    }

    /// Tokens of a request with `static_context` and no history.
    fn static_tokens(&self, static_context: &StaticContext, session: &Session) -> usize {
        let prompts = self.host.prompts();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        agentls_core::context::static_tokens(
            static_context,
            session.history.tokenizer(),
            &prompts,
            &mut cache.counts,
        )
    }

    /// The status at rest: the provider's figure when it gave one, else `estimate` (the
    /// last whole request, when there was one), else the calibrated history.
    pub(super) fn idle_status(&self, session: &Session, estimate: Option<usize>) {
        let used = session
            .last_usage
            .map(|u| ((u.input_tokens + u.output_tokens) as usize, false))
            .or(estimate.map(|e| (e, true)))
            .unwrap_or_else(|| (session.calibration.apply(session.history.tokens()), true));
        self.status(session, "idle", used.0, used.1);
    }

    /// Whether the next model call of `session` must wait for a compaction, or a summary
    /// should be prepared: (compact now, prepare).
    pub(super) fn triggers(&self, session: &Session, used: usize) -> (bool, bool) {
        let triggers = plan::triggers(
            &self.host.config().compaction,
            session.low_yield_compactions,
            used,
            self.window_of(session).usable,
        );
        (triggers.compact, triggers.prepare)
    }

    /// Starts computing a summary in the background unless one is ready or running.
    pub(super) fn prepare_in_background(
        self: &Arc<Self>,
        handle: &Arc<SessionHandle>,
        static_context: &StaticContext,
    ) {
        {
            let mut prepared = handle.prepared.lock().unwrap_or_else(|e| e.into_inner());
            if prepared.pending || prepared.result.is_some() {
                return;
            }
            prepared.pending = true;
        }
        let agent = self.clone();
        let handle = handle.clone();
        let static_context = static_context.clone();
        tokio::spawn(async move {
            let result = agent.prepare(&handle, &static_context).await;
            {
                let mut prepared = handle.prepared.lock().unwrap_or_else(|e| e.into_inner());
                prepared.pending = false;
                match result {
                    Ok(summary) => prepared.result = Some(summary),
                    Err(err) => {
                        tracing::warn!("session {}: preparing a summary failed: {err}", handle.id)
                    }
                }
            }
            handle.prepared_done.notify_waiters();
        });
    }

    async fn prepare(
        self: &Arc<Self>,
        handle: &Arc<SessionHandle>,
        static_context: &StaticContext,
    ) -> Result<PreparedSummary, String> {
        let config = self.host.config();
        let prompts = self.host.prompts();
        let (entries, generation, model, window) = {
            let live = handle.live.lock().await;
            (
                live.session.history.entries().to_vec(),
                live.session.generation,
                live.session.model.clone(),
                self.window_of(&live.session),
            )
        };
        let tokenizer = tokenizer_for(&config, &model);
        let covered = plan::to_prepare(&entries, &config.compaction, &prompts, tokenizer)?;
        let cut = covered.len();
        let provider = self.provider(&model).map_err(|e| e.0)?;
        let started = Instant::now();
        let summary = self
            .summarize(
                &provider,
                static_context,
                &covered,
                None,
                window,
                &CancellationToken::new(),
            )
            .await?;
        tracing::info!(
            "session {}: summary prepared in {} ms for {} items",
            handle.id,
            started.elapsed().as_millis(),
            cut
        );
        Ok(PreparedSummary {
            generation,
            cut,
            summary,
        })
    }

    /// One compaction of `handle`'s session: planned by `compaction::plan` (trim, summarize
    /// or use the prepared summary, or fall back to a rule-based drop; rebuild, verify), then
    /// recorded. The client sees
    /// `compaction` updates, `agent/status` with state `compacting`, and `$/progress`.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn compact_now(
        self: &Arc<Self>,
        handle: &Arc<SessionHandle>,
        turn_id: &str,
        trigger: Trigger,
        instructions: Option<String>,
        static_context: &StaticContext,
        window: Window,
        cancel: &CancellationToken,
    ) -> Result<CompactionOutcome, AgentError> {
        let started = Instant::now();
        let config = self.host.config();
        let prompts = self.host.prompts();
        let (entries, generation, model, ledger, calibration) = {
            let live = handle.live.lock().await;
            let tokenizer = live.session.history.tokenizer();
            (
                live.session.history.entries().to_vec(),
                live.session.generation,
                live.session.model.clone(),
                // Nothing to carry yet: no empty block.
                if live.session.ledger.is_empty() {
                    String::new()
                } else {
                    live.session.ledger.render(
                        &prompts,
                        config.compaction.ledger_max_tokens,
                        tokenizer,
                    )
                },
                live.session.calibration,
            )
        };
        let tokenizer = tokenizer_for(&config, &model);
        let fixed = {
            let session = Session::new("", "", "", tokenizer);
            self.static_tokens(static_context, &session)
        };
        let tokens_before = compaction::tokens_of(&entries);
        let fill = |history: usize| {
            calibration.apply(history + fixed) as f64 / window.context_window.max(1) as f64
        };
        self.update(&handle.id, turn_id, json!({"kind": "compaction", "phase": "started", "tokensBefore": tokens_before, "trigger": trigger.name()}));
        {
            let live = handle.live.lock().await;
            self.status(
                &live.session,
                "compacting",
                calibration.apply(tokens_before + fixed),
                true,
            );
        }
        let progress = format!("compaction-{turn_id}");
        self.host
            .progress(&progress, "Compacting conversation", None);

        let input = PlanInput {
            entries: &entries,
            generation,
            ledger: &ledger,
            focused: instructions.is_some(),
            trigger,
            config: &config.compaction,
            window,
            fixed,
            prompts: &prompts,
            tokenizer,
        };
        let result = self
            .plan_compaction(
                &input,
                handle,
                &model,
                instructions.as_deref(),
                static_context,
                cancel,
            )
            .await;
        let planned = match result {
            Ok(planned) => planned,
            Err(message) => {
                self.update(&handle.id, turn_id, json!({"kind": "compaction", "phase": "failed", "tokensBefore": tokens_before, "message": message}));
                self.host
                    .progress(&progress, "", Some(format!("compaction failed: {message}")));
                return Err(AgentError(message));
            }
        };
        let summary = planned.summary();
        let Planned {
            entries: rebuilt,
            mut metrics,
        } = planned;
        metrics.duration_ms = started.elapsed().as_millis() as u64;
        let outcome = CompactionOutcome {
            tokens_before,
            tokens_after: metrics.tokens_after,
            strategy: metrics.strategy.clone(),
        };
        let event = Event::Compacted {
            turn_id: Some(turn_id.to_string()).filter(|t| t.starts_with("turn-")),
            entries: rebuilt,
            summary,
            metrics: metrics.clone(),
        };
        let (compactions, low_yield) = {
            let mut live = handle.live.lock().await;
            if let Err(message) = live.record(&event, Durability::Synced, Registry::builtin()) {
                drop(live);
                self.update(&handle.id, turn_id, json!({"kind": "compaction", "phase": "failed", "tokensBefore": tokens_before, "message": message}));
                self.host
                    .progress(&progress, "", Some("compaction failed".into()));
                return Err(AgentError(message));
            }
            (live.session.compactions, live.session.low_yield_compactions)
        };
        *handle.prepared.lock().unwrap_or_else(|e| e.into_inner()) = Prepared::default();
        let (before, after) = (fill(tokens_before), fill(metrics.tokens_after));
        self.update(
            &handle.id,
            turn_id,
            json!({
                "kind": "compaction",
                "phase": "completed",
                "tokensBefore": tokens_before,
                "tokensAfter": metrics.tokens_after,
                "strategy": metrics.strategy,
                "trigger": metrics.trigger,
                "durationMs": metrics.duration_ms,
            }),
        );
        self.host.progress(
            &progress,
            "",
            Some(format!("{:.0}% → {:.0}%", before * 100.0, after * 100.0)),
        );
        {
            let live = handle.live.lock().await;
            self.status(
                &live.session,
                "compacting",
                calibration.apply(metrics.tokens_after + fixed),
                true,
            );
        }
        for warning in plan::warnings(compactions, low_yield) {
            self.update(
                &handle.id,
                turn_id,
                json!({"kind": "warning", "message": warning.message()}),
            );
        }
        tracing::info!(
            "session {}: compacted ({}, {}) {} → {} tokens in {} ms",
            handle.id,
            metrics.trigger,
            metrics.strategy,
            tokens_before,
            metrics.tokens_after,
            metrics.duration_ms
        );
        Ok(outcome)
    }

    /// The compacted history and its metrics (all but the duration): what `plan` decides,
    /// with the summary it needs: the prepared one (waiting for one in flight) when it still
    /// fits, else a fresh one.
    async fn plan_compaction(
        self: &Arc<Self>,
        input: &PlanInput<'_>,
        handle: &Arc<SessionHandle>,
        model: &str,
        instructions: Option<&str>,
        static_context: &StaticContext,
        cancel: &CancellationToken,
    ) -> Result<Planned, String> {
        let need: NeedSummary = match plan::decide(input) {
            Decision::Done(planned) => return Ok(planned),
            Decision::NeedSummary(need) => need,
        };
        // A preparation in flight finishes sooner than a new summary call would.
        loop {
            let done = handle.prepared_done.notified();
            if !handle
                .prepared
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pending
            {
                break;
            }
            tokio::select! {
                () = done => {}
                () = cancel.cancelled() => break,
            }
        }
        let prepared = {
            let prepared = handle.prepared.lock().unwrap_or_else(|e| e.into_inner());
            prepared
                .result
                .clone()
                .filter(|p| need.prepared_fits(input, p))
        };
        let summary = match prepared {
            Some(prepared) => SummarySource::Prepared(prepared),
            None => SummarySource::Fresh(match self.provider(model) {
                Err(err) => Err(err.0),
                Ok(provider) => {
                    self.summarize(
                        &provider,
                        static_context,
                        need.entries(),
                        instructions,
                        input.window,
                        cancel,
                    )
                    .await
                }
            }),
        };
        if cancel.is_cancelled() {
            return Err("the compaction was cancelled".into());
        }
        let planned = plan::finish(input, need, summary);
        if let Ok(Planned { metrics, .. }) = &planned {
            if let Some(reason) = &metrics.fallback_reason {
                tracing::warn!(
                    "session {}: compaction fell back to a rule-based drop: {reason}",
                    handle.id
                );
            }
        }
        planned
    }

    /// Asks the model for a summary of `entries` in the configured style. The request is
    /// the session's own (same system prompt) with the compaction prompt as the last user
    /// message and no tools. Too large for the model: the oldest rounds are dropped until
    /// it fits. A checkpoint that is not valid JSON is asked again once, then the style
    /// falls back to handoff.
    async fn summarize(
        &self,
        provider: &Provider,
        static_context: &StaticContext,
        entries: &[Entry],
        instructions: Option<&str>,
        window: Window,
        cancel: &CancellationToken,
    ) -> Result<Summary, String> {
        let config = self.host.config();
        let mut style = config.compaction.style;
        let mut failures_of_style = 0;
        let mut total = Usage::default();
        loop {
            let prompt = self.compaction_prompt(style, instructions)?;
            let answer = self
                .summary_call(
                    provider,
                    static_context,
                    entries,
                    &prompt,
                    window,
                    cancel,
                    &mut total,
                )
                .await?;
            match compaction::parse_summary(style, &answer) {
                Ok(text) => {
                    return Ok(Summary {
                        text,
                        style,
                        usage: total,
                    })
                }
                Err(why) => {
                    failures_of_style += 1;
                    let Some(next) = plan::style_after_failure(style, failures_of_style) else {
                        return Err(why);
                    };
                    tracing::warn!("compaction: {why}");
                    if next != style {
                        failures_of_style = 0;
                    }
                    style = next;
                }
            }
        }
    }

    fn compaction_prompt(
        &self,
        style: Style,
        instructions: Option<&str>,
    ) -> Result<String, String> {
        // `compaction.promptFile` is read with the other prompts (`store::prompts::load`).
        let prompts = self.host.prompts();
        let mut prompt = prompts.compaction(style).to_string();
        if let Some(focus) = instructions.map(str::trim).filter(|f| !f.is_empty()) {
            prompt.push_str(&format!("\n\n{}\n{focus}", prompts.compact_focus));
        }
        Ok(prompt)
    }

    /// One summary request; the oldest rounds are dropped while it does not fit.
    #[allow(clippy::too_many_arguments)]
    async fn summary_call(
        &self,
        provider: &Provider,
        static_context: &StaticContext,
        entries: &[Entry],
        prompt: &str,
        window: Window,
        cancel: &CancellationToken,
        total: &mut Usage,
    ) -> Result<String, String> {
        let prompts = self.host.prompts();
        let config = self.host.config();
        let tokenizer = tokenizer_for(&config, &provider.config().model);
        // No tools: the model must answer in text.
        let no_tools = StaticContext {
            tools: Vec::new(),
            ..static_context.clone()
        };
        let mut dropped = 0;
        loop {
            let kept = compaction::drop_oldest_rounds(entries, dropped);
            if kept.is_empty() && dropped > 0 {
                return Err(
                    "even the newest part of the conversation does not fit the summarizer".into(),
                );
            }
            let mut history = History::from_entries(tokenizer, kept.to_vec());
            history.record(
                Item::User {
                    text: prompt.to_string(),
                    context: None,
                },
                config.tool_output_limit,
                &prompts,
            );
            let assembly = agentls_core::context::AssemblyConfig {
                tokenizer,
                context_window: window.context_window,
                calibration: Calibration::default(),
            };
            let request = {
                let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
                agentls_core::context::assemble(
                    &assembly,
                    &no_tools,
                    &history,
                    None,
                    &prompts,
                    &mut cache.counts,
                )
            };
            if request.total_tokens > window.estimated(window.summarizer_usable) && !kept.is_empty()
            {
                dropped = plan::drop_more(dropped);
                continue;
            }
            let (events_tx, mut events_rx) = mpsc::unbounded_channel();
            let result = provider
                .stream(&request, &prompts, &events_tx, cancel)
                .await;
            drop(events_tx);
            let mut text = String::new();
            while let Some(event) = events_rx.recv().await {
                match event {
                    ProviderEvent::Text(chunk) => text.push_str(&chunk),
                    ProviderEvent::Usage(usage) => {
                        total.input_tokens += usage.input_tokens;
                        total.output_tokens += usage.output_tokens;
                    }
                    _ => {}
                }
            }
            match result {
                Ok(_) => return Ok(text),
                Err(err) if err.kind == ErrorKind::ContextLengthExceeded && !kept.is_empty() => {
                    dropped = plan::drop_more(dropped);
                }
                Err(err) => return Err(format!("the summary call failed: {}", err.message)),
            }
        }
    }
}
