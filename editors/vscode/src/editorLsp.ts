// agent/editor/lsp: the server's `lsp` tool asks this editor's own language servers one
// standard request {method, params}; the answer is {result}, the standard result. VS Code
// answers through its provider commands (vscode.executeDefinitionProvider, …), whose
// results (VS Code's classes) are turned into LSP's JSON here. Positions need no
// conversion: VS Code counts UTF-16 units, and UTF-16 is what vscode-languageclient
// negotiates with agentls. Bounded in time (TIMEOUT_MS for the whole request, below the
// server's 20 s) and size (MAX_ITEMS per list). A file no language server serves (plain
// text, or a language no extension activates on) with an empty answer, a failing
// provider, or no answer in time, is an error whose message says so. A rename's
// WorkspaceEdit is only returned: agentls applies it after the user's approval.
// Free of `vscode` imports: the extension gives it the commands through `LspSource`.
import type { EditorLspParams, EditorLspResult, Position, Range } from './protocol';

export const TIMEOUT_MS = 10_000;
export const MAX_ITEMS = 1000;

// The shapes of VS Code's results, structurally (its classes fit them).
interface UriLike {
  toString(): string;
}
interface PositionLike {
  line: number;
  character: number;
}
interface RangeLike {
  start: PositionLike;
  end: PositionLike;
}
interface LocationLike {
  uri: UriLike;
  range: RangeLike;
}
interface LocationLinkLike {
  targetUri: UriLike;
  targetRange: RangeLike;
  targetSelectionRange?: RangeLike;
  originSelectionRange?: RangeLike;
}
type MarkedLike = string | { value: string; language?: string };
interface HoverLike {
  contents: MarkedLike[];
  range?: RangeLike;
}
interface SymbolLike {
  name: string;
  /** vscode.SymbolKind counts from 0 (File); LSP's from 1. */
  kind: number;
  tags?: readonly number[];
  detail?: string;
  containerName?: string;
  range?: RangeLike;
  selectionRange?: RangeLike;
  children?: SymbolLike[];
  location?: LocationLike;
}
interface TextEditLike {
  range: RangeLike;
  newText: string;
}
interface WorkspaceEditLike {
  entries(): [UriLike, TextEditLike[]][];
}

/** What the answer asks of the editor. */
export interface LspSource {
  /** Opens the document (so that its language's extensions activate); its languageId. */
  open(uri: string): Promise<{ languageId: string }>;
  /** Whether some extension (not agentls) may serve the language: an empty answer for a
   *  language none serves is an error, not "nothing found". */
  served(languageId: string): boolean;
  /** vscode.commands.executeCommand with the uri and position made VS Code's. */
  execute(command: string, uri: string | undefined, position: Position | undefined, extra?: unknown): Promise<unknown>;
}

/** An answer that is a JSON-RPC error; its message reaches the model. */
export class EditorLspError extends Error {}

export const COMMANDS: Record<string, string> = {
  'textDocument/definition': 'vscode.executeDefinitionProvider',
  'textDocument/references': 'vscode.executeReferenceProvider',
  'textDocument/hover': 'vscode.executeHoverProvider',
  'textDocument/documentSymbol': 'vscode.executeDocumentSymbolProvider',
  'workspace/symbol': 'vscode.executeWorkspaceSymbolProvider',
  'textDocument/rename': 'vscode.executeDocumentRenameProvider',
};

function position(p: PositionLike): Position {
  return { line: p.line, character: p.character };
}

function range(r: RangeLike): Range {
  return { start: position(r.start), end: position(r.end) };
}

function cut<T>(list: readonly T[]): T[] {
  return list.slice(0, MAX_ITEMS);
}

/** Location or LocationLink, as LSP writes them. */
export function toLocation(item: LocationLike | LocationLinkLike): unknown {
  if ('targetUri' in item) {
    const link: Record<string, unknown> = {
      targetUri: item.targetUri.toString(),
      targetRange: range(item.targetRange),
      targetSelectionRange: range(item.targetSelectionRange ?? item.targetRange),
    };
    if (item.originSelectionRange) {
      link.originSelectionRange = range(item.originSelectionRange);
    }
    return link;
  }
  return { uri: item.uri.toString(), range: range(item.range) };
}

