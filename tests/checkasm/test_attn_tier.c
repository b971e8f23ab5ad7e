/*
 * test_attn_tier.c — checkasm for the bf16 tier's attention (kernels/kernels.h,
 * jk_init_precision with JK_PREC_BF16: attn / attn_ws, k->attn_isa) against
 * jk_attn_bf16x_ref (kernels/ref/attn_ref.c: q, k, v rounded to bf16, each probability
 * rounded to bf16 before it multiplies v, double sums, the unrounded probabilities'
 * sum as the normaliser). One rung per executable, as test_gemm_tier.c:
 *  - checkasm_attn_tier: the AVX512-BF16 attention, native where the CPU has AVX512-BF16
 *    (else skipped, 77), and through SIMDe (checkasm_attn_tier_avx512emu) on any x86-64;
 *    on aarch64 the FEAT_BF16 attention (natively or under qemu-aarch64, CPU max);
 *  - checkasm_attn_amx (-DCHECKASM_ATTN_AMX): the AMX tile attention, native where the
 *    CPU and the OS give tiles (else 77), and checkasm_attn_amx_model (-DCHECKASM_TILE_MODEL
 *    too) on the C model of the tile instructions (kernels/x86/amx_model.h) on any x86-64.
 * Before any kernel, the bound itself is checked on a scalar model of a tiled kernel (below,
 * model_attn): the model passes it at several key-tile sizes, and fails it when q, k or v
 * is truncated to bf16 instead of rounded, or when P is not rounded.
 *
 * What runs: ragged shapes (nq, nkv in 1 .. 3137, nq != nkv, 1 to 16 heads, head_dim 24,
 * 32, 40, 64, 72, 80, 96, 128, 300, 512), q, k, v out of fused [N, 3D] rows (padded or
 * not) or separate buffers, masks (block-causal frame ids with a CLS row and column at
 * INT32_MAX, causal, random with a query that sees no key), logits up to +-80; o's
 * padding and 16 floats either side must stay NaN; 1, 2 and 3 threads the same bits;
 * NaN in q, k or v at a key every query sees: NaN exactly where the reference has it.
 *
 * The bound, per output o_i[e] (u = 2^-24; natural-log units; all sums over the keys j
 * visible to query i). With s_j = scale (q~ . k~_j) (q~, k~, v~: the bf16 operands),
 * m = max s_j, p_j = exp(s_j - m), l = sum p_j, the reference is sum b(p_j) v~_je / l
 * (b: rounding to bf16). A kernel computes the dot products in f32 from exact bf16
 * products, so its scores are off by at most d_j = (hd + 3) u E_j, E_j = scale sum |q~ k~_j|
 * (3 u E_j where every q~ and k~ is a multiple of 2^-3 below 2: the f32 sums are then
 * exact), and its P_j = exp(s'_j - m') relative to p_j by at most
 *     w_j = d_j + d_max + (|s_j - m| + 4) u + 2 tau + 4 u,   tau = 2 max_j d_j
 * (the exponential's error as test_ops.c bounds it; tau: the f32 maximum may be another
 * key's within the scores' error). A kernel rounds P_j against its running maximum m_t
 * (online softmax) and rescales later; the reference against the global one. So:
 *  - "settled" keys (some visible key at or before j is within tau of the maximum: every
 *    tile from j's on has the final maximum): the kernel's b(P_j) equals b(p_j) unless a
 *    rounding midpoint of bf16 lies within p_j e^(+-w_j); then they are neighbours:
 *        dev_j = (e^w_j - 1) p_j + [midpoint] 2^-7 1.01 p_j
 *  - the others: b(P_j 2^(m - m_t)) 2^(m_t - m) is within 2^-8 of P_j, as b(p_j) of p_j:
 *        dev_j = (2^-7 + 2 (e^w_j - 1)) p_j
 *     |o - o_ref| <= 1.01 sum_j dev_j |v~_je| / l
 *                    + 1.01 V_e (e^max_j w_j - 1 + (2 nkv + 16) u) + 2 u |o_ref| + 1e-30
 * with V_e = max_j |v~_je| (the f32 sums of P.V and of l, one rescale per key tile; the
 * products of bf16 values are exact). Subnormal P or operands flushed by the bf16 dot
 * products cost below 1e-30. A query that sees no key must give exact zeros.
 * On aarch64 (BFDOT, whose additions round to odd: an error below 2u each, Arm ARM BFDotAdd
 * with FPCR.EBF = 0) the u of the f32 sums, in d_j's hd + 3 and in 2 nkv + 16, is 2u.
 * The cases with "exact" operands (few-bit values times (1 - 2^-10): rounding gives the
 * few-bit value, truncation the bf16 value below it) make d_j tiny and midpoints rare, so
 * that a truncated operand (2^-8 relative, always towards zero) or an unrounded P (up to
 * 2^-9 per term) lands far outside the bound: the model's mutations show it.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "runtime/cpu.h"
#include "runtime/dtype.h"
#include "tests/checkasm/checkasm.h"
#include "tests/checkasm/tier_flags.h"
#include "tests/checkasm/ops_check.h"

#undef U
#define U 0x1p-24
/* u of the kernel's f32 sums in the bound (see the top): set per rung in main */
static double sum_u = U;

