"""Throughput of examples/ray_embed.py against `jepa embed --out-dir` on the same folder,
back to back (docs/python.md, "Ray").

    python bench/ray_throughput.py JEPA_BIN MODEL.gguf [--images 200] [--size 256] [--cpus 2]

Writes --images random-texture PNGs of --size² into a temporary folder, then runs
  1. jepa embed -t CPUS --pool mean --out-dir (one process, the model loaded once),
  2. examples/ray_embed.py with CPUS actors of 1 CPU on a local Ray instance of CPUS CPUs,
and prints images/s of each and their ratio. Needs the jepa package, ray[data], pillow.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("jepa_bin")
    ap.add_argument("model")
    ap.add_argument("--images", type=int, default=200)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--cpus", type=int, default=2)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "images")
        os.mkdir(folder)
        for k in range(a.images):
            img = rng.integers(0, 256, (a.size // 8, a.size // 8, 3), dtype=np.uint8)
            Image.fromarray(img).resize((a.size, a.size), Image.BILINEAR).save(os.path.join(folder, f"{k:05d}.png"))
        t0 = time.perf_counter()
        subprocess.run([a.jepa_bin, "embed", "-q", "-t", str(a.cpus), "-m", a.model, "--pool", "mean", "--out-dir",
                        os.path.join(tmp, "cli"), folder], check=True)
        t_cli = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "ray_embed.py"), a.model, folder,
                            os.path.join(tmp, "parquet"), "--actors", str(a.cpus), "--num-cpus", str(a.cpus),
                            "--batch-size", "16"], check=True, capture_output=True, text=True,
                           env=dict(os.environ, RAY_USAGE_STATS_ENABLED="0"))
        t_ray = time.perf_counter() - t0
        print(r.stdout.strip().splitlines()[-1])
    n = a.images
    print(f"{n} images {a.size}x{a.size}, {a.cpus} CPUs: jepa embed --out-dir {t_cli:.2f} s ({n / t_cli:.1f} images/s); "
          f"Ray {t_ray:.2f} s ({n / t_ray:.1f} images/s, with Ray's start-up); Ray / CLI time {t_ray / t_cli:.2f}")


if __name__ == "__main__":
    main()
