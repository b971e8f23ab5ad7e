/*
 * vec_neon.h — the NEON (AArch64 Advanced SIMD) vector layer: `vf` (4 floats) and `vd` (2
 * doubles) and the operations of the vector contract (kernels/simd/vector.h).
 *
 * Everything is static inline, for kernels/arm/ops_neon.c and gemm_neon.c. Tested through
 * the slots by tests/checkasm (cross build under qemu-aarch64).
 */
#ifndef JEPA_KERNELS_ARM_VEC_NEON_H
#define JEPA_KERNELS_ARM_VEC_NEON_H

#include <arm_neon.h>
#include <stdint.h>

#define OPS_ALWAYS inline __attribute__((always_inline))

#define VW 4
typedef float32x4_t vf;
typedef float64x2_t vd;

/* ---- float vectors ---- */
static OPS_ALWAYS vf vf_load(const float *p) { return vld1q_f32(p); }
static OPS_ALWAYS void vf_store(float *p, vf v) { vst1q_f32(p, v); }
static OPS_ALWAYS vf vf_set1(float x) { return vdupq_n_f32(x); }
static OPS_ALWAYS vf vf_zero(void) { return vdupq_n_f32(0.0f); }
static OPS_ALWAYS vf vf_add(vf a, vf b) { return vaddq_f32(a, b); }
static OPS_ALWAYS vf vf_sub(vf a, vf b) { return vsubq_f32(a, b); }
static OPS_ALWAYS vf vf_mul(vf a, vf b) { return vmulq_f32(a, b); }
static OPS_ALWAYS vf vf_div(vf a, vf b) { return vdivq_f32(a, b); }
static OPS_ALWAYS vf vf_fma(vf a, vf b, vf c) { return vfmaq_f32(c, a, b); }   /* a*b + c */
static OPS_ALWAYS vf vf_max(vf a, vf b) { return vmaxq_f32(a, b); }
static OPS_ALWAYS vf vf_min(vf a, vf b) { return vminq_f32(a, b); }
static OPS_ALWAYS vf vf_xor(vf a, vf b) {
    return vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(b)));
}
static OPS_ALWAYS vf vf_abs(vf a) { return vabsq_f32(a); }
static OPS_ALWAYS vf vf_lt_sel(vf a, vf b, vf x, vf y) { return vbslq_f32(vcltq_f32(a, b), x, y); }
static OPS_ALWAYS vf vf_swap_pairs(vf x) { return vrev64q_f32(x); }
/* 2^n from t = n + 0x1.8p23 (see kernels/x86/vec_avx2.h) */
static OPS_ALWAYS vf vf_pow2i(vf t) {
    uint32x4_t e = vshlq_n_u32(vreinterpretq_u32_f32(t), 23);
    return vreinterpretq_f32_u32(vaddq_u32(e, vdupq_n_u32(127u << 23)));
}
static OPS_ALWAYS vf vf_rint(vf x) { return vrndnq_f32(x); }   /* nearest, ties to even */
/* p 2^n for integral n in [-126, 127], with a normal result (2^n built in the exponent) */
static OPS_ALWAYS vf vf_ldexp(vf p, vf n) {
    n = vmaxq_f32(n, vdupq_n_f32(-126.0f));
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(p, vreinterpretq_f32_s32(e));
}
static OPS_ALWAYS float vf_hsum(vf v) { return vaddvq_f32(v); }
static OPS_ALWAYS float vf_hmax(vf v) { return vmaxvq_f32(v); }
/* lane r = horizontal sum of a[r] (pairwise adds, two levels) */
static OPS_ALWAYS vf vf_hsum_w(const vf *a) {
    return vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3]));
}
/* a[r] lane c <-> a[c] lane r: the 4 x 4 block transposed in registers */
static OPS_ALWAYS void vf_transpose(vf *a) {
    const float32x4x2_t p = vtrnq_f32(a[0], a[1]), q = vtrnq_f32(a[2], a[3]);
    a[0] = vcombine_f32(vget_low_f32(p.val[0]), vget_low_f32(q.val[0]));
    a[1] = vcombine_f32(vget_low_f32(p.val[1]), vget_low_f32(q.val[1]));
    a[2] = vcombine_f32(vget_high_f32(p.val[0]), vget_high_f32(q.val[0]));
    a[3] = vcombine_f32(vget_high_f32(p.val[1]), vget_high_f32(q.val[1]));
}
static OPS_ALWAYS vf vf_mask_q(vf s, const int32_t *qpos, int32_t kp) {
    uint32x4_t hidden = vcltq_s32(vld1q_s32(qpos), vdupq_n_s32(kp));         /* q < kp */
    return vbslq_f32(hidden, vdupq_n_f32(-__builtin_inff()), s);
}
static OPS_ALWAYS vf vf_mask_k(vf s, int32_t qp, const int32_t *kpos) {
    uint32x4_t hidden = vcltq_s32(vdupq_n_s32(qp), vld1q_s32(kpos));         /* qp < k */
    return vbslq_f32(hidden, vdupq_n_f32(-__builtin_inff()), s);
}

/* ---- double vectors ---- */
static OPS_ALWAYS vd vd_set1(double x) { return vdupq_n_f64(x); }
static OPS_ALWAYS vd vd_add(vd a, vd b) { return vaddq_f64(a, b); }
static OPS_ALWAYS vd vd_sub(vd a, vd b) { return vsubq_f64(a, b); }
static OPS_ALWAYS vd vd_mul(vd a, vd b) { return vmulq_f64(a, b); }
static OPS_ALWAYS vd vd_div(vd a, vd b) { return vdivq_f64(a, b); }
static OPS_ALWAYS vd vd_fma(vd a, vd b, vd c) { return vfmaq_f64(c, a, b); }
static OPS_ALWAYS vd vd_min(vd a, vd b) { return vminq_f64(a, b); }
static OPS_ALWAYS vd vd_abs(vd a) { return vabsq_f64(a); }
/* sign bit of x set ? a : b (as the AVX2 blendv) */
static OPS_ALWAYS vd vd_neg_sel(vd x, vd a, vd b) {
    uint64x2_t neg = vreinterpretq_u64_s64(vshrq_n_s64(vreinterpretq_s64_f64(x), 63));
    return vbslq_f64(neg, a, b);
}
static OPS_ALWAYS vd vd_pow2i(vd t) {
    uint64x2_t e = vshlq_n_u64(vreinterpretq_u64_f64(t), 52);
    return vreinterpretq_f64_u64(vaddq_u64(e, vdupq_n_u64(1023ull << 52)));
}
static OPS_ALWAYS vd vf_lo_pd(vf x) { return vcvt_f64_f32(vget_low_f32(x)); }
static OPS_ALWAYS vd vf_hi_pd(vf x) { return vcvt_high_f64_f32(x); }
static OPS_ALWAYS vf vd_join_ps(vd lo, vd hi) { return vcvt_high_f32_f64(vcvt_f32_f64(lo), hi); }

#include "kernels/simd/vector.h"
#include "kernels/simd/math.h"

#endif
