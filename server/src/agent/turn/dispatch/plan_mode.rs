//! What the session's mode lets a turn use. The mode is the session's (a subagent's is its
//! parent's). Plan mode offers only tools that change nothing
//! (`approval::offered_in_plan_mode`: no `edit_file`/`write_file`, and MCP tools only when
//! annotated `readOnlyHint`): the tools list of a turn opened in plan mode leaves the others
//! out, and a call of one is refused by the same rule, read when the call is made, so a
//! switch in the middle of a turn holds from its next call.

use crate::agent::turn::Turn;
use crate::tools::registry::Registry;
use agentls_core::approval::{self, PLAN};
use agentls_core::tool_info::ToolCatalog;

impl Turn {
    /// The mode this turn runs under: its session's, or for a subagent its parent's (the
    /// one the user chose; a child session is never shown).
    pub(in crate::agent) fn mode(&self) -> String {
        self.agent.mode_of(self.deciding_session())
    }

    /// Whether this turn offers tool `name` (built-in or MCP) to the model: its scope allows
    /// it and its mode does not withhold it.
    pub(in crate::agent) fn offers(&self, name: &str) -> bool {
        self.scope.allows(name) && self.withheld_by_mode(name).is_none()
    }

    /// Why the session's mode withholds tool `name` (the output of a call of it), or None.
    pub(in crate::agent) fn withheld_by_mode(&self, name: &str) -> Option<String> {
        if self.mode() != PLAN {
            return None;
        }
        let mcp_read_only = name
            .starts_with(agentls_core::mcp::names::PREFIX)
            .then(|| self.agent.mcp.tool(name).map(|tool| tool.tool.read_only))
            .flatten();
        let kind = Registry::builtin().kind(name);
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
