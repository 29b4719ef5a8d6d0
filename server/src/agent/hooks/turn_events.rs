//! The turn's side of hooks and reminders: which hook event fires where (SessionStart,
//! InstructionsLoaded and UserPromptSubmit when the turn opens; PreToolUse, then
//! PermissionRequest and Notification when the call is asked about, then PostToolUse or
//! PostToolUseFailure around a call; SubagentStart as a subagent's turn opens; Stop or
//! SubagentStop when the model ends, StopFailure when the provider failed; Notification
//! when a top-level turn ends), and the reminders recorded before each model call.

use crate::agent::turn::Call;
use crate::agent::turn::Turn;
use crate::tools::registry::Registry;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::agent::sessions::live::Durability;
use agentls_core::event::Event;
use agentls_core::history::{InstructionRole, Item};
use agentls_core::hooks::{HookEvent, Permission};
use agentls_core::reminders;
use agentls_core::updates::{ReminderShown, Update};

/// The plan tool, named here: the core matches no tool name.
const PLAN_TOOL: &str = "update_plan";

/// What PreToolUse decided for a call: go on with these arguments (the permission, if any,
/// overrides the approval policy), or Err: not run, the reason for the model.
pub(in crate::agent) type PreTool = Result<(Value, Option<Permission>), String>;

