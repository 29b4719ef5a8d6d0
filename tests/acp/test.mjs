// End-to-end tests of `agentls acp` driven by the official ACP TypeScript library's client
// side (`ClientSideConnection` of @agentclientprotocol/sdk, which validates every message
// it receives against the protocol's schema), against the real binary and the dev kit's
// scripted fake provider. Run by scripts/acp-test, which installs the library into a cache
// and sets ACP_SDK (its entry point), AGENTLS_BIN and AGENTLS_DEV_BIN (agentls-dev, the fake
// provider's binary). Prints `acp: N passed, M failed`.
//
// No test waits on a clock: every wait is for a message (an update, an answer, a request).

import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { Readable, Writable } from "node:stream";
import assert from "node:assert/strict";

const acp = await import(process.env.ACP_SDK);
const BIN = process.env.AGENTLS_BIN;
const DEV_BIN = process.env.AGENTLS_DEV_BIN;
const children = [];

// ---- fixtures ----

function workspace(files) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agentls-acp-")));
  fs.mkdirSync(path.join(dir, ".git"));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

/** `agentls-dev fake-provider --script FILE`: resolves to its base URL. */
async function fake(script) {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "agentls-acp-fake-")), "script.json");
  fs.writeFileSync(file, JSON.stringify(script));
  const child = spawn(DEV_BIN, ["fake-provider", "--script", file], { stdio: ["pipe", "pipe", "inherit"] });
  children.push(child);
  const lines = readline.createInterface({ input: child.stdout });
  const url = await new Promise((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`fake-provider exited with ${code}`)));
  });
  return { url, child };
}

/** An OpenAI stream chunk carrying `text`. */
const chunk = (text) => ({ data: JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: text } }] }) });

/** `agentls acp --config …` in `ws`, with an empty user config directory unless `configHome` names one. */
function spawnAgent(url, ws, extra = {}, configHome = fs.mkdtempSync(path.join(os.tmpdir(), "agentls-acp-home-"))) {
  const config = { provider: { kind: "openai", baseUrl: url, model: "fake-model" }, stateDir: path.join(ws, ".state"), ...extra };
  const child = spawn(BIN, ["acp", "--config", JSON.stringify(config)], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, AGENTLS_LOG: process.env.AGENTLS_LOG || "warn", XDG_CONFIG_HOME: configHome },
  });
  children.push(child);
  return child;
}

/** A client over the library's ClientSideConnection, recording what the agent sends. */
function connect(child, behaviour = {}) {
  const updates = [];
  const waiters = [];
  const permissions = [];
  const reads = [];
  const writes = [];
  const terminals = [];
  /** The terminal a terminal/* request names, refused once released. */
  const usable = (params, method) => {
    const t = terminals.find((x) => x.id === params.terminalId);
    if (!t) throw new Error(`terminal/${method}: no terminal ${params.terminalId}`);
    t.calls.push(method);
    if (t.released) throw new Error(`terminal/${method}: ${t.id} was released`);
    return t;
  };
  const client = {
    // terminal/*: a small terminal of the test's own, running the command in a process
    // group of its own (killed whole, as a terminal's session is). `calls` lists the
    // terminal/* methods asked of it, in order; an ACP terminal is not used once released.
    async createTerminal(params) {
      const child = spawn(params.command, params.args || [], {
        cwd: params.cwd,
        env: { ...process.env, ...Object.fromEntries((params.env || []).map((e) => [e.name, e.value])) },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      const terminal = { id: `term-${terminals.length + 1}`, params, output: "", killed: false, released: false, child, exitStatus: null, calls: ["create"] };
      terminal.exit = new Promise((resolve) => child.on("exit", (code, signal) => resolve((terminal.exitStatus = { exitCode: code, signal }))));
      terminal.kill = () => {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {}
      };
      child.stdout.on("data", (d) => (terminal.output += d));
      child.stderr.on("data", (d) => (terminal.output += d));
      terminals.push(terminal);
      return { terminalId: terminal.id };
    },
    async terminalOutput(params) {
      const t = usable(params, "output");
      return { output: t.output, truncated: false, ...(t.exitStatus ? { exitStatus: t.exitStatus } : {}) };
    },
    async waitForTerminalExit(params) {
      return await usable(params, "wait_for_exit").exit;
    },
    async killTerminal(params) {
      const t = usable(params, "kill");
      t.killed = true;
      t.kill();
      return {};
    },
    async releaseTerminal(params) {
      const t = usable(params, "release");
      t.released = true;
      t.kill();
      return {};
    },
    async sessionUpdate(params) {
      updates.push(params);
      for (const waiter of [...waiters]) {
        if (waiter.test(params)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(params);
        }
      }
    },
    async requestPermission(params) {
      permissions.push(params);
      if (behaviour.silentPermissions) return new Promise(() => {});
      const choose = behaviour.permission || ((p) => p.options.find((o) => o.kind === "allow_once"));
      const option = choose(params);
      return option ? { outcome: { outcome: "selected", optionId: option.optionId } } : { outcome: { outcome: "cancelled" } };
    },
    async readTextFile(params) {
      reads.push(params);
      const unsaved = (behaviour.buffers || {})[params.path];
      return { content: unsaved ?? fs.readFileSync(params.path, "utf8") };
    },
    async writeTextFile(params) {
      writes.push(params);
      fs.writeFileSync(params.path, params.content);
      return {};
    },
  };
  // What the agent sends on the wire, as parsed lines: `$/cancel_request` has no handler
  // of the legacy client API, so it is read here.
  const wire = [];
  const wireWaiters = [];
  let pendingLine = "";
  child.stdout.on("data", (data) => {
    pendingLine += data;
    let at;
    while ((at = pendingLine.indexOf("\n")) >= 0) {
      const line = pendingLine.slice(0, at);
      pendingLine = pendingLine.slice(at + 1);
      try {
        const message = JSON.parse(line);
        wire.push(message);
        for (const waiter of [...wireWaiters]) {
          if (waiter.test(message)) {
            wireWaiters.splice(wireWaiters.indexOf(waiter), 1);
            waiter.resolve(message);
          }
        }
      } catch {}
    }
  });
  /** Resolves with the first message the agent sent (or sends) that passes `test`. */
  const sent = (test) => {
    const seen = wire.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => wireWaiters.push({ test, resolve }));
  };
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const connection = new acp.ClientSideConnection(() => client, stream);
  /** Resolves with the first update (already received or to come) that passes `test`. */
  const update = (test) => {
    const seen = updates.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => waiters.push({ test, resolve }));
  };
  return { connection, updates, update, permissions, reads, writes, terminals, wire, sent };
}

