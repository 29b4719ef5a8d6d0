// The chat's model: a list of blocks built from agent/session/update notifications and
// from agent/session/load items. It lives in the extension host (not in the webview) so
// that the transcript survives the view being hidden and disposed; the webview only
// renders blocks it is sent. Pure: no `vscode`, unit-tested in plain Node.
import type { BackgroundCommand, PlanEntry, QueueItem, SessionUpdateParams, ToolStatus, TranscriptItem } from './protocol';

export type Block =
  | {
      type: 'user';
      text: string;
      /** The turn it started (set when the prompt is answered) and its checkpoint (from
       *  agent/session/load): what "Rewind to here" goes back to. */
      turnId?: string;
      checkpointId?: string;
    }
  | { type: 'agent'; text: string }
  | { type: 'thought'; text: string }
  | {
      type: 'tool';
      id: string;
      title: string;
      toolKind: string;
      status: ToolStatus;
      output: string;
      /** A `task` call's subagent calls, shown as a collapsible group under it. */
      children?: ChildCall[];
    }
  | { type: 'plan'; entries: PlanEntry[] }
  | { type: 'notice'; level: 'info' | 'warning' | 'error' | 'hook' | 'reminder'; text: string };

/** A tool call of a subagent (its session is the child's). */
export interface ChildCall {
  id: string;
  title: string;
  status: ToolStatus;
}

export interface ChatModel {
  sessionId: string | undefined;
  blocks: Block[];
  /** Turns sent and not ended yet (a prompt while one runs is queued by the server). */
  running: string[];
  /** Where each tool call's row is, to update its status in place. */
  tools: Record<string, number>;
  /** Turns whose turnEnd came, possibly before the prompt's answer did (a fast turn). */
  ended: string[];
  /** What waits in the session (the last `queue` update): steering messages, queued prompts. */
  queue: QueueItem[];
  /** The session's background commands (the last `background` update). */
  background: BackgroundCommand[];
  /** Messages this chat steered (steering id → text) that are not shown yet: the turn
   *  shows one with a `steered` update, or, when it ended first, the message becomes a
   *  prompt of its own under the steering id and is shown here (`steeringSent`). */
  steering: Record<string, string>;
}

/** A change for the view: the block at `index` is new or replaced. */
export interface BlockChange {
  index: number;
  block: Block;
}

export function emptyModel(sessionId?: string): ChatModel {
  return { sessionId, blocks: [], running: [], tools: {}, ended: [], queue: [], background: [], steering: {} };
}

/** Tool output kept for display; the model sees the server's own (cut) copy. */
const OUTPUT_LIMIT = 4000;

function clip(text: string): string {
  return text.length > OUTPUT_LIMIT ? `${text.slice(0, OUTPUT_LIMIT)}\n… (${text.length - OUTPUT_LIMIT} more characters)` : text;
}

function push(model: ChatModel, block: Block): BlockChange {
  model.blocks.push(block);
  return { index: model.blocks.length - 1, block };
}

/** Appends streamed text to the last block when it is of the same kind, else opens one. */
function appendText(model: ChatModel, type: 'agent' | 'thought', text: string): BlockChange {
  const index = model.blocks.length - 1;
  const last = model.blocks[index];
  if (last && last.type === type) {
    last.text += text;
    return { index, block: last };
  }
  return push(model, { type, text });
}

/** The user's prompt, added when it is sent (the server does not echo it). */
export function addUser(model: ChatModel, text: string, checkpointId?: string): BlockChange {
  return push(model, checkpointId === undefined ? { type: 'user', text } : { type: 'user', text, checkpointId });
}

/** A message sent with agent/session/steer that the running turn will take (`steered:
 *  true`, `id` its steering id). Shown by the turn's `steered` update; but a turn that ends
 *  before its next step boundary leaves it as a queued prompt of its own whose turn id is
 *  the steering id, with no `steered` update: then it is shown as the user's message of
 *  that turn once the queue lists it as queued or that turn's first update arrives,
 *  whichever the chat hears of first (possibly before this call returns). */
export function steeringSent(model: ChatModel, id: string, text: string): BlockChange[] {
  model.steering[id] = text;
  return model.queue.some((item) => item.id === id && item.kind === 'queued') ? movedSteering(model, id) : [];
}

/** The steered message `id` became a prompt of its own: its user block, its turn running. */
function movedSteering(model: ChatModel, id: string): BlockChange[] {
  const text = model.steering[id];
  if (text === undefined) {
    return [];
  }
  delete model.steering[id];
  turnStarted(model, id);
  return [push(model, { type: 'user', text, turnId: id })];
}

/** Takes the user message `block` out of the chat again (its prompt was refused, so it was
 *  never sent); whether it was there. */
