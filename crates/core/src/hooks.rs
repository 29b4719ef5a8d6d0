//! Hooks: the user's own commands run at fixed points of the agent loop, configured in the
//! JSON shape Claude Code uses (`{"hooks": {"PreToolUse": [{"matcher": "shell", "hooks":
//! [{"type": "command", "command": "...", "timeout": 60}]}]}}`), so scripts written for it
//! work unchanged.
//!
//! Pure: parsing a configuration, choosing the hooks an event runs, the JSON a hook reads on
//! stdin, and what a finished run means (exit code, stdout, stderr) — alone and combined
//! with the other hooks of the same event. Running the commands is `server::agent::hooks`.

use std::time::Duration;

use serde_json::{json, Map, Value};

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    /// A session's first turn in this server (`source`: `new`, `loaded`), and after a
    /// compaction (`compact`).
    SessionStart,
    /// The user's prompt, before the model sees it.
    UserPromptSubmit,
    /// A tool call, after it was prepared and before it is approved and run.
    PreToolUse,
    /// A tool call that ran and succeeded.
    PostToolUse,
    /// A tool call that ran and failed (instead of PostToolUse).
    PostToolUseFailure,
    /// A call is about to be asked about: the hook may answer for the user.
    PermissionRequest,
    /// agentls needs the user (`notification_type`: `permission_prompt`, `idle_prompt`).
    Notification,
    /// A `task` subagent starts.
    SubagentStart,
    /// A `task` subagent's model ended its turn (instead of Stop).
    SubagentStop,
    /// Before a compaction (`trigger`: `auto`, `manual`).
    PreCompact,
    /// After a compaction.
    PostCompact,
    /// The turn is about to end.
    Stop,
    /// The turn ended on a provider error (instead of Stop).
    StopFailure,
    /// A session's hooks end: it was closed or deleted, or the server shut down.
    SessionEnd,
    /// An AGENTS.md file joined a session's instructions.
    InstructionsLoaded,
}

impl HookEvent {
    pub const ALL: [HookEvent; 15] = [
        HookEvent::SessionStart,
        HookEvent::InstructionsLoaded,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::Notification,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::Stop,
        HookEvent::StopFailure,
        HookEvent::SessionEnd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::Notification => "Notification",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
            HookEvent::Stop => "Stop",
            HookEvent::StopFailure => "StopFailure",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::InstructionsLoaded => "InstructionsLoaded",
        }
    }

    /// The time a hook of this event may run when its configuration says none: Claude Code
    /// gives SessionEnd 1.5 s, so a slow one does not hold up a shutdown.
    pub fn default_timeout(self) -> Duration {
        match self {
            HookEvent::SessionEnd => Duration::from_millis(1500),
            _ => DEFAULT_TIMEOUT,
        }
    }

    /// Events whose hooks only observe, as Claude Code runs them: their exit code and
    /// output are ignored.
    fn observes_only(self) -> bool {
        matches!(
            self,
            HookEvent::Notification | HookEvent::StopFailure | HookEvent::InstructionsLoaded
        )
    }

    pub fn from_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Its row of docs/protocol.md's hook events table (`events_table`), as Markdown: when it
    /// runs, what its matcher matches, the stdin fields beyond the common ones.
    fn doc(self) -> [&'static str; 3] {
        match self {
            HookEvent::SessionStart => [
                "a session's first turn in this server (`source` `new` or `loaded`), and after each compaction (`compact`)",
                "`source`",
                "`source`",
            ],
            HookEvent::UserPromptSubmit => {
                ["a prompt, before the model sees it", "—", "`prompt`"]
            }
            HookEvent::PreToolUse => [
                "a parsed call of a known tool, before it is prepared, approved and run",
                "tool name",
                "`tool_name`, `tool_input`, `tool_use_id`",
            ],
            HookEvent::PostToolUse => [
                "after a call ran and succeeded",
                "tool name",
                "`tool_name`, `tool_input`, `tool_use_id`, `tool_response` `{success, output}`, `duration_ms`",
            ],
            HookEvent::PostToolUseFailure => [
                "after a call ran and failed (not after a block, a refusal or a rejection, which never ran)",
                "tool name",
                "`tool_name`, `tool_input`, `tool_use_id`, `error` (the output the model gets), `duration_ms`",
            ],
            HookEvent::PermissionRequest => [
                "a call is about to be asked about (not the question to leave the sandbox)",
                "tool name",
                "`tool_name`, `tool_input`",
            ],
            HookEvent::Notification => [
                "a permission request is shown (`permission_prompt`); a top-level turn ended, not cancelled (`idle_prompt`)",
                "`notification_type`",
                "`message`, `title`, `notification_type`",
            ],
            HookEvent::SubagentStart => [
                "a `task` subagent starts, before its first model call",
                "subagent name",
                "`agent_id` (its session), `agent_type` (its name)",
            ],
            HookEvent::SubagentStop => [
                "a subagent's model ended its turn (instead of Stop)",
                "subagent name",
                "`stop_hook_active`, `agent_id`, `agent_type`, `agent_transcript_path`, `last_assistant_message`",
            ],
            HookEvent::PreCompact => [
                "before a compaction",
                "`trigger`",
                "`trigger` (`manual` for `/compact` and `agent/session/compact`, else `auto`), `custom_instructions`",
            ],
            HookEvent::PostCompact => [
                "after a compaction",
                "`trigger`",
                "`trigger`, `compact_summary` (empty when nothing was summarized)",
            ],
            HookEvent::Stop => [
                "the model ended the turn",
                "—",
                "`stop_hook_active`, `last_assistant_message`",
            ],
            HookEvent::StopFailure => [
                "the turn ended on a provider error (instead of Stop)",
                "`error`",
                "`error` (`rate_limit`, `authentication_failed`, `invalid_request`, `server_error`, `unknown`), `error_details`, `last_assistant_message`",
            ],
            HookEvent::SessionEnd => [
                "a session whose SessionStart ran is closed or deleted, or the server shuts down",
                "`reason`",
                "`reason` (`other`)",
            ],
            HookEvent::InstructionsLoaded => [
                "an AGENTS.md file is in a turn's chain: every file at the session's first turn in this server (`session_start`), a file new to the chain later (`nested_traversal`)",
                "`load_reason`",
                "`file_path`, `memory_type` (`Project`), `load_reason`",
            ],
        }
    }
}

