/*
 * test_batch.c — jepa_embed_params.batch: B clips of one shape in one forward give the
 * same bits as B single forwards, for every output (tokens, pooled, cls, emb, hier), on
 * every encoder path, and the same batch with its input in the arena (jepa_ctx_embed_input)
 * gives the same bits as from the caller's buffer:
 *   vjepa2_tiny      video, 3-D RoPE, no CLS; the masked encoder (same ids per clip); a
 *                    still image repeated to the tubelet (one upload per plane)
 *   vjepa2_1_tiny    modality embedding, hierarchical outputs, the native image path
 *   hf_ijepa         learned table, no CLS (patch rows of all clips are one matrix)
 *   hf_vit           CLS + learned table, at the training grid and an interpolated one
 *   lewm             CLS + the projector (emb)
 *   levjepa          CLS + RoPE + block-causal attention
 * The clips differ (the fixture's input, a rescaled and rippled copy, the reversed copy),
 * so a batch that mixed clips up could not pass. At every kernel level this machine has,
 * 2 threads.
 *
 * Bar. The reference kernels compute each matmul row alone, in an order that does not
 * depend on the row count, and attention runs per clip: at the scalar level the bits must
 * be identical. The SIMD matmuls take a different path by row count (kernels/x86/
 * gemm_tmpl.h: M <= GT_SMALL_M, 64 rows on AVX2 and 16 on AVX-512, streams W once; larger
 * M is blocked), each exact to float rounding but summing K in another order, so a batch
 * whose B*n rows cross that line differs from the single run in the last bits: there the
 * bar is every row's cosine >= 0.9999999 and rel = max|diff| / max|ref| <= 1e-5 (about 10x
 * the largest difference seen, ~1e-6, two orders below the parity bar of 1e-4). Identical
 * bits still pass at once; the run prints which.
 *
 * usage: test_batch DATA_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/npy.h"
#include "jepa.h"
#include "runtime/cpu.h"
#include "tests/models/parity.h"

enum { B = 3 };

static const char *data_dir;
static int failures;

/* The outputs of one run of nb clips (NULL where the family has none). */
struct outs {
    float *tokens, *pooled, *cls, *emb, *hier;
};

struct shape {
    int T, H, W, n, d, n_hier, emb_dim, has_cls;
    size_t clip;   /* floats of one clip */
};

static void outs_alloc(struct outs *o, const struct shape *s, int nb) {
    o->tokens = malloc(sizeof(float) * (size_t)nb * s->n * s->d);
    o->pooled = malloc(sizeof(float) * (size_t)nb * s->d);
    o->cls = s->has_cls ? malloc(sizeof(float) * (size_t)nb * s->d) : NULL;
    o->emb = s->emb_dim ? malloc(sizeof(float) * (size_t)nb * s->emb_dim) : NULL;
    o->hier = s->n_hier ? malloc(sizeof(float) * (size_t)nb * s->n_hier * s->n * s->d) : NULL;
}

static void outs_free(struct outs *o) {
    free(o->tokens), free(o->pooled), free(o->cls), free(o->emb), free(o->hier);
}

/* SIMD levels: the bar when the bits differ (see the header). */
#define COS_BAR 0.9999999
#define REL_BAR 1e-5

static double worst_rel;   /* largest rel seen among inexact matches */
static int inexact;        /* outputs that matched within the bar but not bit for bit */

/* got[0 .. rows*cols) against want: identical bits, or (exact == 0) within the bar. */
static int match(const char *what, const float *got, const float *want, int rows, int cols,
                 int exact) {
    const size_t n = (size_t)rows * cols;
    if (!memcmp(got, want, n * sizeof(float))) return 1;
    struct parity p = parity_compare(got, want, rows, cols);
    if (!exact && p.cos_min >= COS_BAR && p.rel <= REL_BAR) {
        inexact++;
        if (p.rel > worst_rel) worst_rel = p.rel;
        return 1;
    }
    size_t nd = 0;
    for (size_t i = 0; i < n; i++) nd += memcmp(&got[i], &want[i], sizeof(float)) != 0;
    printf("FAIL %s: %zu of %zu values differ (%s): cos min %.9f, rel %.2e\n", what, nd, n,
           exact ? "bits required" : "outside the bar", p.cos_min, p.rel);
    return 0;
}