enum { M_NONE, M_FRAMES, M_CAUSAL, M_RANDOM };
static const char *const mname[] = {"full", "block-causal+cls", "causal", "random+empty-row"};

struct tcase {
    int nq, nkv, nh, hd, mask;
    int fused;   /* 1: one [N, 3D + 5] buffer (nq == nkv); 2: the same without padding */
    float logit; /* about the largest |scale q.k| */
    int exact;   /* few-bit operands times (1 - 2^-10) (see the top) */
};

struct tdata {
    struct tcase c;
    float *buf, *qb, *q, *k, *v;
    size_t ldq, ldk, ldv, ldo;
    int32_t *qpos, *kpos;
    float scale;
};

static float bfr(float x) { return bf16_to_f32(f32_to_bf16(x)); }

/* A random operand: normal, or (exact) a multiple of 1/8 below 1.5 in magnitude, made
 * slightly smaller so that only rounding (not truncation) gives it back. */
static float operand(int exact) {
    if (!exact) return ca_normal();
    return (float)ca_int(-12, 12) * 0.125f * (1.0f - 0x1p-10f);
}

static void tmake(struct tdata *t, const struct tcase *c) {
    memset(t, 0, sizeof *t);
    t->c = *c;
    const int D = c->nh * c->hd;
    if (c->fused) {
        const size_t ld = 3 * (size_t)D + (c->fused == 2 ? 0 : 5);
        t->buf = falloc((size_t)c->nkv * ld);
        for (size_t i = 0; i < (size_t)c->nkv * ld; i++) t->buf[i] = operand(c->exact);
        t->q = t->buf, t->k = t->buf + D, t->v = t->buf + 2 * D;
        t->ldq = t->ldk = t->ldv = ld;
    } else {
        t->ldq = (size_t)D + 3, t->ldk = t->ldv = 2 * (size_t)D + 1;
        t->qb = falloc((size_t)c->nq * t->ldq);
        t->buf = falloc((size_t)c->nkv * t->ldk);
        for (size_t i = 0; i < (size_t)c->nq * t->ldq; i++) t->qb[i] = operand(c->exact);
        for (size_t i = 0; i < (size_t)c->nkv * t->ldk; i++) t->buf[i] = operand(c->exact);
        t->q = t->qb, t->k = t->buf, t->v = t->buf + D;
    }
    t->ldo = (size_t)D + 7;
    t->scale = c->logit / (3.5f * sqrtf((float)c->hd));
    if (c->exact && c->nq == 1 && !c->fused) {
        /* one query: its highest-scoring key (head 0) made key 0, so that every key is
         * "settled" and the bound is tight everywhere */
        int jm = 0;
        double best = -INFINITY;
        for (int j = 0; j < c->nkv; j++) {
            double x = 0.0;
            for (int d = 0; d < c->hd; d++)
                x += (double)bfr(t->q[d]) * bfr(t->k[(size_t)j * t->ldk + d]);
            if (x > best) best = x, jm = j;
        }
        for (size_t e = 0; e < t->ldk; e++) {
            const float x = t->buf[e];
            t->buf[e] = t->buf[(size_t)jm * t->ldk + e], t->buf[(size_t)jm * t->ldk + e] = x;
        }
    }
    if (c->mask == M_NONE) return;
    t->qpos = (int32_t *)xmalloc((size_t)c->nq * sizeof(int32_t));
    t->kpos = (int32_t *)xmalloc((size_t)c->nkv * sizeof(int32_t));
    const int fr = c->nkv > 40 ? 16 : 3;
    for (int j = 0; j < c->nkv; j++)
        t->kpos[j] = c->mask == M_FRAMES   ? (j == 0 ? INT32_MAX : (j - 1) / fr)
                     : c->mask == M_CAUSAL ? j
                                           : ca_int(0, 9);
    for (int i = 0; i < c->nq; i++)
        t->qpos[i] = c->mask == M_RANDOM ? ca_int(0, 9)
                     : c->nq == c->nkv   ? t->kpos[i]
                                         : t->kpos[ca_int(0, c->nkv - 1)];
    if (c->mask == M_RANDOM) t->qpos[c->nq / 2] = -1; /* sees no key: zeros */
}

