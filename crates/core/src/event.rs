//! A session's events: one line of its log each. `Session::apply` folds them into the
//! session's state and `Ledger::observe` into the ledger, the same live and on replay; they
//! are the vocabulary both share, so it lives below both.

use crate::history::Entry;
use crate::snapshot::ChangeKind;
use crate::tool_info::PlanEntry;

/// One line of a session log.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(
    tag = "event",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    SessionStarted {
        session_id: String,
        model: String,
        workspace: String,
        at: u64,
        /// A subagent's session: the session and the `task` call that ran it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<ParentLink>,
        /// A fork's session: the session and checkpoint it was forked from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        forked_from: Option<ForkLink>,
    },
    TurnStarted {
        turn_id: String,
        at: u64,
    },
    /// An item entered the history (with its token count, so a reload need not recount).
    Item {
        turn_id: String,
        entry: Entry,
    },
    Permission {
        turn_id: String,
        tool_call_id: String,
        tool: String,
        /// `allowOnce`, `allowAlways`, `rejectOnce`, `rejectAlways`, or `cancelled`.
        outcome: String,
        /// For shell commands remembered with allowAlways/rejectAlways: the command prefix.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<String>,
    },
    Plan {
        turn_id: String,
        entries: Vec<PlanEntry>,
    },
    Usage {
        turn_id: String,
        input_tokens: u64,
        output_tokens: u64,
        /// What agentls estimated for the request this usage is about.
        estimated_input: u64,
    },
    Error {
        turn_id: String,
        message: String,
        retryable: bool,
    },
    ModelChanged {
        model: String,
        /// The window given with the switch (`agent/session/setModel`), else the model's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<usize>,
    },
    /// A compaction boundary: the history from here on is `entries` (the rebuilt one).
    Compacted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn_id: Option<String>,
        entries: Vec<Entry>,
        /// The summary (with the ledger) as the model will see it, for the transcript.
        summary: String,
        metrics: CompactionMetrics,
    },
    TurnEnded {
        turn_id: String,
        stop_reason: String,
        at: u64,
    },
    /// Files a command changed in the workspace (found by comparing snapshots taken before
    /// and after it), for the ledger: the file tools' changes are read from their calls.
    FilesChanged {
        turn_id: String,
        tool_call_id: String,
        /// The command, as run.
        command: String,
        files: Vec<ChangedPath>,
    },
    /// A runtime reminder entered the history (`entry`, an `Instructions` item of role
    /// `reminder`); its key and version are remembered so it is not shown again.
    Reminder {
        turn_id: String,
        version: String,
        entry: Entry,
        /// Its key, source and text (unwrapped), as the editor was shown it.
        #[serde(flatten)]
        shown: crate::updates::ReminderShown,
    },
    /// The session works apart: in a git worktree of the workspace's repository on a
    /// branch of its own (`agent/session/new` with `worktree`), recorded before its first
    /// turn so that a reload works there again.
    Worktree(WorktreeLink),
    /// The workspace's files before a user message's turn changed anything: one tree of the
    /// private checkpoint store per root (`checkpoints`). Recorded before `TurnStarted`.
    Checkpoint {
        turn_id: String,
        checkpoint_id: String,
        at: u64,
        trees: Vec<RootTree>,
        /// Files over `checkpoints.maxFileBytes` (or unreadable): not stored, never restored.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unstored: Vec<String>,
        /// What the checkpoint is before when it is not a user's message (an undo of the
        /// agent's changes): listed in its place.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    /// The workspace's files as the turn left them (after its last tool call, subagents'
    /// included): what the turn changed is the diff from its checkpoint, and a rewind finds
    /// the user's later edits against it.
    TurnSnapshot {
        turn_id: String,
        trees: Vec<RootTree>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unstored: Vec<String>,
    },
    /// `agent/session/rewind` to `checkpoint_id`: with `conversation` or `both`, the events
    /// from that checkpoint to here leave the session's state (`checkpoints::resolve_rewinds`),
    /// except the approvals and model switches.
    Rewind {
        checkpoint_id: String,
        /// `code`, `conversation` or `both`.
        restore: String,
        at: u64,
    },
    /// A hook ran (what the `hook` update told the editor).
    Hook {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn_id: Option<String>,
        /// The hook event (`PreToolUse`, …).
        hook_event: String,
        command: String,
        outcome: String,
        duration_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

/// One file a command changed, as shown to the model (relative to its workspace root).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChangedPath {
    pub path: String,
    pub change: ChangeKind,
}

/// Where a subagent's session comes from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentLink {
    pub parent_session_id: String,
    pub parent_tool_call_id: String,
}

/// A fork's origin.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkLink {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<String>,
}

/// Where a session that works apart works.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeLink {
    /// The worktree's directory.
    pub path: String,
    pub branch: String,
    /// The commit it started from.
    pub base: String,
}

/// One workspace root's files as a tree of the checkpoint store (a git tree id).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RootTree {
    pub root: String,
    pub tree: String,
}

/// What a compaction did, recorded with its boundary and reported to the client.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionMetrics {
    /// `threshold`, `prepared`, `manual`, `modelSwitch`, `overflow`.
    pub trigger: String,
    /// `trim`, `summary`, `middle_drop`, `oldest_drop`.
    pub strategy: String,
    /// The summary's style when a model wrote it.
    pub style: Option<String>,
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub items_before: usize,
    pub items_after: usize,
    pub outputs_trimmed: usize,
    pub tool_rounds_kept: usize,
    pub duration_ms: u64,
    pub summarizer_input_tokens: u64,
    pub summarizer_output_tokens: u64,
    /// Why the model's summary was not used, when it was not.
    pub fallback_reason: Option<String>,
}
