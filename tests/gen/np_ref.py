"""Independent float64 numpy forward of a schema-v1 V-JEPA 2 GGUF (encoder, masked predictor,
attentive-pool head), used to check the fixtures in tests/data/hf_vjepa2/.

It reads ONLY the GGUF (with the `gguf` package) plus the input / id arrays, never the torch model,
and follows the schema (gguf-schema-v1.md) and the V-JEPA 2 notes (§2 head forward, §4 RoPE):
patchify C-T-H-W, pre-LN blocks with fused [q;k;v], 3-D RoPE (tiled or interleaved, 20/20/20 + rest
pass-through for head_dim 64), predictor = embed(ctx) ++ mask_tokens[mask_index] at the target ids,
attentive pooler = self-attention blocks, then cross-attention of the raw query (no out-proj).

Rerun the checks of the committed fixtures (needs numpy + gguf only):
    .venv-gen/bin/python tests/gen/np_ref.py tests/data/hf_vjepa2
tests/gen/gen_hf_vjepa2.py imports this module and runs the same checks after generating.
"""
import math
import os
import sys

import numpy as np

import gguf

_erf = np.vectorize(math.erf, otypes=[np.float64])


# ---------------------------------------------------------------- GGUF access
class Model:
    """Metadata dict + float64 tensors (in PyTorch row-major shape) of one GGUF file."""

    def __init__(self, path):
        r = gguf.GGUFReader(path)
        self.kv = {}
        for k, f in r.fields.items():
            if k.startswith("GGUF."):
                continue
            self.kv[k] = f.contents()
        self.t = {}
        self.dtype = {}
        for t in r.tensors:
            shape = [int(x) for x in reversed(list(t.shape))]  # ggml ne[] -> torch order
            a = np.asarray(t.data)
            if t.tensor_type == gguf.GGMLQuantizationType.F32:
                a = a.astype(np.float64)
            elif t.tensor_type == gguf.GGMLQuantizationType.F16:
                a = a.view(np.float16).astype(np.float64)
            else:
                raise ValueError(f"{t.name}: unsupported tensor type {t.tensor_type.name}")
            self.t[t.name] = a.reshape(shape)
            self.dtype[t.name] = t.tensor_type.name

    def __getitem__(self, name):
        return self.t[name]

    def get(self, key, default=None):
        return self.kv.get(key, default)


