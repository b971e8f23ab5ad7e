/*
 * test_shapes.c — inputs whose last frames, rows or columns do not fill a tubelet or a
 * patch. The reference patch embeddings (Conv2d / Conv3d with stride = kernel, in Meta's
 * and Hugging Face's modules of every family: docs/architecture.md, "Input shapes") leave
 * them out, so the output for such an input must be the output for the same input cropped
 * to whole tubelets and patches. Each fixture input is padded here with random frames,
 * rows and columns (the crop is then the fixture input itself, cut out by this test, not
 * by the library), and every output (tokens, pooled, cls, emb, hier) of the padded input
 * must have the bits of the unpadded one, alone and in a batch of 2, at every kernel level
 * this machine has. jepa_model_grid must report the floored grid, and inputs that no
 * reference takes (smaller than a patch, a clip shorter than a tubelet) are refused with
 * a reason.
 *
 * usage: test_shapes DATA_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/npy.h"
#include "jepa.h"
#include "runtime/cpu.h"
#include "tests/models/parity.h"

static const char *data_dir;
static int failures, passes;

#define EXPECT(cond, ...)                                  \
    do {                                                   \
        if (cond) {                                        \
            passes++;                                      \
        } else {                                           \
            failures++;                                    \
            printf("FAIL " __VA_ARGS__);                   \
            printf("\n");                                  \
        }                                                  \
    } while (0)

/* A deterministic stream of values in [-2, 2) for the padding. */
static float pad_value(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
}

struct outs {
    float *tokens, *pooled, *cls, *emb, *hier;
    size_t nt, nh;
};

static void outs_alloc(struct outs *o, const jepa_model_info *info, int n, int B) {
    const size_t d = (size_t)info->embed_dim;
    o->nt = (size_t)B * n * d, o->nh = (size_t)B * info->n_hier * n * d;
    o->tokens = calloc(o->nt, sizeof(float));
    o->pooled = calloc((size_t)B * d, sizeof(float));
    o->cls = info->has_cls ? calloc((size_t)B * d, sizeof(float)) : NULL;
    o->emb = info->emb_dim ? calloc((size_t)B * info->emb_dim, sizeof(float)) : NULL;
    o->hier = info->n_hier ? calloc(o->nh, sizeof(float)) : NULL;
}

static void outs_free(struct outs *o) {
    free(o->tokens), free(o->pooled), free(o->cls), free(o->emb), free(o->hier);
}

static int embed(jepa_ctx *c, const float *x, int B, int T, int H, int W, struct outs *o) {
    jepa_embed_params p = {.batch = B};
    jepa_embed_out out = {.tokens = o->tokens, .pooled = o->pooled, .cls = o->cls, .emb = o->emb,
                          .hier = o->hier};
    return jepa_ctx_embed(c, x, T, H, W, &p, &out);
}

static int same(const float *a, const float *b, size_t n) {
    return !a || !memcmp(a, b, n * sizeof(float));
}

/* The fixture input dir/input ([C, T, H, W] or [C, H, W]) of dir/model.gguf, padded by
 * (dt frames, dh rows, dw columns). */
