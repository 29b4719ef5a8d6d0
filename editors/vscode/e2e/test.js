// End-to-end test of the agentls extension in a real VS Code (code-server), driven by
// Playwright with Debian's Chromium. Run by scripts/vscode-e2e, which installs
// everything, starts the fake provider and code-server and sets:
//   E2E_URL          the workbench URL (with ?folder=)
//   E2E_FAKE_URL     the fake provider's base URL (…/v1); its control endpoints are at /
//   E2E_WORKSPACE    the workspace folder (the rewind steps read its files on disk)
//   E2E_SCREENSHOTS  where a failing step saves a screenshot
//   E2E_BUNDLED_SERVER  the agentls inside the installed extension (the .vsix carried it)
//   E2E_CODE_SERVER_PID  code-server's process (the servers it started are under it)
//   E2E_LOGS         code-server's logs directory (output channels are files there)
//   NODE_PATH        the cache's node_modules (playwright-core)
// The steps depend on each other and run in order; after a failure the rest fail at once
// ("not run") rather than waiting for their timeouts. Assertions are on behaviour only;
// every wait has a generous timeout.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { chromium } = require('playwright-core');

const URL = process.env.E2E_URL;
const FAKE = (process.env.E2E_FAKE_URL || '').replace(/\/v1\/?$/, '');
const SHOTS = process.env.E2E_SCREENSHOTS || '/tmp';
const LONG = 60_000;

let browser;
let page;
let broken = false;