const kind = (name) => (n) => n.update.sessionUpdate === name;
const text = (updates, name) => updates.filter(kind(name)).map((n) => n.update.content.text).join("");

async function start(script, ws, behaviour = {}, fsCapabilities = { readTextFile: true, writeTextFile: true }, terminal = false, model = "fake-model") {
  const { url } = await fake(script);
  const child = spawnAgent(url, ws, { provider: { kind: "openai", baseUrl: url, model } });
  const client = connect(child, behaviour);
  const init = await client.connection.initialize({ protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { fs: fsCapabilities, terminal } });
  return { ...client, child, url, init };
}

// ---- the scenarios ----

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test("initialize answers protocol version 1 with loadSession and embedded context", async () => {
  const ws = workspace({});
  const { init } = await start({ replies: [] }, ws);
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
  assert.deepEqual(init.authMethods, []);
  assert.equal(init.agentInfo.name, "agentls");
});

test("session/new announces the modes, the config options and the slash commands", async () => {
  const ws = workspace({});
  const c = await start({ replies: [] }, ws);
  const session = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  assert.match(session.sessionId, /.+/);
  assert.equal(session.modes.currentModeId, "ask");
  assert.deepEqual(session.modes.availableModes.map((m) => m.id), ["ask", "auto-edit", "full-auto", "plan"]);
  assert.deepEqual(session.configOptions[0].options.map((o) => o.value), ["ask", "auto-edit", "full-auto", "plan"]);
  assert.deepEqual(session.configOptions.map((o) => o.id), ["mode", "model"]);
  assert.equal(session.configOptions[1].currentValue, "fake-model");
  const commands = await c.update(kind("available_commands_update"));
  assert.equal(commands.sessionId, session.sessionId);
  assert.ok(commands.update.availableCommands.some((cmd) => cmd.name === "compact"));
});

test("a streamed answer arrives as agent_message_chunks, then end_turn and the usage", async () => {
  const ws = workspace({});
  const c = await start({ replies: [{ text: ["It ", "returns ", "41."], usage: [900, 5] }] }, ws);
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const answer = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "What does it return?" }] });
  assert.equal(answer.stopReason, "end_turn");
  assert.equal(text(c.updates, "agent_message_chunk"), "It returns 41.");
  assert.ok(c.updates.filter(kind("agent_message_chunk")).length >= 3, "streamed in chunks");
  const usage = c.updates.filter(kind("usage_update")).at(-1);
  assert.ok(usage && usage.update.used > 0 && usage.update.size > 0, JSON.stringify(usage));
});

test("a shell call asks through session/request_permission and runs once allowed", async () => {
  const ws = workspace({});
  const c = await start({ replies: [{ toolCalls: [{ id: "s1", name: "shell", arguments: { command: "echo allowed-ran" } }] }, { text: ["Done."] }] }, ws);
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const answer = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Run it." }] });
  assert.equal(answer.stopReason, "end_turn");
  assert.equal(c.permissions.length, 1);
  assert.deepEqual(c.permissions[0].options.map((o) => o.kind), ["allow_once", "allow_always", "reject_once", "reject_always"]);
  assert.equal(c.permissions[0].toolCall.toolCallId, "s1");
  const call = c.updates.find((n) => kind("tool_call")(n) && n.update.toolCallId === "s1");
  assert.equal(call.update.kind, "execute");
  const done = c.updates.find((n) => kind("tool_call_update")(n) && n.update.status === "completed");
  assert.match(JSON.stringify(done.update.content), /allowed-ran/);
});

test("a rejected call does not run", async () => {
  const ws = workspace({});
  const c = await start({ replies: [{ toolCalls: [{ id: "s1", name: "shell", arguments: { command: "touch rejected-ran" } }] }, { text: ["OK."] }] }, ws, {
    permission: (p) => p.options.find((o) => o.kind === "reject_once"),
  });
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Run it." }] });
  assert.equal(fs.existsSync(path.join(ws, "rejected-ran")), false);
  assert.ok(c.updates.some((n) => kind("tool_call_update")(n) && n.update.status === "failed"));
});

test("an edit arrives as fs/write_text_file, with a diff in tool_call_update and in the permission", async () => {
  const ws = workspace({ "src/lib.rs": "pub fn answer() -> u32 {\n    41\n}\n" });
  const c = await start(
    { replies: [{ toolCalls: [{ id: "e1", name: "edit_file", arguments: { path: "src/lib.rs", old_text: "    41\n", new_text: "    42\n" } }] }, { text: ["Changed."] }] },
    ws,
  );
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const answer = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Make it 42." }] });
  assert.equal(answer.stopReason, "end_turn");
  const file = path.join(ws, "src/lib.rs");
  assert.deepEqual(c.writes, [{ sessionId, path: file, content: "pub fn answer() -> u32 {\n    42\n}\n" }]);
  const diff = { type: "diff", path: file, oldText: "pub fn answer() -> u32 {\n    41\n}\n", newText: "pub fn answer() -> u32 {\n    42\n}\n" };
  const withDiff = c.updates.find((n) => kind("tool_call_update")(n) && (n.update.content || []).some((x) => x.type === "diff"));
  assert.ok(withDiff, JSON.stringify(c.updates));
  assert.deepEqual(withDiff.update.content.find((x) => x.type === "diff"), diff);
  assert.deepEqual(c.permissions[0].toolCall.content, [diff]);
  const call = c.updates.find(kind("tool_call"));
  assert.equal(call.update.kind, "edit");
  assert.deepEqual(call.update.locations, [{ path: file }]);
});

test("a read is served by fs/read_text_file, unsaved text included", async () => {
  const ws = workspace({ "a.txt": "on disk\n" });
  const file = path.join(ws, "a.txt");
  const c = await start({ replies: [{ toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "a.txt" } }] }, { text: ["Read."] }] }, ws, {
    buffers: { [file]: "unsaved in the editor\n" },
  });
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Read a.txt." }] });
  assert.ok(c.reads.some((r) => r.path === file && r.sessionId === sessionId));
  assert.equal(c.permissions.length, 0, "reads run without asking");
  const done = c.updates.find((n) => kind("tool_call_update")(n) && n.update.status === "completed");
  assert.match(JSON.stringify(done.update.content), /unsaved in the editor/);
  assert.doesNotMatch(JSON.stringify(done.update.content), /on disk/);
});

