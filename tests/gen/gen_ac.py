#!/usr/bin/env python3
"""gen_ac.py - tiny random V-JEPA 2-AC predictors (jepa.pred.kind = ac) as schema-v1 GGUFs
and the outputs of a float64 numpy transcription of Meta's VisionTransformerPredictorAC
(facebookresearch/vjepa2 src/models/ac_predictor.py with ACBlock / ACRoPEAttention /
build_action_block_causal_attention_mask of src/models/utils/modules.py: per frame the
action and the state token lead the frame's patch tokens, frame-causal attention over
those groups, the depth part of the 3-D RoPE on the action / state tokens, all three
axes on the patch tokens, Meta's repeat(1,1,1,2) frequency table).

The encoder of each file is vjepa2_tiny's (tests/data/vjepa2_tiny/model.gguf, copied, with
jepa.enc.n_frames = 8: the predictor takes 4 frames, as Meta's takes num_frames /
tubelet_size); the predictor is new. Config a (7-d actions and states) also gets:
- Meta's pose rule (compute_new_pose of notebooks/utils/mpc_utils.py, through scipy's
  Rotation, as there) on random and gimbal-locked states: pose_*.npy;
- a rollout as Meta's WorldModel steps it (predict, the last frame's tokens layer-normed,
  the pose rule for its state), 4 steps from 2 frames so the 4-frame window slides:
  rollout_*.npy;
- a CEM plan with jepa.c's random stream (gen_lewm.SplitMix64) and Meta's action box,
  momentum and gripper deadband: plan_*.npy.
No torch: numpy, scipy and gguf (PyPI) only.

    /tmp/v/bin/python tests/gen/gen_ac.py          # writes tests/data/ac_wm/
"""
import argparse
import json
import os
import sys
from importlib.metadata import version

import numpy as np
import gguf
from scipy.spatial.transform import Rotation

from gen_lewm import SplitMix64

HERE = os.path.dirname(__file__)
SRC = os.path.join(HERE, "..", "data", "vjepa2_tiny", "model.gguf")
EPS = 1e-6
MAX_FRAMES = 4   # the predictor's frames: jepa.enc.n_frames / tubelet_size = 8 / 2

# pd, heads, layers, ffn, grid (tokens per frame = grid^2), frames, action / state dims
CONFIGS = {
    "a": dict(pd=64, heads=2, layers=2, ffn=256, grid=4, img=64, F=2, A=7, S=7, seed=11),
    "b": dict(pd=48, heads=1, layers=1, ffn=96, grid=3, img=48, F=3, A=4, S=3, seed=22),
}


def gelu(x):
    from math import erf
    return 0.5 * x * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w + b


def linear(x, W, b):
    return x @ W.T + b


