/*
 * gemm_x86.h — the 256-bit building blocks of the x86 matmul, shared by
 * kernels/x86/gemm_avx2.c and kernels/x86/gemm_avx512.c (both compiled with at least
 * -mavx2 -mfma -mf16c; everything here is static, so each file gets its own copy with
 * its own flags): weight loads that convert f16 / bf16 / q8_0 to f32, the 8 x 8
 * transpose and the W packing built on them, X packing, the erf-GELU on 8 lanes, and the
 * small-M (weight-streaming) path.
 *
 * The small-M path is 256 bits wide in the AVX-512 slots too: at M <= GT_SMALL_M the
 * work is a few FMAs per weight and the speed is that of streaming W from memory.
 *
 * Include after gemm_tmpl.h (it uses GT_MR, GT_NR, GT_SMALL_M and gt_min). Tested
 * through the slots by tests/checkasm/test_gemm.c.
 */
#ifndef JEPA_KERNELS_X86_GEMM_X86_H
#define JEPA_KERNELS_X86_GEMM_X86_H

#include <string.h>

#include "kernels/kernels.h"
#include "kernels/x86/simd.h"
#include "runtime/dtype.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* lanes < n (n clamped to 0..8) set */
static const int32_t mask_tbl[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
static ALWAYS_INLINE __m256i lane_mask(int n) {
    n = n < 0 ? 0 : n > 8 ? 8 : n;
    return _mm256_loadu_si256((const __m256i *)(const void *)(mask_tbl + 8 - n));
}

/* The GELU epilogue on 8 lanes: vf_gelu (kernels/simd/math.h) of the including
 * file's vector layer, 8 lanes wide (AVX2) or 16 (AVX-512: in the low half of a zmm; every
 * lane's arithmetic is the same, so the bits are too). */
static ALWAYS_INLINE __m256 gelu8(__m256 x) {
#if VW == 8
    return vf_gelu(x);
#else
    return _mm512_castps512_ps256(vf_gelu(_mm512_insertf32x8(_mm512_setzero_ps(), x, 0)));
#endif
}

/* ---- weights ---------------------------------------------------------------------- */

/* f16 at p (any alignment), broadcast as f32 */
static ALWAYS_INLINE __m256 bcast_f16(const uint8_t *p) {
    return _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(p[0] | p[1] << 8)));
}

/* f16 at p (any alignment) as an f32 scalar, by F16C (exact, as f16_to_f32) */
static ALWAYS_INLINE float scalar_f16(const uint8_t *p) {
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(p[0] | p[1] << 8)));
}

/* 8 consecutive bytes as 8 int32 lanes */
static ALWAYS_INLINE __m256i bytes8(const uint8_t *p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

/* Bits b .. b + 7 of the 32-bit word at p, one per lane, as 0 or 16 (a fifth code bit). */
static ALWAYS_INLINE __m256i bit4_of(const uint8_t *p, int b) {
    uint32_t qh;
    memcpy(&qh, p, 4);
    const __m256i v = _mm256_set1_epi32((int)(qh >> b));
    const __m256i sh = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(v, sh), _mm256_set1_epi32(1)), 4);
}

/* ggml's block formats, 8 weights from element k (k % 8 == 0, so the 8 share one nibble
 * half, one sub-block and one scale): the values of kernels/ref/dequant_ref.c, whose
 * products are exact in f32, so the fused multiply-adds here give the same bits. */
