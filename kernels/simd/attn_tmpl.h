/*
 * attn_tmpl.h — fused (flash) attention, the attn / attn_ws slots of struct jk_kernels,
 * written once over the vector layer (kernels/simd/vector.h) and #included by
 * kernels/x86/ops_avx2.c, kernels/x86/ops_avx512.c and kernels/arm/ops_neon.c after their
 * layer header (vec_<isa>.h), their tile (ATTN_KG, ATTN_QV, ATTN_BQ) and ATTN_ROW_TAIL
 * (below), defined in that file beside the measurements that chose them, and a definition
 * of JK_SFX(name) (jk_##name##_<isa>).
 *
 *   o_i = sum_j softmax_j(scale q_i . k_j) v_j     over the keys j visible to query i
 *
 * Work unit = (head, block of ATTN_BQ queries); units are independent, each is computed
 * by one thread in a fixed order, so the bits do not depend on the thread count. From
 * ATTN_PACK_NKV keys on, the team first copies each head's K and V rows into contiguous
 * arrays in the workspace and computes that head's units from there (at_attn_packed).
 * Per unit (FlashAttention's online softmax, with the queries along the vector lanes, so
 * that every step is vertical and no horizontal reduction is ever needed):
 *
 *   Qt[d][i] = q_i[d] * scale * log2(e)          (packed once, transposed; scores in
 *                                                 log2 units, so exp becomes exp2)
 *   m_i = -inf, l_i = 0, Ot[d][i] = 0
 *   for each key tile of BK keys (BK * head_dim ~ 4096 floats: K and V tiles in L1/L2):
 *     with a mask: skip the tile if every key is hidden from every query of the block;
 *     else compute it only for the query vectors from the first to the last that see
 *     one of its keys, and only up to the last key that one of those sees (a tile
 *     that straddles a frame edge of a block-causal mask, a block that does). A query
 *     that sees none of a tile's keys would get P = 0 and alpha = 1 (or keep l = 0,
 *     O = 0) from it, so leaving it out changes no bit
 *     (docs/notes/kernel-tuning.md#attn-masked-tiles).
 *     St[j][i] = sum_d K[j][d] Qt[d][i]          (ATTN_KG keys x ATTN_QV vectors in
 *                                                 registers; K read in place, broadcast)
 *     St[j][i] = -inf where key j is hidden from query i (partially masked tiles)
 *     m'_i = max(m_i, max_j St[j][i])
 *     alpha_i = 2^(m_i - m'_i),  P[j][i] = 2^(St[j][i] - m'_i)
 *     l_i = alpha_i l_i + sum_j P[j][i]
 *     Ot[d][i] = alpha_i Ot[d][i] + sum_j V[j][d] P[j][i]   (ATTN_KG dims x ATTN_QV vectors;
 *                                                           V read in place, broadcast)
 *     m_i = m'_i
 *   o_i[d] = l_i > 0 ? Ot[d][i] / l_i : l_i      (a query that sees no key gets zeros, one
 *                                                 with a NaN score or value NaN)
 *
 * All statistics and accumulations are f32. The [nq, nkv] score matrix never exists:
 * St is one BK x ATTN_BQ tile in the thread's workspace. m' is clamped to -FLT_MAX
 * before it is subtracted, so a query whose keys are all hidden so far gets alpha = 0
 * and P = 0, never -inf - -inf.
 *
 * Non-finite inputs give what the reference's formula gives (tests/checkasm/test_ops.c):
 * a NaN score makes its P NaN (vf_exp2 keeps NaN on every ISA, whatever the running
 * maxima made of it), so l and the row's outputs are NaN; +inf scores give inf - inf = NaN;
 * -inf scores give P = 0. One difference is left: a key hidden from a query by the mask
 * but inside a tile that query computes takes part in P.V with P = 0, so a NaN or inf in
 * its V row makes that query's output NaN where the reference skips the key. Such a row
 * comes from a token whose own output is non-finite at every level, so whether a forward's
 * output is finite does not depend on the ISA.
 *
 * Few queries (nq <= ATTN_ROW_NQ, e.g. the attentive pooler's single query over all the
 * tokens) would waste most lanes of the query vectors, so they take a row path instead:
 * one (head, query) per unit and the keys along the lanes (VW keys' dot products at a
 * time, reduced by a transposing sum), chunks of ATTN_RK keys, the same online softmax
 * in scalars, and O accumulated along head_dim. It needs head_dim % VW == 0 (every real
 * model: 32, 64, 80, 128); other head dims take the block path. The same row path takes
 * the last nq % VW queries of a longer sequence when there are at most ATTN_ROW_TAIL of
 * them (the ISA file's, tuned per ISA): 257 = 16 x 16 + 1 tokens (LeWM; 577 and
 * 3137 alike) would otherwise compute a whole query vector of the block path for one.
 *
 * head_dim 32 and 64 get their own instantiation (constant trip counts); any other head
 * dim up to ATTN_HD_MAX runs the generic one; larger ones fall back to the reference.
 * Tested against kernels/ref/attn_ref.c by tests/checkasm/test_ops.c; timed by its
 * --bench mode.
 */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef JEPA_HAVE_OPENMP
