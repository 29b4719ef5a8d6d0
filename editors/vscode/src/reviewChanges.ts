// "Agent: Review Changes" (`agentls.reviewChanges`): first which turns (the last one, or an
// earlier one and every turn after it, from `agent/session/checkpoints`), then the files
// they changed (`agent/session/changes` with `sinceTurnId`) in a quick pick; a file opens as
// a diff (its text before the turns, rebuilt here from the hunks' old side, against the
// file) with actions to keep it, undo it whole or undo one hunk
// (`agent/session/revertChanges`); a conflict (lines the user changed since) is reported,
// never overwritten. Pure: no `vscode`, unit-tested in plain Node
// (test/reviewChanges.test.ts).
import type { ChangedFile, ChangeHunk, ChangeToRevert, CheckpointEntry, SessionRevertChangesResult } from './protocol';

/** A row of the pick of where the review starts: `turnId` undefined is the last turn. */
export interface TurnItem {
  label: string;
  description: string;
  turnId: string | undefined;
  /** The pick of files' title. */
  title: string;
}

/**
 * The turns a review can start from, newest first: the last turn (no `sinceTurnId`), then
 * each earlier turn "and after", with the files changed from it on. The checkpoints of an
 * undo (`undo-…`) are not turns.
 */
export function turnItems(checkpoints: CheckpointEntry[]): TurnItem[] {
  const turns = checkpoints.filter((c) => c.turnId && !c.turnId.startsWith('undo-'));
  const items: TurnItem[] = [];
  const files = new Set<string>();
  for (let i = turns.length - 1; i >= 0; i--) {
    const c = turns[i];
    c.files.forEach((f) => files.add(f.path));
    const later = turns.length - 1 - i;
    const changed = `${files.size} file${files.size === 1 ? '' : 's'} changed`;
    const message = c.message.split('\n')[0];
    if (later === 0) {
      items.push({ label: `$(history) The last turn: ${message}`, description: `turn ${c.turn} · ${changed}`, turnId: undefined, title: 'the last turn' });
    } else {
      items.push({
        label: `From turn ${c.turn}: ${message}`,
        description: `and the ${later} after it · ${changed}`,
        turnId: c.turnId,
        title: `turn ${c.turn} and after`,
      });
    }
  }
  return items;
}

const STATUS_ICON: Record<string, string> = {
  added: '$(diff-added)',
  modified: '$(diff-modified)',
  deleted: '$(diff-removed)',
};

/** The count of a file's hunks as the pick shows it. */
function hunkCount(file: ChangedFile): string {
  const n = file.hunks.length;
  return n === 0 ? 'not text: undo it whole' : `${n} hunk${n === 1 ? '' : 's'}`;
}

/** A changed file as a row of the first pick. */
export function fileItem(file: ChangedFile): { label: string; description: string; path: string } {
  const since = file.changedSince ? ' · changed since the agent' : '';
  return {
    label: `${STATUS_ICON[file.status] ?? ''} ${file.path}`.trim(),
    description: `${file.status} · ${hunkCount(file)}${since}`,
    path: file.path,
  };
}

export type FileAction = 'keep' | 'undoFile' | 'undoHunk';

/** What can be done with a file, once its diff is open. */
export function fileActions(file: ChangedFile): { label: string; detail: string; action: FileAction }[] {
  const actions: { label: string; detail: string; action: FileAction }[] = [
    { label: '$(check) Keep', detail: 'leave the agent\'s change as it is', action: 'keep' },
    {
      label: '$(discard) Undo the whole file',
      detail:
        file.status === 'added'
          ? 'remove the file the agent created'
          : file.status === 'deleted'
            ? 'bring back the file the agent deleted'
            : 'back to its text before the turn',
      action: 'undoFile',
    },
  ];
  if (file.hunks.length > 0) {
    actions.push({ label: '$(discard) Undo a hunk…', detail: 'choose one of its hunks to undo; the others stay', action: 'undoHunk' });
  }
  return actions;
}

