"""Generate the reference fixtures of the encoder families other than V-JEPA 2, each a tiny
random-weight model written as a schema-v1 GGUF (all tensors F32) plus inputs and outputs:

  tests/data/hf_ijepa/  HF transformers IJepaModel (family ijepa): tokens and mean-pooled feature at
                        the training size and at two other sizes (bicubic position-table resize)
  tests/data/hf_vit/    HF ViTModel (family hfvit, model.gguf) and HF Dinov2Model written as hfvit
                        with layer-scale (model_ls.gguf): tokens (CLS first) and CLS, three sizes
  tests/data/lewm/      HF ViTModel (ViTConfig defaults, LN eps 1e-12) + a torch
                        Linear -> BatchNorm1d(eval) -> GELU -> Linear projector (family lewm, BN folded
                        into enc.proj.0 in the GGUF): tokens, CLS, emb
  tests/data/levjepa/   family levjepa (no installable reference): outputs of the float64 numpy
                        forward written from the schema (np_families.levjepa_forward), cross-checked
                        against a torch forward assembled from transformers' V-JEPA 2 modules
                        (Conv3d patch embedding, RoPE attention's rotate_queries_or_keys, LayerNorms,
                        MLP) with its own CLS / block-causal glue

Rerun (from the repository root, with the venv of tests/gen/README.md):
    .venv-gen/bin/python tests/gen/gen_hf_families.py                 # writes the four folders
    .venv-gen/bin/python tests/gen/gen_hf_families.py --out-root DIR  # DIR/hf_ijepa, DIR/hf_vit, ...
    .venv-gen/bin/python tests/gen/gen_hf_families.py --only lewm     # one family
Deterministic (fixed seeds, 1 torch thread, deterministic algorithms). After writing, every folder is
re-read and checked with tests/gen/np_families.py (float64 numpy forward reading only the GGUF); the
script exits non-zero if a check misses the bar (every token cosine >= 0.9999999, rel <= 1e-5),
a negative control is not clearly worse, or a block-causal structure check fails.
"""
import argparse
import json
import os
import platform
import re
import sys
from importlib.metadata import version

import numpy as np
import torch
from torch import nn

import gguf
import transformers
from transformers import (Dinov2Config, Dinov2Model, IJepaConfig, IJepaModel, VJEPA2Config, VJEPA2Model,
                          ViTConfig, ViTModel)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import np_families as npf  # noqa: E402
from np_ref import compare  # noqa: E402

SEED = 20250612
QK_GAIN = 8.0
BRANCH_GAIN = 12.0
LS_SCALE = 0.5
TF_URL = f"https://github.com/huggingface/transformers/blob/v{transformers.__version__}/src/transformers/models"

CFG_IJEPA = dict(hidden_size=80, num_hidden_layers=2, num_attention_heads=1, intermediate_size=320, image_size=56,
                 patch_size=14, num_channels=3, layer_norm_eps=1e-6, hidden_act="gelu", qkv_bias=True)
SIZES_IJEPA = [(84, 70), (42, 56)]
CFG_VIT = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=1, intermediate_size=256, image_size=64,
               patch_size=16, num_channels=3, layer_norm_eps=1e-6, hidden_act="gelu", qkv_bias=True)
CFG_DINOV2 = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, mlp_ratio=2, image_size=64,
                  patch_size=16, num_channels=3, layer_norm_eps=1e-6, hidden_act="gelu", qkv_bias=True,
                  layerscale_value=1.0, use_swiglu_ffn=False, use_mask_token=False)
SIZES_VIT = [(96, 80), (48, 64)]
CFG_LEWM = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256, image_size=56,
                patch_size=14, num_channels=3, hidden_act="gelu", qkv_bias=True)  # layer_norm_eps: ViTConfig default
LEWM_PROJ_HIDDEN = 128
LEWM_BN_EPS = 1e-5  # torch.nn.BatchNorm1d default
CFG_LEVJEPA = dict(patch_size=16, crop_size=32, frames_per_clip=4, tubelet_size=1, in_chans=3, hidden_size=64,
                   num_attention_heads=1, num_hidden_layers=2, mlp_ratio=4.0, layer_norm_eps=1e-6, qkv_bias=True,
                   hidden_act="gelu", drop_path_rate=0.0, pred_hidden_size=32, pred_num_attention_heads=1,
                   pred_num_hidden_layers=1, pred_num_mask_tokens=2, pred_mlp_ratio=1.0)

