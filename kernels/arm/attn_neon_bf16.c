/*
 * attn_neon_bf16.c — the bf16 precision tier's attention on aarch64 with FEAT_BF16 (BFDOT):
 * the attn / attn_ws slots that jk_init_arm_precision installs for JK_PREC_BF16 beside the
 * neon_bf16 matmul. Built with -march=armv8.2-a+bf16 (kernels/meson.build, the jk_neon_bf16
 * library) and reached only through the table after the CPU check (JEPA_CPU_BF16).
 *
 *   o_i = sum_j softmax_j(scale q_i . k_j) v_j     over the keys j visible to query i
 *
 * with the operands of both products in bf16, as jk_attn_bf16x_ref (kernels/ref/attn_ref.c)
 * defines it: q, k and v rounded to bf16 (nearest even, in integer arithmetic: bf16_neon.h),
 * the scores and the online softmax in f32, each probability rounded to bf16 before it
 * multiplies v, and the output divided by the sum of the unrounded probabilities.
 *
 * Layout (a pair: two bf16 in one uint32, the operand of BFDOT; bf16_neon.h):
 *  - per head, the team first packs K as [nkv][hp4] pairs along head_dim (hp4: the head's
 *    pairs rounded up to 4, zeros past head_dim) and V as [(nkv + 1) / 2][hdp] pairs along
 *    the key index (keys 2jp and 2jp + 1 of dim d; hdp: head_dim rounded up to 4; zeros
 *    past the last key and past head_dim), shared by every unit of the head;
 *  - a unit (head, block of AB_BQ queries) packs its queries as Qp [hp4][AB_BQ] pairs, the
 *    queries along the vector lanes as in kernels/simd/attn_tmpl.h (every softmax step is
 *    vertical).
 * Per key tile of bk keys (bk even, so that no key pair straddles two tiles):
 *    St[j][i] = c sum_p K[j].pair(p) . Qp[p][i]    c = scale log2(e): BFDOT by element, a
 *                                                  K row's 4 pairs in one register
 *    St = -inf where key j is hidden from query i, or j is past the last key
 *    m'_i = max(m_i, max_j St[j][i]) (at least -FLT_MAX), alpha_i = 2^(m_i - m'_i)
 *    P[j][i] = 2^(St[j][i] - m'_i), l_i = alpha_i l_i + sum_j P[j][i]     (f32)
 *    Pp[jp][i] = the pair (bf16(P[2jp][i]), bf16(P[2jp + 1][i]))
 *    Ot[d][i] = alpha_i Ot[d][i] + sum_jp V.pair(jp, d) . Pp[jp][i]      (BFDOT by element,
 *                                                  4 dims' pairs of V in one register)
 * and o_i[d] = l_i > 0 ? Ot[d][i] / l_i : l_i (no visible key: zeros; NaN stays NaN).
 * A tile that every query of the block is masked from is skipped (it would change no bit:
 * P = 0 and alpha = 1, or l and O still 0).
 *
 * BFDOT (FPCR.EBF = 0) rounds each pair's sum and its addition to the accumulator to odd
 * and flushes subnormal inputs and results to zero (docs/precision.md): the checkasm bound
 * allows for it (tests/checkasm/). Units are fixed (head, query block) and each is computed
 * by one thread in a fixed order, so the bits do not depend on the thread count. No
 * allocation: everything lives in ws (jk_attn_ws_neon_bf16). Head dims past AB_HD_MAX take
 * the reference. Untimed: no Arm machine with FEAT_BF16 was at hand; checked under
 * qemu-aarch64 (CPU max).
 */
#include <arm_neon.h>
#include <float.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef JEPA_HAVE_OPENMP
#include <omp.h>
#endif

#include "kernels/arm/arm.h"
#include "kernels/arm/bf16_neon.h"
#include "kernels/arm/vec_neon.h"
#include "kernels/ref/ref.h"
#include "runtime/dtype.h"

