// "Agent: Review Changes": the rows of the picks, the text before the turn rebuilt from the
// hunks (the diff's left side), the undo request and what its answer says.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChangedFile, ChangeHunk } from '../protocol';
import { fileActions, fileItem, hunkItem, revertMessages, revertRequest, textBefore, turnItems } from '../reviewChanges';

const lines = (prefix: string, n: number): string => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}\n`).join('');

// As agent/session/changes lists a.txt after `a2` → `A2` and `a18` → `A18`, `added`.
const A = lines('a', 20);
const AFTER = A.replace('a2\n', 'A2\n').replace('a18\n', 'A18\nadded\n');
const H1: ChangeHunk = { id: 'h2-1', oldStart: 2, oldLines: 1, newStart: 2, newLines: 1, diff: '@@ -2,1 +2,1 @@\n a1\n-a2\n+A2\n a3\n a4\n a5\n' };
const H2: ChangeHunk = {
  id: 'h18-2',
  oldStart: 18,
  oldLines: 1,
  newStart: 18,
  newLines: 2,
  diff: '@@ -18,1 +18,2 @@\n a15\n a16\n a17\n-a18\n+A18\n+added\n a19\n a20\n',
};
const file = (over: Partial<ChangedFile>): ChangedFile => ({ path: 'a.txt', status: 'modified', changedSince: false, hunks: [H1, H2], ...over });

describe('review changes', () => {
  it('lists a file with its status, hunk count and a mark when the user changed it since', () => {
    assert.deepEqual(fileItem(file({})), { label: '$(diff-modified) a.txt', description: 'modified · 2 hunks', path: 'a.txt' });
    assert.deepEqual(fileItem(file({ path: 'c.txt', status: 'added', hunks: [H1], changedSince: true })), {
      label: '$(diff-added) c.txt',
      description: 'added · 1 hunk · changed since the agent',
      path: 'c.txt',
    });
    assert.equal(fileItem(file({ path: 'x.png', hunks: [] })).description, 'modified · not text: undo it whole');
  });

  it('offers keep, undo the file, and undo a hunk only when there are hunks', () => {
    assert.deepEqual(fileActions(file({})).map((a) => a.action), ['keep', 'undoFile', 'undoHunk']);
    assert.deepEqual(fileActions(file({ hunks: [] })).map((a) => a.action), ['keep', 'undoFile']);
    assert.match(fileActions(file({ status: 'added' }))[1].detail, /remove the file the agent created/);
  });

  it("shows a hunk by its header and first changed lines", () => {
    assert.deepEqual(hunkItem(H2), { label: '@@ -18,1 +18,2 @@', detail: '-a18  +A18  +added', id: 'h18-2' });
    assert.equal(hunkItem(H2, 2).detail, '-a18  +A18 (+1 more)');
  });

  it('rebuilds the text before the turn from the text it left and the hunks', () => {
    assert.equal(textBefore(AFTER, [H1, H2]), A);
    assert.equal(textBefore(AFTER, [H2, H1]), A, 'in any order');
    // One hunk only: the other stays as the turn left it.
    assert.equal(textBefore(AFTER, [H2]), A.replace('a2\n', 'A2\n'));
    // Added and deleted files.
    assert.equal(textBefore('new\n', [{ id: 'h', oldStart: 0, oldLines: 0, newStart: 1, newLines: 1, diff: '@@ -0,0 +1,1 @@\n+new\n' }]), '');
    assert.equal(textBefore('', [{ id: 'h', oldStart: 1, oldLines: 2, newStart: 0, newLines: 0, diff: '@@ -1,2 +0,0 @@\n-x\n-y\n' }]), 'x\ny\n');
    // Lines removed in the middle: put back after the line before them.
    assert.equal(
      textBefore('1\n2\n5\n', [{ id: 'h', oldStart: 3, oldLines: 2, newStart: 2, newLines: 0, diff: '@@ -3,2 +2,0 @@\n 1\n 2\n-3\n-4\n 5\n' }]),
      '1\n2\n3\n4\n5\n',
    );
    // No newline at the end, on either side.
    const noEol: ChangeHunk = {
      id: 'h',
      oldStart: 2,
      oldLines: 1,
      newStart: 2,
      newLines: 1,
      diff: '@@ -2,1 +2,1 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n',
    };
    assert.equal(textBefore('a\nc', [noEol]), 'a\nb');
    const addEol: ChangeHunk = { ...noEol, diff: '@@ -2,1 +2,1 @@\n a\n-b\n\\ No newline at end of file\n+c\n' };
    assert.equal(textBefore('a\nc\n', [addEol]), 'a\nb');
  });

  it('gives up when the file no longer holds what the turn left (the user changed it)', () => {
    assert.equal(textBefore(AFTER.replace('added\n', 'mine\n'), [H1, H2]), undefined);
    assert.equal(textBefore('a1\n', [H2]), undefined);
  });

  it('asks for a whole file or one hunk, and says what happened', () => {
    assert.deepEqual(revertRequest('s1', 'a.txt'), { sessionId: 's1', changes: [{ path: 'a.txt' }] });
    assert.deepEqual(revertRequest('s1', 'a.txt', 'h18-2'), { sessionId: 's1', changes: [{ path: 'a.txt', hunkIds: ['h18-2'] }] });
    assert.deepEqual(revertRequest('s1', 'a.txt', undefined, 'turn-2'), { sessionId: 's1', sinceTurnId: 'turn-2', changes: [{ path: 'a.txt' }] });
    assert.deepEqual(revertMessages({ reverted: ['a.txt'], conflicts: [], checkpointId: 'cp' }, true), {
      info: 'agentls: undone a hunk of a.txt',
      warnings: [],
    });
    assert.deepEqual(
      revertMessages({ reverted: [], conflicts: [{ path: 'b.txt', reason: 'changed after the agent\'s last change' }] }, false),
      { info: undefined, warnings: ["agentls: not undone: b.txt: changed after the agent's last change"] },
    );
  });

  it('offers the last turn first, then each earlier turn and after, with the files changed from it on', () => {
    const checkpoint = (turn: number, turnId: string, message: string, paths: string[]) => ({
      id: `cp${turn}`,
      turn,
      turnId,
      message,
      time: 0,
      files: paths.map((path) => ({ path, change: 'modified' })),
    });
    const items = turnItems([
      checkpoint(1, 'turn-1', 'Change a.', ['a.txt']),
      checkpoint(2, 'turn-2', 'Change a and b.\nMore words.', ['a.txt', 'b.txt']),
      checkpoint(3, 'undo-9', "(undo of the agent's changes to b.txt)", ['b.txt']),
      checkpoint(3, 'turn-3', 'Change c.', ['c.txt']),
    ]);
    assert.deepEqual(items, [
      { label: '$(history) The last turn: Change c.', description: 'turn 3 · 1 file changed', turnId: undefined, title: 'the last turn' },
      { label: 'From turn 2: Change a and b.', description: 'and the 1 after it · 3 files changed', turnId: 'turn-2', title: 'turn 2 and after' },
      { label: 'From turn 1: Change a.', description: 'and the 2 after it · 3 files changed', turnId: 'turn-1', title: 'turn 1 and after' },
    ]);
    assert.deepEqual(turnItems([]), []);
  });
});
