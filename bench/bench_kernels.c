/*
 * bench_kernels.c — `jepa bench kernels`: times the slots of the kernel table on the shapes
 * the models run, next to the machine's measured FMA peak and (when jepa.c is built with
 * OpenBLAS) cblas_sgemm on the same shapes and thread count, all in one run.
 *
 *   matmul  Y = X . W^T, M in {1, 576, 2048} (+ 4608, 18432 with --full; --quick: 1, 576)
 *           x (N, K) in the ViT linear layers (ViT-S/B/L qkv, proj, fc1, fc2, predictor)
 *           x weight dtype f32, f16, bf16, q8_0; flops = 2 M N K.
 *           Baseline: OpenBLAS sgemm(RowMajor, NoTrans, Trans) on f32 copies of the same
 *           weights (there is no f16 / q8_0 sgemm: every dtype row shows that f32 number).
 *           --cold: M in {1, 4, 16} only, each call reading the next of as many copies of W
 *           as fill 256 MiB, so W streams from memory as in a forward pass over a model
 *           (a hot W of a few MiB sits in the caches, which flatters the wider types); no
 *           baseline then.
 *   attn    whatever fills the table's attn slot: N tokens in {577, 2048, 4608} (--quick:
 *           577) attending to themselves, 12 heads of head_dim 64 and of 32, no mask;
 *           flops = 4 N^2 head_dim heads; then (not --quick) LeVJEPA's block-causal
 *           3137 tokens, 16 heads of 64, counting the visible pairs only, and the small
 *           models' images: 257 tokens x 3 heads (LeWM), 197 x 6 (LeJEPA). The buffers are
 *           laid out and allocated as the forward's (attn_case). JSON rows: "M" = query
 *           tokens, "N" = key tokens, "K" = head_dim.
 * Time: the median of several calls after a warm-up call (reps fitted to ~0.4 s per row,
 * at least 3; a single call when one call already takes longer than the budget; the rule
 * and the "suspect" mark of rows whose calls took one time to the tenth of a microsecond:
 * bench/timing.c).
 * GFLOP/s and "% of peak" use the peak of bench/peak.c measured at the start of the run
 * with the same thread count. Libraries are switched with a pause in between, so the
 * spinning worker threads of one (OpenMP, OpenBLAS) do not steal the cores of the other.
 *
 * Results and method: docs/performance-kernels.md. The kernels themselves are tested by
 * tests/checkasm (this file checks nothing but that each call ran).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "kernels/device.h"
#include "kernels/kernels.h"
#include "runtime/cpu.h"
#include "runtime/dtype.h"
#include "runtime/quant.h"

#ifdef JEPA_HAVE_OPENBLAS
/* OpenBLAS is the baseline of `jepa bench kernels` and nothing else, so it is opened here
 * at run time, never linked: a linked OpenBLAS maps itself into every command and starts
 * its thread pool from a constructor (and that pool hangs the process at exit when an
 * address-space limit made its allocation fail). cblas.h gives the types only. */
#include <cblas.h>

#include "runtime/dynlib.h"
static __typeof__(cblas_sgemm) *blas_sgemm;
static __typeof__(openblas_set_num_threads) *blas_set_threads;
static __typeof__(openblas_get_corename) *blas_corename;

/* The runtime soname, else the development symlink; 0 when found, else -1 and why in err. */
static int blas_open(char *err, size_t n) {
    static const struct jr_dlsym syms[] = {
        {0, "cblas_sgemm", (void **)&blas_sgemm},
        {0, "openblas_set_num_threads", (void **)&blas_set_threads},
        {0, "openblas_get_corename", (void **)&blas_corename},
    };
    static const char *const sonames[] = {"libopenblas.so.0", "libopenblas.so"};
    for (int i = 0; i < 2; i++)
        if (!jr_dl_load(&sonames[i], 1, syms, sizeof syms / sizeof *syms, "OpenBLAS", err, n)) return 0;
    return -1;   /* err: why the development name failed too */
}
#endif