static ALWAYS_INLINE __m256 ld8_block(enum jk_dtype t, const uint8_t *row, int k) {
    const __m256i low4 = _mm256_set1_epi32(15);
    if (t == JK_Q4_0 || t == JK_Q4_1 || t == JK_Q5_0 || t == JK_Q5_1) {
        const size_t bb = t == JK_Q4_0 ? Q4_0_BYTES : t == JK_Q4_1 ? Q4_1_BYTES : t == JK_Q5_0 ? Q5_0_BYTES : Q5_1_BYTES;
        const uint8_t *b = row + (size_t)(k / 32) * bb;
        const int j = k % 32, affine = t == JK_Q4_1 || t == JK_Q5_1, five = t == JK_Q5_0 || t == JK_Q5_1;
        const uint8_t *qs = b + (affine ? 4 : 2) + (five ? 4 : 0);
        __m256i q = bytes8(qs + j % 16);
        q = _mm256_and_si256(j < 16 ? q : _mm256_srli_epi32(q, 4), low4);
        if (five) q = _mm256_or_si256(q, bit4_of(b + (affine ? 4 : 2), j));
        const __m256 d = bcast_f16(b);
        if (affine) return _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), d, bcast_f16(b + 2));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q, _mm256_set1_epi32(five ? 16 : 8))), d);
    }
    if (t == JK_Q6_K) {
        const uint8_t *b = row + (size_t)(k / QK_K) * Q6_K_BYTES;
        const int e = k % QK_K, h = e / 128, g = (e % 128) / 32, l = e % 32;
        __m256i q = bytes8(b + 64 * h + 32 * (g & 1) + l);
        q = _mm256_and_si256(g < 2 ? q : _mm256_srli_epi32(q, 4), low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi32(bytes8(b + 128 + 32 * h + l), 2 * g), _mm256_set1_epi32(3));
        q = _mm256_sub_epi32(_mm256_or_si256(q, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
        const float ds = scalar_f16(b + 208) * (float)(int8_t)b[192 + e / 16];
        return _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(ds));
    }
    /* q4_K, q5_K */
    const size_t bb = t == JK_Q4_K ? Q4_K_BYTES : Q5_K_BYTES;
    const uint8_t *b = row + (size_t)(k / QK_K) * bb, *sc = b + 4;
    const int e = k % QK_K, s = e / 32, l = e % 32;
    int scale, mn;
    jr_scale_min_k4(sc, s, &scale, &mn);
    const float d1 = scalar_f16(b) * (float)scale, m1 = scalar_f16(b + 2) * (float)mn;
    const uint8_t *qs = b + (t == JK_Q5_K ? 48 : 16);
    __m256i q = bytes8(qs + 32 * (s / 2) + l);
    q = _mm256_and_si256(s % 2 ? _mm256_srli_epi32(q, 4) : q, low4);
    if (t == JK_Q5_K)
        q = _mm256_or_si256(q, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(bytes8(b + 16 + l), s),
                                                                  _mm256_set1_epi32(1)), 4));
    return _mm256_fmsub_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(d1), _mm256_set1_ps(m1));
}

/* 32 codes (bytes of 0 .. 63 in q) times d, minus m (m may be 0), to dst: 4 x 8 lanes. */
static ALWAYS_INLINE void codes32(__m256i q, __m256 d, __m256 m, float *dst) {
    const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    const __m256i c[4] = {_mm256_cvtepu8_epi32(lo), _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)),
                          _mm256_cvtepu8_epi32(hi), _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8))};
    for (int i = 0; i < 4; i++) _mm256_storeu_ps(dst + 8 * i, _mm256_fmsub_ps(_mm256_cvtepi32_ps(c[i]), d, m));
}

/* The 32 fifth bits of the u32 at p, as bytes of 0 or 16 (bit j -> byte j). */
static ALWAYS_INLINE __m256i bits5_32(const uint8_t *p) {
    uint32_t qh;
    memcpy(&qh, p, 4);
    /* byte j of the broadcast word sits in lane j / 8; test bit j % 8 of it */
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh),
                                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2,
                                                           2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), _mm256_set1_epi8(16));
}

/* Weights k .. k + 31 of a row of q4_0, q4_1, q5_0 or q5_1 (k % 32 == 0: one block, one
 * scale), exactly as the reference decodes them. The codes are offset in the integers
 * (q - 8, q - 16) and the scales applied in f32, with products that are exact
 * (dequant_ref.c), so fmsub = mul then sub. The K-quants decode a super-block at a time
 * (dec256_q45k, dec256_q6k below). */
static ALWAYS_INLINE void dec32(enum jk_dtype t, const uint8_t *row, int k, float *dst) {
    const __m256i low4 = _mm256_set1_epi8(15);
    const size_t bb = t == JK_Q4_0 ? Q4_0_BYTES : t == JK_Q4_1 ? Q4_1_BYTES : t == JK_Q5_0 ? Q5_0_BYTES : Q5_1_BYTES;
    const uint8_t *b = row + (size_t)(k / 32) * bb;
    const int affine = t == JK_Q4_1 || t == JK_Q5_1, five = t == JK_Q5_0 || t == JK_Q5_1;
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + (affine ? 4 : 2) + (five ? 4 : 0)));
    __m256i q = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), low4);   /* bytes: 16 low, 16 high */
    if (five) q = _mm256_or_si256(q, bits5_32(b + (affine ? 4 : 2)));
    const __m256 d = bcast_f16(b);
    if (affine) {   /* d q + m: fmsub with -m */
        codes32(q, d, _mm256_sub_ps(_mm256_setzero_ps(), bcast_f16(b + 2)), dst);
    } else {        /* d (q - o) = d q - d o, d o exact */
        codes32(q, d, _mm256_mul_ps(d, _mm256_set1_ps(five ? 16.0f : 8.0f)), dst);
    }
}

