/*
 * gemm_pairs.h — the packing of the bf16 precision tier (kernels/kernels.h, JK_PREC_BF16):
 * X and W rounded to bf16 and laid out as the pairs that VDPBF16PS multiplies, for
 * gemm_avx512.c built with -DJK_GEMM_BF16X.
 *
 * A pair is one uint32: bf16(v[2p]) in its low half, bf16(v[2p + 1]) in its high half
 * (0 past the end of an odd K block), rounded to nearest even as runtime/dtype.h's
 * f32_to_bf16 does (NaN stays a quiet NaN). A K block of kc values is np = (kc + 1) / 2
 * pairs, which gemm_tmpl.h counts with GT_PACKED_K:
 *   B (W) panels  [p][GT_NR] pairs: the GT_NR columns of pair p side by side, so a k step
 *                 of the microkernel loads two vectors of 16 columns' pairs;
 *   A (X) panels  [i][np] pairs: each of the GT_MR rows contiguous, so packing is a
 *                 streaming conversion and the microkernel broadcasts row i's pair p
 *                 from a + i np + p.
 * The high tier (JK_PREC_HIGH, gemm_amx.c built with -DJK_GEMM_HIGH) packs each value v as
 * two bf16 terms, hi = bf16(v) and lo = bf16(v - hi) (|v - hi - lo| <= 2^-16 |v|; exact
 * for f16 and bf16 weights; lo = 0 where v - hi is NaN, i.e. v infinite or NaN, which hi
 * carries), in two panels of the layout above, hi then lo, each GT_NR np (B) or GT_MR np
 * (A) pairs: a panel of either operand is then 2 np pairs per column / row (GT_PACKED_K).
 * Only AVX2 and the intrinsics SIMDe implements are used here (kernels/x86/simd.h).
 * Include after gemm_x86.h (ld8, transpose8, gt_ahead); gt_pair1 and gt_weight_pair are
 * gemm_tmpl.h's.
 */
#ifndef JEPA_KERNELS_X86_GEMM_PAIRS_H
#define JEPA_KERNELS_X86_GEMM_PAIRS_H

#include <math.h>

/* 8 lanes rounded to bf16 (nearest even; NaN quieted), each in the high half of its lane
 * (the low half is left over from the rounding and is dropped by pairs_of). */
static ALWAYS_INLINE __m256i bf16_hi8(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    return _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), nan);
}

/* The high halves of lanes 0..7 of r as 16-bit values 0..7, in the low 8 bytes of each
 * 128-bit lane (qwords 0 and 2). */
static ALWAYS_INLINE __m256i pairs_of(__m256i r) {
    const __m256i pick = _mm256_setr_epi8(2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1,
                                          2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1);
    return _mm256_shuffle_epi8(r, pick);
}

/* 16 consecutive values (lo: 0..7, hi: 8..15) -> their 8 pairs in order. */
static ALWAYS_INLINE __m256i pairs16(__m256 lo, __m256 hi) {
    const __m256i a = pairs_of(bf16_hi8(lo)), b = pairs_of(bf16_hi8(hi));
    /* [a.q0, b.q0, a.q2, b.q2] -> [a.q0, a.q2, b.q0, b.q2] */
    return _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(a, b), 0xd8);
}

/* 8 consecutive values -> their 4 pairs in lanes 0..3 (lanes 4..7 zero: qwords 1 and 3
 * of pairs_of are). */
static ALWAYS_INLINE __m256i pairs8(__m256 v) {
    return _mm256_permute4x64_epi64(pairs_of(bf16_hi8(v)), 0xd8);
}

/* The high tier's hi of v: v rounded to bf16 (as the packing rounds), except where that
 * rounding overflows a finite v (|v| > 3.3961e38) to inf: there v truncated to bf16, which
 * is finite and leaves the residual lo finite too (an inf hi would make hi - inf - ... NaN
 * where the exact tier is finite). NaN and inf stay themselves. 8 lanes and one value. */
