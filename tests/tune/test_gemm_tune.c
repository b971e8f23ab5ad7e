/*
 * test_gemm_tune.c — the matmul at every blocking `jepa tune` may choose
 * (jk_gemm_candidates) and at every built-in table entry's, for each kind this machine
 * runs: the exact tier's (avx2, avx512; neon on aarch64) and the precision tiers'
 * (avx512_bf16, amx_bf16 and amx_high where the CPU has them; neon_bf16), passed per call
 * (jk_gemm_args.tune):
 *  - against a double-precision reference written here, on ragged shapes (none a multiple
 *    of a tile; K over 1 to 4 K blocks, M over several X blocks, N past the largest W
 *    panel, the small-M path), f32 and f16 weights, the store and residual-add epilogues,
 *    with the bound of tests/checkasm/test_gemm.c: |y - y_ref| <= 1.01 (K + 4) u S + u |y_ref|,
 *    S = sum_k |x_k w_k| + |b| + |y_old|; for the bf16 tier the reference and S take X and
 *    W rounded to bf16 and the bound 2u for u (test_gemm_tier.c: BFDOT rounds to odd); for
 *    the high tier 1.01 (3K + 4) u S + 3.1 2^-16 S_xw (test_gemm_tier.c);
 *  - with 1 thread, and with 2 threads for every other blocking and 3 for the rest: the
 *    same bits at every thread count for one blocking (each blocking runs twice, not three
 *    times: under qemu, in the aarch64 cross build, a third run cost CI about 2 minutes);
 *    with the argument `reduced` (the cross build, under qemu) only every third blocking
 *    runs the second time, at 2 and 3 threads in turn;
 *  - the workspace sized by jk_gemm_ws_tuned for that blocking, with guard bytes after it
 *    that must stay untouched.
 * Plus: with no blocking passed, the kernels compute the bits of the blocking in force.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/tuning.h"
#include "runtime/cpu.h"
#include "runtime/dtype.h"
#include "tests/check.h"
#include "tests/tune/tune_check.h"

struct shape { int M, N, K; enum jk_epilogue epi; };
static const struct shape shapes[] = {
    {67, 65, 1000, JK_EPI_STORE},   /* 2 to 4 K blocks at kc 256 .. 768 */
    {173, 45, 777, JK_EPI_ADD},     /* several X blocks at mc 84 .. 168 */
    {70, 2100, 24, JK_EPI_STORE},   /* past the widest W panel (nc 2048) */
    {5, 33, 520, JK_EPI_STORE},     /* the small-M path */
};
enum { NSH = sizeof shapes / sizeof *shapes };

struct data {
    float *x, *bias, *y0, *ref;
    double *bound;
    void *w;   /* as dtype */
};

static double as_bf16(float v) { return bf16_to_f32(f32_to_bf16(v)); }

static void make(struct data *d, const struct shape *s, enum jk_dtype t, enum jk_precision tier) {
    const size_t mk = (size_t)s->M * s->K, nk = (size_t)s->N * s->K, mn = (size_t)s->M * s->N;
    d->x = malloc(mk * 4), d->bias = malloc((size_t)s->N * 4), d->y0 = malloc(mn * 4);
    d->ref = malloc(mn * 4), d->bound = malloc(mn * sizeof(double));
    d->w = malloc(nk * 4);
    float *wf = malloc(nk * 4);
    for (size_t i = 0; i < mk; i++) d->x[i] = urand();
    for (size_t i = 0; i < nk; i++) {
        const float v = urand();
        if (t == JK_F16) ((uint16_t *)d->w)[i] = f32_to_f16(v), wf[i] = f16_to_f32(((uint16_t *)d->w)[i]);
        else ((float *)d->w)[i] = v, wf[i] = v;
    }
    for (int n = 0; n < s->N; n++) d->bias[n] = urand();
    for (size_t i = 0; i < mn; i++) d->y0[i] = urand();
    for (int m = 0; m < s->M; m++)
        for (int n = 0; n < s->N; n++) {
            double acc = d->bias[n], S = fabs(d->bias[n]), Sxw = 0;
            for (int k = 0; k < s->K; k++) {
                const float xv = d->x[(size_t)m * s->K + k], wv = wf[(size_t)n * s->K + k];
                const double p = tier == JK_PREC_BF16 ? as_bf16(xv) * as_bf16(wv) : (double)xv * wv;
                acc += p, S += fabs(p), Sxw += fabs(p);
            }
            const size_t j = (size_t)m * s->N + n;
            if (s->epi == JK_EPI_ADD) acc += d->y0[j], S += fabs(d->y0[j]);
            d->ref[j] = (float)acc;
            d->bound[j] = tier == JK_PREC_BF16 ? 1.01 * (s->K + 4) * 0x1p-23 * S + 0x1p-24 * fabs(acc)
                          : tier == JK_PREC_HIGH
                              ? 1.01 * (3.0 * s->K + 4) * 0x1p-24 * S + 3.1 * 0x1p-16 * Sxw + 0x1p-24 * fabs(acc)
                              : 1.01 * (s->K + 4) * 0x1p-24 * S + 0x1p-24 * fabs(acc);
        }
    free(wf);
}

static void drop(struct data *d) {
    free(d->x), free(d->bias), free(d->y0), free(d->ref), free(d->bound), free(d->w);
}

/* One call: y (from y0) = the gemm at blocking tu (NULL: in force), nt threads; 0, or -1
 * where the guard after the workspace changed. */
