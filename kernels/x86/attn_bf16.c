/*
 * attn_bf16.c — the bf16 precision tier's attention (kernels.h, JK_PREC_BF16; reference
 * jk_attn_bf16x_ref): q, k and v rounded to bf16 (nearest even), the scores and P.V as
 * products of bf16 pairs summed in f32, the probabilities P rounded to bf16 before they
 * multiply v, the online softmax (running maximum, rescaling, the normaliser l as the sum
 * of the unrounded P) in f32. Built twice:
 *  - jk_attn_avx512_bf16 (-mavx512bf16): VDPBF16PS, 16 lanes of f32 accumulators;
 *  - jk_attn_amx_bf16 (-DJK_ATTN_AMX, -mamx-tile -mamx-bf16): the two products on AMX
 *    tiles (TDPBF16PS), the softmax in AVX-512. tests/checkasm also builds it on the C model
 *    of the tile instructions (kernels/x86/amx_model.h, -DJK_TILE_MODEL).
 *
 * Layout. Per head, the team first packs K and V once into the workspace:
 *   Kp [hp][nkp] pairs: Kp[p][j] = bf16(k_j[2p]) | bf16(k_j[2p + 1]) << 16, pairs along
 *      head_dim, the keys side by side (the VNNI layout of a TDPBF16PS B tile, and 16
 *      keys' pair p in one vector for VDPBF16PS);
 *   Vp [nkp / 2][hdp] pairs: Vp[g][d] = bf16(v_2g[d]) | bf16(v_2g+1[d]) << 16, pairs along
 *      the key index, the dims side by side;
 * with hdp = head_dim rounded up to 32 (hp = hdp / 2 pairs: whole 16-pair tiles) and nkp =
 * nkv rounded up to 32, the padding zero. A work unit is (head, block of 16 queries): its
 * queries' pairs Qp [16][hp] (rows past nq zero), then for each tile of up to 64 keys:
 *   S[i][j] = q~_i . k~_j                     (f32 sums of exact bf16 products)
 *   t[i][j] = S[i][j] scale log2(e), -inf where key j is hidden from query i or past nkv
 *   m'_i = max(m_i, max_j t[i][j]) (clamped to -FLT_MAX), alpha_i = 2^(m_i - m'_i)
 *   P[i][j] = 2^(t[i][j] - m'_i), l_i = alpha_i l_i + sum_j P[i][j]
 *   O[i][d] = alpha_i O[i][d] + sum_j bf16(P[i][j]) v~_j[d]   (P as pairs of keys)
 * and o_i = O_i / l_i where l_i > 0, else l_i (0: no visible key; NaN: a NaN score or
 * value), as attn_tmpl.h. A key tile no query of the unit sees is skipped (it would leave
 * every row as it is). Each unit runs on one thread in a fixed order: the same bits at
 * any thread count. Non-finite inputs: as attn_tmpl.h (a NaN score or a NaN in a visible v
 * gives a NaN row; a NaN in the v of a key hidden by the mask but inside a computed tile
 * reaches the row through P = 0).
 *
 * Where this differs from the reference: the f32 sums, the exponential (vf_exp2), and P
 * rounded against the running maximum (the reference rounds exp(s - m) against the
 * global one, so keys before the maximum round at another scale). The bound that allows
 * exactly these is derived in tests/checkasm/test_attn_tier.c. The blocking has not been
 * timed.
 */
#include <float.h>
#include <stdint.h>
#include <string.h>
#ifdef JEPA_HAVE_OPENMP
#include <omp.h>
#endif

#include "kernels/x86/vec_avx512.h"
#include "kernels/ref/ref.h"
#include "kernels/x86/x86.h"
#include "runtime/dtype.h"
#ifdef JK_ATTN_AMX
#include "kernels/x86/amx.h"
#define AB_SFX(name) jk_##name##_amx_bf16
#else
#define AB_SFX(name) jk_##name##_avx512_bf16
#endif