#include <omp.h>
#endif

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "kernels/tuning.h"

#if !defined(ATTN_KG) || !defined(ATTN_QV) || !defined(ATTN_BQ) || !defined(ATTN_ROW_TAIL) || \
    !defined(ATTN_KIND)
#error "the including file must define ATTN_KG, ATTN_QV, ATTN_BQ, ATTN_ROW_TAIL and ATTN_KIND"
#endif
#define ATTN_QT (ATTN_QV * VW)          /* queries of one register tile */
#if ATTN_BQ % ATTN_QT
#error "ATTN_BQ must be a multiple of ATTN_QV * VW"
#endif
#if ATTN_QV < 1 || ATTN_QV > 4
#error "the last register tile's dispatch (at_s_tiles, at_pv_tiles) handles ATTN_QV 1 to 4"
#endif
#define ATTN_HD_MAX 512
#define ATTN_BK_MAX 128                 /* keys per tile, at most */
#define ATTN_RK 256                     /* keys per chunk of the row path */
#define ATTN_ROW_NQ 4                   /* nq at or below which the row path runs */
#define ATTN_LOG2E 1.44269504088896340736f

static inline int at_min(int a, int b) { return a < b ? a : b; }

/* Ask for the hd floats of a K or V row ahead of use, where the rows are read in place: a
 * qkv row apart (a page or more for a wide model), which no hardware prefetcher follows.
 * (Copying each K and V tile of each unit into contiguous rows instead does not pay: 48
 * queries do not amortise the copy. A head's rows copied once for all its units, from
 * ATTN_PACK_NKV keys on, do; see there. Tuned: docs/notes/kernel-tuning.md#attn-row-prefetch.) */
static OPS_ALWAYS void at_prefetch_row(const float *r, int hd) {
    for (int d = 0; d < hd; d += 16) __builtin_prefetch(r + d);
}

/* The run-time part of the blocking (kernels/tuning.h, struct jk_attn_tuning): the call's
 * (a->tune) where given and valid, else the one in force for this build (ATTN_KIND), or
 * the defaults where that is unset or out of range. */
static inline const struct jk_attn_tuning *at_tuning(const struct jk_attn_args *a) {
    static const struct jk_attn_tuning def = JK_ATTN_DEFAULT_TUNING;
    if (a && a->tune && jk_attn_tuning_ok(a->tune)) return a->tune;
    const struct jk_attn_tuning *t = &jk_tune.attn[ATTN_KIND];
    return jk_attn_tuning_ok(t) ? t : &def;
}

/* Keys per tile: BK * head_dim ~ at_tuning(a)->bk floats (by default 4096: a 16 KiB K tile
 * and a 16 KiB V tile, which fit a 32 KiB L1d together), a multiple of ATTN_KG, at most
 * ATTN_BK_MAX (tuned: docs/notes/kernel-tuning.md#attn-key-tile). The tile edges fix the
 * order of the online softmax's updates: another bk changes the bits. */
static inline int at_bk(const struct jk_attn_args *a, int hd) {
    int bk = at_tuning(a)->bk / hd / ATTN_KG * ATTN_KG;
    return bk < ATTN_KG ? ATTN_KG : bk > ATTN_BK_MAX ? ATTN_BK_MAX : bk;
}

/* Workspace of one thread, in floats (each region a multiple of 16 floats = 64 bytes):
 * block path: Qt, Ot [hd][BQ], St [BK_MAX][BQ], m, l, alpha [BQ], qpos [BQ] (int32);
 * row path: q, o [hd], s [RK], kpos [VW]. */
static inline size_t at_ws_floats(int hd) {
    size_t blk = 2 * (size_t)hd * ATTN_BQ + (size_t)ATTN_BK_MAX * ATTN_BQ + 4 * (size_t)ATTN_BQ;
    size_t row = 2 * (((size_t)hd + 15) & ~(size_t)15) + ATTN_RK + 16;
    size_t n = blk > row ? blk : row;
    return (n + 15) & ~(size_t)15;
}

/* From this many keys on, the block path copies each head's K and V rows into contiguous
 * [nkv][hd] arrays shared by the team before its units read them (at_attn_packed), instead
 * of reading them in place a qkv row apart. A head's K and V are 512 nkv bytes at
 * head_dim 64: at 2048 keys they fill a 1 MiB L2, and past it every query block streams
 * them from L3, one page per row in place. Below, the rows stay in L2 and a copy does not
 * pay (tuned: docs/notes/kernel-tuning.md#attn-pack-kv). */
