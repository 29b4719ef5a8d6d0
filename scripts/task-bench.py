"""The task benchmark's driver (issue 37): agentls and Aider on Exercism Python exercises.

Usage (scripts/task-bench is the one command: it builds agentls, installs Aider and pytest,
starts the local model and passes the paths below; run this file directly only with them):

    python3 scripts/task-bench.py --agentls BIN --python VENV/bin/python --aider VENV/bin/aider \
        --base-url URL --model MODEL --context-window N [--systems agentls,aider]
        [--sample N --seed S | --only a,b,c] [--tries 2] [--out DIR] [--config JSON]
        [--label NAME]
    python3 scripts/task-bench.py --summary --out DIR      the table of DIR/results.jsonl

Per exercise and system: the exercise's solution and test files are copied into a fresh
temporary git workspace; the prompt is the exercise's instructions followed by Aider's
benchmark wording (the same prompt for both systems); the test files are restored byte for
byte from the original before every pytest run (an edited test earns nothing); on a failure
the next try gets the end of the pytest output (agentls in the same session, Aider with its
chat history restored). One JSON line per (system, exercise) is appended to
OUT/results.jsonl as soon as it is known, so a stopped run resumes where it was: pairs
already there are skipped. OUT/logs/SYSTEM/EXERCISE/ keeps each try's transcript (agentls's
events, stdout, stderr; Aider's output, chat history and analytics log), the pytest outputs
and the final solution with its diff against the stub. OUT/summary.md is the Markdown table,
rewritten after every row and printed at the end.

Standard library only: it runs under any python3; pytest and Aider run from the venv given.
"""

import argparse
import copy
import datetime
import difflib
import hashlib
import json
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EXERCISES = ROOT.parent / "shared" / "task-bench" / "exercism-python"
SYSTEMS = ("agentls", "aider")

# Aider's benchmark wording (benchmark/prompts.py), the same for both systems.
INSTRUCTIONS_ADDENDUM = (
    "Use the above instructions to modify the supplied files: {files}\n"
    "Don't change the names of existing functions or classes, as they may be referenced from "
    "other code like unit tests, etc.\n"
    "Only use standard python libraries, don't suggest installing any packages."
)
TEST_FAILURES = (
    "See the testing errors above.\n"
    "The tests are correct, don't try and change them.\n"
    "Fix the code in {files} to resolve the errors."
)
# How much of the pytest output a retry carries (its end: the failures and the summary).
TAIL_LINES = 50
TAIL_CHARS = 4000
# What the row keeps of the last pytest output.
ROW_TAIL_CHARS = 3000
# How long either system waits for one model call: agentls's provider.timeoutMs (120 s by
# default) and Aider's --timeout. On 2 contended cores the small model reads its prompt at
# about 30 tokens/s, so a fresh 8,000-token prompt (after a compaction) takes over 4 min:
# at 120 s agentls gave up and resent it, four times over, and the try was lost to the
# machine's load, not to the harness. The same bound for both systems.
MODEL_CALL_TIMEOUT_S = 900


def log(message):
    print(f"task-bench: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- options


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="task-bench",
        description="agentls and Aider on Exercism Python exercises (issue 37)",
    )
    p.add_argument("--systems", default="agentls,aider", help="comma-separated: agentls, aider")
    p.add_argument("--sample", type=int, help="draw N exercises at random (with --seed)")
    p.add_argument("--seed", type=int, default=1, help="the draw's seed (default 1)")
    p.add_argument("--only", help="comma-separated exercise names")
    p.add_argument("--tries", type=int, default=2, help="tries per exercise (default 2)")
    p.add_argument("--out", help="results directory (default target/task-bench/NAME)")
    p.add_argument("--config", help="agentls settings as JSON (or @FILE), merged over the defaults")
    p.add_argument("--label", default="", help="a free name recorded in each row")
    p.add_argument("--summary", action="store_true", help="print the table of OUT/results.jsonl")
    p.add_argument("--list", action="store_true",
                   help="print the exercises selected and the results directory, and exit")
    p.add_argument("--exercises", default=str(DEFAULT_EXERCISES), help="the exercises' folder")
    p.add_argument("--base-url", help="the model server's OpenAI-compatible base URL")
    p.add_argument("--model", help="the model's name on that server")
    p.add_argument("--context-window", type=int, default=16384, help="the model's window")
    p.add_argument("--max-output-tokens", type=int, default=1024,
                   help="agentls's provider.maxOutputTokens (default 1024, as ./run)")
    p.add_argument("--agentls", help="the agentls binary (copied into OUT before use)")
    p.add_argument("--python", help="the python that has pytest (the Aider venv's)")
    p.add_argument("--aider", help="the aider executable")
    p.add_argument("--try-timeout", type=float, default=1800,
                   help="seconds one try of a system may take before its process group is killed")
    p.add_argument("--test-timeout", type=float, default=180, help="seconds per pytest run")
    p.add_argument("--model-info", default="", help="free text recorded in runs.jsonl")
    args = p.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    for system in args.systems:
        if system not in SYSTEMS:
            p.error(f"--systems: unknown system {system!r} (agentls, aider)")
    if args.tries < 1:
        p.error("--tries must be at least 1")
    return args