/** VS Code's hovers (one per provider) as one LSP Hover with markdown content. */
export function toHover(hovers: readonly HoverLike[]): unknown {
  const parts: string[] = [];
  for (const hover of hovers) {
    for (const content of hover.contents) {
      if (typeof content === 'string') {
        parts.push(content);
      } else if (content.language !== undefined) {
        parts.push('```' + content.language + '\n' + content.value + '\n```');
      } else {
        parts.push(content.value);
      }
    }
  }
  const value = parts.filter((p) => p.trim() !== '').join('\n\n---\n\n');
  if (value === '') {
    return null;
  }
  const out: Record<string, unknown> = { contents: { kind: 'markdown', value } };
  const first = hovers.find((h) => h.range);
  if (first?.range) {
    out.range = range(first.range);
  }
  return out;
}

function symbolBase(s: SymbolLike): Record<string, unknown> {
  const out: Record<string, unknown> = { name: s.name, kind: s.kind + 1 };
  if (s.tags && s.tags.length > 0) {
    out.tags = [...s.tags];
  }
  return out;
}

/** A DocumentSymbol (with children) when VS Code has one, else a SymbolInformation. */
export function toSymbol(s: SymbolLike): unknown {
  if (s.range && s.selectionRange && Array.isArray(s.children)) {
    const out = symbolBase(s);
    if (s.detail) {
      out.detail = s.detail;
    }
    out.range = range(s.range);
    out.selectionRange = range(s.selectionRange);
    if (s.children.length > 0) {
      out.children = cut(s.children).map(toSymbol);
    }
    return out;
  }
  const out = symbolBase(s);
  if (s.containerName) {
    out.containerName = s.containerName;
  }
  if (s.location) {
    out.location = toLocation(s.location);
  }
  return out;
}

/** A WorkspaceEdit as `{changes: {uri: TextEdit[]}}`. */
export function toWorkspaceEdit(edit: WorkspaceEditLike): unknown {
  const changes: Record<string, unknown[]> = {};
  for (const [uri, edits] of edit.entries()) {
    const key = uri.toString();
    changes[key] = [...(changes[key] ?? []), ...cut(edits).map((e) => ({ range: range(e.range), newText: e.newText }))];
  }
  return Object.keys(changes).length > 0 ? { changes } : null;
}

/** VS Code's result of `method`'s command in LSP's JSON; null for nothing found. */
export function toLsp(method: string, value: unknown): unknown {
  if (value === undefined || value === null) {
    return null;
  }
  switch (method) {
    case 'textDocument/hover':
      return toHover(value as HoverLike[]);
    case 'textDocument/rename':
      return toWorkspaceEdit(value as WorkspaceEditLike);
    case 'textDocument/documentSymbol':
    case 'workspace/symbol': {
      const list = cut(value as SymbolLike[]).map(toSymbol);
      return list.length > 0 ? list : null;
    }
    default: {
      const list = cut(Array.isArray(value) ? value : [value]).map((l) => toLocation(l as LocationLike | LocationLinkLike));
      return list.length > 0 ? list : null;
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new EditorLspError(`no language server in VS Code answered ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

interface Params {
  textDocument?: { uri?: string };
  position?: Position;
  query?: string;
  newName?: string;
}

/** The answer to agent/editor/lsp; throws EditorLspError for an error answer. */
export async function answerEditorLsp(source: LspSource, request: EditorLspParams, timeoutMs = TIMEOUT_MS): Promise<EditorLspResult> {
  const command = COMMANDS[request.method];
  if (!command) {
    throw new EditorLspError(`agentls: unsupported method ${request.method}`);
  }
  const params = (request.params ?? {}) as Params;
  const uri = params.textDocument?.uri;
  const what = uri ? `${request.method} on ${uri}` : request.method;
  const work = async (): Promise<unknown> => {
    if (request.method === 'workspace/symbol') {
      return toLsp(request.method, await source.execute(command, undefined, undefined, params.query ?? ''));
    }
    if (!uri) {
      throw new EditorLspError(`agentls: ${request.method} without textDocument.uri`);
    }
    let languageId: string;
    try {
      ({ languageId } = await source.open(uri));
    } catch (error) {
      throw new EditorLspError(`cannot open ${uri}: ${describe(error)}`);
    }
    let value: unknown;
    try {
      value = await source.execute(command, uri, params.position, request.method === 'textDocument/rename' ? params.newName : undefined);
    } catch (error) {
      throw new EditorLspError(`the editor's language server failed ${request.method}: ${describe(error)}`);
    }
    const result = toLsp(request.method, value);
    if (result === null && (languageId === 'plaintext' || !source.served(languageId))) {
      throw new EditorLspError(`no language server in VS Code serves ${uri} (language ${languageId})`);
    }
    return result;
  };
  return { result: await withTimeout(work(), timeoutMs, what) };
}