#define BUDGET_S 0.4
#define QUICK_BUDGET_S 0.15

static const struct { int N, K; const char *what; } mm_shapes[] = {
    {2304, 768, "ViT-B qkv"},  {768, 768, "ViT-B proj"},   {3072, 768, "ViT-B fc1"},
    {768, 3072, "ViT-B fc2"},  {3072, 1024, "ViT-L qkv"},  {1024, 1024, "ViT-L proj"},
    {4096, 1024, "ViT-L fc1"}, {1024, 4096, "ViT-L fc2"},  {1536, 384, "pred/ViT-S fc1"},
};

/* ---- timing ---- */

typedef void (*bench_fn)(void *ctx);

#ifdef JEPA_HAVE_OPENBLAS
static void pause_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}
#endif

/* Median seconds of fn(ctx) by the rule of bench/timing.c; *tm (may be NULL): the rest. */
static double time_median(bench_fn fn, void *ctx, double budget, struct bench_timing *tm) {
    struct bench_timing t;
    bench_time(fn, ctx, budget, bench_now, &t);
    if (tm) *tm = t;
    return t.median;
}

/* ---- output ---- */

/* tm: how the row was timed; a suspect one (bench/timing.c) says so, in the table after
 * the note and in JSON as "suspect". */
static void row(const struct bench_opts *o, const char *op, const char *dtype, int M, int N, int K,
                const struct bench_timing *tm, double flops, double peak, const char *baseline,
                double base_gflops, const char *note) {
    const double sec = tm->median, gf = flops / sec * 1e-9;
    if (o->json) {
        printf("{\"op\":\"%s\",\"dtype\":\"%s\",\"M\":%d,\"N\":%d,\"K\":%d,\"threads\":%d,"
               "\"gflops\":%.3f,\"peak_gflops\":%.3f,",
               op, dtype, M, N, K, o->threads, gf, peak);
        if (baseline) printf("\"baseline\":\"%s\",\"baseline_gflops\":%.3f,", baseline, base_gflops);
        else printf("\"baseline\":null,\"baseline_gflops\":null,");
        printf("\"suspect\":%s}\n", tm->suspect ? "true" : "false");
    } else {
        printf("%-6s %-5s %6d %6d %5d %10.3f %9.1f %6.1f%%", op, dtype, M, N, K, sec * 1e3, gf,
               100.0 * gf / peak);
        if (baseline) printf(" %9.1f %6.2fx", base_gflops, gf / base_gflops);
        else printf(" %9s %7s", "-", "-");
        printf("  %s", note ? note : "");
        if (tm->suspect)
            printf(" [suspect: %d of %d calls took %.4f ms to %.0e of it, a wait on the scheduler tick or a "
                   "coarse clock, not the kernel: docs/notes/kernel-tuning.md#bench-identical-times]",
                   tm->tied, tm->reps, sec * 1e3, BENCH_TIE_REL);
        printf("\n");
    }
    fflush(stdout);
}

/* ---- matmul ---- */

struct mm_ctx {
    const struct jk_kernels *k;
    enum jk_dtype t;
    struct jk_gemm_args a;
    const uint8_t *copies;   /* --cold: ncopy copies of W, rb apart; each call takes the next */
    size_t wbytes;
    int ncopy, next;
};
static void run_mm(void *p) {
    struct mm_ctx *c = (struct mm_ctx *)p;
    if (c->ncopy > 1) {
        c->a.w = c->copies + (size_t)c->next * c->wbytes;
        c->next = (c->next + 1) % c->ncopy;
    }
    c->k->gemm[c->t](&c->a);
}

#define COLD_BYTES ((size_t)256 << 20)