export function withdrawUser(model: ChatModel, block: Block): boolean {
  const index = model.blocks.indexOf(block);
  if (index < 0 || block.type !== 'user') {
    return false;
  }
  model.blocks.splice(index, 1);
  for (const [id, at] of Object.entries(model.tools)) {
    if (at > index) {
      model.tools[id] = at - 1;
    }
  }
  return true;
}

export function turnStarted(model: ChatModel, turnId: string): void {
  // The server may end a turn (a slash command, an error) before its prompt is answered.
  if (!model.running.includes(turnId) && !model.ended.includes(turnId)) {
    model.running.push(turnId);
  }
}

export function isRunning(model: ChatModel): boolean {
  return model.running.length > 0;
}

/** Which request a message takes: while a turn runs it steers that turn (the default) unless
 *  the user chose to queue it; otherwise it is a prompt. */
export function sendKind(model: ChatModel, how: 'steer' | 'queue' | undefined): 'steer' | 'prompt' {
  return isRunning(model) && how !== 'queue' ? 'steer' : 'prompt';
}

/** An update of a subagent's session: its tool calls join the `task` call's row; the rest
 *  (its text, its turn's end) is the task's business, whose output is its final message. */
function applyChildUpdate(model: ChatModel, params: SessionUpdateParams): BlockChange[] {
  const u = params.update;
  const index = u.parentToolCallId === undefined ? undefined : model.tools[u.parentToolCallId];
  const block = index === undefined ? undefined : model.blocks[index];
  if (index === undefined || !block || block.type !== 'tool') {
    return [];
  }
  const children = (block.children ??= []);
  if (u.kind === 'toolCall') {
    children.push({ id: `${params.sessionId}/${u.toolCallId}`, title: u.title ?? u.name ?? 'tool', status: u.status ?? 'pending' });
    return [{ index, block }];
  }
  if (u.kind === 'toolCallUpdate') {
    const child = children.find((c) => c.id === `${params.sessionId}/${u.toolCallId}`);
    if (!child) {
      return [];
    }
    child.status = u.status;
    return [{ index, block }];
  }
  return [];
}

/** One agent/session/update; returns the blocks that changed (for the view). */
export function applyUpdate(model: ChatModel, params: SessionUpdateParams): BlockChange[] {
  const owner = params.update.parentSessionId ?? params.sessionId;
  if (model.sessionId !== undefined && owner !== model.sessionId) {
    return []; // another session's turn (e.g. one left running before a switch)
  }
  if (params.update.parentToolCallId !== undefined) {
    return applyChildUpdate(model, params);
  }
  const moved = movedSteering(model, params.turnId);
  return moved.length > 0 ? [...moved, ...applyOwnUpdate(model, params)] : applyOwnUpdate(model, params);
}

/** An update of the chat's own session (not a subagent's). */
function applyOwnUpdate(model: ChatModel, params: SessionUpdateParams): BlockChange[] {
  const u = params.update;
  switch (u.kind) {
    case 'agentMessageChunk':
      return [appendText(model, 'agent', u.text ?? '')];
    case 'agentThoughtChunk':
      return [appendText(model, 'thought', u.text ?? '')];
    case 'toolCall': {
      const change = push(model, {
        type: 'tool',
        id: u.toolCallId,
        title: u.title ?? u.name ?? 'tool',
        toolKind: u.toolKind ?? 'other',
        status: u.status ?? 'pending',
        output: '',
      });
      model.tools[u.toolCallId] = change.index;
      return [change];
    }
    case 'toolCallUpdate': {
      const index = model.tools[u.toolCallId];
      const block = index === undefined ? undefined : model.blocks[index];
      if (index === undefined || !block || block.type !== 'tool') {
        return [];
      }
      block.status = u.status;
      if (u.output !== undefined) {
        // Shell output streams in chunks while in_progress; when done, the recorded
        // output replaces them.
        block.output = clip(u.status === 'in_progress' ? block.output + u.output : u.output);
      }
      return [{ index, block }];
    }
    case 'plan':
      return [push(model, { type: 'plan', entries: u.entries ?? [] })];
    case 'queued':
      turnStarted(model, params.turnId);
      return [push(model, { type: 'notice', level: 'info', text: 'queued behind the running turn' })];
    case 'queue':
      model.queue = u.items ?? [];
      return model.queue.filter((item) => item.kind === 'queued').flatMap((item) => movedSteering(model, item.id));
    case 'background':
      model.background = u.commands ?? [];
      return [];
    case 'steered':
      // A steering message entered the running turn: the user's words, where they landed.
      if (u.id !== undefined) {
        delete model.steering[u.id];
      }
      return u.blocked
        ? [push(model, { type: 'notice', level: 'warning', text: `steering blocked by a hook: ${oneLine(u.text, 120)}` })]
        : [push(model, { type: 'user', text: u.text ?? '' })];
    case 'warning':
      return [push(model, { type: 'notice', level: 'warning', text: u.message ?? '' })];
    case 'hook':
      return [push(model, { type: 'notice', level: 'hook', text: hookText(u) })];
    case 'reminder':
      return [push(model, { type: 'notice', level: 'reminder', text: reminderText(u) })];
    case 'error':
      return [push(model, { type: 'notice', level: 'error', text: u.message ?? '' })];
    case 'compaction':
      if (u.phase === 'started') {
        return [push(model, { type: 'notice', level: 'info', text: `compacting the conversation (${u.tokensBefore ?? 0} tokens)…` })];
      }
      if (u.phase === 'completed') {
        return [push(model, { type: 'notice', level: 'info', text: compactionText(u.tokensBefore, u.tokensAfter, u.strategy) })];
      }
      return [push(model, { type: 'notice', level: 'warning', text: `compaction failed: ${u.message ?? ''}` })];
    case 'turnEnd': {
      model.running = model.running.filter((t) => t !== params.turnId);
      model.ended = [...model.ended.slice(-50), params.turnId];
      if (u.stopReason !== 'endTurn') {
        return [push(model, { type: 'notice', level: u.stopReason === 'error' ? 'error' : 'info', text: `turn ended: ${u.stopReason}` })];
      }
      return [];
    }
    default:
      return [];
  }
}