#define AB_BQ 16 /* queries per unit (one tile's rows) */
#define AB_BK 64 /* keys per key tile, at most */
#define AB_HD_MAX 512
#define AB_LOG2E 1.44269504088896340736f

static inline int ab_min(int a, int b) { return a < b ? a : b; }
static inline int ab_up32(int n) { return (n + 31) & ~31; }

/* Per-thread workspace, in 64-byte aligned regions: Qp [16][hp] pairs, S [16][64] f32,
 * P [16][32] pairs, O [16][hdp] f32, m, l, alpha, rowsum [16] f32, qpos [16] int32. */
static inline size_t ab_per_thread(int hd) {
    const size_t hdp = (size_t)ab_up32(hd);
    return (AB_BQ * hdp / 2 + AB_BQ * AB_BK + AB_BQ * AB_BK / 2 + AB_BQ * hdp + 5 * AB_BQ) * 4;
}
static inline size_t ab_shared(int hd, int nkv) {
    return (size_t)ab_up32(hd) * (size_t)ab_up32(nkv) * 4;
}

size_t AB_SFX(attn_ws)(int nthreads, int n_head, int head_dim, int nkv) {
    (void)n_head; /* K and V are packed one head at a time */
    if (head_dim < 1 || head_dim > AB_HD_MAX)
        return jk_attn_ws_ref(nthreads, n_head, head_dim, nkv);
    return 64 + ab_shared(head_dim, nkv > 0 ? nkv : 1) +
           (size_t)(nthreads > 0 ? nthreads : 1) * ab_per_thread(head_dim);
}

struct ab_unit {
    uint32_t *qp, *pp;
    float *s, *o, *m, *l, *al, *rs;
    int32_t *qpos;
};

/* ---- the two products ----------------------------------------------------------------- */
#ifdef JK_ATTN_AMX
/* Tiles: S accumulators 0..3 (16 keys each), A (Q or P) 4 and 7, B (K or V) 5, O 6. */
static void ab_tiles_start(void) {
    struct jk_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
    tile_loadconfig(&cfg);
}
static void ab_tiles_end(void) { tile_release(); }

#define AB_S_STEP(T, sb)                                                                           \
    do {                                                                                           \
        if (nsb > (sb)) {                                                                          \
            tile_load(5, kp + (size_t)p * ldk + kt + 16 * (sb), (size_t)ldk * 4);                  \
            tile_dpbf16ps(T, 4, 5);                                                                \
        }                                                                                          \
    } while (0)
#define AB_S_OUT(T, sb)                                                                            \
    do {                                                                                           \
        if (nsb > (sb)) tile_store(T, u->s + 16 * (sb), AB_BK * 4);                                \
    } while (0)

/* S[0..16][0..nk) = Qp . Kp over the hp pairs, keys kt .. kt + nk of Kp (rows ldk apart) */
static void ab_scores(const struct ab_unit *u, const uint32_t *kp, size_t ldk, int kt, int nk,
                      int hp) {
    const int nsb = nk / 16;
    tile_zero(0);
    tile_zero(1);
    if (nsb > 2) {
        tile_zero(2);
        tile_zero(3);
    }
    for (int p = 0; p < hp; p += 16) {
        tile_load(4, u->qp + p, (size_t)hp * 4);
        AB_S_STEP(0, 0);
        AB_S_STEP(1, 1);
        AB_S_STEP(2, 2);
        AB_S_STEP(3, 3);
    }
    AB_S_OUT(0, 0);
    AB_S_OUT(1, 1);
    AB_S_OUT(2, 2);
    AB_S_OUT(3, 3);
}

