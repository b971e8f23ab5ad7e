/*
 * test_ops.c — checkasm for every non-matmul slot of struct jk_kernels (attn + attn_ws,
 * rope, layernorm, gelu_tanh, silu, add, madd, patchify, gather, mean_rows) at
 * every ISA level this machine runs (avx2, avx512, neon; with -DCHECKASM_AVX512_EMU the
 * AVX-512 level through SIMDe, see tests/checkasm/meson.build), against the reference slots of
 * jk_init_ref() (kernels/ref/), plus the references and the RoPE tables against
 * independent formulas:
 *
 *  - jk_attn_ref against a naive softmax(Q K^T scale) V in double that materialises the
 *    scores (small shapes, every mask kind);
 *  - attn at each level: ragged shapes (nq, nkv in 1, 2, 3, 17, 45, 100, 577, 3137;
 *    nq = 1 over thousands of keys; nq != nkv; 1 to 16 heads; head_dim 32, 64, 80, 96,
 *    34, 7, 512), q/k/v read out of fused [N, 3D] buffers with padded row strides or
 *    from separate buffers, masks (block-causal frame ids with a CLS row and column at
 *    INT32_MAX, causal = index, random with a fully masked query row), logits up to
 *    +-80 after scaling; the padding between rows and 16 floats either side of o are
 *    NaN and must stay NaN; 1 and 2 threads must give the same bits (ws from the
 *    table's attn_ws, deliberately misaligned);
 *  - the row and element-wise slots on the cases of ops_check.h (shared with
 *    tests/cuda/test_cuda_ops.c): rope on the q and the k part of a fused qkv buffer (v
 *    untouched), odd head dims, identity rows, pass-through dims; layernorm affine /
 *    scale-only / none, in place, strided, constant rows (must give b exactly), large
 *    means; gelu_tanh / silu on ragged lengths with zeros, subnormals, huge values,
 *    and against their exact formulas in double over a sweep of every binade of
 *    [-16, 16] (worst relative error printed; bound 6.0e-8); add with and without layer-scale, strided or one broadcast row; patchify
 *    (bits);
 *  - gather (bits of x[idx], repeats, padded strides) and mean_rows (against a long double
 *    mean, padding NaN, offsets 1 and 1e4, up to 3136 rows) against these definitions: the
 *    reference, and the table of every level (which inherits the reference today);
 *  - jm_rope_tables against the formulas of docs/rope.md
 *    written out independently here (both layouts, fractional positions, pass-through
 *    dims, identity rows) and jm_rope_positions against hand-computed ids (interpolation
 *    15/(g-1), g = 1), natively only (the emulated build does not link models/).
 *
 * Tolerances are derived beside each check (u = 2^-24). `checkasm_ops --bench` times the
 * attention (GFLOP/s, flops = 4 nq nkv head_dim heads) and the row ops at every level.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef JEPA_HAVE_OPENMP
#include <omp.h>
#endif

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "tests/checkasm/checkasm.h"
#include "tests/checkasm/ops_check.h"
#ifndef CHECKASM_AVX512_EMU
#include "models/rope.h"
#endif

/* ======================================================================================
 * attention
 * ====================================================================================== */

enum { MASK_NONE, MASK_FRAMES, MASK_CAUSAL, MASK_RANDOM };
static const char *mask_name[] = {"full", "block-causal+cls", "causal", "random+empty-row"};

struct attn_case {
    int nq, nkv, n_head, hd;
    int mask;
    int fused;        /* q, k, v from one [N, 3D] buffer (needs nq == nkv); 2: no padding */
    float logit;      /* target max |scale q.k|: ~3 (typical) or 80 (adversarial) */
    int fr;           /* MASK_FRAMES: tokens per frame (0: 16, or 3 for short sequences) */
};

struct attn_data {
    struct attn_case c;
    float *qkv, *q, *k, *v;     /* buffers and the three views */
    size_t ldq, ldk, ldv, ldo;
    int32_t *qpos, *kpos;
    float scale;
};

/* Frame ids of a block-causal sequence: token 0 is CLS (INT32_MAX: its row sees every
 * key, its column is hidden from every patch query), then frames of `fr` tokens. */
static void frame_pos(int32_t *pos, int n, int fr) {
    for (int i = 0; i < n; i++) pos[i] = i == 0 ? INT32_MAX : (i - 1) / fr;
}

static void attn_make(struct attn_data *t, const struct attn_case *c) {
    memset(t, 0, sizeof *t);
    t->c = *c;
    const int D = c->n_head * c->hd;
    if (c->fused) {
        /* one [N, 3D] buffer with 5 floats of padding per row: ldq = ldk = ldv = 3D + 5
         * (fused = 2: none, as the model's qkv buffer) */
        size_t ld = 3 * (size_t)D + (c->fused == 2 ? 0 : 5);
        t->qkv = falloc((size_t)c->nkv * ld);
        ca_fill(t->qkv, (size_t)c->nkv * ld, 1.0f);
        t->q = t->qkv, t->k = t->qkv + D, t->v = t->qkv + 2 * D;
        t->ldq = t->ldk = t->ldv = ld;
    } else {
        /* q alone (ld D + 3), k and v interleaved in one [nkv, 2D + 1] buffer */
        t->ldq = (size_t)D + 3;
        t->ldk = t->ldv = 2 * (size_t)D + 1;
        t->q = falloc((size_t)c->nq * t->ldq);
        t->qkv = falloc((size_t)c->nkv * t->ldk);
        ca_fill(t->q, (size_t)c->nq * t->ldq, 1.0f);
        ca_fill(t->qkv, (size_t)c->nkv * t->ldk, 1.0f);
        t->k = t->qkv, t->v = t->qkv + D;
    }
    t->ldo = (size_t)D + 7;
    /* q.k of unit normals over hd dims has std sqrt(hd): scale so that the largest
     * logits reach about c->logit */
    t->scale = c->logit / (3.5f * sqrtf((float)c->hd));
    if (c->mask != MASK_NONE) {
        t->qpos = (int32_t *)xmalloc((size_t)c->nq * sizeof(int32_t));
        t->kpos = (int32_t *)xmalloc((size_t)c->nkv * sizeof(int32_t));
        if (c->mask == MASK_FRAMES) {
            int fr = c->fr ? c->fr : c->nkv > 40 ? 16 : 3;
            frame_pos(t->kpos, c->nkv, fr);
            /* the queries are the same tokens when nq == nkv, else a sample of them */
            for (int i = 0; i < c->nq; i++) t->qpos[i] = c->nq == c->nkv ? t->kpos[i] : t->kpos[ca_int(0, c->nkv - 1)];
        } else if (c->mask == MASK_CAUSAL) {
            for (int j = 0; j < c->nkv; j++) t->kpos[j] = j;
            for (int i = 0; i < c->nq; i++) t->qpos[i] = c->nq == c->nkv ? i : ca_int(0, c->nkv - 1);
        } else {
            for (int j = 0; j < c->nkv; j++) t->kpos[j] = ca_int(0, 9);
            for (int i = 0; i < c->nq; i++) t->qpos[i] = ca_int(0, 9);
            t->qpos[c->nq / 2] = -1;     /* sees no key: must come out as zeros */
        }
    }
}

