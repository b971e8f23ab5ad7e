/*
 * test_attn_tune.c — the attention at every key tile and K/V copy threshold `jepa tune`
 * may choose (jk_attn_candidates), for each attention build this machine runs (avx2,
 * avx512; neon on aarch64), passed per call (jk_attn_args.tune):
 *  - against softmax(scale Q K^T) V computed here in double, on ragged shapes (query and
 *    key counts no multiple of a tile; key counts on both sides of every copy threshold,
 *    so that each set runs both the in-place and the copied K/V path; head_dim 32, 64 and
 *    a generic 80; the row path's few queries; a block-causal mask), with the bound of
 *    tests/checkasm/test_ops.c: vmax (2 (hd + 3) u emax + 2 (smax - smin + 4) u +
 *    (2 nkv + 8) u), emax the largest scaled sum of |q k| over the visible keys, smin /
 *    smax the range of the scaled logits, vmax the largest |v| of the column;
 *  - with 1, 2 and 3 threads: the same bits at every thread count for one set;
 *  - the workspace sized by jk_attn_ws_tuned for that set, with guard bytes after it that
 *    must stay untouched.
 * Plus: with no set passed, the kernels compute the bits of the set in force, and a set
 * outside the limits is ignored (the set in force runs).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/tuning.h"
#include "runtime/cpu.h"
#include "tests/check.h"
#include "tests/tune/tune_check.h"

struct shape { int nq, nkv, heads, hd, frames; };
static const struct shape shapes[] = {
    {67, 600, 3, 64, 0},     /* copied from 512 on; 600 = 4 x 128 + 88 keys at the widest tile */
    {100, 1100, 2, 32, 0},   /* copied from 512 and 1024 on */
    {3, 530, 2, 64, 0},      /* the row path (few queries) */
    {37, 2100, 1, 80, 0},    /* the generic head dim; copied from 2048 on */
    {61, 1561, 2, 64, 4},    /* block-causal (a CLS row, then 4 frames of 390); copied from 1536 on */
};
enum { NSH = sizeof shapes / sizeof *shapes };

struct data {
    float *q, *kv;          /* q [nq, D]; k, v interleaved [nkv, 2 D] */
    int32_t *qpos, *kpos;   /* NULL: no mask */
    double *ref, *tol;      /* [nq, D] */
};

static int visible(const struct data *d, int i, int j) { return !d->qpos || d->qpos[i] >= d->kpos[j]; }

static void make(struct data *d, const struct shape *s) {
    const int D = s->heads * s->hd;
    d->q = malloc(sizeof(float) * (size_t)s->nq * D);
    d->kv = malloc(sizeof(float) * (size_t)s->nkv * 2 * D);
    d->ref = malloc(sizeof(double) * (size_t)s->nq * D), d->tol = malloc(sizeof(double) * (size_t)s->nq * D);
    for (size_t i = 0; i < (size_t)s->nq * D; i++) d->q[i] = 2 * urand();
    for (size_t i = 0; i < (size_t)s->nkv * 2 * D; i++) d->kv[i] = 2 * urand();
    d->qpos = d->kpos = NULL;
    if (s->frames) {   /* position = frame; the CLS row (0) sees and is seen by all */
        const int per = (s->nkv - 1) / s->frames;
        d->qpos = malloc(sizeof(int32_t) * (size_t)s->nq), d->kpos = malloc(sizeof(int32_t) * (size_t)s->nkv);
        d->kpos[0] = INT32_MIN;
        for (int j = 1; j < s->nkv; j++) d->kpos[j] = (j - 1) / per;
        d->qpos[0] = INT32_MAX;
        for (int i = 1; i < s->nq; i++) d->qpos[i] = (int)((long)i * s->frames / s->nq);
    }
    const double scale = (double)(1.0f / sqrtf((float)s->hd));
    double *p = malloc(sizeof(double) * (size_t)s->nkv);
    for (int h = 0; h < s->heads; h++)
        for (int i = 0; i < s->nq; i++) {
            const float *qi = d->q + (size_t)i * D + (size_t)h * s->hd;
            double mx = -INFINITY, emax = 0, smin = INFINITY, smax = -INFINITY, sum = 0;
            for (int j = 0; j < s->nkv; j++) {
                if (!visible(d, i, j)) continue;
                const float *kj = d->kv + (size_t)j * 2 * D + (size_t)h * s->hd;
                double dot = 0, e = 0;
                for (int c = 0; c < s->hd; c++) dot += (double)qi[c] * kj[c], e += fabs((double)qi[c] * kj[c]);
                p[j] = scale * dot;
                mx = fmax(mx, p[j]), emax = fmax(emax, scale * e);
                smin = fmin(smin, p[j]), smax = fmax(smax, p[j]);
            }
            for (int j = 0; j < s->nkv; j++)
                if (visible(d, i, j)) p[j] = exp(p[j] - mx), sum += p[j];
            for (int c = 0; c < s->hd; c++) {
                double o = 0, vmax = 0;
                for (int j = 0; j < s->nkv; j++) {
                    if (!visible(d, i, j)) continue;
                    const double v = d->kv[(size_t)j * 2 * D + D + (size_t)h * s->hd + c];
                    o += p[j] * v, vmax = fmax(vmax, fabs(v));
                }
                const size_t x = (size_t)i * D + (size_t)h * s->hd + c;
                d->ref[x] = sum > 0 ? o / sum : 0;
                d->tol[x] = vmax * (2.0 * (s->hd + 3) * 0x1p-24 * emax + 2.0 * (smax - smin + 4) * 0x1p-24 +
                                    (2.0 * s->nkv + 8) * 0x1p-24) + 1e-30;
            }
        }
    free(p);
}

