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
        int key = -1;
        for (size_t off = 8; off + 12 <= n;) {   /* the tRNS grey key, if any (chunks checked above) */
            const size_t len = (size_t)d[off] << 24 | (size_t)d[off + 1] << 16 | (size_t)d[off + 2] << 8 | d[off + 3];
            if (!memcmp(d + off + 4, "tRNS", 4) && len >= 2) key = d[off + 8] << 8 | d[off + 9];
            if (!memcmp(d + off + 4, "IEND", 4)) break;
            off += 12 + len;
        }
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
    rgba_to_rgb(px, (size_t)ix * (size_t)iy, ctype != 2);   /* in place: RGB rows packed in the first 3/4 */
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
    if (!st && (ci.jpeg_color_space == JCS_CMYK || ci.jpeg_color_space == JCS_YCCK))
        st = jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: a CMYK JPEG (PIL's convert(\"RGB\") of CMYK is not reproduced)", what);
    if (st) {
        jpeg_destroy_decompress(&ci);
        return st;
    }
    ci.out_color_space = JCS_RGB;   /* grey replicated to RGB, as convert("RGB") */
    jpeg_start_decompress(&ci);
    const size_t row = (size_t)ci.output_width * 3;
    px = malloc(row * ci.output_height);
    if (!px) {
        jpeg_destroy_decompress(&ci);
        return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory for a %ux%u image", what, ci.output_width,
                          ci.output_height);
    }
    while (ci.output_scanline < ci.output_height) {
        JSAMPROW r = px + row * ci.output_scanline;
        jpeg_read_scanlines(&ci, &r, 1);
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
    return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: this build has no WebP decoding (%s)", what,
#ifdef JEPA_STATIC_BUILD
                      "a static build without a static libwebp; build with -Dstatic=false"
#else
                      "libwebp not found; install libwebp-dev"
#endif
    );
#endif
}

const char *image_format(const void *data, size_t n) {
    static const uint8_t png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    const uint8_t *d = data;
    return n >= 8 && !memcmp(d, png, 8) ? "PNG"
         : n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff ? "JPEG"
         : is_webp(d, n) ? "WebP"
         : n >= 2 && d[0] == 'B' && d[1] == 'M' ? "BMP"
         : n >= 4 && !memcmp(d, "GIF8", 4) ? "GIF"
         : n >= 4 && !memcmp(d, "8BPS", 4) ? "PSD"
         : n >= 2 && !memcmp(d, "#?", 2) ? "HDR"
         : n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7' ? "PNM" : NULL;
}

static bool decodable(const char *format) {
    return format && (!strcmp(format, "PNG") || !strcmp(format, "JPEG") || !strcmp(format, "WebP"));
}

/* A PNG, JPEG or WebP by its signature; other image formats named and refused. */
static jepa_status decode(const uint8_t *d, size_t n, const char *what, uint8_t **rgb, int *h, int *w,
                          struct jerr *e) {
    *rgb = NULL;
    const char *f = image_format(d, n);
    if (f && !strcmp(f, "PNG")) return decode_png(d, n, what, rgb, h, w, e);
    if (f && !strcmp(f, "JPEG")) return decode_jpeg(d, n, what, rgb, h, w, e);
    if (f && !strcmp(f, "WebP")) return decode_webp(d, n, what, rgb, h, w, e);
    const char *other = f ? f : n >= 4 && !memcmp(d, "RIFF", 4) ? "RIFF (not WebP)" : NULL;
    if (other) return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: %s images are not supported (PNG, JPEG, WebP)", what, other);
    return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode: not a PNG, JPEG or WebP image", what);
}

bool image_is_image_file(const char *path) {
    uint8_t d[12];
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    const size_t n = fread(d, 1, sizeof d, f);
    fclose(f);
    return decodable(image_format(d, n));
}

jepa_status image_load_rgb(const char *path, uint8_t **rgb, int *h, int *w, struct jerr *e) {
    *rgb = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return jr_err_set(e, JEPA_ERR_IO, "%s: cannot open", path);
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
    jepa_status st = got == (size_t)len ? decode(d, got, path, rgb, h, w, e)
                                        : jr_err_set(e, JEPA_ERR_IO, "%s: cannot read", path);
    free(d);
    return st;
}

jepa_status image_decode_rgb(const void *data, size_t size, uint8_t **rgb, int *h, int *w,
                             struct jerr *e) {
    *rgb = NULL;
    if (!data || size == 0 || size > MAX_FILE_BYTES) return jr_err_set(e, JEPA_ERR_ARG, "image: bad buffer");
    return decode(data, size, "image", rgb, h, w, e);
}