test("without the client's fs, edits go to the disk", async () => {
  const ws = workspace({ "a.txt": "one\n" });
  const c = await start(
    { replies: [{ toolCalls: [{ id: "e1", name: "edit_file", arguments: { path: "a.txt", old_text: "one", new_text: "two" } }] }, { text: ["Ok."] }] },
    ws,
    {},
    { readTextFile: false, writeTextFile: false },
  );
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Edit." }] });
  assert.equal(c.writes.length + c.reads.length, 0);
  assert.equal(fs.readFileSync(path.join(ws, "a.txt"), "utf8"), "two\n");
});

test("with client terminals, the shell tool runs in terminal/create and the call embeds the terminal", async () => {
  const ws = workspace({});
  const c = await start(
    { replies: [{ toolCalls: [{ id: "s1", name: "shell", arguments: { command: "echo in-the-terminal; exit 3" } }] }, { text: ["Seen."] }] },
    ws,
    {},
    { readTextFile: true, writeTextFile: true },
    true,
  );
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.setSessionMode({ sessionId, modeId: "full-auto" });
  const answer = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Run it." }] });
  assert.equal(answer.stopReason, "end_turn");
  assert.equal(c.terminals.length, 1);
  const [terminal] = c.terminals;
  // The command runs in the sandbox: agentls's own `sandbox` subcommand, then sh -c.
  assert.equal(terminal.params.command, fs.realpathSync(BIN));
  assert.deepEqual(terminal.params.args.slice(0, 2), ["sandbox", "--policy"]);
  assert.equal(JSON.parse(terminal.params.args[2]).mode, "workspace-write");
  assert.deepEqual(terminal.params.args.slice(3), ["--", "sh", "-c", "echo in-the-terminal; exit 3"]);
  assert.equal(terminal.params.cwd, ws);
  assert.ok(terminal.params.env.some((e) => e.name === "OPENAI_API_KEY" && e.value === ""), "the provider key is hidden");
  assert.equal(terminal.released, true);
  const embedded = c.updates.find((n) => kind("tool_call_update")(n) && (n.update.content || []).some((x) => x.type === "terminal"));
  assert.ok(embedded, "a tool_call_update shows the terminal");
  const failed = c.updates.find((n) => kind("tool_call_update")(n) && n.update.status === "failed");
  assert.equal(failed.update.content[0].terminalId, terminal.id);
  assert.match(JSON.stringify(failed.update.content), /in-the-terminal[\s\S]*exit code 3/);
});

test("a compaction is a compaction_update for a client that takes them, a message otherwise", async () => {
  const big = Array.from({ length: 150 }, (_, i) => `let value_${i} = compute(&inputs[${i}], "alpha parser stage ${i}");\n`).join("");
  const script = {
    replies: [{ toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "big.rs" } }] }, { text: ["Read it."] }],
    routes: { "CONTEXT CHECKPOINT COMPACTION": [{ text: ["# Compaction Handoff\n[Done] read big.rs"] }] },
  };
  for (const takes of [true, false]) {
    const ws = workspace({ "big.rs": big });
    const { url } = await fake(script);
    const c = connect(spawnAgent(url, ws));
    await c.connection.initialize({ protocolVersion: 1, clientCapabilities: takes ? { session: { compaction: {} } } : {} });
    const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
    await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Read big.rs." }] });
    const answer = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "/compact" }] });
    assert.equal(answer.stopReason, "end_turn");
    const compactions = c.updates.filter(kind("compaction_update")).map((n) => n.update);
    if (takes) {
      assert.deepEqual(compactions.map((u) => u.status), ["in_progress", "completed"], JSON.stringify(c.updates));
      assert.equal(compactions[0].compactionId, compactions[1].compactionId);
      assert.doesNotMatch(text(c.updates, "agent_message_chunk"), /conversation compacted/);
    } else {
      assert.equal(compactions.length, 0);
      assert.match(text(c.updates, "agent_message_chunk"), /conversation compacted/);
    }
  }
});

test("a cancel kills the command running in the client's terminal", async () => {
  const ws = workspace({});
  const c = await start(
    { replies: [{ toolCalls: [{ id: "s1", name: "shell", arguments: { command: "sleep 30" } }] }] },
    ws,
    {},
    { readTextFile: true, writeTextFile: true },
    true,
  );
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.setSessionMode({ sessionId, modeId: "full-auto" });
  const answer = c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Wait." }] });
  await c.update((n) => kind("tool_call_update")(n) && (n.update.content || []).some((x) => x.type === "terminal"));
  await c.connection.cancel({ sessionId });
  assert.equal((await answer).stopReason, "cancelled");
  assert.equal(c.terminals[0].killed, true);
  assert.equal(c.terminals[0].released, true);
});

/** The content of the final update of tool call `id`, as text. */
const finalContent = (c, id) =>
  JSON.stringify(c.updates.filter((n) => kind("tool_call_update")(n) && n.update.toolCallId === id && ["completed", "failed"].includes(n.update.status)).at(-1)?.update.content);

test("with client terminals, a background command runs in one: it answers at once, shell_output reads what is new, shell_kill ends it", async () => {
  const ws = workspace({});
  // Prints, then waits for the test's go-ahead (a file), prints again, then sleeps.
  const command = "echo first-$((0+1)); while [ ! -f go ]; do sleep 0.05; done; echo later-$((1+1)); sleep 1000";
  const c = await start(
    {
      replies: [
        { toolCalls: [{ id: "b1", name: "shell", arguments: { command, background: true } }] },
        { toolCalls: [{ id: "o1", name: "shell_output", arguments: { id: "bg1", wait_ms: 30000 } }] },
        { toolCalls: [{ id: "k1", name: "shell_kill", arguments: { id: "bg1" } }] },
        { text: ["Stopped."] },
      ],
    },
    ws,
    {},
    { readTextFile: true, writeTextFile: true },
    true,
  );
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.setSessionMode({ sessionId, modeId: "full-auto" });
  const answer = c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Start it." }] });
  const started = await c.update((n) => kind("tool_call_update")(n) && n.update.toolCallId === "b1" && n.update.status === "completed");
  // The call answered while the command still runs in the client's terminal.
  assert.equal(c.terminals.length, 1);
  const [terminal] = c.terminals;
  assert.equal(terminal.exitStatus, null, "the command still runs");
  assert.equal(terminal.released, false);
  assert.deepEqual(terminal.params.args.slice(-3), ["sh", "-c", command]);
  assert.equal(started.update.content[0].terminalId, terminal.id, "the call shows the terminal");
  const first = JSON.stringify(started.update.content);
  assert.match(first, /id: bg1[\s\S]*first-1/);
  assert.doesNotMatch(first, /later-2/);
  fs.writeFileSync(path.join(ws, "go"), "");
  assert.equal((await answer).stopReason, "end_turn");
  const read = finalContent(c, "o1");
  assert.match(read, /later-2[\s\S]*bg1 is still running/);
  assert.doesNotMatch(read, /first-1/, "only what is new since the last read");
  assert.match(finalContent(c, "k1"), /bg1 was killed/);
  assert.equal(terminal.killed, true);
  assert.equal(terminal.released, true);
  const calls = terminal.calls.filter((m) => m !== "output" && m !== "wait_for_exit");
  assert.deepEqual(calls, ["create", "kill", "release"], terminal.calls.join(" "));
  await terminal.exit;
});

