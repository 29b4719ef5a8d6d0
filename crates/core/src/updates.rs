//! What a turn tells the client, in order: the `update` of `agent/session/update`. The agent
//! builds these values; the LSP front door sends them as they are, ACP maps them with one
//! `match` (`acp::session_update`), the CLI prints them. No update is built as loose JSON.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tool_info::{PlanEntry, ToolKind};

/// What happened in a turn, in order (`kind`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[schemars(rename = "SessionUpdate")]
pub enum Update {
    /// Streamed answer text.
    AgentMessageChunk {
        text: String,
    },
    /// Reasoning, when the provider streams it.
    AgentThoughtChunk {
        text: String,
    },
    ToolCall {
        tool_call_id: String,
        name: String,
        title: String,
        tool_kind: ToolKind,
        status: ToolStatus,
        /// The arguments object; null when the model's arguments are not one (the call
        /// fails without running).
        #[serde(default)]
        input: Option<Map<String, Value>>,
        locations: Vec<ToolLocation>,
    },
    ToolCallUpdate {
        tool_call_id: String,
        status: ToolStatus,
        /// Shell output chunks while `in_progress`; the recorded output when done.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        /// An edit's change, on its `in_progress` update.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<FileDiff>,
    },
    Plan {
        entries: Vec<PlanEntry>,
    },
    Queued,
    Warning {
        message: String,
    },
    Error {
        message: String,
        retryable: bool,
        /// `contextLengthExceeded` when the conversation does not fit even after compacting;
        /// `repeatedToolCall` when the model made the same call five times with the same result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
    Compaction {
        phase: CompactionPhase,
        tokens_before: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_after: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strategy: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// Why no model summary was used (a failed call, a provider too slow for
        /// `compaction.maxSummaryMs`); null when one was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fallback_reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A hook ran.
    Hook(HookRun),
    /// A reminder reached the model.
    Reminder(ReminderShown),
    TurnEnd {
        stop_reason: StopReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// The model calls the turn made (its steps).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_calls: Option<usize>,
    },
    /// What waits in the session changed (a prompt queued or started, a message steered,
    /// taken or withdrawn): the whole list, steering messages first. Under the running
    /// turn's id, or `""`.
    Queue {
        items: Vec<QueueItem>,
    },
    /// A steering message entered the running turn as a user message (at a step boundary).
    Steered {
        /// Its id (`agent/session/steer`'s result).
        id: String,
        text: String,
        /// A UserPromptSubmit hook blocked it: it did not reach the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blocked: Option<bool>,
    },
    /// The session's background commands changed (one started, ended or was stopped): the
    /// whole list. Under the turn id `""` (a command outlives its turn).
    Background {
        commands: Vec<BackgroundCommand>,
    },
}

impl Update {
    pub fn warning(message: impl Into<String>) -> Update {
        Update::Warning {
            message: message.into(),
        }
    }

    /// A running call's update: its streamed output chunk, or an edit's change.
    pub fn call_running(
        tool_call_id: impl Into<String>,
        output: Option<String>,
        diff: Option<FileDiff>,
    ) -> Update {
        Update::ToolCallUpdate {
            tool_call_id: tool_call_id.into(),
            status: ToolStatus::InProgress,
            output,
            diff,
        }
    }

    /// The end of a turn that never ran (cancelled while it waited).
    pub fn cancelled_before_start() -> Update {
        Update::TurnEnd {
            stop_reason: StopReason::Cancelled,
            usage: None,
            model_calls: Some(0),
        }
    }

    /// The id of the tool call this update is about, if any.
    pub fn tool_call_id(&self) -> Option<&str> {
        match self {
            Update::ToolCall { tool_call_id, .. } | Update::ToolCallUpdate { tool_call_id, .. } => {
                Some(tool_call_id)
            }
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

impl ToolStatus {
    pub fn ended(success: bool) -> ToolStatus {
        if success {
            ToolStatus::Completed
        } else {
            ToolStatus::Failed
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CompactionPhase {
    Started,
    Completed,
    Failed,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    EndTurn,
    Cancelled,
    MaxSteps,
    Error,
}

impl StopReason {
    /// As the wire and the progress log name it.
    pub fn name(&self) -> &'static str {
        match self {
            StopReason::EndTurn => "endTurn",
            StopReason::Cancelled => "cancelled",
            StopReason::MaxSteps => "maxSteps",
            StopReason::Error => "error",
        }
    }
}

/// The model's usage summed over a turn's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A file a tool call names: absolute path, 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolLocation {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// A change as whole texts (`oldText` null for a new file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    pub path: String,
    pub old_text: Option<String>,
    pub new_text: String,
}

// The agent builds it, the LSP front door sends it as it is, ACP maps it
// (`acp::permission_request`), the CLI prints it.
/// The call a permission request is about: a tool call, or a workspace hook or MCP server
/// to approve. Absent fields are left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionToolCall {
    pub tool_call_id: String,
    pub name: String,
    pub title: String,
    pub kind: ToolKind,
    pub input: Map<String, Value>,
    /// A unified diff, for an edit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The same change as whole texts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit: Option<FileDiff>,
    /// Why it is asked: a write asked in every mode (also appended to the title), or why
    /// the sandbox stopped the command (with `outsideSandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `true`: the request is to run again outside the sandbox a command it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside_sandbox: Option<bool>,
    /// What the call would run, as lines for the user to read before answering, where the
    /// title cannot say it all: a workspace MCP server's whole entry (command, args, cwd,
    /// env, url, headers, trust, tools; values as written, literal secrets masked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// Where a tool call works (a hook or MCP server has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<ToolLocation>>,
    /// A subagent's call: its name, its session and the `task` call that runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
}

impl PermissionToolCall {
    /// A request about `name`'s call `tool_call_id`, with nothing beside its input.
    pub fn new(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        title: impl Into<String>,
        kind: ToolKind,
        input: Map<String, Value>,
    ) -> PermissionToolCall {
        PermissionToolCall {
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            title: title.into(),
            kind,
            input,
            diff: None,
            edit: None,
            reason: None,
            outside_sandbox: None,
            details: None,
            locations: None,
            subagent: None,
            subagent_session_id: None,
            parent_tool_call_id: None,
        }
    }
}

/// A hook's run, as the editor is told (`hook` update) and the transcript shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookRun {
    /// The hook event (`PreToolUse`, …).
    pub event: String,
    pub command: String,
    /// `ok`, `blocked`, `error`, `timeout`, `cancelled`, `notApproved`.
    pub outcome: String,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A reminder that reached the model, as the editor is told and the transcript shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReminderShown {
    pub key: String,
    pub source: String,
    /// Empty in session logs written before the log's `reminder` event kept it.
    #[serde(default)]
    #[schemars(required)]
    pub text: String,
}

/// A message waiting in a session (built by the agent's steering).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueItem {
    pub id: String,
    /// `steering`: joins the running turn at its next step; `queued`: a turn of its own
    /// after the running one.
    pub kind: String,
    pub text: String,
}

/// A background command (`shell` with `background: true`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundCommand {
    /// `bg1`, `bg2`, … (what the model's `shell_output` and `shell_kill` take).
    pub id: String,
    pub command: String,
    pub cwd: String,
    /// Milliseconds since the epoch.
    pub started_at: u64,
    /// `running` or `exited`.
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// The context window's fill of a session: `agent/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    pub session_id: String,
    pub used_tokens: usize,
    pub context_window: usize,
    pub fill: f64,
    pub estimated: bool,
    /// `idle`, `running` or `compacting`.
    pub state: String,
    pub compactions: u32,
    /// The session's mode (`agent/session/setMode`, else the `approval` setting): `ask`,
    /// `auto-edit`, `full-auto` or `plan`. A change of it sends a status too.
    pub mode: String,
    /// The sandbox this session's commands run in: as `agent/sandbox/status` answers, but
    /// read-only without network in plan mode.
    pub sandbox: crate::sandbox::SandboxState,
}

/// The fields a subagent's session's updates add: the session and `task` call it runs for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParentCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
}

/// An update as `agent/session/update` carries it: a subagent's with its parent call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentUpdate {
    #[serde(flatten)]
    pub update: Update,
    #[serde(flatten)]
    pub parent: ParentCall,
}

impl From<Update> for SubagentUpdate {
    fn from(update: Update) -> SubagentUpdate {
        SubagentUpdate {
            update,
            parent: ParentCall::default(),
        }
    }
}

/// Written out: the derived schema of a flattened internally tagged enum loses the
/// variants' shapes; `allOf` keeps them.
impl JsonSchema for SubagentUpdate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SubagentUpdate".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let update = generator.subschema_for::<Update>();
        let parent = ParentCall::json_schema(generator);
        schemars::json_schema!({ "allOf": [update, parent] })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The wire is what the hand-built JSON was: the editors read these exact shapes.
    #[test]
    fn updates_serialize_as_the_protocol_names_them() {
        let cases = [
            (
                Update::call_running("c1", Some("out".into()), None),
                json!({"kind": "toolCallUpdate", "toolCallId": "c1", "status": "in_progress", "output": "out"}),
            ),
            (
                Update::cancelled_before_start(),
                json!({"kind": "turnEnd", "stopReason": "cancelled", "modelCalls": 0}),
            ),
            (Update::Queued, json!({"kind": "queued"})),
            (
                Update::Hook(HookRun {
                    event: "PreToolUse".into(),
                    command: "x".into(),
                    outcome: "ok".into(),
                    duration_ms: 3,
                    message: None,
                }),
                json!({"kind": "hook", "event": "PreToolUse", "command": "x", "outcome": "ok", "durationMs": 3}),
            ),
            (
                Update::Compaction {
                    phase: CompactionPhase::Started,
                    tokens_before: 10,
                    tokens_after: None,
                    strategy: None,
                    trigger: Some("auto".into()),
                    duration_ms: None,
                    fallback_reason: None,
                    message: None,
                },
                json!({"kind": "compaction", "phase": "started", "tokensBefore": 10, "trigger": "auto"}),
            ),
        ];
        for (update, wire) in cases {
            assert_eq!(serde_json::to_value(&update).unwrap(), wire);
            assert_eq!(serde_json::from_value::<Update>(wire).unwrap(), update);
        }
    }