/** The lines of a hunk's diff without its `@@` header and the trailing empty one. */
function bodyOf(hunk: ChangeHunk): string[] {
  const lines = hunk.diff.split('\n');
  if (lines[lines.length - 1] === '') {
    lines.pop();
  }
  return lines.slice(1);
}

/** A hunk as a row of the second pick: its `@@` header, then its first changed lines. */
export function hunkItem(hunk: ChangeHunk, max = 3): { label: string; detail: string; id: string } {
  const header = hunk.diff.split('\n')[0];
  const changed = bodyOf(hunk).filter((l) => l.startsWith('-') || l.startsWith('+'));
  const shown = changed.slice(0, max).map((l) => (l.length > 60 ? `${l.slice(0, 59)}…` : l));
  const more = changed.length > max ? ` (+${changed.length - max} more)` : '';
  return { label: header, detail: shown.join('  ') + more, id: hunk.id };
}

/** A text as lines that keep their line break (the last one may have none). */
function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** A side of a hunk (`-` the old one, `+` the new one) as lines with their line break. */
function side(hunk: ChangeHunk, sign: '-' | '+'): string[] {
  const out: string[] = [];
  const body = bodyOf(hunk);
  let last: string | undefined;
  for (const line of body) {
    const mark = line[0];
    if (mark === '\\') {
      // "\ No newline at end of file": the line before has none (context is not kept).
      if (last === sign) {
        out[out.length - 1] = out[out.length - 1].replace(/\n$/, '');
      }
      continue;
    }
    last = mark;
    if (mark === sign) {
      out.push(`${line.slice(1)}\n`);
    }
  }
  return out;
}

/**
 * The file's text before the turns, from its text as they left it (`after`) and its hunks:
 * each hunk's new lines put back to its old ones, bottom first. Undefined when `after` does
 * not hold a hunk's new lines where the hunk says (the file changed since): then the caller
 * shows the diff itself.
 */
export function textBefore(after: string, hunks: ChangeHunk[]): string | undefined {
  const lines = splitLines(after);
  const sorted = [...hunks].sort((a, b) => b.newStart - a.newStart);
  for (const hunk of sorted) {
    const from = hunk.newLines === 0 ? hunk.newStart : hunk.newStart - 1;
    const added = side(hunk, '+');
    const removed = side(hunk, '-');
    if (added.length !== hunk.newLines || removed.length !== hunk.oldLines || from < 0 || from + hunk.newLines > lines.length) {
      return undefined;
    }
    const now = lines.slice(from, from + hunk.newLines);
    // The last line of the file may lack its break on one side only.
    const same = now.every((l, i) => l === added[i] || (i === now.length - 1 && l.replace(/\n$/, '') === added[i].replace(/\n$/, '')));
    if (!same) {
      return undefined;
    }
    lines.splice(from, hunk.newLines, ...removed);
  }
  return lines.join('');
}

/** The request to undo a whole file (no `hunkIds`) or one hunk of it, of the turns from
 *  `sinceTurnId` on (absent: the last turn). */
export function revertRequest(
  sessionId: string,
  path: string,
  hunkId?: string,
  sinceTurnId?: string,
): { sessionId: string; sinceTurnId?: string; changes: ChangeToRevert[] } {
  const changes = [hunkId ? { path, hunkIds: [hunkId] } : { path }];
  return sinceTurnId ? { sessionId, sinceTurnId, changes } : { sessionId, changes };
}

/** What an undo's answer says: a message for what was undone, one warning per conflict. */
export function revertMessages(result: SessionRevertChangesResult, hunk: boolean): { info?: string; warnings: string[] } {
  const info = result.reverted.length > 0 ? `agentls: undone ${hunk ? 'a hunk of ' : ''}${result.reverted.join(', ')}` : undefined;
  const warnings = result.conflicts.map((c) => `agentls: not undone: ${c.path}: ${c.reason}`);
  return { info, warnings };
}
