"""Instructions per didChange of an LSP server, counted by callgrind: repeatable on a busy
machine, where `agentls-dev bench keystroke`'s CPU-time ratio moves by ±30% from round to
round.

    python3 scripts/keystroke-instructions.py SERVER... [--edits N] [--pattern typo|typing]

Each SERVER is a command line (quote it: "target/release/agentls", or "target/release/agentls-dev
bench null-server" for the do-nothing floor). The input is `bench keystroke`'s: initialize
(answered before anything else is sent), the 10,000-line generated Rust file opened in utf-16,
a settling `agentls/debug/syntax` (answered), then the burst of didChange frames sent at once,
then `agentls/debug/syntax` at the last edit (for agentls: every edit applied and reparsed,
as in the bench's read after the burst), then the end of input. The server runs under
`valgrind --tool=callgrind` twice, with 0 and with N edits; the difference divided by N is
the figure (startup, the open and its first parse cancel out).

Patterns: `typo` is the bench's own (a character typed at a random spot, then backspaced);
`typing` types a word at the end of a random doc comment ("abcde", two backspaces, "de"),
so that the text changes and the read after the burst has something to reparse.
Only the standard library is used.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

URI = "file:///bench/keystroke.rs"
TYPED = b"a_1 ;{"


def generate_rust(lines):
    """`bench::generate_rust`, line for line."""
    parts, n, count = [], 0, 0
    while count < lines:
        s = (f"/// Item number {n}.\npub struct Item{n} {{\n    id: u64,\n    name: String,\n}}\n\n"
             f"impl Item{n} {{\n    pub fn new(id: u64) -> Self {{\n        let name = format!(\"item-{{}}\", id);\n        "
             f"Self {{ id, name }}\n    }}\n\n    pub fn score(&self) -> u64 {{\n        "
             f"self.id.wrapping_mul({n}).rotate_left(3) + self.name.len() as u64\n    }}\n}}\n\n")
        parts.append(s)
        count += s.count("\n")
        n += 1
    return "".join(parts)


def xorshift(seed):
    mask = (1 << 64) - 1
    while True:
        seed ^= (seed << 13) & mask
        seed ^= seed >> 7
        seed ^= (seed << 17) & mask
        yield seed


def keystrokes(text, edits, pattern):
    """(line, column, typed char or None for a delete of the char at column)."""
    lengths = [len(line) for line in text.split("\n")[:-1]]
    seeds = xorshift(0x2545_F491_4F6C_DD1D)
    keys = []
    if pattern == "typo":  # bench::keystrokes
        while len(keys) < edits:
            seed = next(seeds)
            line = seed % len(lengths)
            col = (seed >> 32) % (lengths[line] + 1)
            keys.append((line, col, chr(TYPED[len(keys) // 2 % len(TYPED)])))
            if len(keys) < edits:
                keys.append((line, col, None))
        return keys
    comments = [i for i, line in enumerate(text.split("\n")) if line.startswith("/// Item")]
    while len(keys) < edits:
        line = comments[next(seeds) % len(comments)]
        col = lengths[line]
        for ch in "abcde":
            keys.append((line, col, ch))
            col += 1
        for _ in range(2):
            col -= 1
            keys.append((line, col, None))
        for ch in "de":
            keys.append((line, col, ch))
            col += 1
        lengths[line] = col
    return keys[:edits]


def frame(message):
    body = json.dumps(message, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def syntax_request(request_id, key):
    at = {"line": key[0], "character": key[1]}
    return frame({"jsonrpc": "2.0", "id": request_id, "method": "agentls/debug/syntax",
                  "params": {"uri": URI, "position": at, "range": {"start": at, "end": at}}})


def read_message(out):
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        byte = out.read(1)
        if not byte:
            return None
        header += byte
    length = int(re.search(rb"Content-Length: *(\d+)", header).group(1))
    return json.loads(out.read(length))


def wait_for(out, request_id):
    while True:
        message = read_message(out)
        if message is None:
            sys.exit(f"the server ended before answering request {request_id}")
        if message.get("id") == request_id:
            return message


def run(command, text, keys, last, out_file):
    """Runs `command` under callgrind on the input; its total instruction count."""
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}"] + command
    env = dict(os.environ, AGENTLS_LOG="error")
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env) as server:
        initialize = {"capabilities": {"general": {"positionEncodings": ["utf-16"]}}}
        server.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}))
        server.stdin.flush()
        wait_for(server.stdout, 1)
        server.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        server.stdin.write(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": URI, "languageId": "rust", "version": 1, "text": text}}}))
        server.stdin.write(syntax_request(2, last))
        server.stdin.flush()
        wait_for(server.stdout, 2)
        burst = []
        for i, (line, col, typed) in enumerate(keys):
            end = col + (1 if typed is None else 0)
            change = {"range": {"start": {"line": line, "character": col},
                                "end": {"line": line, "character": end}}, "text": typed or ""}
            burst.append(frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": {"uri": URI, "version": 2 + i}, "contentChanges": [change]}}))
        burst.append(syntax_request(3, last))
        server.stdin.write(b"".join(burst))
        server.stdin.flush()
        wait_for(server.stdout, 3)
        server.stdin.close()
        stderr = server.stderr.read().decode(errors="replace")
        server.wait()
    found = re.search(r"I\s+refs:\s+([\d,]+)", stderr)
    if not found:
        sys.exit(f"no instruction count from callgrind:\n{stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("servers", nargs="+", help="server command lines")
    parser.add_argument("--edits", type=int, default=4000)
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--pattern", choices=["typo", "typing"], default="typo")
    args = parser.parse_args()
    text = generate_rust(args.lines)
    keys = keystrokes(text, args.edits, args.pattern)
    last = keys[-1] if keys else (0, 0, None)
    print(f"instructions per didChange: {args.edits} edits ({args.pattern}) over a "
          f"{args.lines}-line Rust file, callgrind")
    with tempfile.TemporaryDirectory() as tmp:
        for number, server in enumerate(args.servers):
            command = shlex.split(server)
            base = run(command, text, [], last, os.path.join(tmp, f"{number}.0.out"))
            total = run(command, text, keys, last, os.path.join(tmp, f"{number}.n.out"))
            print(f"  {(total - base) / max(args.edits, 1):>9,.0f}  {server}")


if __name__ == "__main__":
    main()
