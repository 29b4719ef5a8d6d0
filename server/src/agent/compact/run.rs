//! One compaction: the plan decided (`agentls_core::compaction::plan`), a summary fetched
//! when it asks for one, the `Compacted` boundary recorded, and what the client sees.

use crate::agent::compact::CompactionOutcome;
use crate::agent::sessions::{Prepared, SessionHandle};
use crate::agent::tokenizer_for;
use crate::agent::Agent;
use crate::agent::AgentError;
use crate::locks::Locked;
use agentls_core::compaction::plan::Trigger;
use agentls_core::compaction::plan::Window;
use agentls_core::event::Event;
use agentls_core::session::Session;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::sessions::live::Durability;
use crate::tools::registry::Registry;
use agentls_core::compaction;
use agentls_core::compaction::plan::{
    self, Decision, NeedSummary, PlanInput, Planned, SummarySource,
};
use agentls_core::context::StaticContext;
use agentls_core::updates::{CompactionPhase, Update};

/// What a compaction starts from, read from the session under one lock.
struct Snapshot {
    entries: Vec<agentls_core::history::Entry>,
    generation: u64,
    model: String,
    ledger: String,
    calibration: agentls_core::tokens::Calibration,
}

/// One compaction in flight, as the client sees it: its turn, its `$/progress` token, and
/// the figures its updates and status carry.
struct Announcer<'a> {
    agent: &'a Agent,
    handle: &'a SessionHandle,
    turn_id: &'a str,
    progress: String,
    tokens_before: usize,
    /// The tokens outside the history (tools, system prompt, instructions).
    fixed: usize,
    calibration: agentls_core::tokens::Calibration,
    window: Window,
}

impl Announcer<'_> {
    fn fill(&self, history: usize) -> f64 {
        self.calibration.apply(history + self.fixed) as f64
            / self.window.context_window.max(1) as f64
    }

    async fn status(&self, history: usize) {
        let live = self.handle.live.lock().await;
        self.agent.status(
            &live.session,
            "compacting",
            self.calibration.apply(history + self.fixed),
            true,
        );
    }

    async fn started(&self, trigger: Trigger) {
        self.agent.update(
            &self.handle.id,
            self.turn_id,
            Update::Compaction {
                phase: CompactionPhase::Started,
                tokens_before: self.tokens_before,
                tokens_after: None,
                strategy: None,
                trigger: Some(trigger.name().to_string()),
                duration_ms: None,
                fallback_reason: None,
                message: None,
            },
        );
        self.status(self.tokens_before).await;
        self.agent
            .host
            .progress(&self.progress, "Compacting conversation", None);
    }

    fn failed(&self, message: String, progress_end: String) -> AgentError {
        self.agent.update(
            &self.handle.id,
            self.turn_id,
            Update::Compaction {
                phase: CompactionPhase::Failed,
                tokens_before: self.tokens_before,
                tokens_after: None,
                strategy: None,
                trigger: None,
                duration_ms: None,
                fallback_reason: None,
                message: Some(message.clone()),
            },
        );
        self.agent
            .host
            .progress(&self.progress, "", Some(progress_end));
        AgentError::failed(message)
    }

    async fn completed(
        &self,
        metrics: &agentls_core::event::CompactionMetrics,
        compactions: u32,
        low_yield: u32,
    ) {
        self.agent.update(
            &self.handle.id,
            self.turn_id,
            Update::Compaction {
                phase: CompactionPhase::Completed,
                tokens_before: self.tokens_before,
                tokens_after: Some(metrics.tokens_after),
                strategy: Some(metrics.strategy.clone()),
                trigger: Some(metrics.trigger.clone()),
                duration_ms: Some(metrics.duration_ms),
                fallback_reason: metrics.fallback_reason.clone(),
                message: None,
            },
        );
        let (before, after) = (
            self.fill(self.tokens_before),
            self.fill(metrics.tokens_after),
        );
        self.agent.host.progress(
            &self.progress,
            "",
            Some(format!("{:.0}% → {:.0}%", before * 100.0, after * 100.0)),
        );
        self.status(metrics.tokens_after).await;
        for warning in plan::warnings(compactions, low_yield) {
            self.agent.update(
                &self.handle.id,
                self.turn_id,
                Update::warning(warning.message()),
            );
        }
        tracing::info!(
            "session {}: compacted ({}, {}) {} → {} tokens in {} ms",
            self.handle.id,
            metrics.trigger,
            metrics.strategy,
            self.tokens_before,
            metrics.tokens_after,
            metrics.duration_ms
        );
    }
}

