// agentls for VS Code: starts the agentls language server, shows its agent sessions in a
// chat view, its context fill in the status bar, and asks the user about its edits and
// commands. The server does the work (context, tools, compaction); the extension shows it
// and sends what the editor knows (documents through LSP, the editor state with prompts).
import * as vscode from 'vscode';
import { DidChangeConfigurationNotification, type LanguageClient } from 'vscode-languageclient/node';
import { ChatViewProvider } from './chat/chatView';
import { makeNonce } from './chat/html';
import type { FromWebview } from './chat/messages';
import type { PromptImage } from './chat/images';
import { createClient } from './client';
import { type ServerCommand, serverCommand, serverSettings, turnEndNotice } from './config';
import { applyUnifiedDiff } from './diff';
import { compactionsOf, contextHtml, contextLayout } from './contextBar';
import { DiagnosticsAnswerer } from './editorDiagnostics';
import { answerEditorLsp, type LspSource } from './editorLsp';
import { editorState, toLspDiagnostic } from './editorState';
import {
  type AgentStatus,
  type ChangedFile,
  type ClientRequests,
  type Diagnostic,
  type EditorState,
  type McpStatus,
  Methods,
  type PermissionRequest,
  type PermissionResponse,
  type Range,
  type SandboxState,
  type SessionUpdateParams,
  type SessionWorktree,
} from './protocol';
import { mcpPickItems, NO_SERVERS } from './mcpStatus';
import { memoryPickItems, offerPickItems, permissionPickItems } from './memory';
import { modePickItems } from './mode';
import { fileActions, fileItem, hunkItem, revertMessages, revertRequest, textBefore, turnItems } from './reviewChanges';
import { checkpointItem, checkpointOf, choices, planLines, RESTORES, type Restore, summary } from './rewind';
import { formatStatus, thousands } from './status';
import { addUser, applyUpdate, type ChatModel, emptyModel, fromItems, isRunning, sendKind, steeringSent, turnStarted, withdrawUser } from './transcript';
import { applySummary, conflictItem, startedMessage, type Worktrees, worktreeLabel } from './worktree';

const SESSION_KEY = 'agentls.sessionId';
/** The sessions that work apart (`Worktrees`), as agent/session/new answered. */
const WORKTREES_KEY = 'agentls.worktrees';
const SCHEME = 'agentls';

/** Read-only documents the extension shows: proposed edits, diffs, the context report. */
class VirtualDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private counter = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '';
  }

  /** A new document named `name` (its extension picks the language). */
  add(name: string, text: string): vscode.Uri {
    const path = `/${++this.counter}/${name}`;
    this.texts.set(path, text);
    return vscode.Uri.from({ scheme: SCHEME, path });
  }

  remove(uri: vscode.Uri): void {
    this.texts.delete(uri.path);
  }
}