#define AB_BQ 48        /* queries per unit: 12 vectors */
#define AB_NV (AB_BQ / 4)
#define AB_KG 8         /* keys of an S micro-tile */
#define AB_SQV 2        /* its query vectors: 16 accumulators + 8 Q pairs' registers + K */
#define AB_PQV 3        /* query vectors of a P.V micro-tile of 8 dims: 24 accumulators */
#define AB_BK_MAX 128
#define AB_HD_MAX 512
#define AB_LOG2E 1.44269504088896340736f
#define AI inline __attribute__((always_inline))

static inline int ab_min(int a, int b) { return a < b ? a : b; }
static inline int ab_up4(int n) { return (n + 3) & ~3; }

/* Keys per tile: a K tile of about 16 KiB of bf16 (8192 values), a multiple of AB_KG (so
 * even), at most AB_BK_MAX. The tile edges fix the order of the softmax's updates. */
static inline int ab_bk(int hd) {
    const int bk = 8192 / hd / AB_KG * AB_KG;
    return bk < AB_KG ? AB_KG : bk > AB_BK_MAX ? AB_BK_MAX : bk;
}

/* One thread's workspace in 4-byte words, each region a multiple of 16 words (64 bytes):
 * Qp [hp4][BQ], Ot [hdp][BQ], St [BK_MAX][BQ], Pp [BK_MAX / 2][BQ], m, l, alpha, qpos [BQ]. */
static inline size_t ab_ws_words(int hd) {
    const size_t hp4 = (size_t)ab_up4((hd + 1) / 2), hdp = (size_t)ab_up4(hd);
    return (hp4 + hdp + AB_BK_MAX + AB_BK_MAX / 2 + 4) * AB_BQ;
}

/* The head's packed K and V, shared by the team: K [nkv][hp4], V [(nkv + 1) / 2][hdp] pairs. */
static inline size_t ab_kv_words(int hd, int nkv) {
    const size_t hp4 = (size_t)ab_up4((hd + 1) / 2), hdp = (size_t)ab_up4(hd);
    return (size_t)nkv * hp4 + (size_t)((nkv + 1) / 2) * hdp;
}

size_t jk_attn_ws_neon_bf16(int nthreads, int n_head, int head_dim, int nkv) {
    if (head_dim < 1 || head_dim > AB_HD_MAX)
        return jk_attn_ws_ref(nthreads, n_head, head_dim, nkv);
    const size_t nt = (size_t)(nthreads > 0 ? nthreads : 1);
    return (nt * ab_ws_words(head_dim) + ab_kv_words(head_dim, nkv > 0 ? nkv : 0)) * 4 + 64;
}

static inline uint32_t ab_pair(float a, float b) {
    return (uint32_t)f32_to_bf16(a) | (uint32_t)f32_to_bf16(b) << 16;
}

/* K row j of head h -> hp4 pairs along head_dim (zeros past hd) */
static void ab_pack_k(uint32_t *dst, const float *src, int hd, int hp4) {
    int d = 0;
    for (; d + 8 <= hd; d += 8) {
        const float32x4_t p = pairs8(vld1q_f32(src + d), vld1q_f32(src + d + 4));
        vst1q_u32(dst + d / 2, vreinterpretq_u32_f32(p));
    }
    for (; d < hd; d += 2) dst[d / 2] = ab_pair(src[d], d + 1 < hd ? src[d + 1] : 0.0f);
    for (int p = (hd + 1) / 2; p < hp4; p++) dst[p] = 0;
}

/* V rows r0 and r1 (r1 NULL: past the last key, zeros) -> hdp pairs along the key index */
static void ab_pack_v(uint32_t *dst, const float *r0, const float *r1, int hd, int hdp) {
    static const float zero[4];
    int d = 0;
    for (; d + 4 <= hd; d += 4)
        vst1q_u32(dst + d, pairs_ab(vld1q_f32(r0 + d), r1 ? vld1q_f32(r1 + d) : vld1q_f32(zero)));
    for (; d < hd; d++) dst[d] = ab_pair(r0[d], r1 ? r1[d] : 0.0f);
    for (; d < hdp; d++) dst[d] = 0;
}

