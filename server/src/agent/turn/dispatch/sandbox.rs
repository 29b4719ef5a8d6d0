//! The command sandbox in a turn: the policy a call's command runs under (the settings', or
//! read-only with no network in plan mode; none for a command the user let out), the refusal
//! when `sandbox.required` cannot be met, and leaving the sandbox: a command the sandbox
//! stopped is run again outside only after the user says so, in every mode.

use serde_json::Value;

use crate::agent::turn::dispatch::asking::Shown;
use crate::agent::turn::{Call, Turn};
use crate::tools::registry::{AnyTool, ToolContext, ToolOutcome};
use agentls_core::approval;
use agentls_core::sandbox::{SandboxMode, SandboxPolicy};
use agentls_core::tool_info::ToolKind;

impl Turn {
    /// The session whose mode and answers a call follows: a subagent's parent's.
    pub(in crate::agent) fn deciding_session(&self) -> &str {
        self.scope
            .child
            .as_ref()
            .map_or(self.handle.id.as_str(), |child| child.parent.id.as_str())
    }

    /// The sandbox this turn's commands run in; None when it is off or cannot be had (said
    /// once, in the log and to the user).
    pub(in crate::agent) fn sandbox_policy(&self) -> Option<SandboxPolicy> {
        let config = self.host().config();
        let host = self.host().clone();
        crate::sandbox::warn_once_if_missing(&config.sandbox, |message| host.show_warning(message));
        let plan = self.in_plan_mode();
        let places = crate::sandbox::places(self.host().roots(), &config);
        crate::sandbox::policy_for(&config.sandbox, plan, &places)
    }

    /// Plan mode: commands run read-only with no network, and never leave the sandbox.
    fn in_plan_mode(&self) -> bool {
        self.mode() == approval::PLAN
    }

    /// Why a command may not run at all where no sandbox can be had: `sandbox.required` is
    /// set, or the session is in plan mode (whose commands run only read-only).
    pub(in crate::agent) fn sandbox_refusal(&self, kind: ToolKind) -> Option<String> {
        if kind != ToolKind::Execute {
            return None;
        }
        let missing = crate::sandbox::availability().missing.as_ref()?;
        if self.in_plan_mode() {
            return Some(format!(
                "not run: plan mode runs commands only in a read-only sandbox, and there is none here ({missing}); use the read tools, or switch to another mode"
            ));
        }
        let config = self.host().config();
        let wanted = config.sandbox.mode != SandboxMode::Off;
        (wanted && config.sandbox.required).then(|| {
            format!("not run: sandbox.required is set and there is no sandbox here ({missing})")
        })
    }

    /// Lets `command` out of the sandbox when the user said "always" for its prefixes.
    pub(in crate::agent) async fn unconfine_if_allowed(
        &self,
        cx: &mut ToolContext,
        command: Option<&str>,
    ) {
        let Some(command) = command.filter(|_| cx.sandbox.is_some() && !self.in_plan_mode()) else {
            return;
        };
        let approvals = self.session_approvals().await;
        if approval::all_prefixes_in(command, &approvals.unsandboxed_commands) {
            cx.sandbox = None;
        }
    }

    /// A call the sandbox stopped: the user is asked to run it again outside the sandbox
    /// (unless they said "never" for its prefix); allowed, it runs again unconfined and its
    /// output follows a line saying so; refused, the first output stands, with the reason.
    pub(in crate::agent) async fn offer_to_leave_sandbox(
        &mut self,
        call: &Call,
        tool: &dyn AnyTool,
        arguments: &Value,
        stopped: ToolOutcome,
    ) -> ToolOutcome {
        let (Some(reason), Some(command)) = (&stopped.sandbox_denied, tool.command(arguments))
        else {
            return stopped;
        };
        let reason = reason.clone();
        let approvals = self.session_approvals().await;
        let declined = |note: &str| {
            let mut outcome = stopped.clone();
            outcome.output.push_str(&format!("\n[{note}: {reason}]"));
            outcome
        };
        if self.in_plan_mode() {
            return declined("plan mode runs commands read-only and without network; switch to another mode to make changes");
        }
        if approval::any_prefix_in(command, &approvals.sandboxed_only_commands) {
            return declined(
                "the sandbox stopped this command; the user does not let it run outside",
            );
        }
        let shown = Shown {
            outside_sandbox: Some(reason.clone()),
            ..Shown::default()
        };
        if self
            .ask(call, ToolKind::Execute, arguments, Some(command), shown)
            .await
            .is_err()
        {
            return declined("the sandbox stopped this command, and the user did not let it run outside the sandbox");
        }
        let unconfined = ToolContext {
            sandbox: None,
            ..self.tool_context(call)
        };
        let mut again = match tool.prepare(&unconfined, arguments).await {
            Ok(ready) => tool.run(&unconfined, ready).await,
            Err(message) => ToolOutcome::failed(message),
        };
        again.output = format!(
            "[the sandbox stopped the first run ({reason}); the user let it run again outside the sandbox]\n{}",
            again.output
        );
        again
    }
}
