// The chat's WebviewView. Holds no transcript itself: the Agent's ChatModel is the truth,
// and every time VS Code (re)creates the view (after it was hidden and disposed) the view
// asks for it with `ready` and gets it back whole.
import * as vscode from 'vscode';
import { chatHtml, makeNonce } from './html';
import { type FromWebview, type ToWebview, isFromWebview } from './messages';

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  public static readonly viewType = 'agentls.chat';
  private view: vscode.WebviewView | undefined;
  /** Whether the view's script has said `ready` (it drops messages posted before). */
  private ready = false;
  /** A prefill posted while the view did not exist or was not ready: sent on `ready`. */
  private pendingPrefill: ToWebview | undefined;
  private readonly emitter = new vscode.EventEmitter<FromWebview>();
  /** Messages from the webview (already validated). */
  public readonly onMessage = this.emitter.event;
  private readonly disposables: vscode.Disposable[] = [this.emitter];

  constructor(private readonly extensionUri: vscode.Uri) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = chatHtml({
      cspSource: view.webview.cspSource,
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.js')).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.css')).toString(),
      nonce: makeNonce(),
    });
    this.disposables.push(
      view.webview.onDidReceiveMessage((message: unknown) => {
        if (isFromWebview(message)) {
          if (message.type === 'ready' && this.view === view) {
            this.ready = true;
            const prefill = this.pendingPrefill;
            this.pendingPrefill = undefined;
            if (prefill) {
              void view.webview.postMessage(prefill);
            }
          }
          this.emitter.fire(message);
        }
      }),
      view.onDidDispose(() => {
        if (this.view === view) {
          this.view = undefined;
          this.ready = false;
        }
      }),
    );
  }

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  /** Posts to the webview when it exists; when it does not, `ready` will resend state
   *  (the transcript from the Agent, a pending prefill from here). */
  post(message: ToWebview): void {
    if (message.type === 'prefill' && (!this.view || !this.ready)) {
      // The first "ask about selection" creates the view: keep the prefill for its `ready`.
      this.pendingPrefill = message;
      return;
    }
    void this.view?.webview.postMessage(message);
  }

  async reveal(): Promise<void> {
    if (this.view) {
      this.view.show(false);
    } else {
      // The `<viewId>.focus` command VS Code generates for every view resolves it.
      await vscode.commands.executeCommand(`${ChatViewProvider.viewType}.focus`);
    }
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
