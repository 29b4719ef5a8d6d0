// Generated from server/src/protocol/lsp.rs (the Rust types are the source): do not edit.
// `UPDATE_EXPECT=1 cargo test -p agentls --lib protocol` writes it again.

/** The context window's fill of a session: `agent/status`. */
export interface AgentStatus {
  compactions: number;
  contextWindow: number;
  estimated: boolean;
  fill: number;
  /**
   * The session's mode (`agent/session/setMode`, else the `approval` setting): `ask`,
   * `auto-edit`, `full-auto` or `plan`. A change of it sends a status too.
   */
  mode: string;
  /**
   * The sandbox this session's commands run in: as `agent/sandbox/status` answers, but
   * read-only without network in plan mode.
   */
  sandbox: SandboxState;
  sessionId: string;
  /** `idle`, `running` or `compacting`. */
  state: string;
  usedTokens: number;
}

export interface AgentsChain {
  dir: string;
  files: AgentsFile[];
  gitRoot: string | null;
  omittedBytes: number;
  /** The instructions as the model will see them; empty when there are none. */
  text: string;
  warnings: string[];
}

export interface AgentsFile {
  bytes: number;
  /** Relative to the workspace root when under it, else absolute. */
  displayPath: string;
  fromBuffer: boolean;
  /** How much of it made it under the cap. */
  includedBytes: number;
  path: string;
}

/** A background command (`shell` with `background: true`). */
export interface BackgroundCommand {
  command: string;
  cwd: string;
  exitCode?: number;
  /** `bg1`, `bg2`, … (what the model's `shell_output` and `shell_kill` take). */
  id: string;
  /** Milliseconds since the epoch. */
  startedAt: number;
  /** `running` or `exited`. */
  state: string;
}

/**
 * The ratio between what the provider reports and what agentls counted for the same
 * request. Applied to later estimates, it brings them close to the provider's own count
 * even when the provider uses another tokenizer (a llama model's, Claude's) or frames
 * messages differently.
 */
export interface Calibration {
  ratio: number;
  samples: number;
}

export type Cancelled = 'cancelled';

export interface ChangeHunk {
  /** `@@ -a,b +c,d @@` and the lines, with 3 lines of context. */
  diff: string;
  /** Names the hunk's place and content: pass it to `agent/session/revertChanges`. */
  id: string;
  newLines: number;
  newStart: number;
  oldLines: number;
  oldStart: number;
}

export interface ChangeToRevert {
  /** The hunks to undo; absent: the whole file. */
  hunkIds?: string[];
  /** As `agent/session/changes` lists it. */
  path: string;
}

export interface ChangedFile {
  /** The file is not what the turns left: the user changed it since. */
  changedSince: boolean;
  /** Empty for a file that is not text (or a link): it is kept or undone whole. */
  hunks: ChangeHunk[];
  /** Relative to its root (the first root's), else absolute. */
  path: string;
  /** `added`, `modified` or `deleted`. */
  status: string;
}

/** A checkpoint: the workspace's files before a user message's turn. */
export interface CheckpointEntry {
  /** What the turn changed (every file, the shell's and subagents' included). */
  files: CheckpointFile[];
  id: string;
  /** The first line of the user's message. */
  message: string;
  /** Files over `checkpoints.maxFileBytes` (or unreadable): not stored, never restored. */
  notStored?: string[];
  /** Milliseconds since the epoch. */
  time: number;
  /** The turn's number in the session (1 = the first user message). */
  turn: number;
  turnId: string;
}

export interface CheckpointFile {
  /** `created`, `modified` or `deleted`. */
  change: string;
  path: string;
}

/** One entry of `agent/session/commands` and of `/help`. */
export interface CommandInfo {
  argumentHint: string | null;
  description: string;
  name: string;
  source: Source;
}

export type CompactionPhase = 'started' | 'completed' | 'failed';

export interface ContextReport {
  /** Whether compaction runs by itself at that threshold (`compaction.auto`). */
  autoCompact: boolean;
  calibration: Calibration;
  contextWindow: number;
  /** How the editor context block used its budget, part by part. */
  editorParts: PartReport[];
  estimated: boolean;
  fill: number;
  /** Exactly the `messages` the configured provider would be sent next. */
  messages: unknown[];
  sections: Section[];
  /**
   * The request size at which a model call waits for a compaction: `compaction.threshold`
   * of the usable window (the window less the output reserve), as the turn computes it.
   */
  thresholdTokens: number;
  tokenizer: string;
  totalTokens: number;
}