#define ATTN_PACK_NKV(a) (at_tuning(a)->pack)   /* by default 1536 */

size_t JK_SFX(attn_ws)(int nthreads, int n_head, int head_dim, int nkv) {
    /* K and V are copied one head at a time: n_head does not count */
    if (head_dim < 1 || head_dim > ATTN_HD_MAX) return jk_attn_ws_ref(nthreads, n_head, head_dim, nkv);
    const size_t pack = nkv >= ATTN_PACK_NKV(NULL) ? 2 * (size_t)nkv * (size_t)head_dim : 0;
    return ((size_t)(nthreads > 0 ? nthreads : 1) * at_ws_floats(head_dim) + pack) * sizeof(float) + 64;
}

/* ---- block path ---------------------------------------------------------------------- */

/* St[r][i] = sum_d K_r[d] Qt[d][i] for ATTN_KG keys (rows kp[r]) and the QV * VW queries
 * of one register tile (QV = ATTN_QV, or fewer for the last tile of a short block); st and
 * qt point at the tile's first query, rows ATTN_BQ apart. */
static OPS_ALWAYS void at_s_tile(float *st, const float *qt, const float *const *kp, const int hd,
                                 const int QV) {
    vf acc[ATTN_KG][ATTN_QV];
    for (int r = 0; r < ATTN_KG; r++)
        for (int v = 0; v < QV; v++) acc[r][v] = vf_zero();
    for (int d = 0; d < hd; d++) {
        vf q[ATTN_QV];
        for (int v = 0; v < QV; v++) q[v] = vf_load(qt + (size_t)d * ATTN_BQ + v * VW);
        for (int r = 0; r < ATTN_KG; r++) {
            const vf k = vf_set1(kp[r][d]);
            for (int v = 0; v < QV; v++) acc[r][v] = vf_fma(k, q[v], acc[r][v]);
        }
    }
    for (int r = 0; r < ATTN_KG; r++)
        for (int v = 0; v < QV; v++) vf_store(st + (size_t)r * ATTN_BQ + v * VW, acc[r][v]);
}

/* at_s_tile over the nqt queries of a block (nqt a multiple of VW): whole register tiles,
 * then one of the 1 .. ATTN_QV - 1 vectors left, each with its vector count a constant */
static OPS_ALWAYS void at_s_tiles(float *st, const float *qt, const float *const *kp, const int hd,
                                  int nqt) {
    int t = 0;
    for (; t + ATTN_QT <= nqt; t += ATTN_QT) at_s_tile(st + t, qt + t, kp, hd, ATTN_QV);
    switch ((nqt - t) / VW) {
#if ATTN_QV > 1
    case 1: at_s_tile(st + t, qt + t, kp, hd, 1); break;
#endif
#if ATTN_QV > 2
    case 2: at_s_tile(st + t, qt + t, kp, hd, 2); break;
#endif
#if ATTN_QV > 3
    case 3: at_s_tile(st + t, qt + t, kp, hd, 3); break;
#endif
    default: break;
    }
}

#ifdef ATTN_S_OUTLINE
/* at_s_tiles at head_dim 64 in a function of its own, for the ISA files that define
 * ATTN_S_OUTLINE (the reason is there): the S loop then gets its registers to itself. */
static __attribute__((noinline)) void at_s_tiles64(float *st, const float *qt, const float *const *kp, int nqt) {
    at_s_tiles(st, qt, kp, 64, nqt);
}
#endif

/* Ot[e][i] = alpha_i Ot[e][i] + sum_{j < nk} V_j[e] P[j][i] for ND dims e (ND = ATTN_KG or 1)
 * and the QV * VW queries of one register tile; vp = row 0 of V at the first of the ND dims. */
static OPS_ALWAYS void at_pv_tile(float *ot, const float *p, const float *vp, size_t ldv, int nk,
                                  const float *alpha, const int nd, const int QV) {
    vf acc[ATTN_KG][ATTN_QV];
    for (int v = 0; v < QV; v++) {
        const vf al = vf_load(alpha + v * VW);
        for (int e = 0; e < nd; e++)
            acc[e][v] = vf_mul(vf_load(ot + (size_t)e * ATTN_BQ + v * VW), al);
    }
    for (int j = 0; j < nk; j++, vp += ldv, p += ATTN_BQ) {
        vf pj[ATTN_QV];
        for (int v = 0; v < QV; v++) pj[v] = vf_load(p + v * VW);
        for (int e = 0; e < nd; e++) {
            const vf x = vf_set1(vp[e]);
            for (int v = 0; v < QV; v++) acc[e][v] = vf_fma(x, pj[v], acc[e][v]);
        }
    }
    for (int e = 0; e < nd; e++)
        for (int v = 0; v < QV; v++) vf_store(ot + (size_t)e * ATTN_BQ + v * VW, acc[e][v]);
}

