//! One turn: gather the context, record the user's message, then model calls and tool calls
//! until the model stops, `maxSteps`, a cancel or an error; then close the turn (log synced,
//! progress log, `turnEnd`). The order of events and cancellation are decided here; LSP and
//! HTTP details are the host's and the provider's.

mod attachments;
mod child;
mod commands;
mod hooks;
mod mcp_calls;
mod mcp_prompts;
mod slash;
mod tool_calls;

pub(super) use child::Scope;

use super::live::Durability;
use super::*;
use crate::tools::registry::Registry;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::host::Host;
use crate::store::session_log;
use agentls_core::event::Event;
use agentls_core::history::{Entry, Item};
use agentls_core::inspect;
use agentls_core::prompt_text;
use agentls_core::tokens::Calibration;
use agentls_core::wire::{ErrorKind, ProviderEvent};

/// How a turn ended: the `turnEnd` stop reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stop {
    EndTurn,
    Cancelled,
    MaxSteps,
    Error,
}

impl Stop {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Stop::EndTurn => "endTurn",
            Stop::Cancelled => "cancelled",
            Stop::MaxSteps => "maxSteps",
            Stop::Error => "error",
        }
    }
}

/// What a turn works with once it is open.
struct Opened {
    config: agentls_core::config::Config,
    prompts: Arc<agentls_core::prompts::Prompts>,
    model: String,
    static_context: agentls_core::context::StaticContext,
    provider: Arc<crate::provider::Provider>,
    tokenizer: agentls_core::tokens::TokenizerKind,
}

/// What one model call brought back.
struct ModelReply {
    text: String,
    calls: Vec<Call>,
    usage: Option<agentls_core::wire::Usage>,
    result: Result<(), agentls_core::wire::ProviderError>,
}

/// Whether the turn goes on after a step.
enum Flow {
    Next,
    Done(Stop),
}

pub(super) struct Turn {
    pub(super) agent: Arc<Agent>,
    pub(super) handle: Arc<SessionHandle>,
    pub(super) turn_id: String,
    pub(super) cancel: CancellationToken,
    pub(super) usage: (u64, u64),
    /// The calibrated size of the last request sent (the status at the end of the turn).
    pub(super) last_estimate: Option<usize>,
    /// For the progress log: files changed, evidence gathered, problems met.
    pub(super) changed: Vec<String>,
    pub(super) evidence: Vec<String>,
    pub(super) problems: Vec<String>,
    pub(super) steps: usize,
    /// The calls whose `toolCall` the client got: each gets its final `toolCallUpdate`,
    /// even after a cancel.
    pub(super) announced: std::collections::HashSet<String>,
    /// A Stop hook already made this turn go on once.
    pub(super) stop_hook_active: bool,
    /// A hook's `continue: false`: the turn ends after the current calls, with this reason.
    pub(super) halt: Option<String>,
    /// What this turn may use beyond the session's defaults: a custom command's tools and
    /// model, or a subagent's.
    pub(super) scope: Scope,
}

/// A tool call the model asked for.
pub(super) struct Call {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) arguments: String,
}

impl Turn {
    /// A turn that has done nothing yet, within `scope`.
    pub(in crate::agent) fn new(
        agent: Arc<Agent>,
        handle: Arc<SessionHandle>,
        turn_id: String,
        cancel: CancellationToken,
        scope: Scope,
    ) -> Turn {
        Turn {
            agent,
            handle,
            turn_id,
            cancel,
            usage: (0, 0),
            last_estimate: None,
            changed: Vec::new(),
            evidence: Vec::new(),
            problems: Vec::new(),
            steps: 0,
            announced: Default::default(),
            stop_hook_active: false,
            halt: None,
            scope,
        }
    }

    pub(super) fn host(&self) -> &Arc<dyn Host> {
        &self.agent.host
    }

    /// Tells the client; nothing after a cancel (its remaining updates are the final
    /// `toolCallUpdate` of calls it was told of, then `turnEnd`). Whether it was sent.
    pub(super) fn update(&self, update: Value) -> bool {
        say(
            &self.agent,
            &self.handle,
            &self.turn_id,
            &self.cancel,
            update,
        )
    }

    /// Writes the event, then applies it: what the client hears about is on disk first.
    pub(super) async fn record(&self, event: Event) -> Result<(), String> {
        let mut live = self.handle.live.lock().await;
        live.record(&event, Durability::Buffered, Registry::builtin())
    }

