//! The real MCP servers the MCP tests drive, installed outside the repository by
//! `scripts/mcp-servers` (run by `./test`, which exports their paths; run here when they are
//! unset), and waits on `agent/mcp/status` (loops without a time bound).

use super::Server;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::OnceLock;

pub struct Installed {
    /// `@modelcontextprotocol/server-everything` (npm).
    pub everything: String,
    /// `mcp-server-time` (PyPI), in a virtualenv that also has the official Python SDK.
    pub time: String,
}

/// The installed servers: from the environment, else installed now by the script.
pub fn installed() -> &'static Installed {
    static INSTALLED: OnceLock<Installed> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let from_env = (
            std::env::var("AGENTLS_MCP_EVERYTHING"),
            std::env::var("AGENTLS_MCP_TIME"),
        );
        if let (Ok(everything), Ok(time)) = from_env {
            return Installed { everything, time };
        }
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/mcp-servers");
        let output = std::process::Command::new(&script)
            .output()
            .expect("scripts/mcp-servers runs");
        assert!(
            output.status.success(),
            "scripts/mcp-servers failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let text = String::from_utf8(output.stdout).unwrap();
        let value = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .unwrap_or_else(|| panic!("{name} in the script's output: {text}"))
                .to_string()
        };
        Installed {
            everything: value("AGENTLS_MCP_EVERYTHING"),
            time: value("AGENTLS_MCP_TIME"),
        }
    })
}

/// The `mcpServers` entry of a server on the official Python SDK whose tool set grows: its
/// `grow {name}` tool adds a tool called NAME and sends notifications/tools/list_changed
/// (`tests/fixtures/mcp_growing_server.py`, run by the virtualenv scripts/mcp-servers made).
pub fn growing_server() -> Value {
    let python = PathBuf::from(&installed().time).with_file_name("python");
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mcp_growing_server.py");
    json!({"command": python, "args": [script]})
}

/// `agent/mcp/status`'s answer.
pub async fn status(server: &Server) -> Value {
    server
        .client
        .request("agent/mcp/status", json!({}))
        .await
        .expect("agent/mcp/status")
}

/// The status entry of `name` once its state is no longer `starting`.
pub async fn settled(server: &Server, name: &str) -> Value {
    loop {
        let status = status(server).await;
        if let Some(entry) = status["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name && s["state"] != "starting")
        {
            return entry.clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
