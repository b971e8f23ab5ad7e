"""Generate tests/data/checkpoints/: source checkpoints for the converter's tests
(python -m jepa_c.convert), in the formats people download, for models whose reference
outputs are already committed:

  hf_vjepa2/   VJEPA2ForVideoClassification.save_pretrained (+ VJEPA2VideoProcessor): the
               model of tests/data/hf_vjepa2 (gen_hf_vjepa2.build_model)
  hf_ijepa/    IJepaModel + ViTImageProcessor: the model of tests/data/hf_ijepa
  hf_vit/      ViTModel + BitImageProcessor-style preprocessing: tests/data/hf_vit/model.gguf's
  hf_dinov2/   Dinov2Model (layer scale): tests/data/hf_vit/model_ls.gguf's
  meta_vjepa2_1.pt
               a torch.save checkpoint in the layout of Meta's V-JEPA 2.1 torch-hub files
               (top-level encoder / ema_encoder / predictor / opt / epoch ..., parameters named
               module.backbone.<name>, docs/convert.md) holding the weights of the tiny V-JEPA
               2.1 model of tests/data/vjepa2_1_tiny, whose outputs come from Meta's own code
  hostile.pt   a torch.save-format archive whose pickle calls os.system (the converter must
               refuse it without calling anything)

Every HF model is rebuilt with the generator that made its committed fixture (same seeds,
same perturbation) and checked here to reproduce that fixture's tokens bit for bit, so the
committed outputs are the converted files' references. The Meta checkpoint's tensors are
the GGUF's, mapped back to Meta's names and shapes (the inverse of the documented map); the
converter's test then compares jepa.c's outputs on the converted file with Meta's.

Rerun (from the repository root, with the venv of tests/gen/README.md):
    .venv-gen/bin/python tests/gen/gen_checkpoints.py [--out DIR]
"""
import argparse
import io
import json
import os
import pickle
import sys
import zipfile

import numpy as np
import torch

import gguf
from transformers import BitImageProcessor, VJEPA2VideoProcessor, ViTImageProcessor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_hf_families as fam  # noqa: E402
import gen_hf_vjepa2 as hv  # noqa: E402

DATA = os.path.normpath(os.path.join(HERE, "..", "data"))
IMAGENET = dict(image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])


def same_as_fixture(got, fixture, what):
    ref = np.load(os.path.join(DATA, fixture))
    if not np.array_equal(got, ref):
        raise SystemExit(f"{what}: the rebuilt model does not reproduce {fixture} "
                         f"(max |d| {np.abs(got - ref).max():.3g}); versions differ from the fixture's?")
    print(f"ok   {what}: reproduces {fixture} bit for bit")


@torch.no_grad()
def gen_hf(out):
    torch.set_num_threads(1)
    # V-JEPA 2 with the attentive-pool head
    m = hv.build_model()
    x = np.load(os.path.join(DATA, "hf_vjepa2", "input.npy"))
    tok = m.vjepa2(pixel_values_videos=torch.from_numpy(x.transpose(1, 0, 2, 3)[None].copy()),
                   skip_predictor=True).last_hidden_state[0].numpy()
    same_as_fixture(tok, "hf_vjepa2/tokens.npy", "hf_vjepa2")
    d = os.path.join(out, "hf_vjepa2")
    m.save_pretrained(d)
    VJEPA2VideoProcessor(crop_size={"height": 64, "width": 64}, size={"shortest_edge": 73},
                         **IMAGENET).save_pretrained(d)

    # I-JEPA: squash to the square, mean / std 0.5
    m = fam.hf_model(fam.IJepaModel, fam.IJepaConfig, fam.CFG_IJEPA, fam.SEED + 10, add_pooling_layer=False)
    fam.perturb(m, fam.SEED + 11)
    x = np.load(os.path.join(DATA, "hf_ijepa", "input.npy"))
    same_as_fixture(m(pixel_values=torch.from_numpy(x)[None]).last_hidden_state[0].numpy(),
                    "hf_ijepa/tokens.npy", "hf_ijepa")
    d = os.path.join(out, "hf_ijepa")
    m.save_pretrained(d)
    ViTImageProcessor(size={"height": 56, "width": 56}, resample=2, image_mean=[0.5] * 3,
                      image_std=[0.5] * 3).save_pretrained(d)

    # ViT and Dinov2: shortest edge 73, centre crop 64, bicubic, ImageNet statistics
    x = np.load(os.path.join(DATA, "hf_vit", "input.npy"))
    m = fam.hf_model(fam.ViTModel, fam.ViTConfig, fam.CFG_VIT, fam.SEED + 20, add_pooling_layer=False)
    fam.perturb(m, fam.SEED + 21)
    dino = fam.hf_model(fam.Dinov2Model, fam.Dinov2Config, fam.CFG_DINOV2, fam.SEED + 22)
    fam.perturb(dino, fam.SEED + 23)
    same_as_fixture(m(pixel_values=torch.from_numpy(x)[None]).last_hidden_state[0].numpy(),
                    "hf_vit/tokens.npy", "hf_vit")
    same_as_fixture(dino(pixel_values=torch.from_numpy(x)[None]).last_hidden_state[0].numpy(),
                    "hf_vit/ls_tokens.npy", "hf_dinov2")
    for mdl, name in ((m, "hf_vit"), (dino, "hf_dinov2")):
        d = os.path.join(out, name)
        mdl.save_pretrained(d)
        BitImageProcessor(size={"shortest_edge": 73}, crop_size={"height": 64, "width": 64}, resample=3,
                          do_convert_rgb=True, **IMAGENET).save_pretrained(d)


