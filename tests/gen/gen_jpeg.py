#!/usr/bin/env python3
"""gen_jpeg.py - JPEG files and the pixels PIL decodes from them, for the bit-exactness
test of jepa.c's JPEG decoder (input/image.c, libjpeg-turbo) against PIL's
Image.open(f).convert("RGB"), the decode every Hugging Face image processor starts from.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install numpy pillow
    /tmp/v/bin/python tests/gen/gen_jpeg.py          # writes tests/input/data/jpeg/

Each case is one JPEG written by PIL's encoder (chroma subsampling 4:2:0 / 4:2:2 / 4:4:4,
baseline and progressive, grayscale, restart markers, sizes that are not a multiple of
the MCU, an optimised Huffman table) plus a CMYK file (decoded; its pixels are checked by gen_formats.py's cases);
`<name>.npy` holds PIL's RGB pixels (uint8 [H, W, 3]); manifest.txt lists them with
PIL's and its libjpeg-turbo's versions.
"""
import argparse
import os
import sys

import numpy as np
from PIL import Image, features


def picture(h, w, seed):
    """Smooth ramps plus noise: chroma detail that the upsampling filter changes."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 100 * np.sin(x / 7.0 + seed) * np.cos(y / 11.0)
    g = 128 + 90 * np.cos((x + y) / 9.0)
    b = 255 * (x / max(w - 1, 1)) * (1 - y / max(h - 1, 1))
    img = np.stack([r, g, b], -1) + rng.normal(0, 18, (h, w, 3))
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


CASES = [
    # name, size (h, w), mode, save options
    ("q90_420", (48, 64), "RGB", dict(quality=90, subsampling=2)),
    ("q75_422", (40, 56), "RGB", dict(quality=75, subsampling=1)),
    ("q95_444", (32, 40), "RGB", dict(quality=95, subsampling=0)),
    ("odd_420", (37, 53), "RGB", dict(quality=85, subsampling=2)),
    ("odd_422", (23, 41), "RGB", dict(quality=80, subsampling=1)),
    ("progressive_420", (45, 61), "RGB", dict(quality=88, subsampling=2, progressive=True)),
    ("progressive_444", (30, 34), "RGB", dict(quality=92, subsampling=0, progressive=True)),
    ("optimized_420", (33, 47), "RGB", dict(quality=70, subsampling=2, optimize=True)),
    ("restart_420", (64, 80), "RGB", dict(quality=85, subsampling=2, restart_marker_blocks=3)),
    ("gray", (35, 50), "L", dict(quality=85)),
    ("gray_progressive", (29, 31), "L", dict(quality=90, progressive=True)),
    ("one_pixel", (1, 1), "RGB", dict(quality=90)),
]


def write_case(out, name, im, ext, fmt, opts, to_rgb):
    """Save im as OUT/name.ext with PIL's encoder, decode it back through to_rgb into
    OUT/name.npy (uint8 [H, W, 3]); the manifest line. Shared with gen_webp.py."""
    path = os.path.join(out, name + "." + ext)
    im.save(path, fmt, **opts)
    with Image.open(path) as f:
        rgb = np.asarray(to_rgb(f))
    assert rgb.shape == (im.height, im.width, 3), (name, rgb.shape)
    np.save(os.path.join(out, name + ".npy"), rgb)
    return "%s %d %d" % (name, im.height, im.width)


def out_dir(sub):
    """--out (default tests/input/data/SUB), created. Shared with gen_webp.py."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "input", "data", sub))
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    return out


def write_manifest(out, lines, n):
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%d cases in %s" % (n, out))


def main():
    out = out_dir("jpeg")
    lines = ["# gen_jpeg.py: PIL %s, libjpeg-turbo %s" % (Image.__version__, features.version("libjpeg_turbo")),
             "# name height width (PIL's Image.open(name.jpg).convert('RGB') is name.npy)"]
    for i, (name, (h, w), mode, opts) in enumerate(CASES):
        px = picture(h, w, i)
        im = Image.fromarray(px if mode == "RGB" else px[..., 1], mode)
        lines.append(write_case(out, name, im, "jpg", "JPEG", opts, lambda f: f.convert("RGB")))
    # CMYK: decoded by PIL with its own inversion conventions (Adobe); decoded by jepa.c the same way
    Image.fromarray(picture(16, 16, 99)).convert("CMYK").save(os.path.join(out, "cmyk.jpg"), "JPEG", quality=90)
    write_manifest(out, lines, len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