static void tfree(struct tdata *t) { free(t->buf), free(t->qb), free(t->qpos), free(t->kpos); }

static struct jk_attn_args targs(const struct tdata *t, float *o, int nthreads, void *ws) {
    struct jk_attn_args a = {.o = o,
                             .ldo = t->ldo,
                             .q = t->q,
                             .ldq = t->ldq,
                             .k = t->k,
                             .ldk = t->ldk,
                             .v = t->v,
                             .ldv = t->ldv,
                             .nq = t->c.nq,
                             .nkv = t->c.nkv,
                             .n_head = t->c.nh,
                             .head_dim = t->c.hd,
                             .scale = t->scale,
                             .q_pos = t->qpos,
                             .k_pos = t->kpos,
                             .nthreads = nthreads,
                             .ws = ws};
    return a;
}

static int vis(const struct tdata *t, int i, int j) { return !t->qpos || t->qpos[i] >= t->kpos[j]; }

/* ---- the bound (see the top), per output, from the bf16 operands ---- */
static double *bound(const struct tdata *t, const float *ref) {
    const int hd = t->c.hd, D = t->c.nh * hd, nkv = t->c.nkv;
    double *tol = dalloc((size_t)t->c.nq * D), *s = dalloc((size_t)nkv), *dj = dalloc((size_t)nkv);
    double *dev = dalloc((size_t)nkv);
    float *qr = falloc((size_t)hd);
    for (int h = 0; h < t->c.nh; h++)
        for (int i = 0; i < t->c.nq; i++) {
            for (int d = 0; d < hd; d++) qr[d] = bfr(t->q[(size_t)i * t->ldq + (size_t)h * hd + d]);
            double m = -INFINITY, dmx = 0.0;
            for (int j = 0; j < nkv; j++) {
                if (!vis(t, i, j)) continue;
                const float *kr = t->k + (size_t)j * t->ldk + (size_t)h * hd;
                double e = 0.0, x = 0.0;
                int few = 1;
                for (int d = 0; d < hd; d++) {
                    const double kd = bfr(kr[d]), pr = (double)qr[d] * kd;
                    e += fabs(pr), x += pr;
                    few &= kd * 8 == floor(kd * 8) && qr[d] * 8 == floorf(qr[d] * 8) &&
                           fabs(kd) < 2 && fabsf(qr[d]) < 2;
                }
                s[j] = t->scale * x;
                dj[j] = (few ? 3 * U : (hd + 3) * sum_u) * t->scale * e;
                m = dmax(m, s[j]), dmx = dmax(dmx, dj[j]);
            }
            const double tau = 2 * dmx;
            double l = 0.0, wmax = 0.0;
            int settled = 0;
            for (int j = 0; j < nkv; j++) {
                if (!vis(t, i, j)) continue;
                const double p = exp(s[j] - m);
                const double w = dj[j] + dmx + (fabs(s[j] - m) + 4) * U + 2 * tau + 4 * U;
                settled |= s[j] >= m - tau;
                const double ew = expm1(w); /* P within p e^(+-w): |P - p| <= ew p */
                if (settled) {
                    const int mid =
                        f32_to_bf16((float)(p * exp(-w))) != f32_to_bf16((float)(p * exp(w)));
                    dev[j] = ew * p + (mid ? 0x1p-7 * 1.01 * p : 0.0);
                } else {
                    dev[j] = (0x1p-7 + 2 * ew) * p;
                }
                l += p, wmax = dmax(wmax, w);
            }
            for (int e = 0; e < hd; e++) {
                double sum = 0.0, V = 0.0;
                for (int j = 0; j < nkv; j++) {
                    if (!vis(t, i, j)) continue;
                    const double v =
                        fabs((double)bfr(t->v[(size_t)j * t->ldv + (size_t)h * hd + e]));
                    sum += dev[j] * v, V = dmax(V, v);
                }
                const double r = fabs((double)ref[(size_t)i * t->ldo + (size_t)h * hd + e]);
                const double f32 = expm1(wmax) + (2.0 * nkv + 16) * sum_u;
                tol[(size_t)i * D + (size_t)h * hd + e] =
                    l > 0 ? 1.01 * (sum / l + V * f32) + 2 * U * r + 1e-30 : 0.0;
            }
        }
    free(s), free(dj), free(dev), free(qr);
    return tol;
}

