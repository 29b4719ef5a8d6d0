//! Asking before a call runs: the gate (a PreToolUse hook's decision, else the approval
//! rules under the session's mode and its remembered answers), the permission request the
//! host shows (a subagent's asked in its parent's session, labelled), and the answer
//! recorded (in the parent's session too, for a subagent's).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::agent::sessions::live::Durability;
use crate::agent::turn::{Call, Turn};
use crate::host::{PermissionOption, PermissionRequest};
use crate::tools::boundary::PathBoundary;
use crate::tools::registry::Registry;
use agentls_core::approval::{self, Gate};
use agentls_core::event::Event;
use agentls_core::hooks::Permission;
use agentls_core::tool_info::ToolKind;
use agentls_core::updates::{FileDiff, PermissionToolCall, ToolLocation, Update};

/// What a permission request shows beside the call: the planned change (its diff, and as
/// {path, oldText, newText}) and why it is asked when the mode alone would not ask.
#[derive(Debug, Default)]
pub(in crate::agent) struct Shown {
    pub(in crate::agent) diff: Option<String>,
    pub(in crate::agent) edit: Option<FileDiff>,
    pub(in crate::agent) reason: Option<String>,
    /// Why the sandbox stopped the command: the request asks to run it again outside.
    pub(in crate::agent) outside_sandbox: Option<String>,
}

impl Turn {
    /// Whether a call runs, asks or is refused: a deny rule first (`permissions.deny`, the
    /// workspace's too), then a PreToolUse hook's `permissionDecision` (its deny never gets
    /// here), else the approval rules under the session's policy with the standing rules (a
    /// subagent runs under its parent's, with its parent's remembered answers). `path` is
    /// the absolute path a file tool names. The one gate of built-in and MCP calls.
    pub(in crate::agent) async fn gate(
        &self,
        tool: &str,
        kind: ToolKind,
        command: Option<&str>,
        path: Option<&Path>,
        permission: Option<Permission>,
    ) -> Gate {
        let (rule, problems) = self.agent.rule_for(tool, command, path);
        for problem in problems {
            let problem = format!("permissions: {problem}");
            if self.agent.warn_once(&problem) {
                tracing::warn!("{problem}");
                self.update(Update::warning(problem));
            }
        }
        if let Some(refusal) = approval::denied_by(rule.as_ref()) {
            return refusal;
        }
        match permission {
            Some(Permission::Allow) => Gate::Run,
            Some(Permission::Ask) => Gate::Ask,
            _ => {
                let approvals = self.session_approvals().await;
                approval::gate(&self.mode(), tool, kind, command, &approvals, rule.as_ref())
            }
        }
    }

    /// The approvals the gate reads: the session's, or for a subagent its parent's.
    pub(in crate::agent) async fn session_approvals(&self) -> agentls_core::session::Approvals {
        match &self.scope.child {
            Some(child) => child.parent.live.lock().await.session.approvals.clone(),
            None => self.handle.live.lock().await.session.approvals.clone(),
        }
    }

    /// The gate's verdict acted on, for a built-in call and an MCP one alike: run, refuse
    /// (Err: the output for the model says why), or ask the user.
    pub(in crate::agent) async fn settle_gate(
        &mut self,
        call: &Call,
        gate: Gate,
        kind: ToolKind,
        arguments: &Value,
        command: Option<&str>,
        shown: Shown,
    ) -> Result<(), String> {
        match gate {
            Gate::Run => Ok(()),
            Gate::Refuse(why) => Err(format!("not run: {why}")),
            Gate::Ask => self.ask(call, kind, arguments, command, shown).await,
        }
    }

    /// Asks the user; Err(output for the model) when the answer is no.
    pub(in crate::agent) async fn ask(
        &mut self,
        call: &Call,
        kind: ToolKind,
        arguments: &Value,
        command: Option<&str>,
        shown: Shown,
    ) -> Result<(), String> {
        // An answer about leaving the sandbox is remembered apart from the command's approval.
        let recorded_as = if shown.outside_sandbox.is_some() {
            agentls_core::session::UNSANDBOXED
        } else {
            // A hook may answer for the user; leaving the sandbox stays the user's to allow.
            if let Some(answer) = self.permission_request_hooks(call, arguments).await {
                return answer;
            }
            call.name.as_str()
        };
        let request = self.permission_request(call, kind, arguments, command, shown);
        let message = format!("agentls needs your permission to use {}", call.name);
        // The hooks run while the question waits; the call goes on when both are done.
        let (outcome, ()) = tokio::join!(
            async {
                tokio::select! {
                    outcome = self.host().request_permission(request) => outcome,
                    () = self.cancel.cancelled() => crate::host::PermissionOutcome { kind: "cancelled".into() },
                }
            },
            self.notification_hooks("permission_prompt", &message, "Permission needed")
        );
        self.record_answer(call, recorded_as, command, &outcome.kind)
            .await;
        if outcome.allows() {
            Ok(())
        } else if self.cancel.is_cancelled() {
            Err(self
                .host()
                .prompts()
                .aborted(agentls_core::prompts::AbortReason::CancelledAwaitingApproval))
        } else {
            self.problems.push(format!(
                "{} was rejected by the user",
                self.title_of(&call.name, arguments)
            ));
            Err(self.host().prompts().tool_rejected.clone())
        }
    }