/* O[0..16][0..hdp) += P . Vp for the nk keys from kt (O already rescaled by alpha) */
static void ab_pv(const struct ab_unit *u, const uint32_t *vp, int kt, int nk, int hdp) {
    tile_load(4, u->pp, AB_BK / 2 * 4);
    if (nk > 32) tile_load(7, u->pp + 16, AB_BK / 2 * 4);
    const uint32_t *v0 = vp + (size_t)(kt / 2) * hdp;
    for (int d = 0; d < hdp; d += 16) {
        tile_load(6, u->o + d, (size_t)hdp * 4);
        tile_load(5, v0 + d, (size_t)hdp * 4);
        tile_dpbf16ps(6, 4, 5);
        if (nk > 32) {
            tile_load(5, v0 + (size_t)16 * hdp + d, (size_t)hdp * 4);
            tile_dpbf16ps(6, 7, 5);
        }
        tile_store(6, u->o + d, (size_t)hdp * 4);
    }
}
#else

/* The same 64 bytes as the bf16 vector type VDPBF16PS takes. */
static OPS_ALWAYS __m512bh ab_bh(__m512i v) {
    __m512bh r;
    memcpy(&r, &v, sizeof r);
    return r;
}

static void ab_tiles_start(void) {}
static void ab_tiles_end(void) {}

/* 4 queries (rows r0..r0+3 of Qp) x NV vectors of 16 keys: acc += q pair p . k pairs p */
static OPS_ALWAYS void ab_s_rows(const struct ab_unit *u, const uint32_t *kp, size_t ldk, int kt,
                                 int hp, int r0, const int NV) {
    vf acc[4][4];
    for (int r = 0; r < 4; r++)
        for (int v = 0; v < NV; v++) acc[r][v] = vf_zero();
    const uint32_t *q = u->qp + (size_t)r0 * hp;
    for (int p = 0; p < hp; p++) {
        __m512bh k[4];
        for (int v = 0; v < NV; v++)
            k[v] = ab_bh(_mm512_loadu_si512((const void *)(kp + (size_t)p * ldk + kt + 16 * v)));
        for (int r = 0; r < 4; r++) {
            const __m512bh qb = ab_bh(_mm512_set1_epi32((int)q[(size_t)r * hp + p]));
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], qb, k[v]);
        }
    }
    for (int r = 0; r < 4; r++)
        for (int v = 0; v < NV; v++) vf_store(u->s + (size_t)(r0 + r) * AB_BK + 16 * v, acc[r][v]);
}

static void ab_scores(const struct ab_unit *u, const uint32_t *kp, size_t ldk, int kt, int nk,
                      int hp) {
    for (int r0 = 0; r0 < AB_BQ; r0 += 4) {
        if (nk > 32)
            ab_s_rows(u, kp, ldk, kt, hp, r0, 4);
        else
            ab_s_rows(u, kp, ldk, kt, hp, r0, 2);
    }
}

/* 4 queries x ND vectors of 16 dims from d0: O += P pairs . V pairs over np key pairs */
static OPS_ALWAYS void ab_pv_rows(const struct ab_unit *u, const uint32_t *v0, int np, int hdp,
                                  int r0, int d0, const int ND) {
    vf acc[4][4];
    for (int r = 0; r < 4; r++)
        for (int v = 0; v < ND; v++)
            acc[r][v] = vf_load(u->o + (size_t)(r0 + r) * hdp + d0 + 16 * v);
    for (int g = 0; g < np; g++) {
        __m512bh x[4];
        for (int v = 0; v < ND; v++)
            x[v] = ab_bh(_mm512_loadu_si512((const void *)(v0 + (size_t)g * hdp + d0 + 16 * v)));
        for (int r = 0; r < 4; r++) {
            const __m512bh pb =
                ab_bh(_mm512_set1_epi32((int)u->pp[(size_t)(r0 + r) * (AB_BK / 2) + g]));
            for (int v = 0; v < ND; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], pb, x[v]);
        }
    }
    for (int r = 0; r < 4; r++)
        for (int v = 0; v < ND; v++)
            vf_store(u->o + (size_t)(r0 + r) * hdp + d0 + 16 * v, acc[r][v]);
}

