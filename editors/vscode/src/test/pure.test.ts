// The modules that do not need `vscode`: status text, chat reducer, editor state,
// settings, diff application, webview HTML.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chatHtml, contentSecurityPolicy } from '../chat/html';
import { isFromWebview } from '../chat/messages';
import { serverCommand, serverSettings, turnEndNotice } from '../config';
import { memoryPickItems, offerPickItems, permissionPickItems } from '../memory';
import { applyUnifiedDiff } from '../diff';
import { editorState, toLspSeverity } from '../editorState';
import { MODES, modePickItems, sandboxText } from '../mode';
import type { AgentStatus, SandboxState, SessionUpdate } from '../protocol';
import { formatStatus } from '../status';
import { addUser, applyUpdate, emptyModel, fromItems, isRunning, toText, turnStarted } from '../transcript';

const status = (over: Partial<AgentStatus>): AgentStatus => ({
  sessionId: 's',
  usedTokens: 53760,
  contextWindow: 128000,
  fill: 0.42,
  estimated: false,
  state: 'idle',
  compactions: 1,
  mode: 'ask',
  sandbox: { mode: 'workspace-write', available: true, network: false, enforced: true },
  ...over,
});

describe('status', () => {
  it('shows the fill, ~ when estimated, a spinner while compacting', () => {
    assert.equal(formatStatus(status({})).text, '$(hubot) 42%');
    assert.equal(formatStatus(status({ estimated: true })).text, '$(hubot) ~42%');
    assert.equal(formatStatus(status({ state: 'compacting' })).text, '$(sync~spin) compacting');
    assert.equal(formatStatus(undefined).text, '$(hubot)');
  });
  it('tooltip has used/window tokens and compactions', () => {
    const tip = formatStatus(status({})).tooltip;
    assert.match(tip, /53,760 \/ 128,000 tokens/);
    assert.match(tip, /compactions: 1/);
  });
  it('shows the mode when it is not ask, and the mode and the sandbox in the tooltip', () => {
    assert.equal(formatStatus(status({})).text, '$(hubot) 42%');
    const readOnly: SandboxState = { mode: 'read-only', available: true, network: false, enforced: true };
    const plan = formatStatus(status({ mode: 'plan', sandbox: readOnly }));
    assert.equal(plan.text, '$(hubot) 42% · plan');
    assert.match(plan.tooltip, /^mode: plan · sandbox: read-only, no network \(Agent: Set Mode switches it\)$/m);
    assert.equal(plan.warning, false);
  });
  it('warns when no sandbox can be had, with or without a session', () => {
    const missing: SandboxState = { mode: 'workspace-write', available: false, network: true, enforced: false, message: 'no Landlock' };
    const view = formatStatus(status({ sandbox: missing }));
    assert.equal(view.text, '$(hubot) 42% $(warning)');
    assert.equal(view.warning, true);
    assert.match(view.tooltip, /mode: ask · sandbox unavailable: no Landlock/);
    const before = formatStatus(undefined, undefined, missing);
    assert.deepEqual(before, { text: '$(hubot) $(warning)', tooltip: 'agentls: no session yet\nsandbox unavailable: no Landlock', warning: true });
    // The session's status wins over what agent/sandbox/status said of the settings.
    const ok: SandboxState = { mode: 'workspace-write', available: true, network: false, enforced: true };
    assert.equal(formatStatus(status({ sandbox: ok }), undefined, missing).warning, false);
  });
});

