// Images pasted or dropped into the chat input: what the extension host lets through to
// `agent/session/prompt` (the webview's `send` message).
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodedBytes, imagesProblem, MAX_IMAGES } from '../chat/images';
import { isFromWebview } from '../chat/messages';

const png = { mimeType: 'image/png', data: 'iVBORw0KGgo=' };

describe('chat images', () => {
  it('a send with pasted images passes, and one without images still does', () => {
    assert.equal(isFromWebview({ type: 'send', text: 'what is this?', images: [png] }), true);
    assert.equal(isFromWebview({ type: 'send', text: '', images: [png, { ...png, mimeType: 'image/webp' }] }), true);
    assert.equal(isFromWebview({ type: 'send', text: 'hi' }), true);
  });
  it('refuses what the server would: another format, no data, too many, too large', () => {
    assert.match(imagesProblem([{ mimeType: 'image/svg+xml', data: 'PHN2Zz4=' }])!, /not a PNG, JPEG, GIF or WebP/);
    assert.match(imagesProblem([{ mimeType: 'image/png', data: '' }])!, /no base64 data/);
    assert.match(imagesProblem([{ mimeType: 'image/png', data: 'not base64!' }])!, /no base64 data/);
    assert.match(imagesProblem(Array(MAX_IMAGES + 1).fill(png))!, /at most 8/);
    const big = 'A'.repeat(Math.ceil(((5 * 1024 * 1024 + 3) * 4) / 3));
    assert.match(imagesProblem([{ mimeType: 'image/png', data: big }])!, /larger than 5 MB/);
    assert.equal(isFromWebview({ type: 'send', text: 'x', images: [{ mimeType: 'text/plain', data: 'eA==' }] }), false);
    assert.equal(isFromWebview({ type: 'send', text: 'x', images: 'no' }), false);
  });
  it('counts the decoded bytes of base64', () => {
    assert.equal(decodedBytes('TWFu'), 3);
    assert.equal(decodedBytes('TWE='), 2);
    assert.equal(decodedBytes('TQ=='), 1);
  });
});
