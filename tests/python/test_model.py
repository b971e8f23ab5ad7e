"""The jepa package against the jepa binary (bit for bit, same inputs) and against the
committed reference outputs of Meta's and Hugging Face's PyTorch modules (the parity bar)."""
import os
import threading

import numpy as np
import pytest

import jepa_c as jepa
from conftest import data, media, parity

V2 = data("vjepa2_tiny", "model.gguf")
V21 = data("vjepa2_1_tiny", "model.gguf")
VIT = data("hf_vit", "model.gguf")
LEWM = data("lewm", "model.gguf")


@pytest.fixture(scope="module")
def v2():
    return jepa.Model(V2, threads=2)


# ---- the package itself --------------------------------------------------------------------

def test_version_matches_the_binary(cli):
    assert cli("--version").split()[1] == jepa.__version__


def test_info(v2):
    i = v2.info
    assert (i.family, i.embed_dim, i.n_layer, i.patch_size, i.tubelet_size) == ("vjepa2", 128, 2, 16, 2)
    assert i.has_head and i.n_classes == 7 and v2.labels == [f"c{k}" for k in range(7)]
    assert i.predictor == "masked" and i.has_predictor
    assert v2.grid(4, 64, 64) == (2, 4, 4, 32)
    assert v2.device == "cpu" and v2.isa in ("avx512", "avx2", "neon", "scalar")


# ---- parity with the references (independent implementations) --------------------------------

def test_tokens_match_meta(v2):
    parity(v2.embed(np.load(data("vjepa2_tiny", "input.npy"))), np.load(data("vjepa2_tiny", "tokens.npy")))


def test_vjepa2_1_hier_and_image_path_match_meta():
    m = jepa.Model(V21, threads=2)
    h = m.embed(np.load(data("vjepa2_1_tiny", "input_video.npy")), hier=True)
    parity(h, np.load(data("vjepa2_1_tiny", "hier_video.npy")))
    t = m.embed(np.load(data("vjepa2_1_tiny", "input_image.npy")))
    parity(t, np.load(data("vjepa2_1_tiny", "tokens_image.npy")))


def test_classify_and_predict_match_meta(v2):
    x = np.load(data("vjepa2_tiny", "input.npy"))
    c = v2.classify(x)
    parity(c.logits[None], np.load(data("vjepa2_tiny", "logits.npy"))[None])
    assert c.top[0][0] == 1 and c.top[0][1] == "c1" and abs(sum(c.probs) - 1) < 1e-12
    tokens = v2.embed(x)
    pred = v2.predict(tokens, np.load(data("vjepa2_tiny", "ctx_ids.npy")), np.load(data("vjepa2_tiny", "tgt_ids.npy")),
                      mask_index=0)
    parity(pred, np.load(data("vjepa2_tiny", "pred_split.npy")))


def test_hf_layout_matches_the_hf_reference():
    """layout="BTCHW" takes Hugging Face's pixel_values_videos as it is."""
    m = jepa.Model(data("hf_vjepa2", "model.gguf"), threads=2)
    x = np.load(data("hf_vjepa2", "input.npy"))
    pv = x.transpose(1, 0, 2, 3)[None].copy()          # [1, T, C, H, W]
    got = m.embed(pv, layout="BTCHW")
    assert got.shape == (1, 32, 64)
    parity(got[0], np.load(data("hf_vjepa2", "tokens.npy")))
    assert np.array_equal(got[0], m.embed(x))


