//! A call of an MCP tool (`mcp__SERVER__TOOL`) through the turn's one tool path: announced
//! with the kind from its annotations and a title naming the server, PreToolUse hooks, the
//! approval gate (asks like `shell` unless the server is `trust: readOnly` and the tool
//! read-only), then the call (a cancel of the turn cancels the MCP request). Its output is
//! recorded by the caller like any tool's (redacted, truncated head-and-tail, untrusted).

use crate::agent::mcp_servers::WORKSPACE_FILE;
use crate::agent::turn::dispatch::asking::Shown;
use crate::agent::turn::Call;
use crate::agent::turn::Turn;
use crate::tools::registry::Registry;
use agentls_core::hooks::Permission;
use agentls_core::mcp::tools::McpTool;
use agentls_core::prompts::ToolSpec;
use agentls_core::tool_info::{ToolCatalog, ToolKind};
use agentls_core::updates::{PermissionToolCall, Update};
use serde_json::{json, Value};

impl Turn {
    /// The MCP tools this turn offers, after the built-in ones, in their stable order. A
    /// workspace server not answered for yet is asked about first (a top-level turn only).
    pub(in crate::agent) async fn mcp_specs(&mut self) -> Vec<ToolSpec> {
        let workspace = self.agent.workspace_mcp();
        if self.scope.child.is_none() {
            let settings = self.host().config().mcp_servers;
            for config in &workspace {
                let key = self.agent.mcp_approval_key(config);
                if settings.iter().any(|s| s.name == config.name)
                    || self.agent.workspace_entry_known(&key).is_some()
                {
                    continue;
                }
                // The whole entry: what runs, with what, and what it may skip asking.
                let (mut input, details) = config.approval_input(WORKSPACE_FILE);
                let scripts = self.agent.mcp_scripts(config);
                if !scripts.is_empty() {
                    input["scripts"] =
                        json!(scripts.iter().map(|(path, _)| path).collect::<Vec<_>>());
                }
                let mut tool_call = PermissionToolCall::new(
                    format!("mcp-server-{}", agentls_core::reminders::version_of(&key)),
                    "mcpServer",
                    format!(
                        "Workspace MCP server {}: {}",
                        config.name,
                        config.describe()
                    ),
                    ToolKind::Execute,
                    input.as_object().cloned().unwrap_or_default(),
                );
                tool_call.details = Some(details);
                let handle = self.handle.clone();
                self.agent
                    .workspace_entry_approved(
                        &handle,
                        &self.turn_id,
                        &key,
                        tool_call,
                        "MCP server",
                        &self.cancel,
                    )
                    .await;
            }
        }
        self.agent.ensure_mcp_with(workspace);
        // The first request waits for the servers' first start (as Claude Code and Codex do),
        // so a prompt sent right after the session opens sees their tools.
        self.agent.mcp.first_starts(None, &self.cancel).await;
        self.agent
            .mcp
            .tools()
            .iter()
            .filter(|tool| self.offers(&tool.name))
            .map(McpTool::spec)
            .collect()
    }

    /// The MCP tool a call names, when it is one this turn offers.
    pub(in crate::agent) fn mcp_tool(&self, name: &str) -> Option<McpTool> {
        if !name.starts_with(agentls_core::mcp::names::PREFIX) || !self.scope.allows(name) {
            return None;
        }
        self.agent.mcp.tool(name)
    }

    /// The row title of a call: an MCP tool's names its server.
    pub(in crate::agent) fn title_of(&self, name: &str, arguments: &Value) -> String {
        match self.agent.mcp.tool(name) {
            Some(tool) => tool.title(),
            None => Registry::builtin().title(name, arguments),
        }
    }

    /// Runs an MCP tool call after its PreToolUse hooks (`run_tool_inner`): gated, asked,
    /// run. An MCP call has no `prepare`: nothing to show but its arguments.
    pub(in crate::agent) async fn run_mcp_tool(
        &mut self,
        call: &Call,
        tool: McpTool,
        arguments: Value,
        permission: Option<Permission>,
    ) -> (String, bool) {
        let plan = self.mode() == agentls_core::approval::PLAN;
        let gate = self
            .gate(&call.name, tool.approval_kind(plan), None, None, permission)
            .await;
        if let Err(message) = self
            .settle_gate(call, gate, tool.kind(), &arguments, None, Shown::default())
            .await
        {
            return (message, false);
        }
        self.update(Update::call_running(&call.id, None, None));
        self.call_started = Some(std::time::Instant::now());
        let cancel = self.cancel.clone();
        self.agent.mcp.call(&tool, arguments, &cancel).await
    }
}