/* jepa_ctx_embed_input: the same batched call with its input written into the context's
 * arena gives the same bits as from the caller's buffer (want: that call's outputs); the
 * pointer is refused by a call it was not planned for (one clip, not B), and a pointer a
 * float before it (into the arena, nowhere planned) by the call it was planned for. */
static int arena_input_run(const char *tag, jepa_ctx *c, const float *xs, const struct shape *s,
                           const jepa_embed_params *bp, const struct outs *want) {
    struct outs got;
    outs_alloc(&got, s, B);
    jepa_embed_out go = {.tokens = got.tokens, .pooled = got.pooled, .cls = got.cls, .emb = got.emb,
                         .hier = got.hier};
    int ok = 1;
    float *in = NULL;
    if (jepa_ctx_embed_input(c, s->T, s->H, s->W, bp, &go, &in) || !in) {
        printf("FAIL %s: embed_input: %s\n", tag, jepa_ctx_error(c));
        ok = 0;
    } else {
        memcpy(in, xs, sizeof(float) * B * s->clip);
        if (jepa_ctx_embed(c, in, s->T, s->H, s->W, bp, &go)) {
            printf("FAIL %s: embed from the arena: %s\n", tag, jepa_ctx_error(c));
            ok = 0;
        }
#define SAME(field, count)                                                                    \
        if (ok && want->field && memcmp(got.field, want->field, sizeof(float) * (count))) {   \
            printf("FAIL %s: embed from the arena: " #field " differs from the same call's\n", tag); \
            ok = 0;                                                                           \
        }
        SAME(tokens, (size_t)B * s->n * s->d)
        SAME(pooled, (size_t)B * s->d)
        SAME(cls, (size_t)B * s->d)
        SAME(emb, (size_t)B * s->emb_dim)
        SAME(hier, (size_t)B * s->n_hier * s->n * s->d)
#undef SAME
        jepa_embed_params one = *bp;
        one.batch = 1;
        if (!ok || jepa_ctx_embed_input(c, s->T, s->H, s->W, bp, &go, &in)) in = NULL;
        if (ok && (!in || jepa_ctx_embed(c, in, s->T, s->H, s->W, &one, &go) != JEPA_ERR_ARG ||
                   !strstr(jepa_ctx_error(c), "jepa_ctx_embed_input"))) {
            printf("FAIL %s: an arena input planned for %d clips taken for 1: %s\n", tag, B,
                   in ? jepa_ctx_error(c) : "no input");
            ok = 0;
        }
        if (!ok || jepa_ctx_embed_input(c, s->T, s->H, s->W, bp, &go, &in)) in = NULL;
        if (ok && in) memcpy(in - 1, xs, sizeof(float) * B * s->clip);   /* the patches' room */
        if (ok && (!in || jepa_ctx_embed(c, in - 1, s->T, s->H, s->W, bp, &go) != JEPA_ERR_ARG ||
                   !strstr(jepa_ctx_error(c), "jepa_ctx_embed_input"))) {
            printf("FAIL %s: an input one float before the planned one was not refused\n", tag);
            ok = 0;
        }
    }
    if (!ok) failures++;
    outs_free(&got);
    return ok;
}

/* One case: B clips made from x ([C, T, H, W] or [C, H, W]) through one batched call vs B
 * single calls (batch 1 for the first, batch 0 for the others: both mean one clip). */
static void batch_run(const char *tag, const char *model_path, const struct npy *x,
                      const char *cpu, const int32_t *ids, int n_ids) {
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    if (jepa_model_load(&m, model_path, err)) {
        printf("FAIL %s: %s\n", model_path, err);
        failures++;
        return;
    }
    jepa_ctx_params cp = jepa_ctx_default_params();
    cp.cpu = cpu;
    cp.n_threads = 2;
    jepa_ctx *c = NULL;
    if (jepa_ctx_new(&c, m, &cp, err)) {
        printf("FAIL %s: context: %s\n", tag, err);
        failures++;
        jepa_model_free(m);
        return;
    }
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    struct shape s = {0};
    s.T = x->ndim == 4 ? (int)x->shape[1] : 1;
    s.H = (int)x->shape[x->ndim - 2], s.W = (int)x->shape[x->ndim - 1];
    s.clip = (size_t)x->count;
    s.d = info.embed_dim, s.n_hier = info.n_hier, s.emb_dim = info.emb_dim;
    s.has_cls = info.has_cls;
    jepa_model_grid(m, s.T, s.H, s.W, NULL, NULL, NULL, &s.n);
    if (ids) s.n = n_ids + (info.has_cls ? 1 : 0);

    /* three different clips, one after the other */
    float *xs = malloc(sizeof(float) * B * s.clip);
    const float *x0 = x->data;
    for (size_t i = 0; i < s.clip; i++) {
        xs[i] = x0[i];
        xs[s.clip + i] = 0.8f * x0[i] + 0.3f * (float)sin(0.013 * (double)i);
        xs[2 * s.clip + i] = x0[s.clip - 1 - i];
    }

    struct outs one, all;
    outs_alloc(&one, &s, 1);
    outs_alloc(&all, &s, B);
    jepa_embed_params bp = {.ctx_ids = ids, .n_ctx = n_ids, .batch = B};
    jepa_embed_out bo = {.tokens = all.tokens, .pooled = all.pooled, .cls = all.cls, .emb = all.emb,
                         .hier = all.hier};
    char what[256];
    int ok = 1;
    const int exact = !strcmp(cpu, "scalar"), inexact0 = inexact;
    if (jepa_ctx_embed(c, xs, s.T, s.H, s.W, &bp, &bo)) {
        printf("FAIL %s: batch of %d: %s\n", tag, B, jepa_ctx_error(c));
        failures++;
        ok = 0;
    }
    if (ok) ok = arena_input_run(tag, c, xs, &s, &bp, &all);
    for (int b = 0; ok && b < B; b++) {
        jepa_embed_params sp = {.ctx_ids = ids, .n_ctx = n_ids, .batch = b == 0 ? 1 : 0};
        jepa_embed_out so = {.tokens = one.tokens, .pooled = one.pooled, .cls = one.cls,
                             .emb = one.emb, .hier = one.hier};
        if (jepa_ctx_embed(c, xs + (size_t)b * s.clip, s.T, s.H, s.W, &sp, &so)) {
            printf("FAIL %s: clip %d alone: %s\n", tag, b, jepa_ctx_error(c));
            failures++;
            ok = 0;
            break;
        }
#define CMP(field, rows, cols)                                                                \
        do {                                                                                  \
            if (!one.field) break;                                                            \
            snprintf(what, sizeof what, "%s [%s] clip %d of %d: " #field, tag, cpu, b, B);   \
            if (!match(what, all.field + (size_t)b * (rows) * (cols), one.field, (rows), (cols), \
                       exact)) {                                                              \
                failures++;                                                                   \
                ok = 0;                                                                       \
            }                                                                                 \
        } while (0)
        CMP(tokens, s.n, s.d);
        CMP(pooled, 1, s.d);
        CMP(cls, 1, s.d);
        CMP(emb, 1, s.emb_dim);
        CMP(hier, s.n_hier * s.n, s.d);
#undef CMP
    }
    if (ok)
        printf("ok   %s [%s]: a batch of %d = %d single runs, %s; = from the arena (%d tokens x %d%s%s%s)\n",
               tag, cpu, B, B, inexact > inexact0 ? "within the bar" : "bit for bit", s.n, s.d,
               s.has_cls ? ", cls" : "", s.emb_dim ? ", emb" : "", s.n_hier ? ", hier" : "");
    outs_free(&one);
    outs_free(&all);
    free(xs);
    jepa_ctx_free(c);
    jepa_model_free(m);
}

/* batch_run on DATA_DIR/dir/file with the input DATA_DIR/dir/input. */
static void batch_case(const char *tag, const char *dir, const char *file, const char *input,
                       const char *cpu, const int32_t *ids, int n_ids) {
    char mpath[1024], xpath[1024];
    snprintf(mpath, sizeof mpath, "%s/%s/%s", data_dir, dir, file);
    snprintf(xpath, sizeof xpath, "%s/%s/%s", data_dir, dir, input);
    struct npy x;
    struct jerr e = {0};
    if (npy_load_f32(&x, xpath, &e)) {
        printf("FAIL %s: %s\n", xpath, e.msg);
        failures++;
        return;
    }
    batch_run(tag, mpath, &x, cpu, ids, n_ids);
    npy_free(&x);
}

/* A still image [C, 1, H, W] cut from frame 0 of a video fixture (the repeat path). */
static void still_case(const char *cpu) {
    char path[1024];
    struct npy x;
    struct jerr e = {0};
    snprintf(path, sizeof path, "%s/vjepa2_tiny/input.npy", data_dir);
    if (npy_load_f32(&x, path, &e)) {
        printf("FAIL %s: %s\n", path, e.msg);
        failures++;
        return;
    }
    const int C = (int)x.shape[0], T = (int)x.shape[1], H = (int)x.shape[2], W = (int)x.shape[3];
    float *still = malloc(sizeof(float) * (size_t)C * H * W);
    for (int ch = 0; ch < C; ch++)
        memcpy(still + (size_t)ch * H * W, (float *)x.data + (size_t)ch * T * H * W,
               sizeof(float) * (size_t)H * W);
    struct npy img = {.ndim = 3, .shape = {C, H, W}, .count = (int64_t)C * H * W, .data = still};
    snprintf(path, sizeof path, "%s/vjepa2_tiny/model.gguf", data_dir);
    batch_run("vjepa2 still image (repeated to the tubelet)", path, &img, cpu, NULL, 0);
    free(still);
    npy_free(&x);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_batch DATA_DIR\n");
        return 2;
    }
    data_dir = argv[1];
    static const char *const levels[] = {"scalar", "avx2", "avx512", "neon"};
    static const unsigned need[] = {0, JEPA_CPU_AVX2, JEPA_CPU_AVX512, JEPA_CPU_NEON};
    const unsigned have = jr_cpu_detect();
    static const int32_t ids[] = {0, 3, 5, 6, 10, 17, 30, 31};   /* of the 32-token grid */
    for (int i = 0; i < 4; i++) {
        if (need[i] && !(have & need[i])) continue;
        const char *cpu = levels[i];
        batch_case("vjepa2 video", "vjepa2_tiny", "model.gguf", "input.npy", cpu, NULL, 0);
        batch_case("vjepa2 masked encoder", "vjepa2_tiny", "model.gguf", "input.npy", cpu, ids, 8);
        still_case(cpu);
        batch_case("vjepa2.1 video (hier)", "vjepa2_1_tiny", "model.gguf", "input_video.npy", cpu,
                   NULL, 0);
        batch_case("vjepa2.1 image path (hier)", "vjepa2_1_tiny", "model.gguf", "input_image.npy",
                   cpu, NULL, 0);
        batch_case("ijepa", "hf_ijepa", "model.gguf", "input.npy", cpu, NULL, 0);
        batch_case("ijepa interpolated table", "hf_ijepa", "model.gguf", "input_84x70.npy", cpu,
                   NULL, 0);
        batch_case("hfvit (CLS)", "hf_vit", "model.gguf", "input.npy", cpu, NULL, 0);
        batch_case("hfvit (CLS) interpolated table", "hf_vit", "model.gguf", "input_96x80.npy", cpu,
                   NULL, 0);
        batch_case("dinov2 (CLS, layer-scale)", "hf_vit", "model_ls.gguf", "input.npy", cpu, NULL,
                   0);
        batch_case("lewm (CLS, emb)", "lewm", "model.gguf", "input.npy", cpu, NULL, 0);
        batch_case("levjepa (CLS, block-causal)", "levjepa", "model.gguf", "input.npy", cpu, NULL,
                   0);
    }
    if (inexact) printf("(%d outputs matched within the bar but not bit for bit; worst rel %.2e)\n",
                        inexact, worst_rel);
    printf("%s\n", failures ? "batch: FAILED" : "batch: all checks passed");
    return failures ? 1 : 0;
}