/** A step: skipped-as-failed after an earlier failure, screenshot on its own failure. */
function step(name, fn) {
  test(name, { timeout: 3 * LONG }, async () => {
    if (broken) {
      assert.fail('not run: an earlier step failed');
    }
    try {
      await fn();
    } catch (error) {
      broken = true;
      if (page) {
        const file = path.join(SHOTS, `${name.replace(/[^A-Za-z0-9]+/g, '-')}.png`);
        await page.screenshot({ path: file, fullPage: true }).then(
          () => console.log(`# screenshot: ${file}`),
          () => undefined,
        );
      }
      throw error;
    }
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The frame of the chat webview (nested iframes): the one holding `#input`. */
async function chatFrame(timeout = LONG) {
  const end = Date.now() + timeout;
  while (Date.now() < end) {
    for (const frame of page.frames()) {
      if (frame.isDetached()) continue;
      const n = await frame.locator('#input').count().catch(() => 0);
      if (n > 0) return frame;
    }
    await sleep(250);
  }
  throw new Error('the chat webview (a frame with #input) did not appear');
}

/** Runs a command from the command palette by its label. */
async function runCommand(label) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: LONG });
  await input.fill(`>${label}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first();
  await row.waitFor({ state: 'visible', timeout: LONG });
  await row.click();
}

async function agentStatusText() {
  const item = page.locator('.statusbar-item', { has: page.locator('.codicon-hubot') });
  return (await item.first().innerText()).trim();
}

before(async () => {
  assert.ok(URL, 'E2E_URL is not set (run scripts/vscode-e2e)');
  browser = await chromium.launch({
    executablePath: process.env.E2E_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  page = await context.newPage();
  page.setDefaultTimeout(LONG);
});

after(async () => {
  await browser?.close().catch(() => undefined);
});

step('the workbench loads and the extension activates', async () => {
  await page.goto(URL, { waitUntil: 'domcontentloaded', timeout: LONG });
  await page.locator('.monaco-workbench').waitFor({ timeout: LONG });
  // The status bar item appears when the extension activates (onStartupFinished).
  await page.locator('.statusbar-item .codicon-hubot').first().waitFor({ timeout: 2 * LONG });
});

step('opens src/lib.rs', async () => {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill('lib.rs');
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: 'lib.rs' }).first();
  await row.waitFor({ state: 'visible' });
  await row.click();
  await page.locator('.tab.active', { hasText: 'lib.rs' }).waitFor();
  await page.locator('.monaco-editor .view-line', { hasText: 'pub fn answer() -> u32' }).waitFor();
});

step('selects text and asks the agent about the selection', async () => {
  // Line 2, `41`: click into it, then Home (first non-blank) and Shift+End.
  await page.locator('.monaco-editor .view-line', { hasText: '41' }).first().click();
  await page.keyboard.press('Home');
  await page.keyboard.press('Shift+End');
  await page.locator('.monaco-editor .selected-text').first().waitFor();
  await runCommand('Agent: Ask agent about selection');
  const chat = await chatFrame();
  const label = chat.locator('#context-label');
  await label.waitFor({ state: 'visible' });
  assert.equal((await label.innerText()).trim(), 'Attached: lib.rs:2-2');
});

step('sends the prompt and shows the streamed answer', async () => {
  const chat = await chatFrame();
  const input = chat.locator('#input');
  await input.fill('What does this return?');
  await input.press('Enter');
  await chat.locator('.block.user', { hasText: 'What does this return?' }).waitFor();
  const answer = chat.locator('.block.agent', { hasText: 'The function returns 41 — a constant.' });
  await answer.waitFor();
  // The markdown renderer turned **41** into <strong>.
  assert.equal((await answer.locator('strong').first().innerText()).trim(), '41');
  assert.equal(await input.inputValue(), '');
});

/** The agentls servers code-server started: the processes under it (E2E_CODE_SERVER_PID)
 *  whose program is named agentls, with that program's path and their PATH. */
function agentlsServers() {
  const root = Number(process.env.E2E_CODE_SERVER_PID);
  const parent = new Map();
  for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8'); // pid (comm) state ppid …
      parent.set(Number(pid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const under = (pid) => {
    for (let p = parent.get(pid); p; p = parent.get(p)) if (p === root) return true;
    return false;
  };
  const servers = [];
  for (const pid of parent.keys()) {
    if (!under(pid)) continue;
    try {
      const exe = fs.readlinkSync(`/proc/${pid}/exe`);
      if (path.basename(exe) !== 'agentls') continue;
      const env = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      const PATH = (env.find((v) => v.startsWith('PATH=')) ?? 'PATH=').slice(5);
      servers.push({ pid, exe, PATH });
    } catch {
      // gone meanwhile
    }
  }
  return servers;
}

step('the turn ran the agentls bundled in the .vsix: no serverPath is set, none is on PATH', async () => {
  const bundled = process.env.E2E_BUNDLED_SERVER;
  assert.ok(bundled, 'E2E_BUNDLED_SERVER is not set (run scripts/vscode-e2e)');
  // Installed with its executable bit (the extension does not chmod it).
  fs.accessSync(bundled, fs.constants.X_OK);
  const servers = agentlsServers();
  assert.ok(servers.length > 0, 'no agentls process runs under code-server');
  for (const server of servers) {
    assert.equal(server.exe, fs.realpathSync(bundled), `process ${server.pid} runs another agentls`);
    const onPath = server.PATH.split(':').filter((dir) => {
      try {
        fs.accessSync(path.join(dir, 'agentls'), fs.constants.X_OK);
        return dir !== '';
      } catch {
        return false;
      }
    });
    assert.deepEqual(onPath, [], `agentls is on the PATH the extension host gave the server`);
  }
  // The extension says in its output channel which binary it started, and why.
  const logs = process.env.E2E_LOGS || '';
  const started = `starting ${bundled} (bundled with the extension)`;
  await until('the output channel to name the bundled server', () =>
    fs
      .readdirSync(logs, { recursive: true })
      .filter((f) => /output_logging_[^/]*\/\d+-agentls\.log$/.test(f))
      .some((f) => fs.readFileSync(path.join(logs, f), 'utf8').includes(started)),
  );
});

step('the status bar shows the context fill', async () => {
  await page.locator('.statusbar-item', { has: page.locator('.codicon-hubot') }).filter({ hasText: /\d+%/ }).first().waitFor();
  const text = await agentStatusText();
  assert.match(text, /^~?\d+%/, `status bar item: ${JSON.stringify(text)}`);
  console.log(`status bar item: ${JSON.stringify(text)}`);
});

step('the status bar warns of the failed MCP server; Agent: Show MCP Servers lists both', async () => {
  // scripts/vscode-e2e configures `everything` (real) and `missing` (no such command); they
  // started with the first session.
  const item = page.locator('.statusbar-item', { has: page.locator('.codicon-hubot') }).first();
  await page.locator('.statusbar-item', { has: page.locator('.codicon-hubot') }).filter({ has: page.locator('.codicon-warning') }).first().waitFor();
  assert.ok(await item.evaluate((n) => n.classList.contains('warning-kind')), 'the item has the warning background');
  const end = Date.now() + LONG;
  for (;;) {
    await runCommand('Agent: Show MCP Servers');
    const rows = page.locator('.quick-input-list .monaco-list-row');
    await rows.first().waitFor({ state: 'visible' });
    const texts = await rows.allInnerTexts();
    const ready = texts.find((t) => /everything/.test(t) && /ready · \d+ tools/.test(t));
    const failed = texts.find((t) => /missing/.test(t) && /failed/.test(t));
    if (ready && failed) {
      assert.match(failed, /cannot start `\/nonexistent\/mcp-server`/);
      console.log(`MCP list: ${JSON.stringify(texts)}`);
      await page.keyboard.press('Escape');
      await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
      break;
    }
    await page.keyboard.press('Escape');
    assert.ok(Date.now() < end, `the MCP list never showed everything ready and missing failed: ${JSON.stringify(texts)}`);
    await sleep(500);
  }
});

step('approves an edit and the file changes in the editor', async () => {
  const chat = await chatFrame();
  const input = chat.locator('#input');
  await input.fill('Make it return 42.');
  await input.press('Enter');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible' });
  assert.match(await dialog.innerText(), /agentls wants to/);
  // Behind the dialog: the proposal as a diff editor tab, closed once answered.
  const proposal = page.locator('.tab', { hasText: '(proposed)' });
  await proposal.first().waitFor();
  await dialog.getByRole('button', { name: /^Allow/ }).first().click();
  await dialog.waitFor({ state: 'hidden' });
  await proposal.first().waitFor({ state: 'detached' });
  await chat.locator('.block.agent', { hasText: 'Done: it returns 42 now.' }).waitFor();
  await chat.locator('.block.notice', { hasText: /^Allow/ }).first().waitFor();
  // The edit arrived through workspace/applyEdit: the lib.rs editor shows 42.
  await page.locator('.tab', { hasText: 'lib.rs' }).first().click();
  await page.locator('.monaco-editor .view-line', { hasText: /^\s*42\s*$/ }).first().waitFor();
  assert.equal(await page.locator('.monaco-editor .view-line', { hasText: /^\s*41\s*$/ }).count(), 0);
});

step('the status bar shows the compacting state during Agent: Compact', async () => {
  await runCommand('Agent: Compact');
  // The optional instructions: leave empty.
  const box = page.locator('.quick-input-widget input');
  await box.waitFor({ state: 'visible' });
  await box.press('Enter');
  // The summary call is held by the fake provider until released.
  await page.locator('.statusbar-item', { has: page.locator('.codicon-sync') }).filter({ hasText: /^\s*compacting\s*$/ }).first().waitFor();
  const released = await fetch(`${FAKE}/__release`, { method: 'POST' });
  assert.equal(released.status, 200);
  await page.locator('.notification-toast', { hasText: /agentls: compacted .* tokens/ }).first().waitFor();
  await page.locator('.statusbar-item', { has: page.locator('.codicon-hubot') }).filter({ hasText: /\d+%/ }).first().waitFor();
});

/** The frame of the context view (a webview): the one holding `#bar`. */
async function contextFrame(timeout = LONG) {
  const end = Date.now() + timeout;
  while (Date.now() < end) {
    for (const frame of page.frames()) {
      if (frame.isDetached()) continue;
      const n = await frame.locator('#bar').count().catch(() => 0);
      if (n > 0) return frame;
    }
    await sleep(250);
  }
  throw new Error('the context view (a frame with #bar) did not appear');
}

step('the status bar item opens the context view: the bar, the headroom, the compaction', async () => {
  await page.locator('.statusbar-item', { has: page.locator('.codicon-hubot') }).first().click();
  await page.locator('.tab', { hasText: 'agentls context' }).first().waitFor();
  const view = await contextFrame();
  // One stacked bar of the window: a segment per section with tokens, in request order.
  const sections = await view.locator('#bar .segment').evaluateAll((nodes) =>
    nodes.map((n) => ({ name: n.dataset.section, width: n.getBoundingClientRect().width, title: n.title })),
  );
  const names = sections.map((s) => s.name);
  for (const name of ['tools', 'system', 'conversation', 'editor']) {
    assert.ok(names.includes(name), `a ${name} segment in ${JSON.stringify(names)}`);
  }
  assert.ok(names.indexOf('tools') < names.indexOf('system') && names.indexOf('system') < names.indexOf('conversation'), JSON.stringify(names));
  for (const s of sections) {
    assert.ok(s.width > 0, `the ${s.name} segment is drawn: ${JSON.stringify(s)}`);
    assert.match(s.title, /: [\d,]+ tokens, (trusted|untrusted)$/);
  }
  const barWidth = await view.locator('#bar').evaluate((n) => n.getBoundingClientRect().width);
  const history = sections.find((s) => s.name === 'conversation');
  const tools = sections.find((s) => s.name === 'tools');
  assert.ok(history.width < barWidth && tools.width < barWidth, 'segments are shares of the whole window');
  // The legend: tokens and trust per section.
  assert.match(await view.locator('#sections tr[data-section="editor"]').innerText(), /editor\s+[\d,]+\s+[\d.]+%\s+untrusted/);
  assert.match(await view.locator('#sections tr[data-section="conversation"]').innerText(), /history\s+[\d,]+\s+[\d.]+%\s+trusted/);
  assert.match(await view.locator('#total').innerText(), /^[\d,]+ of [\d,]+ tokens \(\d+%\)/);
  assert.match(await view.locator('#headroom').innerText(), /tokens (of headroom before|past the threshold).*compaction at [\d,]+ tokens/);
  const threshold = await view.locator('#bar .threshold').evaluate((n) => n.getBoundingClientRect().width);
  assert.ok(threshold >= 0);
  // The compaction of the previous step, before → after and its strategy.
  const compactions = await view.locator('#compactions li').allInnerTexts();
  assert.equal(compactions.length, 1, JSON.stringify(compactions));
  assert.match(compactions[0], /^[\d,]+ → [\d,]+ tokens \(\w+\)$/);
  console.log(`context view: ${JSON.stringify(names)}; ${compactions[0]}`);
});

step('typing / suggests the slash commands, built-in and custom', async () => {
  const chat = await chatFrame();
  const input = chat.locator('#input');
  await input.fill('');
  await input.pressSequentially('/');
  const custom = chat.locator('#suggestions .suggestion', { hasText: '/git:commit' });
  await custom.waitFor({ state: 'visible' });
  assert.match(await custom.innerText(), /MESSAGE[\s\S]*Commit the work[\s\S]*workspace/);
  await chat.locator('#suggestions .suggestion', { hasText: '/compact' }).waitFor();
  await input.pressSequentially('gi');
  assert.equal(await chat.locator('#suggestions .suggestion').count(), 1);
  await input.press('Tab');
  assert.equal(await input.inputValue(), '/git:commit ');
  await chat.locator('#suggestions').waitFor({ state: 'hidden' });
  await input.fill('');
});

step("a subagent's calls show as a collapsible group under its task", async () => {
  const chat = await chatFrame();
  const input = chat.locator('#input');
  await input.fill('Where is answer()?');
  await input.press('Enter');
  await chat.locator('.block.agent', { hasText: 'Found by the explorer.' }).waitFor();
  const task = chat.locator('.block.tool', { hasText: 'explore: find answer' });
  const group = task.locator('details.subagent');
  await group.waitFor({ state: 'visible' });
  assert.match(await group.innerText(), /1 call by the subagent[\s\S]*✓ Read src\/lib\.rs/);
  await group.locator('summary').click();
  assert.equal(await group.evaluate((d) => d.open), false);
});

/** Picks the mode whose row shows `description` in Agent: Set Mode's quick pick. */
async function setMode(description) {
  await runCommand('Agent: Set Mode');
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: description }).first();
  await row.waitFor({ state: 'visible' });
  await row.click();
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
}

step('Agent: Set Mode to plan: the status bar says so, an edit is refused and the file stays', async () => {
  await setMode('Read-only: explore and plan');
  const item = page.locator('.statusbar-item', { has: page.locator('.codicon-hubot') }).filter({ hasText: /· plan/ }).first();
  await item.waitFor();
  // The tooltip: the mode and the sandbox plan mode's commands run in.
  await item.hover();
  await page.getByText(/mode: plan · sandbox: read-only, no network/).first().waitFor();
  await page.mouse.move(0, 0);
  const chat = await chatFrame();
  const input = chat.locator('#input');
  await input.fill('Plan making it 43.');
  await input.press('Enter');
  await chat.locator('.block.agent', { hasText: 'Plan: make it return 43.' }).waitFor();
  await chat.locator('.block.tool.failed', { hasText: 'src/lib.rs' }).first().waitFor();
  assert.equal(await page.locator('.monaco-dialog-box').count(), 0, 'nothing was asked');
  await page.locator('.tab', { hasText: 'lib.rs' }).first().click();
  await page.locator('.monaco-editor .view-line', { hasText: /^\s*42\s*$/ }).first().waitFor();
  assert.equal(await page.locator('.monaco-editor .view-line', { hasText: /^\s*43\s*$/ }).count(), 0);
});

