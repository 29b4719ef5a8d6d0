//! Running hooks: the configured commands of an event (settings, the user's
//! `~/.config/agentls/hooks.json`, the workspace's `.agents/hooks.json`) run in parallel
//! with `sh -c` in the workspace, the event's JSON on stdin, `AGENTLS_PROJECT_DIR` and
//! `CLAUDE_PROJECT_DIR` set, within their timeout; on timeout or cancel their process group
//! is killed. Each run is recorded (`Event::Hook`) and told to the editor (`hook` update);
//! what it means is `agentls_core::hooks::verdict`, combined by `combine`. Workspace hooks
//! run only once the user approved them (per workspace and per hook content, remembered on
//! disk next to the workspace's session logs).
//!
//! Also the pending reminders of a session (from hooks, edits, compactions): queued here
//! and recorded by the turn at its next model call (`Turn::flush_reminders`).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::live::Durability;
use super::sessions::SessionHandle;
use super::Agent;
use crate::host::{PermissionOption, PermissionRequest};
use crate::process_groups::GroupGuard;
use crate::tools::registry::Registry;
use agentls_core::event::Event;
use agentls_core::hooks::{self, Finished, Hook, HookEvent, HookSource, Hooks, Verdict};
use agentls_core::reminders::{self, Reminder};

/// The most of a hook's stdout or stderr that is kept.
const MAX_OUTPUT_BYTES: usize = 256 * 1024;

/// What the server remembers about hooks between turns.
#[derive(Default)]
pub(super) struct HookState {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Configuration problems already reported (each once per server).
    warned: HashSet<String>,
    /// Answers for this server's life (`allowOnce`/`rejectOnce`): fingerprint → allowed.
    answered: HashMap<String, bool>,
    /// Sessions whose SessionStart ran in this server.
    started: HashSet<String>,
    /// Per session: the AGENTS.md chain text of its last turn.
    agents_md: HashMap<String, String>,
    /// Per session: reminders waiting for the next model call.
    pending: HashMap<String, Vec<Reminder>>,
}

impl HookState {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Queues a reminder for `session`'s next model call.
    pub(super) fn queue(&self, session: &str, reminder: Reminder) {
        self.with(|s| {
            s.pending
                .entry(session.to_string())
                .or_default()
                .push(reminder)
        });
    }

    pub(super) fn take_pending(&self, session: &str) -> Vec<Reminder> {
        self.with(|s| s.pending.remove(session).unwrap_or_default())
    }

    /// The SessionStart source of a session's turn: `new` or `loaded` for its first turn in
    /// this server, None after.
    pub(super) fn start_source(&self, session: &str, turns: u32) -> Option<&'static str> {
        self.with(|s| {
            s.started
                .insert(session.to_string())
                .then_some(if turns == 0 { "new" } else { "loaded" })
        })
    }

    /// Remembers the chain's text; the previous one when it differs.
    pub(super) fn agents_md_changed(&self, session: &str, text: &str) -> Option<String> {
        self.with(|s| {
            let previous = s.agents_md.insert(session.to_string(), text.to_string());
            previous.filter(|p| p != text)
        })
    }
}

/// Workspace hooks the user answered for good, on disk (`hook-approvals.json`).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Approvals {
    #[serde(default)]
    allowed: BTreeSet<String>,
    #[serde(default)]
    refused: BTreeSet<String>,
}

/// The user's hooks file: `$XDG_CONFIG_HOME/agentls/hooks.json` (`~/.config/...`).
fn user_file() -> Option<PathBuf> {
    crate::store::user_config::path("hooks.json")
}

/// The hooks of a file, or the problem reading it; an absent file has none.
fn read_file(path: &Path, source: HookSource) -> (Vec<Hook>, Vec<String>) {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(err) => {
            return (
                Vec::new(),
                vec![format!("cannot read {}: {err}", path.display())],
            )
        }
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(value) => {
            let (hooks, problems) = hooks::parse(&value, source);
            let problems = problems
                .into_iter()
                .map(|p| format!("{}: {p}", path.display()))
                .collect();
            (hooks, problems)
        }
        Err(err) => (
            Vec::new(),
            vec![format!(
                "{} is not JSON ({err}): its hooks are ignored",
                path.display()
            )],
        ),
    }
}

