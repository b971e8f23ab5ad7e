/*
 * gemm_neon.c — the matmul slots Y = epi(X . W^T + b) for aarch64 Advanced SIMD, every
 * weight dtype of enum jk_dtype (f32, f16, bf16 and the block formats, q8_0 to q6_K)
 * through one f32 microkernel.
 *
 *   large M: the BLIS-style blocking and thread split of kernels/simd/gemm_tmpl.h (shared
 *            with the x86 files; it holds no ISA code). W is converted to f32 while it
 *            is packed (fcvtl for f16, ushll #16 for bf16, sxtl + scvtf + fmul for q8_0,
 *            the 4-6 bit formats as dequant_ref.c: exact, the reference's values), X is
 *            packed, and an 8 x 12 register tile (24 q accumulators; per k 3 B loads +
 *            2 A loads feed 24 fmla by element) does the work, the epilogue (bias,
 *            erf-GELU, residual add) fused into the store.
 *   small M (M <= GT_SMALL_M): no packing; W rows are streamed once and dotted with up
 *            to 3 rows of X at a time.
 * Activations stay f32. Parallel over output tiles only (same bits for any thread
 * count); no allocation (ws, sized by jk_gemm_ws_neon).
 *
 * Tested against kernels/ref/gemm_ref.c by tests/checkasm/test_gemm.c (on x86 hosts under
 * qemu-aarch64: meson setup --cross-file cross/aarch64-linux-gnu.ini); timed by
 * `jepa bench kernels`. Not tuned on an Arm core (docs/notes/kernel-tuning.md#gemm-neon).
 */
#include <arm_neon.h>
#include <string.h>

#include "kernels/arm/arm.h"
#include "kernels/arm/vec_neon.h"
#include "runtime/dtype.h"

/* Blocking (untimed: derived from the caches of Neoverse N1/V1 and Cortex-A7x, 64 KiB L1d,
 * 1 MiB L2):
 *  - 8 x 12 tile: 24 accumulators + 3 B + 2 A of 32 q registers.
 *  - KC 256: B micro-panel 12 KiB + A micro-panel 8 KiB in L1.
 *  - MC 128: the A block is 128 KiB of L2.
 *  - NC 1536 (128 panels of 12): the B panel is 1.5 MiB per thread, L2/L3.
 *  - SMALL_M 64 as on AVX2 (the weight-streaming path has the same vector width as the
 *    microkernel here). */
#define GT_MR 8
#define GT_NR 12
#define GT_KC 256
#define GT_MC 128
#define GT_NC 1536

/* Built twice (kernels/meson.build): as the exact tier's f32 kernel, and with
 * -DJK_GEMM_BF16X -march=armv8.2-a+bf16 as the bf16 tier's (kernels.h, JK_PREC_BF16) for
 * CPUs with FEAT_BF16: the same blocking, threads and epilogues, with X and W packed as
 * bf16 pairs (gemm_pairs.h) and BFDOT by element in the K loop. X is then always packed
 * (it must be rounded) and every M takes the packed path: the f32 weight-streaming path of
 * small M would not round, and a row's result would depend on how many rows came with it. */
#ifdef JK_GEMM_BF16X
#define GT_SMALL_M 0
#define GT_PACKED_K(kc) (((kc) + 1) / 2)
#define GEMM_ISA neon_bf16
#define GT_KIND JK_GK_NEON_BF16
#else
#define GT_SMALL_M 64
#define GEMM_ISA neon
#define GT_KIND JK_GK_NEON
#endif

#include "kernels/simd/gemm_tmpl.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* One step of the K loop reads GT_NR columns and GT_MR rows of operands, 4 per q register
 * (gt_opv): f32 values (one k), or the bf16 tier's pairs (two k, one float's bytes per
 * pair); c = GT_MAC(c, columns, rows, i) adds row i's product(s) to 4 columns of c: FMLA
 * by element, or BFDOT by element (c[j] += b[2j] a[2i] + b[2j+1] a[2i+1]). */
