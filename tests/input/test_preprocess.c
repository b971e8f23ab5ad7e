/*
 * test_preprocess.c — the pixel pipeline of input/preprocess.c against the references
 * of tests/input/data (tests/gen/gen_preprocess.py: torchvision, cv2, transformers):
 *
 *   resize    every filter (torchvision bilinear / bicubic with and without antialias,
 *             cv2 INTER_LINEAR) on up, down, mixed, 2x, one-axis and 1-pixel cases:
 *             max abs diff 0; crop windows computed alone equal the same window of the
 *             full resize
 *   pipeline  HF processors and Meta's V-JEPA 2.1 eval transform, resize + crop +
 *             normalisation: 0 ulp (bit patterns equal)
 *   webp      the WebPs of tests/input/data/webp (tests/gen/gen_webp.py): libwebp's decode
 *             equals PIL's after convert_to_rgb, byte for byte
 *   jpeg      the JPEGs of tests/input/data/jpeg (tests/gen/gen_jpeg.py: 4:2:0, 4:2:2,
 *             4:4:4, progressive, grayscale, restart markers, odd sizes) through
 *             libjpeg-turbo equal the pixels PIL's Image.open().convert("RGB") gives, byte
 *             for byte; a CMYK JPEG decodes (its pixels: test_formats.c)
 *   e2e       the committed PNG through stb_image equals the pixels PIL decodes, and
 *             jepa_preprocess_rgb() with tests/data/vjepa2_tiny gives HF's tensor, for
 *             the PNG and for a uint8 frame array, 0 ulp
 *   errors    bad arguments come back as JEPA_ERR_ARG with a message
 *
 * usage: test_preprocess INPUT_DATA_DIR FIXTURES_DIR
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/npy.h"
#include "input/image.h"
#include "input/preprocess.h"
#include "jepa.h"
#include "manifest.h"
#include "tests/check.h"

static const char *data_dir;


static bool load(struct npy *a, const char *name) {
    char path[1024];
    struct jerr e = {0};
    snprintf(path, sizeof path, "%s/%s", data_dir, name);
    if (npy_load(a, path, &e)) {
        printf("FAIL cannot load %s: %s\n", path, e.msg);
        check_fail_count();
        return false;
    }
    return true;
}

static enum pre_filter filter_of(const char *s) {
    static const char *names[] = {"tv_bilinear_aa", "tv_bicubic_aa", "tv_bilinear", "tv_bicubic", "cv2_linear"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i])) return (enum pre_filter)i;
    printf("FAIL unknown filter %s\n", s);
    check_fail_count();
    return PRE_TV_BILINEAR_AA;
}

/* Number of elements whose float bit patterns differ, and the largest distance in ulp. */
static size_t ulp_diff(const float *a, const float *b, size_t n, long long *max_ulp) {
    size_t bad = 0;
    *max_ulp = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t x, y;
        memcpy(&x, &a[i], 4);
        memcpy(&y, &b[i], 4);
        if (x == y) continue;
        bad++;
        long long d = (long long)x - y;
        if (d < 0) d = -d;
        if (d > *max_ulp) *max_ulp = d;
    }
    return bad;
}