/* r[0], r[1] = the least and the greatest of the n >= 1 positions p */
static void ab_range(const int32_t *p, int n, int32_t r[2]) {
    r[0] = INT32_MAX, r[1] = INT32_MIN;
    for (int j = 0; j < n; j++) r[0] = p[j] < r[0] ? p[j] : r[0], r[1] = p[j] > r[1] ? p[j] : r[1];
}

#define BF(x) vreinterpretq_bf16_u32(x)

/* St[r][i] = c sum_p K_r.pair(p) Qp[p][i] for AB_KG keys (packed rows kr[r]) and the QV
 * query vectors at qp / st (rows AB_BQ apart). */
static AI void ab_s_tile(float *st, const uint32_t *qp, const uint32_t *const *kr, const int hp4,
                         float c, const int QV) {
    float32x4_t acc[AB_KG][AB_SQV];
    for (int r = 0; r < AB_KG; r++)
        for (int v = 0; v < QV; v++) acc[r][v] = vdupq_n_f32(0.0f);
    for (int p = 0; p < hp4; p += 4) {
        bfloat16x8_t q0[AB_SQV], q1[AB_SQV], q2[AB_SQV], q3[AB_SQV];
        for (int v = 0; v < QV; v++) {
            q0[v] = BF(vld1q_u32(qp + (size_t)(p + 0) * AB_BQ + 4 * v));
            q1[v] = BF(vld1q_u32(qp + (size_t)(p + 1) * AB_BQ + 4 * v));
            q2[v] = BF(vld1q_u32(qp + (size_t)(p + 2) * AB_BQ + 4 * v));
            q3[v] = BF(vld1q_u32(qp + (size_t)(p + 3) * AB_BQ + 4 * v));
        }
        for (int r = 0; r < AB_KG; r++) {
            const bfloat16x8_t k = BF(vld1q_u32(kr[r] + p));
            for (int v = 0; v < QV; v++) {
                acc[r][v] = vbfdotq_laneq_f32(acc[r][v], q0[v], k, 0);
                acc[r][v] = vbfdotq_laneq_f32(acc[r][v], q1[v], k, 1);
                acc[r][v] = vbfdotq_laneq_f32(acc[r][v], q2[v], k, 2);
                acc[r][v] = vbfdotq_laneq_f32(acc[r][v], q3[v], k, 3);
            }
        }
    }
    const float32x4_t cv = vdupq_n_f32(c);
    for (int r = 0; r < AB_KG; r++)
        for (int v = 0; v < QV; v++)
            vst1q_f32(st + (size_t)r * AB_BQ + 4 * v, vmulq_f32(acc[r][v], cv));
}

/* Ot[e][i] = alpha_i Ot[e][i] + sum_{jp < npair} V.pair(jp, e) Pp[jp][i] for ND dims (4 or
 * 8; vp: pair row 0 at the first of them, rows hdp apart) and the QV query vectors at
 * ot / pp / alpha. */
