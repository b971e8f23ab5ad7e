"""Shared fixtures of the Python package's tests (tests/python/).

The tests run against an installed `jepa` package (pip install .) and, for the parity
checks, the `jepa` binary of a build of the same tree: JEPA_BIN (default
build-test-release/cli/jepa, as tests/run_all.sh builds it)."""
import os
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
INPUT = os.path.join(ROOT, "tests", "input", "data")


def data(*p):
    return os.path.join(DATA, *p)


def media(*p):
    return os.path.join(INPUT, *p)


@pytest.fixture(scope="session")
def jepa_bin():
    b = os.environ.get("JEPA_BIN", os.path.join(ROOT, "build-test-release", "cli", "jepa"))
    if not os.access(b, os.X_OK):
        pytest.fail(f"the jepa binary for the parity checks is missing: {b} (set JEPA_BIN)")
    return b


@pytest.fixture
def cli(jepa_bin, tmp_path):
    """cli(args..., out="x.npy") runs the binary with -o/--out files in tmp_path and
    returns the arrays it wrote (or stdout when no output is named)."""
    def run(*args, outs=(), env=None):
        paths = {k: str(tmp_path / f"{k}.npy") for k in outs}
        argv = [jepa_bin] + [paths.get(a, a) if isinstance(a, str) else str(a) for a in args]
        r = subprocess.run(argv, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
        if not outs:
            return r.stdout
        got = [np.load(paths[k]) for k in outs]
        return got[0] if len(got) == 1 else got
    return run


def parity(a, ref, cos_bar=0.99999, rel_bar=1e-4):
    """The project's parity bar (tests/models/parity.h): every row's cosine and the
    max-abs error relative to the reference's largest magnitude."""
    a = np.asarray(a, np.float64).reshape(-1, ref.shape[-1])
    b = np.asarray(ref, np.float64).reshape(-1, ref.shape[-1])
    assert a.shape == b.shape, (a.shape, b.shape)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-300)
    rel = np.abs(a - b).max() / np.abs(b).max()
    assert cos.min() >= cos_bar and rel <= rel_bar, f"min cos {cos.min():.9f}, rel {rel:.3g}"
    return cos.min(), rel