step('Agent: Set Mode back to auto-edit: the same session makes the edit without asking', async () => {
  await setMode('Edit without asking');
  await page.locator('.statusbar-item', { has: page.locator('.codicon-hubot') }).filter({ hasText: /· auto-edit/ }).first().waitFor();
  const chat = await chatFrame();
  const input = chat.locator('#input');
  await input.fill('Carry it out.');
  await input.press('Enter');
  await chat.locator('.block.agent', { hasText: 'It returns 43 now.' }).waitFor();
  assert.equal(await page.locator('.monaco-dialog-box').count(), 0, 'auto-edit does not ask');
  await page.locator('.tab', { hasText: 'lib.rs' }).first().click();
  await page.locator('.monaco-editor .view-line', { hasText: /^\s*43\s*$/ }).first().waitFor();
});

/** Queues a reply on the fake provider (its `/__push` control endpoint). */
async function pushReply(reply) {
  const answer = await fetch(`${FAKE}/__push`, { method: 'POST', body: JSON.stringify({ reply }) });
  assert.equal(answer.status, 200, await answer.text());
}

step('a background command is listed above the input and its Stop button ends it', async () => {
  await pushReply({ toolCalls: [{ id: 'bg', name: 'shell', arguments: { command: 'echo serving; sleep 1000', background: true } }] });
  await pushReply({ text: ['The server runs in the background.'] });
  const chat = await chatFrame();
  const input = chat.locator('#input');
  await input.fill('Start the server.');
  await input.press('Enter');
  // auto-edit asks for a command: allow it.
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible' });
  await dialog.getByRole('button', { name: /^Allow/ }).first().click();
  await chat.locator('.block.agent', { hasText: 'The server runs in the background.' }).waitFor();
  const row = chat.locator('#background .live-row', { hasText: 'sleep 1000' });
  await row.filter({ hasText: 'bg1 running' }).waitFor();
  await row.getByRole('button', { name: 'Stop' }).click();
  await row.filter({ hasText: 'bg1 exited' }).waitFor();
  assert.equal(await row.getByRole('button', { name: 'Stop' }).count(), 0, 'an ended command has no Stop');
});

step('Enter during a turn steers it: the message joins the turn after its tool call', async () => {
  await pushReply({ toolCalls: [{ id: 'slow', name: 'shell', arguments: { command: 'sleep 4' } }] });
  await pushReply({ text: ['Steered: hi.'] });
  const chat = await chatFrame();
  const input = chat.locator('#input');
  await input.fill('Run the slow command.');
  await input.press('Enter');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible' });
  await dialog.getByRole('button', { name: /^Allow/ }).first().click();
  // While `sleep 4` runs: the steer / queue choice shows; Enter steers.
  await chat.locator('#busy').waitFor({ state: 'visible' });
  await input.fill('Also say hi.');
  await input.press('Enter');
  await chat.locator('#queue .live-row.steering', { hasText: 'Also say hi.' }).waitFor();
  await chat.locator('.block.agent', { hasText: 'Steered: hi.' }).waitFor();
  // The steered message is shown where it joined, before the answer, and left the queue.
  const texts = await chat.locator('.block').allInnerTexts();
  const steered = texts.lastIndexOf('Also say hi.');
  assert.ok(steered > 0 && steered < texts.findLastIndex((t) => t.includes('Steered: hi.')), texts.join(' | '));
  assert.equal(await chat.locator('#queue .live-row').count(), 0);
  const requests = await (await fetch(`${FAKE}/__requests`)).json();
  const last = requests[requests.length - 1].body.messages;
  assert.equal(last[last.length - 1].content, 'Also say hi.');
  assert.equal(last[last.length - 2].role, 'tool');
});

const WORKSPACE = process.env.E2E_WORKSPACE || '';
/** The worktree of the session that works apart (the worktree steps). */
let worktreePath = '';

/** Polls `check` until it returns a truthy value (a state reached: a file on disk, a
 *  request the fake provider saw); fails after LONG with `what`. */