def default_out(args):
    if args.only:
        selection = "only-" + hashlib.sha256(args.only.encode()).hexdigest()[:8]
    elif args.sample:
        selection = f"sample{args.sample}-seed{args.seed}"
    else:
        selection = "all"
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", args.label or "run")
    return ROOT / "target" / "task-bench" / f"{name}-{selection}"


def select_exercises(args):
    root = Path(args.exercises)
    every = sorted(d.name for d in root.iterdir() if (d / "files.json").is_file())
    if args.only:
        wanted = [name.strip() for name in args.only.split(",") if name.strip()]
        unknown = [name for name in wanted if name not in every]
        if unknown:
            raise SystemExit(f"task-bench: no such exercise(s) in {root}: {', '.join(unknown)}")
        return wanted
    if args.sample:
        # The drawn order is kept: a run stopped half-way has measured a random subset.
        return random.Random(args.seed).sample(every, min(args.sample, len(every)))
    return every


def deep_merge(base, over):
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def agentls_config(args):
    config = {
        "provider": {
            "kind": "openai",
            "baseUrl": args.base_url,
            "model": args.model,
            "contextWindow": args.context_window,
            "maxOutputTokens": args.max_output_tokens,
            "timeoutMs": MODEL_CALL_TIMEOUT_S * 1000,
            # A model named as small (the default 1.5B) gets the small-model profile: file
            # listings, fresh attempts, no tools for a change to the file in view.
            "profile": "auto",
        },
        "approval": "full-auto",
        # What ./run gives the small local model (issue 37's harness).
        "reminders": {"unfinishedChange": True},
        # Each exercise stands alone: a fact kept in one (the run shares one home) must not
        # help or mislead the next.
        "memory": {"enabled": False},
    }
    if args.config:
        text = args.config
        if text.startswith("@"):
            text = Path(text[1:]).read_text()
        extra = json.loads(text)
        if not isinstance(extra, dict):
            raise SystemExit("task-bench: --config must be a JSON object")
        config = deep_merge(config, extra)
    return config


# ---------------------------------------------------------------- processes


def run_group(cmd, cwd, env, timeout, stdout_path, stderr_path=None):
    """Runs cmd in a process group of its own, stdin closed, output to files. Returns
    (exit code or None, timed out, seconds). On timeout, and after it ends, whatever is left
    of its group is killed (a stuck model call, a test that hangs, a background command)."""
    start = time.monotonic()
    with open(stdout_path, "wb") as out:
        err = open(stderr_path, "wb") if stderr_path else subprocess.STDOUT
        try:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err, start_new_session=True)
            timed_out = False
            try:
                code = proc.wait(timeout=timeout)
            except BaseException as stop:  # the timeout, or this run stopped (INT, TERM)
                if not isinstance(stop, subprocess.TimeoutExpired):
                    kill_group(proc.pid, signal.SIGKILL)
                    raise
                timed_out = True
                # First as Ctrl-C does: agentls then cancels its turn, ends it with turnEnd
                # (usage included) and keeps its session usable for the next try.
                for sig, grace, group in ((signal.SIGINT, 20, False), (signal.SIGTERM, 10, True)):
                    if group:
                        kill_group(proc.pid, sig)
                    else:
                        try:
                            proc.send_signal(sig)
                        except ProcessLookupError:
                            pass
                    try:
                        proc.wait(timeout=grace)
                        break
                    except subprocess.TimeoutExpired:
                        pass
                kill_group(proc.pid, signal.SIGKILL)
                proc.wait()
                code = None
            kill_group(proc.pid, signal.SIGKILL)
        finally:
            if stderr_path:
                err.close()
    return code, timed_out, time.monotonic() - start


def kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def read_text(path, limit=None):
    try:
        data = Path(path).read_bytes()
    except OSError:
        return ""
    if limit is not None and len(data) > limit:
        data = data[-limit:]
    return data.decode("utf-8", "replace")


# ---------------------------------------------------------------- tests


def tail(text, lines=TAIL_LINES, chars=TAIL_CHARS):
    kept = "\n".join(text.rstrip("\n").splitlines()[-lines:])
    if len(kept) > chars:
        kept = kept[-chars:]
        kept = kept[kept.find("\n") + 1:] if "\n" in kept else kept
    return kept


def restore_tests(exercise_dir, workspace, test_files):
    for name in test_files:
        target = workspace / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_dir():
            shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink()
        shutil.copyfile(exercise_dir / name, target)


def run_tests(ctx, exercise_dir, workspace, files, log_dir, try_no):
    """Restores the tests, runs pytest; returns a dict: passed, output, status, seconds."""
    restore_tests(exercise_dir, workspace, files["test"])
    cmd = [ctx.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short",
           "--color=no", "-o", "addopts=", *files["test"]]
    env = dict(ctx.env)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    out_path = log_dir / f"pytest-{try_no}.txt"
    try:
        code, timed_out, seconds = run_group(cmd, workspace, env, ctx.args.test_timeout, out_path)
    except OSError as err:
        out_path.write_text(f"task-bench: cannot run pytest: {err}\n")
        return {"passed": False, "output": out_path.read_text(), "status": "harness_error",
                "seconds": 0.0}
    output = read_text(out_path)
    # The workspace's temporary path would differ between runs: shown as ".".
    output = output.replace(str(workspace) + "/", "").replace(str(workspace), ".")
    output = re.sub(r" in \d+\.\d+s", "", output)
    if timed_out:
        output += f"\nThe tests timed out after {ctx.args.test_timeout:.0f} s.\n"
        status = "timeout"
    elif code == 0:
        status = "passed"
    elif "No module named pytest" in output:
        status = "harness_error"
    else:
        status = f"exit {code}"
    return {"passed": code == 0 and not timed_out, "output": output, "status": status,
            "seconds": round(seconds, 2)}


def pytest_counts(output):
    counts = {}
    for number, word in re.findall(r"(\d+) (passed|failed|errors?|skipped)", output):
        counts["error" if word.startswith("error") else word] = int(number)
    return counts


def failure_class(test, unchanged, last_ended):
    """Why the final try failed, from its pytest output and the solution files."""
    status, output = test["status"], test["output"]
    if status == "harness_error":
        return "harness_error"
    if status == "timeout":
        return "timeout"
    if unchanged:
        return "agent_error" if last_ended in ("error", "timeout", "crash") else "unchanged"
    if re.search(r"\b(SyntaxError|IndentationError|TabError)\b", output):
        return "syntax_error"
    if re.search(r"\b(ImportError|ModuleNotFoundError)\b", output):
        return "import_error"
    # The exceptions the failing tests raised: pytest's "E   NameError: ..." lines, and the
    # summary's "FAILED test - NameError: ..." where the name was not cut off.
    kinds = set(re.findall(r"^E\s+(\w+(?:Error|Exception|Exit|Interrupt))\b", output, re.MULTILINE))
    kinds |= set(re.findall(r"^(?:FAILED|ERROR) \S+ - (\w+(?:Error|Exception))\b", output,
                            re.MULTILINE))
    if kinds == {"AssertionError"} or (not kinds and re.search(r"^E\s+assert ", output, re.MULTILINE)):
        return "assertion"
    if kinds:
        return "runtime_error"
    return "other"


# ---------------------------------------------------------------- agentls


