// agent/editor/diagnostics: after the agent changed files, the server asks what this
// editor's language servers say about them. The answer waits until every open document
// asked for had its diagnostics change (a language server reporting on the new text), or
// settleMs passed, whichever is first; a document whose diagnostics already changed since
// its last edit (a fast language server reported before the request came) is not waited
// for. Free of `vscode` imports: the extension gives it vscode.languages through
// `DiagnosticsSource`, the tests give it data.
import type { Diagnostic, EditorDiagnosticsParams, EditorDiagnosticsResult } from './protocol';

export interface Disposable {
  dispose(): unknown;
}

/** What the answer reads from the editor. Uris are compared as `key` makes them. */
export interface DiagnosticsSource {
  /** The uri as the editor writes it (VS Code's Uri.parse(uri).toString()). */
  key(uri: string): string;
  /** The file's diagnostics in LSP's shape. */
  diagnostics(uri: string): Diagnostic[];
  /** The open document's version; undefined when the file is not open. */
  version(uri: string): number | undefined;
  /** Calls `listener` with the keys of the uris whose diagnostics changed. */
  onDidChange(listener: (keys: string[]) => void): Disposable;
}

export class DiagnosticsAnswerer implements Disposable {
  /** Key -> the document's version when its diagnostics last changed. */
  private readonly reportedAt = new Map<string, number | undefined>();
  private readonly tracking: Disposable;

  constructor(private readonly source: DiagnosticsSource) {
    this.tracking = source.onDidChange((keys) => {
      for (const key of keys) {
        this.reportedAt.set(key, source.version(key));
      }
    });
  }

  async answer(params: EditorDiagnosticsParams): Promise<EditorDiagnosticsResult> {
    const waiting = new Set<string>();
    for (const uri of params.uris) {
      const key = this.source.key(uri);
      const version = this.source.version(key);
      const fresh = this.reportedAt.has(key) && this.reportedAt.get(key) === version;
      if (version !== undefined && !fresh) {
        waiting.add(key);
      }
    }
    if (waiting.size > 0 && params.settleMs > 0) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          listening.dispose();
          resolve();
        };
        const timer = setTimeout(done, params.settleMs);
        const listening = this.source.onDidChange((keys) => {
          keys.forEach((key) => waiting.delete(key));
          if (waiting.size === 0) {
            done();
          }
        });
      });
    }
    return {
      items: params.uris.map((uri) => {
        const key = this.source.key(uri);
        const version = this.source.version(key);
        const diagnostics = this.source.diagnostics(key);
        return version === undefined ? { uri, diagnostics } : { uri, version, diagnostics };
      }),
    };
  }

  dispose(): void {
    this.tracking.dispose();
  }
}
