// agent/editor/diagnostics: the answerer's waiting (pure, with a scripted source), and the
// real client against the real agentls binary: the capability is offered, the request
// answered, and the editor's diagnostic of a file the agent changed reaches the model.
import './support/install-mock';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { createClient } from '../client';
import { type DiagnosticsSource, DiagnosticsAnswerer } from '../editorDiagnostics';
import type { Diagnostic, PermissionRequest, SessionUpdateParams } from '../protocol';
import { fakeProvider, BIN, waitFor, workspace } from './support/fixtures';
import * as vscodeMock from './support/vscode-mock';

const error = (line: number, message: string): Diagnostic => ({
  range: { start: { line, character: 4 }, end: { line, character: 6 } },
  severity: 1,
  message,
  source: 'rustc',
});

/** A source whose documents, versions and diagnostics the test sets; `report` plays a
 *  language server publishing. */
function scripted() {
  const listeners = new Set<(keys: string[]) => void>();
  const versions = new Map<string, number>();
  const diagnostics = new Map<string, Diagnostic[]>();
  const source: DiagnosticsSource = {
    key: (uri) => uri,
    diagnostics: (uri) => diagnostics.get(uri) ?? [],
    version: (uri) => versions.get(uri),
    onDidChange: (listener) => {
      listeners.add(listener);
      return { dispose: () => listeners.delete(listener) };
    },
  };
  const report = (uri: string, list: Diagnostic[]) => {
    diagnostics.set(uri, list);
    [...listeners].forEach((l) => l([uri]));
  };
  return { source, versions, report, listeners };
}

describe('editor diagnostics answerer', () => {
  it('waits for the next report on an edited document, not for a closed file', async () => {
    const s = scripted();
    const answerer = new DiagnosticsAnswerer(s.source);
    s.versions.set('file:///a.rs', 1);
    s.report('file:///a.rs', [error(0, 'stale')]);
    s.versions.set('file:///a.rs', 2); // the agent's edit
    // A settle time no test run reaches: the answer comes from the report.
    const answer = answerer.answer({ uris: ['file:///a.rs', 'file:///closed.rs'], settleMs: 600000 });
    setTimeout(() => s.report('file:///a.rs', [error(1, 'mismatched types')]), 10);
    const result = await answer;
    assert.deepEqual(result.items, [
      { uri: 'file:///a.rs', version: 2, diagnostics: [error(1, 'mismatched types')] },
      { uri: 'file:///closed.rs', diagnostics: [] },
    ]);
    // Reported since the last edit: answered at once.
    const again = await answerer.answer({ uris: ['file:///a.rs'], settleMs: 600000 });
    assert.deepEqual(again.items[0].diagnostics, [error(1, 'mismatched types')]);
    answerer.dispose();
    assert.equal(s.listeners.size, 0, 'no listener is left behind');
  });

  it('answers with what there is once settleMs passed', async () => {
    const s = scripted();
    const answerer = new DiagnosticsAnswerer(s.source);
    s.versions.set('file:///b.rs', 5);
    const result = await answerer.answer({ uris: ['file:///b.rs'], settleMs: 1 });
    assert.deepEqual(result.items, [{ uri: 'file:///b.rs', version: 5, diagnostics: [] }]);
    answerer.dispose();
  });
});

describe('editor diagnostics through the language client', () => {
  it('offers the capability, and the diagnostics of a changed file reach the model', async () => {
    const root = workspace({ 'src/lib.rs': 'pub fn answer() -> u32 {\n    41\n}\n' });
    const fake = await fakeProvider({
      replies: [
        { toolCalls: [{ id: 's1', name: 'shell', arguments: { command: "printf 'fn x() -> u32 { \"no\" }\\n' > src/new.rs" } }] },
        { text: ['Done.'] },
      ],
    });
    vscodeMock.mock.workspaceFolders = [{ uri: vscodeMock.Uri.file(root), name: path.basename(root), index: 0 }];
    const newFile = pathToFileURL(path.join(root, 'src/new.rs')).toString();
    const s = scripted();
    s.report(newFile, [error(0, 'expected `u32`, found `&str`')]);
    const answerer = new DiagnosticsAnswerer(s.source);
    const asked: unknown[] = [];
    const updates: SessionUpdateParams[] = [];
    const client = createClient({
      command: BIN,
      settings: {
        provider: { kind: 'openai', baseUrl: fake.url, model: 'fake-model', maxRetries: 0 },
        approval: 'full-auto',
        stateDir: path.join(root, '.state'),
      } as never,
      handlers: {
        onUpdate: (p) => updates.push(p),
        onStatus: () => undefined,
        onPermission: async (p: PermissionRequest) => ({ outcome: { optionId: p.options[0].optionId } }),
        onEditorDiagnostics: (p) => {
          asked.push(p);
          return answerer.answer(p);
        },
      },
    });
    try {
      await client.start();
      const { sessionId } = await client.sendRequest<{ sessionId: string }>('agent/session/new', {});
      const { turnId } = await client.sendRequest<{ turnId: string }>('agent/session/prompt', { sessionId, text: 'add a file' });
      await waitFor('turnEnd', () => updates.find((u) => u.turnId === turnId && u.update.kind === 'turnEnd'));
      assert.deepEqual(asked, [{ uris: [newFile], settleMs: 1500 }]);
      const done = updates.find((u) => u.update.kind === 'toolCallUpdate' && u.update.status === 'completed');
      const output = (done?.update as { output?: string } | undefined)?.output ?? '';
      assert.match(output, /Diagnostics the editor reports after this change:\nsrc\/new\.rs:1:5 error expected `u32`, found `&str` \[rustc\]/);
    } finally {
      await client.stop();
      answerer.dispose();
      fake.stop();
    }
  });
});