/* A whole q4_K / q5_K super-block (256 weights from element k, k % 256 == 0) to dst: the
 * values dec32 gives sub-block by sub-block, with d and dmin widened once and each 32
 * code bytes loaded once for the two sub-blocks that share them (low, high nibbles). */
static ALWAYS_INLINE void dec256_q45k(enum jk_dtype t, const uint8_t *row, int k, float *dst) {
    const size_t bb = t == JK_Q4_K ? Q4_K_BYTES : Q5_K_BYTES;
    const uint8_t *b = row + (size_t)(k / QK_K) * bb, *sc = b + 4;
    const float d = scalar_f16(b), dmin = scalar_f16(b + 2);
    const __m256i low4 = _mm256_set1_epi8(15), sixteen = _mm256_set1_epi8(16);
    const __m256i hb = t == JK_Q5_K ? _mm256_loadu_si256((const __m256i *)(const void *)(b + 16)) : _mm256_setzero_si256();
    const uint8_t *qs = b + (t == JK_Q5_K ? 48 : 16);
    for (int p = 0; p < 4; p++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * p));
        for (int h = 0; h < 2; h++) {
            const int s = 2 * p + h;
            int scale, mn;
            jr_scale_min_k4(sc, s, &scale, &mn);
            __m256i q = _mm256_and_si256(h ? _mm256_srli_epi16(v, 4) : v, low4);
            if (t == JK_Q5_K) {
                const __m256i bit = _mm256_set1_epi8((char)(1 << s));
                q = _mm256_or_si256(q, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, bit), bit), sixteen));
            }
            codes32(q, _mm256_set1_ps(d * (float)scale), _mm256_set1_ps(dmin * (float)mn), dst + 32 * s);
        }
    }
}

/* A whole q6_K super-block (256 weights from element k, k % 256 == 0) to dst, as dec32
 * gives it group by group, with d widened once and each half's 32 high-bit bytes loaded
 * once for its four groups of 32. */
static ALWAYS_INLINE void dec256_q6k(const uint8_t *row, int k, float *dst) {
    const uint8_t *b = row + (size_t)(k / QK_K) * Q6_K_BYTES;
    const int8_t *sc = (const int8_t *)(const void *)(b + 192);
    const float d = scalar_f16(b + 208);
    const __m256i low4 = _mm256_set1_epi8(15), three = _mm256_set1_epi8(3), off = _mm256_set1_epi32(32);
    for (int h = 0; h < 2; h++) {
        const __m256i hb = _mm256_loadu_si256((const __m256i *)(const void *)(b + 128 + 32 * h));
        const __m256i ql[2] = {_mm256_loadu_si256((const __m256i *)(const void *)(b + 64 * h)),
                               _mm256_loadu_si256((const __m256i *)(const void *)(b + 64 * h + 32))};
        for (int g = 0; g < 4; g++) {
            const __m256i lq = ql[g & 1];
            __m256i q = _mm256_and_si256(g < 2 ? lq : _mm256_srli_epi16(lq, 4), low4);
            const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(hb, _mm_cvtsi32_si128(2 * g)), three);
            q = _mm256_or_si256(q, _mm256_slli_epi16(hi, 4));
            const int e = 128 * h + 32 * g;
            const __m256 d0 = _mm256_set1_ps(d * (float)sc[e / 16]), d1 = _mm256_set1_ps(d * (float)sc[e / 16 + 1]);
            const __m128i lo = _mm256_castsi256_si128(q), up = _mm256_extracti128_si256(q, 1);
            const __m256i c[4] = {_mm256_cvtepu8_epi32(lo), _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)),
                                  _mm256_cvtepu8_epi32(up), _mm256_cvtepu8_epi32(_mm_srli_si128(up, 8))};
            for (int i = 0; i < 4; i++)
                _mm256_storeu_ps(dst + e + 8 * i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(c[i], off)), i < 2 ? d0 : d1));
        }
    }
}