def parse_events(path):
    """The turn's updates from `agentls ask --events`: tool calls by name, errors, the end."""
    info = {"tool_calls": Counter(), "tool_failed": Counter(), "errors": [], "stop": None,
            "usage": {}, "model_calls": 0, "session": None}
    names = {}
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return info
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        info["session"] = event.get("sessionId") or info["session"]
        update = event.get("update") or {}
        kind = update.get("kind")
        if kind == "toolCall":
            name = update.get("name") or "?"
            names[update.get("toolCallId")] = name
            info["tool_calls"][name] += 1
        elif kind == "toolCallUpdate" and update.get("status") == "failed":
            info["tool_failed"][names.get(update.get("toolCallId"), "?")] += 1
        elif kind == "error":
            info["errors"].append({"code": update.get("code"),
                                   "message": str(update.get("message", ""))[:500]})
        elif kind == "turnEnd":
            info["stop"] = update.get("stopReason")
            info["usage"] = update.get("usage") or {}
            info["model_calls"] = update.get("modelCalls") or 0
    return info


def agentls_ended(info, code, timed_out):
    if timed_out:
        return "timeout"
    stop = info["stop"]
    if stop == "endTurn":
        return "answered"
    if stop == "maxSteps":
        return "step_limit"
    if any(e.get("code") == "repeatedToolCall" for e in info["errors"]):
        return "loop_guard"
    if stop == "cancelled":
        return "cancelled"
    if stop == "error":
        return "error"
    return "crash" if code not in (0, None) else "error"


def agentls_try(ctx, workspace, files, prompt, session, log_dir, try_no):
    events = log_dir / f"events-{try_no}.jsonl"
    cmd = [ctx.agentls, "ask", "--workspace", str(workspace), "--file", files["solution"][0],
           "--approve", "--config", json.dumps(ctx.config), "--events", str(events)]
    if session:
        cmd += ["--session", session]
    cmd.append(prompt)
    stderr_path = log_dir / f"stderr-{try_no}.txt"
    code, timed_out, seconds = run_group(cmd, workspace, ctx.env, ctx.args.try_timeout,
                                         log_dir / f"stdout-{try_no}.txt", stderr_path)
    info = parse_events(events)
    stderr = read_text(stderr_path, 200_000)
    found = re.findall(r"^agentls: session (\S+) \((\w+)\)\s*$", stderr, re.MULTILINE)
    session_id = info["session"] or (found[-1][0] if found else None)
    ended = agentls_ended(info, code, timed_out)
    result = {
        "ended": ended,
        "stop_reason": info["stop"],
        "exit": code,
        "wall_s": round(seconds, 2),
        "tokens_in": int(info["usage"].get("inputTokens") or 0),
        "tokens_out": int(info["usage"].get("outputTokens") or 0),
        "model_calls": int(info["model_calls"]),
        "tool_calls": dict(info["tool_calls"]),
        "tool_failed": dict(info["tool_failed"]),
        "errors": info["errors"][:5],
    }
    if ended in ("crash", "error") and not info["errors"]:
        result["stderr_tail"] = tail(stderr, 8, 800)
    return result, session_id


# ---------------------------------------------------------------- aider


