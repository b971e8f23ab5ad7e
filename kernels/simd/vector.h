/*
 * vector.h — the vector contract: what a vector layer (kernels/x86/vec_avx2.h,
 * vec_avx512.h, kernels/arm/vec_neon.h) provides, so that the ISA-neutral code of this
 * folder (math.h, ops_tmpl.h, attn_tmpl.h, gemm_tmpl.h, gemm_small_tmpl.h) is written
 * once. A layer defines everything below as `static OPS_ALWAYS` functions (all inline,
 * compiled under the ISA's own flags), then includes this file and math.h. A new ISA is
 * one such layer plus its matmul microkernel, declarations header and init file.
 *
 * Types and constants
 *   VW                      floats per vf (8 AVX2, 16 AVX-512, 4 NEON)
 *   vf                      VW floats;  vd: VW/2 doubles
 *   OPS_ALWAYS              `inline __attribute__((always_inline))`
 *
 * Float vectors (IEEE single, round to nearest; no operation may be approximate)
 *   vf_load(p), vf_store(p, v)         VW floats, unaligned
 *   vf_set1(x), vf_zero()
 *   vf_add, vf_sub, vf_mul, vf_div     lane-wise, correctly rounded
 *   vf_fma(a, b, c)                    a*b + c, fused (one rounding)
 *   vf_max(a, b), vf_min(a, b)         for non-NaN lanes the larger / smaller; NaN lanes
 *                                      follow the ISA (x86 returns b, NEON NaN) — callers
 *                                      clamp only where either is fine
 *   vf_xor(a, b)                       bitwise (vf_xor(x, -0.0f) negates exactly)
 *   vf_abs(a)                          clears the sign bit
 *   vf_lt_sel(a, b, x, y)              a < b ? x : y per lane (false for NaN)
 *   vf_swap_pairs(x)                   [x1, x0, x3, x2, ...]
 *   vf_rint(x)                         nearest integer, ties to even
 *   vf_pow2i(t)                        2^n where t = n + 0x1.8p23, -127 <= n <= 127
 *                                      (n = -127 gives +0)
 *   vf_ldexp(p, n)                     p 2^n for integral n in [-126, 127] and a normal
 *                                      result (exact)
 *   VF_LDEXP_ANY                       (a macro, optional) defined by a layer whose
 *                                      vf_ldexp is exact for any integral n: a subnormal
 *                                      result rounded once, 0 far below (AVX-512's
 *                                      vscalefps); math.h's vf_exp2 then builds 2^n with it
 *   vf_hsum(v), vf_hmax(v)             horizontal sum / max to a float (fixed order)
 *   vf_hsum_w(a)                       lane r = horizontal sum of a[r], r < VW (fixed order)
 *   vf_transpose(a)                    a[0 .. VW) in place: lane c of a[r] <-> lane r of a[c]
 *   vf_mask_q(s, qpos, kp)             -inf in lanes i with qpos[i] < kp (queries along
 *                                      the lanes, one key: the attention's mask rule)
 *   vf_mask_k(s, qp, kpos)             -inf in lanes j with qp < kpos[j] (one query, keys
 *                                      along the lanes)
 *
 * Double vectors (for the activations, evaluated in double and rounded once)
 *   vd_set1, vd_add, vd_sub, vd_mul, vd_div, vd_fma, vd_min, vd_abs
 *   vd_neg_sel(x, a, b)                sign bit of x set ? a : b
 *   vd_pow2i(t)                        2^n where t = n + 0x1.8p52
 *   vf_lo_pd(x), vf_hi_pd(x)           the low / high VW/2 floats of x widened (exact)
 *   vd_join_ps(lo, hi)                 both rounded to float (nearest, once) and joined
 *
 * Every kernel built on this contract computes each output element in a fixed order of
 * these operations, so results depend on the ISA only through VW-dependent reduction
 * orders (documented where they occur), never on the thread count.
 */
#ifndef JEPA_KERNELS_SIMD_VECTOR_H
#define JEPA_KERNELS_SIMD_VECTOR_H

#if !defined(VW) || !defined(OPS_ALWAYS)
#error "include a vector layer (kernels/x86/vec_*.h, kernels/arm/vec_*.h), not vector.h itself"
#endif
#if VW != 4 && VW != 8 && VW != 16
#error "VW must be 4, 8 or 16"
#endif

#endif