async function until(what, check) {
  const end = Date.now() + LONG;
  for (;;) {
    const value = await check();
    if (value) return value;
    assert.ok(Date.now() < end, `timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The text of a workspace file, or undefined when it does not exist. */
function readWorkspace(file) {
  try {
    return fs.readFileSync(path.join(WORKSPACE, file), 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The requests the fake provider has answered so far (its `/__requests`). */
async function providerRequests() {
  return (await fetch(`${FAKE}/__requests`)).json();
}

/** The text of an OpenAI chat message's content (a string, or the text parts). */
function contentText(message) {
  if (typeof message.content === 'string') return message.content;
  return (message.content ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('');
}

/** Hovers the user message holding `text` in the chat and clicks its hover action. */
async function messageAction(chat, text, action) {
  const message = chat.locator('.block.user', { hasText: text }).last();
  await message.scrollIntoViewIfNeeded();
  await message.hover();
  const button = message.locator(`.actions button.${action}`);
  await button.waitFor({ state: 'visible' });
  await button.click();
}

step('Rewind to here: the preview lists the files and the conflict; code and conversation go back', async () => {
  assert.ok(WORKSPACE, 'E2E_WORKSPACE is not set');
  const lib = readWorkspace('src/lib.rs');
  assert.match(lib, /^    43$/m);
  assert.equal(readWorkspace('notes.md'), undefined);
  assert.equal(readWorkspace('todo.md'), undefined);
  // One turn edits src/lib.rs and creates two files.
  await pushReply({
    toolCalls: [
      { id: 'rw1', name: 'edit_file', arguments: { path: 'src/lib.rs', old_text: '    43\n', new_text: '    44\n' } },
      { id: 'rw2', name: 'write_file', arguments: { path: 'notes.md', content: '# Notes\nanswer() returns 44.\n' } },
      { id: 'rw3', name: 'write_file', arguments: { path: 'todo.md', content: '- check 44\n' } },
    ],
  });
  await pushReply({ text: ['It returns 44; notes written.'] });
  const chat = await chatFrame();
  const input = chat.locator('#input');
  // The steered turn before has ended: this message starts a turn (and has a checkpoint)
  // of its own rather than steering that one.
  await chat.locator('#busy').waitFor({ state: 'hidden' });
  await input.fill('Make it 44 and take notes.');
  await input.press('Enter');
  await chat.locator('.block.agent', { hasText: 'It returns 44; notes written.' }).waitFor();
  await page.locator('.tab', { hasText: 'lib.rs' }).first().click();
  await page.locator('.monaco-editor .view-line', { hasText: /^\s*44\s*$/ }).first().waitFor();
  await until("the turn's files on disk", () =>
    readWorkspace('notes.md') === '# Notes\nanswer() returns 44.\n' && readWorkspace('todo.md') === '- check 44\n' && /^    44$/m.test(readWorkspace('src/lib.rs') ?? ''),
  );
  // The user changes todo.md after the agent: a conflict, left as the user wrote it.
  fs.writeFileSync(path.join(WORKSPACE, 'todo.md'), '- check 44\n- written by the user\n');

  await messageAction(chat, 'Make it 44 and take notes.', 'rewind');
  const what = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Code and conversation' }).first();
  await what.waitFor({ state: 'visible' });
  await what.click();
  // The dry run's plan, before anything is restored.
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible' });
  const preview = await dialog.innerText();
  assert.match(preview, /Rewind \(both\)/, preview);
  assert.match(preview, /restore:\s*~ src\/lib\.rs/, preview);
  assert.match(preview, /delete:\s*- notes\.md/, preview);
  assert.match(preview, /conflicts[^\n]*:\s*! todo\.md/, preview);
  assert.match(preview, /the conversation goes back to before: Make it 44 and take notes\./, preview);
  assert.ok(readWorkspace('notes.md') !== undefined, 'the preview changed nothing');
  console.log(`rewind preview: ${JSON.stringify(preview)}`);
  await dialog.getByRole('button', { name: 'Rewind and overwrite the conflicts' }).waitFor();
  await dialog.getByRole('button', { name: /^Rewind$/ }).click();
  await dialog.waitFor({ state: 'hidden' });

  // The code: lib.rs back in the editor and on disk, notes.md gone, todo.md as the user left it.
  await page.locator('.notification-toast', { hasText: /agentls: rewound \(both\): 1 restored, 0 created, 1 deleted, 1 conflict\(s\) left as they are/ }).first().waitFor();
  await page.locator('.tab', { hasText: 'lib.rs' }).first().click();
  await page.locator('.monaco-editor .view-line', { hasText: /^\s*43\s*$/ }).first().waitFor();
  assert.equal(await page.locator('.monaco-editor .view-line', { hasText: /^\s*44\s*$/ }).count(), 0);
  await until('src/lib.rs restored on disk', () => readWorkspace('src/lib.rs') === lib);
  await until('notes.md deleted', () => readWorkspace('notes.md') === undefined);
  assert.equal(readWorkspace('todo.md'), '- check 44\n- written by the user\n');
  // The conversation: cut before the message, which is back in the input box.
  await until('the input to hold the rewound message', async () => (await input.inputValue()) === 'Make it 44 and take notes.');
  await chat.locator('.block.agent', { hasText: 'Steered: hi.' }).waitFor();
  assert.equal(await chat.locator('.block.user', { hasText: 'Make it 44 and take notes.' }).count(), 0);
  assert.equal(await chat.locator('.block.agent', { hasText: 'It returns 44; notes written.' }).count(), 0);
  await input.fill('');
  fs.rmSync(path.join(WORKSPACE, 'todo.md'));
});

step('Fork from here: a new session holds the history before the message, and so does its next request', async () => {
  const chat = await chatFrame();
  await messageAction(chat, 'Start the server.', 'fork');
  await page.locator('.notification-toast', { hasText: /agentls: forked into / }).first().waitFor();
  // The panel shows the fork: the turns before the message, not the message nor after it.
  await chat.locator('.block.agent', { hasText: 'Steered: hi.' }).waitFor({ state: 'detached' });
  await chat.locator('.block.user', { hasText: 'Carry it out.' }).waitFor();
  await chat.locator('.block.agent', { hasText: 'It returns 43 now.' }).waitFor();
  const shown = await chat.locator('.block.user').allInnerTexts();
  for (const gone of ['Start the server.', 'Run the slow command.', 'Also say hi.']) {
    assert.ok(!shown.some((t) => t.includes(gone)), `${gone} is not in the fork: ${JSON.stringify(shown)}`);
  }
  // Its next request carries the same history: the first part only.
  const before = (await providerRequests()).length;
  await pushReply({ text: ['The fork goes on.'] });
  const input = chat.locator('#input');
  await input.fill('Go on from here.');
  await input.press('Enter');
  await chat.locator('.block.agent', { hasText: 'The fork goes on.' }).waitFor();
  const requests = await until('the fork\'s request', async () => {
    const all = await providerRequests();
    return all.length > before && all;
  });
  const messages = requests[requests.length - 1].body.messages;
  const users = messages.filter((m) => m.role === 'user').map(contentText);
  // The prompt comes after the editor's context, in the same message.
  assert.ok(users[users.length - 1].trimEnd().endsWith('Go on from here.'), JSON.stringify(users[users.length - 1]));
  assert.ok(users.some((t) => t.includes('Carry it out.')), JSON.stringify(users));
  for (const gone of ['Start the server.', 'Run the slow command.', 'Also say hi.', 'Make it 44 and take notes.']) {
    assert.ok(!users.some((t) => t.includes(gone)), `${gone} is not in the fork's request: ${JSON.stringify(users)}`);
  }
  // The same history item for item as the original's request of "Start the server.": the
  // provider's prompt cache is reused.
  const original = requests.find((r) => {
    const sent = r.body.messages;
    return sent[sent.length - 1].role === 'user' && contentText(sent[sent.length - 1]).includes('Start the server.');
  });
  assert.ok(original, "the original session's request of 'Start the server.'");
  assert.deepEqual(messages.slice(0, -1), original.body.messages.slice(0, -1));
});

step('an image the server refuses is not sent: the message and the image go back to the input', async () => {
  const chat = await chatFrame();
  const input = chat.locator('#input');
  // A file named and typed as a PNG whose bytes are not one, dropped on the input: the
  // webview and the extension take it (type and base64), the server reads its header.
  await input.fill('What is this?');
  const transfer = await chat.evaluateHandle(() => {
    const dt = new DataTransfer();
    dt.items.add(new File([new TextEncoder().encode('not a png at all')], 'broken.png', { type: 'image/png' }));
    return dt;
  });
  await input.dispatchEvent('drop', { dataTransfer: transfer });
  const chip = chat.locator('#images .image-chip');
  await chip.waitFor({ state: 'visible' });
  assert.equal(await chip.count(), 1);
  const notices = await chat.locator('.block.notice').count();
  await input.press('Enter');
  const refusal = chat.locator('.block.notice', { hasText: /not a PNG, JPEG, GIF or WebP image/ });
  await refusal.waitFor();
  console.log(`refusal: ${JSON.stringify(await refusal.innerText())}`);
  assert.equal(await chat.locator('.block.notice').count(), notices + 1);
  // Nothing was sent: no message in the chat, and the text and the image are back.
  assert.equal(await chat.locator('.block.user', { hasText: 'What is this?' }).count(), 0);
  await until('the refused message back in the input', async () => (await input.inputValue()) === 'What is this?');
  await chip.waitFor({ state: 'visible' });
  assert.equal(await chip.count(), 1);
  // Withdrawn by its × before the next step.
  await chip.getByRole('button').click();
  await chip.waitFor({ state: 'detached' });
  await input.fill('');
});

// A 2×2 PNG (red, green, blue, white).
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEklEQVR4nGP4z8DAAMIM/4EAAB/uBfsL2WiLAAAAAElFTkSuQmCC';

step('an image pasted into the chat input shows as an attachment and reaches the provider as image_url', async () => {
  const chat = await chatFrame();
  const input = chat.locator('#input');
  // A real paste: the PNG on the browser's clipboard (as a screenshot tool puts it), then
  // Ctrl+V in the input.
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new globalThis.URL(URL).origin });
  await page.evaluate(async (data) => {
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    await navigator.clipboard.write([new ClipboardItem({ 'image/png': new Blob([bytes], { type: 'image/png' }) })]);
  }, PNG);
  await input.click();
  await page.keyboard.press('Control+V');
  const chip = chat.locator('#images .image-chip');
  await chip.waitFor({ state: 'visible' });
  console.log(`pasted image chip: ${JSON.stringify(await chip.innerText())}`);
  assert.equal(await input.inputValue(), '', 'the image is not pasted as text');
  const before = (await providerRequests()).length;
  await pushReply({ text: ['A tiny picture of four pixels.'] });
  await input.fill('What is in this picture?');
  await input.press('Enter');
  await chip.waitFor({ state: 'detached' });
  await chat.locator('.block.user', { hasText: '[image: image 1]' }).waitFor();
  await chat.locator('.block.agent', { hasText: 'A tiny picture of four pixels.' }).waitFor();
  const requests = await until('the image prompt\'s request', async () => {
    const all = await providerRequests();
    return all.length > before && all;
  });
  const messages = requests[requests.length - 1].body.messages;
  const last = messages[messages.length - 1];
  assert.equal(last.role, 'user');
  assert.ok(Array.isArray(last.content), `the prompt has parts: ${JSON.stringify(last)}`);
  const image = last.content.find((p) => p.type === 'image_url');
  assert.ok(image, `an image_url part: ${JSON.stringify(last.content)}`);
  // The system clipboard re-encodes the image: the same 2×2 PNG, other bytes.
  const url = /^data:image\/png;base64,([A-Za-z0-9+/=]+)$/.exec(image.image_url.url);
  assert.ok(url, image.image_url.url);
  const sent = Buffer.from(url[1], 'base64');
  assert.equal(sent.subarray(1, 4).toString('latin1'), 'PNG');
  assert.deepEqual([sent.readUInt32BE(16), sent.readUInt32BE(20)], [2, 2], 'the IHDR width and height');
  assert.match(contentText(last), /What is in this picture\?/);
});

