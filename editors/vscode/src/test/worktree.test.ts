// A session that works apart: what starting one and applying its work say, and the chat's
// and the status bar's words for it.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatStatus } from '../status';
import { applySummary, conflictItem, startedMessage, worktreeLabel } from '../worktree';

const worktree = { branch: 'agentls/session-1', path: '/state/worktrees/session-1' };

describe('worktree sessions', () => {
  it('says where a new session works', () => {
    assert.equal(
      startedMessage(worktree),
      'agentls: this session works apart on branch agentls/session-1 (in /state/worktrees/session-1); your files stay as they are until Agent: Apply Worktree Session.',
    );
    assert.deepEqual(worktreeLabel(worktree), {
      text: '⎇ agentls/session-1',
      title: 'This session works apart in /state/worktrees/session-1: Apply brings its work into the workspace.',
    });
    assert.equal(worktreeLabel(undefined), undefined);
  });

  it('sums an apply up: applied, already there, and the conflicts as a warning', () => {
    const conflict = { path: 'b.txt', reason: 'changed in the workspace since the worktree was made' };
    assert.deepEqual(applySummary({ branch: 'agentls/session-1', applied: ['a.txt'], unchanged: ['c.txt'], conflicts: [conflict] }), {
      message:
        'agentls: applied 1 file of agentls/session-1: a.txt; already in the workspace: c.txt; 1 file not applied (left as they are): b.txt.',
      warning: true,
      conflicts: [conflict],
    });
    assert.deepEqual(applySummary({ branch: 'b', applied: ['1', '2', '3', '4', '5', '6'], unchanged: [], conflicts: [] }), {
      message: 'agentls: applied 6 files of b: 1, 2, 3, 4, 5 and 1 more.',
      warning: false,
      conflicts: [],
    });
    assert.equal(applySummary({ branch: 'b', applied: [], unchanged: ['a.txt'], conflicts: [] }).message, 'agentls: nothing to apply from b; already in the workspace: a.txt.');
    assert.equal(applySummary({ branch: 'b', applied: [], unchanged: [], conflicts: [] }).message, 'agentls: b changed no file: nothing to apply.');
    assert.deepEqual(conflictItem(conflict), { label: '$(warning) b.txt', detail: conflict.reason, path: 'b.txt' });
  });

  it('the status bar marks a session that works apart and names its branch', () => {
    const status = {
      sessionId: 's',
      fill: 0.1,
      usedTokens: 100,
      contextWindow: 1000,
      estimated: false,
      compactions: 0,
      state: 'idle',
      mode: 'ask',
      sandbox: { mode: 'off', network: true, available: true, enforced: false },
    };
    const apart = formatStatus(status, undefined, undefined, worktree);
    assert.equal(apart.text, '$(hubot) 10% $(git-branch)');
    assert.match(apart.tooltip, /works apart on branch agentls\/session-1 \(Agent: Apply Worktree Session brings its work over\)/);
    assert.equal(formatStatus(status).text, '$(hubot) 10%');
    // A new session, before its first status.
    assert.equal(formatStatus(undefined, undefined, undefined, worktree).text, '$(hubot) $(git-branch)');
  });
});
