// "Rewind to here" and "Fork from here": the preview of a dry run, the buttons, which
// checkpoint a message's hover action goes back to, and the webview's messages.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isFromWebview } from '../chat/messages';
import type { CheckpointEntry, SessionRewindResult } from '../protocol';
import { checkpointItem, checkpointOf, choices, planLines, summary } from '../rewind';
import { addUser, emptyModel, fromItems } from '../transcript';

const plan = (over: Partial<SessionRewindResult>): SessionRewindResult => ({
  dryRun: true,
  restore: [],
  create: [],
  delete: [],
  conflicts: [],
  notStored: [],
  failed: [],
  conversation: false,
  ...over,
});

const checkpoint = (id: string, turnId: string, turn: number): CheckpointEntry => ({
  id,
  turnId,
  turn,
  message: `message ${turn}`,
  time: 0,
  files: [{ path: 'src/lib.rs', change: 'modified' }],
});

describe('rewind', () => {
  it('previews every file of the dry run and the conflicts before anything is restored', () => {
    const lines = planLines(
      plan({
        restore: ['src/lib.rs'],
        create: ['notes.txt'],
        delete: ['gen/out.txt'],
        conflicts: ['README.md'],
        conversation: true,
        message: 'make it 42\nplease',
      }),
      'both',
    );
    assert.deepEqual(lines, [
      'Rewind (both)',
      '',
      'restore:',
      '  ~ src/lib.rs',
      'create again:',
      '  + notes.txt',
      'delete:',
      '  - gen/out.txt',
      'conflicts (changed after the agent: left as they are unless forced):',
      '  ! README.md',
      '',
      'the conversation goes back to before: make it 42',
    ]);
    assert.deepEqual(planLines(plan({}), 'code'), ['Rewind (code)', '', 'no file to change']);
  });

  it('offers to overwrite only when there are conflicts', () => {
    assert.deepEqual(choices(plan({})).map((c) => c.id), ['rewind']);
    assert.deepEqual(choices(plan({ conflicts: ['a'] })).map((c) => c.id), ['rewind', 'force']);
  });

  it("finds a message's checkpoint from the transcript, or from its turn", () => {
    const loaded = fromItems('s', [
      { kind: 'user', text: 'first', checkpointId: 'cp-1' },
      { kind: 'assistant', text: 'ok' },
    ]);
    assert.equal(checkpointOf(loaded, 0, []), 'cp-1');
    assert.equal(checkpointOf(loaded, 1, []), undefined, 'not a user message');
    const live = emptyModel('s');
    const added = addUser(live, 'second');
    if (added.block.type === 'user') {
      added.block.turnId = 'turn-2';
    }
    assert.equal(checkpointOf(live, 0, [checkpoint('cp-1', 'turn-1', 1), checkpoint('cp-2', 'turn-2', 2)]), 'cp-2');
    assert.equal(checkpointOf(live, 0, [checkpoint('cp-1', 'turn-1', 1)]), undefined);
  });

  it('shows a checkpoint as its turn, message and files, and says what a rewind did', () => {
    const item = checkpointItem(checkpoint('cp-2', 't', 2));
    assert.equal(item.label, 'turn 2: message 2');
    assert.equal(item.description, '1 file changed');
    assert.equal(item.detail, 'modified src/lib.rs');
    const done = plan({ dryRun: false, restore: ['a'], conflicts: ['b'], failed: [{ path: 'c', error: 'denied' }] });
    assert.equal(
      summary(done, 'code', false),
      'agentls: rewound (code): 1 restored, 0 created, 0 deleted, 1 conflict(s) left as they are; not restored: c: denied',
    );
  });

  it("takes the hover actions' messages from the webview and nothing malformed", () => {
    assert.ok(isFromWebview({ type: 'rewind', index: 3 }));
    assert.ok(isFromWebview({ type: 'fork', index: 0 }));
    assert.ok(!isFromWebview({ type: 'rewind', index: '3' }));
    assert.ok(!isFromWebview({ type: 'fork' }));
    // "Review from here" and the toolbar's Apply of a session that works apart.
    assert.ok(isFromWebview({ type: 'review', index: 2 }));
    assert.ok(!isFromWebview({ type: 'review' }));
    assert.ok(isFromWebview({ type: 'applyWorktree' }));
  });
});