function settingGetter(): (key: string) => unknown {
  const config = vscode.workspace.getConfiguration('agentls');
  return (key) => config.get(key);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

class Agent implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private model: ChatModel;
  private status: AgentStatus | undefined;
  /** The MCP servers' state, as the server last pushed it. */
  private mcp: McpStatus | undefined;
  /** The settings' sandbox (agent/sandbox/status), shown until a status gives the session's. */
  private sandbox: SandboxState | undefined;
  /** The editor state a code action or "ask about selection" attached to the next prompt. */
  private pending: EditorState | undefined;
  /** The last text editor: focusing the chat must not lose what the user was looking at. */
  private lastEditor: vscode.TextEditor | undefined = vscode.window.activeTextEditor;
  private restored = false;
  private readonly statusItem: vscode.StatusBarItem;
  private readonly output: vscode.OutputChannel;
  private readonly docs = new VirtualDocuments();
  private contextPanel: vscode.WebviewPanel | undefined;
  private readonly chat: ChatViewProvider;
  private readonly disposables: vscode.Disposable[] = [];
  /** Answers agent/editor/diagnostics from vscode.languages. */
  private readonly diagnostics = new DiagnosticsAnswerer({
    key: (uri) => vscode.Uri.parse(uri).toString(),
    diagnostics: (uri) => vscode.languages.getDiagnostics(vscode.Uri.parse(uri)).map(toLspDiagnostic),
    version: (uri) => vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri)?.version,
    onDidChange: (listener) => vscode.languages.onDidChangeDiagnostics((e) => listener(e.uris.map((u) => u.toString()))),
  });

  constructor(private readonly context: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('agentls');
    this.chat = new ChatViewProvider(context.extensionUri);
    this.model = emptyModel(context.workspaceState.get<string>(SESSION_KEY));
    this.statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
    this.statusItem.command = 'agentls.showContext';
    this.renderStatus();
    this.statusItem.show();
    this.disposables.push(
      this.diagnostics,
      this.output,
      this.chat,
      this.statusItem,
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, this.docs),
      vscode.window.registerWebviewViewProvider(ChatViewProvider.viewType, this.chat),
      this.chat.onMessage((m) => void this.onWebview(m)),
      vscode.window.onDidChangeActiveTextEditor((e) => {
        if (e && e.document.uri.scheme === 'file') {
          this.lastEditor = e;
        }
      }),
      vscode.workspace.onDidChangeConfiguration((e) => void this.onConfiguration(e)),
    );
    const commands: Record<string, (...args: unknown[]) => unknown> = {
      'agentls.openChat': () => this.chat.reveal(),
      'agentls.newSession': () => this.newSession(),
      'agentls.newWorktreeSession': () => this.newSession(true),
      'agentls.applyWorktree': () => this.applyWorktree(),
      'agentls.sessions': () => this.pickSession(),
      'agentls.compact': () => this.compact(),
      'agentls.cancel': () => this.cancel(),
      'agentls.showContext': () => this.showContext(),
      'agentls.mcpStatus': () => this.showMcpStatus(),
      'agentls.openMemory': () => this.openMemory(),
      'agentls.keepFacts': () => this.keepFacts(),
      'agentls.permissions': () => this.showPermissions(),
      'agentls.setMode': (...args) => this.setMode(args[0]),
      'agentls.rewind': () => this.pickCheckpoint('rewind'),
      'agentls.fork': () => this.pickCheckpoint('fork'),
      'agentls.reviewChanges': (...args) => this.reviewChanges(typeof args[0] === 'string' ? args[0] : undefined),
      'agentls.askAboutSelection': (...args) => this.askAboutSelection(args[0], args[1]),
      'agentls.fixDiagnostic': (...args) => this.fixDiagnostic(args[0], args[1]),
      'agentls.review.fix': (...args) => this.fixFinding(args[0], args[1], args[2]),
    };
    for (const [id, run] of Object.entries(commands)) {
      this.disposables.push(
        vscode.commands.registerCommand(id, async (...args: unknown[]) => {
          try {
            await run(...args);
          } catch (error) {
            void vscode.window.showErrorMessage(`agentls: ${describe(error)}`);
          }
        }),
      );
    }
  }

  /** The agentls binary to start (see `serverCommand`). The bundled one keeps its
   *  executable bit without a chmod: vsce stores each file's mode in the .vsix and VS Code
   *  restores it on install (scripts/vscode-e2e installs the .vsix and runs that binary). */
  private command(): ServerCommand {
    const bundled = vscode.Uri.joinPath(this.context.extensionUri, 'bin', 'agentls').fsPath;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const exists = (require('node:fs') as typeof import('node:fs')).existsSync(bundled);
    return serverCommand(settingGetter(), exists ? bundled : undefined);
  }

  /** Restarts after a serverPath change, chained. */
  private restarting: Promise<void> = Promise.resolve();
  /** The last start; a restore waits for it (the webview can be ready before the server). */
  private started: Promise<void> = Promise.resolve();

  start(): Promise<void> {
    this.started = this.startClient();
    return this.started;
  }

  private async startClient(): Promise<void> {
    const get = settingGetter();
    const server = this.command();
    this.output.appendLine(`starting ${server.command} (${server.from})`);
    const client = createClient({
      command: server.command,
      settings: serverSettings(get),
      outputChannel: this.output,
      handlers: {
        onUpdate: (p) => this.onUpdate(p),
        onStatus: (p) => this.onStatus(p),
        onPermission: (p, withdrawn) => this.onPermission(p, withdrawn),
        onMcpStatus: (p) => this.onMcpStatus(p),
        onEditorDiagnostics: (p) => this.diagnostics.answer(p),
        onEditorLsp: (p) => answerEditorLsp(editorLspSource(this.context.extension.id), p),
      },
    });
    this.client = client;
    try {
      await client.start();
      void this.fetchSandbox();
    } catch (error) {
      this.client = undefined;
      const open = 'Open Settings';
      // Not awaited: activation must not wait for the user to dismiss the message.
      void vscode.window
        .showErrorMessage(
          `agentls could not start \`${server.command}\`: ${describe(error)}. Install agentls or set agentls.serverPath.`,
          open,
        )
        .then((choice) =>
          choice === open ? vscode.commands.executeCommand('workbench.action.openSettings', 'agentls.serverPath') : undefined,
        );
    }
  }

  /** A custom request, its params and result typed by its method (protocol.generated.ts). */
  private async request<M extends keyof ClientRequests>(
    method: M,
    params: ClientRequests[M]['params'],
  ): Promise<ClientRequests[M]['result']> {
    if (!this.client || !this.client.isRunning()) {
      throw new Error('the agentls server is not running (see the agentls output channel)');
    }
    return this.client.sendRequest<ClientRequests[M]['result']>(method, params);
  }

  // ---- configuration ----

  private async onConfiguration(e: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!e.affectsConfiguration('agentls')) {
      return;
    }
    if (e.affectsConfiguration('agentls.serverPath')) {
      // A different binary needs a new process; the session survives (it is on disk).
      // Restarts run one after another, so two quick changes never leave two servers.
      this.restarting = this.restarting.then(async () => {
        await this.client?.stop().catch(() => undefined);
        this.client = undefined;
        this.mcp = undefined;
        this.renderStatus();
        this.model.running = [];
        this.chat.post({ type: 'running', running: false });
        await this.start();
      });
      await this.restarting;
      return;
    }
    if (this.client?.isRunning()) {
      await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: serverSettings(settingGetter()) });
    }
  }

  // ---- chat ----

  private post(changes: ReturnType<typeof applyUpdate>): void {
    if (changes.length > 0) {
      this.chat.post({ type: 'blocks', changes, running: isRunning(this.model) });
    }
  }

  private resetView(): void {
    this.chat.post({ type: 'reset', blocks: this.model.blocks, running: isRunning(this.model) });
    this.postLive();
    this.chat.post({ type: 'worktree', label: worktreeLabel(this.worktree()) });
    this.renderStatus();
  }

  /** Keeps where session `sessionId` works (agent/session/new's or load's `worktree`). */
  private async rememberWorktree(sessionId: string, worktree: SessionWorktree | undefined): Promise<void> {
    const known = this.context.workspaceState.get<Worktrees>(WORKTREES_KEY, {});
    if (worktree || known[sessionId]) {
      const next: Worktrees = { ...known };
      delete next[sessionId];
      if (worktree) {
        next[sessionId] = worktree;
      }
      await this.context.workspaceState.update(WORKTREES_KEY, next);
    }
  }

  /** The worktree of the chat's session when it works apart (as this workspace learnt it). */
  private worktree(sessionId = this.model.sessionId): SessionWorktree | undefined {
    return sessionId ? this.context.workspaceState.get<Worktrees>(WORKTREES_KEY, {})[sessionId] : undefined;
  }

  /** The queue and the background commands, for the panel above the input. */
  private postLive(): void {
    this.chat.post({ type: 'live', queue: this.model.queue, background: this.model.background });
  }

  private onUpdate(params: SessionUpdateParams): void {
    const wasRunning = isRunning(this.model);
    this.post(applyUpdate(this.model, params));
    const kind = params.update.kind;
    if ((kind === 'queue' || kind === 'background') && params.sessionId === this.model.sessionId) {
      this.postLive();
    }
    if (wasRunning !== isRunning(this.model)) {
      this.chat.post({ type: 'running', running: isRunning(this.model) });
    }
    if (params.update.kind === 'turnEnd') {
      const get = (key: string) => vscode.workspace.getConfiguration('agentls').get(key);
      const notice = turnEndNotice(get, this.chat.visible, params.sessionId === this.model.sessionId, params.update.stopReason);
      if (notice) {
        void vscode.window.showInformationMessage(notice, 'Show chat').then((pick) => {
          if (pick) {
            void this.chat.reveal();
          }
        });
      }
    }
  }

  private async onWebview(message: FromWebview): Promise<void> {
    try {
      switch (message.type) {
        case 'ready':
          await this.restore();
          this.resetView();
          break;
        case 'send':
          await this.send(message.text, message.how, message.images ?? []);
          break;
        case 'unqueue':
          if (this.model.sessionId) {
            await this.request(Methods.sessionUnqueue, { sessionId: this.model.sessionId, id: message.id });
          }
          break;
        case 'killBackground':
          if (this.model.sessionId) {
            await this.request(Methods.sessionKillBackground, { sessionId: this.model.sessionId, id: message.id });
          }
          break;
        case 'cancel':
          await this.cancel();
          break;
        case 'newSession':
          await this.newSession();
          break;
        case 'sessions':
          await this.pickSession();
          break;
        case 'clearContext':
          this.pending = undefined;
          break;
        case 'copy':
          await vscode.env.clipboard.writeText(message.text);
          break;
        case 'applyWorktree':
          await this.applyWorktree();
          break;
        case 'review': {
          // "Review from here": the changes of this message's turn and the ones after it.
          const sessionId = await this.session();
          const block = this.model.blocks[message.index];
          let turnId = block?.type === 'user' ? block.turnId : undefined;
          if (!turnId && block?.type === 'user' && block.checkpointId) {
            const { checkpoints } = await this.request(Methods.sessionCheckpoints, { sessionId });
            turnId = checkpoints.find((c) => c.id === block.checkpointId)?.turnId;
          }
          if (!turnId) {
            void vscode.window.showWarningMessage('agentls: this message has no turn to review (it was not sent, or has no checkpoint).');
            break;
          }
          await this.reviewChanges(turnId);
          break;
        }
        case 'rewind':
        case 'fork': {
          // A user message's hover action.
          const sessionId = await this.session();
          const { checkpoints } = await this.request(Methods.sessionCheckpoints, { sessionId });
          const checkpoint = checkpointOf(this.model, message.index, checkpoints);
          if (!checkpoint) {
            void vscode.window.showWarningMessage('agentls: this message has no checkpoint (checkpoints.enabled is off, or it could not be taken).');
            break;
          }
          await (message.type === 'rewind' ? this.rewind(checkpoint) : this.fork(checkpoint));
          break;
        }
        case 'commands': {
          // For the `/` suggestion list: read each time, so a new command file shows.
          const sessionId = await this.session();
          const result = await this.request(Methods.sessionCommands, { sessionId });
          this.chat.post({ type: 'commands', commands: result.commands });
          break;
        }
      }
    } catch (error) {
      this.post([addNotice(this.model, describe(error))]);
    }
  }

  /** After a reload of VS Code: the session of last time, from the server's log. */
  private async restore(): Promise<void> {
    if (this.restored || !this.model.sessionId || this.model.blocks.length > 0) {
      this.restored = true;
      return;
    }
    await this.started.catch(() => undefined);
    if (!this.client?.isRunning()) {
      return; // tried again at the next `ready`, once the server runs
    }
    this.restored = true;
    try {
      await this.load(this.model.sessionId);
    } catch (error) {
      // Only a session the server does not know is forgotten (its log is gone: another
      // stateDir, deleted); any other failure keeps it for the next time.
      if ((error as { code?: number }).code === -32602) {
        this.model = emptyModel();
        await this.context.workspaceState.update(SESSION_KEY, undefined);
      }
    }
  }

  /** Before showing another session: a turn still running in this one is cancelled (it
   *  could not be stopped from the chat any more). */
  private async leaveSession(next?: string): Promise<void> {
    if (this.model.sessionId && this.model.sessionId !== next && isRunning(this.model)) {
      await this.request(Methods.sessionCancel, { sessionId: this.model.sessionId }).catch(() => undefined);
    }
  }

  private async load(sessionId: string): Promise<void> {
    await this.leaveSession(sessionId);
    const result = await this.request(Methods.sessionLoad, { sessionId });
    await this.rememberWorktree(result.sessionId, result.worktree);
    this.model = fromItems(result.sessionId, result.items);
    await this.context.workspaceState.update(SESSION_KEY, result.sessionId);
    this.resetView();
  }

  private async session(): Promise<string> {
    if (this.model.sessionId) {
      return this.model.sessionId;
    }
    const result = await this.request(Methods.sessionNew, {});
    this.model.sessionId = result.sessionId;
    await this.context.workspaceState.update(SESSION_KEY, result.sessionId);
    return result.sessionId;
  }

  private currentEditorState(): EditorState | undefined {
    const editor = vscode.window.activeTextEditor ?? this.lastEditor;
    if (!editor || editor.document.isClosed || editor.document.uri.scheme !== 'file') {
      return undefined;
    }
    const uri = editor.document.uri;
    return editorState({
      uri: uri.toString(),
      selection: editor.selection,
      visibleRanges: editor.visibleRanges,
      diagnostics: vscode.languages.getDiagnostics(uri),
    });
  }

  /** Sends `text` (with the images pasted or dropped into the input): while a turn runs it
   *  steers that turn (or, `how: 'queue'`, waits for a turn of its own; the `queue` update
   *  lists it, and the `steered` update shows it once it joined the turn); otherwise, or
   *  with images (a steered message carries none), it is a prompt. */
  async send(text: string, how?: 'steer' | 'queue', images: PromptImage[] = []): Promise<void> {
    const sessionId = await this.session();
    const attached = this.pending;
    const editor = this.pending ?? this.currentEditorState();
    this.pending = undefined;
    if (images.length === 0 && sendKind(this.model, how) === 'steer') {
      let steered;
      try {
        steered = await this.request(Methods.sessionSteer, { sessionId, text, editor });
      } catch (error) {
        this.pending = attached;
        this.chat.post({ type: 'prefill', text, context: attached && contextLabel(attached) });
        throw error;
      }
      if (steered.steered) {
        this.post(steeringSent(this.model, steered.id, text));
        this.chat.post({ type: 'running', running: isRunning(this.model) });
        return;
      }
      // No turn ran any more: it became a prompt of its own.
      const added = addUser(this.model, text);
      if (added.block.type === 'user') {
        added.block.turnId = steered.turnId;
      }
      this.post([added]);
      turnStarted(this.model, steered.turnId);
      this.chat.post({ type: 'running', running: isRunning(this.model) });
      return;
    }
    // The transcript names the images as the server's does (`[image: …]`).
    const shown = images.length ? `${text}\n${images.map((_, i) => `[image: image ${i + 1}]`).join('\n')}` : text;
    const added = addUser(this.model, shown);
    this.post([added]);
    const params = images.length ? { sessionId, text, editor, images } : { sessionId, text, editor };
    let result;
    try {
      result = await this.request(Methods.sessionPrompt, params);
    } catch (error) {
      // Refused (an image the model does not take or the server cannot read, the server
      // not running, …): nothing was sent, so the message leaves the chat and goes back to
      // the input with its images and attached context; the error is shown as a notice.
      if (withdrawUser(this.model, added.block)) {
        this.resetView();
      }
      this.pending = attached;
      this.chat.post({ type: 'prefill', text, context: attached && contextLabel(attached), images });
      throw error;
    }
    if (added.block.type === 'user') {
      added.block.turnId = result.turnId;
    }
    turnStarted(this.model, result.turnId);
    this.chat.post({ type: 'running', running: isRunning(this.model) });
  }

  async cancel(): Promise<void> {
    if (this.model.sessionId) {
      await this.request(Methods.sessionCancel, { sessionId: this.model.sessionId });
    }
  }

  /** `agentls.newSession`, and with `worktree` `agentls.newWorktreeSession`: a session
   *  that works apart, in a new git worktree on a branch of its own (refused, with why,
   *  outside a git repository with a commit). */
  async newSession(worktree = false): Promise<void> {
    // The id first: the chat never holds a model without one (updates are matched to it).
    const result = await this.request(Methods.sessionNew, worktree ? { worktree: true } : {});
    await this.leaveSession(result.sessionId);
    await this.rememberWorktree(result.sessionId, result.worktree);
    this.model = emptyModel(result.sessionId);
    this.status = undefined;
    this.renderStatus();
    await this.context.workspaceState.update(SESSION_KEY, result.sessionId);
    this.resetView();
    await this.chat.reveal();
    if (result.worktree) {
      void vscode.window.showInformationMessage(startedMessage(result.worktree));
    }
  }

  /** `agentls.applyWorktree` ("Agent: Apply Worktree Session"): the chat session's work
   *  brought into the workspace; the files left as they are listed with why, each opening
   *  as a diff of the worktree's text against the workspace's. */
  async applyWorktree(): Promise<void> {
    const sessionId = this.model.sessionId;
    if (!sessionId) {
      void vscode.window.showInformationMessage('agentls: no chat session: Agent: New Session in a Worktree starts one that works apart.');
      return;
    }
    const result = await this.request(Methods.sessionApplyWorktree, { sessionId });
    const { message, warning, conflicts } = applySummary(result);
    this.output.appendLine(message);
    for (const conflict of conflicts) {
      this.output.appendLine(`  not applied: ${conflict.path}: ${conflict.reason}`);
    }
    if (!warning) {
      void vscode.window.showInformationMessage(message);
      return;
    }
    const show = 'Show Conflicts';
    if ((await vscode.window.showWarningMessage(message, show)) !== show) {
      return;
    }
    const worktree = this.worktree(sessionId);
    for (;;) {
      const pick = await vscode.window.showQuickPick(conflicts.map(conflictItem), {
        title: `Not applied from ${result.branch}`,
        placeHolder: 'Left as they are: choose one to compare the worktree\'s file with yours',
        matchOnDetail: true,
      });
      const target = pick && this.resolvePath(pick.path);
      if (!pick || !target) {
        return;
      }
      if (worktree) {
        const theirs = vscode.Uri.joinPath(vscode.Uri.file(worktree.path), pick.path);
        await vscode.commands.executeCommand('vscode.diff', theirs, target, `${pick.path} (${result.branch} ↔ workspace)`, { preview: true });
      } else {
        await vscode.window.showTextDocument(target, { preview: true });
      }
    }
  }

  /** `agentls.rewind` / `agentls.fork`: a pick of the session's checkpoints, newest first. */
  async pickCheckpoint(action: 'rewind' | 'fork'): Promise<void> {
    const sessionId = this.model.sessionId;
    if (!sessionId) {
      void vscode.window.showInformationMessage('agentls: no session yet.');
      return;
    }
    const { checkpoints } = await this.request(Methods.sessionCheckpoints, { sessionId });
    if (checkpoints.length === 0) {
      void vscode.window.showInformationMessage('agentls: this session has no checkpoint yet.');
      return;
    }
    const pick = await vscode.window.showQuickPick(
      [...checkpoints].reverse().map((c) => ({ ...checkpointItem(c), id: c.id })),
      { placeHolder: action === 'rewind' ? 'Rewind to before which message?' : 'Fork from before which message?' },
    );
    if (pick) {
      await (action === 'rewind' ? this.rewind(pick.id) : this.fork(pick.id));
    }
  }

  /** "Rewind to here": what to restore, the dry run's plan in a dialog, then the rewind;
   *  a conversation rewind reloads the chat and puts the message back in the input. */
  async rewind(checkpointId: string, restore?: Restore): Promise<void> {
    const sessionId = await this.session();
    if (!restore) {
      const picked = await vscode.window.showQuickPick(
        RESTORES.map((r) => ({ label: r.label, detail: r.detail, restore: r.restore })),
        { placeHolder: 'Rewind what?' },
      );
      if (!picked) {
        return;
      }
      restore = picked.restore;
    }
    const plan = await this.request(Methods.sessionRewind, { sessionId, checkpointId, restore, dryRun: true, force: false });
    const buttons = choices(plan);
    const answer = await vscode.window.showWarningMessage(
      'agentls: rewind?',
      { modal: true, detail: planLines(plan, restore).join('\n') },
      ...buttons.map((b) => b.label),
    );
    const chosen = buttons.find((b) => b.label === answer);
    if (!chosen) {
      return;
    }
    const force = chosen.id === 'force';
    const result = await this.request(Methods.sessionRewind, { sessionId, checkpointId, restore, dryRun: false, force });
    if (result.conversation) {
      await this.load(sessionId);
      this.chat.post({ type: 'prefill', text: result.message ?? '', context: undefined });
    }
    const text = summary(result, restore, force);
    void (result.failed.length > 0 ? vscode.window.showWarningMessage(text) : vscode.window.showInformationMessage(text));
  }

  /** `agentls.reviewChanges` ("Agent: Review Changes"): which turns (the last one, or an
   *  earlier one and every turn after it; `since` skips the question), then the files they
   *  changed; a file chosen opens as a diff (before the turns ↔ now) with keep, undo the
   *  file and undo a hunk; then the list again, as the server lists what is left. */
  async reviewChanges(since?: string): Promise<void> {
    const sessionId = this.model.sessionId;
    if (!sessionId) {
      void vscode.window.showInformationMessage('agentls: no chat session yet: a turn\'s changes can be reviewed after it.');
      return;
    }
    let sinceTurnId = since;
    let which = since ? 'this turn and after' : 'the last turn';
    if (!since) {
      const turns = turnItems((await this.request(Methods.sessionCheckpoints, { sessionId })).checkpoints);
      if (turns.length > 1) {
        const turn = await vscode.window.showQuickPick(turns, {
          title: 'Review changes',
          placeHolder: 'Review the changes of the last turn, or of an earlier turn and every turn after it',
          matchOnDescription: true,
        });
        if (!turn) {
          return;
        }
        sinceTurnId = turn.turnId;
        which = turn.title;
      }
    }
    for (;;) {
      const { files } = await this.request(Methods.sessionChanges, sinceTurnId ? { sessionId, sinceTurnId } : { sessionId });
      if (files.length === 0) {
        void vscode.window.showInformationMessage(`agentls: no change of ${which} is left to review.`);
        return;
      }
      const picked = await vscode.window.showQuickPick(files.map(fileItem), {
        title: `Review changes: ${which}`,
        placeHolder: 'Choose a file to see its diff and keep or undo it (Escape keeps the rest)',
        matchOnDescription: true,
      });
      const file = picked && files.find((f) => f.path === picked.path);
      if (!file) {
        return;
      }
      const shown = await this.showChange(file, this.worktree(sessionId));
      try {
        const action = await vscode.window.showQuickPick(fileActions(file), {
          title: `Review changes: ${file.path}`,
          placeHolder: 'Keep the agent\'s change, or undo it',
        });
        if (action?.action === 'undoFile') {
          await this.undoChange(sessionId, file.path, undefined, sinceTurnId);
        } else if (action?.action === 'undoHunk') {
          const hunk = await vscode.window.showQuickPick(file.hunks.map((h) => hunkItem(h)), {
            title: `Undo a hunk of ${file.path}`,
            placeHolder: 'The hunk to undo (the others stay)',
            matchOnDetail: true,
          });
          if (hunk) {
            await this.undoChange(sessionId, file.path, hunk.id, sinceTurnId);
          }
        }
      } finally {
        this.docs.remove(shown);
      }
    }
  }

  /** The diff of a file's change: its text before the turn (rebuilt from the hunks over the
   *  text now) on the left, the file on the right; the diff itself when the file changed
   *  too much since for that. A session that works apart changed its worktree's file.
   *  Returns the virtual document to drop afterwards. */
  private async showChange(file: ChangedFile, worktree?: SessionWorktree): Promise<vscode.Uri> {
    const target = worktree ? vscode.Uri.joinPath(vscode.Uri.file(worktree.path), file.path) : this.resolvePath(file.path);
    const name = file.path.split('/').pop() ?? file.path;
    let now = '';
    if (target && file.status !== 'deleted') {
      const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === target.toString());
      now = open ? open.getText() : new TextDecoder().decode(await vscode.workspace.fs.readFile(target).then(undefined, () => new Uint8Array()));
    }
    const before = textBefore(now, file.hunks);
    if (before === undefined || !target) {
      const uri = this.docs.add(`${name}.diff`, file.hunks.map((h) => h.diff).join(''));
      await vscode.window.showTextDocument(uri, { preview: true, preserveFocus: true });
      return uri;
    }
    const left = this.docs.add(name, before);
    const right = file.status === 'deleted' ? this.docs.add(name, '') : target;
    await vscode.commands.executeCommand('vscode.diff', left, right, `${file.path} (agent's changes)`, { preview: true, preserveFocus: true });
    return left;
  }

  /** Undoes a file's change (or one hunk): conflicts are warnings, nothing is overwritten. */
  private async undoChange(sessionId: string, path: string, hunkId?: string, sinceTurnId?: string): Promise<void> {
    const result = await this.request(Methods.sessionRevertChanges, revertRequest(sessionId, path, hunkId, sinceTurnId));
    const { info, warnings } = revertMessages(result, hunkId !== undefined);
    if (info) {
      void vscode.window.showInformationMessage(info);
    }
    for (const warning of warnings) {
      void vscode.window.showWarningMessage(warning);
    }
  }

  /** "Fork from here": a new session with the history before the checkpoint, shown. */
  async fork(checkpointId?: string): Promise<void> {
    const sessionId = await this.session();
    const result = await this.request(Methods.sessionFork, { sessionId, checkpointId });
    await this.load(result.sessionId);
    await this.chat.reveal();
    void vscode.window.showInformationMessage(`agentls: forked into ${result.sessionId}.`);
  }

  async pickSession(): Promise<void> {
    const { sessions } = await this.request(Methods.sessionList, {});
    if (sessions.length === 0) {
      void vscode.window.showInformationMessage('agentls: no sessions yet in this workspace.');
      return;
    }
    const pick = await vscode.window.showQuickPick(
      sessions.map((s) => ({
        label: s.title || '(empty)',
        description: `${s.turns} turn${s.turns === 1 ? '' : 's'} · ${new Date(s.updatedAt).toLocaleString()}`,
        detail: s.sessionId,
        sessionId: s.sessionId,
      })),
      { placeHolder: 'agentls sessions (newest first)' },
    );
    if (pick) {
      await this.load(pick.sessionId);
      await this.chat.reveal();
    }
  }

  async compact(): Promise<void> {
    const sessionId = this.model.sessionId;
    if (!sessionId) {
      void vscode.window.showInformationMessage('agentls: no session to compact.');
      return;
    }
    const instructions = await vscode.window.showInputBox({
      prompt: 'What the summary should focus on (optional)',
      placeHolder: 'e.g. the failing test and the plan',
    });
    if (instructions === undefined) {
      return; // escaped
    }
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'agentls: compacting' },
      () =>
        this.request(Methods.sessionCompact, {
          sessionId,
          instructions: instructions || undefined,
        }),
    );
    void vscode.window.showInformationMessage(
      `agentls: compacted ${thousands(result.tokensBefore)} → ${thousands(result.tokensAfter)} tokens (${result.strategy}).`,
    );
  }

  /** The status bar item's view: the window as one stacked bar by section, the
   *  compactions so far and the headroom to the threshold (contextBar.ts draws it). */
  async showContext(): Promise<void> {
    const sessionId = this.model.sessionId;
    const report = await this.request(Methods.sessionContext, {
      sessionId,
      editor: this.currentEditorState(),
    });
    const items = sessionId
      ? (await this.request(Methods.sessionLoad, { sessionId })).items
      : [];
    const layout = contextLayout(report, compactionsOf(items));
    if (!this.contextPanel) {
      this.contextPanel = vscode.window.createWebviewPanel('agentls.context', 'agentls context', vscode.ViewColumn.Active, {
        enableScripts: false,
      });
      this.contextPanel.onDidDispose(() => (this.contextPanel = undefined), undefined, this.disposables);
    } else {
      this.contextPanel.reveal();
    }
    this.contextPanel.webview.html = contextHtml(layout, this.contextPanel.webview.cspSource, makeNonce());
  }

  // ---- code actions and "ask about selection" ----

  private async prefill(text: string, state: EditorState | undefined): Promise<void> {
    this.pending = state;
    await this.chat.reveal();
    // The view may be resolving right now; its `ready` resets the transcript but not the
    // input, so post after revealing.
    this.chat.post({ type: 'prefill', text, context: state && contextLabel(state) });
  }

  /** From the server's code action ([uri, range]) or the editor (menu, keybinding). */
  async askAboutSelection(uriArg: unknown, rangeArg: unknown): Promise<void> {
    if (typeof uriArg === 'string' && isRange(rangeArg)) {
      const state = this.stateFor(uriArg) ?? { uri: uriArg, position: rangeArg.start };
      state.selection = rangeArg;
      await this.prefill('', state);
      return;
    }
    await this.prefill('', this.currentEditorState());
  }

  async fixDiagnostic(uriArg: unknown, diagnosticArg: unknown): Promise<void> {
    if (typeof uriArg !== 'string' || !isDiagnostic(diagnosticArg)) {
      throw new Error('agentls.fixDiagnostic expects [uri, diagnostic] (it is run from the lightbulb)');
    }
    const state = this.stateFor(uriArg) ?? { uri: uriArg, position: diagnosticArg.range.start };
    state.position = diagnosticArg.range.start;
    state.selection = undefined;
    state.diagnostics = [diagnosticArg];
    await this.prefill(`Fix this: ${diagnosticArg.message.split('\n')[0]}`, state);
  }

  /** "Fix with agent" on a `/review` finding ([uri, diagnostic, {prompt}]): the server's
   *  prompt for it sent at once, with the editor state at the finding. */
  async fixFinding(uriArg: unknown, diagnosticArg: unknown, target: unknown): Promise<void> {
    const prompt = (target as { prompt?: unknown } | undefined)?.prompt;
    if (typeof uriArg !== 'string' || !isDiagnostic(diagnosticArg) || typeof prompt !== 'string') {
      throw new Error('agentls.review.fix expects [uri, diagnostic, {prompt}] (it is run from the lightbulb)');
    }
    const state = this.stateFor(uriArg) ?? { uri: uriArg, position: diagnosticArg.range.start };
    state.position = diagnosticArg.range.start;
    state.selection = undefined;
    state.diagnostics = [diagnosticArg];
    this.pending = state;
    await this.chat.reveal();
    await this.send(prompt, 'queue');
  }

  private stateFor(uri: string): EditorState | undefined {
    const editor = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === uri);
    if (!editor) {
      return undefined;
    }
    return editorState({
      uri,
      selection: editor.selection,
      visibleRanges: editor.visibleRanges,
      diagnostics: vscode.languages.getDiagnostics(editor.document.uri),
    });
  }

  // ---- status ----

  private onStatus(status: AgentStatus): void {
    if (this.model.sessionId && status.sessionId !== this.model.sessionId) {
      return;
    }
    this.status = status;
    this.renderStatus();
  }

  private renderStatus(): void {
    const view = formatStatus(this.status, this.mcp, this.sandbox, this.worktree());
    this.statusItem.text = view.text;
    this.statusItem.tooltip = view.tooltip;
    this.statusItem.backgroundColor = view.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  private onMcpStatus(status: McpStatus): void {
    this.mcp = status;
    this.renderStatus();
  }

  /** The settings' sandbox for the tooltip before the first status; an agentls without
   *  agent/sandbox/status has none to show. */
  private async fetchSandbox(): Promise<void> {
    try {
      this.sandbox = await this.request(Methods.sandboxStatus, {});
      this.renderStatus();
    } catch {
      this.sandbox = undefined;
    }
  }

  /** `agentls.setMode` ("Agent: Set Mode"): the chat's session in the mode picked (or
   *  given), from its next tool call on; the server's agent/status then shows it. */
  async setMode(given?: unknown): Promise<void> {
    const sessionId = await this.session();
    const current = this.status?.sessionId === sessionId ? this.status.mode : undefined;
    let mode = typeof given === 'string' ? given : undefined;
    if (!mode) {
      const pick = await vscode.window.showQuickPick(modePickItems(current), {
        title: 'agentls mode',
        placeHolder: `The mode of this session${current ? ` (now ${current})` : ''}`,
        matchOnDescription: true,
      });
      mode = pick?.mode;
    }
    if (mode) {
      await this.request(Methods.sessionSetMode, { sessionId, mode });
    }
  }

  /** `agentls.mcpStatus`: the MCP servers, their state and messages, asked afresh. */
  private async showMcpStatus(): Promise<void> {
    const status = await this.request(Methods.mcpStatus, {});
    this.onMcpStatus(status);
    if (status.servers.length === 0) {
      void vscode.window.showInformationMessage(`agentls: ${NO_SERVERS}`);
      return;
    }
    await vscode.window.showQuickPick(mcpPickItems(status), {
      title: 'agentls MCP servers',
      placeHolder: 'The MCP servers of this workspace and their state',
      matchOnDescription: true,
      matchOnDetail: true,
    });
  }

  /** `agentls.openMemory`: a memory's Markdown file, opened to read and edit (made, empty
   *  and private, when it does not exist yet). */
  private async openMemory(): Promise<void> {
    const state = await this.request(Methods.memory, {});
    const items = memoryPickItems(state);
    if (items.length === 0) {
      void vscode.window.showWarningMessage('agentls: there is no place for a memory (no home directory).');
      return;
    }
    const pick = await vscode.window.showQuickPick(items, { title: 'agentls memory', placeHolder: 'Open a memory to read and edit' });
    if (!pick) {
      return;
    }
    const fs = await import('node:fs/promises');
    const path = await import('node:path');
    await fs.mkdir(path.dirname(pick.path), { recursive: true, mode: 0o700 });
    await fs.writeFile(pick.path, '', { flag: 'a', mode: 0o600 });
    await vscode.window.showTextDocument(vscode.Uri.file(pick.path));
  }

  /** `agentls.keepFacts`: the chat session's facts the memory does not hold yet (its rules,
   *  the checks that worked), the ones picked kept in the workspace's memory as the user's. */
  private async keepFacts(): Promise<void> {
    const sessionId = this.model.sessionId;
    if (!sessionId) {
      void vscode.window.showInformationMessage('agentls: no chat session yet: its facts are offered once it has run a turn.');
      return;
    }
    const state = await this.request(Methods.memory, { sessionId });
    if (state.offers.length === 0) {
      void vscode.window.showInformationMessage('agentls: nothing of this chat to keep that the memory does not hold.');
      return;
    }
    const picks = await vscode.window.showQuickPick(offerPickItems(state.offers), {
      title: 'Keep in this workspace\'s memory',
      canPickMany: true,
    });
    if (!picks || picks.length === 0) {
      return;
    }
    let kept = 0;
    for (const pick of picks) {
      const result = await this.request(Methods.memoryKeep, { fact: pick.fact });
      kept += result.kept ? 1 : 0;
    }
    void vscode.window.showInformationMessage(`agentls: kept ${kept} ${kept === 1 ? 'fact' : 'facts'} in this workspace's memory.`);
  }

  /** `agentls.permissions`: the permission rules in force and the ignored ones. */
  private async showPermissions(): Promise<void> {
    const result = await this.request(Methods.permissions, {});
    if (result.rules.length === 0 && result.problems.length === 0) {
      void vscode.window.showInformationMessage(
        'agentls: no permission rules (permissions.allow/ask/deny in the settings, or deny/ask in .agents/settings.json).',
      );
      return;
    }
    await vscode.window.showQuickPick(permissionPickItems(result), { title: 'agentls permission rules' });
  }

  // ---- approvals ----

  private resolvePath(path: string): vscode.Uri | undefined {
    if (path.startsWith('/')) {
      return vscode.Uri.file(path);
    }
    const root = vscode.workspace.workspaceFolders?.[0];
    return root ? vscode.Uri.joinPath(root.uri, path) : undefined;
  }

  /** Opens the proposed edit as a diff; returns what to close afterwards. */
  private async showProposal(request: PermissionRequest): Promise<vscode.Uri[]> {
    const call = request.toolCall;
    const diff = call.diff;
    if (!diff) {
      return [];
    }
    const path = typeof call.input?.path === 'string' ? call.input.path : undefined;
    // A change of several files (an `lsp` rename) is not one file's proposal: its diff is
    // shown as it is.
    const files = diff.match(/^--- .*\n\+\+\+ /gm)?.length ?? 0;
    const target = path && files <= 1 ? this.resolvePath(path) : undefined;
    const name = path?.split('/').pop() ?? 'edit';
    if (target) {
      let current: string | undefined;
      const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === target.toString());
      if (open) {
        current = open.getText();
      } else {
        try {
          current = new TextDecoder().decode(await vscode.workspace.fs.readFile(target));
        } catch {
          current = ''; // a new file
        }
      }
      const proposed = applyUnifiedDiff(current, diff) ?? (current === '' ? proposedNewFile(call.input) : undefined);
      if (proposed !== undefined) {
        const left = this.docs.add(name, current);
        const right = this.docs.add(name, proposed);
        await vscode.commands.executeCommand('vscode.diff', left, right, `agentls: ${call.title ?? name} (proposed)`, {
          preview: true,
          preserveFocus: true,
        });
        return [left, right];
      }
    }
    // The diff does not apply to what the editor has: show the diff itself.
    const uri = this.docs.add(`${name}.diff`, diff);
    await vscode.window.showTextDocument(uri, { preview: true, preserveFocus: true });
    return [uri];
  }

  private async closeDocs(uris: vscode.Uri[]): Promise<void> {
    const wanted = new Set(uris.map((u) => u.toString()));
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((tab) => {
      const input = tab.input;
      if (input instanceof vscode.TabInputTextDiff) {
        return wanted.has(input.modified.toString());
      }
      return input instanceof vscode.TabInputText && wanted.has(input.uri.toString());
    });
    await vscode.window.tabGroups.close(tabs).then(undefined, () => undefined);
    uris.forEach((u) => this.docs.remove(u));
  }

  private async onPermission(
    request: PermissionRequest,
    withdrawn?: { onCancellationRequested(listener: () => void): unknown; isCancellationRequested: boolean },
  ): Promise<PermissionResponse> {
    const call = request.toolCall;
    const shown = await this.showProposal(request).catch((error: unknown) => {
      this.output.appendLine(`could not show the proposed edit: ${describe(error)}`);
      return [] as vscode.Uri[];
    });
    try {
      const names = request.options.map((o) => o.name);
      // `details` (a workspace MCP server's whole entry) wins over the bare command line.
      const detail =
        typeof call.details === 'string'
          ? call.details
          : call.kind === 'execute' && typeof call.input?.command === 'string'
            ? call.input.command
            : undefined;
      // The server counts no answer within its approval timeout (5 min by default) as a
      // rejection: answer just before it, so a late click is not shown as allowed.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), APPROVAL_TIMEOUT_MS - 2000);
      });
      // The server withdraws a request it stopped waiting for (`$/cancelRequest`): stop
      // waiting too, and close the proposed edit (a modal dialog cannot be closed from here;
      // a late click is ignored).
      const stopped = new Promise<'withdrawn'>((resolve) => {
        if (withdrawn?.isCancellationRequested) {
          resolve('withdrawn');
        }
        withdrawn?.onCancellationRequested(() => resolve('withdrawn'));
      });
      const choice = await Promise.race([
        vscode.window.showInformationMessage(`agentls wants to ${call.title ?? call.name}`, { modal: true, detail }, ...names),
        timeout,
        stopped,
      ]).finally(() => clearTimeout(timer));
      const option = request.options.find((o) => o.name === choice);
      const answer = option
        ? option.name
        : choice === 'timeout'
          ? 'No answer in time (rejected)'
          : choice === 'withdrawn'
            ? 'The agent stopped waiting'
            : 'Cancelled';
      // Only the chat of that session hears of it.
      if (request.sessionId === this.model.sessionId) {
        this.post([addNotice(this.model, `${answer}: ${call.title ?? call.name}`, 'info')]);
      }
      return option ? { outcome: { optionId: option.optionId } } : { outcome: 'cancelled' };
    } finally {
      await this.closeDocs(shown);
    }
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }

  async stop(): Promise<void> {
    await this.client?.stop().catch(() => undefined);
  }
}