static void test_resize(const struct man_line *l) {
    /* resize NAME KIND SEED H W FILTER OH OW FILE */
    const char *name = l->f[1], *kind = l->f[2];
    int seed = atoi(l->f[3]), h = atoi(l->f[4]), w = atoi(l->f[5]), oh = atoi(l->f[7]), ow = atoi(l->f[8]);
    enum pre_filter f = filter_of(l->f[6]);
    struct npy ref;
    if (!load(&ref, l->f[9])) return;
    uint8_t *src = malloc((size_t)h * w * 3), *out = malloc((size_t)oh * ow * 3);
    man_frame(kind, (uint32_t)seed, h, w, src);
    struct jerr e = {0};
    jepa_status st = ji_pre_resize_u8(src, h, w, (size_t)w * 3, 3, f, oh, ow, 0, 0, oh, ow, out, &e);
    CHECK(st == JEPA_OK, "resize %s %s: %s", name, l->f[6], e.msg);
    CHECK(ref.dtype == NPY_U8 && ref.count == (int64_t)oh * ow * 3, "resize %s %s: reference shape", name, l->f[6]);
    if (st == JEPA_OK && ref.count == (int64_t)oh * ow * 3) {
        int maxd = 0;
        size_t nd = 0;
        const uint8_t *r = ref.data;
        for (size_t i = 0; i < (size_t)oh * ow * 3; i++) {
            int d = abs((int)out[i] - (int)r[i]);
            if (d) nd++;
            if (d > maxd) maxd = d;
        }
        CHECK(maxd == 0, "resize %-10s %-14s %dx%d -> %dx%d: max abs diff %d on %zu values", name, l->f[6], h, w, oh,
              ow, maxd, nd);
        /* windows: a crop computed alone equals the same crop of the full result */
        int wins[3][4] = {{0, 0, oh, ow}, {oh / 3, ow / 4, (oh + 1) / 2, (ow + 2) / 3}, {oh - 1, ow - 1, 1, 1}};
        for (int k = 0; k < 3; k++) {
            int y0 = wins[k][0], x0 = wins[k][1], ny = wins[k][2], nx = wins[k][3];
            if (ny < 1 || nx < 1) continue;
            uint8_t *win = malloc((size_t)ny * nx * 3);
            st = ji_pre_resize_u8(src, h, w, (size_t)w * 3, 3, f, oh, ow, y0, x0, ny, nx, win, &e);
            bool same = st == JEPA_OK;
            for (int y = 0; same && y < ny; y++)
                same = !memcmp(win + (size_t)y * nx * 3, out + ((size_t)(y0 + y) * ow + x0) * 3, (size_t)nx * 3);
            CHECK(same, "resize %s %s: window %d+%d x %d+%d differs from the full resize", name, l->f[6], y0, ny, x0, nx);
            free(win);
        }
    }
    free(src);
    free(out);
    npy_free(&ref);
}

static void test_pipeline(const struct man_line *l) {
    /* pipeline NAME KIND SEED T H W FILTER MODE SHORT CROP NORM m0 m1 m2 s0 s1 s2 RESCALE FILE */
    const char *name = l->f[1], *kind = l->f[2];
    int seed = atoi(l->f[3]), T = atoi(l->f[4]), h = atoi(l->f[5]), w = atoi(l->f[6]);
    struct pre_cfg c = {
        .filter = filter_of(l->f[7]),
        .mode = !strcmp(l->f[8], "squash") ? PRE_SQUASH : PRE_SHORTEST_EDGE,
        .resize_short = atoi(l->f[9]),
        .crop = atoi(l->f[10]),
        .norm = !strcmp(l->f[11], "sequential") ? PRE_NORM_SEQUENTIAL : PRE_NORM_FUSED,
    };
    for (int i = 0; i < 3; i++) c.mean[i] = strtof(l->f[12 + i], NULL), c.std[i] = strtof(l->f[15 + i], NULL);
    c.rescale = strtof(l->f[18], NULL);
    struct npy ref;
    if (!load(&ref, l->f[19])) return;
    const size_t hw = (size_t)c.crop * c.crop;
    CHECK(ref.dtype == NPY_F32 && ref.count == (int64_t)(3 * T * hw), "pipeline %s: reference shape", name);
    float *x = malloc(sizeof(float) * 3 * T * hw);
    uint8_t *src = malloc((size_t)h * w * 3), *crop = malloc(hw * 3);
    bool ok = true;
    for (int t = 0; t < T; t++) {
        struct jerr e = {0};
        struct pre_geom g;
        man_frame(kind, (uint32_t)(seed + t), h, w, src);
        jepa_status st = ji_pre_frame_u8(&c, src, h, w, (size_t)w * 3, crop, &g, &e);
        CHECK(st == JEPA_OK, "pipeline %s: %s", name, e.msg);
        ok &= st == JEPA_OK;
        if (st == JEPA_OK) ji_pre_normalize(&c, crop, hw, x + (size_t)t * hw, (size_t)T * hw);
    }
    if (ok && ref.count == (int64_t)(3 * T * hw)) {
        long long mu;
        size_t bad = ulp_diff(x, ref.data, 3 * T * hw, &mu);
        CHECK(bad == 0, "pipeline %-16s: %zu of %zu values differ, max %lld ulp", name, bad, 3 * T * hw, mu);
    }
    free(x);
    free(src);
    free(crop);
    npy_free(&ref);
}

