// The user's memory and rules in VS Code: Agent: Open Memory picks a memory (the server's
// `agent/memory` says where its Markdown file is) and opens it to edit; Agent: Show
// Permission Rules lists `agent/permissions`. Pure, so the plain-Node tests use it.
import type { MemoryOffer, MemoryState, PermissionRules } from './protocol';

export interface MemoryPickItem {
  label: string;
  description: string;
  detail: string;
  path: string;
}

/** One item per memory that has a place (a file, which may not exist yet). */
export function memoryPickItems(state: MemoryState): MemoryPickItem[] {
  const labels: Record<string, string> = {
    workspace: 'This workspace\'s memory',
    user: 'Your memory (every workspace)',
  };
  const items: MemoryPickItem[] = [];
  // The workspace's first: what a user most often reviews.
  for (const scope of ['workspace', 'user']) {
    const memory = state.scopes.find((s) => s.scope === scope);
    if (!memory?.path) {
      continue;
    }
    const byModel = memory.entries.filter((e) => e.author === 'model').length;
    const n = memory.entries.length;
    items.push({
      label: labels[scope] ?? scope,
      description: `${n} ${n === 1 ? 'entry' : 'entries'}${byModel > 0 ? `, ${byModel} by the model` : ''}`,
      detail: memory.path,
      path: memory.path,
    });
  }
  return items;
}

export interface OfferPickItem {
  label: string;
  description: string;
  fact: string;
}

/** The chat session's offers (`agent/memory {sessionId}`), to pick the facts to keep. */
export function offerPickItems(offers: MemoryOffer[]): OfferPickItem[] {
  const sources: Record<string, string> = {
    constraint: 'a rule you stated',
    command: 'a check that worked',
  };
  return offers.map((offer) => ({
    label: offer.text,
    description: sources[offer.source] ?? offer.source,
    fact: offer.text,
  }));
}

export interface RulePickItem {
  label: string;
  description: string;
}

/** The rules in force (deny first, as the server sends them), then the ignored ones. */
export function permissionPickItems(result: PermissionRules): RulePickItem[] {
  const items: RulePickItem[] = result.rules.map((r) => ({
    label: `${r.action} ${r.rule}`,
    description: r.source,
  }));
  for (const problem of result.problems) {
    items.push({ label: `$(warning) ${problem}`, description: 'ignored' });
  }
  return items;
}
