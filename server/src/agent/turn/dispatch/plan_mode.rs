//! What the session's mode lets a turn use. The mode is the session's (a subagent's is its
//! parent's); the rule is `Agent::withheld_in_mode` (plan mode offers only tools that change
//! nothing). The tools list of a turn opened in plan mode leaves the others out, and a call
//! of one is refused by the same rule, read when the call is made, so a switch in the
//! middle of a turn holds from its next call.

use crate::agent::turn::Turn;

impl Turn {
    /// The mode this turn runs under: its session's, or for a subagent its parent's (the
    /// one the user chose; a child session is never shown); a `/review` turn's is plan
    /// mode, whatever the session's (it reads and reports, it changes nothing).
    pub(in crate::agent) fn mode(&self) -> String {
        if self.scope.review.is_some() {
            return agentls_core::approval::PLAN.to_string();
        }
        self.session_mode()
    }

    /// The mode the user chose for this turn's session (its parent's, for a subagent),
    /// without a review's: what the mode reminders follow, so a review neither enters
    /// nor leaves plan mode in the model's eyes.
    pub(in crate::agent) fn session_mode(&self) -> String {
        self.agent.mode_of(self.deciding_session())
    }

    /// Whether this turn offers tool `name` (built-in or MCP) to the model: its scope allows
    /// it and its mode does not withhold it.
    pub(in crate::agent) fn offers(&self, name: &str) -> bool {
        self.scope.allows(name) && self.withheld_by_mode(name).is_none()
    }

    /// Why the session's mode withholds tool `name` (the output of a call of it), or None.
    pub(in crate::agent) fn withheld_by_mode(&self, name: &str) -> Option<String> {
        self.agent.withheld_in_mode(&self.mode(), name)
    }
}
