// The MCP servers' state in VS Code: the real vscode-languageclient (src/client.ts) against
// the real agentls binary, a server whose command does not exist and the REAL reference
// server @modelcontextprotocol/server-everything (installed by scripts/mcp-servers into a
// cache; AGENTLS_MCP_EVERYTHING when ./test exported it); then the status bar's view and the
// `agentls.mcpStatus` list built from what the server pushed.
import './support/install-mock';
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { LanguageClient } from 'vscode-languageclient/node';
import { createClient } from '../client';
import type { ServerSettings } from '../config';
import { anyFailed, describeServer, mcpPickItems, mcpTooltipLines } from '../mcpStatus';
import { type McpStatus, Methods } from '../protocol';
import { formatStatus } from '../status';
import { BIN, type Fake, fakeProvider, waitFor, workspace } from './support/fixtures';
import * as vscodeMock from './support/vscode-mock';

function everything(): string {
  const fromEnv = process.env.AGENTLS_MCP_EVERYTHING;
  if (fromEnv) {
    return fromEnv;
  }
  const script = path.resolve(__dirname, '../../../../scripts/mcp-servers');
  const out = execFileSync(script, { encoding: 'utf8' });
  const found = /export AGENTLS_MCP_EVERYTHING=(.+)/.exec(out);
  assert.ok(found, `AGENTLS_MCP_EVERYTHING in the script's output: ${out}`);
  return found[1].trim();
}

const state = (status: McpStatus | undefined, name: string) => status?.servers.find((s) => s.name === name)?.state;

describe('MCP servers state', () => {
  let fake: Fake;
  let client: LanguageClient;
  const pushed: McpStatus[] = [];

  before(async () => {
    const root = workspace({ 'src/lib.rs': 'pub fn answer() -> u32 {\n    41\n}\n' });
    fake = await fakeProvider({ replies: [] });
    vscodeMock.mock.workspaceFolders = [{ uri: vscodeMock.Uri.file(root), name: path.basename(root), index: 0 }];
    const settings: ServerSettings & { stateDir: string; mcpServers: object } = {
      provider: { kind: 'openai', baseUrl: fake.url, model: 'fake-model', maxRetries: 0 },
      approval: 'ask',
      stateDir: path.join(root, '.state'),
      mcpServers: {
        everything: { command: everything(), args: ['stdio'] },
        missing: { command: '/nonexistent/mcp-server' },
      },
    };
    client = createClient({
      command: BIN,
      settings,
      handlers: {
        onUpdate: () => undefined,
        onStatus: () => undefined,
        onPermission: async () => ({ outcome: 'cancelled' }),
        onMcpStatus: (p) => pushed.push(p),
      },
    });
    await client.start();
  });

  after(async () => {
    await client?.stop();
    fake?.stop();
  });

  it('pushes the servers as they start: one ready with its tools, one failed with its reason', async () => {
    await client.sendRequest('agent/session/new', {});
    const settled = await waitFor(
      'everything ready and missing failed',
      () => pushed.find((s) => state(s, 'everything') === 'ready' && state(s, 'missing') === 'failed'),
    );
    assert.equal(state(pushed[0], 'everything'), 'starting', JSON.stringify(pushed[0]));
    const asked = await client.sendRequest<McpStatus>(Methods.mcpStatus, {});
    assert.deepEqual(asked, pushed[pushed.length - 1], 'the last push is the current status');
    assert.deepEqual(asked, settled);

    const ready = settled.servers.find((s) => s.name === 'everything')!;
    assert.ok(ready.tools >= 10, JSON.stringify(ready));
    const missing = settled.servers.find((s) => s.name === 'missing')!;
    assert.match(missing.message ?? '', /cannot start `\/nonexistent\/mcp-server`/);

    // The status bar: the warning look, and each server in the tooltip.
    const view = formatStatus(undefined, settled);
    assert.equal(view.warning, true);
    assert.equal(view.text, '$(hubot) $(warning)');
    const tip = view.tooltip.split('\n');
    assert.equal(tip[1], 'MCP servers (1 of 2 ready):');
    assert.equal(tip[2], `  everything: ready, ${ready.tools} tools`);
    assert.equal(tip[3], `  missing: failed: ${missing.message}`);

    // The agentls.mcpStatus list.
    const items = mcpPickItems(settled);
    assert.deepEqual(items, [
      { label: '$(check) everything', description: `ready · ${ready.tools} tools` },
      { label: '$(error) missing', description: 'failed', detail: missing.message },
    ]);
  });
});

describe('MCP status view', () => {
  const status = (servers: McpStatus['servers']): McpStatus => ({ servers });

  it('names each state, the source and the reason', () => {
    assert.equal(describeServer({ name: 'a', state: 'ready', tools: 1, source: 'settings' }), 'ready, 1 tool');
    assert.equal(describeServer({ name: 'a', state: 'starting', tools: 0, source: 'settings' }), 'starting');
    assert.equal(
      describeServer({ name: 'a', state: 'starting', tools: 0, source: 'settings', message: 'the server stopped' }),
      'starting again after: the server stopped',
    );
    assert.equal(describeServer({ name: 'a', state: 'disabled', tools: 0, source: 'settings' }), 'disabled (enabled: false)');
    assert.equal(describeServer({ name: 'a', state: 'failed', tools: 0, source: 'settings' }), 'failed: no reason given');
    assert.deepEqual(mcpTooltipLines(status([{ name: 'w', state: 'ready', tools: 2, source: 'workspace' }])), [
      'MCP servers (1 of 1 ready):',
      '  w (.mcp.json): ready, 2 tools',
    ]);
  });

  it('has no MCP part and no warning without servers or failures', () => {
    assert.deepEqual(mcpTooltipLines(undefined), []);
    assert.deepEqual(mcpTooltipLines(status([])), []);
    assert.equal(anyFailed(status([{ name: 'a', state: 'starting', tools: 0, source: 'settings' }])), false);
    const view = formatStatus(undefined, status([]));
    assert.deepEqual(view, { text: '$(hubot)', tooltip: 'agentls: no session yet', warning: false });
  });

  it('keeps the context figure and adds the warning marker when a server failed', () => {
    const view = formatStatus(
      {
        sessionId: 's',
        usedTokens: 100,
        contextWindow: 1000,
        fill: 0.1,
        estimated: false,
        state: 'idle',
        compactions: 0,
        mode: 'ask',
        sandbox: { mode: 'workspace-write', available: true, network: false, enforced: true },
      },
      status([{ name: 'x', state: 'failed', tools: 0, source: 'settings', message: 'boom' }]),
    );
    assert.equal(view.text, '$(hubot) 10% $(warning)');
    assert.match(view.tooltip, /Click to show the context breakdown\.\nMCP servers \(0 of 1 ready\):\n {2}x: failed: boom\n/);
    assert.equal(view.warning, true);
  });
});