/* The clip x[3, T, 64, 64] of `frames` through the public API and model m vs a tensor. */
static void check_api_clip(const jepa_model *m, const char *what, const uint8_t *frames, int T, int h, int w,
                           const char *ref_name) {
    struct npy ref;
    if (!load(&ref, ref_name)) return;
    int H = 0, W = 0;
    CHECK(jepa_preprocess_size(m, NULL, &H, &W) == JEPA_OK && H == 64 && W == 64, "%s: size %dx%d", what, H, W);
    float *x = malloc(sizeof(float) * 3 * T * 64 * 64);
    bool ok = true;
    for (int t = 0; t < T; t++) {
        char err[JEPA_ERR_LEN];
        jepa_status st = jepa_preprocess_rgb(m, frames + (size_t)t * h * w * 3, h, w, NULL, x, T, t, err);
        CHECK(st == JEPA_OK, "%s: %s", what, err);
        ok &= st == JEPA_OK;
    }
    CHECK(ref.count == 3 * T * 64 * 64, "%s: reference shape", what);
    if (ok && ref.count == 3 * T * 64 * 64) {
        long long mu;
        size_t bad = ulp_diff(x, ref.data, (size_t)ref.count, &mu);
        CHECK(bad == 0, "%s: %zu values differ from HF's tensor, max %lld ulp", what, bad, mu);
    }
    free(x);
    npy_free(&ref);
}

static void test_e2e_image(const struct man_line *l, const jepa_model *m) {
    /* e2e_image PNG KIND SEED H W TENSOR */
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir, l->f[1]);
    int h = atoi(l->f[4]), w = atoi(l->f[5]);
    uint8_t *rgb = NULL, *want = malloc((size_t)h * w * 3);
    int ih = 0, iw = 0;
    struct jerr e = {0};
    jepa_status st = image_load_rgb(path, &rgb, &ih, &iw, &e);
    if (st == JEPA_ERR_UNSUPPORTED) {
        printf("note: %s (image checks skipped)\n", e.msg);
        free(want);
        return;
    }
    CHECK(st == JEPA_OK && ih == h && iw == w, "png: %s (%dx%d)", e.msg, ih, iw);
    if (st == JEPA_OK && ih == h && iw == w) {
        man_frame(l->f[2], (uint32_t)atoi(l->f[3]), h, w, want);
        CHECK(!memcmp(rgb, want, (size_t)h * w * 3), "png: stb_image pixels differ from PIL's");
        check_api_clip(m, "png -> jepa_preprocess_rgb", rgb, 1, h, w, l->f[6]);
    }
    free(rgb);
    free(want);
    /* decoding errors */
    e = (struct jerr){0};
    snprintf(path, sizeof path, "%s/manifest.txt", data_dir);
    CHECK(image_load_rgb(path, &rgb, &ih, &iw, &e) == JEPA_ERR_FORMAT && !rgb && strstr(e.msg, "manifest.txt"),
          "a text file must fail to decode with a message, got '%s'", e.msg);
    e = (struct jerr){0};
    CHECK(image_load_rgb("/nonexistent/x.png", &rgb, &ih, &iw, &e) == JEPA_ERR_IO, "missing file: '%s'", e.msg);
}