/// The hook events table of docs/protocol.md, one row per event of `HookEvent::ALL`.
pub fn events_table() -> String {
    let mut table = String::from(
        "| event | when | matcher matches | stdin fields beyond the common ones |\n|---|---|---|---|\n",
    );
    for event in HookEvent::ALL {
        let [when, matcher, stdin] = event.doc();
        table.push_str(&format!(
            "| `{}` | {when} | {matcher} | {stdin} |\n",
            event.name()
        ));
    }
    table
}

/// Where a hook was configured: workspace hooks run only once the user approved them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookSource {
    /// The `hooks` key of the settings.
    Settings,
    /// `~/.config/agentls/hooks.json`.
    User,
    /// `.agents/hooks.json` of the workspace.
    Workspace,
}

impl HookSource {
    /// Where hooks of this source are written, as the user knows it.
    pub fn file_name(self) -> &'static str {
        match self {
            HookSource::Settings => "the hooks setting",
            HookSource::User => "~/.config/agentls/hooks.json",
            HookSource::Workspace => ".agents/hooks.json",
        }
    }
}

impl HookSource {
    pub fn name(self) -> &'static str {
        match self {
            HookSource::Settings => "settings",
            HookSource::User => "user",
            HookSource::Workspace => "workspace",
        }
    }
}

/// The default time a hook may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One configured command.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub event: HookEvent,
    /// The matcher as written (absent, empty or `*`: everything).
    pub matcher: Option<String>,
    pub command: String,
    pub timeout: Duration,
    pub source: HookSource,
}

/// The words of a hook's command that may name a file it runs (`sh .agents/fmt.sh`,
/// `./scripts/lint`, `python3 "$CLAUDE_PROJECT_DIR/tools/check.py"`), relative to the
/// workspace root where hooks run: every word that is not an option, an assignment or a
/// shell operator, with quotes and a leading project-directory variable taken off. Which of
/// them are files is for the caller to see on disk.
pub fn named_files(command: &str) -> Vec<String> {
    const PROJECT_DIRS: [&str; 4] = [
        "$AGENTLS_PROJECT_DIR/",
        "${AGENTLS_PROJECT_DIR}/",
        "$CLAUDE_PROJECT_DIR/",
        "${CLAUDE_PROJECT_DIR}/",
    ];
    let mut words = Vec::new();
    for word in command.split(|c: char| c.is_whitespace() || ";&|()<>`".contains(c)) {
        let word = word.replace(['"', '\''], "");
        let word = PROJECT_DIRS
            .iter()
            .find_map(|dir| word.strip_prefix(dir))
            .unwrap_or(&word)
            .trim_start_matches("./");
        if word.is_empty() || word.starts_with('-') || word.contains(['$', '=', '*', '?']) {
            continue;
        }
        if !words.iter().any(|w| w == word) {
            words.push(word.to_string());
        }
    }
    words
}

