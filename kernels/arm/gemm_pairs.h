/*
 * gemm_pairs.h — the packing of the bf16 precision tier (kernels/kernels.h, JK_PREC_BF16) on
 * aarch64: X and W rounded to bf16 and laid out as the pairs that BFDOT multiplies, for
 * gemm_neon.c built with -DJK_GEMM_BF16X.
 *
 * A pair is one uint32: bf16(v[2p]) in its low half, bf16(v[2p + 1]) in its high half
 * (0 past the end of an odd K block), rounded to nearest even exactly as runtime/dtype.h's
 * f32_to_bf16 does (NaN stays a quiet NaN), in integer arithmetic (bf16_neon.h). A K block
 * of kc values is np = (kc + 1) / 2 pairs (gemm_tmpl.h's GT_PACKED_K), laid out as the f32
 * panels are with a pair in place of a k:
 *   B (W) panels  [p][GT_NR] pairs: a k-pair step loads 3 q registers of 4 columns' pairs;
 *   A (X) panels  [p][GT_MR] pairs: 2 q registers of 4 rows' pairs, whose lanes BFDOT
 *                 takes by element.
 * Include after ld8 and transpose4 (gemm_neon.c); gt_pair1 and gt_weight_pair are
 * gemm_tmpl.h's.
 */
#ifndef JEPA_KERNELS_ARM_GEMM_PAIRS_H
#define JEPA_KERNELS_ARM_GEMM_PAIRS_H

#include "kernels/arm/bf16_neon.h"   /* bf16_hi4, pairs8 */

/* mc rows of X (row stride ldx) over kc -> GT_MR-row panels of pairs, [p][GT_MR] each, panel
 * after panel (GT_MR np pairs apart); rows past mc repeat the last row. 4 rows x 8 values
 * at a time: each row's 8 become 4 pairs, and the 4 x 4 pairs are transposed. */
static void gt_pack_a(float *pf, const float *x, size_t ldx, int mc, int kc) {
    uint32_t *p = (uint32_t *)(void *)pf;
    const int np = (kc + 1) / 2;
    for (int i0 = 0; i0 < mc; i0 += GT_MR, p += (size_t)GT_MR * np) {
        const float *r[GT_MR];
        for (int i = 0; i < GT_MR; i++) r[i] = x + (size_t)gt_min(i0 + i, mc - 1) * ldx;
        int k = 0;
        for (; k + 8 <= kc; k += 8) {
            for (int h = 0; h < GT_MR; h += 4) {
                float32x4_t v[4];
                for (int j = 0; j < 4; j++)
                    v[j] = pairs8(vld1q_f32(r[h + j] + k), vld1q_f32(r[h + j] + k + 4));
                transpose4(v);
                for (int q = 0; q < 4; q++)
                    vst1q_f32((float *)(void *)(p + (size_t)(k / 2 + q) * GT_MR + h), v[q]);
            }
        }
        for (; k < kc; k += 2)
            for (int i = 0; i < GT_MR; i++)
                p[(size_t)(k / 2) * GT_MR + i] = gt_pair1(r[i][k], k + 1 < kc ? r[i][k + 1] : 0.0f);
    }
}

/* nc W rows (ldw bytes apart) over k0 .. k0 + kc -> [p][GT_NR] pair panels, panel after
 * panel (GT_NR np pairs apart); rows past nc repeat the last row. 4 rows x 8 weights at a
 * time (decoded by ld8, exactly), as the exact tier's pack_b does with f32 values. */
static ALWAYS_INLINE void pack_b_pairs(enum jk_dtype t, float *pf, const uint8_t *w, size_t ldw,
                                       int nc, int k0, int kc) {
    uint32_t *p = (uint32_t *)(void *)pf;
    const int np = (kc + 1) / 2;
    for (int j0 = 0; j0 < nc; j0 += GT_NR, p += (size_t)GT_NR * np) {
        const uint8_t *r[GT_NR];
        for (int j = 0; j < GT_NR; j++) r[j] = w + (size_t)gt_min(j0 + j, nc - 1) * ldw;
        int k = 0;
        for (; k + 8 <= kc; k += 8) {
            for (int h = 0; h < GT_NR; h += 4) {
                float32x4_t v[4];
                for (int j = 0; j < 4; j++) {
                    float32x4_t lo, hi;
                    ld8(t, r[h + j], k0 + k, &lo, &hi);
                    v[j] = pairs8(lo, hi);
                }
                transpose4(v);
                for (int q = 0; q < 4; q++)
                    vst1q_f32((float *)(void *)(p + (size_t)(k / 2 + q) * GT_NR + h), v[q]);
            }
        }
        for (; k < kc; k += 2)
            for (int j = 0; j < GT_NR; j++)
                p[(size_t)(k / 2) * GT_NR + j] = gt_weight_pair(t, r[j], k0 + k, k0 + kc);
    }
}

#endif
