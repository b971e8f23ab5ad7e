/*
 * vec_avx2.h — the AVX2 + FMA vector layer: `vf` (8 floats) and `vd` (4 doubles) and the
 * operations of the vector contract (kernels/simd/vector.h) that the ISA-neutral
 * templates of kernels/simd/ are written in; kernels/simd/math.h is built on top.
 *
 * Everything is static inline: include this only from files compiled with
 * -mavx2 -mfma -mf16c (kernels/x86/ops_avx2.c, gemm_avx2.c), never from a plain file.
 * Tested through the slots by tests/checkasm.
 */
#ifndef JEPA_KERNELS_X86_VEC_AVX2_H
#define JEPA_KERNELS_X86_VEC_AVX2_H

#include <stdint.h>

#include "kernels/x86/simd.h"

#define OPS_ALWAYS inline __attribute__((always_inline))

#define VW 8                /* floats per vf */
typedef __m256 vf;
typedef __m256d vd;         /* VW / 2 doubles */

/* ---- float vectors ---- */
static OPS_ALWAYS vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
static OPS_ALWAYS void vf_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
static OPS_ALWAYS vf vf_set1(float x) { return _mm256_set1_ps(x); }
static OPS_ALWAYS vf vf_zero(void) { return _mm256_setzero_ps(); }
static OPS_ALWAYS vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static OPS_ALWAYS vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static OPS_ALWAYS vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static OPS_ALWAYS vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
static OPS_ALWAYS vf vf_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }   /* a*b + c */
static OPS_ALWAYS vf vf_max(vf a, vf b) { return _mm256_max_ps(a, b); }
static OPS_ALWAYS vf vf_min(vf a, vf b) { return _mm256_min_ps(a, b); }
static OPS_ALWAYS vf vf_xor(vf a, vf b) { return _mm256_xor_ps(a, b); }
static OPS_ALWAYS vf vf_abs(vf a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
/* a < b ? x : y, per lane */
static OPS_ALWAYS vf vf_lt_sel(vf a, vf b, vf x, vf y) {
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
}
/* [x1, x0, x3, x2, ...]: the partner of each (even, odd) pair */
static OPS_ALWAYS vf vf_swap_pairs(vf x) { return _mm256_permute_ps(x, 0xb1); }
/* 2^n, where t = n + 0x1.8p23 holds the integer n (-127 <= n <= 127) in its low mantissa
 * bits: (bits(t) << 23) leaves n << 23, + 127 << 23 is the biased exponent; n = -127
 * gives +0. */
static OPS_ALWAYS vf vf_pow2i(vf t) {
    __m256i e = _mm256_slli_epi32(_mm256_castps_si256(t), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_set1_epi32(127 << 23)));
}
/* round to the nearest integer, ties to even */
static OPS_ALWAYS vf vf_rint(vf x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
/* p 2^n for integral n in [-126, 127], with a normal result (2^n built in the exponent) */
static OPS_ALWAYS vf vf_ldexp(vf p, vf n) {
    n = _mm256_max_ps(n, _mm256_set1_ps(-126.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
static OPS_ALWAYS float vf_hsum(vf v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static OPS_ALWAYS float vf_hmax(vf v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
/* lane r = horizontal sum of a[r], r < VW (a transposing reduction) */
static OPS_ALWAYS vf vf_hsum_w(const vf *a) {
    vf t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
    vf t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
    vf u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);   /* 128-bit halves: lanes 0-3 | 4-7 */
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}
/* a[r] lane c <-> a[c] lane r: the 8 x 8 block transposed in registers (pairs of rows
 * interleaved within 128-bit lanes, then 128-bit lanes swapped into place). */
static OPS_ALWAYS void vf_transpose(vf *a) {
    vf t[8], u[8];
    for (int k = 0; k < 8; k += 2) t[k] = _mm256_unpacklo_ps(a[k], a[k + 1]), t[k + 1] = _mm256_unpackhi_ps(a[k], a[k + 1]);
    for (int g = 0; g < 8; g += 4) {
        u[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44), u[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xee);
        u[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44), u[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xee);
    }
    for (int c = 0; c < 4; c++)
        a[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20), a[c + 4] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
}
/* Masks of the attention: -inf in the lanes where the key is not visible.
 * vf_mask_q: queries along the lanes (positions qpos[0..VW)), one key at kp.
 * vf_mask_k: one query at qp, keys along the lanes (positions kpos[0..VW)). */
static OPS_ALWAYS vf vf_mask_q(vf s, const int32_t *qpos, int32_t kp) {
    __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)qpos);
    __m256i hidden = _mm256_cmpgt_epi32(_mm256_set1_epi32(kp), q);    /* q < kp */
    return _mm256_blendv_ps(s, _mm256_set1_ps(-__builtin_inff()), _mm256_castsi256_ps(hidden));
}
static OPS_ALWAYS vf vf_mask_k(vf s, int32_t qp, const int32_t *kpos) {
    __m256i k = _mm256_loadu_si256((const __m256i *)(const void *)kpos);
    __m256i hidden = _mm256_cmpgt_epi32(k, _mm256_set1_epi32(qp));    /* qp < k */
    return _mm256_blendv_ps(s, _mm256_set1_ps(-__builtin_inff()), _mm256_castsi256_ps(hidden));
}

/* ---- double vectors (the element-wise activations are evaluated in double) ---- */
static OPS_ALWAYS vd vd_set1(double x) { return _mm256_set1_pd(x); }
static OPS_ALWAYS vd vd_add(vd a, vd b) { return _mm256_add_pd(a, b); }
static OPS_ALWAYS vd vd_sub(vd a, vd b) { return _mm256_sub_pd(a, b); }
static OPS_ALWAYS vd vd_mul(vd a, vd b) { return _mm256_mul_pd(a, b); }
static OPS_ALWAYS vd vd_div(vd a, vd b) { return _mm256_div_pd(a, b); }
static OPS_ALWAYS vd vd_fma(vd a, vd b, vd c) { return _mm256_fmadd_pd(a, b, c); }
static OPS_ALWAYS vd vd_min(vd a, vd b) { return _mm256_min_pd(a, b); }    /* NaN a -> b */
static OPS_ALWAYS vd vd_abs(vd a) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), a); }
/* sign bit of x set ? a : b (x = -0 counts as negative; callers agree at 0) */
static OPS_ALWAYS vd vd_neg_sel(vd x, vd a, vd b) { return _mm256_blendv_pd(b, a, x); }
/* 2^n, where t = n + 0x1.8p52 holds the integer n (|n| <= 1022) in its low bits */
static OPS_ALWAYS vd vd_pow2i(vd t) {
    __m256i e = _mm256_slli_epi64(_mm256_castpd_si256(t), 52);
    return _mm256_castsi256_pd(_mm256_add_epi64(e, _mm256_set1_epi64x(1023ll << 52)));
}
static OPS_ALWAYS vd vf_lo_pd(vf x) { return _mm256_cvtps_pd(_mm256_castps256_ps128(x)); }
static OPS_ALWAYS vd vf_hi_pd(vf x) { return _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)); }
/* round both halves to float (nearest even, once) and join them */
static OPS_ALWAYS vf vd_join_ps(vd lo, vd hi) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
}

#include "kernels/simd/vector.h"
#include "kernels/simd/math.h"

#endif
