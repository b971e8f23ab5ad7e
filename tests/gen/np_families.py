"""Independent float64 numpy forwards of the schema-v1 encoder families other than V-JEPA 2:
ijepa, hfvit (plain and with layer-scale), lewm (encoder + projector) and levjepa, used to check
(and, for levjepa, to produce) the fixtures in tests/data/{hf_ijepa,hf_vit,lewm,levjepa}/.

Everything here reads ONLY the GGUF (through np_ref.Model, the `gguf` package) plus the input
arrays, never a torch model, and follows gguf-schema-v1.md:
  * patchify C-(T-)H-W, row-major token order (T-major, then H, then W), pixels beyond a whole
    patch dropped (what a stride-P convolution does);
  * learned / table position embeddings added to the patch tokens; for other grids the patch part
    of the table is resized with a re-implementation of torch's bicubic `F.interpolate`
    (align_corners=False, A = -0.75, no antialias, source index (dst + 0.5) * in/out - 0.5,
    border taps clamped) - see `resize_matrix`;
  * hfvit / lewm: CLS = enc.cls_token + enc.pos_embed[0], prepended before the blocks;
  * pre-LN blocks with fused [q;k;v], optional layer-scale ls1/ls2, GELU(erf), final enc.norm;
  * lewm: emb = enc.proj.2(gelu(enc.proj.0(CLS after enc.norm)));
  * levjepa: tubelet-1 patchify, CLS prepended with no position (identity RoPE row), 3-D RoPE
    (tiled layout) on the patch tokens with t = frame index, block-causal attention mask.

Re-check committed fixtures (needs numpy + gguf only):
    .venv-gen/bin/python tests/gen/np_families.py                    # all four folders
    .venv-gen/bin/python tests/gen/np_families.py tests/data/levjepa  # one folder
tests/gen/gen_hf_families.py imports this module, produces the levjepa outputs with
`levjepa_forward` and runs the same checks after generating.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from np_ref import Model, apply_rope, compare, gelu_erf, layer_norm, softmax  # noqa: E402

COS_BAR = 0.9999999
REL_BAR = 1e-5


# ---------------------------------------------------------------- small helpers
def linear(x, m, name):
    return x @ m[name + ".weight"].T + m[name + ".bias"]


def patchify(x, P, tub=None):
    """[C,H,W] -> [gh*gw, C*P*P] or [C,T,H,W] -> [gt*gh*gw, C*tub*P*P] (C-T-H-W feature order).
    Rows / columns beyond a whole patch are dropped, like a stride-P convolution."""
    x = np.asarray(x, np.float64)
    if x.ndim == 3:
        C, H, W = x.shape
        gh, gw = H // P, W // P
        x = x[:, :gh * P, :gw * P].reshape(C, gh, P, gw, P).transpose(1, 3, 0, 2, 4)
        return x.reshape(gh * gw, C * P * P), (gh, gw)
    C, T, H, W = x.shape
    gt, gh, gw = T // tub, H // P, W // P
    x = x[:, :gt * tub, :gh * P, :gw * P].reshape(C, gt, tub, gh, P, gw, P).transpose(1, 3, 5, 0, 2, 4, 6)
    return x.reshape(gt * gh * gw, C * tub * P * P), (gt, gh, gw)


# ---------------------------------------------------------------- position-table resize
def _cubic(t, A):
    """The four tap weights of torch's cubic convolution for fraction t (taps i-1, i, i+1, i+2)."""
    c1 = lambda x: ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0            # |x| <= 1
    c2 = lambda x: ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A      # 1 < |x| < 2
    return (c2(t + 1.0), c1(t), c1(1.0 - t), c2(2.0 - t))