    /// What the host shows: the call (title, kind, input, diff, the planned edit, where it
    /// works) and the four answers, in the session whose user answers.
    fn permission_request(
        &self,
        call: &Call,
        kind: ToolKind,
        arguments: &Value,
        command: Option<&str>,
        shown: Shown,
    ) -> PermissionRequest {
        let (always, never) = match command {
            Some(command) if shown.outside_sandbox.is_some() => {
                let prefix = approval::command_prefix(command);
                (
                    format!("Always run `{prefix}` commands outside the sandbox in this session"),
                    format!("Never run `{prefix}` commands outside the sandbox in this session"),
                )
            }
            Some(command) => {
                let prefix = approval::command_prefix(command);
                (
                    format!("Always allow `{prefix}` commands in this session"),
                    format!("Never allow `{prefix}` commands in this session"),
                )
            }
            None => (
                format!("Always allow {} in this session", call.name),
                format!("Never allow {} in this session", call.name),
            ),
        };
        let options =
            PermissionOption::four("Allow".to_string(), always, "Reject".to_string(), never);
        let title = self.title_of(&call.name, arguments);
        let input = arguments.as_object().cloned().unwrap_or_default();
        let mut tool_call = PermissionToolCall::new(&call.id, &call.name, &title, kind, input);
        tool_call.diff = shown.diff;
        tool_call.edit = shown.edit;
        if let Some(reason) = shown.reason {
            tool_call.title = format!("{title} (asked in every mode: {reason})");
            tool_call.reason = Some(reason);
        }
        if let Some(reason) = shown.outside_sandbox {
            tool_call.title = format!(
                "Run `{}` again outside the sandbox",
                agentls_core::tool_info::shorten(command.unwrap_or_default())
            );
            tool_call.reason = Some(reason);
            tool_call.outside_sandbox = Some(true);
        }
        tool_call.locations = Some(locations(
            &PathBoundary {
                roots: self.host().roots(),
            },
            arguments,
        ));
        // A subagent's call is asked in its parent's session, labelled with its name.
        let (session_id, turn_id) = self.handle.ask_route(&self.turn_id, &mut tool_call);
        PermissionRequest {
            session_id,
            turn_id,
            tool_call,
            options,
        }
    }

    /// Records the user's answer (with the command prefix an "always" answer covers). A
    /// subagent's approval was the parent's user's answer: the parent's session keeps it
    /// too (its "always" answers hold for the parent and its later subagents).
    async fn record_answer(&self, call: &Call, tool: &str, command: Option<&str>, outcome: &str) {
        let prefix = command
            .filter(|_| matches!(outcome, "allowAlways" | "rejectAlways"))
            .map(approval::command_prefix);
        let answer = |turn_id: &str| Event::Permission {
            turn_id: turn_id.to_string(),
            tool_call_id: call.id.clone(),
            tool: tool.to_string(),
            outcome: outcome.to_string(),
            prefix: prefix.clone(),
        };
        if let Some(child) = &self.scope.child {
            let event = answer(&child.parent_turn_id);
            let mut parent = child.parent.live.lock().await;
            if let Err(err) = parent.record(&event, Durability::Buffered, Registry::builtin()) {
                tracing::warn!("cannot record a subagent's approval in its parent's log: {err}");
            }
        }
        let _ = self.record(answer(&self.turn_id)).await;
        // Leaving the sandbox is answered for the session only.
        if tool != agentls_core::session::UNSANDBOXED {
            self.agent
                .keep_answer_as_rule(tool, prefix.as_deref(), outcome)
                .await;
        }
    }
}

/// The absolute path a file tool's call names, as permission rules match it: its `path`
/// resolved in the workspace, or the first root for a search or listing without one.
pub(super) fn rule_path(boundary: &PathBoundary, arguments: &Value) -> Option<PathBuf> {
    match arguments["path"].as_str() {
        Some(path) => boundary.resolve(path).ok(),
        None => boundary.roots.first().cloned(),
    }
}

/// Where a call works, for the editor to jump to: its `path` argument resolved in the
/// workspace (absolute), with its 1-based `offset` line when it has one (`read_file`).
pub(super) fn locations(boundary: &PathBoundary, arguments: &Value) -> Vec<ToolLocation> {
    let Some(path) = arguments["path"].as_str() else {
        return Vec::new();
    };
    match boundary.resolve(path) {
        Ok(resolved) => vec![ToolLocation {
            path: resolved.to_string_lossy().into_owned(),
            line: arguments["offset"]
                .as_u64()
                .filter(|&l| l > 0)
                .and_then(|l| u32::try_from(l).ok()),
        }],
        Err(_) => Vec::new(),
    }
}
