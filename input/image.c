/*
 * image.c — still images to packed RGB (see image.h): PNG through stb_image (the one
 * translation unit that compiles its implementation, and only its PNG decoder), JPEG
 * through libjpeg-turbo (Debian's libjpeg62-turbo), the library PIL decodes JPEGs with,
 * at the defaults PIL keeps (accurate integer IDCT, fancy upsampling). Before anything is
 * decoded the file is read whole (at most 256 MiB), its format checked by its signature,
 * and the size its header declares bounded (2^26 pixels, 16384 per side), so a few
 * hundred bytes cannot make a decoder allocate gigabytes. A truncated file is refused,
 * as PIL refuses it: a PNG chunk past the end or no IEND; a JPEG without its
 * end-of-image marker, or whose entropy-coded data runs out. A progressive JPEG may have
 * at most 1000 scans (each is a pass over the whole image). stb's JPEG decoder is not
 * used: the fuzzer found a 300-byte progressive JPEG on which Debian's stb 2.28 indexes
 * out of bounds (kept as tests/fuzz/corpus_image/fz_stb_progressive.jpg). Tested by
 * tests/input/test_preprocess.c, tests/input/test_cli_input.sh and tests/fuzz/fuzz_image.c.
 */
#include "input/image.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef JEPA_HAVE_JPEG
#include <setjmp.h>

#include <jpeglib.h>
#include <jerror.h>
#endif

#ifdef JEPA_HAVE_WEBP
#include <webp/decode.h>
#endif

#ifdef JEPA_HAVE_GIF
#include <gif_lib.h>
#endif

#ifdef JEPA_HAVE_TIFF
#include <stdarg.h>

#include <tiffio.h>
#endif

/* Largest accepted image: 16 Ki per side and 2^26 pixels (192 MiB of RGB); largest file. */
#define MAX_SIDE 16384
#define MAX_PIXELS (1u << 26)
#define MAX_FILE_BYTES ((size_t)256 << 20)
#define MAX_JPEG_SCANS 1000

static jepa_status check_size(long long x, long long y, const char *what, struct jerr *e) {
    if (x < 1 || y < 1)
        return jr_err_set(e, JEPA_ERR_FORMAT, "%s: the header declares a %lldx%lld image", what, x, y);
    if (x > MAX_SIDE || y > MAX_SIDE || (uint64_t)x * (uint64_t)y > MAX_PIXELS)
        return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: a %lldx%lld image is larger than %d pixels (%d per side)", what,
                          x, y, (int)MAX_PIXELS, MAX_SIDE);
    return JEPA_OK;
}

/* ---- PNG: stb_image ---- */

#ifdef JEPA_HAVE_STB
/* stb allocates with these, so the pixels it returns are the caller's to free(). One
 * allocation is at most 576 MiB (the raw data of the largest accepted PNG, 2^26 RGBA16
 * pixels, plus its filter bytes): a zlib stream that inflates past it, or a chunk that
 * lies about its length, makes stb fail with "out of memory" instead of allocating. */
#define IMAGE_MAX_ALLOC ((size_t)576 << 20)
static void *image_malloc(size_t n) { return n > IMAGE_MAX_ALLOC ? NULL : malloc(n); }
static void *image_realloc(void *p, size_t n) { return n > IMAGE_MAX_ALLOC ? NULL : realloc(p, n); }
#define STBI_MALLOC(sz) image_malloc(sz)
#define STBI_REALLOC(p, newsz) image_realloc(p, newsz)
#define STBI_FREE(p) free(p)
#define STBI_MAX_DIMENSIONS (1 << 24)   /* the header is read; decode_png bounds the size */
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_ONLY_TGA
#define STBI_NO_STDIO
#define STB_IMAGE_IMPLEMENTATION
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wtype-limits"
#pragma GCC diagnostic ignored "-Wvla"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif

/* What Hugging Face's image processors make of a decoded PNG (transformers'
 * image_transforms.convert_to_rgb): an RGB image is used as it is, whatever its tRNS
 * says; any other mode is converted to RGBA by PIL and alpha-composited onto opaque
 * white, then made RGB. With PIL's Image.alpha_composite (libImaging/AlphaComposite.c)
 * on a white opaque background the colour is, in PIL's integer arithmetic,
 *     t = 128 (c a + 255 (255 - a)) + 2^14,   out = ((t >> 8) + t) >> 15
 * and 255 where a = 0: checked against Pillow on every (c, a) by
 * tests/input/test_preprocess.c. Low bit depths are scaled to 8 bits and 16-bit samples
 * reduced to their high byte, by stb as by PIL. */
static uint8_t over_white(unsigned c, unsigned a) {
    if (a == 0) return 255;
    const uint32_t t = 128u * (c * a + 255u * (255u - a)) + (1u << 14);
    return (uint8_t)((((t >> 8) + t) >> 8) >> 7);
}

#if defined(JEPA_HAVE_JPEG) || defined(JEPA_HAVE_TIFF)
/* n CMYK pixels (inverted: 255 is no ink) to RGB as PIL's convert("RGB") of CMYK
 * (libImaging/Convert.c, cmyk2rgb): with nk = 255 - k, out = nk - round(c nk / 255) in
 * its integer arithmetic; checked on every (c, k) by tests/input/test_formats.c. */
static void cmyk_to_rgb(const uint8_t *in, size_t n, bool inverted, uint8_t *out) {
    for (size_t i = 0; i < n; i++) {
        const unsigned k = inverted ? 255u - in[4 * i + 3] : in[4 * i + 3], nk = 255u - k;
        for (int j = 0; j < 3; j++) {
            const unsigned c = inverted ? 255u - in[4 * i + j] : in[4 * i + j], t = c * nk + 128;
            out[3 * i + j] = (uint8_t)(nk - (((t >> 8) + t) >> 8));
        }
    }
}
#endif

/* n RGBA pixels to RGB in place (the first 3 n bytes), composited onto white or not. */
static void rgba_to_rgb(uint8_t *px, size_t n, bool composite) {
    for (size_t i = 0; i < n; i++) {
        const uint8_t *s = px + 4 * i;
        const unsigned a = s[3];
        uint8_t r = s[0], g = s[1], b = s[2];
        if (composite && a != 255) r = over_white(r, a), g = over_white(g, a), b = over_white(b, a);
        px[3 * i] = r, px[3 * i + 1] = g, px[3 * i + 2] = b;
    }
}

