// The real vscode-languageclient/node (through src/client.ts, the extension's own wiring)
// against the real agentls binary and the scripted fake provider, with `vscode` stubbed.
import './support/install-mock';
import * as assert from "node:assert/strict";
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { LanguageClient } from 'vscode-languageclient/node';
import { createClient } from '../client';
import type { ServerSettings } from '../config';
import type {
  AgentStatus,
  CommandInfo,
  PermissionRequest,
  PermissionResponse,
  SandboxState,
  SessionUpdateParams,
  TranscriptItem,
} from '../protocol';
import { formatStatus } from '../status';
import { addUser, applyUpdate, emptyModel, fromItems, toText } from '../transcript';
import { BIN, type Fake, fakeProvider, waitFor, workspace } from './support/fixtures';
import * as vscodeMock from './support/vscode-mock';

describe('language client against agentls', () => {
  let fake: Fake;
  let client: LanguageClient;
  let root: string;
  const updates: SessionUpdateParams[] = [];
  const statuses: AgentStatus[] = [];
  const permissions: PermissionRequest[] = [];
  let answer: (r: PermissionRequest) => PermissionResponse = () => ({ outcome: 'cancelled' });
  /** When set, a permission request is left unanswered until the server withdraws it. */
  let holdPermissions = false;
  let withdrawals = 0;

  before(async () => {
    root = workspace({
      'src/lib.rs': 'pub fn answer() -> u32 {\n    41\n}\n',
      '.agents/commands/git/commit.md': '---\ndescription: Commit the work\nargument-hint: MESSAGE\n---\nCommit: $ARGUMENTS\n',
    });
    fake = await fakeProvider({
      replies: [
        { text: ['Hel', 'lo'], usage: [10, 2] },
        { toolCalls: [{ id: 'c1', name: 'edit_file', arguments: { path: 'src/lib.rs', old_text: '41', new_text: '42' } }] },
        { text: ['Rejected, ok.'] },
        { toolCalls: [{ id: 't1', name: 'task', arguments: { agent: 'explore', prompt: 'find answer' } }] },
        { text: ['Found by the explorer.'] },
        { toolCalls: [{ id: 's9', name: 'shell', arguments: { command: 'echo never' } }] },
      ],
      routes: {
        'read-only search subagent of agentls': [
          { toolCalls: [{ id: 'r1', name: 'read_file', arguments: { path: 'src/lib.rs' } }] },
          { text: ['answer() is in src/lib.rs:1'] },
        ],
      },
    });
    vscodeMock.mock.workspaceFolders = [{ uri: vscodeMock.Uri.file(root), name: path.basename(root), index: 0 }];
    const settings: ServerSettings & { stateDir: string } = {
      provider: { kind: 'openai', baseUrl: fake.url, model: 'fake-model', maxRetries: 0 },
      approval: 'ask',
      stateDir: path.join(root, '.state'),
    };
    client = createClient({
      command: BIN,
      settings,
      handlers: {
        onUpdate: (p) => updates.push(p),
        onStatus: (p) => statuses.push(p),
        onPermission: async (p, withdrawn) => {
          permissions.push(p);
          if (holdPermissions && withdrawn) {
            await new Promise<void>((resolve) => withdrawn.onCancellationRequested(() => resolve()));
            withdrawals += 1;
            return { outcome: 'cancelled' };
          }
          return answer(p);
        },
      },
    });
    await client.start();
  });

  after(async () => {
    await client?.stop();
    fake?.stop();
  });

  let sessionId = '';

  it('starts and negotiates', () => {
    assert.equal(client.initializeResult?.serverInfo?.name, 'agentls');
  });

  it('streams a turn: chunks, status, turnEnd', async () => {
    ({ sessionId } = await client.sendRequest<{ sessionId: string }>('agent/session/new', {}));
    assert.ok(sessionId);
    const model = emptyModel(sessionId);
    addUser(model, 'hi');
    const { turnId } = await client.sendRequest<{ turnId: string }>('agent/session/prompt', { sessionId, text: 'hi' });
    const end = await waitFor('turnEnd', () => updates.find((u) => u.turnId === turnId && u.update.kind === 'turnEnd'));
    assert.deepEqual(end.update, { kind: 'turnEnd', stopReason: 'endTurn', usage: { inputTokens: 10, outputTokens: 2 }, modelCalls: 1 });
    const chunks = updates.filter((u) => u.turnId === turnId && u.update.kind === 'agentMessageChunk').map((u) => (u.update as { text: string }).text);
    assert.deepEqual(chunks, ['Hel', 'lo']);
    for (const u of updates) {
      applyUpdate(model, u);
    }
    assert.equal(toText(model), '## You\nhi\nHello');
    const provided = await waitFor('a provider-counted status', () => statuses.find((s) => s.sessionId === sessionId && !s.estimated));
    assert.equal(provided.usedTokens, 12);
    assert.ok(provided.contextWindow > 0);
  });

  it('asks permission for an edit with its diff, and a rejection fails the tool call', async () => {
    answer = (r) => {
      const reject = r.options.find((o) => o.kind === 'rejectOnce');
      return reject ? { outcome: { optionId: reject.optionId } } : { outcome: 'cancelled' };
    };
    const { turnId } = await client.sendRequest<{ turnId: string }>('agent/session/prompt', { sessionId, text: 'make it 42' });
    await waitFor('turnEnd', () => updates.find((u) => u.turnId === turnId && u.update.kind === 'turnEnd'));
    assert.equal(permissions.length, 1);
    const call = permissions[0].toolCall;
    assert.equal(call.name, 'edit_file');
    assert.match(call.diff ?? '', /-    41\n\+    42/);
    const failed = updates.find((u) => u.turnId === turnId && u.update.kind === 'toolCallUpdate' && u.update.status === 'failed');
    assert.ok(failed, 'the rejected call is reported failed');
  });

  it('loads the session back into the same chat model', async () => {
    const loaded = await client.sendRequest<{ sessionId: string; items: TranscriptItem[] }>('agent/session/load', { sessionId });
    const text = toText(fromItems(loaded.sessionId, loaded.items));
    assert.match(text, /## You\nhi\nHello/);
    assert.match(text, /✗ .*src\/lib\.rs/);
    assert.match(text, /Rejected, ok\./);
    const list = await client.sendRequest<{ sessions: { sessionId: string; turns: number }[] }>('agent/session/list', {});
    assert.equal(list.sessions[0].sessionId, sessionId);
    assert.equal(list.sessions[0].turns, 2);
  });

  it('lists the slash commands for the `/` suggestions', async () => {
    const { commands } = await client.sendRequest<{ commands: CommandInfo[] }>('agent/session/commands', { sessionId });
    assert.deepEqual(
      commands.map((c) => `${c.name}:${c.source}`),
      ['compact:builtin', 'new:builtin', 'context:builtin', 'model:builtin', 'remember:builtin', 'review:builtin', 'help:builtin', 'git:commit:workspace'],
    );
    const commit = commands.find((c) => c.name === 'git:commit');
    assert.equal(commit?.argumentHint, 'MESSAGE');
    assert.equal(commit?.description, 'Commit the work');
  });

  it("nests a subagent's tool calls under its task call", async () => {
    const model = emptyModel(sessionId);
    const seen = updates.length;
    const { turnId } = await client.sendRequest<{ turnId: string }>('agent/session/prompt', { sessionId, text: 'where is answer?' });
    await waitFor('turnEnd', () => updates.find((u) => u.turnId === turnId && u.update.kind === 'turnEnd'));
    for (const u of updates.slice(seen)) {
      applyUpdate(model, u);
    }
    assert.equal(toText(model), '- ✓ explore: find answer\n    - ✓ Read src/lib.rs\nFound by the explorer.');
    assert.ok(updates.slice(seen).some((u) => u.sessionId !== sessionId && u.update.parentToolCallId === 't1'));
  });

  it('setMode plan: the status carries the mode and its read-only sandbox, and the status bar shows them', async () => {
    const settings = await client.sendRequest<SandboxState>('agent/sandbox/status', {});
    assert.equal(settings.mode, 'workspace-write');
    const answer = await client.sendRequest<{ mode: string }>('agent/session/setMode', { sessionId, mode: 'plan' });
    assert.equal(answer.mode, 'plan');
    const planning = await waitFor('a status in plan mode', () => statuses.find((s) => s.sessionId === sessionId && s.mode === 'plan'));
    assert.equal(planning.sandbox.mode, 'read-only');
    const view = formatStatus(planning, undefined, settings);
    assert.match(view.text, / · plan$/);
    assert.match(view.tooltip, /mode: plan · sandbox: read-only/);
    await client.sendRequest('agent/session/setMode', { sessionId, mode: 'auto-edit' });
    const after = await waitFor('a status in auto-edit', () => statuses.find((s) => s.sessionId === sessionId && s.mode === 'auto-edit'));
    assert.equal(after.sandbox.mode, 'workspace-write');
  });

  it('a permission request the server stops waiting for (a cancel) is withdrawn: the handler hears of it', async () => {
    holdPermissions = true;
    const asked = permissions.length;
    const { turnId } = await client.sendRequest<{ turnId: string }>('agent/session/prompt', { sessionId, text: 'run it' });
    await waitFor('the permission request', () => permissions.length > asked || undefined);
    await client.sendRequest('agent/session/cancel', { sessionId });
    const end = await waitFor('turnEnd', () => updates.find((u) => u.turnId === turnId && u.update.kind === 'turnEnd'));
    assert.equal(end.update.kind === 'turnEnd' && end.update.stopReason, 'cancelled');
    await waitFor('the withdrawal ($/cancelRequest)', () => withdrawals > 0 || undefined);
    holdPermissions = false;
  });
});