/** A text as one line: newlines become spaces, long texts are cut. */
export function oneLine(text: string | undefined, max: number): string {
  const flat = (text ?? '').replace(/\s*\n\s*/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A hook run as one line: event, command, outcome, duration, message. */
export function hookText(u: { event: string; command: string; outcome: string; durationMs: number; message?: string }): string {
  const line = `${u.event} hook \`${oneLine(u.command, 60)}\`: ${u.outcome} (${u.durationMs} ms)`;
  return u.message ? `${line} — ${oneLine(u.message, 120)}` : line;
}

/** A reminder as one line: its source and the start of its text. */
export function reminderText(u: { source: string; text?: string }): string {
  return `reminder (${u.source}): ${oneLine(u.text, 120)}`;
}

function compactionText(before?: number, after?: number, strategy?: string): string {
  return `compacted: ${before ?? 0} → ${after ?? 0} tokens${strategy ? ` (${strategy})` : ''}`;
}

/** The model of a session from agent/session/load. */
export function fromItems(sessionId: string, items: TranscriptItem[]): ChatModel {
  const model = emptyModel(sessionId);
  for (const item of items) {
    switch (item.kind) {
      case 'user':
        addUser(model, item.text, item.checkpointId);
        break;
      case 'assistant':
        appendText(model, 'agent', item.text);
        break;
      case 'toolCall': {
        const change = push(model, {
          type: 'tool',
          id: item.toolCallId,
          title: item.title ?? item.name,
          toolKind: item.toolKind ?? 'other',
          // The server records `completed`, `failed`, or `pending` when no output was.
          status: item.status as ToolStatus,
          output: clip(item.output ?? ''),
        });
        model.tools[item.toolCallId] = change.index;
        break;
      }
      case 'plan':
        push(model, { type: 'plan', entries: item.entries });
        break;
      case 'compaction':
        push(model, { type: 'notice', level: 'info', text: compactionText(item.tokensBefore, item.tokensAfter, item.strategy) });
        break;
      case 'error':
        push(model, { type: 'notice', level: 'error', text: item.message });
        break;
      case 'hook':
        push(model, { type: 'notice', level: 'hook', text: hookText(item) });
        break;
      case 'reminder':
        push(model, { type: 'notice', level: 'reminder', text: reminderText(item) });
        break;
    }
  }
  return model;
}

/** The transcript as plain text (tests, and "copy transcript"). */
export function toText(model: ChatModel): string {
  const marks: Record<ToolStatus, string> = { pending: '○', in_progress: '◐', completed: '✓', failed: '✗' };
  const noticeMarks = { error: '✗', warning: '⚠', info: 'ℹ', hook: '⚓', reminder: '🔔' };
  return model.blocks
    .map((b) => {
      switch (b.type) {
        case 'user':
          return `## You\n${b.text}`;
        case 'agent':
          return b.text;
        case 'thought':
          return `> 💭 ${b.text}`;
        case 'tool':
          return [`- ${marks[b.status]} ${b.title}`, ...(b.children ?? []).map((c) => `    - ${marks[c.status]} ${c.title}`)].join('\n');
        case 'plan':
          return b.entries.map((e) => `- [${e.status === 'completed' ? 'x' : e.status === 'in_progress' ? '~' : ' '}] ${e.content}`).join('\n');
        case 'notice':
          return `> ${noticeMarks[b.level]} ${b.text}`;
      }
    })
    .join('\n');
}
