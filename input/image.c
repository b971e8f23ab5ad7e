/*
 * image.c — stb_image decoding to packed RGB (see image.h). The one translation unit
 * that compiles stb_image's implementation. Tested by tests/input/test_preprocess.c.
 */
#include "input/image.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef JEPA_HAVE_STB

/* stb allocates with these, so the pixels it returns are the caller's to free() */
#define STBI_MALLOC(sz) malloc(sz)
#define STBI_REALLOC(p, newsz) realloc(p, newsz)
#define STBI_FREE(p) free(p)
#define STBI_MAX_DIMENSIONS 65536
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

/* Largest accepted image: 64 Ki per side and 2^28 pixels (768 MiB of RGB). */
#define MAX_SIDE 65536
#define MAX_PIXELS (1u << 28)

static jepa_status finish(unsigned char *px, int x, int y, const char *what, uint8_t **rgb, int *h,
                          int *w, struct jerr *e) {
    if (!px) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: cannot decode the image (%s)", what, stbi_failure_reason());
    if (x < 1 || y < 1 || x > MAX_SIDE || y > MAX_SIDE || (uint64_t)x * (uint64_t)y > MAX_PIXELS) {
        stbi_image_free(px);
        return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: %dx%d image is too large", what, x, y);
    }
    *rgb = px, *h = y, *w = x;
    return JEPA_OK;
}

jepa_status image_load_rgb(const char *path, uint8_t **rgb, int *h, int *w, struct jerr *e) {
    *rgb = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return jr_err_set(e, JEPA_ERR_IO, "%s: cannot open", path);
    int x = 0, y = 0, n = 0;
    unsigned char *px = stbi_load_from_file(f, &x, &y, &n, 3);
    fclose(f);
    return finish(px, x, y, path, rgb, h, w, e);
}

jepa_status image_decode_rgb(const void *data, size_t size, uint8_t **rgb, int *h, int *w,
                             struct jerr *e) {
    *rgb = NULL;
    if (!data || size == 0 || size > 0x7fffffff) return jr_err_set(e, JEPA_ERR_ARG, "image: bad buffer");
    int x = 0, y = 0, n = 0;
    unsigned char *px = stbi_load_from_memory(data, (int)size, &x, &y, &n, 3);
    return finish(px, x, y, "image", rgb, h, w, e);
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
