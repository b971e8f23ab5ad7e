#!/usr/bin/env python3
"""bench/gpu_torch.py — the PyTorch baselines of bench/gpu.sh, on the same GPU in the same run.

Writes one JSON object per line (stdout, or --out FILE):
  peak     the device's measured bf16 matrix rate: torch.matmul on 8192^3 bf16 (cuBLAS)
  matmul   cuBLAS through torch.matmul, X[M,K] @ W[N,K]^T on the ViT layer shapes that
           `jepa bench gpu` times, f16 and bf16 (f32 accumulation) and f32 (TF32 off)
  attn     F.scaled_dot_product_attention (bf16, PyTorch's flash / efficient backend) on
           2048 tokens, head_dim 64 x 16 heads and 32 x 12 heads
  e2e      transformers' VJEPA2Model (random weights, the ViT-L/16 256^2 configuration),
           bf16, attn_implementation="sdpa", encoder only (skip_predictor), 16-frame clips at
           batch 1 and 8: ms per forward and per clip

--smoke runs tiny shapes on the CPU: a check that the script works, not a measurement.
Timing: CUDA events around `reps` calls after warm-up, median of 5.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

MM_SHAPES = [(3072, 1024, "ViT-L qkv"), (1024, 1024, "ViT-L proj"), (4096, 1024, "ViT-L fc1"),
             (1024, 4096, "ViT-L fc2"), (2304, 768, "ViT-B qkv"), (3072, 768, "ViT-B fc1"),
             (768, 3072, "ViT-B fc2")]


def timed(fn, reps, dev):
    """Median seconds per call over 5 batches of reps calls, after one warm-up batch."""
    out = []
    for b in range(6):
        if dev.type == "cuda":
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(reps):
                fn()
            e.record()
            e.synchronize()
            sec = s.elapsed_time(e) / 1e3 / reps
        else:
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            sec = (time.perf_counter() - t0) / reps
        if b:
            out.append(sec)
    return statistics.median(out)


def emit(f, **kv):
    f.write(json.dumps(kv) + "\n")
    f.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="-")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--skip-e2e", action="store_true")
    args = ap.parse_args()
    f = sys.stdout if args.out == "-" else open(args.out, "w")
    smoke = args.smoke
    dev = torch.device("cpu" if smoke or not torch.cuda.is_available() else "cuda")
    if dev.type == "cpu" and not smoke:
        print("gpu_torch.py: no CUDA device visible to PyTorch", file=sys.stderr)
        return 1
    name = torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu (smoke)"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"gpu_torch.py: torch {torch.__version__} on {name}", file=sys.stderr)

    # the device's bf16 matrix rate
    n = 256 if smoke else 8192
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    sec = timed(lambda: a @ b, 1 if smoke else 20, dev)
    emit(f, op="peak", dtype="bf16", M=n, N=n, K=n, ms=sec * 1e3, tflops=2 * n**3 / sec / 1e12,
         device=name, baseline="cuBLAS torch.matmul")
    del a, b

    # cuBLAS on the ViT shapes
    for dt, dname in ((torch.float16, "f16"), (torch.bfloat16, "bf16"), (torch.float32, "f32")):
        # 577: the batch-1 image rows of `jepa bench gpu --kernel pipe` (its split-K)
        for M in ((64,) if smoke else (577, 2048, 8 * 2048)):
            for N, K, what in (MM_SHAPES[:1] if smoke else MM_SHAPES):
                if smoke:
                    N, K = 96, 80
                x = torch.randn(M, K, device=dev, dtype=dt)
                w = torch.randn(N, K, device=dev, dtype=dt) * 0.05
                bias = torch.randn(N, device=dev, dtype=dt) * 0.1
                flops = 2.0 * M * N * K
                reps = 2 if smoke else int(max(3, min(200, 2e12 / flops)))
                sec = timed(lambda: torch.addmm(bias, x, w.t()), reps, dev)
                emit(f, op="matmul", dtype=dname, what=what + (" x8" if M > 2048 else ""), M=M, N=N,
                     K=K, ms=sec * 1e3, tflops=flops / sec / 1e12, device=name,
                     baseline="cuBLAS torch.addmm" + (" (TF32 off)" if dname == "f32" else ""))

    # SDPA
    for hd, heads, what in ((64, 16, "ViT-L hd64"), (32, 12, "predictor hd32")):
        N = 80 if smoke else 2048
        dt = torch.float32 if smoke else torch.bfloat16
        q = torch.randn(1, heads, N, hd, device=dev, dtype=dt)
        k = torch.randn(1, heads, N, hd, device=dev, dtype=dt)
        v = torch.randn(1, heads, N, hd, device=dev, dtype=dt)
        sec = timed(lambda: F.scaled_dot_product_attention(q, k, v), 2 if smoke else 20, dev)
        emit(f, op="attn", dtype="f32" if smoke else "bf16", what=what, M=N, N=N, K=hd, ms=sec * 1e3,
             tflops=4.0 * N * N * hd * heads / sec / 1e12, device=name, baseline="torch SDPA")

    if args.skip_e2e:
        return 0
    from transformers import VJEPA2Config, VJEPA2Model
    if smoke:
        cfg = VJEPA2Config(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, crop_size=32,
                           frames_per_clip=4, pred_hidden_size=32, pred_num_hidden_layers=1,
                           pred_num_attention_heads=2)
        frames, size, batches, dt = 4, 32, (1, 2), torch.float32
    else:
        cfg = VJEPA2Config()   # ViT-L/16, 256^2, tubelet 2 (vjepa2-vitl-fpc64-256)
        frames, size, batches, dt = 16, 256, (1, 8), torch.bfloat16
    cfg._attn_implementation = "sdpa"
    model = VJEPA2Model(cfg).to(device=dev, dtype=dt).eval()
    for B in batches:
        x = torch.randn(B, frames, 3, size, size, device=dev, dtype=dt)
        with torch.inference_mode():
            sec = timed(lambda: model(pixel_values_videos=x, skip_predictor=True), 1 if smoke else 5,
                        dev)
        tokens = (frames // cfg.tubelet_size) * (size // cfg.patch_size) ** 2
        emit(f, op="e2e", dtype="bf16", what=f"VJEPA2Model ViT-L/16 {frames}x{size}^2 sdpa",
             batch=B, tokens=tokens, ms=sec * 1e3, ms_per_clip=sec * 1e3 / B,
             tokens_per_s=B * tokens / sec, device=name, baseline="transformers VJEPA2Model")
    return 0


if __name__ == "__main__":
    sys.exit(main())