#ifdef JEPA_HAVE_OPENBLAS
struct blas_ctx {
    int M, N, K;
    const float *x, *w;
    float *y;
};
static void run_blas(void *p) {
    struct blas_ctx *c = (struct blas_ctx *)p;
    blas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c->M, c->N, c->K, 1.0f, c->x, c->K,
               c->w, c->K, 0.0f, c->y, c->N);
}
#endif

static float rnd_normal(uint64_t *s) {
    /* splitmix64 -> two uniforms -> Box-Muller; reproducible inputs for every run */
    double u[2];
    for (int i = 0; i < 2; i++) {
        uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        u[i] = ((double)(z >> 11) + 0.5) * 0x1.0p-53;
    }
    return (float)(sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]));
}

/* W [N, K] f32 -> packed rows of dtype t (rows of jk_row_bytes). */
static void *convert_weights(const float *w, int N, int K, enum jk_dtype t) {
    const size_t rb = jk_row_bytes(t, K);
    uint8_t *out = (uint8_t *)malloc((size_t)N * rb);
    if (!out) return NULL;
    for (int n = 0; n < N; n++) {
        const float *src = w + (size_t)n * K;
        uint8_t *dst = out + (size_t)n * rb;
        if (t == JK_F32) {
            memcpy(dst, src, rb);
        } else if (t == JK_F16 || t == JK_BF16) {
            for (int k = 0; k < K; k++) {
                uint16_t h = t == JK_F16 ? f32_to_f16(src[k]) : f32_to_bf16(src[k]);
                memcpy(dst + 2 * (size_t)k, &h, 2);
            }
        } else if (jr_quantize_row((int)t, src, dst, K) != 0) {   /* every block type has one */
            free(out);
            return NULL;
        }
    }
    return out;
}