impl Agent {
    /// One compaction of `handle`'s session: planned by `compaction::plan` (trim, summarize
    /// or use the prepared summary, or fall back to a rule-based drop; rebuild, verify), then
    /// recorded. The client sees
    /// `compaction` updates, `agent/status` with state `compacting`, and `$/progress`.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::agent) async fn compact_now(
        self: &Arc<Self>,
        handle: &Arc<SessionHandle>,
        turn_id: &str,
        trigger: Trigger,
        instructions: Option<String>,
        static_context: &StaticContext,
        window: Window,
        cancel: &CancellationToken,
    ) -> Result<CompactionOutcome, AgentError> {
        self.pre_compact_hooks(handle, turn_id, trigger, instructions.as_deref(), cancel)
            .await;
        let started = Instant::now();
        let config = self.host.config();
        let prompts = self.host.prompts();
        let snapshot = self.compaction_snapshot(handle).await;
        let tokenizer = tokenizer_for(&config, &snapshot.model);
        let fixed = {
            let session = Session::new("", "", "", tokenizer);
            self.static_tokens(static_context, &session)
        };
        let announcer = Announcer {
            agent: self,
            handle,
            turn_id,
            progress: format!("compaction-{turn_id}"),
            tokens_before: compaction::tokens_of(&snapshot.entries),
            fixed,
            calibration: snapshot.calibration,
            window,
        };
        announcer.started(trigger).await;
        let input = PlanInput {
            entries: &snapshot.entries,
            generation: snapshot.generation,
            ledger: &snapshot.ledger,
            focused: instructions.is_some(),
            trigger,
            config: &config.compaction,
            window,
            fixed,
            prompts: &prompts,
            tokenizer,
        };
        let planned = self
            .plan_compaction(
                &input,
                handle,
                &snapshot.model,
                instructions.as_deref(),
                static_context,
                cancel,
            )
            .await
            .map_err(|message| {
                let end = format!("compaction failed: {message}");
                announcer.failed(message, end)
            })?;
        let (outcome, summary) = record(handle, turn_id, planned, started, &announcer).await?;
        self.after_compaction(handle, turn_id, trigger, &summary, cancel)
            .await;
        Ok(outcome)
    }

    /// The history, ledger and calibration a compaction starts from.
    async fn compaction_snapshot(&self, handle: &SessionHandle) -> Snapshot {
        let config = self.host.config();
        let prompts = self.host.prompts();
        let live = handle.live.lock().await;
        let session = &live.session;
        Snapshot {
            entries: session.history.entries().to_vec(),
            generation: session.generation,
            model: session.model.clone(),
            // Nothing to carry yet: no empty block.
            ledger: if session.ledger.is_empty() {
                String::new()
            } else {
                session.ledger.render(
                    &prompts,
                    config.compaction.ledger_max_tokens,
                    session.history.tokenizer(),
                )
            },
            calibration: session.calibration,
        }
    }

    /// The compacted history and its metrics (all but the duration): what `plan` decides,
    /// with the summary it needs: the prepared one (waiting for one in flight) when it still
    /// fits, else a fresh one.
    pub(in crate::agent) async fn plan_compaction(
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
            if !handle.prepared.locked().pending {
                break;
            }
            tokio::select! {
                () = done => {}
                () = cancel.cancelled() => break,
            }
        }
        let prepared = {
            let prepared = handle.prepared.locked();
            prepared
                .result
                .clone()
                .filter(|p| need.prepared_fits(input, p))
        };
        // A user's own `/compact` always asks; an automatic one skips a summary that would
        // take the provider longer than it saves.
        let too_slow = (input.trigger != Trigger::Manual)
            .then(|| {
                plan::summary_too_slow(
                    input.fixed + agentls_core::compaction::tokens_of(need.entries()),
                    self.prompt_speed(model),
                    input.config.max_summary_ms,
                )
            })
            .flatten();
        let summary = match (prepared, too_slow) {
            (Some(prepared), _) => SummarySource::Prepared(prepared),
            (None, Some(why)) => SummarySource::Fresh(Err(why)),
            (None, None) => SummarySource::Fresh(match self.provider(model) {
                Err(err) => Err(err.message),
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
}

/// Records the compacted history (the `Compacted` boundary, synced), drops the prepared
/// summary it used or outdated, and tells the client. The outcome, and the summary (empty
/// when the compaction made none) for PostCompact.
async fn record(
    handle: &SessionHandle,
    turn_id: &str,
    planned: Planned,
    started: Instant,
    announcer: &Announcer<'_>,
) -> Result<(CompactionOutcome, String), AgentError> {
    let summary = planned.summary();
    let Planned {
        entries: rebuilt,
        mut metrics,
    } = planned;
    metrics.duration_ms = started.elapsed().as_millis() as u64;
    let outcome = CompactionOutcome {
        tokens_before: announcer.tokens_before,
        tokens_after: metrics.tokens_after,
        strategy: metrics.strategy.clone(),
    };
    let event = Event::Compacted {
        turn_id: Some(turn_id.to_string()).filter(|t| t.starts_with("turn-")),
        entries: rebuilt,
        summary: summary.clone(),
        metrics: metrics.clone(),
    };
    let (compactions, low_yield) = {
        let mut live = handle.live.lock().await;
        if let Err(message) = live.record(&event, Durability::Synced, Registry::builtin()) {
            drop(live);
            return Err(announcer.failed(message, "compaction failed".into()));
        }
        (live.session.compactions, live.session.low_yield_compactions)
    };
    *handle.prepared.locked() = Prepared::default();
    announcer.completed(&metrics, compactions, low_yield).await;
    Ok((outcome, summary))
}