def resize_matrix(n_in, n_out, mode="bicubic", align_corners=False, A=-0.75, scale=None):
    """[n_out, n_in] matrix M with out = M @ in along one axis, reproducing torch
    F.interpolate(mode=bicubic|bilinear|nearest, antialias=False) on the CPU.

    bicubic, align_corners=False: src = (o + 0.5) * scale - 0.5 with scale = n_in / n_out (or the
    given `scale` = 1 / scale_factor), i0 = min(floor(src), n_in - 1), t = clip(src - i0, 0, 1),
    taps i0-1 .. i0+2 clamped to [0, n_in-1] with weights _cubic(t, A), A = -0.75.
    align_corners=True: src = o * (n_in - 1) / (n_out - 1)."""
    M = np.zeros((n_out, n_in))
    s = scale if scale is not None else n_in / n_out
    for o in range(n_out):
        if align_corners:
            src = o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            src = (o + 0.5) * s - 0.5
        if mode == "bicubic":
            i0 = min(int(math.floor(src)), n_in - 1)
            t = min(max(src - i0, 0.0), 1.0)
            for k, w in enumerate(_cubic(t, A)):
                M[o, min(max(i0 - 1 + k, 0), n_in - 1)] += w
        elif mode == "bilinear":
            if not align_corners:
                src = max(src, 0.0)
            i0 = min(int(math.floor(src)), n_in - 1)
            i1 = min(i0 + 1, n_in - 1)
            t = src - i0
            M[o, i0] += 1.0 - t
            M[o, i1] += t
        elif mode == "nearest":
            M[o, min(int(math.floor(o * s)), n_in - 1)] = 1.0
        else:
            raise ValueError(mode)
    return M


def resize_pos(table, g, gh, gw, **kw):
    """Patch position table [g*g, D] (square training grid, row-major h, w) -> [gh*gw, D]."""
    D = table.shape[1]
    T = np.asarray(table, np.float64).reshape(g, g, D)
    sh = kw.pop("scale_hw", (None, None))
    My = resize_matrix(g, gh, scale=sh[0], **kw)
    Mx = resize_matrix(g, gw, scale=sh[1], **kw)
    return np.einsum("ai,bj,ijd->abd", My, Mx, T).reshape(gh * gw, D)


# ---------------------------------------------------------------- transformer block
def attention(q, k, v, n_head, allowed=None, rope=None):
    """q/k/v [N, D]; allowed [N, N] bool (query i may read key j) or None; rope = (COS, SIN)
    [N, head_dim] applied to q and k of every head."""
    N, D = q.shape
    hd = D // n_head
    sp = lambda t: t.reshape(N, n_head, hd).transpose(1, 0, 2)
    qh, kh, vh = sp(q), sp(k), sp(v)
    if rope is not None:
        qh, kh = apply_rope(qh, *rope), apply_rope(kh, *rope)
    s = qh @ kh.transpose(0, 2, 1) / math.sqrt(hd)
    if allowed is not None:
        s = np.where(allowed[None], s, -np.inf)
    return (softmax(s) @ vh).transpose(1, 0, 2).reshape(N, D)


def block(x, m, p, n_head, eps, layer_scale=False, allowed=None, rope=None):
    """Pre-LN block: x += ls1 * attn_out(attn(ln1 x)); x += ls2 * ffn_down(gelu(ffn_up(ln2 x)))."""
    D = x.shape[1]
    h = layer_norm(x, m[p + ".ln1.weight"], m[p + ".ln1.bias"], eps)
    qkv = linear(h, m, p + ".attn_qkv")  # rows [q; k; v]
    a = linear(attention(qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:], n_head, allowed, rope), m, p + ".attn_out")
    x = x + (a * m[p + ".ls1"] if layer_scale else a)
    h = layer_norm(x, m[p + ".ln2.weight"], m[p + ".ln2.bias"], eps)
    f = linear(gelu_erf(linear(h, m, p + ".ffn_up")), m, p + ".ffn_down")
    return x + (f * m[p + ".ls2"] if layer_scale else f)


# ---------------------------------------------------------------- image families
def image_encoder(m, img, interp=None, cls_pos=True, layer_scale=None, eps=None, ppos=None, final_norm=True):
    """ijepa / hfvit / lewm encoder: img [C,H,W] -> last_hidden_state [(1+)N, D] after enc.norm.

    interp: keyword arguments of resize_pos for grids other than the training grid (default: HF's
    bicubic). Negative-control switches: cls_pos=False (CLS without enc.pos_embed[0]),
    layer_scale=False, eps, ppos (an explicit patch position table), final_norm=False."""
    P = m.get("jepa.enc.patch_size")
    nh = m.get("jepa.enc.n_head")
    eps = m.get("jepa.enc.ln_eps") if eps is None else eps
    cls = bool(m.get("jepa.enc.cls_token", False))
    ls = bool(m.get("jepa.enc.layer_scale", False)) if layer_scale is None else layer_scale
    g = m.get("jepa.enc.img_size") // P
    x, (gh, gw) = patchify(img, P)
    x = linear(x, m, "enc.patch_embed")
    pos = m["enc.pos_embed"]
    if ppos is None:
        ppos = pos[1:] if cls else pos
        if (gh, gw) != (g, g):
            ppos = resize_pos(ppos, g, gh, gw, **(interp or {}))
    x = x + ppos
    if cls:
        c = m["enc.cls_token"].reshape(-1) + (pos[0] if cls_pos else 0.0)
        x = np.concatenate([c[None], x], 0)
    for i in range(m.get("jepa.enc.n_layer")):
        x = block(x, m, f"enc.blk.{i}", nh, eps, layer_scale=ls)
    return layer_norm(x, m["enc.norm.weight"], m["enc.norm.bias"], eps) if final_norm else x


