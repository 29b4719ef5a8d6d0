//! The model step: assemble the request, compact first when the fill says so, stream one
//! model call (text and thoughts forwarded as they come), and read what came back: the
//! answer, the tool calls, the usage, or an error (a context-length answer compacts and
//! sends the call again, once).

use crate::agent::compact;
use crate::agent::turn::Call;
use crate::agent::turn::CompactionCheck;
use crate::agent::turn::Flow;
use crate::agent::turn::ModelReply;
use crate::agent::turn::Opened;
use crate::agent::turn::Stop;
use crate::agent::turn::Turn;
use crate::locks::Locked;
use agentls_core::event::Event;
use agentls_core::history::Item;
use agentls_core::updates::Update;
use agentls_core::wire::ErrorKind;
use agentls_core::wire::ProviderEvent;
use tokio::sync::mpsc;

impl Turn {
    /// One model call and the tool calls it asked for: assemble the request, compact first
    /// when the window is full, stream the answer, record it, run the calls.
    pub(in crate::agent::turn) async fn step(
        &mut self,
        opened: &Opened,
        compacted_for_this_call: &mut bool,
    ) -> Flow {
        // Reminders go at the very end of the request: after everything recorded so far.
        if let Err(message) = self.flush_reminders().await {
            self.fail(message, false, None).await;
            return Flow::Done(Stop::Error);
        }
        let (history, calibration, window) = {
            let live = self.handle.live.lock().await;
            (
                live.session.history.clone(),
                live.session.calibration,
                self.agent.window_of(&live.session),
            )
        };
        // Assembled uncalibrated: `estimated` is agentls's own count (what a usage report
        // calibrates against), `used` the calibrated one; calibrating both counted the
        // ratio twice once a sample was taken (a 4x ratio made 8k look like 32k).
        let assembly = agentls_core::context::AssemblyConfig {
            tokenizer: opened.tokenizer,
            context_window: window.context_window,
            calibration: agentls_core::tokens::Calibration::default(),
        };
        let (history, temperature) = self.attempt_view(history, &opened.prompts);
        let mut request = {
            let mut cache = self.agent.cache.locked();
            agentls_core::context::assemble(
                &assembly,
                &opened.static_context,
                &history,
                None,
                &opened.prompts,
                &mut cache.counts,
            )
        };
        request.temperature = temperature;
        let estimated = request.total_tokens;
        let used = calibration.apply(estimated);
        self.last_estimate = Some(used);
        self.measure_compaction(used, window);
        if self
            .compact_first(opened, used, window, compacted_for_this_call)
            .await
        {
            return Flow::Next;
        }
        // Compaction had its chance: a request still larger than the window is not sent.
        if used > window.context_window {
            self.fail(
                format!(
                    "the request would be about {used} tokens, more than the model's {}-token window, even after compacting: it was not sent. Start a new session, or shorten what you attach.",
                    window.context_window
                ),
                false,
                Some("contextLengthExceeded"),
            )
            .await;
            return Flow::Done(Stop::Error);
        }
        self.steps += 1;
        {
            let live = self.handle.live.lock().await;
            self.agent.status(&live.session, "running", used, true);
        }
        let reply = self.call_model(opened, &request).await;
        self.take_reply(reply, estimated, opened, window, compacted_for_this_call)
            .await
    }

    /// Compacts before the call when the fill reached the threshold (once per call: a
    /// history that cannot shrink does not loop), or starts preparing a summary in the
    /// background when it nears it. Whether it compacted (the step then starts again).
    async fn compact_first(
        &mut self,
        opened: &Opened,
        used: usize,
        window: compact::Window,
        compacted_for_this_call: &mut bool,
    ) -> bool {
        let (compact, prepare) = {
            let live = self.handle.live.lock().await;
            self.agent.triggers(&live.session, used)
        };
        if compact && !*compacted_for_this_call && self.compaction_check == CompactionCheck::NoRoom
        {
            // It cannot make room here: the request goes out as it is while it fits the
            // window (outputs are cut to what is left), or the turn ends (`step`).
            return false;
        }
        if compact && !*compacted_for_this_call {
            *compacted_for_this_call = true;
            self.compaction_check = CompactionCheck::Measure;
            let outcome = self
                .agent
                .compact_now(
                    &self.handle,
                    &self.turn_id,
                    compact::Trigger::Threshold,
                    None,
                    &opened.static_context,
                    window,
                    &self.cancel,
                )
                .await;
            if let Err(err) = outcome {
                // The call goes out anyway: the provider may still take it.
                self.warn(format!("compaction failed: {}", err.message));
            }
            return true;
        }
        // Not right after a compaction: its result is what the next summary would cover.
        if prepare && !*compacted_for_this_call {
            self.agent
                .prepare_in_background(&self.handle, &opened.static_context);
        }
        false
    }

