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

mod approvals;
mod process;

use crate::locks::Locked;
use process::run_one;
pub(in crate::agent) mod turn_events;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::sessions::SessionHandle;
use super::Agent;
use crate::agent::sessions::live::Durability;
use crate::store::untrusted_file::{read_config_file, ConfigRead, MAX_CONFIG_FILE_BYTES};
use crate::tools::registry::Registry;
use agentls_core::event::Event;
use agentls_core::hooks::{self, Finished, Hook, HookEvent, HookSource, Hooks, Verdict};
use agentls_core::reminders::{self, Reminder};
use agentls_core::updates::{HookRun, Update};

/// The most of a hook's stdout or stderr that is kept.
pub(in crate::agent) const MAX_OUTPUT_BYTES: usize = 256 * 1024;

/// What the server remembers about hooks between turns.
#[derive(Default)]
pub(in crate::agent) struct HookState {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Configuration problems already reported (each once per server).
    warned: HashSet<String>,
    /// Answers for this server's life (`allowOnce`/`rejectOnce`): fingerprint → allowed.
    answered: HashMap<String, bool>,
    /// Sessions whose SessionStart ran in this server (their SessionEnd is due).
    started: HashSet<String>,
    /// Per session: the AGENTS.md files its turns have loaded (InstructionsLoaded).
    instructions: HashMap<String, HashSet<PathBuf>>,
    /// Per session: the AGENTS.md chain text of its last turn.
    agents_md: HashMap<String, String>,
    /// Per session: reminders waiting for the next model call.
    pending: HashMap<String, Vec<Reminder>>,
}

impl HookState {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.inner.locked())
    }

    /// Queues a reminder for `session`'s next model call.
    pub(in crate::agent) fn queue(&self, session: &str, reminder: Reminder) {
        self.with(|s| {
            s.pending
                .entry(session.to_string())
                .or_default()
                .push(reminder)
        });
    }

    pub(in crate::agent) fn take_pending(&self, session: &str) -> Vec<Reminder> {
        self.with(|s| s.pending.remove(session).unwrap_or_default())
    }

    /// The SessionStart source of a session's turn: `new` or `loaded` for its first turn in
    /// this server, None after.
    pub(in crate::agent) fn start_source(&self, session: &str, turns: u32) -> Option<&'static str> {
        self.with(|s| {
            s.started
                .insert(session.to_string())
                .then_some(if turns == 0 { "new" } else { "loaded" })
        })
    }

    /// Whether `session`'s SessionStart ran and its SessionEnd is now due (once).
    fn end(&self, session: &str) -> bool {
        self.with(|s| {
            s.instructions.remove(session);
            s.started.remove(session)
        })
    }

    /// The sessions whose SessionEnd is due.
    fn started(&self) -> Vec<String> {
        self.with(|s| s.started.iter().cloned().collect())
    }

    /// The files of a turn's AGENTS.md chain that `session` had not loaded yet, with
    /// Claude Code's `load_reason`: all of them at its first turn in this server
    /// (`session_start`), later the ones new to the chain (`nested_traversal`: the chain
    /// follows the active file's directory).
    pub(in crate::agent) fn instructions_loaded(
        &self,
        session: &str,
        files: &[PathBuf],
    ) -> (&'static str, Vec<PathBuf>) {
        self.with(|s| {
            let reason = if s.instructions.contains_key(session) {
                "nested_traversal"
            } else {
                "session_start"
            };
            let loaded = s.instructions.entry(session.to_string()).or_default();
            let new = files
                .iter()
                .filter(|f| loaded.insert((*f).clone()))
                .cloned()
                .collect();
            (reason, new)
        })
    }

    /// Remembers the chain's text; the previous one when it differs.
    pub(in crate::agent) fn agents_md_changed(&self, session: &str, text: &str) -> Option<String> {
        self.with(|s| {
            let previous = s.agents_md.insert(session.to_string(), text.to_string());
            previous.filter(|p| p != text)
        })
    }
}

/// The user's hooks file: `$XDG_CONFIG_HOME/agentls/hooks.json` (`~/.config/...`).
fn user_file() -> Option<PathBuf> {
    crate::store::user_config::path("hooks.json")
}

