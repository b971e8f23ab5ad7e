"""Generate tests/data/hf_vjepa2/: reference outputs of Hugging Face transformers' V-JEPA 2
(VJEPA2Model encoder + predictor, VJEPA2ForVideoClassification attentive pooler + classifier) for a
tiny random-weight config, with the model written as schema-v1 GGUF files (all-F32 and an
f16-weight variant) for the parity tests of jepa.c.

Rerun (from the repository root, with the venv described in tests/gen/README.md):
    .venv-gen/bin/python tests/gen/gen_hf_vjepa2.py            # writes tests/data/hf_vjepa2/
    .venv-gen/bin/python tests/gen/gen_hf_vjepa2.py --out DIR  # elsewhere
The run is deterministic (fixed seeds, 1 torch thread). At the end it re-reads the written files
and checks them with tests/gen/np_ref.py (a float64 numpy forward that reads only the GGUF);
it exits non-zero if any check misses the bar (token cosine >= 0.9999999, rel <= 1e-5) or a
negative control is not clearly worse.
"""
import argparse
import copy
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
from transformers import VJEPA2Config, VJEPA2ForVideoClassification

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import np_ref  # noqa: E402

SEED = 20250611
LABELS = ["pour", "stir", "cut", "open", "close"]
QK_GAIN = 8.0
BRANCH_GAIN = 12.0

CONFIG = dict(
    patch_size=16, crop_size=64, frames_per_clip=4, tubelet_size=2, in_chans=3,
    hidden_size=64, num_attention_heads=1, num_hidden_layers=2, mlp_ratio=4.0,
    layer_norm_eps=1e-6, qkv_bias=True, hidden_act="gelu", drop_path_rate=0.0,
    num_pooler_layers=3,
    pred_hidden_size=64, pred_num_attention_heads=2, pred_num_hidden_layers=2,
    pred_num_mask_tokens=10, pred_mlp_ratio=4.0,
)


# ---------------------------------------------------------------- model
def build_model():
    cfg = VJEPA2Config(**CONFIG, id2label={i: n for i, n in enumerate(LABELS)},
                       label2id={n: i for i, n in enumerate(LABELS)}, attn_implementation="eager")
    torch.manual_seed(SEED)
    model = VJEPA2ForVideoClassification(cfg).float().eval()
    assert model.config._attn_implementation == "eager", model.config._attn_implementation
    perturb(model)
    return model


@torch.no_grad()
def perturb(model):
    """Make every parameter matter (HF init leaves LN = (1, 0), biases 0, mask tokens 0 and
    near-uniform attention). Same recipe as the Meta fixtures in tests/data."""
    g = torch.Generator().manual_seed(SEED + 1)
    N = lambda t: torch.randn(t.shape, generator=g, dtype=t.dtype)
    for name, mod in model.named_modules():
        if isinstance(mod, nn.LayerNorm):
            mod.weight.copy_(1.0 + 0.25 * N(mod.weight))
            mod.bias.copy_(0.1 * N(mod.bias))
        elif isinstance(mod, (nn.Linear, nn.Conv3d)) and mod.bias is not None:
            mod.bias.copy_(0.02 * N(mod.bias))
    for name, p in model.named_parameters():
        if name.endswith("mask_tokens") or name.endswith("query_tokens"):
            p.copy_(0.5 * N(p))
        # q and k projections of every attention (RoPE self-attn, pooler self- and cross-attn)
        if re.search(r"\.(query|key|q_proj|k_proj)\.weight$", name):
            width = p.shape[1]
            p.mul_(QK_GAIN * (128.0 / width) ** 0.5)
        # residual branch outputs: attention out-projection and FFN fc2
        if re.search(r"\.(attention\.proj|out_proj|fc2)\.weight$", name):
            p.mul_(BRANCH_GAIN)
    for name, p in model.named_parameters():
        assert torch.isfinite(p).all(), name
        assert p.abs().max() > 0, f"{name} is all zero"