/* Ot += V^T P over every dim for the QV vectors of queries at ot / p / alpha */
static OPS_ALWAYS void at_pv_dims(float *ot, const float *p, const float *v0, size_t ldv, int nk,
                                  const float *alpha, const int hd, const int QV) {
    int d = 0;
    for (; d + ATTN_KG <= hd; d += ATTN_KG)
        at_pv_tile(ot + (size_t)d * ATTN_BQ, p, v0 + d, ldv, nk, alpha, ATTN_KG, QV);
    for (; d < hd; d++) at_pv_tile(ot + (size_t)d * ATTN_BQ, p, v0 + d, ldv, nk, alpha, 1, QV);
}

/* at_pv_dims over the nqt queries of a block, tiled as at_s_tiles does */
static OPS_ALWAYS void at_pv_tiles(float *ot, const float *p, const float *v0, size_t ldv, int nk,
                                   const float *alpha, const int hd, int nqt) {
    int t = 0;
    for (; t + ATTN_QT <= nqt; t += ATTN_QT) at_pv_dims(ot + t, p + t, v0, ldv, nk, alpha + t, hd, ATTN_QV);
    switch ((nqt - t) / VW) {
#if ATTN_QV > 1
    case 1: at_pv_dims(ot + t, p + t, v0, ldv, nk, alpha + t, hd, 1); break;
#endif
#if ATTN_QV > 2
    case 2: at_pv_dims(ot + t, p + t, v0, ldv, nk, alpha + t, hd, 2); break;
#endif
#if ATTN_QV > 3
    case 3: at_pv_dims(ot + t, p + t, v0, ldv, nk, alpha + t, hd, 3); break;
#endif
    default: break;
    }
}

/* One key tile of a unit (at_block): keys kt .. kt + nk (rows of kh / vh), for the
 * queries i in [ilo, ihi) of the block (whole vectors); partial: mask St by position
 * first. Queries outside [ilo, ihi) are left as they are, which is what this tile would
 * do to a query that sees none of its keys (P = 0 and alpha = 1, or l and O still 0).
 * Plain `inline`, left to the compiler, which inlines it (GCC 12): forced inline
 * (always_inline) generated slower code for the unmasked units
 * (docs/notes/kernel-tuning.md#attn-tile-inline). */
static inline void at_tile(const struct jk_attn_args *a, const int hd, const float *kh, size_t ldk,
                           const float *vh, size_t ldv, int packed, const float *qt, float *st,
                           float *ot, float *mrow, float *lrow, float *alpha, const int32_t *qp,
                           int kt, int nk, int ilo, int ihi, int partial) {
    const int BQ = ATTN_BQ;
    const int nkp = (nk + ATTN_KG - 1) / ATTN_KG * ATTN_KG, niq = ihi - ilo;

    /* St = Qt . K^T: rows past nk reuse the last key and are hidden below */
    for (int g = 0; g < nkp; g += ATTN_KG) {
        const float *kp[ATTN_KG];
        for (int r = 0; r < ATTN_KG; r++) {
            const int j = at_min(kt + g + r, a->nkv - 1);
            kp[r] = kh + (size_t)j * ldk;
            if (packed) continue;
            /* the next group's K rows, this group's V rows (for the P.V pass) */
            at_prefetch_row(kh + (size_t)at_min(j + ATTN_KG, a->nkv - 1) * ldk, hd);
            at_prefetch_row(vh + (size_t)j * ldv, hd);
        }
#ifdef ATTN_S_OUTLINE
        if (hd == 64) at_s_tiles64(st + (size_t)g * BQ + ilo, qt + ilo, kp, niq);
        else
#endif
            at_s_tiles(st + (size_t)g * BQ + ilo, qt + ilo, kp, hd, niq);
    }
    if (partial)
        for (int j = 0; j < nk; j++) {
            const int32_t kp = a->k_pos[kt + j];
            for (int i = ilo; i < ihi; i += VW)
                vf_store(st + (size_t)j * BQ + i, vf_mask_q(vf_load(st + (size_t)j * BQ + i), qp + i, kp));
        }
    for (int j = nk; j < nkp; j++)
        for (int i = ilo; i < ihi; i += VW) vf_store(st + (size_t)j * BQ + i, vf_set1(-__builtin_inff()));

    /* online softmax, one vector of queries at a time */
    for (int i = ilo; i < ihi; i += VW) {
        vf mx0 = vf_set1(-__builtin_inff()), mx1 = mx0;
        int j = 0;
        for (; j + 2 <= nkp; j += 2) {
            mx0 = vf_max(mx0, vf_load(st + (size_t)j * BQ + i));
            mx1 = vf_max(mx1, vf_load(st + (size_t)(j + 1) * BQ + i));
        }
        if (j < nkp) mx0 = vf_max(mx0, vf_load(st + (size_t)j * BQ + i));
        const vf mold = vf_load(mrow + i);
        const vf mnew = vf_max(vf_max(mold, mx0), mx1);
        const vf mu = vf_max(mnew, vf_set1(-FLT_MAX));
        const vf al = vf_exp2(vf_sub(mold, mu));
        vf s0 = vf_zero(), s1 = vf_zero();
        for (j = 0; j + 2 <= nkp; j += 2) {
            vf p0 = vf_exp2(vf_sub(vf_load(st + (size_t)j * BQ + i), mu));
            vf p1 = vf_exp2(vf_sub(vf_load(st + (size_t)(j + 1) * BQ + i), mu));
            vf_store(st + (size_t)j * BQ + i, p0);
            vf_store(st + (size_t)(j + 1) * BQ + i, p1);
            s0 = vf_add(s0, p0), s1 = vf_add(s1, p1);
        }
        if (j < nkp) {
            vf p0 = vf_exp2(vf_sub(vf_load(st + (size_t)j * BQ + i), mu));
            vf_store(st + (size_t)j * BQ + i, p0);
            s0 = vf_add(s0, p0);
        }
        vf_store(lrow + i, vf_fma(vf_load(lrow + i), al, vf_add(s0, s1)));
        vf_store(mrow + i, mu);
        vf_store(alpha + i, al);
    }

    /* Ot = alpha Ot + V^T P */
    at_pv_tiles(ot + ilo, st + ilo, vh + (size_t)kt * ldv, ldv, nk, alpha + ilo, hd, niq);
}