static void attn_free(struct attn_data *t) {
    free(t->qkv);
    if (!t->c.fused) free(t->q);
    free(t->qpos), free(t->kpos);
}

static struct jk_attn_args attn_args(const struct attn_data *t, float *o, int nthreads, void *ws) {
    struct jk_attn_args a = {.o = o, .ldo = t->ldo, .q = t->q, .ldq = t->ldq, .k = t->k,
                             .ldk = t->ldk, .v = t->v, .ldv = t->ldv, .nq = t->c.nq,
                             .nkv = t->c.nkv, .n_head = t->c.n_head, .head_dim = t->c.hd,
                             .scale = t->scale, .q_pos = t->qpos, .k_pos = t->kpos,
                             .nthreads = nthreads, .ws = ws};
    return a;
}

static int visible(const struct attn_data *t, int i, int j) {
    return !t->qpos || t->qpos[i] >= t->kpos[j];
}

/* The naive definition in double: the score row is materialised, softmax, then P V. */
static void attn_naive(const struct attn_data *t, double *o /* [nq][D] */) {
    const int hd = t->c.hd, D = t->c.n_head * hd;
    double *s = dalloc((size_t)t->c.nkv);
    for (int h = 0; h < t->c.n_head; h++)
        for (int i = 0; i < t->c.nq; i++) {
            double mx = -INFINITY, l = 0.0;
            for (int j = 0; j < t->c.nkv; j++) {
                double d = 0.0;
                for (int e = 0; e < hd; e++)
                    d += (double)t->q[(size_t)i * t->ldq + h * hd + e] * t->k[(size_t)j * t->ldk + h * hd + e];
                s[j] = visible(t, i, j) ? (double)t->scale * d : -INFINITY;
                mx = s[j] > mx ? s[j] : mx;
            }
            for (int j = 0; j < t->c.nkv; j++) {
                s[j] = mx == -INFINITY ? 0.0 : exp(s[j] - mx);
                l += s[j];
            }
            for (int e = 0; e < hd; e++) {
                double acc = 0.0;
                for (int j = 0; j < t->c.nkv; j++) acc += s[j] * t->v[(size_t)j * t->ldv + h * hd + e];
                o[(size_t)i * D + h * hd + e] = l > 0.0 ? acc / l : 0.0;
            }
        }
    free(s);
}

/* The reference slot against the naive formula: both are double inside and round once,
 * so they agree to about one float rounding of the largest |v|. */
static void check_attn_ref(const struct attn_case *c) {
    struct attn_data t;
    attn_make(&t, c);
    const int D = c->n_head * c->hd;
    double *on = dalloc((size_t)c->nq * D);
    float *o = ca_alloc_guarded((size_t)c->nq * t.ldo);
    struct jk_attn_args a = attn_args(&t, o, 1, NULL);
    jk_attn_ref(&a);
    attn_naive(&t, on);
    double vmax = 0.0;
    for (int j = 0; j < c->nkv; j++)
        for (int e = 0; e < D; e++) vmax = dmax(vmax, fabs(t.v[(size_t)j * t.ldv + e]));
    int bad = 0;
    for (int i = 0; i < c->nq; i++)
        for (int e = 0; e < D; e++) {
            double d = fabs(o[(size_t)i * t.ldo + e] - on[(size_t)i * D + e]);
            if (!(d <= 4 * U * vmax)) bad++;
        }
    CHECK(!bad, "jk_attn_ref vs naive double (nq %d nkv %d heads %d hd %d %s): %d outside 4u max|v|",
             c->nq, c->nkv, c->n_head, c->hd, mask_name[c->mask], bad);
    CHECK(gaps_ok(o, c->nq, t.ldo, (size_t)D), "jk_attn_ref wrote outside o");
    free(on);
    ca_free_guarded(o);
    attn_free(&t);
}

/* One case at one level: the level's slot (1 and 2 threads) against the reference.
 *
 * Tolerance, per output element o_i[e]. The kernel computes f32 scores
 * s^_j = s_j + delta_j, |delta_j| <= (hd + 3) u E_ij with E_ij = scale sum_d |q_id k_jd|
 * (a length-hd dot product, plus the rounding of q * scale * log2 e), exponentials with
 * relative error <= (|s_j - m| + 4) u (the rounded argument, the polynomial), and a
 * P.V sum of the nkv visible keys plus one alpha rescale per key tile, each adding a
 * relative error u of the magnitude sum_j w_j |v_je| <= V_e (max |v| over the keys).
 * A relative error eps_j on the weights w_j moves o by at most 2 max_j eps_j V_e, so
 *   |o - o_ref| <= V_e (2 (hd + 3) u max_j E_ij + 2 (R_i + 4) u + (2 nkv + 8) u) + 1e-30
 * with R_i the spread of visible logits of row i (it is the |s_j - m| term). A hidden key
 * that leaks in, a lost rescale or a wrong row costs O(V_e) and shows. */
static int check_attn_case(const struct jk_kernels *kt, const char *level, const struct attn_case *c) {
    struct attn_data t;
    attn_make(&t, c);
    const int D = c->n_head * c->hd, hd = c->hd;
    const size_t no = (size_t)c->nq * t.ldo;
    float *o1 = ca_alloc_guarded(no), *o2 = ca_alloc_guarded(no), *or = ca_alloc_guarded(no);
    size_t wsb = kt->attn_ws(2, c->n_head, hd, c->nkv);
    char *wsbuf = (char *)xmalloc(wsb + 4);
    void *ws = wsbuf + 4;                           /* misaligned on purpose */

    struct jk_attn_args a = attn_args(&t, or, 1, NULL);
    jk_attn_ref(&a);
    a = attn_args(&t, o1, 1, ws);
    kt->attn(&a);
    a = attn_args(&t, o2, 2, ws);
    kt->attn(&a);

    float *got = falloc((size_t)c->nq * D), *ref = falloc((size_t)c->nq * D);
    double *tol = dalloc((size_t)c->nq * D);
    for (int h = 0; h < c->n_head; h++)
        for (int i = 0; i < c->nq; i++) {
            double emax = 0.0, smin = INFINITY, smax = -INFINITY;
            int nvis = 0;
            for (int j = 0; j < c->nkv; j++) {
                if (!visible(&t, i, j)) continue;
                double e = 0.0, s = 0.0;
                for (int d = 0; d < hd; d++) {
                    double p = (double)t.q[(size_t)i * t.ldq + h * hd + d] * t.k[(size_t)j * t.ldk + h * hd + d];
                    e += fabs(p), s += p;
                }
                emax = dmax(emax, t.scale * e);
                smin = -dmax(-smin, -t.scale * s), smax = dmax(smax, t.scale * s);
                nvis++;
            }
            for (int e = 0; e < hd; e++) {
                double vmax = 0.0;
                for (int j = 0; j < c->nkv; j++)
                    if (visible(&t, i, j)) vmax = dmax(vmax, fabs(t.v[(size_t)j * t.ldv + h * hd + e]));
                size_t x = (size_t)i * D + h * hd + e;
                got[x] = o1[(size_t)i * t.ldo + h * hd + e];
                ref[x] = or[(size_t)i * t.ldo + h * hd + e];
                tol[x] = nvis ? vmax * (2.0 * (hd + 3) * U * emax + 2.0 * (smax - smin + 4) * U +
                                        (2.0 * c->nkv + 8) * U) + 1e-30
                              : 0.0;   /* no visible key: exactly 0 */
            }
        }
    char what[200];
    snprintf(what, sizeof what, "%s attn nq %d nkv %d heads %d hd %d %s%s logit %g", level, c->nq,
             c->nkv, c->n_head, hd, mask_name[c->mask], c->fused ? " fused-qkv" : "", (double)c->logit);
    int bad = check_tol(what, got, ref, tol, (size_t)c->nq * D);
    CHECK(gaps_ok(o1, c->nq, t.ldo, (size_t)D) && gaps_ok(o2, c->nq, t.ldo, (size_t)D),
             "%s: wrote outside o (padding or guard bands)", what);
    CHECK(same_bits(o1 - CA_GUARD, o2 - CA_GUARD, no + 2 * CA_GUARD),
             "%s: 1 and 2 threads differ", what);
    free(got), free(ref), free(tol), free(wsbuf);
    ca_free_guarded(o1), ca_free_guarded(o2), ca_free_guarded(or);
    attn_free(&t);
    return bad;
}

