#!/usr/bin/env python3
"""gen_formats.py - small BMP, GIF, TGA, TIFF, CMYK JPEG, PNG and EXIF-oriented images and
the pixels Hugging Face's processors get from each through PIL, for
tests/input/test_formats.c (jepa.c's decoders in input/image.c must give the same bytes).

HF's processors start from transformers' image_transforms.convert_to_rgb (transformers 5):
an image whose bands include "A" or whose info has "transparency" is converted to RGBA and
alpha-composited onto opaque white, then made RGB; any other image is convert("RGB").
That rule is restated in hf_rgb below (transformers itself is not needed).

Each case is one file written by PIL's encoders (or, where PIL writes no such file, byte
by byte here: a BMP with an alpha bit mask, a top-down BMP, a GIF whose first frame is
smaller than its screen), `<name>.npy` holds hf_rgb's pixels (uint8 [H, W, 3]), and
manifest.txt lists "name file height width rotate": rotate 1 means the pixels are
ImageOps.exif_transpose's (jepa's --exif-rotate) before hf_rgb.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install numpy pillow
    /tmp/v/bin/python tests/gen/gen_formats.py        # writes tests/input/data/formats/
"""
import argparse
import io
import os
import struct
import sys

import numpy as np
from PIL import Image, ImageOps, features

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_jpeg import picture  # noqa: E402  smooth ramps plus noise


def hf_rgb(im):
    """transformers.image_transforms.convert_to_rgb (5.x), restated."""
    if "A" in im.getbands() or im.info.get("transparency") is not None:
        rgba = im.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return im.convert("RGB")


def rgba_picture(h, w, seed):
    a = np.clip(np.linspace(0, 255, w)[None, :] + np.random.default_rng(seed).normal(0, 40, (h, w)), 0, 255)
    a[0, :3] = 0
    a[1, :3] = 255
    return Image.fromarray(np.dstack([picture(h, w, seed), np.rint(a).astype(np.uint8)]), "RGBA")


def palette_image(h, w, seed, colours=100):
    return Image.fromarray(picture(h, w, seed)).quantize(colours, dither=Image.Dither.NONE)


def bmp_bytes(px, alpha_mask, top_down=False):
    """A 32-bit BI_BITFIELDS BMP (BITMAPV4HEADER) of RGBA pixels px [H, W, 4], B G R A in
    memory order; alpha_mask 0 makes the fourth byte padding."""
    h, w = px.shape[:2]
    rows = px[:, :, [2, 1, 0, 3]]
    if not top_down:
        rows = rows[::-1]
    data = rows.astype(np.uint8).tobytes()
    info = struct.pack("<IiiHHIIiiII", 108, w, -h if top_down else h, 1, 32, 3, len(data), 2835, 2835, 0, 0)
    info += struct.pack("<IIII", 0xFF0000, 0xFF00, 0xFF, alpha_mask) + b"BGRs" + bytes(36) + bytes(12)
    head = struct.pack("<2sIHHI", b"BM", 14 + len(info) + len(data), 0, 0, 14 + len(info))
    return head + info + data


def lzw_gif_data(indices, min_code=8):
    """GIF LZW of indices with a clear code before every code (no dictionary growth): a
    valid if large stream, enough for a few dozen pixels."""
    clear, end = 1 << min_code, (1 << min_code) + 1
    size = min_code + 1
    bits, nbits, out = 0, 0, bytearray()
    for code in [c for i in indices for c in (clear, int(i))] + [end]:
        bits |= code << nbits
        nbits += size
        while nbits >= 8:
            out.append(bits & 0xFF)
            bits >>= 8
            nbits -= 8
    if nbits:
        out.append(bits & 0xFF)
    blocks = b"".join(bytes([len(out[i:i + 255])]) + bytes(out[i:i + 255]) for i in range(0, len(out), 255))
    return bytes([min_code]) + blocks + b"\x00"


