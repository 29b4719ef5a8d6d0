//! A session's approval policy (its "mode" in ACP's words, `approval::POLICIES`): `ask`,
//! `auto-edit`, `full-auto` or `plan` (read-only), chosen per session by
//! `agent/session/setMode` (LSP) or `session/set_mode` (ACP); a session that never chose
//! follows the `approval` setting. Held for the server's life, not written to the session
//! log. A change is told in an `agent/status` (its `mode`); what a mode lets a turn use is
//! the turn's (`turn/dispatch/plan_mode.rs`).

use crate::agent::Agent;
use crate::agent::AgentError;
use crate::locks::Locked;
use crate::tools::registry::Registry;
use agentls_core::approval::{self, PLAN, POLICIES};
use agentls_core::tool_info::ToolCatalog;
use std::sync::Arc;
impl Agent {
    /// Sets the approval policy of session `id`; Err for an unknown session or policy.
    pub async fn set_mode(self: &Arc<Self>, id: &str, mode: &str) -> Result<(), AgentError> {
        if !agentls_core::acp::is_mode(mode) {
            return Err(AgentError::invalid_params(format!(
                "invalid params: unknown mode {mode}: the modes are {}",
                POLICIES.join(", ")
            )));
        }
        let handle = self.handle(id).await?;
        self.modes.locked().insert(id.to_string(), mode.to_string());
        // The editor shows the mode with the fill: tell it now, not at the next model call.
        let state = if handle.state().running.is_some() {
            "running"
        } else {
            "idle"
        };
        let live = handle.live.lock().await;
        self.status_now(&live.session, state, None);
        Ok(())
    }

    /// The approval policy session `id` runs under.
    pub fn mode_of(&self, id: &str) -> String {
        self.modes
            .locked()
            .get(id)
            .cloned()
            .unwrap_or_else(|| self.host.config().approval)
    }

    /// Why `mode` withholds tool `name` (built-in or MCP) from the model: the output a call
    /// of it gets, or None. Plan mode offers only tools that change nothing
    /// (`approval::offered_in_plan_mode`: no `edit_file`/`write_file`, MCP tools only when
    /// annotated `readOnlyHint`). The one rule of a turn's tools and of the context report.
    pub fn withheld_in_mode(&self, mode: &str, name: &str) -> Option<String> {
        if mode != PLAN {
            return None;
        }
        let mcp_read_only = name
            .starts_with(agentls_core::mcp::names::PREFIX)
            .then(|| self.mcp.tool(name).map(|tool| tool.tool.read_only))
            .flatten();
        let kind = Registry::builtin().kind(name, &serde_json::Value::Null);
        if approval::offered_in_plan_mode(kind, mcp_read_only) {
            return None;
        }
        let why = match mcp_read_only {
            Some(_) => " (its MCP server does not annotate it readOnlyHint)",
            None => "",
        };
        Some(format!(
            "not run: {name} is not available in plan mode{why}; {}",
            approval::PLAN_REFUSAL
        ))
    }
}