test("session/close kills and releases a background command's client terminal", async () => {
  const ws = workspace({});
  const c = await start(
    { replies: [{ toolCalls: [{ id: "b1", name: "shell", arguments: { command: "echo up; sleep 1000", background: true } }] }, { text: ["Running."] }] },
    ws,
    {},
    { readTextFile: true, writeTextFile: true },
    true,
  );
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.setSessionMode({ sessionId, modeId: "full-auto" });
  assert.equal((await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Start it." }] })).stopReason, "end_turn");
  assert.match(finalContent(c, "b1"), /id: bg1[\s\S]*up/);
  assert.equal(c.terminals.length, 1, "the command runs in the client's terminal");
  const [terminal] = c.terminals;
  assert.equal(terminal.released, false, "the command outlives its turn");
  await c.connection.closeSession({ sessionId });
  const released = await c.sent((m) => m.method === "terminal/release" && m.params.terminalId === terminal.id);
  assert.equal(released.params.sessionId, sessionId);
  assert.ok(c.wire.some((m) => m.method === "terminal/kill" && m.params.terminalId === terminal.id));
  await terminal.exit;
});

test("when agentls exits, a background command's client terminal is released", async () => {
  const ws = workspace({});
  const c = await start(
    { replies: [{ toolCalls: [{ id: "b1", name: "shell", arguments: { command: "echo up; sleep 1000", background: true } }] }, { text: ["Running."] }] },
    ws,
    {},
    { readTextFile: true, writeTextFile: true },
    true,
  );
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.setSessionMode({ sessionId, modeId: "full-auto" });
  await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Start it." }] });
  assert.equal(c.terminals.length, 1, "the command runs in the client's terminal");
  const [terminal] = c.terminals;
  c.child.stdin.end();
  const released = await c.sent((m) => m.method === "terminal/release" && m.params.terminalId === terminal.id);
  assert.equal(released.params.sessionId, sessionId);
  await new Promise((resolve) => (c.child.exitCode !== null ? resolve() : c.child.once("exit", resolve)));
  terminal.kill();
});

test("session/set_config_option switches the model of the next call; session/resume does not replay", async () => {
  const ws = workspace({});
  const c = await start({ replies: [{ text: ["One."] }] }, ws);
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const set = await c.connection.setSessionConfigOption({ sessionId, configId: "model", value: "gpt-4o" });
  assert.equal(set.configOptions.find((o) => o.id === "model").currentValue, "gpt-4o");
  await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Hi." }] });
  const requests = await (await fetch(c.url.replace(/\/v1$/, "") + "/__requests")).json();
  assert.equal(requests.at(-1).body.model, "gpt-4o");
  await assert.rejects(c.connection.setSessionConfigOption({ sessionId, configId: "colour", value: "red" }), /unknown config option/);
  c.child.stdin.end();
  const again = await start({ replies: [] }, ws);
  const resumed = await again.connection.resumeSession({ sessionId, cwd: ws });
  assert.equal(resumed.modes.currentModeId, "ask");
  await again.update(kind("available_commands_update"));
  assert.equal(again.updates.filter(kind("user_message_chunk")).length, 0, "no replay");
});

test("session/cancel mid-stream ends the prompt with cancelled", async () => {
  const ws = workspace({});
  const c = await start({ replies: [{ steps: [chunk("Hel"), { hold: true }] }] }, ws);
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const answer = c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Talk." }] });
  await c.update(kind("agent_message_chunk"));
  await c.connection.cancel({ sessionId });
  assert.equal((await answer).stopReason, "cancelled");
});

test("session/load replays the history, then answers; session/list finds it", async () => {
  const ws = workspace({});
  const script = { replies: [{ text: ["Forty-one."] }] };
  const first = await start(script, ws);
  const { sessionId } = await first.connection.newSession({ cwd: ws, mcpServers: [] });
  await first.connection.prompt({ sessionId, prompt: [{ type: "text", text: "What is it?" }] });
  first.child.stdin.end();
  const second = await start({ replies: [] }, ws);
  const listed = await second.connection.listSessions({ cwd: ws });
  assert.ok(listed.sessions.some((s) => s.sessionId === sessionId && s.cwd === ws), JSON.stringify(listed));
  const loaded = await second.connection.loadSession({ sessionId, cwd: ws, mcpServers: [] });
  assert.equal(loaded.modes.currentModeId, "ask");
  // Received before the answer: the library delivers messages in order.
  assert.equal(text(second.updates, "user_message_chunk"), "What is it?");
  assert.equal(text(second.updates, "agent_message_chunk"), "Forty-one.");
});

test("session/fork (advertised as sessionCapabilities.fork) starts a session with the history, also after a restart", async () => {
  const ws = workspace({});
  const first = await start({ replies: [{ text: ["Forty-one."] }, { text: ["Original goes on."] }] }, ws);
  assert.ok(first.init.agentCapabilities.sessionCapabilities.fork, JSON.stringify(first.init.agentCapabilities));
  const { sessionId } = await first.connection.newSession({ cwd: ws, mcpServers: [] });
  await first.connection.prompt({ sessionId, prompt: [{ type: "text", text: "What is it?" }] });
  const forked = await first.connection.unstable_forkSession({ sessionId, cwd: ws, mcpServers: [] });
  assert.notEqual(forked.sessionId, sessionId);
  assert.equal(forked.modes.currentModeId, "ask");
  // The original goes on apart from the fork.
  await first.connection.prompt({ sessionId, prompt: [{ type: "text", text: "ORIGINALONLY" }] });
  first.child.stdin.end();
  // Another process: the fork of a session it loads from the log, and the fork's history.
  const second = await start({ replies: [{ text: ["In the fork."] }] }, ws);
  const again = await second.connection.unstable_forkSession({ sessionId: forked.sessionId, cwd: ws, mcpServers: [] });
  await second.connection.prompt({ sessionId: again.sessionId, prompt: [{ type: "text", text: "And now?" }] });
  const requests = await (await fetch(second.url.replace(/\/v1$/, "") + "/__requests")).json();
  const sent = JSON.stringify(requests.at(-1).body.messages);
  assert.ok(sent.includes("What is it?") && sent.includes("Forty-one."), sent);
  assert.ok(!sent.includes("ORIGINALONLY"), sent);
  await assert.rejects(second.connection.unstable_forkSession({ sessionId: "nope", cwd: ws, mcpServers: [] }), /unknown session/);
});

test("set_mode full-auto stops the permission requests", async () => {
  const ws = workspace({});
  const c = await start({ replies: [{ toolCalls: [{ id: "s1", name: "shell", arguments: { command: "echo auto" } }] }, { text: ["Done."] }] }, ws);
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.setSessionMode({ sessionId, modeId: "full-auto" });
  const mode = await c.update(kind("current_mode_update"));
  assert.equal(mode.update.currentModeId, "full-auto");
  await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Run it." }] });
  assert.equal(c.permissions.length, 0);
  const done = c.updates.find((n) => kind("tool_call_update")(n) && n.update.status === "completed");
  assert.match(JSON.stringify(done.update.content), /auto/);
  await assert.rejects(c.connection.setSessionMode({ sessionId, modeId: "yolo" }), /unknown mode/);
});

test("set_mode plan offers no edit tool and refuses an edit; the mode option auto-edit then edits", async () => {
  const ws = workspace({ "a.txt": "one\n" });
  const edit = { path: "a.txt", old_text: "one", new_text: "two" };
  const script = {
    replies: [
      { toolCalls: [{ id: "e1", name: "edit_file", arguments: edit }] },
      { text: ["Plan: change one to two."] },
      { toolCalls: [{ id: "e2", name: "edit_file", arguments: edit }] },
      { text: ["Done."] },
    ],
  };
  const c = await start(script, ws);
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.setSessionMode({ sessionId, modeId: "plan" });
  const planning = await c.update((n) => kind("current_mode_update")(n) && n.update.currentModeId === "plan");
  assert.equal(planning.update.currentModeId, "plan");
  const planned = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Plan it." }] });
  assert.equal(planned.stopReason, "end_turn");
  const refused = c.updates.find((n) => kind("tool_call_update")(n) && n.update.status === "failed");
  assert.match(JSON.stringify(refused.update.content), /not available in plan mode/);
  assert.equal(c.writes.length, 0);
  assert.equal(c.permissions.length, 0);
  assert.equal(fs.readFileSync(path.join(ws, "a.txt"), "utf8"), "one\n");
  const requests = async () => (await fetch(c.url.replace(/\/v1$/, "") + "/__requests")).json();
  const names = (request) => request.body.tools.map((t) => t.function.name);
  const first = (await requests())[0];
  assert.ok(!names(first).includes("edit_file") && !names(first).includes("write_file"), JSON.stringify(names(first)));
  assert.match(JSON.stringify(first.body), /You are in plan mode/);

  // Back through the mode config option: the same session carries the plan out.
  const set = await c.connection.setSessionConfigOption({ sessionId, configId: "mode", value: "auto-edit" });
  assert.equal(set.configOptions.find((o) => o.id === "mode").currentValue, "auto-edit");
  await c.update((n) => kind("current_mode_update")(n) && n.update.currentModeId === "auto-edit");
  const done = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Do it." }] });
  assert.equal(done.stopReason, "end_turn");
  assert.equal(c.permissions.length, 0, "auto-edit edits without asking");
  assert.equal(fs.readFileSync(path.join(ws, "a.txt"), "utf8"), "two\n");
  const third = (await requests())[2];
  assert.ok(names(third).includes("edit_file"), JSON.stringify(names(third)));
  assert.match(JSON.stringify(third.body), /left plan mode/);
});

test("a slash command from available_commands_update runs without the model", async () => {
  const ws = workspace({});
  const c = await start({ replies: [] }, ws);
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const commands = await c.update(kind("available_commands_update"));
  const help = commands.update.availableCommands.find((cmd) => cmd.name === "help");
  assert.ok(help, JSON.stringify(commands));
  const answer = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: `/${help.name}` }] });
  assert.equal(answer.stopReason, "end_turn");
  assert.match(text(c.updates, "agent_message_chunk"), /\/compact/);
});