static AI void ab_pv_tile(float *ot, const uint32_t *pp, const uint32_t *vp, int hdp, int npair,
                          const float *alpha, const int ND, const int QV) {
    float32x4_t acc[8][AB_PQV];
    for (int v = 0; v < QV; v++) {
        const float32x4_t al = vld1q_f32(alpha + 4 * v);
        for (int e = 0; e < ND; e++)
            acc[e][v] = vmulq_f32(vld1q_f32(ot + (size_t)e * AB_BQ + 4 * v), al);
    }
    for (int jp = 0; jp < npair; jp++, pp += AB_BQ, vp += hdp) {
        bfloat16x8_t pv[AB_PQV];
        for (int v = 0; v < QV; v++) pv[v] = BF(vld1q_u32(pp + 4 * v));
        const bfloat16x8_t v0 = BF(vld1q_u32(vp));
        for (int v = 0; v < QV; v++) {
            acc[0][v] = vbfdotq_laneq_f32(acc[0][v], pv[v], v0, 0);
            acc[1][v] = vbfdotq_laneq_f32(acc[1][v], pv[v], v0, 1);
            acc[2][v] = vbfdotq_laneq_f32(acc[2][v], pv[v], v0, 2);
            acc[3][v] = vbfdotq_laneq_f32(acc[3][v], pv[v], v0, 3);
        }
        if (ND == 8) {
            const bfloat16x8_t v1 = BF(vld1q_u32(vp + 4));
            for (int v = 0; v < QV; v++) {
                acc[4][v] = vbfdotq_laneq_f32(acc[4][v], pv[v], v1, 0);
                acc[5][v] = vbfdotq_laneq_f32(acc[5][v], pv[v], v1, 1);
                acc[6][v] = vbfdotq_laneq_f32(acc[6][v], pv[v], v1, 2);
                acc[7][v] = vbfdotq_laneq_f32(acc[7][v], pv[v], v1, 3);
            }
        }
    }
    for (int e = 0; e < ND; e++)
        for (int v = 0; v < QV; v++) vst1q_f32(ot + (size_t)e * AB_BQ + 4 * v, acc[e][v]);
}

/* P.V over every dim for QV query vectors */
static AI void ab_pv_dims(float *ot, const uint32_t *pp, const uint32_t *vp, const int hdp,
                          int npair, const float *alpha, const int QV) {
    int d = 0;
    for (; d + 8 <= hdp; d += 8)
        ab_pv_tile(ot + (size_t)d * AB_BQ, pp, vp + d, hdp, npair, alpha, 8, QV);
    if (d < hdp) ab_pv_tile(ot + (size_t)d * AB_BQ, pp, vp + d, hdp, npair, alpha, 4, QV);
}

/* One unit: head h, queries i0 .. i0 + nqb (nqb <= AB_BQ), against the head's packed K
 * (kp) and V (vp); w: the thread's workspace. hd is a constant where the caller made it one. */