impl Hook {
    /// What a workspace approval is remembered for: a changed hook is another hook.
    pub fn fingerprint(&self) -> String {
        json!({
            "event": self.event.name(),
            "matcher": self.matcher,
            "command": self.command,
            "timeoutMs": self.timeout.as_millis() as u64,
        })
        .to_string()
    }

    /// Whether this hook runs for `target` (a tool name, a `source` or a `trigger`; None
    /// for events without a matcher). Matchers are regular expressions matched whole, as
    /// Claude Code matches them (`shell` is only `shell`; `edit_file|write_file`, `.*`).
    pub fn matches(&self, target: Option<&str>) -> bool {
        let Some(matcher) = self
            .matcher
            .as_deref()
            .filter(|m| !m.is_empty() && *m != "*")
        else {
            return true;
        };
        let Some(target) = target else { return true };
        regex::Regex::new(&format!("^(?:{matcher})$")).is_ok_and(|re| re.is_match(target))
    }
}

/// Every configured hook, in order: settings, then the user file, then the workspace file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hooks {
    pub hooks: Vec<Hook>,
}

impl Hooks {
    /// The hooks `event` runs for `target`.
    pub fn matching(&self, event: HookEvent, target: Option<&str>) -> Vec<&Hook> {
        self.hooks
            .iter()
            .filter(|h| h.event == event && h.matches(target))
            .collect()
    }

    pub fn extend(&mut self, more: Vec<Hook>) {
        self.hooks.extend(more);
    }
}

/// The hooks of one configuration value: either `{"hooks": {Event: [...]}}` (a Claude Code
/// settings file) or the event map itself (the `hooks` key of agentls's settings). What
/// cannot be used is reported and skipped; the rest is kept.
pub fn parse(value: &Value, source: HookSource) -> (Vec<Hook>, Vec<String>) {
    let mut hooks = Vec::new();
    let mut problems = Vec::new();
    let events = match value {
        Value::Object(map) if map.get("hooks").is_some_and(Value::is_object) => &map["hooks"],
        Value::Null => return (hooks, problems),
        other => other,
    };
    let Value::Object(events) = events else {
        problems.push(format!(
            "hooks must be an object of events, got {}",
            short(events)
        ));
        return (hooks, problems);
    };
    for (name, groups) in events {
        let Some(event) = HookEvent::from_name(name) else {
            problems.push(format!(
                "unknown hook event {name:?} (agentls runs {}): ignored",
                HookEvent::ALL.map(HookEvent::name).join(", ")
            ));
            continue;
        };
        let Value::Array(groups) = groups else {
            problems.push(format!(
                "hooks.{name} must be a list, got {}",
                short(groups)
            ));
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            let at = format!("hooks.{name}[{g}]");
            let matcher = match group.get("matcher") {
                None | Some(Value::Null) => None,
                Some(Value::String(m)) => {
                    if !m.is_empty()
                        && m != "*"
                        && regex::Regex::new(&format!("^(?:{m})$")).is_err()
                    {
                        problems.push(format!(
                            "{at}.matcher {m:?} is not a regular expression: ignored"
                        ));
                        continue;
                    }
                    Some(m.clone())
                }
                Some(other) => {
                    problems.push(format!(
                        "{at}.matcher must be a string, got {}",
                        short(other)
                    ));
                    continue;
                }
            };
            let Some(commands) = group.get("hooks").and_then(Value::as_array) else {
                problems.push(format!("{at}.hooks must be a list of commands"));
                continue;
            };
            for (c, command) in commands.iter().enumerate() {
                let at = format!("{at}.hooks[{c}]");
                match command_of(command, event) {
                    Ok((text, timeout)) => hooks.push(Hook {
                        event,
                        matcher: matcher.clone(),
                        command: text,
                        timeout,
                        source,
                    }),
                    Err(why) => problems.push(format!("{at}: {why}: ignored")),
                }
            }
        }
    }
    (hooks, problems)
}

fn command_of(value: &Value, event: HookEvent) -> Result<(String, Duration), String> {
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("command");
    if kind != "command" {
        return Err(format!("type {kind:?} is not supported (only \"command\")"));
    }
    let command = value
        .get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .ok_or("a command hook needs a non-empty \"command\" string")?;
    let timeout = match value.get("timeout") {
        None | Some(Value::Null) => event.default_timeout(),
        Some(t) => match t.as_f64().filter(|s| *s > 0.0 && s.is_finite()) {
            Some(seconds) => Duration::from_millis((seconds * 1000.0).ceil() as u64),
            None => {
                return Err(format!(
                    "timeout must be a positive number of seconds, got {t}"
                ))
            }
        },
    };
    Ok((command.to_string(), timeout))
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(59).collect::<String>())
    } else {
        text
    }
}

