// Images pasted or dropped into the chat input: what the extension host lets through to
// `agent/session/prompt` (the webview's `send` message).
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodedBytes, imagesProblem, MAX_IMAGES } from '../chat/images';
import { isFromWebview } from '../chat/messages';
import { addUser, applyUpdate, emptyModel, toText, withdrawUser } from '../transcript';

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
  it("a refused prompt's message leaves the chat; the rows after it keep their place", () => {
    const m = emptyModel('s');
    addUser(m, 'first');
    const refused = addUser(m, 'what is this?\n[image: image 1]');
    // An update of a turn still running lands after it meanwhile.
    applyUpdate(m, {
      sessionId: 's',
      turnId: 't1',
      update: { kind: 'toolCall', toolCallId: 'c1', name: 'shell', title: 'Run `make`', status: 'pending', toolKind: 'execute', input: {}, locations: [] },
    });
    assert.equal(withdrawUser(m, refused.block), true);
    assert.equal(withdrawUser(m, refused.block), false, 'only once');
    const [updated] = applyUpdate(m, { sessionId: 's', turnId: 't1', update: { kind: 'toolCallUpdate', toolCallId: 'c1', status: 'completed', output: 'ok' } });
    assert.equal(updated.index, 1);
    assert.equal(toText(m), '## You\nfirst\n- ✓ Run `make`');
  });
});
