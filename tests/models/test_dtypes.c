/*
 * test_dtypes.c — activations stay f32 whatever the weight type.
 *
 * For each fixture model and each weight type jepa quantize writes (f16, bf16, q8_0, q4_0,
 * q4_1, q5_0, q5_1, q4_K, q5_K, q6_K; a K-quant applies where rows are a multiple of 256 -
 * the tiny models' fc2 - and the schema's fallback elsewhere: the test requires at least
 * one tensor of each K type), two files are made in memory with models/quantize.c: one storing the matmul weights in that type, one storing
 * exactly the same (rounded) values as F32. Both run the same input; any difference can
 * only come from how the engine treats the 16-bit / 8-bit weights, so the outputs must
 * agree to f32 round-off: every token cosine >= 0.999999 (the bar of the issue; an engine
 * that rounds activations to f16, as ggml does on f16 files, scatters V-JEPA tokens far
 * below it) and rel <= 1e-4. Encoder tokens, predictor outputs and classifier logits,
 * at every kernel level this machine has.
 *
 * usage: test_dtypes DATA_DIR
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/npy.h"
#include "gguf/gguf.h"
#include "jepa.h"
#include "models/quantize.h"
#include "runtime/cpu.h"
#include "tests/models/parity.h"

static int failures;

static void *make_file(const jepa_model *m, uint32_t type, bool as_f32, size_t *size) {
    struct gguf_writer *w = jg_writer_new();
    struct jerr e = {0};
    void *data = NULL;
    if (!w || jm_quantize(m, w, type, as_f32, &e) || jg_writer_write_mem(w, &data, size, &e)) {
        printf("FAIL making a %s file: %s\n", as_f32 ? "rounded-f32" : "typed", e.msg);
        failures++;
        data = NULL;
    }
    jg_writer_free(w);
    return data;
}

/* Tensors of type `type` in the GGUF file image (0 if it does not parse). */
static int count_type(const void *file, size_t size, uint32_t type) {
    struct gguf_file *g = NULL;
    struct jerr e = {0};
    if (!file || jg_open_memory(&g, file, size, &e)) return 0;
    int n = 0;
    for (int64_t i = 0; i < jg_n_tensors(g); i++) n += jg_tensor_at(g, i)->type == type;
    jg_close(g);
    return n;
}

struct outputs {
    float *tokens, *pred, *logits;
    int n, d, n_pred, out_dim, n_classes;
};

static int run(const void *file, size_t size, const char *cpu, const struct npy *x, struct outputs *o) {
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    jepa_ctx *c = NULL;
    if (jepa_model_load_memory(&m, file, size, err)) {
        printf("FAIL load: %s\n", err);
        return 1;
    }
    jepa_ctx_params p = jepa_ctx_default_params();
    p.cpu = cpu;
    p.n_threads = 2;
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    int T = (int)x->shape[1], H = (int)x->shape[2], W = (int)x->shape[3];
    memset(o, 0, sizeof *o);
    if (jepa_ctx_new(&c, m, &p, NULL) || jepa_model_grid(m, T, H, W, NULL, NULL, NULL, &o->n)) goto fail;
    o->d = info.embed_dim;
    o->tokens = malloc(sizeof(float) * (size_t)o->n * o->d);
    jepa_embed_out eo = {.tokens = o->tokens};
    if (jepa_ctx_embed(c, x->data, T, H, W, NULL, &eo)) goto fail;
    if (info.has_predictor) {   /* every token as context and as target */
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)o->n);
        for (int i = 0; i < o->n; i++) ids[i] = i;
        o->n_pred = o->n, o->out_dim = info.pred_out_dim;
        o->pred = malloc(sizeof(float) * (size_t)o->n * o->out_dim);
        jepa_predict_params pp = {.ctx_ids = ids, .n_ctx = o->n, .tgt_ids = ids, .n_tgt = o->n,
                                  .mask_index = 1};
        jepa_status st = jepa_ctx_predict(c, o->tokens, &pp, o->pred, NULL);
        free(ids);
        if (st) goto fail;
    }
    if (info.has_head) {
        o->n_classes = info.n_classes;
        o->logits = malloc(sizeof(float) * (size_t)o->n_classes);
        if (jepa_ctx_classify(c, o->tokens, o->n, o->logits)) goto fail;
    }
    jepa_ctx_free(c);
    jepa_model_free(m);
    return 0;
fail:
    printf("FAIL run: %s\n", c ? jepa_ctx_error(c) : "no context");
    jepa_ctx_free(c);
    jepa_model_free(m);
    return 1;
}