IMAGENET = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
PERTURBATION = {
    "layernorm": "weight = 1 + 0.25 N(0,1), bias = 0.1 N(0,1)",
    "linear_conv_bias": "0.02 N(0,1)",
    "batchnorm": "LeWM projector BatchNorm1d: weight = 1 + 0.25 N, bias = 0.1 N, running_mean = 0.2 N, "
                 "running_var = 0.3 exp(0.5 N)",
    "cls_token_pos_table_mask_tokens": "0.5 N(0,1) (replaces HF init; I-JEPA's table is a parameter in HF)",
    "layer_scale": f"lambda1 = {LS_SCALE} N(0,1) (Dinov2 variant only)",
    "qk_weight_scale": f"{QK_GAIN} * sqrt(128 / in_width)",
    "attn_out_and_fc2_weight_scale": BRANCH_GAIN,
    "other_weights": "HF _init_weights (trunc_normal std 0.02) / torch default init for the LeWM projector",
}


# ---------------------------------------------------------------- models
def hf_model(cls, cfg_cls, cfg, seed, **kw):
    torch.manual_seed(seed)
    model = cls(cfg_cls(**cfg, attn_implementation="eager"), **kw).float().eval()
    assert model.config._attn_implementation == "eager", model.config._attn_implementation
    return model


@torch.no_grad()
def perturb(model, seed):
    """Make every parameter matter (same recipe as tests/gen/gen_hf_vjepa2.py)."""
    g = torch.Generator().manual_seed(seed)
    N = lambda t: torch.randn(t.shape, generator=g, dtype=t.dtype)
    for _, mod in model.named_modules():
        if isinstance(mod, nn.LayerNorm):
            mod.weight.copy_(1.0 + 0.25 * N(mod.weight))
            mod.bias.copy_(0.1 * N(mod.bias))
        elif isinstance(mod, nn.BatchNorm1d):
            mod.weight.copy_(1.0 + 0.25 * N(mod.weight))
            mod.bias.copy_(0.1 * N(mod.bias))
            mod.running_mean.copy_(0.2 * N(mod.running_mean))
            mod.running_var.copy_(0.3 * torch.exp(0.5 * N(mod.running_var)))
        elif isinstance(mod, (nn.Linear, nn.Conv2d, nn.Conv3d)) and mod.bias is not None:
            mod.bias.copy_(0.02 * N(mod.bias))
    for name, p in model.named_parameters():
        if re.search(r"(cls_token|position_embeddings|mask_tokens?)$", name):
            p.copy_(0.5 * N(p))
        if name.endswith("lambda1"):
            p.copy_(LS_SCALE * N(p))
        if re.search(r"\.(q_proj|k_proj|query|key)\.weight$", name):
            p.mul_(QK_GAIN * (128.0 / p.shape[1]) ** 0.5)
        if re.search(r"\.(o_proj|attention\.proj|fc2)\.weight$", name):
            p.mul_(BRANCH_GAIN)
    for name, p in model.named_parameters():
        assert torch.isfinite(p).all(), name
        assert p.abs().max() > 0, f"{name} is all zero"


class LeWM(nn.Module):
    """LeWM encoder side: HF ViTModel + projector MLP Linear -> BatchNorm1d -> GELU -> Linear
    (the layout of the LeWM checkpoint's projector.net.{0,1,2,3})."""

    def __init__(self, seed):
        super().__init__()
        self.encoder = hf_model(ViTModel, ViTConfig, CFG_LEWM, seed, add_pooling_layer=False)
        D = CFG_LEWM["hidden_size"]
        self.projector = nn.Module()
        self.projector.net = nn.Sequential(nn.Linear(D, LEWM_PROJ_HIDDEN), nn.BatchNorm1d(LEWM_PROJ_HIDDEN, eps=LEWM_BN_EPS),
                                           nn.GELU(), nn.Linear(LEWM_PROJ_HIDDEN, D))
        self.eval()

    @torch.no_grad()
    def forward(self, img):
        tok = self.encoder(pixel_values=img).last_hidden_state
        cls = tok[:, 0]
        return tok, cls, self.projector.net(cls)


