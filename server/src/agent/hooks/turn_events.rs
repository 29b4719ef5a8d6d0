//! The turn's side of hooks and reminders: which hook event fires where (SessionStart and
//! UserPromptSubmit when the turn opens, PreToolUse and PostToolUse around a call, Stop
//! when the model ends), and the reminders recorded before each model call.

use crate::agent::turn::Call;
use crate::agent::turn::Turn;
use crate::tools::registry::Registry;

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
    /// SessionStart (the session's first turn in this server), then UserPromptSubmit. Err
    /// (the reason) when a hook blocked the prompt: it is not sent.
    pub(in crate::agent) async fn prompt_hooks(&mut self, text: &str) -> Result<(), String> {
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

    /// PostToolUse, after a call ran or failed; a block's reason reaches the model as a
    /// reminder (the call already happened).
    pub(in crate::agent) async fn post_tool_hooks(
        &mut self,
        call: &Call,
        arguments: &Value,
        output: &str,
        success: bool,
    ) {
        let mut fields = crate::agent::hooks::tool_fields(&call.id, &call.name, arguments);
        fields["tool_response"] = if success {
            json!({"success": true, "output": output})
        } else {
            json!({"success": false, "output": output, "error": output})
        };
        let verdict = self
            .agent
            .run_hooks(
                &self.handle,
                &self.turn_id,
                HookEvent::PostToolUse,
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
            let mut reminder = reminders::from_hook("PostToolUse", &call.name, &reason, &texts);
            reminder.key = format!("hook:PostToolUse:{}", call.id);
            self.agent.hooks.queue(&self.handle.id, reminder);
        }
    }

    /// Stop, when the model ended the turn: true when a hook blocked it and the turn goes on
    /// (once: a second block is reported and the turn ends).
    pub(in crate::agent) async fn stop_hooks(&mut self) -> bool {
        let verdict = self
            .agent
            .run_hooks(
                &self.handle,
                &self.turn_id,
                HookEvent::Stop,
                None,
                json!({"stop_hook_active": self.stop_hook_active}),
                &self.cancel,
            )
            .await;
        let Some(reason) = verdict.block else {
            return false;
        };
        if self.stop_hook_active || self.cancel.is_cancelled() {
            self.warn(format!(
                "a Stop hook asked again to go on ({reason}); the turn ends: it continues once only"
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
        let mode = self.mode();
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
            let event = Event::Reminder {
                turn_id: self.turn_id.clone(),
                key: reminder.key.clone(),
                version: reminder.version.clone(),
                source: reminder.source.to_string(),
                entry,
                text: reminder.text.clone(),
            };
            {
                let mut live = self.handle.live.lock().await;
                live.record(&event, Durability::Buffered, Registry::builtin())?;
            }
            self.update(Update::Reminder(ReminderShown {
                key: reminder.key.clone(),
                source: reminder.source.to_string(),
                text: reminder.text.clone(),
            }));
        }
        Ok(())
    }
}
