"""Aider's repo map on the cases of `agentls-dev eval definitions` (run by scripts/eval-aider).

    python eval-aider.py CASES.json [BUDGET...]

For each case: RepoMap(map_tokens=BUDGET, root=WORKSPACE).get_repo_map(chat_files=[the case's
file], other_files=[every other file of the workspace]), as Aider builds the map when only
that file is in the chat and nothing was said yet (no mentioned files or identifiers). A
definition counts as present when its defining line (trimmed; Aider cuts shown lines at 100
characters) appears in the map's section of its path. Prints recall and the map's median
tokens per budget; writes nothing into the workspaces (the tags cache goes to
$AIDER_TAGS_CACHE).
"""

import json
import os
import statistics
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from aider.io import InputOutput  # noqa: E402
from aider.models import Model  # noqa: E402
from aider.repomap import RepoMap  # noqa: E402

MODEL = "gpt-4o"  # o200k_base, the tokenizer agentls counts with by default


def workspace_files(root):
    """Every file under root but hidden ones (what Aider's repo would list)."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                files.append(os.path.join(dirpath, name))
    return files


def sections(repo_map):
    """Path → the lines shown under it (the "│" prefix and indentation stripped)."""
    shown = {}
    current = None
    for line in (repo_map or "").splitlines():
        if line.startswith(("│", "⋮")) or line.startswith(" "):
            if current is not None and line.startswith("│"):
                shown[current].append(line[1:])
            continue
        if line.endswith(":"):
            current = line[:-1]
            shown.setdefault(current, [])
        else:
            current = None
    return shown


def present(shown, expected):
    text = expected["text"].strip()
    for line in shown.get(expected["path"], []):
        kept = line.strip()
        if kept == text:
            return True
        # A long line is shown cut to 100 characters.
        if len(line) >= 99 and kept and text.startswith(kept):
            return True
    return False


def main():
    cases_path = sys.argv[1]
    budgets = [int(b) for b in sys.argv[2:]] or [1024, 2048, 4096]
    with open(cases_path) as f:
        cases = json.load(f)["cases"]
    io = InputOutput(pretty=False, yes=True, fancy_input=False)
    model = Model(MODEL)
    tags_cache = os.environ.get("AIDER_TAGS_CACHE")
    by_workspace = {}
    for case in cases:
        by_workspace.setdefault(case["workspace"], []).append(case)
    results = {}
    for budget in budgets:
        found = total = 0
        tokens = []
        for root, ws_cases in by_workspace.items():
            if tags_cache:
                # An absolute path: Path(root) / it is it, so nothing is written in root.
                name = os.path.basename(root.rstrip("/"))
                RepoMap.TAGS_CACHE_DIR = os.path.join(tags_cache, name)
            repo_map = RepoMap(
                map_tokens=budget, root=root, main_model=model, io=io, verbose=False
            )
            files = workspace_files(root)
            for case in ws_cases:
                active = os.path.join(root, case["path"])
                others = [f for f in files if f != active]
                text = repo_map.get_repo_map(
                    chat_files=[active],
                    other_files=others,
                    mentioned_fnames=set(),
                    mentioned_idents=set(),
                )
                shown = sections(text)
                for expected in case["expected"]:
                    total += 1
                    found += present(shown, expected)
                tokens.append(model.token_count(text) if text else 0)
        median = statistics.median(tokens) if tokens else 0
        results[budget] = (found, total, median)
        print(
            f"aider {MODEL} repo map at {budget} tokens: {100.0 * found / max(total, 1):.1f}% "
            f"of the expected definitions ({found}/{total} over {len(cases)} functions); "
            f"map median {median:.0f} tokens",
            flush=True,
        )


if __name__ == "__main__":
    main()