export interface DebugAgentsMdConfig {
  maxBytes: number;
}

export interface DebugAgentsMdParams {
  /** A file or directory; default: the first workspace root. */
  uri?: string;
}

export interface DebugConfig {
  agentsMd: DebugAgentsMdConfig;
  syntax: DebugSyntaxConfig;
}

export interface DebugDocumentParams {
  /** Include the syntax tree as an s-expression. */
  sexp?: boolean;
  uri: string;
}

export interface DebugDocumentResult {
  hasSyntaxTree: boolean;
  language: string;
  lineCount: number;
  outline: OutlineSymbol[];
  /** How many times the document was parsed so far. */
  parses: number;
  /** `utf-8`, `utf-16` or `utf-32`. */
  positionEncoding: string;
  /** Present when asked for: the tree, null without one. */
  sexp?: string;
  syntaxErrors: boolean;
  text: string;
  uri: string;
  version: number;
}

export interface DebugSyntaxConfig {
  maxDocumentBytes: number;
}

export interface DebugSyntaxParams {
  position?: Position;
  range?: Range;
  uri: string;
}

export interface DebugSyntaxResult {
  /** The innermost outline symbol containing `position`. */
  enclosingSymbol: EnclosingSymbol | null;
  /** The distinct identifiers referenced in `range`, in order of first appearance. */
  identifiers: Identifier[];
}

export interface DebugWorkspaceResult {
  agentsMdCached: boolean;
  config: DebugConfig;
  fileCount: number;
  indexMillis: number;
  positionEncoding: string;
  roots: string[];
  /** `notstarted`, `indexing` or `ready`. */
  status: string;
  /**
   * The workspace symbol index: `status`, `files`, `definitions`, `reused`, `parsed`,
   * `removed`, `skipped` (by reason), `skippedTotal`, `persisted`, `elapsedMs`,
   * `parsesTotal`, `saveError`.
   */
  symbols: unknown;
  /** Whether the model's vocabulary is built (at `initialized`, in the background). */
  tokenizer: TokenizerState;
}

/** The fields of an LSP diagnostic the server reads (others are accepted and ignored). */
export interface Diagnostic {
  code?: DiagnosticCode;
  message: string;
  range: Range;
  /** 1 error, 2 warning, 3 information, 4 hint. */
  severity?: DiagnosticSeverity;
  source?: string;
}

export type DiagnosticCode = number | string;

/** An LSP `DiagnosticSeverity` (1 to 4). */
export type DiagnosticSeverity = number;

/**
 * Asks the editor for its diagnostics of files a tool call just changed; sent only to a
 * client that set `capabilities.editorDiagnostics` in its initializationOptions.
 */
export interface EditorDiagnosticsParams {
  /**
   * How long the editor may wait for its language servers to report on the new text
   * (`diagnostics.settleMs`) before it answers with what it has.
   */
  settleMs: number;
  uris: string[];
}

export interface EditorDiagnosticsResult {
  /** One per uri the editor knows (a uri left out has no diagnostics). */
  items: EditorFileDiagnostics[];
}

export interface EditorFileDiagnostics {
  /** In LSP's shape (0-based lines, severity 1 error … 4 hint). */
  diagnostics: Diagnostic[];
  uri: string;
  /** The buffer's version the diagnostics are of, when it is open. */
  version?: number;
}

/**
 * Asks the editor's own language servers (rust-analyzer, pyright, gopls…) a standard LSP
 * request for the `lsp` tool; sent only to a client that set
 * `capabilities.editorLanguageServers` in its initializationOptions. Positions are in the
 * encoding negotiated with agentls, as everywhere in this protocol.
 */
export interface EditorLspParams {
  /**
   * One of `textDocument/definition`, `textDocument/references`, `textDocument/hover`,
   * `textDocument/documentSymbol`, `workspace/symbol`, `textDocument/rename`.
   */
  method: string;
  /** The standard request's params. */
  params: unknown;
}

