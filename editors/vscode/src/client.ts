// The language client: agentls over stdio, with the custom notifications and the
// permission request routed to callbacks. Separate from extension.ts so that the Node
// tests run this exact wiring (real vscode-languageclient, real binary) with a `vscode`
// stub, without the UI.
import type { OutputChannel } from 'vscode';
import {
  type CancellationToken,
  LanguageClient,
  type LanguageClientOptions,
  LSPErrorCodes,
  ResponseError,
  type ServerOptions,
  TransportKind,
} from 'vscode-languageclient/node';
import {
  type AgentStatus,
  type EditorDiagnosticsParams,
  type EditorDiagnosticsResult,
  type EditorLspParams,
  type EditorLspResult,
  type McpStatus,
  Methods,
  type PermissionRequest,
  type PermissionResponse,
  type SessionUpdateParams,
} from './protocol';
import type { ServerSettings } from './config';

export interface AgentHandlers {
  onUpdate(params: SessionUpdateParams): void;
  onStatus(params: AgentStatus): void;
  /** `withdrawn` is cancelled when the server stops waiting (`$/cancelRequest`: the turn
   * was cancelled, or its approval timeout passed). */
  onPermission(params: PermissionRequest, withdrawn?: CancellationToken): Promise<PermissionResponse>;
  /** agent/mcp/didChangeStatus: the MCP servers' state, each time it changes. */
  onMcpStatus?(params: McpStatus): void;
  /** agent/editor/diagnostics: when given, the client offers it
   *  (`capabilities.editorDiagnostics` in initializationOptions). */
  onEditorDiagnostics?(params: EditorDiagnosticsParams): Promise<EditorDiagnosticsResult>;
  /** agent/editor/lsp: when given, the client offers it (`capabilities.editorLanguageServers`);
   *  a rejection is answered as a JSON-RPC error with its message. */
  onEditorLsp?(params: EditorLspParams): Promise<EditorLspResult>;
}

/** What this client answers beyond LSP, as initializationOptions.capabilities. */
function capabilities(handlers: AgentHandlers): Record<string, boolean> | undefined {
  const offered: Record<string, boolean> = {};
  if (handlers.onEditorDiagnostics) {
    offered.editorDiagnostics = true;
  }
  if (handlers.onEditorLsp) {
    offered.editorLanguageServers = true;
  }
  return Object.keys(offered).length > 0 ? offered : undefined;
}

export interface ClientConfig {
  command: string;
  settings: ServerSettings;
  handlers: AgentHandlers;
  outputChannel?: OutputChannel;
  /** Extra environment for the server (tests point stateDir elsewhere through settings). */
  env?: NodeJS.ProcessEnv;
}

export function createClient(config: ClientConfig): LanguageClient {
  const serverOptions: ServerOptions = {
    command: config.command,
    // TransportKind.stdio makes the client pass `--stdio`, which agentls accepts.
    transport: TransportKind.stdio,
    options: config.env ? { env: { ...process.env, ...config.env } } : undefined,
  };
  const clientOptions: LanguageClientOptions = {
    // Every file: the server gives syntax-aware context for some languages and plain
    // text for the rest; it must see unsaved buffers of all of them.
    documentSelector: [{ scheme: 'file' }],
    initializationOptions: capabilities(config.handlers)
      ? { ...config.settings, capabilities: capabilities(config.handlers) }
      : config.settings,
    outputChannel: config.outputChannel,
    // The settings are sent by the extension itself (see extension.ts): the client's
    // own `synchronize.configurationSection` would send VS Code's raw tree, where
    // untouched settings are "" rather than absent.
  };
  const client = new LanguageClient('agentls', 'agentls', serverOptions, clientOptions);
  client.onNotification(Methods.sessionUpdate, (params: SessionUpdateParams) => config.handlers.onUpdate(params));
  client.onNotification(Methods.status, (params: AgentStatus) => config.handlers.onStatus(params));
  client.onNotification(Methods.mcpDidChangeStatus, (params: McpStatus) => config.handlers.onMcpStatus?.(params));
  client.onRequest(Methods.requestPermission, async (params: PermissionRequest, withdrawn): Promise<PermissionResponse> => {
    try {
      return await config.handlers.onPermission(params, withdrawn);
    } catch {
      // A failing UI must not leave the turn waiting for approvalTimeoutMs.
      return { outcome: 'cancelled' };
    }
  });
  const onEditorDiagnostics = config.handlers.onEditorDiagnostics;
  if (onEditorDiagnostics) {
    client.onRequest(Methods.editorDiagnostics, (params: EditorDiagnosticsParams) => onEditorDiagnostics(params));
  }
  const onEditorLsp = config.handlers.onEditorLsp;
  if (onEditorLsp) {
    client.onRequest(Methods.editorLsp, async (params: EditorLspParams) => {
      try {
        return await onEditorLsp(params);
      } catch (error) {
        // The message as it is: the model reads it.
        return new ResponseError(LSPErrorCodes.RequestFailed, error instanceof Error ? error.message : String(error));
      }
    });
  }
  return client;
}
