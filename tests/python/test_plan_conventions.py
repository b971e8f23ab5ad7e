"""The planner and rollouts named and checked as the CLI's (issues 45 and 48): plan() takes
image paths for the start and the goal (the CLI's `jepa plan --start IMG`, bit for bit), the
CLI's option names (the names before them warn and still work), errors counted in actions,
states and frames, and a non-finite energy raises instead of coming back as a plan."""
import warnings

import numpy as np
import pytest

import jepa_c as jepa
from conftest import data, media

WM = data("lewm_wm", "model_a.gguf")
AC = data("ac_wm", "model_a.gguf")
IMG, IMG2 = media("e2e.png"), media("jpeg/q90_420.jpg")
SMALL = dict(horizon=2, samples=24, iters=3, elites=6, seed=7)
CLI_SMALL = ["--horizon", "2", "--samples", "24", "--iters", "3", "--elites", "6", "--seed", "7"]


@pytest.fixture(scope="module")
def lw():
    return jepa.Model(WM, threads=2)


@pytest.fixture(scope="module")
def ac():
    return jepa.Model(AC, threads=2)


class Image:
    """PIL.Image, or a skip with one line saying it is missing."""
    def __enter__(self):
        return pytest.importorskip("PIL.Image", reason="PIL (pip install pillow) is missing: the PIL plan check skips")

    def __exit__(self, *exc):
        return False


def test_lewm_plan_from_images_equals_the_cli_and_the_embeddings(lw, cli):
    p = lw.plan(IMG, IMG2, **SMALL)
    acts, en = cli("plan", "-t", "2", "-m", WM, "--start", IMG, "--goal", IMG2, *CLI_SMALL, "-o", "a",
                   "--energies", "e", outs=["a", "e"])
    assert np.array_equal(p.actions, acts) and np.array_equal(p.energies, en)
    e0, e1 = lw.embed(IMG, pool="lewm"), lw.embed(IMG2, pool="lewm")
    q = lw.plan(e0[None], e1, **SMALL)
    assert np.array_equal(p.actions, q.actions) and np.array_equal(p.energies, q.energies)
    assert p.final_energy == q.final_energy
    with Image() as pil:    # PIL images: as the same files by path
        r = lw.plan(pil.open(IMG), pil.open(IMG2), **SMALL)
        assert np.array_equal(r.actions, p.actions)


def test_ac_plan_from_images_equals_the_cli_and_its_tokens(ac, cli, tmp_path):
    st = np.zeros(7, np.float32)
    np.save(tmp_path / "st.npy", st)
    small = dict(horizon=2, samples=16, iters=2, elites=4, maxnorm=0.1)
    p = ac.plan(IMG, IMG2, states=st, **small)
    acts, en = cli("plan", "-t", "2", "-m", AC, "--start", IMG, "--goal", IMG2, "--start-states",
                   str(tmp_path / "st.npy"), "--horizon", "2", "--samples", "16", "--iters", "2", "--elites", "4",
                   "--maxnorm", "0.1", "-o", "a", "--energies", "e", outs=["a", "e"])
    assert np.array_equal(p.actions, acts) and np.array_equal(p.energies, en)
    # the state of an image: the frame twice (one tubelet), its tokens layer-normed; numpy's
    # own layer norm is the reference, within rounding, then the plan from those tokens
    def state(path):
        t = ac.embed([path, path], as_clip=True).astype(np.float64)
        mu, var = t.mean(1, keepdims=True), t.var(1, keepdims=True)
        return ((t - mu) / np.sqrt(var + 1e-5)).astype(np.float32)
    s0, s1 = state(IMG), state(IMG2)
    ours = jepa._layer_norm_rows(ac.embed([IMG, IMG], as_clip=True))
    assert np.abs(ours - s0).max() <= 1e-5
    q = ac.plan(ours, jepa._layer_norm_rows(ac.embed([IMG2, IMG2], as_clip=True)), states=st, **small)
    assert np.array_equal(q.actions, p.actions)
    assert np.abs(ac.plan(s0, s1, states=st, **small).actions - p.actions).max() <= 1e-3


def test_plan_defaults_are_the_clis(lw, ac, cli):
    d = lw.plan_defaults()
    assert set(d) == {"horizon", "samples", "iters", "elites", "momentum", "std", "bounds", "seed"}
    assert set(ac.plan_defaults()) == {"horizon", "samples", "iters", "elites", "momentum", "maxnorm", "seed"}
    text = cli("plan", "--help")
    assert f"--iters I        iterations ({d['iters']}; {ac.plan_defaults()['iters']})" in text
    assert f"--maxnorm X      V-JEPA 2-AC: the xyz box +-X and its initial std ({ac.plan_defaults()['maxnorm']:g})" \
        in text


@pytest.mark.parametrize("old, new", [
    (dict(iterations=3), dict(iters=3)),
    (dict(init_std=0.5), dict(std=0.5)),
    (dict(lo=-0.3, hi=0.3), dict(bounds=(-0.3, 0.3))),
    (dict(momentum_mean=0.2, momentum_std=0.2), dict(momentum=0.2)),
])
def test_the_names_before_the_clis_warn_and_work(lw, old, new):
    h, g = lw.embed(IMG, pool="lewm")[None], lw.embed(IMG2, pool="lewm")
    base = dict(horizon=2, samples=24, iters=3, elites=6, seed=7)
    for k in new:
        base.pop(k, None)
    with pytest.warns(DeprecationWarning, match=f"'{next(iter(old))}' is deprecated; use '{next(iter(new))}'"):
        a = lw.plan(h, g, **base, **old)
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # the new names warn nothing
        b = lw.plan(h, g, **base, **new)
    assert np.array_equal(a.actions, b.actions) and np.array_equal(a.energies, b.energies)
    with pytest.raises(jepa.Error, match="set the same thing"):
        lw.plan(h, g, **base, **old, **new)