static void shape_case(const char *tag, const char *dir, const char *model, const char *input, int dt,
                       int dh, int dw, const char *cpu) {
    char path[1024], err[JEPA_ERR_LEN];
    struct npy x;
    struct jerr e = {0};
    snprintf(path, sizeof path, "%s/%s/%s", data_dir, dir, input);
    if (npy_load_f32(&x, path, &e)) {
        EXPECT(0, "%s: %s", path, e.msg);
        return;
    }
    snprintf(path, sizeof path, "%s/%s/%s", data_dir, dir, model);
    jepa_model *m = NULL;
    if (jepa_model_load(&m, path, err)) {
        EXPECT(0, "%s: %s", path, err);
        npy_free(&x);
        return;
    }
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    const int C = (int)x.shape[0], T = x.ndim == 4 ? (int)x.shape[1] : 1;
    const int H = (int)x.shape[x.ndim - 2], W = (int)x.shape[x.ndim - 1];
    const int Tp = T + dt, Hp = H + dh, Wp = W + dw;
    int gt, gh, gw, n, pgt, pgh, pgw, pn;
    jepa_status st = jepa_model_grid(m, T, H, W, &gt, &gh, &gw, &n);
    jepa_status pst = jepa_model_grid(m, Tp, Hp, Wp, &pgt, &pgh, &pgw, &pn);
    if (st || pst || gt != pgt || gh != pgh || gw != pgw || n != pn) {
        EXPECT(0, "%s: grid of %dx%dx%d (%d: %dx%dx%d) and of the padded %dx%dx%d (%d: %dx%dx%d) differ", tag, T,
               H, W, st, gt, gh, gw, Tp, Hp, Wp, pst, pgt, pgh, pgw);
        jepa_model_free(m);
        npy_free(&x);
        return;
    }
    passes++;
    /* two clips: the fixture input and its reverse, then each padded */
    const size_t clip = (size_t)C * T * H * W, pclip = (size_t)C * Tp * Hp * Wp;
    float *xs = malloc(sizeof(float) * 2 * clip), *xp = malloc(sizeof(float) * 2 * pclip);
    uint32_t seed = 12345;
    for (size_t i = 0; i < clip; i++) xs[i] = ((float *)x.data)[i], xs[clip + i] = ((float *)x.data)[clip - 1 - i];
    for (int b = 0; b < 2; b++)
        for (int ch = 0; ch < C; ch++)
            for (int t = 0; t < Tp; t++)
                for (int y = 0; y < Hp; y++)
                    for (int xx = 0; xx < Wp; xx++)
                        xp[(size_t)b * pclip + (((size_t)ch * Tp + t) * Hp + y) * Wp + xx] =
                            t < T && y < H && xx < W ? xs[(size_t)b * clip + (((size_t)ch * T + t) * H + y) * W + xx]
                                                     : pad_value(&seed);
    jepa_ctx *c = parity_ctx(m, cpu, 2);
    struct outs ref, got;
    outs_alloc(&ref, &info, n, 2);
    outs_alloc(&got, &info, n, 2);
    if (c) {
        for (int B = 1; B <= 2; B++) {
            const int r1 = embed(c, xs, B, T, H, W, &ref);
            const int r2 = embed(c, xp, B, Tp, Hp, Wp, &got);
            const size_t d = (size_t)info.embed_dim;
            const int ok = !r1 && !r2 && same(ref.tokens, got.tokens, (size_t)B * n * d) &&
                           same(ref.pooled, got.pooled, (size_t)B * d) && same(ref.cls, got.cls, (size_t)B * d) &&
                           same(ref.emb, got.emb, (size_t)B * info.emb_dim) &&
                           same(ref.hier, got.hier, (size_t)B * info.n_hier * n * d);
            EXPECT(ok, "%s [%s] batch %d: the %dx%dx%d input padded to %dx%dx%d gives other outputs (%s)", tag, cpu,
                   B, T, H, W, Tp, Hp, Wp, r1 || r2 ? jepa_ctx_error(c) : "bits differ");
            if (ok)
                printf("ok   %s [%s] batch %d: %dx%dx%d padded to %dx%dx%d, %d tokens: the bits of the unpadded input\n",
                       tag, cpu, B, T, H, W, Tp, Hp, Wp, n);
        }
    }
    outs_free(&ref), outs_free(&got);
    free(xs), free(xp);
    jepa_ctx_free(c);
    jepa_model_free(m);
    npy_free(&x);
}