/* 8 weights of a row from element k on, as f32 (exact conversions; k % 8 == 0 for the
 * block formats). */
static ALWAYS_INLINE __m256 ld8(enum jk_dtype t, const uint8_t *row, int k) {
    if (t > JK_Q8_0) return ld8_block(t, row, k);
    switch (t) {
    case JK_F16:
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(row + 2 * (size_t)k)));
    case JK_BF16: {
        const __m256i h = _mm256_cvtepu16_epi32(
            _mm_loadu_si128((const __m128i *)(const void *)(row + 2 * (size_t)k)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
    }
    case JK_Q8_0: {
        const uint8_t *blk = row + (size_t)(k / QK8_0) * sizeof(struct block_q8_0);
        const __m128i d = _mm_cvtsi32_si128(blk[0] | blk[1] << 8);
        const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
            _mm_loadl_epi64((const __m128i *)(const void *)(blk + 2 + k % QK8_0))));
        return _mm256_mul_ps(q, _mm256_broadcastss_ps(_mm_cvtph_ps(d)));
    }
    default:
        return _mm256_loadu_ps((const float *)(const void *)(row + 4 * (size_t)k));
    }
}

/* In-register 8 x 8 transpose: r[i] lane j -> r[j] lane i. */
static ALWAYS_INLINE void transpose8(__m256 r[8]) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* W rows -> p[panel][k][GT_NR], 8 rows x 8 k at a time, converted and transposed in
 * registers; rows past nc repeat the last row (their columns are never stored).
 * While one panel of GT_NR rows is packed, the next panel's bytes are asked for (gt_ahead,
 * prefetcht2, spread over this panel's 8 x 8 groups): the loads here otherwise wait on L3,
 * and gt_block's prefetch covers only the panels of pack_b's next call in the same
 * matmul: none when the matmul is one column block and one K block (most matmuls of a
 * small model: LeWM's 257 x 576 x 192 qkv, for one). A prefetch changes no value
 * (tuned, t2 against t0: docs/notes/kernel-tuning.md#gemm-pack-b). */
static ALWAYS_INLINE void pack_b(enum jk_dtype t, float *p, const uint8_t *w, size_t ldw, int nc,
                                 int k0, int kc) {
    for (int j0 = 0; j0 < nc; j0 += GT_NR, p += (size_t)GT_NR * kc) {
        const uint8_t *r[GT_NR];
        for (int j = 0; j < GT_NR; j++) r[j] = w + (size_t)gt_min(j0 + j, nc - 1) * ldw;
        struct gt_ahead ahead = {.at = NULL};
        if (j0 + GT_NR < nc)
            gt_ahead_start(&ahead, w + (size_t)(j0 + GT_NR) * ldw, ldw, gt_min(GT_NR, nc - j0 - GT_NR), t, k0,
                           kc, kc / 8 * (GT_NR / 8));
        int k = 0;
        for (; k + 8 <= kc; k += 8) {
            for (int h = 0; h < GT_NR; h += 8) {
                if (ahead.at) gt_ahead_step(&ahead);
                __m256 v[8];
                for (int j = 0; j < 8; j++) v[j] = ld8(t, r[h + j], k0 + k);
                transpose8(v);
                for (int i = 0; i < 8; i++) _mm256_store_ps(p + (size_t)(k + i) * GT_NR + h, v[i]);
            }
        }
        for (; k < kc; k++)
            for (int j = 0; j < GT_NR; j++) p[(size_t)k * GT_NR + j] = gt_weight1(t, r[j], k0 + k);
    }
}

/* ---- activations -------------------------------------------------------------------- */

#ifndef JK_GEMM_BF16X   /* the bf16 tier packs pairs instead: gemm_pairs.h */
/* mc rows of X -> p[panel][k][GT_MR]; rows past mc repeat the last row. Groups of 8 rows
 * x 8 k are transposed in registers; each k then stores its 8 (or 6, or fewer) rows. */
static void gt_pack_a(float *p, const float *x, size_t ldx, int mc, int kc) {
    for (int i0 = 0; i0 < mc; i0 += GT_MR, p += (size_t)GT_MR * kc) {
        const float *r[GT_MR];
        for (int i = 0; i < GT_MR; i++) r[i] = x + (size_t)gt_min(i0 + i, mc - 1) * ldx;
        int k = 0;
        for (; k + 8 <= kc; k += 8) {
            for (int h = 0; h < GT_MR; h += 8) {
                const int rows = gt_min(8, GT_MR - h);
                __m256 v[8];
                for (int j = 0; j < 8; j++) v[j] = _mm256_loadu_ps(r[h + gt_min(j, rows - 1)] + k);
                transpose8(v);
                for (int i = 0; i < 8; i++) {
                    float *d = p + (size_t)(k + i) * GT_MR + h;
                    if (rows == 8) {
                        _mm256_storeu_ps(d, v[i]);
                    } else if (rows == 6) {
                        _mm_storeu_ps(d, _mm256_castps256_ps128(v[i]));
                        _mm_storel_pi((__m64 *)(void *)(d + 4), _mm256_extractf128_ps(v[i], 1));
                    } else {
                        _mm256_maskstore_ps(d, lane_mask(rows), v[i]);
                    }
                }
            }
        }
        for (; k < kc; k++)
            for (int i = 0; i < GT_MR; i++) p[(size_t)k * GT_MR + i] = r[i][k];
    }
}
#endif

/* ---- small M: stream the weights ---------------------------------------------------- */

/* Horizontal sums of 8 vectors: lane r = sum of the 8 lanes of v[r] (fixed order). */
static ALWAYS_INLINE __m256 hsum8x8(const __m256 v[8]) {
    const __m256 t0 = _mm256_hadd_ps(v[0], v[1]), t1 = _mm256_hadd_ps(v[2], v[3]);
    const __m256 t2 = _mm256_hadd_ps(v[4], v[5]), t3 = _mm256_hadd_ps(v[6], v[7]);
    const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

/* Y[m .. m+MT, n .. n+nw] from nw weight rows of type t at w (row stride ldw bytes): MT x NW
 * accumulators of 8 partial sums over K, reduced at the end, plus the k % 8 tail, then
 * bias and epilogue. */
static ALWAYS_INLINE void small_tile(const struct jk_gemm_args *a, enum jk_dtype t, const int MT,
                                     const int NW, int m, const uint8_t *w, size_t ldw, int n,
                                     int nw) {
    const int K = a->K, K8 = K & ~7;
    const uint8_t *wr[8]; /* rows, possibly not 4-byte aligned (ldw is in bytes) */
    const float *xr[3];
    __m256 acc[3][8];
    for (int r = 0; r < NW; r++) wr[r] = w + (size_t)gt_min(r, nw - 1) * ldw;
    for (int i = 0; i < MT; i++) xr[i] = a->x + (size_t)(m + i) * a->ldx;
    for (int i = 0; i < MT; i++)
        for (int r = 0; r < NW; r++) acc[i][r] = _mm256_setzero_ps();
    if (t == JK_Q8_0) {
        /* block by block: each row's scale is converted once per 32 weights */
        for (int k = 0; k < K; k += QK8_0) {
            const size_t boff = (size_t)(k / QK8_0) * sizeof(struct block_q8_0);
            __m256 d[8];
            for (int r = 0; r < NW; r++)
                d[r] = _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(wr[r][boff] | wr[r][boff + 1] << 8)));
            for (int j = 0; j < QK8_0; j += 8) {
                __m256 xv[3];
                for (int i = 0; i < MT; i++) xv[i] = _mm256_loadu_ps(xr[i] + k + j);
                for (int r = 0; r < NW; r++) {
                    const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                        _mm_loadl_epi64((const __m128i *)(const void *)(wr[r] + boff + 2 + j))));
                    const __m256 wv = _mm256_mul_ps(q, d[r]); /* = the reference's d * q */
                    for (int i = 0; i < MT; i++) acc[i][r] = _mm256_fmadd_ps(xv[i], wv, acc[i][r]);
                }
            }
        }
    } else {
        for (int k = 0; k < K8; k += 8) {
            __m256 xv[3];
            for (int i = 0; i < MT; i++) xv[i] = _mm256_loadu_ps(xr[i] + k);
            for (int r = 0; r < NW; r++) {
                const __m256 wv = ld8(t, wr[r], k);
                for (int i = 0; i < MT; i++) acc[i][r] = _mm256_fmadd_ps(xv[i], wv, acc[i][r]);
            }
        }
    }
    const __m256i mask = lane_mask(nw);
    const __m256 bv = a->bias ? _mm256_maskload_ps(a->bias + n, mask) : _mm256_setzero_ps();
    for (int i = 0; i < MT; i++) {
        __m256 v[8];
        for (int r = 0; r < 8; r++) v[r] = r < NW ? acc[i][r] : _mm256_setzero_ps();
        __m256 s = hsum8x8(v);
        if (K8 < K) {
            float tail[8] = {0};
            for (int r = 0; r < nw; r++)
                for (int k = K8; k < K; k++) tail[r] += xr[i][k] * gt_weight1(t, wr[r], k);
            s = _mm256_add_ps(s, _mm256_loadu_ps(tail));
        }
        s = _mm256_add_ps(s, bv);
        float *y = a->y + (size_t)(m + i) * a->ldy + n;
        if (a->epi == JK_EPI_ADD) s = _mm256_add_ps(_mm256_maskload_ps(y, mask), s);
        else if (a->epi == JK_EPI_GELU) s = gelu8(s);
        _mm256_maskstore_ps(y, mask, s);
    }
}