/* One unit of the block path: head h, queries i0 .. i0 + ATTN_BQ. kh / vh are the head's
 * K and V rows (row j at kh + j ldk): in place in the caller's buffers (packed = 0: the
 * rows are prefetched ahead of use), or the contiguous copy at_attn_packed made (packed =
 * 1: the hardware prefetcher follows them, and a software prefetch there only costs:
 * docs/notes/kernel-tuning.md#attn-row-prefetch). */
static OPS_ALWAYS void at_block(const struct jk_attn_args *a, int h, int i0, const int hd, float *w,
                                const float *kh, size_t ldk, const float *vh, size_t ldv, int packed,
                                const int masked) {
    const int BQ = ATTN_BQ, nqb = at_min(BQ, a->nq - i0), bk = at_bk(a, hd);
    /* queries computed: nqb rounded up to a vector, the last register tile narrowed to the
     * vectors it needs (the last block of a clip is often short: 197 = 4 x 48 + 5, which
     * takes one vector, not a tile of ATTN_QV); rows of the tiles stay BQ long */
    const int nqt = (nqb + VW - 1) / VW * VW;
    float *qt = w, *ot = qt + (size_t)hd * BQ, *st = ot + (size_t)hd * BQ;
    float *mrow = st + (size_t)ATTN_BK_MAX * BQ, *lrow = mrow + BQ, *alpha = lrow + BQ;
    int32_t *qp = (int32_t *)(void *)(alpha + BQ);
    const float c = a->scale * ATTN_LOG2E;

    /* Qt = (Q scale log2 e)^T, zero for the padding queries: VW x VW blocks transposed in
     * registers, the dims past a multiple of VW (a head_dim such as 72) one at a time */
    const int hdv = hd / VW * VW;
    const vf vc = vf_set1(c);
    for (int i = 0; i < nqt; i += VW) {
        const float *q0 = a->q + (size_t)(i0 + i) * a->ldq + (size_t)h * hd;
        const int nr = at_min(VW, nqb - i);          /* rows of this block that are queries */
        for (int d0 = 0; d0 < hdv; d0 += VW) {
            vf blk[VW];
            for (int r = 0; r < VW; r++)
                blk[r] = r < nr ? vf_mul(vf_load(q0 + (size_t)r * a->ldq + d0), vc) : vf_zero();
            vf_transpose(blk);
            for (int k = 0; k < VW; k++) vf_store(qt + (size_t)(d0 + k) * BQ + i, blk[k]);
        }
        for (int d = hdv; d < hd; d++)
            for (int r = 0; r < VW; r++) qt[(size_t)d * BQ + i + r] = r < nr ? q0[(size_t)r * a->ldq + d] * c : 0.0f;
    }
    /* masked: each query vector's lowest and highest position (the padding queries past
     * nqb count in neither), for the tile skipping below */
    enum { NV = ATTN_BQ / VW };
    int32_t vqmin[NV], vqmax[NV];
    if (masked)
        for (int v = 0; v < nqt / VW; v++) {
            vqmin[v] = INT32_MAX, vqmax[v] = INT32_MIN;
            for (int i = v * VW; i < (v + 1) * VW; i++) {
                qp[i] = i < nqb ? a->q_pos[i0 + i] : INT32_MAX;
                if (i < nqb) vqmin[v] = at_min(vqmin[v], qp[i]), vqmax[v] = qp[i] > vqmax[v] ? qp[i] : vqmax[v];
            }
        }
    for (int i = 0; i < nqt; i += VW) {
        vf_store(mrow + i, vf_set1(-__builtin_inff()));
        vf_store(lrow + i, vf_zero());
    }
    /* Ot = 0 in one memset over whole rows of BQ: a loop over nqt per row compiles to a
     * memset call or a `rep stos` per row, 64 per unit at head_dim 64
     * (docs/notes/kernel-tuning.md#attn-ot-memset) */
    memset(ot, 0, sizeof(float) * (size_t)hd * BQ);

    for (int kt = 0; kt < a->nkv; kt += bk) {
        int nk = at_min(bk, a->nkv - kt);
        if (!masked) {
            at_tile(a, hd, kh, ldk, vh, ldv, packed, qt, st, ot, mrow, lrow, alpha, qp, kt, nk, 0, nqt, 0);
            continue;
        }
        /* the query vectors [vlo, vhi) from the first to the last that sees a key of the
         * tile (the others sit it out), and the tile's keys up to the last one they see */
        int32_t kmin = INT32_MAX, kmax = INT32_MIN, qmin = INT32_MAX, qmax = INT32_MIN;
        for (int j = kt; j < kt + nk; j++) kmin = at_min(kmin, a->k_pos[j]);
        int vlo = 0, vhi = nqt / VW;
        while (vlo < vhi && vqmax[vlo] < kmin) vlo++;
        while (vhi > vlo && vqmax[vhi - 1] < kmin) vhi--;
        if (vlo == vhi) continue;                 /* every key hidden from every query */
        for (int v = vlo; v < vhi; v++) qmin = at_min(qmin, vqmin[v]), qmax = vqmax[v] > qmax ? vqmax[v] : qmax;
        while (a->k_pos[kt + nk - 1] > qmax) nk--;   /* stops at the key that made vlo < vhi */
        for (int j = kt; j < kt + nk; j++) kmax = a->k_pos[j] > kmax ? a->k_pos[j] : kmax;
        at_tile(a, hd, kh, ldk, vh, ldv, packed, qt, st, ot, mrow, lrow, alpha, qp, kt, nk, vlo * VW,
                vhi * VW, qmin < kmax /* some key hidden from some query */);
    }

    /* o = Ot / l, transposed back as Qt was; where l is not > 0 it is 0 (no visible key:
     * zeros) or NaN (a NaN score or value: NaN out, as the reference gives) and is the
     * output itself */
    const vf zero = vf_zero();
    for (int i = 0; i < nqt; i += VW) {
        const vf l = vf_load(lrow + i);
        float *o0 = a->o + (size_t)(i0 + i) * a->ldo + (size_t)h * hd;
        const int nr = at_min(VW, nqb - i);
        for (int d0 = 0; d0 < hdv; d0 += VW) {
            vf blk[VW];
            for (int k = 0; k < VW; k++)
                blk[k] = vf_lt_sel(zero, l, vf_div(vf_load(ot + (size_t)(d0 + k) * BQ + i), l), l);
            vf_transpose(blk);
            for (int r = 0; r < nr; r++) vf_store(o0 + (size_t)r * a->ldo + d0, blk[r]);
        }
        for (int d = hdv; d < hd; d++) {
            float *x = ot + (size_t)d * BQ + i;
            vf_store(x, vf_lt_sel(zero, l, vf_div(vf_load(x), l), l));
            for (int r = 0; r < nr; r++) o0[(size_t)r * a->ldo + d] = x[r];
        }
    }
}