test("a custom command of the workspace is in available_commands_update and runs", async () => {
  const ws = workspace({ ".agents/commands/inspect.md": "---\ndescription: Review a path\nargument-hint: PATH\n---\nReview $ARGUMENTS with care, please.\n" });
  const { url } = await fake({ replies: [{ text: ["Reviewed."] }] });
  const c = connect(spawnAgent(url, ws));
  await c.connection.initialize({ protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const commands = await c.update(kind("available_commands_update"));
  const review = commands.update.availableCommands.find((cmd) => cmd.name === "inspect");
  assert.deepEqual(review, { name: "inspect", description: "Review a path", input: { hint: "PATH" } });
  const answer = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "/inspect src/lib.rs" }] });
  assert.equal(answer.stopReason, "end_turn");
  const requests = await (await fetch(url.replace(/\/v1$/, "") + "/__requests")).json();
  assert.match(JSON.stringify(requests), /Review src\/lib.rs with care, please/);
});

test("resource links and embedded resources reach the model as attachments", async () => {
  const ws = workspace({ "notes.md": "linked file text\n" });
  const { url } = await fake({ replies: [{ text: ["Seen."] }] });
  const c = connect(spawnAgent(url, ws));
  await c.connection.initialize({ protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.prompt({
    sessionId,
    prompt: [
      { type: "text", text: "Compare" },
      { type: "resource_link", name: "notes.md", uri: `file://${ws}/notes.md` },
      { type: "resource", resource: { uri: "file:///elsewhere/x.rs", text: "embedded resource text" } },
    ],
  });
  const requests = await (await fetch(url.replace(/\/v1$/, "") + "/__requests")).json();
  const sent = JSON.stringify(requests);
  assert.match(sent, /linked file text/);
  assert.match(sent, /embedded resource text/);
  assert.match(sent, /trust=\\+"untrusted/);
});

test("the user settings file is read, and --config wins over it key by key", async () => {
  const ws = workspace({});
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "agentls-acp-home-"));
  fs.mkdirSync(path.join(home, "agentls"));
  fs.writeFileSync(path.join(home, "agentls", "settings.json"), JSON.stringify({ approval: "full-auto", provider: { model: "file-model" } }));
  const { url } = await fake({ replies: [] });
  const c = connect(spawnAgent(url, ws, {}, home));
  await c.connection.initialize({ protocolVersion: 1, clientCapabilities: {} });
  const session = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  assert.equal(session.modes.currentModeId, "full-auto", "from the file");
  assert.equal(session.configOptions.find((o) => o.id === "model").currentValue, "fake-model", "--config wins");
  // A settings file that is not JSON: the agent answers initialize and says why it cannot start a session.
  fs.writeFileSync(path.join(home, "agentls", "settings.json"), "{not json");
  const bad = connect(spawnAgent(url, ws, {}, home));
  await bad.connection.initialize({ protocolVersion: 1, clientCapabilities: {} });
  await assert.rejects(bad.connection.newSession({ cwd: ws, mcpServers: [] }), /settings\.json is not JSON/);
});

test("a subagent's tool calls show in the client's session; its own text does not", async () => {
  const ws = workspace({ "a.txt": "KAPPA is here\n" });
  const c = await start(
    {
      replies: [{ toolCalls: [{ id: "t1", name: "task", arguments: { agent: "explore", prompt: "find KAPPA" } }] }, { text: ["Found it."] }],
      // Only the child's requests hold explore's system prompt.
      routes: { "read-only search subagent": [{ toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "a.txt" } }] }, { text: ["KAPPA is in a.txt:1"] }] },
    },
    ws,
  );
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const answer = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Where is KAPPA?" }] });
  assert.equal(answer.stopReason, "end_turn");
  assert.ok(c.updates.every((n) => n.sessionId === sessionId), "every update is for the client's session");
  const read = c.updates.find((n) => kind("tool_call")(n) && n.update.toolCallId === "r1");
  assert.ok(read, "the child's read is shown");
  const task = c.updates.find((n) => kind("tool_call_update")(n) && n.update.toolCallId === "t1" && n.update.status === "completed");
  assert.match(JSON.stringify(task.update.content), /KAPPA is in a\.txt:1/);
  assert.equal(text(c.updates, "agent_message_chunk"), "Found it.", "the child's own text stays inside its task call");
});