    pub(super) async fn record_item(&self, item: Item) -> Result<Entry, String> {
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
    pub(super) async fn fail(
        &mut self,
        message: impl Into<String>,
        retryable: bool,
        code: Option<&str>,
    ) {
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
    pub(super) async fn learn_from_overflow(
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

    pub(super) fn warn(&self, message: String) {
        self.update(json!({"kind": "warning", "message": message}));
    }

    pub(super) async fn run(&mut self, mut prompt: Prompt) -> Stop {
        // A custom command becomes its expanded prompt (a built-in name stays built-in).
        if let Err(stop) = self.custom_command(&mut prompt).await {
            return stop;
        }
        // `/mcp__SERVER__PROMPT`: the server's prompt (a custom command of that name wins).
        if self.scope.expanded.is_none() {
            if let Err(stop) = self.mcp_prompt(&mut prompt).await {
                return stop;
            }
        }
        if self.scope.expanded.is_none() {
            if let Some(command) = prompt_text::slash_command(&prompt.text) {
                return self.slash(command).await;
            }
        }
        let opened = match self.open(&prompt).await {
            Ok(opened) => opened,
            Err(stop) => return stop,
        };
        self.drive(&opened).await
    }

    /// Model calls and tool calls until the model stops, the step limit, a cancel or an
    /// error.
    async fn drive(&mut self, opened: &Opened) -> Stop {
        // Compaction (at the threshold, or after a context-length answer) happens at most
        // once per model call, so a history that cannot shrink does not loop.
        let mut compacted_for_this_call = false;
        loop {
            if self.cancel.is_cancelled() {
                return Stop::Cancelled;
            }
            if self.steps >= opened.config.max_steps {
                return Stop::MaxSteps;
            }
            match self.step(opened, &mut compacted_for_this_call).await {
                Flow::Next => {}
                Flow::Done(stop) => return stop,
            }
        }
    }

    /// Gathers the turn's context and records its start and the user's message; an error
    /// here ends the turn before any model call.
    async fn open(&mut self, prompt: &Prompt) -> Result<Opened, Stop> {
        let host = self.host().clone();
        let config = host.config();
        let prompts = host.prompts();
        let gathered = match host.gather(prompt.editor.as_ref()).await {
            Ok(gathered) => gathered,
            Err(message) => return Err(self.refuse(message).await),
        };
        let model = match &self.scope.model {
            Some(model) => model.clone(),
            None => self.handle.live.lock().await.session.model.clone(),
        };
        self.note_agents_md(gathered.agents.as_ref().map_or("", |a| a.text.as_str()));
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
        let static_context = self.offer_tools(static_context, &prompts).await;
        // @mentions: attached as data, within what the editor block left of its budget.
        let mentioned = (self.scope.mentions_from.clone()).unwrap_or_else(|| prompt.text.clone());
        let attachments = self
            .attachments(&mentioned, &block, &config, &prompts)
            .await;
        if !attachments.is_empty() {
            block.text.push_str("\n\n");
            block.text.push_str(&attachments);
        }
        let started = self
            .record(Event::TurnStarted {
                turn_id: self.turn_id.clone(),
                at: session_log::now_millis(),
            })
            .await;
        let started = match started {
            Ok(()) => match self.prompt_hooks(&prompt.text).await {
                Ok(()) => Ok(()),
                Err(reason) => {
                    self.fail(
                        format!("a UserPromptSubmit hook blocked the prompt: {reason}"),
                        false,
                        Some("blockedByHook"),
                    )
                    .await;
                    return Err(Stop::Error);
                }
            },
            Err(message) => Err(message),
        };
        let recorded = match started {
            Ok(()) => self
                .record_item(Item::User {
                    text: prompt.text.clone(),
                    context: Some(block.text.clone()),
                })
                .await
                .map(|_| ()),
            Err(message) => Err(message),
        };
        if let Err(message) = recorded {
            self.fail(message, false, None).await;
            return Err(Stop::Error);
        }
        self.opened(config, prompts, model, static_context).await
    }

    /// Ends a turn that sent nothing: its start and the error recorded, the error told.
    pub(super) async fn refuse(&mut self, message: String) -> Stop {
        let _ = self
            .record(Event::TurnStarted {
                turn_id: self.turn_id.clone(),
                at: session_log::now_millis(),
            })
            .await;
        self.fail(message, false, None).await;
        Stop::Error
    }

    /// The turn's provider and tokenizer for `model`, with the rest of what it works with
    /// (a top-level turn's `open` and a subagent's turn end here).
    async fn opened(
        &mut self,
        config: agentls_core::config::Config,
        prompts: Arc<agentls_core::prompts::Prompts>,
        model: String,
        static_context: agentls_core::context::StaticContext,
    ) -> Result<Opened, Stop> {
        let provider = match self.agent.provider(&model) {
            Ok(provider) => provider,
            Err(err) => {
                self.fail(err.0, false, None).await;
                return Err(Stop::Error);
            }
        };
        let tokenizer = tokenizer_for(&config, &model);
        Ok(Opened {
            config,
            prompts,
            model,
            static_context,
            provider,
            tokenizer,
        })
    }

    /// One model call and the tool calls it asked for: assemble the request, compact first
    /// when the window is full, stream the answer, record it, run the calls.
    async fn step(&mut self, opened: &Opened, compacted_for_this_call: &mut bool) -> Flow {
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
        let assembly = agentls_core::context::AssemblyConfig {
            tokenizer: opened.tokenizer,
            context_window: window.context_window,
            calibration,
        };
        let request = {
            let mut cache = self.agent.cache.lock().unwrap_or_else(|e| e.into_inner());
            agentls_core::context::assemble(
                &assembly,
                &opened.static_context,
                &history,
                None,
                &opened.prompts,
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
        if compact && !*compacted_for_this_call {
            *compacted_for_this_call = true;
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
                self.warn(format!("compaction failed: {}", err.0));
            }
            return Flow::Next;
        }
        // Not right after a compaction: its result is what the next summary would cover.
        if prepare && !*compacted_for_this_call {
            self.agent
                .prepare_in_background(&self.handle, &opened.static_context);
        }
        self.steps += 1;
        {
            let live = self.handle.live.lock().await;
            self.agent.status(&live.session, "running", used, true);
        }
        let mut reply = self.call_model(opened, &request).await;
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
            if self.stop_hooks().await {
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
        let result = {
            let stream = opened
                .provider
                .stream(request, &opened.prompts, &events_tx, &self.cancel);
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
                            err.message, compaction_error.0
                        );
                        self.fail(message, false, Some("contextLengthExceeded"))
                            .await;
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
                self.fail(message, err.retryable, code).await;
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

    /// Records the model's calls, then runs them in order; the calls a cancel leaves get
    /// an "aborted" output, so the history never holds a call without its output.
    async fn run_calls(&mut self, calls: &[Call]) -> Option<Stop> {
        for call in calls {
            if let Err(message) = self
                .record_item(Item::ToolCall {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                })
                .await
            {
                self.fail(message, false, None).await;
                return Some(Stop::Error);
            }
        }
        let mut index = 0;
        while index < calls.len() {
            if self.cancel.is_cancelled() {
                for skipped in &calls[index..] {
                    let _ = self
                        .finish_call(
                            skipped,
                            self.host()
                                .prompts()
                                .aborted(agentls_core::prompts::AbortReason::CancelledBeforeRun),
                            false,
                        )
                        .await;
                }
                return Some(Stop::Cancelled);
            }
            // `task` calls next to each other run at the same time; their outputs are
            // recorded in call order.
            let tasks = calls[index..]
                .iter()
                .take_while(|c| c.name == agentls_core::subagents::TASK_TOOL)
                .count();
            let batch = &calls[index..index + tasks.max(1)];
            let results = if tasks > 0 {
                self.run_tasks(batch).await
            } else {
                vec![self.run_tool(&batch[0]).await]
            };
            for (call, (output, success)) in batch.iter().zip(results) {
                if let Err(message) = self.finish_call(call, output, success).await {
                    self.fail(message, false, None).await;
                    return Some(Stop::Error);
                }
            }
            index += batch.len();
        }
        None
    }

    pub(super) fn on_provider_event(
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

    /// Ends the turn: the log records it (and is synced), the progress log gets its entry,
    /// the client gets `turnEnd` and an idle status.
    pub(super) async fn finish(&mut self, stop: Stop) {
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
/// updates are the final `toolCallUpdate`s (`Turn::finish_call`) and `turnEnd`. The lock
/// makes the check and the send one step for `cancel`. Whether it was sent.
pub(super) fn say(
    agent: &Agent,
    handle: &SessionHandle,
    turn_id: &str,
    cancel: &CancellationToken,
    update: Value,
) -> bool {
    let _quiet = handle.updates.lock().unwrap_or_else(|e| e.into_inner());
    if cancel.is_cancelled() {
        return false;
    }
    agent.update(&handle.id, turn_id, update);
    true
}

pub(super) fn list_or(items: &[String], empty: &str) -> String {
    if items.is_empty() {
        empty.to_string()
    } else {
        items.join("; ")
    }
}