/* ---- row path: one query, keys along the lanes ----------------------------------------- */

/* acc[v] = alpha acc[v] + sum_{j < nk} p[j] V_j[v*VW ..] for NV vectors of head_dim */
static OPS_ALWAYS void at_pv_row(float *o, const float *p, const float *vp, size_t ldv, int nk,
                                 float alpha, const int nv) {
    vf acc[8];
    const vf al = vf_set1(alpha);
    for (int v = 0; v < nv; v++) acc[v] = vf_mul(vf_load(o + v * VW), al);
    for (int j = 0; j < nk; j++, vp += ldv) {
        const vf pj = vf_set1(p[j]);
        for (int v = 0; v < nv; v++) acc[v] = vf_fma(pj, vf_load(vp + v * VW), acc[v]);
    }
    for (int v = 0; v < nv; v++) vf_store(o + v * VW, acc[v]);
}

static OPS_ALWAYS void at_row(const struct jk_attn_args *a, int h, int i, const int hd, float *w,
                              const float *kh, size_t ldk, const float *vh, size_t ldv) {
    float *qs = w, *oacc = qs + ((hd + 15) & ~15), *sb = oacc + ((hd + 15) & ~15);
    int32_t *kb = (int32_t *)(void *)(sb + ATTN_RK);
    const int masked = a->q_pos && a->k_pos;
    const int32_t qpi = masked ? a->q_pos[i] : 0;
    const float *q = a->q + (size_t)i * a->ldq + (size_t)h * hd;
    const float c = a->scale * ATTN_LOG2E;
    for (int d = 0; d < hd; d++) qs[d] = q[d] * c, oacc[d] = 0.0f;
    float m = -__builtin_inff(), l = 0.0f;

    for (int kt = 0; kt < a->nkv; kt += ATTN_RK) {
        const int nk = at_min(ATTN_RK, a->nkv - kt);
        const int nkp = (nk + VW - 1) / VW * VW;
        int partial = 0;
        if (masked) {
            int32_t kmin = INT32_MAX, kmax = INT32_MIN;
            for (int j = kt; j < kt + nk; j++) {
                const int32_t kp = a->k_pos[j];
                kmin = kp < kmin ? kp : kmin, kmax = kp > kmax ? kp : kmax;
            }
            if (qpi < kmin) continue;
            partial = qpi < kmax;
        }
        /* s_j = q . k_j, VW keys at a time; keys past nk reuse the last one */
        for (int g = 0; g < nkp; g += VW) {
            vf acc[VW];
            for (int r = 0; r < VW; r++) {
                const float *kr = kh + (size_t)at_min(kt + g + r, a->nkv - 1) * ldk;
                at_prefetch_row(kh + (size_t)at_min(kt + g + r + 2 * VW, a->nkv - 1) * ldk, hd);
                at_prefetch_row(vh + (size_t)at_min(kt + g + r, a->nkv - 1) * ldv, hd);
                vf s = vf_zero();
                for (int d = 0; d < hd; d += VW) s = vf_fma(vf_load(kr + d), vf_load(qs + d), s);
                acc[r] = s;
            }
            vf s = vf_hsum_w(acc);
            if (partial) {
                for (int r = 0; r < VW; r++) kb[r] = g + r < nk ? a->k_pos[kt + g + r] : INT32_MIN;
                s = vf_mask_k(s, qpi, kb);
            }
            vf_store(sb + g, s);
        }
        for (int j = nk; j < nkp; j++) sb[j] = -__builtin_inff();

        vf mx = vf_set1(-__builtin_inff());
        for (int j = 0; j < nkp; j += VW) mx = vf_max(mx, vf_load(sb + j));
        const float tmax = vf_hmax(mx);
        float mu = m > tmax ? m : tmax;
        mu = mu > -FLT_MAX ? mu : -FLT_MAX;
        const vf muv = vf_set1(mu);
        float al[VW];
        vf_store(al, vf_exp2(vf_set1(m - mu)));
        vf ls = vf_zero();
        for (int j = 0; j < nkp; j += VW) {
            vf p = vf_exp2(vf_sub(vf_load(sb + j), muv));
            vf_store(sb + j, p);
            ls = vf_add(ls, p);
        }
        l = l * al[0] + vf_hsum(ls);
        m = mu;

        const float *v0 = vh + (size_t)kt * ldv;
        int d = 0;
        for (; d + 8 * VW <= hd; d += 8 * VW) at_pv_row(oacc + d, sb, v0 + d, ldv, nk, al[0], 8);
        if (d + 4 * VW <= hd) at_pv_row(oacc + d, sb, v0 + d, ldv, nk, al[0], 4), d += 4 * VW;
        if (d + 2 * VW <= hd) at_pv_row(oacc + d, sb, v0 + d, ldv, nk, al[0], 2), d += 2 * VW;
        if (d < hd) at_pv_row(oacc + d, sb, v0 + d, ldv, nk, al[0], 1);
    }
    float *o = a->o + (size_t)i * a->ldo + (size_t)h * hd;
    for (int d = 0; d < hd; d++) o[d] = l > 0.0f ? oacc[d] / l : l;   /* l 0 or NaN: as the block path */
}

