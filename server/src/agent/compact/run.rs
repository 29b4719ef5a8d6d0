//! One compaction: the plan decided (`agentls_core::compaction::plan`), a summary fetched
//! when it asks for one, the `Compacted` boundary recorded, and what the client sees.

use crate::agent::compact::CompactionOutcome;
use crate::agent::compact::Prepared;
use crate::agent::sessions::SessionHandle;
use crate::agent::tokenizer_for;
use crate::agent::Agent;
use crate::agent::AgentError;
use agentls_core::compaction::plan::Trigger;
use agentls_core::compaction::plan::Window;
use agentls_core::session::Event;
use agentls_core::session::Session;
use serde_json::json;
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
        self.after_compaction(handle, turn_id, cancel).await;
        Ok(outcome)
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
}
