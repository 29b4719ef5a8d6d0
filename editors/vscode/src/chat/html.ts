// The webview's HTML: a strict Content-Security-Policy with a per-load nonce, the script
// and stylesheet from the extension's media/ folder only, nothing remote. Pure, so the
// policy is unit-tested.
import { randomBytes } from 'node:crypto';

export function makeNonce(): string {
  return randomBytes(18).toString('base64').replace(/[^A-Za-z0-9]/g, '');
}

export interface HtmlParts {
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  nonce: string;
}

function attr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
}

export function chatHtml(parts: HtmlParts): string {
  const nonce = attr(parts.nonce);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attr(contentSecurityPolicy(parts.cspSource, parts.nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" nonce="${nonce}" href="${attr(parts.styleUri)}">
<title>agentls</title>
</head>
<body>
<div id="toolbar">
  <button id="new" title="New session">New</button>
  <button id="sessions" title="Sessions">Sessions</button>
  <span id="worktree" hidden></span>
  <button id="apply-worktree" title="Bring this session's work into the workspace (Agent: Apply Worktree Session)" hidden>Apply</button>
  <span id="spacer"></span>
  <button id="stop" title="Stop the running turn" hidden>Stop</button>
</div>
<div id="transcript" role="log" aria-live="polite"></div>
<div id="composer">
  <div id="live" hidden><div id="queue"></div><div id="background"></div></div>
  <div id="busy" hidden><span>A turn is running:</span><button id="steer" title="Send into the running turn, after its current tool calls (Enter)">Steer now ⏎</button><button id="queue-send" title="Send as a turn of its own after this one (Alt+Enter)">Queue ⌥⏎</button></div>
  <div id="context" hidden><span id="context-label"></span><button id="context-clear" title="Do not attach">×</button></div>
  <div id="suggestions" role="listbox" hidden></div>
  <div id="images" hidden></div>
  <textarea id="input" rows="3" placeholder="Ask the agent (Enter to send, Shift+Enter for a new line; paste or drop an image)"></textarea>
</div>
<script nonce="${nonce}" src="${attr(parts.scriptUri)}"></script>
</body>
</html>`;
}