/**
 * The answer of the editor's language servers. A client with no language server for the
 * file answers with an error (its message is shown to the model beside the symbol
 * index's answer); `result: null` means the server found nothing.
 */
export interface EditorLspResult {
  /**
   * The standard result of `method` (for `textDocument/rename`, a `WorkspaceEdit` the
   * client has not applied: agentls applies it after the user's approval).
   */
  result?: unknown;
}

/**
 * The schema of `agentls_core::editor_state::EditorState` (what the editor shows, sent
 * with a prompt and with `agent/session/context`). Schema only: the server reads the core
 * type; `tests::editor_state_matches_the_core_type` holds the two together.
 */
export interface EditorState {
  diagnostics?: Diagnostic[];
  position: Position;
  selection?: Range;
  uri: string;
  visibleRange?: Range;
}

export interface EnclosingSymbol {
  kind: string;
  name: string;
  path: string[];
  range: Range;
  text: string;
}

/** A change as whole texts (`oldText` null for a new file). */
export interface FileDiff {
  newText: string;
  oldText: string | null;
  path: string;
}

/** A hook's run, as the editor is told (`hook` update) and the transcript shows it. */
export interface HookRun {
  command: string;
  durationMs: number;
  /** The hook event (`PreToolUse`, …). */
  event: string;
  message?: string;
  /** `ok`, `blocked`, `error`, `timeout`, `cancelled`, `notApproved`. */
  outcome: string;
}

/** An identifier referenced in a range (built by `agentls_core::syntax`). */
export interface Identifier {
  /** `value`, `type`, `field` or `module`. */
  kind: string;
  name: string;
}

export interface McpResource {
  description?: string;
  mimeType?: string;
  name: string;
  server: string;
  uri: string;
}

/** `agent/mcp/resources`'s result (built by `mcp::manager`). */
export interface McpResourceList {
  resources: McpResource[];
}

export interface McpServerStatus {
  /** Why it failed, or why it is starting again. */
  message?: string;
  name: string;
  /** Where it is configured: `settings`, `workspace` (.mcp.json) or `client`. */
  source: string;
  /** `starting`, `ready`, `failed` or `disabled`. */
  state: string;
  /** How many of its tools are offered to the model. */
  tools: number;
}

/**
 * The MCP servers' status: `agent/mcp/status`'s result, `agent/mcp/didChangeStatus`'s
 * params (built by `mcp::manager`).
 */
export interface McpStatus {
  /** Sorted by name. */
  servers: McpServerStatus[];
}

export interface MemoryEntry {
  /** `user` or `model`: who kept it. */
  author: string;
  /** `YYYY-MM-DD`, or empty for a line written by hand. */
  date: string;
  text: string;
}

export interface MemoryKeepParams {
  /** One line, at most 500 characters; kept as the user's (`[user DATE]`). */
  fact: string;
  /** `workspace` (default) or `user`. */
  scope?: string;
}

export interface MemoryKeepResult {
  /** False when the memory holds the same fact already. */
  kept: boolean;
  /** The Markdown file it is kept in. */
  path: string;
}

export interface MemoryOffer {
  /** `constraint` (a rule the user stated) or `command` (a check that exited 0). */
  source: string;
  text: string;
}

export interface MemoryParams {
  /** A session whose durable facts (its ledger's) are offered for keeping. */
  sessionId?: string;
}

export interface MemoryScopeState {
  entries: MemoryEntry[];
  /** The Markdown file (absent: there is no home directory to keep it in). */
  path?: string;
  /** `user` or `workspace`. */
  scope: string;
}

/**
 * `agent/memory`'s result: each memory's file and entries (the editors open the file to
 * edit it).
 */
export interface MemoryState {
  /**
   * With `sessionId`: that session's facts worth keeping that no memory holds yet (the
   * user's rules, the check commands that worked); keep one with `agent/memory/keep`.
   */
  offers: MemoryOffer[];
  /** `user`, then `workspace`. */
  scopes: MemoryScopeState[];
}

/** A symbol of `agentls/debug/document`'s outline (built by `lsp::to_proto::symbol_json`). */
export interface OutlineSymbol {
  children: OutlineSymbol[];
  kind: string;
  name: string;
  range: Range;
  selectionRange: Range;
}

