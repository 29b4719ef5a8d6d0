// The extension's settings → the server's configuration object (initializationOptions
// and didChangeConfiguration `settings`). Pure, so tests build it from a plain getter.
// Empty strings and nulls are left out: the server treats an absent key as its default,
// which is what an untouched VS Code setting means.

/** Reads `agentls.<key>` (VS Code: workspace.getConfiguration('agentls').get). */
export type SettingGetter = (key: string) => unknown;

export interface ServerSettings {
  provider?: Record<string, string | number | boolean>;
  compaction?: Record<string, string | number>;
  approval?: string;
}

function put(target: Record<string, string | number | boolean>, key: string, value: unknown): void {
  if (typeof value === 'boolean') {
    target[key] = value;
  } else if (typeof value === 'string' && value.trim() !== '') {
    target[key] = value.trim();
  } else if (typeof value === 'number' && Number.isFinite(value)) {
    target[key] = value;
  }
}

export function serverSettings(get: SettingGetter): ServerSettings {
  const provider: Record<string, string | number | boolean> = {};
  for (const key of ['kind', 'baseUrl', 'model', 'apiKeyEnv', 'contextWindow', 'images']) {
    put(provider, key, get(`provider.${key}`));
  }
  const compaction: Record<string, string | number> = {};
  for (const key of ['threshold', 'style']) {
    put(compaction, key, get(`compaction.${key}`));
  }
  const settings: ServerSettings = {};
  if (Object.keys(provider).length > 0) {
    settings.provider = provider;
  }
  if (Object.keys(compaction).length > 0) {
    settings.compaction = compaction;
  }
  const approval = get('approval');
  if (typeof approval === 'string' && approval !== '') {
    settings.approval = approval;
  }
  return settings;
}

/** The binary to start and where it was found, for the output channel. */
export interface ServerCommand {
  command: string;
  from: 'agentls.serverPath' | 'bundled with the extension' | 'PATH';
}

/** The binary to start, in rust-analyzer's order: `agentls.serverPath`, else the one
 *  bundled in the extension (`bundled`, when given: `<extension>/bin/agentls` exists),
 *  else `agentls` from PATH. The bundled binary comes before PATH because it was built
 *  with this extension and speaks its protocol; an older `agentls` on PATH may not. */
export function serverCommand(get: SettingGetter, bundled?: string): ServerCommand {
  const path = get('serverPath');
  if (typeof path === 'string' && path.trim() !== '') {
    return { command: path.trim(), from: 'agentls.serverPath' };
  }
  if (bundled !== undefined) {
    return { command: bundled, from: 'bundled with the extension' };
  }
  return { command: 'agentls', from: 'PATH' };
}

/** The notification for a turn that ended while the chat was not in view
 *  (`agentls.notifications.turnEnd`, default on), or undefined: none when the chat is
 *  visible, for another session's turn, or when turned off. */
export function turnEndNotice(
  get: SettingGetter,
  chatVisible: boolean,
  sameSession: boolean,
  stopReason: string | undefined,
): string | undefined {
  if (chatVisible || !sameSession || get('notifications.turnEnd') === false) {
    return undefined;
  }
  switch (stopReason) {
    case 'endTurn':
      return 'agentls: the agent finished its turn.';
    case 'cancelled':
      return undefined;
    default:
      return `agentls: the turn ended (${stopReason ?? 'unknown reason'}).`;
  }
}