def aider_try(ctx, workspace, files, prompt, log_dir, try_no):
    analytics = log_dir / f"aider-analytics-{try_no}.jsonl"
    cmd = [
        ctx.aider,
        "--model", f"openai/{ctx.args.model}",
        "--openai-api-base", ctx.args.base_url,
        "--openai-api-key", "x",
        "--model-metadata-file", str(ctx.aider_metadata),
        "--edit-format", "whole",
        "--no-git", "--map-tokens", "0",
        "--yes-always", "--no-auto-commits", "--no-dirty-commits",
        "--no-show-model-warnings", "--no-check-update", "--no-show-release-notes",
        "--no-analytics", "--analytics-log", str(analytics),
        "--no-stream", "--no-pretty", "--no-fancy-input",
        "--no-suggest-shell-commands", "--no-detect-urls", "--no-notifications",
        "--no-gitignore", "--encoding", "utf-8", "--timeout", str(MODEL_CALL_TIMEOUT_S),
        # The chat history lives beside the logs (not in the workspace); the second try
        # restores it, as Aider's benchmark keeps one chat across its tries.
        "--chat-history-file", str(log_dir / "aider-chat-history.md"),
        "--input-history-file", str(log_dir / "aider-input-history"),
    ]
    if try_no > 1:
        cmd.append("--restore-chat-history")
    cmd += ["--message", prompt, *files["solution"]]
    out_path = log_dir / f"aider-output-{try_no}.txt"
    code, timed_out, seconds = run_group(cmd, workspace, ctx.env, ctx.args.try_timeout, out_path)
    output = read_text(out_path, 2_000_000)
    sends, exceptions = [], []
    for line in read_text(analytics).splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "message_send":
            sends.append(event.get("properties") or {})
        elif event.get("event") == "message_send_exception":
            exceptions.append(str((event.get("properties") or {}).get("exception", ""))[:500])
    edits = len(re.findall(r"^Applied edit to ", output, re.MULTILINE))
    if timed_out:
        ended = "timeout"
    elif code != 0:
        ended = "crash"
    elif exceptions or not sends:
        ended = "error"
    else:
        ended = "answered"
    result = {
        "ended": ended,
        "exit": code,
        "wall_s": round(seconds, 2),
        "tokens_in": sum(int(s.get("prompt_tokens") or 0) for s in sends),
        "tokens_out": sum(int(s.get("completion_tokens") or 0) for s in sends),
        "model_calls": len(sends) + len(exceptions),
        "tool_calls": {"whole_file_edit": edits} if edits else {},
        "errors": [{"code": None, "message": e} for e in exceptions[:5]],
    }
    if ended in ("crash", "error"):
        result["output_tail"] = tail(output, 12, 1200)
    return result


# ---------------------------------------------------------------- one exercise


