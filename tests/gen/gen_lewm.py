#!/usr/bin/env python3
"""gen_lewm.py - tiny random LeWM world models (encoder + projector + predictor) as
schema-v1 GGUFs, with float64 reference outputs of the predictor and of its rollout.

The reference is written after the structure of the LeWM authors' PyTorch modules
(ARPredictor -> Transformer(ConditionalBlock...) with the Attention and FeedForward
sub-modules each opening with their own LayerNorm, the Embedder's Conv1d(k=1) +
Linear/SiLU/Linear, the projector MLP), not after jepa.c's recipe in
docs/world-models.md; the C forward is checked against it by tests/models/test_world.c.
No torch: numpy and gguf (PyPI) only.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install numpy gguf
    /tmp/v/bin/python tests/gen/gen_lewm.py            # writes tests/data/lewm_wm/
    /tmp/v/bin/python tests/gen/gen_lewm.py --out DIR

Deterministic (fixed seeds): a rerun with the same numpy / gguf versions gives the same
bytes.
"""
import argparse
import json
import os
import sys
from importlib.metadata import version

import numpy as np
import gguf

# Two configurations: A is the published model's structure at a tiny width (several heads
# whose inner width differs from the model width, the 3-frame window, 10-d actions); B
# one head wider than the model, one block, a 5-frame window, 2-d actions. Encoder: an
# hfvit-layout ViT (CLS, learned positions) + the projector.
CONFIGS = {
    "a": dict(D=64, enc_layers=1, enc_heads=2, enc_ffn=128, patch=14, img=28, proj_hidden=96,
              layers=2, heads=4, head_dim=32, ffn=256, n_frames=3, action_dim=10, pred_hidden=128,
              B=2, T=3, roll_T=2, roll_steps=4, seed=1234),
    "b": dict(D=48, enc_layers=1, enc_heads=2, enc_ffn=96, patch=14, img=28, proj_hidden=64,
              layers=1, heads=1, head_dim=80, ffn=160, n_frames=5, action_dim=2, pred_hidden=64,
              B=3, T=5, roll_T=3, roll_steps=6, seed=4321),
}
LN_EPS, ADALN_EPS, ENC_EPS = 1e-5, 1e-6, 1e-12


def gelu(x):
    from math import erf
    return 0.5 * x * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    return y if w is None else y * w + b


def linear(x, W, b=None):
    y = x @ W.T
    return y if b is None else y + b


# ---- the reference, module by module --------------------------------------------------

def embedder(P, a):
    """Embedder: Conv1d(k=1) then Linear -> SiLU -> Linear; the Conv1d is folded into the
    first Linear (the GGUF's pred.action_embed.0), as the converter folds it."""
    return linear(silu(linear(a, P["pred.action_embed.0.weight"], P["pred.action_embed.0.bias"])),
                  P["pred.action_embed.2.weight"], P["pred.action_embed.2.bias"])


def attention(P, pfx, x, heads, head_dim):
    """Attention: its own LayerNorm, to_qkv without bias, causal SDPA, to_out."""
    x = layer_norm(x, P[pfx + ".ln1.weight"], P[pfx + ".ln1.bias"], LN_EPS)
    B, T, _ = x.shape
    inner = heads * head_dim
    qkv = linear(x, P[pfx + ".attn_qkv.weight"])
    q, k, v = (qkv[..., i * inner:(i + 1) * inner].reshape(B, T, heads, head_dim).transpose(0, 2, 1, 3)
               for i in range(3))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_dim)
    s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(B, T, inner)
    return linear(o, P[pfx + ".attn_out.weight"], P[pfx + ".attn_out.bias"])


def feed_forward(P, pfx, x):
    """FeedForward: LayerNorm, Linear, GELU, Linear."""
    x = layer_norm(x, P[pfx + ".ln2.weight"], P[pfx + ".ln2.bias"], LN_EPS)
    return linear(gelu(linear(x, P[pfx + ".ffn_up.weight"], P[pfx + ".ffn_up.bias"])),
                  P[pfx + ".ffn_down.weight"], P[pfx + ".ffn_down.bias"])


def conditional_block(P, pfx, x, c, heads, head_dim):
    """ConditionalBlock: adaLN_modulation = SiLU -> Linear(dim, 6 dim), chunked into
    shift/scale/gate for the attention and the MLP; norm1/norm2 without affine."""
    mods = linear(silu(c), P[pfx + ".adaln.weight"], P[pfx + ".adaln.bias"])
    sh_a, sc_a, g_a, sh_m, sc_m, g_m = np.split(mods, 6, axis=-1)
    x = x + g_a * attention(P, pfx, layer_norm(x, None, None, ADALN_EPS) * (1 + sc_a) + sh_a, heads, head_dim)
    x = x + g_m * feed_forward(P, pfx, layer_norm(x, None, None, ADALN_EPS) * (1 + sc_m) + sh_m)
    return x