static int bench_matmul(const struct bench_opts *o, const struct jk_kernels *k, double peak,
                        const char *gemm_isa) {
    /* small M (the attentive-pool query, predictor batches: 1 .. 16) and large */
    static const int Ms_quick[] = {1, 576}, Ms[] = {1, 4, 16, 576, 2048}, Ms_full[] = {1, 4, 16, 576, 2048, 4608, 18432};
    static const int Ms_cold[] = {1, 4, 16};   /* --cold: where the bytes read decide */
    const int *ms = o->cold ? Ms_cold : o->quick ? Ms_quick : o->full ? Ms_full : Ms;
    const int nm = o->cold ? 3 : o->quick ? 2 : o->full ? 7 : 5;
    const double budget = o->quick ? QUICK_BUDGET_S : BUDGET_S;
    uint64_t seed = 42;
    for (int mi = 0; mi < nm; mi++) {
        const int M = ms[mi];
        for (size_t si = 0; si < sizeof mm_shapes / sizeof mm_shapes[0]; si++) {
            const int N = mm_shapes[si].N, K = mm_shapes[si].K;
            float *x = (float *)malloc((size_t)M * K * sizeof(float));
            float *y = (float *)malloc((size_t)M * N * sizeof(float));
            float *w = (float *)malloc((size_t)N * K * sizeof(float));
            void *ws = malloc(k->gemm_ws(o->threads, K));
            if (!x || !y || !w || !ws) {
                fprintf(stderr, "jepa bench: out of memory (M=%d N=%d K=%d)\n", M, N, K);
                free(x), free(y), free(w), free(ws);
                return 1;
            }
            for (size_t i = 0; i < (size_t)M * K; i++) x[i] = rnd_normal(&seed);
            for (size_t i = 0; i < (size_t)N * K; i++) w[i] = rnd_normal(&seed) / sqrtf((float)K);
            memset(y, 0, (size_t)M * N * sizeof(float));
            const double flops = 2.0 * M * N * K;

            /* ours first (every dtype), then OpenBLAS, so that neither library's idle
             * worker threads (spinning after a call) share the cores with the other's */
            struct bench_timing sec[JK_NDTYPES];
            for (int t = 0; t < JK_NDTYPES; t++) {
                sec[t].median = 0.0;
                if (!jk_row_bytes((enum jk_dtype)t, K)) continue;   /* K not whole blocks (K-quants at 384) */
                void *wt = convert_weights(w, N, K, (enum jk_dtype)t);
                const size_t wbytes = (size_t)N * jk_row_bytes((enum jk_dtype)t, K);
                const int ncopy = o->cold ? (int)((COLD_BYTES + wbytes - 1) / wbytes) : 1;
                uint8_t *copies = ncopy > 1 ? (uint8_t *)malloc(wbytes * (size_t)ncopy) : NULL;
                if (!wt || (ncopy > 1 && !copies)) {
                    fprintf(stderr, "jepa bench: out of memory\n");
                    free(wt), free(x), free(y), free(w), free(ws);
                    return 1;
                }
                for (int i = 0; i < ncopy && copies; i++) memcpy(copies + (size_t)i * wbytes, wt, wbytes);
                struct mm_ctx c = {k, (enum jk_dtype)t, {
                    .y = y, .ldy = (size_t)N, .x = x, .ldx = (size_t)K, .w = wt,
                    .ldw = jk_row_bytes((enum jk_dtype)t, K), .bias = NULL, .M = M, .N = N,
                    .K = K, .epi = JK_EPI_STORE, .nthreads = o->threads, .ws = ws}, copies, wbytes, ncopy, 0};
                time_median(run_mm, &c, budget, &sec[t]);
                free(wt), free(copies);
            }
            const char *baseline = NULL;
            double base_gf = 0.0;
#ifdef JEPA_HAVE_OPENBLAS
            if (blas_sgemm && !o->cold) {   /* (--cold: no baseline; its W would be hot) */
                pause_ms(50);
                struct blas_ctx bc = {M, N, K, x, w, y};
                base_gf = flops / time_median(run_blas, &bc, budget, NULL) * 1e-9;
                baseline = "openblas";
                pause_ms(300); /* OpenBLAS threads spin ~0.1-0.2 s after a call */
            }
#endif
            for (int t = 0; t < JK_NDTYPES; t++) {
                if (sec[t].median == 0.0) continue;
                char note[64];
                snprintf(note, sizeof note, "%s %s", gemm_isa, t == 0 ? mm_shapes[si].what : "");
                row(o, "matmul", jk_dtype_name((enum jk_dtype)t), M, N, K, &sec[t], flops, peak,
                    baseline, base_gf, note);
            }
            free(x), free(y), free(w), free(ws);
        }
    }
    return 0;
}

/* ---- attention ---- */

struct attn_ctx {
    const struct jk_kernels *k;
    struct jk_attn_args a;
};
static void run_attn(void *p) {
    struct attn_ctx *c = (struct attn_ctx *)p;
    c->k->attn(&c->a);
}

/* One attention case: N tokens attending to themselves, `heads` heads of hd, in the
 * forward's layout (models/vit.c): q, k and v rows interleaved in one [N, 3 heads hd]
 * buffer, from the CPU device's allocator like the forward's arena (2 MiB aligned and
 * advised huge pages from 8 MiB on), and so is the workspace. frames > 0: LeVJEPA's
 * block-causal mask (models/encoder.c): a CLS token, then `frames` frames of (N - 1) /
 * frames tokens; a patch query sees the keys of its frame and the earlier frames' (not
 * the CLS key), the CLS query every key. FLOPs count the visible query-key pairs only. */