/// What every hook input carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Common<'a> {
    pub session_id: &'a str,
    /// The session log.
    pub transcript_path: &'a str,
    pub cwd: &'a str,
}

/// The JSON a hook reads on stdin: the common fields, `hook_event_name`, then the event's
/// own (`prompt`, `tool_name`, `tool_input`, `tool_response`, `trigger`, `source`,
/// `stop_hook_active`).
pub fn input(event: HookEvent, common: &Common, fields: Value) -> Value {
    let mut map = Map::new();
    map.insert("session_id".into(), json!(common.session_id));
    map.insert("transcript_path".into(), json!(common.transcript_path));
    map.insert("cwd".into(), json!(common.cwd));
    map.insert("hook_event_name".into(), json!(event.name()));
    if let Value::Object(fields) = fields {
        map.extend(fields);
    }
    Value::Object(map)
}

/// How a hook process ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Finished {
    /// The exit code; None when it was killed (timeout, cancel) or could not start.
    pub code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    /// It could not be started (the reason).
    pub spawn_error: Option<String>,
    pub stdout: String,
    pub stderr: String,
}

/// A PreToolUse (or PermissionRequest) hook's say over the approval policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    Allow,
    Ask,
    Deny,
}

/// What one run (or the runs of one event, combined) means for the loop.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Verdict {
    /// `ok`, `blocked`, `error`, `timeout`, `cancelled`: the `outcome` of the `hook` update.
    pub outcome: &'static str,
    /// Exit 2 or `decision: "block"`: the reason (for the model, or the user for a prompt).
    pub block: Option<String>,
    /// `continue: false`: the turn stops, with this reason for the user.
    pub stop: Option<String>,
    /// `systemMessage`: shown to the user.
    pub system_message: Option<String>,
    /// PreToolUse `permissionDecision` and its reason, or PermissionRequest's
    /// `decision.behavior` and its `message`.
    pub permission: Option<(Permission, Option<String>)>,
    /// PreToolUse `updatedInput`, or PermissionRequest's with `allow`: the call's arguments
    /// replaced.
    pub updated_input: Option<Value>,
    /// Text for the model: `additionalContext`, or the plain stdout of SessionStart and
    /// UserPromptSubmit.
    pub context: Option<String>,
    /// A non-blocking problem for the user (another exit code, a timeout, bad JSON).
    pub warning: Option<String>,
}

impl Verdict {
    /// The one-line message of the `hook` update, when there is something to say.
    pub fn message(&self) -> Option<String> {
        self.block
            .clone()
            .or_else(|| self.stop.clone())
            .or_else(|| self.warning.clone())
            .or_else(|| self.system_message.clone())
            .or_else(|| {
                self.permission.as_ref().map(|(p, why)| {
                    let p = match p {
                        Permission::Allow => "allow",
                        Permission::Ask => "ask",
                        Permission::Deny => "deny",
                    };
                    match why {
                        Some(why) => format!("{p}: {why}"),
                        None => p.to_string(),
                    }
                })
            })
    }
}

fn non_empty(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// What a finished run of a hook for `event` means, read as Claude Code reads it: exit 0
/// goes on (JSON on stdout is read for its fields; plain stdout of SessionStart and
/// UserPromptSubmit is context for the model); exit 2 blocks with stderr as the reason;
/// any other end is a warning and the loop goes on.
pub fn verdict(event: HookEvent, run: &Finished) -> Verdict {
    let mut v = Verdict {
        outcome: "ok",
        ..Verdict::default()
    };
    if let Some(error) = &run.spawn_error {
        v.outcome = "error";
        v.warning = Some(format!("could not start: {error}"));
        return v;
    }
    if run.cancelled {
        v.outcome = "cancelled";
        return v;
    }
    if run.timed_out {
        v.outcome = "timeout";
        v.warning = Some("timed out and was stopped".into());
        return v;
    }
    if event.observes_only() {
        return v;
    }
    match run.code {
        // Claude Code does not honour exit 2 here: only the `decision` object answers.
        Some(0) | Some(2) if event == HookEvent::PermissionRequest => {}
        Some(0) => {}
        Some(2) => {
            v.outcome = "blocked";
            v.block = Some(
                non_empty(&run.stderr).unwrap_or_else(|| "blocked by a hook (exit code 2)".into()),
            );
            return v;
        }
        Some(code) => {
            v.outcome = "error";
            v.warning = Some(match non_empty(&run.stderr) {
                Some(stderr) => format!("exit code {code}: {stderr}"),
                None => format!("exit code {code}"),
            });
            return v;
        }
        None => {
            v.outcome = "error";
            v.warning = Some("killed by a signal".into());
            return v;
        }
    }
    let stdout = run.stdout.trim();
    let parsed = stdout
        .starts_with('{')
        .then(|| serde_json::from_str::<Value>(stdout).ok())
        .flatten();
    let Some(output) = parsed else {
        if matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit) {
            v.context = non_empty(stdout);
        }
        return v;
    };
    read_json(event, &output, &mut v);
    v
}