impl Agent {
    /// Every configured hook: settings, then the user file, then the workspace file (read
    /// each time, so an edit applies at once); problems are reported once.
    fn configured_hooks(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        cancel: &CancellationToken,
    ) -> Hooks {
        let mut all = Hooks {
            hooks: self.host.config().hooks,
        };
        let mut problems = Vec::new();
        if let Some(path) = user_file() {
            let (hooks, more) = read_file(&path, HookSource::User);
            all.extend(hooks);
            problems.extend(more);
        }
        if let Some(root) = self.host.roots().first() {
            let (hooks, more) = read_file(&root.join(".agents/hooks.json"), HookSource::Workspace);
            all.extend(hooks);
            problems.extend(more);
        }
        for problem in problems {
            if self.hooks.with(|s| s.warned.insert(problem.clone())) {
                tracing::warn!("hooks: {problem}");
                super::turn::say(
                    self,
                    handle,
                    turn_id,
                    cancel,
                    json!({"kind": "warning", "message": format!("hooks: {problem}")}),
                );
            }
        }
        all
    }

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
    async fn approved(
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
    pub(super) async fn workspace_entry_approved(
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
    pub(super) fn workspace_entry_known(&self, fingerprint: &str) -> Option<bool> {
        let approvals = self.read_approvals();
        if approvals.allowed.contains(fingerprint) {
            return Some(true);
        }
        if approvals.refused.contains(fingerprint) {
            return Some(false);
        }
        self.hooks.with(|s| s.answered.get(fingerprint).copied())
    }

    /// Runs the hooks of `event` that match `target`, in parallel, and combines what they
    /// say. `fields` are the event's own input fields. Contexts they give are queued as
    /// reminders. Never fails: a hook that cannot run is a warning.
    pub(super) async fn run_hooks(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        event: HookEvent,
        target: Option<&str>,
        fields: Value,
        cancel: &CancellationToken,
    ) -> Verdict {
        let all = self.configured_hooks(handle, turn_id, cancel);
        let matching: Vec<Hook> = all.matching(event, target).into_iter().cloned().collect();
        if matching.is_empty() {
            return hooks::combine(&[]);
        }
        let Some(root) = self.host.roots().first().cloned() else {
            return hooks::combine(&[]);
        };
        let mut runnable = Vec::new();
        for hook in matching {
            if hook.source == HookSource::Workspace
                && !self.approved(handle, turn_id, &hook, cancel).await
            {
                self.report(
                    handle,
                    turn_id,
                    &hook,
                    "notApproved",
                    Duration::ZERO,
                    Some("the workspace hook was not approved: not run".into()),
                    cancel,
                )
                .await;
                continue;
            }
            runnable.push(hook);
        }
        let transcript = handle.live.lock().await.log.path().display().to_string();
        let cwd = root.display().to_string();
        let input = hooks::input(
            event,
            &hooks::Common {
                session_id: &handle.id,
                transcript_path: &transcript,
                cwd: &cwd,
            },
            fields,
        );
        let stdin = format!("{input}\n");
        let hidden = self.hidden_env();
        let runs = runnable.iter().map(|hook| {
            let stdin = stdin.clone();
            let root = root.clone();
            let hidden = hidden.clone();
            async move {
                let started = Instant::now();
                let finished = run_one(hook, &stdin, &root, &hidden, cancel).await;
                (hook, finished, started.elapsed())
            }
        });
        let results = futures::future::join_all(runs).await;
        let reminders_on = self.host.config().reminders.hooks;
        let texts = self.host.prompts().reminders.clone();
        let mut verdicts = Vec::new();
        for (hook, finished, elapsed) in results {
            let verdict = hooks::verdict(event, &finished);
            self.report(
                handle,
                turn_id,
                hook,
                verdict.outcome,
                elapsed,
                verdict.message(),
                cancel,
            )
            .await;
            if let Some(warning) = &verdict.warning {
                super::turn::say(
                    self,
                    handle,
                    turn_id,
                    cancel,
                    json!({"kind": "warning", "message": format!("{} hook `{}`: {warning}", event.name(), hook.command)}),
                );
            }
            if let Some(context) = verdict.context.as_deref().filter(|_| reminders_on) {
                self.hooks.queue(
                    &handle.id,
                    reminders::from_hook(event.name(), &hook.command, context, &texts),
                );
            }
            verdicts.push(verdict);
        }
        hooks::combine(&verdicts)
    }

    /// Records a run and tells the editor (`hook` update), unless the turn was cancelled.
    #[allow(clippy::too_many_arguments)]
    async fn report(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        hook: &Hook,
        outcome: &str,
        elapsed: Duration,
        message: Option<String>,
        cancel: &CancellationToken,
    ) {
        let duration_ms = elapsed.as_millis() as u64;
        let event = Event::Hook {
            turn_id: Some(turn_id.to_string()),
            hook_event: hook.event.name().to_string(),
            command: hook.command.clone(),
            outcome: outcome.to_string(),
            duration_ms,
            message: message.clone(),
        };
        {
            let mut live = handle.live.lock().await;
            if let Err(err) = live.record(&event, Durability::Buffered, Registry::builtin()) {
                tracing::warn!("{err}");
            }
        }
        let mut update = json!({
            "kind": "hook",
            "event": hook.event.name(),
            "command": hook.command,
            "outcome": outcome,
            "durationMs": duration_ms,
        });
        if let Some(message) = message {
            update["message"] = json!(message);
        }
        // After a cancel the turn's only updates are its calls' last ones and turnEnd.
        super::turn::say(self, handle, turn_id, cancel, update);
    }
}

impl Agent {
    /// PreCompact (`trigger`: `manual` for `/compact` and `agent/session/compact`, else
    /// `auto`). It cannot stop a compaction; what it says is shown.
    pub(super) async fn pre_compact_hooks(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        trigger: super::compact::Trigger,
        instructions: Option<&str>,
        cancel: &CancellationToken,
    ) {
        let trigger = match trigger {
            super::compact::Trigger::Manual => "manual",
            _ => "auto",
        };
        self.run_hooks(
            handle,
            turn_id,
            HookEvent::PreCompact,
            Some(trigger),
            json!({"trigger": trigger, "custom_instructions": instructions.unwrap_or_default()}),
            cancel,
        )
        .await;
    }

    /// After a compaction: the files modified in the session, for the next model call, and
    /// SessionStart with `source` `compact`.
    pub(super) async fn after_compaction(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        cancel: &CancellationToken,
    ) {
        let (generation, files) = {
            let live = handle.live.lock().await;
            let files: Vec<String> = live.session.ledger.files_changed.keys().cloned().collect();
            (live.session.generation, files)
        };
        let texts = self.host.prompts().reminders.clone();
        self.hooks.queue(
            &handle.id,
            reminders::after_compaction(generation, &files, &texts),
        );
        self.run_hooks(
            handle,
            turn_id,
            HookEvent::SessionStart,
            Some("compact"),
            json!({"source": "compact"}),
            cancel,
        )
        .await;
    }
}

/// One hook process: `sh -c command` in `root`, `stdin` written, stdout and stderr read
/// (each up to `MAX_OUTPUT_BYTES`), killed with its process group at the timeout or on
/// cancel. Never waits past either: a hook that leaves a child holding its pipes is killed
/// with its group once it exits.
async fn run_one(
    hook: &Hook,
    stdin: &str,
    root: &Path,
    hidden_env: &[String],
    cancel: &CancellationToken,
) -> Finished {
    let mut command = tokio::process::Command::new("sh");
    for name in hidden_env {
        command.env_remove(name);
    }
    let spawned = command
        .arg("-c")
        .arg(&hook.command)
        .current_dir(root)
        .env("AGENTLS_PROJECT_DIR", root)
        .env("CLAUDE_PROJECT_DIR", root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) => {
            return Finished {
                spawn_error: Some(err.to_string()),
                ..Finished::default()
            }
        }
    };
    let mut group = GroupGuard::new(child.id());
    if let Some(mut pipe) = child.stdin.take() {
        let input = stdin.as_bytes().to_vec();
        // A hook that does not read its input must not block on a full pipe.
        tokio::spawn(async move {
            let _ = pipe.write_all(&input).await;
        });
    }
    let stdout = child.stdout.take().map(|p| tokio::spawn(read_capped(p)));
    let stderr = child.stderr.take().map(|p| tokio::spawn(read_capped(p)));
    let mut finished = Finished::default();
    tokio::select! {
        status = child.wait() => {
            finished.code = status.ok().and_then(|s| s.code());
        }
        () = tokio::time::sleep(hook.timeout) => finished.timed_out = true,
        () = cancel.cancelled() => finished.cancelled = true,
    }
    // Whatever is left of the group goes: the readers then see the pipes close.
    group.kill();
    let _ = child.wait().await;
    group.disarm();
    if let Some(reader) = stdout {
        finished.stdout = reader.await.unwrap_or_default();
    }
    if let Some(reader) = stderr {
        finished.stderr = reader.await.unwrap_or_default();
    }
    finished
}

async fn read_capped(mut pipe: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The stdin fields of a tool event.
pub(super) fn tool_fields(call_id: &str, name: &str, input: &Value) -> Value {
    json!({"tool_name": name, "tool_input": input, "tool_use_id": call_id})
}