def lewm_proj(m, cls):
    """LeWM projector on the CLS row (after enc.norm): proj.2(gelu(proj.0(cls))), BN folded in proj.0."""
    assert m.get("jepa.enc.proj_act", "gelu_erf") == "gelu_erf"
    return linear(gelu_erf(linear(np.asarray(cls, np.float64), m, "enc.proj.0")), m, "enc.proj.2")


# ---------------------------------------------------------------- levjepa
def rope3d_tables(gt, gh, gw, head_dim, theta, layout, n_prefix=1, shift=0):
    """COS, SIN [n_prefix + gt*gh*gw, head_dim]: identity rows for the prefix (CLS), then the patch
    tokens in T-H-W order with positions (t, h, w) of patch id i = (i + shift); shift=1 is a
    negative control (positions counted with the CLS). Per axis d = 2*((head_dim//3)//2) dims
    ([0,d) t, [d,2d) h, [2d,3d) w, rest pass-through), omega_k = theta^(-k/(d/2)); the d/2 angles
    are expanded [f, f] ('tiled', V-JEPA 2 / LeVJEPA) or [f0,f0,f1,f1,..] ('interleaved')."""
    n = gt * gh * gw
    ids = np.arange(n) + shift
    t, h, w = ids // (gh * gw), (ids % (gh * gw)) // gw, ids % gw
    d = 2 * ((head_dim // 3) // 2)
    omega = theta ** (-np.arange(d // 2, dtype=np.float64) / (d / 2.0))
    cos = np.ones((n_prefix + n, head_dim))
    sin = np.zeros((n_prefix + n, head_dim))
    for s, pos in enumerate((t, h, w)):
        f = pos[:, None] * omega[None]
        f = np.concatenate([f, f], 1) if layout == "tiled" else np.repeat(f, 2, 1)
        cos[n_prefix:, s * d:(s + 1) * d] = np.cos(f)
        sin[n_prefix:, s * d:(s + 1) * d] = np.sin(f)
    return cos, sin


def block_causal_mask(gt, per_frame, cls=True, cls_mode="sink"):
    """allowed [N, N]: patch query i reads patch key j iff frame(i) >= frame(j).
    cls_mode 'sink' (schema): CLS row open, CLS column closed to every patch query.
    cls_mode 'frame0' (negative control): CLS treated as one more frame-0 token."""
    fr = np.repeat(np.arange(gt), per_frame)
    if cls:
        fr = np.concatenate([[-1 if cls_mode == "sink" else 0], fr])
    allowed = fr[:, None] >= fr[None, :]
    if cls and cls_mode == "sink":
        allowed[0, :] = True    # CLS row open
        allowed[1:, 0] = False  # CLS column closed to patch queries
    return allowed


def levjepa_forward(m, video, attn_mode=None, layout=None, pos_shift=0, cls_mode="sink"):
    """video [C,T,H,W] -> last_hidden_state [1+N, D] after enc.norm (row 0 = CLS)."""
    P = m.get("jepa.enc.patch_size")
    tub = m.get("jepa.enc.tubelet_size")
    nh = m.get("jepa.enc.n_head")
    D = m.get("jepa.enc.embed_dim")
    eps = m.get("jepa.enc.ln_eps")
    attn_mode = attn_mode or m.get("jepa.enc.attn_mode", "full")
    layout = layout or m.get("jepa.enc.rope_freq_layout")
    assert m.get("jepa.enc.pos_type") == "rope3d" and m.get("jepa.enc.cls_token")
    x, (gt, gh, gw) = patchify(video, P, tub)
    x = linear(x, m, "enc.patch_embed")
    x = np.concatenate([m["enc.cls_token"].reshape(1, D), x], 0)
    rope = rope3d_tables(gt, gh, gw, D // nh, m.get("jepa.enc.rope_theta"), layout, 1, pos_shift)
    allowed = block_causal_mask(gt, gh * gw, True, cls_mode) if attn_mode == "block_causal" else None
    for i in range(m.get("jepa.enc.n_layer")):
        x = block(x, m, f"enc.blk.{i}", nh, eps, allowed=allowed, rope=rope)
    return layer_norm(x, m["enc.norm.weight"], m["enc.norm.bias"], eps)


# ---------------------------------------------------------------- fixture checks
class Report:
    def __init__(self, verbose=True):
        self.ok, self.res, self.verbose = True, {}, verbose

    def __call__(self, name, got, ref, bar=True, must_fail=False):
        c, r = compare(got, ref)
        good = c >= COS_BAR and r <= REL_BAR
        if bar:
            self.ok &= good
        if must_fail and c >= 0.9999:
            self.ok = False
            print(f"  FAIL negative control {name!r} is not clearly lower")
        self.res[name] = {"cos_min": c, "rel": r}
        if self.verbose:
            tag = ("ok  " if good else "FAIL") if bar else "neg " if must_fail else "info"
            print(f"  {tag} {name:<58s} cos_min {c:.10f}  rel {r:.2e}")
        return c, r

    def exact(self, name, a, b, want_equal=True):
        """Bitwise-style structural check: max|a-b| == 0 (want_equal) or > 0."""
        d = float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())
        good = (d == 0.0) if want_equal else (d > 1e-3)
        self.ok &= good
        self.res[name] = {"max_abs_diff": d}
        if self.verbose:
            print(f"  {'ok  ' if good else 'FAIL'} {name:<58s} max|diff| {d:.3e}")
        return d


def _L(d):
    return lambda n: np.load(os.path.join(d, n))


def resized_names(d, prefix="input_"):
    return sorted(f[len(prefix):-4] for f in os.listdir(d) if f.startswith(prefix) and f.endswith(".npy"))


def interp_controls(m, img, ref, rep, tag, cls):
    """Negative controls for a resized input: deliberate position-table mistakes."""
    P = m.get("jepa.enc.patch_size")
    g = m.get("jepa.enc.img_size") // P
    gh, gw = img.shape[1] // P, img.shape[2] // P
    ctl = {
        "bilinear": dict(mode="bilinear"),
        "bicubic align_corners=True": dict(align_corners=True),
        "bicubic A=-0.5 (PIL / antialias kernel)": dict(A=-0.5),
        "scale_factor (g+0.1)/g (Meta DINO/DINOv2 style)": dict(scale_hw=(g / (gh + 0.1), g / (gw + 0.1))),
        "nearest": dict(mode="nearest"),
    }
    for k, kw in ctl.items():
        rep(f"neg {tag}: {k}", image_encoder(m, img, interp=kw), ref, bar=False, must_fail=True)
    if gh != gw:  # h and w swapped: resize to a (gw, gh) grid, then read its rows as (gh, gw)
        D = m.get("jepa.enc.embed_dim")
        pos = m["enc.pos_embed"]
        sw = resize_pos(pos[1:] if cls else pos, g, gw, gh).reshape(gw, gh, D).transpose(1, 0, 2).reshape(gh * gw, D)
        rep(f"neg {tag}: h/w of the resized grid swapped", image_encoder(m, img, ppos=sw), ref, bar=False,
            must_fail=True)


def check_ijepa(d, verbose=True):
    L, rep = _L(d), Report(verbose)
    m = Model(os.path.join(d, "model.gguf"))
    if verbose:
        print(f"{d}/model.gguf: {len(m.t)} tensors, numpy float64 forward vs HF IJepaModel float32")
    tok = image_encoder(m, L("input.npy"))
    rep("tokens", tok, L("tokens.npy"))
    rep("pooled (mean of tokens)", tok.mean(0), L("pooled.npy"))
    g = m.get("jepa.enc.img_size") // m.get("jepa.enc.patch_size")
    for s in resized_names(d):
        img = L(f"input_{s}.npy")
        P = m.get("jepa.enc.patch_size")
        gh, gw = img.shape[1] // P, img.shape[2] // P
        rep(f"pos_{s} (numpy bicubic vs HF interpolate_pos_encoding)", resize_pos(m["enc.pos_embed"], g, gh, gw),
            L(f"pos_{s}.npy"))
        t = image_encoder(m, img)
        rep(f"tokens_{s}", t, L(f"tokens_{s}.npy"))
        rep(f"pooled_{s}", t.mean(0), L(f"pooled_{s}.npy"))
    if verbose:
        print("negative controls (must NOT pass):")
    for s in resized_names(d):
        interp_controls(m, L(f"input_{s}.npy"), L(f"tokens_{s}.npy"), rep, f"tokens_{s}", cls=False)
    rep("neg tokens: ln_eps 1e-12 instead of 1e-6", image_encoder(m, L("input.npy"), eps=1e-12), L("tokens.npy"),
        bar=False)
    return rep.ok, rep.res


def check_vit(d, verbose=True):
    L, rep = _L(d), Report(verbose)
    for gg, pfx, what in (("model.gguf", "", "HF ViTModel"), ("model_ls.gguf", "ls_", "HF Dinov2Model")):
        if not os.path.exists(os.path.join(d, gg)):
            continue
        m = Model(os.path.join(d, gg))
        if verbose:
            print(f"{d}/{gg}: {len(m.t)} tensors, numpy float64 forward vs {what} float32")
        tok = image_encoder(m, L("input.npy"))
        rep(f"{pfx}tokens", tok, L(f"{pfx}tokens.npy"))
        rep(f"{pfx}pooled (CLS after enc.norm)", tok[0], L(f"{pfx}pooled.npy"))
        g = m.get("jepa.enc.img_size") // m.get("jepa.enc.patch_size")
        for s in resized_names(d):
            if not os.path.exists(os.path.join(d, f"{pfx}tokens_{s}.npy")):
                continue
            img = L(f"input_{s}.npy")
            P = m.get("jepa.enc.patch_size")
            gh, gw = img.shape[1] // P, img.shape[2] // P
            if os.path.exists(os.path.join(d, f"{pfx}pos_{s}.npy")):
                pos = m["enc.pos_embed"]
                rep(f"{pfx}pos_{s} (CLS row + numpy bicubic vs HF)",
                    np.concatenate([pos[:1], resize_pos(pos[1:], g, gh, gw)], 0), L(f"{pfx}pos_{s}.npy"))
            t = image_encoder(m, img)
            rep(f"{pfx}tokens_{s}", t, L(f"{pfx}tokens_{s}.npy"))
            rep(f"{pfx}pooled_{s}", t[0], L(f"{pfx}pooled_{s}.npy"))
        if verbose:
            print("negative controls (must NOT pass):")
        rep(f"neg {pfx}tokens: CLS without pos_embed[0]", image_encoder(m, L("input.npy"), cls_pos=False),
            L(f"{pfx}tokens.npy"), bar=False, must_fail=True)
        if m.get("jepa.enc.layer_scale"):
            rep(f"neg {pfx}tokens: layer-scale ignored", image_encoder(m, L("input.npy"), layer_scale=False),
                L(f"{pfx}tokens.npy"), bar=False, must_fail=True)
        for s in resized_names(d):
            if os.path.exists(os.path.join(d, f"{pfx}tokens_{s}.npy")):
                interp_controls(m, L(f"input_{s}.npy"), L(f"{pfx}tokens_{s}.npy"), rep, f"{pfx}tokens_{s}", cls=True)
    return rep.ok, rep.res


def check_lewm(d, verbose=True):
    L, rep = _L(d), Report(verbose)
    m = Model(os.path.join(d, "model.gguf"))
    if verbose:
        print(f"{d}/model.gguf: {len(m.t)} tensors, numpy float64 forward vs HF ViTModel + torch projector float32")
    tok = image_encoder(m, L("input.npy"))
    rep("tokens", tok, L("tokens.npy"))
    rep("cls (tokens[0])", tok[0], L("cls.npy"))
    rep("emb (folded BN in GGUF vs unfolded torch BN)", lewm_proj(m, tok[0]), L("emb.npy"))
    if verbose:
        print("negative controls (must NOT pass):")
    rep("neg emb: projector on the CLS before enc.norm", lewm_proj(m, image_encoder(m, L("input.npy"), final_norm=False)[0]), L("emb.npy"),
        bar=False, must_fail=True)
    rep("neg emb: projector on the mean patch token", lewm_proj(m, tok[1:].mean(0)), L("emb.npy"), bar=False,
        must_fail=True)
    rep("neg tokens: CLS without pos_embed[0]", image_encoder(m, L("input.npy"), cls_pos=False), L("tokens.npy"),
        bar=False, must_fail=True)
    rep("neg tokens: ln_eps 1e-6 instead of 1e-12", image_encoder(m, L("input.npy"), eps=1e-6), L("tokens.npy"),
        bar=False)
    return rep.ok, rep.res


def levjepa_structure(m, inputs, outs, rep):
    """Block-causal structure checks on numpy outputs (the fixture's own files or fresh runs)."""
    P = m.get("jepa.enc.patch_size")
    x0 = inputs["input"]
    T, H, W = x0.shape[1:]
    per = (H // P) * (W // P)
    keep = 1 + (T - 1) * per  # CLS + frames 0..T-2
    rep.exact("last frame changed: frames 0..T-2 tokens unchanged", outs["lastframe"][1:keep], outs["input"][1:keep])
    rep.exact("last frame changed: last-frame tokens change", outs["lastframe"][keep:], outs["input"][keep:], False)
    rep.exact("last frame changed: CLS changes (CLS row open)", outs["lastframe"][0], outs["input"][0], False)
    rep.exact("first frame changed: CLS changes", outs["firstframe"][0], outs["input"][0], False)
    for f in range(T):
        a, b = 1 + f * per, 1 + (f + 1) * per
        rep.exact(f"first frame changed: frame {f} tokens change", outs["firstframe"][a:b], outs["input"][a:b], False)


def check_levjepa(d, verbose=True):
    L, rep = _L(d), Report(verbose)
    m = Model(os.path.join(d, "model.gguf"))
    if verbose:
        print(f"{d}/model.gguf: {len(m.t)} tensors, numpy float64 forward (schema) vs committed outputs")
    names = ("input", "lastframe", "firstframe")
    inputs = {n: L("input.npy" if n == "input" else f"input_{n}.npy") for n in names}
    outs = {}
    for n in names:
        sfx = "" if n == "input" else f"_{n}"
        outs[n] = levjepa_forward(m, inputs[n])
        rep(f"tokens{sfx}", outs[n], L(f"tokens{sfx}.npy"))
        rep(f"cls{sfx} (tokens[0])", outs[n][0], L(f"cls{sfx}.npy"))
    if verbose:
        print("block-causal structure (numpy float64 forward):")
    levjepa_structure(m, inputs, outs, rep)
    # prefix property: the first T-1 frames alone give the same patch tokens
    x3 = inputs["input"][:, :-1]
    t3 = levjepa_forward(m, x3)
    n3 = t3.shape[0]
    rep("prefix clip (frames 0..T-2 alone) patch tokens vs tokens[1:]", t3[1:], L("tokens.npy")[1:n3])
    if verbose:
        print("negative controls (must NOT pass):")
    ref = L("tokens.npy")
    full = levjepa_forward(m, inputs["input"], attn_mode="full")
    rep("neg cls: full attention instead of block-causal", full[0], ref[0], bar=False, must_fail=True)
    rep("neg tokens: full attention instead of block-causal", full, ref, bar=False, must_fail=True)
    rep("neg tokens: interleaved RoPE", levjepa_forward(m, inputs["input"], layout="interleaved"), ref, bar=False,
        must_fail=True)
    rep("neg tokens: patch positions counted with the CLS (id+1)", levjepa_forward(m, inputs["input"], pos_shift=1),
        ref, bar=False, must_fail=True)
    rep("neg tokens: CLS as a frame-0 token", levjepa_forward(m, inputs["input"], cls_mode="frame0"), ref,
        bar=False, must_fail=True)
    return rep.ok, rep.res


CHECKS = {"hf_ijepa": check_ijepa, "hf_vit": check_vit, "lewm": check_lewm, "levjepa": check_levjepa}


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = sys.argv[1:] or [os.path.join(here, "..", "data", k) for k in CHECKS]
    ok = True
    for d in dirs:
        o, _ = CHECKS[os.path.basename(os.path.normpath(d))](d)
        ok &= o
    print(f"bar: every token cosine >= {COS_BAR}, rel <= {REL_BAR}: {'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)