#ifdef JK_GEMM_BF16X
typedef bfloat16x8_t gt_opv;
#define GT_LD(p) vreinterpretq_bf16_f32(vld1q_f32(p))
#define GT_MAC vbfdotq_laneq_f32
#else
typedef float32x4_t gt_opv;
#define GT_LD(p) vld1q_f32(p)
#define GT_MAC vfmaq_laneq_f32
#endif

/* acc -> Y for 4 columns (nr of them valid) with the epilogue of `mode`; bv: bias. */
static ALWAYS_INLINE void store4(float *y, float32x4_t acc, float32x4_t bv, int nr, int mode) {
    const enum jk_epilogue epi = GT_EPI(mode);
    const int last = mode & GT_LAST, load = !(mode & GT_FIRST) || epi == JK_EPI_ADD;
    if (nr <= 0) return;
    if (last) acc = vaddq_f32(acc, bv);
    if (nr >= 4) {
        if (load) acc = vaddq_f32(vld1q_f32(y), acc);
        if (last && epi == JK_EPI_GELU) acc = vf_gelu(acc);
        vst1q_f32(y, acc);
    } else {
        float v[4], old[4] = {0};
        if (load) memcpy(old, y, (size_t)nr * sizeof(float));
        if (load) acc = vaddq_f32(vld1q_f32(old), acc);
        if (last && epi == JK_EPI_GELU) acc = vf_gelu(acc);
        vst1q_f32(v, acc);
        memcpy(y, v, (size_t)nr * sizeof(float));
    }
}

static ALWAYS_INLINE float32x4_t load4_partial(const float *p, int n) {
    if (n >= 4) return vld1q_f32(p);
    float v[4] = {0};
    if (n > 0) memcpy(v, p, (size_t)n * sizeof(float));
    return vld1q_f32(v);
}

/* ---- the microkernel: 8 x 12 ------------------------------------------------------- */