    /// The request right after a compaction of this turn tells whether it made room: one
    /// still within 10 points of the threshold did not, and the turn compacts no more (told
    /// once), instead of compacting at every step for nothing.
    fn measure_compaction(&mut self, used: usize, window: compact::Window) {
        if self.compaction_check != CompactionCheck::Measure {
            return;
        }
        let threshold = self.host().config().compaction.threshold;
        let fill = used as f64 / (window.usable as f64).max(1.0);
        if fill >= threshold - 0.10 {
            self.compaction_check = CompactionCheck::NoRoom;
            self.warn(format!(
                "compacting did not make room: the request is still {:.0}% of the usable window; this turn will not compact again",
                fill * 100.0
            ));
        } else {
            self.compaction_check = CompactionCheck::Helped;
        }
    }

    /// What a model call brought back, recorded: its text, then its error or its usage, then
    /// the end of the turn (after the Stop hooks) or its tool calls.
    async fn take_reply(
        &mut self,
        mut reply: ModelReply,
        estimated: usize,
        opened: &Opened,
        window: compact::Window,
        compacted_for_this_call: &mut bool,
    ) -> Flow {
        // The provider's call ids are untrusted: each call gets a session-unique one.
        if !reply.calls.is_empty() {
            let proposed: Vec<String> = reply.calls.iter().map(|c| c.id.clone()).collect();
            let ids = {
                let live = self.handle.live.lock().await;
                agentls_core::history::unique_call_ids(&live.session.history, &proposed)
            };
            for (call, id) in reply.calls.iter_mut().zip(ids) {
                call.id = id;
            }
        }
        if !reply.text.is_empty() {
            if let Err(message) = self
                .record_item(Item::Assistant {
                    text: reply.text.clone(),
                })
                .await
            {
                self.fail(message, false, None).await;
                return Flow::Done(Stop::Error);
            }
        }
        if let Err(err) = reply.result {
            let partial = !reply.text.is_empty();
            return self
                .on_model_error(
                    err,
                    partial,
                    estimated,
                    opened,
                    window,
                    compacted_for_this_call,
                )
                .await;
        }
        *compacted_for_this_call = false;
        if let Some(usage) = reply.usage {
            self.record_usage(usage, estimated).await;
        }
        if reply.calls.is_empty() {
            // A file listing in the text is the call it stands for (`tools.fileListings`).
            if let Some(flow) = self.take_listings(&reply.text).await {
                return flow;
            }
            if self.unfinished_change()
                || self.failing_check()
                || self.stop_hooks(&reply.text).await
            {
                return Flow::Next;
            }
            return Flow::Done(Stop::EndTurn);
        }
        match self.run_calls(&reply.calls).await {
            Some(stop) => Flow::Done(stop),
            None => match self.halt.take() {
                Some(reason) => {
                    self.warn(format!("a hook stopped the turn: {reason}"));
                    Flow::Done(Stop::EndTurn)
                }
                None => Flow::Next,
            },
        }
    }

    /// `reminders.unfinishedChange`: the model ends a turn that asked for a change without
    /// having changed a file; once a turn, it goes on with a reminder. Whether it goes on.
    fn unfinished_change(&mut self) -> bool {
        let config = self.host().config();
        if !config.reminders.unfinished_change || self.reminded_unfinished {
            return false;
        }
        let texts = self.host().prompts().reminders.clone();
        let Some(reminder) = agentls_core::reminders::unfinished_change(
            &self.turn_id,
            &self.request,
            self.changed.len(),
            config.change_form(),
            &texts,
        ) else {
            return false;
        };
        self.reminded_unfinished = true;
        self.agent.hooks.queue(&self.handle.id, reminder);
        true
    }

    /// `reminders.failingCheck`: the model ends a turn while the check after its last
    /// change fails; at most twice a turn, it goes on with a reminder. Whether it goes on.
    fn failing_check(&mut self) -> bool {
        if !self.host().config().failing_check_reminder() {
            return false;
        }
        let texts = self.host().prompts().reminders.clone();
        let Some(reminder) = agentls_core::reminders::failing_check(
            &self.turn_id,
            self.failed_check.is_some(),
            self.failing_check_reminders,
            self.host().config().change_form(),
            &texts,
        ) else {
            return false;
        };
        self.failing_check_reminders += 1;
        self.agent.hooks.queue(&self.handle.id, reminder);
        true
    }