describe('mode', () => {
  it('offers the four modes, the current one marked', () => {
    assert.deepEqual(
      MODES.map((m) => m.mode),
      ['ask', 'auto-edit', 'full-auto', 'plan'],
    );
    const items = modePickItems('plan');
    assert.equal(items[3].label, '$(check) plan');
    assert.equal(items[0].label, 'ask');
    assert.equal(items[3].mode, 'plan');
  });
  it('says what the sandbox is', () => {
    assert.equal(sandboxText(undefined), undefined);
    assert.deepEqual(sandboxText({ mode: 'workspace-write', available: true, network: true, enforced: true }), {
      text: 'sandbox: workspace-write',
      warning: false,
    });
    assert.deepEqual(sandboxText({ mode: 'off', available: true, network: true, enforced: false }), {
      text: 'sandbox off: commands run with your full rights',
      warning: false,
    });
    assert.equal(sandboxText({ mode: 'read-only', available: true, network: false, enforced: false, message: 'x' })?.warning, true);
  });
});

describe('transcript', () => {
  const up = (update: SessionUpdate, turnId = 't1') => ({ sessionId: 's', turnId, update });
  it('appends streamed text, tracks tool status, plan, notices, turn end', () => {
    const m = emptyModel('s');
    addUser(m, 'hi');
    turnStarted(m, 't1');
    applyUpdate(m, up({ kind: 'agentMessageChunk', text: 'Hel' }));
    const [c] = applyUpdate(m, up({ kind: 'agentMessageChunk', text: 'lo' }));
    assert.equal(c.index, 1);
    applyUpdate(m, up({ kind: 'toolCall', toolCallId: 'c1', name: 'read_file', title: 'Read src/lib.rs', status: 'pending', toolKind: 'other', input: {}, locations: [] }));
    applyUpdate(m, up({ kind: 'toolCallUpdate', toolCallId: 'c1', status: 'in_progress', output: 'a' }));
    applyUpdate(m, up({ kind: 'toolCallUpdate', toolCallId: 'c1', status: 'in_progress', output: 'b' }));
    const [t] = applyUpdate(m, up({ kind: 'toolCallUpdate', toolCallId: 'c1', status: 'completed' }));
    assert.equal(t.index, 2);
    assert.deepEqual(t.block, { type: 'tool', id: 'c1', title: 'Read src/lib.rs', toolKind: 'other', status: 'completed', output: 'ab' });
    applyUpdate(m, up({ kind: 'plan', entries: [{ content: 'a', status: 'completed' }, { content: 'b', status: 'pending' }] }));
    applyUpdate(m, up({ kind: 'warning', message: 'retrying' }));
    assert.equal(isRunning(m), true);
    applyUpdate(m, up({ kind: 'turnEnd', stopReason: 'cancelled' }));
    assert.equal(isRunning(m), false);
    assert.equal(toText(m), '## You\nhi\nHello\n- ✓ Read src/lib.rs\n- [x] a\n- [ ] b\n> ⚠ retrying\n> ℹ turn ended: cancelled');
  });
  it('shows hook runs and reminders as one line each', () => {
    const m = emptyModel('s');
    applyUpdate(m, up({ kind: 'hook', event: 'PreToolUse', command: 'sh guard.sh', outcome: 'blocked', durationMs: 12, message: 'no rm\nhere' }));
    applyUpdate(m, up({ kind: 'hook', event: 'Stop', command: 'check.sh', outcome: 'ok', durationMs: 3 }));
    applyUpdate(m, up({ kind: 'reminder', key: 'risky:eval', source: 'risky', text: 'Security: eval()\nruns code' }));
    assert.equal(
      toText(m),
      '> ⚓ PreToolUse hook `sh guard.sh`: blocked (12 ms) — no rm here\n> ⚓ Stop hook `check.sh`: ok (3 ms)\n> 🔔 reminder (risky): Security: eval() runs code',
    );
    assert.equal(m.blocks.length, 3);
  });
  it('ignores other sessions and unknown tool calls', () => {
    const m = emptyModel('s');
    assert.deepEqual(applyUpdate(m, { sessionId: 'other', turnId: 't', update: { kind: 'agentMessageChunk', text: 'x' } }), []);
    assert.deepEqual(applyUpdate(m, up({ kind: 'toolCallUpdate', toolCallId: 'nope', status: 'failed' })), []);
  });
  it('rebuilds from agent/session/load items', () => {
    const m = fromItems('s', [
      { kind: 'user', text: 'q' },
      { kind: 'assistant', text: 'a' },
      { kind: 'toolCall', toolCallId: 'c', name: 'shell', title: 'Run `ls`', toolKind: 'execute', input: {}, status: 'failed', output: 'x' },
      { kind: 'compaction', summary: '', tokensBefore: 100, tokensAfter: 30, strategy: 'summary' },
      { kind: 'error', message: 'boom' },
      { kind: 'hook', event: 'Stop', command: 'check.sh', outcome: 'blocked', durationMs: 4, message: 'tests first' },
      { kind: 'reminder', key: 'risky:eval', source: 'risky', text: 'eval( runs\ncode' },
    ]);
    assert.equal(
      toText(m),
      '## You\nq\na\n- ✗ Run `ls`\n> ℹ compacted: 100 → 30 tokens (summary)\n> ✗ boom\n> ⚓ Stop hook `check.sh`: blocked (4 ms) — tests first\n> 🔔 reminder (risky): eval( runs code',
    );
  });
  it("nests a subagent's calls under its task call and shows nothing else of it", () => {
    const m = emptyModel('s');
    applyUpdate(m, up({ kind: 'toolCall', toolCallId: 'task_1', name: 'task', title: 'explore: find x', status: 'pending', toolKind: 'other', input: {}, locations: [] }));
    const child = (update: SessionUpdate) => ({
      sessionId: 'child',
      turnId: 'ct',
      update: { ...update, parentToolCallId: 'task_1', parentSessionId: 's' },
    });
    const [c] = applyUpdate(m, child({ kind: 'toolCall', toolCallId: 'r1', name: 'read_file', title: 'Read a.rs', status: 'pending', toolKind: 'other', input: {}, locations: [] }));
    assert.equal(c.index, 0);
    applyUpdate(m, child({ kind: 'toolCallUpdate', toolCallId: 'r1', status: 'completed', output: 'text' }));
    applyUpdate(m, child({ kind: 'toolCall', toolCallId: 'g1', name: 'grep', title: 'Grep `x`', status: 'pending', toolKind: 'other', input: {}, locations: [] }));
    applyUpdate(m, child({ kind: 'toolCallUpdate', toolCallId: 'g1', status: 'failed' }));
    assert.deepEqual(applyUpdate(m, child({ kind: 'agentMessageChunk', text: 'child text' })), []);
    assert.deepEqual(applyUpdate(m, child({ kind: 'turnEnd', stopReason: 'endTurn' })), []);
    applyUpdate(m, up({ kind: 'toolCallUpdate', toolCallId: 'task_1', status: 'completed', output: 'x is in a.rs:1' }));
    assert.equal(toText(m), '- ✓ explore: find x\n    - ✓ Read a.rs\n    - ✗ Grep `x`');
    // Another session's child is not ours.
    assert.deepEqual(
      applyUpdate(m, { sessionId: 'c2', turnId: 't', update: { kind: 'toolCall', toolCallId: 'z', name: 'grep', title: 'Grep', toolKind: 'search', status: 'pending', input: {}, locations: [], parentToolCallId: 'task_1', parentSessionId: 'other' } }),
      [],
    );
  });
  it('compaction phases', () => {
    const m = emptyModel('s');
    applyUpdate(m, up({ kind: 'compaction', phase: 'started', tokensBefore: 900 }));
    applyUpdate(m, up({ kind: 'compaction', phase: 'failed', tokensBefore: 900, message: 'no' }));
    assert.equal(toText(m), '> ℹ compacting the conversation (900 tokens)…\n> ⚠ compaction failed: no');
  });
});