export interface PartReport {
  /** Entries left out to fit (absent as `entries` is). */
  cutEntries?: number;
  /** Tokens of content removed to fit the budget; the whole part's size when omitted. */
  cutTokens: number;
  /**
   * Entries shown, for a part made of entries (definitions, outline lines,
   * diagnostics); absent for the header and the code parts.
   */
  entries?: number;
  /**
   * The room the part had: the least of its own cap (definitions 2,048, outline 1,536)
   * and what the budget left after the parts before it and the room held for the parts
   * after it (their markers; the definitions' floor).
   */
  maxTokens: number;
  /**
   * "header" | "file" | "selection" | "enclosingSymbol" | "diagnostics" | "definitions" |
   * "outline",
   * in the order they are placed
   */
  name: string;
  /** True when nothing of the part fit and only its marker is in the text. */
  omitted: boolean;
  /**
   * Tokens this part adds to the text: what was included (after any cut), or the
   * omission marker's tokens when the part was omitted.
   */
  tokens: number;
}

export interface PermissionOption {
  /** `allowOnce`, `allowAlways`, `rejectOnce` or `rejectAlways`. */
  kind: string;
  name: string;
  optionId: string;
}

export type PermissionOutcome = { optionId: string } | Cancelled;

/** Asks the user to approve a tool call (or a workspace hook, or MCP server). */
export interface PermissionRequest {
  options: PermissionOption[];
  sessionId: string;
  /** Built by the agent loop. */
  toolCall: PermissionToolCall;
  turnId: string;
}

/** The client's answer; an unknown option id, an error or no answer is a rejection. */
export interface PermissionResponse {
  outcome: PermissionOutcome;
}

export interface PermissionRule {
  /** `allow`, `ask` or `deny`. */
  action: string;
  /** As written: `shell(git log:*)`. */
  rule: string;
  /**
   * `user` (the settings), `workspace` (`.agents/settings.json`) or `answers` (the
   * user's "always" answers kept for the workspace).
   */
  source: string;
}

/** `agent/permissions`'s result: the standing permission rules in force, deny first. */
export interface PermissionRules {
  /** Rules that were ignored and why (a workspace's allow rule, one that does not parse). */
  problems: string[];
  rules: PermissionRule[];
}

/**
 * The call a permission request is about: a tool call, or a workspace hook or MCP server
 * to approve. Absent fields are left out.
 */
export interface PermissionToolCall {
  /**
   * What the call would run, as lines for the user to read before answering, where the
   * title cannot say it all: a workspace MCP server's whole entry (command, args, cwd,
   * env, url, headers, trust, tools; values as written, literal secrets masked).
   */
  details?: string;
  /** A unified diff, for an edit. */
  diff?: string;
  /** The same change as whole texts. */
  edit?: FileDiff;
  input: Record<string, unknown>;
  kind: ToolKind;
  /** Where a tool call works (a hook or MCP server has none). */
  locations?: ToolLocation[];
  name: string;
  /** `true`: the request is to run again outside the sandbox a command it stopped. */
  outsideSandbox?: boolean;
  parentToolCallId?: string;
  /**
   * Why it is asked: a write asked in every mode (also appended to the title), or why
   * the sandbox stopped the command (with `outsideSandbox`).
   */
  reason?: string;
  /** A subagent's call: its name, its session and the `task` call that runs it. */
  subagent?: string;
  subagentSessionId?: string;
  title: string;
  toolCallId: string;
}

/** One step of the model's plan (`update_plan`). */
export interface PlanEntry {
  content: string;
  /** `pending`, `in_progress` or `completed`. */
  status: string;
}

/** An LSP position, in the negotiated encoding. */
export interface Position {
  character: number;
  line: number;
}

/**
 * An image of a prompt: its bytes in base64 (`data`, a `data:` URL is accepted) or a
 * workspace file (`path`), exactly one of them.
 */
export interface PromptImage {
  data?: string;
  /** `image/png`, `image/jpeg`, `image/gif` or `image/webp`; checked against the bytes. */
  mimeType?: string;
  path?: string;
}

/** A message waiting in a session (built by the agent's steering). */
export interface QueueItem {
  id: string;
  /**
   * `steering`: joins the running turn at its next step; `queued`: a turn of its own
   * after the running one.
   */
  kind: string;
  text: string;
}

export interface Range {
  end: Position;
  start: Position;
}

