#!/usr/bin/env python3
"""bench/gpu_report.py OUT_DIR — the markdown tables of a bench/gpu.sh run (standard library
only): our kernels against cuBLAS / SDPA measured in the same run, end-to-end times against
transformers' VJEPA2Model, and the GPU-vs-CPU parity lines."""
import glob
import json
import os
import re
import sys


def load_jsonl(path):
    rows = []
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return rows


def main():
    out = sys.argv[1]
    ours = load_jsonl(os.path.join(out, "bench_gpu.jsonl"))
    torch = load_jsonl(os.path.join(out, "torch.jsonl"))
    peak = next((r["tflops"] for r in torch if r["op"] == "peak"), None)
    # kernel baselines by (op, dtype, shape name, M); the end-to-end rows have no M
    base = {(r["op"], r["dtype"], r.get("what"), r["M"]): r for r in torch if "M" in r}

    def pct(tf):
        return f"{100 * tf / peak:.0f} %" if peak else "-"

    print()
    if peak:
        print(f"Measured bf16 matrix rate (cuBLAS, 8192^3): {peak:.0f} TFLOP/s\n")
    print("## Matmul (ours vs cuBLAS through torch.addmm, same GPU, same run)\n")
    print("| shape | M | dtype | ours ms | ours TFLOP/s | % of bf16 rate | cuBLAS TFLOP/s | ours / cuBLAS |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in ours:
        if r["op"] != "matmul":
            continue
        b = base.get(("matmul", r["dtype"], r["what"], r["M"]))
        bt = f"{b['tflops']:.1f}" if b else "-"
        ratio = f"{r['tflops'] / b['tflops']:.2f}" if b else "-"
        dt = r["dtype"] + (" " + r["kernel"] if r.get("kernel") in ("pipe", "wgmma") else "")
        print(f"| {r['what']} ({r['N']}x{r['K']}) | {r['M']} | {dt} | {r['ms']:.3f} | "
              f"{r['tflops']:.1f} | {pct(r['tflops'])} | {bt} | {ratio} |")

    print("\n## Attention (ours: f32 in memory, f16 tensor-core math; SDPA: bf16)\n")
    print("| case | tokens | ours ms | ours TFLOP/s | SDPA TFLOP/s | ours / SDPA |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in ours:
        if r["op"] != "attn":
            continue
        what = r["what"].replace(" block-causal", "")
        b = base.get(("attn", "bf16", what, r["M"]))
        causal = "block-causal" in r["what"]
        bt = f"{b['tflops']:.1f}" if b and not causal else "-"
        ratio = f"{r['tflops'] / b['tflops']:.2f}" if b and not causal else "-"
        print(f"| {r['what']} | {r['M']} | {r['ms']:.3f} | {r['tflops']:.1f} | {bt} | {ratio} |")

    print("\n## End to end (jepa embed -g 0 --repeat, median; PyTorch: VJEPA2Model bf16 + SDPA)\n")
    print("| case | dtype | batch | ms per forward | ms per clip | tokens/s | TFLOP/s | % of bf16 rate |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    pat = re.compile(r"repeat (\d+): median ([0-9.]+) ms \(([0-9.]+) ms per clip, ([0-9.]+) tokens/s, "
                     r"([0-9.]+) GFLOP/s\)")
    vitl_flops = None   # FLOPs of one ViT-L/16 256^2 16-frame clip, as jepa counts them
    for log in sorted(glob.glob(os.path.join(out, "e2e-*.log"))):
        m = pat.search(open(log).read())
        tag = os.path.basename(log)[4:-4]
        name, dtype, batch = tag.rsplit("-", 2)
        if not m:
            print(f"| {name} | {dtype} | {batch[1:]} | (no timing: see {os.path.basename(log)}) | | | | |")
            continue
        tf = float(m.group(5)) / 1e3
        if name == "vitl256-clip16":
            vitl_flops = tf * 1e12 * float(m.group(3)) / 1e3
        print(f"| {name} | {dtype} | {batch[1:]} | {float(m.group(2)):.2f} | {float(m.group(3)):.2f} | "
              f"{float(m.group(4)):.0f} | {tf:.1f} | {pct(tf)} |")
    for r in torch:
        if r["op"] == "e2e":
            # the same model and clip as our vitl256-clip16 rows: the same FLOPs per clip
            tf = vitl_flops / (r["ms_per_clip"] / 1e3) / 1e12 if vitl_flops and "ViT-L" in r["what"] else None
            print(f"| PyTorch {r['what']} | bf16 | {r['batch']} | {r['ms']:.2f} | {r['ms_per_clip']:.2f} | "
                  f"{r['tokens_per_s']:.0f} | {f'{tf:.1f}' if tf else '-'} | {pct(tf) if tf else '-'} |")

    print("\n## Parity, GPU vs CPU on the same file and input (worst token cosine, max rel)\n")
    for log in sorted(glob.glob(os.path.join(out, "parity-*.log"))):
        txt = open(log).read().strip().replace("\n", " / ")
        print(f"- {os.path.basename(log)[7:-4]}: {txt}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