/* A 16-bit grey PNG as PIL converts it: its "I;16" to RGBA clips each sample to 255 (it
 * does not scale), and the tRNS key, compared on the 16-bit sample, becomes alpha 0:
 * white after the composite. key < 0: no tRNS. */
static void grey16_to_rgb(const uint16_t *g, size_t n, int key, uint8_t *out) {
    for (size_t i = 0; i < n; i++) {
        const uint8_t v = (int)g[i] == key ? 255 : g[i] > 255 ? 255 : (uint8_t)g[i];
        out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = v;
    }
}

/* The data of the first chunk of this type before IEND (chunks checked by decode_png), its
 * length in *len; NULL when there is none. */
static const uint8_t *png_chunk(const uint8_t *d, size_t n, const char *type, size_t *len) {
    for (size_t off = 8; off + 12 <= n;) {
        const size_t l = (size_t)d[off] << 24 | (size_t)d[off + 1] << 16 | (size_t)d[off + 2] << 8 | d[off + 3];
        if (l > n - off - 12 || !memcmp(d + off + 4, "IEND", 4)) return NULL;
        if (!memcmp(d + off + 4, type, 4)) {
            if (len) *len = l;
            return d + off + 8;
        }
        off += 12 + l;
    }
    return NULL;
}

/* IHDR first (big-endian width and height), every chunk (length, type, data, CRC) inside
 * the file up to IEND: a truncated file is refused, and no chunk can make stb allocate
 * more than the file holds. */
static jepa_status decode_png(const uint8_t *d, size_t n, const char *what, uint8_t **rgb, int *h, int *w,
                              struct jerr *e) {
    if (n < 33 || memcmp(d + 12, "IHDR", 4))   /* the signature, then IHDR's 12 + 13 bytes */
        return jr_err_set(e, JEPA_ERR_FORMAT, "%s: a PNG without its IHDR header", what);
    const long long x = (long long)d[16] << 24 | d[17] << 16 | d[18] << 8 | d[19];
    const long long y = (long long)d[20] << 24 | d[21] << 16 | d[22] << 8 | d[23];
    jepa_status st = check_size(x, y, what, e);
    if (st) return st;
    bool iend = false;
    for (size_t off = 8; off < n && !iend;) {
        if (n - off < 12) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: truncated PNG (a chunk header runs past the end)", what);
        const size_t len = (size_t)d[off] << 24 | (size_t)d[off + 1] << 16 | (size_t)d[off + 2] << 8 | d[off + 3];
        if (len > n - off - 12)
            return jr_err_set(e, JEPA_ERR_FORMAT, "%s: truncated PNG (a %zu-byte chunk runs past the end)", what, len);
        iend = !memcmp(d + off + 4, "IEND", 4);
        off += 12 + len;
    }
    if (!iend) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: truncated PNG (no IEND chunk)", what);
#ifdef JEPA_HAVE_STB
    const int depth = d[24], ctype = d[25];
    int ix = 0, iy = 0, c = 0;
    if (ctype == 0 && depth == 16) {   /* PIL's "I;16" */
        stbi_us *g = stbi_load_16_from_memory(d, (int)n, &ix, &iy, &c, 1);
        if (!g) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode the image (%s)", what, stbi_failure_reason());
        size_t tl = 0;
        const uint8_t *t = png_chunk(d, n, "tRNS", &tl);
        const int key = t && tl >= 2 ? t[0] << 8 | t[1] : -1;   /* the grey key */
        uint8_t *out = malloc((size_t)ix * (size_t)iy * 3);
        if (!out) {
            free(g);
            return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", what);
        }
        grey16_to_rgb(g, (size_t)ix * (size_t)iy, key, out);
        free(g);
        *rgb = out, *h = iy, *w = ix;
        return JEPA_OK;
    }
    unsigned char *px = stbi_load_from_memory(d, (int)n, &ix, &iy, &c, 4);
    if (!px) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode the image (%s)", what, stbi_failure_reason());
    /* in place: RGB rows packed in the first 3/4; an RGB image with a tRNS key has PIL's
     * info["transparency"], so convert_to_rgb composites it too (key pixels white) */
    rgba_to_rgb(px, (size_t)ix * (size_t)iy, ctype != 2 || png_chunk(d, n, "tRNS", NULL));
    *rgb = px, *h = iy, *w = ix;
    return JEPA_OK;
#else
    (void)rgb, (void)h, (void)w;
    return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: this build has no PNG decoding (stb_image.h not found; install libstb-dev)",
                      what);
#endif
}

/* ---- JPEG: libjpeg-turbo ---- */

#ifdef JEPA_HAVE_JPEG
/* libjpeg reports a fatal error through error_exit, which must not return: back to the
 * setjmp in decode_jpeg with the message. Warnings (level -1) are counted; the one that
 * says the data ran out (libjpeg then pads with grey, PIL refuses) is an error. */
struct jpeg_fail {
    struct jpeg_error_mgr pub;
    jmp_buf back;
    char msg[JMSG_LENGTH_MAX];
    bool truncated;
};

static void jpeg_on_error(j_common_ptr ci) {
    struct jpeg_fail *f = (struct jpeg_fail *)(void *)ci->err;
    ci->err->format_message(ci, f->msg);
    longjmp(f->back, 1);
}

static void jpeg_on_message(j_common_ptr ci, int level) {
    struct jpeg_fail *f = (struct jpeg_fail *)(void *)ci->err;
    if (level < 0) {
        if (ci->err->msg_code == JWRN_JPEG_EOF) f->truncated = true;
        ci->err->num_warnings++;
    }
}

static void jpeg_on_progress(j_common_ptr ci) {
    if (ci->is_decompressor && ((j_decompress_ptr)ci)->input_scan_number > MAX_JPEG_SCANS) {
        struct jpeg_fail *f = (struct jpeg_fail *)(void *)ci->err;
        snprintf(f->msg, sizeof f->msg, "more than %d progressive scans", MAX_JPEG_SCANS);
        longjmp(f->back, 1);
    }
}
#endif

/* The frame size from the first SOFn marker, walking the marker segments before the
 * first scan: 0 when there is none. */
