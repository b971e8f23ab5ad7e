#!/usr/bin/env python3
"""gen_png.py - PNG files of every colour type and bit depth, and the pixels Hugging
Face's image processors get from them through PIL, for tests/input/test_preprocess.c.

HF's processors start from transformers' image_transforms.convert_to_rgb: an RGB image is
used as it is; any other mode goes through PIL's convert("RGBA"), is alpha-composited onto
opaque white (Image.alpha_composite) and made RGB. That function is restated below in a
few lines (transformers itself, with its torch dependency, is not needed here).

The files are written byte by byte by this script (a minimal PNG writer: IHDR, optional
PLTE / tRNS, one zlib IDAT, IEND), so each colour type (0 grey, 2 RGB, 3 palette, 4 grey
+ alpha, 6 RGBA), bit depth (1, 2, 4, 8, 16), tRNS and Adam7 interlacing appears exactly
as asked; PIL reads each back and `<name>.npy` holds convert_to_rgb's pixels (uint8
[H, W, 3]). `rgba_all` is 256 x 256 RGBA with colour = x and alpha = y in every channel:
every (colour, alpha) pair of the composite.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install numpy pillow
    /tmp/v/bin/python tests/gen/gen_png.py           # writes tests/input/data/png/
"""
import argparse
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image


def convert_to_rgb(image):
    """transformers.image_transforms.convert_to_rgb, restated."""
    if image.mode == "RGB":
        return image
    rgba = image.convert("RGBA")
    background = Image.new("RGBA", rgba.size, (255, 255, 255))
    return Image.alpha_composite(background, rgba).convert("RGB")


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def pack_rows(samples, depth):
    """samples: int array [H, W * channels] -> filter-type-0 rows at this bit depth."""
    rows = []
    for r in samples:
        if depth == 16:
            b = r.astype(">u2").tobytes()
        elif depth == 8:
            b = r.astype(np.uint8).tobytes()
        else:
            per = 8 // depth
            pad = (-len(r)) % per
            v = np.concatenate([r, np.zeros(pad, r.dtype)]).reshape(-1, per).astype(np.uint16)
            shifts = np.arange(per - 1, -1, -1) * depth
            b = (v << shifts).sum(1).astype(np.uint8).tobytes()
        rows.append(b)
    return rows


def adam7(samples, channels):
    """The seven Adam7 passes of samples [H, W * channels], in order, each as rows."""
    h = samples.shape[0]
    px = samples.reshape(h, -1, channels)
    out = []
    for y0, x0, dy, dx in ((0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2),
                           (1, 0, 2, 1)):
        sub = px[y0::dy, x0::dx]
        if sub.size:
            out.append(sub.reshape(sub.shape[0], -1))
    return out


def png(samples, w, h, depth, ctype, extra=b"", interlace=False, channels=1):
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 1 if interlace else 0)
    passes = adam7(samples, channels) if interlace else [samples]
    raw = b"".join(b"\x00" + r for p in passes for r in pack_rows(p, depth))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra + chunk(b"IDAT", zlib.compress(raw, 9)) +
            chunk(b"IEND", b""))


def cases(rng):
    h, w = 13, 17
    u8 = lambda *s: rng.integers(0, 256, s)
    u16 = lambda *s: rng.integers(0, 65536, s)
    alpha8 = u8(h, w)
    alpha8[0, :4] = [0, 255, 1, 254]
    yield "rgb8", png(u8(h, w * 3), w, h, 8, 2, channels=3)
    yield "rgb8_trns", png(u8(h, w * 3) // 8, w, h, 8, 2, chunk(b"tRNS", struct.pack(">HHH", 1, 2, 3)), channels=3)
    yield "rgb16", png(u16(h, w * 3), w, h, 16, 2, channels=3)
    rgba = np.concatenate([u8(h, w, 3), alpha8[..., None]], -1).reshape(h, -1)
    yield "rgba8", png(rgba, w, h, 8, 6, channels=4)
    yield "rgba16", png(np.concatenate([u16(h, w, 3), u16(h, w, 1)], -1).reshape(h, -1), w, h, 16, 6, channels=4)
    yield "grey8", png(u8(h, w), w, h, 8, 0)
    g = u8(h, w) // 16
    yield "grey8_trns", png(g, w, h, 8, 0, chunk(b"tRNS", struct.pack(">H", 5)))
    for d in (1, 2, 4):
        yield f"grey{d}", png(rng.integers(0, 1 << d, (h, w)), w, h, d, 0)
    g16 = u16(h, w)
    g16[::3] //= 200   # some samples below 256: PIL clips the rest to 255
    yield "grey16", png(g16, w, h, 16, 0)
    g16t = g16.copy()
    g16t[1, :5] = 77
    yield "grey16_trns", png(g16t, w, h, 16, 0, chunk(b"tRNS", struct.pack(">H", 77)))
    yield "greyalpha8", png(np.stack([u8(h, w), alpha8], -1).reshape(h, -1), w, h, 8, 4, channels=2)
    yield "greyalpha16", png(np.stack([u16(h, w), u16(h, w)], -1).reshape(h, -1), w, h, 16, 4, channels=2)
    pal = u8(16, 3).astype(np.uint8).tobytes()
    idx = rng.integers(0, 16, (h, w))
    yield "palette8", png(idx, w, h, 8, 3, chunk(b"PLTE", pal))
    trns = bytes([0, 255, 128, 7, 200])   # alpha of the first five entries; the rest opaque
    yield "palette8_trns", png(idx, w, h, 8, 3, chunk(b"PLTE", pal) + chunk(b"tRNS", trns))
    yield "palette4_trns", png(idx, w, h, 4, 3, chunk(b"PLTE", pal) + chunk(b"tRNS", trns))
    yield "rgba8_adam7", png(rgba, w, h, 8, 6, interlace=True, channels=4)
    yield "grey2_adam7", png(rng.integers(0, 4, (h, w)), w, h, 2, 0, interlace=True)
    y, x = np.mgrid[0:256, 0:256]
    allpairs = np.stack([x, x, x, y], -1).reshape(256, -1)
    yield "rgba_all", png(allpairs, 256, 256, 8, 6, channels=4)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "input", "data", "png"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    lines = ["# gen_png.py: PIL %s; name height width (convert_to_rgb(Image.open(name.png)) is name.npy)"
             % Image.__version__]
    for name, data in cases(np.random.default_rng(5)):
        path = os.path.join(args.out, name + ".png")
        with open(path, "wb") as f:
            f.write(data)
        with Image.open(path) as im:
            rgb = np.asarray(convert_to_rgb(im))
        np.save(os.path.join(args.out, name + ".npy"), rgb)
        lines.append("%s %d %d" % (name, rgb.shape[0], rgb.shape[1]))
    with open(os.path.join(args.out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%d cases in %s" % (len(lines) - 1, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