static void gt_ukernel(int kc, const float *restrict a, const float *restrict b, float *y,
                       size_t ldy, int mr, int nr, const float *bias, int mode) {
    float32x4_t c00 = vdupq_n_f32(0), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
    float32x4_t c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
    float32x4_t c40 = c00, c41 = c00, c42 = c00, c50 = c00, c51 = c00, c52 = c00;
    float32x4_t c60 = c00, c61 = c00, c62 = c00, c70 = c00, c71 = c00, c72 = c00;
    for (int i = 0; i < mr; i++) __builtin_prefetch(y + (size_t)i * ldy);
    for (int k = 0; k < GT_PACKED_K(kc); k++) {
        const gt_opv b0 = GT_LD(b), b1 = GT_LD(b + 4), b2 = GT_LD(b + 8);
        const gt_opv a0 = GT_LD(a), a1 = GT_LD(a + 4);
        c00 = GT_MAC(c00, b0, a0, 0), c01 = GT_MAC(c01, b1, a0, 0), c02 = GT_MAC(c02, b2, a0, 0);
        c10 = GT_MAC(c10, b0, a0, 1), c11 = GT_MAC(c11, b1, a0, 1), c12 = GT_MAC(c12, b2, a0, 1);
        c20 = GT_MAC(c20, b0, a0, 2), c21 = GT_MAC(c21, b1, a0, 2), c22 = GT_MAC(c22, b2, a0, 2);
        c30 = GT_MAC(c30, b0, a0, 3), c31 = GT_MAC(c31, b1, a0, 3), c32 = GT_MAC(c32, b2, a0, 3);
        c40 = GT_MAC(c40, b0, a1, 0), c41 = GT_MAC(c41, b1, a1, 0), c42 = GT_MAC(c42, b2, a1, 0);
        c50 = GT_MAC(c50, b0, a1, 1), c51 = GT_MAC(c51, b1, a1, 1), c52 = GT_MAC(c52, b2, a1, 1);
        c60 = GT_MAC(c60, b0, a1, 2), c61 = GT_MAC(c61, b1, a1, 2), c62 = GT_MAC(c62, b2, a1, 2);
        c70 = GT_MAC(c70, b0, a1, 3), c71 = GT_MAC(c71, b1, a1, 3), c72 = GT_MAC(c72, b2, a1, 3);
        a += GT_MR;
        b += GT_NR;
    }
    float32x4_t bv0 = vdupq_n_f32(0), bv1 = bv0, bv2 = bv0;
    if ((mode & GT_LAST) && bias) {
        bv0 = load4_partial(bias, nr);
        if (nr > 4) bv1 = load4_partial(bias + 4, nr - 4);
        if (nr > 8) bv2 = load4_partial(bias + 8, nr - 8);
    }
    const float32x4_t acc[GT_MR][3] = {{c00, c01, c02}, {c10, c11, c12}, {c20, c21, c22},
                                       {c30, c31, c32}, {c40, c41, c42}, {c50, c51, c52},
                                       {c60, c61, c62}, {c70, c71, c72}};
    if ((mode & GT_LAST) && GT_EPI(mode) == JK_EPI_GELU && nr == GT_NR) {
        float c[GT_MR][GT_NR], bv[GT_NR];
        for (int i = 0; i < mr; i++)
            vst1q_f32(c[i], acc[i][0]), vst1q_f32(c[i] + 4, acc[i][1]), vst1q_f32(c[i] + 8, acc[i][2]);
        vst1q_f32(bv, bv0), vst1q_f32(bv + 4, bv1), vst1q_f32(bv + 8, bv2);
        gt_store_gelu(y, ldy, &c[0][0], bv, mr, !(mode & GT_FIRST));
        return;
    }
    for (int i = 0; i < mr; i++) {
        float *yi = y + (size_t)i * ldy;
        store4(yi, acc[i][0], bv0, nr, mode);
        if (nr > 4) store4(yi + 4, acc[i][1], bv1, nr - 4, mode);
        if (nr > 8) store4(yi + 8, acc[i][2], bv2, nr - 8, mode);
    }
}

/* ---- packing ------------------------------------------------------------------------ */

#ifndef JK_GEMM_BF16X   /* the bf16 tier packs pairs instead: gemm_pairs.h */
static void gt_pack_a(float *p, const float *x, size_t ldx, int mc, int kc) {
    for (int i0 = 0; i0 < mc; i0 += GT_MR, p += (size_t)GT_MR * kc) {
        const float *r[GT_MR];
        for (int i = 0; i < GT_MR; i++) r[i] = x + (size_t)gt_min(i0 + i, mc - 1) * ldx;
        for (int k = 0; k < kc; k++)
            for (int i = 0; i < GT_MR; i++) p[(size_t)k * GT_MR + i] = r[i][k];
    }
}
#endif

/* 8 weights of a row from element k on, as f32 in two vectors (k % 8 == 0 for the block
 * formats). */
static ALWAYS_INLINE void ld8(enum jk_dtype t, const uint8_t *row, int k, float32x4_t *lo,
                              float32x4_t *hi) {
    if (t > JK_Q8_0) {   /* ggml's 4-6 bit formats: the reference decoder, 8 at a time */
        float v[8];
        jk_dequant_ref(t, row, k, 8, v);
        *lo = vld1q_f32(v);
        *hi = vld1q_f32(v + 4);
        return;
    }
    switch (t) {
    case JK_F16: {
        const float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(row + 2 * (size_t)k));
        *lo = vcvt_f32_f16(vget_low_f16(h));
        *hi = vcvt_high_f32_f16(h);
        break;
    }
    case JK_BF16: {
        const uint16x8_t h = vreinterpretq_u16_u8(vld1q_u8(row + 2 * (size_t)k));
        *lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
        *hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
        break;
    }
    case JK_Q8_0: {
        const uint8_t *blk = row + (size_t)(k / QK8_0) * sizeof(struct block_q8_0);
        uint16_t dh;
        memcpy(&dh, blk, 2);
        const float d = f16_to_f32(dh);
        const int16x8_t q = vmovl_s8(vld1_s8((const int8_t *)(blk + 2 + k % QK8_0)));
        *lo = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q))), d);
        *hi = vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(q)), d);
        break;
    }
    default:
        *lo = vreinterpretq_f32_u8(vld1q_u8(row + 4 * (size_t)k));
        *hi = vreinterpretq_f32_u8(vld1q_u8(row + 4 * (size_t)k + 16));
        break;
    }
}

