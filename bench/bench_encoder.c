/*
 * bench_encoder.c — `jepa bench encoder -m MODEL [--frames T] [--size H[xW]] [-t N]
 * [--reps R] [--prepack] [--json]`: one encoder forward against the FMA peak, in one process
 * (--prepack: the weights packed once, by the first encode).
 *
 *   first     the process's first encode: the thread team starts, the arena grows, the
 *             weights' pages are faulted in from the page cache (mmap);
 *   warm      the encode again at once, and after an idle second (idle): what a server
 *             pays when its threads have gone to sleep;
 *   1 / N     R rounds of: the FMA peak at 1 thread, an encode at 1 thread, the peak at
 *             N threads, an encode at N threads. The best of each is the figure (on a
 *             shared machine the best is the one the neighbours disturbed least; the
 *             median is printed beside it), and % of peak divides the best encode rate
 *             by the best peak of the same threads, measured between the same encodes;
 *   scaling   best N-thread time / best 1-thread time.
 * FLOPs are the matmuls and attention of jepa_encoder_flops (as `jepa embed --time`
 * counts them), except that LeVJEPA's block-causal attention counts the visible
 * query-key pairs only (embed --time counts it as full). The input is fixed
 * pseudo-random pixels of the model's own size unless --size / --frames say otherwise;
 * what the values are does not change the work. Results: docs/performance.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "jepa.h"

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double best(const double *v, int n) {
    double b = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < b) b = v[i];
    return b;
}

struct enc_job {
    jepa_ctx *c;
    const float *x;
    int T, H, W;
    jepa_embed_out out;
};

/* Seconds of one encode, or < 0 with the reason on stderr. */
static double encode_once(struct enc_job *j) {
    const double t0 = bench_now();
    if (jepa_ctx_embed(j->c, j->x, j->T, j->H, j->W, NULL, &j->out)) {
        fprintf(stderr, "jepa: bench encoder: %s\n", jepa_ctx_error(j->c));
        return -1;
    }
    return bench_now() - t0;
}

/* The figures of one run, as printed. */
struct enc_result {
    int T, H, W, n, R;                  /* the input, its tokens, the rounds */
    double flops, visible;              /* per encode; the visible share of attention pairs */
    double t_load, first, warm, after_idle;
    double b1, m1, pk1, bn, mn, pkn;    /* best and median seconds, best peak: 1 and N threads */
    double arena;                       /* MiB */
};

/* The FLOPs of one encode of n tokens (grid gt x gh x gw) and, into *visible, the share of
 * query-key pairs the attention computes. */
static double encode_flops(const jepa_model_info *in, int n, int T, int gt, int gh, int gw, double *visible) {
    double flops = jepa_encoder_flops(in, n, T == 1 ? 1 : in->tubelet_size);
    *visible = 1.0;
    if (!strcmp(in->family, "levjepa")) {
        /* block-causal by frame (models/encoder.c): a patch query of frame f sees the
         * patch keys of frames <= f, the CLS query sees every key, no patch query the
         * CLS key. Attention is counted over the visible pairs only. */
        const double P = (double)gh * gw, ncls = n - P * gt;
        const double pairs = ncls * n + P * P * gt * (gt + 1) / 2.0, full = (double)n * n;
        flops -= in->n_layer * 4.0 * in->embed_dim * (full - pairs);
        *visible = pairs / full;
    }
    return flops;
}

/* The context for --threads / --cpu (and --prepack), or NULL with the reason on stderr. */
static jepa_ctx *open_ctx(const struct bench_opts *o, const struct bench_encoder_opts *e, const jepa_model *m) {
    char err[JEPA_ERR_LEN];
    jepa_ctx *c = NULL;
    jepa_ctx_params cp = jepa_ctx_default_params();
    cp.n_threads = o->threads;
    cp.precision = o->precision;
    char cap[16];
    if (o->cpu_name) {
        snprintf(cap, sizeof cap, "%s", o->cpu_name);
        cp.cpu = cap;
    }
    if (jepa_ctx_new(&c, m, &cp, err)) {
        fprintf(stderr, "jepa: %s\n", err);
        return NULL;
    }
    if (e->prepack && jepa_ctx_set_prepack(c, 1)) {
        fprintf(stderr, "jepa: bench encoder: --prepack: %s\n", jepa_ctx_error(c));
        jepa_ctx_free(c);
        return NULL;
    }
    return c;
}

