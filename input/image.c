/*
 * image.c — stb_image decoding to packed RGB (see image.h). The one translation unit
 * that compiles stb_image's implementation, and only its PNG and JPEG decoders: the
 * formats accepted are those tested. Before anything is decoded the file is read whole
 * (at most 256 MiB), its format checked by its signature, and the size its header
 * declares bounded (2^26 pixels, 16384 per side), so a few hundred bytes cannot make the
 * decoder allocate gigabytes; a JPEG without its end-of-image marker (truncated: stb
 * would fill the missing pixels with grey) is refused. Tested by
 * tests/input/test_preprocess.c and tests/input/test_hostile_images.sh.
 */
#include "input/image.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
#define STBI_MAX_DIMENSIONS (1 << 24)   /* the header is read; check_encoded bounds the size */
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
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

/* Largest accepted image: 16 Ki per side and 2^26 pixels (192 MiB of RGB); largest file. */
#define MAX_SIDE 16384
#define MAX_PIXELS (1u << 26)
#define MAX_FILE_BYTES ((size_t)256 << 20)

/* The checks before decoding: a PNG or JPEG signature, a declared size in bounds, and a
 * JPEG's end-of-image marker after its first scan. */
static jepa_status check_encoded(const uint8_t *d, size_t n, const char *what, struct jerr *e) {
    static const uint8_t png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    const bool is_png = n >= 8 && !memcmp(d, png, 8), is_jpeg = n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff;
    if (!is_png && !is_jpeg) {
        /* other image formats by their signature: named, and refused as unsupported */
        const char *other = n >= 2 && d[0] == 'B' && d[1] == 'M' ? "BMP"
                          : n >= 4 && !memcmp(d, "GIF8", 4) ? "GIF"
                          : n >= 4 && !memcmp(d, "8BPS", 4) ? "PSD"
                          : n >= 2 && !memcmp(d, "#?", 2) ? "HDR"
                          : n >= 4 && !memcmp(d, "RIFF", 4) ? "RIFF (WebP?)"
                          : n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7' ? "PNM" : NULL;
        if (other) return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: %s images are not supported (PNG, JPEG)", what, other);
        return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode: not a PNG or JPEG image", what);
    }
    long long x = 0, y = 0;
    if (is_png) {   /* IHDR first, big-endian width and height (stb refuses large ones unnamed) */
        if (n < 24 || memcmp(d + 12, "IHDR", 4))
            return jr_err_set(e, JEPA_ERR_FORMAT, "%s: a PNG without its IHDR header", what);
        x = (long long)d[16] << 24 | d[17] << 16 | d[18] << 8 | d[19];
        y = (long long)d[20] << 24 | d[21] << 16 | d[22] << 8 | d[23];
    } else {
        int ix = 0, iy = 0, c = 0;
        if (!stbi_info_from_memory(d, (int)n, &ix, &iy, &c))
            return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot read the image header (%s)", what, stbi_failure_reason());
        x = ix, y = iy;
    }
    if (x < 1 || y < 1)
        return jr_err_set(e, JEPA_ERR_FORMAT, "%s: the header declares a %lldx%lld image", what, x, y);
    if (x > MAX_SIDE || y > MAX_SIDE || (uint64_t)x * (uint64_t)y > MAX_PIXELS)
        return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: a %lldx%lld image is larger than %d pixels (%d per side)", what,
                          x, y, (int)MAX_PIXELS, MAX_SIDE);
    if (is_png) {
        /* every chunk (length, type, data, CRC) inside the file, up to IEND: a truncated
         * file is refused, and no chunk can make stb allocate more than the file holds */
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
    }
    if (is_jpeg) {
        size_t sos = 2;
        while (sos + 1 < n && !(d[sos] == 0xff && d[sos + 1] == 0xda)) sos++;
        bool eoi = false;
        for (size_t i = n; i-- > sos + 2 && !eoi;) eoi = d[i - 1] == 0xff && d[i] == 0xd9;
        if (!eoi) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: truncated JPEG (no end-of-image marker)", what);
    }
    return JEPA_OK;
}

static jepa_status decode(const uint8_t *d, size_t n, const char *what, uint8_t **rgb, int *h, int *w,
                          struct jerr *e) {
    *rgb = NULL;
    jepa_status st = check_encoded(d, n, what, e);
    if (st) return st;
    int x = 0, y = 0, c = 0;
    unsigned char *px = stbi_load_from_memory(d, (int)n, &x, &y, &c, 3);
    if (!px) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode the image (%s)", what, stbi_failure_reason());
    *rgb = px, *h = y, *w = x;
    return JEPA_OK;
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

#else /* !JEPA_HAVE_STB */

static jepa_status no_stb(const char *what, uint8_t **rgb, struct jerr *e) {
    *rgb = NULL;
    return jr_err_set(e, JEPA_ERR_UNSUPPORTED,
                    "%s: this build has no image decoding (stb_image.h not found; install libstb-dev)", what);
}

jepa_status image_load_rgb(const char *path, uint8_t **rgb, int *h, int *w, struct jerr *e) {
    (void)h, (void)w;
    return no_stb(path, rgb, e);
}

jepa_status image_decode_rgb(const void *data, size_t size, uint8_t **rgb, int *h, int *w,
                             struct jerr *e) {
    (void)data, (void)size, (void)h, (void)w;
    return no_stb("image", rgb, e);
}

#endif