static double worst_seen; /* the largest error / bound over every kernel output that passed */

/* The kernel's output against the reference within tol; a NaN of the reference must be a
 * NaN of the kernel (and nothing else NaN). Returns the number of outputs out of bound. */
static int compare(const char *what, const struct tdata *t, const float *o, const float *ref,
                   const double *tol, int quiet) {
    const int D = t->c.nh * t->c.hd;
    int bad = 0;
    size_t wi = 0;
    double worst = -1;
    for (int i = 0; i < t->c.nq; i++)
        for (int e = 0; e < D; e++) {
            const size_t x = (size_t)i * t->ldo + e, y = (size_t)i * D + e;
            const double d = fabs((double)o[x] - (double)ref[x]);
            const int ok = isnan(ref[x]) ? isnan(o[x]) : d <= tol[y];
            bad += !ok;
            const double r =
                isnan(ref[x]) ? (ok ? 0 : INFINITY) : d / (tol[y] > 0 ? tol[y] : 1e-300);
            if (!(r <= worst)) worst = r, wi = x;
            if (ok && !quiet && !(r <= worst_seen)) worst_seen = r;
        }
    if (bad && !quiet)
        printf("FAIL %s: %d of %d outside the bound; worst [%zu][%zu] got %.9g ref %.9g (%.3g x "
               "the bound)\n",
               what, bad, t->c.nq * D, wi / t->ldo, wi % t->ldo, (double)o[wi], (double)ref[wi],
               worst);
    return bad;
}

/* ---- a scalar model of a tiled kernel, and its mutations ----
 * f32 throughout as the kernels compute: scores from exact bf16 products summed in f32,
 * c = scale log2 e, an online softmax over key tiles of bk keys (the running maximum per
 * tile, alpha = 2^(m - m'), P = 2^(s - m')), P rounded to bf16 before P.V, l the sum of
 * the unrounded P. */
enum { MUT_NONE, MUT_TRUNC_Q, MUT_TRUNC_K, MUT_TRUNC_V, MUT_P_UNROUNDED, NMUT };
static const char *const mut_name[] = {"none", "q truncated", "k truncated", "v truncated",
                                       "P not rounded"};