describe('editor state', () => {
  const p = (line: number, character: number) => ({ line, character });
  it('converts selection, visible range and diagnostics (severity 0-based → 1-based)', () => {
    const state = editorState({
      uri: 'file:///w/a.rs',
      selection: { start: p(1, 0), end: p(2, 3), active: p(2, 3), isEmpty: false },
      visibleRanges: [{ start: p(0, 0), end: p(40, 0) }],
      diagnostics: [{ range: { start: p(1, 0), end: p(1, 4) }, severity: 0, message: 'bad', source: 'rustc', code: { value: 'E0308' } }],
    });
    assert.deepEqual(state, {
      uri: 'file:///w/a.rs',
      position: p(2, 3),
      selection: { start: p(1, 0), end: p(2, 3) },
      visibleRange: { start: p(0, 0), end: p(40, 0) },
      diagnostics: [{ range: { start: p(1, 0), end: p(1, 4) }, severity: 1, message: 'bad', source: 'rustc', code: 'E0308' }],
    });
  });
  it('an empty selection is no selection', () => {
    const state = editorState({ uri: 'file:///a', selection: { start: p(0, 1), end: p(0, 1), active: p(0, 1), isEmpty: true } });
    assert.deepEqual(state, { uri: 'file:///a', position: p(0, 1) });
    assert.deepEqual([0, 1, 2, 3].map(toLspSeverity), [1, 2, 3, 4]);
  });
});