def gif_offset_frame(transparent):
    """A 12x10 screen with a global palette; the first (only) frame is 5x4 at (3, 2); with
    transparent, index 7 is transparent and fills the rest of the screen in PIL."""
    rng = np.random.default_rng(5)
    pal = rng.integers(0, 256, (256, 3), dtype=np.uint8)
    out = b"GIF89a" + struct.pack("<HHBBB", 12, 10, 0xF7, 0, 0) + pal.tobytes()
    if transparent:
        out += b"\x21\xf9\x04\x01\x00\x00\x07\x00"
    idx = rng.integers(0, 20, 20)
    idx[0] = 7
    out += b"\x2c" + struct.pack("<HHHHB", 3, 2, 5, 4, 0) + lzw_gif_data(idx) + b"\x3b"
    return out


def exif_jpeg(orientation):
    im = Image.fromarray(picture(12, 20, 40 + orientation))
    exif = Image.Exif()
    exif[0x0112] = orientation
    b = io.BytesIO()
    im.save(b, "JPEG", quality=90, exif=exif)
    return b.getvalue()


def cases():
    """(name, file name, bytes or (PIL image, format, options), rotate)."""
    p = picture
    rgb = lambda h, w, s: Image.fromarray(p(h, w, s))
    grey = lambda h, w, s: Image.fromarray(p(h, w, s)[..., 1])
    la = lambda h, w, s: Image.fromarray(np.dstack([p(h, w, s)[..., 1], np.asarray(rgba_picture(h, w, s))[..., 3]]), "LA")
    p_trns = palette_image(13, 17, 7)
    p_trns.info["transparency"] = 3
    rgb_key = p(9, 11, 8)
    rgb_key[2:4, 3:6] = (10, 20, 30)
    cmyk = Image.fromarray(p(14, 18, 9)).convert("CMYK")
    anim = [palette_image(10, 14, s) for s in (11, 12, 13)]
    yield "bmp_rgb24", "bmp_rgb24.bmp", (rgb(13, 19, 1), "BMP", {}), 0
    yield "bmp_p8", "bmp_p8.bmp", (palette_image(11, 15, 2), "BMP", {}), 0
    yield "bmp_grey8", "bmp_grey8.bmp", (grey(10, 7, 3), "BMP", {}), 0
    yield "bmp_bw1", "bmp_bw1.bmp", (grey(9, 21, 4).convert("1"), "BMP", {}), 0
    yield "bmp_rgba32_raw", "bmp_rgba32_raw.bmp", (rgba_picture(8, 9, 5), "BMP", {}), 0
    yield "bmp_bitfields_alpha", "bmp_bitfields_alpha.bmp", bmp_bytes(np.asarray(rgba_picture(7, 10, 6)), 0xFF000000), 0
    yield "bmp_bitfields_x", "bmp_bitfields_x.bmp", bmp_bytes(np.asarray(rgba_picture(7, 10, 6)), 0), 0
    yield "bmp_top_down", "bmp_top_down.bmp", bmp_bytes(np.asarray(rgba_picture(6, 5, 7)), 0xFF000000, True), 0
    yield "gif_p", "gif_p.gif", (palette_image(12, 16, 21), "GIF", {}), 0
    yield "gif_p_trns", "gif_p_trns.gif", (p_trns, "GIF", {"transparency": 3}), 0
    yield "gif_grey", "gif_grey.gif", (grey(9, 13, 22), "GIF", {}), 0
    yield "gif_interlaced", "gif_interlaced.gif", (palette_image(23, 9, 23), "GIF", {"interlace": True}), 0
    yield "gif_anim", "gif_anim.gif", (anim[0], "GIF", {"save_all": True, "append_images": anim[1:]}), 0
    yield "gif_offset", "gif_offset.gif", gif_offset_frame(False), 0
    yield "gif_offset_trns", "gif_offset_trns.gif", gif_offset_frame(True), 0
    for rle in (False, True):
        s = "_rle" if rle else ""
        o = {"compression": "tga_rle"} if rle else {}
        yield "tga_rgb" + s, "tga_rgb%s.tga" % s, (rgb(11, 14, 31), "TGA", o), 0
        yield "tga_rgba" + s, "tga_rgba%s.tga" % s, (rgba_picture(9, 12, 32), "TGA", o), 0
        yield "tga_grey" + s, "tga_grey%s.tga" % s, (grey(8, 13, 33), "TGA", o), 0
        yield "tga_p" + s, "tga_p%s.tga" % s, (palette_image(10, 9, 34), "TGA", o), 0
    yield "tga_la", "tga_la.tga", (la(7, 9, 35), "TGA", {}), 0
    yield "tga_top_down", "tga_top_down.tga", (rgb(6, 10, 36), "TGA", {"orientation": 1}), 0
    for comp in ("raw", "tiff_lzw", "tiff_adobe_deflate", "packbits"):
        yield "tif_rgb_" + comp, "tif_rgb_%s.tif" % comp, (rgb(12, 15, 51), "TIFF", {"compression": comp}), 0
    yield "tif_rgb_jpeg", "tif_rgb_jpeg.tif", (rgb(16, 16, 52), "TIFF", {"compression": "jpeg"}), 0
    yield "tif_rgba", "tif_rgba.tif", (rgba_picture(9, 11, 53), "TIFF", {"compression": "tiff_lzw"}), 0
    yield "tif_grey", "tif_grey.tif", (grey(10, 8, 54), "TIFF", {}), 0
    yield "tif_la", "tif_la.tif", (la(7, 6, 55), "TIFF", {}), 0
    yield "tif_p", "tif_p.tif", (palette_image(9, 10, 56), "TIFF", {}), 0
    yield "tif_bw1", "tif_bw1.tif", (grey(11, 19, 57).convert("1"), "TIFF", {"compression": "group4"}), 0
    yield "tif_grey16", "tif_grey16.tif", (Image.fromarray(p(8, 9, 58)[..., 0].astype(np.uint16) * 3), "TIFF", {}), 0
    yield "tif_cmyk", "tif_cmyk.tif", (cmyk, "TIFF", {}), 0
    yx = np.mgrid[0:256, 0:256].astype(np.uint8)   # every (c, k) of PIL's CMYK -> RGB
    cmyk_all = Image.fromarray(np.dstack([yx[1], 255 - yx[1], yx[1], yx[0]]), "CMYK")
    yield "tif_cmyk_all", "tif_cmyk_all.tif", (cmyk_all, "TIFF", {"compression": "tiff_adobe_deflate"}), 0
    yield "jpeg_cmyk", "jpeg_cmyk.jpg", (cmyk, "JPEG", {"quality": 90}), 0
    yield "jpeg_cmyk_progressive", "jpeg_cmyk_progressive.jpg", (cmyk, "JPEG", {"quality": 85, "progressive": True}), 0
    yield "png_rgb_key", "png_rgb_key.png", (Image.fromarray(rgb_key), "PNG", {"transparency": (10, 20, 30)}), 0
    for o in range(1, 9):
        data = exif_jpeg(o)
        yield "exif%d" % o, "exif%d.jpg" % o, data, 0
        yield "exif%d_rotated" % o, "exif%d.jpg" % o, data, 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "input", "data", "formats"))
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    lines = ["# gen_formats.py: PIL %s, libjpeg-turbo %s, libtiff %s" % (
        Image.__version__, features.version("libjpeg_turbo"), features.version("libtiff")),
        "# name file height width rotate (hf_rgb of PIL's Image.open(file), exif_transpose'd first "
        "when rotate is 1, is name.npy)"]
    for name, fname, src, rotate in cases():
        path = os.path.join(out, fname)
        if isinstance(src, bytes):
            with open(path, "wb") as f:
                f.write(src)
        else:
            im, fmt, opts = src
            im.save(path, fmt, **opts)
        with Image.open(path) as f:
            im = ImageOps.exif_transpose(f) if rotate else f
            rgb = np.asarray(hf_rgb(im))
        np.save(os.path.join(out, name + ".npy"), rgb)
        lines.append("%s %s %d %d %d" % (name, fname, rgb.shape[0], rgb.shape[1], rotate))
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%d cases in %s" % (len(lines) - 2, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