static float opr(float x, int trunc) {
    if (!trunc) return bfr(x);
    uint32_t u;
    memcpy(&u, &x, 4);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

static void model_attn(const struct tdata *t, float *o, int bk, int mut) {
    const int hd = t->c.hd, nkv = t->c.nkv;
    const float c = t->scale * 1.44269504088896340736f;
    float *qr = falloc((size_t)hd), *acc = falloc((size_t)hd), *sc = falloc((size_t)bk);
    for (int h = 0; h < t->c.nh; h++)
        for (int i = 0; i < t->c.nq; i++) {
            for (int d = 0; d < hd; d++)
                qr[d] = opr(t->q[(size_t)i * t->ldq + (size_t)h * hd + d], mut == MUT_TRUNC_Q);
            for (int d = 0; d < hd; d++) acc[d] = 0.0f;
            float m = -INFINITY, l = 0.0f;
            for (int kt = 0; kt < nkv; kt += bk) {
                const int nk = nkv - kt < bk ? nkv - kt : bk;
                float tmax = -INFINITY;
                for (int j = 0; j < nk; j++) {
                    const float *kr = t->k + (size_t)(kt + j) * t->ldk + (size_t)h * hd;
                    float sd = 0.0f;
                    for (int d = 0; d < hd; d++)
                        sd = fmaf(qr[d], opr(kr[d], mut == MUT_TRUNC_K), sd);
                    sc[j] = vis(t, i, kt + j) ? sd * c : -INFINITY;
                    tmax = sc[j] > tmax || sc[j] != sc[j] ? sc[j] : tmax;
                }
                float mu = tmax != tmax ? tmax : m > tmax ? m : tmax; /* a NaN score: NaN row */
                mu = mu > -FLT_MAX || mu != mu ? mu : -FLT_MAX;
                const float al = exp2f(m - mu);
                l *= al;
                for (int d = 0; d < hd; d++) acc[d] *= al;
                for (int j = 0; j < nk; j++) {
                    const float p = exp2f(sc[j] - mu), pb = mut == MUT_P_UNROUNDED ? p : bfr(p);
                    l += p;
                    const float *vr = t->v + (size_t)(kt + j) * t->ldv + (size_t)h * hd;
                    for (int d = 0; d < hd; d++)
                        acc[d] = fmaf(pb, opr(vr[d], mut == MUT_TRUNC_V), acc[d]);
                }
                m = mu;
            }
            float *orow = o + (size_t)i * t->ldo + (size_t)h * hd;
            for (int d = 0; d < hd; d++) orow[d] = l > 0.0f ? acc[d] / l : l;
        }
    free(qr), free(acc), free(sc);
}

static const struct tcase cases[] = {
    /* nq  nkv heads hd  mask      fused logit exact */
    {1, 1, 1, 64, M_NONE, 1, 3, 0},
    {2, 2, 2, 32, M_NONE, 1, 3, 0},
    {3, 3, 16, 64, M_CAUSAL, 1, 3, 0}, /* LeWM predictor: 3 frames, causal */
    {17, 17, 3, 64, M_FRAMES, 1, 3, 0},
    {17, 17, 2, 24, M_RANDOM, 1, 80, 0},
    {45, 2, 3, 40, M_NONE, 0, 3, 0},   /* more queries than keys */
    {1, 577, 2, 80, M_NONE, 0, 80, 0}, /* one query (the attentive pooler) */
    {1, 3137, 2, 64, M_FRAMES, 0, 3, 0},
    {33, 100, 2, 96, M_CAUSAL, 0, 3, 0},
    {200, 200, 1, 72, M_FRAMES, 1, 3, 0},
    {130, 257, 1, 128, M_RANDOM, 0, 80, 0},
    {20, 45, 1, 300, M_NONE, 0, 3, 0},
    {5, 70, 1, 512, M_CAUSAL, 0, 3, 0},
    {257, 257, 2, 64, M_FRAMES, 2, 3, 0}, /* fused qkv rows without padding */
    {577, 577, 1, 64, M_NONE, 1, 8, 0},
    {100, 1600, 1, 32, M_NONE, 0, 3, 0},
    {16, 16, 1, 32, M_NONE, 0, 3, 0},
    {1, 1, 2, 24, M_NONE, 0, 3, 0},
    /* exact operands: rounding errors must show */
    {17, 17, 2, 64, M_NONE, 1, 3, 1},
    {33, 40, 1, 24, M_CAUSAL, 0, 3, 1},
    {48, 130, 2, 80, M_NONE, 0, 6, 1},
    {1, 200, 1, 40, M_NONE, 0, 3, 1},
};
#define NCASES ((int)(sizeof cases / sizeof *cases))

/* The bound on the model: it passes at several tile sizes, and each mutation fails on
 * the exact cases (ref and tol: per case, from the reference). */
static void check_model(void) {
    static const int bks[] = {16, 64, 1000};
    int caught[NMUT] = {0};
    for (int ci = 0; ci < NCASES; ci++) {
        const struct tcase *c = &cases[ci];
        if (c->nq * (double)c->nkv * c->hd * c->nh > 2e7) continue;
        struct tdata t;
        tmake(&t, c);
        const size_t no = (size_t)c->nq * t.ldo;
        float *ref = ca_alloc_guarded(no), *o = ca_alloc_guarded(no);
        struct jk_attn_args a = targs(&t, ref, 1, NULL);
        jk_attn_bf16x_ref(&a);
        double *tol = bound(&t, ref);
        char what[160];
        for (size_t b = 0; b < sizeof bks / sizeof *bks; b++) {
            model_attn(&t, o, bks[b], MUT_NONE);
            snprintf(what, sizeof what, "model bk %d nq %d nkv %d hd %d %s", bks[b], c->nq, c->nkv,
                     c->hd, mname[c->mask]);
            if (compare(what, &t, o, ref, tol, 0)) check_failed++;
        }
        if (c->exact)
            for (int mu = 1; mu < NMUT; mu++) {
                model_attn(&t, o, 64, mu);
                caught[mu] += compare("", &t, o, ref, tol, 1) > 0;
            }
        free(tol);
        ca_free_guarded(ref), ca_free_guarded(o);
        tfree(&t);
    }
    int nexact = 0;
    for (int ci = 0; ci < NCASES; ci++) nexact += cases[ci].exact;
    for (int mu = 1; mu < NMUT; mu++) {
        CHECK(caught[mu] == nexact,
              "the bound misses the model's mutation '%s' (%d of %d exact cases fail)",
              mut_name[mu], caught[mu], nexact);
        printf("  model, %s: out of bound in %d of %d exact cases\n", mut_name[mu], caught[mu],
               nexact);
    }
}

/* One case on the tier's kernel: against the reference, 1 / 2 / 3 threads the same bits,
 * nothing written outside o, the workspace misaligned. */
static int check_case(const struct jk_kernels *k, const struct tcase *c) {
    struct tdata t;
    tmake(&t, c);
    const int D = c->nh * c->hd;
    const size_t no = (size_t)c->nq * t.ldo;
    float *ref = ca_alloc_guarded(no), *o = ca_alloc_guarded(no), *o2 = ca_alloc_guarded(no);
    struct jk_attn_args a = targs(&t, ref, 1, NULL);
    jk_attn_bf16x_ref(&a);
    double *tol = bound(&t, ref);
    char *ws = (char *)xmalloc(k->attn_ws(3, c->nh, c->hd, c->nkv) + 8);
    a = targs(&t, o, 1, ws + 4);
    k->attn(&a);
    char what[200];
    snprintf(what, sizeof what, "%s attn nq %d nkv %d heads %d hd %d %s%s logit %g%s", k->attn_isa,
             c->nq, c->nkv, c->nh, c->hd, mname[c->mask], c->fused ? " fused-qkv" : "",
             (double)c->logit, c->exact ? " exact" : "");
    int bad = compare(what, &t, o, ref, tol, 0);
    if (bad) check_failed++;
    CHECK(gaps_ok(o, c->nq, t.ldo, (size_t)D), "%s: wrote outside o", what);
    for (int nt = 2; nt <= 3; nt++) {
        a = targs(&t, o2, nt, ws + 4);
        k->attn(&a);
        CHECK(same_bits(o - CA_GUARD, o2 - CA_GUARD, no + 2 * CA_GUARD),
              "%s: %d threads differ from 1", what, nt);
    }
    free(tol), free(ws);
    ca_free_guarded(ref), ca_free_guarded(o), ca_free_guarded(o2);
    tfree(&t);
    return bad;
}

/* NaN in q (one query), k or v (the key of lowest position, which every query that sees a
 * key sees): the kernel's NaN outputs are exactly the reference's. */
static void check_nan(const struct jk_kernels *k) {
    static const struct tcase nc[] = {
        {17, 17, 2, 64, M_NONE, 1, 3, 0},   {3, 3, 2, 40, M_CAUSAL, 1, 3, 0},
        {1, 577, 2, 32, M_NONE, 0, 3, 0},   {100, 130, 1, 72, M_FRAMES, 0, 3, 0},
        {20, 45, 2, 24, M_RANDOM, 0, 3, 0},
    };
    int fails = 0, n = 0;
    for (size_t ci = 0; ci < sizeof nc / sizeof *nc; ci++)
        for (int kind = 0; kind < 3; kind++, n++) {
            struct tdata t;
            tmake(&t, &nc[ci]);
            const int hd = t.c.hd, h = t.c.nh - 1, dd = kind == 1 ? 0 : hd - 1;
            int j0 = t.c.nkv / 2;
            if (t.kpos)
                for (int j = 0; j < t.c.nkv; j++)
                    if (t.kpos[j] <= t.kpos[j0]) j0 = j;
            float *x = kind == 0   ? &t.q[(size_t)(t.c.nq / 3) * t.ldq]
                       : kind == 1 ? &t.k[(size_t)j0 * t.ldk]
                                   : &t.v[(size_t)j0 * t.ldv];
            x[(size_t)h * hd + dd] = NAN;
            const size_t no = (size_t)t.c.nq * t.ldo;
            float *ref = ca_alloc_guarded(no), *o = ca_alloc_guarded(no);
            struct jk_attn_args a = targs(&t, ref, 1, NULL);
            jk_attn_bf16x_ref(&a);
            char *ws = (char *)xmalloc(k->attn_ws(1, t.c.nh, hd, t.c.nkv) + 8);
            a = targs(&t, o, 1, ws + 4);
            k->attn(&a);
            int bad = 0;
            for (int i = 0; i < t.c.nq; i++)
                for (int e = 0; e < t.c.nh * hd; e++)
                    bad += !isnan(ref[(size_t)i * t.ldo + e]) != !isnan(o[(size_t)i * t.ldo + e]);
            CHECK(!bad,
                  "%s attn, NaN in %s (nq %d nkv %d hd %d %s): %d outputs NaN where the "
                  "reference's are not "
                  "or the reverse",
                  k->attn_isa,
                  kind == 0   ? "q"
                  : kind == 1 ? "k"
                              : "v",
                  t.c.nq, t.c.nkv, hd, mname[t.c.mask], bad);
            fails += bad != 0;
            free(ws);
            ca_free_guarded(ref), ca_free_guarded(o);
            tfree(&t);
        }
    printf("  %s attn, NaN inputs: %d cases, %d failed\n", k->attn_isa, n, fails);
}

/* The rung this executable tests (see the top), and the CPU flags it is tested at. */
#if defined(CHECKASM_ATTN_AMX)
#define RUNG "amx_bf16"
#define TEST_NAME "checkasm_attn_amx"
#elif defined(__aarch64__)
#define RUNG "neon_bf16"
#define TEST_NAME "checkasm_attn_tier"
#else
#define RUNG "avx512_bf16"
#define TEST_NAME "checkasm_attn_tier"
#endif
static unsigned test_flags(void) {
#ifdef CHECKASM_ATTN_AMX
    return ca_tier_flags(1);
#else
    return ca_tier_flags(0);
#endif
}

int main(void) {
    ca_seed(TEST_NAME);
    check_model();
    const unsigned flags = test_flags();
    struct jk_kernels k, ke;
    jk_init(&ke, flags);
    jk_init_precision(&k, flags, JK_PREC_BF16);
    /* the high tier keeps the exact tier's attention */
    struct jk_kernels kh;
    jk_init_precision(&kh, flags, JK_PREC_HIGH);
    CHECK(kh.attn == ke.attn && kh.attn_ws == ke.attn_ws && !strcmp(kh.attn_isa, ke.isa),
          "the high tier's attention is not the exact tier's");
    if (!k.attn_isa || strcmp(k.attn_isa, RUNG) != 0) {
        printf("%s: no %s attention on this CPU (the bf16 tier's attention is '%s'): kernel checks "
               "skipped\n",
               TEST_NAME, RUNG, k.attn_isa ? k.attn_isa : "?");
        return check_failed ? ca_finish(TEST_NAME) : 77;
    }
    sum_u = strcmp(k.attn_isa, "neon_bf16") ? U : 2 * U;
    int fails = 0;
    for (int ci = 0; ci < NCASES; ci++) fails += check_case(&k, &cases[ci]) != 0;
    printf("  %s attn: %d cases, %d failed (largest error: %.3g of its bound)\n", k.attn_isa,
           NCASES, fails, worst_seen);
    check_nan(&k);
    return ca_finish(TEST_NAME);
}