static int call(jk_gemm_fn *fn, const struct shape *s, enum jk_dtype t, const struct data *d,
                const struct jk_gemm_tuning *tu, int nt, float *y, size_t ws_bytes) {
    uint8_t *ws = tune_ws_alloc(ws_bytes);
    memcpy(y, d->y0, (size_t)s->M * s->N * 4);
    const struct jk_gemm_args a = {.y = y, .ldy = (size_t)s->N, .x = d->x, .ldx = (size_t)s->K,
                                   .w = d->w, .ldw = jk_row_bytes(t, s->K), .bias = d->bias,
                                   .M = s->M, .N = s->N, .K = s->K, .epi = s->epi, .nthreads = nt,
                                   .ws = ws, .tune = tu};
    fn(&a);
    return tune_ws_free(ws, ws_bytes);
}

int main(int argc, char **argv) {
    const int reduced = argc > 1 && !strcmp(argv[1], "reduced");
    const unsigned have = jr_cpu_detect();
    int kinds_run = 0;
    unsigned done = 0;   /* the kinds run */
    for (int l = 0; l < TUNE_NLEVELS * JK_NPREC; l++) {
        const long f = jr_cpu_cap(have, tune_levels[l / JK_NPREC]);
        const enum jk_precision tier = (enum jk_precision)(l % JK_NPREC);
        if (f <= 0) continue;
        struct jk_kernels k;
        jk_init_precision(&k, (unsigned)f, tier);
        if (strcmp(k.isa, tune_levels[l / JK_NPREC])) continue;
        const int kind = jk_gemm_kind_by_name(k.gemm_isa);
        if (kind < 0 || done >> kind & 1) continue;
        done |= 1u << kind;
        kinds_run++;
        /* the grid, then the table's sets of this kind */
        static struct jk_gemm_tuning sets[300];
        int ns = jk_gemm_candidates((enum jk_gemm_kind)kind, sets, 256);
        const int nt = jk_tune_table_gemm(0, &(enum jk_gemm_kind){0}, &(struct jk_gemm_tuning){0});
        for (int i = 0; i < nt && ns < 300; i++) {
            enum jk_gemm_kind tk;
            jk_tune_table_gemm(i, &tk, &sets[ns]);
            if ((int)tk == kind) ns++;
        }
        for (int dt = 0; dt < 2; dt++) {
            const enum jk_dtype t = dt ? JK_F16 : JK_F32;
            int fails = 0, bitdiff = 0, guard = 0, cases = 0;
            for (int si = 0; si < NSH; si++) {
                const struct shape *s = &shapes[si];
                struct data d;
                make(&d, s, t, tier);
                const size_t mn = (size_t)s->M * s->N;
                float *y1 = malloc(mn * 4), *yn = malloc(mn * 4);
                for (int c = 0; c < ns; c++) {
                    const struct jk_gemm_tuning *tu = &sets[c];
                    const int again = !reduced || c % 3 == 0, more = reduced ? (c / 3) & 1 : c & 1;
                    for (int th = 1; th <= 3; th += th == 1 && again ? 1 + more : 3) {
                        float *y = th == 1 ? y1 : yn;
                        guard += call(k.gemm[t], s, t, &d, tu, th, y, jk_gemm_ws_tuned(tu, th, s->K)) != 0;
                        cases++;
                        if (th == 1) {
                            size_t j = 0;
                            while (j < mn && fabs((double)y1[j] - d.ref[j]) <= d.bound[j]) j++;
                            if (j < mn) {
                                if (fails++ < 5)
                                    printf("  %s %s %dx%dx%d kc %d mc %d nc %d ahead %d colp %d: y[%zu] = %.9g, "
                                           "ref %.9g\n", k.gemm_isa, jk_dtype_name(t), s->M, s->N, s->K, tu->kc,
                                           tu->mc, tu->nc, tu->ahead, tu->colp, j, y1[j], d.ref[j]);
                            }
                        } else if (memcmp(y1, yn, mn * 4)) {
                            bitdiff++;
                        }
                    }
                }
                /* no blocking passed: the one in force, same bits as passing it */
                call(k.gemm[t], s, t, &d, NULL, 2, yn, k.gemm_ws(2, s->K));
                call(k.gemm[t], s, t, &d, &jk_tune.gemm[kind], 1, y1, jk_gemm_ws_tuned(&jk_tune.gemm[kind], 1, s->K));
                CHECK(!memcmp(y1, yn, mn * 4), "%s %s %dx%dx%d: tune = NULL is the blocking in force",
                      k.gemm_isa, jk_dtype_name(t), s->M, s->N, s->K);
                free(y1), free(yn);
                drop(&d);
            }
            printf("  %s (%s tier) %s: %d sets x %d shapes x 1 thread and 2 or 3: %d failed, "
                   "%d differ across threads\n", k.gemm_isa, jk_precision_name(tier),
                   jk_dtype_name(t), ns, NSH, fails, bitdiff);
            CHECK(!fails, "%s %s: %d sets x %d shapes, 1 thread, against the reference: %d failed",
                  k.gemm_isa, jk_dtype_name(t), ns, NSH, fails);
            CHECK(!bitdiff, "%s %s: the same bits at 1 thread and at 2 or 3 (%d differ)", k.gemm_isa,
                  jk_dtype_name(t), bitdiff);
            CHECK(!guard, "%s %s: the workspace of jk_gemm_ws_tuned suffices (%d overruns in %d calls)",
                  k.gemm_isa, jk_dtype_name(t), guard, cases);
        }
    }
    if (!kinds_run) {
        printf("test_gemm_tune: no tunable matmul kernels on this machine (skipped)\n");
        return 77;
    }
    return check_finish("test_gemm_tune");
}
