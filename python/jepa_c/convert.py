"""Convert Hugging Face and Meta checkpoints to GGUF files of schema v1 (docs/convert.md).

    python -m jepa_c.convert SRC OUT.gguf [--ftype f32|f16|bf16] [--name NAME]

SRC is one of
  - a Hugging Face model folder (config.json, model.safetensors or sharded
    model-*.safetensors with their index, and the processor's preprocessor_config.json or
    video_preprocessor_config.json when present): VJEPA2Model and
    VJEPA2ForVideoClassification (family vjepa2), IJepaModel (ijepa), ViTModel and
    Dinov2Model (hfvit);
  - a Meta V-JEPA 2.1 torch-hub checkpoint (.pt / .pth, torch.save's zip format): the
    encoder key (default ema_encoder, as the hub loads) and the predictor (vjepa2_1). It is
    read by a restricted unpickler (jepa._pickle) that rebuilds tensors as numpy arrays and
    refuses every other global: no code in the file ever runs.

Every source tensor is mapped or named in a documented drop list (an optimizer's state, a
ViT's unused tanh pooler, ...); an unmapped or missing one stops the conversion with its
name. --ftype f16 / bf16 stores the schema's quantization set (docs/gguf-schema.md) in
that type and everything else as F32. The output is written into a private temporary
folder beside OUT.gguf, opened by jepa.c's own loader (a file it would refuse is never
renamed into place), then renamed; an OUT that is (or links to) a file the conversion reads
is refused. Every size read is bounded before anything is allocated (docs/convert.md,
"Hostile files"). Needs numpy and gguf (pip install .[convert]); not torch.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sys
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _pickle
from ._pickle import show

__all__ = ["convert", "ConvertError", "main"]


class ConvertError(Exception):
    """The checkpoint cannot be converted; the message names the reason (a key, a file)."""


IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
_MAX_HEADER = 8 << 20            # a safetensors JSON header (~150 bytes a tensor)
_MAX_JSON = 1 << 20              # config.json, a processor config
_MAX_INDEX = 16 << 20            # model.safetensors.index.json
_MAX_JSON_DEPTH = 32             # the deepest of these nests 3 deep
_MAX_JSON_CONTAINERS = 1 << 18   # objects and arrays in one JSON text
_U32 = 1 << 32
_SAFETENSORS_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2), "F64": ("<f8", 8),
                       "I64": ("<i8", 8), "I32": ("<i4", 4), "BOOL": ("?", 1), "U8": ("u1", 1)}


# ---- reading tensors ------------------------------------------------------------------------

def _as_f32(a: np.ndarray) -> np.ndarray:
    """float32 of a float tensor (bfloat16 bits widened exactly)."""
    if isinstance(a, _pickle.BF16) or getattr(a, "_bf16", False):
        return (np.asarray(a, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
    if a.dtype.kind != "f":
        raise ConvertError(f"a tensor of type {a.dtype} where float weights are expected")
    return np.asarray(a, dtype=np.float32)


class _BF16Memmap(np.ndarray):
    _bf16 = True


def _open(path: str, seen: Optional[list]):
    try:
        return _pickle.open_regular(path, seen)
    except _pickle.UnsafeCheckpoint as e:
        raise ConvertError(str(e)) from None


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ConvertError(f"the name {show(k)} appears twice in one JSON object")
        d[k] = v
    return d


def _parse_json(text: bytes, where: str):
    """json.loads with our bounds, checked on the bytes first: nesting at most _MAX_JSON_DEPTH
    (not Python's recursion limit), at most _MAX_JSON_CONTAINERS objects and arrays, no name
    twice in an object."""
    # a string's closing quote is optional in the pattern, so that every match succeeds and
    # the scan stays linear (an unterminated string of escaped quotes made it quadratic)
    brackets = re.sub(rb'[^\[\]{}]', b"", re.sub(rb'"(?:[^"\\]|\\.)*"?', b"", text, flags=re.S))
    if len(brackets) > 2 * _MAX_JSON_CONTAINERS:
        raise ConvertError(f"{where}: more than {_MAX_JSON_CONTAINERS} JSON objects and arrays")
    b = np.frombuffer(brackets, np.uint8)
    if b.size and np.cumsum(np.where((b == ord("[")) | (b == ord("{")), 1, -1)).max() > _MAX_JSON_DEPTH:
        raise ConvertError(f"{where}: JSON nested more than {_MAX_JSON_DEPTH} deep")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except ConvertError as e:
        raise ConvertError(f"{where}: {e}") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ConvertError(f"{where}: not JSON ({show(str(e))})") from None


def _read_json(path: str, cap: int, seen: Optional[list]):
    with _open(path, seen) as f:
        text = f.read(cap + 1)
    if len(text) > cap:
        raise ConvertError(f"{path}: larger than {cap} bytes")
    return _parse_json(text, path)


def read_safetensors(path: str, seen: Optional[list] = None) -> Dict[str, np.ndarray]:
    """The tensors of a .safetensors file, memory-mapped (the format: an 8-byte little-endian
    header length, a JSON header of {name: {dtype, shape, data_offsets}}, the data). Refuses
    a name twice, tensors whose bytes overlap, offsets outside the file and a header over
    _MAX_HEADER bytes or nested deeper than _MAX_JSON_DEPTH. seen, when given, collects
    (device, inode) of the file."""
    with _open(path, seen) as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(8)
        if len(head) != 8:
            raise ConvertError(f"{path}: not a safetensors file (shorter than its header length)")
        n = int.from_bytes(head, "little")
        if n > _MAX_HEADER or n + 8 > size:
            raise ConvertError(f"{path}: a safetensors header of {n} bytes in a {size}-byte file "
                               f"(at most {_MAX_HEADER})")
        header = _parse_json(f.read(n), f"{path}: the safetensors header")
        if not isinstance(header, dict):
            raise ConvertError(f"{path}: the safetensors header is not a JSON object")
        data = np.memmap(f, dtype=np.uint8, mode="r", offset=8 + n) if size > 8 + n else np.zeros(0, np.uint8)
    out, spans = {}, []
    for name, t in header.items():
        if name == "__metadata__":
            continue
        try:
            dt, item = _SAFETENSORS_DTYPES[t["dtype"]]
            shape = [_int(s) for s in t["shape"]]
            b, e = (_int(x) for x in t["data_offsets"])
            if len(t["data_offsets"]) != 2 or len(shape) > 8:
                raise ValueError
        except (KeyError, TypeError, ValueError):
            raise ConvertError(f"{path}: tensor {show(name)}: unknown dtype or malformed entry {show(str(t))}") \
                from None
        count = math.prod(shape)   # Python integers: no overflow on a hostile shape
        if any(s < 0 for s in shape) or not 0 <= b <= e <= data.size or e - b != count * item:
            raise ConvertError(f"{path}: tensor {show(name)}: data offsets {b}..{e} do not hold shape {shape} "
                               f"of {t['dtype']} in {data.size} bytes")
        spans.append((b, e, name))
        a = data[b:e].view(dt).reshape(shape)
        out[name] = a.view(_BF16Memmap) if t["dtype"] == "BF16" else a
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0 and b1 < e1:
            raise ConvertError(f"{path}: tensors {show(n0)} and {show(n1)} share bytes {b1}..{min(e0, e1)}")
    return out


def _int(v) -> int:
    """An integer of a JSON file (not a bool, not a float, not a string)."""
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError(v)
    return v


def _load_hf(src: str, seen: list) -> Tuple[dict, Dict[str, np.ndarray], Optional[dict]]:
    cfg_path = os.path.join(src, "config.json")
    if not os.path.lexists(cfg_path):
        raise ConvertError(f"{src}: no config.json (a Hugging Face model folder has one)")
    cfg = _read_json(cfg_path, _MAX_JSON, seen)
    if not isinstance(cfg, dict):
        raise ConvertError(f"{cfg_path}: not a JSON object")
    index = os.path.join(src, "model.safetensors.index.json")
    if os.path.lexists(os.path.join(src, "model.safetensors")):
        files = ["model.safetensors"]
    elif os.path.lexists(index):
        wm = _read_json(index, _MAX_INDEX, seen)
        wm = wm.get("weight_map") if isinstance(wm, dict) else None
        if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
            raise ConvertError(f"{index}: no weight_map object of tensor names to shard files")
        files = sorted(set(wm.values()))
    else:
        bins = [n for n in os.listdir(src) if n.endswith(".bin")]
        raise ConvertError(f"{src}: no model.safetensors" + (f" ({bins[0]} is a pickle: re-save the model with "
                                                            "safe_serialization=True)" if bins else ""))
    tensors: Dict[str, np.ndarray] = {}
    for fn in files:
        if os.path.basename(fn) != fn or fn in ("", ".", ".."):
            raise ConvertError(f"{index}: shard name {show(fn)} leaves the folder")
        for k, v in read_safetensors(os.path.join(src, fn), seen).items():
            if k in tensors:
                raise ConvertError(f"{src}: tensor {show(k)} appears in two shards")
            tensors[k] = v
    pre = None
    for name in ("video_preprocessor_config.json", "preprocessor_config.json"):
        p = os.path.join(src, name)
        if os.path.lexists(p):
            pre = _read_json(p, _MAX_JSON, seen)
            if not isinstance(pre, dict):
                raise ConvertError(f"{p}: not a JSON object")
            break
    return cfg, tensors, pre


# ---- the tensor map -----------------------------------------------------------------------

class _Map:
    """Source tensors taken one by one into the GGUF's ordered list; finish() refuses any
    that was neither taken nor matched by a documented drop pattern."""

    def __init__(self, src: Dict[str, np.ndarray], where: str):
        self.src, self.where = src, where
        self.out: List[Tuple[str, np.ndarray]] = []
        self.used: set = set()

    def has(self, key: str) -> bool:
        return key in self.src

    def get(self, key: str) -> np.ndarray:
        if key not in self.src:
            raise ConvertError(f"{self.where}: tensor {key} is missing")
        self.used.add(key)
        return _as_f32(self.src[key])

    def put(self, name: str, a: np.ndarray):
        self.out.append((name, np.ascontiguousarray(a, dtype=np.float32)))

    def one(self, name: str, key: str, shape=None):
        a = self.get(key)
        if shape is not None:
            try:
                a = a.reshape(shape)
            except ValueError:
                raise ConvertError(f"{self.where}: tensor {key} has shape {list(a.shape)}, expected {shape}") from None
        self.put(name, a)

    def pair(self, name: str, key: str):
        """name.weight and name.bias from key.weight and key.bias."""
        for w in ("weight", "bias"):
            self.one(f"{name}.{w}", f"{key}.{w}")

    def fused(self, name: str, keys: Sequence[str]):
        parts = [self.get(k) for k in keys]
        if len({p.shape[1:] for p in parts}) != 1:
            raise ConvertError(f"{self.where}: {', '.join(keys)} have different shapes")
        self.put(name, np.concatenate(parts, 0))

    def block(self, dst: str, ln1=None, qkv=None, out=None, ln2=None, up=None, down=None):
        """One transformer block's weights and biases: each argument the source prefix of a
        part (qkv: one fused prefix, or the three of q, k, v to be stacked [q; k; v])."""
        for part, key in (("ln1", ln1), ("attn_qkv", qkv), ("attn_out", out), ("ln2", ln2), ("ffn_up", up),
                          ("ffn_down", down)):
            if key is None:
                continue
            if isinstance(key, str):
                self.pair(f"{dst}.{part}", key)
            else:
                for w in ("weight", "bias"):
                    self.fused(f"{dst}.{part}.{w}", [f"{k}.{w}" for k in key])

    def finish(self, drop: Sequence[str] = ()) -> Tuple[List[Tuple[str, np.ndarray]], List[str]]:
        dropped, left = [], []
        for k in self.src:
            if k in self.used:
                continue
            (dropped if any(re.fullmatch(p, k) for p in drop) else left).append(k)
        if left:
            more = f" (and {len(left) - 5} more)" if len(left) > 5 else ""
            names = ", ".join(show(k) for k in sorted(left)[:5])
            raise ConvertError(f"{self.where}: unmapped tensor{'s' if len(left) > 1 else ''} "
                               f"{names}{more}: not part of a {self.where.split(':')[0]} "
                               "model as schema v1 knows it")
        return self.out, sorted(dropped)


def _count(src: Dict[str, np.ndarray], pattern: str) -> int:
    ids = {int(m.group(1)) for k in src for m in [re.fullmatch(pattern, k)] if m}
    if ids and ids != set(range(len(ids))):
        raise ConvertError(f"blocks {sorted(ids)} are not numbered 0 .. {len(ids) - 1}")
    return len(ids)


# ---- GGUF keys -------------------------------------------------------------------------------

def _finite32(k, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
        raise ConvertError(f"{k} = {show(v)}: not a number")
    if not math.isfinite(v) or abs(v) > 3.4e38:
        raise ConvertError(f"{k} = {show(v)}: not a finite float32")
    return float(v)


class _KV(list):
    """The GGUF's keys in order. Values are checked as they are put: integers in uint32 and
    finite float32 values, so that the writer never fails half-way (struct.error) and a NaN or
    an infinity read from a config never reaches the file."""

    def u32(self, k, v):
        if isinstance(v, float) and v.is_integer() and abs(v) < _U32:
            v = int(v)   # 64.0 in a config.json
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < _U32:
            raise ConvertError(f"{k} = {show(v)}: not an integer in 0 .. 2^32 - 1")
        self.append((k, "u32", int(v)))

    def f32(self, k, v):
        self.append((k, "f32", _finite32(k, v)))

    def b(self, k, v):
        self.append((k, "bool", bool(v)))

    def s(self, k, v):
        self.append((k, "str", str(v)))

    def arr(self, k, v):
        v = list(v)
        for x in v:
            if not isinstance(x, str):
                _finite32(k, x)
        self.append((k, "arr", v))


def _source_name(cfg: dict, src: str) -> str:
    return str(cfg.get("_name_or_path") or os.path.basename(os.path.normpath(src)))


def _general(kv: _KV, name: str, source: str, family: str, modality: str):
    kv.s("general.name", name)
    kv.s("general.source_url", source)
    kv.u32("jepa.schema_version", 1)
    kv.s("jepa.family", family)
    kv.s("jepa.modality", modality)


def _enc_common(kv: _KV, D, L, H, F, P, tub, img, frames, eps, pos_type, rope=None, cls=False, ls=False,
                mod=False, img_pe=False, hier=None):
    for k, v in (("embed_dim", D), ("n_layer", L), ("n_head", H), ("ffn_dim", F), ("patch_size", P),
                 ("tubelet_size", tub), ("img_size", img), ("n_frames", frames), ("in_chans", 3)):
        kv.u32(f"jepa.enc.{k}", v)
    kv.f32("jepa.enc.ln_eps", eps)
    kv.s("jepa.enc.act", "gelu_erf")
    kv.s("jepa.enc.pos_type", pos_type)
    if rope:
        kv.f32("jepa.enc.rope_theta", 10000.0)
        kv.b("jepa.enc.rope_interpolate", rope["interpolate"])
        kv.s("jepa.enc.rope_freq_layout", rope["layout"])
        if rope["interpolate"]:
            kv.u32("jepa.enc.rope_ref_grid", rope["ref_grid"])
    kv.b("jepa.enc.cls_token", cls)
    kv.u32("jepa.enc.n_registers", 0)
    kv.b("jepa.enc.qkv_fused", True)
    kv.b("jepa.enc.modality_embed", mod)
    kv.b("jepa.enc.image_patch_embed", img_pe)
    if hier:
        kv.arr("jepa.enc.hier_layers", hier)
    kv.b("jepa.enc.layer_scale", ls)


def _pre_keys(kv: _KV, pre: Optional[dict], image_size: int, default: dict, where: str,
              write_mode: bool = False) -> str:
    """jepa.pre.* from a Hugging Face processor config (or the family's defaults): returns a
    line saying where they came from."""
    p = dict(default)
    said = "the family's default preprocessing (no processor config)"
    if pre is not None:
        said = "the processor config"
        size = pre.get("size") or {}
        crop = pre.get("crop_size") or {}
        if isinstance(size, int):
            size = {"shortest_edge": size}
        if "shortest_edge" in size:
            p["mode"], p["short"] = "shortest_edge", int(size["shortest_edge"])
        elif "height" in size and "width" in size:
            if size["height"] != size["width"]:
                raise ConvertError(f"{where}: resize to {size['height']}x{size['width']}: schema v1 takes square sizes")
            p["mode"], p["short"] = "squash", int(size["height"])
        if pre.get("do_center_crop", "crop_size" in pre) and crop:
            if isinstance(crop, int):
                crop = {"height": crop, "width": crop}
            if crop.get("height") != crop.get("width"):
                raise ConvertError(f"{where}: crop {crop}: schema v1 takes square crops")
            p["crop"] = int(crop["height"])
        else:
            p["crop"] = p["short"]
        resample = pre.get("resample", 2)
        if resample not in (2, 3):
            raise ConvertError(f"{where}: resample {resample}: jepa.c has bilinear (2) and bicubic (3)")
        p["resample"] = "bilinear" if resample == 2 else "bicubic"
        if pre.get("do_normalize", True):
            p["mean"], p["std"] = pre.get("image_mean", p["mean"]), pre.get("image_std", p["std"])
        else:
            p["mean"], p["std"] = [0.0] * 3, [1.0] * 3
        p["rescale"] = pre.get("rescale_factor", 1 / 255) if pre.get("do_rescale", True) else 1.0
    kv.arr("jepa.pre.mean", [float(x) for x in p["mean"]])
    kv.arr("jepa.pre.std", [float(x) for x in p["std"]])
    kv.u32("jepa.pre.resize_short", p["short"])
    kv.u32("jepa.pre.crop", p["crop"])
    kv.s("jepa.pre.resample", p["resample"])
    if write_mode or p["mode"] != "shortest_edge":   # the image families say it (the default) too
        kv.s("jepa.pre.resize_mode", p["mode"])
    kv.f32("jepa.pre.rescale", p["rescale"])
    return said


# ---- Hugging Face families ------------------------------------------------------------------

def _hf_vjepa2(cfg: dict, src: Dict[str, np.ndarray], pre: Optional[dict], where: str):
    arch = (cfg.get("architectures") or ["VJEPA2Model"])[0]
    if arch not in ("VJEPA2Model", "VJEPA2ForVideoClassification"):
        raise ConvertError(f"{where}: architecture {arch}: jepa.c converts VJEPA2Model and "
                           "VJEPA2ForVideoClassification")
    if cfg.get("use_SiLU") or cfg.get("hidden_act", "gelu") != "gelu":
        raise ConvertError(f"{where}: activation {cfg.get('hidden_act')} / use_SiLU: schema v1 has exact GELU")
    P = "vjepa2." if arch == "VJEPA2ForVideoClassification" else ""
    m = _Map(src, f"V-JEPA 2 ({arch}): {where}")
    D, L, H = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
    Dp, Lp, Hp = cfg["pred_hidden_size"], cfg["pred_num_hidden_layers"], cfg["pred_num_attention_heads"]
    crop, patch = cfg["crop_size"], cfg["patch_size"]

    def block(dst, s):
        m.block(dst, ln1=f"{s}.norm1", qkv=[f"{s}.attention.{n}" for n in ("query", "key", "value")],
                out=f"{s}.attention.proj", ln2=f"{s}.norm2", up=f"{s}.mlp.fc1", down=f"{s}.mlp.fc2")

    if _count(src, re.escape(P) + r"encoder\.layer\.(\d+)\..*") != L:
        raise ConvertError(f"{where}: config.json says {L} encoder layers, the weights have another count")
    m.one("enc.patch_embed.weight", P + "encoder.embeddings.patch_embeddings.proj.weight", (D, -1))
    m.one("enc.patch_embed.bias", P + "encoder.embeddings.patch_embeddings.proj.bias")
    for i in range(L):
        block(f"enc.blk.{i}", f"{P}encoder.layer.{i}")
    m.pair("enc.norm", f"{P}encoder.layernorm")
    m.pair("pred.embed", f"{P}predictor.embeddings.predictor_embeddings")
    m.one("pred.mask_tokens", P + "predictor.embeddings.mask_tokens", (cfg["pred_num_mask_tokens"], Dp))
    for i in range(Lp):
        block(f"pred.blk.{i}", f"{P}predictor.layer.{i}")
    m.pair("pred.norm", f"{P}predictor.layernorm")
    m.pair("pred.proj", f"{P}predictor.proj")
    head = arch == "VJEPA2ForVideoClassification"
    labels = []
    if head:
        m.one("head.query", "pooler.query_tokens", (1, D))
        n_pool = cfg.get("num_pooler_layers", 3)
        for i in range(n_pool):
            s = f"pooler.self_attention_layers.{i}"
            m.block(f"head.blk.{i}", ln1=f"{s}.layer_norm1", qkv=[f"{s}.self_attn.{n}_proj" for n in "qkv"],
                    out=f"{s}.self_attn.out_proj", ln2=f"{s}.layer_norm2", up=f"{s}.mlp.fc1", down=f"{s}.mlp.fc2")
        s = "pooler.cross_attention_layer"
        m.pair("head.xattn.ln_kv", f"{s}.layer_norm1")
        for n in "qkv":
            m.pair(f"head.xattn.{n}", f"{s}.cross_attn.{n}_proj")
        m.block("head.xattn", ln2=f"{s}.layer_norm2", up=f"{s}.mlp.fc1", down=f"{s}.mlp.fc2")
        m.pair("head.cls", "classifier")
        K = m.src["classifier.bias"].shape[0]
        id2label = cfg.get("id2label") or {}
        labels = [str(id2label.get(str(i), id2label.get(i, f"class_{i}"))) for i in range(K)]
    tensors, dropped = m.finish()
    eps = cfg.get("layer_norm_eps", 1e-6)
    kv = _KV()
    _general(kv, _source_name(cfg, where), where, "vjepa2", "video")
    _enc_common(kv, D, L, H, int(D * cfg.get("mlp_ratio", 4.0)), patch, cfg["tubelet_size"], crop,
                cfg["frames_per_clip"], eps, "rope3d", rope=dict(interpolate=False, layout="tiled"))
    kv.s("jepa.pred.kind", "masked")
    for k, v in (("embed_dim", Dp), ("n_layer", Lp), ("n_head", Hp), ("ffn_dim", int(Dp * cfg.get("pred_mlp_ratio", 4.0))),
                 ("n_mask_tokens", cfg["pred_num_mask_tokens"]), ("out_dim", D)):
        kv.u32(f"jepa.pred.{k}", v)
    kv.s("jepa.pred.rope_freq_layout", "tiled")
    kv.b("jepa.pred.rope_interpolate", False)
    kv.u32("jepa.pred.grid_size", crop // patch)
    kv.f32("jepa.pred.ln_eps", eps)
    kv.s("jepa.pred.act", "gelu_erf")
    kv.b("jepa.pred.qkv_bias", cfg.get("qkv_bias", True))
    if head:
        kv.s("jepa.head.kind", "attentive_pool")
        kv.u32("jepa.head.n_classes", len(labels))
        kv.u32("jepa.head.n_pool_layers", cfg.get("num_pooler_layers", 3))
        kv.arr("jepa.head.labels", labels)
        # what HF's pooler really uses: config.layer_norm_eps and config.num_attention_heads
        kv.f32("jepa.head.ln_eps", eps)
        kv.u32("jepa.head.n_head", H)
    else:
        kv.s("jepa.head.kind", "none")
    said = _pre_keys(kv, pre, crop, dict(mean=IMAGENET_MEAN, std=IMAGENET_STD, short=int(crop * 256 / 224), crop=crop,
                                         resample="bilinear", mode="shortest_edge", rescale=1 / 255), where)
    return kv, tensors, dropped, said


# the Hugging Face names of one ViT-style block (as save_pretrained writes them)
_VIT_BLOCK = dict(ln1="layernorm_before", ln2="layernorm_after", fc1="intermediate.dense", fc2="output.dense")
_DINOV2_BLOCK = dict(ln1="norm1", ln2="norm2", fc1="mlp.fc1", fc2="mlp.fc2")


def _hf_vit_like(cfg: dict, src: Dict[str, np.ndarray], pre: Optional[dict], where: str, kind: str):
    """IJepaModel (ijepa), ViTModel and Dinov2Model (hfvit)."""
    arch = (cfg.get("architectures") or [""])[0]
    want = {"ijepa": "IJepaModel", "vit": "ViTModel", "dinov2": "Dinov2Model"}[kind]
    if arch and arch != want:
        raise ConvertError(f"{where}: architecture {arch}: jepa.c converts {want} (the encoder alone) for "
                           f"model_type {kind}")
    if cfg.get("hidden_act", "gelu") != "gelu" or cfg.get("use_swiglu_ffn"):
        raise ConvertError(f"{where}: activation {cfg.get('hidden_act')} / SwiGLU: schema v1 has exact GELU MLPs")
    prefix = next((p for p in ("", f"{kind}.") if f"{p}embeddings.patch_embeddings.projection.weight" in src), None)
    if prefix is None:
        raise ConvertError(f"{where}: tensor embeddings.patch_embeddings.projection.weight is missing")
    m = _Map(src, f"{want}: {where}")
    D, L, H = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
    P, S = cfg["patch_size"], cfg["image_size"]
    names = _DINOV2_BLOCK if kind == "dinov2" else _VIT_BLOCK
    if _count(src, re.escape(prefix) + r"encoder\.layer\.(\d+)\..*") != L:
        raise ConvertError(f"{where}: config.json says {L} layers, the weights have another count")
    cls = kind != "ijepa"
    m.one("enc.patch_embed.weight", prefix + "embeddings.patch_embeddings.projection.weight", (D, -1))
    m.one("enc.patch_embed.bias", prefix + "embeddings.patch_embeddings.projection.bias")
    m.one("enc.pos_embed", prefix + "embeddings.position_embeddings", (-1, D))   # CLS row first where there is one
    if cls:
        m.one("enc.cls_token", prefix + "embeddings.cls_token", (D,))
    for i in range(L):
        s, d = f"{prefix}encoder.layer.{i}.", f"enc.blk.{i}"
        m.block(d, ln1=s + names["ln1"], qkv=[f"{s}attention.attention.{n}" for n in ("query", "key", "value")],
                out=f"{s}attention.output.dense", ln2=s + names["ln2"], up=s + names["fc1"], down=s + names["fc2"])
        if kind == "dinov2":
            m.one(f"{d}.ls1", f"{s}layer_scale1.lambda1")
            m.one(f"{d}.ls2", f"{s}layer_scale2.lambda1")
    m.pair("enc.norm", f"{prefix}layernorm")
    # dropped: ViT's tanh pooler (not the CLS token: no JEPA feature reads it), Dinov2's
    # mask token (masked pre-training only), position-id buffers of old checkpoints
    tensors, dropped = m.finish(drop=[re.escape(prefix) + r"pooler\.dense\.(weight|bias)",
                                      re.escape(prefix) + r"embeddings\.mask_token",
                                      r".*position_ids"])
    F = int(D * cfg.get("mlp_ratio", 4)) if kind == "dinov2" else cfg["intermediate_size"]
    family = "ijepa" if kind == "ijepa" else "hfvit"
    kv = _KV()
    _general(kv, _source_name(cfg, where), where, family, "image")
    _enc_common(kv, D, L, H, F, P, 1, S, 1, cfg.get("layer_norm_eps", 1e-12),
                "sincos2d" if kind == "ijepa" else "learned", cls=cls, ls=kind == "dinov2")
    kv.s("jepa.head.kind", "none")
    if kind == "ijepa" or kind == "vit":   # ViTImageProcessor's defaults, at the model's size
        default = dict(mean=[0.5] * 3, std=[0.5] * 3, short=S, crop=S, resample="bilinear", mode="squash",
                       rescale=1 / 255)
    else:                                  # Dinov2's BitImageProcessor
        default = dict(mean=IMAGENET_MEAN, std=IMAGENET_STD, short=int(S * 256 / 224), crop=S, resample="bicubic",
                       mode="shortest_edge", rescale=1 / 255)
    said = _pre_keys(kv, pre, S, default, where, write_mode=True)
    return kv, tensors, dropped, said


# ---- Meta V-JEPA 2.1 ---------------------------------------------------------------------------

def _clean(sd: dict, where: str) -> Dict[str, np.ndarray]:
    """module.backbone.<name> -> <name> (src/hub/backbones.py's _clean_backbone_key)."""
    if not isinstance(sd, dict):
        raise ConvertError(f"{where}: not a state dict")
    out = {}
    for k, v in sd.items():
        if not isinstance(k, str) or not isinstance(v, np.ndarray):
            raise ConvertError(f"{where}: entry {show(k)} is not a named tensor")
        out[k.replace("module.", "").replace("backbone.", "")] = v
    return out


def _meta_vjepa2_1(path: str, encoder_key: str, img_size: int, n_frames: int, enc_heads: int, pred_heads: int,
                   seen: list):
    try:
        ck = _pickle.load(path, seen)
    except _pickle.UnsafeCheckpoint as e:
        raise ConvertError(str(e)) from None
    if not isinstance(ck, dict) or encoder_key not in ck or "predictor" not in ck:
        keys = ", ".join(sorted(map(show, ck))[:20]) if isinstance(ck, dict) else type(ck).__name__
        raise ConvertError(f"{path}: no '{show(encoder_key)}' and 'predictor' entries (has {keys}): not a V-JEPA 2.1 "
                           "training checkpoint")
    known = {"encoder", "ema_encoder", "target_encoder", "predictor", "opt", "scaler", "epoch", "loss",
             "batch_size", "world_size", "lr"}
    extra = sorted(show(k) for k in ck if not isinstance(k, str) or k not in known)
    if extra:
        raise ConvertError(f"{path}: unknown top-level entries {', '.join(extra[:20])}")
    enc = _clean(ck[encoder_key], f"{path}: {encoder_key}")
    pred = _clean(ck["predictor"], f"{path}: predictor")
    me = _Map(enc, f"V-JEPA 2.1 {encoder_key}: {path}")
    mp = _Map(pred, f"V-JEPA 2.1 predictor: {path}")
    w = me.get("patch_embed.proj.weight")
    if w.ndim != 5 or w.shape[1] != 3 or w.shape[3] != w.shape[4] or 0 in w.shape:
        raise ConvertError(f"{path}: patch_embed.proj.weight has shape {list(w.shape)}, expected [D, 3, t, p, p] "
                           "(none 0)")
    D, tub, P = w.shape[0], w.shape[2], w.shape[3]
    L = _count(enc, r"blocks\.(\d+)\..*")
    n_hier = _count(enc, r"norms_block\.(\d+)\..*")
    if L < 1 or n_hier < 1 or L % n_hier:
        raise ConvertError(f"{path}: {L} blocks and {n_hier} norms_block: not a V-JEPA 2.1 encoder")
    # the hierarchical outputs: after every L / n_hier blocks (ViT-B: 2, 5, 8, 11)
    hier = [(k + 1) * (L // n_hier) - 1 for k in range(n_hier)]
    H = enc_heads or max(D // 64, 1)
    if D % H:
        raise ConvertError(f"{path}: embed_dim {D} is not a multiple of {H} heads (give --enc-heads)")
    me.put("enc.patch_embed.weight", w.reshape(D, -1))
    me.one("enc.patch_embed.bias", "patch_embed.proj.bias")
    me.one("enc.patch_embed_img.weight", "patch_embed_img.proj.weight", (D, -1))
    me.one("enc.patch_embed_img.bias", "patch_embed_img.proj.bias")
    me.one("enc.mod_embed_img", "img_mod_embed", (D,))
    me.one("enc.mod_embed_video", "video_mod_embed", (D,))

    def blocks(m, dst, src, n):
        for i in range(n):
            s = f"{src}.{i}"
            m.block(f"{dst}.blk.{i}", ln1=f"{s}.norm1", qkv=f"{s}.attn.qkv", out=f"{s}.attn.proj", ln2=f"{s}.norm2",
                    up=f"{s}.mlp.fc1", down=f"{s}.mlp.fc2")
    blocks(me, "enc", "blocks", L)
    F = me.src["blocks.0.mlp.fc1.weight"].shape[0]
    for k in range(n_hier):
        me.pair(f"enc.hier_norm.{k}", f"norms_block.{k}")
    for x in ("weight", "bias"):   # the inference output norm is the last level's
        me.put(f"enc.norm.{x}", me.get(f"norms_block.{n_hier - 1}.{x}"))
    enc_tensors, _ = me.finish()

    Lp = _count(pred, r"predictor_blocks\.(\d+)\..*")
    n_mask = _count(pred, r"mask_tokens\.(\d+)")
    if mp.has("predictor_embed.weight"):
        emb = mp.src["predictor_embed.weight"]
        mp.pair("pred.embed", "predictor_embed")
    else:   # ViT-g / G: Linear -> GELU -> Linear
        emb = mp.src.get("predictor_embed.0.weight")
        if emb is None:
            raise ConvertError(f"{path}: predictor tensor predictor_embed.weight is missing")
        for j in ("0", "2"):
            mp.pair(f"pred.embed.{j}", f"predictor_embed.{j}")
    Dp = mp.src["predictor_norm.weight"].shape[0] if mp.has("predictor_norm.weight") else emb.shape[0]
    if emb.shape[1] % D:
        raise ConvertError(f"{path}: the predictor embeds {emb.shape[1]} features, not a multiple of {D}")
    Hp = pred_heads or max(Dp // 32, 1)
    mp.put("pred.mask_tokens", np.stack([mp.get(f"mask_tokens.{k}").reshape(Dp) for k in range(n_mask)]))
    mp.one("pred.mod_embed_img", "img_mod_embed", (Dp,))
    mp.one("pred.mod_embed_video", "video_mod_embed", (Dp,))
    blocks(mp, "pred", "predictor_blocks", Lp)
    for a, b in (("pred.norm", "predictor_norm"), ("pred.proj", "predictor_proj"),
                 ("pred.proj_context", "predictor_proj_context")):
        mp.pair(a, b)
    out_dim = mp.src["predictor_proj.weight"].shape[0]
    Fp = mp.src["predictor_blocks.0.mlp.fc1.weight"].shape[0]
    pred_tensors, _ = mp.finish()

    kv = _KV()
    _general(kv, os.path.splitext(os.path.basename(path))[0], path, "vjepa2_1", "image+video")
    _enc_common(kv, D, L, H, F, P, tub, img_size, n_frames, 1e-6, "rope3d",
                rope=dict(interpolate=True, layout="interleaved", ref_grid=256 // P if P == 16 else 252 // P),
                mod=True, img_pe=True, hier=hier)
    kv.s("jepa.pred.kind", "masked")
    for k, v in (("embed_dim", Dp), ("n_layer", Lp), ("n_head", Hp), ("ffn_dim", Fp), ("n_mask_tokens", n_mask),
                 ("out_dim", out_dim)):
        kv.u32(f"jepa.pred.{k}", v)
    kv.s("jepa.pred.rope_freq_layout", "interleaved")
    kv.b("jepa.pred.rope_interpolate", False)
    kv.u32("jepa.pred.grid_size", img_size // P)
    kv.u32("jepa.pred.n_hier_in", emb.shape[1] // D)
    kv.b("jepa.pred.modality_embed", True)
    kv.b("jepa.pred.context_proj", True)
    kv.f32("jepa.pred.ln_eps", 1e-6)
    kv.s("jepa.pred.act", "gelu_erf")
    kv.b("jepa.pred.qkv_bias", True)
    kv.s("jepa.head.kind", "none")
    said = _pre_keys(kv, None, img_size, dict(mean=IMAGENET_MEAN, std=IMAGENET_STD, short=int(img_size * 256 / 224),
                                              crop=img_size, resample="bilinear", mode="shortest_edge",
                                              rescale=1 / 255), path)
    dropped = [show(k) for k in ck if k not in (encoder_key, "predictor")]
    return kv, enc_tensors + pred_tensors, dropped, said


# ---- writing -----------------------------------------------------------------------------------

_QUANT_SET = re.compile(r"(.*\.(attn_qkv|attn_q|attn_k|attn_v|attn_out|ffn_up|ffn_down)\.weight"
                        r"|pred\.proj.*\.weight|pred\.embed.*\.weight|enc\.proj\..*\.weight"
                        r"|head\.xattn\.[qkv]\.weight|head\.cls\.weight)")


def _bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns, rounding to nearest even (NaN kept a NaN)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def _write(out: str, kv: _KV, tensors: List[Tuple[str, np.ndarray]], ftype: str) -> Dict[str, int]:
    """Writes the GGUF into a private folder (mkdtemp: mode 0700, a random name) beside out, so
    that no name another user planted (a symbolic link at OUT.tmp) is ever opened; asks jepa.c's
    loader to open it; renames it over out only then. On any failure nothing is left."""
    try:
        import gguf
    except ImportError:
        raise ConvertError("the gguf package is needed to write GGUF files: pip install gguf") from None
    types = {"F32": 0, "F16": 0, "BF16": 0}
    try:
        folder = tempfile.mkdtemp(prefix=".jepa-convert-", dir=os.path.dirname(os.path.abspath(out)))
    except OSError as e:
        raise ConvertError(f"{out}: cannot write in its folder ({e.strerror})") from None
    tmp = os.path.join(folder, "model.gguf")
    w = gguf.GGUFWriter(tmp, arch="jepa")
    try:
        w.add_uint32("general.file_type", {"f32": 0, "f16": 1, "bf16": 32}[ftype])
        for k, kind, v in kv:
            if kind == "u32":
                w.add_uint32(k, v)
            elif kind == "f32":
                w.add_float32(k, v)
            elif kind == "bool":
                w.add_bool(k, v)
            elif kind == "str":
                w.add_string(k, v)
            else:
                w.add_array(k, v)
        for name, a in tensors:
            if not np.isfinite(a).all():
                raise ConvertError(f"tensor {name} holds NaN or infinity")
            small = ftype != "f32" and a.ndim == 2 and _QUANT_SET.fullmatch(name)
            if small and ftype == "f16":
                w.add_tensor(name, a.astype(np.float16))
                types["F16"] += 1
            elif small:
                w.add_tensor(name, _bf16_bits(a), raw_shape=a.shape, raw_dtype=gguf.GGMLQuantizationType.BF16)
                types["BF16"] += 1
            else:
                w.add_tensor(name, a)
                types["F32"] += 1
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        from . import _jepa   # here, so that the readers work without the extension (tests/fuzz)
        try:   # the loader's own rules: a file jepa.c refuses is never put in place
            _jepa.Model(tmp)
        except _jepa.Error as e:
            raise ConvertError(f"the converted file would not load in jepa.c: "
                               f"{show(str(e).replace(tmp, os.path.basename(out)))}") from None
        os.replace(tmp, out)
    except BaseException:
        try:
            w.close()
        except Exception:
            pass
        raise
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return types


def _check_output(out: str, seen: list):
    """Refuses an out that is a folder, or that is (a hard or symbolic link to) a file the
    conversion read: renaming over it would replace the checkpoint."""
    try:
        st = os.stat(out)
    except FileNotFoundError:
        return
    except OSError as e:
        raise ConvertError(f"{out}: {e.strerror}") from None
    if os.path.isdir(out):
        raise ConvertError(f"{out}: is a folder, not a file to write")
    if (st.st_dev, st.st_ino) in seen:
        raise ConvertError(f"{out}: is a file this conversion reads (the same file, or a link to it): "
                           "refused, it would be replaced")


def convert(src: str, out: str, ftype: str = "f32", name: Optional[str] = None, encoder_key: str = "ema_encoder",
            img_size: int = 384, n_frames: int = 64, enc_heads: int = 0, pred_heads: int = 0) -> dict:
    """Convert src (a Hugging Face folder or a Meta V-JEPA 2.1 .pt) to the GGUF file out.
    Returns a summary: family, tensor counts by type, dropped source entries, where the
    preprocessing keys came from. Raises ConvertError naming the problem."""
    if ftype not in ("f32", "f16", "bf16"):
        raise ConvertError(f"--ftype {show(ftype)}: f32, f16 or bf16")
    for opt, v, lo in (("img_size", img_size, 1), ("n_frames", n_frames, 1), ("enc_heads", enc_heads, 0),
                       ("pred_heads", pred_heads, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= 65536:
            raise ConvertError(f"{opt} = {show(v)}: an integer in {lo} .. 65536")
    seen: list = []   # (device, inode) of every file read, which out must not be
    try:
        if os.path.isdir(src):
            cfg, tensors, pre = _load_hf(src, seen)
            mt = cfg.get("model_type")
            if mt == "vjepa2":
                kv, ts, dropped, said = _hf_vjepa2(cfg, tensors, pre, src)
            elif mt in ("ijepa", "vit", "dinov2"):
                kv, ts, dropped, said = _hf_vit_like(cfg, tensors, pre, src, mt)
            else:
                raise ConvertError(f"{src}: model_type {mt!r}: jepa.c converts vjepa2, ijepa, vit and dinov2 "
                                   "(and Meta's V-JEPA 2.1 .pt checkpoints)")
        elif os.path.isfile(src):
            kv, ts, dropped, said = _meta_vjepa2_1(src, encoder_key, img_size, n_frames, enc_heads, pred_heads,
                                                   seen)
        elif os.path.lexists(src):
            raise ConvertError(f"{src}: not a regular file or folder")
        else:
            raise ConvertError(f"{src}: no such file or folder")
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError) as e:
        # a config.json or state dict of the wrong shape (a key missing, a string for a number)
        what = f"key {show(e)} is missing" if isinstance(e, KeyError) else f"{type(e).__name__}: {show(str(e))}"
        raise ConvertError(f"{src}: a malformed config or checkpoint ({what})") from None
    if name:
        kv[:] = [(k, t, name if k == "general.name" else v) for k, t, v in kv]
    _check_output(out, seen)
    types = _write(out, kv, ts, ftype)
    family = next(v for k, _, v in kv if k == "jepa.family")
    return dict(family=family, tensors=types, dropped=dropped, preprocessing=said, keys=len(kv) + 1)


class _Parser(argparse.ArgumentParser):
    def error(self, message):   # one line, not the usage
        print(f"{self.prog}: {show(message)} (see --help)", file=sys.stderr)
        sys.exit(2)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = _Parser(prog="python -m jepa_c.convert",
                                 description="Convert a Hugging Face model folder (VJEPA2Model, "
                                 "VJEPA2ForVideoClassification, IJepaModel, ViTModel, Dinov2Model) or a Meta "
                                 "V-JEPA 2.1 .pt checkpoint to a GGUF file of schema v1.")
    ap.add_argument("src", help="a Hugging Face model folder or a Meta V-JEPA 2.1 .pt file")
    ap.add_argument("out", help="the GGUF file to write: made in a private temporary folder beside it, opened by "
                    "jepa.c's loader, then renamed (refused when it is a file the conversion reads)")
    ap.add_argument("--ftype", default="f32", choices=["f32", "f16", "bf16"],
                    help="type of the matmul weights of the quantization set (default f32)")
    ap.add_argument("--name", help="general.name (default: the source's name)")
    meta = ap.add_argument_group("Meta V-JEPA 2.1 checkpoints (hyper-parameters the weights do not carry)")
    meta.add_argument("--encoder-key", default="ema_encoder",
                      help="the checkpoint entry of the encoder (default ema_encoder, as torch.hub loads)")
    meta.add_argument("--img-size", type=int, default=384, help="the training crop, 1 .. 65536 (default 384)")
    meta.add_argument("--n-frames", type=int, default=64, help="frames per training clip, 1 .. 65536 (default 64)")
    meta.add_argument("--enc-heads", type=int, default=0, help="encoder heads (default embed_dim / 64)")
    meta.add_argument("--pred-heads", type=int, default=0, help="predictor heads (default pred_dim / 32)")
    a = ap.parse_args(argv)
    try:
        s = convert(a.src, a.out, a.ftype, a.name, a.encoder_key, a.img_size, a.n_frames, a.enc_heads, a.pred_heads)
    except (ConvertError, OSError, MemoryError) as e:
        what = str(e) if isinstance(e, ConvertError) else f"{type(e).__name__}: {e}"
        print(f"jepa.convert: {_printable(what)}", file=sys.stderr)
        return 1

    t = ", ".join(f"{n} {k}" for k, n in s["tensors"].items() if n)
    print(f"wrote {_printable(a.out)}: family {s['family']}, {s['keys']} keys, tensors: {t}; preprocessing from "
          f"{s['preprocessing']}")
    if s["dropped"]:
        print(f"  not converted (not model weights of schema v1): {', '.join(s['dropped'])}")
    return 0


def _printable(s: str) -> str:
    """s on one line, every unprintable character escaped (the whole text, not cut)."""
    return s if s.isprintable() else repr(s)[1:-1]


if __name__ == "__main__":
    sys.exit(main())
