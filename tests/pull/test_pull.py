#!/usr/bin/env python3
"""test_pull.py — `jepa pull` and `-m REPO` against a loopback imitation of the hub
(hubsim.py), started here; no network. Every check compares with something independent:
the downloaded bytes with the served ones, the requests the hub saw with what the
protocol says (one Range request from the kept byte on, no second GET of a cached
file, one request for a 404), a model resolved from the cache with the same command
run on the file's path.

usage: test_pull.py JEPA FIXTURES_DIR WORK_DIR   (--no-pull: say the build has none, exit 77)
"""
import glob
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hubsim  # noqa: E402

if len(sys.argv) > 1 and sys.argv[1] == "--no-pull":
    print("skipped: this build has no `jepa pull` (built without libcurl / libcrypto / cJSON)")
    sys.exit(77)
JEPA, FIX, WORK = sys.argv[1:4]
BUILD = WORK
WORK = os.path.join(WORK, "pull")
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
MODEL = os.path.join(FIX, "vjepa2_tiny", "model.gguf")
TENSOR = os.path.join(FIX, "vjepa2_tiny", "input.npy")
fails = 0


def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    fails += 0 if cond else 1
    return cond


def run(args, cache, hub, timeout=60, env=None):
    env = dict(os.environ, JEPA_CACHE=cache, HF_ENDPOINT=hub.url + "/", **(env or {}))
    env.pop("HF_TOKEN", None)
    t0 = time.monotonic()
    r = subprocess.run([JEPA] + args, capture_output=True, text=True, env=env, timeout=timeout)
    r.seconds = time.monotonic() - t0
    return r


def one_line(r):
    return len(r.stderr.strip().splitlines()) == 1


hub = hubsim.Hub()
model = open(MODEL, "rb").read()
blob = bytes((i * 7919 + 13) % 251 for i in range(300000))
hub.add("org/tiny-GGUF", "tiny-f16.gguf", model)
for t in ("f32", "f16", "q8_0"):
    hub.add("org/multi-GGUF", "multi-%s.gguf" % t, blob + t.encode())
hub.add("org/multi-GGUF", "sub/extra.gguf", blob)
hub.add("org/bad", "bad-f16.gguf", blob, "badsha")
hub.add("org/trunc", "trunc-f16.gguf", blob, "truncate")
hub.add("org/trunc2", "trunc-f16.gguf", blob, "truncate")
hub.add("org/slow", "slow-f16.gguf", blob, "slow")
hub.add("org/flaky", "flaky-f16.gguf", blob, "flaky")