static void drop(struct data *d) {
    free(d->q), free(d->kv), free(d->qpos), free(d->kpos), free(d->ref), free(d->tol);
}

/* One call into o at set tu (NULL: in force), nt threads, a workspace of ws_bytes; 0, or
 * -1 where the guard after the workspace changed. */
static int call(jk_attn_fn *fn, const struct shape *s, const struct data *d, const struct jk_attn_tuning *tu,
                int nt, float *o, size_t ws_bytes) {
    const size_t D = (size_t)s->heads * s->hd;
    uint8_t *ws = tune_ws_alloc(ws_bytes);
    const struct jk_attn_args a = {.o = o, .ldo = D, .q = d->q, .ldq = D, .k = d->kv, .ldk = 2 * D,
                                   .v = d->kv + D, .ldv = 2 * D, .nq = s->nq, .nkv = s->nkv,
                                   .n_head = s->heads, .head_dim = s->hd,
                                   .scale = 1.0f / sqrtf((float)s->hd), .q_pos = d->qpos,
                                   .k_pos = d->kpos, .nthreads = nt, .ws = ws, .tune = tu};
    fn(&a);
    return tune_ws_free(ws, ws_bytes);
}

int main(void) {
    const unsigned have = jr_cpu_detect();
    struct jk_attn_tuning sets[64];
    const int ns = jk_attn_candidates(sets, 64);
    CHECK(ns > 1 && ns <= 64, "%d candidates", ns);
    int kinds_run = 0;
    for (int l = 0; l < TUNE_NLEVELS; l++) {
        const char *lv = tune_levels[l];
        const long f = jr_cpu_cap(have, lv);
        if (f <= 0) continue;
        struct jk_kernels k;
        jk_init(&k, (unsigned)f);
        const int kind = jk_attn_kind_of(k.attn);
        if (kind < 0 || strcmp(jk_attn_kind_names[kind], lv)) continue;
        kinds_run++;
        int fails = 0, bitdiff = 0, guard = 0, cases = 0;
        for (int si = 0; si < NSH; si++) {
            const struct shape *s = &shapes[si];
            struct data d;
            make(&d, s);
            const size_t no = (size_t)s->nq * s->heads * s->hd;
            float *o1 = malloc(no * 4), *on = malloc(no * 4);
            for (int c = 0; c < ns; c++) {
                const struct jk_attn_tuning *tu = &sets[c];
                for (int th = 1; th <= 3; th++) {
                    float *o = th == 1 ? o1 : on;
                    const size_t wsb = jk_attn_ws_tuned(k.attn_ws(th, s->heads, s->hd, s->nkv), s->hd, s->nkv);
                    guard += call(k.attn, s, &d, tu, th, o, wsb) != 0;
                    cases++;
                    if (th == 1) {
                        size_t j = 0;
                        while (j < no && fabs((double)o1[j] - d.ref[j]) <= d.tol[j]) j++;
                        if (j < no && fails++ < 5)
                            printf("  %s nq %d nkv %d hd %d bk %d pack %d: o[%zu] = %.9g, ref %.9g\n",
                                   lv, s->nq, s->nkv, s->hd, tu->bk, tu->pack, j, o1[j], d.ref[j]);
                    } else if (memcmp(o1, on, no * 4)) {
                        bitdiff++;
                    }
                }
            }
            /* no set passed: the one in force, the same bits as passing it; a set outside
             * the limits: ignored, the one in force again */
            const struct jk_attn_tuning bad = {JK_TUNE_BK_MAX + 1, 1536};
            const size_t wsb = jk_attn_ws_tuned(k.attn_ws(2, s->heads, s->hd, s->nkv), s->hd, s->nkv);
            call(k.attn, s, &d, NULL, 2, on, k.attn_ws(2, s->heads, s->hd, s->nkv));
            call(k.attn, s, &d, &jk_tune.attn[kind], 1, o1, wsb);
            CHECK(!memcmp(o1, on, no * 4), "%s nq %d nkv %d: tune = NULL is the set in force", lv, s->nq,
                  s->nkv);
            call(k.attn, s, &d, &bad, 3, on, wsb);
            CHECK(!memcmp(o1, on, no * 4), "%s nq %d nkv %d: a set outside the limits is not used", lv,
                  s->nq, s->nkv);
            free(o1), free(on);
            drop(&d);
        }
        printf("  attn %s: %d sets x %d shapes x 1, 2, 3 threads: %d failed, %d differ across threads\n", lv,
               ns, NSH, fails, bitdiff);
        CHECK(!fails, "%s: %d sets x %d shapes against the double reference: %d failed", lv, ns, NSH, fails);
        CHECK(!bitdiff, "%s: the same bits at 1, 2 and 3 threads (%d differ)", lv, bitdiff);
        CHECK(!guard, "%s: the workspace of jk_attn_ws_tuned suffices (%d overruns in %d calls)", lv,
              guard, cases);
    }
    if (!kinds_run) {
        printf("test_attn_tune: no tunable attention kernels on this machine (skipped)\n");
        return 77;
    }
    return check_finish("test_attn_tune");
}
