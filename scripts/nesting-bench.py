#!/usr/bin/env python3
"""What a file of nested `mod m {` costs the symbol index, beside an ordinary Rust file of the
same size (structs and impls), through a real agentls binary (issue 41, hole 9).

    python3 scripts/nesting-bench.py AGENTLS_BINARY nested|ordinary [BYTES]

A workspace of two small files and the big one (195,000 bytes by default): the background
build's `elapsedMs` (`agentls/debug/workspace`); then the big file opened, one
`agent/session/context` for another file (the first request: tokenizer and caches), one
keystroke at the end of the big file, and `agent/session/context` for the other file again,
timed: what a request waits for the open buffer to be indexed again. Then the server's
VmHWM. Only the standard library is used.
"""
import json, os, shutil, subprocess, sys, tempfile, time

binary, kind = sys.argv[1], sys.argv[2]
size = int(sys.argv[3]) if len(sys.argv) > 3 else 195_000

def nested(size):
    depth = size // 10
    return "mod m {\n" * depth + "}\n" * depth

def ordinary(size):
    block = ("/// A point.\npub struct P{i} {{\n    pub x: u32,\n    pub y: u32,\n}}\n\n"
             "impl P{i} {{\n    pub fn norm(&self) -> u32 {{\n        self.x * self.x + self.y * self.y\n    }}\n}}\n\n")
    out, i = [], 0
    while sum(map(len, out)) < size:
        out.append(block.format(i=i)); i += 1
    return "".join(out)

text = nested(size) if kind == "nested" else ordinary(size)
root = tempfile.mkdtemp(prefix="agentls-nested-")
os.makedirs(f"{root}/src")
open(f"{root}/src/lib.rs", "w").write("pub fn answer() -> u32 {\n    other()\n}\n")
open(f"{root}/src/other.rs", "w").write("pub fn other() -> u32 {\n    41\n}\n")
open(f"{root}/src/big.rs", "w").write(text)
state = tempfile.mkdtemp(prefix="agentls-nested-state-")

env = dict(os.environ, AGENTLS_LOG="error", XDG_CONFIG_HOME="/nonexistent/agentls-bench")
proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
next_id = [0]

def send(msg):
    body = json.dumps(msg).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()

def read():
    length = None
    while True:
        line = proc.stdout.readline()
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))

def request(method, params):
    next_id[0] += 1
    send({"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params})
    while True:
        msg = read()
        if "method" in msg and "id" in msg:
            send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
        elif msg.get("id") == next_id[0]:
            return msg.get("result", msg.get("error"))

def notify(method, params):
    send({"jsonrpc": "2.0", "method": method, "params": params})

uri = lambda p: "file://" + p
request("initialize", {"processId": None, "rootUri": uri(root),
                       "initializationOptions": {"stateDir": state, "provider": {"model": "bench-model"}},
                       "capabilities": {}})
notify("initialized", {})
started = time.monotonic()
while True:
    symbols = request("agentls/debug/workspace", {})["symbols"]
    if symbols["status"] == "ready":
        break
    time.sleep(0.05)
print(f"{kind} {len(text)} bytes: background index build {symbols['elapsedMs']} ms "
      f"({symbols['definitions']} definitions; waited {time.monotonic() - started:.1f} s)")
big = uri(f"{root}/src/big.rs")
lib = uri(f"{root}/src/lib.rs")
notify("textDocument/didOpen", {"textDocument": {"uri": big, "languageId": "rust", "version": 1, "text": text}})
t = time.monotonic()
request("agent/session/context", {"editor": {"uri": lib, "position": {"line": 1, "character": 6}}})
print(f"  agent/session/context for another file, the file just opened (first request: warm-up): {(time.monotonic() - t) * 1000:.1f} ms")
lines = text.count("\n")
notify("textDocument/didChange", {"textDocument": {"uri": big, "version": 2},
       "contentChanges": [{"range": {"start": {"line": lines, "character": 0}, "end": {"line": lines, "character": 0}}, "text": "//\n"}]})
for round in range(2):
    t = time.monotonic()
    report = request("agent/session/context", {"editor": {"uri": lib, "position": {"line": 1, "character": 6}}})
    took = time.monotonic() - t
    print(f"  agent/session/context for another file, {'after the keystroke' if round == 0 else 'again'}: {took * 1000:.1f} ms")
status = open(f"/proc/{proc.pid}/status").read()
hwm = [l for l in status.splitlines() if l.startswith("VmHWM")][0]
print("  " + hwm)
request("shutdown", None)
notify("exit", None)
proc.wait()
shutil.rmtree(root)
shutil.rmtree(state)
