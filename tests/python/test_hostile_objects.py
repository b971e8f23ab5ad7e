"""Hostile use of the Python objects (issue 48): raw objects whose __init__ never ran, token
grids past every integer width, NaN weights, finite inputs that drive the predictors to a
non-finite output, and planner bounds the wrong way round. Each must raise jepa.Error,
never crash, never hand back NaN; at every CPU kernel level this machine runs, since
whether NaN reaches the output must not depend on the CPU."""
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

import jepa_c as jepa
from conftest import data

WM = data("lewm_wm", "model_a.gguf")
AC = data("ac_wm", "model_a.gguf")


def cpu_levels():
    """The kernel levels a context accepts here (scalar always)."""
    levels = []
    for lv in ("scalar", "avx2", "avx512", "neon"):
        try:
            jepa.Model(WM, threads=1, cpu=lv)
            levels.append(lv)
        except jepa.Error:
            pass
    return levels


# ---- raw objects ---------------------------------------------------------------------

RAW = r"""
import numpy as np, jepa_c as jepa
from jepa_c import _jepa
c = _jepa.Context.__new__(_jepa.Context)
f = np.zeros(4096, np.float32)
i = np.zeros(4, np.int32)
calls = {
    "embed": lambda: c.embed(f, 1, 1, 16, 16),
    "classify": lambda: c.classify(f, 1, f),
    "predict": lambda: c.predict(f, i, 1, i, 1, f, None, 1, 0),
    "lewm_predict": lambda: c.lewm_predict(f, f, 1, 1, f),
    "lewm_rollout": lambda: c.lewm_rollout(f, 1, 1, f, 1, f),
    "ac_predict": lambda: c.ac_predict(f, f, f, 1, 1, f),
    "ac_rollout": lambda: c.ac_rollout(f, f, 1, 1, f, 1, True, f, None),
    "plan lewm": lambda: c.plan("lewm", f, 1, None, None, f, {}, f, None),
    "plan ac": lambda: c.plan("ac", f, 1, f, None, f, {}, f, None),
    "isa": lambda: c.isa,
    "threads": lambda: c.threads,
}
m = _jepa.Model.__new__(_jepa.Model)
calls.update({"model info": lambda: m.info(), "model grid": lambda: m.grid(1, 16, 16)})
r = _jepa.ClipReader.__new__(_jepa.ClipReader)
calls.update({"reader count": lambda: r.count, "reader read_into": lambda: r.read_into(f)})
for name, call in calls.items():
    try:
        call()
        print("no error:", name)
    except jepa.Error:
        print("raised:", name)
"""


