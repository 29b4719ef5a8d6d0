// The context view's layout and HTML, from plain data.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compactionsOf, contextHtml, contextLayout, headroomText, sectionLabel } from '../contextBar';
import type { ContextReport, TranscriptItem } from '../protocol';

const report: ContextReport = {
  contextWindow: 128_000,
  totalTokens: 20_000,
  fill: 20_000 / 128_000,
  estimated: true,
  // What the server sends for 0.85 × (128,000 − 4,096).
  thresholdTokens: 105_318,
  autoCompact: true,
  messages: [],
  tokenizer: 'o200k_base',
  calibration: { ratio: 1, samples: 0 },
  editorParts: [],
  sections: [
    { name: 'tools', tokens: 3000, trust: 'trusted' },
    { name: 'system', tokens: 2000, trust: 'trusted' },
    { name: 'developerInstructions', tokens: 0, trust: 'trusted' },
    { name: 'agentsMd', tokens: 500, trust: 'trusted' },
    { name: 'skills', tokens: 100, trust: 'trusted' },
    { name: 'conversation', tokens: 9000, trust: 'trusted' },
    { name: 'toolOutputs', tokens: 4000, trust: 'untrusted' },
    { name: 'environment', tokens: 100, trust: 'untrusted' },
    { name: 'editor', tokens: 1300, trust: 'untrusted' },
  ],
};

describe('context bar', () => {
  it('lays the sections out in request order, by share of the window, empty ones left out', () => {
    const layout = contextLayout(report, []);
    assert.deepEqual(
      layout.segments.map((s) => [s.label, s.tokens, s.trust]),
      [
        ['tools', 3000, 'trusted'],
        ['system', 2000, 'trusted'],
        ['AGENTS.md', 500, 'trusted'],
        ['skills', 100, 'trusted'],
        ['history', 9000, 'trusted'],
        ['tool outputs', 4000, 'untrusted'],
        ['environment', 100, 'untrusted'],
        ['editor', 1300, 'untrusted'],
      ],
    );
    assert.equal(layout.segments[4].share, 9000 / 128_000);
    assert.equal(layout.thresholdTokens, 105_318);
    assert.equal(layout.headroom, 105_318 - 20_000);
    assert.equal(headroomText(layout), '85,318 tokens of headroom before compaction at 105,318 tokens');
  });

  it('past the threshold the headroom is negative and says so; new sections keep their name', () => {
    const over = { ...report, totalTokens: 110_000, sections: [...report.sections, { name: 'reminders', tokens: 50, trust: 'trusted' as const }, { name: 'later', tokens: 1, trust: 'trusted' as const }] };
    const layout = contextLayout(over, []);
    assert.equal(layout.headroom, 105_318 - 110_000);
    assert.match(headroomText(layout), /^4,682 tokens past the threshold/);
    assert.equal(sectionLabel('reminders'), 'reminders');
    assert.equal(layout.segments.at(-1)?.label, 'later');
  });

  it('takes the compactions from the transcript, oldest first', () => {
    const items: TranscriptItem[] = [
      { kind: 'user', text: 'hi' },
      { kind: 'compaction', summary: 's', tokensBefore: 90_000, tokensAfter: 30_000, strategy: 'summary' },
      { kind: 'assistant', text: 'ok' },
      { kind: 'compaction', summary: 's', tokensBefore: 70_000, tokensAfter: 50_000, strategy: 'trim' },
    ];
    assert.deepEqual(compactionsOf(items), [
      { tokensBefore: 90_000, tokensAfter: 30_000, strategy: 'summary' },
      { tokensBefore: 70_000, tokensAfter: 50_000, strategy: 'trim' },
    ]);
    assert.deepEqual(compactionsOf(undefined), []);
  });

  it('draws the bar, the table, the compactions and the threshold without inline styles or scripts', () => {
    const layout = contextLayout(report, [{ tokensBefore: 90_000, tokensAfter: 30_000, strategy: 'summary' }]);
    const html = contextHtml(layout, 'vscode-resource:', 'N0NCE');
    assert.equal((html.match(/class="segment /g) ?? []).length, 8);
    assert.match(html, /data-section="conversation" title="history: 9,000 tokens, trusted"/);
    assert.match(html, /\.s4 \{ width: 7\.031%; min-width: 2px; \}/, 'the history segment is 9,000 / 128,000 of the bar');
    assert.match(html, /\.threshold \{ position: absolute; top: -4px; bottom: -4px; left: 82\.280%;/);
    assert.match(html, /<li>90,000 → 30,000 tokens \(summary\)<\/li>/);
    assert.match(html, /20,000 of 128,000 tokens \(16%\), estimated/);
    assert.match(html, /<tr data-section="toolOutputs" class="untrusted">/);
    assert.doesNotMatch(html, /style="/);
    assert.doesNotMatch(html, /<script/);
    assert.match(html, /style-src vscode-resource: 'nonce-N0NCE'/);
    assert.match(contextHtml(contextLayout(report, []), 'x', 'n'), /No compaction so far\./);
  });

  it('escapes what the server names', () => {
    const odd = { ...report, sections: [{ name: '<b>"x"', tokens: 5, trust: 'trusted' as const }] };
    const html = contextHtml(contextLayout(odd, []), 'x', 'n');
    assert.doesNotMatch(html, /<b>"x"/);
    assert.match(html, /&lt;b&gt;&quot;x&quot;/);
  });
});