try:
    cache = os.path.join(WORK, "cache")
    # success, by REPO:FILE; the path on stdout; nothing else left in the folder
    r = run(["pull", "org/tiny-GGUF:tiny-f16.gguf"], cache, hub)
    path = r.stdout.strip()
    check(r.returncode == 0 and path == os.path.join(cache, "hub", "org", "tiny-GGUF", "tiny-f16.gguf"),
          "pull REPO:FILE prints the cache path (rc %d: %s)" % (r.returncode, r.stderr.strip()))
    check(os.path.isfile(path) and open(path, "rb").read() == model, "the downloaded bytes are the served ones")
    check(sorted(os.listdir(os.path.dirname(path))) == ["tiny-f16.gguf"], "no .part left beside it")
    check(len(hub.requests("GET", "/cdn/")) == 1, "one GET of the file, through the hub's redirect")
    # again: the cached copy has the hub's sha256, so no GET
    r = run(["pull", "org/tiny-GGUF"], cache, hub)
    check(r.returncode == 0 and r.stdout.strip() == path and len(hub.requests("GET", "/cdn/")) == 1,
          "pulling a cached file again downloads nothing")

    # -m REPO wherever a model path is: the same output as the path
    ref_info = subprocess.run([JEPA, "info", MODEL], capture_output=True, text=True)
    r = run(["info", "org/tiny-GGUF"], cache, hub)
    check(r.returncode == 0 and r.stdout.replace(path, MODEL) == ref_info.stdout, "jepa info REPO == jepa info FILE")
    out_a, out_b = os.path.join(WORK, "a.npy"), os.path.join(WORK, "b.npy")
    ra = subprocess.run([JEPA, "embed", "-m", MODEL, "--input-tensor", TENSOR, "-o", out_a], capture_output=True)
    rb = run(["embed", "-m", "org/tiny-GGUF:tiny-f16.gguf", "--input-tensor", TENSOR, "-o", out_b], cache, hub)
    check(ra.returncode == 0 and rb.returncode == 0 and open(out_a, "rb").read() == open(out_b, "rb").read(),
          "jepa embed -m REPO:FILE writes the bytes of -m FILE (%s)" % rb.stderr.strip())

    # not cached: one line naming `jepa pull` and --pull, no request; --pull downloads it
    cache2 = os.path.join(WORK, "cache2")
    n_req = len(hub.log)
    r = run(["embed", "-m", "org/tiny-GGUF", "--input-tensor", TENSOR, "-o", out_b], cache2, hub)
    check(r.returncode == 1 and one_line(r) and "jepa pull org/tiny-GGUF" in r.stderr and "--pull" in r.stderr
          and len(hub.log) == n_req, "-m REPO not cached: exit 1, one line, nothing asked of the hub (%s)"
          % r.stderr.strip())
    os.unlink(out_b)
    r = run(["embed", "-m", "org/tiny-GGUF", "--pull", "--input-tensor", TENSOR, "-o", out_b], cache2, hub)
    check(r.returncode == 0 and open(out_a, "rb").read() == open(out_b, "rb").read(),
          "-m REPO --pull downloads it, then runs as -m FILE (%s)" % r.stderr.strip())

    # several GGUF types: --type picks by suffix, the default is f16, a missing type lists them
    r = run(["pull", "org/multi-GGUF", "--type", "Q8_0"], cache, hub)
    check(r.returncode == 0 and open(r.stdout.strip(), "rb").read() == blob + b"q8_0"
          and r.stdout.strip().endswith("multi-q8_0.gguf"), "--type q8_0 takes the q8_0 file")
    r = run(["pull", "org/multi-GGUF"], cache, hub)
    check(r.returncode == 0 and r.stdout.strip().endswith("multi-f16.gguf"), "no --type: the f16 file")
    r = run(["pull", "org/multi-GGUF", "--type", "q4_k"], cache, hub)
    check(r.returncode == 1 and one_line(r) and "f32" in r.stderr and "q8_0" in r.stderr,
          "--type with no such file: exit 1, one line listing the types (%s)" % r.stderr.strip())
    r = run(["pull", "org/multi-GGUF:sub/extra.gguf"], cache, hub)
    check(r.returncode == 0 and open(r.stdout.strip(), "rb").read() == blob, "a file in a folder of the repo")
    r = run(["info", "org/multi-GGUF"], cache, hub)
    check(r.returncode == 1 and "multi-f16.gguf" in r.stderr,
          "-m REPO with several types cached takes the f16 one (which the loader then refuses: not a GGUF)")

    # a wrong checksum: refused, nothing left in place
    r = run(["pull", "org/bad"], cache, hub)
    d = os.path.join(cache, "hub", "org", "bad")
    check(r.returncode == 1 and one_line(r) and "sha256 mismatch" in r.stderr and os.listdir(d) == [],
          "checksum mismatch: exit 1, one line, neither the file nor a .part (%s)" % r.stderr.strip())

    # a truncated body: with no retry the part is kept; the next pull resumes it by Range
    r = run(["pull", "org/trunc", "--retries", "0"], cache, hub)
    part = os.path.join(cache, "hub", "org", "trunc", "trunc-f16.gguf.part")
    kept = os.path.getsize(part) if os.path.exists(part) else -1
    check(r.returncode == 1 and one_line(r) and kept == len(blob) // 2,
          "truncated body, --retries 0: exit 1, one line, the first half kept (%d bytes; %s)" % (kept, r.stderr.strip()))
    r = run(["pull", "org/trunc"], cache, hub)
    rngs = [x[2] for x in hub.requests("GET", "/cdn/")][-1:]
    check(r.returncode == 0 and open(r.stdout.strip(), "rb").read() == blob and rngs == ["bytes=%d-" % kept],
          "the next pull resumes with Range: bytes=%d- and the bytes are equal (%s)" % (kept, rngs))
    r = run(["pull", "org/trunc2"], cache, hub)   # within one run: retried, resumed
    check(r.returncode == 0 and open(r.stdout.strip(), "rb").read() == blob, "a truncated body is resumed by a retry")

    # retryable failures are retried (503 twice), others not (404 once)
    r = run(["pull", "org/flaky", "--retries", "2"], cache, hub)
    check(r.returncode == 0 and open(r.stdout.strip(), "rb").read() == blob, "two 503s then the file: retried")
    n404 = len(hub.requests(prefix="/org/tiny-GGUF/resolve/main/nope.gguf"))
    r = run(["pull", "org/tiny-GGUF:nope.gguf"], cache, hub)
    check(r.returncode == 1 and one_line(r) and "404" in r.stderr
          and len(hub.requests(prefix="/org/tiny-GGUF/resolve/main/nope.gguf")) == n404 + 1,
          "a missing file: exit 1, one line with the 404, asked once (%s)" % r.stderr.strip())
    r = run(["pull", "org/none"], cache, hub)
    check(r.returncode == 1 and one_line(r) and "404" in r.stderr, "a missing repository: one line, 404")

    # a server that stalls: the low-speed timeout ends it
    r = run(["pull", "org/slow", "--stall-timeout", "1", "--retries", "0"], cache, hub)
    check(r.returncode == 1 and one_line(r) and r.seconds < 5,
          "a stalled body: exit 1 after the stall timeout (%.1f s; %s)" % (r.seconds, r.stderr.strip()))

    # usage errors
    r = run(["pull", "../x"], cache, hub)
    check(r.returncode == 2, "a name that is no repository is a usage error")
    r = run(["pull", "org/x:../../etc/passwd"], cache, hub)
    check(r.returncode == 2, "a file with '..' is a usage error")
    r = run(["pull", "org/tiny-GGUF:tiny-f16.gguf", "--type", "f16"], cache, hub)
    check(r.returncode == 2, "REPO:FILE with --type is a usage error")

    # a checkpoint repository (safetensors, no GGUF): converted through the Python package
    hub.add_checkpoint("facebook/ck", os.path.join(FIX, "checkpoints", "hf_vjepa2"))
    r = run(["pull", "facebook/ck"], cache, hub, env={"PYTHONPATH": WORK, "PYTHONNOUSERSITE": "1"})
    if subprocess.run(["python3", "-c", "import jepa_c"], env=dict(os.environ, PYTHONPATH=WORK),
                      capture_output=True).returncode != 0:
        check(r.returncode == 1 and one_line(r) and "pip install jepa-c" in r.stderr,
              "a checkpoint without the Python package: one line saying to install it (%s)" % r.stderr.strip())
    so = glob.glob(os.path.join(BUILD, "..", "..", "python", "_jepa*.so"))
    deps = subprocess.run(["python3", "-c", "import numpy; from gguf import GGUFWriter"], capture_output=True)
    if not so:
        print("skipped: the checkpoint conversion by `jepa pull` (a build without -Dpython=true has no _jepa)")
    elif deps.returncode != 0:
        print("skipped: the checkpoint conversion by `jepa pull` (python3 lacks numpy or the gguf package)")
    else:
        pkg = os.path.join(WORK, "pkg", "jepa_c")
        os.makedirs(pkg)
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "jepa_c")
        for f in glob.glob(os.path.join(src, "*.py")) + so:
            os.symlink(os.path.abspath(f), os.path.join(pkg, os.path.basename(f)))
        env = {"PYTHONPATH": os.path.dirname(pkg)}
        r = run(["pull", "facebook/ck", "-q"], cache, hub, env=env, timeout=120)
        want = os.path.join(cache, "hub", "facebook", "ck", "ck-f16.gguf")
        check(r.returncode == 0 and r.stdout.strip() == want and os.path.isfile(want),
              "a checkpoint: converted into the cache, its path printed (%s)" % r.stderr.strip())
        ref = os.path.join(WORK, "ref.gguf")
        subprocess.run(["python3", "-m", "jepa_c.convert", os.path.join(FIX, "checkpoints", "hf_vjepa2"), ref,
                        "--ftype", "f16"], env=dict(os.environ, **env), capture_output=True)
        x = os.path.join(FIX, "hf_vjepa2", "input.npy")
        a = run(["embed", "-m", "facebook/ck", "--input-tensor", x, "-o", os.path.join(WORK, "a.npy")], cache, hub)
        b = run(["embed", "-m", ref, "--input-tensor", x, "-o", os.path.join(WORK, "b.npy")], cache, hub)
        check(a.returncode == 0 and b.returncode == 0 and open(os.path.join(WORK, "a.npy"), "rb").read()
              == open(os.path.join(WORK, "b.npy"), "rb").read(),
              "-m REPO of a converted checkpoint embeds as the converter's own GGUF (%s)" % a.stderr.strip())
        r = run(["pull", "facebook/ck", "--type", "q4_0"], cache, hub, env=env)
        check(r.returncode == 2, "a checkpoint converts to f32, f16 or bf16 only: usage error")
finally:
    hub.close()

print("%d failed" % fails)
sys.exit(1 if fails else 0)