/* What no reference takes: refused, with a reason, by the grid and by the forward. */
static void refusals(void) {
    char path[1024], err[JEPA_ERR_LEN];
    snprintf(path, sizeof path, "%s/vjepa2_tiny/model.gguf", data_dir);
    jepa_model *m = NULL;
    if (jepa_model_load(&m, path, err)) {
        EXPECT(0, "%s: %s", path, err);
        return;
    }
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    const int P = info.patch_size;
    EXPECT(jepa_model_grid(m, 2, P - 1, P, NULL, NULL, NULL, NULL) == JEPA_ERR_ARG, "a %d-row input (patch %d) has a grid",
           P - 1, P);
    EXPECT(jepa_model_grid(m, 2, P, P - 1, NULL, NULL, NULL, NULL) == JEPA_ERR_ARG, "a %d-column input has a grid", P - 1);
    EXPECT(jepa_model_grid(m, 0, P, P, NULL, NULL, NULL, NULL) == JEPA_ERR_ARG, "a 0-frame input has a grid");
    int gt = 0, n = 0;
    EXPECT(!jepa_model_grid(m, 1, P, P, &gt, NULL, NULL, &n) && gt == 1 && n == 1,
           "a one-patch still image: grid %d, %d tokens (want 1, 1)", gt, n);
    EXPECT(!jepa_model_grid(m, 2 * info.tubelet_size + 1, P, P, &gt, NULL, NULL, NULL) && gt == 2,
           "2 tubelets + 1 frame: %d tubelets (want 2)", gt);
    jepa_ctx *c = parity_ctx(m, "scalar", 1);
    if (c) {
        float *x = calloc((size_t)3 * 2 * P * P, sizeof(float)), out[1024];
        jepa_embed_out o = {.pooled = out};
        EXPECT(info.embed_dim <= 1024 && jepa_ctx_embed(c, x, 2, P - 1, P, NULL, &o) == JEPA_ERR_ARG &&
                   strstr(jepa_ctx_error(c), "patch size"),
               "embed of a %d-row input: '%s'", P - 1, jepa_ctx_error(c));
        free(x);
    }
    jepa_ctx_free(c);
    jepa_model_free(m);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_shapes DATA_DIR\n");
        return 2;
    }
    data_dir = argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0);
    static const char *const levels[] = {"scalar", "avx2", "avx512", "neon"};
    static const unsigned need[] = {0, JEPA_CPU_AVX2, JEPA_CPU_AVX512, JEPA_CPU_NEON};
    const unsigned have = jr_cpu_detect();
    for (int i = 0; i < 4; i++) {
        if (need[i] && !(have & need[i])) continue;
        const char *cpu = levels[i];
        shape_case("vjepa2 video (+1 frame, +5 rows, +3 columns)", "vjepa2_tiny", "model.gguf", "input.npy", 1, 5, 3, cpu);
        shape_case("vjepa2 video (+7 columns)", "vjepa2_tiny", "model.gguf", "input.npy", 0, 0, 7, cpu);
        shape_case("vjepa2.1 video (hier; +1 frame, +1 row)", "vjepa2_1_tiny", "model.gguf", "input_video.npy", 1, 1, 0,
                   cpu);
        shape_case("vjepa2.1 image path (+2 rows, +9 columns)", "vjepa2_1_tiny", "model.gguf", "input_image.npy", 0, 2, 9,
                   cpu);
        shape_case("ijepa (+3 rows, +3 columns)", "hf_ijepa", "model.gguf", "input.npy", 0, 3, 3, cpu);
        shape_case("ijepa interpolated table (+1 row)", "hf_ijepa", "model.gguf", "input_84x70.npy", 0, 1, 0, cpu);
        shape_case("hfvit (CLS; +4 columns)", "hf_vit", "model.gguf", "input.npy", 0, 0, 4, cpu);
        shape_case("lewm (CLS, emb; +13 rows, +13 columns)", "lewm", "model.gguf", "input.npy", 0, 13, 13, cpu);
        shape_case("levjepa (block-causal, tubelet 1; +2 rows)", "levjepa", "model.gguf", "input.npy", 0, 2, 0, cpu);
    }
    refusals();
    printf("shapes: %d checks passed, %d failed\n", passes, failures);
    return failures ? 1 : 0;
}