/* One W row of K weights of type t (any but f32) widened to f32 in d: the hook of
 * the small-M driver (gemm_small_tmpl.h). */
static ALWAYS_INLINE void row_to_f32(enum jk_dtype t, const uint8_t *row, float *d, int K) {
    if (t == JK_Q4_K || t == JK_Q5_K) {   /* K is whole super-blocks */
        for (int k = 0; k < K; k += QK_K) dec256_q45k(t, row, k, d + k);
        return;
    }
    if (t == JK_Q6_K) {
        for (int k = 0; k < K; k += QK_K) dec256_q6k(row, k, d + k);
        return;
    }
    if (t > JK_Q8_0) {   /* K is whole blocks */
        for (int k = 0; k < K; k += 32) dec32(t, row, k, d + k);
        return;
    }
    int k = 0;
    for (; k + 8 <= K; k += 8) _mm256_storeu_ps(d + k, ld8(t, row, k));
    for (; k < K; k++) d[k] = gt_weight1(t, row, k);
}

#include "kernels/simd/gemm_small_tmpl.h"

/* The four slots of one ISA: gemm_<dtype>_<isa> = gt_run with that dtype's packing and
 * small-M kernels. */
#define GEMM_X86_SLOTS(isa)                                                                    \
    JR_WEIGHT_TYPES(GEMM_X86_ROW, isa)                                                         \
    size_t jk_gemm_ws_##isa(int nthreads, int K) { return gt_ws(nthreads, K); }                \
    size_t jk_gemm_prepack_floats_##isa(int N, int K) { return gt_prepack_floats(N, K); }     \
    void jk_gemm_prepack_##isa(enum jk_dtype t, float *dst, const void *w, size_t ldw, int N, int K) { \
        static const gt_pack_b_fn by_type[JK_NDTYPES] = GT_PACK_B_BY_TYPE;                    \
        gt_prepack(by_type[t], dst, w, ldw, N, K);                                             \
    }
