// The custom part of the agentls protocol (docs/protocol.md), as types. Kept free of
// `vscode` imports so that both the extension and the plain-Node tests can use it.

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface Diagnostic {
  range: Range;
  severity?: 1 | 2 | 3 | 4;
  message: string;
  source?: string;
  code?: string | number;
}

/** What the editor shows, sent with a prompt and with agent/session/context. */
export interface EditorState {
  uri: string;
  position: Position;
  selection?: Range;
  visibleRange?: Range;
  diagnostics?: Diagnostic[];
}

export type ToolStatus = 'pending' | 'in_progress' | 'completed' | 'failed';
export type PlanStatus = 'pending' | 'in_progress' | 'completed';

export interface PlanEntry {
  content: string;
  status: PlanStatus;
}

export type SessionUpdate =
  | { kind: 'agentMessageChunk'; text: string }
  | { kind: 'agentThoughtChunk'; text: string }
  | {
      kind: 'toolCall';
      toolCallId: string;
      name: string;
      title?: string;
      toolKind?: string;
      status: ToolStatus;
      input?: unknown;
    }
  | { kind: 'toolCallUpdate'; toolCallId: string; status: ToolStatus; output?: string }
  | { kind: 'plan'; entries: PlanEntry[] }
  | { kind: 'queued' }
  | { kind: 'warning'; message: string }
  | { kind: 'hook'; event: string; command: string; outcome: string; durationMs: number; message?: string }
  | { kind: 'reminder'; key: string; source: string; text: string }
  | { kind: 'error'; message: string; retryable?: boolean; code?: string }
  | {
      kind: 'compaction';
      phase: 'started' | 'completed' | 'failed';
      tokensBefore?: number;
      tokensAfter?: number;
      strategy?: string;
      trigger?: string;
      durationMs?: number;
      message?: string;
    }
  | {
      kind: 'turnEnd';
      stopReason: 'endTurn' | 'cancelled' | 'maxSteps' | 'error';
      usage?: { inputTokens: number; outputTokens: number };
    };

/** agent/session/update params. A subagent's session's updates carry the `task` call
 *  (and session) they belong to. */
export interface SessionUpdateParams {
  sessionId: string;
  turnId: string;
  update: SessionUpdate & { parentToolCallId?: string; parentSessionId?: string };
}

/** One row of agent/session/commands. */
export interface CommandInfo {
  name: string;
  description: string;
  argumentHint: string | null;
  source: 'builtin' | 'workspace' | 'user' | 'mcp';
}

/** agent/status params. */
export interface AgentStatus {
  sessionId: string;
  usedTokens: number;
  contextWindow: number;
  fill: number;
  estimated: boolean;
  state: 'idle' | 'running' | 'compacting';
  compactions: number;
}

export type TranscriptItem =
  | { kind: 'user'; text: string }
  | { kind: 'assistant'; text: string }
  | {
      kind: 'toolCall';
      toolCallId: string;
      name: string;
      title?: string;
      toolKind?: string;
      input?: unknown;
      status: 'completed' | 'failed' | 'pending';
      output?: string;
    }
  | { kind: 'plan'; entries: PlanEntry[] }
  | { kind: 'compaction'; summary: string; tokensBefore: number; tokensAfter: number; strategy: string }
  | { kind: 'error'; message: string }
  | { kind: 'hook'; event: string; command: string; outcome: string; durationMs: number; message?: string }
  | { kind: 'reminder'; key: string; source: string; text: string };

export interface SessionSummary {
  sessionId: string;
  title: string;
  updatedAt: number;
  turns: number;
}

export interface PermissionOption {
  optionId: string;
  kind: 'allowOnce' | 'allowAlways' | 'rejectOnce' | 'rejectAlways' | string;
  name: string;
}

/** agent/session/requestPermission params. */
export interface PermissionRequest {
  sessionId: string;
  turnId: string;
  toolCall: {
    toolCallId: string;
    name: string;
    title?: string;
    kind?: string;
    input?: Record<string, unknown>;
    diff?: string;
  };
  options: PermissionOption[];
}

export type PermissionResponse = { outcome: { optionId: string } } | { outcome: 'cancelled' };

export interface ContextSection {
  name: string;
  tokens: number;
  trust: 'trusted' | 'untrusted';
}

/** agent/session/context result (the parts shown). */
export interface ContextReport {
  contextWindow: number;
  totalTokens: number;
  fill: number;
  estimated: boolean;
  /** The request size at which a model call waits for a compaction (the server's figure). */
  thresholdTokens: number;
  /** Whether compaction runs by itself at that threshold. */
  autoCompact: boolean;
  sections: ContextSection[];
  tokenizer?: string;
  calibration?: { ratio: number; samples: number };
  editorParts?: { name: string; tokens: number; cutTokens: number; omitted: boolean }[];
}

/** One MCP server in agent/mcp/status's result and agent/mcp/didChangeStatus. */
export interface McpServerStatus {
  name: string;
  state: 'starting' | 'ready' | 'failed' | 'disabled' | string;
  /** How many of its tools are offered to the model. */
  tools: number;
  /** Where it is configured: settings, workspace (.mcp.json) or client. */
  source?: string;
  /** Why it failed, or why it is starting again. */
  message?: string;
}

export interface McpStatus {
  servers: McpServerStatus[];
}

export const Methods = {
  sessionNew: 'agent/session/new',
  sessionList: 'agent/session/list',
  sessionLoad: 'agent/session/load',
  sessionPrompt: 'agent/session/prompt',
  sessionCancel: 'agent/session/cancel',
  sessionCommands: 'agent/session/commands',
  sessionCompact: 'agent/session/compact',
  sessionSetModel: 'agent/session/setModel',
  sessionContext: 'agent/session/context',
  sessionUpdate: 'agent/session/update',
  status: 'agent/status',
  requestPermission: 'agent/session/requestPermission',
  mcpStatus: 'agent/mcp/status',
  mcpDidChangeStatus: 'agent/mcp/didChangeStatus',
} as const;