fn read_json(event: HookEvent, output: &Value, v: &mut Verdict) {
    // Claude Code discards the JSON of these: they cannot change what already happened.
    if matches!(event, HookEvent::SessionEnd | HookEvent::PostCompact) {
        return;
    }
    let text = |key: &str| output.get(key).and_then(Value::as_str).and_then(non_empty);
    if output.get("continue") == Some(&Value::Bool(false)) {
        v.outcome = "blocked";
        v.stop = Some(text("stopReason").unwrap_or_else(|| "stopped by a hook".into()));
    }
    v.system_message = text("systemMessage");
    let specific = output.get("hookSpecificOutput");
    let specific_text = |key: &str| {
        specific
            .and_then(|s| s.get(key))
            .and_then(Value::as_str)
            .and_then(non_empty)
    };
    v.context = specific_text("additionalContext");
    if event == HookEvent::PermissionRequest {
        if let Some(decision) = specific.and_then(|s| s.get("decision")) {
            read_permission_decision(decision, v);
        }
        return;
    }
    match output.get("decision").and_then(Value::as_str) {
        Some("block") => {
            v.outcome = "blocked";
            v.block = Some(text("reason").unwrap_or_else(|| "blocked by a hook".into()));
        }
        // The older PreToolUse spelling of permissionDecision.
        Some("approve") if event == HookEvent::PreToolUse => {
            v.permission = Some((Permission::Allow, text("reason")));
        }
        _ => {}
    }
    if event == HookEvent::PreToolUse {
        let decision = match specific_text("permissionDecision").as_deref() {
            Some("allow") => Some(Permission::Allow),
            Some("deny") => Some(Permission::Deny),
            Some("ask") => Some(Permission::Ask),
            Some(other) => {
                v.warning = Some(format!(
                    "unknown permissionDecision {other:?} (allow, deny or ask): ignored"
                ));
                None
            }
            None => None,
        };
        if let Some(decision) = decision {
            v.permission = Some((decision, specific_text("permissionDecisionReason")));
        }
        if let Some(Permission::Deny) = v.permission.as_ref().map(|p| p.0) {
            v.outcome = "blocked";
        }
        v.updated_input = specific
            .and_then(|s| s.get("updatedInput"))
            .filter(|u| u.is_object())
            .cloned();
    }
}

/// A PermissionRequest hook's `hookSpecificOutput.decision`: `behavior` `allow` (with
/// `updatedInput`) or `deny` (with `message` for the model, and `interrupt` to stop the turn).
fn read_permission_decision(decision: &Value, v: &mut Verdict) {
    let text = |key: &str| {
        decision
            .get(key)
            .and_then(Value::as_str)
            .and_then(non_empty)
    };
    match decision.get("behavior").and_then(Value::as_str) {
        Some("allow") => {
            v.permission = Some((Permission::Allow, None));
            v.updated_input = decision
                .get("updatedInput")
                .filter(|u| u.is_object())
                .cloned();
        }
        Some("deny") => {
            let message = text("message");
            v.outcome = "blocked";
            if decision.get("interrupt") == Some(&Value::Bool(true)) {
                v.stop = Some(
                    message
                        .clone()
                        .unwrap_or_else(|| "interrupted by a PermissionRequest hook".into()),
                );
            }
            v.permission = Some((Permission::Deny, message));
        }
        Some(other) => {
            v.warning = Some(format!(
                "unknown decision.behavior {other:?} (allow or deny): ignored"
            ));
        }
        None => {}
    }
}

