// Sessions that work apart: "Agent: New Session in a Worktree" starts the chat's session in
// a new git worktree of the workspace's repository, on a branch of its own
// (`agent/session/new` with `worktree`); "Agent: Apply Worktree Session" brings its work
// into the workspace (`agent/session/applyWorktree`: through workspace/applyEdit, undoable)
// and lists the files it left as they are (the user changed them since, a deletion) with
// why. Pure: no `vscode`, unit-tested in plain Node (test/worktree.test.ts).
import type { RevertConflict, SessionApplyWorktreeResult, SessionWorktree } from './protocol';

/** The sessions that work apart, by session id (kept in the workspace's state). */
export type Worktrees = Record<string, SessionWorktree>;

/** `paths` as "a, b and 2 more". */
function listed(paths: string[], max = 5): string {
  const shown = paths.slice(0, max).join(', ');
  return paths.length > max ? `${shown} and ${paths.length - max} more` : shown;
}

/** What a new session in a worktree says. */
export function startedMessage(worktree: SessionWorktree): string {
  return `agentls: this session works apart on branch ${worktree.branch} (in ${worktree.path}); your files stay as they are until Agent: Apply Worktree Session.`;
}

/** What an apply says: the message, whether it is a warning (conflicts), the conflicts. */
export function applySummary(result: SessionApplyWorktreeResult): { message: string; warning: boolean; conflicts: RevertConflict[] } {
  const { applied, unchanged, conflicts, branch } = result;
  if (applied.length + unchanged.length + conflicts.length === 0) {
    return { message: `agentls: ${branch} changed no file: nothing to apply.`, warning: false, conflicts };
  }
  const parts: string[] = [];
  if (applied.length > 0) {
    parts.push(`applied ${applied.length} file${applied.length === 1 ? '' : 's'} of ${branch}: ${listed(applied)}`);
  } else {
    parts.push(`nothing to apply from ${branch}`);
  }
  if (unchanged.length > 0) {
    parts.push(`already in the workspace: ${listed(unchanged)}`);
  }
  if (conflicts.length > 0) {
    parts.push(`${conflicts.length} file${conflicts.length === 1 ? '' : 's'} not applied (left as they are): ${listed(conflicts.map((c) => c.path))}`);
  }
  return { message: `agentls: ${parts.join('; ')}.`, warning: conflicts.length > 0, conflicts };
}

/** A conflict as a row of the quick pick that lists them. */
export function conflictItem(conflict: RevertConflict): { label: string; detail: string; path: string } {
  return { label: `$(warning) ${conflict.path}`, detail: conflict.reason, path: conflict.path };
}

/** The chat's toolbar label of a session that works apart. */
export function worktreeLabel(worktree: SessionWorktree | undefined): { text: string; title: string } | undefined {
  return worktree
    ? { text: `⎇ ${worktree.branch}`, title: `This session works apart in ${worktree.path}: Apply brings its work into the workspace.` }
    : undefined;
}