impl Turn {
    /// SessionStart (the session's first turn in this server), InstructionsLoaded for the
    /// AGENTS.md files of `instructions` the session had not loaded, then UserPromptSubmit.
    /// Err (the reason) when a hook blocked the prompt: it is not sent.
    pub(in crate::agent) async fn prompt_hooks(
        &mut self,
        text: &str,
        instructions: &[PathBuf],
    ) -> Result<(), String> {
        let turns = self.handle.live.lock().await.session.turns;
        // `turns` already counts this turn.
        if let Some(source) = self
            .agent
            .hooks
            .start_source(&self.handle.id, turns.saturating_sub(1))
        {
            self.agent
                .run_hooks(
                    &self.handle,
                    &self.turn_id,
                    HookEvent::SessionStart,
                    Some(source),
                    json!({"source": source}),
                    &self.cancel,
                )
                .await;
        }
        let (reason, loaded) = self
            .agent
            .hooks
            .instructions_loaded(&self.handle.id, instructions);
        for file in loaded {
            self.agent
                .run_hooks(
                    &self.handle,
                    &self.turn_id,
                    HookEvent::InstructionsLoaded,
                    Some(reason),
                    json!({"file_path": file, "memory_type": "Project", "load_reason": reason}),
                    &self.cancel,
                )
                .await;
        }
        let verdict = self
            .agent
            .run_hooks(
                &self.handle,
                &self.turn_id,
                HookEvent::UserPromptSubmit,
                None,
                json!({"prompt": text}),
                &self.cancel,
            )
            .await;
        match verdict.block.or(verdict.stop) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    /// PreToolUse for a parsed call of a known tool.
    pub(in crate::agent) async fn pre_tool_hooks(
        &mut self,
        call: &Call,
        arguments: &Value,
    ) -> PreTool {
        let verdict = self
            .agent
            .run_hooks(
                &self.handle,
                &self.turn_id,
                HookEvent::PreToolUse,
                Some(&call.name),
                crate::agent::hooks::tool_fields(&call.id, &call.name, arguments),
                &self.cancel,
            )
            .await;
        if let Some(stop) = &verdict.stop {
            self.halt = Some(stop.clone());
        }
        if let Some((Permission::Deny, why)) = &verdict.permission {
            let reason = why
                .clone()
                .or(verdict.block.clone())
                .unwrap_or_else(|| "denied".into());
            return Err(format!("blocked by a PreToolUse hook: {reason}"));
        }
        if let Some(reason) = verdict.block.or(verdict.stop) {
            return Err(format!("blocked by a PreToolUse hook: {reason}"));
        }
        Ok((
            verdict.updated_input.unwrap_or_else(|| arguments.clone()),
            verdict.permission.map(|(p, _)| p),
        ))
    }

    /// After a call that ran (`ran`: how long): PostToolUse when it succeeded,
    /// PostToolUseFailure (`error`: its output) when it failed, as Claude Code splits them.
    /// A block's reason reaches the model as a reminder (the call already happened).
    pub(in crate::agent) async fn post_tool_hooks(
        &mut self,
        call: &Call,
        arguments: &Value,
        output: &str,
        success: bool,
        ran: Duration,
    ) {
        let mut fields = crate::agent::hooks::tool_fields(&call.id, &call.name, arguments);
        fields["duration_ms"] = json!(ran.as_millis() as u64);
        let event = if success {
            fields["tool_response"] = json!({"success": true, "output": output});
            HookEvent::PostToolUse
        } else {
            fields["error"] = json!(output);
            HookEvent::PostToolUseFailure
        };
        let verdict = self
            .agent
            .run_hooks(
                &self.handle,
                &self.turn_id,
                event,
                Some(&call.name),
                fields,
                &self.cancel,
            )
            .await;
        if let Some(stop) = &verdict.stop {
            self.halt = Some(stop.clone());
        }
        if let Some(reason) = verdict.block {
            let texts = self.host().prompts().reminders.clone();
            let mut reminder = reminders::from_hook(event.name(), &call.name, &reason, &texts);
            reminder.key = format!("hook:{}:{}", event.name(), call.id);
            self.agent.hooks.queue(&self.handle.id, reminder);
        }
    }

    /// PermissionRequest, when a call is about to be asked about: Some(the answer) when a
    /// hook gave one (`allow` runs the call unasked, `deny` refuses it with the hook's
    /// message), None to ask the user. An `allow` that rewrites the input is asked instead:
    /// the call was prepared (its diff shown) from the input as it is.
    pub(in crate::agent) async fn permission_request_hooks(
        &mut self,
        call: &Call,
        arguments: &Value,
    ) -> Option<Result<(), String>> {
        let verdict = self
            .agent
            .run_hooks(
                &self.handle,
                &self.turn_id,
                HookEvent::PermissionRequest,
                Some(&call.name),
                json!({"tool_name": call.name, "tool_input": arguments}),
                &self.cancel,
            )
            .await;
        if let Some(stop) = &verdict.stop {
            self.halt = Some(stop.clone());
        }
        match verdict.permission {
            Some((Permission::Deny, message)) => Some(Err(format!(
                "denied by a PermissionRequest hook: {}",
                message.as_deref().unwrap_or("denied")
            ))),
            Some((Permission::Allow, _)) if verdict.updated_input.is_some() => {
                self.warn(format!(
                    "a PermissionRequest hook allowed {} with an updatedInput, which agentls does not apply: you are asked instead",
                    call.name
                ));
                None
            }
            Some((Permission::Allow, _)) => Some(Ok(())),
            _ => None,
        }
    }

    /// Notification: agentls needs the user (Claude Code's `notification_type` `kind`,
    /// with its `message` and `title`). What the hooks say is not read (Claude Code
    /// discards it).
    pub(in crate::agent) async fn notification_hooks(
        &self,
        kind: &str,
        message: &str,
        title: &str,
    ) {
        self.agent
            .run_hooks(
                &self.handle,
                &self.turn_id,
                HookEvent::Notification,
                Some(kind),
                json!({"message": message, "title": title, "notification_type": kind}),
                &self.cancel,
            )
            .await;
    }

    /// SubagentStart, as a subagent's turn opens: what its hooks add is queued in its own
    /// session, for its first model call.
    pub(in crate::agent) async fn subagent_start_hooks(&self) {
        let Some(asked_in) = self.handle.asks_in.get() else {
            return;
        };
        self.agent
            .run_hooks(
                &self.handle,
                &self.turn_id,
                HookEvent::SubagentStart,
                Some(&asked_in.agent),
                json!({"agent_id": self.handle.id, "agent_type": asked_in.agent}),
                &self.cancel,
            )
            .await;
    }

    /// StopFailure, when the turn ends on the provider's error `error` (`shown`: what the
    /// user was told). What the hooks say is not read.
    pub(in crate::agent) async fn stop_failure_hooks(
        &self,
        error: &agentls_core::wire::ProviderError,
        shown: &str,
    ) {
        use agentls_core::wire::ErrorKind;
        // Claude Code's error types; the ones agentls cannot tell apart are `unknown`.
        let kind = match error.kind {
            ErrorKind::RateLimited => "rate_limit",
            ErrorKind::Auth => "authentication_failed",
            ErrorKind::BadRequest | ErrorKind::ContextLengthExceeded => "invalid_request",
            ErrorKind::Server => "server_error",
            ErrorKind::Config
            | ErrorKind::Unreachable
            | ErrorKind::StreamCut
            | ErrorKind::Timeout
            | ErrorKind::Cancelled => "unknown",
        };
        self.agent
            .run_hooks(
                &self.handle,
                &self.turn_id,
                HookEvent::StopFailure,
                Some(kind),
                json!({
                    "error": kind,
                    "error_details": error.message,
                    "last_assistant_message": shown,
                }),
                &self.cancel,
            )
            .await;
    }

    /// Stop when the model ended the turn (SubagentStop in a subagent's turn), with the
    /// reply's text: true when a hook blocked it and the turn goes on (once: a second block
    /// is reported and the turn ends).
    pub(in crate::agent) async fn stop_hooks(&mut self, last_message: &str) -> bool {
        let (event, target, fields) = match self.handle.asks_in.get() {
            Some(asked_in) => {
                let own_log = self
                    .handle
                    .live
                    .lock()
                    .await
                    .log
                    .path()
                    .display()
                    .to_string();
                (
                    HookEvent::SubagentStop,
                    Some(asked_in.agent.as_str()),
                    json!({
                        "stop_hook_active": self.stop_hook_active,
                        "agent_id": self.handle.id,
                        "agent_type": asked_in.agent,
                        "agent_transcript_path": own_log,
                        "last_assistant_message": last_message,
                    }),
                )
            }
            None => (
                HookEvent::Stop,
                None,
                json!({
                    "stop_hook_active": self.stop_hook_active,
                    "last_assistant_message": last_message,
                }),
            ),
        };
        let verdict = self
            .agent
            .run_hooks(
                &self.handle,
                &self.turn_id,
                event,
                target,
                fields,
                &self.cancel,
            )
            .await;
        let Some(reason) = verdict.block else {
            return false;
        };
        if self.stop_hook_active || self.cancel.is_cancelled() {
            self.warn(format!(
                "a {} hook asked again to go on ({reason}); the turn ends: it continues once only",
                event.name()
            ));
            return false;
        }
        self.stop_hook_active = true;
        let texts = self.host().prompts().reminders.clone();
        self.agent.hooks.queue(
            &self.handle.id,
            reminders::stop_continue(&self.turn_id, &reason, &texts),
        );
        true
    }

    /// The AGENTS.md chain of this turn: a change since the session's last turn is queued.
    pub(in crate::agent) fn note_agents_md(&self, text: &str) {
        if let Some(previous) = self.agent.hooks.agents_md_changed(&self.handle.id, text) {
            let texts = self.host().prompts().reminders.clone();
            if let Some(reminder) = reminders::agents_md_changed(&previous, text, &texts) {
                self.agent.hooks.queue(&self.handle.id, reminder);
            }
        }
    }

    /// The memory entries over the budget that the user's message names: each queued once
    /// a session, to reach the model with the message (just-in-time recall).
    pub(in crate::agent) fn note_memory(
        &self,
        left_out: &[(agentls_core::memory::Scope, agentls_core::memory::Entry)],
        message: &str,
    ) {
        let texts = self.host().prompts().reminders.clone();
        for reminder in reminders::memory_recalled(left_out, message, &texts) {
            self.agent.hooks.queue(&self.handle.id, reminder);
        }
    }

    /// An edit's diff: one warning per risky rule its added lines trip.
    pub(in crate::agent) fn note_diff(&self, diff: &str) {
        let texts = self.host().prompts().reminders.clone();
        for reminder in reminders::risky(diff, &texts) {
            self.agent.hooks.queue(&self.handle.id, reminder);
        }
    }

    /// Before a model call: the reminders that are due (queued ones, the plan's, the
    /// mode's), each recorded at the end of the history and told to the editor.
    pub(in crate::agent) async fn flush_reminders(&mut self) -> Result<(), String> {
        let config = self.host().config();
        let prompts = self.host().prompts();
        let mut candidates = self.agent.hooks.take_pending(&self.handle.id);
        let mode = self.session_mode();
        let (due, tokenizer) = {
            let live = self.handle.live.lock().await;
            let session = &live.session;
            // Plan mode entered or left: said before the next request, mid-turn too.
            candidates.extend(reminders::mode(
                &mode,
                &session.reminders_shown,
                session.compactions,
                &prompts,
            ));
            if let Some(plan) = reminders::plan_stale(
                &session.plan,
                &session.history,
                PLAN_TOOL,
                config.reminders.plan_rounds,
                &prompts.reminders,
            ) {
                candidates.push(plan);
            }
            (
                reminders::due(&session.reminders_shown, &config.reminders, candidates),
                session.history.tokenizer(),
            )
        };
        for reminder in due {
            let text =
                reminders::render(&reminder, &prompts, tokenizer, config.reminders.max_tokens);
            let entry = {
                let live = self.handle.live.lock().await;
                live.session.history.entry_for(
                    Item::Instructions {
                        role: InstructionRole::Reminder,
                        text,
                    },
                    config.tool_output_limit,
                    &prompts,
                )
            };
            let shown = ReminderShown {
                key: reminder.key.clone(),
                source: reminder.source.to_string(),
                text: reminder.text.clone(),
            };
            let event = Event::Reminder {
                turn_id: self.turn_id.clone(),
                version: reminder.version.clone(),
                entry,
                shown: shown.clone(),
            };
            {
                let mut live = self.handle.live.lock().await;
                live.record(&event, Durability::Buffered, Registry::builtin())?;
            }
            self.update(Update::Reminder(shown));
        }
        Ok(())
    }
}