static AI void ab_unit(const struct jk_attn_args *a, int h, int i0, int nqb, const int hd,
                       uint32_t *w, const uint32_t *kp, const uint32_t *vp, const int masked) {
    const int hp4 = ab_up4((hd + 1) / 2), hdp = ab_up4(hd), BQ = AB_BQ, bk = ab_bk(hd);
    uint32_t *qp = w;
    float *ot = (float *)(void *)(qp + (size_t)hp4 * BQ);
    float *st = ot + (size_t)hdp * BQ;
    uint32_t *pp = (uint32_t *)(void *)(st + (size_t)AB_BK_MAX * BQ);
    float *mrow = (float *)(void *)(pp + (size_t)AB_BK_MAX / 2 * BQ);
    float *lrow = mrow + BQ, *alpha = lrow + BQ;
    int32_t *qpos = (int32_t *)(void *)(alpha + BQ);
    const int nqt = ab_up4(nqb), nv = nqt / 4;
    const float c = a->scale * AB_LOG2E;

    /* Qp: the block's queries (zeros past nqb, which are computed and never stored) */
    for (int i = 0; i < nqt; i++) {
        const float *q = a->q + (size_t)(i0 + ab_min(i, nqb - 1)) * a->ldq + (size_t)h * hd;
        for (int p = 0; p < hp4; p++) {
            const int d = 2 * p;
            const float x0 = d < hd ? q[d] : 0.0f, x1 = d + 1 < hd ? q[d + 1] : 0.0f;
            qp[(size_t)p * BQ + i] = i < nqb ? ab_pair(x0, x1) : 0;
        }
    }
    int32_t qr[2] = {0, 0};
    if (masked) {   /* (the padding queries: INT32_MIN, hidden from every key) */
        for (int i = 0; i < nqt; i++) qpos[i] = i < nqb ? a->q_pos[i0 + i] : INT32_MIN;
        ab_range(qpos, nqb, qr);
    }
    const int32_t qmin = qr[0], qmax = qr[1];
    for (int i = 0; i < nqt; i += 4) {
        vst1q_f32(mrow + i, vdupq_n_f32(-__builtin_inff()));
        vst1q_f32(lrow + i, vdupq_n_f32(0.0f));
    }
    memset(ot, 0, sizeof(float) * (size_t)hdp * BQ);

    for (int kt = 0; kt < a->nkv; kt += bk) {
        const int nk = ab_min(bk, a->nkv - kt), nkp = (nk + AB_KG - 1) / AB_KG * AB_KG;
        int partial = 0;
        if (masked) {
            int32_t kr[2];
            ab_range(a->k_pos + kt, nk, kr);
            if (qmax < kr[0]) continue;   /* every key hidden from every query */
            partial = qmin < kr[1];       /* some key hidden from some query */
        }
        /* St = c Qp . K^T; rows past nk reuse the last key and are dropped below */
        for (int g = 0; g < nkp; g += AB_KG) {
            const uint32_t *kr[AB_KG];
            for (int r = 0; r < AB_KG; r++)
                kr[r] = kp + (size_t)ab_min(kt + g + r, a->nkv - 1) * hp4;
            float *sg = st + (size_t)g * BQ;
            int v = 0;
            for (; v + AB_SQV <= nv; v += AB_SQV)
                ab_s_tile(sg + 4 * v, qp + 4 * v, kr, hp4, c, AB_SQV);
            if (v < nv) ab_s_tile(sg + 4 * v, qp + 4 * v, kr, hp4, c, 1);
        }
        /* the online softmax, 4 queries at a time; P rounded to bf16 pairs of keys */
        const int npair = (nk + 1) / 2;
        for (int i = 0; i < nqt; i += 4) {
            float32x4_t mx = vdupq_n_f32(-__builtin_inff());
            for (int j = 0; j < nk; j++) {
                float32x4_t s = vld1q_f32(st + (size_t)j * BQ + i);
                if (partial) s = vf_mask_q(s, qpos + i, a->k_pos[kt + j]);
                vst1q_f32(st + (size_t)j * BQ + i, s);
                mx = vmaxq_f32(mx, s);
            }
            const float32x4_t m0 = vld1q_f32(mrow + i);
            float32x4_t mu = vmaxq_f32(m0, mx);
            mu = vmaxq_f32(mu, vdupq_n_f32(-FLT_MAX));   /* NaN stays NaN (FMAX) */
            const float32x4_t al = vf_exp2(vsubq_f32(m0, mu));
            float32x4_t ls = vdupq_n_f32(0.0f);
            for (int jp = 0; jp < npair; jp++) {
                const int j = 2 * jp;
                const float *sj = st + (size_t)j * BQ + i;
                const float32x4_t p0 = vf_exp2(vsubq_f32(vld1q_f32(sj), mu));
                const float32x4_t p1 = j + 1 < nk ? vf_exp2(vsubq_f32(vld1q_f32(sj + BQ), mu))
                                                  : vdupq_n_f32(0.0f);
                ls = vaddq_f32(vaddq_f32(ls, p0), p1);
                vst1q_u32(pp + (size_t)jp * BQ + i, pairs_ab(p0, p1));
            }
            vst1q_f32(lrow + i, vaddq_f32(vmulq_f32(al, vld1q_f32(lrow + i)), ls));
            vst1q_f32(mrow + i, mu);
            vst1q_f32(alpha + i, al);
        }
        /* Ot = alpha Ot + V^T Pp */
        const uint32_t *vt = vp + (size_t)(kt / 2) * hdp;
        int v = 0;
        for (; v + AB_PQV <= nv; v += AB_PQV)
            ab_pv_dims(ot + 4 * v, pp + 4 * v, vt, hdp, npair, alpha + 4 * v, AB_PQV);
        if (nv - v == 2) ab_pv_dims(ot + 4 * v, pp + 4 * v, vt, hdp, npair, alpha + 4 * v, 2);
        else if (nv - v == 1) ab_pv_dims(ot + 4 * v, pp + 4 * v, vt, hdp, npair, alpha + 4 * v, 1);
    }

    /* o = Ot / l (l not > 0: 0 with no visible key, NaN from a NaN score or value: itself) */
    for (int i = 0; i < nqb; i++) {
        const float l = lrow[i];
        float *o = a->o + (size_t)(i0 + i) * a->ldo + (size_t)h * hd;
        for (int d = 0; d < hd; d++) o[d] = l > 0.0f ? ot[(size_t)d * BQ + i] / l : l;
    }
}