def test_world_models_match_their_references():
    lw = jepa.Model(data("lewm_wm", "model_a.gguf"), threads=2)
    parity(lw.lewm_predict(np.load(data("lewm_wm", "emb_a.npy")), np.load(data("lewm_wm", "actions_a.npy"))),
           np.load(data("lewm_wm", "pred_a.npy")))
    traj = np.load(data("lewm_wm", "traj_a.npy"))
    parity(lw.lewm_rollout(np.load(data("lewm_wm", "rollout_emb_a.npy")),
                           np.load(data("lewm_wm", "rollout_actions_a.npy")), traj.shape[1]), traj)
    p = lw.plan(np.load(data("lewm_wm", "plan_hist_a.npy")), np.load(data("lewm_wm", "plan_goal_a.npy")),
                past_actions=np.load(data("lewm_wm", "plan_past_a.npy")),
                horizon=2, samples=24, iters=4, elites=6, std=1.0, seed=77)
    assert np.abs(p.actions - np.load(data("lewm_wm", "plan_actions_a.npy"))).max() <= 1e-4
    ref_e = np.load(data("lewm_wm", "plan_energies_a.npy"))
    assert (np.abs(p.energies - ref_e) / ref_e).max() <= 1e-4
    assert abs(p.final_energy - float(np.load(data("lewm_wm", "plan_final_a.npy")).ravel()[0])) <= 1e-4 * p.final_energy

    ac = jepa.Model(data("ac_wm", "model_a.gguf"), threads=2)
    parity(ac.ac_predict(np.load(data("ac_wm", "tokens_a.npy")), np.load(data("ac_wm", "actions_a.npy")),
                         np.load(data("ac_wm", "states_a.npy"))), np.load(data("ac_wm", "pred_a.npy")))
    rt = np.load(data("ac_wm", "rollout_traj_a.npy"))
    N = ac.info.pred_tokens_per_frame
    traj, states = ac.ac_rollout(np.load(data("ac_wm", "rollout_tokens_a.npy")),
                                 np.load(data("ac_wm", "rollout_states_a.npy")),
                                 np.load(data("ac_wm", "rollout_actions_a.npy")), rt.shape[0] // N)
    parity(traj, rt)
    assert np.abs(states - np.load(data("ac_wm", "rollout_traj_states_a.npy"))).max() <= 2e-6


# ---- bit for bit with the binary, every input kind -----------------------------------------

def test_tensor_inputs_equal_the_cli(v2, cli, tmp_path):
    x = np.load(data("vjepa2_tiny", "input.npy"))
    assert np.array_equal(v2.embed(x), cli("embed", "-t", "2", "-m", V2, "--input-tensor",
                                           data("vjepa2_tiny", "input.npy"), "-o", "out", outs=["out"]))
    assert np.array_equal(v2.embed(x, pool="mean"),
                          cli("embed", "-t", "2", "-m", V2, "--input-tensor", data("vjepa2_tiny", "input.npy"),
                              "--pool", "mean", "-o", "out", outs=["out"]))
    batch = np.stack([x, x[:, ::-1].copy(), -x])
    np.save(tmp_path / "batch.npy", batch)
    got = v2.embed(batch, pool="mean")
    assert got.shape == (3, 128)
    assert np.array_equal(got, cli("embed", "-t", "2", "-m", V2, "--input-tensor", str(tmp_path / "batch.npy"),
                                   "--pool", "mean", "-o", "out", outs=["out"]))


@pytest.mark.parametrize("image", ["e2e.png", "jpeg/q75_422.jpg", "jpeg/gray_progressive.jpg",
                                   "webp/lossy_q80.webp", "webp/lossless_alpha.webp"])
def test_image_files_equal_the_cli(v2, cli, image):
    path = media(image)
    assert np.array_equal(v2.embed(path), cli("embed", "-t", "2", "-m", V2, "-i", path, "-o", "out", outs=["out"]))


def test_images_forming_one_clip_and_preprocessing_options(v2, cli):
    """as_clip=True: the images are the frames of one clip, in order (each image read alone
    gives its frame: the reference)."""
    a, b = media("e2e.png"), media("jpeg/q90_420.jpg")
    fa, fb = _read_all(v2, a)[0][0], _read_all(v2, b)[0][0]          # [3, 1, H, W] each
    clip = np.concatenate([fa, fb, fa, fb], axis=1)
    assert np.array_equal(v2.embed([a, b, a, b], as_clip=True), v2.embed(clip))
    assert v2.embed([a, b, a, b]).shape == (4, 16, 128)                # without it: 4 items
    got = v2.embed(a, antialias=False, resize_short=64, norm="sequential")
    assert np.array_equal(got, cli("embed", "-t", "2", "-m", V2, "-i", a, "--no-antialias", "--resize-short", "64",
                                   "--norm", "sequential", "-o", "out", outs=["out"]))


def test_uint8_frames_equal_the_cli(v2, cli):
    """uint8 [T, H, W, 3] with as_clip=True is one clip, as `jepa embed --frames-npy`."""
    frames = np.load(media("e2e_frames.npy"))
    assert frames.dtype == np.uint8 and frames.ndim == 4
    assert np.array_equal(v2.embed(frames, as_clip=True), cli("embed", "-t", "2", "-m", V2, "--frames-npy",
                                                              media("e2e_frames.npy"), "-o", "out", outs=["out"]))


def test_video_equals_the_cli(v2, cli):
    path = media("video_601.mp4")
    one = v2.embed(path, frames_per_clip=4, frame_step=3)
    assert np.array_equal(one, cli("embed", "-t", "2", "-m", V2, path, "--frames-per-clip", "4", "--frame-step", "3",
                                   "-o", "out", outs=["out"]))
    several = v2.embed(path, frames_per_clip=4, num_clips=3, pool="mean")
    assert several.shape == (3, 128)
    assert np.array_equal(several, cli("embed", "-t", "2", "-m", V2, path, "--frames-per-clip", "4",
                                       "--num-clips", "3", "--pool", "mean", "-o", "out", outs=["out"]))
    dense = v2.embed(path, frames_per_clip=4, dense=True, stride=16, pool="mean")
    assert np.array_equal(dense, cli("embed", "-t", "2", "-m", V2, path, "--frames-per-clip", "4", "--dense",
                                     "--stride", "16", "--pool", "mean", "-o", "out", outs=["out"]))


def _read_all(model, path, **opts):
    """A file's clips [B, 3, T, H, W] read into memory, one read_into at a time."""
    clips = model._clips(path, None, opts.get("frames_per_clip", 0), 0, opts.get("num_clips", 0), False, 0,
                         True, 0, "fused")
    x = np.empty((clips.count, 3, clips.T, clips.H, clips.W), dtype=np.float32)
    for k in range(clips.count):
        clips.reader.read_into(x[k])
    return x, clips


def test_file_clips_read_into_the_arena_equal_the_same_clips_in_memory(v2):
    path = media("video_601.mp4")
    x, _ = _read_all(v2, path, frames_per_clip=4, num_clips=3)
    # a file's clips go from the reader into the context's arena (jepa_ctx_embed_input),
    # in passes of 2 and 1; the same clips from memory are the reference
    assert np.array_equal(v2.embed(path, frames_per_clip=4, num_clips=3, batch=2),
                          np.stack([v2.embed(x[k]) for k in range(3)]))
    assert np.array_equal(v2.embed(media("e2e.png"), pool="mean"),
                          v2.embed(_read_all(v2, media("e2e.png"))[0][0], pool="mean"))


def test_a_reader_that_does_not_fit_the_call_is_refused(v2):
    def reader():
        return v2._clips(media("video_601.mp4"), None, 4, 0, 2, False, 0, True, 0, "fused")
    clips = reader()
    with v2._context() as c:
        out = np.empty((3, 128), dtype=np.float32)
        with pytest.raises(jepa.Error, match="fewer clips left"):   # 2 clips, a batch of 3
            c.embed(clips.reader, 3, clips.T, clips.H, clips.W, pooled=out)
        with pytest.raises(jepa.Error, match="not \\[B, 3, T, H, W\\] of this call"):
            c.embed(clips.reader, 1, clips.T, clips.H + 16, clips.W, pooled=out[:1])
        c.embed(clips.reader, 2, clips.T, clips.H, clips.W, pooled=out[:2])   # what fits still runs
        assert np.array_equal(out[:2], v2.embed(media("video_601.mp4"), frames_per_clip=4, num_clips=2,
                                                pool="mean"))


def test_hier_cls_and_lewm_pools_equal_the_cli(cli):
    m = jepa.Model(V21, threads=2)
    x = data("vjepa2_1_tiny", "input_video.npy")
    assert np.array_equal(m.embed(np.load(x), hier=True),
                          cli("embed", "-t", "2", "-m", V21, "--input-tensor", x, "--hier", "-o", "out", outs=["out"]))
    vit = jepa.Model(VIT, threads=2)
    x = data("hf_vit", "input.npy")
    assert np.array_equal(vit.embed(np.load(x), pool="cls"),
                          cli("embed", "-t", "2", "-m", VIT, "--input-tensor", x, "--pool", "cls", "-o", "out",
                              outs=["out"]))
    lw = jepa.Model(LEWM, threads=2)
    x = data("lewm", "input.npy")
    got = lw.embed(np.load(x), pool="lewm")
    assert np.array_equal(got, cli("embed", "-t", "2", "-m", LEWM, "--input-tensor", x, "--pool", "lewm", "-o",
                                   "out", outs=["out"]))
    parity(got[None], np.load(data("lewm", "emb.npy")).reshape(1, -1))


def test_classify_equals_the_cli(v2, cli):
    path = media("video_601.mp4")
    c = v2.classify(path, frames_per_clip=4, num_clips=2, top_k=3)
    logits = cli("classify", "-t", "2", "-m", V2, path, "--frames-per-clip", "4", "--num-clips", "2",
                 "--logits-out", "lg", outs=["lg"])
    assert np.array_equal(c.logits, logits)
    printed = cli("classify", "-t", "2", "-m", V2, path, "--frames-per-clip", "4", "--num-clips", "2", "-k", "3")
    rows = [ln.split("\t") for ln in printed.strip().splitlines()]
    assert [(int(r[0]), r[2]) for r in rows] == [(q, lab) for q, lab, _ in c.top]
    assert [r[1] for r in rows] == [f"{p:.4f}" for _, _, p in c.top]


def test_predict_equals_the_cli(v2, cli):
    x = data("vjepa2_tiny", "input.npy")
    ci, ti = data("vjepa2_tiny", "ctx_ids.npy"), data("vjepa2_tiny", "tgt_ids.npy")
    pred = v2.predict(np.load(x), np.load(ci), np.load(ti), mask_index=0)
    assert np.array_equal(pred, cli("predict", "-t", "2", "-m", V2, "--input-tensor", x, "--ctx", ci, "--tgt", ti,
                                    "--mask-index", "0", "-o", "out", outs=["out"]))


def test_world_calls_equal_the_cli(cli):
    lw = jepa.Model(data("lewm_wm", "model_a.gguf"), threads=2)
    e, a = data("lewm_wm", "rollout_emb_a.npy"), data("lewm_wm", "rollout_actions_a.npy")
    traj = lw.lewm_rollout(np.load(e), np.load(a), 4)
    assert traj.shape == (2, 4, 64)
    assert np.array_equal(traj, cli("rollout", "-t", "2", "-m", data("lewm_wm", "model_a.gguf"), "--emb", e,
                                    "--actions", a, "--steps", "4", "-o", "out", outs=["out"]))
    am = data("ac_wm", "model_a.gguf")
    ac = jepa.Model(am, threads=2)
    t, s, a = (data("ac_wm", f"{k}_a.npy") for k in ("tokens", "states", "actions"))
    assert np.array_equal(ac.ac_predict(np.load(t), np.load(a), np.load(s)),
                          cli("predict", "-t", "2", "-m", am, "--tokens", t, "--actions", a, "--states", s, "-o", "out",
                              outs=["out"]))


# ---- errors: jepa.Error with the engine's reason ---------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda m: m.embed(np.zeros((3, 4, 8, 8), np.float32)), "smaller than one patch"),
    (lambda m: m.embed(np.zeros((4, 4, 64, 64), np.float32)), "4 channels"),
    (lambda m: m.embed(np.zeros((3, 4, 64, 64), np.float32), layout="BCTHW"), "has 5 axes"),
    (lambda m: m.embed(np.full((3, 4, 64, 64), np.nan, np.float32)), "NaN"),
    (lambda m: m.embed(np.zeros((3, 4, 64, 64), np.float32), pool="max"), "pool"),
    (lambda m: m.embed(np.zeros((3, 4, 64, 64), np.float32), hier=True), "hierarchical"),
    (lambda m: m.embed(np.zeros((3, 4, 64, 64), np.float32), pool="cls"), "no CLS"),
    (lambda m: m.embed(np.zeros((3, 4, 64, 64), np.float32), layout="NCHW"), "layout"),
    (lambda m: m.embed(np.zeros((5, 5, 3), np.uint16)), "5 channels"),
    (lambda m: m.embed(np.array(["a"])), "not <U1"),
    (lambda m: m.embed(np.zeros((2, 8, 8, 4), np.uint8)), "[N, H, W, 3]"),
    (lambda m: m.embed("/nonexistent/clip.mp4"), "no such file"),
    (lambda m: m.embed(media("e2e.png"), num_clips=2), "sample a video"),
    (lambda m: m.embed(data("vjepa2_tiny", "input.npy")), "video"),   # not a video file: FFmpeg's reason
    (lambda m: m.predict(np.zeros((32, 128), np.float32), [0, 40], [1]), "ids must lie"),
    (lambda m: m.lewm_predict(np.zeros((2, 3)), np.zeros((2, 3))), "LeWM"),
    (lambda m: m.classify(np.zeros((3, 4, 64, 64), np.float32), top_k=0), "top_k"),
])
def test_bad_input_raises_jepa_error(v2, call, message):
    with pytest.raises(jepa.Error) as e:
        call(v2)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_bad_model_files_raise(tmp_path):
    with pytest.raises(jepa.Error, match="No such file|cannot open"):
        jepa.Model(tmp_path / "missing.gguf")
    bad = tmp_path / "truncated.gguf"
    bad.write_bytes(open(V2, "rb").read()[:5000])
    with pytest.raises(jepa.Error) as e:
        jepa.Model(bad)
    assert "truncated.gguf" in str(e.value) or "truncated" in str(e.value) or "beyond" in str(e.value)
    with pytest.raises(jepa.Error, match="device|cuda|CUDA"):
        jepa.Model(V2, device="cuda:7")
    with pytest.raises(jepa.Error, match="cpu|level"):
        jepa.Model(V2, cpu="sse9")