/* 4 x 4 transpose: r[i] lane j -> r[j] lane i. */
static ALWAYS_INLINE void transpose4(float32x4_t r[4]) {
    const float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
    const float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
    r[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    r[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
    r[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    r[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
}

#ifdef JK_GEMM_BF16X
#include "kernels/arm/gemm_pairs.h"
#define GEMM_NEON_PACK_B pack_b_pairs
#else
#define GEMM_NEON_PACK_B pack_b
/* W rows -> p[panel][k][12], 4 rows x 8 k at a time, converted and transposed. */
static ALWAYS_INLINE void pack_b(enum jk_dtype t, float *p, const uint8_t *w, size_t ldw, int nc,
                                 int k0, int kc) {
    for (int j0 = 0; j0 < nc; j0 += GT_NR, p += (size_t)GT_NR * kc) {
        const uint8_t *r[GT_NR];
        for (int j = 0; j < GT_NR; j++) r[j] = w + (size_t)gt_min(j0 + j, nc - 1) * ldw;
        int k = 0;
        for (; k + 8 <= kc; k += 8) {
            for (int h = 0; h < GT_NR; h += 4) {
                float32x4_t lo[4], hi[4];
                for (int j = 0; j < 4; j++) ld8(t, r[h + j], k0 + k, &lo[j], &hi[j]);
                transpose4(lo);
                transpose4(hi);
                for (int i = 0; i < 4; i++) {
                    vst1q_f32(p + (size_t)(k + i) * GT_NR + h, lo[i]);
                    vst1q_f32(p + (size_t)(k + 4 + i) * GT_NR + h, hi[i]);
                }
            }
        }
        for (; k < kc; k++)
            for (int j = 0; j < GT_NR; j++) p[(size_t)k * GT_NR + j] = gt_weight1(t, r[j], k0 + k);
    }
}
#endif

/* ---- small M: stream the weights ---------------------------------------------------- */

/* Y[m .. m+MT, n .. n+nw] from nw weight rows of type t at w (row stride ldw bytes):
 * MT x NW accumulators over K, then the k % 8 tail, bias and epilogue. */
static ALWAYS_INLINE void small_tile(const struct jk_gemm_args *a, enum jk_dtype t, const int MT,
                                     const int NW, int m, const uint8_t *w, size_t ldw, int n,
                                     int nw) {
    const int K = a->K, K8 = K & ~7;
    const uint8_t *wr[8];
    const float *xr[3];
    float32x4_t acc[3][8];
    for (int r = 0; r < NW; r++) wr[r] = w + (size_t)gt_min(r, nw - 1) * ldw;
    for (int i = 0; i < MT; i++) xr[i] = a->x + (size_t)(m + i) * a->ldx;
    for (int i = 0; i < MT; i++)
        for (int r = 0; r < NW; r++) acc[i][r] = vdupq_n_f32(0.0f);
    for (int k = 0; k < K8; k += 8) {
        float32x4_t xl[3], xh[3];
        for (int i = 0; i < MT; i++) xl[i] = vld1q_f32(xr[i] + k), xh[i] = vld1q_f32(xr[i] + k + 4);
        for (int r = 0; r < NW; r++) {
            float32x4_t wl, wh;
            ld8(t, wr[r], k, &wl, &wh);
            for (int i = 0; i < MT; i++) {
                acc[i][r] = vfmaq_f32(acc[i][r], xl[i], wl);
                acc[i][r] = vfmaq_f32(acc[i][r], xh[i], wh);
            }
        }
    }
    for (int i = 0; i < MT; i++) {
        float s[8] = {0};
        for (int r = 0; r < NW; r++) s[r] = vaddvq_f32(acc[i][r]);
        for (int r = 0; r < nw; r++) {
            float tail = 0.0f;
            for (int k = K8; k < K; k++) tail += xr[i][k] * gt_weight1(t, wr[r], k);
            s[r] += tail;
            if (a->bias) s[r] += a->bias[n + r];
        }
        float *y = a->y + (size_t)(m + i) * a->ldy + n;
        if (a->epi == JK_EPI_ADD) {
            for (int r = 0; r < nw; r++) y[r] += s[r];
        } else {
            if (a->epi == JK_EPI_GELU) {
                vst1q_f32(s, vf_gelu(vld1q_f32(s)));
                vst1q_f32(s + 4, vf_gelu(vld1q_f32(s + 4)));
            }
            memcpy(y, s, (size_t)nw * sizeof(float));
        }
    }
}

/* One W row of K weights of type t (any but f32) widened to f32 in d: the hook of
 * the small-M driver (kernels/simd/gemm_small_tmpl.h, ISA-neutral). */
static ALWAYS_INLINE void row_to_f32(enum jk_dtype t, const uint8_t *row, float *d, int K) {
    if (t > JK_Q8_0) {
        jk_dequant_ref(t, row, 0, K, d);
        return;
    }
    int k = 0;
    for (; k + 8 <= K; k += 8) {
        float32x4_t lo, hi;
        ld8(t, row, k, &lo, &hi);
        vst1q_f32(d + k, lo);
        vst1q_f32(d + k + 4, hi);
    }
    for (; k < K; k++) d[k] = gt_weight1(t, row, k);
}

#include "kernels/simd/gemm_small_tmpl.h"

/* ---- the slots ---------------------------------------------------------------------- */

/* jk_gemm_<name>_<isa>, isa a macro's value (GEMM_ISA) */
#define GEMM_NEON_SLOT(name, isa) GEMM_NEON_SLOT_(name, isa)
#define GEMM_NEON_SLOT_(name, isa) jk_gemm_##name##_##isa
#define GEMM_NEON_DTYPE(name, T)                                                               \
    static void pack_b_##name(float *p, const uint8_t *w, size_t ldw, int nc, int k0, int kc) { \
        GEMM_NEON_PACK_B(T, p, w, ldw, nc, k0, kc);                                            \
    }                                                                                          \
    static void small_##name(const struct jk_gemm_args *a, int n0, int n1, float *scratch,      \
                             size_t nscratch) {                                                \
        small_m(a, T, n0, n1, scratch, nscratch);                                              \
    }                                                                                          \
    void GEMM_NEON_SLOT(name, GEMM_ISA)(const struct jk_gemm_args *a) {                         \
        gt_run(a, T, pack_b_##name, small_##name);                                             \
    }

#define GEMM_NEON_ROW(a, name, NAME, ...) GEMM_NEON_DTYPE(name, JK_##NAME)
JR_WEIGHT_TYPES(GEMM_NEON_ROW, )   /* every weight type of runtime/weight_types.h */
#undef GEMM_NEON_ROW

size_t GEMM_NEON_SLOT(prepack_floats, GEMM_ISA)(int N, int K) { return gt_prepack_floats(N, K); }
void GEMM_NEON_SLOT(prepack, GEMM_ISA)(enum jk_dtype t, float *dst, const void *w, size_t ldw,
                                       int N, int K) {
    static const gt_pack_b_fn by_type[JK_NDTYPES] = GT_PACK_B_BY_TYPE;
    gt_prepack(by_type[t], dst, w, ldw, N, K);
}

size_t GEMM_NEON_SLOT(ws, GEMM_ISA)(int nthreads, int K) { return gt_ws(nthreads, K); }