test("a workspace hook fired inside a subagent is asked in the client's session, labelled", async () => {
  const hooks = { hooks: { PreToolUse: [{ matcher: "read_file", hooks: [{ type: "command", command: "true" }] }] } };
  const ws = workspace({ "a.txt": "KAPPA is here\n", ".agents/hooks.json": JSON.stringify(hooks) });
  const c = await start(
    {
      replies: [{ toolCalls: [{ id: "t1", name: "task", arguments: { agent: "explore", prompt: "find KAPPA" } }] }, { text: ["Found it."] }],
      routes: { "read-only search subagent": [{ toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "a.txt" } }] }, { text: ["KAPPA is in a.txt:1"] }] },
    },
    ws,
  );
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const answer = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Where is KAPPA?" }] });
  assert.equal(answer.stopReason, "end_turn");
  const asked = c.permissions.filter((p) => /Workspace hook/.test(p.toolCall.title || ""));
  assert.equal(asked.length, 1, JSON.stringify(c.permissions));
  assert.equal(asked[0].sessionId, sessionId, "asked in the session the client knows");
  assert.match(asked[0].toolCall.title, /^explore: Workspace hook \(PreToolUse\): true/);
});

/** The everything MCP server installed by scripts/mcp-servers (./test exports its path). */
function everythingServer() {
  if (process.env.AGENTLS_MCP_EVERYTHING) return process.env.AGENTLS_MCP_EVERYTHING;
  const script = path.join(path.dirname(new URL(import.meta.url).pathname), "../../scripts/mcp-servers");
  const out = execFileSync(script, { encoding: "utf8" });
  return out.match(/^export AGENTLS_MCP_EVERYTHING=(.*)$/m)[1];
}

test("the client's MCP servers (stdio and http) give tools to the session's first prompt", async () => {
  const ws = workspace({});
  const everything = everythingServer();
  // The HTTP server: a free port, then wait until it accepts (a connection, not a clock).
  const net = await import("node:net");
  const port = await new Promise((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
  const http = spawn(everything, ["streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: "ignore" });
  children.push(http);
  while (!(await new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => { socket.end(); resolve(true); });
    socket.on("error", () => resolve(false));
  }))) await new Promise((resolve) => setImmediate(resolve));
  const c = await start({
    replies: [
      { toolCalls: [
        { id: "m1", name: "mcp__local__echo", arguments: { message: "from the acp client" } },
        { id: "m2", name: "mcp__web__get-sum", arguments: { a: 20, b: 22 } },
      ] },
      { text: ["Both answered."] },
    ],
  }, ws);
  assert.equal(c.init.agentCapabilities.mcpCapabilities.http, true);
  const { sessionId } = await c.connection.newSession({
    cwd: ws,
    mcpServers: [
      { name: "local", command: everything, args: ["stdio"], env: [] },
      { type: "http", name: "web", url: `http://127.0.0.1:${port}/mcp`, headers: [{ name: "X-Test", value: "1" }] },
    ],
  });
  // Sent at once: the first request waits for the servers' first start.
  const answer = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Use both servers." }] });
  assert.equal(answer.stopReason, "end_turn");
  const requests = await (await fetch(c.url.replace(/\/v1$/, "") + "/__requests")).json();
  const names = requests[0].body.tools.map((t) => t.function.name);
  assert.ok(names.includes("mcp__local__echo") && names.includes("mcp__web__get-sum"), names.join(","));
  const permitted = c.permissions.map((p) => p.toolCall.toolCallId).sort();
  assert.deepEqual(permitted, ["m1", "m2"]);
  const done = c.updates.filter((n) => kind("tool_call_update")(n) && n.update.status === "completed");
  const shown = JSON.stringify(done.map((n) => n.update.content));
  assert.match(shown, /Echo: from the acp client/);
  assert.match(shown, /42/);
});

test("a malformed line or an unknown method gets a JSON-RPC error and the agent stays up", async () => {
  const ws = workspace({});
  const { url } = await fake({ replies: [] });
  const child = spawnAgent(url, ws);
  const lines = readline.createInterface({ input: child.stdout });
  const answers = [];
  const waiting = [];
  lines.on("line", (line) => {
    const message = JSON.parse(line);
    answers.push(message);
    while (waiting.length) waiting.shift()();
  });
  const next = async () => {
    while (answers.length === 0) await new Promise((resolve) => waiting.push(resolve));
    return answers.shift();
  };
  child.stdin.write("{not json\n");
  assert.equal((await next()).error.code, -32700);
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "no/such/method", params: {} }) + "\n");
  const unknown = await next();
  assert.equal(unknown.id, 1);
  assert.equal(unknown.error.code, -32601);
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: 7 } }) + "\n");
  const bad = await next();
  assert.equal(bad.id, 2);
  assert.equal(bad.error.code, -32602);
  child.stdin.write(JSON.stringify([1, 2]) + "\n");
  assert.equal((await next()).error.code, -32600);
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "initialize", params: { protocolVersion: 1 } }) + "\n");
  const init = await next();
  assert.equal(init.id, 3);
  assert.equal(init.result.protocolVersion, 1);
});