static void jpeg_sof_size(const uint8_t *d, size_t n, long long *x, long long *y) {
    *x = *y = 0;
    for (size_t off = 2; off + 4 <= n && d[off] == 0xff;) {
        const uint8_t mk = d[off + 1];
        if (mk == 0xff) { off++; continue; }   /* fill byte */
        if (mk == 0xd8 || (mk >= 0xd0 && mk <= 0xd7) || mk == 0x01) { off += 2; continue; }
        if (mk == 0xda || mk == 0xd9) return;   /* the first scan, or the end: no frame header */
        const size_t len = (size_t)d[off + 2] << 8 | d[off + 3];
        if (len < 2 || len > n - off - 2) return;
        if (mk >= 0xc0 && mk <= 0xcf && mk != 0xc4 && mk != 0xc8 && mk != 0xcc) {
            if (len >= 7) {
                *y = (long long)d[off + 5] << 8 | d[off + 6];
                *x = (long long)d[off + 7] << 8 | d[off + 8];
            }
            return;
        }
        off += 2 + len;
    }
}

static jepa_status decode_jpeg(const uint8_t *d, size_t n, const char *what, uint8_t **rgb, int *h, int *w,
                               struct jerr *e) {
    /* the declared size, when the file has a frame header before its first scan (libjpeg
     * reads it again below) */
    long long fx, fy;
    jpeg_sof_size(d, n, &fx, &fy);
    if (fx || fy) {
        jepa_status st = check_size(fx, fy, what, e);
        if (st) return st;
    }
    /* the end-of-image marker after the first scan (libjpeg would pad a cut file) */
    size_t sos = 2;
    while (sos + 1 < n && !(d[sos] == 0xff && d[sos + 1] == 0xda)) sos++;
    bool eoi = false;
    for (size_t i = n; i-- > sos + 2 && !eoi;) eoi = d[i - 1] == 0xff && d[i] == 0xd9;
    if (!eoi) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: truncated JPEG (no end-of-image marker)", what);
#ifdef JEPA_HAVE_JPEG
    struct jpeg_decompress_struct ci;
    struct jpeg_fail f;
    struct jpeg_progress_mgr progress = {.progress_monitor = jpeg_on_progress};
    uint8_t *volatile px = NULL;
    memset(&f, 0, sizeof f);
    ci.err = jpeg_std_error(&f.pub);
    f.pub.error_exit = jpeg_on_error;
    f.pub.emit_message = jpeg_on_message;
    if (setjmp(f.back)) {
        jpeg_destroy_decompress(&ci);
        free(px);
        return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode the JPEG (%s)", what, f.msg);
    }
    jpeg_create_decompress(&ci);
    ci.progress = &progress;
    jpeg_mem_src(&ci, d, (unsigned long)n);
    jpeg_read_header(&ci, TRUE);
    jepa_status st = check_size(ci.image_width, ci.image_height, what, e);
    if (st) {
        jpeg_destroy_decompress(&ci);
        return st;
    }
    /* grey replicated to RGB, as convert("RGB"); CMYK and YCCK out as CMYK, which PIL
     * reads inverted whatever the Adobe marker says ("CMYK;I", JpegImagePlugin) */
    const bool cmyk = ci.jpeg_color_space == JCS_CMYK || ci.jpeg_color_space == JCS_YCCK;
    ci.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(&ci);
    const size_t row = (size_t)ci.output_width * 3;
    px = malloc(row * ci.output_height + (cmyk ? (size_t)ci.output_width * 4 : 0));
    if (!px) {
        jpeg_destroy_decompress(&ci);
        return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory for a %ux%u image", what, ci.output_width,
                          ci.output_height);
    }
    uint8_t *const k4 = px + row * ci.output_height;   /* a CMYK row */
    while (ci.output_scanline < ci.output_height) {
        uint8_t *dst = px + row * ci.output_scanline;
        JSAMPROW r = cmyk ? k4 : dst;
        jpeg_read_scanlines(&ci, &r, 1);
        if (cmyk) cmyk_to_rgb(k4, ci.output_width, true, dst);
    }
    jpeg_finish_decompress(&ci);
    const int ow = (int)ci.output_width, oh = (int)ci.output_height;
    jpeg_destroy_decompress(&ci);
    if (f.truncated) {
        free(px);
        return jr_err_set(e, JEPA_ERR_FORMAT, "%s: truncated JPEG (the data ends before the image does)", what);
    }
    *rgb = px, *h = oh, *w = ow;
    return JEPA_OK;
#else
    (void)rgb, (void)h, (void)w;
    return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: this build has no JPEG decoding (%s)", what,
#ifdef JEPA_STATIC_BUILD
                      "a static build without a static libjpeg; install libjpeg62-turbo-dev or build with -Dstatic=false"
#else
                      "libjpeg not found; install libjpeg62-turbo-dev"
#endif
    );
#endif
}

#if !defined(JEPA_HAVE_WEBP) || !defined(JEPA_HAVE_GIF) || !defined(JEPA_HAVE_TIFF)
/* The one line for a format whose library this build lacks: the format and the library. */
static jepa_status no_decoder(const char *what, const char *fmt, const char *lib, const char *pkg, struct jerr *e) {
#ifdef JEPA_STATIC_BUILD
    (void)pkg;
    return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: this build has no %s decoding (a static build without a static "
                      "%s; build with -Dstatic=false)", what, fmt, lib);
#else
    return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: this build has no %s decoding (%s not found; install %s)", what,
                      fmt, lib, pkg);
#endif
}
#endif

/* WebP through libwebp, as PIL decodes it (its WebPAnimDecoder over the same libwebp
 * decode, RGBA out, fancy upsampling): an image without alpha is its RGB; one with alpha
 * is composited onto white, as HF's convert_to_rgb does to PIL's RGBA. The RIFF header's
 * declared size is bounded first; a truncated file fails to decode. */
static bool is_webp(const uint8_t *d, size_t n) { return n >= 12 && !memcmp(d, "RIFF", 4) && !memcmp(d + 8, "WEBP", 4); }