/// The hooks of a file, or the problem reading it; an absent file has none. Only a regular
/// file inside `root` (the workspace, or the user's config directory) is read.
fn read_file(path: &Path, root: &Path, source: HookSource) -> (Vec<Hook>, Vec<String>) {
    let text = match read_config_file(path, Some(root), MAX_CONFIG_FILE_BYTES) {
        ConfigRead::Text(text) => text,
        ConfigRead::Missing => return (Vec::new(), Vec::new()),
        ConfigRead::Refused(why) => {
            return (
                Vec::new(),
                vec![format!("skipping {}: {why}", path.display())],
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

/// The workspace files a hook's command names (`hooks::named_files` that are regular files
/// inside `root`, where hooks run), as `/`-separated paths relative to it.
pub(in crate::agent) fn scripts_of(root: &Path, command: &str) -> Vec<String> {
    crate::agent::workspace_scripts::workspace_files(root, hooks::named_files(command))
}

impl Agent {
    /// Every configured hook: settings, then the user file, then the workspace file (read
    /// each time, so an edit applies at once); with the problems found reading them.
    fn read_hooks(&self) -> (Hooks, Vec<String>) {
        let mut all = Hooks {
            hooks: self.host.config().hooks,
        };
        let mut problems = Vec::new();
        if let Some(path) = user_file() {
            let root = path.parent().unwrap_or(&path);
            let (hooks, more) = read_file(&path, root, HookSource::User);
            all.extend(hooks);
            problems.extend(more);
        }
        if let Some(root) = self.host.roots().first() {
            let path = root.join(".agents/hooks.json");
            let (hooks, more) = read_file(&path, root, HookSource::Workspace);
            all.extend(hooks);
            problems.extend(more);
        }
        (all, problems)
    }

    /// Why a tool's change to `path` is asked in every mode (`approval::protected_write`),
    /// or None: agentls's and git's configuration in a workspace root, and the scripts the
    /// configured hooks run.
    pub(in crate::agent) fn protected_write(&self, path: &Path) -> Option<String> {
        let (hooks, _) = self.read_hooks();
        self.host.roots().iter().find_map(|root| {
            let root = root.canonicalize().unwrap_or_else(|_| root.clone());
            let relative = path.strip_prefix(&root).ok()?;
            // The hooks directory git's config names runs at the user's next commit.
            if crate::sandbox::git_hooks_dir(&root).is_some_and(|dir| path.starts_with(dir)) {
                return Some(format!(
                    "it changes git's hooks ({}: core.hooksPath)",
                    relative.display()
                ));
            }
            let relative = relative.to_string_lossy().replace('\\', "/");
            let scripts: Vec<String> = hooks
                .hooks
                .iter()
                .flat_map(|hook| scripts_of(&root, &hook.command))
                .collect();
            agentls_core::approval::protected_write(&relative, &scripts)
        })
    }

    /// Whether `problem` is new: a problem with the configuration (hooks, permission rules)
    /// is said once per server, not at every call.
    pub(in crate::agent) fn warn_once(&self, problem: &str) -> bool {
        self.hooks.with(|s| s.warned.insert(problem.to_string()))
    }

    /// Every configured hook (`read_hooks`); problems are reported once.
    fn configured_hooks(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        cancel: &CancellationToken,
    ) -> Hooks {
        let (all, problems) = self.read_hooks();
        for problem in problems {
            if self.warn_once(&problem) {
                tracing::warn!("hooks: {problem}");
                super::turn::say(
                    self,
                    handle,
                    turn_id,
                    cancel,
                    Update::warning(format!("hooks: {problem}")),
                );
            }
        }
        all
    }

    /// Runs the hooks of `event` that match `target`, in parallel, and combines what they
    /// say. `fields` are the event's own input fields. Contexts they give are queued as
    /// reminders. Never fails: a hook that cannot run is a warning.
    pub(in crate::agent) async fn run_hooks(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        event: HookEvent,
        target: Option<&str>,
        mut fields: Value,
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
        let runnable = self.approved_hooks(handle, turn_id, matching, cancel).await;
        let (session_id, transcript) = self.hook_session(handle, &mut fields).await;
        let cwd = root.display().to_string();
        let input = hooks::input(
            event,
            &hooks::Common {
                session_id: &session_id,
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
        let mut verdicts = Vec::new();
        for (hook, finished, elapsed) in results {
            verdicts.push(
                self.take_verdict(handle, turn_id, event, hook, &finished, elapsed, cancel)
                    .await,
            );
        }
        hooks::combine(&verdicts)
    }

    /// The `session_id` and `transcript_path` of a hook's input. A subagent's hooks get its
    /// parent's, as Claude Code's do (the subagent is part of the user's session), and
    /// `agent_id` (the subagent's own session) and `agent_type` (its name) in `fields`.
    async fn hook_session(&self, handle: &SessionHandle, fields: &mut Value) -> (String, String) {
        let own = handle.live.lock().await.log.path().display().to_string();
        let Some(asked_in) = handle.asks_in.get() else {
            return (handle.id.clone(), own);
        };
        if let Value::Object(map) = fields {
            map.entry("agent_id").or_insert_with(|| json!(handle.id));
            map.entry("agent_type")
                .or_insert_with(|| json!(asked_in.agent));
        }
        let parent = self
            .sessions
            .locked()
            .get(&asked_in.parent_session_id)
            .cloned();
        let transcript = match parent {
            Some(parent) => parent.live.lock().await.log.path().display().to_string(),
            None => own,
        };
        (asked_in.parent_session_id.clone(), transcript)
    }

    /// The hooks that may run: a workspace hook only once the user approved it, the user's
    /// own once the workspace scripts it runs are the ones it ran with or approved (one not
    /// approved is reported as such and skipped).
    async fn approved_hooks(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        matching: Vec<Hook>,
        cancel: &CancellationToken,
    ) -> Vec<Hook> {
        let mut runnable = Vec::new();
        for hook in matching {
            if !self.approved(handle, turn_id, &hook, cancel).await {
                self.report(
                    handle,
                    turn_id,
                    &hook,
                    "notApproved",
                    Duration::ZERO,
                    Some(if hook.source == HookSource::Workspace {
                        "the workspace hook was not approved: not run".into()
                    } else {
                        "a workspace script of the hook changed and was not approved: not run"
                            .into()
                    }),
                    cancel,
                )
                .await;
                continue;
            }
            runnable.push(hook);
        }
        runnable
    }

    /// What one finished hook means (`hooks::verdict`), reported; its warning shown and its
    /// added context queued as a reminder.
    #[allow(clippy::too_many_arguments)]
    async fn take_verdict(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        event: HookEvent,
        hook: &Hook,
        finished: &Finished,
        elapsed: Duration,
        cancel: &CancellationToken,
    ) -> Verdict {
        let verdict = hooks::verdict(event, finished);
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
            crate::agent::turn::say(
                self,
                handle,
                turn_id,
                cancel,
                Update::warning(format!(
                    "{} hook `{}`: {warning}",
                    event.name(),
                    hook.command
                )),
            );
        }
        let reminders_on = self.host.config().reminders.hooks;
        if let Some(context) = verdict.context.as_deref().filter(|_| reminders_on) {
            let texts = &self.host.prompts().reminders;
            self.hooks.queue(
                &handle.id,
                reminders::from_hook(event.name(), &hook.command, context, texts),
            );
        }
        verdict
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
        let update = Update::Hook(HookRun {
            event: hook.event.name().to_string(),
            command: hook.command.clone(),
            outcome: outcome.to_string(),
            duration_ms,
            message,
        });
        // After a cancel the turn's only updates are its calls' last ones and turnEnd.
        super::turn::say(self, handle, turn_id, cancel, update);
    }
}

impl Agent {
    /// PreCompact (`trigger`: `manual` for `/compact` and `agent/session/compact`, else
    /// `auto`). It cannot stop a compaction; what it says is shown.
    pub(in crate::agent) async fn pre_compact_hooks(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        trigger: super::compact::Trigger,
        instructions: Option<&str>,
        cancel: &CancellationToken,
    ) {
        let trigger = trigger_name(trigger);
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

    /// After a compaction: PostCompact (with the summary, empty when the compaction made
    /// none), the files modified in the session for the next model call, and SessionStart
    /// with `source` `compact`.
    pub(in crate::agent) async fn after_compaction(
        &self,
        handle: &SessionHandle,
        turn_id: &str,
        trigger: super::compact::Trigger,
        summary: &str,
        cancel: &CancellationToken,
    ) {
        let trigger = trigger_name(trigger);
        self.run_hooks(
            handle,
            turn_id,
            HookEvent::PostCompact,
            Some(trigger),
            json!({"trigger": trigger, "compact_summary": summary}),
            cancel,
        )
        .await;
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

impl Agent {
    /// SessionEnd for session `id` when its SessionStart ran in this server (once): it was
    /// closed or deleted, or the server is shutting down. Claude Code's `reason` for these is
    /// `other` (its own reasons are its terminal's: `/clear`, `/resume`, logout, exit).
    pub(in crate::agent) async fn session_end_hooks(&self, handle: &SessionHandle) {
        if !self.hooks.end(&handle.id) {
            return;
        }
        let turn_id = format!("end-{}", crate::store::session_log::new_session_id());
        self.run_hooks(
            handle,
            &turn_id,
            HookEvent::SessionEnd,
            Some("other"),
            json!({"reason": "other"}),
            &CancellationToken::new(),
        )
        .await;
        // The process may end next: what the hooks did is on disk first.
        if let Err(err) = handle.live.lock().await.log.sync() {
            tracing::warn!("cannot sync session log: {err}");
        }
    }

    /// SessionEnd for every session whose SessionStart ran in this server: the server is
    /// shutting down.
    pub async fn end_sessions(&self) {
        let handles: Vec<_> = {
            let sessions = self.sessions.locked();
            self.hooks
                .started()
                .iter()
                .filter_map(|id| sessions.get(id).cloned())
                .collect()
        };
        let ends = handles.iter().map(|handle| self.session_end_hooks(handle));
        futures::future::join_all(ends).await;
    }
}

/// Claude Code's name of a compaction's trigger: `manual` for `/compact` and
/// `agent/session/compact`, else `auto`.
fn trigger_name(trigger: super::compact::Trigger) -> &'static str {
    match trigger {
        super::compact::Trigger::Manual => "manual",
        _ => "auto",
    }
}

/// The stdin fields of a tool event.
pub(in crate::agent) fn tool_fields(call_id: &str, name: &str, input: &Value) -> Value {
    json!({"tool_name": name, "tool_input": input, "tool_use_id": call_id})
}