static void check_attn(const struct jk_kernels *kt, const char *level) {
    static const struct attn_case cases[] = {
        /* nq nkv heads hd  mask          fused logit */
        {1, 1, 1, 64, MASK_NONE, 1, 3, 0},
        {2, 2, 2, 32, MASK_NONE, 1, 3, 0},
        {3, 3, 16, 64, MASK_CAUSAL, 1, 3, 0},          /* LeWM predictor: 3 frames, causal */
        {17, 17, 3, 64, MASK_NONE, 1, 3, 0},
        {17, 17, 3, 64, MASK_FRAMES, 1, 3, 0},
        {17, 17, 2, 32, MASK_RANDOM, 1, 80, 0},
        {577, 577, 2, 64, MASK_NONE, 1, 3, 0},
        {577, 577, 1, 64, MASK_FRAMES, 1, 80, 0},
        /* frame edges falling on tile edges, in the middle of tiles, every token */
        {577, 577, 2, 64, MASK_FRAMES, 1, 3, 16},
        {300, 300, 1, 64, MASK_FRAMES, 1, 3, 47},
        {257, 257, 1, 32, MASK_FRAMES, 1, 3, 64},
        {200, 200, 1, 64, MASK_FRAMES, 1, 3, 1},
        {577, 577, 1, 32, MASK_CAUSAL, 1, 3, 0},
        {100, 100, 2, 64, MASK_NONE, 1, 80, 0},        /* logits +-80 after scaling */
        {1, 3137, 4, 64, MASK_NONE, 0, 3, 0},          /* attentive pooler: 1 query, many keys */
        {1, 3137, 2, 64, MASK_FRAMES, 0, 80, 0},
        {1, 577, 2, 32, MASK_NONE, 0, 80, 0},
        {4, 1000, 2, 96, MASK_RANDOM, 0, 3, 0},
        {2, 45, 3, 48, MASK_CAUSAL, 0, 3, 0},
        {45, 2, 3, 64, MASK_NONE, 0, 3, 0},            /* more queries than keys */
        {33, 100, 2, 80, MASK_FRAMES, 0, 3, 0},
        {20, 45, 2, 34, MASK_RANDOM, 0, 3, 0},         /* head_dim not a multiple of any vector */
        {49, 130, 2, 7, MASK_NONE, 0, 3, 0},           /* odd head_dim */
        {5, 70, 1, 512, MASK_CAUSAL, 0, 3, 0},         /* the largest head_dim */
        {130, 257, 1, 128, MASK_RANDOM, 0, 80, 0},
        /* from ATTN_PACK_NKV (1536) keys on, each head's K and V are copied first */
        {144, 1600, 2, 64, MASK_NONE, 0, 3, 0},        /* 3 whole query blocks a head */
        {130, 1700, 2, 32, MASK_FRAMES, 0, 80, 0},
        {70, 1536, 1, 40, MASK_CAUSAL, 0, 3, 0},
        {50, 2001, 3, 64, MASK_RANDOM, 0, 3, 0},
        {1569, 1569, 1, 64, MASK_FRAMES, 2, 3, 196},   /* LeVJEPA's layout: 8 frames of 196 */
    };
    int fails = 0, n = (int)(sizeof cases / sizeof *cases);
    for (int i = 0; i < n; i++) fails += check_attn_case(kt, level, &cases[i]) != 0;
    printf("  %s attn: %d cases, %d failed\n", level, n, fails);
}

/* ---- non-finite inputs: one element of q, k or v set to NaN or +-inf ----
 * What each output element must be follows from the formula (softmax over the visible
 * keys, then P V), not from any kernel, and every level, the reference included, must give
 * it: the inputs' non-finite values must reach the outputs they feed the same way at every
 * ISA level, so that a forward's non-finite-output check fires on every CPU or on none. */
enum { NF_Q_NAN, NF_K_NAN, NF_V_NAN, NF_Q_INF, NF_K_NEGINF, NF_V_INF, NF_KINDS };
static const char *const nf_name[NF_KINDS] = {"NaN in q", "NaN in k", "NaN in v", "+inf in q", "-inf in k",
                                             "+inf in v"};
enum { NF_FINITE, NF_ISNAN, NF_PLUSINF };

struct nf_site { int kind, i0, j0, h0, d0; };

static int nf_nvis(const struct attn_data *t, int i) {
    int n = 0;
    for (int j = 0; j < t->c.nkv; j++) n += visible(t, i, j);
    return n;
}

/* The class of o[i][h hd + e] (q, k, v already hold the non-finite value). */
static int nf_expect(const struct attn_data *t, const struct nf_site *s, int i, int h, int e) {
    const int hd = t->c.hd, col = s->h0 * hd + s->d0;
    if (h != s->h0 || !nf_nvis(t, i)) return NF_FINITE;   /* other heads; no key: zeros */
    switch (s->kind) {
    case NF_Q_NAN: return i == s->i0 ? NF_ISNAN : NF_FINITE;
    case NF_K_NAN: return visible(t, i, s->j0) ? NF_ISNAN : NF_FINITE;
    case NF_V_NAN: return visible(t, i, s->j0) && e == s->d0 ? NF_ISNAN : NF_FINITE;
    case NF_V_INF: return visible(t, i, s->j0) && e == s->d0 ? NF_PLUSINF : NF_FINITE;
    case NF_K_NEGINF:   /* -inf q: +inf score, inf - inf; 0 q: NaN; else P = 0 */
        return visible(t, i, s->j0) && !(t->q[(size_t)i * t->ldq + col] > 0) ? NF_ISNAN : NF_FINITE;
    default:            /* +inf in q: a visible key with k >= 0 there gives +inf or NaN */
        if (i != s->i0) return NF_FINITE;
        for (int j = 0; j < t->c.nkv; j++)
            if (visible(t, i, j) && !(t->k[(size_t)j * t->ldk + col] < 0)) return NF_ISNAN;
        return NF_FINITE;   /* every score -inf: zeros */
    }
}