static ALWAYS_INLINE __m256 hi8(__m256 v) {
    const __m256i keep = _mm256_set1_epi32((int)0xffff0000u), abs = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf = _mm256_set1_epi32(0x7f800000), u = _mm256_castps_si256(v);
    const __m256i r = _mm256_and_si256(bf16_hi8(v), keep);
    const __m256i over = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(u, abs), inf),
                                             _mm256_cmpeq_epi32(_mm256_and_si256(r, abs), inf));
    return _mm256_castsi256_ps(_mm256_blendv_epi8(r, _mm256_and_si256(u, keep), over));
}
static ALWAYS_INLINE float hi1(float v) {
    const float r = bf16_to_f32(f32_to_bf16(v));
    if (isinf(r) && !isinf(v)) {
        uint32_t u;
        memcpy(&u, &v, 4);
        u &= 0xffff0000u;
        memcpy(&v, &u, 4);
        return v;
    }
    return r;
}

/* The term `part` of the high tier's split of v (0: hi, which the packing's rounding keeps
 * as it is; 1: v - hi, rounded to lo by the packing; NaN residuals -> 0), 8 lanes and one
 * value. The bf16 tier packs v itself (its rounding, overflow to inf included, is the
 * tier's definition: jk_gemm_bf16x_ref). */
static ALWAYS_INLINE __m256 part8(__m256 v, int part) {
#ifdef JK_GEMM_HIGH
    const __m256 hi = hi8(v);
    if (!part) return _mm256_blendv_ps(hi, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));   /* NaN: as it is */
    const __m256 d = _mm256_sub_ps(v, hi);
    return _mm256_and_ps(d, _mm256_cmp_ps(d, d, _CMP_ORD_Q));
#else
    (void)part;
    return v;
#endif
}
static ALWAYS_INLINE float part1(float v, int part) {
#ifdef JK_GEMM_HIGH
    if (v != v) return part ? 0.0f : v;
    const float hi = hi1(v);
    if (!part) return hi;
    const float d = v - hi;
    return d == d ? d : 0.0f;
#else
    (void)part;
    return v;
#endif
}

/* mc rows of X (row stride ldx) over kc -> the term `part` of GT_MR-row panels of pairs,
 * [i][np] each, panel after panel (`panel` pairs apart); rows past mc repeat the last row. */
static ALWAYS_INLINE void pack_a_part(uint32_t *p, const float *x, size_t ldx, int mc, int kc, int part,
                                      size_t panel) {
    const int np = (kc + 1) / 2;
    for (int i0 = 0; i0 < mc; i0 += GT_MR, p += panel) {
        for (int i = 0; i < GT_MR; i++) {
            const float *r = x + (size_t)gt_min(i0 + i, mc - 1) * ldx;
            uint32_t *d = p + (size_t)i * np;
            int k = 0;
            for (; k + 16 <= kc; k += 16)
                _mm256_storeu_si256((__m256i *)(void *)(d + k / 2),
                                    pairs16(part8(_mm256_loadu_ps(r + k), part),
                                            part8(_mm256_loadu_ps(r + k + 8), part)));
            for (; k + 1 < kc; k += 2) d[k / 2] = gt_pair1(part1(r[k], part), part1(r[k + 1], part));
            if (k < kc) d[k / 2] = gt_pair1(part1(r[k], part), 0.0f);
        }
    }
}

/* X -> pair panels (gemm_tmpl.h's gt_pack_a): the bf16 tier's, or the high tier's hi and
 * lo panels. */
static void gt_pack_a(float *pf, const float *x, size_t ldx, int mc, int kc) {
    uint32_t *p = (uint32_t *)(void *)pf;
    const size_t np = (size_t)(kc + 1) / 2;
#ifdef JK_GEMM_HIGH
    pack_a_part(p, x, ldx, mc, kc, 0, 2 * GT_MR * np);
    pack_a_part(p + GT_MR * np, x, ldx, mc, kc, 1, 2 * GT_MR * np);
#else
    pack_a_part(p, x, ldx, mc, kc, 0, GT_MR * np);
#endif
}

/* The term `part` of weights k and k + 1 of a row as one pair (k + 1 == kend: 0 in the
 * high half). */