# ---------------------------------------------------------------- building blocks
def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_erf(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def linear(x, m, name):
    return x @ m[name + ".weight"].T + m[name + ".bias"]


def rope_tables(ids, grid_hw, head_dim, theta, layout):
    """COS, SIN [N, head_dim] for token ids on a T x grid_hw x grid_hw grid (schema §4).

    Segments [0,d) frame, [d,2d) height, [2d,3d) width, d = 2*((head_dim//3)//2); the rest passes
    through (cos 1, sin 0). layout 'tiled' = [f0..f_{d/2-1}, f0..f_{d/2-1}] (V-JEPA 2 / HF),
    'interleaved' = [f0,f0,f1,f1,...] (textbook, V-JEPA 2.1)."""
    ids = np.asarray(ids, dtype=np.int64)
    per_frame = grid_hw * grid_hw
    t = ids // per_frame
    h = (ids % per_frame) // grid_hw
    w = ids % grid_hw
    d = 2 * ((head_dim // 3) // 2)
    omega = 1.0 / theta ** (np.arange(d // 2, dtype=np.float64) / (d / 2.0))
    cos = np.ones((len(ids), head_dim))
    sin = np.zeros((len(ids), head_dim))
    for s, pos in enumerate((t, h, w)):
        f = pos[:, None].astype(np.float64) * omega[None, :]  # [N, d/2]
        if layout == "tiled":
            f = np.concatenate([f, f], axis=1)
        elif layout == "interleaved":
            f = np.repeat(f, 2, axis=1)
        else:
            raise ValueError(layout)
        cos[:, s * d:(s + 1) * d] = np.cos(f)
        sin[:, s * d:(s + 1) * d] = np.sin(f)
    return cos, sin


def apply_rope(x, cos, sin):
    """x [H, N, hd]; out = x*COS + rot90(x)*SIN, rot90 on adjacent pairs (x[2k], x[2k+1])."""
    r = np.empty_like(x)
    r[..., 0::2] = -x[..., 1::2]
    r[..., 1::2] = x[..., 0::2]
    return x * cos + r * sin


def mha(q, k, v, n_head):
    """q [Nq, D], k/v [Nk, D] (already projected, RoPE applied by caller if any)."""
    Nq, D = q.shape
    hd = D // n_head
    qh = q.reshape(Nq, n_head, hd).transpose(1, 0, 2)
    kh = k.reshape(-1, n_head, hd).transpose(1, 0, 2)
    vh = v.reshape(-1, n_head, hd).transpose(1, 0, 2)
    a = softmax(qh @ kh.transpose(0, 2, 1) / math.sqrt(hd))
    return (a @ vh).transpose(1, 0, 2).reshape(Nq, D)


def block(x, m, p, n_head, eps, rope=None):
    """Pre-LN transformer block p = 'enc.blk.i' / 'pred.blk.i' / 'head.blk.i'.
    rope = (COS, SIN) [N, head_dim] or None (pooler blocks have no RoPE)."""
    N, D = x.shape
    hd = D // n_head
    h = layer_norm(x, m[p + ".ln1.weight"], m[p + ".ln1.bias"], eps)
    qkv = linear(h, m, p + ".attn_qkv")  # rows [q; k; v]
    q, k, v = qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:]
    if rope is not None:
        cos, sin = rope
        q = apply_rope(q.reshape(N, n_head, hd).transpose(1, 0, 2), cos, sin).transpose(1, 0, 2).reshape(N, D)
        k = apply_rope(k.reshape(N, n_head, hd).transpose(1, 0, 2), cos, sin).transpose(1, 0, 2).reshape(N, D)
    x = x + linear(mha(q, k, v, n_head), m, p + ".attn_out")
    h = layer_norm(x, m[p + ".ln2.weight"], m[p + ".ln2.bias"], eps)
    return x + linear(gelu_erf(linear(h, m, p + ".ffn_up")), m, p + ".ffn_down")


# ---------------------------------------------------------------- model parts
def encoder(m, video, layout=None):
    """video [C, T, H, W] -> tokens [N, D] after enc.norm."""
    C, T, H, W = video.shape
    P = m.get("jepa.enc.patch_size")
    tub = m.get("jepa.enc.tubelet_size")
    D = m.get("jepa.enc.embed_dim")
    nh = m.get("jepa.enc.n_head")
    eps = m.get("jepa.enc.ln_eps")
    layout = layout or m.get("jepa.enc.rope_freq_layout")
    gt, gh, gw = T // tub, H // P, W // P
    # HF decodes encoder ids on the square img_size/patch grid: only valid at that size.
    g = m.get("jepa.enc.img_size") // P
    assert gh == gw == g, "this reference only supports the training size (HF positions)"
    x = video.astype(np.float64).reshape(C, gt, tub, gh, P, gw, P)
    x = x.transpose(1, 3, 5, 0, 2, 4, 6).reshape(gt * gh * gw, C * tub * P * P)
    x = linear(x, m, "enc.patch_embed")
    rope = rope_tables(np.arange(x.shape[0]), g, D // nh, m.get("jepa.enc.rope_theta"), layout)
    for i in range(m.get("jepa.enc.n_layer")):
        x = block(x, m, f"enc.blk.{i}", nh, eps, rope)
    return layer_norm(x, m["enc.norm.weight"], m["enc.norm.bias"], eps)


def predictor(m, tokens, ctx_ids, tgt_ids, mask_index=1, layout=None):
    """tokens [N, D] (full encoder output) -> predictions [len(tgt_ids), out_dim], tgt_ids order."""
    nh = m.get("jepa.pred.n_head")
    eps = m.get("jepa.pred.ln_eps")
    Dp = m.get("jepa.pred.embed_dim")
    layout = layout or m.get("jepa.pred.rope_freq_layout")
    g = m.get("jepa.pred.grid_size")
    ctx = linear(np.asarray(tokens, np.float64)[ctx_ids], m, "pred.embed")
    mt = m["pred.mask_tokens"][mask_index % m.get("jepa.pred.n_mask_tokens")]
    tgt = np.repeat(mt[None, :], len(tgt_ids), axis=0)
    x = np.concatenate([ctx, tgt], axis=0)
    ids = np.concatenate([np.asarray(ctx_ids), np.asarray(tgt_ids)])
    rope = rope_tables(ids, g, Dp // nh, m.get("jepa.enc.rope_theta"), layout)
    for i in range(m.get("jepa.pred.n_layer")):
        x = block(x, m, f"pred.blk.{i}", nh, eps, rope)
    x = layer_norm(x, m["pred.norm.weight"], m["pred.norm.bias"], eps)
    return linear(x[len(ctx_ids):], m, "pred.proj")


def head(m, tokens, ln_eps=None):
    """Attentive-pool classifier (schema §2 'exact forward'): returns (pooled [D], logits [C])."""
    nh = m.get("jepa.head.n_head", m.get("jepa.enc.n_head"))
    eps = m.get("jepa.head.ln_eps", 1e-6) if ln_eps is None else ln_eps
    x = np.asarray(tokens, np.float64)
    for i in range(m.get("jepa.head.n_pool_layers")):
        x = block(x, m, f"head.blk.{i}", nh, eps, None)
    q0 = m["head.query"]  # [1, D], raw
    kv = layer_norm(x, m["head.xattn.ln_kv.weight"], m["head.xattn.ln_kv.bias"], eps)
    o = mha(linear(q0, m, "head.xattn.q"), linear(kv, m, "head.xattn.k"), linear(kv, m, "head.xattn.v"), nh)
    y = q0 + o
    h = layer_norm(y, m["head.xattn.ln2.weight"], m["head.xattn.ln2.bias"], eps)
    y = y + linear(gelu_erf(linear(h, m, "head.xattn.ffn_up")), m, "head.xattn.ffn_down")
    return y[0], linear(y, m, "head.cls")[0]


# ---------------------------------------------------------------- comparison
def compare(got, ref):
    """Per-row cosine (min) and rel = max|got-ref| / max|ref| (1-D arrays count as one row)."""
    a = np.atleast_2d(np.asarray(got, np.float64))
    b = np.atleast_2d(np.asarray(ref, np.float64))
    assert a.shape == b.shape, (a.shape, b.shape)
    cos = (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))
    return float(cos.min()), float(np.abs(a - b).max() / np.abs(b).max())


COS_BAR = 0.9999999
REL_BAR = 1e-5


def check_dir(d, verbose=True):
    """Run every check on the fixture directory d; returns (ok, results dict)."""
    L = lambda n: np.load(os.path.join(d, n))
    video = L("input.npy")
    ctx_all, ctx_ids, tgt_ids = L("ctx_all.npy"), L("ctx_ids.npy"), L("tgt_ids.npy")
    res, ok = {}, True

    def report(name, got, ref, bar=True):
        nonlocal ok
        c, r = compare(got, ref)
        good = c >= COS_BAR and r <= REL_BAR
        if bar:
            ok &= good
        res[name] = {"cos_min": c, "rel": r}
        if verbose:
            tag = ("ok  " if good else "FAIL") if bar else "info"
            print(f"  {tag} {name:<44s} cos_min {c:.10f}  rel {r:.2e}")

    for gguf_name, sfx in (("model.gguf", ""), ("model_f16.gguf", "_f16w")):
        m = Model(os.path.join(d, gguf_name))
        if verbose:
            n16 = sum(v == "F16" for v in m.dtype.values())
            print(f"{gguf_name}: {len(m.t)} tensors ({n16} F16), numpy float64 forward vs torch float32")
        tok = encoder(m, video)
        report(f"tokens{sfx}", tok, L(f"tokens{sfx}.npy"))
        report(f"pred_all{sfx} (ctx=tgt=all, mask 1)", predictor(m, tok, ctx_all, ctx_all), L(f"pred_all{sfx}.npy"))
        report(f"pred_split{sfx} (20/12, mask 1)", predictor(m, tok, ctx_ids, tgt_ids), L(f"pred_split{sfx}.npy"))
        pooled, logits = head(m, tok)
        report(f"pooled{sfx}", pooled, L(f"pooled{sfx}.npy"))
        report(f"logits{sfx}", logits, L(f"logits{sfx}.npy"))
        if sfx == "":
            if verbose:
                print("negative controls (must NOT pass):")
            wrong = encoder(m, video, layout="interleaved")
            report("neg: tokens, interleaved RoPE", wrong, L("tokens.npy"), bar=False)
            report("neg: pred_split, interleaved RoPE",
                   predictor(m, tok, ctx_ids, tgt_ids, layout="interleaved"), L("pred_split.npy"), bar=False)
            report("neg: pred_split, mask_index 0", predictor(m, tok, ctx_ids, tgt_ids, mask_index=0),
                   L("pred_split.npy"), bar=False)
            report("neg: logits, head ln_eps 1e-5", head(m, tok, ln_eps=1e-5)[1], L("logits.npy"), bar=False)
            for k in ("neg: tokens, interleaved RoPE", "neg: pred_split, interleaved RoPE",
                      "neg: pred_split, mask_index 0"):
                if res[k]["cos_min"] >= 0.9999:
                    ok = False
                    print(f"  FAIL negative control {k!r} is not clearly lower")
    if verbose:
        print("f16 weights vs f32 weights (torch outputs, information for tolerances):")
        for n in ("tokens", "pred_all", "pred_split", "pooled", "logits"):
            report(f"{n}_f16w vs {n}", L(f"{n}_f16w.npy"), L(f"{n}.npy"), bar=False)
    return ok, res


if __name__ == "__main__":
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "data", "hf_vjepa2")
    ok, _ = check_dir(d)
    print(f"bar: every token cosine >= {COS_BAR}, rel <= {REL_BAR}: {'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)
