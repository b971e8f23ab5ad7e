#!/usr/bin/env python3
"""gen_webp.py - WebP files and the pixels Hugging Face's processors get from them through
PIL, for the bit-exactness test of jepa.c's WebP decoder (input/image.c, libwebp) against
transformers' convert_to_rgb(Image.open(f)): an RGB WebP as PIL decodes it, one with
alpha converted to RGBA, alpha-composited onto opaque white and made RGB.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install numpy pillow
    /tmp/v/bin/python tests/gen/gen_webp.py          # writes tests/input/data/webp/

Cases: lossy at three qualities (4:2:0 chroma: the upsampling filter shows), lossless,
lossy and lossless with alpha, odd sizes, one pixel. `<name>.npy` holds the pixels
(uint8 [H, W, 3]); manifest.txt lists them with PIL's and its libwebp's versions.
"""
import sys

import numpy as np
from PIL import Image, features

from gen_jpeg import out_dir, picture, write_case, write_manifest   # the same pictures, save / decode, manifest
from gen_png import convert_to_rgb          # transformers' convert_to_rgb, restated


def alpha(h, w):
    y, x = np.mgrid[0:h, 0:w]
    return ((x * 255) // max(w - 1, 1) ^ (y * 37 % 256)).astype(np.uint8)


CASES = [
    # name, size (h, w), alpha, save options
    ("lossy_q80", (48, 64), False, dict(quality=80)),
    ("lossy_q50_odd", (37, 53), False, dict(quality=50)),
    ("lossy_q95", (32, 40), False, dict(quality=95, method=6)),
    ("lossless", (40, 56), False, dict(lossless=True)),
    ("lossy_alpha", (45, 61), True, dict(quality=85)),
    ("lossless_alpha", (30, 34), True, dict(lossless=True)),
    ("one_pixel", (1, 1), False, dict(quality=90)),
]


def main():
    out = out_dir("webp")
    lines = ["# gen_webp.py: PIL %s, libwebp %s" % (Image.__version__, features.version("webp")),
             "# name height width (transformers' convert_to_rgb(Image.open(name.webp)) is name.npy)"]
    for i, (name, (h, w), has_alpha, opts) in enumerate(CASES):
        px = picture(h, w, i)
        im = Image.fromarray(np.dstack([px, alpha(h, w)]), "RGBA") if has_alpha else Image.fromarray(px, "RGB")
        lines.append(write_case(out, name, im, "webp", "WEBP", opts, convert_to_rgb))
    write_manifest(out, lines, len(CASES))
    return 0

if __name__ == "__main__":
    sys.exit(main())
