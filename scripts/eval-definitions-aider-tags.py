"""The definitions recall of `agentls-dev eval definitions`, against a ground truth agentls
did not make: Aider's tree-sitter tags (its tags.scm queries, not agentls's extractor) decide
which names a function uses (its `ref` tags in the function's lines) and where each is
defined (exactly one `def` tag in the workspace, in another file); the real binary's
`agentls context --json` decides what the editor block shows (a `<definition>` entry of that
path whose lines hold the defining line).

    ~/.cache/agentls/aider/venv/bin/python scripts/eval-definitions-aider-tags.py \
        CASES.json path/to/agentls [PER_WORKSPACE] 2>/dev/null

CASES.json is what `agentls-dev eval definitions --export` writes; the venv is the one
`scripts/eval-aider` installs. Aider's Rust tags hold calls but no type references, so on
Rust crates this finds few expected definitions; Python gives most of the figure.
"""
import json, re, os, subprocess, sys, collections
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from aider.io import InputOutput
from aider.models import Model
from aider.repomap import RepoMap
from grep_ast import filename_to_lang
from grep_ast.tsl import get_parser

BIN = sys.argv[2]
cases = json.load(open(sys.argv[1]))["cases"]
limit = int(sys.argv[3]) if len(sys.argv) > 3 else 10**9
io = InputOutput(pretty=False, yes=True, fancy_input=False)

def files(root):
    out = []
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        out += [os.path.join(d, n) for n in sorted(names) if not n.startswith(".") and filename_to_lang(n)]
    return out

def func_range(path, line0):
    lang = filename_to_lang(path)
    tree = get_parser(lang).parse(open(path, "rb").read())
    best = None
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.start_point[0] == line0 and ("function" in n.type or "method" in n.type):
            if best is None or n.end_point[0] > best[1]:
                best = (n.start_point[0], n.end_point[0])
        if n.start_point[0] <= line0 <= n.end_point[0]:
            stack.extend(n.children)
    return best

by_ws = collections.defaultdict(list)
for c in cases:
    by_ws[c["workspace"]].append(c)
total = found = 0
agree = 0
per_ws = {}
n_cases = 0
for ws, wcases in by_ws.items():
    rm = RepoMap(map_tokens=1024, root=ws, main_model=Model("gpt-4o"), io=io)
    defs = collections.defaultdict(list)
    refs = collections.defaultdict(list)
    for f in files(ws):
        rel = os.path.relpath(f, ws)
        for t in rm.get_tags(f, rel) or []:
            (defs if t.kind == "def" else refs)[t.name].append((rel, t.line)) if t.kind == "def" else refs[rel].append((t.line, t.name))
    wt = wf = 0
    for c in wcases[:limit]:
        r = func_range(os.path.join(ws, c["path"]), c["line"] - 1)
        if not r:
            continue
        names = {n for (l, n) in refs[c["path"]] if r[0] <= l <= r[1]} - {c["function"]}
        exp = [(n, defs[n][0]) for n in sorted(names) if len(defs[n]) == 1 and defs[n][0][0] != c["path"]]
        if not exp:
            continue
        n_cases += 1
        out = subprocess.run([BIN, "context", "--json", "--workspace", ws, f'{os.path.join(ws, c["path"])}:{c["line"]}:{c["column"]}'], capture_output=True, text=True)
        report = json.loads(out.stdout) if out.stdout.strip() else {}
        text = "\n".join(m.get("content", "") for m in report.get("messages", []) if isinstance(m.get("content"), str))
        shown = [(mm.group(1), int(mm.group(2)), int(mm.group(3))) for mm in re.finditer(r'<definition name="[^"]*" kind="[^"]*" path="([^"]*)" lines="(\d+)-(\d+)"', text)]
        for n, (p, l) in exp:
            wt += 1
            ok = any(sp == p and a <= l + 1 <= b for sp, a, b in shown)
            wf += ok
    per_ws[os.path.basename(ws)] = (wf, wt)
    total += wt; found += wf
    print(os.path.basename(ws), wf, wt, flush=True)
print(f"cases {n_cases}; recall by Aider's tags: {found}/{total} = {100*found/max(total,1):.1f}%")