test("an MCP server's prompts join available_commands_update once it started, and run", async () => {
  const ws = workspace({});
  const { url } = await fake({ replies: [{ text: ["Hello sent."] }] });
  const c = connect(spawnAgent(url, ws));
  await c.connection.initialize({ protocolVersion: 1, clientCapabilities: {} });
  const fixture = new URL("../fixtures/mcp_prompts_server.py", import.meta.url).pathname;
  const { sessionId } = await c.connection.newSession({
    cwd: ws,
    mcpServers: [{ name: "fixture", command: "python3", args: [fixture], env: [] }],
  });
  const commands = await c.update(
    (n) => kind("available_commands_update")(n) && n.update.availableCommands.some((cmd) => cmd.name === "mcp__fixture__greet"),
  );
  const greet = commands.update.availableCommands.find((cmd) => cmd.name === "mcp__fixture__greet");
  assert.deepEqual(greet, { name: "mcp__fixture__greet", description: "Greets someone. (fixture MCP)", input: { hint: "<name>" } });
  const answer = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "/mcp__fixture__greet Ann" }] });
  assert.equal(answer.stopReason, "end_turn");
  const requests = await (await fetch(url.replace(/\/v1$/, "") + "/__requests")).json();
  assert.match(JSON.stringify(requests), /<mcp_prompt server=\\"fixture\\" prompt=\\"greet\\" trust=\\"untrusted\\">\\nSay hello to Ann\./);
});

test("session/resume with mcpServers starts them and lists their prompts", async () => {
  const ws = workspace({});
  const first = await start({ replies: [] }, ws);
  const { sessionId } = await first.connection.newSession({ cwd: ws, mcpServers: [] });
  first.child.stdin.end();
  const again = await start({ replies: [] }, ws);
  const fixture = new URL("../fixtures/mcp_prompts_server.py", import.meta.url).pathname;
  await again.connection.resumeSession({
    sessionId,
    cwd: ws,
    mcpServers: [{ name: "fixture", command: "python3", args: [fixture], env: [] }],
  });
  await again.update(
    (n) => kind("available_commands_update")(n) && n.update.availableCommands.some((cmd) => cmd.name === "mcp__fixture__greet"),
  );
});

// ---- issue 28: images and ACP's 2026 session methods ----

/** A PNG of `width`x`height` (signature and IHDR: what agentls reads), base64. */
function pngBase64(width, height) {
  const header = Buffer.alloc(33);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(header, 0);
  header.writeUInt32BE(13, 8);
  header.write("IHDR", 12, "latin1");
  header.writeUInt32BE(width, 16);
  header.writeUInt32BE(height, 20);
  header[24] = 8;
  const end = Buffer.from([0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82]);
  return Buffer.concat([header, end]).toString("base64");
}

const requestsOf = async (url) => (await fetch(url.replace(/\/v1$/, "") + "/__requests")).json();

test("an image prompt reaches the model as image_url when the model takes images; a text-only one refuses it", async () => {
  const ws = workspace({});
  const c = await start({ replies: [{ text: ["A square."] }] }, ws, {}, undefined, false, "gpt-4o");
  assert.equal(c.init.agentCapabilities.promptCapabilities.image, true);
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const data = pngBase64(20, 10);
  const answer = await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "What is it?" }, { type: "image", mimeType: "image/png", data }] });
  assert.equal(answer.stopReason, "end_turn");
  const body = (await requestsOf(c.url)).at(-1).body;
  const parts = body.messages.filter((m) => m.role === "user").flatMap((m) => (Array.isArray(m.content) ? m.content : []));
  assert.ok(parts.some((p) => p.type === "image_url" && p.image_url.url === `data:image/png;base64,${data}`), JSON.stringify(parts));
  const text = await start({ replies: [] }, ws);
  assert.equal(text.init.agentCapabilities.promptCapabilities.image, false);
  const other = await text.connection.newSession({ cwd: ws, mcpServers: [] });
  await assert.rejects(
    text.connection.prompt({ sessionId: other.sessionId, prompt: [{ type: "image", mimeType: "image/png", data }] }),
    /does not take images/,
  );
});