def predictor(P, cfg, emb, act):
    """ARPredictor (+ the projector MLP after it): x + pos_embedding[:T], the blocks with
    c = the embedded actions, the final LayerNorm, pred_proj."""
    T = emb.shape[1]
    x = emb + P["pred.pos_embed"][:T]
    c = embedder(P, act)
    for i in range(cfg["layers"]):
        x = conditional_block(P, "pred.blk.%d" % i, x, c, cfg["heads"], cfg["head_dim"])
    x = layer_norm(x, P["pred.norm.weight"], P["pred.norm.bias"], LN_EPS)
    return linear(gelu(linear(x, P["pred.proj.0.weight"], P["pred.proj.0.bias"])),
                  P["pred.proj.2.weight"], P["pred.proj.2.bias"])


def rollout(P, cfg, emb, act, steps):
    """Append the last prediction as the next embedding; slide a window of n_frames."""
    seq = [emb[:, t] for t in range(emb.shape[1])]
    out = []
    for s in range(steps):
        L = len(seq)
        w = min(L, cfg["n_frames"])
        e = np.stack(seq[L - w:], 1)
        p = predictor(P, cfg, e, act[:, L - w:L])[:, -1]
        out.append(p)
        seq.append(p)
    return np.stack(out, 1)


# ---- the planner: CEM with jepa.c's documented random stream ---------------------------

M64 = (1 << 64) - 1


class SplitMix64:
    """splitmix64, a uniform from the top 53 bits, Box-Muller from two uniforms (plan.h)."""

    def __init__(self, seed):
        self.s = seed & M64

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * 2.0 ** -53

    def normal(self):
        import math
        u, v = self.uniform(), self.uniform()
        if u <= 0.0:
            u = 1e-300
        return math.sqrt(-2.0 * math.log(u)) * math.cos(6.283185307179586 * v)


def cem(P, cfg, hist, past, goal, H, N, iters, K, std0, seed):
    """The planner of models/plan.c, in float64 (candidates rounded to float32 as there)."""
    T, A = hist.shape[0], cfg["action_dim"]
    rng = SplitMix64(seed)
    mean, sd = np.zeros(H * A), np.full(H * A, std0)
    best = []
    for _ in range(iters):
        cands = np.empty((N, H * A), np.float32)
        for n in range(N):
            for i in range(H * A):
                cands[n, i] = np.float32(mean[i] + sd[i] * rng.normal())
        acts = np.concatenate([np.repeat(past[None], N, 0), cands.reshape(N, H, A)], 1).astype(np.float64)
        traj = rollout(P, cfg, np.repeat(hist[None], N, 0), acts, H)
        e = np.abs(traj[:, -1] - goal).mean(-1)
        order = sorted(range(N), key=lambda n: (e[n], n))
        best.append(e[order[0]])
        el = cands[order[:K]].astype(np.float64)
        mean = el.mean(0)
        sd = el.std(0, ddof=1) if K > 1 else np.zeros(H * A)
    plan = mean.astype(np.float32)
    acts = np.concatenate([past, plan.reshape(H, A)], 0)[None].astype(np.float64)
    final = np.abs(rollout(P, cfg, hist[None], acts, H)[0, -1] - goal).mean()
    return plan.reshape(H, A), np.array(best), final


# ---- weights and the GGUF ------------------------------------------------------------