def test_momentum_mean_alone_still_sets_only_the_mean(lw):
    h, g = lw.embed(IMG, pool="lewm")[None], lw.embed(IMG2, pool="lewm")
    with pytest.warns(DeprecationWarning):
        a = lw.plan(h, g, momentum_mean=0.5, **SMALL)
    b = lw.plan(h, g, momentum=0.5, **SMALL)
    assert not np.array_equal(a.energies, b.energies)   # momentum sets the std's too


@pytest.mark.parametrize("settings, message", [
    (dict(iters=0), "iters takes an integer in [1, 100000]"),
    (dict(horizon=2.5), "horizon takes an integer"),
    (dict(momentum=1.5), "momentum takes a number in [0, 1]"),
    (dict(maxnorm=0.1), "maxnorm is V-JEPA 2-AC's"),
    (dict(elites=50, samples=20), "elites 50 is more than samples 20"),
    (dict(bounds=(0.5, 0.5)), "lo < hi"),
    (dict(iterationz=3), "unknown setting 'iterationz'"),
])
def test_bad_lewm_settings_raise_naming_the_setting(lw, settings, message):
    h, g = lw.embed(IMG, pool="lewm")[None], lw.embed(IMG2, pool="lewm")
    with pytest.raises(jepa.Error) as e:
        lw.plan(h, g, **settings)
    assert message in str(e.value)


def test_ac_refuses_lewms_settings(ac):
    st = np.zeros(7, np.float32)
    for k, v in (("std", 0.1), ("bounds", (-1, 1))):
        with pytest.raises(jepa.Error, match=f"maxnorm sets its xyz range \\(not {k}\\)"):
            ac.plan(IMG, IMG2, states=st, **{k: v})
    with pytest.raises(jepa.Error, match="needs the history's states"):
        ac.plan(IMG, IMG2)


# ---- errors in the user's units ------------------------------------------------------------------

def test_rollout_and_plan_errors_count_actions_states_and_frames(lw, ac):
    e = np.load(data("lewm_wm", "rollout_emb_a.npy"))[0]        # [T, D]
    a = np.load(data("lewm_wm", "rollout_actions_a.npy"))[0]
    T = e.shape[0]
    with pytest.raises(jepa.Error) as x:
        lw.lewm_rollout(e, a[:T + 1], 4)
    assert str(x.value) == (f"actions: {T + 1} actions; a history of {T} frames rolled out 4 steps "
                            f"(T + steps - 1) needs {T + 3}")
    with pytest.raises(jepa.Error, match=f"actions of 3 values; this model's actions have {lw.info.action_dim}"):
        lw.lewm_predict(e, np.zeros((T, 3), np.float32))
    with pytest.raises(jepa.Error, match="steps: an integer of at least 1"):
        lw.lewm_rollout(e, a, 0)
    h, g = lw.embed(IMG, pool="lewm"), lw.embed(IMG2, pool="lewm")
    with pytest.raises(jepa.Error, match="past_actions: 2 actions; a history of 2 frames"):
        lw.plan(np.stack([h, h]), g, past_actions=np.zeros((2, lw.info.action_dim), np.float32), **SMALL)
    t = np.load(data("ac_wm", "rollout_tokens_a.npy"))          # [T N, D]
    s = np.load(data("ac_wm", "rollout_states_a.npy"))          # [T, 7]
    N = ac.info.pred_tokens_per_frame
    with pytest.raises(jepa.Error, match=f"tokens: {t.shape[0] - 1} tokens are not whole frames of {N} tokens"):
        ac.ac_rollout(t[:-1], s, np.zeros((s.shape[0], 7), np.float32), 1)
    with pytest.raises(jepa.Error, match=f"states: {s.shape[0] + 1} states; tokens of {s.shape[0]} frames"):
        ac.ac_rollout(t, np.concatenate([s, s[:1]]), np.zeros((s.shape[0], 7), np.float32), 1)


# ---- a non-finite energy ---------------------------------------------------------------------------

class NaNPlanner:
    """A context whose planner hands back a NaN in the energies (or the plan's energy)."""
    def __init__(self, at):
        self.at = at

    def plan(self, which, h, T, st, pa, g, p, actions, energies):
        actions[:] = 0
        energies[:] = 1
        if self.at is not None:
            energies[self.at] = np.nan
        return float("inf") if self.at is None else 1.0


@pytest.mark.parametrize("at, message", [(1, "iteration 2's best energy is nan"),
                                         (None, "the plan's energy is inf")])
def test_a_non_finite_energy_raises(at, message):
    m = jepa.Model(WM, threads=1)
    m._free = [NaNPlanner(at)]
    h = np.zeros((1, m.info.emb_dim), np.float32)
    with pytest.raises(jepa.Error, match=message):
        m.plan(h, h[0], horizon=2, samples=8, iters=3, elites=2)


def test_nan_predictor_weights_never_give_a_plan(tmp_path):
    from test_hostile_objects import with_nan
    path = with_nan(tmp_path, WM, "pred.blk.0.ln1.weight")
    h = np.load(data("lewm_wm", "plan_hist_a.npy"))
    with pytest.raises(jepa.Error, match="non-finite|not finite|NaN"):
        jepa.Model(path, threads=1).plan(h[-1:], np.load(data("lewm_wm", "plan_goal_a.npy")),
                                         horizon=2, samples=8, iters=2, elites=2)