/** A reminder that reached the model, as the editor is told and the transcript shows it. */
export interface ReminderShown {
  key: string;
  source: string;
  /** Empty in session logs written before the log's `reminder` event kept it. */
  text: string;
}

export interface RevertConflict {
  path: string;
  reason: string;
}

export interface RewindFailure {
  error: string;
  path: string;
}

/**
 * The command sandbox: what the settings ask for and what this machine gives (built by the
 * server's `sandbox::status`).
 */
export interface SandboxState {
  /** This machine can confine a command (Linux with Landlock). */
  available: boolean;
  /** Commands run confined: the mode is not `off` and a sandbox is available. */
  enforced: boolean;
  /** Why the sandbox is missing or weaker than asked, for the status bar and health check. */
  message?: string;
  /** `workspace-write`, `read-only` or `off` (the `sandbox` setting). */
  mode: string;
  /** Commands may open IP sockets (true whenever no sandbox is enforced). */
  network: boolean;
}

export interface Section {
  name: string;
  tokens: number;
  trust: Trust;
}

/**
 * What a session that works apart changed, brought into the workspace through the editor
 * (`workspace/applyEdit`, file by file, undoable there); its branch keeps all of it.
 */
export interface SessionApplyWorktreeResult {
  /** Files written (paths relative to the repository). */
  applied: string[];
  branch: string;
  /** Files left as they are, with why (the user changed them since, a deletion). */
  conflicts: RevertConflict[];
  /** Files that already held the worktree's text. */
  unchanged: string[];
}

export interface SessionBackgroundResult {
  /** In the order they started; ended ones until the session's end forgets them. */
  commands: BackgroundCommand[];
}

export interface SessionCancelParams {
  sessionId: string;
  /** "Stop all": the session's background commands are killed too. */
  stopBackground?: boolean;
}

export interface SessionCancelResult {
  /** False when nothing was running or queued. */
  cancelled: boolean;
}

export interface SessionChangesParams {
  sessionId: string;
  /** The changes of this turn and the ones after it; absent: the session's last turn. */
  sinceTurnId?: string;
}

/**
 * The files the turns changed, each with the hunks from its text before them to the text
 * they left (what the agent did, not what the user typed since).
 */
export interface SessionChangesResult {
  files: ChangedFile[];
}

export interface SessionCheckpointsResult {
  /** Oldest first. */
  checkpoints: CheckpointEntry[];
}

export interface SessionCommandsResult {
  commands: CommandInfo[];
}

export interface SessionCompactParams {
  /** Steers the summary. */
  instructions?: string;
  sessionId: string;
}

export interface SessionCompactResult {
  /** `trim`, `summary`, `middle_drop`, `oldest_drop`. */
  strategy: string;
  tokensAfter: number;
  tokensBefore: number;
}

export interface SessionContextParams {
  editor?: EditorState;
  /** None: a fresh session (no history). */
  sessionId?: string;
}

export interface SessionForkParams {
  /** The history ends before this checkpoint's message; none: the whole history. */
  checkpointId?: string;
  sessionId: string;
}

export interface SessionForkResult {
  forkedFrom: string;
  /** The new session. */
  sessionId: string;
}

/**
 * `{sessionId}`: the params of the requests that name only a session, in both protocols
 * (`agent/session/load`, `agent/session/cancel`, …; ACP's `session/cancel`).
 */
export interface SessionIdParams {
  sessionId: string;
}

export interface SessionKillBackgroundParams {
  /** The command's id (`bg1`). */
  id: string;
  sessionId: string;
}

export interface SessionKillBackgroundResult {
  /** False when it had ended already. */
  killed: boolean;
}

export interface SessionListParams {
  /** Subagents' sessions too. */
  includeChildren?: boolean;
}

export interface SessionListResult {
  /** Newest first. */
  sessions: SessionSummary[];
}

export interface SessionLoadResult {
  items: TranscriptItem[];
  sessionId: string;
  /** Where the session works when it works apart (`agent/session/new` with `worktree`). */
  worktree?: SessionWorktree;
}

export interface SessionNewParams {
  /** Default: `provider.model`. */
  model?: string;
  /**
   * The session works apart: in a new git worktree of the workspace's repository, on a
   * branch of its own, until `agent/session/applyWorktree` brings its changes over.
   */
  worktree?: boolean;
}

