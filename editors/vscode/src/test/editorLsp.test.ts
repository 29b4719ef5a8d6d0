// agent/editor/lsp: VS Code's provider results as LSP's JSON (pure, with VS Code-shaped
// data), the answer's errors and bounds, and the real client against the real agentls
// binary: the capability is offered, the model's call reaches the editor with the standard
// params, and the editor's answer (or its error) reaches the model.
import './support/install-mock';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { createClient } from '../client';
import { answerEditorLsp, EditorLspError, type LspSource, MAX_ITEMS, toLsp } from '../editorLsp';
import type { EditorLspParams, PermissionRequest, SessionUpdateParams } from '../protocol';
import { fakeProvider, BIN, waitFor, workspace } from './support/fixtures';
import * as vscodeMock from './support/vscode-mock';

const uri = (s: string) => ({ toString: () => s });
const r = (line: number, start: number, end: number) => ({ start: { line, character: start }, end: { line, character: end } });

describe('editor lsp: VS Code results as LSP JSON', () => {
  it('turns locations, links, hovers, symbols and workspace edits into LSP shapes', () => {
    assert.deepEqual(toLsp('textDocument/definition', [{ uri: uri('file:///a.ts'), range: r(0, 16, 22) }]), [
      { uri: 'file:///a.ts', range: r(0, 16, 22) },
    ]);
    assert.deepEqual(
      toLsp('textDocument/definition', [{ targetUri: uri('file:///b.ts'), targetRange: r(0, 0, 30), targetSelectionRange: r(0, 16, 22), originSelectionRange: r(3, 1, 7) }]),
      [{ targetUri: 'file:///b.ts', targetRange: r(0, 0, 30), targetSelectionRange: r(0, 16, 22), originSelectionRange: r(3, 1, 7) }],
    );
    assert.equal(toLsp('textDocument/references', []), null);
    assert.deepEqual(
      toLsp('textDocument/hover', [{ contents: [{ value: '```ts\nfunction answer(): number\n```' }, { language: 'ts', value: 'x' }, 'plain'], range: r(1, 2, 8) }]),
      { contents: { kind: 'markdown', value: '```ts\nfunction answer(): number\n```\n\n---\n\n```ts\nx\n```\n\n---\n\nplain' }, range: r(1, 2, 8) },
    );
    assert.equal(toLsp('textDocument/hover', [{ contents: [{ value: '' }] }]), null);
    // vscode.SymbolKind.Function is 11, LSP's 12.
    assert.deepEqual(
      toLsp('textDocument/documentSymbol', [
        { name: 'Box', kind: 4, range: r(0, 0, 40), selectionRange: r(0, 6, 9), detail: '', children: [{ name: 'open', kind: 5, range: r(1, 2, 9), selectionRange: r(1, 2, 6), children: [] }] },
      ]),
      [{ name: 'Box', kind: 5, range: r(0, 0, 40), selectionRange: r(0, 6, 9), children: [{ name: 'open', kind: 6, range: r(1, 2, 9), selectionRange: r(1, 2, 6) }] }],
    );
    assert.deepEqual(toLsp('workspace/symbol', [{ name: 'answer', kind: 11, containerName: 'lib', location: { uri: uri('file:///a.ts'), range: r(0, 16, 22) } }]), [
      { name: 'answer', kind: 12, containerName: 'lib', location: { uri: 'file:///a.ts', range: r(0, 16, 22) } },
    ]);
    const edit = {
      entries: () => [
        [uri('file:///a.ts'), [{ range: r(0, 16, 22), newText: 'reply' }]],
        [uri('file:///b.ts'), [{ range: r(2, 9, 15), newText: 'reply' }]],
      ],
    };
    assert.deepEqual(toLsp('textDocument/rename', edit), {
      changes: {
        'file:///a.ts': [{ range: r(0, 16, 22), newText: 'reply' }],
        'file:///b.ts': [{ range: r(2, 9, 15), newText: 'reply' }],
      },
    });
    const many = Array.from({ length: MAX_ITEMS + 5 }, (_, i) => ({ uri: uri('file:///a.ts'), range: r(i, 0, 1) }));
    assert.equal((toLsp('textDocument/references', many) as unknown[]).length, MAX_ITEMS);
  });
});

function source(over: Partial<LspSource>): LspSource {
  return {
    open: async () => ({ languageId: 'typescript' }),
    served: () => true,
    execute: async () => undefined,
    ...over,
  };
}

const at = (method: string, extra: object = {}): EditorLspParams => ({
  method,
  params: { textDocument: { uri: 'file:///w/a.ts' }, position: { line: 2, character: 9 }, ...extra },
});