test("session/close cancels the running turn and frees the session; its log stays for session/load", async () => {
  const ws = workspace({});
  const c = await start({ replies: [{ steps: [chunk("Hel"), { hold: true }] }] }, ws);
  assert.deepEqual(c.init.agentCapabilities.sessionCapabilities.close, {});
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const answer = c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Talk." }] });
  await c.update(kind("agent_message_chunk"));
  await c.connection.closeSession({ sessionId });
  assert.equal((await answer).stopReason, "cancelled");
  await assert.rejects(c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Again." }] }), /unknown session/);
  const loaded = await c.connection.loadSession({ sessionId, cwd: ws, mcpServers: [] });
  assert.equal(loaded.modes.currentModeId, "ask");
  assert.equal(text(c.updates.filter((n) => n.sessionId === sessionId), "user_message_chunk").includes("Talk."), true);
});

test("session/delete removes the session's log; an unknown id succeeds", async () => {
  const ws = workspace({});
  const c = await start({ replies: [{ text: ["Done."] }] }, ws);
  assert.deepEqual(c.init.agentCapabilities.sessionCapabilities.delete, {});
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Hi." }] });
  assert.ok((await c.connection.listSessions({ cwd: ws })).sessions.some((s) => s.sessionId === sessionId));
  // The turn's checkpoint is a ref of the session in the private store; delete drops it.
  const refsOf = () => fs.readdirSync(path.join(ws, ".state"), { recursive: true })
    .filter((p) => String(p).split(path.sep).join("/").includes(`refs/sessions/${sessionId}/`));
  assert.ok(refsOf().length > 0, "the turn left a checkpoint ref");
  await c.connection.deleteSession({ sessionId });
  assert.ok(!(await c.connection.listSessions({ cwd: ws })).sessions.some((s) => s.sessionId === sessionId));
  assert.deepEqual(refsOf(), [], "session/delete drops the session's checkpoints");
  await assert.rejects(c.connection.loadSession({ sessionId, cwd: ws, mcpServers: [] }));
  await c.connection.deleteSession({ sessionId: "no-such-session" });
  await c.connection.deleteSession({ sessionId });
});

test("session/delete during a running turn leaves nothing of the session behind, its progress log included", async () => {
  const ws = workspace({});
  const c = await start({ replies: [{ steps: [chunk("Hel"), { hold: true }] }] }, ws);
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const filesOf = () => fs.readdirSync(path.join(ws, ".state"), { recursive: true })
    .map((p) => String(p).split(path.sep).join("/"))
    .filter((p) => p.split("/").pop().startsWith(sessionId));
  const answer = c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Talk." }] });
  await c.update(kind("agent_message_chunk"));
  assert.ok(filesOf().length > 0, "the running session has its log");
  await c.connection.deleteSession({ sessionId });
  assert.equal((await answer).stopReason, "cancelled");
  // The cancelled turn's end came after the delete: it must not write the session again.
  await c.connection.listSessions({ cwd: ws });
  assert.deepEqual(filesOf(), [], "files of the deleted session");
});

test("$/cancel_request of a pending prompt ends it cancelled; agentls withdraws its permission request after a cancel", async () => {
  const ws = workspace({});
  const c = await start(
    { replies: [{ steps: [chunk("Hel"), { hold: true }] }, { toolCalls: [{ id: "s1", name: "shell", arguments: { command: "echo hi" } }] }] },
    ws,
    { silentPermissions: true },
  );
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  const withdraw = new AbortController();
  const raw = c.connection.connection;
  const answer = raw.sendRequest("session/prompt", { sessionId, prompt: [{ type: "text", text: "Talk." }] }, undefined, { cancellationSignal: withdraw.signal });
  await c.update(kind("agent_message_chunk"));
  withdraw.abort();
  assert.equal((await answer).stopReason, "cancelled");
  // The permission request agentls stops waiting for (the turn's cancel) is withdrawn.
  const second = c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Run it." }] });
  const asked = await c.sent((m) => m.method === "session/request_permission");
  await c.connection.cancel({ sessionId });
  assert.equal((await second).stopReason, "cancelled");
  const cancel = await c.sent((m) => m.method === "$/cancel_request");
  assert.equal(cancel.params.requestId, asked.id);
});

test("session_info_update names the session after its first message; message chunks carry messageIds", async () => {
  const ws = workspace({});
  const c = await start({ replies: [{ text: ["It ", "is ", "hi."] }, { text: ["Again."] }] }, ws);
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "What does a.txt say?" }] });
  const info = await c.update(kind("session_info_update"));
  assert.equal(info.update.title, "What does a.txt say?");
  await c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Again?" }] });
  assert.equal(c.updates.filter(kind("session_info_update")).length, 1, "once, when the title became known");
  const ids = c.updates.filter(kind("agent_message_chunk")).map((n) => n.update.messageId);
  assert.equal(ids.length, 4, JSON.stringify(ids));
  assert.ok(ids.every((id) => typeof id === "string" && id.length > 0), JSON.stringify(ids));
  assert.equal(new Set(ids.slice(0, 3)).size, 1, "one message, one id");
  assert.notEqual(ids[3], ids[0], "the next turn's message has its own id");
});

test("additionalDirectories are more roots of the session: a file there can be read", async () => {
  const ws = workspace({});
  const other = workspace({ "notes.txt": "from the other root\n" });
  const script = {
    replies: [
      { toolCalls: [{ id: "r1", name: "read_file", arguments: { path: path.join(other, "notes.txt") } }] },
      { text: ["Read."] },
      { toolCalls: [{ id: "r2", name: "read_file", arguments: { path: path.join(other, "notes.txt") } }] },
      { text: ["Refused."] },
    ],
  };
  const c = await start(script, ws, {}, { readTextFile: false, writeTextFile: false });
  assert.deepEqual(c.init.agentCapabilities.sessionCapabilities.additionalDirectories, {});
  const withRoot = await c.connection.newSession({ cwd: ws, mcpServers: [], additionalDirectories: [other] });
  await c.connection.prompt({ sessionId: withRoot.sessionId, prompt: [{ type: "text", text: "Read the notes." }] });
  const done = c.updates.find((n) => n.sessionId === withRoot.sessionId && kind("tool_call_update")(n) && n.update.toolCallId === "r1" && n.update.status === "completed");
  assert.match(JSON.stringify(done?.update.content), /from the other root/);
  const without = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.prompt({ sessionId: without.sessionId, prompt: [{ type: "text", text: "Read the notes." }] });
  const failed = c.updates.find((n) => n.sessionId === without.sessionId && kind("tool_call_update")(n) && n.update.toolCallId === "r2" && n.update.status === "failed");
  assert.ok(failed, "outside the session's roots the read is refused");
  await assert.rejects(c.connection.newSession({ cwd: ws, mcpServers: [], additionalDirectories: ["relative/dir"] }), /absolute/);
});

test("a cancel's late updates (the running call's end) all arrive before its cancelled answer", async () => {
  const ws = workspace({});
  const c = await start({ replies: [{ toolCalls: [{ id: "s1", name: "shell", arguments: { command: "sleep 30" } }] }] }, ws);
  const { sessionId } = await c.connection.newSession({ cwd: ws, mcpServers: [] });
  await c.connection.setSessionMode({ sessionId, modeId: "full-auto" });
  const answer = c.connection.prompt({ sessionId, prompt: [{ type: "text", text: "Wait." }] });
  await c.update((n) => kind("tool_call_update")(n) && n.update.status === "in_progress");
  await c.connection.cancel({ sessionId });
  const stop = (await answer).stopReason;
  // Read at the moment the answer arrived: the library delivers messages in order.
  const final = c.updates.filter((n) => kind("tool_call_update")(n) && n.update.toolCallId === "s1" && ["completed", "failed"].includes(n.update.status));
  assert.equal(stop, "cancelled");
  assert.equal(final.length, 1, JSON.stringify(c.updates.map((n) => n.update)));
});

// ---- the runner ----

let passed = 0;
let failed = 0;
const only = process.argv[2];
for (const { name, fn } of tests) {
  if (only && !name.includes(only)) continue;
  try {
    await fn();
    passed += 1;
    console.log(`ok - ${name}`);
  } catch (err) {
    failed += 1;
    console.log(`not ok - ${name}\n  ${String(err && err.stack ? err.stack : err).split("\n").join("\n  ")}`);
  }
}
for (const child of children) {
  child.stdin?.end();
  child.kill();
}
console.log(`acp: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
