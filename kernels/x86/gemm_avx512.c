/*
 * gemm_avx512.c — the matmul slots Y = epi(X . W^T + b) for AVX-512 (F/BW/VL/DQ), every
 * weight dtype (f32, f16, bf16, q8_0) through one f32 microkernel.
 *
 * Same algorithm as gemm_avx2.c (blocking and threads: gemm_tmpl.h; weight conversion
 * while packing, X packing, the small-M weight-streaming path and the 256-bit GELU for
 * edge tiles: gemm_x86.h), with a 14 x 32 register tile: 28 zmm accumulators,
 * 2 B vectors and 1 broadcast of the 32 zmm registers; per k 2 loads + 14 broadcasts
 * feed 28 FMAs. Full tiles store with 512-bit loads/stores and a 512-bit erf-GELU;
 * partial tiles go through 256-bit halves and AVX2 masked loads/stores.
 *
 * Only intrinsics SIMDe 0.7.4 implements are used (no _mm512_cvtph_ps, no masked
 * loads/stores, no _mm512_reduce_*), so tests/checkasm builds this file once more
 * against SIMDe (kernels/x86/simd.h, -DJEPA_SIMDE) and runs checkasm_gemm_avx512emu
 * on machines without AVX-512 — which is how it is tested on the development machine
 * (AMD Zen 1, AVX2 only). Its speed there is unmeasured: the blocking constants below
 * are derived from cache sizes, not timed.
 *
 * Tested against kernels/ref/gemm_ref.c by tests/checkasm/test_gemm.c; timed by
 * `jepa bench kernels` (bench/bench_kernels.c) on AVX-512 machines.
 */
#include "kernels/x86/vec_avx512.h"
#include "kernels/x86/x86.h"

/* Blocking (not measured: no AVX-512 machine was available; from the cache sizes of
 * Skylake-SP / Ice Lake-SP: 32-48 KiB L1d, 1-2 MiB L2):
 *  - 14 x 32 tile: 28 accumulators + 2 B vectors + 1 broadcast of 32 zmm registers.
 *  - KC 192: the 32-column B micro-panel is 24 KiB and the 14-row A micro-panel 10.5 KiB,
 *    together in a 32 KiB L1.
 *  - MC 168 (12 x 14): the A block is 126 KiB of L2.
 *  - NC 2048: the B panel is 1.5 MiB per thread, in L2/L3.
 *  - SMALL_M 16: the weight-streaming path is 256 bits wide (gemm_x86.h), half the
 *    microkernel's width, so it should hand over earlier than on AVX2 (64). */
#define GT_MR 14
#define GT_NR 32
#define GT_KC 192
#define GT_MC 168
#define GT_NC 2048
#define GT_SMALL_M 16

#include "kernels/simd/gemm_tmpl.h"
#include "kernels/x86/gemm_x86.h"

