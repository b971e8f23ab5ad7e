/*
 * vec_avx512.h — the AVX-512 (F/BW/VL/DQ) vector layer: `vf` (16 floats) and `vd` (8
 * doubles) and the operations of the vector contract (kernels/simd/vector.h). Only
 * intrinsics SIMDe 0.7.4 implements (kernels/x86/simd.h), so the emulated build tests
 * exactly this code: no masked loads/stores, no _mm512_reduce_*, no 512-bit
 * float<->double conversions (done on 256-bit pieces).
 *
 * Everything is static inline: include this only from files compiled with the AVX-512
 * flags (kernels/x86/ops_avx512.c, gemm_avx512.c). Tested through the slots by
 * tests/checkasm (the *_avx512emu tests where the CPU has no AVX-512).
 */
#ifndef JEPA_KERNELS_X86_VEC_AVX512_H
#define JEPA_KERNELS_X86_VEC_AVX512_H

#include <stdint.h>

#include "kernels/x86/simd.h"

#define OPS_ALWAYS inline __attribute__((always_inline))

#define VW 16
typedef __m512 vf;
typedef __m512d vd;

/* ---- float vectors ---- */
static OPS_ALWAYS vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
static OPS_ALWAYS void vf_store(float *p, vf v) { _mm512_storeu_ps(p, v); }
static OPS_ALWAYS vf vf_set1(float x) { return _mm512_set1_ps(x); }
static OPS_ALWAYS vf vf_zero(void) { return _mm512_setzero_ps(); }
static OPS_ALWAYS vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static OPS_ALWAYS vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static OPS_ALWAYS vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static OPS_ALWAYS vf vf_div(vf a, vf b) { return _mm512_div_ps(a, b); }
static OPS_ALWAYS vf vf_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static OPS_ALWAYS vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
static OPS_ALWAYS vf vf_min(vf a, vf b) { return _mm512_min_ps(a, b); }
static OPS_ALWAYS vf vf_xor(vf a, vf b) { return _mm512_xor_ps(a, b); }
static OPS_ALWAYS vf vf_abs(vf a) { return _mm512_abs_ps(a); }
static OPS_ALWAYS vf vf_lt_sel(vf a, vf b, vf x, vf y) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x);
}
static OPS_ALWAYS vf vf_swap_pairs(vf x) { return _mm512_shuffle_ps(x, x, 0xb1); }
static OPS_ALWAYS vf vf_pow2i(vf t) {
    __m512i e = _mm512_slli_epi32(_mm512_castps_si512(t), 23);
    return _mm512_castsi512_ps(_mm512_add_epi32(e, _mm512_set1_epi32(127 << 23)));
}
static OPS_ALWAYS __m256 vf_hi256(vf v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }
static OPS_ALWAYS vf vf_rint(vf x) {   /* nearest, ties to even */
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* p 2^n (vscalefps): exact for any integral n, a subnormal result rounded once */
static OPS_ALWAYS vf vf_ldexp(vf p, vf n) { return _mm512_scalef_ps(p, n); }
#define VF_LDEXP_ANY 1
static OPS_ALWAYS float vf_hsum(vf v) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), vf_hi256(v));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static OPS_ALWAYS float vf_hmax(vf v) {
    __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v), vf_hi256(v));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
/* lane r = horizontal sum of a[r]: halve the partial sums 4 times, pairing vectors
 * (256-bit, then 128-bit halves across two vectors, then within 128-bit lanes). That
 * leaves the sum of vector 4r + m in lane 4m + r, so the inputs are taken in the
 * transposed order pi(v) = 4 (v % 4) + v / 4. */
/* (_mm512_shuffle_f32x4 through the integer form: SIMDe 0.7.4 has no alias for it) */
#define shuf128(a, b, imm) \
    _mm512_castsi512_ps(_mm512_shuffle_i32x4(_mm512_castps_si512(a), _mm512_castps_si512(b), imm))
static OPS_ALWAYS vf vf_hsum_w(const vf *a) {
    static const int pi[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
    vf b[8], c[4];
    for (int k = 0; k < 8; k++) {
        vf x = a[pi[2 * k]], y = a[pi[2 * k + 1]];
        b[k] = _mm512_add_ps(shuf128(x, y, 0x44), shuf128(x, y, 0xee));
    }
    for (int j = 0; j < 4; j++)
        c[j] = _mm512_add_ps(shuf128(b[2 * j], b[2 * j + 1], 0x88), shuf128(b[2 * j], b[2 * j + 1], 0xdd));
    vf d01 = _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], 0x88), _mm512_shuffle_ps(c[0], c[1], 0xdd));
    vf d23 = _mm512_add_ps(_mm512_shuffle_ps(c[2], c[3], 0x88), _mm512_shuffle_ps(c[2], c[3], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_ps(d01, d23, 0x88), _mm512_shuffle_ps(d01, d23, 0xdd));
}
/* a[r] lane c <-> a[c] lane r: the 16 x 16 block transposed in registers. Pairs of rows
 * interleaved within 128-bit lanes (unpack ps, then pd: a[4g + c] then holds column
 * c + 4L of rows 4g .. 4g+3 in 128-bit lane L), then the 128-bit lanes gathered
 * (shuf128 twice). */