static jepa_status decode_webp(const uint8_t *d, size_t n, const char *what, uint8_t **rgb, int *h, int *w,
                               struct jerr *e) {
#ifdef JEPA_HAVE_WEBP
    WebPBitstreamFeatures ft;
    if (WebPGetFeatures(d, n, &ft) != VP8_STATUS_OK)
        return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode: a damaged or truncated WebP header", what);
    if (ft.has_animation)
        return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: an animated WebP; send its frames as a video or as images", what);
    jepa_status st = check_size(ft.width, ft.height, what, e);
    if (st) return st;
    const size_t px = (size_t)ft.width * ft.height;
    uint8_t *out = malloc(px * (ft.has_alpha ? 4 : 3));
    if (!out) return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory for %dx%d pixels", what, ft.width, ft.height);
    const uint8_t *ok = ft.has_alpha ? WebPDecodeRGBAInto(d, n, out, px * 4, ft.width * 4)
                                     : WebPDecodeRGBInto(d, n, out, px * 3, ft.width * 3);
    if (!ok) {
        free(out);
        return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode the WebP data (damaged or truncated)", what);
    }
    if (ft.has_alpha) rgba_to_rgb(out, px, true);   /* the first 3 px bytes are the RGB */
    *rgb = out, *h = ft.height, *w = ft.width;
    return JEPA_OK;
#else
    (void)d, (void)n, (void)rgb, (void)h, (void)w;
    return no_decoder(what, "WebP", "libwebp", "libwebp-dev", e);
#endif
}
/* ---- BMP and TGA: stb_image ---- */

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | le16(p + 2) << 16; }

/* A TGA header as PIL's TgaImagePlugin accepts it (there is no signature): a colour map
 * type of 0 or 1 that agrees with the image type (1 / 9 colour-mapped, 2 / 10 true
 * colour, 3 / 11 grey), a size, and a depth that type can have. */
static bool is_tga(const uint8_t *d, size_t n) {
    if (n < 18) return false;
    const unsigned map = d[1], type = d[2], depth = d[16], mdepth = d[7];
    if (map > 1 || !le16(d + 12) || !le16(d + 14) || (d[17] & 0xc0)) return false;
    switch (type & ~8u) {
    case 1: return map == 1 && depth == 8 && (mdepth == 16 || mdepth == 24 || mdepth == 32);
    case 2: return map == 0 && (depth == 16 || depth == 24 || depth == 32);
    case 3: return map == 0 && (depth == 1 || depth == 8 || depth == 16);
    default: return false;
    }
}

/* BMP and TGA through stb_image, RGBA out, then made RGB the way convert_to_rgb makes
 * PIL's mode RGB: composited onto white where PIL's mode has alpha (a 32-bit BMP with
 * an alpha bit mask; a 32-bit true-colour TGA, a 16-bit grey + alpha TGA), the colour
 * alone otherwise (PIL reads a plain 32-bit BMP as BGRX). Where stb's result is not PIL's
 * the file is refused by name: 16-bit BMP and TGA colour (stb widens 5-bit channels by
 * bit replication, PIL by c * 255 / 31), and what stb cannot read (RLE BMP, 1-bit TGA). A
 * TGA stored right to left is mirrored here (stb only flips top and bottom). */
static jepa_status decode_stb_other(const uint8_t *d, size_t n, const char *fmt, const char *what, uint8_t **rgb,
                                    int *h, int *w, struct jerr *e) {
    const bool bmp = fmt[0] == 'B';
    bool alpha, mirror = false;
    long long x, y;
    if (bmp) {
        if (n < 54) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: truncated BMP header", what);
        const uint32_t hdr = le32(d + 14), bits = le16(d + 28), comp = le32(d + 30);
        x = (int32_t)le32(d + 18), y = (int32_t)le32(d + 22);
        y = y < 0 ? -y : y;
        if (hdr >= 40 && bits == 16)
            return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: a 16-bit BMP is not decoded (not bit-exact with PIL)", what);
        alpha = hdr >= 56 && n >= 70 && bits == 32 && comp == 3 && le32(d + 66) != 0;
    } else {
        const unsigned type = d[2] & 7u, depth = d[16];
        x = le16(d + 12), y = le16(d + 14);
        if (type == 2 && depth == 16)
            return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: a 16-bit colour TGA is not decoded (not bit-exact with PIL)",
                              what);
        alpha = (type == 2 && depth == 32) || (type == 3 && depth == 16);
        mirror = d[17] & 0x10;
    }
    jepa_status st = check_size(x, y, what, e);
    if (st) return st;
#ifdef JEPA_HAVE_STB
    int ix = 0, iy = 0, c = 0;
    if (n > INT32_MAX) return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: file too large", what);
    unsigned char *px = stbi_load_from_memory(d, (int)n, &ix, &iy, &c, 4);
    if (!px) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode the %s (%s)", what, fmt, stbi_failure_reason());
    if (mirror)
        for (int r = 0; r < iy; r++)
            for (int a = 0, b = ix - 1; a < b; a++, b--) {
                uint32_t t;
                memcpy(&t, px + 4 * ((size_t)r * ix + a), 4);
                memcpy(px + 4 * ((size_t)r * ix + a), px + 4 * ((size_t)r * ix + b), 4);
                memcpy(px + 4 * ((size_t)r * ix + b), &t, 4);
            }
    rgba_to_rgb(px, (size_t)ix * (size_t)iy, alpha);
    *rgb = px, *h = iy, *w = ix;
    return JEPA_OK;
#else
    (void)rgb, (void)h, (void)w, (void)mirror, (void)alpha;
    return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: this build has no %s decoding (stb_image.h not found; install "
                      "libstb-dev)", what, fmt);
#endif
}

/* ---- GIF: giflib ---- */

/* A library's read callback over a file in memory: up to len bytes of d[n] from *off. */
#if defined(JEPA_HAVE_GIF) || defined(JEPA_HAVE_TIFF)
static size_t mem_take(const uint8_t *d, size_t n, size_t *off, void *buf, long long len) {
    const size_t k = len < 0 ? 0 : (uint64_t)len < n - *off ? (size_t)len : n - *off;
    memcpy(buf, d + *off, k);
    *off += k;
    return k;
}
#endif

#ifdef JEPA_HAVE_GIF
struct gif_mem {
    const uint8_t *d;
    size_t n, off;
};