export interface SessionNewResult {
  sessionId: string;
  /** Where a session that works apart works. */
  worktree?: SessionWorktree;
}

export interface SessionPromptParams {
  editor?: EditorState;
  /**
   * Images for a model that takes them (`provider.images`); refused otherwise. At most
   * 8, each at most 5 MB, PNG, JPEG, GIF or WebP.
   */
  images?: PromptImage[];
  sessionId: string;
  text: string;
}

export interface SessionPromptResult {
  turnId: string;
}

export interface SessionQueueResult {
  /** The same list as the last `queue` update. */
  items: QueueItem[];
}

export interface SessionRevertChangesParams {
  changes: ChangeToRevert[];
  sessionId: string;
  /** As in `agent/session/changes`. */
  sinceTurnId?: string;
}

export interface SessionRevertChangesResult {
  /**
   * The checkpoint taken before the undo: `agent/session/rewind` to it takes the undo
   * back. Absent when nothing was written.
   */
  checkpointId?: string;
  /** The files left as they are, with why (the user changed them since, an unknown hunk). */
  conflicts: RevertConflict[];
  /** The files undone (whole or the hunks asked). */
  reverted: string[];
}

export interface SessionRewindParams {
  checkpointId: string;
  /** Only the plan: nothing is changed. */
  dryRun?: boolean;
  /** Restore the conflicting files too (the user's later changes are lost). */
  force?: boolean;
  /** `code`, `conversation` or `both`. */
  restore: string;
  sessionId: string;
}

/** A rewind's plan (`dryRun`) or what it did: paths shown relative to their root. */
export interface SessionRewindResult {
  /**
   * Files the user changed after the agent's last change: left as they are unless
   * `force` (then they are in the lists above too).
   */
  conflicts: string[];
  /** Whether the conversation was (or, in a dry run, would be) rewound. */
  conversation: boolean;
  /** Files the turns deleted, written again. */
  create: string[];
  /** Files the turns created, removed. */
  delete: string[];
  dryRun: boolean;
  /** Files that could not be written, with why. */
  failed: RewindFailure[];
  /** The rewound user message (for the input box), when the conversation is rewound. */
  message?: string;
  /** Files the checkpoint could not store: never touched. */
  notStored: string[];
  /** Files brought back to their content and mode at the checkpoint. */
  restore: string[];
}

export interface SessionSetModeParams {
  /**
   * `ask`, `auto-edit`, `full-auto` or `plan` (ACP's session modes,
   * `agentls_core::acp::MODES`); another is refused with -32602.
   */
  mode: string;
  sessionId: string;
}

export interface SessionSetModeResult {
  mode: string;
}

export interface SessionSetModelParams {
  /** Overrides the window for that session; 0 is refused. */
  contextWindow?: number;
  model: string;
  sessionId: string;
}

export interface SessionSetModelResult {
  /** True when the history was compacted first to fit the new window. */
  compacted: boolean;
}

export interface SessionSteerParams {
  /** Paths attached to the message, as `@path` mentions are. */
  attachments?: string[];
  /** Used only when no turn runs and the message becomes a prompt. */
  editor?: EditorState;
  sessionId: string;
  text: string;
}

export interface SessionSteerResult {
  /**
   * What `agent/session/unqueue` withdraws it by: the steering message's id, or (when it
   * became a prompt) its turn's.
   */
  id: string;
  /** False when no turn was running: it is an ordinary prompt. */
  steered: boolean;
  /** The running turn it joins, or the turn it starts. */
  turnId: string;
}

/** One row of `agent/session/list`. */
export interface SessionSummary {
  /** A fork (`agent/session/fork`): the session it was forked from. */
  forkedFrom?: string;
  /** The checkpoint of `forkedFrom` the fork's history ends before (none: all of it). */
  forkedFromCheckpoint?: string;
  /** A subagent's session: the session whose `task` call ran it. */
  parentSessionId?: string;
  parentToolCallId?: string;
  sessionId: string;
  /** The first user message, shortened to 60 characters. */
  title: string;
  turns: number;
  /** Milliseconds since the epoch. */
  updatedAt: number;
}

export interface SessionUnqueueParams {
  /** A steering message's id, or a queued prompt's turn id. */
  id: string;
  sessionId: string;
}