def prepare_workspace(exercise_dir, files):
    workspace = Path(tempfile.mkdtemp(prefix=f"task-bench-{exercise_dir.name}-"))
    for name in files["solution"] + files["test"]:
        target = workspace / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(exercise_dir / name, target)
    git = ["git", "-c", "user.name=task-bench", "-c", "user.email=task-bench@localhost",
           "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "exercise stub"]):
        subprocess.run(git + cmd, cwd=workspace, check=True, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return workspace


def solution_state(exercise_dir, workspace, files):
    """Whether every solution file is byte-identical to the stub, and the diff."""
    unchanged, diff = True, []
    for name in files["solution"]:
        before = (exercise_dir / name).read_bytes()
        try:
            after = (workspace / name).read_bytes()
        except OSError:
            after = b""
            unchanged = False
            diff.append(f"--- {name}: deleted\n")
            continue
        if after != before:
            unchanged = False
            diff.extend(difflib.unified_diff(
                before.decode("utf-8", "replace").splitlines(keepends=True),
                after.decode("utf-8", "replace").splitlines(keepends=True),
                f"a/{name}", f"b/{name}"))
    return unchanged, "".join(diff)


def run_exercise(ctx, system, exercise):
    started = time.monotonic()
    exercise_dir = Path(ctx.args.exercises) / exercise
    log_dir = ctx.out / "logs" / system / exercise
    shutil.rmtree(log_dir, ignore_errors=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    row = {
        "system": system, "exercise": exercise, "label": ctx.args.label,
        "pass1": False, "pass2": False, "passed": False, "tries": 0, "per_try": [],
    }
    workspace = None
    try:
        files = json.loads((exercise_dir / "files.json").read_text())
        shown = ", ".join(files["solution"])
        instructions = (exercise_dir / "instructions.md").read_text()
        prompt = instructions.rstrip("\n") + "\n\n" + INSTRUCTIONS_ADDENDUM.format(files=shown)
        workspace = prepare_workspace(exercise_dir, files)
        session = None
        test = None
        for try_no in range(1, ctx.args.tries + 1):
            if try_no > 1:
                retry = tail(test["output"]) + "\n\n" + TEST_FAILURES.format(files=shown)
                if system == "agentls" and not session:
                    # The first try left no session to continue: a new one gets the task too.
                    retry = prompt + "\n\n" + retry
                prompt = retry
            (log_dir / f"prompt-{try_no}.txt").write_text(prompt)
            if system == "agentls":
                result, found = agentls_try(ctx, workspace, files, prompt, session, log_dir, try_no)
                if try_no > 1 and session:
                    result["session"] = "same" if found == session else "new"
                session = session or found
            else:
                result = aider_try(ctx, workspace, files, prompt, log_dir, try_no)
            test = run_tests(ctx, exercise_dir, workspace, files, log_dir, try_no)
            result["test_s"] = test["seconds"]
            result["test_status"] = test["status"]
            result["test_counts"] = pytest_counts(test["output"])
            row["per_try"].append(result)
            row["tries"] = try_no
            if test["passed"]:
                row["passed"] = True
                row["pass1"] = try_no == 1
                row["pass2"] = try_no <= 2
                break
        unchanged, diff = solution_state(exercise_dir, workspace, files)
        row["unchanged"] = unchanged
        for name in files["solution"]:
            source = workspace / name
            if source.is_file():
                shutil.copyfile(source, log_dir / ("final-" + name.replace("/", "_")))
        (log_dir / "final.diff").write_text(diff)
        row["failure_class"] = None if row["passed"] else failure_class(
            test, unchanged, row["per_try"][-1]["ended"])
        row["test_tail"] = tail(test["output"], TAIL_LINES, ROW_TAIL_CHARS)
    except Exception as err:  # noqa: BLE001 - a broken exercise is a row, not the run's end
        row["failure_class"] = "harness_error"
        row["harness_error"] = f"{type(err).__name__}: {err}"
        (log_dir / "harness-error.txt").write_text(traceback.format_exc())
    finally:
        if workspace is not None:
            shutil.rmtree(workspace, ignore_errors=True)
    tries = row["per_try"]
    row["ended"] = [t["ended"] for t in tries]
    row["wall_s"] = [t["wall_s"] for t in tries]
    row["wall_total_s"] = round(time.monotonic() - started, 2)
    row["tokens_in"] = sum(t["tokens_in"] for t in tries)
    row["tokens_out"] = sum(t["tokens_out"] for t in tries)
    row["model_calls"] = sum(t["model_calls"] for t in tries)
    calls = Counter()
    for t in tries:
        calls.update(t["tool_calls"])
    row["tool_calls"] = dict(calls)
    row.update(ctx.row_meta)
    row["finished_at"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return row


# ---------------------------------------------------------------- summary


def load_rows(path):
    rows = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return rows
    for line in lines:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    # A pair measured twice (a rerun after deleting nothing): the last row wins.
    latest = {}
    for row in rows:
        latest[(row.get("system"), row.get("label", ""), row.get("exercise"))] = row
    return list(latest.values())


def percent(part, whole):
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "-"


def summary_table(rows):
    if not rows:
        return "No results yet.\n"
    labels = sorted({row.get("label", "") for row in rows})
    groups = {}
    for row in rows:
        key = (row["system"], row.get("label", "")) if len(labels) > 1 else (row["system"], "")
        groups.setdefault(key, []).append(row)
    order = sorted(groups, key=lambda k: (SYSTEMS.index(k[0]) if k[0] in SYSTEMS else 9, k[1]))
    lines = [
        "| system | exercises | pass@1 | pass@2 | tries | step limit | loop guard | errors | "
        "timeouts | median wall s | tokens in / ex | tokens out / ex | model calls / ex |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    details = []
    for key in order:
        group = groups[key]
        n = len(group)
        tries = [t for row in group for t in row.get("per_try", [])]
        ended = Counter(t["ended"] for t in tries)
        name = key[0] + (f" ({key[1]})" if key[1] else "")
        walls = [row.get("wall_total_s", 0) for row in group]
        lines.append(
            f"| {name} | {n} | {percent(sum(r['pass1'] for r in group), n)} | "
            f"{percent(sum(r['pass2'] for r in group), n)} | {len(tries)} | "
            f"{percent(ended['step_limit'], len(tries))} | {percent(ended['loop_guard'], len(tries))} | "
            f"{ended['error'] + ended['crash']} | {ended['timeout']} | "
            f"{statistics.median(walls):.0f} | "
            f"{sum(r.get('tokens_in', 0) for r in group) / n:.0f} | "
            f"{sum(r.get('tokens_out', 0) for r in group) / n:.0f} | "
            f"{sum(r.get('model_calls', 0) for r in group) / n:.1f} |")
        calls = Counter()
        for row in group:
            calls.update(row.get("tool_calls", {}))
        classes = Counter(row.get("failure_class") for row in group if not row.get("pass2"))
        per_try = Counter()
        for t in tries:
            per_try[sum(t.get("tool_calls", {}).values())] += 1
        details.append(
            f"- {name}: tool calls {', '.join(f'{k} {v}' for k, v in calls.most_common()) or 'none'}"
            f"; tool calls per try {', '.join(f'{k}: {v}' for k, v in sorted(per_try.items()))}"
            f"; failures {', '.join(f'{k} {v}' for k, v in classes.most_common()) or 'none'}"
            f"; tries ended {', '.join(f'{k} {v}' for k, v in ended.most_common())}")
    out = "\n".join(lines) + "\n\n" + "\n".join(details) + "\n"
    # Per exercise, side by side: where one system passes and the other does not.
    names = sorted({row["exercise"] for row in rows})
    if len(order) > 1:
        def cell(row):
            if row is None:
                return ""
            if row.get("passed"):
                return f"pass@{row['tries']}"
            return f"fail ({row.get('failure_class')}; {', '.join(row.get('ended', []))})"
        index = {(k, row["exercise"]): row for k in order for row in groups[k]}
        heads = [k[0] + (f" ({k[1]})" if k[1] else "") for k in order]
        out += "\n| exercise | " + " | ".join(heads) + " |\n|---|" + "---|" * len(order) + "\n"
        for name in names:
            out += f"| {name} | " + " | ".join(cell(index.get((k, name))) for k in order) + " |\n"
    # The figure: agentls's pass@2 over Aider's, on the exercises both have measured.
    for label in (labels if len(labels) > 1 else [None]):
        mine = {r["exercise"]: r for r in rows if r["system"] == "agentls"
                and (label is None or r.get("label", "") == label)}
        theirs = {r["exercise"]: r for r in rows if r["system"] == "aider"}
        theirs.update({r["exercise"]: r for r in rows if r["system"] == "aider"
                       and label is not None and r.get("label", "") == label})
        common = sorted(set(mine) & set(theirs))
        if not common:
            continue
        a = sum(mine[e]["pass2"] for e in common)
        b = sum(theirs[e]["pass2"] for e in common)
        ratio = f"{a / b:.2f}" if b else "inf" if a else "-"
        tag = f" ({label})" if label else ""
        out += (f"\nagentls{tag} / aider, pass@2 on the {len(common)} exercises both ran: "
                f"{a} / {b} = {ratio}\n")
    return out


# ---------------------------------------------------------------- main


class Context:
    pass


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def version_of(cmd):
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return (done.stdout or done.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def main(argv):
    args = parse_args(argv)
    out = Path(args.out) if args.out else default_out(args)
    results = out / "results.jsonl"
    if args.summary:
        print(summary_table(load_rows(results)), end="")
        return 0
    if args.list:
        # scripts/task-bench checks the options this way before it builds and starts anything.
        exercises = select_exercises(args)
        agentls_config(args)
        print(f"{len(exercises)} exercise(s) into {out}: {', '.join(exercises)}")
        return 0
    missing = [flag for flag, value in (("--base-url", args.base_url), ("--model", args.model),
                                        ("--python", args.python)) if not value]
    missing += [f"--{system}" for system in args.systems if not getattr(args, system)]
    if missing:
        raise SystemExit(f"task-bench: missing {', '.join(missing)} (scripts/task-bench passes them)")
    exercises = select_exercises(args)
    out.mkdir(parents=True, exist_ok=True)
    out = out.resolve()
    ctx = Context()
    ctx.args, ctx.out, ctx.python = args, out, args.python
    ctx.config = agentls_config(args)
    ctx.aider = args.aider
    # Everything the systems could read of the user's own settings and state is replaced by
    # a home inside OUT (agentls: XDG_CONFIG_HOME, XDG_STATE_HOME, HOME; Aider: ~/.aider*).
    home = out / "home"
    env = dict(os.environ)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL"):
        env.pop(name, None)
    env.update({
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "PATH": str(Path(args.python).parent) + os.pathsep + env.get("PATH", ""),
        "GIT_AUTHOR_NAME": "task-bench", "GIT_AUTHOR_EMAIL": "task-bench@localhost",
        "GIT_COMMITTER_NAME": "task-bench", "GIT_COMMITTER_EMAIL": "task-bench@localhost",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONUNBUFFERED": "1",
    })
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        Path(env[name]).mkdir(parents=True, exist_ok=True)
    ctx.env = env
    meta = {"label": args.label, "model": args.model, "context_window": args.context_window}
    if "agentls" in args.systems:
        # A copy: a rebuild of the original during the run does not change what is measured.
        source = Path(args.agentls)
        target = out / "bin" / "agentls"
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        shutil.copyfile(source, partial)
        partial.chmod(0o755)
        os.replace(partial, target)
        ctx.agentls = str(target)
        meta["agentls_sha256"] = sha256(target)[:16]
        meta["agentls_version"] = version_of([ctx.agentls, "--version"])
        help_text = subprocess.run([ctx.agentls, "ask", "--help"], capture_output=True,
                                   text=True).stdout
        if "--events" not in help_text:
            raise SystemExit(f"task-bench: {source} has no `ask --events` (an older build)")
    if "aider" in args.systems:
        meta["aider_version"] = version_of([args.aider, "--version"])
        ctx.aider_metadata = out / "aider-model-metadata.json"
        ctx.aider_metadata.write_text(json.dumps({f"openai/{args.model}": {
            "max_tokens": args.context_window, "max_input_tokens": args.context_window,
            "max_output_tokens": args.context_window, "input_cost_per_token": 0,
            "output_cost_per_token": 0, "litellm_provider": "openai", "mode": "chat",
        }}, indent=2))
    ctx.row_meta = {k: v for k, v in meta.items() if k not in ("label",)}
    run = {
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "argv": argv, "systems": args.systems, "exercises": exercises, "seed": args.seed,
        "sample": args.sample, "tries": args.tries, "base_url": args.base_url,
        "agentls_config": ctx.config if "agentls" in args.systems else None,
        "machine": {"cpus": os.cpu_count(), "cpu": cpu_model(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "model_info": args.model_info, "pytest": version_of([args.python, "-m", "pytest", "--version"]),
        "bench_commit": version_of(["git", "-C", str(ROOT), "describe", "--always", "--dirty"]),
        **meta,
    }
    with open(out / "runs.jsonl", "a") as f:
        f.write(json.dumps(run) + "\n")
    done = {(row.get("system"), row.get("exercise")) for row in load_rows(results)
            if row.get("label", "") == args.label}
    todo = [(e, s) for e in exercises for s in args.systems if (s, e) not in done]
    log(f"{len(exercises)} exercise(s) x {len(args.systems)} system(s): {len(todo)} to run, "
        f"{len(exercises) * len(args.systems) - len(todo)} already in {results}")
    for index, (exercise, system) in enumerate(todo, 1):
        log(f"[{index}/{len(todo)}] {system} {exercise} ...")
        try:
            row = run_exercise(ctx, system, exercise)
        except Exception as err:  # noqa: BLE001 - never stop the run on one row
            row = {"system": system, "exercise": exercise, "label": args.label, "pass1": False,
                   "pass2": False, "passed": False, "tries": 0, "per_try": [],
                   "failure_class": "harness_error", "harness_error": repr(err)}
        with open(results, "a") as f:
            f.write(json.dumps(row) + "\n")
        tools = ", ".join(f"{k} {v}" for k, v in Counter(row.get("tool_calls", {})).most_common())
        log(f"    {'PASS' if row['passed'] else 'fail'} after {row['tries']} tr{'y' if row['tries'] == 1 else 'ies'}"
            f" ({', '.join(row.get('ended', []))}); {row.get('wall_total_s', 0):.0f} s;"
            f" {row.get('model_calls', 0)} model call(s); tools: {tools or 'none'}"
            f"{'; ' + str(row['failure_class']) if row.get('failure_class') else ''}")
        (out / "summary.md").write_text(summary_table(load_rows(results)))
    table = summary_table(load_rows(results))
    (out / "summary.md").write_text(table)
    print(table, end="")
    log(f"results: {results}; summary: {out / 'summary.md'}")
    return 0


def on_term(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, on_term)
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        log("interrupted (rows written so far are kept; run the same command to resume)")
        sys.exit(130)