/* The latencies (first call of the process, at once again, after an idle second), then R
 * rounds of peak and encode at 1 and N threads into t1, tn, p1, pn: 0, or -1 when an encode
 * failed. */
static int measure(const struct bench_opts *o, struct enc_job *j, struct enc_result *res, double *t1, double *tn,
                   double *p1, double *pn) {
    res->first = encode_once(j), res->warm = encode_once(j);
    struct timespec idle = {1, 0};
    nanosleep(&idle, NULL);
    res->after_idle = encode_once(j);
    if (res->first < 0 || res->warm < 0 || res->after_idle < 0) return -1;
    const char *isa = NULL;
    for (int k = 0; k < res->R; k++) {
        p1[k] = bench_fma_peak(o->cpu, 1, &isa);
        jepa_ctx_set_threads(j->c, 1);
        if ((t1[k] = encode_once(j)) < 0) return -1;
        if (o->threads > 1) {
            pn[k] = bench_fma_peak(o->cpu, o->threads, &isa);
            jepa_ctx_set_threads(j->c, o->threads);
            if ((tn[k] = encode_once(j)) < 0) return -1;
        }
    }
    return 0;
}

/* The best and median times and the best peaks of the rounds into res. */
static void summarize(const struct bench_opts *o, struct enc_result *res, double *t1, double *tn, const double *p1,
                      const double *pn) {
    const int R = res->R;
    res->b1 = best(t1, R);
    res->pk1 = p1[0], res->pkn = pn[0];   /* the best peak of each thread count */
    for (int k = 1; k < R; k++) {
        if (p1[k] > res->pk1) res->pk1 = p1[k];
        if (pn[k] > res->pkn) res->pkn = pn[k];
    }
    res->bn = o->threads > 1 ? best(tn, R) : res->b1;
    res->m1 = median(t1, R), res->mn = o->threads > 1 ? median(tn, R) : res->m1;
}

static void print_result(const struct bench_opts *o, const struct bench_encoder_opts *e, const jepa_model_info *in,
                         jepa_ctx *c, const struct enc_result *r) {
    const double g1 = r->flops / r->b1 * 1e-9, gn = r->flops / r->bn * 1e-9;
    if (o->json) {
        printf("{\"model\": \"%s\", \"family\": \"%s\", \"tokens\": %d, \"gflop\": %.4f, \"isa\": \"%s\", "
               "\"threads\": %d, \"reps\": %d, \"load_ms\": %.3f, \"first_ms\": %.3f, \"warm_ms\": %.3f, "
               "\"after_idle_ms\": %.3f, \"t1_best_ms\": %.3f, \"t1_median_ms\": %.3f, \"peak1_gflops\": %.2f, "
               "\"pct_peak1\": %.2f, \"tn_best_ms\": %.3f, \"tn_median_ms\": %.3f, \"peakn_gflops\": %.2f, "
               "\"pct_peakn\": %.2f, \"scaling\": %.4f, \"arena_mib\": %.2f, \"visible_pairs\": %.4f, "
               "\"precision\": \"%s\", \"matmul\": \"%s\"}\n",
               e->model, in->family, r->n, r->flops * 1e-9, jepa_ctx_isa(c), o->threads, r->R, r->t_load * 1e3,
               r->first * 1e3, r->warm * 1e3, r->after_idle * 1e3, r->b1 * 1e3, r->m1 * 1e3, r->pk1,
               100 * g1 / r->pk1, r->bn * 1e3, r->mn * 1e3, o->threads > 1 ? r->pkn : r->pk1,
               100 * gn / (o->threads > 1 ? r->pkn : r->pk1), r->bn / r->b1, r->arena, r->visible,
               jepa_ctx_precision(c), jepa_ctx_matmul_isa(c));
        return;
    }
    printf("bench encoder: %s (%s), %d x %d x %d -> %d tokens, %.2f GFLOP per encode, kernels %s, "
           "arena %.1f MiB\n",
           e->model, in->family, r->T, r->H, r->W, r->n, r->flops * 1e-9, jepa_ctx_isa(c), r->arena);
    if (strcmp(jepa_ctx_precision(c), "exact"))
        printf("precision %s: the matmuls run the %s kernels (%% of peak stays of the FMA peak)\n",
               jepa_ctx_precision(c), jepa_ctx_matmul_isa(c));
    if (r->visible < 1.0)
        printf("block-causal attention: %.1f %% of the query-key pairs are visible; only they are counted\n",
               100 * r->visible);
    printf("latency at %d threads: load %.1f ms, first encode %.2f ms, again %.2f ms, after 1 s idle %.2f ms\n",
           o->threads, r->t_load * 1e3, r->first * 1e3, r->warm * 1e3, r->after_idle * 1e3);
    printf("threads  best ms  median ms  GFLOP/s  FMA peak  %% of peak   (%d rounds)\n", r->R);
    printf("%7d %8.2f %10.2f %8.1f %9.1f %9.1f%%\n", 1, r->b1 * 1e3, r->m1 * 1e3, g1, r->pk1, 100 * g1 / r->pk1);
    if (o->threads > 1)
        printf("%7d %8.2f %10.2f %8.1f %9.1f %9.1f%%   scaling %.3f (time %d threads / 1 thread)\n", o->threads,
               r->bn * 1e3, r->mn * 1e3, gn, r->pkn, 100 * gn / r->pkn, r->bn / r->b1, o->threads);
}