    /// The fields the editors read, absent ones left out, as the hand-built JSON had them.
    #[test]
    fn permission_tool_calls_serialize_as_the_protocol_names_them() {
        let input = json!({"command": "ls"}).as_object().cloned().unwrap();
        let mut call = PermissionToolCall::new("c1", "shell", "Run ls", ToolKind::Execute, input);
        let wire = json!({"toolCallId": "c1", "name": "shell", "title": "Run ls", "kind": "execute", "input": {"command": "ls"}});
        assert_eq!(serde_json::to_value(&call).unwrap(), wire);
        call.reason = Some("denied".into());
        call.outside_sandbox = Some(true);
        call.locations = Some(Vec::new());
        call.subagent = Some("explore".into());
        call.subagent_session_id = Some("s2".into());
        call.parent_tool_call_id = Some("t1".into());
        let wire = json!({"toolCallId": "c1", "name": "shell", "title": "Run ls", "kind": "execute",
            "input": {"command": "ls"}, "reason": "denied", "outsideSandbox": true, "locations": [],
            "subagent": "explore", "subagentSessionId": "s2", "parentToolCallId": "t1"});
        assert_eq!(serde_json::to_value(&call).unwrap(), wire);
        assert_eq!(
            serde_json::from_value::<PermissionToolCall>(wire).unwrap(),
            call
        );
    }

    #[test]
    fn a_subagents_update_carries_its_parent_call_beside_the_kind() {
        let update = SubagentUpdate {
            update: Update::warning("w"),
            parent: ParentCall {
                parent_session_id: Some("s".into()),
                parent_tool_call_id: Some("t".into()),
            },
        };
        let wire = json!({"kind": "warning", "message": "w", "parentSessionId": "s", "parentToolCallId": "t"});
        assert_eq!(serde_json::to_value(&update).unwrap(), wire);
        assert_eq!(
            serde_json::from_value::<SubagentUpdate>(wire).unwrap(),
            update
        );
    }
}