/* ---- the slot ---------------------------------------------------------------------------- */

/* One work unit with head_dim fixed at compile time, and whether there is a mask. (The
 * instantiation happens here and not around the parallel loop: OpenMP outlines the loop
 * body before inlining, which would turn a constant head_dim back into a variable.) The
 * unmasked units are then compiled without the masked tiles' bookkeeping. */
static OPS_ALWAYS void at_unit(const struct jk_attn_args *a, int h, int b, int row, const int hd, float *w,
                               const float *kh, size_t ldk, const float *vh, size_t ldv, int packed,
                               const int masked) {
    if (row) at_row(a, h, b, hd, w, kh, ldk, vh, ldv);
    else at_block(a, h, b * ATTN_BQ, hd, w, kh, ldk, vh, ldv, packed, masked);
}
#define AT_UNIT_ARGS const struct jk_attn_args *a, int h, int b, int row, float *w, \
                     const float *kh, size_t ldk, const float *vh, size_t ldv, int packed
#define AT_UNIT(name, hd, masked) \
    static void name(AT_UNIT_ARGS) { at_unit(a, h, b, row, hd, w, kh, ldk, vh, ldv, packed, masked); }
AT_UNIT(at_unit64, 64, 0)
AT_UNIT(at_unit32, 32, 0)
AT_UNIT(at_unitn, a->head_dim, 0)
AT_UNIT(at_unit64_masked, 64, 1)
AT_UNIT(at_unit32_masked, 32, 1)
AT_UNIT(at_unitn_masked, a->head_dim, 1)
typedef void at_unit_fn(AT_UNIT_ARGS);
#undef AT_UNIT
#undef AT_UNIT_ARGS

