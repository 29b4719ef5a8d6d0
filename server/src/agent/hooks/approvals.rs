//! Which workspace hooks and MCP entries the user approved: asked once per workspace root
//! and per entry's content (for a hook, with the content of the workspace scripts its
//! command names), remembered on disk next to the workspace's session logs. The user's own
//! hooks run unasked, but the workspace scripts they run are workspace files a command can
//! rewrite: the first run takes them as they are, and a change since is asked.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::agent::sessions::SessionHandle;
use crate::agent::Agent;
use crate::host::{PermissionOption, PermissionRequest};
use agentls_core::hooks::{Hook, HookSource};
use agentls_core::reminders;
use agentls_core::tool_info::ToolKind;
use agentls_core::updates::PermissionToolCall;

/// Workspace hooks the user answered for good, on disk (`hook-approvals.json`).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Approvals {
    #[serde(default)]
    allowed: BTreeSet<String>,
    #[serde(default)]
    refused: BTreeSet<String>,
    /// The user's hooks (per root) that have run with workspace scripts: past their first
    /// run, scripts that changed are asked.
    #[serde(default)]
    user_hooks_run: BTreeSet<String>,
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
        self.change_approvals(|approvals| {
            if allowed {
                approvals.refused.remove(fingerprint);
                approvals.allowed.insert(fingerprint.to_string());
            } else {
                approvals.allowed.remove(fingerprint);
                approvals.refused.insert(fingerprint.to_string());
            }
        });
    }

    /// Whether the user's hook `key` runs for the first time with workspace scripts (then
    /// it is marked as run, with `fingerprint` allowed).
    fn first_run_of_user_hook(&self, key: &str, fingerprint: &str) -> bool {
        if self.read_approvals().user_hooks_run.contains(key) {
            return false;
        }
        self.change_approvals(|approvals| {
            approvals.user_hooks_run.insert(key.to_string());
            approvals.allowed.insert(fingerprint.to_string());
        });
        true
    }

    fn change_approvals(&self, change: impl FnOnce(&mut Approvals)) {
        let Some(path) = self.approvals_file() else {
            return;
        };
        let mut approvals = self.read_approvals();
        change(&mut approvals);
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

    /// Whether a hook may run. A workspace hook: remembered, or asked now (kind `execute`,
    /// its command and the scripts it runs shown); the approval covers the root the hook is
    /// in and what its scripts hold: the same hook in another folder, or after its script
    /// changed, is asked again. The user's own hook: always, unless it runs workspace
    /// scripts that changed since its first run here (whoever changed them) and the user
    /// has not allowed what they hold now.
    pub(super) async fn approved(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        hook: &Hook,
        cancel: &CancellationToken,
    ) -> bool {
        let root = self.host.roots().first().cloned().unwrap_or_default();
        let scripts: Vec<(String, String)> = super::scripts_of(&root, &hook.command)
            .into_iter()
            .map(|script| {
                let digest = crate::agent::workspace_scripts::digest_of(&root, &root.join(&script));
                (script, digest)
            })
            .collect();
        let workspace = hook.source == HookSource::Workspace;
        if !workspace && scripts.is_empty() {
            return true;
        }
        let fingerprint = json!({
            "root": root,
            "hook": hook.fingerprint(),
            "scripts": scripts,
        })
        .to_string();
        if !workspace {
            let key = json!({"root": root, "hook": hook.fingerprint()}).to_string();
            if self.workspace_entry_known(&fingerprint).is_none()
                && self.first_run_of_user_hook(&key, &fingerprint)
            {
                return true;
            }
        }
        let matcher = hook.matcher.clone().unwrap_or_default();
        let (title, file) = if workspace {
            (
                format!("Workspace hook ({}): {}", hook.event.name(), hook.command),
                ".agents/hooks.json",
            )
        } else {
            (
                format!(
                    "Your hook ({}): {} (a workspace script it runs changed since it last ran)",
                    hook.event.name(),
                    hook.command
                ),
                hook.source.file_name(),
            )
        };
        let input = json!({
            "command": hook.command,
            "event": hook.event.name(),
            "matcher": matcher,
            "file": file,
            "scripts": scripts.iter().map(|(path, _)| path).collect::<Vec<_>>(),
        });
        let tool_call = PermissionToolCall::new(
            format!("hook-{}", reminders::version_of(&fingerprint)),
            "hook",
            title,
            ToolKind::Execute,
            input.as_object().cloned().unwrap_or_default(),
        );
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
        tool_call: PermissionToolCall,
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
        // A subagent's hook is asked in its parent's session, labelled, as its calls are.
        let mut tool_call = tool_call;
        let (session_id, turn_id) = handle.ask_route(turn_id, &mut tool_call);
        let request = PermissionRequest {
            session_id,
            turn_id,
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
