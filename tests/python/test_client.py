"""jepa.Client against a live `jepa serve` (JEPA_BIN) started here: the same answers as
jepa.Model and the CLI's .npy on the same inputs, and jepa.Error for what the server refuses."""
import os
import subprocess
import time

import numpy as np
import pytest

import jepa_c as jepa
from conftest import data, media


@pytest.fixture
def serve(jepa_bin, tmp_path):
    procs = []

    def start(model, *opts):
        log = open(tmp_path / f"serve{len(procs)}.log", "w+")
        p = subprocess.Popen([jepa_bin, "serve", "-m", model, "--port", "0", "-t", "2", "-q", "--max-batch", "1", *opts],
                             stdout=subprocess.DEVNULL, stderr=log)
        procs.append(p)
        for _ in range(300):
            time.sleep(0.1)
            log.seek(0)
            text = log.read()
            if "http://127.0.0.1:" in text:
                return "http://127.0.0.1:" + text.split("http://127.0.0.1:")[1].split("/")[0]
            if p.poll() is not None:
                break
        pytest.fail("jepa serve did not start:\n" + text)
    yield start
    for p in procs:
        p.terminate()
        assert p.wait(timeout=60) == 0


def test_embed_like_model_and_cli(serve, cli):
    model = data("vjepa2_tiny", "model.gguf")
    c = jepa.Client(serve(model))
    png = media("e2e.png")
    want = cli("embed", "-q", "-t", "2", "-m", model, "-i", png, "--pool", "mean", "-o", "out", outs=("out",))
    got = c.embed(png, pool="mean")
    assert got.dtype == np.float32 and np.array_equal(got, want)
    tok = c.embed(png)   # Model's default, pool "none": the token map
    assert tok.shape == (16, 128)
    rows = c.embed([png, png], pool="mean")
    assert rows.shape == (2, 128) and np.array_equal(rows[1], want)
    if hasattr(jepa, "Model") and hasattr(jepa.Model, "embed"):
        m = jepa.Model(model, threads=2)
        assert np.array_equal(m.embed(png, pool="mean"), got)
        assert np.array_equal(m.embed(png), tok)


def test_world_like_cli(serve, cli):
    lw = data("lewm_wm", "model_a.gguf")
    c = jepa.Client(serve(lw))
    e, a = np.load(data("lewm_wm", "emb_a.npy")), np.load(data("lewm_wm", "actions_a.npy"))
    want = cli("predict", "-q", "-t", "2", "-m", lw, "--emb", data("lewm_wm", "emb_a.npy"), "--actions",
               data("lewm_wm", "actions_a.npy"), "-o", "out", outs=("out",))
    assert np.array_equal(c.lewm_predict(e, a), want)
    assert np.array_equal(c.lewm_predict(e[0], a[0]), want[0])
    re_, ra = np.load(data("lewm_wm", "rollout_emb_a.npy")), np.load(data("lewm_wm", "rollout_actions_a.npy"))
    want = cli("rollout", "-q", "-t", "2", "-m", lw, "--emb", data("lewm_wm", "rollout_emb_a.npy"), "--actions",
               data("lewm_wm", "rollout_actions_a.npy"), "--steps", "4", "-o", "out", outs=("out",))
    assert np.array_equal(c.lewm_rollout(re_, ra, 4), want)
    p = c.plan(np.load(data("lewm_wm", "plan_hist_a.npy")), np.load(data("lewm_wm", "plan_goal_a.npy")),
               past_actions=np.load(data("lewm_wm", "plan_past_a.npy")), samples=32, iters=3, elites=4, seed=5)
    w = cli("plan", "-q", "-t", "2", "-m", lw, "--start-tokens", data("lewm_wm", "plan_hist_a.npy"), "--goal-tokens",
            data("lewm_wm", "plan_goal_a.npy"), "--start-actions", data("lewm_wm", "plan_past_a.npy"), "--samples", "32",
            "--iters", "3", "--elites", "4", "--seed", "5", "-o", "acts", "--energies", "en", outs=("acts", "en"))
    assert np.array_equal(p.actions, w[0]) and np.array_equal(p.energies, w[1])
    with pytest.raises(jepa.Error, match="action"):
        c.lewm_predict(e, a[:, :, :9])
    with pytest.raises(jepa.Error, match="world model"):
        jepa.Client(serve(data("vjepa2_tiny", "model.gguf"))).lewm_predict(e, a)

    ac = data("ac_wm", "model_a.gguf")
    c = jepa.Client(serve(ac))
    f = lambda n: data("ac_wm", n + ".npy")
    tr, ts = c.ac_rollout(np.load(f("rollout_tokens_a")), np.load(f("rollout_states_a")), np.load(f("rollout_actions_a")), 4)
    w = cli("rollout", "-q", "-t", "2", "-m", ac, "--tokens", f("rollout_tokens_a"), "--states", f("rollout_states_a"),
            "--actions", f("rollout_actions_a"), "--steps", "4", "-o", "t", "--traj-states", "s", outs=("t", "s"))
    assert np.array_equal(tr, w[0]) and np.array_equal(ts, w[1])
    pred = c.ac_predict(np.load(f("tokens_a")), np.load(f("actions_a")), np.load(f("states_a")))
    w = cli("predict", "-q", "-t", "2", "-m", ac, "--tokens", f("tokens_a"), "--actions", f("actions_a"), "--states",
            f("states_a"), "-o", "p", outs=("p",))
    assert np.array_equal(pred, w)


