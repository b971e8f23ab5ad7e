#!/usr/bin/env python3
"""gen_quant.py - the block formats as gguf-py sees them: tests/data/quant/quant.gguf.

For every block type jepa.c reads (q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K):
  deq.<type>        raw blocks, 12 rows of 512 weights: random bytes with random finite
                    f16 scales, then adversarial rows - every code 0, every code at its
                    maximum (0xff bytes), alternating, and the scales at the f16
                    extremes: 65504, -65504, the smallest normal 2^-14, the smallest
                    subnormal 2^-24, a mid subnormal, 0 and -0
  deq.<type>.f32    gguf.quants.dequantize of those rows (what jepa.c must decode, bit for bit)
and for every type jepa quantize writes:
  quant.src         f32 rows to quantize: random normal rows at several scales, and
                    adversarial ones (all zero, constant, one outlier, +-ties of the
                    largest magnitude, values on the rounding boundaries of the codes;
                    for the K-quants: sub-blocks of very different size in one
                    super-block, so that some scales store as 0, all-positive and
                    all-negative rows, an all-zero sub-block, values below ggml's 1e-15)
  quant.<type>      the blocks jepa quantize must write for quant.src: for q8_0, q4_0,
                    q4_1, q5_0, q5_1 gguf.quants.quantize; for q4_K, q5_K, q6_K, which
                    gguf-py cannot make, ggml's reference quantizer as kquant_ref.py
                    implements it

No torch: numpy and gguf (PyPI) only.

    /tmp/v/bin/python tests/gen/gen_quant.py        # writes tests/data/quant/
"""
import argparse
import json
import os
import sys
from importlib.metadata import version

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf.quants import dequantize, quantize

import kquant_ref

HERE = os.path.dirname(__file__)
K = 512
READ = [Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q4_K, Q.Q5_K, Q.Q6_K]
WRITE = [Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1]   # by gguf-py
WRITE_K = [Q.Q4_K, Q.Q5_K, Q.Q6_K]                 # by kquant_ref.py

# byte offsets of the f16 scale fields in one block: d first, then m / dmin where present
SCALES = {Q.Q8_0: [0], Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2],
          Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208]}
EXTREME = np.array([65504.0, -65504.0, 2.0 ** -14, 2.0 ** -24, 3 * 2.0 ** -20, 0.0, -0.0], np.float16)


def raw_rows(t, rng):
    qk, bb = gguf.GGML_QUANT_SIZES[t]
    nb = K // qk
    rows = []
    for r in range(12):
        if r < 5:
            blk = rng.integers(0, 256, (nb, bb), dtype=np.uint8)
        else:
            fill = [0x00, 0xFF, 0x55, 0xAA, 0x0F, 0xF0, 0x33][r - 5]
            blk = np.full((nb, bb), fill, np.uint8)
        for i, off in enumerate(SCALES[t]):
            if r < 5:
                v = (rng.standard_normal(nb) * (0.05 if qk == 256 else 0.2)).astype(np.float16)
            else:   # one extreme per block, rotating, so every extreme meets every code pattern
                v = EXTREME[(np.arange(nb) + r + i) % len(EXTREME)]
            blk[:, off:off + 2] = v.view(np.uint8).reshape(nb, 2)
        rows.append(blk.reshape(-1))
    return np.stack(rows)


def quant_source(rng):
    rows = [rng.standard_normal(K) * s for s in (1e-3, 0.05, 1.0, 300.0)]
    rows.append(np.zeros(K))
    rows.append(np.full(K, 0.37))
    one = rng.standard_normal(K) * 0.01
    one[::32] = 5.0                       # one outlier per block
    rows.append(one)
    tie = rng.standard_normal(K) * 0.1
    tie[3::32], tie[7::32] = 2.0, -2.0     # +- the same largest magnitude: the first wins
    rows.append(tie)
    tie2 = rng.standard_normal(K) * 0.1
    tie2[5::32], tie2[1::32] = 2.0, -2.0
    rows.append(tie2)
    # values on code boundaries: x / d + 8.5 lands on integers for d = -max / 8
    grid = np.tile(np.arange(-8, 8, 0.5), K // 32) * 0.125
    rows.append(grid)
    rows.append(-grid)
    rows.append(rng.uniform(-1, 1, K) ** 3)
    # for the K-quants' scale search and its corners
    mixed = rng.standard_normal(K) * np.repeat(np.tile([1.0, 1e-4, 0.3, 1e-6], K // 128), 32)
    rows.append(mixed)                    # some sub-block scales round to 0 when stored
    rows.append(rng.uniform(0.5, 1.5, K))     # min > 0: the offset is clamped at 0
    rows.append(-rng.uniform(0.5, 1.5, K))
    hole = rng.standard_normal(K) * 0.2
    hole[32:64] = 0.0                     # one all-zero sub-block (and q6_K groups)
    hole[300:316] = 1e-17                 # a q6_K group below ggml's 1e-15
    rows.append(hole)
    rows.append(rng.standard_normal(K) * 1e-20)
    return np.stack(rows).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "quant"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(2026)
    path = os.path.join(args.out, "quant.gguf")
    w = gguf.GGUFWriter(path, arch="jepa-quant-fixture")
    meta = {"generator": "tests/gen/gen_quant.py", "K": K, "tensors": {},
            "versions": {"python": sys.version.split()[0], "numpy": version("numpy"), "gguf": version("gguf")}}
    for t in READ:
        raw = raw_rows(t, rng)
        with np.errstate(all="ignore"):
            deq = dequantize(raw, t).astype(np.float32)
        w.add_tensor("deq." + t.name.lower(), raw, raw_dtype=t)
        w.add_tensor("deq." + t.name.lower() + ".f32", deq)
        meta["tensors"]["deq." + t.name.lower()] = {"rows": raw.shape[0], "nonfinite": int((~np.isfinite(deq)).sum())}
    src = quant_source(rng)
    w.add_tensor("quant.src", src)
    for t in WRITE:
        q = quantize(src, t)
        w.add_tensor("quant." + t.name.lower(), q, raw_dtype=t)
    for t in WRITE_K:
        q = kquant_ref.quantize_k(src, t.name.lower())
        w.add_tensor("quant." + t.name.lower(), q, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote %s (%d bytes)" % (path, os.path.getsize(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