describe('editor lsp: the answer', () => {
  it('asks the provider command with the uri, position and new name', async () => {
    const calls: unknown[][] = [];
    const s = source({
      execute: async (...args) => {
        calls.push(args);
        return { entries: () => [[uri('file:///w/a.ts'), [{ range: r(2, 9, 15), newText: 'reply' }]]] };
      },
    });
    const answer = await answerEditorLsp(s, at('textDocument/rename', { newName: 'reply' }));
    assert.deepEqual(calls, [['vscode.executeDocumentRenameProvider', 'file:///w/a.ts', { line: 2, character: 9 }, 'reply']]);
    assert.deepEqual(answer, { result: { changes: { 'file:///w/a.ts': [{ range: r(2, 9, 15), newText: 'reply' }] } } });
    const symbols: unknown[][] = [];
    await answerEditorLsp(source({ execute: async (...args) => void symbols.push(args) }), { method: 'workspace/symbol', params: { query: 'answer' } });
    assert.deepEqual(symbols, [['vscode.executeWorkspaceSymbolProvider', undefined, undefined, 'answer']]);
  });

  it('nothing found is null where a language server may serve, an error where none does', async () => {
    assert.deepEqual(await answerEditorLsp(source({ execute: async () => [] }), at('textDocument/definition')), { result: null });
    await assert.rejects(
      answerEditorLsp(source({ open: async () => ({ languageId: 'plaintext' }), execute: async () => [] }), at('textDocument/definition')),
      (e: Error) => e instanceof EditorLspError && /no language server in VS Code serves file:\/\/\/w\/a\.ts \(language plaintext\)/.test(e.message),
    );
    await assert.rejects(
      answerEditorLsp(source({ served: () => false, execute: async () => undefined }), at('textDocument/hover')),
      /no language server in VS Code serves/,
    );
  });

  it('a failing provider, an unknown method, and no answer in time are errors', async () => {
    await assert.rejects(
      answerEditorLsp(source({ execute: async () => Promise.reject(new Error('You cannot rename this element.')) }), at('textDocument/rename', { newName: 'x' })),
      /the editor's language server failed textDocument\/rename: You cannot rename this element\./,
    );
    await assert.rejects(answerEditorLsp(source({}), { method: 'textDocument/formatting', params: {} }), /unsupported method/);
    // The bound itself, made short: a provider that never answers.
    await assert.rejects(answerEditorLsp(source({ execute: () => new Promise(() => undefined) }), at('textDocument/references'), 5), /answered textDocument\/references on file:\/\/\/w\/a\.ts within 5 ms/);
  });
});

describe('editor lsp through the language client', () => {
  it("offers the capability; the model's calls reach the editor and its answers the model", async () => {
    const root = workspace({
      'src/lib.ts': 'export function answer(): number {\n  return 41;\n}\n',
      'src/main.ts': "import { answer } from './lib';\n\nconsole.log(answer());\n",
    });
    const fake = await fakeProvider({
      replies: [
        {
          toolCalls: [
            { id: 'd1', name: 'lsp', arguments: { operation: 'definition', path: 'src/main.ts', line: 3, symbol: 'answer' } },
            { id: 'h1', name: 'lsp', arguments: { operation: 'hover', path: 'src/lib.ts', line: 1, symbol: 'answer' } },
          ],
        },
        { text: ['Found.'] },
      ],
    });
    vscodeMock.mock.workspaceFolders = [{ uri: vscodeMock.Uri.file(root), name: path.basename(root), index: 0 }];
    const lib = pathToFileURL(path.join(root, 'src/lib.ts')).toString();
    const main = pathToFileURL(path.join(root, 'src/main.ts')).toString();
    const asked: EditorLspParams[] = [];
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
        onEditorLsp: (p) => {
          asked.push(p);
          // The definition as VS Code's TypeScript gives it; the hover fails.
          const s = source({
            execute: async (command) => {
              if (command === 'vscode.executeDefinitionProvider') {
                return [{ targetUri: uri(lib), targetRange: r(0, 0, 40), targetSelectionRange: r(0, 16, 22), originSelectionRange: r(2, 12, 18) }];
              }
              throw new Error('the TypeScript server crashed');
            },
          });
          return answerEditorLsp(s, p);
        },
      },
    });
    try {
      await client.start();
      const { sessionId } = await client.sendRequest<{ sessionId: string }>('agent/session/new', {});
      const { turnId } = await client.sendRequest<{ turnId: string }>('agent/session/prompt', { sessionId, text: 'where is answer?' });
      await waitFor('turnEnd', () => updates.find((u) => u.turnId === turnId && u.update.kind === 'turnEnd'));
      assert.deepEqual(
        asked.map((a) => a.method),
        ['textDocument/definition', 'textDocument/hover'],
      );
      assert.deepEqual(asked[0].params, { textDocument: { uri: main }, position: { line: 2, character: 12 } });
      const output = (id: string) =>
        updates
          .map((u) => u.update as { kind: string; toolCallId?: string; status?: string; output?: string })
          .find((u) => u.kind === 'toolCallUpdate' && u.toolCallId === id && u.status === 'completed')?.output ?? '';
      assert.match(output('d1'), /1 definition of `answer` at src\/main\.ts:3:13 \(the editor's language server\):\nsrc\/lib\.ts:1:17/);
      assert.match(output('h1'), /the editor's language servers did not answer: .*the TypeScript server crashed.*symbol index/);
      assert.ok(fs.existsSync(path.join(root, 'src/lib.ts')));
    } finally {
      await client.stop();
      fake.stop();
    }
  });
});