static void ab_pv(const struct ab_unit *u, const uint32_t *vp, int kt, int nk, int hdp) {
    const uint32_t *v0 = vp + (size_t)(kt / 2) * hdp;
    for (int r0 = 0; r0 < AB_BQ; r0 += 4) {
        int d = 0;
        for (; d + 64 <= hdp; d += 64) ab_pv_rows(u, v0, nk / 2, hdp, r0, d, 4);
        if (d < hdp) ab_pv_rows(u, v0, nk / 2, hdp, r0, d, 2); /* hdp % 64 == 32 */
    }
}
#endif

/* ---- the softmax of one key tile, in AVX-512 -------------------------------------------- */

/* 32 f32 values (x: keys 0..15, y: 16..31) rounded to bf16 (nearest even, NaN kept quiet) as
 * 16 pairs of consecutive keys */
static OPS_ALWAYS __m512i ab_pairs32(vf x, vf y) {
    const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
    __m512i r[2];
    const vf in[2] = {x, y};
    for (int h = 0; h < 2; h++) {
        const __m512i u = _mm512_castps_si512(in[h]);
        const __m512i rn = _mm512_add_epi32(
            u, _mm512_add_epi32(bias, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
        const __mmask16 nan = _mm512_cmp_ps_mask(in[h], in[h], _CMP_UNORD_Q);
        r[h] = _mm512_mask_blend_epi32(nan, rn, _mm512_or_si512(u, _mm512_set1_epi32(0x00400000)));
    }
    /* the high half of each lane: 16-bit element 2e + 1 of x for keys e < 16, of y after */
    const __m512i idx =
        _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27,
                         25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    return _mm512_permutex2var_epi16(r[0], idx, r[1]);
}

/* 16 values of p[i] for the i < n of 16 (0 past them): a load that stays inside the row */
static OPS_ALWAYS vf ab_load_n(const float *p, int n) {
    if (n >= 16) return vf_load(p);
    float t[16] = {0};
    if (n > 0) memcpy(t, p, sizeof(float) * (size_t)n);
    return vf_load(t);
}

/* 16 pairs of consecutive values: p[0..32) as far as n of them exist, zeros after (the
 * operand packing of q and k: pairs along head_dim); the bits of ab_pair on each pair */
static OPS_ALWAYS __m512i ab_pairs_n(const float *p, int n) {
    return ab_pairs32(ab_load_n(p, n), ab_load_n(p + 16, n - 16));
}

/* bf16(x) in the high half of each lane (rounded as f32_to_bf16, NaN kept quiet) */
static OPS_ALWAYS __m512i ab_round_hi(vf x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i rn = _mm512_add_epi32(
        u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                            _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))));
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_blend_epi32(nan, rn, _mm512_or_si512(u, _mm512_set1_epi32(0x00400000)));
}

/* After S: scores in log2 units, the mask, the running maximum, alpha, P as bf16 pairs,
 * l; O rescaled by alpha. Keys kt .. kt + nk (nk 32 or 64). */