step('/remember keeps a fact; Agent: Open Memory opens the workspace memory showing it', async () => {
  const fact = 'answer() is pinned by the e2e tests';
  const chat = await chatFrame();
  const input = chat.locator('#input');
  await chat.locator('#busy').waitFor({ state: 'hidden' });
  // Typed as a person does: `/rem`, Tab takes the suggestion, then the fact.
  await input.fill('');
  await input.pressSequentially('/rem');
  await chat.locator('#suggestions .suggestion', { hasText: '/remember' }).waitFor({ state: 'visible' });
  await input.press('Tab');
  assert.equal(await input.inputValue(), '/remember ');
  await input.pressSequentially(fact);
  await input.press('Enter');
  await chat.locator('.block.agent', { hasText: 'Kept in the workspace memory.' }).waitFor();

  await runCommand('Agent: Open Memory');
  const rows = page.locator('.quick-input-list .monaco-list-row');
  const workspace = rows.filter({ hasText: "This workspace's memory" }).first();
  await workspace.waitFor({ state: 'visible' });
  const shown = await rows.allInnerTexts();
  console.log(`memory pick: ${JSON.stringify(shown)}`);
  const row = await workspace.innerText();
  assert.match(row, /1 entry/, row);
  // The workspace's memory is under agentls's state directory, not in the repository.
  const file = /\/agentls\/memory\/(workspace-[0-9a-f]{16}\.md)/.exec(row);
  assert.ok(file, `the memory file's path in ${JSON.stringify(row)}`);
  assert.ok(!row.includes(`${WORKSPACE}/`), row);
  assert.match(await rows.filter({ hasText: 'Your memory (every workspace)' }).first().innerText(), /0 entries/);
  await workspace.click();
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
  // The Markdown file in an editor, the fact kept as the user's.
  await page.locator('.tab.active', { hasText: file[1] }).first().waitFor();
  const line = page.locator('.monaco-editor .view-line', { hasText: fact }).first();
  await line.waitFor();
  const text = (await line.innerText()).replace(/\u00a0/g, ' ');
  assert.match(text, /^- \[user \d{4}-\d{2}-\d{2}\] answer\(\) is pinned by the e2e tests$/, text);
});

step("Agent: Show Permission Rules lists the user's rule, the workspace's and the ignored one", async () => {
  // scripts/vscode-e2e sets permissions.deny in the user's settings; the repository denies
  // and tries to allow (a workspace may not).
  fs.mkdirSync(path.join(WORKSPACE, '.agents'), { recursive: true });
  const settings = path.join(WORKSPACE, '.agents', 'settings.json');
  fs.writeFileSync(settings, JSON.stringify({ permissions: { deny: ['read_file(.env)'], allow: ['shell(rm:*)'] } }));
  await runCommand('Agent: Show Permission Rules');
  const rows = page.locator('.quick-input-list .monaco-list-row');
  await rows.first().waitFor({ state: 'visible' });
  // A row's text is its label then its description (the source, or "ignored").
  const texts = (await rows.allInnerTexts()).map((t) => t.trim());
  console.log(`permission rules: ${JSON.stringify(texts)}`);
  assert.equal(texts.length, 3, JSON.stringify(texts));
  assert.match(texts[0], /^deny shell\(git push:\*\)\s*user$/);
  assert.match(texts[1], /^deny read_file\(\.env\)\s*workspace$/);
  assert.match(texts[2], /^\.agents\/settings\.json: permission rule "shell\(rm:\*\)" ignored: a workspace's settings may deny or ask, never allow\s*ignored$/);
  await page.keyboard.press('Escape');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
  fs.rmSync(path.join(WORKSPACE, '.agents', 'settings.json'));
});

/** A streamed OpenAI chunk as a fake provider step. */
function chunkStep(delta, finishReason = null) {
  const chunk = { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'fake', choices: [{ index: 0, delta, finish_reason: finishReason }] };
  return { data: JSON.stringify(chunk) };
}

/** Whether some frame holds the chat's `#input` (the chat's webview exists). */
async function chatShown() {
  for (const frame of page.frames()) {
    if (frame.isDetached()) continue;
    if ((await frame.locator('#input').count().catch(() => 0)) > 0) return true;
  }
  return false;
}

step('a turn that ends while the chat is hidden shows a notification; Show chat brings it back', async () => {
  const notice = 'agentls: the agent finished its turn.';
  // Every turn so far ended with the chat in view: none of them was notified.
  await runCommand('Notifications: Show Notifications');
  const center = page.locator('.notifications-center');
  await center.waitFor({ state: 'visible' });
  const listed = await center.locator('.notification-list-item').allInnerTexts();
  console.log(`notifications so far: ${JSON.stringify(listed)}`);
  assert.ok(!listed.some((t) => t.includes(notice)), JSON.stringify(listed));
  await page.keyboard.press('Escape');
  await center.waitFor({ state: 'hidden' });

  // A turn whose answer is held by the fake provider until released.
  await pushReply({
    steps: [
      chunkStep({ role: 'assistant', content: '' }),
      { hold: true },
      chunkStep({ content: 'Finished while you were away.' }),
      chunkStep({}, 'stop'),
      { data: '[DONE]' },
    ],
  });
  const chat = await chatFrame();
  const input = chat.locator('#input');
  const before = (await providerRequests()).length;
  await input.fill('Take your time over it.');
  await input.press('Enter');
  await chat.locator('#busy').waitFor({ state: 'visible' });
  await until('the held request', async () => (await providerRequests()).length > before);
  // The user turns to the Explorer: the chat's view is hidden and its webview goes.
  await runCommand('View: Show Explorer');
  await until('the chat to be hidden', async () => !(await chatShown()));
  assert.equal(await page.locator('.notification-toast', { hasText: notice }).count(), 0, 'no notice while the turn runs');

  const released = await fetch(`${FAKE}/__release`, { method: 'POST' });
  assert.equal(released.status, 200);
  const toast = page.locator('.notification-toast', { hasText: notice }).first();
  await toast.waitFor();
  console.log(`turn-end toast: ${JSON.stringify(await toast.innerText())}`);
  await toast.getByRole('button', { name: 'Show chat' }).click();
  await toast.waitFor({ state: 'hidden' });
  // The chat is back in view, with the answer that came while it was hidden.
  const back = await chatFrame();
  await back.locator('.block.agent', { hasText: 'Finished while you were away.' }).waitFor();
  await back.locator('#busy').waitFor({ state: 'hidden' });
});

/** Clicks the row of the quick pick open now that shows `text`. */
async function pickRow(text) {
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: text }).first();
  await row.waitFor({ state: 'visible' });
  await row.click();
}