static int gif_read(GifFileType *g, GifByteType *buf, int len) {
    struct gif_mem *m = g->UserData;
    return (int)mem_take(m->d, m->n, &m->off, buf, len);
}

static jepa_status gif_fail(GifFileType *g, uint8_t *idx, const char *what, int code, struct jerr *e) {
    int ignored;
    free(idx);
    if (g) DGifCloseFile(g, &ignored);
    const char *why = GifErrorString(code);
    return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode the GIF (%s)", what, why ? why : "damaged or truncated");
}
#endif

/* A GIF's first frame as PIL's GifImagePlugin gives it: a canvas of the logical screen
 * (grown to hold the frame if it lies outside), filled with the frame's transparent index
 * where it has one and with index 0 otherwise, the frame's rows (de-interlaced) at its
 * offset; mode P with the local or else the global colour table (indices past the table
 * are black), or L (the index as grey) without either. With a transparent index PIL's
 * info has "transparency", so convert_to_rgb makes those pixels white. */
static jepa_status decode_gif(const uint8_t *d, size_t n, const char *what, uint8_t **rgb, int *h, int *w,
                              struct jerr *e) {
#ifdef JEPA_HAVE_GIF
    struct gif_mem m = {d, n, 0};
    int err = 0, trans = -1;
    GifFileType *g = DGifOpen(&m, gif_read, &err);
    if (!g) return gif_fail(NULL, NULL, what, err, e);
    GifRecordType rt;
    do {
        if (DGifGetRecordType(g, &rt) == GIF_ERROR) return gif_fail(g, NULL, what, g->Error, e);
        if (rt == EXTENSION_RECORD_TYPE) {
            int code;
            GifByteType *ext;
            if (DGifGetExtension(g, &code, &ext) == GIF_ERROR) return gif_fail(g, NULL, what, g->Error, e);
            while (ext) {
                if (code == GRAPHICS_EXT_FUNC_CODE && ext[0] >= 4) trans = ext[1] & 1 ? ext[4] : -1;
                if (DGifGetExtensionNext(g, &ext) == GIF_ERROR) return gif_fail(g, NULL, what, g->Error, e);
            }
        }
    } while (rt != IMAGE_DESC_RECORD_TYPE && rt != TERMINATE_RECORD_TYPE);
    if (rt != IMAGE_DESC_RECORD_TYPE || DGifGetImageDesc(g) == GIF_ERROR)
        return gif_fail(g, NULL, what, rt != IMAGE_DESC_RECORD_TYPE ? D_GIF_ERR_NO_IMAG_DSCR : g->Error, e);
    const GifImageDesc *fd = &g->Image;
    const long long fx = fd->Left, fy = fd->Top, fw = fd->Width, fh = fd->Height;
    const long long sw = fx + fw > g->SWidth ? fx + fw : g->SWidth, sh = fy + fh > g->SHeight ? fy + fh : g->SHeight;
    jepa_status st = check_size(sw, sh, what, e);
    if (!st && (fw < 1 || fh < 1)) st = jr_err_set(e, JEPA_ERR_FORMAT, "%s: an empty first GIF frame", what);
    if (st) {
        DGifCloseFile(g, &err);
        return st;
    }
    const size_t cw = (size_t)sw, ch = (size_t)sh;
    uint8_t *idx = malloc(cw * ch), *row = malloc((size_t)fw);
    uint8_t *out = idx && row ? malloc(cw * ch * 3) : NULL;
    if (!out) {
        free(row);
        free(out);
        DGifCloseFile(g, &err);
        free(idx);
        return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", what);
    }
    memset(idx, trans >= 0 ? trans : 0, cw * ch);
    static const int start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
    const int passes = fd->Interlace ? 4 : 1;
    for (int p = 0; p < passes; p++)
        for (long long r = fd->Interlace ? start[p] : 0; r < fh; r += fd->Interlace ? step[p] : 1) {
            if (DGifGetLine(g, row, (int)fw) == GIF_ERROR) {
                free(row);
                free(out);
                return gif_fail(g, idx, what, g->Error, e);
            }
            memcpy(idx + (size_t)(fy + r) * cw + (size_t)fx, row, (size_t)fw);
        }
    free(row);
    const ColorMapObject *cm = fd->ColorMap ? fd->ColorMap : g->SColorMap;
    for (size_t i = 0; i < cw * ch; i++) {
        const int k = idx[i];
        uint8_t *o = out + 3 * i;
        if (k == trans) o[0] = o[1] = o[2] = 255;
        else if (!cm) o[0] = o[1] = o[2] = (uint8_t)k;
        else if (k < cm->ColorCount) o[0] = cm->Colors[k].Red, o[1] = cm->Colors[k].Green, o[2] = cm->Colors[k].Blue;
        else o[0] = o[1] = o[2] = 0;
    }
    free(idx);
    DGifCloseFile(g, &err);
    *rgb = out, *h = (int)ch, *w = (int)cw;
    return JEPA_OK;
#else
    (void)d, (void)n, (void)rgb, (void)h, (void)w;
    return no_decoder(what, "GIF", "giflib", "libgif-dev", e);
#endif
}

/* ---- TIFF: libtiff ---- */

#ifdef JEPA_HAVE_TIFF
struct tiff_mem {
    const uint8_t *d;
    size_t n, off;
    char msg[160];
};

static tmsize_t tiff_read(thandle_t h, void *buf, tmsize_t len) {
    struct tiff_mem *m = h;
    return (tmsize_t)mem_take(m->d, m->n, &m->off, buf, len);
}
static tmsize_t tiff_write(thandle_t h, void *buf, tmsize_t len) { (void)h, (void)buf, (void)len; return -1; }
static toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
    struct tiff_mem *m = h;
    const uint64_t base = whence == SEEK_CUR ? m->off : whence == SEEK_END ? m->n : 0;
    if (off > UINT64_MAX - base || base + off > m->n) return (toff_t)-1;
    m->off = (size_t)(base + off);
    return m->off;
}
static int tiff_close(thandle_t h) { (void)h; return 0; }
static toff_t tiff_size(thandle_t h) { return ((struct tiff_mem *)h)->n; }
static int tiff_map(thandle_t h, void **base, toff_t *size) { (void)h, (void)base, (void)size; return 0; }
static void tiff_unmap(thandle_t h, void *base, toff_t size) { (void)h, (void)base, (void)size; }

