//! The environment of this process now, for the core's `Environment` block: the shell from
//! `$SHELL`, today's date from the clock, the sandbox this machine gives.

use std::time::{SystemTime, UNIX_EPOCH};

use agentls_core::environment::{civil_date, Environment};

/// The environment of this process now: the shell from `$SHELL`, today's date.
pub fn current(
    cwd: String,
    workspace_roots: Vec<String>,
    approval_policy: &str,
    sandbox: &crate::protocol::lsp::SandboxState,
) -> Environment {
    let shell = std::env::var("SHELL")
        .ok()
        .and_then(|s| s.rsplit('/').next().map(str::to_string))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "sh".to_string());
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0);
    Environment {
        cwd,
        approval_policy: approval_policy.to_string(),
        sandbox_mode: if sandbox.enforced {
            sandbox.mode.clone()
        } else {
            "none".to_string()
        },
        network_access: if sandbox.network {
            "enabled"
        } else {
            "restricted"
        }
        .to_string(),
        shell,
        workspace_roots,
        date: civil_date(days as i64),
        background_commands: Vec::new(),
    }
}
