// The status bar figure from agent/status (and the MCP servers' state from
// agent/mcp/didChangeStatus), without `vscode` so that it is unit-tested.
import { anyFailed, mcpTooltipLines } from './mcpStatus';
import { sandboxText } from './mode';
import type { AgentStatus, McpStatus, SandboxState, SessionWorktree } from './protocol';

export interface StatusView {
  text: string;
  tooltip: string;
  /** An MCP server failed, or no sandbox can be had: the item gets the warning background. */
  warning: boolean;
}

/** Rounds a fill (0..1) to a whole percentage. */
export function percent(fill: number): number {
  if (!Number.isFinite(fill) || fill < 0) {
    return 0;
  }
  return Math.round(fill * 100);
}

/** `1234567` → `1,234,567`, independent of the host's locale so that tests are stable. */
export function thousands(n: number): string {
  return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/**
 * `$(hubot) 42%`; `~42%` when the figure is the server's estimate rather than the
 * provider's count; `$(sync~spin) compacting` while a compaction runs; the session's mode
 * after it when it is not `ask` (`$(hubot) 42% · plan`). Without a status (no session yet)
 * only the icon is shown, so the item stays discoverable. `$(warning)` (and `warning`, the
 * item's warning background) when an MCP server failed or no sandbox can be had; the
 * tooltip says the mode and the sandbox (the status's, else `sandbox`: what
 * agent/sandbox/status answered) and lists the MCP servers with their state. A session that
 * works apart (`worktree`) adds `$(git-branch)` and its branch to the tooltip.
 */
export function formatStatus(status: AgentStatus | undefined, mcp?: McpStatus, sandbox?: SandboxState, worktree?: SessionWorktree): StatusView {
  const guard = sandboxText(status?.sandbox ?? sandbox);
  const warning = anyFailed(mcp) || (guard?.warning ?? false);
  const mcpLines = mcpTooltipLines(mcp);
  if (mcpLines.length > 0) {
    mcpLines.push('Agent: Show MCP Servers lists them with their messages.');
  }
  const guardLines = guard ? [guard.text] : [];
  const marker = warning ? ' $(warning)' : '';
  const apart = worktree ? [`works apart on branch ${worktree.branch} (Agent: Apply Worktree Session brings its work over)`] : [];
  if (!status) {
    const text = `$(hubot)${worktree ? ' $(git-branch)' : ''}${marker}`;
    const first = worktree ? 'agentls: a new session' : 'agentls: no session yet';
    return { text, tooltip: [first, ...apart, ...guardLines, ...mcpLines].join('\n'), warning };
  }
  const pct = `${status.estimated ? '~' : ''}${percent(status.fill)}%`;
  let text = `$(hubot) ${pct}`;
  if (status.state === 'compacting') {
    text = `$(sync~spin) compacting`;
  } else if (status.state === 'running') {
    text += ' $(loading~spin)';
  }
  if (status.mode && status.mode !== 'ask') {
    text += ` · ${status.mode}`;
  }
  if (worktree) {
    text += ' $(git-branch)';
  }
  const lines = [
    `agentls context: ${thousands(status.usedTokens)} / ${thousands(status.contextWindow)} tokens (${pct})`,
    status.estimated ? 'estimated by agentls (the provider has not reported usage yet)' : 'as reported by the provider',
    `compactions: ${status.compactions}`,
    `state: ${status.state}`,
    `mode: ${status.mode ?? 'ask'}${guard ? ` · ${guard.text}` : ''} (Agent: Set Mode switches it)`,
    ...apart,
    'Click to show the context breakdown.',
    ...mcpLines,
  ];
  return { text: text + marker, tooltip: lines.join('\n'), warning };
}