/* libtiff's errors: the first one kept for the message (never printed); warnings dropped. */
static int tiff_on_error(TIFF *t, void *user, const char *module, const char *fmt, va_list ap) {
    (void)t, (void)module;
    struct tiff_mem *m = user;
    if (!m->msg[0]) vsnprintf(m->msg, sizeof m->msg, fmt, ap);
    return 1;
}
static int tiff_on_warning(TIFF *t, void *user, const char *module, const char *fmt, va_list ap) {
    (void)t, (void)user, (void)module, (void)fmt, (void)ap;
    return 1;
}

/* One row of samples (8 bits unless said) to RGB, by PIL's mode for the file. */
enum tiff_kind { TK_GREY, TK_GREY_INV, TK_BILEVEL, TK_BILEVEL_INV, TK_GREY16, TK_GREY_ALPHA, TK_RGB, TK_RGBA,
                 TK_RGBX, TK_PALETTE, TK_CMYK };

static void tiff_row(enum tiff_kind k, const uint8_t *s, uint32_t w, const uint16_t *const pal[3], uint8_t *o) {
    for (uint32_t x = 0; x < w; x++, o += 3) {
        unsigned v;
        switch (k) {
        case TK_GREY: o[0] = o[1] = o[2] = s[x]; break;
        case TK_GREY_INV: o[0] = o[1] = o[2] = (uint8_t)(255 - s[x]); break;
        case TK_BILEVEL:
        case TK_BILEVEL_INV:
            v = s[x >> 3] >> (7 - (x & 7)) & 1;
            o[0] = o[1] = o[2] = (uint8_t)((v ^ (k == TK_BILEVEL_INV)) ? 255 : 0);
            break;
        case TK_GREY16: {   /* host order from libtiff; PIL's "I;16" to RGB clips at 255 */
            uint16_t g;
            memcpy(&g, s + 2 * x, 2);
            o[0] = o[1] = o[2] = (uint8_t)(g > 255 ? 255 : g);
            break;
        }
        case TK_GREY_ALPHA: o[0] = o[1] = o[2] = over_white(s[2 * x], s[2 * x + 1]); break;
        case TK_RGB: memcpy(o, s + 3 * x, 3); break;
        case TK_RGBX: memcpy(o, s + 4 * x, 3); break;
        case TK_RGBA:
            for (int j = 0; j < 3; j++) o[j] = over_white(s[4 * x + j], s[4 * x + 3]);
            break;
        case TK_PALETTE:   /* PIL keeps each 16-bit colour map entry's high byte */
            for (int j = 0; j < 3; j++) o[j] = (uint8_t)(pal[j][s[x]] >> 8);
            break;
        case TK_CMYK: cmyk_to_rgb(s + 4 * x, 1, false, o); break;
        }
    }
}

/* PIL's mode for the first page from its tags, as TiffImagePlugin's OPEN_INFO maps them
 * (the cases below); anything else is refused by its tags. */
static jepa_status tiff_kind(TIFF *t, const char *what, enum tiff_kind *kind, struct jerr *e) {
    uint16_t photo = 0, spp = 1, bps = 1, planar = PLANARCONFIG_CONTIG, nextra = 0, ink = INKSET_CMYK, comp = 1;
    const uint16_t *extra = NULL;
    if (!TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photo))
        return jr_err_set(e, JEPA_ERR_FORMAT, "%s: a TIFF without its PhotometricInterpretation tag", what);
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(t, TIFFTAG_EXTRASAMPLES, &nextra, &extra);
    TIFFGetFieldDefaulted(t, TIFFTAG_INKSET, &ink);
    TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &comp);
    const int ex = nextra ? extra[0] : -1;   /* 0 unspecified, 1 premultiplied, 2 straight alpha */
    bool ok = planar == PLANARCONFIG_CONTIG && !TIFFIsTiled(t);
    if (photo == PHOTOMETRIC_YCBCR && comp == COMPRESSION_JPEG && spp == 3 && bps == 8) {
        /* libtiff's JPEG codec converts to RGB, as PIL has it do */
        TIFFSetField(t, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
        *kind = TK_RGB;
    } else if ((photo == PHOTOMETRIC_MINISBLACK || photo == PHOTOMETRIC_MINISWHITE) && spp == 1) {
        const bool inv = photo == PHOTOMETRIC_MINISWHITE;
        ok &= bps == 1 || bps == 8 || (bps == 16 && !inv);
        *kind = bps == 1 ? (inv ? TK_BILEVEL_INV : TK_BILEVEL) : bps == 16 ? TK_GREY16 : inv ? TK_GREY_INV : TK_GREY;
    } else if (photo == PHOTOMETRIC_MINISBLACK && spp == 2 && bps == 8 && ex == EXTRASAMPLE_UNASSALPHA) {
        *kind = TK_GREY_ALPHA;
    } else if (photo == PHOTOMETRIC_RGB && bps == 8 && (spp == 3 || spp == 4)) {
        ok &= spp == 3 || ex == EXTRASAMPLE_UNASSALPHA || ex == EXTRASAMPLE_UNSPECIFIED;
        *kind = spp == 3 ? TK_RGB : ex == EXTRASAMPLE_UNASSALPHA ? TK_RGBA : TK_RGBX;
    } else if (photo == PHOTOMETRIC_PALETTE && spp == 1 && bps == 8) {
        *kind = TK_PALETTE;
    } else if (photo == PHOTOMETRIC_SEPARATED && ink == INKSET_CMYK && spp == 4 && bps == 8) {
        *kind = TK_CMYK;
    } else {
        ok = false;
    }
    if (!ok)
        return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: this TIFF layout is not decoded (photometric %u, %u samples "
                          "of %u bits%s%s%s); 8-bit grey, grey + alpha, RGB, RGBA, palette and CMYK, 1-bit and "
                          "16-bit grey in strips are", what, photo, spp, bps,
                          planar != PLANARCONFIG_CONTIG ? ", planar" : "", TIFFIsTiled(t) ? ", tiled" : "",
                          ex == EXTRASAMPLE_ASSOCALPHA ? ", premultiplied alpha" : "");
    return JEPA_OK;
}
#endif