/* Put the site's value in; j0 is the key of the lowest position, seen by every query that
 * sees any key (a key hidden from a query may reach it through P = 0 at the SIMD levels:
 * attn_tmpl.h). */
static void nf_plant(struct attn_data *t, struct nf_site *s) {
    const int col = s->h0 * t->c.hd + s->d0;
    s->j0 = t->c.nkv / 2;
    if (t->kpos)
        for (int j = 0; j < t->c.nkv; j++)
            if (t->kpos[j] <= t->kpos[s->j0]) s->j0 = j;
    float *q = &t->q[(size_t)s->i0 * t->ldq + col], *k = &t->k[(size_t)s->j0 * t->ldk + col];
    float *v = &t->v[(size_t)s->j0 * t->ldv + col];
    switch (s->kind) {
    case NF_Q_NAN: *q = NAN; break;
    case NF_K_NAN: *k = NAN; break;
    case NF_V_NAN: *v = NAN; break;
    case NF_Q_INF: *q = INFINITY; break;
    case NF_K_NEGINF: *k = -INFINITY; break;
    default: *v = INFINITY; break;
    }
}

static void check_attn_nonfinite(const struct jk_kernels *kt, const char *level) {
    static const struct attn_case cases[] = {
        {17, 17, 2, 64, MASK_NONE, 1, 3, 0},    {3, 3, 2, 64, MASK_CAUSAL, 1, 3, 0},
        {1, 577, 2, 32, MASK_NONE, 0, 3, 0},    {1, 3137, 2, 64, MASK_FRAMES, 0, 3, 0},
        {257, 257, 1, 64, MASK_FRAMES, 1, 3, 16}, {20, 45, 2, 34, MASK_RANDOM, 0, 3, 0},
        {49, 130, 2, 7, MASK_NONE, 0, 3, 0},    {144, 1600, 2, 64, MASK_CAUSAL, 0, 3, 0},
        {577, 577, 1, 64, MASK_FRAMES, 1, 3, 0},
    };
    int fails = 0, n = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
        for (int kind = 0; kind < NF_KINDS; kind++, n++) {
            const struct attn_case *c = &cases[ci];
            struct attn_data t;
            attn_make(&t, c);
            /* a query of the middle (block path) or the last (the row tail), the last head,
             * the first or the last dim */
            struct nf_site s = {kind, kind & 1 ? c->nq - 1 : c->nq / 3, 0, c->n_head - 1, kind % 3 ? c->hd - 1 : 0};
            nf_plant(&t, &s);
            const int D = c->n_head * c->hd;
            float *o = ca_alloc_guarded((size_t)c->nq * t.ldo);
            char *ws = (char *)xmalloc(kt->attn_ws(1, c->n_head, c->hd, c->nkv) + 4);
            struct jk_attn_args a = attn_args(&t, o, 1, ws + 4);
            kt->attn(&a);
            int bad = 0, bi = 0, be = 0, bwant = 0;
            for (int i = 0; i < c->nq; i++)
                for (int e = 0; e < D; e++) {
                    const float x = o[(size_t)i * t.ldo + e];
                    const int want = nf_expect(&t, &s, i, e / c->hd, e % c->hd);
                    const int ok = want == NF_ISNAN ? isnan(x) : want == NF_PLUSINF ? x == INFINITY : isfinite(x);
                    if (!ok && !bad++) bi = i, be = e, bwant = want;
                }
            CHECK(!bad, "%s attn %s (nq %d nkv %d hd %d %s, query %d key %d): %d outputs wrong, first [%d][%d] = %g, "
                  "expected %s", level, nf_name[kind], c->nq, c->nkv, c->hd, mask_name[c->mask], s.i0, s.j0, bad, bi,
                  be, bad ? (double)o[(size_t)bi * t.ldo + be] : 0.0,
                  bwant == NF_ISNAN ? "NaN" : bwant == NF_PLUSINF ? "+inf" : "finite");
            fails += bad != 0;
            free(ws);
            ca_free_guarded(o);
            attn_free(&t);
        }
    printf("  %s attn, non-finite inputs: %d cases, %d failed\n", level, n, fails);
}

/* ======================================================================================
 * the row and element-wise slots: each case (inputs, reference, checks) is ops_check.h's;
 * here the slot runs with 1 and then 2 threads, which must give the same bits
 * ====================================================================================== */

/* RoPE on the q and k parts of a fused qkv buffer: the kernel rounds x*cos, then the FMA,
 * so ops_rope_finish's 3u (|x c| + |x' s|) holds. */
static void check_rope(const struct jk_kernels *kt, const char *level) {
    int fails = 0, cases = 0;
    struct ops_rope c;
    for (size_t i = 0; ops_rope_make(&c, i, 577); i++) {
        float *x1 = ops_dup(c.x0, (size_t)c.n * c.ld), *x2 = ops_dup(c.x0, (size_t)c.n * c.ld);
        for (int part = 0; part < 2; part++) {   /* q then k */
            kt->rope(x1 + part * c.D, c.ld, c.n, c.nh, c.hd, c.cs, c.sn, 1);
            kt->rope(x2 + part * c.D, c.ld, c.n, c.nh, c.hd, c.cs, c.sn, 2);
        }
        fails += ops_rope_finish(&c, level, x1, x2, "1 and 2 threads");
        cases++;
        ca_free_guarded(x1), ca_free_guarded(x2);
    }
    printf("  %s rope: %d cases, %d failed\n", level, cases, fails);
}

/* LayerNorm with one non-finite weight, bias or input element (d = 77: whole vectors and a
 * tail; the element in the tail or not): a NaN w_j or b_j makes column j NaN in every row,
 * a NaN or +inf x_ij makes row i NaN (its mean is NaN, or inf - inf); the rest stays finite.
 * By the formula, at every level and in the reference. */
static void check_layernorm_nonfinite(const struct jk_kernels *kt, const char *level) {
    enum { N = 5, D = 77, KINDS = 4 };
    static const char *const what[KINDS] = {"NaN weight", "NaN bias", "NaN input", "+inf input"};
    int fails = 0, cases = 0;
    for (int kind = 0; kind < KINDS; kind++)
        for (int j0 = 3; j0 < D; j0 += 70, cases++) {
            float x[N * D], y[N * D], w[D], b[D];
            ca_fill(x, N * D, 1.0f), ca_fill(w, D, 1.0f), ca_fill(b, D, 1.0f);
            const int i0 = 2;
            if (kind == 0) w[j0] = NAN;
            else if (kind == 1) b[j0] = NAN;
            else x[i0 * D + j0] = kind == 2 ? NAN : INFINITY;
            kt->layernorm(y, D, x, D, w, b, N, D, 1e-6f, 1);
            int bad = 0;
            for (int i = 0; i < N; i++)
                for (int j = 0; j < D; j++) {
                    const int nan = kind < 2 ? j == j0 : i == i0;
                    bad += nan ? !isnan(y[i * D + j]) : !isfinite(y[i * D + j]);
                }
            CHECK(!bad, "%s layernorm, %s at column %d: %d outputs not as the formula gives", level, what[kind], j0,
                  bad);
            fails += bad != 0;
        }
    printf("  %s layernorm, non-finite inputs: %d cases, %d failed\n", level, cases, fails);
}