static int attn_case(const struct bench_opts *o, const struct jk_kernels *k, double peak,
                     const char *attn_isa, int N, int hd, int heads, int frames, uint64_t *seed) {
    struct jk_device *dev = jk_device_cpu();
    const int D = heads * hd;
    const size_t n = (size_t)N * D;
    float *qkv = (float *)dev->alloc(dev, 3 * n * sizeof(float));
    float *out = (float *)dev->alloc(dev, n * sizeof(float));
    void *ws = dev->alloc(dev, k->attn_ws(o->threads, heads, hd, N));
    int32_t *pos = frames > 0 ? (int32_t *)malloc((size_t)N * sizeof(int32_t)) : NULL;
    if (!qkv || !out || !ws || (frames > 0 && !pos)) {
        fprintf(stderr, "jepa bench: out of memory (attention N=%d)\n", N);
        if (qkv) dev->free(dev, qkv);
        if (out) dev->free(dev, out);
        if (ws) dev->free(dev, ws);
        free(pos);
        return 1;
    }
    for (size_t i = 0; i < 3 * n; i++) qkv[i] = rnd_normal(seed);
    double pairs = (double)N * N;
    if (pos) {
        const int per = (N - 1) / frames;
        pos[0] = INT32_MAX;
        for (int i = 1; i < N; i++) pos[i] = (i - 1) / per;
        pairs = N;                                   /* the CLS query */
        for (int f = 0; f < frames; f++) pairs += (double)per * per * (f + 1);
    }
    struct attn_ctx c = {k, {.o = out, .ldo = (size_t)D, .q = qkv, .ldq = 3 * (size_t)D, .k = qkv + D,
                             .ldk = 3 * (size_t)D, .v = qkv + 2 * D, .ldv = 3 * (size_t)D, .nq = N,
                             .nkv = N, .n_head = heads, .head_dim = hd,
                             .scale = 1.0f / sqrtf((float)hd), .q_pos = pos, .k_pos = pos,
                             .nthreads = o->threads, .ws = ws}};
    struct bench_timing tm;
    time_median(run_attn, &c, o->quick ? QUICK_BUDGET_S : BUDGET_S, &tm);
    char note[96];
    if (pos)
        snprintf(note, sizeof note, "%s, %d heads, block-causal %d frames (%.1f %% visible)", attn_isa, heads,
                 frames, 100.0 * pairs / ((double)N * N));
    else
        snprintf(note, sizeof note, "%s, %d heads", attn_isa, heads);
    row(o, "attn", "f32", N, N, hd, &tm, 4.0 * pairs * hd * heads, peak, NULL, 0.0, note);
    dev->free(dev, qkv), dev->free(dev, out), dev->free(dev, ws);
    free(pos);
    return 0;
}

static int bench_attn(const struct bench_opts *o, const struct jk_kernels *k, double peak,
                      const char *attn_isa) {
    static const int Ns[] = {577, 2048, 4608}, hds[] = {64, 32};
    const int nn = o->quick ? 1 : 3;
    uint64_t seed = 7;
    int rc = 0;
    for (int hi = 0; hi < 2; hi++)
        for (int ni = 0; ni < nn; ni++) rc |= attn_case(o, k, peak, attn_isa, Ns[ni], hds[hi], 12, 0, &seed);
    if (!o->quick) {
        /* LeVJEPA ViT-L/16 over 16 frames of 224^2: 1 + 16 x 196 tokens, 16 heads of 64 */
        rc |= attn_case(o, k, peak, attn_isa, 3137, 64, 16, 16, &seed);
        /* the small models' one image: LeWM ViT-tiny/14 (1 + 256 tokens, 3 heads of 64)
         * and LeJEPA ViT-S/16 (1 + 196 tokens, 6 heads of 64) */
        rc |= attn_case(o, k, peak, attn_isa, 257, 64, 3, 0, &seed);
        rc |= attn_case(o, k, peak, attn_isa, 197, 64, 6, 0, &seed);
    }
    return rc;
}

/* ---- driver ---- */

static const char *level_name(unsigned cpu) {
    if (cpu & JEPA_CPU_AVX512) return "avx512";
    if (cpu & JEPA_CPU_AVX2) return "avx2";
    if (cpu & JEPA_CPU_NEON) return "neon";
    return "scalar";
}