export interface SessionUnqueueResult {
  /** False when it was already used, withdrawn or never known. */
  removed: boolean;
}

/** What happened in a turn, in order (`kind`). */
export type SessionUpdate =
  | { kind: 'agentMessageChunk'; text: string }
  | { kind: 'agentThoughtChunk'; text: string }
  | { input: Record<string, unknown> | null; kind: 'toolCall'; locations: ToolLocation[]; name: string; status: ToolStatus; title: string; toolCallId: string; toolKind: ToolKind }
  | { diff?: FileDiff; kind: 'toolCallUpdate'; output?: string; status: ToolStatus; toolCallId: string }
  | { entries: PlanEntry[]; kind: 'plan' }
  | { kind: 'queued' }
  | { kind: 'warning'; message: string }
  | { code?: string; kind: 'error'; message: string; retryable: boolean }
  | { durationMs?: number; fallbackReason?: string; kind: 'compaction'; message?: string; phase: CompactionPhase; strategy?: string; tokensAfter?: number; tokensBefore: number; trigger?: string }
  | HookRun & { kind: 'hook' }
  | ReminderShown & { kind: 'reminder' }
  | { kind: 'turnEnd'; modelCalls?: number; stopReason: StopReason; usage?: Usage }
  | { items: QueueItem[]; kind: 'queue' }
  | { blocked?: boolean; id: string; kind: 'steered'; text: string }
  | { commands: BackgroundCommand[]; kind: 'background' };

export interface SessionUpdateParams {
  sessionId: string;
  turnId: string;
  /** Built by the agent loop. */
  update: SubagentUpdate;
}

export interface SessionWorktree {
  branch: string;
  /** The worktree's directory. */
  path: string;
}

/** Where a command (or a subagent) comes from. */
export type Source = 'builtin' | 'workspace' | 'user' | 'mcp';

/** How a turn ended. */
export type StopReason = 'endTurn' | 'cancelled' | 'maxSteps' | 'error';

export type SubagentUpdate = SessionUpdate & { parentSessionId?: string; parentToolCallId?: string };

export interface TokenizerState {
  built: boolean;
  name: string;
}

/** What a tool does, for the editor's UI and for the approval policy. */
export type ToolKind = 'read' | 'search' | 'edit' | 'execute' | 'other';

/** A file a tool call names: absolute path, 1-based line. */
export interface ToolLocation {
  line?: number;
  path: string;
}

export type ToolStatus = 'pending' | 'in_progress' | 'completed' | 'failed';

/** One row of the transcript a client renders (`agent/session/load`). */
export type TranscriptItem =
  | { checkpointId?: string; kind: 'user'; text: string }
  | { kind: 'assistant'; text: string }
  | { input: unknown; kind: 'toolCall'; name: string; output: string | null; status: string; title: string; toolCallId: string; toolKind: ToolKind }
  | { entries: PlanEntry[]; kind: 'plan' }
  | { kind: 'compaction'; strategy: string; summary: string; tokensAfter: number; tokensBefore: number }
  | { kind: 'error'; message: string }
  | HookRun & { kind: 'hook' }
  | ReminderShown & { kind: 'reminder' };

export type Trust = 'trusted' | 'untrusted';

/** The model's usage summed over a turn's calls. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** The method names, by the Rust type of each method. */
export const Methods = {
  sessionNew: 'agent/session/new',
  sessionList: 'agent/session/list',
  sessionLoad: 'agent/session/load',
  sessionPrompt: 'agent/session/prompt',
  sessionCancel: 'agent/session/cancel',
  sessionCommands: 'agent/session/commands',
  sessionCompact: 'agent/session/compact',
  sessionSetModel: 'agent/session/setModel',
  sessionSetMode: 'agent/session/setMode',
  sessionContext: 'agent/session/context',
  sessionCheckpoints: 'agent/session/checkpoints',
  sessionChanges: 'agent/session/changes',
  sessionRevertChanges: 'agent/session/revertChanges',
  sessionApplyWorktree: 'agent/session/applyWorktree',
  sessionRewind: 'agent/session/rewind',
  sessionFork: 'agent/session/fork',
  mcpStatus: 'agent/mcp/status',
  sandboxStatus: 'agent/sandbox/status',
  permissions: 'agent/permissions',
  memory: 'agent/memory',
  memoryKeep: 'agent/memory/keep',
  mcpResources: 'agent/mcp/resources',
  sessionSteer: 'agent/session/steer',
  sessionUnqueue: 'agent/session/unqueue',
  sessionQueue: 'agent/session/queue',
  sessionBackground: 'agent/session/background',
  sessionKillBackground: 'agent/session/killBackground',
  debugDocument: 'agentls/debug/document',
  debugSyntax: 'agentls/debug/syntax',
  debugAgentsMd: 'agentls/debug/agentsMd',
  debugWorkspace: 'agentls/debug/workspace',
  sessionUpdate: 'agent/session/update',
  status: 'agent/status',
  requestPermission: 'agent/session/requestPermission',
  editorDiagnostics: 'agent/editor/diagnostics',
  editorLsp: 'agent/editor/lsp',
  mcpDidChangeStatus: 'agent/mcp/didChangeStatus',
} as const;