step("Agent: Review Changes: undo a file and a hunk of the turn's changes, keep the rest", async () => {
  const numbered = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}\n`).join('');
  const a = numbered('a', 20);
  const b = 'b1\nb2\nb3\n';
  fs.mkdirSync(path.join(WORKSPACE, 'review'), { recursive: true });
  fs.writeFileSync(path.join(WORKSPACE, 'review', 'a.txt'), a);
  fs.writeFileSync(path.join(WORKSPACE, 'review', 'b.txt'), b);
  // Changed by a later turn (the review from an earlier turn).
  fs.writeFileSync(path.join(WORKSPACE, 'review', 'd.txt'), 'd1\n');
  await setMode('Edit without asking');
  const edit = (id, file, oldText, newText) => ({ id, name: 'edit_file', arguments: { path: `review/${file}`, old_text: oldText, new_text: newText } });
  await pushReply({
    toolCalls: [
      edit('rv1', 'a.txt', 'a2\n', 'A2\n'),
      edit('rv2', 'a.txt', 'a18\n', 'A18\nadded\n'),
      edit('rv3', 'b.txt', 'b2\n', 'B2\n'),
      { id: 'rv4', name: 'write_file', arguments: { path: 'review/c.txt', content: 'new\n' } },
    ],
  });
  await pushReply({ text: ['Three files changed.'] });
  const chat = await chatFrame();
  await chat.locator('#busy').waitFor({ state: 'hidden' });
  const input = chat.locator('#input');
  await input.fill('Change the three review files.');
  await input.press('Enter');
  await chat.locator('.block.agent', { hasText: 'Three files changed.' }).waitFor();
  const afterA = a.replace('a2\n', 'A2\n').replace('a18\n', 'A18\nadded\n');
  await until("the turn's files on disk", () =>
    readWorkspace('review/a.txt') === afterA && readWorkspace('review/b.txt') === 'b1\nB2\nb3\n' && readWorkspace('review/c.txt') === 'new\n',
  );

  // Which turns: the last one first (Enter), then the earlier ones "and after".
  await runCommand('Agent: Review Changes');
  const rows = page.locator('.quick-input-list .monaco-list-row');
  await rows.filter({ hasText: 'The last turn: Change the three review files.' }).first().waitFor({ state: 'visible' });
  const turns = (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
  console.log(`review turns: ${JSON.stringify(turns)}`);
  assert.match(turns[0], /^The last turn: Change the three review files\.\s*turn \d+ · 3 files changed$/);
  assert.match(turns[1], /^From turn \d+: .*\s*and the 1 after it · \d+ files? changed$/);
  await page.keyboard.press('Enter');
  // The files of the turn, then b.txt: its diff opens, and it is undone whole.
  await rows.filter({ hasText: 'review/c.txt' }).first().waitFor({ state: 'visible' });
  const listed = (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
  console.log(`review list: ${JSON.stringify(listed)}`);
  assert.equal(listed.length, 3, JSON.stringify(listed));
  assert.match(listed[0], /review\/a\.txt\s*modified · 2 hunks/);
  assert.match(listed[1], /review\/b\.txt\s*modified · 1 hunk/);
  assert.match(listed[2], /review\/c\.txt\s*added · 1 hunk/);
  await pickRow('review/b.txt');
  await page.locator('.tab', { hasText: "review/b.txt (agent's changes)" }).first().waitFor();
  await pickRow('Undo the whole file');
  await page.locator('.notification-toast', { hasText: 'agentls: undone review/b.txt' }).first().waitFor();
  await until('b.txt undone on disk', () => readWorkspace('review/b.txt') === b);

  // The list again, without b.txt; a.txt's second hunk is undone, its first kept.
  await rows.filter({ hasText: 'review/a.txt' }).first().waitFor({ state: 'visible' });
  assert.equal(await rows.filter({ hasText: 'review/b.txt' }).count(), 0);
  await pickRow('review/a.txt');
  await page.locator('.tab', { hasText: "review/a.txt (agent's changes)" }).first().waitFor();
  await pickRow('Undo a hunk');
  await rows.filter({ hasText: '@@ -15,6 +15,7 @@' }).first().waitFor({ state: 'visible' });
  const hunks = await rows.allInnerTexts();
  console.log(`hunk pick: ${JSON.stringify(hunks)}`);
  assert.match(hunks.join('\n'), /@@ -1,5 \+1,5 @@[\s\S]*-a2 {2}\+A2/);
  await pickRow('@@ -15,6 +15,7 @@');
  await page.locator('.notification-toast', { hasText: 'agentls: undone a hunk of review/a.txt' }).first().waitFor();
  const expectedA = a.replace('a2\n', 'A2\n');
  await until('a.txt with one hunk undone on disk', () => readWorkspace('review/a.txt') === expectedA);

  // What is left: a.txt's first hunk and c.txt, kept.
  await rows.filter({ hasText: 'review/c.txt' }).first().waitFor({ state: 'visible' });
  const left = (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
  assert.equal(left.length, 2, JSON.stringify(left));
  assert.match(left[0], /review\/a\.txt\s*modified · 1 hunk/);
  await page.keyboard.press('Escape');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
  assert.equal(readWorkspace('review/b.txt'), b);
  assert.equal(readWorkspace('review/c.txt'), 'new\n');
  assert.equal(readWorkspace('review/a.txt'), expectedA);

  // The editor holds what the disk holds.
  await page.keyboard.press('F1');
  const box = page.locator('.quick-input-widget input');
  await box.waitFor({ state: 'visible' });
  await box.fill('review/a.txt');
  await pickRow('a.txt');
  await page.locator('.tab.active', { hasText: 'a.txt' }).waitFor();
  const editor = page.locator('.editor-instance .monaco-editor').last();
  await editor.locator('.view-line', { hasText: /^A2$/ }).first().waitFor();
  await editor.locator('.view-line', { hasText: /^a18$/ }).first().waitFor();
  assert.equal(await editor.locator('.view-line', { hasText: /^A18$/ }).count(), 0);
  assert.equal(await editor.locator('.view-line', { hasText: /^added$/ }).count(), 0);
});

step("Agent: Review Changes from an earlier turn lists both turns' files; Review from here starts at its message", async () => {
  // A second turn changes review/d.txt; the first one's a.txt (one hunk left) and c.txt stay.
  await pushReply({ toolCalls: [{ id: 'rv5', name: 'edit_file', arguments: { path: 'review/d.txt', old_text: 'd1\n', new_text: 'D1\n' } }] });
  await pushReply({ text: ['d.txt changed.'] });
  const chat = await chatFrame();
  await chat.locator('#busy').waitFor({ state: 'hidden' });
  const input = chat.locator('#input');
  await input.fill('Change d.txt too.');
  await input.press('Enter');
  await chat.locator('.block.agent', { hasText: 'd.txt changed.' }).waitFor();
  await until('d.txt changed on disk', () => readWorkspace('review/d.txt') === 'D1\n');

  // From the turn before: both turns' files.
  await runCommand('Agent: Review Changes');
  const rows = page.locator('.quick-input-list .monaco-list-row');
  await pickRow('From turn');
  await rows.filter({ hasText: 'review/d.txt' }).first().waitFor({ state: 'visible' });
  const listed = (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
  console.log(`review since the earlier turn: ${JSON.stringify(listed)}`);
  assert.deepEqual(
    listed.map((t) => t.match(/review\/\w\.txt/)?.[0]),
    ['review/a.txt', 'review/c.txt', 'review/d.txt'],
    JSON.stringify(listed),
  );
  assert.match(await page.locator('.quick-input-title').innerText(), /Review changes: turn \d+ and after/);
  // Undo d.txt from there: the request carries the turn (d.txt is the later turn's).
  await pickRow('review/d.txt');
  await pickRow('Undo the whole file');
  await page.locator('.notification-toast', { hasText: 'agentls: undone review/d.txt' }).first().waitFor();
  await until('d.txt undone on disk', () => readWorkspace('review/d.txt') === 'd1\n');
  await rows.filter({ hasText: 'review/c.txt' }).first().waitFor({ state: 'visible' });
  assert.equal(await rows.filter({ hasText: 'review/d.txt' }).count(), 0);
  await page.keyboard.press('Escape');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });

  // The hover action on the first turn's message: the same files, no pick of turns.
  await messageAction(chat, 'Change the three review files.', 'review');
  await rows.filter({ hasText: 'review/c.txt' }).first().waitFor({ state: 'visible' });
  const fromHere = (await rows.allInnerTexts()).map((t) => t.match(/review\/\w\.txt/)?.[0]);
  assert.deepEqual(fromHere, ['review/a.txt', 'review/c.txt'], JSON.stringify(fromHere));
  assert.match(await page.locator('.quick-input-title').innerText(), /Review changes: this turn and after/);
  await page.keyboard.press('Escape');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
});

/** The rows of the Problems panel that show `text` (a file's row or a problem's). */
function problemRow(text) {
  return page.locator('.markers-panel .monaco-list-row', { hasText: text });
}

/** Puts the cursor on the editor line showing `text` and picks `title` in its quick fix
 *  menu (Ctrl+.). */
async function quickFix(text, title) {
  await page.locator('.monaco-editor .view-line', { hasText: text }).first().click();
  await page.keyboard.press('Control+.');
  const row = page.locator('.action-widget .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible' });
  const offered = (await page.locator('.action-widget .monaco-list-row').allInnerTexts()).map((t) => t.trim());
  console.log(`quick fixes at ${JSON.stringify(text)}: ${JSON.stringify(offered)}`);
  // The menu blocks the pointer until the mouse moves (as a person's does, to the row).
  const box = await row.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2, { steps: 2 });
  await row.click();
  await page.locator('.action-widget').waitFor({ state: 'hidden' });
}

step('/review: the planted bug is a problem; Dismiss removes a finding, Fix with agent fixes and clears one', async () => {
  // The workspace becomes a git repository whose commit has src/age.rs right; the
  // uncommitted change plants the bug on line 2 (as tests/lsp_review.rs does).
  const committed = 'pub fn is_adult(age: u32) -> bool {\n    age >= 18\n}\n';
  const planted = committed.replace('age >= 18', 'age > 18');
  const age = path.join(WORKSPACE, 'src', 'age.rs');
  fs.writeFileSync(age, committed);
  const git = (...args) =>
    execFileSync('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.com', ...args], { cwd: WORKSPACE, stdio: 'pipe' });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '-m', 'first');
  fs.writeFileSync(age, planted);

  // The review turn reports the bug and a note, then answers; the fix turn edits line 2.
  const bug = 'an 18-year-old is an adult: `>` leaves 18 out';
  const note = 'say what an adult is in a doc comment';
  const finding = (id, line, severity, message) => ({ id, name: 'report_finding', arguments: { path: 'src/age.rs', line, severity, message } });
  await pushReply({ toolCalls: [finding('rf1', 2, 'error', bug), finding('rf2', 1, 'info', note)] });
  await pushReply({ text: ['One bug: 18 is left out.'] });
  await pushReply({ toolCalls: [{ id: 'fx1', name: 'edit_file', arguments: { path: 'src/age.rs', old_text: 'age > 18', new_text: 'age >= 18' } }] });
  await pushReply({ text: ['Fixed: 18 is an adult now.'] });

  await page.keyboard.press('F1');
  const box = page.locator('.quick-input-widget input');
  await box.waitFor({ state: 'visible' });
  await box.fill('src/age.rs');
  await pickRow('age.rs');
  await page.locator('.tab.active', { hasText: 'age.rs' }).waitFor();
  await page.locator('.monaco-editor .view-line', { hasText: 'age > 18' }).first().waitFor();

  // `/rev`, Enter takes the suggestion, Enter sends.
  const chat = await chatFrame();
  const input = chat.locator('#input');
  await chat.locator('#busy').waitFor({ state: 'hidden' });
  await input.fill('');
  await input.pressSequentially('/rev');
  await chat.locator('#suggestions .suggestion', { hasText: '/review' }).waitFor({ state: 'visible' });
  await input.press('Enter');
  assert.equal(await input.inputValue(), '/review ');
  const before = (await providerRequests()).length;
  await input.press('Enter');
  const summary = chat.locator('.block.agent', { hasText: 'Review findings (2):' });
  await summary.waitFor();
  console.log(`review answer: ${JSON.stringify(await summary.innerText())}`);
  const reviewRequest = (await providerRequests())[before];
  assert.ok(reviewRequest, 'the review turn reached the provider');
  const sent = JSON.stringify(reviewRequest.body);
  assert.ok(sent.includes('+    age > 18') && sent.includes('-    age >= 18'), 'the model got the uncommitted diff');

  // The Problems panel: both findings under age.rs, from agentls review, at their lines.
  await runCommand('Focus on Problems View');
  const bugRow = problemRow(bug);
  const noteRow = problemRow(note);
  await bugRow.first().waitFor({ state: 'visible' });
  await noteRow.first().waitFor({ state: 'visible' });
  const rows = (await page.locator('.markers-panel .monaco-list-row').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
  console.log(`problems: ${JSON.stringify(rows)}`);
  const file = rows.findIndex((t) => /^age\.rs\s*src\b/.test(t)); // name, folder, count
  assert.ok(file >= 0, `a row for age.rs: ${JSON.stringify(rows)}`);
  const bugText = rows.find((t) => t.includes(bug));
  assert.ok(rows.indexOf(bugText) > file, `the bug's row is under age.rs: ${JSON.stringify(rows)}`);
  assert.match(bugText, /agentls review/);
  assert.match(bugText, /\[Ln 2, Col 1\]/);
  assert.equal(await bugRow.first().locator('.codicon-error').count(), 1, 'the bug is an error');
  assert.match(rows.find((t) => t.includes(note)), /agentls review.*\[Ln 1, Col 1\]/);

  // Line 1's quick fix "Dismiss": the note goes, the bug stays.
  await quickFix('pub fn is_adult', 'Dismiss');
  await noteRow.first().waitFor({ state: 'detached' });
  assert.equal(await bugRow.count(), 1);

  // Line 2's quick fix "Fix with agent": a turn with the finding's prompt edits the line;
  // the problem clears.
  const beforeFix = (await providerRequests()).length;
  await quickFix('age > 18', 'Fix with agent');
  await chat.locator('.block.agent', { hasText: 'Fixed: 18 is an adult now.' }).waitFor();
  await bugRow.first().waitFor({ state: 'detached' });
  await until('src/age.rs fixed on disk', () => readWorkspace('src/age.rs') === committed);
  await page.locator('.monaco-editor .view-line', { hasText: 'age >= 18' }).first().waitFor();
  assert.equal(await page.locator('.monaco-editor .view-line', { hasText: 'age > 18' }).count(), 0);
  const fixRequest = (await providerRequests())[beforeFix];
  const messages = fixRequest.body.messages;
  const prompt = contentText(messages.filter((m) => m.role === 'user').pop());
  assert.ok(prompt.includes('src/age.rs:2') && prompt.includes(bug), `the fix prompt names the finding: ${JSON.stringify(prompt)}`);
  assert.equal(await problemRow('agentls review').count(), 0, 'no review problem is left');
});