def test_prepack_gives_the_same_bits_and_holds_the_panels(v2):
    """prepack=True: the tokens equal those of a model without it, bit for bit, from the
    first call (which packs) and the next (which reads the kept panels); the panels are
    counted once packed, and the kernels that pack nothing refuse it."""
    # 16 frames of 64 x 64: 8 x 4 x 4 = 128 tokens, so every matmul has the 64+ rows that pack
    x = np.random.default_rng(1).standard_normal((3, 16, 64, 64), dtype=np.float32)
    ref = v2.embed(x)
    m = jepa.Model(V2, threads=2, prepack=True)
    assert m.prepacked_bytes == 0
    first = m.embed(x)
    packed = m.prepacked_bytes
    second = m.embed(x)
    assert np.array_equal(first, ref) and np.array_equal(second, ref)
    # at least the four f32 matmul weights of one block (qkv, proj, fc1, fc2: 12 D^2 floats)
    D = m.info.embed_dim
    assert packed >= 12 * D * D * 4, packed
    assert m.prepacked_bytes == packed          # the second call packed nothing new
    assert jepa.Model(V2, threads=1).prepacked_bytes == 0
    with pytest.raises(jepa.Error, match="scalar kernels pack no weights"):
        jepa.Model(V2, cpu="scalar", prepack=True)