/* The first page of a TIFF through libtiff's scanline interface, in any compression
 * libtiff decodes, converted as PIL's mode for its tags (tiff_kind) is converted by
 * convert_to_rgb. The Orientation tag is not applied (PIL's open does not either). */
static jepa_status decode_tiff(const uint8_t *d, size_t n, const char *what, uint8_t **rgb, int *h, int *w,
                               struct jerr *e) {
#ifdef JEPA_HAVE_TIFF
    struct tiff_mem m = {d, n, 0, ""};
    TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
    if (!opts) return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", what);
    TIFFOpenOptionsSetErrorHandlerExtR(opts, tiff_on_error, &m);
    TIFFOpenOptionsSetWarningHandlerExtR(opts, tiff_on_warning, &m);
    TIFF *t = TIFFClientOpenExt(what, "rm", &m, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size, tiff_map,
                                tiff_unmap, opts);
    TIFFOpenOptionsFree(opts);
    if (!t) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode the TIFF (%s)", what, m.msg[0] ? m.msg : "damaged");
    uint32_t tw = 0, th = 0;
    TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &tw);
    TIFFGetField(t, TIFFTAG_IMAGELENGTH, &th);
    enum tiff_kind kind = TK_RGB;
    jepa_status st = check_size(tw, th, what, e);
    if (!st) st = tiff_kind(t, what, &kind, e);
    uint16_t *pal[3] = {NULL, NULL, NULL};
    if (!st && kind == TK_PALETTE && !TIFFGetField(t, TIFFTAG_COLORMAP, &pal[0], &pal[1], &pal[2]))
        st = jr_err_set(e, JEPA_ERR_FORMAT, "%s: a palette TIFF without its ColorMap", what);
    const tmsize_t line = st ? 0 : TIFFScanlineSize(t);
    uint8_t *out = NULL, *row = NULL;
    if (!st && (line <= 0 || (size_t)line > (size_t)tw * 8))
        st = jr_err_set(e, JEPA_ERR_FORMAT, "%s: a TIFF scanline of %lld bytes", what, (long long)line);
    if (!st && (!(out = malloc((size_t)tw * th * 3)) || !(row = malloc((size_t)line))))
        st = jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", what);
    const uint16_t *const cmap[3] = {pal[0], pal[1], pal[2]};
    for (uint32_t y = 0; !st && y < th; y++) {
        if (TIFFReadScanline(t, row, y, 0) < 0)
            st = jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode the TIFF (%s)", what,
                            m.msg[0] ? m.msg : "damaged or truncated");
        else
            tiff_row(kind, row, tw, cmap, out + (size_t)y * tw * 3);
    }
    TIFFClose(t);
    free(row);
    if (st) {
        free(out);
        return st;
    }
    *rgb = out, *h = (int)th, *w = (int)tw;
    return JEPA_OK;
#else
    (void)d, (void)n, (void)rgb, (void)h, (void)w;
    return no_decoder(what, "TIFF", "libtiff", "libtiff-dev", e);
#endif
}

/* ---- EXIF orientation ---- */

/* The Orientation (0x0112) of IFD0 in a TIFF-structured block (an Exif payload, or a
 * TIFF file itself): 1..8, or 0 when absent or unreadable. */
static int tiff_orientation(const uint8_t *t, size_t n) {
    if (n < 8 || !((t[0] == 'I' && t[1] == 'I') || (t[0] == 'M' && t[1] == 'M'))) return 0;
    const bool be = t[0] == 'M';
#define RD16(p) (be ? (unsigned)(p)[0] << 8 | (p)[1] : (unsigned)(p)[1] << 8 | (p)[0])
#define RD32(p) (be ? (uint32_t)RD16(p) << 16 | RD16((p) + 2) : (uint32_t)RD16((p) + 2) << 16 | RD16(p))
    if (RD16(t + 2) != 42) return 0;
    const uint32_t ifd = RD32(t + 4);
    if (ifd > n - 2 || n < 2) return 0;
    const unsigned count = RD16(t + ifd);
    for (unsigned i = 0; i < count && ifd + 2 + 12 * (size_t)(i + 1) <= n; i++) {
        const uint8_t *en = t + ifd + 2 + 12 * (size_t)i;
        if (RD16(en) == 0x0112 && RD16(en + 2) == 3) {
            const unsigned v = RD16(en + 8);
            return v >= 1 && v <= 8 ? (int)v : 0;
        }
    }
    return 0;
#undef RD16
#undef RD32
}

/* The EXIF orientation of an encoded image, where PIL's getexif() finds it: a JPEG's APP1
 * "Exif", a PNG's eXIf chunk, a WebP's EXIF chunk, a TIFF's own first IFD. */
static int exif_orientation(const uint8_t *d, size_t n, const char *fmt) {
    if (!strcmp(fmt, "TIFF")) return tiff_orientation(d, n);
    if (!strcmp(fmt, "PNG")) {
        size_t len = 0;
        const uint8_t *c = png_chunk(d, n, "eXIf", &len);
        return c ? tiff_orientation(c, len) : 0;
    }
    if (!strcmp(fmt, "WebP")) {
        for (size_t off = 12; off + 8 <= n;) {
            const size_t len = le32(d + off + 4);
            if (len > n - off - 8) return 0;
            if (!memcmp(d + off, "EXIF", 4)) {
                const size_t skip = len >= 6 && !memcmp(d + off + 8, "Exif\0\0", 6) ? 6 : 0;
                return tiff_orientation(d + off + 8 + skip, len - skip);
            }
            off += 8 + len + (len & 1);
        }
        return 0;
    }
    if (!strcmp(fmt, "JPEG")) {
        for (size_t off = 2; off + 4 <= n && d[off] == 0xff;) {
            const uint8_t mk = d[off + 1];
            if (mk == 0xda || mk == 0xd9) return 0;
            const size_t len = (size_t)d[off + 2] << 8 | d[off + 3];
            if (len < 2 || len > n - off - 2) return 0;
            if (mk == 0xe1 && len >= 8 && !memcmp(d + off + 4, "Exif\0\0", 6))
                return tiff_orientation(d + off + 10, len - 8);
            off += 2 + len;
        }
    }
    return 0;
}