static void ab_softmax(const struct jk_attn_args *a, const struct ab_unit *u, int kt, int nk,
                       int hdp, int masked, int partial) {
    const vf c = vf_set1(a->scale * AB_LOG2E), ninf = vf_set1(-__builtin_inff());
    const int nv = nk / 16;
    for (int i = 0; i < AB_BQ; i++) {
        float *s = u->s + (size_t)i * AB_BK;
        for (int v = 0; v < nv; v++) vf_store(s + 16 * v, vf_mul(vf_load(s + 16 * v), c));
        if (partial)
            for (int j = 0; j < nk; j++)
                if (kt + j >= a->nkv || (masked && u->qpos[i] < a->k_pos[kt + j]))
                    s[j] = -__builtin_inff();
        vf mx = ninf;
        for (int v = 0; v < nv; v++) mx = vf_max(mx, vf_load(s + 16 * v));
        const float tmax = vf_hmax(mx);
        float mu = u->m[i] > tmax ? u->m[i] : tmax;
        mu = mu > -FLT_MAX ? mu : -FLT_MAX;
        u->rs[i] = mu; /* the new maximum, for the alpha vector below */
        const vf muv = vf_set1(mu);
        vf sum = vf_zero(), p[4];
        for (int v = 0; v < nv; v++) {
            p[v] = vf_exp2(vf_sub(vf_load(s + 16 * v), muv));
            sum = vf_add(sum, p[v]);
        }
        for (int v = 0; v < nv; v += 2)
            _mm512_storeu_si512((void *)(u->pp + (size_t)i * (AB_BK / 2) + 8 * v),
                                ab_pairs32(p[v], p[v + 1]));
        s[0] = vf_hsum(sum); /* the tile's row sum (S row i is spent) */
    }
    /* alpha, l and m for the 16 rows at once */
    float rsum[AB_BQ];
    for (int i = 0; i < AB_BQ; i++) rsum[i] = u->s[(size_t)i * AB_BK];
    const vf mnew = vf_load(u->rs), al = vf_exp2(vf_sub(vf_load(u->m), mnew));
    vf_store(u->l, vf_fma(vf_load(u->l), al, vf_load(rsum)));
    vf_store(u->m, mnew);
    vf_store(u->al, al);
    for (int i = 0; i < AB_BQ; i++) {
        const vf ai = vf_set1(u->al[i]);
        float *o = u->o + (size_t)i * hdp;
        for (int d = 0; d < hdp; d += 16) vf_store(o + d, vf_mul(vf_load(o + d), ai));
    }
}

/* ---- one unit: head h, queries i0 .. i0 + 16 -------------------------------------------- */
static void ab_unit(const struct jk_attn_args *a, const struct ab_unit *u, int h, int i0,
                    const uint32_t *kp, const uint32_t *vp) {
    const int hd = a->head_dim, hdp = ab_up32(hd), hp = hdp / 2, nkp = ab_up32(a->nkv);
    const int nqb = ab_min(AB_BQ, a->nq - i0), masked = a->q_pos && a->k_pos;
    int32_t qmin = INT32_MAX, qmax = INT32_MIN;
    for (int i = 0; i < AB_BQ; i++) {
        const float *q = a->q + (size_t)(i0 + i) * a->ldq + (size_t)h * hd;
        uint32_t *qp = u->qp + (size_t)i * hp;
        for (int p = 0; p < hp; p += 16)   /* hp is a multiple of 16 */
            _mm512_storeu_si512((void *)(qp + p),
                                i < nqb ? ab_pairs_n(q + 2 * p, hd - 2 * p) : _mm512_setzero_si512());
        u->qpos[i] = masked && i < nqb ? a->q_pos[i0 + i] : INT32_MAX;
        if (masked && i < nqb)
            qmin = ab_min(qmin, u->qpos[i]), qmax = u->qpos[i] > qmax ? u->qpos[i] : qmax;
        u->m[i] = -__builtin_inff(), u->l[i] = 0.0f;
    }
    memset(u->o, 0, sizeof(float) * AB_BQ * (size_t)hdp);
    for (int kt = 0; kt < nkp; kt += AB_BK) {
        const int nk = ab_min(AB_BK, nkp - kt), nreal = ab_min(nk, a->nkv - kt);
        int partial = nreal < nk;
        if (masked) {
            int32_t kmin = INT32_MAX, kmax = INT32_MIN;
            for (int j = kt; j < kt + nreal; j++)
                kmin = ab_min(kmin, a->k_pos[j]), kmax = a->k_pos[j] > kmax ? a->k_pos[j] : kmax;
            if (qmax < kmin) continue; /* no query of the unit sees a key of the tile */
            partial |= qmin < kmax;
        }
        ab_scores(u, kp, (size_t)nkp, kt, nk, hp);
        ab_softmax(a, u, kt, nk, hdp, masked, partial);
        ab_pv(u, vp, kt, nk, hdp);
    }
    for (int i = 0; i < nqb; i++) {
        const float l = u->l[i];
        const float *o = u->o + (size_t)i * hdp;
        float *dst = a->o + (size_t)(i0 + i) * a->ldo + (size_t)h * hd;
        for (int d = 0; d < hd; d++) dst[d] = l > 0.0f ? o[d] / l : l;
    }
}