class LeVJEPATorch(nn.Module):
    """Torch cross-check of the levjepa family, built from transformers' V-JEPA 2 encoder modules.
    Only the CLS token, the block-causal mask and the attention call are written here."""

    def __init__(self, seed):
        super().__init__()
        vj = hf_model(VJEPA2Model, VJEPA2Config, CFG_LEVJEPA, seed)
        self.encoder = vj.encoder  # the predictor is dropped
        D = CFG_LEVJEPA["hidden_size"]
        self.cls_token = nn.Parameter(torch.zeros(1, 1, D))
        self.eval()

    @staticmethod
    def mask(n_frames, per_frame, full=False):
        """Additive mask [1+N, 1+N]: 0 where allowed, -inf elsewhere (CLS row open, CLS column
        closed to patch queries, patch i sees patch j iff frame(i) >= frame(j))."""
        n = n_frames * per_frame
        fr = torch.arange(n) // per_frame
        ok = torch.ones(1 + n, 1 + n, dtype=torch.bool)
        if not full:
            ok[1:, 1:] = fr[:, None] >= fr[None, :]
            ok[1:, 0] = False
        return torch.zeros(1 + n, 1 + n).masked_fill(~ok, float("-inf"))

    @torch.no_grad()
    def forward(self, video, full=False):
        """video [C,T,H,W] numpy -> last_hidden_state [1+N, D]."""
        x = torch.from_numpy(video)[None].permute(0, 2, 1, 3, 4).contiguous()  # HF takes [B,T,C,H,W]
        h = self.encoder.embeddings(x)                                         # [1, N, D], T-H-W order
        T, P = video.shape[1], CFG_LEVJEPA["patch_size"]
        per = (video.shape[2] // P) * (video.shape[3] // P)
        add = self.mask(T // CFG_LEVJEPA["tubelet_size"], per, full)
        h = torch.cat([self.cls_token, h], 1)
        B, N1, D = h.shape
        for layer in self.encoder.layer:
            att = layer.attention
            nh, hd = att.num_attention_heads, att.attention_head_size
            a = layer.norm1(h)
            sp = lambda t: t.view(B, N1, nh, hd).transpose(1, 2)
            q, k, v = sp(att.query(a)), sp(att.key(a)), sp(att.value(a))
            pos = att.get_position_ids(h[:, 1:])  # patch ids 0..N-1 on the config grid
            q = torch.cat([q[:, :, :1], att.apply_rotary_embeddings(q[:, :, 1:], pos)], 2)
            k = torch.cat([k[:, :, :1], att.apply_rotary_embeddings(k[:, :, 1:], pos)], 2)
            w = torch.softmax(q @ k.transpose(-1, -2) * att.scaling + add, dim=-1)
            h = h + att.proj((w @ v).transpose(1, 2).reshape(B, N1, D))
            h = h + layer.mlp(layer.norm2(h))
        return self.encoder.layernorm(h)[0]


# ---------------------------------------------------------------- HF -> GGUF tensors
class TensorMap:
    def __init__(self, module):
        self.sd = {k: v.detach().cpu().numpy().astype(np.float32) for k, v in module.state_dict().items()}
        self.out, self.used = [], set()

    def put(self, name, keys, arr):
        self.out.append((name, np.ascontiguousarray(arr, dtype=np.float32)))
        self.used.update(keys)

    def one(self, name, key, shape=None):
        a = self.sd[key]
        self.put(name, [key], a.reshape(shape) if shape else a)

    def fused(self, name, keys):
        self.put(name, keys, np.concatenate([self.sd[k] for k in keys], 0))

    def block(self, i, s, names):
        """names: ln1, q, k, v, o, ln2, fc1, fc2 [, ls1, ls2] source prefixes under s."""
        d = f"enc.blk.{i}"
        for w in ("weight", "bias"):
            self.one(f"{d}.ln1.{w}", f"{s}{names['ln1']}.{w}")
        for w in ("weight", "bias"):
            self.fused(f"{d}.attn_qkv.{w}", [f"{s}{names[n]}.{w}" for n in "qkv"])
        for w in ("weight", "bias"):
            self.one(f"{d}.attn_out.{w}", f"{s}{names['o']}.{w}")
        for w in ("weight", "bias"):
            self.one(f"{d}.ln2.{w}", f"{s}{names['ln2']}.{w}")
        for a, b in (("ffn_up", "fc1"), ("ffn_down", "fc2")):
            for w in ("weight", "bias"):
                self.one(f"{d}.{a}.{w}", f"{s}{names[b]}.{w}")
        if "ls1" in names:
            self.one(f"{d}.ls1", f"{s}{names['ls1']}")
            self.one(f"{d}.ls2", f"{s}{names['ls2']}")

    def done(self, ignore=()):
        left = sorted(k for k in set(self.sd) - self.used if not k.startswith(tuple(ignore)))
        assert not left, f"unmapped tensors: {left}"
        return self.out


HF_LAYER = dict(ln1="layernorm_before", q="attention.q_proj", k="attention.k_proj", v="attention.v_proj",
                o="attention.o_proj", ln2="layernorm_after", fc1="mlp.fc1", fc2="mlp.fc2")
DINOV2_LAYER = dict(ln1="norm1", q="attention.q_proj", k="attention.k_proj", v="attention.v_proj", o="attention.o_proj",
                    ln2="norm2", fc1="mlp.fc1", fc2="mlp.fc2", ls1="layer_scale1.lambda1", ls2="layer_scale2.lambda1")


def vit_like_tensors(tm, P, D, n_layer, cls, layer_fmt, names):
    """ViT / I-JEPA / Dinov2 embeddings + blocks + final norm (HF 5.x names under prefix P)."""
    tm.one("enc.patch_embed.weight", P + "embeddings.patch_embeddings.projection.weight", (D, -1))
    tm.one("enc.patch_embed.bias", P + "embeddings.patch_embeddings.projection.bias")
    tm.one("enc.pos_embed", P + "embeddings.position_embeddings", (-1, D))  # verbatim, CLS row first if any
    if cls:
        tm.one("enc.cls_token", P + "embeddings.cls_token", (D,))
    for i in range(n_layer):
        tm.block(i, P + layer_fmt.format(i=i), names)
    tm.one("enc.norm.weight", P + "layernorm.weight")
    tm.one("enc.norm.bias", P + "layernorm.bias")


def fold_bn(w, b, gamma, beta, mean, var, eps):
    """Linear(w, b) followed by eval BatchNorm1d -> one Linear (float64 math, returned as float32)."""
    s = gamma.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
    return (w.astype(np.float64) * s[:, None]).astype(np.float32), \
        ((b.astype(np.float64) - mean) * s + beta).astype(np.float32)


# ---------------------------------------------------------------- GGUF writer
def write_gguf(path, kvs, tensors):
    """kvs: ordered [(key, kind, value)], kind in u32 / f32 / bool / str / f32arr."""
    w = gguf.GGUFWriter(path, arch="jepa")
    for k, kind, v in kvs:
        if kind == "u32":
            w.add_uint32(k, int(v))
        elif kind == "f32":
            w.add_float32(k, float(v))
        elif kind == "bool":
            w.add_bool(k, bool(v))
        elif kind == "str":
            w.add_string(k, v)
        elif kind == "f32arr":
            w.add_array(k, [float(x) for x in v])
        else:
            raise ValueError(kind)
    for name, arr in tensors:
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def enc_kvs(name, family, modality, src, D, L, H, F, P, img, n_frames, tub, eps, pos_type, cls, layer_scale,
            pre, extra=()):
    kv = [("general.name", "str", name), ("general.license", "str", "mit"), ("general.source_url", "str", src),
          ("general.file_type", "u32", 0), ("jepa.schema_version", "u32", 1), ("jepa.family", "str", family),
          ("jepa.modality", "str", modality),
          ("jepa.enc.embed_dim", "u32", D), ("jepa.enc.n_layer", "u32", L), ("jepa.enc.n_head", "u32", H),
          ("jepa.enc.ffn_dim", "u32", F), ("jepa.enc.patch_size", "u32", P), ("jepa.enc.tubelet_size", "u32", tub),
          ("jepa.enc.img_size", "u32", img), ("jepa.enc.n_frames", "u32", n_frames), ("jepa.enc.in_chans", "u32", 3),
          ("jepa.enc.ln_eps", "f32", eps), ("jepa.enc.act", "str", "gelu_erf"), ("jepa.enc.pos_type", "str", pos_type)]
    kv += [x for x in extra if x[0].startswith("jepa.enc.rope")]
    kv += [("jepa.enc.cls_token", "bool", cls), ("jepa.enc.n_registers", "u32", 0), ("jepa.enc.qkv_fused", "bool", True),
           ("jepa.enc.modality_embed", "bool", False), ("jepa.enc.image_patch_embed", "bool", False),
           ("jepa.enc.layer_scale", "bool", layer_scale)]
    kv += [x for x in extra if not x[0].startswith("jepa.enc.rope")]
    kv += [("jepa.head.kind", "str", "none")]
    mean, std, short, crop, resample, mode = pre
    kv += [("jepa.pre.mean", "f32arr", mean), ("jepa.pre.std", "f32arr", std), ("jepa.pre.resize_short", "u32", short),
           ("jepa.pre.crop", "u32", crop), ("jepa.pre.resample", "str", resample),
           ("jepa.pre.resize_mode", "str", mode), ("jepa.pre.rescale", "f32", 1.0 / 255.0)]
    return kv


# ---------------------------------------------------------------- helpers
f32 = lambda t: t.detach().cpu().numpy().astype(np.float32)


def img_t(a):
    return torch.from_numpy(a)[None]


def save(d, n, a):
    np.save(os.path.join(d, n), a)


def tag(hw):
    return f"{hw[0]}x{hw[1]}"


def finish(d, fam, cfg, extra_meta, res_np, res_gen, ok):
    files = {}
    for fn in sorted(os.listdir(d)):
        p = os.path.join(d, fn)
        if fn.endswith(".npy"):
            a = np.load(p)
            files[fn] = {"shape": list(a.shape), "dtype": str(a.dtype)}
        elif fn.endswith(".gguf"):
            files[fn] = {"bytes": os.path.getsize(p)}
    meta = {"generator": "tests/gen/gen_hf_families.py", "family": fam, "seed": SEED, "config": cfg, **extra_meta,
            "perturbation": PERTURBATION,
            "versions": {"python": platform.python_version(), "torch": torch.__version__,
                         "transformers": transformers.__version__, "gguf": version("gguf"), "numpy": np.__version__},
            "files": files, "checks_numpy_vs_reference": res_np, "checks_generator": res_gen,
            "bar": {"cos_min": npf.COS_BAR, "rel": npf.REL_BAR}, "pass": bool(ok)}
    with open(os.path.join(d, "meta.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
        fh.write("\n")


# ---------------------------------------------------------------- families
def gen_ijepa(d):
    model = hf_model(IJepaModel, IJepaConfig, CFG_IJEPA, SEED + 10, add_pooling_layer=False)
    perturb(model, SEED + 11)
    c = model.config
    D, P, S = c.hidden_size, c.patch_size, c.image_size
    g = S // P
    tm = TensorMap(model)
    vit_like_tensors(tm, "", D, c.num_hidden_layers, False, "layers.{i}.", HF_LAYER)
    kvs = enc_kvs("ijepa-tiny-hf-random-fixture", "ijepa", "image", f"{TF_URL}/ijepa/modeling_ijepa.py (random init)",
                  D, c.num_hidden_layers, c.num_attention_heads, c.intermediate_size, P, S, 1, 1, c.layer_norm_eps,
                  "sincos2d", False, False, ([0.5] * 3, [0.5] * 3, S, S, "bilinear", "squash"))
    write_gguf(os.path.join(d, "model.gguf"), kvs, tm.done())

    rng = np.random.default_rng(SEED + 12)
    gen = {}
    with torch.no_grad():
        x = rng.standard_normal((3, S, S)).astype(np.float32)
        o = model(pixel_values=img_t(x)).last_hidden_state[0]
        o2 = model(pixel_values=img_t(x), interpolate_pos_encoding=True).last_hidden_state[0]
        assert torch.equal(o, o2), "interpolate_pos_encoding=True changed the training-size output"
        save(d, "input.npy", x)
        save(d, "tokens.npy", f32(o))
        save(d, "pooled.npy", f32(o.mean(0)))
        for hw in SIZES_IJEPA:
            x = rng.standard_normal((3, *hw)).astype(np.float32)
            o = model(pixel_values=img_t(x), interpolate_pos_encoding=True).last_hidden_state[0]
            gh, gw = hw[0] // P, hw[1] // P
            pos = model.embeddings.interpolate_pos_encoding(torch.zeros(1, gh * gw, D), *hw)[0]
            save(d, f"input_{tag(hw)}.npy", x)
            save(d, f"tokens_{tag(hw)}.npy", f32(o))
            save(d, f"pooled_{tag(hw)}.npy", f32(o.mean(0)))
            save(d, f"pos_{tag(hw)}.npy", f32(pos))
            # does HF's forward really add exactly that table? (embeddings = patches + pos)
            emb = model.embeddings(img_t(x), interpolate_pos_encoding=True)[0]
            patches = model.embeddings.patch_embeddings(img_t(x))[0]
            gen[f"hf embeddings_{tag(hw)} - patches == pos_{tag(hw)}: max|d|"] = float((emb - patches - pos).abs().max())
    print(f"hf_ijepa: wrote {d}")
    ok, res = npf.check_ijepa(d)
    for k, v in gen.items():
        print(f"  info {k} = {v:.2e}")
        ok &= v < 1e-6
    finish(d, "ijepa", {**CFG_IJEPA, "attn_implementation": "eager", "add_pooling_layer": False,
                        "resized_inputs": [tag(s) for s in SIZES_IJEPA]}, {"grid": [g, g]}, res, gen, ok)
    return ok


def gen_vit(d):
    model = hf_model(ViTModel, ViTConfig, CFG_VIT, SEED + 20, add_pooling_layer=False)
    perturb(model, SEED + 21)
    dino = hf_model(Dinov2Model, Dinov2Config, CFG_DINOV2, SEED + 22)
    perturb(dino, SEED + 23)
    for mdl, fn, fam_name, cfgd, layer_fmt, names, ls in (
            (model, "model.gguf", "hfvit-tiny-hf-vit-random-fixture", CFG_VIT, "layers.{i}.", HF_LAYER, False),
            (dino, "model_ls.gguf", "hfvit-ls-tiny-hf-dinov2-random-fixture", CFG_DINOV2, "encoder.layer.{i}.",
             DINOV2_LAYER, True)):
        c = mdl.config
        D, P, S = c.hidden_size, c.patch_size, c.image_size
        F = c.intermediate_size if not ls else int(D * c.mlp_ratio)
        tm = TensorMap(mdl)
        vit_like_tensors(tm, "", D, c.num_hidden_layers, True, layer_fmt, names)
        src = f"{TF_URL}/{'dinov2/modeling_dinov2.py' if ls else 'vit/modeling_vit.py'} (random init)"
        kvs = enc_kvs(fam_name, "hfvit", "image", src, D, c.num_hidden_layers, c.num_attention_heads, F, P, S, 1, 1,
                      c.layer_norm_eps, "learned", True, ls,
                      (*IMAGENET, int(S * 256 / 224), S, "bicubic", "shortest_edge"))
        write_gguf(os.path.join(d, fn), kvs, tm.done())

    rng = np.random.default_rng(SEED + 24)
    P, S, D = CFG_VIT["patch_size"], CFG_VIT["image_size"], CFG_VIT["hidden_size"]
    gen = {}
    with torch.no_grad():
        x = rng.standard_normal((3, S, S)).astype(np.float32)
        o = model(pixel_values=img_t(x)).last_hidden_state[0]
        o2 = model(pixel_values=img_t(x), interpolate_pos_encoding=True).last_hidden_state[0]
        assert torch.equal(o, o2)
        od = dino(pixel_values=img_t(x))
        assert torch.equal(od.pooler_output[0], od.last_hidden_state[0, 0])
        save(d, "input.npy", x)
        save(d, "tokens.npy", f32(o))
        save(d, "pooled.npy", f32(o[0]))
        save(d, "ls_tokens.npy", f32(od.last_hidden_state[0]))
        save(d, "ls_pooled.npy", f32(od.pooler_output[0]))
        for hw in SIZES_VIT:
            x = rng.standard_normal((3, *hw)).astype(np.float32)
            gh, gw = hw[0] // P, hw[1] // P
            o = model(pixel_values=img_t(x), interpolate_pos_encoding=True).last_hidden_state[0]
            od = dino(pixel_values=img_t(x))
            save(d, f"input_{tag(hw)}.npy", x)
            save(d, f"tokens_{tag(hw)}.npy", f32(o))
            save(d, f"pooled_{tag(hw)}.npy", f32(o[0]))
            save(d, f"pos_{tag(hw)}.npy", f32(model.embeddings.interpolate_pos_encoding(
                torch.zeros(1, 1 + gh * gw, D), *hw)[0]))
            save(d, f"ls_tokens_{tag(hw)}.npy", f32(od.last_hidden_state[0]))
            save(d, f"ls_pooled_{tag(hw)}.npy", f32(od.pooler_output[0]))
            save(d, f"ls_pos_{tag(hw)}.npy", f32(dino.embeddings.interpolate_pos_encoding(
                torch.zeros(1, 1 + gh * gw, CFG_DINOV2["hidden_size"]), *hw)[0]))
            # Dinov2 and ViT resize the table with the same call: same result on the same table
            tv = model.embeddings.position_embeddings.clone()
            dino_pos = dino.embeddings.position_embeddings.data.clone()
            dino.embeddings.position_embeddings.data.copy_(tv)
            same = (dino.embeddings.interpolate_pos_encoding(torch.zeros(1, 1 + gh * gw, D), *hw) -
                    model.embeddings.interpolate_pos_encoding(torch.zeros(1, 1 + gh * gw, D), *hw)).abs().max()
            dino.embeddings.position_embeddings.data.copy_(dino_pos)
            gen[f"Dinov2 vs ViT interpolate_pos_encoding on the same table, {tag(hw)}: max|d|"] = float(same)
    print(f"hf_vit: wrote {d}")
    ok, res = npf.check_vit(d)
    for k, v in gen.items():
        print(f"  info {k} = {v:.2e}")
        ok &= v == 0.0
    finish(d, "hfvit", {"vit": {**CFG_VIT, "add_pooling_layer": False}, "dinov2_layer_scale": CFG_DINOV2,
                        "attn_implementation": "eager", "resized_inputs": [tag(s) for s in SIZES_VIT]},
           {}, res, gen, ok)
    return ok


def gen_lewm(d):
    wm = LeWM(SEED + 30)
    perturb(wm, SEED + 31)
    c = wm.encoder.config
    D, P, S = c.hidden_size, c.patch_size, c.image_size
    tm = TensorMap(wm)
    vit_like_tensors(tm, "encoder.", D, c.num_hidden_layers, True, "layers.{i}.", HF_LAYER)
    sd, net = tm.sd, "projector.net."
    w0, b0 = fold_bn(sd[net + "0.weight"], sd[net + "0.bias"], sd[net + "1.weight"], sd[net + "1.bias"],
                     sd[net + "1.running_mean"], sd[net + "1.running_var"], LEWM_BN_EPS)
    tm.put("enc.proj.0.weight", [net + "0.weight", net + "1.weight", net + "1.running_mean", net + "1.running_var"], w0)
    tm.put("enc.proj.0.bias", [net + "0.bias", net + "1.bias", net + "1.num_batches_tracked"], b0)
    tm.one("enc.proj.2.weight", net + "3.weight")
    tm.one("enc.proj.2.bias", net + "3.bias")
    kvs = enc_kvs("lewm-tiny-hf-vit-random-fixture", "lewm", "image",
                  f"{TF_URL}/vit/modeling_vit.py + Linear/BatchNorm1d/GELU/Linear projector (random init)",
                  D, c.num_hidden_layers, c.num_attention_heads, c.intermediate_size, P, S, 1, 1, c.layer_norm_eps,
                  "learned", True, False, (*IMAGENET, S, S, "bilinear", "squash"),
                  extra=[("jepa.enc.proj_act", "str", "gelu_erf")])
    write_gguf(os.path.join(d, "model.gguf"), kvs, tm.done())

    rng = np.random.default_rng(SEED + 32)
    x = rng.standard_normal((3, S, S)).astype(np.float32)
    tok, cls, emb = wm(img_t(x))
    save(d, "input.npy", x)
    save(d, "tokens.npy", f32(tok[0]))
    save(d, "cls.npy", f32(cls[0]))
    save(d, "emb.npy", f32(emb[0]))
    gen = {}
    with torch.no_grad():  # the folded projector in torch float32 (information: fold rounding)
        folded = nn.Sequential(nn.Linear(D, LEWM_PROJ_HIDDEN), nn.GELU(), nn.Linear(LEWM_PROJ_HIDDEN, D))
        folded[0].weight.copy_(torch.from_numpy(w0))
        folded[0].bias.copy_(torch.from_numpy(b0))
        folded[2].weight.copy_(wm.projector.net[3].weight)
        folded[2].bias.copy_(wm.projector.net[3].bias)
        c_, r_ = compare(f32(folded(cls)[0]), f32(emb[0]))
        gen["torch folded-BN projector vs unfolded, emb"] = {"cos_min": c_, "rel": r_}
        print(f"  info torch folded-BN projector vs unfolded emb: cos {c_:.10f} rel {r_:.2e}")
    print(f"lewm: wrote {d}")
    ok, res = npf.check_lewm(d)
    finish(d, "lewm", {"vit": {**CFG_LEWM, "layer_norm_eps": c.layer_norm_eps, "add_pooling_layer": False,
                               "attn_implementation": "eager"},
                       "projector": f"Linear({D},{LEWM_PROJ_HIDDEN}) -> BatchNorm1d({LEWM_PROJ_HIDDEN}, eps "
                                    f"{LEWM_BN_EPS}, eval) -> GELU(erf) -> Linear({LEWM_PROJ_HIDDEN},{D})"},
           {}, res, gen, ok)
    return ok


def gen_levjepa(d):
    ref = LeVJEPATorch(SEED + 40)
    perturb(ref, SEED + 41)
    c = CFG_LEVJEPA
    D, P, S, T = c["hidden_size"], c["patch_size"], c["crop_size"], c["frames_per_clip"]
    tm = TensorMap(ref)
    E = "encoder."
    tm.one("enc.patch_embed.weight", E + "embeddings.patch_embeddings.proj.weight", (D, -1))  # C-T-H-W
    tm.one("enc.patch_embed.bias", E + "embeddings.patch_embeddings.proj.bias")
    tm.one("enc.cls_token", "cls_token", (D,))
    names = dict(ln1="norm1", q="attention.query", k="attention.key", v="attention.value", o="attention.proj",
                 ln2="norm2", fc1="mlp.fc1", fc2="mlp.fc2")
    for i in range(c["num_hidden_layers"]):
        tm.block(i, f"{E}layer.{i}.", names)
    tm.one("enc.norm.weight", E + "layernorm.weight")
    tm.one("enc.norm.bias", E + "layernorm.bias")
    kvs = enc_kvs("levjepa-tiny-random-fixture", "levjepa", "video",
                  "tests/gen/np_families.py::levjepa_forward (schema levjepa note; random weights)",
                  D, c["num_hidden_layers"], c["num_attention_heads"], int(D * c["mlp_ratio"]), P, S, T,
                  c["tubelet_size"], c["layer_norm_eps"], "rope3d", True, False,
                  (*IMAGENET, S, S, "bicubic", "shortest_edge"),
                  extra=[("jepa.enc.rope_theta", "f32", 10000.0), ("jepa.enc.rope_interpolate", "bool", False),
                         ("jepa.enc.rope_freq_layout", "str", "tiled"), ("jepa.enc.attn_mode", "str", "block_causal")])
    write_gguf(os.path.join(d, "model.gguf"), kvs, tm.done())

    rng = np.random.default_rng(SEED + 42)
    x = rng.standard_normal((3, T, S, S)).astype(np.float32)
    xl = x.copy()
    xl[:, -1] = rng.standard_normal((3, S, S)).astype(np.float32)
    xf = x.copy()
    xf[:, 0] = rng.standard_normal((3, S, S)).astype(np.float32)
    m = npf.Model(os.path.join(d, "model.gguf"))
    inputs = {"input": x, "lastframe": xl, "firstframe": xf}
    print(f"levjepa: wrote {d}; fixture outputs = numpy float64 forward of the GGUF")
    outs = {}
    for n, v in inputs.items():
        sfx = "" if n == "input" else f"_{n}"
        if sfx:
            save(d, f"input{sfx}.npy", v)
        else:
            save(d, "input.npy", v)
        outs[n] = npf.levjepa_forward(m, v)
        save(d, f"tokens{sfx}.npy", outs[n].astype(np.float32))
        save(d, f"cls{sfx}.npy", outs[n][0].astype(np.float32))
    ok, res = npf.check_levjepa(d)
    print("cross-check: torch forward from transformers' V-JEPA 2 modules (float32) vs the fixture:")
    rep = npf.Report()
    tout = {n: f32(ref(v)) for n, v in inputs.items()}
    for n in inputs:
        sfx = "" if n == "input" else f"_{n}"
        rep(f"torch tokens{sfx} vs tokens{sfx}.npy", tout[n], np.load(os.path.join(d, f"tokens{sfx}.npy")))
        rep(f"torch cls{sfx} vs cls{sfx}.npy", tout[n][0], np.load(os.path.join(d, f"cls{sfx}.npy")))
    print("block-causal structure (torch float32 forward):")
    npf.levjepa_structure(m, inputs, tout, rep)
    full = f32(ref(x, full=True))
    rep("torch, full attention: cls vs cls.npy (negative control)", full[0], np.load(os.path.join(d, "cls.npy")),
        bar=False, must_fail=True)
    ok &= rep.ok
    finish(d, "levjepa", {**c, "note": "VJEPA2Config of the torch cross-check (its predictor is not used)"},
           {"cls_init": "0.5 N(0,1)"}, res, rep.res, ok)
    return ok


FAMILIES = {"ijepa": ("hf_ijepa", gen_ijepa), "hfvit": ("hf_vit", gen_vit), "lewm": ("lewm", gen_lewm),
            "levjepa": ("levjepa", gen_levjepa)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out-root", default=os.path.normpath(os.path.join(here, "..", "data")))
    ap.add_argument("--only", nargs="*", choices=sorted(FAMILIES), default=sorted(FAMILIES))
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    ok = True
    total = 0
    for fam in ("ijepa", "hfvit", "lewm", "levjepa"):
        if fam not in args.only:
            continue
        folder, fn = FAMILIES[fam]
        d = os.path.join(args.out_root, folder)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):  # stale outputs of an earlier run (README.md is kept)
            if f.endswith((".npy", ".gguf")):
                os.remove(os.path.join(d, f))
        good = fn(d)
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        total += size
        print(f"{folder}: {'PASS' if good else 'FAIL'}, {size / 1e6:.3f} MB\n")
        ok &= good
    print(f"total size: {total / 1e6:.3f} MB")
    print("RESULT:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
