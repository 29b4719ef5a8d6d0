//! A session's approval policy (its "mode" in ACP's words, `approval::POLICIES`): `ask`,
//! `auto-edit`, `full-auto` or `plan` (read-only), chosen per session by
//! `agent/session/setMode` (LSP) or `session/set_mode` (ACP); a session that never chose
//! follows the `approval` setting. Held for the server's life, not written to the session
//! log. A change is told in an `agent/status` (its `mode`); what a mode lets a turn use is
//! the turn's (`turn/dispatch/plan_mode.rs`).

use crate::agent::Agent;
use crate::agent::AgentError;
use crate::locks::Locked;
use agentls_core::approval::POLICIES;
use std::sync::Arc;
impl Agent {
    /// Sets the approval policy of session `id`; Err for an unknown session or policy.
    pub async fn set_mode(self: &Arc<Self>, id: &str, mode: &str) -> Result<(), AgentError> {
        if !agentls_core::acp::is_mode(mode) {
            return Err(AgentError(format!(
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
}