def make_weights(cfg, rng):
    D, F, hd, H = cfg["D"], cfg["ffn"], cfg["head_dim"], cfg["heads"]
    inner = H * hd
    P = {}

    def lin(name, n_out, n_in, bias=True, gain=1.0):
        P[name + ".weight"] = (gain * rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32)
        if bias:
            P[name + ".bias"] = (0.1 * rng.standard_normal(n_out)).astype(np.float32)

    def norm(name, d):
        P[name + ".weight"] = (1 + 0.25 * rng.standard_normal(d)).astype(np.float32)
        P[name + ".bias"] = (0.1 * rng.standard_normal(d)).astype(np.float32)

    g = cfg["img"] // cfg["patch"]
    lin("enc.patch_embed", D, 3 * cfg["patch"] ** 2)
    P["enc.pos_embed"] = (0.5 * rng.standard_normal((1 + g * g, D))).astype(np.float32)
    P["enc.cls_token"] = (0.5 * rng.standard_normal(D)).astype(np.float32)
    for i in range(cfg["enc_layers"]):
        p = "enc.blk.%d" % i
        norm(p + ".ln1", D)
        lin(p + ".attn_qkv", 3 * D, D)
        lin(p + ".attn_out", D, D)
        norm(p + ".ln2", D)
        lin(p + ".ffn_up", cfg["enc_ffn"], D)
        lin(p + ".ffn_down", D, cfg["enc_ffn"])
    norm("enc.norm", D)
    lin("enc.proj.0", cfg["proj_hidden"], D)
    lin("enc.proj.2", D, cfg["proj_hidden"])

    P["pred.pos_embed"] = (0.5 * rng.standard_normal((cfg["n_frames"], D))).astype(np.float32)
    lin("pred.action_embed.0", 4 * D, cfg["action_dim"])
    lin("pred.action_embed.2", D, 4 * D)
    for i in range(cfg["layers"]):
        p = "pred.blk.%d" % i
        lin(p + ".adaln", 6 * D, D, gain=0.6)      # gates, scales and shifts of order 0.5
        norm(p + ".ln1", D)
        lin(p + ".attn_qkv", 3 * inner, D, bias=False, gain=2.0)   # peaked attention
        lin(p + ".attn_out", D, inner)
        norm(p + ".ln2", D)
        lin(p + ".ffn_up", F, D)
        lin(p + ".ffn_down", D, F)
    norm("pred.norm", D)
    lin("pred.proj.0", cfg["pred_hidden"], D)
    lin("pred.proj.2", D, cfg["pred_hidden"])
    return P


