//! A session's approval policy (its "mode" in ACP's words): `ask`, `auto-edit` or
//! `full-auto`, chosen per session by `agent/session/setMode` (LSP) or `session/set_mode`
//! (ACP); a session that never chose follows the `approval` setting. Held for the server's
//! life, not written to the session log.

use crate::agent::Agent;
use crate::agent::AgentError;
use crate::locks::Locked;
use std::sync::Arc;
impl Agent {
    /// Sets the approval policy of session `id`; Err for an unknown session or policy.
    pub async fn set_mode(self: &Arc<Self>, id: &str, mode: &str) -> Result<(), AgentError> {
        if !agentls_core::acp::is_mode(mode) {
            return Err(AgentError(format!(
                "invalid params: unknown mode {mode}: the modes are ask, auto-edit, full-auto"
            )));
        }
        self.handle(id).await?;
        self.modes.locked().insert(id.to_string(), mode.to_string());
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