/* LayerNorm: the mean is known to about u (|mean| + sigma) after the corrected two-pass
 * sum, x - mean, the product by rstd (itself good to ~2u) and the affine add each round
 * once: |y - y_ref| <= 8u (|y_ref| + |w_j| rstd (|x_j - mean| + |mean| + sigma)), so
 * ops_ln_finish with a = b = cm = 8. Constant rows must give exactly the reference. */
static void check_layernorm(const struct jk_kernels *kt, const char *level) {
    static const int ds[] = {1, 2, 7, 17, 64, 577, 1024};
    int fails = 0, cases = 0;
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (int kind = 0; kind < OPS_LN_KINDS; kind++)
            for (int aff = 0; aff < 3; aff++) {
                struct ops_ln c;
                ops_ln_make(&c, kind == OPS_LN_CONSTANT ? 6 : 17, ds[di], kind, aff);
                const int n = c.n, d = c.d;
                float *y1, *y2;
                if (kind == OPS_LN_INPLACE) {   /* y = x */
                    y1 = ops_dup(c.x, (size_t)n * c.ldx), y2 = ops_dup(c.x, (size_t)n * c.ldx);
                    kt->layernorm(y1, c.ldx, y1, c.ldx, c.wa, c.ba, n, d, c.eps, 1);
                    kt->layernorm(y2, c.ldx, y2, c.ldx, c.wa, c.ba, n, d, c.eps, 2);
                } else {
                    y1 = ca_alloc_guarded((size_t)n * c.ldy), y2 = ca_alloc_guarded((size_t)n * c.ldy);
                    kt->layernorm(y1, c.ldy, c.x, c.ldx, c.wa, c.ba, n, d, c.eps, 1);
                    kt->layernorm(y2, c.ldy, c.x, c.ldx, c.wa, c.ba, n, d, c.eps, 2);
                }
                fails += ops_ln_finish(&c, level, y1, y2, "1 and 2 threads", 8.0, 8.0, 8.0);
                cases++;
                ca_free_guarded(y1), ca_free_guarded(y2);
            }
    printf("  %s layernorm: %d cases, %d failed\n", level, cases, fails);
}

/* The activations against the reference: both sides evaluate in double and round once,
 * so they agree to one float ulp (2u |ref|: ops_unary_finish with rel 2) but for the
 * reference's own cancellation (which ops_unary_finish allows for). Slots still holding
 * the reference are skipped. */
static void check_unary(const struct jk_kernels *kt, const struct jk_kernels *rt, const char *level) {
    static const size_t ns[] = {1, 7, 8, 9, 15, 16, 17, 100, 20001};
    for (int o = 0; o < OPS_NACT; o++) {
        jk_unary_fn *const fn = ops_act_slot(kt, o);
        int fails = 0, cases = 0;
        if (fn == ops_act_slot(rt, o) || !ca_run(ops_act_name[o], level)) continue;
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
            struct ops_unary c;
            ops_unary_make(&c, rt, o, ns[ni]);
            float *x1 = ops_dup(c.x0, c.n), *x2 = ops_dup(c.x0, c.n);
            fn(x1, c.n, 1);
            fn(x2, c.n, 2);
            fails += ops_unary_finish(&c, level, x1, x2, "1 and 2 threads", 2.0);
            cases++;
            ca_free_guarded(x1), ca_free_guarded(x2);
        }
        printf("  %s %s: %d cases, %d failed\n", level, ops_act_name[o], cases, fails);
    }
}

/* The activations against their exact formulas (ops_act_exact, no cancellation for
 * either sign) over every binade of [-16, 16]: every 127th float bit pattern from the
 * smallest subnormal up to 16, both signs (17 million values). The kernels evaluate in
 * double with a relative error ~1e-15 and round once, so for a normal result
 * |y - f(x)| / |f(x)| <= 2^-24 + 1e-15 < 6.0e-8; a
 * subnormal result is within one subnormal step (2^-149: sub_rel 0). Slots still holding
 * the reference are skipped. */
static void check_act_accuracy(const struct jk_kernels *kt, const struct jk_kernels *rt, const char *level) {
    size_t m;
    float *x = ops_act_sweep(127, &m), *y = falloc(m);
    for (int o = 0; o < OPS_NACT; o++) {
        if (ops_act_slot(kt, o) == ops_act_slot(rt, o) || !ca_run(ops_act_name[o], level)) continue;
        memcpy(y, x, m * sizeof(float));
        ops_act_slot(kt, o)(y, m, 2);
        ops_act_check(level, o, x, y, m, 6.0e-8, 0.0);
    }
    free(x), free(y);
}

/* Residual add and layer-scale, x strided or one broadcast row (ldx 0). */
static void check_add(const struct jk_kernels *kt, const char *level) {
    static const int ds[] = {1, 7, 8, 9, 64, 577};
    int fails = 0, cases = 0;
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (int scaled = 0; scaled < 2; scaled++)
            for (int bcast = 0; bcast < 2; bcast++) {
                struct ops_add c;
                ops_add_make(&c, 17, ds[di], scaled, bcast);
                const size_t ny = (size_t)c.n * c.ldy;
                float *y1 = ops_dup(c.y0, ny), *y2 = ops_dup(c.y0, ny);
                kt->add(y1, c.ldy, c.x, c.ldx, c.sa, c.n, c.d, 1);
                kt->add(y2, c.ldy, c.x, c.ldx, c.sa, c.n, c.d, 2);
                fails += ops_add_finish(&c, level, y1, y2, "1 and 2 threads");
                cases++;
                ca_free_guarded(y1), ca_free_guarded(y2);
            }
    printf("  %s add: %d cases, %d failed\n", level, cases, fails);
}

/* The modulation multiply-add against its definition (whatever fills the slot). The
 * gated residual runs in place (y is also a). */
static void check_madd(const struct jk_kernels *kt, const char *level) {
    static const int ds[] = {1, 7, 8, 9, 64, 192, 577};
    int fails = 0, cases = 0;
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (int resid = 0; resid < 2; resid++) {
            struct ops_madd c;
            ops_madd_make(&c, di == 0 ? 1 : 17, ds[di], resid);
            const size_t ny = (size_t)c.n * c.ldy;
            float *y1 = ops_dup(c.y0, ny), *y2 = ops_dup(c.y0, ny);
            kt->madd(y1, c.ldy, c.x, c.ldx, c.m, c.ldm, resid ? y1 : c.a, resid ? c.ldy : c.ldm, c.c, c.n, c.d, 1);
            kt->madd(y2, c.ldy, c.x, c.ldx, c.m, c.ldm, resid ? y2 : c.a, resid ? c.ldy : c.ldm, c.c, c.n, c.d, 2);
            fails += ops_madd_finish(&c, level, y1, y2, "1 and 2 threads");
            cases++;
            ca_free_guarded(y1), ca_free_guarded(y2);
        }
    printf("  %s madd: %d cases, %d failed\n", level, cases, fails);
}