describe('settings', () => {
  it('drops empty values so the server keeps its defaults', () => {
    const values: Record<string, unknown> = {
      'provider.kind': 'openai',
      'provider.baseUrl': '',
      'provider.model': 'gpt-4o',
      'provider.contextWindow': null,
      'provider.images': true,
      'compaction.threshold': 0.8,
      'compaction.style': 'handoff',
      approval: 'auto-edit',
      serverPath: ' ',
    };
    const get = (k: string) => values[k];
    assert.deepEqual(serverSettings(get), {
      provider: { kind: 'openai', model: 'gpt-4o', images: true },
      compaction: { threshold: 0.8, style: 'handoff' },
      approval: 'auto-edit',
    });
  });
  it("starts agentls.serverPath, else the bundled binary, else agentls on PATH (rust-analyzer's order)", () => {
    const get = (k: string) => (k === 'serverPath' ? ' ' : undefined);
    assert.deepEqual(serverCommand(get), { command: 'agentls', from: 'PATH' });
    assert.deepEqual(serverCommand(() => ' /opt/agentls '), { command: '/opt/agentls', from: 'agentls.serverPath' });
    assert.deepEqual(serverCommand(() => '/opt/agentls', '/ext/bin/agentls'), {
      command: '/opt/agentls',
      from: 'agentls.serverPath',
    });
    assert.deepEqual(serverCommand(get, '/ext/bin/agentls'), { command: '/ext/bin/agentls', from: 'bundled with the extension' });
  });
});

describe('diff', () => {
  it('applies a unified diff', () => {
    const diff = '--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n pub fn answer() -> u32 {\n-    41\n+    42\n }\n';
    assert.equal(applyUnifiedDiff('pub fn answer() -> u32 {\n    41\n}\n', diff), 'pub fn answer() -> u32 {\n    42\n}\n');
  });
  it('refuses a diff whose context does not match', () => {
    assert.equal(applyUnifiedDiff('x\n', '@@ -1,1 +1,1 @@\n-y\n+z\n'), undefined);
  });
  it('creates a file from /dev/null', () => {
    assert.equal(applyUnifiedDiff('', '--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n'), 'a\nb\n');
  });
});

