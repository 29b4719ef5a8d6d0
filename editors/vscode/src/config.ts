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

/** The binary to start: `agentls.serverPath`, else `agentls` from PATH, else the one
 *  bundled in the extension (`bundled`, when given: `<extension>/bin/agentls` exists). */
export function serverCommand(get: SettingGetter, onPath: (name: string) => boolean = () => true, bundled?: string): string {
  const path = get('serverPath');
  if (typeof path === 'string' && path.trim() !== '') {
    return path.trim();
  }
  if (onPath('agentls') || bundled === undefined) {
    return 'agentls';
  }
  return bundled;
}

/** Whether `name` is an executable file in one of the PATH directories. */
export function onPath(name: string, pathVariable: string | undefined = process.env.PATH): boolean {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const fs = require('node:fs') as typeof import('node:fs');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const nodePath = require('node:path') as typeof import('node:path');
  return (pathVariable ?? '').split(nodePath.delimiter).some((dir) => {
    try {
      fs.accessSync(nodePath.join(dir, name), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
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