/* The W packing of the including file's microkernel: f32 panels, or bf16 pairs for the bf16
 * tier (gemm_pairs.h). */
#ifdef JK_GEMM_BF16X
#define GEMM_X86_PACK_B pack_b_pairs
#else
#define GEMM_X86_PACK_B pack_b
#endif
/* GEMM_X86_SLOTS of a macro's value (GEMM_X86_SLOTS_OF(GEMM_ISA)). */
#define GEMM_X86_SLOTS_OF(isa) GEMM_X86_SLOTS(isa)
#define GEMM_X86_ROW(isa, name, NAME, ...) GEMM_X86_DTYPE(name, JK_##NAME, isa)
#define GEMM_X86_DTYPE(name, T, isa)                                                           \
    static void pack_b_##name(float *p, const uint8_t *w, size_t ldw, int nc, int k0, int kc) { \
        GEMM_X86_PACK_B(T, p, w, ldw, nc, k0, kc);                                             \
    }                                                                                          \
    static void small_##name(const struct jk_gemm_args *a, int n0, int n1, float *scratch,      \
                             size_t nscratch) {                                                \
        small_m(a, T, n0, n1, scratch, nscratch);                                              \
    }                                                                                          \
    void jk_gemm_##name##_##isa(const struct jk_gemm_args *a) {                                   \
        gt_run(a, T, pack_b_##name, small_##name);                                                \
    }

#endif