def test_precision_tiers(v2):
    """precision="exact" is the default's bits; "bf16" stays within the bf16 tier's bar of
    Meta's tokens (docs/precision.md) and says which kernels ran (where the CPU has no bf16
    dot product it runs exact, bit for bit); an unknown tier raises naming it."""
    x = np.load(data("vjepa2_tiny", "input.npy"))
    ref = v2.embed(x)
    exact = jepa.Model(V2, threads=2, precision="exact")
    assert exact.precision == "exact" and exact.matmul_isa == v2.isa
    assert np.array_equal(exact.embed(x), ref)
    m = jepa.Model(V2, threads=2, precision="bf16")
    assert m.precision == "bf16"
    got = m.embed(x)
    if m.matmul_isa == m.isa:
        assert np.array_equal(got, ref)
    else:
        parity(got, np.load(data("vjepa2_tiny", "tokens.npy")), cos_bar=0.9995, rel_bar=5e-2)
    with pytest.raises(jepa.Error, match="precision 'fp8'"):
        jepa.Model(V2, precision="fp8")


def test_a_loaded_model_is_not_reloaded_under_its_contexts(v2):
    with pytest.raises(jepa.Error, match="already loaded"):
        v2._m.__init__(V21)
    assert v2.embed(np.load(data("vjepa2_tiny", "input.npy")), pool="mean").shape == (128,)


