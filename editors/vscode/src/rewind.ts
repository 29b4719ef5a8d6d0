// Checkpoints in VS Code: "Rewind to here" and "Fork from here" on a user message of the
// chat (its hover actions) and the `agentls.rewind` command (a pick of checkpoints). A
// rewind asks what to restore, shows the server's dry run (files to restore, create,
// delete, and the conflicts: files changed by the user after the agent) and only then
// restores. Pure: no `vscode`, unit-tested in plain Node (test/rewind.test.ts).
import type { CheckpointEntry, SessionRewindResult } from './protocol';
import type { ChatModel } from './transcript';

export type Restore = 'both' | 'code' | 'conversation';

export const RESTORES: { restore: Restore; label: string; detail: string }[] = [
  { restore: 'both', label: 'Code and conversation', detail: 'the files and the chat go back to before this message' },
  { restore: 'code', label: 'Code only', detail: 'the files go back; the conversation goes on' },
  { restore: 'conversation', label: 'Conversation only', detail: 'the chat goes back; the files stay' },
];

/** The dry run as lines (the preview shown before anything is restored). */
export function planLines(plan: SessionRewindResult, restore: Restore): string[] {
  const lines = [`Rewind (${restore})`, ''];
  const section = (title: string, paths: string[] | undefined, mark: string): void => {
    if (paths && paths.length > 0) {
      lines.push(`${title}:`, ...paths.map((p) => `  ${mark} ${p}`));
    }
  };
  section('restore', plan.restore, '~');
  section('create again', plan.create, '+');
  section('delete', plan.delete, '-');
  section('conflicts (changed after the agent: left as they are unless forced)', plan.conflicts, '!');
  section('not stored (too large): not touched', plan.notStored, '?');
  const files = plan.restore.length + plan.create.length + plan.delete.length;
  if (files === 0 && plan.conflicts.length === 0 && restore !== 'conversation') {
    lines.push('no file to change');
  }
  if (plan.conversation) {
    lines.push('', `the conversation goes back to before: ${(plan.message ?? '').split('\n')[0]}`);
  }
  return lines;
}

/** The buttons of the confirmation after the preview. */
export function choices(plan: SessionRewindResult): { id: 'rewind' | 'force'; label: string }[] {
  const list: { id: 'rewind' | 'force'; label: string }[] = [{ id: 'rewind', label: 'Rewind' }];
  if (plan.conflicts.length > 0) {
    list.push({ id: 'force', label: 'Rewind and overwrite the conflicts' });
  }
  return list;
}

/** The checkpoint of the user message at block `index`: the one the transcript carries,
 *  else the server's checkpoint of that message's turn. */
export function checkpointOf(model: ChatModel, index: number, checkpoints: CheckpointEntry[]): string | undefined {
  const block = model.blocks[index];
  if (!block || block.type !== 'user') {
    return undefined;
  }
  if (block.checkpointId) {
    return block.checkpointId;
  }
  return checkpoints.find((c) => block.turnId !== undefined && c.turnId === block.turnId)?.id;
}

/** A checkpoint as a row of the pick. */
export function checkpointItem(c: CheckpointEntry): { label: string; description: string; detail: string } {
  const files = c.files.length;
  return {
    label: `turn ${c.turn}: ${c.message}`,
    description: `${files} file${files === 1 ? '' : 's'} changed`,
    detail: c.files.map((f) => `${f.change} ${f.path}`).join(', '),
  };
}

/** What a finished rewind says. */
export function summary(result: SessionRewindResult, restore: Restore, force: boolean): string {
  let text = `agentls: rewound (${restore}): ${result.restore.length} restored, ${result.create.length} created, ${result.delete.length} deleted`;
  if (result.conflicts.length > 0) {
    text += `, ${result.conflicts.length} conflict(s) ${force ? 'overwritten' : 'left as they are'}`;
  }
  for (const failure of result.failed) {
    text += `; not restored: ${failure.path}: ${failure.error}`;
  }
  return text;
}
