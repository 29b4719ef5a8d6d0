//! Which workspace hooks and MCP entries the user approved: asked once per workspace and
//! per entry's content, remembered on disk next to the workspace's session logs.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::agent::sessions::SessionHandle;
use crate::agent::Agent;
use crate::host::{PermissionOption, PermissionRequest};
use agentls_core::hooks::Hook;
use agentls_core::reminders;

/// Workspace hooks the user answered for good, on disk (`hook-approvals.json`).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Approvals {
    #[serde(default)]
    allowed: BTreeSet<String>,
    #[serde(default)]
    refused: BTreeSet<String>,
}

impl Agent {
    fn approvals_file(&self) -> Option<PathBuf> {
        let store = self.store().ok()?;
        Some(store.dir().parent()?.join("hook-approvals.json"))
    }

    fn read_approvals(&self) -> Approvals {
        self.approvals_file()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    fn remember(&self, fingerprint: &str, allowed: bool) {
        let Some(path) = self.approvals_file() else {
            return;
        };
        let mut approvals = self.read_approvals();
        if allowed {
            approvals.refused.remove(fingerprint);
            approvals.allowed.insert(fingerprint.to_string());
        } else {
            approvals.allowed.remove(fingerprint);
            approvals.refused.insert(fingerprint.to_string());
        }
        let text = serde_json::to_string_pretty(&approvals).unwrap_or_default();
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // The user's alone, like the session logs beside it.
        let written = {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&path)
                .and_then(|mut file| file.write_all(text.as_bytes()))
        };
        if let Err(err) = written {
            tracing::warn!(
                "cannot remember the hook approval in {}: {err}",
                path.display()
            );
        }
    }

    /// Whether a workspace hook may run: remembered, or asked now (kind `execute`, its
    /// command shown).
    pub(super) async fn approved(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        hook: &Hook,
        cancel: &CancellationToken,
    ) -> bool {
        let fingerprint = hook.fingerprint();
        let matcher = hook.matcher.clone().unwrap_or_default();
        let tool_call = json!({
            "toolCallId": format!("hook-{}", reminders::version_of(&fingerprint)),
            "name": "hook",
            "title": format!("Workspace hook ({}): {}", hook.event.name(), hook.command),
            "kind": "execute",
            "input": {
                "command": hook.command,
                "event": hook.event.name(),
                "matcher": matcher,
                "file": ".agents/hooks.json",
            },
        });
        self.workspace_entry_approved(handle, turn_id, &fingerprint, tool_call, "hook", cancel)
            .await
    }

    /// Whether a workspace entry that runs commands (a hook, an MCP server of `.mcp.json`)
    /// may run: remembered on disk ("always"), answered earlier in this server's life
    /// ("once"), or asked now through `agent/session/requestPermission`.
    pub(in crate::agent) async fn workspace_entry_approved(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        fingerprint: &str,
        tool_call: Value,
        what: &str,
        cancel: &CancellationToken,
    ) -> bool {
        if let Some(allowed) = self.workspace_entry_known(fingerprint) {
            return allowed;
        }
        let options = PermissionOption::four(
            format!("Run this {what} this time"),
            format!("Always run this {what} in this workspace"),
            "Do not run it".to_string(),
            format!("Never run this {what} in this workspace"),
        );
        let request = PermissionRequest {
            session_id: handle.id.clone(),
            turn_id: turn_id.to_string(),
            tool_call,
            options,
        };
        let outcome = tokio::select! {
            outcome = self.host.request_permission(request) => outcome,
            () = cancel.cancelled() => return false,
        };
        let allowed = outcome.allows();
        match outcome.kind.as_str() {
            "allowAlways" | "rejectAlways" => self.remember(fingerprint, allowed),
            _ => {
                self.hooks
                    .with(|s| s.answered.insert(fingerprint.to_string(), allowed));
            }
        }
        allowed
    }

    /// The answer already given for a workspace entry, if any (without asking).
    pub(in crate::agent) fn workspace_entry_known(&self, fingerprint: &str) -> Option<bool> {
        let approvals = self.read_approvals();
        if approvals.allowed.contains(fingerprint) {
            return Some(true);
        }
        if approvals.refused.contains(fingerprint) {
            return Some(false);
        }
        self.hooks.with(|s| s.answered.get(fingerprint).copied())
    }
}
