#!/usr/bin/env python3
"""tiers_vs_torch.py - jepa.c's precision tiers beside PyTorch bf16 and OpenVINO bf16 on the
same encoder shapes, the same thread count, back to back in one run (bench only: it needs
torch, transformers and openvino in its own venv, never CI's).

Cases (random weights; the token counts of docs/precision.md's table):
  vits    a ViT-S/16 at 224^2 (jepa.c: `jepa synth --arch lejepa-vits16-224`, 197 tokens;
          PyTorch / OpenVINO: transformers' VJEPA2Model with the same width, depth and heads
          on a 2-frame 224^2 clip, 196 tokens)
  vitb    V-JEPA 2.1 ViT-B/16 at 384^2 (jepa.c: vjepa2_1-vitb-384, 576 tokens; VJEPA2Model
          ViT-B on a 2-frame 384^2 clip, 576 tokens)
  vitl    V-JEPA 2 ViT-L/16, 16 x 256^2 (jepa.c: vjepa2-vitl-256, 2048 tokens; VJEPA2Model's
          default configuration, 2048 tokens)
jepa.c runs `jepa bench encoder --precision T --json` (the best of R rounds at N threads, an
f16 file); PyTorch runs the model in bf16 under torch.inference_mode with N intra-op threads
(oneDNN: AMX or AVX512-BF16 where the CPU has them); OpenVINO compiles the same module with
INFERENCE_PRECISION_HINT bf16 and N inference threads (it falls back to f32 where the CPU has
no bf16 unit; its runtime property says which it chose). Each baseline: the best of R timed
calls after one warm-up.

    python bench/tiers_vs_torch.py --jepa build/cli/jepa [--cases vits vitb vitl] [-t 2] [--reps 3]
Prints a markdown table and writes nothing else but the synth files under --work.
"""
import argparse
import json
import os
import subprocess
import sys
import time

CASES = {
    "vits": dict(arch="lejepa-vits16-224", frames=1, hidden=384, layers=12, heads=6, size=224, tframes=2),
    "vitb": dict(arch="vjepa2_1-vitb-384", frames=1, hidden=768, layers=12, heads=12, size=384, tframes=2),
    "vitl": dict(arch="vjepa2-vitl-256", frames=16, hidden=1024, layers=24, heads=16, size=256, tframes=16),
}


def jepa_case(jepa, work, c, tier, threads, reps):
    f = os.path.join(work, c["arch"] + ".f16.gguf")
    if not os.path.exists(f):
        subprocess.run([jepa, "synth", "--arch", c["arch"], "--dtype", "f16", "-o", f], check=True,
                       capture_output=True)
    cmd = [jepa, "bench", "encoder", "-m", f, "-t", str(threads), "--reps", str(reps), "--precision", tier,
           "--json"]
    if c["frames"] > 1:
        cmd += ["--frames", str(c["frames"])]
    p = subprocess.run(cmd, check=True, capture_output=True, text=True)
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r["tn_best_ms"], r["tokens"], r["matmul"]


def best_of(fn, reps):
    fn()   # warm-up
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def torch_model(c):
    import torch
    from transformers import VJEPA2Config, VJEPA2Model
    cfg = VJEPA2Config(hidden_size=c["hidden"], num_hidden_layers=c["layers"], num_attention_heads=c["heads"],
                       crop_size=c["size"], frames_per_clip=max(c["tframes"], 2))
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return VJEPA2Model(cfg).eval(), torch.randn(1, c["tframes"], 3, c["size"], c["size"])


def torch_case(c, threads, reps):
    import torch
    torch.set_num_threads(threads)
    model, x = torch_model(c)
    model = model.to(torch.bfloat16)
    xb = x.to(torch.bfloat16)
    with torch.inference_mode():
        return best_of(lambda: model(pixel_values_videos=xb, skip_predictor=True), reps)


def openvino_case(c, threads, reps):
    import openvino as ov
    import torch

    model, x = torch_model(c)

    class Encoder(torch.nn.Module):   # the encoder alone, one tensor out
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, v):
            return self.m(pixel_values_videos=v, skip_predictor=True).last_hidden_state

    with torch.no_grad():
        om = ov.convert_model(Encoder(model), example_input=x)
    core = ov.Core()
    cm = core.compile_model(om, "CPU", {"INFERENCE_PRECISION_HINT": "bf16", "INFERENCE_NUM_THREADS": threads})
    chosen = str(cm.get_property("INFERENCE_PRECISION_HINT"))
    req = cm.create_infer_request()
    xn = x.numpy()
    return best_of(lambda: req.infer([xn]), reps), chosen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jepa", required=True)
    ap.add_argument("--cases", nargs="*", default=["vits", "vitb", "vitl"], choices=sorted(CASES))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--work", default="/tmp/jepa-tiers-vs-torch")
    ap.add_argument("--no-openvino", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    import torch
    print(f"torch {torch.__version__}, {a.threads} threads; CPU: "
          + next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"))
    print("\n| case | tokens | jepa.c exact | jepa.c bf16 (matmul kernels) | PyTorch bf16 | OpenVINO bf16 | bf16 / PyTorch | bf16 / OpenVINO |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in a.cases:
        c = CASES[name]
        ex, n, _ = jepa_case(a.jepa, a.work, c, "exact", a.threads, a.reps)
        bf, _, mm = jepa_case(a.jepa, a.work, c, "bf16", a.threads, a.reps)
        pt = torch_case(c, a.threads, a.reps)
        ov_ms, chosen = (float("nan"), "not run") if a.no_openvino else openvino_case(c, a.threads, a.reps)
        print(f"| {name} | {n} | {ex:.1f} ms | {bf:.1f} ms ({mm}) | {pt:.1f} ms | {ov_ms:.1f} ms ({chosen}) "
              f"| {pt / bf:.2f}x | {ov_ms / bf:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