    /// Streams one model call, forwarding text and thoughts to the editor as they come.
    async fn call_model(
        &mut self,
        opened: &Opened,
        request: &agentls_core::context::Request<'_>,
    ) -> ModelReply {
        let (events_tx, mut events_rx) = mpsc::unbounded_channel();
        let mut text = String::new();
        let mut calls: Vec<Call> = Vec::new();
        let mut usage = None;
        let sent = std::time::Instant::now();
        let mut first_event = None;
        let result = {
            let stream = opened
                .provider
                .stream(request, &opened.prompts, &events_tx, &self.cancel);
            tokio::pin!(stream);
            loop {
                tokio::select! {
                    biased;
                    Some(event) = events_rx.recv() => {
                        first_event.get_or_insert_with(|| sent.elapsed());
                        self.on_provider_event(event, &mut text, &mut calls, &mut usage);
                    }
                    result = &mut stream => {
                        while let Ok(event) = events_rx.try_recv() {
                            first_event.get_or_insert_with(|| sent.elapsed());
                            self.on_provider_event(event, &mut text, &mut calls, &mut usage);
                        }
                        break result;
                    }
                }
            }
        };
        let usage = usage.or_else(|| result.as_ref().ok().and_then(|c| c.usage));
        if let Some(first_event) = first_event {
            // The provider's count when it gave one, else the request's estimate.
            let input = usage.map_or(request.total_tokens as u64, |u| u.input_tokens);
            self.agent
                .note_prompt_speed(&opened.model, input, first_event);
        }
        ModelReply {
            text,
            calls,
            usage,
            result: result.map(|_| ()),
        }
    }

    /// A failed model call: a cancel ends the turn; a context-length answer (with nothing
    /// streamed yet) compacts and sends the call again, once; anything else is the turn's
    /// error.
    async fn on_model_error(
        &mut self,
        err: agentls_core::wire::ProviderError,
        partial: bool,
        estimated: usize,
        opened: &Opened,
        window: compact::Window,
        compacted_for_this_call: &mut bool,
    ) -> Flow {
        match err.kind {
            ErrorKind::Cancelled => Flow::Done(Stop::Cancelled),
            ErrorKind::ContextLengthExceeded if !*compacted_for_this_call && !partial => {
                // What the error says is the provider's own count: it calibrates the
                // estimates, and a smaller real window replaces the configured one.
                *compacted_for_this_call = true;
                self.steps -= 1;
                let window = self
                    .learn_from_overflow(&err.message, estimated, &opened.model, window)
                    .await;
                let compacted = self
                    .agent
                    .compact_now(
                        &self.handle,
                        &self.turn_id,
                        compact::Trigger::Overflow,
                        None,
                        &opened.static_context,
                        window,
                        &self.cancel,
                    )
                    .await;
                match compacted {
                    Ok(_) => Flow::Next,
                    Err(compaction_error) => {
                        let message = format!(
                            "{} — the conversation is larger than the model's context window, and compacting it failed: {}",
                            err.message, compaction_error.message
                        );
                        self.fail(message.clone(), false, Some("contextLengthExceeded"))
                            .await;
                        self.stop_failure_hooks(&err, &message).await;
                        Flow::Done(Stop::Error)
                    }
                }
            }
            _ => {
                let (message, code) = match err.kind {
                    ErrorKind::StreamCut if partial => (
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
                self.fail(message.clone(), err.retryable, code).await;
                self.stop_failure_hooks(&err, &message).await;
                Flow::Done(Stop::Error)
            }
        }
    }

    /// The provider's count of a call: recorded (it calibrates later estimates) and shown.
    async fn record_usage(&mut self, usage: agentls_core::wire::Usage, estimated: usize) {
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

    pub(in crate::agent) fn on_provider_event(
        &self,
        event: ProviderEvent,
        text: &mut String,
        calls: &mut Vec<Call>,
        usage: &mut Option<agentls_core::wire::Usage>,
    ) {
        match event {
            ProviderEvent::Text(chunk) => {
                text.push_str(&chunk);
                self.update(Update::AgentMessageChunk { text: chunk });
            }
            ProviderEvent::Reasoning(chunk) => {
                self.update(Update::AgentThoughtChunk { text: chunk });
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
                self.update(Update::warning(format!(
                    "{reason}; retrying in {:.1}s (attempt {attempt})",
                    delay.as_secs_f64()
                )));
            }
            ProviderEvent::Skipped { line } => {
                tracing::warn!("provider sent a line that is not an event: {line:?}");
            }
        }
    }

    /// Records what a context-length error tells: the request's real size (a calibration
    /// sample) and the model's real window (kept for the session). The window to compact
    /// for.
    pub(in crate::agent) async fn learn_from_overflow(
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
}
