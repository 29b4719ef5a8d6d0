//! A call of an MCP tool (`mcp__SERVER__TOOL`) through the turn's one tool path: announced
//! with the kind from its annotations and a title naming the server, PreToolUse hooks, the
//! approval gate (asks like `shell` unless the server is `trust: readOnly` and the tool
//! read-only), then the call (a cancel of the turn cancels the MCP request). Its output is
//! recorded by the caller like any tool's (redacted, truncated head-and-tail, untrusted).

use super::*;
use crate::mcp::manager::Launch;
use agentls_core::approval::Gate;
use agentls_core::mcp::config::{overlay, parse, ServerConfig, ServerSource};
use agentls_core::mcp::tools::McpTool;
use agentls_core::prompts::ToolSpec;
use agentls_core::tool_info::ToolCatalog;
use serde_json::{json, Value};

/// The workspace's MCP file (Claude Code's project file).
const WORKSPACE_FILE: &str = ".mcp.json";

/// What a workspace server's approval is remembered by (beside the workspace hooks').
fn approval_key(config: &ServerConfig) -> String {
    format!("mcp:{}", config.fingerprint())
}

impl Agent {
    /// The servers of the workspace's `.mcp.json` (none when it is absent; a bad entry is
    /// logged and skipped).
    fn workspace_mcp(&self) -> Vec<ServerConfig> {
        let Some(root) = self.host.roots().first().cloned() else {
            return Vec::new();
        };
        let Ok(text) = std::fs::read_to_string(root.join(WORKSPACE_FILE)) else {
            return Vec::new();
        };
        let value = match serde_json::from_str::<Value>(&text) {
            Ok(value) => value,
            Err(err) => {
                tracing::warn!("{WORKSPACE_FILE}: not JSON: {err}");
                return Vec::new();
            }
        };
        let (servers, problems) = parse(&value, ServerSource::Workspace);
        for problem in problems {
            tracing::warn!("{WORKSPACE_FILE}: {problem}");
        }
        servers
    }

    /// Starts (in the background) the configured MCP servers not running yet, and the
    /// workspace's once approved; stops those no longer configured. Never waits for a
    /// server. A settings entry wins over a workspace entry of the same name.
    pub(crate) fn ensure_mcp(&self) {
        self.ensure_mcp_with(self.workspace_mcp());
    }

    /// `ensure_mcp` with the workspace's servers already read (a turn reads `.mcp.json` once).
    fn ensure_mcp_with(&self, workspace: Vec<ServerConfig>) {
        let config = self.host.config();
        let approved: Vec<ServerConfig> = workspace
            .into_iter()
            .filter(|c| self.workspace_entry_known(&approval_key(c)) == Some(true))
            .collect();
        let launch = Launch {
            cwd: self.host.roots().first().cloned(),
            hidden_env: self.hidden_env(),
        };
        let client = self
            .client_mcp
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let configured = overlay(&approved, &config.mcp_servers);
        self.mcp.ensure(&overlay(&configured, &client), &launch);
    }

    /// The servers an ACP client offers for this agent's session (`mcpServers` of
    /// `session/new` or `session/load`); a bad entry is logged and skipped.
    pub fn set_client_mcp(&self, list: &Value) {
        let (servers, problems) = agentls_core::mcp::config::parse_acp(list);
        for problem in problems {
            tracing::warn!("acp: {problem}");
        }
        *self.client_mcp.lock().unwrap_or_else(|e| e.into_inner()) = servers;
    }

    /// The MCP tools offered now (for `agent/session/context`).
    pub fn mcp_tool_specs(&self) -> Vec<ToolSpec> {
        self.mcp.tools().iter().map(McpTool::spec).collect()
    }

    /// `agent/mcp/status`: every configured server, its state and tool count (servers not
    /// started yet, before the first session, are not listed).
    pub fn mcp_status(&self) -> Value {
        self.mcp.status()
    }

    /// Returns once no MCP server is on its first start; whether any prompt is offered then
    /// (ACP sends its command list again: the prompts are commands).
    pub async fn mcp_prompts_after_first_starts(&self) -> bool {
        self.mcp
            .first_starts(None, &tokio_util::sync::CancellationToken::new())
            .await;
        !self.mcp.prompts().is_empty()
    }

    /// `agent/mcp/resources`: what the ready servers list, for an editor's `@SERVER:URI`
    /// completion.
    pub async fn mcp_resources(&self) -> Value {
        self.mcp.resources().await
    }

    /// Wakes when the MCP servers' status may have changed (read `mcp_status` again).
    pub fn mcp_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.mcp.subscribe()
    }
}

impl Turn {
    /// The MCP tools this turn offers, after the built-in ones, in their stable order. A
    /// workspace server not answered for yet is asked about first (a top-level turn only).
    pub(super) async fn mcp_specs(&mut self) -> Vec<ToolSpec> {
        let workspace = self.agent.workspace_mcp();
        if self.scope.child.is_none() {
            let settings = self.host().config().mcp_servers;
            for config in &workspace {
                let key = approval_key(config);
                if settings.iter().any(|s| s.name == config.name)
                    || self.agent.workspace_entry_known(&key).is_some()
                {
                    continue;
                }
                let tool_call = json!({
                    "toolCallId": format!("mcp-server-{}", agentls_core::reminders::version_of(&key)),
                    "name": "mcpServer",
                    "title": format!("Workspace MCP server {}: {}", config.name, config.describe()),
                    "kind": "execute",
                    "input": {"server": config.name, "command": config.describe(), "file": WORKSPACE_FILE},
                });
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
            .filter(|tool| self.scope.allows(&tool.name))
            .map(McpTool::spec)
            .collect()
    }

    /// The MCP tool a call names, when it is one this turn offers.
    pub(super) fn mcp_tool(&self, name: &str) -> Option<McpTool> {
        if !name.starts_with(agentls_core::mcp::names::PREFIX) || !self.scope.allows(name) {
            return None;
        }
        self.agent.mcp.tool(name)
    }

    /// The row title of a call: an MCP tool's names its server.
    pub(super) fn title_of(&self, name: &str, arguments: &Value) -> String {
        match self.agent.mcp.tool(name) {
            Some(tool) => tool.title(),
            None => Registry::builtin().title(name, arguments),
        }
    }

    /// Runs an MCP tool call once announced; `post` gets the arguments once PreToolUse let
    /// the call go on.
    pub(super) async fn run_mcp_tool(
        &mut self,
        call: &Call,
        tool: McpTool,
        arguments: Value,
        post: &mut Option<Value>,
    ) -> (String, bool) {
        let (arguments, permission) = match self.pre_tool_hooks(call, &arguments).await {
            Ok(go) => go,
            Err(reason) => return (reason, false),
        };
        *post = Some(arguments.clone());
        let gate = self
            .gate(&call.name, tool.approval_kind(), None, permission)
            .await;
        match gate {
            Gate::Run => {}
            Gate::Refuse(why) => return (format!("not run: {why}"), false),
            Gate::Ask => {
                if let Err(message) = self
                    .ask(call, tool.kind(), &arguments, None, None, None)
                    .await
                {
                    return (message, false);
                }
            }
        }
        self.update(
            json!({"kind": "toolCallUpdate", "toolCallId": call.id, "status": "in_progress"}),
        );
        let cancel = self.cancel.clone();
        self.agent.mcp.call(&tool, arguments, &cancel).await
    }
}