/** agentls's default `approvalTimeoutMs`. */
const APPROVAL_TIMEOUT_MS = 300_000;

function addNotice(model: ChatModel, text: string, level: 'info' | 'error' = 'error') {
  model.blocks.push({ type: 'notice', level, text });
  return { index: model.blocks.length - 1, block: model.blocks[model.blocks.length - 1] };
}

/** write_file to a new path: the content is the whole proposal. */
function proposedNewFile(input: Record<string, unknown> | undefined): string | undefined {
  return typeof input?.content === 'string' ? input.content : undefined;
}

function isPosition(v: unknown): v is { line: number; character: number } {
  return typeof v === 'object' && v !== null && typeof (v as { line?: unknown }).line === 'number' && typeof (v as { character?: unknown }).character === 'number';
}

function isRange(v: unknown): v is Range {
  return typeof v === 'object' && v !== null && isPosition((v as { start?: unknown }).start) && isPosition((v as { end?: unknown }).end);
}

function isDiagnostic(v: unknown): v is Diagnostic {
  return typeof v === 'object' && v !== null && isRange((v as { range?: unknown }).range) && typeof (v as { message?: unknown }).message === 'string';
}

let agent: Agent | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  agent = new Agent(context);
  context.subscriptions.push(agent);
  await agent.start();
}

