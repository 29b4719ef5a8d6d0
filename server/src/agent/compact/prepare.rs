//! A summary prepared ahead, in the background, once the window passes `prepareAt`: the
//! swap at the threshold then costs no wait.

use crate::agent::sessions::SessionHandle;
use crate::agent::tokenizer_for;
use crate::agent::Agent;
use crate::locks::Locked;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

use agentls_core::compaction::plan::{self, PreparedSummary};
use agentls_core::context::StaticContext;

impl Agent {
    /// Starts computing a summary in the background unless one is ready or running.
    pub(in crate::agent) fn prepare_in_background(
        self: &Arc<Self>,
        handle: &Arc<SessionHandle>,
        static_context: &StaticContext,
    ) {
        {
            let mut prepared = handle.prepared.locked();
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
                let mut prepared = handle.prepared.locked();
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

    pub(in crate::agent) async fn prepare(
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
        // On a slow provider a summary in the background would queue before the turn's own
        // calls (a local server answers one at a time): not prepared, and not before one
        // call of this model showed its speed; the compaction then uses the extractive
        // summary.
        let fixed = {
            let session = agentls_core::session::Session::new("", "", "", tokenizer);
            self.static_tokens(static_context, &session)
        };
        let speed = self
            .prompt_speed(&model)
            .ok_or("not prepared: no call of this model has shown its speed yet")?;
        if let Some(why) = plan::summary_too_slow(
            fixed + agentls_core::compaction::tokens_of(&covered),
            Some(speed),
            config.compaction.max_summary_ms,
        ) {
            return Err(format!("not prepared: {why}"));
        }
        let provider = self.provider(&model).map_err(|e| e.message)?;
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
}