/* rgb [h, w, 3] as ImageOps.exif_transpose leaves it for orientation o (2 mirror, 3
 * rotate 180, 4 flip, 5 transpose, 6 rotate 270, 7 transverse, 8 rotate 90): a new
 * buffer in *rgb (the old one freed), the new size in *h, *w. */
static jepa_status exif_apply(int o, uint8_t **rgb, int *h, int *w, const char *what, struct jerr *e) {
    if (o < 2) return JEPA_OK;
    const size_t H = (size_t)*h, W = (size_t)*w;
    const bool swap = o >= 5;
    const size_t oh = swap ? W : H, ow = swap ? H : W;
    uint8_t *out = malloc(H * W * 3);
    if (!out) return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", what);
    for (size_t y = 0; y < oh; y++)
        for (size_t x = 0; x < ow; x++) {
            size_t sy, sx;
            switch (o) {
            case 2: sy = y, sx = W - 1 - x; break;
            case 3: sy = H - 1 - y, sx = W - 1 - x; break;
            case 4: sy = H - 1 - y, sx = x; break;
            case 5: sy = x, sx = y; break;
            case 6: sy = H - 1 - x, sx = y; break;
            case 7: sy = H - 1 - x, sx = W - 1 - y; break;
            default: sy = x, sx = W - 1 - y; break;
            }
            memcpy(out + 3 * (y * ow + x), *rgb + 3 * (sy * W + sx), 3);
        }
    free(*rgb);
    *rgb = out, *h = (int)oh, *w = (int)ow;
    return JEPA_OK;
}

/* ---- the format by its bytes, and the decoder it takes ---- */

const char *image_format(const void *data, size_t n) {
    static const uint8_t png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    const uint8_t *d = data;
    return n >= 8 && !memcmp(d, png, 8) ? "PNG"
         : n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff ? "JPEG"
         : is_webp(d, n) ? "WebP"
         : n >= 2 && d[0] == 'B' && d[1] == 'M' ? "BMP"
         : n >= 4 && !memcmp(d, "GIF8", 4) ? "GIF"
         : n >= 4 && (!memcmp(d, "II*\0", 4) || !memcmp(d, "MM\0*", 4)) ? "TIFF"
         : n >= 4 && !memcmp(d, "8BPS", 4) ? "PSD"
         : n >= 2 && !memcmp(d, "#?", 2) ? "HDR"
         : n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7' ? "PNM"
         : is_tga(d, n) ? "TGA" : NULL;
}

static bool decodable(const char *f) {
    return f && strcmp(f, "PSD") && strcmp(f, "HDR") && strcmp(f, "PNM");
}

bool image_exif_rotate = false;

/* The decoder the signature names; other image formats named and refused. */
static jepa_status decode(const uint8_t *d, size_t n, const char *what, unsigned flags, uint8_t **rgb, int *h,
                          int *w, struct jerr *e) {
    *rgb = NULL;
    const char *f = image_format(d, n);
    jepa_status st;
    if (!f) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: %s", what, IMAGE_NOT_MEDIA);
    if (!decodable(f))
        return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: %s images are not supported (%s)", what, f, IMAGE_FORMATS);
    if (!strcmp(f, "PNG")) st = decode_png(d, n, what, rgb, h, w, e);
    else if (!strcmp(f, "JPEG")) st = decode_jpeg(d, n, what, rgb, h, w, e);
    else if (!strcmp(f, "WebP")) st = decode_webp(d, n, what, rgb, h, w, e);
    else if (!strcmp(f, "GIF")) st = decode_gif(d, n, what, rgb, h, w, e);
    else if (!strcmp(f, "TIFF")) st = decode_tiff(d, n, what, rgb, h, w, e);
    else st = decode_stb_other(d, n, f, what, rgb, h, w, e);   /* BMP, TGA */
    if (!st && (flags & IMAGE_EXIF_ROTATE)) st = exif_apply(exif_orientation(d, n, f), rgb, h, w, what, e);
    if (st) {
        free(*rgb);
        *rgb = NULL;
    }
    return st;
}

bool image_is_image_file(const char *path) {
    uint8_t d[18];
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    const size_t n = fread(d, 1, sizeof d, f);
    fclose(f);
    return decodable(image_format(d, n));
}

jepa_status image_load_rgb_flags(const char *path, unsigned flags, uint8_t **rgb, int *h, int *w, struct jerr *e) {
    *rgb = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return image_open_error(path, e);
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len < 1 || (size_t)len > MAX_FILE_BYTES || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return len < 1 ? jr_err_set(e, JEPA_ERR_FORMAT, "%s: empty or unreadable image file", path)
                       : jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: %ld bytes is more than an image may have (%zu MiB)",
                                    path, len, MAX_FILE_BYTES >> 20);
    }
    uint8_t *d = malloc((size_t)len);
    const size_t got = d ? fread(d, 1, (size_t)len, f) : 0;
    fclose(f);
    if (!d) return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", path);
    jepa_status st = got == (size_t)len ? decode(d, got, path, flags, rgb, h, w, e)
                                        : jr_err_set(e, JEPA_ERR_IO, "%s: cannot read", path);
    free(d);
    return st;
}

jepa_status image_load_rgb(const char *path, uint8_t **rgb, int *h, int *w, struct jerr *e) {
    return image_load_rgb_flags(path, image_exif_rotate ? IMAGE_EXIF_ROTATE : 0, rgb, h, w, e);
}

jepa_status image_decode_rgb_flags(const void *data, size_t size, unsigned flags, uint8_t **rgb, int *h, int *w,
                                   struct jerr *e) {
    *rgb = NULL;
    if (!data || size == 0 || size > MAX_FILE_BYTES) return jr_err_set(e, JEPA_ERR_ARG, "image: bad buffer");
    return decode(data, size, "image", flags, rgb, h, w, e);
}

jepa_status image_decode_rgb(const void *data, size_t size, uint8_t **rgb, int *h, int *w, struct jerr *e) {
    return image_decode_rgb_flags(data, size, image_exif_rotate ? IMAGE_EXIF_ROTATE : 0, rgb, h, w, e);
}

jepa_status image_open_error(const char *path, struct jerr *e) {
    const int err = errno;
    return jr_err_set(e, JEPA_ERR_IO, "%s: %s", path, err == ENOENT ? "no such file" : strerror(err));
}