# ---------------------------------------------------------------- HF -> GGUF (schema v1, §2 key map)
def gguf_tensors(model):
    """Ordered list of (gguf_name, [hf_param_names], np.float32 array), mirroring the tensor order
    of tests/data/vjepa2_tiny/model.gguf. HF prefix 'vjepa2.' (VJEPA2ForVideoClassification)."""
    sd = {k: v.detach().cpu().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    cfg = model.config
    out, used = [], set()

    def put(name, keys, arr):
        out.append((name, list(keys), np.ascontiguousarray(arr, dtype=np.float32)))
        used.update(keys)

    def one(name, key, shape=None):
        a = sd[key]
        put(name, [key], a.reshape(shape) if shape else a)

    def rope_block(dst, src):
        one(f"{dst}.ln1.weight", f"{src}.norm1.weight")
        one(f"{dst}.ln1.bias", f"{src}.norm1.bias")
        ks = [f"{src}.attention.{n}.weight" for n in ("query", "key", "value")]
        put(f"{dst}.attn_qkv.weight", ks, np.concatenate([sd[k] for k in ks], 0))
        ks = [f"{src}.attention.{n}.bias" for n in ("query", "key", "value")]
        put(f"{dst}.attn_qkv.bias", ks, np.concatenate([sd[k] for k in ks], 0))
        one(f"{dst}.attn_out.weight", f"{src}.attention.proj.weight")
        one(f"{dst}.attn_out.bias", f"{src}.attention.proj.bias")
        mlp_ln2(dst, src, "norm2")

    def mlp_ln2(dst, src, ln2):
        one(f"{dst}.ln2.weight", f"{src}.{ln2}.weight")
        one(f"{dst}.ln2.bias", f"{src}.{ln2}.bias")
        for a, b in (("ffn_up", "fc1"), ("ffn_down", "fc2")):
            one(f"{dst}.{a}.weight", f"{src}.mlp.{b}.weight")
            one(f"{dst}.{a}.bias", f"{src}.mlp.{b}.bias")

    P = "vjepa2."
    D = cfg.hidden_size
    one("enc.patch_embed.weight", P + "encoder.embeddings.patch_embeddings.proj.weight", (D, -1))
    one("enc.patch_embed.bias", P + "encoder.embeddings.patch_embeddings.proj.bias")
    for i in range(cfg.num_hidden_layers):
        rope_block(f"enc.blk.{i}", P + f"encoder.layer.{i}")
    one("enc.norm.weight", P + "encoder.layernorm.weight")
    one("enc.norm.bias", P + "encoder.layernorm.bias")
    one("pred.embed.weight", P + "predictor.embeddings.predictor_embeddings.weight")
    one("pred.embed.bias", P + "predictor.embeddings.predictor_embeddings.bias")
    one("pred.mask_tokens", P + "predictor.embeddings.mask_tokens", (cfg.pred_num_mask_tokens, -1))
    for i in range(cfg.pred_num_hidden_layers):
        rope_block(f"pred.blk.{i}", P + f"predictor.layer.{i}")
    one("pred.norm.weight", P + "predictor.layernorm.weight")
    one("pred.norm.bias", P + "predictor.layernorm.bias")
    one("pred.proj.weight", P + "predictor.proj.weight")
    one("pred.proj.bias", P + "predictor.proj.bias")
    one("head.query", "pooler.query_tokens", (1, D))
    for i in range(cfg.num_pooler_layers):
        s, d = f"pooler.self_attention_layers.{i}", f"head.blk.{i}"
        one(f"{d}.ln1.weight", f"{s}.layer_norm1.weight")
        one(f"{d}.ln1.bias", f"{s}.layer_norm1.bias")
        for w in ("weight", "bias"):
            ks = [f"{s}.self_attn.{n}_proj.{w}" for n in "qkv"]
            put(f"{d}.attn_qkv.{w}", ks, np.concatenate([sd[k] for k in ks], 0))
        one(f"{d}.attn_out.weight", f"{s}.self_attn.out_proj.weight")
        one(f"{d}.attn_out.bias", f"{s}.self_attn.out_proj.bias")
        mlp_ln2(d, s, "layer_norm2")
    s = "pooler.cross_attention_layer"
    one("head.xattn.ln_kv.weight", f"{s}.layer_norm1.weight")
    one("head.xattn.ln_kv.bias", f"{s}.layer_norm1.bias")
    for n in "qkv":
        one(f"head.xattn.{n}.weight", f"{s}.cross_attn.{n}_proj.weight")
        one(f"head.xattn.{n}.bias", f"{s}.cross_attn.{n}_proj.bias")
    mlp_ln2("head.xattn", s, "layer_norm2")
    one("head.cls.weight", "classifier.weight")
    one("head.cls.bias", "classifier.bias")
    left = set(sd) - used
    assert not left, f"unmapped HF tensors: {sorted(left)}"
    return out


_QUANT_BLK = re.compile(r"\.(attn_qkv|attn_q|attn_k|attn_v|attn_out|ffn_up|ffn_down)\.weight$")


def quantizable(name, arr):
    """Schema 'Quantization rules': 2-D weights of *.attn_*, *.ffn_*, pred.proj*, pred.embed*,
    enc.proj.*, head.blk.*, head.xattn.{q,k,v}, head.cls. (Patch embeddings stay F32.)"""
    if arr.ndim != 2 or not name.endswith(".weight"):
        return False
    return bool(_QUANT_BLK.search(name) or re.match(r"(pred\.proj|pred\.embed|enc\.proj\.|head\.blk\.)", name)
                or name in ("head.xattn.q.weight", "head.xattn.k.weight", "head.xattn.v.weight", "head.cls.weight"))


def write_gguf(path, model, f16):
    cfg = model.config
    D, Dp = cfg.hidden_size, cfg.pred_hidden_size
    w = gguf.GGUFWriter(path, arch="jepa")
    w.add_string("general.name", "vjepa2-tiny-hf-random-fixture" + ("-f16" if f16 else ""))
    w.add_string("general.license", "mit")
    w.add_string("general.source_url",
                 f"https://github.com/huggingface/transformers/blob/v{transformers.__version__}/src/transformers/"
                 "models/vjepa2/modeling_vjepa2.py (random init, tests/gen/gen_hf_vjepa2.py)")
    w.add_uint32("general.file_type", 1 if f16 else 0)
    w.add_uint32("jepa.schema_version", 1)
    w.add_string("jepa.family", "vjepa2")
    w.add_string("jepa.modality", "video")
    w.add_uint32("jepa.enc.embed_dim", D)
    w.add_uint32("jepa.enc.n_layer", cfg.num_hidden_layers)
    w.add_uint32("jepa.enc.n_head", cfg.num_attention_heads)
    w.add_uint32("jepa.enc.ffn_dim", int(D * cfg.mlp_ratio))
    w.add_uint32("jepa.enc.patch_size", cfg.patch_size)
    w.add_uint32("jepa.enc.tubelet_size", cfg.tubelet_size)
    w.add_uint32("jepa.enc.img_size", cfg.crop_size)
    w.add_uint32("jepa.enc.n_frames", cfg.frames_per_clip)
    w.add_uint32("jepa.enc.in_chans", cfg.in_chans)
    w.add_float32("jepa.enc.ln_eps", cfg.layer_norm_eps)
    w.add_string("jepa.enc.act", "gelu_erf")
    w.add_string("jepa.enc.pos_type", "rope3d")
    w.add_float32("jepa.enc.rope_theta", 10000.0)
    w.add_bool("jepa.enc.rope_interpolate", False)
    w.add_string("jepa.enc.rope_freq_layout", "tiled")
    w.add_bool("jepa.enc.cls_token", False)
    w.add_uint32("jepa.enc.n_registers", 0)
    w.add_bool("jepa.enc.qkv_fused", True)
    w.add_bool("jepa.enc.modality_embed", False)
    w.add_bool("jepa.enc.image_patch_embed", False)
    w.add_bool("jepa.enc.layer_scale", False)
    w.add_string("jepa.pred.kind", "masked")
    w.add_uint32("jepa.pred.embed_dim", Dp)
    w.add_uint32("jepa.pred.n_layer", cfg.pred_num_hidden_layers)
    w.add_uint32("jepa.pred.n_head", cfg.pred_num_attention_heads)
    w.add_uint32("jepa.pred.ffn_dim", int(Dp * cfg.pred_mlp_ratio))
    w.add_uint32("jepa.pred.n_mask_tokens", cfg.pred_num_mask_tokens)
    w.add_uint32("jepa.pred.out_dim", D)
    w.add_string("jepa.pred.rope_freq_layout", "tiled")
    w.add_bool("jepa.pred.rope_interpolate", False)
    w.add_uint32("jepa.pred.grid_size", cfg.crop_size // cfg.patch_size)
    w.add_float32("jepa.pred.ln_eps", cfg.layer_norm_eps)
    w.add_string("jepa.pred.act", "gelu_erf")
    w.add_bool("jepa.pred.qkv_bias", True)
    w.add_string("jepa.head.kind", "attentive_pool")
    w.add_uint32("jepa.head.n_classes", cfg.num_labels)
    w.add_uint32("jepa.head.n_pool_layers", cfg.num_pooler_layers)
    w.add_array("jepa.head.labels", [cfg.id2label[i] for i in range(cfg.num_labels)])
    # extension keys: what HF's VJEPA2AttentivePooler really uses (config.layer_norm_eps, config.num_attention_heads)
    w.add_float32("jepa.head.ln_eps", cfg.layer_norm_eps)
    w.add_uint32("jepa.head.n_head", cfg.num_attention_heads)
    w.add_array("jepa.pre.mean", [0.485, 0.456, 0.406])
    w.add_array("jepa.pre.std", [0.229, 0.224, 0.225])
    w.add_uint32("jepa.pre.resize_short", int(cfg.crop_size * 256 / 224))
    w.add_uint32("jepa.pre.crop", cfg.crop_size)
    w.add_string("jepa.pre.resample", "bilinear")
    w.add_float32("jepa.pre.rescale", 1.0 / 255.0)
    n16 = 0
    for name, _, arr in gguf_tensors(model):
        if f16 and quantizable(name, arr):
            h = arr.astype(np.float16)
            assert np.array_equal(h.astype(np.float32), arr), f"{name}: not f16-representable (round first)"
            arr, n16 = h, n16 + 1
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return n16


@torch.no_grad()
def round_to_f16(model):
    """Copy of the model whose quantizable matmul weights are rounded to f16 (values kept in f32)."""
    m = copy.deepcopy(model)
    params = dict(m.named_parameters())
    names = []
    for name, keys, arr in gguf_tensors(m):
        if quantizable(name, arr):
            for k in keys:
                params[k].copy_(params[k].half().float())
                names.append(k)
    return m, names


# ---------------------------------------------------------------- reference outputs
@torch.no_grad()
def run_hf(model, video, ctx_ids, tgt_ids):
    """All outputs of the HF modules for one clip. video [C,T,H,W] -> HF wants [B,T,C,H,W]."""
    x = torch.from_numpy(video)[None].permute(0, 2, 1, 3, 4).contiguous()
    base = model.vjepa2
    o = base(pixel_values_videos=x)  # default: context = target = arange(N)
    tokens = o.last_hidden_state[0]
    pred_all = o.predictor_output.last_hidden_state[0]
    o2 = base(pixel_values_videos=x, context_mask=[torch.from_numpy(ctx_ids).long()[None]],
              target_mask=[torch.from_numpy(tgt_ids).long()[None]])
    assert torch.equal(o2.last_hidden_state[0], tokens)
    pred_split = o2.predictor_output.last_hidden_state[0]
    logits = model(pixel_values_videos=x).logits[0]
    pooled = model.pooler(tokens[None])[0]
    logits_from_pooled = model.classifier(pooled)
    assert torch.allclose(logits_from_pooled, logits, rtol=0, atol=1e-6), (logits_from_pooled, logits)
    f = lambda t: t.detach().cpu().numpy().astype(np.float32)
    return dict(tokens=f(tokens), pred_all=f(pred_all), pred_split=f(pred_split), pooled=f(pooled), logits=f(logits))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.normpath(os.path.join(here, "..", "data", "hf_vjepa2")))
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out, exist_ok=True)

    model = build_model()
    cfg = model.config
    rng = np.random.default_rng(SEED)
    C, T, S = cfg.in_chans, cfg.frames_per_clip, cfg.crop_size
    video = rng.standard_normal((C, T, S, S)).astype(np.float32)
    N = (T // cfg.tubelet_size) * (S // cfg.patch_size) ** 2
    perm = rng.permutation(N).astype(np.int32)
    ctx_ids, tgt_ids = perm[:20].copy(), perm[20:32].copy()
    ctx_all = np.arange(N, dtype=np.int32)

    ref = run_hf(model, video, ctx_ids, tgt_ids)
    m16, rounded = round_to_f16(model)
    ref16 = run_hf(m16, video, ctx_ids, tgt_ids)

    save = lambda n, a: np.save(os.path.join(args.out, n), a)
    save("input.npy", video)
    save("ctx_all.npy", ctx_all)
    save("ctx_ids.npy", ctx_ids)
    save("tgt_ids.npy", tgt_ids)
    for k, v in ref.items():
        save(f"{k}.npy", v)
    for k, v in ref16.items():
        save(f"{k}_f16w.npy", v)
    n32 = write_gguf(os.path.join(args.out, "model.gguf"), model, f16=False)
    n16 = write_gguf(os.path.join(args.out, "model_f16.gguf"), m16, f16=True)
    assert n32 == 0
    print(f"wrote {args.out}: model.gguf (all F32), model_f16.gguf ({n16} F16 tensors from "
          f"{len(rounded)} rounded HF weights)")

    print("checks: numpy float64 forward reading only the GGUF vs HF torch float32")
    ok, res = np_ref.check_dir(args.out)

    files = {}
    for fn in sorted(os.listdir(args.out)):
        p = os.path.join(args.out, fn)
        if fn.endswith(".npy"):
            a = np.load(p)
            files[fn] = {"shape": list(a.shape), "dtype": str(a.dtype)}
        elif fn.endswith(".gguf"):
            files[fn] = {"bytes": os.path.getsize(p)}
    meta = {
        "generator": "tests/gen/gen_hf_vjepa2.py",
        "seed": SEED,
        "config": {**CONFIG, "id2label": LABELS, "attn_implementation": "eager"},
        "perturbation": {
            "layernorm": "weight = 1 + 0.25 N(0,1), bias = 0.1 N(0,1)",
            "linear_conv_bias": "0.02 N(0,1)",
            "mask_tokens_and_pooler_query": "0.5 N(0,1)",
            "qk_weight_scale": f"{QK_GAIN} * sqrt(128 / in_width) (= {QK_GAIN * (128 / 64) ** 0.5:.4f} here)",
            "attn_out_and_fc2_weight_scale": BRANCH_GAIN,
            "other_weights": "HF _init_weights (trunc_normal std 0.02; pooler out_proj/fc2 std 0.02/sqrt(i))",
        },
        "predictor_mask_index": 1,
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "gguf": version("gguf"), "numpy": np.__version__},
        "files": files,
        "checks": res,
        "bar": {"cos_min": np_ref.COS_BAR, "rel": np_ref.REL_BAR},
    }
    with open(os.path.join(args.out, "meta.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
        fh.write("\n")
    total = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"total size of {args.out}: {total / 1e6:.2f} MB")
    print("RESULT:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
