// The picture of the context window opened from the status bar item: one stacked bar of
// the window by section (agent/session/context), the compactions so far (the `compaction`
// items of agent/session/load) and the headroom to the compaction threshold. Pure (no
// `vscode`): the layout and its HTML are unit-tested; the extension only fetches and shows.
import type { ContextReport, TranscriptItem } from './protocol';
import { thousands } from './status';

/** How the sections are called where the user reads them. */
const LABELS: Record<string, string> = {
  tools: 'tools',
  mcpTools: 'MCP tools',
  system: 'system',
  developerInstructions: 'developer instructions',
  agentsMd: 'AGENTS.md',
  skills: 'skills',
  conversation: 'history',
  toolOutputs: 'tool outputs',
  environment: 'environment',
  editor: 'editor',
  reminders: 'reminders',
  repoMap: 'repository map',
};

export interface Segment {
  name: string;
  label: string;
  tokens: number;
  trust: string;
  /** Share of the whole window, 0..1. */
  share: number;
}

export interface Compaction {
  tokensBefore: number;
  tokensAfter: number;
  strategy: string;
}

export interface ContextLayout {
  window: number;
  total: number;
  fill: number;
  estimated: boolean;
  /** The sections with tokens, in request order (empty sections are left out). */
  segments: Segment[];
  /** Tokens at which a model call waits for a compaction. */
  thresholdTokens: number;
  /** Where the threshold falls on the bar, 0..1 of the window. */
  thresholdShare: number;
  /** Tokens left before the threshold; negative when the request is past it. */
  headroom: number;
  compactions: Compaction[];
}

/** The section's label: the known names read as words, anything new as sent. */
export function sectionLabel(name: string): string {
  return LABELS[name] ?? name;
}

/** The compactions recorded in a session's transcript, oldest first. */
export function compactionsOf(items: TranscriptItem[] | undefined): Compaction[] {
  return (items ?? []).flatMap((item) =>
    item.kind === 'compaction' ? [{ tokensBefore: item.tokensBefore, tokensAfter: item.tokensAfter, strategy: item.strategy }] : [],
  );
}

export function contextLayout(report: ContextReport, compactions: Compaction[]): ContextLayout {
  const window = Math.max(report.contextWindow, 1);
  const segments = report.sections
    .filter((s) => s.tokens > 0)
    .map((s) => ({ name: s.name, label: sectionLabel(s.name), tokens: s.tokens, trust: s.trust, share: s.tokens / window }));
  // The server's figure: the turn compares the same request size with the same limit.
  const limit = report.thresholdTokens;
  return {
    window: report.contextWindow,
    total: report.totalTokens,
    fill: report.fill,
    estimated: report.estimated,
    segments,
    thresholdTokens: limit,
    thresholdShare: Math.min(limit / window, 1),
    headroom: limit - report.totalTokens,
    compactions,
  };
}

/** One line per fact, the way the view and a screen reader say them. */
export function headroomText(layout: ContextLayout): string {
  const at = `compaction at ${thousands(layout.thresholdTokens)} tokens`;
  return layout.headroom >= 0
    ? `${thousands(layout.headroom)} tokens of headroom before ${at}`
    : `${thousands(-layout.headroom)} tokens past the threshold: the next model call compacts first (${at})`;
}

export function compactionText(c: Compaction): string {
  return `${thousands(c.tokensBefore)} → ${thousands(c.tokensAfter)} tokens (${c.strategy})`;
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Percent of the bar, with enough digits that small sections stay visible. */
function pct(share: number): string {
  return `${(Math.max(share, 0) * 100).toFixed(3)}%`;
}

/**
 * The view's HTML: no script; widths and colours in one nonce'd style element (the
 * Content-Security-Policy allows no inline style attributes).
 */
export function contextHtml(layout: ContextLayout, cspSource: string, nonce: string): string {
  const rules = [
    'body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 16px; }',
    '#bar { position: relative; display: flex; height: 28px; border: 1px solid var(--vscode-panel-border, #888); margin: 12px 0 4px; }',
    '#bar .segment { height: 100%; flex: none; }',
    '#bar .free { flex: 1 1 auto; }',
    `#bar .threshold { position: absolute; top: -4px; bottom: -4px; left: ${pct(layout.thresholdShare)}; border-left: 2px dashed var(--vscode-editorWarning-foreground, #c80); }`,
    'table { border-collapse: collapse; margin: 8px 0; }',
    'td, th { padding: 2px 12px 2px 0; text-align: left; }',
    'td.num { text-align: right; font-variant-numeric: tabular-nums; }',
    '.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; }',
    '.untrusted { font-style: italic; }',
  ];
  layout.segments.forEach((s, i) => {
    const hue = (i * 137) % 360;
    rules.push(`.s${i} { width: ${pct(s.share)}; min-width: 2px; }`, `.c${i} { background: hsl(${hue}, 55%, 50%); }`);
  });
  const bar = layout.segments
    .map((s, i) => `<div class="segment s${i} c${i}" data-section="${escape(s.name)}" title="${escape(`${s.label}: ${thousands(s.tokens)} tokens, ${s.trust}`)}"></div>`)
    .join('');
  const rows = layout.segments
    .map(
      (s, i) =>
        `<tr data-section="${escape(s.name)}" class="${escape(s.trust)}"><td><span class="swatch c${i}"></span>${escape(s.label)}</td>` +
        `<td class="num">${thousands(s.tokens)}</td><td class="num">${(s.share * 100).toFixed(1)}%</td><td>${escape(s.trust)}</td></tr>`,
    )
    .join('\n');
  const compactions =
    layout.compactions.length === 0
      ? '<p id="compactions">No compaction so far.</p>'
      : `<ol id="compactions">${layout.compactions.map((c) => `<li>${escape(compactionText(c))}</li>`).join('')}</ol>`;
  const csp = `default-src 'none'; style-src ${cspSource} 'nonce-${nonce}'`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escape(csp)}">
<style nonce="${escape(nonce)}">
${rules.join('\n')}
</style>
<title>agentls context</title>
</head>
<body>
<h2>Context window</h2>
<p id="total">${thousands(layout.total)} of ${thousands(layout.window)} tokens (${Math.round(layout.fill * 100)}%)${layout.estimated ? ', estimated' : ''}</p>
<div id="bar" role="img" aria-label="${escape(layout.segments.map((s) => `${s.label} ${thousands(s.tokens)}`).join(', '))}">${bar}<div class="free"></div><div class="threshold" title="compaction threshold"></div></div>
<p id="headroom">${escape(headroomText(layout))}</p>
<table id="sections">
<tr><th>section</th><th>tokens</th><th>of window</th><th>trust</th></tr>
${rows}
</table>
<h3>Compactions</h3>
${compactions}
</body>
</html>`;
}