step('Agent: New Session in a Worktree: the chat shows its branch; its turn changes the worktree, not the workspace', async () => {
  // The repository (made by the /review step) gets two files of its own in a commit.
  const git = (...args) =>
    execFileSync('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.com', ...args], { cwd: WORKSPACE, stdio: 'pipe' });
  fs.mkdirSync(path.join(WORKSPACE, 'apart'), { recursive: true });
  fs.writeFileSync(path.join(WORKSPACE, 'apart', 'x.txt'), 'x1\n');
  fs.writeFileSync(path.join(WORKSPACE, 'apart', 'y.txt'), 'y1\n');
  git('add', 'apart');
  git('commit', '-q', '-m', 'apart');

  await runCommand('Agent: New Session in a Worktree');
  const toast = page.locator('.notification-toast', { hasText: 'this session works apart on branch agentls/session-' }).first();
  await toast.waitFor();
  console.log(`worktree toast: ${JSON.stringify(await toast.innerText())}`);
  const chat = await chatFrame();
  const label = chat.locator('#worktree');
  await label.waitFor({ state: 'visible' });
  const branch = (await label.innerText()).trim().replace(/^⎇ /, '');
  assert.match(branch, /^agentls\/session-[0-9a-f]+-[0-9a-f]+$/);
  const title = await label.getAttribute('title');
  worktreePath = title.match(/works apart in (.*): Apply/)[1];
  assert.ok(fs.existsSync(path.join(worktreePath, 'apart', 'x.txt')), `the worktree at ${worktreePath}`);
  await chat.locator('#apply-worktree').waitFor({ state: 'visible' });
  assert.equal(await chat.locator('.block').count(), 0, 'a new session: an empty chat');
  await setMode('Edit without asking');
  await page.locator('.statusbar-item', { has: page.locator('.codicon-git-branch') }).first().waitFor();

  const edit = (id, file, oldText, newText) => ({ id, name: 'edit_file', arguments: { path: `apart/${file}`, old_text: oldText, new_text: newText } });
  await pushReply({ toolCalls: [edit('wt1', 'x.txt', 'x1\n', 'X1\n'), edit('wt2', 'y.txt', 'y1\n', 'Y1\n')] });
  await pushReply({ text: ['Done apart.'] });
  const input = chat.locator('#input');
  await input.fill('Change them apart.');
  await input.press('Enter');
  await chat.locator('.block.agent', { hasText: 'Done apart.' }).waitFor();
  await chat.locator('#busy').waitFor({ state: 'hidden' });
  await until("the worktree's files changed", () => fs.readFileSync(path.join(worktreePath, 'apart', 'x.txt'), 'utf8') === 'X1\n');
  assert.equal(fs.readFileSync(path.join(worktreePath, 'apart', 'y.txt'), 'utf8'), 'Y1\n');
  assert.equal(readWorkspace('apart/x.txt'), 'x1\n', "the workspace's file is as it was");
  assert.equal(readWorkspace('apart/y.txt'), 'y1\n');
});