/* Every case of DIR/manifest.txt ("name height width"): our decode of DIR/name.EXT
 * against the pixels in DIR/name.npy (PIL's, from tests/gen/gen_jpeg.py / gen_png.py).
 * Returns the number of cases run, -1 when the build lacks the decoder. */
static int test_decodes(const char *dir, const char *ext, const char *missing) {
    char path[1024], line[256];
    snprintf(path, sizeof path, "%s/%s/manifest.txt", data_dir, dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return 0;
    int n = 0, skipped = 0;
    while (fgets(line, sizeof line, f)) {
        char name[128];
        int h, w;
        if (line[0] == '#' || sscanf(line, "%127s %d %d", name, &h, &w) != 3) continue;
        snprintf(path, sizeof path, "%s/%s/%s.%s", data_dir, dir, name, ext);
        uint8_t *rgb = NULL;
        int ih = 0, iw = 0;
        struct jerr e = {0};
        jepa_status st = image_load_rgb(path, &rgb, &ih, &iw, &e);
        if (st == JEPA_ERR_UNSUPPORTED && strstr(e.msg, missing)) {
            skipped++;
            continue;
        }
        n++;
        CHECK(st == JEPA_OK && ih == h && iw == w, "%s %s: %s (%dx%d, expected %dx%d)", dir, name, e.msg, ih, iw, h, w);
        struct npy ref;
        char rn[160];
        snprintf(rn, sizeof rn, "%s/%s.npy", dir, name);
        if (st == JEPA_OK && ih == h && iw == w && load(&ref, rn)) {
            CHECK(ref.dtype == NPY_U8 && ref.ndim == 3 && ref.shape[0] == h && ref.shape[1] == w && ref.shape[2] == 3,
                  "%s %s: reference shape", dir, name);
            size_t differ = 0;
            int worst = 0;
            const uint8_t *want = ref.data;
            for (size_t i = 0; i < (size_t)h * w * 3; i++)
                if (rgb[i] != want[i]) {
                    differ++;
                    int d = abs((int)rgb[i] - (int)want[i]);
                    worst = d > worst ? d : worst;
                }
            CHECK(!differ, "%s %s: %zu of %d bytes differ from PIL's decode (worst by %d)", dir, name, differ, h * w * 3,
                  worst);
            npy_free(&ref);
        }
        free(rgb);
    }
    fclose(f);
    if (skipped) {
        printf("note: this build has no %s decoder: %d cases not run\n", ext, skipped);
        return -1;
    }
    printf("%s: %d files decoded as PIL decodes them\n", dir, n);
    return n;
}

/* PNG: every colour type, bit depth, tRNS and interlacing, as HF's convert_to_rgb sees
 * them (gen_png.py); rgba_all holds every (colour, alpha) pair of the white composite. */
static void test_png(void) {
    const int n = test_decodes("png", "png", "no PNG decoding");
    if (n >= 0) CHECK(n >= 20, "png manifest: %d cases", n);
}

static void test_jpeg(void) {
    const int n = test_decodes("jpeg", "jpg", "no JPEG decoding");
    if (n < 0) return;
    CHECK(n >= 10, "jpeg manifest: %d cases", n);
    char path[1024];
    snprintf(path, sizeof path, "%s/jpeg/cmyk.jpg", data_dir);
    uint8_t *rgb = NULL;
    int ih, iw;
    struct jerr e = {0};
    CHECK(image_load_rgb(path, &rgb, &ih, &iw, &e) == JEPA_OK && ih == 16 && iw == 16,
          "a CMYK JPEG decodes (PIL's pixels: test_formats): '%s'", e.msg);
    free(rgb);
}

/* WebP: lossy (4:2:0 upsampling), lossless, with alpha (composited onto white), odd
 * sizes (gen_webp.py), as HF's convert_to_rgb sees PIL's decode. */
static void test_webp(void) {
    const int n = test_decodes("webp", "webp", "no WebP decoding");
    if (n >= 0) CHECK(n >= 7, "webp manifest: %d cases", n);
}

static void test_e2e_frames(const struct man_line *l, const jepa_model *m) {
    /* e2e_frames FRAMES.npy TENSOR */
    struct npy a;
    if (!load(&a, l->f[1])) return;
    CHECK(a.dtype == NPY_U8 && a.ndim == 4 && a.shape[3] == 3, "frames array dtype / shape");
    if (a.dtype == NPY_U8 && a.ndim == 4)
        check_api_clip(m, "frames -> jepa_preprocess_rgb", a.data, (int)a.shape[0], (int)a.shape[1], (int)a.shape[2],
                       l->f[2]);
    npy_free(&a);
}

static void test_errors(const jepa_model *m) {
    char err[JEPA_ERR_LEN];
    uint8_t px[3 * 4] = {0};
    float out[3 * 64 * 64];
    CHECK(jepa_preprocess_rgb(m, NULL, 2, 2, NULL, out, 1, 0, err) == JEPA_ERR_ARG && err[0], "NULL pixels");
    CHECK(jepa_preprocess_rgb(m, px, 2, 2, NULL, out, 1, 1, err) == JEPA_ERR_ARG && strstr(err, "frame 1 of 1"),
          "t out of range: '%s'", err);
    jepa_preprocess_params p = jepa_preprocess_default_params();
    p.resize_short = 32;   /* smaller than the 64 crop */
    CHECK(jepa_preprocess_rgb(m, px, 2, 2, &p, out, 1, 0, err) == JEPA_ERR_ARG && strstr(err, "crop"),
          "crop larger than the resize: '%s'", err);
    p = jepa_preprocess_default_params();
    p.filter = (jepa_resize_filter)99;
    CHECK(jepa_preprocess_rgb(m, px, 2, 2, &p, out, 1, 0, err) == JEPA_ERR_ARG, "unknown filter");
    /* a 2x2 frame is upscaled to 73x73 and cropped: it works */
    CHECK(jepa_preprocess_rgb(m, px, 2, 2, NULL, out, 1, 0, err) == JEPA_OK, "2x2 frame: %s", err);
    /* resize windows outside the result */
    struct jerr e = {0};
    uint8_t o[3];
    CHECK(ji_pre_resize_u8(px, 2, 2, 6, 3, PRE_TV_BILINEAR_AA, 4, 4, 3, 3, 2, 1, o, &e) == JEPA_ERR_ARG, "window outside");
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_preprocess INPUT_DATA_DIR FIXTURES_DIR\n");
        return 2;
    }
    data_dir = argv[1];
    char path[1024], err[JEPA_ERR_LEN];
    snprintf(path, sizeof path, "%s/vjepa2_tiny/model.gguf", argv[2]);
    jepa_model *m = NULL;
    if (jepa_model_load(&m, path, err)) {
        printf("FAIL %s: %s\n", path, err);
        return 1;
    }
    char *text = man_read(data_dir), *cur = text;
    if (!text) return 1;
    static struct man_line l;
    int n_resize = 0, n_pipe = 0;
    while (man_next(&cur, &l)) {
        if (!strcmp(l.f[0], "resize") && l.n == 10) test_resize(&l), n_resize++;
        else if (!strcmp(l.f[0], "pipeline") && l.n == 20) test_pipeline(&l), n_pipe++;
        else if (!strcmp(l.f[0], "e2e_image") && l.n == 7) test_e2e_image(&l, m);
        else if (!strcmp(l.f[0], "e2e_frames") && l.n == 3) test_e2e_frames(&l, m);
    }
    CHECK(n_resize >= 40 && n_pipe >= 6, "manifest: %d resize and %d pipeline cases", n_resize, n_pipe);
    test_errors(m);
    test_jpeg();
    test_webp();
    test_png();
    printf("%d resize cases, %d pipelines: %d checks passed, %d failed\n", n_resize, n_pipe, check_passed, check_failed);
    free(text);
    jepa_model_free(m);
    return check_failed ? 1 : 0;
}