/* Patchify: a permutation, so the bits must match. */
static void check_patchify(const struct jk_kernels *kt, const char *level) {
    int fails = 0, cases = 0;
    struct ops_patchify c;
    for (size_t si = 0; ops_patchify_make(&c, si); si++) {
        float *o1 = ca_alloc_guarded(c.nout), *o2 = ca_alloc_guarded(c.nout);
        kt->patchify(o1, c.in, c.C, c.T, c.H, c.W, c.tub, c.p, 1);
        kt->patchify(o2, c.in, c.C, c.T, c.H, c.W, c.tub, c.p, 2);
        fails += ops_patchify_finish(&c, level, o1, o2);
        cases++;
        ca_free_guarded(o1), ca_free_guarded(o2);
    }
    printf("  %s patchify: %d cases, %d failed\n", level, cases, fails);
}

/* Gather (masked encoder rows): a row copy, the bits of x[idx]. */
static void check_gather(const struct jk_kernels *kt, const char *level) {
    int fails = 0, cases = 0;
    struct ops_gather c;
    for (size_t si = 0; ops_gather_make(&c, si); si++) {
        float *y1 = ca_alloc_guarded((size_t)c.n * c.ldy), *y2 = ca_alloc_guarded((size_t)c.n * c.ldy);
        kt->gather(y1, c.ldy, c.x, c.ldx, c.idx, c.n, c.d, 1);
        kt->gather(y2, c.ldy, c.x, c.ldx, c.idx, c.n, c.d, 2);
        fails += ops_gather_finish(&c, level, y1, y2, "1 and 2 threads");
        cases++;
        ca_free_guarded(y1), ca_free_guarded(y2);
    }
    printf("  %s gather: %d cases, %d failed\n", level, cases, fails);
}

/* mean_rows (mean pooling) against the exact mean: the reference sums in double and
 * rounds once, so within u |mean| (the final rounding) + n 2^-52 mean|x| (the double
 * sum), whatever the offset of the columns. */
static void check_mean_rows(const struct jk_kernels *kt, const char *level) {
    int fails = 0, cases = 0;
    struct ops_mr c;
    for (size_t ci = 0; ops_mr_make(&c, ci); ci++) {
        const int n = c.n, d = c.d;
        for (int j = 0; j < d; j++) c.tol[j] = U * fabs(c.mean[j]) + n * 0x1p-52 * c.mag[j];
        float *y1 = ca_alloc_guarded((size_t)d), *y2 = ca_alloc_guarded((size_t)d);
        kt->mean_rows(y1, c.x, c.ldx, n, d, 1);
        kt->mean_rows(y2, c.x, c.ldx, n, d, 2);
        fails += ops_mr_finish(&c, level, y1, y2, "1 and 2 threads");
        cases++;
        ca_free_guarded(y1), ca_free_guarded(y2);
    }
    printf("  %s mean_rows: %d cases, %d failed\n", level, cases, fails);
}

/* ======================================================================================
 * RoPE tables and positions (models/rope.c) against the §4 formulas
 * ====================================================================================== */
#ifndef CHECKASM_AVX512_EMU

/* §4 written out again: d = 2 ((head_dim / 3) / 2) dims per axis; axis a covers dims
 * [a d, (a+1) d); omega_k = theta^(-k / (d/2)) = exp(-(k / (d/2)) ln theta);
 * tiled: COS[j] = cos(pos omega_(j mod d/2)); interleaved: COS[2k] = COS[2k+1] =
 * cos(pos omega_k); dims [3d, head_dim) and identity rows: cos 1, sin 0; a depth-only
 * row rotates [0, d) and passes the rest through.
 * Both sides compute the angle in double and round once; they may land on the two sides
 * of a float rounding boundary, hence one float ulp at |value| <= 1: 2^-24 absolute. */
static void check_rope_tables(void) {
    static const int hds[] = {64, 32, 7, 5, 66};
    static const float thetas[] = {10000.0f, 100.0f};
    int bad = 0, cases = 0, exact_bad = 0;
    for (size_t hi = 0; hi < sizeof hds / sizeof *hds; hi++)
        for (int layout = 0; layout < 2; layout++)
            for (int th = 0; th < 2; th++) {
                /* values repeat within and across axes (the tables copy a segment
                 * already computed for the same value), and w takes more distinct values
                 * than the memo has slots (collisions recompute) */
                const int hd = hds[hi], n = 600, d = 2 * ((hd / 3) / 2);
                static struct rope_pos pos[600];
                for (int i = 0; i < n; i++) {
                    pos[i].t = (float)(i % 4);
                    pos[i].h = (float)(i % 7) * 15.0f / 23.0f;     /* fractional (2.1 interpolation) */
                    pos[i].w = i < 40 ? (float)(i * 3 % 29) : (float)(i * 7 % 593) * 0.5f;
                    pos[i].identity = i % 9 == 0;
                    pos[i].depth_only = i % 5 == 2;   /* V-JEPA 2-AC's action / state tokens */
                }
                float *c = falloc((size_t)n * hd), *s = falloc((size_t)n * hd);
                jm_rope_tables(c, s, pos, n, hd, thetas[th], layout ? JM_ROPE_INTERLEAVED : JM_ROPE_TILED);
                for (int i = 0; i < n; i++)
                    for (int j = 0; j < hd; j++) {
                        double ec = 1.0, es = 0.0;
                        const int rot = pos[i].depth_only ? d : 3 * d;   /* rotated dims */
                        if (!pos[i].identity && j < rot) {
                            const int ax = j / d, jj = j % d;
                            const double p = ax == 0 ? pos[i].t : ax == 1 ? pos[i].h : pos[i].w;
                            const int k = layout ? jj / 2 : jj % (d / 2);
                            const double omega = exp(-((double)k / (d / 2)) * log((double)thetas[th]));
                            ec = cos(p * omega), es = sin(p * omega);
                        }
                        const double gc = c[(size_t)i * hd + j], gs = s[(size_t)i * hd + j];
                        if (!(fabs(gc - ec) <= U * 1.0001) || !(fabs(gs - es) <= U * 1.0001)) bad++;
                        if ((pos[i].identity || j >= rot) && (gc != 1.0 || gs != 0.0)) exact_bad++;
                    }
                cases++;
                free(c), free(s);
            }
    CHECK(!bad, "jm_rope_tables vs the §4 formulas: %d entries beyond one float ulp", bad);
    CHECK(!exact_bad, "jm_rope_tables: %d identity / pass-through entries are not exactly 1 / 0", exact_bad);

    /* the two layouts on one hand-checked row: head_dim 64 (d = 20, 10 frequencies),
     * position (t, h, w) = (1, 0, 0): tiled dims 0..9 and 10..19 both run omega_0..9,
     * interleaved dims 2k, 2k+1 share omega_k; the h and w segments are identity. */
    {
        struct rope_pos p1 = {1.0f, 0.0f, 0.0f, false, false};
        float ct[64], st[64], ci[64], si[64];
        jm_rope_tables(ct, st, &p1, 1, 64, 10000.0f, JM_ROPE_TILED);
        jm_rope_tables(ci, si, &p1, 1, 64, 10000.0f, JM_ROPE_INTERLEAVED);
        int ok = 1;
        for (int k = 0; k < 10; k++) {
            const float e = (float)cos(pow(10000.0, -k / 10.0));
            ok &= ct[k] == e && ct[k + 10] == e && ci[2 * k] == e && ci[2 * k + 1] == e;
        }
        for (int j = 20; j < 64; j++) ok &= ct[j] == 1.0f && st[j] == 0.0f && ci[j] == 1.0f && si[j] == 0.0f;
        CHECK(ok, "jm_rope_tables: the hand-checked head_dim 64 row (t = 1) is wrong");
        cases++;
    }
    printf("  jm_rope_tables: %d cases checked against the §4 formulas\n", cases);
}