static ALWAYS_INLINE uint32_t weight_pair(enum jk_dtype t, const uint8_t *row, int k, int kend, int part) {
    return gt_pair1(part1(gt_weight1(t, row, k), part),
                 k + 1 < kend ? part1(gt_weight1(t, row, k + 1), part) : 0.0f);
}

/* nc W rows (ldw bytes apart) over k0 .. k0 + kc -> the term `part` of [p][GT_NR] pair
 * panels, panel after panel (`panel` pairs apart); rows past nc repeat the last row. 8 rows
 * x 16 weights at a time: each row's 16 become 8 pairs, and the 8 x 8 pairs are transposed
 * in registers. The next panel's bytes are fetched meanwhile, as the exact tier's pack_b
 * does. */
static ALWAYS_INLINE void pack_b_part(enum jk_dtype t, uint32_t *p, const uint8_t *w, size_t ldw, int nc,
                                      int k0, int kc, int part, size_t panel) {
    for (int j0 = 0; j0 < nc; j0 += GT_NR, p += panel) {
        const uint8_t *r[GT_NR];
        for (int j = 0; j < GT_NR; j++) r[j] = w + (size_t)gt_min(j0 + j, nc - 1) * ldw;
        struct gt_ahead ahead = {.at = NULL};
        if (j0 + GT_NR < nc)
            gt_ahead_start(&ahead, w + (size_t)(j0 + GT_NR) * ldw, ldw, gt_min(GT_NR, nc - j0 - GT_NR), t, k0,
                           kc, kc / 16 * (GT_NR / 8));
        int k = 0;
        for (; k + 16 <= kc; k += 16) {
            for (int h = 0; h < GT_NR; h += 8) {
                if (ahead.at) gt_ahead_step(&ahead);
                __m256 v[8];
                for (int j = 0; j < 8; j++)
                    v[j] = _mm256_castsi256_ps(pairs16(part8(ld8(t, r[h + j], k0 + k), part),
                                                       part8(ld8(t, r[h + j], k0 + k + 8), part)));
                transpose8(v);
                for (int i = 0; i < 8; i++)
                    _mm256_store_si256((__m256i *)(void *)(p + (size_t)(k / 2 + i) * GT_NR + h),
                                       _mm256_castps_si256(v[i]));
            }
        }
        if (k + 8 <= kc) {   /* a K block of 8 (mod 16): 4 more pairs */
            for (int h = 0; h < GT_NR; h += 8) {
                __m256 v[8];
                for (int j = 0; j < 8; j++)
                    v[j] = _mm256_castsi256_ps(pairs8(part8(ld8(t, r[h + j], k0 + k), part)));
                transpose8(v);
                for (int i = 0; i < 4; i++)
                    _mm256_store_si256((__m256i *)(void *)(p + (size_t)(k / 2 + i) * GT_NR + h),
                                       _mm256_castps_si256(v[i]));
            }
            k += 8;
        }
        for (; k < kc; k += 2)
            for (int j = 0; j < GT_NR; j++)
                p[(size_t)(k / 2) * GT_NR + j] = weight_pair(t, r[j], k0 + k, k0 + kc, part);
    }
}

/* W -> pair panels (gemm_x86.h's GEMM_X86_PACK_B): the bf16 tier's, or the high tier's hi
 * and lo panels. */
static ALWAYS_INLINE void pack_b_pairs(enum jk_dtype t, float *pf, const uint8_t *w, size_t ldw, int nc,
                                       int k0, int kc) {
    uint32_t *p = (uint32_t *)(void *)pf;
    const size_t np = (size_t)(kc + 1) / 2;
#ifdef JK_GEMM_HIGH
    pack_b_part(t, p, w, ldw, nc, k0, kc, 0, 2 * GT_NR * np);
    pack_b_part(t, p + GT_NR * np, w, ldw, nc, k0, kc, 1, 2 * GT_NR * np);
#else
    pack_b_part(t, p, w, ldw, nc, k0, kc, 0, GT_NR * np);
#endif
}

#endif