/* One unit, with head_dim a constant where it is 64 or 32 (constant trip counts) and the
 * mask's bookkeeping compiled out where there is no mask. */
static void ab_unit_any(const struct jk_attn_args *a, int h, int i0, int nqb, uint32_t *w,
                        const uint32_t *kp, const uint32_t *vp) {
    const int hd = a->head_dim;
    if (a->q_pos && a->k_pos) {
        if (hd == 64) ab_unit(a, h, i0, nqb, 64, w, kp, vp, 1);
        else if (hd == 32) ab_unit(a, h, i0, nqb, 32, w, kp, vp, 1);
        else ab_unit(a, h, i0, nqb, hd, w, kp, vp, 1);
    } else if (hd == 64) {
        ab_unit(a, h, i0, nqb, 64, w, kp, vp, 0);
    } else if (hd == 32) {
        ab_unit(a, h, i0, nqb, 32, w, kp, vp, 0);
    } else {
        ab_unit(a, h, i0, nqb, hd, w, kp, vp, 0);
    }
}

void jk_attn_neon_bf16(const struct jk_attn_args *a) {
    if (jk_attn_edges(a, AB_HD_MAX, jk_attn_bf16x_ref)) return;
    const int hd = a->head_dim, hp4 = ab_up4((hd + 1) / 2), hdp = ab_up4(hd), nkv = a->nkv;
    const int npair = (nkv + 1) / 2, nb = (a->nq + AB_BQ - 1) / AB_BQ;
    const int nt = a->nthreads > 0 ? a->nthreads : 1;
    const size_t per = ab_ws_words(hd);
    uint32_t *ws = (uint32_t *)(void *)(((uintptr_t)a->ws + 63) & ~(uintptr_t)63);
    uint32_t *kp = ws + (size_t)nt * per, *vp = kp + (size_t)nkv * hp4;
#pragma omp parallel num_threads(nt)
    {
#ifdef JEPA_HAVE_OPENMP
        uint32_t *w = ws + (size_t)omp_get_thread_num() * per;
#else
        uint32_t *w = ws;
#endif
        for (int h = 0; h < a->n_head; h++) {
            const float *kh = a->k + (size_t)h * hd, *vh = a->v + (size_t)h * hd;
#pragma omp for schedule(static)
            for (int j = 0; j < nkv; j++)
                ab_pack_k(kp + (size_t)j * hp4, kh + (size_t)j * a->ldk, hd, hp4);
#pragma omp for schedule(static)
            for (int jp = 0; jp < npair; jp++)
                ab_pack_v(vp + (size_t)jp * hdp, vh + (size_t)(2 * jp) * a->ldv,
                          2 * jp + 1 < nkv ? vh + (size_t)(2 * jp + 1) * a->ldv : NULL, hd, hdp);
            /* (the implicit barriers: the packing is done before any unit reads it, and every
             * unit of this head is done before the next head's packing overwrites it) */
#pragma omp for schedule(dynamic, 1)
            for (int b = 0; b < nb; b++)
                ab_unit_any(a, h, b * AB_BQ, ab_min(AB_BQ, a->nq - b * AB_BQ), w, kp, vp);
        }
    }
}