def test_raw_objects_raise_on_every_method():
    """Context / Model / ClipReader made with __new__ alone: every method and property
    raises jepa.Error (run in a child, so that a crash fails this test, not the session)."""
    r = subprocess.run([sys.executable, "-c", RAW], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"the child died ({r.returncode}): {r.stdout[-500:]} {r.stderr[-500:]}"
    lines = r.stdout.splitlines()
    assert len(lines) == 15 and all(ln.startswith("raised:") for ln in lines), r.stdout


# ---- token grids ---------------------------------------------------------------------

@pytest.mark.parametrize("T, H, W", [(1 << 30, 1 << 30, 1 << 30), (2 ** 31 - 1,) * 3, (2, 1 << 30, 1 << 30),
                                     (1 << 12, 1 << 12, 1 << 12)])
def test_grid_past_the_token_cap_raises(T, H, W):
    """(2^30)^3 pixels are 2^81 tokens: refused, not wrapped to 0 or to 1.34 billion."""
    m = jepa.Model(data("vjepa2_tiny", "model.gguf"), threads=1)
    with pytest.raises(jepa.Error, match="more tokens than one clip"):
        m.grid(T, H, W)


def test_grid_counts_are_products():
    m = jepa.Model(data("vjepa2_tiny", "model.gguf"), threads=1)
    P, tub = m.info.patch_size, m.info.tubelet_size
    for T, H, W in [(2, 64, 64), (8, 16 * 64, 16 * 64), (64, 16 * 128, 16 * 128)]:
        gt, gh, gw, n = m.grid(T, H, W)
        assert (gt, gh, gw) == (T // tub, H // P, W // P) and n == gt * gh * gw + int(m.info.has_cls)


# ---- NaN weights -------------------------------------------------------------------

GGUF_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def tensor_offsets(path):
    """{name: (byte offset in the file, element count)} of a GGUF v3 file's f32 tensors
    (a reader of the format written here: header, key/values, tensor infos, aligned data)."""
    with open(path, "rb") as f:
        b = f.read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, b, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        pos += n
        return b[pos - n:pos].decode()

    def value(t):
        nonlocal pos
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        pos += GGUF_SCALAR[t]
        return struct.unpack_from("<" + {1: "B", 2: "H", 4: "I", 8: "Q"}[GGUF_SCALAR[t]], b, pos - GGUF_SCALAR[t])[0]

    assert b[:4] == b"GGUF"
    pos = 4
    assert take("I") == 3
    n_t, n_kv = take("Q"), take("Q")
    align = 32
    for _ in range(n_kv):
        k = string()
        v = value(take("I"))
        if k == "general.alignment":
            align = v
    infos = []
    for _ in range(n_t):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        typ, off = take("I"), take("Q")
        infos.append((name, int(np.prod(dims)), typ, off))
    start = (pos + align - 1) // align * align
    return {name: (start + off, n) for name, n, typ, off in infos if typ == 0}


def with_nan(tmp_path, src, name, first=0, count=None):
    """A copy of src with `count` floats of tensor `name` from `first` on set to NaN."""
    out = str(tmp_path / f"nan_{name}_{first}.gguf")
    shutil.copyfile(src, out)
    off, n = tensor_offsets(src)[name]
    count = n - first if count is None else count
    with open(out, "r+b") as f:
        f.seek(off + 4 * first)
        f.write(np.full(count, np.nan, np.float32).tobytes())
    return out


PRED_NAN = [("pred.blk.0.ln1.weight", 0, None), ("pred.blk.1.ln1.bias", 0, None),
            ("pred.blk.0.attn_qkv.weight", 0, 128 * 64),          # the q rows (inner 128, 64 wide)
            ("pred.blk.1.attn_qkv.weight", 128 * 64, 128 * 64)]   # the k rows
ENC_NAN = [("enc.blk.0.ln1.weight", 0, None), ("enc.blk.0.attn_qkv.weight", 0, 64 * 64),
           ("enc.blk.0.attn_qkv.weight", 64 * 64, 64 * 64)]


@pytest.mark.parametrize("name, first, count", PRED_NAN, ids=[f"{n}@{f}" for n, f, _ in PRED_NAN])
def test_nan_predictor_weights_raise_at_every_level(tmp_path, name, first, count):
    path = with_nan(tmp_path, WM, name, first, count)
    e, a = np.load(data("lewm_wm", "emb_a.npy")), np.load(data("lewm_wm", "actions_a.npy"))
    for lv in cpu_levels():
        m = jepa.Model(path, threads=1, cpu=lv)
        with pytest.raises(jepa.Error, match="not finite|NaN"):
            m.lewm_predict(e, a)
        with pytest.raises(jepa.Error, match="not finite|NaN"):
            m.lewm_rollout(e[..., :1, :], a[..., :2, :], 2)


@pytest.mark.parametrize("name, first, count", ENC_NAN, ids=[f"{n}@{f}" for n, f, _ in ENC_NAN])
def test_nan_encoder_weights_raise_at_every_level(tmp_path, name, first, count):
    path = with_nan(tmp_path, WM, name, first, count)
    x = np.random.default_rng(0).random((3, 28, 28), dtype=np.float32)
    for lv in cpu_levels():
        with pytest.raises(jepa.Error, match="not finite"):
            jepa.Model(path, threads=1, cpu=lv).embed(x, pool="lewm")


# ---- finite inputs, non-finite outputs -----------------------------------------------

def test_world_models_raise_on_a_non_finite_output():
    """3e38 everywhere is finite, and drives the predictors past float: the CLI refuses to
    write such an output, and so do these."""
    m = jepa.Model(WM, threads=1)
    e, a = np.load(data("lewm_wm", "emb_a.npy")), np.load(data("lewm_wm", "actions_a.npy"))
    big_e, big_a = np.full_like(e, 3e38), np.full_like(a, 3e38)
    with pytest.raises(jepa.Error, match="lewm_predict: output element .* (NaN|infinite)"):
        m.lewm_predict(big_e, big_a)
    with pytest.raises(jepa.Error, match="lewm_rollout: output element"):
        m.lewm_rollout(big_e[..., :1, :], big_a[..., :2, :], 2)
    assert np.isfinite(m.lewm_predict(e, a)).all()   # the same calls on the fixture's inputs
    ac = jepa.Model(AC, threads=1)
    t, s = np.load(data("ac_wm", "rollout_tokens_a.npy")), np.load(data("ac_wm", "rollout_states_a.npy"))
    ra = np.load(data("ac_wm", "rollout_actions_a.npy"))
    steps = ra.shape[-2] - s.shape[-2] + 1
    F = s.shape[-2]
    with pytest.raises(jepa.Error, match="ac_rollout.*: output element"):   # one step: the output itself
        ac.ac_rollout(np.full_like(t, 3e38), np.full_like(s, 3e38), np.full_like(ra[..., :F, :], 3e38), 1)
    with pytest.raises(jepa.Error, match="output element|NaN"):             # or the next step's input
        ac.ac_rollout(np.full_like(t, 3e38), np.full_like(s, 3e38), np.full_like(ra, 3e38), steps)
    with pytest.raises(jepa.Error, match="ac_predict: output element"):
        ac.ac_predict(np.full_like(t, 3e38), np.full_like(ra[..., :s.shape[-2], :], 3e38), np.full_like(s, 3e38))
    traj, _ = ac.ac_rollout(t, s, ra, steps)
    assert np.isfinite(traj).all()


# ---- the planner's bounds ----------------------------------------------------------

def test_plan_bounds_the_wrong_way_round_raise():
    m = jepa.Model(WM, threads=1)
    h, p = np.load(data("lewm_wm", "plan_hist_a.npy")), np.load(data("lewm_wm", "plan_past_a.npy"))
    g = np.load(data("lewm_wm", "plan_goal_a.npy"))
    small = dict(horizon=2, samples=8, iters=2, elites=2)
    with pytest.raises(jepa.Error, match="bounds takes \\(lo, hi\\) with lo < hi"):
        m.plan(h, g, past_actions=p, bounds=(1.0, -1.0), **small)
    plan = m.plan(h, g, past_actions=p, bounds=(-0.5, 0.5), **small)
    assert plan.actions.min() >= -0.5 and plan.actions.max() <= 0.5
    # the names before the CLI's: lo > hi refused, lo == hi no bounds, as documented
    with pytest.warns(DeprecationWarning), pytest.raises(jepa.Error, match="lo 1 is above hi -1"):
        m.plan(h, g, past_actions=p, lo=1.0, hi=-1.0, **small)
    with pytest.warns(DeprecationWarning):
        old = m.plan(h, g, past_actions=p, lo=-0.5, hi=0.5, **small)
    assert np.array_equal(old.actions, plan.actions)
    with pytest.warns(DeprecationWarning):
        m.plan(h, g, past_actions=p, lo=0.0, hi=0.0, **small)
