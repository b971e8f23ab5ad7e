/*
 * test_api.c — the public API's promises, with known answers:
 *  - one model shared by several threads, each with its own context, gives every thread
 *    the bits a single context gives;
 *  - a context reused for an input of the same size does not grow its arena, and the
 *    second run returns the same bits as the first;
 *  - model queries (info, grid, labels) match the fixture's configuration;
 *  - bad arguments are refused with JEPA_ERR_ARG and a message that names the problem,
 *    and leave the context usable;
 *  - devices: NULL / "" / "cpu" / zero-initialised params are the CPU, malformed names are
 *    refused naming the name, and "cuda", "cuda:N" in a build (or on a machine) without a
 *    GPU fail with JEPA_ERR_DEVICE and a one-line reason;
 *  - jepa_ctx_cancel from another thread stops a call between two blocks (JEPA_ERR_CANCELLED,
 *    no output written), and one made while no call runs stops the next; the call after
 *    either runs normally and gives the bits of one never cancelled.
 *
 * usage: test_api DATA_DIR
 */
#include <limits.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/npy.h"
#include "jepa.h"
#include "kernels/device.h"
#include "tests/check.h"


struct job {
    const jepa_model *m;
    const float *x;
    float *tokens;
    jepa_status st;
};

static void *encode_job(void *arg) {
    struct job *j = arg;
    jepa_ctx *c = NULL;
    jepa_ctx_params p = jepa_ctx_default_params();
    p.n_threads = 1;
    j->st = jepa_ctx_new(&c, j->m, &p, NULL);
    if (j->st == JEPA_OK) {
        jepa_embed_out out = {.tokens = j->tokens};
        for (int rep = 0; rep < 3 && j->st == JEPA_OK; rep++)
            j->st = jepa_ctx_embed(c, j->x, 4, 64, 64, NULL, &out);
    }
    jepa_ctx_free(c);
    return NULL;
}

/* jepa_embed_params.on_layer: what it was told. */
struct layer_log {
    int calls, last, total, in_order;
};
static void log_layer(void *user, int done, int n_layers) {
    struct layer_log *l = user;
    l->in_order = (l->calls ? l->in_order : 1) && done == l->last + 1;
    l->calls++, l->last = done, l->total = n_layers;
}

/* on_layer that has another thread cancel the call after block 1 and waits until it has:
 * the call must stop at the cancel point before block 2. */
struct canceller {
    jepa_ctx *c;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int asked, done, layers;
};
static void *cancel_main(void *arg) {
    struct canceller *k = arg;
    pthread_mutex_lock(&k->mu);
    while (!k->asked) pthread_cond_wait(&k->cv, &k->mu);
    jepa_ctx_cancel(k->c);
    k->done = 1;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    return NULL;
}
static void cancel_after_first(void *user, int done, int n_layers) {
    struct canceller *k = user;
    (void)n_layers;
    pthread_mutex_lock(&k->mu);
    k->layers = done;
    if (done == 1) {
        k->asked = 1;
        pthread_cond_broadcast(&k->cv);
        while (!k->done) pthread_cond_wait(&k->cv, &k->mu);
    }
    pthread_mutex_unlock(&k->mu);
}

/* Every byte of p[0 .. n) is b. */
static int all_bytes(const void *p, size_t n, unsigned char b) {
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != b) return 0;
    return 1;
}