static void check_rope_positions(void) {
    struct rope_pos p[8];
    int ok = 1;
    /* ids NULL on a 2 x 2 x 3 grid: id = t*6 + h*3 + w */
    jm_rope_positions(p, NULL, 8, 2, 3, false, 0);
    static const float e1[8][3] = {{0, 0, 0}, {0, 0, 1}, {0, 0, 2}, {0, 1, 0}, {0, 1, 1}, {0, 1, 2}, {1, 0, 0}, {1, 0, 1}};
    for (int i = 0; i < 8; i++)
        ok &= p[i].t == e1[i][0] && p[i].h == e1[i][1] && p[i].w == e1[i][2] && !p[i].identity;
    CHECK(ok, "jm_rope_positions: ids NULL on a 2x3 grid");
    /* explicit ids on a 24 x 24 grid, interpolated to the 16 grid: h' = h 15/23 */
    const int32_t ids[4] = {0, 24 * 24 + 23 * 24 + 7, 5 * 576 + 12 * 24 + 23, 24};
    jm_rope_positions(p, ids, 4, 24, 24, true, 16);
    ok = p[0].t == 0 && p[0].h == 0 && p[0].w == 0;
    ok &= p[1].t == 1 && p[1].h == 15.0f && p[1].w == 105.0f / 23.0f;
    ok &= p[2].t == 5 && p[2].h == 180.0f / 23.0f && p[2].w == 15.0f;
    ok &= p[3].t == 0 && p[3].h == 15.0f / 23.0f && p[3].w == 0;
    CHECK(ok, "jm_rope_positions: 24x24 grid interpolated to 16 (15/23)");
    /* the same ids without interpolation: raw integers */
    jm_rope_positions(p, ids, 4, 24, 24, false, 16);
    ok = p[1].t == 1 && p[1].h == 23 && p[1].w == 7 && p[2].t == 5 && p[2].h == 12 && p[2].w == 23;
    CHECK(ok, "jm_rope_positions: 24x24 grid, no interpolation");
    /* a grid side of 1 keeps position 0 (no division by zero); the other side: w 15/3 = 5w */
    jm_rope_positions(p, NULL, 8, 1, 4, true, 16);
    ok = 1;
    for (int i = 0; i < 8; i++) ok &= p[i].t == (float)(i / 4) && p[i].h == 0.0f && p[i].w == 5.0f * (i % 4);
    CHECK(ok, "jm_rope_positions: gh = 1 with interpolation");
    /* non-square 16 x 20: h 15/15 = h, w 15/19 */
    const int32_t ids2[2] = {15 * 20 + 19, 320 + 3 * 20 + 4};
    jm_rope_positions(p, ids2, 2, 16, 20, true, 16);
    ok = p[0].t == 0 && p[0].h == 15.0f && p[0].w == 15.0f && p[1].t == 1 && p[1].h == 3.0f &&
         p[1].w == 60.0f / 19.0f;
    CHECK(ok, "jm_rope_positions: non-square 16x20 grid interpolated");
    printf("  jm_rope_positions: hand-computed ids checked\n");
}
#endif

/* ======================================================================================
 * benchmarks (--bench): same calls, timed
 * ====================================================================================== */

/* One thread: the thread's CPU time (the machine may be shared; time spent descheduled
 * does not count). More threads: wall time. */