export async function deactivate(): Promise<void> {
  await agent?.stop();
  agent = undefined;
}

/** The label of an attached editor context: `file:lines`. */
function contextLabel(state: EditorState): string {
  const file = vscode.Uri.parse(state.uri).path.split('/').pop() ?? state.uri;
  const range = state.selection ?? state.diagnostics?.[0]?.range;
  return range ? `${file}:${range.start.line + 1}-${range.end.line + 1}` : file;
}

/** agent/editor/lsp's view of VS Code: documents, the extensions that may serve a
 *  language, and the provider commands. */
function editorLspSource(ownId: string): LspSource {
  return {
    open: async (uri) => vscode.workspace.openTextDocument(vscode.Uri.parse(uri)),
    served: (languageId) =>
      vscode.extensions.all.some((e) => {
        if (e.id === ownId) {
          return false;
        }
        const events: unknown = e.packageJSON?.activationEvents;
        return Array.isArray(events) && events.some((a) => a === '*' || a === `onLanguage:${languageId}` || a === 'onLanguage');
      }),
    execute: (command, uri, position, extra) => {
      const args: unknown[] = [];
      if (uri !== undefined) {
        args.push(vscode.Uri.parse(uri));
      }
      if (position !== undefined) {
        args.push(new vscode.Position(position.line, position.character));
      }
      if (extra !== undefined) {
        args.push(extra);
      }
      return Promise.resolve(vscode.commands.executeCommand(command, ...args));
    },
  };
}