def test_api_key(serve):
    url = serve(data("lewm_wm", "model_a.gguf"), "--api-key", "k-123")
    with pytest.raises(jepa.Error, match="401"):
        jepa.Client(url).lewm_predict(np.zeros((1, 64)), np.zeros((1, 10)))
    assert jepa.Client(url, api_key="k-123").lewm_predict(np.zeros((1, 64)), np.zeros((1, 10))).shape == (1, 64)
    assert jepa.Client(url).health()["model"]["world_model"] == "lewm"


def _model(path):
    if not (hasattr(jepa, "Model") and hasattr(jepa.Model, "classify")):
        pytest.skip("the jepa_c extension (Model) is not built")
    return jepa.Model(path, threads=2)


def test_classify_like_model(serve):
    model = data("vjepa2_tiny", "model.gguf")
    c, m = jepa.Client(serve(model)), _model(model)
    png = media("e2e.png")
    got, want = c.classify(png, top_k=3), m.classify(png, top_k=3)
    assert np.array_equal(got.logits, want.logits)
    assert np.allclose(got.probs, want.probs, rtol=1e-6, atol=1e-9)
    assert [t[0] for t in got.top] == [t[0] for t in want.top]
    two = c.classify([png, png], top_k=2)
    assert len(two) == 2 and np.array_equal(two[1].logits, want.logits)


def test_arrays_pil_and_paths_like_model(serve, tmp_path):
    Image = pytest.importorskip("PIL.Image", reason="PIL (Pillow) is not installed")
    model = data("vjepa2_tiny", "model.gguf")
    c, m = jepa.Client(serve(model)), _model(model)
    png = media("e2e.png")
    rgb = np.asarray(Image.open(png).convert("RGB"))
    other = np.ascontiguousarray(rgb[::-1])   # a second, different image of the same size
    Image.fromarray(other).save(tmp_path / "flip.png")
    batch = np.stack([rgb, other])            # uint8 [N, H, W, 3]
    want = m.embed(batch, pool="mean")
    got = c.embed(batch, pool="mean")
    assert got.shape == want.shape == (2, want.shape[-1]) and np.array_equal(got, want)
    assert not np.array_equal(got[0], got[1])
    pil = Image.fromarray(rgb)
    assert np.array_equal(c.embed(pil, pool="mean"), m.embed(pil, pool="mean"))
    assert np.array_equal(c.embed(rgb), m.embed(rgb))
    paths = [png, str(tmp_path / "flip.png")]
    assert np.array_equal(c.embed(paths, pool="mean"), m.embed(paths, pool="mean"))
    assert np.array_equal(c.embed(paths, pool="mean"), want)