static inline int ab_thread(void) {
#ifdef JEPA_HAVE_OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

void AB_SFX(attn)(const struct jk_attn_args *a) {
    const int hd = a->head_dim;
    if (jk_attn_edges(a, AB_HD_MAX, jk_attn_bf16x_ref)) return;
    const int hdp = ab_up32(hd), hp = hdp / 2, nkp = ab_up32(a->nkv),
              nb = (a->nq + AB_BQ - 1) / AB_BQ;
    const int nt = a->nthreads > 0 ? a->nthreads : 1;
    uint8_t *ws = (uint8_t *)(((uintptr_t)a->ws + 63) & ~(uintptr_t)63);
    uint32_t *kp = (uint32_t *)(void *)ws, *vp = kp + (size_t)hp * nkp;
    uint8_t *tws = ws + ab_shared(hd, a->nkv);
    const size_t per = ab_per_thread(hd);
#pragma omp parallel num_threads(nt)
    {
        float *w = (float *)(void *)(tws + (size_t)ab_thread() * per);
        struct ab_unit u;
        u.qp = (uint32_t *)(void *)w;
        u.s = (float *)(u.qp + (size_t)AB_BQ * hp);
        u.pp = (uint32_t *)(void *)(u.s + AB_BQ * AB_BK);
        u.o = (float *)(void *)(u.pp + AB_BQ * AB_BK / 2);
        u.m = u.o + (size_t)AB_BQ * hdp, u.l = u.m + AB_BQ, u.al = u.l + AB_BQ, u.rs = u.al + AB_BQ;
        u.qpos = (int32_t *)(void *)(u.rs + AB_BQ);
        ab_tiles_start();
        for (int h = 0; h < a->n_head; h++) {
            /* pack the head's K (pairs along head_dim) and V (pairs along the keys) */
#pragma omp for schedule(static)
            for (int g = 0; g < nkp / 2; g++) {
                /* K: key j's pairs go down column j of the [hp][nkp] panel */
                for (int r = 0; r < 2; r++) {
                    const int j = 2 * g + r;
                    const float *k = a->k + (size_t)j * a->ldk + (size_t)h * hd;
                    for (int p = 0; p < hp; p += 16) {
                        uint32_t t[16];
                        _mm512_storeu_si512((void *)t, j < a->nkv ? ab_pairs_n(k + 2 * p, hd - 2 * p)
                                                                  : _mm512_setzero_si512());
                        for (int e = 0; e < 16; e++) kp[(size_t)(p + e) * nkp + j] = t[e];
                    }
                }
                /* V: the pair of keys 2g, 2g + 1 for each d, one row of hdp */
                const float *v0 = a->v + (size_t)(2 * g) * a->ldv + (size_t)h * hd,
                            *v1 = v0 + a->ldv;
                const int n0 = 2 * g < a->nkv ? hd : 0, n1 = 2 * g + 1 < a->nkv ? hd : 0;
                uint32_t *row = vp + (size_t)g * hdp;
                for (int d = 0; d < hdp; d += 16) {
                    const __m512i lo = ab_round_hi(ab_load_n(v0 + d, n0 - d)),
                                  hi = ab_round_hi(ab_load_n(v1 + d, n1 - d));
                    _mm512_storeu_si512((void *)(row + d),
                                        _mm512_or_si512(_mm512_srli_epi32(lo, 16),
                                                        _mm512_and_si512(hi, _mm512_set1_epi32(
                                                                                 (int)0xffff0000u))));
                }
            }
#pragma omp for schedule(dynamic, 1)
            for (int b = 0; b < nb; b++) ab_unit(a, &u, h, b * AB_BQ, kp, vp);
        }
        ab_tiles_end();
    }
}