def rotate(x, pos):
    """rotate_queries_or_keys: x [..., N, D] (D even), pos [N]; Meta's tiled table."""
    D = x.shape[-1]
    omega = np.arange(D // 2, dtype=np.float64) / (D / 2.0)
    omega = 1.0 / 10000 ** omega
    freq = np.asarray(pos, np.float64)[:, None] * omega[None, :]
    s, c = np.tile(np.sin(freq), 2), np.tile(np.cos(freq), 2)
    y = x.reshape(*x.shape[:-1], D // 2, 2)
    y = np.stack([-y[..., 1], y[..., 0]], -1).reshape(x.shape)
    return x * c + y * s


def ac_attention(P, pfx, x, F, g, heads):
    """ACRoPEAttention.forward with action_tokens = 2, no mask, frame-causal attn_mask."""
    N, C = x.shape
    hd = C // heads
    dd = 2 * ((hd // 3) // 2)
    NT = 2 + g * g
    xv = x.reshape(F, NT, C)
    ids = np.arange(F * g * g)
    d_pos, h_pos, w_pos = ids // (g * g), (ids % (g * g)) // g, ids % g   # grid_size / H = 1

    def qkv_of(t):   # t [n, C] -> q, k, v [heads, n, hd]
        y = linear(t, P[pfx + ".attn_qkv.weight"], P[pfx + ".attn_qkv.bias"])
        return [y[:, i * C:(i + 1) * C].reshape(-1, heads, hd).transpose(1, 0, 2) for i in range(3)]

    act_q, act_k, act_v = [], [], []
    for i in range(2):   # the action, then the state token of every frame
        q, k, v = qkv_of(xv[:, i])
        q = np.concatenate([rotate(q[..., :dd], np.arange(F)), q[..., dd:]], -1)
        k = np.concatenate([rotate(k[..., :dd], np.arange(F)), k[..., dd:]], -1)
        act_q.append(q), act_k.append(k), act_v.append(v)
    q, k, v = qkv_of(xv[:, 2:].reshape(-1, C))
    parts_q, parts_k, s = [], [], 0
    for pos in (d_pos, h_pos, w_pos):
        parts_q.append(rotate(q[..., s:s + dd], pos)), parts_k.append(rotate(k[..., s:s + dd], pos))
        s += dd
    q = np.concatenate(parts_q + [q[..., s:]], -1)
    k = np.concatenate(parts_k + [k[..., s:]], -1)

    def merge(tx, ta):   # [heads, F*g*g, hd] + 2 x [heads, F, hd] -> [heads, F*NT, hd]
        tx = tx.reshape(heads, F, g * g, hd)
        ta = np.stack(ta, 2)   # [heads, F, 2, hd]
        return np.concatenate([ta, tx], 2).reshape(heads, F * NT, hd)

    q, k, v = merge(q, act_q), merge(k, act_k), merge(v, act_v)
    frame = np.arange(F * NT) // NT
    mask = frame[:, None] >= frame[None, :]          # build_action_block_causal_attention_mask
    sc = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
    sc = np.where(mask, sc, -np.inf)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ v).transpose(1, 0, 2).reshape(F * NT, C)
    return linear(o, P[pfx + ".attn_out.weight"], P[pfx + ".attn_out.bias"])


def ac_predictor(P, cfg, tokens, actions, states):
    """VisionTransformerPredictorAC.forward (B = 1, no extrinsics)."""
    F, g, pd = cfg["F"], cfg["grid"], cfg["pd"]
    x = linear(tokens, P["pred.embed.weight"], P["pred.embed.bias"]).reshape(F, g * g, pd)
    s = linear(states, P["pred.state_embed.weight"], P["pred.state_embed.bias"])[:, None]
    a = linear(actions, P["pred.action_embed.weight"], P["pred.action_embed.bias"])[:, None]
    x = np.concatenate([a, s, x], 1).reshape(-1, pd)
    for i in range(cfg["layers"]):
        pfx = "pred.blk.%d" % i
        x = x + ac_attention(P, pfx, layer_norm(x, P[pfx + ".ln1.weight"], P[pfx + ".ln1.bias"]), F, g, cfg["heads"])
        y = layer_norm(x, P[pfx + ".ln2.weight"], P[pfx + ".ln2.bias"])
        x = x + linear(gelu(linear(y, P[pfx + ".ffn_up.weight"], P[pfx + ".ffn_up.bias"])),
                       P[pfx + ".ffn_down.weight"], P[pfx + ".ffn_down.bias"])
    x = x.reshape(F, 2 + g * g, pd)[:, 2:].reshape(-1, pd)
    x = layer_norm(x, P["pred.norm.weight"], P["pred.norm.bias"])
    return linear(x, P["pred.proj.weight"], P["pred.proj.bias"])


def new_pose(pose, action):
    """compute_new_pose for one float32 pose and action, as Meta computes it."""
    pose, action = pose[None].astype(np.float32), action[None].astype(np.float32)
    xyz = pose[:, :3] + action[:, :3]
    m = Rotation.from_euler("xyz", pose[0, 3:6], degrees=False).as_matrix()
    d = Rotation.from_euler("xyz", action[0, 3:6], degrees=False).as_matrix()
    ang = Rotation.from_matrix(d @ m).as_euler("xyz", degrees=False)[None]
    grip = np.clip(pose[:, -1:] + action[:, -1:], 0, 1)
    return np.concatenate([xyz, ang, grip], -1)[0].astype(np.float32)


def plain_ln(x):
    """F.layer_norm(x, (d,)): no weight, eps 1e-5 (Meta's normalize_reps)."""
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)


def ac_rollout(P, cfg, tokens, states, actions, steps):
    """WorldModel.infer_next_action's step_predictor, repeated; the window slides past
    MAX_FRAMES frames (jepa.c's extension: Meta's planner never gets that far)."""
    N, T = cfg["grid"] ** 2, states.shape[0]
    toks = [tokens[f * N:(f + 1) * N] for f in range(T)]
    sts = [s.astype(np.float32) for s in states]
    traj, tstates = [], []
    for k in range(steps):
        L = T + k
        w = min(L, MAX_FRAMES)
        t0 = L - w
        pred = ac_predictor(P, dict(cfg, F=w), np.concatenate(toks[t0:L]), actions[t0:L].astype(np.float64),
                            np.stack(sts[t0:L]).astype(np.float64))
        nxt = plain_ln(pred[-N:])
        ns = new_pose(sts[L - 1], actions[L - 1])
        toks.append(nxt), sts.append(ns), traj.append(nxt), tstates.append(ns)
    return np.concatenate(traj), np.stack(tstates)


# Meta's Franka action box (jepa_plan_ac_default_params): lo, hi, init_std, deadband
FRANKA = [(-0.05, 0.05, 0.05, 0.0)] * 3 + [(0.0, 0.0, 0.0, 0.0)] * 3 + [(-0.75, 0.75, 1.0, 0.25)]


def ac_cem(P, cfg, tokens, states, goal, H, N, iters, K, momentum, seed):
    """The planner of models/plan.c over the AC rollout, in float64 (candidates rounded to
    float32 as there); a held component (lo == hi) draws no normal."""
    A, f32 = 7, np.float32
    rng = SplitMix64(seed)
    mean = np.zeros(H * A)
    sd = np.array([FRANKA[i % A][2] for i in range(H * A)], np.float64)
    T = states.shape[0]

    def clip(x, i):
        lo, hi = FRANKA[i % A][:2]
        return f32(lo) if lo == hi else min(max(x, f32(lo)), f32(hi))

    def energy(cand):
        traj, _ = ac_rollout(P, cfg, tokens, states, cand.reshape(H, A), H)
        return np.abs(traj[-cfg["grid"] ** 2:] - goal).mean()

    best = []
    for _ in range(iters):
        cands = np.empty((N, H * A), np.float32)
        for n in range(N):
            for i in range(H * A):
                lo, hi = FRANKA[i % A][:2]
                cands[n, i] = f32(lo) if lo == hi else clip(f32(mean[i] + sd[i] * rng.normal()), i)
        e = np.array([energy(cands[n]) for n in range(N)])
        order = sorted(range(N), key=lambda n: (e[n], n))
        best.append(e[order[0]])
        el = cands[order[:K]].astype(np.float64)
        mean = (1 - momentum) * el.mean(0) + momentum * mean
        sd = (1 - momentum) * el.std(0, ddof=1) + momentum * sd
    plan = np.array([clip(f32(mean[i]), i) for i in range(H * A)], np.float32)
    for i in range(H * A):
        if abs(plan[i]) < FRANKA[i % A][3]:
            plan[i] = 0
    return plan.reshape(H, A), np.array(best), energy(plan)


def copy_encoder(reader, w, cfg, D):
    """Every key and encoder tensor of vjepa2_tiny; the predictor keys replaced."""
    skip_keys = ("GGUF.", "general.architecture", "jepa.pred.", "jepa.head.")
    for name, f in reader.fields.items():
        if name.startswith(skip_keys):
            continue
        t = f.types[0]
        if name == "jepa.enc.img_size":
            w.add_uint32(name, cfg["img"])
        elif name == "jepa.enc.n_frames":
            w.add_uint32(name, 2 * MAX_FRAMES)
        elif t == gguf.GGUFValueType.ARRAY:
            sub = f.types[1]
            vals = [bytes(f.parts[i]).decode() if sub == gguf.GGUFValueType.STRING else f.parts[i][0].item()
                    for i in f.data]
            w.add_key_value(name, vals, t, sub_type=sub)
        elif t == gguf.GGUFValueType.STRING:
            w.add_key_value(name, bytes(f.parts[f.data[0]]).decode(), t)
        else:
            w.add_key_value(name, f.parts[f.data[0]][0].item(), t)
    for t in reader.tensors:
        if t.name.startswith(("pred.", "head.")):
            continue
        w.add_tensor(t.name, np.array(t.data))


def extras(P, cfg, D, rng, out, meta):
    """The pose rule, a rollout and a plan for config a (7-d actions and states)."""
    N = cfg["grid"] ** 2
    files = {}
    # the pose rule: random states and actions, then two gimbal-locked states (float32
    # pi / 2 is within scipy's 1e-7 of the lock) with no rotation in the action
    n = 48
    ps = np.concatenate([rng.standard_normal((n, 3)), rng.uniform(-3.1, 3.1, (n, 1)), rng.uniform(-1.5, 1.5, (n, 1)),
                         rng.uniform(-3.1, 3.1, (n, 1)), rng.uniform(0, 1, (n, 1))], 1).astype(np.float32)
    pa = np.concatenate([0.05 * rng.standard_normal((n, 3)), 0.3 * rng.standard_normal((n, 3)),
                         0.6 * rng.standard_normal((n, 1))], 1).astype(np.float32)
    lock = np.array([[0.1, 0.2, 0.3, 0.3, np.pi / 2, 0.2, 0.5], [0.1, 0.2, 0.3, 0.3, -np.pi / 2, 0.2, 0.5]], np.float32)
    ps = np.concatenate([ps, lock])
    pa = np.concatenate([pa, np.zeros((2, 7), np.float32)])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # scipy warns at the gimbal lock it resolves
        po = np.stack([new_pose(ps[i], pa[i]) for i in range(len(ps))])
    files.update(pose_states=ps, pose_actions=pa, pose_next=po)
    # a rollout: 2 frames of history (layer-normed tokens, as Meta's encode gives), 4 steps
    T, K = 2, 4
    tok = plain_ln(rng.standard_normal((T * N, D))).astype(np.float32)
    st = np.concatenate([0.2 * rng.standard_normal((T, 6)), rng.uniform(0, 1, (T, 1))], 1).astype(np.float32)
    act = np.concatenate([0.05 * rng.standard_normal((T + K - 1, 3)), 0.2 * rng.standard_normal((T + K - 1, 3)),
                          0.5 * rng.standard_normal((T + K - 1, 1))], 1).astype(np.float32)
    traj, tst = ac_rollout(P, cfg, tok.astype(np.float64), st, act, K)
    files.update(rollout_tokens=tok, rollout_states=st, rollout_actions=act, rollout_traj=traj.astype(np.float32),
                 rollout_traj_states=tst)
    # a plan from one frame toward the frame a known action reaches in 2 steps
    H, NS, I, KE, mom, seed = 2, 24, 3, 6, 0.15, 1234
    tok1, st1 = tok[:N], st[:1]
    known = np.array([[0.03, -0.02, 0.04, 0, 0, 0, 0.5], [0.02, 0.03, -0.01, 0, 0, 0, 0.5]], np.float32)
    gtraj, _ = ac_rollout(P, cfg, tok1.astype(np.float64), st1, known, H)
    goal = gtraj[-N:].astype(np.float32)
    plan, best, final = ac_cem(P, cfg, tok1.astype(np.float64), st1, goal.astype(np.float64), H, NS, I, KE, mom, seed)
    files.update(plan_tokens=tok1, plan_states=st1, plan_goal=goal, plan_actions=plan,
                 plan_energies=best.astype(np.float32), plan_final=np.array([final], np.float32))
    meta["plan_a"] = {"horizon": H, "samples": NS, "iterations": I, "elites": KE, "momentum": mom, "seed": seed,
                      "components": "Meta's Franka box (FRANKA)"}
    print("  pose rule: %d cases; rollout %s -> traj %s; plan: best energy per iteration %s, final %.4f, plan %s"
          % (len(ps), tok.shape, traj.shape, np.round(best, 4), final, np.round(plan, 4).tolist()))
    for name, a in files.items():
        fn = "%s_a.npy" % name
        np.save(os.path.join(out, fn), a)
        meta["files"][fn] = {"shape": list(a.shape), "dtype": str(a.dtype)}
    return bool(np.isfinite(traj).all() and best[-1] <= best[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "ac_wm"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    reader = gguf.GGUFReader(SRC)
    D = int(reader.fields["jepa.enc.embed_dim"].parts[reader.fields["jepa.enc.embed_dim"].data[0]][0])
    meta = {"generator": "tests/gen/gen_ac.py", "configs": CONFIGS, "files": {},
            "versions": {"python": sys.version.split()[0], "numpy": version("numpy"), "gguf": version("gguf"),
                         "scipy": version("scipy")}}
    ok = True
    for tag, cfg in CONFIGS.items():
        rng = np.random.default_rng(cfg["seed"])
        pd, F, g = cfg["pd"], cfg["F"], cfg["grid"]
        P = {}

        def lin(name, n_out, n_in, gain=1.0):
            P[name + ".weight"] = (gain * rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32)
            P[name + ".bias"] = (0.1 * rng.standard_normal(n_out)).astype(np.float32)

        def norm(name, d):
            P[name + ".weight"] = (1 + 0.25 * rng.standard_normal(d)).astype(np.float32)
            P[name + ".bias"] = (0.1 * rng.standard_normal(d)).astype(np.float32)

        lin("pred.embed", pd, D)
        lin("pred.action_embed", pd, cfg["A"])
        lin("pred.state_embed", pd, cfg["S"])
        for i in range(cfg["layers"]):
            p = "pred.blk.%d" % i
            norm(p + ".ln1", pd)
            lin(p + ".attn_qkv", 3 * pd, pd, gain=2.0)   # peaked attention: the mask and RoPE matter
            lin(p + ".attn_out", pd, pd)
            norm(p + ".ln2", pd)
            lin(p + ".ffn_up", cfg["ffn"], pd)
            lin(p + ".ffn_down", pd, cfg["ffn"])
        norm("pred.norm", pd)
        lin("pred.proj", D, pd)

        path = os.path.join(args.out, "model_%s.gguf" % tag)
        w = gguf.GGUFWriter(path, arch="jepa")
        copy_encoder(reader, w, cfg, D)
        for k, v in [("jepa.pred.kind", "ac"), ("jepa.pred.act", "gelu_erf"), ("jepa.pred.rope_freq_layout", "tiled"),
                     ("jepa.head.kind", "none")]:
            w.add_string(k, v)
        for k, v in [("jepa.pred.embed_dim", pd), ("jepa.pred.n_layer", cfg["layers"]), ("jepa.pred.n_head", cfg["heads"]),
                     ("jepa.pred.ffn_dim", cfg["ffn"]), ("jepa.pred.out_dim", D), ("jepa.pred.grid_size", g),
                     ("jepa.pred.action_dim", cfg["A"]), ("jepa.pred.state_dim", cfg["S"])]:
            w.add_uint32(k, v)
        w.add_bool("jepa.pred.rope_interpolate", False)
        w.add_bool("jepa.pred.frame_causal", True)
        w.add_bool("jepa.pred.qkv_bias", True)
        w.add_float32("jepa.pred.ln_eps", EPS)
        for n, arr in P.items():
            w.add_tensor(n, arr)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()

        P64 = {k: v.astype(np.float64) for k, v in P.items()}
        tokens = rng.standard_normal((F * g * g, D)).astype(np.float32)
        actions = rng.standard_normal((F, cfg["A"])).astype(np.float32)
        states = rng.standard_normal((F, cfg["S"])).astype(np.float32)
        pred = ac_predictor(P64, cfg, tokens.astype(np.float64), actions.astype(np.float64), states.astype(np.float64))
        # causality of the reference: the last frame's inputs changed, earlier frames' rows kept
        t2, a2, s2 = tokens.astype(np.float64), actions.astype(np.float64), states.astype(np.float64)
        t2[-g * g:] += 1.0
        a2[-1] *= -2.0
        s2[-1] += 0.5
        p2 = ac_predictor(P64, cfg, t2, a2, s2)
        kept = np.abs(p2[:-g * g] - pred[:-g * g]).max() if F > 1 else 0.0
        moved = np.abs(p2[-g * g:] - pred[-g * g:]).max()
        c_ok = kept < 1e-12 and moved > 1e-3
        ok &= bool(c_ok)
        print("config %s: tokens %s -> pred %s; earlier frames kept %.1e, last moved %.2f  %s"
              % (tag, tokens.shape, pred.shape, kept, moved, "ok" if c_ok else "FAIL"))
        for n, a in {"tokens": tokens, "actions": actions, "states": states, "pred": pred.astype(np.float32)}.items():
            fn = "%s_%s.npy" % (n, tag)
            np.save(os.path.join(args.out, fn), a)
            meta["files"][fn] = {"shape": list(a.shape), "dtype": str(a.dtype)}
        if tag == "a":
            ok &= extras(P64, cfg, D, rng, args.out, meta)
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