step("Agent: Apply Worktree Session: the work lands in the workspace; the user's change meanwhile is a conflict", async () => {
  // Meanwhile the user changes y.txt in the workspace.
  fs.writeFileSync(path.join(WORKSPACE, 'apart', 'y.txt'), 'mine\n');
  await runCommand('Agent: Apply Worktree Session');
  const toast = page.locator('.notification-toast', { hasText: 'applied 1 file of agentls/session-' }).first();
  await toast.waitFor();
  const said = (await toast.innerText()).replace(/\s+/g, ' ');
  console.log(`apply toast: ${JSON.stringify(said)}`);
  assert.match(said, /applied 1 file of agentls\/session-\S+: apart\/x\.txt; 1 file not applied \(left as they are\): apart\/y\.txt\./);
  await toast.getByRole('button', { name: 'Show Conflicts' }).click();
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: 'apart/y.txt' }).first();
  await row.waitFor({ state: 'visible' });
  const reason = (await row.innerText()).replace(/\s+/g, ' ');
  console.log(`conflict row: ${JSON.stringify(reason)}`);
  assert.match(reason, /changed in the workspace/);
  await row.click();
  // The worktree's y.txt against the user's, side by side.
  await page.locator('.tab', { hasText: /apart\/y\.txt \(agentls\/session-.* ↔ workspace\)/ }).first().waitFor();
  // The list of conflicts comes back (for the next one): Escape closes it.
  await row.waitFor({ state: 'visible' });
  await page.keyboard.press('Escape');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
  assert.equal(readWorkspace('apart/y.txt'), 'mine\n', "the user's y.txt stays");

  // x.txt has the worktree's text in the editor.
  await page.keyboard.press('F1');
  const box = page.locator('.quick-input-widget input');
  await box.waitFor({ state: 'visible' });
  await box.fill('apart/x.txt');
  await pickRow('x.txt');
  await page.locator('.tab.active', { hasText: 'x.txt' }).waitFor();
  const editor = page.locator('.editor-instance .monaco-editor').last();
  await editor.locator('.view-line', { hasText: /^X1$/ }).first().waitFor();
  console.log(`x.txt on disk after the apply: ${JSON.stringify(readWorkspace('apart/x.txt'))}`);
});

step('switching sessions: a plain session hides the branch, the worktree session loaded shows it again', async () => {
  // The chat's New button (the palette would offer "New Session in a Worktree", used last, first).
  const chat = await chatFrame();
  await chat.locator('#new').click();
  await chat.locator('#worktree').waitFor({ state: 'hidden' });
  assert.equal(await chat.locator('#apply-worktree').isVisible(), false);
  await runCommand('Agent: Sessions');
  await pickRow('Change them apart.');
  const back = await chatFrame();
  await back.locator('.block.user', { hasText: 'Change them apart.' }).waitFor();
  await back.locator('#worktree', { hasText: /^⎇ agentls\/session-/ }).waitFor({ state: 'visible' });
  await back.locator('#apply-worktree').waitFor({ state: 'visible' });
});

/** The text of the tool call `id`'s output in the requests the fake provider saw. */
async function toolOutput(id) {
  for (const request of await providerRequests()) {
    for (const message of request.body.messages ?? []) {
      if (message.role === 'tool' && message.tool_call_id === id) return contentText(message) || String(message.content);
    }
  }
  return undefined;
}

step("the lsp tool asks VS Code's TypeScript: definition, references, and a rename approved then rewound", async () => {
  // A small TypeScript project; code-server's built-in TypeScript support serves it
  // (scripts/vscode-e2e checks that it is there).
  const lib = 'export function answer(): number {\n  return 41;\n}\n';
  const main = "import { answer } from './lib';\n\nconsole.log(answer());\n";
  fs.mkdirSync(path.join(WORKSPACE, 'ts'), { recursive: true });
  fs.writeFileSync(path.join(WORKSPACE, 'ts', 'tsconfig.json'), '{ "compilerOptions": { "strict": true } }\n');
  fs.writeFileSync(path.join(WORKSPACE, 'ts', 'lib.ts'), lib);
  fs.writeFileSync(path.join(WORKSPACE, 'ts', 'main.ts'), main);
  fs.writeFileSync(path.join(WORKSPACE, 'ts', 'warm.ts'), "export const warm: number = 'not a number';\n");
  // A plain session: the step before left the worktree session in the chat, whose tools
  // see the worktree (made before ts/ existed), not the workspace.
  const fresh = await chatFrame();
  await fresh.locator('#new').click();
  await fresh.locator('#worktree').waitFor({ state: 'hidden' });
  await setMode('Ask before every edit and command');
  await pushReply({
    toolCalls: [
      { id: 'ls1', name: 'lsp', arguments: { operation: 'definition', path: 'ts/main.ts', line: 3, symbol: 'answer' } },
      { id: 'ls2', name: 'lsp', arguments: { operation: 'references', path: 'ts/lib.ts', line: 1, symbol: 'answer' } },
    ],
  });
  await pushReply({ text: ['answer() is defined in ts/lib.ts and used in ts/main.ts.'] });
  await pushReply({ toolCalls: [{ id: 'ls3', name: 'lsp', arguments: { operation: 'rename', path: 'ts/lib.ts', line: 1, symbol: 'answer', new_name: 'reply' } }] });
  await pushReply({ text: ['Renamed answer to reply.'] });

  // The TypeScript server up: the type error of ts/warm.ts underlined (its project is
  // loaded, so the agent's first question is not raced against the server's start).
  const openFile = async (file, name) => {
    await page.keyboard.press('F1');
    const box = page.locator('.quick-input-widget input');
    await box.waitFor({ state: 'visible' });
    await box.fill(file);
    await pickRow(name);
    await page.locator('.tab.active', { hasText: name }).waitFor();
  };
  await openFile('ts/warm.ts', 'warm.ts');
  await page.locator('.monaco-editor .squiggly-error').first().waitFor({ timeout: 2 * LONG });
  await openFile('ts/main.ts', 'main.ts');
  await page.locator('.monaco-editor .view-line', { hasText: 'console.log(answer());' }).first().waitFor();

  const chat = await chatFrame();
  const input = chat.locator('#input');
  await chat.locator('#busy').waitFor({ state: 'hidden' });
  await input.fill('Where is answer() defined and used?');
  await input.press('Enter');
  await chat.locator('.block.agent', { hasText: 'answer() is defined in ts/lib.ts and used in ts/main.ts.' }).waitFor();
  const definition = await until('the definition output', () => toolOutput('ls1'));
  console.log(`lsp definition: ${JSON.stringify(definition)}`);
  assert.match(definition, /1 definition of `answer` at ts\/main\.ts:3:13 \(the editor's language server\):\nts\/lib\.ts:1:17/);
  const references = await until('the references output', () => toolOutput('ls2'));
  console.log(`lsp references: ${JSON.stringify(references)}`);
  assert.match(references, /references to `answer` at ts\/lib\.ts:1:17 in 2 files \(the editor's language server\)/);
  assert.match(references, /ts\/main\.ts:3:13: console\.log\(answer\(\)\);/);
  assert.doesNotMatch(references, /symbol index/);

  // The rename: asked once, applied to both files in the editor.
  await chat.locator('#busy').waitFor({ state: 'hidden' });
  await input.fill('Rename answer to reply.');
  await input.press('Enter');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible' });
  console.log(`rename approval: ${JSON.stringify(await dialog.innerText())}`);
  // Behind the dialog: the diff of both files, as it is (not one file's proposal).
  const shown = page.locator('.tab', { hasText: 'lib.ts.diff' }).first();
  await shown.waitFor();
  assert.equal(await page.locator('.tab', { hasText: '(proposed)' }).count(), 0);
  await dialog.getByRole('button', { name: /^Allow/ }).first().click();
  await dialog.waitFor({ state: 'hidden' });
  await chat.locator('.block.agent', { hasText: 'Renamed answer to reply.' }).waitFor();
  const renamed = await until('the rename output', () => toolOutput('ls3'));
  assert.match(renamed, /Renamed `answer` to `reply`: \d+ edit\(s\) in 2 file\(s\): ts\/lib\.ts, ts\/main\.ts\./, renamed);
  await page.locator('.tab', { hasText: 'main.ts' }).first().click();
  await page.locator('.monaco-editor .view-line', { hasText: 'console.log(reply());' }).first().waitFor();

  // Rewind the code to before the rename message: both files as they were.
  await messageAction(chat, 'Rename answer to reply.', 'rewind');
  await pickRow('Code only');
  await dialog.waitFor({ state: 'visible' });
  const preview = await dialog.innerText();
  console.log(`rename rewind preview: ${JSON.stringify(preview)}`);
  assert.match(preview, /Rewind \(code\)/, preview);
  assert.match(preview, /~ ts\/lib\.ts/, preview);
  assert.match(preview, /~ ts\/main\.ts/, preview);
  await dialog.getByRole('button', { name: /^Rewind$/ }).click();
  await dialog.waitFor({ state: 'hidden' });
  await page.locator('.tab', { hasText: 'main.ts' }).first().click();
  await page.locator('.monaco-editor .view-line', { hasText: 'console.log(answer());' }).first().waitFor();
  assert.equal(await page.locator('.monaco-editor .view-line', { hasText: 'reply' }).count(), 0);
  await until('ts/lib.ts and ts/main.ts as they were on disk', () => readWorkspace('ts/lib.ts') === lib && readWorkspace('ts/main.ts') === main);
});