/// The verdicts of the hooks of one event, run in parallel, as one: any block blocks (the
/// reasons joined), any stop stops, `deny` beats `ask` beats `allow`, the last
/// `updatedInput` wins, contexts and messages are kept in configuration order.
pub fn combine(verdicts: &[Verdict]) -> Verdict {
    let join = |texts: Vec<String>| (!texts.is_empty()).then(|| texts.join("\n"));
    let collect = |f: fn(&Verdict) -> Option<String>| -> Vec<String> {
        verdicts.iter().filter_map(f).collect()
    };
    let permission = verdicts
        .iter()
        .filter_map(|v| v.permission.clone())
        .max_by_key(|(p, _)| *p);
    let outcome = ["blocked", "error", "timeout", "cancelled"]
        .into_iter()
        .find(|o| verdicts.iter().any(|v| v.outcome == *o))
        .unwrap_or("ok");
    Verdict {
        outcome,
        block: join(collect(|v| v.block.clone())),
        stop: join(collect(|v| v.stop.clone())),
        system_message: join(collect(|v| v.system_message.clone())),
        permission,
        updated_input: verdicts.iter().rev().find_map(|v| v.updated_input.clone()),
        context: join(collect(|v| v.context.clone())),
        warning: join(collect(|v| v.warning.clone())),
    }
}

#[cfg(test)]
mod named_files_tests {
    use super::named_files;