int bench_kernels(const struct bench_opts *o) {
    struct jk_kernels k, ref;
    const char *tier = o->precision && *o->precision ? o->precision : getenv("JEPA_PRECISION");
    const int prec = jk_precision_parse(tier);
    if (prec < 0) {
        fprintf(stderr, "jepa: bench: unknown precision '%s' (exact, high, bf16)\n", tier);
        return 2;
    }
    jk_init_precision(&k, o->cpu, (enum jk_precision)prec);
    jk_init_ref(&ref);
    const char *lvl = level_name(o->cpu);
    const char *gemm_isa = k.gemm[JK_F32] == ref.gemm[JK_F32] ? "reference" : k.gemm_isa;
    const char *attn_isa = k.attn == ref.attn ? "reference" : k.attn_isa ? k.attn_isa : lvl;
    const char *peak_isa, *dot_isa;
    const double peak = bench_fma_peak(o->cpu, o->threads, &peak_isa);
    /* the bf16 tier's matmul is measured against its own instruction's peak */
    const int tier_kernels = !strcmp(k.gemm_isa, "avx512_bf16") || !strncmp(k.gemm_isa, "amx_", 4) ||
                             !strcmp(k.gemm_isa, "neon_bf16");
    const double dot_peak = tier_kernels ? bench_bf16_peak(o->cpu, o->threads, &dot_isa) : 0.0;

    /* context lines: stdout for the table, stderr with --json (stdout is JSON only) */
    FILE *info = o->json ? stderr : stdout;
    char buf[256];
    fprintf(info, "jepa bench kernels: cpu flags [%s], %d thread%s\n",
            jr_cpu_describe(o->cpu, buf, sizeof buf), o->threads, o->threads == 1 ? "" : "s");
    fprintf(info, "kernels: gemm %s, attn %s\n", gemm_isa, attn_isa);
    fprintf(info, "FMA peak (%s register loop, %d thread%s): %.1f GFLOP/s\n", peak_isa,
            o->threads, o->threads == 1 ? "" : "s", peak);
    fprintf(info, "precision: %s (matmul %s)\n", jk_precision_name((enum jk_precision)prec), k.gemm_isa);
    struct timespec res;
    if (clock_getres(CLOCK_MONOTONIC, &res) == 0)   /* a coarse clock makes whole ticks */
        fprintf(info, "clock: CLOCK_MONOTONIC, resolution %.0f ns\n", 1e9 * res.tv_sec + res.tv_nsec);
    if (dot_peak > 0)
        fprintf(info, "bf16 peak (%s register loop, %d thread%s): %.1f GFLOP/s = %.2f x the FMA peak; "
                "the matmul rows' peak column is of it\n", dot_isa, o->threads, o->threads == 1 ? "" : "s",
                dot_peak, dot_peak / peak);
#ifdef JEPA_HAVE_OPENBLAS
    char why[256];
    if (!blas_open(why, sizeof why)) {
        blas_set_threads(o->threads);
        const char *ct = getenv("OPENBLAS_CORETYPE");
        fprintf(info, "baseline: OpenBLAS sgemm, core %s (OPENBLAS_CORETYPE=%s), %d thread%s\n",
                blas_corename(), ct ? ct : "unset", o->threads, o->threads == 1 ? "" : "s");
    } else {
        fprintf(info, "baseline: none (%s)\n", why);
    }
#else
    fprintf(info, "baseline: none (built without OpenBLAS)\n");
#endif
    if (!o->json)
        printf("\n%-6s %-5s %6s %6s %5s %10s %9s %7s %9s %7s  %s\n", "op", "dtype", "M", "N", "K",
               "ms", "GFLOP/s", "peak", "baseline", "ratio", "kernel");
    fflush(info);
    int rc = 0;
    if (!strcmp(o->op, "all") || !strcmp(o->op, "matmul"))
        rc |= bench_matmul(o, &k, dot_peak > 0 ? dot_peak : peak, gemm_isa);
    if (!rc && (!strcmp(o->op, "all") || !strcmp(o->op, "attn"))) rc |= bench_attn(o, &k, peak, attn_isa);
    return rc;
}
