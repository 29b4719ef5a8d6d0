// A stand-in for the `vscode` module, enough for vscode-languageclient/node to start,
// sync documents and route notifications and requests in plain Node (the way Cline and
// Continue unit-test their clients). Anything the client only registers (providers,
// commands, watchers) is accepted and ignored.
import * as path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';

type Listener<T> = (e: T) => unknown;

export class Disposable {
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
  constructor(private readonly fn: () => unknown = () => undefined) {}
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) {
      l(e);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class CancellationError extends Error {}

export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  readonly token = { isCancellationRequested: false, onCancellationRequested: this.emitter.event };
  cancel(): void {
    this.token.isCancellationRequested = true;
    this.emitter.fire();
  }
  dispose(): void {
    this.emitter.dispose();
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly authority: string,
    readonly path: string,
  ) {}
  static file(p: string): Uri {
    return new Uri('file', '', path.resolve(p));
  }
  static parse(value: string): Uri {
    const url = new URL(value);
    return url.protocol === 'file:' ? Uri.file(fileURLToPath(url)) : new Uri(url.protocol.slice(0, -1), url.host, decodeURIComponent(url.pathname));
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return this.scheme === 'file' ? pathToFileURL(this.path).toString() : `${this.scheme}://${this.authority}${this.path}`;
  }
  toJSON(): string {
    return this.toString();
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
}

export class Diagnostic {
  constructor(
    readonly range: Range,
    readonly message: string,
    readonly severity?: number,
  ) {}
}

export class CodeAction {
  constructor(
    readonly title: string,
    readonly kind?: unknown,
  ) {}
}

export const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 };
export const NotebookCellKind = { Markup: 1, Code: 2 };
export class TabInputText {}
export class TabInputTextDiff {}
export class TabInputCustom {}

export const version = '1.90.0';

const noop = (): Disposable => new Disposable();

/** An object whose every property is a function returning a Disposable. */
function registrar<T extends object>(known: T): T {
  return new Proxy(known, {
    get(target, prop) {
      if (prop in target) {
        return (target as Record<string | symbol, unknown>)[prop];
      }
      return noop;
    },
  });
}

/** What the tests inspect or drive. */
export const mock = {
  log: [] as string[],
  workspaceFolders: [] as { uri: Uri; name: string; index: number }[],
  didOpen: new EventEmitter<unknown>(),
};

function outputChannel(name: string) {
  return {
    name,
    append: (s: string) => mock.log.push(s),
    appendLine: (s: string) => mock.log.push(s),
    replace: () => undefined,
    clear: () => undefined,
    show: () => undefined,
    hide: () => undefined,
    dispose: () => undefined,
  };
}

export const window = registrar({
  activeTextEditor: undefined,
  visibleTextEditors: [],
  createOutputChannel: outputChannel,
  showErrorMessage: async (m: string) => void mock.log.push(`error: ${m}`),
  showWarningMessage: async (m: string) => void mock.log.push(`warning: ${m}`),
  showInformationMessage: async (m: string) => void mock.log.push(`info: ${m}`),
  withProgress: async <R>(_o: unknown, task: (p: { report(): void }, t: unknown) => Promise<R>) =>
    task({ report: () => undefined }, new CancellationTokenSource().token),
  tabGroups: { all: [], onDidChangeTabs: noop, onDidChangeTabGroups: noop },
});

export const workspace = registrar({
  get workspaceFolders() {
    return mock.workspaceFolders;
  },
  textDocuments: [],
  notebookDocuments: [],
  onDidOpenTextDocument: mock.didOpen.event,
  getConfiguration: () => ({ get: <T>(_key: string, dflt?: T) => dflt, has: () => false, inspect: () => undefined, update: async () => undefined }),
  getWorkspaceFolder: () => undefined,
  createFileSystemWatcher: () => ({ onDidCreate: noop, onDidChange: noop, onDidDelete: noop, dispose: () => undefined }),
  applyEdit: async () => false,
});

export const languages = registrar({
  match: () => 10,
  createDiagnosticCollection: () => ({ set: () => undefined, delete: () => undefined, clear: () => undefined, dispose: () => undefined }),
  getDiagnostics: () => [],
});

export const commands = registrar({ executeCommand: async () => undefined });

export const env = { appName: 'mock', language: 'en', machineId: 'mock', openExternal: async () => false, clipboard: { writeText: async () => undefined } };

// Base classes vscode-languageclient extends at load time; never instantiated here.
export class CallHierarchyItem {}
export class CodeLens {}
export class CompletionItem {}
export class DocumentLink {}
export class InlayHint {}
export class SymbolInformation {}
export class TypeHierarchyItem {}

export class CodeActionKind {
  static readonly Empty = new CodeActionKind('');
  static readonly QuickFix = new CodeActionKind('quickfix');
  static readonly Refactor = new CodeActionKind('refactor');
  static readonly RefactorExtract = new CodeActionKind('refactor.extract');
  static readonly RefactorInline = new CodeActionKind('refactor.inline');
  static readonly RefactorRewrite = new CodeActionKind('refactor.rewrite');
  static readonly Source = new CodeActionKind('source');
  static readonly SourceOrganizeImports = new CodeActionKind('source.organizeImports');
  constructor(readonly value: string) {}
  append(part: string): CodeActionKind {
    return new CodeActionKind(this.value ? `${this.value}.${part}` : part);
  }
}

export const DiagnosticSeverity = { Error: 0, Warning: 1, Information: 2, Hint: 3 };
export const DiagnosticTag = { Unnecessary: 1, Deprecated: 2 };
export const CompletionItemTag = { Deprecated: 1 };
export const CompletionItemKind = { Text: 0 };
export const SymbolTag = { Deprecated: 1 };
export const SymbolKind = { Property: 6, TypeParameter: 25 };
export const DocumentHighlightKind = { Text: 0, Read: 1, Write: 2 };
export const FoldingRangeKind = { Comment: 1, Imports: 2, Region: 3 };
export const CodeActionTriggerKind = { Invoke: 1, Automatic: 2 };
export const CompletionTriggerKind = { Invoke: 0, TriggerCharacter: 1, TriggerForIncompleteCompletions: 2 };
export const SignatureHelpTriggerKind = { Invoke: 1, TriggerCharacter: 2, ContentChange: 3 };
export const TextDocumentSaveReason = { Manual: 1, AfterDelay: 2, FocusOut: 3 };