    #[test]
    fn the_words_that_may_be_scripts() {
        assert_eq!(named_files("sh .agents/fmt.sh"), ["sh", ".agents/fmt.sh"]);
        assert_eq!(
            named_files("python3 \"$CLAUDE_PROJECT_DIR/tools/check.py\" --strict && ./lint>out"),
            ["python3", "tools/check.py", "lint", "out"]
        );
        assert_eq!(named_files("X=1 jq -r '.a' | cat"), ["jq", ".a", "cat"]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    fn ran(code: i32, stdout: &str, stderr: &str) -> Finished {
        Finished {
            code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            ..Finished::default()
        }
    }

    #[test]
    fn claude_code_settings_parse_and_problems_are_reported_not_fatal() {
        let value = json!({"hooks": {
            "PreToolUse": [{"matcher": "shell|edit_file", "hooks": [
                {"type": "command", "command": "guard.sh", "timeout": 5},
                {"type": "prompt", "prompt": "is it fine?"}
            ]}],
            "Stop": [{"hooks": [{"type": "command", "command": "check.sh"}]}],
            "TeammateIdle": [],
            "SessionEnd": [{"hooks": [{"command": "bye.sh"}, {"command": "slow-bye.sh", "timeout": 5}]}],
            "PostToolUse": [{"matcher": "(", "hooks": [{"command": "x"}]}]
        }});
        let (hooks, problems) = parse(&value, HookSource::User);
        let summary: Vec<String> = hooks
            .iter()
            .map(|h| {
                format!(
                    "{} {:?} {} {:?} {}",
                    h.event.name(),
                    h.matcher,
                    h.command,
                    h.timeout,
                    h.source.name()
                )
            })
            .collect();
        expect![[r#"
            [
                "PreToolUse Some(\"shell|edit_file\") guard.sh 5s user",
                "SessionEnd None bye.sh 1.5s user",
                "SessionEnd None slow-bye.sh 5s user",
                "Stop None check.sh 60s user",
            ]
        "#]]
        .assert_debug_eq(&summary);
        expect![[r#"
            [
                "hooks.PostToolUse[0].matcher \"(\" is not a regular expression: ignored",
                "hooks.PreToolUse[0].hooks[1]: type \"prompt\" is not supported (only \"command\"): ignored",
                "unknown hook event \"TeammateIdle\" (agentls runs SessionStart, InstructionsLoaded, UserPromptSubmit, PreToolUse, PermissionRequest, PostToolUse, PostToolUseFailure, Notification, SubagentStart, SubagentStop, PreCompact, PostCompact, Stop, StopFailure, SessionEnd): ignored",
            ]
        "#]]
        .assert_debug_eq(&problems);
        // The settings key holds the event map itself.
        let (bare, _) = parse(&value["hooks"], HookSource::Settings);
        assert_eq!(bare.len(), 4);
        assert_eq!(parse(&json!([1]), HookSource::Settings).1.len(), 1);
    }

    #[test]
    fn matchers_are_whole_regular_expressions() {
        let hook = |m: Option<&str>| Hook {
            event: HookEvent::PreToolUse,
            matcher: m.map(str::to_string),
            command: "x".into(),
            timeout: DEFAULT_TIMEOUT,
            source: HookSource::Settings,
        };
        assert!(hook(Some("shell")).matches(Some("shell")));
        assert!(!hook(Some("shell")).matches(Some("shell_extra")));
        assert!(hook(Some("edit_file|write_file")).matches(Some("write_file")));
        assert!(hook(Some(".*_file")).matches(Some("read_file")));
        assert!(hook(Some("*")).matches(Some("grep")));
        assert!(hook(Some("")).matches(Some("grep")));
        assert!(hook(None).matches(Some("grep")));
        assert!(hook(Some("shell")).matches(None));
        // Another content is another hook for approvals.
        assert_ne!(
            hook(Some("shell")).fingerprint(),
            hook(Some("grep")).fingerprint()
        );
    }

    #[test]
    fn input_carries_the_common_fields_and_the_events_own() {
        let common = Common {
            session_id: "s1",
            transcript_path: "/state/s1.jsonl",
            cwd: "/w",
        };
        let value = input(
            HookEvent::PreToolUse,
            &common,
            json!({"tool_name": "shell", "tool_input": {"command": "rm -rf x"}}),
        );
        expect![[r#"{"cwd":"/w","hook_event_name":"PreToolUse","session_id":"s1","tool_input":{"command":"rm -rf x"},"tool_name":"shell","transcript_path":"/state/s1.jsonl"}"#]]
            .assert_eq(&value.to_string());
    }

    #[test]
    fn exit_codes_read_as_claude_code_reads_them() {
        let ok = verdict(HookEvent::UserPromptSubmit, &ran(0, "use tabs\n", ""));
        assert_eq!(
            (ok.outcome, ok.context.as_deref()),
            ("ok", Some("use tabs"))
        );
        // Plain stdout of other events is not context.
        assert_eq!(
            verdict(HookEvent::PreToolUse, &ran(0, "hi", "")).context,
            None
        );
        let blocked = verdict(HookEvent::PreToolUse, &ran(2, "", "no rm here\n"));
        assert_eq!(
            (blocked.outcome, blocked.block.as_deref()),
            ("blocked", Some("no rm here"))
        );
        let failed = verdict(HookEvent::PreToolUse, &ran(1, "", "oops"));
        assert_eq!(
            (failed.outcome, failed.block, failed.warning.as_deref()),
            ("error", None, Some("exit code 1: oops"))
        );
        let slow = verdict(
            HookEvent::Stop,
            &Finished {
                timed_out: true,
                ..Finished::default()
            },
        );
        assert_eq!((slow.outcome, slow.block), ("timeout", None));
    }

    #[test]
    fn json_output_fields() {
        let out = json!({
            "continue": true,
            "systemMessage": "checked",
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "permissionDecisionReason": "reads are fine",
                "updatedInput": {"path": "src/lib.rs"},
                "additionalContext": "the file is generated"
            }
        });
        let v = verdict(HookEvent::PreToolUse, &ran(0, &out.to_string(), ""));
        expect![[r#"
            Verdict {
                outcome: "ok",
                block: None,
                stop: None,
                system_message: Some(
                    "checked",
                ),
                permission: Some(
                    (
                        Allow,
                        Some(
                            "reads are fine",
                        ),
                    ),
                ),
                updated_input: Some(
                    Object {
                        "path": String("src/lib.rs"),
                    },
                ),
                context: Some(
                    "the file is generated",
                ),
                warning: None,
            }
        "#]]
        .assert_debug_eq(&v);
        let stop = verdict(
            HookEvent::Stop,
            &ran(0, r#"{"decision": "block", "reason": "tests fail"}"#, ""),
        );
        assert_eq!(stop.block.as_deref(), Some("tests fail"));
        let halt = verdict(
            HookEvent::PostToolUse,
            &ran(0, r#"{"continue": false, "stopReason": "enough"}"#, ""),
        );
        assert_eq!(
            (halt.outcome, halt.stop.as_deref()),
            ("blocked", Some("enough"))
        );
        let deny = verdict(
            HookEvent::PreToolUse,
            &ran(
                0,
                r#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}"#,
                "",
            ),
        );
        assert_eq!(deny.outcome, "blocked");
    }

    #[test]
    fn parallel_verdicts_combine_strictest_first() {
        let allow = Verdict {
            outcome: "ok",
            permission: Some((Permission::Allow, None)),
            context: Some("a".into()),
            ..Verdict::default()
        };
        let deny = Verdict {
            outcome: "blocked",
            permission: Some((Permission::Deny, Some("no".into()))),
            context: Some("b".into()),
            ..Verdict::default()
        };
        let slow = Verdict {
            outcome: "timeout",
            warning: Some("timed out".into()),
            ..Verdict::default()
        };
        let all = combine(&[allow, deny, slow]);
        assert_eq!(all.outcome, "blocked");
        assert_eq!(all.permission, Some((Permission::Deny, Some("no".into()))));
        assert_eq!(all.context.as_deref(), Some("a\nb"));
        assert_eq!(all.warning.as_deref(), Some("timed out"));
        assert_eq!(combine(&[]).outcome, "ok");
    }

    #[test]
    fn a_permission_request_hook_answers_with_its_decision_object() {
        let answer = |stdout: &str, code: i32| {
            verdict(HookEvent::PermissionRequest, &ran(code, stdout, "no"))
        };
        let allow = answer(
            r#"{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}"#,
            0,
        );
        assert_eq!(
            (allow.outcome, allow.permission, allow.updated_input),
            ("ok", Some((Permission::Allow, None)), None)
        );
        let rewritten = answer(
            r#"{"hookSpecificOutput": {"decision": {"behavior": "allow", "updatedInput": {"command": "npm run lint"}}}}"#,
            0,
        );
        assert_eq!(
            rewritten.updated_input,
            Some(json!({"command": "npm run lint"}))
        );
        let deny = answer(
            r#"{"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "not on main", "interrupt": true}}}"#,
            0,
        );
        assert_eq!(deny.outcome, "blocked");
        assert_eq!(
            deny.permission,
            Some((Permission::Deny, Some("not on main".into())))
        );
        assert_eq!(deny.stop.as_deref(), Some("not on main"));
        assert_eq!(deny.block, None, "a deny is a permission, not a block");
        // Exit 2 is not honoured: without a decision the question is asked as usual, with
        // one the decision counts.
        let exit2 = answer("", 2);
        assert_eq!(
            (exit2.outcome, exit2.block, exit2.permission),
            ("ok", None, None)
        );
        let exit2_deny = answer(
            r#"{"hookSpecificOutput": {"decision": {"behavior": "deny"}}}"#,
            2,
        );
        assert_eq!(exit2_deny.permission, Some((Permission::Deny, None)));
        // PreToolUse's fields are not PermissionRequest's.
        let other = answer(
            r#"{"decision": "block", "reason": "x", "hookSpecificOutput": {"permissionDecision": "allow"}}"#,
            0,
        );
        assert_eq!((other.block, other.permission), (None, None));
        let odd = answer(
            r#"{"hookSpecificOutput": {"decision": {"behavior": "ask"}}}"#,
            0,
        );
        assert!(odd.warning.unwrap().contains("allow or deny"));
    }

    #[test]
    fn observing_events_ignore_exit_codes_and_output_but_not_a_hook_that_cannot_run() {
        for event in [
            HookEvent::Notification,
            HookEvent::StopFailure,
            HookEvent::InstructionsLoaded,
        ] {
            let v = verdict(
                event,
                &ran(2, r#"{"continue": false, "systemMessage": "hi"}"#, "stop"),
            );
            assert_eq!(
                (v.outcome, v.block, v.stop, v.system_message),
                ("ok", None, None, None),
                "{event:?}"
            );
            let v = verdict(event, &ran(0, r#"{"continue": false}"#, ""));
            assert_eq!((v.outcome, v.stop), ("ok", None), "{event:?}");
            let slow = verdict(
                event,
                &Finished {
                    timed_out: true,
                    ..Finished::default()
                },
            );
            assert_eq!(slow.outcome, "timeout");
        }
        // SessionEnd and PostCompact: their JSON is discarded, exit 2's stderr is shown.
        for event in [HookEvent::SessionEnd, HookEvent::PostCompact] {
            let v = verdict(
                event,
                &ran(0, r#"{"continue": false, "systemMessage": "hi"}"#, ""),
            );
            assert_eq!((v.stop, v.system_message), (None, None), "{event:?}");
            let v = verdict(event, &ran(2, "", "cleanup failed"));
            assert_eq!(v.message().as_deref(), Some("cleanup failed"), "{event:?}");
        }
    }

    #[test]
    fn failure_and_subagent_stop_hooks_decide_as_post_tool_use_and_stop_do() {
        let failure = verdict(
            HookEvent::PostToolUseFailure,
            &ran(
                0,
                r#"{"decision": "block", "reason": "run npm install first", "hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": "the registry is down"}}"#,
                "",
            ),
        );
        assert_eq!(failure.block.as_deref(), Some("run npm install first"));
        assert_eq!(failure.context.as_deref(), Some("the registry is down"));
        let stop = verdict(HookEvent::SubagentStop, &ran(2, "", "also check the tests"));
        assert_eq!(stop.block.as_deref(), Some("also check the tests"));
        let stop = verdict(
            HookEvent::SubagentStop,
            &ran(0, r#"{"decision": "block", "reason": "not yet"}"#, ""),
        );
        assert_eq!(stop.block.as_deref(), Some("not yet"));
    }

    #[test]
    fn every_event_is_named_once_and_found_by_its_name() {
        for event in HookEvent::ALL {
            assert_eq!(HookEvent::from_name(event.name()), Some(event));
        }
        let table = events_table();
        assert_eq!(table.lines().count(), HookEvent::ALL.len() + 2);
    }
}