static ALWAYS_INLINE __m256 lo256(__m512 v) { return _mm512_castps512_ps256(v); }
static ALWAYS_INLINE __m256 hi256(__m512 v) {
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

/* 8 columns (nr valid, 1..8) of a partial tile, through AVX2 masks. */
static ALWAYS_INLINE void store8_partial(float *y, __m256 acc, __m256 bv, int nr, int mode) {
    const enum jk_epilogue epi = GT_EPI(mode);
    const int last = mode & GT_LAST, load = !(mode & GT_FIRST) || epi == JK_EPI_ADD;
    if (nr <= 0) return;
    const __m256i m = lane_mask(nr);
    if (last) acc = _mm256_add_ps(acc, bv);
    if (load) acc = _mm256_add_ps(_mm256_maskload_ps(y, m), acc);
    if (last && epi == JK_EPI_GELU) acc = gelu8(acc);
    _mm256_maskstore_ps(y, m, acc);
}

/* acc -> Y for 16 columns (nr of them valid) with the epilogue of `mode`; bv: bias. */
static ALWAYS_INLINE void store16(float *y, __m512 acc, __m512 bv, int nr, int mode) {
    const enum jk_epilogue epi = GT_EPI(mode);
    const int last = mode & GT_LAST, load = !(mode & GT_FIRST) || epi == JK_EPI_ADD;
    if (nr >= 16) {
        if (last) acc = _mm512_add_ps(acc, bv);
        if (load) acc = _mm512_add_ps(_mm512_loadu_ps(y), acc);
        if (last && epi == JK_EPI_GELU) acc = vf_gelu(acc);
        _mm512_storeu_ps(y, acc);
    } else if (nr > 0) {
        store8_partial(y, lo256(acc), lo256(bv), nr, mode);
        if (nr > 8) store8_partial(y + 8, hi256(acc), hi256(bv), nr - 8, mode);
    }
}

/* bias for 16 columns, nr of them valid (the rest 0) */
static ALWAYS_INLINE __m512 load_bias16(const float *b, int nr) {
    if (nr >= 16) return _mm512_loadu_ps(b);
    if (nr <= 0) return _mm512_setzero_ps();
    const __m256 lo = _mm256_maskload_ps(b, lane_mask(nr));
    const __m256 hi = nr > 8 ? _mm256_maskload_ps(b + 8, lane_mask(nr - 8)) : _mm256_setzero_ps();
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

/* ---- the microkernel: 14 x 32 ------------------------------------------------------ */

#define ACC_DECL(i) __m512 c##i##_0 = _mm512_setzero_ps(), c##i##_1 = _mm512_setzero_ps()
#define ACC_FMA(i)                                                                      \
    do {                                                                                \
        const __m512 ai = _mm512_set1_ps(a[i]);                                         \
        c##i##_0 = _mm512_fmadd_ps(ai, b0, c##i##_0);                                   \
        c##i##_1 = _mm512_fmadd_ps(ai, b1, c##i##_1);                                   \
    } while (0)
#define ACC_STORE(i)                                                                    \
    do {                                                                                \
        if (i < mr) {                                                                   \
            store16(y + (size_t)(i) * ldy, c##i##_0, bv0, nr, mode);                    \
            if (nr > 16) store16(y + (size_t)(i) * ldy + 16, c##i##_1, bv1, nr - 16, mode); \
        }                                                                               \
    } while (0)

static void gt_ukernel(int kc, const float *restrict a, const float *restrict b, float *y,
                       size_t ldy, int mr, int nr, const float *bias, int mode) {
    ACC_DECL(0); ACC_DECL(1); ACC_DECL(2); ACC_DECL(3); ACC_DECL(4); ACC_DECL(5); ACC_DECL(6);
    ACC_DECL(7); ACC_DECL(8); ACC_DECL(9); ACC_DECL(10); ACC_DECL(11); ACC_DECL(12); ACC_DECL(13);
    /* fetch the Y tile now so its misses overlap the FMAs (it is read or written after) */
    for (int i = 0; i < mr; i++) {
        _mm_prefetch((const char *)(y + (size_t)i * ldy), _MM_HINT_T0);
        _mm_prefetch((const char *)(y + (size_t)i * ldy + nr - 1), _MM_HINT_T0);
    }
    for (int k = 0; k < kc; k++) {
        const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
        ACC_FMA(0); ACC_FMA(1); ACC_FMA(2); ACC_FMA(3); ACC_FMA(4); ACC_FMA(5); ACC_FMA(6);
        ACC_FMA(7); ACC_FMA(8); ACC_FMA(9); ACC_FMA(10); ACC_FMA(11); ACC_FMA(12); ACC_FMA(13);
        a += GT_MR;
        b += GT_NR;
    }
    __m512 bv0 = _mm512_setzero_ps(), bv1 = _mm512_setzero_ps();
    if ((mode & GT_LAST) && bias) {
        bv0 = load_bias16(bias, nr);
        if (nr > 16) bv1 = load_bias16(bias + 16, nr - 16);
    }
    ACC_STORE(0); ACC_STORE(1); ACC_STORE(2); ACC_STORE(3); ACC_STORE(4); ACC_STORE(5); ACC_STORE(6);
    ACC_STORE(7); ACC_STORE(8); ACC_STORE(9); ACC_STORE(10); ACC_STORE(11); ACC_STORE(12); ACC_STORE(13);
}

GEMM_X86_SLOTS(avx512)