def test_a_context_refuses_a_second_thread():
    """The extension's own guard: one jepa_ctx runs one call at a time."""
    from jepa_c import _jepa
    m = jepa.Model(V2, threads=1)
    ctx = _jepa.Context(m._m, 1)
    x = np.zeros((1, 3, 16, 64, 64), np.float32)
    out = np.empty((1, 128), np.float32)
    errors = []

    def run():
        try:
            for _ in range(20):
                ctx.embed(x, 1, 16, 64, 64, pooled=out)
        except jepa.Error as e:
            errors.append(str(e))
    ts = [threading.Thread(target=run) for _ in range(2)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert errors and "another thread" in errors[0]


# ---- threads, the GIL and memory -------------------------------------------------------------

def _in_flight(reader):
    """Whether the embed call reading from `reader` is inside the extension with the GIL
    released, asked without side effects: read_into refuses a busy reader first ("reading in
    another thread"), and a 1-float buffer otherwise, so it never reads. Context.embed sets
    the reader's busy flag just before Py_BEGIN_ALLOW_THREADS and clears it just after
    Py_END_ALLOW_THREADS, with no Python code in between: a thread that holds the GIL and sees
    the flag set knows the call is between those two points."""
    try:
        reader.read_into(np.empty(1, np.float32))
    except jepa.Error as e:
        return "another thread" in str(e)
    raise AssertionError("read_into took a 1-float buffer for a clip")


def test_two_threads_compute_at_once(monkeypatch):
    """One Model serves two threads at once, and neither call holds the GIL nor a lock of the
    Model's, proven by what the main thread observes, not by timing. Two threads each embed
    64 image files as one clip (as_clip: one reader; read and encoded in one GIL-free stretch of
    Context.embed). The main thread, holding the GIL, polls the readers (_in_flight): first
    call busy, second call busy, first call busy again. The first call is one stretch (one
    clip, one call), so it was in flight through the whole poll, the second call in flight in
    the middle of it: both calls were inside the engine at one instant, while a third thread
    ran Python. With the GIL held through a call, the main thread could never see a reader
    busy; with the Model serialising calls, never both. A try whose calls happened not to
    overlap (the scheduler's choice) is repeated. Every result has one call's bits."""
    from jepa_c import _jepa
    m = jepa.Model(V2, threads=1)
    paths = [media("e2e.png")] * 64
    ref = m.embed(paths, pool="mean", as_clip=True)
    real = _jepa.ClipReader
    readers = {}

    def recording(*args, **kw):   # the reader Model.embed makes for this thread's call
        r = real(*args, **kw)
        readers[threading.get_ident()] = r
        return r
    monkeypatch.setattr(_jepa, "ClipReader", recording)

    def work(out):
        out.append(m.embed(paths, pool="mean", as_clip=True))
    results, tries = [], 0
    for tries in range(1, 51):
        readers.clear()
        res = [[], []]
        ts = [threading.Thread(target=work, args=(r,)) for r in res]
        [t.start() for t in ts]
        seen = False
        while not seen and any(t.is_alive() for t in ts):
            rs = list(readers.values())
            seen = len(rs) == 2 and _in_flight(rs[0]) and _in_flight(rs[1]) and _in_flight(rs[0])
        [t.join() for t in ts]
        results += res[0] + res[1]
        if seen:
            break
    assert seen, f"in {tries} tries of two threads' calls, never both inside the engine at once"
    print(f"both calls seen inside the engine at once on try {tries}")
    assert len(results) == 2 * tries and all(np.array_equal(r, ref) for r in results)


def _rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def test_no_leak_over_1000_calls(v2):
    x = np.load(data("vjepa2_tiny", "input.npy"))
    frames = np.load(media("e2e_frames.npy"))
    for _ in range(50):
        v2.embed(x), v2.embed(frames, pool="mean", as_clip=True)
    before = _rss_kib()
    for k in range(1000):
        v2.embed(x) if k % 2 else v2.embed(frames, pool="mean", as_clip=True)
        if k % 100 == 0:
            try:
                v2.embed(np.zeros((3, 4, 8, 8), np.float32))
            except jepa.Error:
                pass
    after = _rss_kib()
    print(f"RSS over 1000 calls: {before} -> {after} KiB")
    assert after - before < 8 * 1024
