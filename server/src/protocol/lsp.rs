//! The custom LSP methods: one type per request or notification, with its params and
//! result. `lsp/mod.rs` registers the client → server ones with `on::<R>`; the host sends
//! the server → client ones with `send_notification::<N>` / `client_request::send::<R>`.
//! docs/protocol.md ("Method index") lists the same methods.
//!
//! A params type wrapped in `Option` accepts `null` params (the same as `{}`).

use lsp_types::notification::Notification;
use lsp_types::request::Request;
use lsp_types::{PositionEncodingKind, Url};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::shapes::{self, SessionIdParams};
use super::{ClientRequest, Json};
use agentls_core::agents_md::AgentsChain;
use agentls_core::commands::CommandInfo;
use agentls_core::editor_state::EditorState;
use agentls_core::inspect::ContextReport;
use agentls_core::session::TranscriptItem;
use agentls_core::syntax::SymbolKind;

// ---- agent/session/* (client → server) ----

pub enum SessionNew {}

impl ClientRequest for SessionNew {
    type Params = Option<SessionNewParams>;
    type Result = SessionNewResult;
    const METHOD: &'static str = "agent/session/new";
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionNewParams {
    /// Default: `provider.model`.
    #[serde(default)]
    pub model: Option<String>,
    /// The session works apart: in a new git worktree of the workspace's repository, on a
    /// branch of its own, until `agent/session/applyWorktree` brings its changes over.
    #[serde(default)]
    pub worktree: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionNewResult {
    pub session_id: String,
    /// Where a session that works apart works.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<SessionWorktree>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionWorktree {
    /// The worktree's directory.
    pub path: String,
    pub branch: String,
}

pub enum SessionApplyWorktree {}

impl ClientRequest for SessionApplyWorktree {
    type Params = SessionIdParams;
    type Result = SessionApplyWorktreeResult;
    const METHOD: &'static str = "agent/session/applyWorktree";
}

/// What a session that works apart changed, brought into the workspace through the editor
/// (`workspace/applyEdit`, file by file, undoable there); its branch keeps all of it.
#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionApplyWorktreeResult {
    pub branch: String,
    /// Files written (paths relative to the repository).
    pub applied: Vec<String>,
    /// Files that already held the worktree's text.
    pub unchanged: Vec<String>,
    /// Files left as they are, with why (the user changed them since, a deletion).
    pub conflicts: Vec<RevertConflict>,
}

pub enum SessionList {}

impl ClientRequest for SessionList {
    type Params = Option<SessionListParams>;
    type Result = SessionListResult;
    const METHOD: &'static str = "agent/session/list";
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionListParams {
    /// Subagents' sessions too.
    #[serde(default)]
    pub include_children: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionListResult {
    /// Newest first.
    pub sessions: Vec<SessionSummary>,
}

/// One row of `agent/session/list`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub session_id: String,
    /// The first user message, shortened to 60 characters.
    pub title: String,
    /// Milliseconds since the epoch.
    pub updated_at: u64,
    pub turns: u32,
    /// A subagent's session: the session whose `task` call ran it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// A fork (`agent/session/fork`): the session it was forked from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
    /// The checkpoint of `forkedFrom` the fork's history ends before (none: all of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from_checkpoint: Option<String>,
}

pub enum SessionCheckpoints {}

impl ClientRequest for SessionCheckpoints {
    type Params = SessionIdParams;
    type Result = SessionCheckpointsResult;
    const METHOD: &'static str = "agent/session/checkpoints";
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCheckpointsResult {
    /// Oldest first.
    pub checkpoints: Vec<CheckpointEntry>,
}

/// A checkpoint: the workspace's files before a user message's turn.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointEntry {
    pub id: String,
    /// The turn's number in the session (1 = the first user message).
    pub turn: u32,
    pub turn_id: String,
    /// The first line of the user's message.
    pub message: String,
    /// Milliseconds since the epoch.
    pub time: u64,
    /// What the turn changed (every file, the shell's and subagents' included).
    pub files: Vec<CheckpointFile>,
    /// Files over `checkpoints.maxFileBytes` (or unreadable): not stored, never restored.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_stored: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointFile {
    pub path: String,
    /// `created`, `modified` or `deleted`.
    pub change: String,
}

pub enum SessionChanges {}

impl ClientRequest for SessionChanges {
    type Params = SessionChangesParams;
    type Result = SessionChangesResult;
    const METHOD: &'static str = "agent/session/changes";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionChangesParams {
    pub session_id: String,
    /// The changes of this turn and the ones after it; absent: the session's last turn.
    #[serde(default)]
    pub since_turn_id: Option<String>,
}

/// The files the turns changed, each with the hunks from its text before them to the text
/// they left (what the agent did, not what the user typed since).
#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionChangesResult {
    pub files: Vec<ChangedFile>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangedFile {
    /// Relative to its root (the first root's), else absolute.
    pub path: String,
    /// `added`, `modified` or `deleted`.
    pub status: String,
    /// Empty for a file that is not text (or a link): it is kept or undone whole.
    pub hunks: Vec<ChangeHunk>,
    /// The file is not what the turns left: the user changed it since.
    pub changed_since: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeHunk {
    /// Names the hunk's place and content: pass it to `agent/session/revertChanges`.
    pub id: String,
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    /// `@@ -a,b +c,d @@` and the lines, with 3 lines of context.
    pub diff: String,
}

pub enum SessionRevertChanges {}

impl ClientRequest for SessionRevertChanges {
    type Params = SessionRevertChangesParams;
    type Result = SessionRevertChangesResult;
    const METHOD: &'static str = "agent/session/revertChanges";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRevertChangesParams {
    pub session_id: String,
    /// As in `agent/session/changes`.
    #[serde(default)]
    pub since_turn_id: Option<String>,
    pub changes: Vec<ChangeToRevert>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChangeToRevert {
    /// As `agent/session/changes` lists it.
    pub path: String,
    /// The hunks to undo; absent: the whole file.
    #[serde(default)]
    pub hunk_ids: Option<Vec<String>>,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRevertChangesResult {
    /// The files undone (whole or the hunks asked).
    pub reverted: Vec<String>,
    /// The files left as they are, with why (the user changed them since, an unknown hunk).
    pub conflicts: Vec<RevertConflict>,
    /// The checkpoint taken before the undo: `agent/session/rewind` to it takes the undo
    /// back. Absent when nothing was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RevertConflict {
    pub path: String,
    pub reason: String,
}

pub enum SessionRewind {}

impl ClientRequest for SessionRewind {
    type Params = SessionRewindParams;
    type Result = SessionRewindResult;
    const METHOD: &'static str = "agent/session/rewind";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRewindParams {
    pub session_id: String,
    pub checkpoint_id: String,
    /// `code`, `conversation` or `both`.
    pub restore: String,
    /// Only the plan: nothing is changed.
    #[serde(default)]
    pub dry_run: bool,
    /// Restore the conflicting files too (the user's later changes are lost).
    #[serde(default)]
    pub force: bool,
}

/// A rewind's plan (`dryRun`) or what it did: paths shown relative to their root.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRewindResult {
    pub dry_run: bool,
    /// Files brought back to their content and mode at the checkpoint.
    pub restore: Vec<String>,
    /// Files the turns deleted, written again.
    pub create: Vec<String>,
    /// Files the turns created, removed.
    pub delete: Vec<String>,
    /// Files the user changed after the agent's last change: left as they are unless
    /// `force` (then they are in the lists above too).
    pub conflicts: Vec<String>,
    /// Files the checkpoint could not store: never touched.
    pub not_stored: Vec<String>,
    /// Files that could not be written, with why.
    pub failed: Vec<RewindFailure>,
    /// Whether the conversation was (or, in a dry run, would be) rewound.
    pub conversation: bool,
    /// The rewound user message (for the input box), when the conversation is rewound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindFailure {
    pub path: String,
    pub error: String,
}

pub enum SessionFork {}

impl ClientRequest for SessionFork {
    type Params = SessionForkParams;
    type Result = SessionForkResult;
    const METHOD: &'static str = "agent/session/fork";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionForkParams {
    pub session_id: String,
    /// The history ends before this checkpoint's message; none: the whole history.
    #[serde(default)]
    pub checkpoint_id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionForkResult {
    /// The new session.
    pub session_id: String,
    pub forked_from: String,
}

pub enum SessionCommands {}

impl ClientRequest for SessionCommands {
    type Params = SessionIdParams;
    type Result = SessionCommandsResult;
    const METHOD: &'static str = "agent/session/commands";
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCommandsResult {
    pub commands: Vec<CommandInfo>,
}

pub enum SessionLoad {}

impl ClientRequest for SessionLoad {
    type Params = SessionIdParams;
    type Result = SessionLoadResult;
    const METHOD: &'static str = "agent/session/load";
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionLoadResult {
    pub session_id: String,
    pub items: Vec<TranscriptItem>,
    /// Where the session works when it works apart (`agent/session/new` with `worktree`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<SessionWorktree>,
}

pub enum SessionPrompt {}

impl ClientRequest for SessionPrompt {
    type Params = SessionPromptParams;
    type Result = SessionPromptResult;
    const METHOD: &'static str = "agent/session/prompt";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionPromptParams {
    pub session_id: String,
    pub text: String,
    #[serde(default)]
    #[schemars(with = "Option<shapes::EditorState>")]
    pub editor: Option<EditorState>,
    /// Images for a model that takes them (`provider.images`); refused otherwise. At most
    /// 8, each at most 5 MB, PNG, JPEG, GIF or WebP.
    #[serde(default)]
    pub images: Vec<PromptImage>,
}

/// An image of a prompt: its bytes in base64 (`data`, a `data:` URL is accepted) or a
/// workspace file (`path`), exactly one of them.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`; checked against the bytes.
    #[serde(default)]
    pub mime_type: Option<String>,
    #[serde(default)]
    pub data: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionPromptResult {
    pub turn_id: String,
}

pub enum SessionCancel {}

impl ClientRequest for SessionCancel {
    type Params = SessionCancelParams;
    type Result = SessionCancelResult;
    const METHOD: &'static str = "agent/session/cancel";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCancelParams {
    pub session_id: String,
    /// "Stop all": the session's background commands are killed too.
    #[serde(default)]
    pub stop_background: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCancelResult {
    /// False when nothing was running or queued.
    pub cancelled: bool,
}

pub enum SessionCompact {}

impl ClientRequest for SessionCompact {
    type Params = SessionCompactParams;
    type Result = SessionCompactResult;
    const METHOD: &'static str = "agent/session/compact";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCompactParams {
    pub session_id: String,
    /// Steers the summary.
    #[serde(default)]
    pub instructions: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCompactResult {
    pub tokens_before: usize,
    pub tokens_after: usize,
    /// `trim`, `summary`, `middle_drop`, `oldest_drop`.
    pub strategy: String,
}

pub enum SessionSetModel {}

impl ClientRequest for SessionSetModel {
    type Params = SessionSetModelParams;
    type Result = SessionSetModelResult;
    const METHOD: &'static str = "agent/session/setModel";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSetModelParams {
    pub session_id: String,
    pub model: String,
    /// Overrides the window for that session; 0 is refused.
    #[serde(default)]
    pub context_window: Option<usize>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSetModelResult {
    /// True when the history was compacted first to fit the new window.
    pub compacted: bool,
}

pub enum SessionSetMode {}

impl ClientRequest for SessionSetMode {
    type Params = SessionSetModeParams;
    type Result = SessionSetModeResult;
    const METHOD: &'static str = "agent/session/setMode";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSetModeParams {
    pub session_id: String,
    /// `ask`, `auto-edit`, `full-auto` or `plan` (ACP's session modes,
    /// `agentls_core::acp::MODES`); another is refused with -32602.
    pub mode: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSetModeResult {
    pub mode: String,
}

pub enum SessionContext {}

impl ClientRequest for SessionContext {
    type Params = Option<SessionContextParams>;
    type Result = ContextReport;
    const METHOD: &'static str = "agent/session/context";
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionContextParams {
    /// None: a fresh session (no history).
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    #[schemars(with = "Option<shapes::EditorState>")]
    pub editor: Option<EditorState>,
}

// ---- agent/mcp/* (client → server) ----

pub enum McpStatus {}

impl ClientRequest for McpStatus {
    type Params = Option<Value>;
    type Result = Json<McpServers>;
    const METHOD: &'static str = "agent/mcp/status";
}

/// The MCP servers' status: `agent/mcp/status`'s result, `agent/mcp/didChangeStatus`'s
/// params (built by `mcp::manager`).
#[derive(Debug, JsonSchema)]
#[schemars(rename = "McpStatus")]
pub struct McpServers {
    /// Sorted by name.
    pub servers: Vec<McpServerStatus>,
}

#[derive(Debug, JsonSchema)]
pub struct McpServerStatus {
    pub name: String,
    /// `starting`, `ready`, `failed` or `disabled`.
    pub state: String,
    /// How many of its tools are offered to the model.
    pub tools: usize,
    /// Where it is configured: `settings`, `workspace` (.mcp.json) or `client`.
    pub source: String,
    /// Why it failed, or why it is starting again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

pub enum Permissions {}

impl ClientRequest for Permissions {
    type Params = Option<Value>;
    type Result = PermissionRules;
    const METHOD: &'static str = "agent/permissions";
}

/// `agent/permissions`'s result: the standing permission rules in force, deny first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PermissionRules {
    pub rules: Vec<PermissionRule>,
    /// Rules that were ignored and why (a workspace's allow rule, one that does not parse).
    pub problems: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PermissionRule {
    /// `allow`, `ask` or `deny`.
    pub action: String,
    /// As written: `shell(git log:*)`.
    pub rule: String,
    /// `user` (the settings), `workspace` (`.agents/settings.json`) or `answers` (the
    /// user's "always" answers kept for the workspace).
    pub source: String,
}

pub enum Memory {}

impl ClientRequest for Memory {
    type Params = Option<MemoryParams>;
    type Result = MemoryState;
    const METHOD: &'static str = "agent/memory";
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryParams {
    /// A session whose durable facts (its ledger's) are offered for keeping.
    #[serde(default)]
    pub session_id: Option<String>,
}

/// `agent/memory`'s result: each memory's file and entries (the editors open the file to
/// edit it).
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryState {
    /// `user`, then `workspace`.
    pub scopes: Vec<MemoryScopeState>,
    /// With `sessionId`: that session's facts worth keeping that no memory holds yet (the
    /// user's rules, the check commands that worked); keep one with `agent/memory/keep`.
    pub offers: Vec<MemoryOffer>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryOffer {
    pub text: String,
    /// `constraint` (a rule the user stated) or `command` (a check that exited 0).
    pub source: String,
}

pub enum MemoryKeep {}

impl ClientRequest for MemoryKeep {
    type Params = MemoryKeepParams;
    type Result = MemoryKeepResult;
    const METHOD: &'static str = "agent/memory/keep";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryKeepParams {
    /// One line, at most 500 characters; kept as the user's (`[user DATE]`).
    pub fact: String,
    /// `workspace` (default) or `user`.
    #[serde(default)]
    pub scope: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryKeepResult {
    /// False when the memory holds the same fact already.
    pub kept: bool,
    /// The Markdown file it is kept in.
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryScopeState {
    /// `user` or `workspace`.
    pub scope: String,
    /// The Markdown file (absent: there is no home directory to keep it in).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub entries: Vec<MemoryEntry>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryEntry {
    /// `user` or `model`: who kept it.
    pub author: String,
    /// `YYYY-MM-DD`, or empty for a line written by hand.
    pub date: String,
    pub text: String,
}

pub enum McpResources {}

impl ClientRequest for McpResources {
    type Params = Option<Value>;
    type Result = Json<McpResourceList>;
    const METHOD: &'static str = "agent/mcp/resources";
}

/// `agent/mcp/resources`'s result (built by `mcp::manager`).
#[derive(Debug, JsonSchema)]
pub struct McpResourceList {
    pub resources: Vec<McpResource>,
}

#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpResource {
    pub server: String,
    pub uri: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

// ---- server → client ----

pub enum SessionUpdate {}

impl Notification for SessionUpdate {
    type Params = SessionUpdateParams;
    const METHOD: &'static str = "agent/session/update";
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUpdateParams {
    pub session_id: String,
    pub turn_id: String,
    /// Built by the agent loop.
    pub update: SubagentUpdate,
}

pub use agentls_core::sandbox::SandboxState;
pub use agentls_core::updates::{
    AgentStatus, BackgroundCommand, CompactionPhase, FileDiff, ParentCall, PermissionToolCall,
    QueueItem, StopReason, SubagentUpdate, ToolLocation, ToolStatus, Update, Usage,
};

pub enum Status {}

impl Notification for Status {
    type Params = AgentStatus;
    const METHOD: &'static str = "agent/status";
}

pub enum SandboxStatus {}

impl ClientRequest for SandboxStatus {
    type Params = Option<Value>;
    type Result = SandboxState;
    const METHOD: &'static str = "agent/sandbox/status";
}

pub enum EditorDiagnostics {}

impl Request for EditorDiagnostics {
    type Params = EditorDiagnosticsParams;
    type Result = EditorDiagnosticsResult;
    const METHOD: &'static str = "agent/editor/diagnostics";
}

/// Asks the editor for its diagnostics of files a tool call just changed; sent only to a
/// client that set `capabilities.editorDiagnostics` in its initializationOptions.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditorDiagnosticsParams {
    pub uris: Vec<String>,
    /// How long the editor may wait for its language servers to report on the new text
    /// (`diagnostics.settleMs`) before it answers with what it has.
    pub settle_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditorDiagnosticsResult {
    /// One per uri the editor knows (a uri left out has no diagnostics).
    pub items: Vec<EditorFileDiagnostics>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditorFileDiagnostics {
    pub uri: String,
    /// The buffer's version the diagnostics are of, when it is open.
    #[serde(default)]
    pub version: Option<i32>,
    /// In LSP's shape (0-based lines, severity 1 error … 4 hint).
    pub diagnostics: Json<Vec<super::shapes::Diagnostic>>,
}

pub enum EditorLsp {}

impl Request for EditorLsp {
    type Params = EditorLspParams;
    type Result = EditorLspResult;
    const METHOD: &'static str = "agent/editor/lsp";
}

/// Asks the editor's own language servers (rust-analyzer, pyright, gopls…) a standard LSP
/// request for the `lsp` tool; sent only to a client that set
/// `capabilities.editorLanguageServers` in its initializationOptions. Positions are in the
/// encoding negotiated with agentls, as everywhere in this protocol.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditorLspParams {
    /// One of `textDocument/definition`, `textDocument/references`, `textDocument/hover`,
    /// `textDocument/documentSymbol`, `workspace/symbol`, `textDocument/rename`.
    pub method: String,
    /// The standard request's params.
    pub params: Value,
}

/// The answer of the editor's language servers. A client with no language server for the
/// file answers with an error (its message is shown to the model beside the symbol
/// index's answer); `result: null` means the server found nothing.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditorLspResult {
    /// The standard result of `method` (for `textDocument/rename`, a `WorkspaceEdit` the
    /// client has not applied: agentls applies it after the user's approval).
    #[serde(default)]
    pub result: Value,
}

pub enum RequestPermission {}

impl Request for RequestPermission {
    type Params = PermissionRequest;
    type Result = Json<PermissionResponse>;
    const METHOD: &'static str = "agent/session/requestPermission";
}

/// Asks the user to approve a tool call (or a workspace hook, or MCP server).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    pub session_id: String,
    pub turn_id: String,
    /// Built by the agent loop.
    pub tool_call: PermissionToolCall,
    pub options: Vec<PermissionOption>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    /// `allowOnce`, `allowAlways`, `rejectOnce` or `rejectAlways`.
    pub kind: String,
    pub name: String,
}

/// The client's answer; an unknown option id, an error or no answer is a rejection.
#[derive(Debug, JsonSchema)]
pub struct PermissionResponse {
    pub outcome: PermissionOutcome,
}

#[derive(Debug, JsonSchema)]
#[serde(untagged)]
pub enum PermissionOutcome {
    Selected {
        #[serde(rename = "optionId")]
        option_id: String,
    },
    Cancelled(Cancelled),
}

#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Cancelled {
    Cancelled,
}

pub enum McpDidChangeStatus {}

impl Notification for McpDidChangeStatus {
    type Params = Json<McpServers>;
    const METHOD: &'static str = "agent/mcp/didChangeStatus";
}

// ---- agentls/debug/* (client → server; for tests and bug reports) ----

pub enum DebugDocument {}

impl ClientRequest for DebugDocument {
    type Params = DebugDocumentParams;
    type Result = DebugDocumentResult;
    const METHOD: &'static str = "agentls/debug/document";
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DebugDocumentParams {
    #[schemars(with = "String")]
    pub uri: Url,
    /// Include the syntax tree as an s-expression.
    #[serde(default)]
    pub sexp: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DebugDocumentResult {
    #[schemars(with = "String")]
    pub uri: Url,
    pub text: String,
    pub version: i32,
    pub language: String,
    /// `utf-8`, `utf-16` or `utf-32`.
    #[schemars(with = "String")]
    pub position_encoding: PositionEncodingKind,
    pub line_count: usize,
    pub has_syntax_tree: bool,
    /// How many times the document was parsed so far.
    pub parses: u64,
    pub syntax_errors: bool,
    pub outline: Vec<Json<OutlineSymbol>>,
    /// Present when asked for: the tree, null without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sexp: Option<Option<String>>,
}

/// A symbol of `agentls/debug/document`'s outline (built by `lsp::to_proto::symbol_json`).
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutlineSymbol {
    pub name: String,
    pub kind: String,
    pub range: shapes::Range,
    pub selection_range: shapes::Range,
    pub children: Vec<OutlineSymbol>,
}

pub enum DebugSyntax {}

impl ClientRequest for DebugSyntax {
    type Params = DebugSyntaxParams;
    type Result = DebugSyntaxResult;
    const METHOD: &'static str = "agentls/debug/syntax";
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DebugSyntaxParams {
    #[schemars(with = "String")]
    pub uri: Url,
    #[schemars(with = "Option<shapes::Position>")]
    pub position: Option<lsp_types::Position>,
    #[schemars(with = "Option<shapes::Range>")]
    pub range: Option<lsp_types::Range>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DebugSyntaxResult {
    /// The innermost outline symbol containing `position`.
    pub enclosing_symbol: Option<EnclosingSymbol>,
    /// The distinct identifiers referenced in `range`, in order of first appearance.
    pub identifiers: Json<Vec<Identifier>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct EnclosingSymbol {
    pub name: String,
    #[schemars(with = "String")]
    pub kind: SymbolKind,
    pub path: Vec<String>,
    #[schemars(with = "shapes::Range")]
    pub range: lsp_types::Range,
    pub text: String,
}

/// An identifier referenced in a range (built by `agentls_core::syntax`).
#[derive(Debug, JsonSchema)]
pub struct Identifier {
    pub name: String,
    /// `value`, `type`, `field` or `module`.
    pub kind: String,
}

pub enum DebugAgentsMd {}

impl ClientRequest for DebugAgentsMd {
    type Params = DebugAgentsMdParams;
    type Result = AgentsChain;
    const METHOD: &'static str = "agentls/debug/agentsMd";
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DebugAgentsMdParams {
    /// A file or directory; default: the first workspace root.
    #[schemars(with = "Option<String>")]
    pub uri: Option<Url>,
}

pub enum DebugWorkspace {}

impl ClientRequest for DebugWorkspace {
    /// Any value (`{}`); absent params are refused.
    type Params = Value;
    type Result = DebugWorkspaceResult;
    const METHOD: &'static str = "agentls/debug/workspace";
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DebugWorkspaceResult {
    pub roots: Vec<std::path::PathBuf>,
    /// `notstarted`, `indexing` or `ready`.
    pub status: Json<String>,
    pub file_count: usize,
    pub index_millis: u128,
    #[schemars(with = "String")]
    pub position_encoding: PositionEncodingKind,
    pub agents_md_cached: bool,
    /// The workspace symbol index: `status`, `files`, `definitions`, `reused`, `parsed`,
    /// `removed`, `skipped` (by reason), `skippedTotal`, `persisted`, `elapsedMs`,
    /// `parsesTotal`, `saveError`.
    pub symbols: Json<Value>,
    /// Whether the model's vocabulary is built (at `initialized`, in the background).
    pub tokenizer: TokenizerState,
    pub config: DebugConfig,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TokenizerState {
    pub name: String,
    pub built: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DebugConfig {
    pub agents_md: DebugAgentsMdConfig,
    pub syntax: DebugSyntaxConfig,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DebugAgentsMdConfig {
    pub max_bytes: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DebugSyntaxConfig {
    pub max_document_bytes: usize,
}

// ---- the live turn: steering, the queue, background commands (client → server) ----

pub enum SessionSteer {}

impl ClientRequest for SessionSteer {
    type Params = SessionSteerParams;
    type Result = SessionSteerResult;
    const METHOD: &'static str = "agent/session/steer";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSteerParams {
    pub session_id: String,
    pub text: String,
    /// Paths attached to the message, as `@path` mentions are.
    #[serde(default)]
    pub attachments: Vec<String>,
    /// Used only when no turn runs and the message becomes a prompt.
    #[serde(default)]
    #[schemars(with = "Option<shapes::EditorState>")]
    pub editor: Option<EditorState>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSteerResult {
    /// What `agent/session/unqueue` withdraws it by: the steering message's id, or (when it
    /// became a prompt) its turn's.
    pub id: String,
    /// The running turn it joins, or the turn it starts.
    pub turn_id: String,
    /// False when no turn was running: it is an ordinary prompt.
    pub steered: bool,
}

pub enum SessionUnqueue {}

impl ClientRequest for SessionUnqueue {
    type Params = SessionUnqueueParams;
    type Result = SessionUnqueueResult;
    const METHOD: &'static str = "agent/session/unqueue";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUnqueueParams {
    pub session_id: String,
    /// A steering message's id, or a queued prompt's turn id.
    pub id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUnqueueResult {
    /// False when it was already used, withdrawn or never known.
    pub removed: bool,
}

pub enum SessionQueue {}

impl ClientRequest for SessionQueue {
    type Params = SessionIdParams;
    type Result = SessionQueueResult;
    const METHOD: &'static str = "agent/session/queue";
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionQueueResult {
    /// The same list as the last `queue` update.
    pub items: Vec<QueueItem>,
}

pub enum SessionBackground {}

impl ClientRequest for SessionBackground {
    type Params = SessionIdParams;
    type Result = SessionBackgroundResult;
    const METHOD: &'static str = "agent/session/background";
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionBackgroundResult {
    /// In the order they started; ended ones until the session's end forgets them.
    pub commands: Vec<BackgroundCommand>,
}

pub enum SessionKillBackground {}

impl ClientRequest for SessionKillBackground {
    type Params = SessionKillBackgroundParams;
    type Result = SessionKillBackgroundResult;
    const METHOD: &'static str = "agent/session/killBackground";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionKillBackgroundParams {
    pub session_id: String,
    /// The command's id (`bg1`).
    pub id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionKillBackgroundResult {
    /// False when it had ended already.
    pub killed: bool,
}

/// Every method of this module, in the order the TypeScript lists them (a type left out
/// fails `catalog`'s tests).
#[cfg(test)]
pub(super) fn methods() -> Vec<super::catalog::Method> {
    use super::catalog::{handled, notified, sent};

    vec![
        handled::<SessionNew>(),
        handled::<SessionList>(),
        handled::<SessionLoad>(),
        handled::<SessionPrompt>(),
        handled::<SessionCancel>(),
        handled::<SessionCommands>(),
        handled::<SessionCompact>(),
        handled::<SessionSetModel>(),
        handled::<SessionSetMode>(),
        handled::<SessionContext>(),
        handled::<SessionCheckpoints>(),
        handled::<SessionChanges>(),
        handled::<SessionRevertChanges>(),
        handled::<SessionApplyWorktree>(),
        handled::<SessionRewind>(),
        handled::<SessionFork>(),
        handled::<McpStatus>(),
        handled::<SandboxStatus>(),
        handled::<Permissions>(),
        handled::<Memory>(),
        handled::<MemoryKeep>(),
        handled::<McpResources>(),
        handled::<SessionSteer>(),
        handled::<SessionUnqueue>(),
        handled::<SessionQueue>(),
        handled::<SessionBackground>(),
        handled::<SessionKillBackground>(),
        handled::<DebugDocument>(),
        handled::<DebugSyntax>(),
        handled::<DebugAgentsMd>(),
        handled::<DebugWorkspace>(),
        notified::<SessionUpdate>(),
        notified::<Status>(),
        sent::<RequestPermission>(),
        sent::<EditorDiagnostics>(),
        sent::<EditorLsp>(),
        notified::<McpDidChangeStatus>(),
    ]
}