static inline int at_thread(void) {
#ifdef JEPA_HAVE_OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* The block path with K and V packed (nkv >= ATTN_PACK_NKV(a)): head by head, the team copies
 * the head's K and V rows into kp / vp ([nkv][hd] each, in the workspace after the
 * threads' own regions), then computes its query blocks from there. The same units in the
 * same arithmetic as in place: the bits do not change, only where the rows are read. */
static void at_attn_packed(const struct jk_attn_args *a, const struct jk_attn_args *ab, at_unit_fn *unit,
                           int nb, int tail, int nt, float *ws, size_t per) {
    const int hd = a->head_dim;
    float *kp = ws + (size_t)nt * per, *vp = kp + (size_t)a->nkv * hd;
#pragma omp parallel num_threads(nt)
    {
        float *w = ws + (size_t)at_thread() * per;
        for (int h = 0; h < a->n_head; h++) {
#pragma omp for schedule(static)
            for (int j = 0; j < a->nkv; j++) {
                memcpy(kp + (size_t)j * hd, a->k + (size_t)j * a->ldk + (size_t)h * hd, sizeof(float) * (size_t)hd);
                memcpy(vp + (size_t)j * hd, a->v + (size_t)j * a->ldv + (size_t)h * hd, sizeof(float) * (size_t)hd);
            }
#pragma omp for schedule(dynamic, 1)
            for (int b = 0; b < nb + tail; b++) {
                if (b < nb) unit(ab, h, b, 0, w, kp, (size_t)hd, vp, (size_t)hd, 1);
                else unit(a, h, ab->nq + b - nb, 1, w, kp, (size_t)hd, vp, (size_t)hd, 1);
            }
        }
    }
}

void JK_SFX(attn)(const struct jk_attn_args *a) {
    const int hd = a->head_dim;
    if (jk_attn_edges(a, ATTN_HD_MAX, jk_attn_ref)) return;
    at_unit_fn *unit = a->q_pos && a->k_pos
                           ? (hd == 64 ? at_unit64_masked : hd == 32 ? at_unit32_masked : at_unitn_masked)
                           : (hd == 64 ? at_unit64 : hd == 32 ? at_unit32 : at_unitn);
    const int row = a->nq <= ATTN_ROW_NQ && hd % VW == 0;
    /* the block path's queries (ab.nq) and the last few past a multiple of VW that take
     * the row path instead (tail) */
    struct jk_attn_args ab = *a;
    const int tail = !row && hd % VW == 0 && a->nq % VW <= ATTN_ROW_TAIL ? a->nq % VW : 0;
    ab.nq -= tail;
    const int nb = row ? a->nq : (ab.nq + ATTN_BQ - 1) / ATTN_BQ;
    const size_t per = at_ws_floats(hd);
    float *ws = (float *)(void *)(((uintptr_t)a->ws + 63) & ~(uintptr_t)63);
    const int nt = a->nthreads > 0 ? a->nthreads : 1;
    if (!row && a->nkv >= ATTN_PACK_NKV(a)) {
        at_attn_packed(a, &ab, unit, nb, tail, nt, ws, per);
        return;
    }
    /* dynamic: masked units differ in cost; which thread runs a unit never changes its bits.
     * Per head: nb units of the block path (or of the row path, when `row`), then its tail
     * queries' row units. */
    const int per_head = nb + tail, nunits = a->n_head * per_head;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
    for (int u = 0; u < nunits; u++) {
        const int h = u / per_head, b = u % per_head;
        float *w = ws + (size_t)at_thread() * per;
        const float *kh = a->k + (size_t)h * hd, *vh = a->v + (size_t)h * hd;
        if (b < nb) unit(&ab, h, b, row, w, kh, a->ldk, vh, a->ldv, 0);
        else unit(a, h, ab.nq + b - nb, 1, w, kh, a->ldk, vh, a->ldv, 0);
    }
}

/* This build for kernels/tuning.c (jk_attn_kind_of): which kind the attn slot it fills is,
 * so that `jepa tune` and `jepa cpu` find its record from the kernel table. */
const struct jk_attn_kind_info JK_SFX(attn_kind) = {ATTN_KIND, JK_SFX(attn)};