static double now_thr(int nthreads) {
    struct timespec ts;
    clock_gettime(nthreads > 1 ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
static double now(void) { return now_thr(1); }

/* Best of `reps` timings of one attention call, in GFLOP/s (4 nq nkv hd heads flops,
 * whatever the mask hides). */
static double bench_attn(jk_attn_fn *fn, size_t wsb, const struct attn_case *c, int nthreads, int reps) {
    struct attn_data t;
    attn_make(&t, c);
    float *o = falloc((size_t)c->nq * t.ldo);
    void *ws = xmalloc(wsb);
    struct jk_attn_args a = attn_args(&t, o, nthreads, ws);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now_thr(nthreads);
        fn(&a);
        best = fmin(best, now_thr(nthreads) - t0);
    }
    free(o), free(ws);
    attn_free(&t);
    return 4.0 * c->nq * c->nkv * c->hd * c->n_head / best * 1e-9;
}

static void bench(const struct ca_level *lv, int nl) {
    struct jk_kernels ref;
    jk_init_ref(&ref);
    const struct attn_case big = {2048, 2048, 16, 64, MASK_NONE, 2, 3, 0};
    const struct attn_case big32 = {2048, 2048, 12, 32, MASK_NONE, 2, 3, 0};
    const struct attn_case lev = {3137, 3137, 4, 64, MASK_FRAMES, 2, 3, 196};
    const struct attn_case pool = {1, 3137, 16, 64, MASK_NONE, 0, 3, 0};
    const struct attn_case small = {512, 512, 2, 64, MASK_NONE, 2, 3, 0};
    int nthr = 1;
#ifdef JEPA_HAVE_OPENMP
    nthr = omp_get_max_threads();
#endif
    double rs = bench_attn(ref.attn, 0, &small, 1, 1);
    printf("bench attn ref: N 512 hd 64, 1 thread: %.2f GFLOP/s\n", rs);
    for (int l = 0; l < nl; l++) {
        struct jk_kernels k;
        jk_init(&k, lv[l].flags);
        const char *n = lv[l].name;
        double s1 = bench_attn(k.attn, k.attn_ws(1, small.n_head, 64, 512), &small, 1, 5);
        double b1 = bench_attn(k.attn, k.attn_ws(1, big.n_head, 64, 2048), &big, 1, 3);
        double bt = bench_attn(k.attn, k.attn_ws(nthr, big.n_head, 64, 2048), &big, nthr, 3);
        double c1 = bench_attn(k.attn, k.attn_ws(1, big32.n_head, 32, 2048), &big32, 1, 3);
        double l1 = bench_attn(k.attn, k.attn_ws(1, lev.n_head, 64, 3137), &lev, 1, 3);
        double p1 = bench_attn(k.attn, k.attn_ws(1, pool.n_head, 64, 3137), &pool, 1, 20);
        printf("bench attn %s: N 512 hd 64 1 thr %.2f GFLOP/s (%.1fx ref)\n", n, s1, s1 / rs);
        printf("bench attn %s: N 2048 16 heads hd 64: 1 thr %.2f GFLOP/s, %d thr %.2f GFLOP/s\n", n, b1, nthr, bt);
        printf("bench attn %s: N 2048 12 heads hd 32: 1 thr %.2f GFLOP/s\n", n, c1);
        printf("bench attn %s: N 3137 block-causal (53%% visible) 4 heads hd 64: 1 thr %.2f GFLOP/s "
               "(dense-equivalent)\n", n, l1);
        printf("bench attn %s: nq 1 x 3137 keys 16 heads hd 64: 1 thr %.2f GFLOP/s\n", n, p1);
    }
    /* row ops: ns per element, best of 5, 1 thread */
    const size_t ne = 2048 * 1024;
    float *x = falloc(ne), *y = falloc(ne), *w = falloc(1024), *b = falloc(1024);
    ca_fill(x, ne, 2.0f), ca_fill(w, 1024, 1.0f), ca_fill(b, 1024, 1.0f);
    for (int l = -1; l < nl; l++) {
        struct jk_kernels k;
        if (l < 0) jk_init_ref(&k);
        else jk_init(&k, lv[l].flags);
        const char *n = l < 0 ? "ref" : lv[l].name;
        double ts = 1e30, tl = 1e30;
        for (int r = 0; r < 5; r++) {
            memcpy(y, x, ne * sizeof(float));
            double t0 = now();
            k.silu(y, ne, 1);
            ts = fmin(ts, now() - t0);
            t0 = now();
            k.layernorm(y, 1024, x, 1024, w, b, 2048, 1024, 1e-6f, 1);
            tl = fmin(tl, now() - t0);
        }
        printf("bench %s: silu %.2f ns/elt, layernorm %.2f ns/elt (2048 x 1024, 1 thr)\n",
               n, ts / ne * 1e9, tl / ne * 1e9);
    }
    free(x), free(y), free(w), free(b);
}

int main(int argc, char **argv) {
    const int bench_only = argc > 1 && !strcmp(argv[1], "--bench");
    const int rc = bench_only ? -1 : ca_options("checkasm_ops", argc, argv, 1);
    if (rc >= 0) return rc;
    ca_seed("checkasm_ops");
    struct ca_level lv[4];
    int nl;
#ifdef CHECKASM_AVX512_EMU
    /* The AVX-512 kernels compiled against SIMDe: test that level whatever the CPU has. */
    lv[0] = (struct ca_level){"avx512(simde)", JEPA_CPU_AVX2 | JEPA_CPU_AVX512};
    nl = 1;
    printf("  level %s forced (AVX-512 code paths emulated with SIMDe)\n", lv[0].name);
#else
    nl = ca_levels(lv);
#endif
    if (bench_only) {
        bench(lv, nl);
        return 0;
    }
    if (ca_isa_missing(lv, nl)) {
        printf("checkasm_ops: level %s is not available on this machine (skipped)\n", ca_only_isa);
        return 77;
    }
    struct jk_kernels ref;
    jk_init_ref(&ref);

    /* the reference attention against the naive formula */
    static const struct attn_case refcases[] = {
        {1, 1, 1, 8, MASK_NONE, 1, 3, 0}, {17, 17, 3, 16, MASK_NONE, 1, 3, 0}, {17, 17, 2, 16, MASK_FRAMES, 1, 80, 0},
        {20, 20, 2, 8, MASK_CAUSAL, 1, 3, 0}, {13, 31, 2, 6, MASK_RANDOM, 0, 80, 0}, {1, 200, 2, 32, MASK_NONE, 0, 3, 0}};
    if (ca_run("attn", "ref")) {
        for (size_t i = 0; i < sizeof refcases / sizeof *refcases; i++) check_attn_ref(&refcases[i]);
        printf("  jk_attn_ref: %zu cases against the naive double formula\n", sizeof refcases / sizeof *refcases);
    }
    if (ca_run("attn", "ref")) check_attn_nonfinite(&ref, "ref");
    if (ca_run("layernorm", "ref")) check_layernorm_nonfinite(&ref, "ref");
#ifndef CHECKASM_AVX512_EMU
    if (ca_run("rope", "ref")) {   /* the tables the rope slot is given */
        check_rope_tables();
        check_rope_positions();
    }
#endif
    /* the reference row gather and column mean against their definitions */
    if (ca_run("gather", "ref")) check_gather(&ref, "ref");
    if (ca_run("mean_rows", "ref")) check_mean_rows(&ref, "ref");
    if (ca_run("madd", "ref")) check_madd(&ref, "ref");

    int tested = 0;
    for (int l = 0; l < nl; l++) {
        struct jk_kernels kt;
        jk_init(&kt, lv[l].flags);
        ca_inject(&kt);
        const char *n = lv[l].name;
        /* a slot still holding the reference at this level would be compared with itself
         * (the gemm slots are test_gemm.c's) */
        int nref = 0, nslot = 0;
        for (int s = 0; s < jk_nslots; s++) {
            if (jk_slots[s].dtype >= 0 || !strcmp(jk_slots[s].name, "gemm_ws") ||
                !ca_wanted(jk_slots[s].name, n))
                continue;
            nslot++;
            if (jk_slot_fn(&kt, &jk_slots[s]) == jk_slot_fn(&ref, &jk_slots[s]))
                printf("  %s %s: the reference fills this slot, nothing to test\n", n, jk_slots[s].name), nref++;
        }
        if (nref == nslot) continue;
        tested++;
        if (kt.attn != ref.attn && ca_run("attn", n)) check_attn(&kt, n), check_attn_nonfinite(&kt, n);
        if (kt.rope != ref.rope && ca_run("rope", n)) check_rope(&kt, n);
        if (kt.layernorm != ref.layernorm && ca_run("layernorm", n))
            check_layernorm(&kt, n), check_layernorm_nonfinite(&kt, n);
        check_unary(&kt, &ref, n);
        check_act_accuracy(&kt, &ref, n);
        if (kt.add != ref.add && ca_run("add", n)) check_add(&kt, n);
        if (kt.patchify != ref.patchify && ca_run("patchify", n)) check_patchify(&kt, n);
        /* against their definitions, whatever fills the slots (the reference today) */
        if (ca_run("gather", n)) check_gather(&kt, n);
        if (ca_run("mean_rows", n)) check_mean_rows(&kt, n);
        if (ca_run("madd", n)) check_madd(&kt, n);
    }
    if (!tested) printf("checkasm_ops: no slot above the reference at any level here; references checked\n");
    return ca_finish("checkasm_ops");
}
