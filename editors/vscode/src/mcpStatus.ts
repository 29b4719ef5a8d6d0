// The MCP servers' state (agent/mcp/status, agent/mcp/didChangeStatus) as the status bar's
// tooltip lines and the `agentls.mcpStatus` list, without `vscode` so that it is unit-tested.
import type { McpServerStatus, McpStatus } from './protocol';

/** Shown when the list is empty: the server lists only servers it has started. */
export const NO_SERVERS =
  'No MCP servers: none configured (mcpServers in the settings, ~/.config/agentls/settings.json or .mcp.json), or none started yet (they start with the first session).';

const SOURCES: Record<string, string> = { workspace: ' (.mcp.json)', client: ' (from the client)' };

/** `ready, 13 tools`, `failed: cannot start …`, `starting`, `disabled`. */
export function describeServer(server: McpServerStatus): string {
  switch (server.state) {
    case 'ready':
      return `ready, ${server.tools} tool${server.tools === 1 ? '' : 's'}`;
    case 'starting':
      return server.message ? `starting again after: ${server.message}` : 'starting';
    case 'failed':
      return `failed: ${server.message ?? 'no reason given'}`;
    case 'disabled':
      return 'disabled (enabled: false)';
    default:
      return server.state;
  }
}

/** Whether a server failed: the status bar item then gets its warning look. */
export function anyFailed(status: McpStatus | undefined): boolean {
  return (status?.servers ?? []).some((s) => s.state === 'failed');
}

/** The tooltip's MCP part: a heading and one line per server; none without servers. */
export function mcpTooltipLines(status: McpStatus | undefined): string[] {
  const servers = status?.servers ?? [];
  if (servers.length === 0) {
    return [];
  }
  const ready = servers.filter((s) => s.state === 'ready').length;
  return [
    `MCP servers (${ready} of ${servers.length} ready):`,
    ...servers.map((s) => `  ${s.name}${SOURCES[s.source ?? ''] ?? ''}: ${describeServer(s)}`),
  ];
}

const ICONS: Record<string, string> = {
  ready: '$(check)',
  starting: '$(loading~spin)',
  failed: '$(error)',
  disabled: '$(circle-slash)',
};

export interface McpPickItem {
  label: string;
  description: string;
  detail?: string;
}

/** The `agentls.mcpStatus` list: the server (with its state's icon), its state, the reason. */
export function mcpPickItems(status: McpStatus): McpPickItem[] {
  return status.servers.map((s) => {
    const item: McpPickItem = {
      label: `${ICONS[s.state] ?? '$(question)'} ${s.name}`,
      description: `${s.state === 'ready' ? `ready · ${s.tools} tool${s.tools === 1 ? '' : 's'}` : s.state}${SOURCES[s.source ?? ''] ?? ''}`,
    };
    if (s.message) {
      item.detail = s.message;
    }
    return item;
  });
}