def gguf_tensors(path):
    r = gguf.GGUFReader(path)
    return {t.name: np.array(t.data, dtype=np.float32).reshape([int(s) for s in reversed(t.shape)]) for t in r.tensors}


def meta_2_1_state(path):
    """The tiny V-JEPA 2.1 GGUF's tensors under Meta's names and shapes (inverse of docs/convert.md)."""
    g = gguf_tensors(path)
    D = g["enc.patch_embed.bias"].shape[0]
    P = 16
    enc, pred = {}, {}
    enc["patch_embed.proj.weight"] = g["enc.patch_embed.weight"].reshape(D, 3, 2, P, P)
    enc["patch_embed.proj.bias"] = g["enc.patch_embed.bias"]
    enc["patch_embed_img.proj.weight"] = g["enc.patch_embed_img.weight"].reshape(D, 3, 1, P, P)
    enc["patch_embed_img.proj.bias"] = g["enc.patch_embed_img.bias"]
    enc["img_mod_embed"] = g["enc.mod_embed_img"].reshape(1, 1, D)
    enc["video_mod_embed"] = g["enc.mod_embed_video"].reshape(1, 1, D)

    def blocks(dst, src, prefix):
        i = 0
        while f"{prefix}.blk.{i}.ln1.weight" in g:
            s = f"{prefix}.blk.{i}"
            for a, b in (("ln1", "norm1"), ("ln2", "norm2"), ("attn_qkv", "attn.qkv"), ("attn_out", "attn.proj"),
                         ("ffn_up", "mlp.fc1"), ("ffn_down", "mlp.fc2")):
                for w in ("weight", "bias"):
                    dst[f"{src}.{i}.{b}.{w}"] = g[f"{s}.{a}.{w}"]
            i += 1
    blocks(enc, "blocks", "enc")
    for k in range(4):
        for w in ("weight", "bias"):
            enc[f"norms_block.{k}.{w}"] = g[f"enc.hier_norm.{k}.{w}"]
    assert np.array_equal(g["enc.norm.weight"], g["enc.hier_norm.3.weight"])
    Dp = g["pred.embed.bias"].shape[0]
    pred["predictor_embed.weight"] = g["pred.embed.weight"]
    pred["predictor_embed.bias"] = g["pred.embed.bias"]
    for k, row in enumerate(g["pred.mask_tokens"]):
        pred[f"mask_tokens.{k}"] = row.reshape(1, 1, Dp)
    pred["img_mod_embed"] = g["pred.mod_embed_img"].reshape(1, 1, Dp)
    pred["video_mod_embed"] = g["pred.mod_embed_video"].reshape(1, 1, Dp)
    blocks(pred, "predictor_blocks", "pred")
    for a, b in (("pred.norm", "predictor_norm"), ("pred.proj", "predictor_proj"),
                 ("pred.proj_context", "predictor_proj_context")):
        for w in ("weight", "bias"):
            pred[f"{b}.{w}"] = g[f"{a}.{w}"]
    wrap = lambda sd: {f"module.backbone.{k}": torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}
    return wrap(enc), wrap(pred)


def gen_meta(out):
    enc, pred = meta_2_1_state(os.path.join(DATA, "vjepa2_1_tiny", "model.gguf"))
    # the student encoder differs from the EMA one (the hub model is ema_encoder): a converter
    # that reads the wrong one fails the parity test
    student = {k: torch.full((1,), -1.0).expand(v.shape) for k, v in enc.items()}   # stride 0: a few bytes
    ckpt = {"encoder": student, "predictor": pred, "ema_encoder": enc,
            "opt": {"state": {}, "param_groups": [{"lr": 1e-4, "betas": (0.9, 0.999)}]},
            "scaler": None, "epoch": 40, "loss": np.float64(0.25), "batch_size": 72, "world_size": 512, "lr": 1e-4}
    torch.save(ckpt, os.path.join(out, "meta_vjepa2_1.pt"))
    print(f"ok   meta_vjepa2_1.pt: {len(enc)} ema_encoder + {len(pred)} predictor tensors")


class _System:
    """Pickles as a call of os.system (what a hostile checkpoint does)."""
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/jepa_hostile_ran",))


def gen_hostile(out):
    """A torch.save-layout archive (archive/data.pkl, archive/version, archive/data/0) whose
    pickle reduces os.system: torch.load(weights_only=False) would run the command."""
    buf = io.BytesIO()
    pickle.Pickler(buf, protocol=2).dump({"encoder": _System()})
    with zipfile.ZipFile(os.path.join(out, "hostile.pt"), "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", buf.getvalue())
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
    print("ok   hostile.pt: a pickle that calls os.system")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(DATA, "checkpoints"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    gen_hf(args.out)
    gen_meta(args.out)
    gen_hostile(args.out)
    sizes = {}
    for root, _, files in os.walk(args.out):
        for f in files:
            p = os.path.join(root, f)
            sizes[os.path.relpath(p, args.out)] = os.path.getsize(p)
    with open(os.path.join(args.out, "manifest.json"), "w") as fh:
        json.dump({"generator": "tests/gen/gen_checkpoints.py", "torch": torch.__version__,
                   "transformers": __import__("transformers").__version__, "files": dict(sorted(sizes.items()))},
                  fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