int main(int argc, char **argv) {
    check_verbose = 1;   /* narrate every step: ok / FAIL */
    if (argc < 2) {
        fprintf(stderr, "usage: test_api DATA_DIR\n");
        return 2;
    }
    char path[1024], err[JEPA_ERR_LEN];
    snprintf(path, sizeof path, "%s/vjepa2_tiny/model.gguf", argv[1]);
    jepa_model *m = NULL;
    if (jepa_model_load(&m, path, err)) {
        printf("FAIL load %s: %s\n", path, err);
        return 1;
    }
    struct npy x;
    struct jerr e = {0};
    snprintf(path, sizeof path, "%s/vjepa2_tiny/input.npy", argv[1]);
    if (npy_load_f32(&x, path, &e)) {
        printf("FAIL %s: %s\n", path, e.msg);
        return 1;
    }

    /* queries */
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    CHECK(!strcmp(info.family, "vjepa2") && info.embed_dim == 128 && info.n_layer == 2 &&
              info.n_head == 2 && info.head_dim == 64 && info.has_predictor && info.has_head &&
              info.n_classes == 7 && info.pred_out_dim == 128,
          "model info: %s %d-d %d layers %d heads", info.family, info.embed_dim, info.n_layer, info.n_head);
    int gt, gh, gw, n;
    CHECK(jepa_model_grid(m, 4, 64, 96, &gt, &gh, &gw, &n) == JEPA_OK && gt == 2 && gh == 4 && gw == 6 && n == 48,
          "grid of a 4x64x96 clip is 2x4x6 = 48 tokens");
    CHECK(jepa_model_grid(m, 1, 64, 64, &gt, NULL, NULL, &n) == JEPA_OK && gt == 1 && n == 16,
          "a still image is repeated to one tubelet: 16 tokens");
    /* what does not fill a tubelet or a patch is dropped, as the reference's Conv3d does */
    CHECK(jepa_model_grid(m, 3, 64, 64, &gt, NULL, NULL, &n) == JEPA_OK && gt == 1 && n == 16,
          "3 frames with tubelet 2: one tubelet, the last frame dropped");
    CHECK(jepa_model_grid(m, 4, 60, 79, &gt, &gh, &gw, &n) == JEPA_OK && gh == 3 && gw == 4 && n == 24,
          "60 x 79 px with patch 16: a 3 x 4 grid");
    CHECK(jepa_model_grid(m, 4, 15, 64, NULL, NULL, NULL, &n) == JEPA_ERR_ARG, "15 px is less than one patch");
    CHECK(jepa_model_grid(m, 2, 65536 * 16, 65536 * 16, NULL, NULL, NULL, &n) == JEPA_ERR_ARG,
          "a grid whose token count overflows int is refused");
    CHECK(jepa_model_grid(m, 64, 16384, 16384, NULL, NULL, NULL, &n) == JEPA_ERR_ARG,
          "more than 2^20 tokens per clip are refused");
    /* 2^29 x 2^26 x 2^26 = 2^81 tokens: wraps to 0 in 64 bits if multiplied unchecked */
    n = -1;
    CHECK(jepa_model_grid(m, 1 << 30, 1 << 30, 1 << 30, NULL, NULL, NULL, &n) == JEPA_ERR_ARG && n == -1,
          "a 2^30-cubed clip (2^81 tokens) is refused, no count written");
    CHECK(jepa_model_grid(m, INT_MAX, INT_MAX, INT_MAX, NULL, NULL, NULL, &n) == JEPA_ERR_ARG,
          "an INT_MAX-cubed clip is refused");
    /* NULL where a model or a context goes: a status, a NULL / empty answer, no crash */
    jepa_model_info none;
    jepa_model_get_info(NULL, &none);
    jepa_model_get_info(m, NULL);
    CHECK(none.embed_dim == 0 && none.family == NULL, "info of a NULL model is all zero");
    CHECK(jepa_model_grid(NULL, 4, 64, 64, NULL, NULL, NULL, &n) == JEPA_ERR_ARG, "grid of a NULL model");
    CHECK(jepa_model_label(NULL, 0) == NULL, "label of a NULL model");
    CHECK(jepa_ctx_embed(NULL, x.data, 4, 64, 64, NULL, NULL) == JEPA_ERR_ARG &&
              jepa_ctx_predict(NULL, NULL, NULL, NULL, NULL) == JEPA_ERR_ARG &&
              jepa_ctx_classify(NULL, NULL, 0, NULL) == JEPA_ERR_ARG,
          "runs on a NULL context");
    jepa_ctx_set_threads(NULL, 2);
    CHECK(jepa_ctx_threads(NULL) == 0 && !strcmp(jepa_ctx_isa(NULL), "") && !strcmp(jepa_ctx_device(NULL), "") &&
              jepa_ctx_arena_bytes(NULL) == 0 && jepa_ctx_error(NULL) != NULL,
          "accessors of a NULL context");
    jepa_ctx *nc = (jepa_ctx *)&none;   /* must not be touched */
    CHECK(jepa_ctx_new(&nc, NULL, NULL, NULL) == JEPA_ERR_ARG && nc == NULL, "a context of a NULL model");
    CHECK(jepa_preprocess_size(NULL, NULL, &n, &n) == JEPA_ERR_ARG &&
              jepa_preprocess_rgb(NULL, NULL, 1, 1, NULL, NULL, 1, 0, NULL) == JEPA_ERR_ARG,
          "preprocessing with a NULL model");
    CHECK(jepa_model_label(m, 3) && !strcmp(jepa_model_label(m, 3), "c3") && !jepa_model_label(m, 7) &&
              !jepa_model_label(m, -1),
          "labels: c3 at 3, none out of range");

    /* reference run, then reuse of the context */
    jepa_ctx *c = NULL;
    jepa_ctx_params p = jepa_ctx_default_params();
    p.n_threads = 2;
    if (jepa_ctx_new(&c, m, &p, NULL)) {
        printf("FAIL ctx\n");
        return 1;
    }
    float *ref = malloc(sizeof(float) * 32 * 128), *again = malloc(sizeof(float) * 32 * 128);
    jepa_embed_out out = {.tokens = ref};
    jepa_status st = jepa_ctx_embed(c, x.data, 4, 64, 64, NULL, &out);
    size_t arena1 = jepa_ctx_arena_bytes(c);
    out.tokens = again;
    st |= jepa_ctx_embed(c, x.data, 4, 64, 64, NULL, &out);
    CHECK(st == JEPA_OK && arena1 > 0 && jepa_ctx_arena_bytes(c) == arena1,
          "reused context keeps its arena (%zu bytes)", arena1);
    CHECK(!memcmp(ref, again, sizeof(float) * 32 * 128), "reused context gives the same bits");

    /* progress: on_layer after each block, in order, and the same bits */
    struct layer_log lg = {0};
    jepa_embed_params lp = {.on_layer = log_layer, .user = &lg};
    st = jepa_ctx_embed(c, x.data, 4, 64, 64, &lp, &out);
    CHECK(st == JEPA_OK && lg.calls == info.n_layer && lg.in_order && lg.last == info.n_layer &&
              lg.total == info.n_layer && !memcmp(ref, again, sizeof(float) * 32 * 128),
          "on_layer: %d calls for %d blocks (in order: %d, last %d of %d), same bits", lg.calls, info.n_layer,
          lg.in_order, lg.last, lg.total);

    /* cancel: from another thread during a call, then with no call running */
    {
        const size_t nt = sizeof(float) * 32 * 128, np = sizeof(float) * 128;
        float *tk = malloc(nt), *pl = malloc(np);
        int32_t cids[3] = {0, 1, 2}, tids[2] = {3, 4};
        jepa_predict_params cpp = {.ctx_ids = cids, .n_ctx = 3, .tgt_ids = tids, .n_tgt = 2, .mask_index = 1};
        float pref[2 * 128], pgot[2 * 128];
        CHECK(tk && pl && jepa_ctx_predict(c, ref, &cpp, pref, NULL) == JEPA_OK, "a predict to compare with");
        memset(tk, 0xA5, nt), memset(pl, 0xA5, np);
        struct canceller k = {.c = c};
        pthread_mutex_init(&k.mu, NULL);
        pthread_cond_init(&k.cv, NULL);
        pthread_t th;
        pthread_create(&th, NULL, cancel_main, &k);
        jepa_embed_params cp = {.on_layer = cancel_after_first, .user = &k};
        jepa_embed_out co = {.tokens = tk, .pooled = pl};
        st = jepa_ctx_embed(c, x.data, 4, 64, 64, &cp, &co);
        pthread_join(th, NULL);
        CHECK(st == JEPA_ERR_CANCELLED && k.layers == 1 && !strcmp(jepa_status_str(st), "cancelled") &&
                  strstr(jepa_ctx_error(c), "cancel"),
              "cancelled from another thread after block 1 of %d: stopped before block 2 (%s, %d block(s) run, '%s')",
              info.n_layer, jepa_status_str(st), k.layers, jepa_ctx_error(c));
        CHECK(all_bytes(tk, nt, 0xA5) && all_bytes(pl, np, 0xA5), "the cancelled call wrote no output");
        CHECK(jepa_ctx_embed(c, x.data, 4, 64, 64, NULL, &co) == JEPA_OK && !memcmp(tk, ref, nt),
              "the call after it runs: the bits of one never cancelled");
        jepa_ctx_cancel(c);   /* no call running: the next one stops at its first cancel point */
        jepa_ctx_cancel(c);   /* a second before it is consumed: still one request */
        memset(tk, 0xA5, nt), memset(pl, 0xA5, np);
        struct layer_log none_run = {0};
        jepa_embed_params lp2 = {.on_layer = log_layer, .user = &none_run};
        st = jepa_ctx_embed(c, x.data, 4, 64, 64, &lp2, &co);
        CHECK(st == JEPA_ERR_CANCELLED && none_run.calls == 0 && all_bytes(tk, nt, 0xA5) && all_bytes(pl, np, 0xA5),
              "cancelled with no call running: the next call stops before its first block, no output (%s, %d)",
              jepa_status_str(st), none_run.calls);
        CHECK(jepa_ctx_embed(c, x.data, 4, 64, 64, NULL, &co) == JEPA_OK && !memcmp(tk, ref, nt),
              "the call after that runs: the same bits");
        jepa_ctx_cancel(c);
        memset(pgot, 0xA5, sizeof pgot);
        st = jepa_ctx_predict(c, ref, &cpp, pgot, NULL);
        CHECK(st == JEPA_ERR_CANCELLED && all_bytes(pgot, sizeof pgot, 0xA5),
              "the predictor: cancelled, no output (%s)", jepa_status_str(st));
        CHECK(jepa_ctx_predict(c, ref, &cpp, pgot, NULL) == JEPA_OK && !memcmp(pgot, pref, sizeof pref),
              "the predict after it: the same bits");
        jepa_ctx_cancel(NULL);
        pthread_cond_destroy(&k.cv);
        pthread_mutex_destroy(&k.mu);
        free(tk), free(pl);
    }

    /* bad arguments: refused, named, and the context still works */
    st = jepa_ctx_embed(c, x.data, 4, 15, 64, NULL, &out);
    CHECK(st == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "at least the patch size"),
          "15 px refused: %s", jepa_ctx_error(c));
    st = jepa_ctx_embed(c, x.data, 0, 64, 64, NULL, &out);
    CHECK(st == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "input 0x64x64"), "0 frames refused: %s",
          jepa_ctx_error(c));
    int32_t bad_ids[2] = {0, 32};
    jepa_embed_params ep = {.ctx_ids = bad_ids, .n_ctx = 2};
    st = jepa_ctx_embed(c, x.data, 4, 64, 64, &ep, &out);
    CHECK(st == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "outside"), "context id 32 refused: %s", jepa_ctx_error(c));
    int32_t neg[1] = {-1}, ok1[1] = {0};
    float pred[128];
    jepa_predict_params pp = {.ctx_ids = ok1, .n_ctx = 1, .tgt_ids = neg, .n_tgt = 1, .mask_index = 1};
    st = jepa_ctx_predict(c, ref, &pp, pred, NULL);
    CHECK(st == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "negative"), "negative target id refused: %s",
          jepa_ctx_error(c));
    /* non-finite inputs are refused, naming the element */
    float *xnan = malloc(sizeof(float) * 3 * 4 * 64 * 64);
    if (xnan) {
        memcpy(xnan, x.data, sizeof(float) * 3 * 4 * 64 * 64);
        xnan[1000] = NAN;
        jepa_embed_out o2 = {.tokens = again};
        st = jepa_ctx_embed(c, xnan, 4, 64, 64, NULL, &o2);
        CHECK(st == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "element 1000 is NaN"), "a NaN input refused: %s",
              jepa_ctx_error(c));
        /* the check reads blocks of 1024 (models/vit.c): the last element of the last block */
        xnan[1000] = 0.5f;
        xnan[3 * 4 * 64 * 64 - 1] = -INFINITY;
        st = jepa_ctx_embed(c, xnan, 4, 64, 64, NULL, &o2);
        CHECK(st == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "element 49151 is infinite"),
              "an infinite last input element refused: %s", jepa_ctx_error(c));
        free(xnan);
    }
    float tok_inf[128];
    memcpy(tok_inf, ref, sizeof tok_inf);
    tok_inf[5] = INFINITY;
    float lg7[7];
    st = jepa_ctx_classify(c, tok_inf, 1, lg7);
    CHECK(st == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "infinite"), "an infinite token refused: %s",
          jepa_ctx_error(c));
    int32_t past[1] = {32 * 1000};
    pp.tgt_ids = past;
    st = jepa_ctx_predict(c, ref, &pp, pred, NULL);
    CHECK(st == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "outside the predictor's grid"),
          "target id past the predictor's grid refused: %s", jepa_ctx_error(c));
    static int32_t many[200000];   /* repeats of id 0: more ids than the grid has tokens */
    pp.tgt_ids = many, pp.n_tgt = 200000;
    st = jepa_ctx_predict(c, ref, &pp, pred, NULL);
    CHECK(st == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "at most"), "200000 target ids refused: %s",
          jepa_ctx_error(c));
    pp.n_tgt = 1;
    float ctx_out[128];
    pp.tgt_ids = ok1;
    st = jepa_ctx_predict(c, ref, &pp, pred, ctx_out);
    CHECK(st == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "context projection"),
          "ctx_out on a V-JEPA 2 predictor refused: %s", jepa_ctx_error(c));
    float cls[128];
    jepa_embed_out oc = {.cls = cls};
    st = jepa_ctx_embed(c, x.data, 4, 64, 64, NULL, &oc);
    CHECK(st == JEPA_ERR_ARG && strstr(jepa_ctx_error(c), "CLS"), "CLS on a family without one refused: %s",
          jepa_ctx_error(c));
    out.tokens = again;
    st = jepa_ctx_embed(c, x.data, 4, 64, 64, NULL, &out);
    CHECK(st == JEPA_OK && !memcmp(ref, again, sizeof(float) * 32 * 128), "context still works after errors");
    jepa_ctx_params badp = jepa_ctx_default_params();
    badp.cpu = "z80";
    jepa_ctx *bc = NULL;
    char cerr[JEPA_ERR_LEN];
    CHECK(jepa_ctx_new(&bc, m, &badp, cerr) == JEPA_ERR_ARG && !bc && strstr(cerr, "z80"),
          "unknown cpu level refused: %s", cerr);

    /* devices: the CPU by every name (and by a zero-initialised struct), bad names refused,
     * a GPU in a build without one refused with the reason */
    static const char *const cpu_names[] = {NULL, "", "cpu"};
    for (int i = 0; i < 3; i++) {
        jepa_ctx_params dp = jepa_ctx_default_params();
        dp.device = cpu_names[i];
        dp.n_threads = 1;
        jepa_ctx *dc = NULL;
        out.tokens = again;
        st = jepa_ctx_new(&dc, m, &dp, cerr);
        if (st == JEPA_OK) st = jepa_ctx_embed(dc, x.data, 4, 64, 64, NULL, &out);
        CHECK(st == JEPA_OK && !strcmp(jepa_ctx_device(dc), "cpu") &&
                  !memcmp(ref, again, sizeof(float) * 32 * 128),
              "device %s%s%s is the CPU (same bits)", cpu_names[i] ? "'" : "NULL",
              cpu_names[i] ? cpu_names[i] : "", cpu_names[i] ? "'" : "");
        jepa_ctx_free(dc);
    }
    jepa_ctx_params zp;
    memset(&zp, 0, sizeof zp);
    CHECK(jepa_ctx_new(&bc, m, &zp, NULL) == JEPA_OK && bc && !strcmp(jepa_ctx_device(bc), "cpu"),
          "zero-initialised params: the CPU");
    jepa_ctx_free(bc);
    bc = NULL;
    static const char *const bad_devices[] = {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda0", "cpu:0"};
    for (int i = 0; i < 6; i++) {
        jepa_ctx_params dp = jepa_ctx_default_params();
        dp.device = bad_devices[i];
        st = jepa_ctx_new(&bc, m, &dp, cerr);
        CHECK(st == JEPA_ERR_ARG && !bc && strstr(cerr, bad_devices[i]), "device '%s' refused: %s",
              bad_devices[i], cerr);
    }
    if (jk_device_cuda_count() == 0) {
        static const char *const gpus[] = {"cuda", "cuda:0", "cuda:3"};
        for (int i = 0; i < 3; i++) {
            jepa_ctx_params dp = jepa_ctx_default_params();
            dp.device = gpus[i];
            cerr[0] = 0;
            st = jepa_ctx_new(&bc, m, &dp, cerr);
            CHECK(st == JEPA_ERR_DEVICE && !bc && cerr[0] && !strchr(cerr, '\n') &&
                      !strcmp(jepa_status_str(st), "device error"),
                  "device '%s' without a GPU: %s", gpus[i], cerr);
        }
    } else {
        printf("skip the no-GPU checks: this machine has %d CUDA device(s)\n", jk_device_cuda_count());
    }

    /* one model, four threads, each with its own single-threaded context */
    enum { NJOBS = 4 };
    struct job jobs[NJOBS];
    pthread_t th[NJOBS];
    for (int i = 0; i < NJOBS; i++) {
        jobs[i] = (struct job){.m = m, .x = x.data, .tokens = malloc(sizeof(float) * 32 * 128)};
        pthread_create(&th[i], NULL, encode_job, &jobs[i]);
    }
    int same = 1;
    for (int i = 0; i < NJOBS; i++) {
        pthread_join(th[i], NULL);
        same &= jobs[i].st == JEPA_OK && !memcmp(jobs[i].tokens, ref, sizeof(float) * 32 * 128);
        free(jobs[i].tokens);
    }
    CHECK(same, "%d threads sharing one model give the same bits as one context", NJOBS);

    /* load from memory */
    snprintf(path, sizeof path, "%s/vjepa2_tiny/model.gguf", argv[1]);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc((size_t)sz);
    size_t got = fread(buf, 1, (size_t)sz, f);
    fclose(f);
    jepa_model *mm = NULL;
    CHECK(got == (size_t)sz && jepa_model_load_memory(&mm, buf, (size_t)sz, err) == JEPA_OK,
          "load from memory");
    jepa_model_free(mm);
    mm = NULL;
    CHECK(jepa_model_load_memory(&mm, buf, (size_t)sz / 2, err) != JEPA_OK && !mm && err[0],
          "a truncated buffer is refused: %s", err);
    jepa_model_free(mm);
    free(buf);

    /* ---- weights packed once (jepa_ctx_set_prepack): the bits of a context without, at
     * the first encode (which packs), the second (which reuses the panels) and at 2
     * threads; off again frees them ---- */
    {
        const int T = 4, S = 128;   /* 2 x 8 x 8 = 128 tokens: every block matmul has >= 64 rows */
        int pgt, pgh, pgw, pn;
        CHECK(jepa_model_grid(m, T, S, S, &pgt, &pgh, &pgw, &pn) == JEPA_OK && pn == 128, "a 4x128x128 clip: 128 tokens");
        const size_t nx = (size_t)3 * T * S * S, nt = (size_t)pn * info.embed_dim;
        float *xp = malloc(nx * sizeof(float)), *t0 = malloc(nt * sizeof(float)), *t1 = malloc(nt * sizeof(float));
        if (!xp || !t0 || !t1) { printf("FAIL out of memory\n"); return 1; }
        uint32_t r = 7;
        for (size_t i = 0; i < nx; i++) xp[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
        jepa_ctx_params pcp = jepa_ctx_default_params();
        pcp.n_threads = 1;
        jepa_ctx *ca = NULL, *cb = NULL;
        CHECK(jepa_ctx_new(&ca, m, &pcp, err) == JEPA_OK && jepa_ctx_new(&cb, m, &pcp, err) == JEPA_OK, "two contexts");
        jepa_embed_out o0 = {.tokens = t0}, o1 = {.tokens = t1};
        CHECK(jepa_ctx_embed(ca, xp, T, S, S, NULL, &o0) == JEPA_OK, "encode without pre-packing");
        const jepa_status ps = jepa_ctx_set_prepack(cb, 1);
        if (!strcmp(jepa_ctx_isa(cb), "scalar")) {
            CHECK(ps == JEPA_ERR_UNSUPPORTED, "scalar kernels: pre-packing refused: %s", jepa_ctx_error(cb));
        } else {
            CHECK(ps == JEPA_OK && jepa_ctx_prepacked_bytes(cb) == 0, "pre-packing on (%s): nothing packed yet",
                  jepa_ctx_isa(cb));
            for (int pass = 0; pass < 3; pass++) {
                if (pass == 2) jepa_ctx_set_threads(cb, 2);
                memset(t1, 0, nt * sizeof(float));
                CHECK(jepa_ctx_embed(cb, xp, T, S, S, NULL, &o1) == JEPA_OK &&
                          !memcmp(t0, t1, nt * sizeof(float)),
                      "pre-packed, %s: the same bits as without", pass == 0 ? "first encode (packs)"
                      : pass == 1 ? "second encode (reuses)" : "2 threads");
            }
            /* f32 panels of every block matmul: 4 bytes per weight, at least (N rounded up) */
            const size_t bytes = jepa_ctx_prepacked_bytes(cb);
            const size_t d = (size_t)info.embed_dim, per_block = 4 * (3 * d * d + d * d + 2 * d * (size_t)info.ffn_dim);
            CHECK(bytes >= per_block * (size_t)info.n_layer, "%zu bytes packed (>= %zu: 4 bytes per block weight)",
                  bytes, per_block * (size_t)info.n_layer);
            CHECK(jepa_ctx_set_prepack(cb, 0) == JEPA_OK && jepa_ctx_prepacked_bytes(cb) == 0, "pre-packing off: freed");
            CHECK(jepa_ctx_embed(cb, xp, T, S, S, NULL, &o1) == JEPA_OK && !memcmp(t0, t1, nt * sizeof(float)),
                  "after pre-packing off: the same bits");
        }
        jepa_ctx_params sp = jepa_ctx_default_params();
        sp.cpu = "scalar";
        jepa_ctx *cs = NULL;
        CHECK(jepa_ctx_new(&cs, m, &sp, err) == JEPA_OK && jepa_ctx_set_prepack(cs, 1) == JEPA_ERR_UNSUPPORTED &&
                  strstr(jepa_ctx_error(cs), "pack"),
              "pre-packing on the scalar kernels: JEPA_ERR_UNSUPPORTED, '%s'", cs ? jepa_ctx_error(cs) : "");
        CHECK(jepa_ctx_set_prepack(NULL, 1) == JEPA_ERR_ARG && jepa_ctx_prepacked_bytes(NULL) == 0,
              "pre-packing a NULL context: JEPA_ERR_ARG");
        jepa_ctx_free(cs);
        jepa_ctx_free(ca);
        jepa_ctx_free(cb);
        free(xp), free(t0), free(t1);
    }

    free(ref);
    free(again);
    npy_free(&x);
    jepa_ctx_free(c);
    jepa_model_free(m);
    return check_finish("api");
}