describe('webview html', () => {
  it('has a strict CSP with the nonce and no remote sources', () => {
    const csp = contentSecurityPolicy('vscode-webview://x', 'N0NCE');
    assert.match(csp, /^default-src 'none'/);
    assert.match(csp, /script-src 'nonce-N0NCE'/);
    assert.doesNotMatch(csp, /https?:|unsafe-inline|unsafe-eval/);
    const html = chatHtml({ cspSource: 'vscode-webview://x', scriptUri: 'vscode-webview://x/chat.js', styleUri: 'vscode-webview://x/chat.css', nonce: 'N0NCE' });
    assert.match(html, /<script nonce="N0NCE" src="vscode-webview:\/\/x\/chat.js">/);
    assert.doesNotMatch(html, /https?:\/\//);
  });
  it('validates messages from the webview', () => {
    assert.equal(isFromWebview({ type: 'send', text: 'x' }), true);
    assert.equal(isFromWebview({ type: 'send' }), false);
    assert.equal(isFromWebview({ type: 'commands' }), true);
    assert.equal(isFromWebview({ type: 'eval' }), false);
    assert.equal(isFromWebview(null), false);
  });
});

describe('a fast turn', () => {
  it('does not leave Stop showing when its turnEnd came before the prompt was answered', () => {
    const model = emptyModel('s1');
    applyUpdate(model, { sessionId: 's1', turnId: 't1', update: { kind: 'turnEnd', stopReason: 'endTurn' } });
    turnStarted(model, 't1');
    assert.equal(isRunning(model), false);
    turnStarted(model, 't2');
    assert.equal(isRunning(model), true);
  });
});

describe('turn-end notification', () => {
  const on = () => undefined;
  const off = (key: string) => (key === 'notifications.turnEnd' ? false : undefined);
  it('is shown for the chat\'s session only while the chat is out of view', () => {
    assert.equal(turnEndNotice(on, false, true, 'endTurn'), 'agentls: the agent finished its turn.');
    assert.equal(turnEndNotice(on, false, true, 'maxSteps'), 'agentls: the turn ended (maxSteps).');
    assert.equal(turnEndNotice(on, true, true, 'endTurn'), undefined, 'the chat is in view');
    assert.equal(turnEndNotice(on, false, false, 'endTurn'), undefined, 'another session');
    assert.equal(turnEndNotice(on, false, true, 'cancelled'), undefined, 'the user cancelled it');
    assert.equal(turnEndNotice(off, false, true, 'endTurn'), undefined, 'turned off');
  });
});

describe('memory and permission rules', () => {
  it('offers each memory that has a place, the workspace\'s first, with its counts', () => {
    const items = memoryPickItems({
      scopes: [
        { scope: 'user', path: '/h/.config/agentls/memory/MEMORY.md', entries: [] },
        {
          scope: 'workspace',
          path: '/s/memory/p-1.md',
          entries: [
            { author: 'model', date: '2026-11-28', text: 'a' },
            { author: 'user', date: '', text: 'b' },
          ],
        },
      ],
      offers: [],
    });
    assert.deepEqual(
      items.map((i) => [i.label, i.description, i.path]),
      [
        ["This workspace's memory", '2 entries, 1 by the model', '/s/memory/p-1.md'],
        ['Your memory (every workspace)', '0 entries', '/h/.config/agentls/memory/MEMORY.md'],
      ],
    );
    assert.deepEqual(memoryPickItems({ scopes: [{ scope: 'user', entries: [] }], offers: [] }), [], 'no home: no place');
  });

  it('offers a session\'s facts with where each comes from', () => {
    assert.deepEqual(
      offerPickItems([
        { text: 'Never push to main.', source: 'constraint' },
        { text: '`make check` works (it exited 0)', source: 'command' },
      ]).map((i) => [i.label, i.description, i.fact]),
      [
        ['Never push to main.', 'a rule you stated', 'Never push to main.'],
        ['`make check` works (it exited 0)', 'a check that worked', '`make check` works (it exited 0)'],
      ],
    );
  });

  it('lists the rules with their source, then the ignored ones', () => {
    assert.deepEqual(
      permissionPickItems({
        rules: [{ action: 'deny', rule: 'shell(git push:*)', source: 'user' }],
        problems: ['.agents/settings.json: "x" ignored'],
      }),
      [
        { label: 'deny shell(git push:*)', description: 'user' },
        { label: '$(warning) .agents/settings.json: "x" ignored', description: 'ignored' },
      ],
    );
  });
});