static void free_outputs(struct outputs *o) {
    free(o->tokens), free(o->pred), free(o->logits);
}

static void check_model(const char *data_dir, const char *model, const char *input, const char *cpu) {
    char path[1024], err[JEPA_ERR_LEN];
    snprintf(path, sizeof path, "%s/%s", data_dir, model);
    jepa_model *m = NULL;
    struct jerr e = {0};
    if (jepa_model_load(&m, path, err)) {
        printf("FAIL %s: %s\n", path, err);
        failures++;
        return;
    }
    snprintf(path, sizeof path, "%s/%s", data_dir, input);
    struct npy x;
    if (npy_load_f32(&x, path, &e)) {
        printf("FAIL %s: %s\n", path, e.msg);
        failures++;
        jepa_model_free(m);
        return;
    }
    static const struct { uint32_t type; const char *name; } types[] = {
        {GGUF_TYPE_F16, "f16"},   {GGUF_TYPE_BF16, "bf16"}, {GGUF_TYPE_Q8_0, "q8_0"}, {GGUF_TYPE_Q4_0, "q4_0"},
        {GGUF_TYPE_Q4_1, "q4_1"}, {GGUF_TYPE_Q5_0, "q5_0"}, {GGUF_TYPE_Q5_1, "q5_1"}, {GGUF_TYPE_Q4_K, "q4_K"},
        {GGUF_TYPE_Q5_K, "q5_K"}, {GGUF_TYPE_Q6_K, "q6_K"}};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        size_t sa = 0, sb = 0;
        void *typed = make_file(m, types[k].type, false, &sa);
        void *widened = make_file(m, types[k].type, true, &sb);
        int n_typed = count_type(typed, sa, types[k].type);
        if (typed && n_typed == 0) {
            printf("FAIL %s %s: no tensor of the file has that type\n", model, types[k].name);
            failures++;
        }
        struct outputs a, b;
        if (typed && widened && !run(typed, sa, cpu, &x, &a) && !run(widened, sb, cpu, &x, &b)) {
            char what[128];
            snprintf(what, sizeof what, "%s %s weights (%d tensors): tokens", model, types[k].name, n_typed);
            failures += parity_check(what, a.tokens, b.tokens, a.n, a.d, 0.999999, 1e-4);
            if (a.pred) {
                snprintf(what, sizeof what, "%s %s weights: predictor", model, types[k].name);
                failures += parity_check(what, a.pred, b.pred, a.n_pred, a.out_dim, 0.999999, 1e-4);
            }
            if (a.logits) {
                snprintf(what, sizeof what, "%s %s weights: logits", model, types[k].name);
                failures += parity_check(what, a.logits, b.logits, 1, a.n_classes, 0.999999, 1e-4);
            }
            free_outputs(&a);
            free_outputs(&b);
        } else {
            failures++;
        }
        free(typed);
        free(widened);
    }
    npy_free(&x);
    jepa_model_free(m);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_dtypes DATA_DIR\n");
        return 2;
    }
    static const char *const levels[] = {"scalar", "avx2", "avx512", "neon"};
    static const unsigned need[] = {0, JEPA_CPU_AVX2, JEPA_CPU_AVX512, JEPA_CPU_NEON};
    unsigned have = jr_cpu_detect();
    /* On a slow runner (JEPA_TEST_SLOW_RUNNER=1, tests/models/meson.build: qemu, the
     * sanitizers) only the best level runs: the scalar level is the same C the native
     * release build tests, and it is half of the slow runner's minutes. */
    const char *em = getenv("JEPA_TEST_SLOW_RUNNER");
    const bool emulated = em && !strcmp(em, "1");
    int best = 0;
    for (int i = 0; i < 4; i++)
        if (!need[i] || (have & need[i])) best = i;
    if (emulated) printf("on a slow runner: the %s level only (the native release build runs every level)\n", levels[best]);
    for (int i = 0; i < 4; i++) {
        if (need[i] && !(have & need[i])) continue;
        if (emulated && i != best) continue;
        printf("-- kernels capped at %s\n", levels[i]);
        check_model(argv[1], "vjepa2_tiny/model.gguf", "vjepa2_tiny/input.npy", levels[i]);
        check_model(argv[1], "vjepa2_1_tiny/model.gguf", "vjepa2_1_tiny/input_video.npy", levels[i]);
    }
    printf("%s\n", failures ? "dtypes: FAILED" : "dtypes: all checks passed");
    return failures ? 1 : 0;
}
