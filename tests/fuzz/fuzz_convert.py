"""A bounded-time mutation fuzzer for the converter's readers: jepa._pickle.load (torch.save
zips) and jepa.convert.read_safetensors, on mutations of small valid files it writes itself
(tests/python/hostile_files.py).

    python3 tests/fuzz/fuzz_convert.py [--seconds 40] [--seed 1] [--replay CASE] [--save DIR]

Case i of seed s is made from random.Random(f"{s}:{i}") alone, so `--seed s --replay i`
rebuilds it. Every case must end in success or the reader's own refusal (UnsafeCheckpoint,
ConvertError) within CASE_S seconds; anything else (another exception, a timeout, a crash, the
memory limit) fails the run with the case's number and its input saved. The cases run in a
child process under RLIMIT_AS (LIMIT); the parent reports a child killed by a signal.

It reads the package from the source tree (python/jepa_c) without the C extension, so it runs
in every build without `pip install`: it needs numpy only (exit 77 with a line when it is
missing). atheris, when installed, is not needed; this fuzzer is plain Python."""
import argparse
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import types
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIMIT = 768 << 20
CASE_S = 10


def _import():
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("fuzz_convert: skipped, numpy is not installed for this python3", file=sys.stderr)
        sys.exit(77)
    pkg = types.ModuleType("jepa_c")   # the package without its __init__ (which loads the extension)
    pkg.__path__ = [os.path.join(ROOT, "python", "jepa_c")]
    sys.modules["jepa_c"] = pkg
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    from jepa_c import _pickle, convert
    import hostile_files
    return _pickle, convert, hostile_files


def seeds(hf, np):
    """The valid inputs mutated: a checkpoint shaped like Meta's (state dicts of tensors of
    several types, an optimizer entry, nested lists, a strided view) and a safetensors file."""
    rng = np.random.default_rng(0)
    ck = {"ema_encoder": {"blocks.0.attn.qkv.weight": rng.standard_normal((6, 2), np.float32),
                          "blocks.0.attn.qkv.bias": rng.standard_normal(6).astype(np.float16),
                          "pos": np.arange(4, dtype=np.int64)},
          "predictor": {"w": rng.standard_normal((2, 3)).astype(np.float64)},
          "opt": {"state": {0: {"step": 3}}, "param_groups": [{"lr": 1e-4, "betas": [0.9, 0.999]}]},
          "epoch": 7, "loss": 0.25}
    storages: dict = {}
    pkl = hf.pickle_of(ck, storages)
    # one more entry: a transposed view of the first storage
    view = hf.s("view") + hf.tensor("0", "<f4", 12, 1, [2, 5], [1, 2])
    pkl = pkl[:-2] + view + b"s" + pkl[-2:] if pkl.endswith(b"u.") else pkl
    st = {"a.weight": rng.standard_normal((3, 4), np.float32), "a.bias": np.zeros(3, np.float32),
          "b": np.ones((2, 2, 2), np.float32)}
    return pkl, storages, st


INTERESTING = [0, 1, 0x7F, 0x80, 0xFF, ord("("), ord("t"), ord("u"), ord("R"), ord("Q"), ord("r"), ord("j"),
               ord("]"), ord("}"), ord("\x85"), ord("["), ord("{"), ord('"'), ord("\\"), ord("9"),
               ord("-")]


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 8))):
        if not b:
            b += bytes([rng.randrange(256)])
        k = rng.randrange(7)
        at = rng.randrange(len(b))
        if k == 0:
            b[at] ^= 1 << rng.randrange(8)
        elif k == 1:
            b[at] = rng.choice(INTERESTING)
        elif k == 2:   # a 4- or 8-byte little-endian integer at a random place
            n = rng.choice((4, 8))
            v = rng.choice((0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 62, 2 ** 64 - 1, rng.randrange(2 ** 16)))
            b[at:at + n] = (v % 2 ** (8 * n)).to_bytes(n, "little")
        elif k == 3:   # repeat a chunk (nesting, long lists)
            n = rng.randrange(1, 16)
            b[at:at] = bytes(b[at:at + n]) * rng.choice((2, 8, 100, 1000))
        elif k == 4:
            del b[at:at + rng.randrange(1, 32)]
        elif k == 5:   # copy a chunk from elsewhere
            src = rng.randrange(len(b))
            n = rng.randrange(1, 32)
            b[at:at] = b[src:src + n]
        else:
            del b[rng.randrange(len(b) + 1):]
    return bytes(b)