static OPS_ALWAYS void vf_transpose(vf *a) {
    vf t[16], u[16];
    for (int k = 0; k < 16; k += 2) t[k] = _mm512_unpacklo_ps(a[k], a[k + 1]), t[k + 1] = _mm512_unpackhi_ps(a[k], a[k + 1]);
    for (int g = 0; g < 16; g += 4) {
        const __m512d t0 = _mm512_castps_pd(t[g]), t1 = _mm512_castps_pd(t[g + 1]);
        const __m512d t2 = _mm512_castps_pd(t[g + 2]), t3 = _mm512_castps_pd(t[g + 3]);
        u[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
        u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
        u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
        u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
    }
    for (int c = 0; c < 4; c++) {
        const vf v0 = shuf128(u[c], u[4 + c], 0x88), v1 = shuf128(u[c], u[4 + c], 0xdd);
        const vf v2 = shuf128(u[8 + c], u[12 + c], 0x88), v3 = shuf128(u[8 + c], u[12 + c], 0xdd);
        a[c] = shuf128(v0, v2, 0x88), a[c + 8] = shuf128(v0, v2, 0xdd);
        a[c + 4] = shuf128(v1, v3, 0x88), a[c + 12] = shuf128(v1, v3, 0xdd);
    }
}
static OPS_ALWAYS vf vf_mask_q(vf s, const int32_t *qpos, int32_t kp) {
    __m512i q = _mm512_loadu_si512((const void *)qpos);
    __mmask16 hidden = _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(kp), q);   /* q < kp */
    return _mm512_mask_mov_ps(s, hidden, _mm512_set1_ps(-__builtin_inff()));
}
static OPS_ALWAYS vf vf_mask_k(vf s, int32_t qp, const int32_t *kpos) {
    __m512i k = _mm512_loadu_si512((const void *)kpos);
    __mmask16 hidden = _mm512_cmpgt_epi32_mask(k, _mm512_set1_epi32(qp));   /* qp < k */
    return _mm512_mask_mov_ps(s, hidden, _mm512_set1_ps(-__builtin_inff()));
}

/* ---- double vectors ---- */
static OPS_ALWAYS vd vd_set1(double x) { return _mm512_set1_pd(x); }
static OPS_ALWAYS vd vd_add(vd a, vd b) { return _mm512_add_pd(a, b); }
static OPS_ALWAYS vd vd_sub(vd a, vd b) { return _mm512_sub_pd(a, b); }
static OPS_ALWAYS vd vd_mul(vd a, vd b) { return _mm512_mul_pd(a, b); }
static OPS_ALWAYS vd vd_div(vd a, vd b) { return _mm512_div_pd(a, b); }
static OPS_ALWAYS vd vd_fma(vd a, vd b, vd c) { return _mm512_fmadd_pd(a, b, c); }
static OPS_ALWAYS vd vd_min(vd a, vd b) { return _mm512_min_pd(a, b); }
static OPS_ALWAYS vd vd_abs(vd a) { return _mm512_abs_pd(a); }
/* sign bit of x set ? a : b (as the AVX2 blendv) */
static OPS_ALWAYS vd vd_neg_sel(vd x, vd a, vd b) {
    return _mm512_mask_blend_pd(_mm512_movepi64_mask(_mm512_castpd_si512(x)), b, a);
}
static OPS_ALWAYS vd vd_pow2i(vd t) {
    __m512i e = _mm512_slli_epi64(_mm512_castpd_si512(t), 52);
    return _mm512_castsi512_pd(_mm512_add_epi64(e, _mm512_set1_epi64(1023ll << 52)));
}
static OPS_ALWAYS vd vd_from_ps128(__m128 lo, __m128 hi) {
    return _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_cvtps_pd(lo)), _mm256_cvtps_pd(hi), 1);
}
static OPS_ALWAYS vd vf_lo_pd(vf x) { return vd_from_ps128(_mm512_castps512_ps128(x), _mm512_extractf32x4_ps(x, 1)); }
static OPS_ALWAYS vd vf_hi_pd(vf x) { return vd_from_ps128(_mm512_extractf32x4_ps(x, 2), _mm512_extractf32x4_ps(x, 3)); }
static OPS_ALWAYS __m256 vd_to_ps256(vd x) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(_mm512_castpd512_pd256(x))),
                                _mm256_cvtpd_ps(_mm512_extractf64x4_pd(x, 1)), 1);
}
static OPS_ALWAYS vf vd_join_ps(vd lo, vd hi) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(vd_to_ps256(lo)), vd_to_ps256(hi), 1);
}

#include "kernels/simd/vector.h"
#include "kernels/simd/math.h"

#endif
