//! The agent's MCP servers: which to run (settings, the approved entries of the
//! workspace's `.mcp.json`, an ACP client's), started in the background by the manager
//! (`crate::mcp`), and what the editor asks of them (status, resources). Calling their tools
//! is the tool dispatcher's (`turn::dispatch::mcp`).

use crate::locks::Locked;
use serde_json::Value;

use super::Agent;
use crate::mcp::manager::Launch;
use crate::store::untrusted_file::{read_config_file, ConfigRead, MAX_CONFIG_FILE_BYTES};
use agentls_core::mcp::config::{overlay, parse, ServerConfig, ServerSource, Transport};
use agentls_core::mcp::tools::McpTool;
use agentls_core::prompts::ToolSpec;

/// The workspace's MCP file (Claude Code's project file).
pub(in crate::agent) const WORKSPACE_FILE: &str = ".mcp.json";

impl Agent {
    /// What a workspace server's approval is remembered by (beside the workspace hooks'):
    /// the workspace root, the whole entry and what the workspace scripts it runs hold, so
    /// the same `.mcp.json` in another folder, or its server's script rewritten since, is
    /// asked about again.
    pub(in crate::agent) fn mcp_approval_key(&self, config: &ServerConfig) -> String {
        let root = self.host.roots().first().cloned().unwrap_or_default();
        let key = format!("mcp:{}\n{}", root.display(), config.fingerprint());
        let scripts = self.mcp_scripts(config);
        if scripts.is_empty() {
            return key;
        }
        format!("{key}\n{}", serde_json::json!(scripts))
    }

    /// The workspace scripts a stdio server's command line names, with their digests.
    pub(in crate::agent) fn mcp_scripts(&self, config: &ServerConfig) -> Vec<(String, String)> {
        let Some(root) = self.host.roots().first().cloned() else {
            return Vec::new();
        };
        let Transport::Stdio { command, args, .. } = &config.transport else {
            return Vec::new();
        };
        let words = std::iter::once(command.clone()).chain(args.iter().cloned());
        super::workspace_scripts::workspace_files(&root, words)
            .into_iter()
            .map(|script| {
                let digest = super::workspace_scripts::digest_of(&root, &root.join(&script));
                (script, digest)
            })
            .collect()
    }

    /// The servers of the workspace's `.mcp.json` (none when it is absent; a bad entry is
    /// logged and skipped).
    pub(in crate::agent) fn workspace_mcp(&self) -> Vec<ServerConfig> {
        let Some(root) = self.host.roots().first().cloned() else {
            return Vec::new();
        };
        let path = root.join(WORKSPACE_FILE);
        let text = match read_config_file(&path, Some(&root), MAX_CONFIG_FILE_BYTES) {
            ConfigRead::Text(text) => text,
            ConfigRead::Missing => return Vec::new(),
            ConfigRead::Refused(why) => {
                tracing::warn!("skipping {}: {why}", path.display());
                return Vec::new();
            }
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
    pub(in crate::agent) fn ensure_mcp_with(&self, workspace: Vec<ServerConfig>) {
        let config = self.host.config();
        let approved: Vec<ServerConfig> = workspace
            .into_iter()
            .filter(|c| self.workspace_entry_known(&self.mcp_approval_key(c)) == Some(true))
            .collect();
        let launch = Launch {
            cwd: self.host.roots().first().cloned(),
            hidden_env: self.hidden_env(),
        };
        let client = self.client_mcp.locked().clone();
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
        *self.client_mcp.locked() = servers;
    }

    /// Stops every MCP server this agent started (an ACP session's agent is its own: its
    /// `session/close` ends them).
    pub fn stop_mcp(&self) {
        let launch = Launch {
            cwd: self.host.roots().first().cloned(),
            hidden_env: Vec::new(),
        };
        self.mcp.ensure(&[], &launch);
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