def make_case(i, seed, hf, pkl, storages, st, d):
    """Case i: (reader name, path of its input)."""
    rng = random.Random(f"{seed}:{i}")
    kind = rng.random()
    if kind < 0.45:       # the pickle mutated, the zip around it well-formed
        path = os.path.join(d, f"c{i}.pt")
        hf.write_pt(path, mutate(pkl, rng), storages)
        return "pickle", path
    if kind < 0.6:        # the whole zip mutated (headers, CRCs, sizes)
        path = os.path.join(d, f"c{i}.pt")
        hf.write_pt(path, pkl, storages)
        with open(path, "rb") as fh:
            raw = fh.read()
        with open(path, "wb") as fh:
            fh.write(mutate(raw, rng))
        return "pickle", path
    path = os.path.join(d, f"c{i}.safetensors")
    hf.write_safetensors(path, st)
    with open(path, "rb") as fh:
        raw = fh.read()
    n = int.from_bytes(raw[:8], "little")
    if kind < 0.85:       # the JSON header mutated, its length kept right
        h = mutate(raw[8:8 + n], rng)
        raw = len(h).to_bytes(8, "little") + h + raw[8 + n:]
    else:
        raw = mutate(raw, rng)
    with open(path, "wb") as fh:
        fh.write(raw)
    return "safetensors", path


class _Timeout(BaseException):
    pass


def _alarm(*_):
    raise _Timeout()


def child(a):
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))
    _pickle, convert, hf = _import()
    import numpy as np
    pkl, storages, st = seeds(hf, np)
    signal.signal(signal.SIGALRM, _alarm)
    ok = {"loaded": 0, "refused": 0}
    end = time.monotonic() + a.seconds
    cases = [a.replay] if a.replay is not None else None
    i = 0
    with tempfile.TemporaryDirectory(prefix="fuzz_convert.") as d:
        while (cases is None and time.monotonic() < end) or (cases is not None and cases):
            case = cases.pop() if cases is not None else i
            with open(a.progress, "w") as fh:
                fh.write(str(case))
            reader, path = make_case(case, a.seed, hf, pkl, storages, st, d)
            signal.setitimer(signal.ITIMER_REAL, CASE_S)
            try:
                if reader == "pickle":
                    _pickle.load(path)
                else:
                    convert.read_safetensors(path)
                ok["loaded"] += 1
            except (_pickle.UnsafeCheckpoint, convert.ConvertError):
                ok["refused"] += 1
            except _Timeout:
                return fail(a, case, path, f"took more than {CASE_S} s")
            except BaseException as e:   # noqa: B902 (MemoryError, RecursionError: all defects)
                signal.setitimer(signal.ITIMER_REAL, 0)
                return fail(a, case, path, f"{type(e).__name__}: {str(e)[:200]}")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            os.unlink(path)
            i += 1
    what = f"case {a.replay}" if a.replay is not None else f"{i} cases in {a.seconds:g} s"
    print(f"fuzz_convert: seed {a.seed}: {what}, {ok['loaded']} read, {ok['refused']} refused, 0 defects")
    return 0


def fail(a, case, path, what):
    os.makedirs(a.save, exist_ok=True)
    keep = os.path.join(a.save, f"seed{a.seed}-case{case}" + os.path.splitext(path)[1])
    with open(path, "rb") as src, open(keep, "wb") as dst:
        dst.write(src.read())
    print(f"fuzz_convert: seed {a.seed} case {case}: {what} (input saved as {keep}; rerun with "
          f"--seed {a.seed} --replay {case})", file=sys.stderr)
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replay", type=int, help="run this case alone")
    ap.add_argument("--save", default=os.path.join(tempfile.gettempdir(), "fuzz_convert_failures"))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--progress", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)
    _import()   # the skip line, before a child is started
    with tempfile.NamedTemporaryFile(prefix="fuzz_convert.", suffix=".case") as prog:
        argv = [sys.executable, os.path.abspath(__file__), "--child", "--progress", prog.name,
                "--seconds", str(a.seconds), "--seed", str(a.seed), "--save", a.save]
        if a.replay is not None:
            argv += ["--replay", str(a.replay)]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        try:
            r = subprocess.run(argv, env=env, timeout=a.seconds + 4 * CASE_S + 30)
        except subprocess.TimeoutExpired:
            print(f"fuzz_convert: seed {a.seed}: the run did not end (last case {open(prog.name).read()})",
                  file=sys.stderr)
            return 1
        if r.returncode < 0:
            case = open(prog.name).read()
            print(f"fuzz_convert: seed {a.seed} case {case}: killed by signal {-r.returncode} (rerun with "
                  f"--seed {a.seed} --replay {case})", file=sys.stderr)
            return 1
        return r.returncode


if __name__ == "__main__":
    sys.exit(main())
