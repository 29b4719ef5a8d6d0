// The session's mode and the command sandbox as the extension shows them: the modes
// `agent/session/setMode` takes (the "Agent: Set Mode" quick pick) and the words for
// agent/status's `mode` and `sandbox` (also `agent/sandbox/status`'s answer), without
// `vscode` so that they are unit-tested.
import type { SandboxState } from './protocol';

/** The modes of agent/session/setMode, in the server's order. */
export const MODES: { mode: string; description: string }[] = [
  { mode: 'ask', description: 'Ask before every edit and command' },
  { mode: 'auto-edit', description: 'Edit without asking; ask before commands' },
  { mode: 'full-auto', description: 'Edit and run commands without asking' },
  { mode: 'plan', description: 'Read-only: explore and plan, no edits; commands run read-only' },
];

export interface ModePickItem {
  label: string;
  description: string;
  mode: string;
}

/** The quick pick's rows, the current mode marked. */
export function modePickItems(current: string | undefined): ModePickItem[] {
  return MODES.map((m) => ({
    label: m.mode === current ? `$(check) ${m.mode}` : m.mode,
    description: m.description,
    mode: m.mode,
  }));
}

/**
 * The sandbox in a few words, and whether it is a warning (none can be had, or it is not
 * enforced where one is asked for). Undefined for a server that says nothing of one.
 */
export function sandboxText(sandbox: SandboxState | undefined): { text: string; warning: boolean } | undefined {
  if (!sandbox) {
    return undefined;
  }
  const why = sandbox.message ? `: ${sandbox.message}` : '';
  if (!sandbox.available && sandbox.mode !== 'off') {
    return { text: `sandbox unavailable${why}`, warning: true };
  }
  if (sandbox.mode === 'off') {
    return { text: 'sandbox off: commands run with your full rights', warning: false };
  }
  const text = `sandbox: ${sandbox.mode}${sandbox.network ? '' : ', no network'}`;
  return sandbox.enforced ? { text, warning: false } : { text: `${text} (not enforced${why})`, warning: true };
}