int bench_encoder(const struct bench_opts *o, const struct bench_encoder_opts *e) {
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    jepa_ctx *c = NULL;
    float *x = NULL, *tokens = NULL;
    double *t1 = NULL, *tn = NULL, *p1 = NULL, *pn = NULL;
    int rc = 1;
    struct enc_result res = {.R = e->reps};
    const double t_load0 = bench_now();
    if (jepa_model_load(&m, e->model, err)) {
        fprintf(stderr, "jepa: %s\n", err);
        return 1;
    }
    res.t_load = bench_now() - t_load0;
    jepa_model_info in;
    jepa_model_get_info(m, &in);
    const int T = res.T = e->frames > 0 ? e->frames : 1;
    const int H = res.H = e->height > 0 ? e->height : in.img_size, W = res.W = e->width > 0 ? e->width : H;
    int gt, gh, gw, n;
    if (jepa_model_grid(m, T, H, W, &gt, &gh, &gw, &n)) {
        fprintf(stderr, "jepa: bench encoder: %s does not take %d x %d x %d input\n", e->model, T, H, W);
        goto done;
    }
    res.n = n;
    const size_t nx = (size_t)in.in_chans * T * H * W, nt = (size_t)n * in.embed_dim;
    const int R = e->reps;
    x = malloc(sizeof(float) * nx);
    tokens = malloc(sizeof(float) * nt);
    t1 = calloc((size_t)R, sizeof(double)), tn = calloc((size_t)R, sizeof(double));
    p1 = calloc((size_t)R, sizeof(double)), pn = calloc((size_t)R, sizeof(double));
    if (!x || !tokens || !t1 || !tn || !p1 || !pn) {
        fprintf(stderr, "jepa: bench encoder: out of memory for %d tokens\n", n);
        goto done;
    }
    uint32_t r = 2024;
    for (size_t i = 0; i < nx; i++) x[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
    if (!(c = open_ctx(o, e, m))) goto done;
    struct enc_job j = {.c = c, .x = x, .T = T, .H = H, .W = W, .out = {.tokens = tokens}};
    res.flops = encode_flops(&in, n, T, gt, gh, gw, &res.visible);
    if (measure(o, &j, &res, t1, tn, p1, pn)) goto done;
    summarize(o, &res, t1, tn, p1, pn);
    res.arena = (double)jepa_ctx_arena_bytes(c) / (1 << 20);
    print_result(o, e, &in, c, &res);
    rc = 0;
done:
    jepa_ctx_free(c);
    jepa_model_free(m);
    free(x), free(tokens), free(t1), free(tn), free(p1), free(pn);
    return rc;
}