export interface ClientRequests {
  'agent/session/new': { params: SessionNewParams | null; result: SessionNewResult };
  'agent/session/list': { params: SessionListParams | null; result: SessionListResult };
  'agent/session/load': { params: SessionIdParams; result: SessionLoadResult };
  'agent/session/prompt': { params: SessionPromptParams; result: SessionPromptResult };
  'agent/session/cancel': { params: SessionCancelParams; result: SessionCancelResult };
  'agent/session/commands': { params: SessionIdParams; result: SessionCommandsResult };
  'agent/session/compact': { params: SessionCompactParams; result: SessionCompactResult };
  'agent/session/setModel': { params: SessionSetModelParams; result: SessionSetModelResult };
  'agent/session/setMode': { params: SessionSetModeParams; result: SessionSetModeResult };
  'agent/session/context': { params: SessionContextParams | null; result: ContextReport };
  'agent/session/checkpoints': { params: SessionIdParams; result: SessionCheckpointsResult };
  'agent/session/changes': { params: SessionChangesParams; result: SessionChangesResult };
  'agent/session/revertChanges': { params: SessionRevertChangesParams; result: SessionRevertChangesResult };
  'agent/session/applyWorktree': { params: SessionIdParams; result: SessionApplyWorktreeResult };
  'agent/session/rewind': { params: SessionRewindParams; result: SessionRewindResult };
  'agent/session/fork': { params: SessionForkParams; result: SessionForkResult };
  'agent/mcp/status': { params: unknown; result: McpStatus };
  'agent/sandbox/status': { params: unknown; result: SandboxState };
  'agent/permissions': { params: unknown; result: PermissionRules };
  'agent/memory': { params: MemoryParams | null; result: MemoryState };
  'agent/memory/keep': { params: MemoryKeepParams; result: MemoryKeepResult };
  'agent/mcp/resources': { params: unknown; result: McpResourceList };
  'agent/session/steer': { params: SessionSteerParams; result: SessionSteerResult };
  'agent/session/unqueue': { params: SessionUnqueueParams; result: SessionUnqueueResult };
  'agent/session/queue': { params: SessionIdParams; result: SessionQueueResult };
  'agent/session/background': { params: SessionIdParams; result: SessionBackgroundResult };
  'agent/session/killBackground': { params: SessionKillBackgroundParams; result: SessionKillBackgroundResult };
  'agentls/debug/document': { params: DebugDocumentParams; result: DebugDocumentResult };
  'agentls/debug/syntax': { params: DebugSyntaxParams; result: DebugSyntaxResult };
  'agentls/debug/agentsMd': { params: DebugAgentsMdParams; result: AgentsChain };
  'agentls/debug/workspace': { params: unknown; result: DebugWorkspaceResult };
}

export interface ServerRequests {
  'agent/session/requestPermission': { params: PermissionRequest; result: PermissionResponse };
  'agent/editor/diagnostics': { params: EditorDiagnosticsParams; result: EditorDiagnosticsResult };
  'agent/editor/lsp': { params: EditorLspParams; result: EditorLspResult };
}

export interface ServerNotifications {
  'agent/session/update': { params: SessionUpdateParams };
  'agent/status': { params: AgentStatus };
  'agent/mcp/didChangeStatus': { params: McpStatus };
}
