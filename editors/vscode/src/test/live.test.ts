// The live turn in the chat's model and messages: the queue and background lists kept from
// their updates, a steered message shown where it joined the turn, which request a message
// sent during a turn takes (steer by default, queue when chosen), and the webview's
// withdraw / stop messages.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isFromWebview } from '../chat/messages';
import type { SessionUpdate } from '../protocol';
import { addUser, applyUpdate, emptyModel, isRunning, sendKind, steeringSent, toText, turnStarted } from '../transcript';

const up = (update: SessionUpdate, turnId = 't1') => ({ sessionId: 's', turnId, update });

describe('live turn', () => {
  it('sends during a turn as a steer by default, as a prompt when queued or idle', () => {
    const m = emptyModel('s');
    assert.equal(sendKind(m, undefined), 'prompt');
    assert.equal(sendKind(m, 'steer'), 'prompt', 'no turn runs: an ordinary prompt');
    turnStarted(m, 't1');
    assert.equal(sendKind(m, undefined), 'steer');
    assert.equal(sendKind(m, 'steer'), 'steer');
    assert.equal(sendKind(m, 'queue'), 'prompt');
  });

  it('keeps the queue and the background commands, and shows a steered message in place', () => {
    const m = emptyModel('s');
    addUser(m, 'start');
    turnStarted(m, 't1');
    const queue = [
      { id: 'steer-1', kind: 'steering', text: 'also this' },
      { id: 'turn-2', kind: 'queued', text: 'later' },
    ];
    assert.deepEqual(applyUpdate(m, up({ kind: 'queue', items: queue })), []);
    assert.deepEqual(m.queue, queue);
    const commands = [{ id: 'bg1', command: 'npm run dev', cwd: '/w', startedAt: 1, state: 'running' }];
    applyUpdate(m, up({ kind: 'background', commands }, ''));
    assert.deepEqual(m.background, commands);
    applyUpdate(m, up({ kind: 'toolCall', toolCallId: 'c1', name: 'shell', title: 'Run `make`', status: 'pending', toolKind: 'execute', input: {}, locations: [] }));
    applyUpdate(m, up({ kind: 'toolCallUpdate', toolCallId: 'c1', status: 'completed', output: 'ok' }));
    const [steered] = applyUpdate(m, up({ kind: 'steered', id: 'steer-1', text: 'also this' }));
    assert.deepEqual(steered.block, { type: 'user', text: 'also this' });
    applyUpdate(m, up({ kind: 'steered', id: 'steer-3', text: 'rm -rf', blocked: true }));
    assert.equal(toText(m), '## You\nstart\n- ✓ Run `make`\n## You\nalso this\n> ⚠ steering blocked by a hook: rm -rf');
    applyUpdate(m, up({ kind: 'queue', items: [] }));
    assert.deepEqual(m.queue, []);
  });

  it('shows a steered message its turn ended before taking: it became a prompt of its own', () => {
    // The queue lists it as queued (moved from steering when the turn ended).
    const m = emptyModel('s');
    addUser(m, 'start');
    turnStarted(m, 't1');
    assert.deepEqual(steeringSent(m, 'steer-1', 'also this'), []);
    applyUpdate(m, up({ kind: 'queue', items: [{ id: 'steer-1', kind: 'steering', text: 'also this' }] }));
    applyUpdate(m, up({ kind: 'agentMessageChunk', text: 'done' }));
    applyUpdate(m, up({ kind: 'turnEnd', stopReason: 'endTurn' }));
    const [shown] = applyUpdate(m, up({ kind: 'queue', items: [{ id: 'steer-1', kind: 'queued', text: 'also this' }] }, ''));
    assert.deepEqual(shown, { index: 2, block: { type: 'user', text: 'also this', turnId: 'steer-1' } });
    assert.ok(isRunning(m), 'its turn runs');
    applyUpdate(m, up({ kind: 'queue', items: [] }, 'steer-1'));
    applyUpdate(m, up({ kind: 'agentMessageChunk', text: 'edited' }, 'steer-1'));
    applyUpdate(m, up({ kind: 'turnEnd', stopReason: 'endTurn' }, 'steer-1'));
    assert.equal(toText(m), '## You\nstart\ndone\n## You\nalso this\nedited');
    assert.ok(!isRunning(m));

    // The queue update came before steer's answer; or only the new turn's updates tell.
    const early = emptyModel('s');
    turnStarted(early, 't1');
    applyUpdate(early, up({ kind: 'turnEnd', stopReason: 'endTurn' }));
    applyUpdate(early, up({ kind: 'queue', items: [{ id: 'steer-2', kind: 'queued', text: 'now' }] }, ''));
    assert.deepEqual(steeringSent(early, 'steer-2', 'now'), [{ index: 0, block: { type: 'user', text: 'now', turnId: 'steer-2' } }]);
    const late = emptyModel('s');
    steeringSent(late, 'steer-3', 'later');
    const changes = applyUpdate(late, up({ kind: 'agentMessageChunk', text: 'ok' }, 'steer-3'));
    assert.deepEqual(changes.map((c) => c.block), [{ type: 'user', text: 'later', turnId: 'steer-3' }, { type: 'agent', text: 'ok' }]);

    // Taken by the turn: the `steered` update shows it, once.
    const taken = emptyModel('s');
    turnStarted(taken, 't1');
    steeringSent(taken, 'steer-4', 'join');
    applyUpdate(taken, up({ kind: 'steered', id: 'steer-4', text: 'join' }));
    applyUpdate(taken, up({ kind: 'queue', items: [] }));
    assert.equal(toText(taken), '## You\njoin');
    assert.deepEqual(taken.steering, {});
  });

  it('accepts the webview messages of the live panel and refuses malformed ones', () => {
    assert.equal(isFromWebview({ type: 'send', text: 'x', how: 'steer' }), true);
    assert.equal(isFromWebview({ type: 'send', text: 'x', how: 'queue' }), true);
    assert.equal(isFromWebview({ type: 'send', text: 'x', how: 'later' }), false);
    assert.equal(isFromWebview({ type: 'unqueue', id: 'steer-1' }), true);
    assert.equal(isFromWebview({ type: 'unqueue' }), false);
    assert.equal(isFromWebview({ type: 'killBackground', id: 'bg1' }), true);
    assert.equal(isFromWebview({ type: 'killBackground', id: 3 }), false);
  });
});