def write_gguf(path, name, cfg, P):
    w = gguf.GGUFWriter(path, arch="jepa")
    D = cfg["D"]
    kv = [
        ("general.name", "str", name), ("general.license", "str", "mit"),
        ("general.source_url", "str", "tests/gen/gen_lewm.py (random weights)"),
        ("general.file_type", "u32", 0), ("jepa.schema_version", "u32", 1),
        ("jepa.family", "str", "lewm"), ("jepa.modality", "str", "image"),
        ("jepa.enc.embed_dim", "u32", D), ("jepa.enc.n_layer", "u32", cfg["enc_layers"]),
        ("jepa.enc.n_head", "u32", cfg["enc_heads"]), ("jepa.enc.ffn_dim", "u32", cfg["enc_ffn"]),
        ("jepa.enc.patch_size", "u32", cfg["patch"]), ("jepa.enc.tubelet_size", "u32", 1),
        ("jepa.enc.img_size", "u32", cfg["img"]), ("jepa.enc.n_frames", "u32", 1), ("jepa.enc.in_chans", "u32", 3),
        ("jepa.enc.ln_eps", "f32", ENC_EPS), ("jepa.enc.act", "str", "gelu_erf"),
        ("jepa.enc.pos_type", "str", "learned"), ("jepa.enc.cls_token", "bool", True),
        ("jepa.enc.n_registers", "u32", 0), ("jepa.enc.qkv_fused", "bool", True),
        ("jepa.enc.proj_act", "str", "gelu_erf"),
        ("jepa.pred.kind", "str", "lewm"), ("jepa.pred.embed_dim", "u32", D),
        ("jepa.pred.n_layer", "u32", cfg["layers"]), ("jepa.pred.n_head", "u32", cfg["heads"]),
        ("jepa.pred.head_dim", "u32", cfg["head_dim"]), ("jepa.pred.ffn_dim", "u32", cfg["ffn"]),
        ("jepa.pred.out_dim", "u32", D), ("jepa.pred.n_frames", "u32", cfg["n_frames"]),
        ("jepa.pred.action_dim", "u32", cfg["action_dim"]), ("jepa.pred.state_dim", "u32", 0),
        ("jepa.pred.ln_eps", "f32", LN_EPS), ("jepa.pred.adaln_eps", "f32", ADALN_EPS),
        ("jepa.pred.act", "str", "gelu_erf"), ("jepa.pred.qkv_bias", "bool", False),
        ("jepa.pred.action_act", "str", "silu"), ("jepa.pred.proj_act", "str", "gelu_erf"),
        ("jepa.head.kind", "str", "none"),
        ("jepa.pre.mean", "f32arr", [0.485, 0.456, 0.406]), ("jepa.pre.std", "f32arr", [0.229, 0.224, 0.225]),
        ("jepa.pre.resize_short", "u32", cfg["img"]), ("jepa.pre.crop", "u32", cfg["img"]),
        ("jepa.pre.resample", "str", "bilinear"), ("jepa.pre.resize_mode", "str", "squash"),
        ("jepa.pre.rescale", "f32", 1.0 / 255.0),
    ]
    for k, kind, v in kv:
        {"u32": lambda: w.add_uint32(k, int(v)), "f32": lambda: w.add_float32(k, float(v)),
         "bool": lambda: w.add_bool(k, bool(v)), "str": lambda: w.add_string(k, v),
         "f32arr": lambda: w.add_array(k, [float(x) for x in v])}[kind]()
    for n, arr in P.items():
        w.add_tensor(n, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def cos_rel(a, b):
    a, b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    return cos.min(), np.abs(a - b).max() / np.abs(b).max()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "data", "lewm_wm"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    meta = {"generator": "tests/gen/gen_lewm.py", "configs": {}, "files": {},
            "versions": {"python": sys.version.split()[0], "numpy": version("numpy"), "gguf": version("gguf")}}
    ok = True
    for tag, cfg in CONFIGS.items():
        rng = np.random.default_rng(cfg["seed"])
        P = make_weights(cfg, rng)
        write_gguf(os.path.join(args.out, "model_%s.gguf" % tag), "lewm-tiny-random-%s" % tag, cfg, P)
        P64 = {k: v.astype(np.float64) for k, v in P.items()}
        emb = rng.standard_normal((cfg["B"], cfg["T"], cfg["D"])).astype(np.float32)
        act = rng.standard_normal((cfg["B"], cfg["T"], cfg["action_dim"])).astype(np.float32)
        pred = predictor(P64, cfg, emb.astype(np.float64), act.astype(np.float64))
        T0, K = cfg["roll_T"], cfg["roll_steps"]
        r_emb = rng.standard_normal((cfg["B"], T0, cfg["D"])).astype(np.float32)
        r_act = rng.standard_normal((cfg["B"], T0 + K - 1, cfg["action_dim"])).astype(np.float32)
        traj = rollout(P64, cfg, r_emb.astype(np.float64), r_act.astype(np.float64), K)
        files = {"emb": emb, "actions": act, "pred": pred.astype(np.float32),
                 "rollout_emb": r_emb, "rollout_actions": r_act, "traj": traj.astype(np.float32)}
        for n, a in files.items():
            fn = "%s_%s.npy" % (n, tag)
            np.save(os.path.join(args.out, fn), a)
            meta["files"][fn] = {"shape": list(a.shape), "dtype": str(a.dtype)}
        meta["configs"][tag] = cfg

        # structure of the reference itself: causal rows, and rollout step 0 = predict
        e2, a2 = emb.astype(np.float64).copy(), act.astype(np.float64).copy()
        e2[:, -1] += rng.standard_normal(e2[:, -1].shape)
        a2[:, -1] *= 3.0
        p2 = predictor(P64, cfg, e2, a2)
        causal = np.abs(p2[:, :-1] - pred[:, :-1]).max()
        changed = np.abs(p2[:, -1] - pred[:, -1]).max()
        step0 = predictor(P64, cfg, r_emb.astype(np.float64), r_act[:, :T0].astype(np.float64))[:, -1]
        s0 = np.abs(step0 - traj[:, 0]).max()
        c_ok = causal < 1e-12 and changed > 1e-3 and s0 < 1e-12
        print("config %s: pred %s, traj %s; causal prefix %.1e (last row moved %.2f), rollout step 0 %.1e  %s"
              % (tag, pred.shape, traj.shape, causal, changed, s0, "ok" if c_ok else "FAIL"))
        ok &= bool(c_ok)
        # the planner: a goal reached by known actions from a 2-frame history
        if tag == "a":
            H, N, I, K = 2, 24, 4, 6
            hist = r_emb[0, :2].astype(np.float64)
            past = r_act[0, :1].astype(np.float32)
            known = rng.standard_normal((H, cfg["action_dim"])).astype(np.float32)
            acts = np.concatenate([past, known], 0)[None].astype(np.float64)
            goal = rollout(P64, cfg, hist[None], acts, H)[0, -1].astype(np.float32)
            plan, best, final = cem(P64, cfg, hist, past, goal.astype(np.float64), H, N, I, K, 1.0, 77)
            for n, a in {"plan_hist": hist.astype(np.float32), "plan_past": past, "plan_goal": goal,
                         "plan_actions": plan, "plan_energies": best.astype(np.float32),
                         "plan_final": np.array([final], np.float32)}.items():
                np.save(os.path.join(args.out, "%s_%s.npy" % (n, tag)), a)
            meta["plan_a"] = {"horizon": H, "samples": N, "iterations": I, "elites": K, "init_std": 1.0, "seed": 77}
            print("  plan: best energy per iteration %s, final %.4f" % (np.round(best, 4), final))
            r = SplitMix64(1234)
            np.save(os.path.join(args.out, "rng_normals_seed1234.npy"), np.array([r.normal() for _ in range(16)]))
        # the float32 rounding of the stored reference against the float64 one
        c, r = cos_rel(pred.astype(np.float32).astype(np.float64), pred)
        print("  stored pred: min cos %.9f, rel %.1e (float32 rounding)" % (c, r))
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
