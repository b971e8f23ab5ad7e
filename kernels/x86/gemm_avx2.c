/*
 * gemm_avx2.c — the matmul slots Y = epi(X . W^T + b) for AVX2 + FMA + F16C, every weight
 * dtype of enum jk_dtype (f32, f16, bf16 and the block formats, q8_0 to q6_K; their
 * decoders: gemm_x86.h) through one f32 microkernel.
 *
 *   large M: BLIS-style blocking (kernels/simd/gemm_tmpl.h). W is converted to f32 while
 *            it is packed (F16C vcvtph2ps, bf16 << 16, q8_0 d * int8, the 4-6 bit
 *            formats as dequant_ref.c: all exact, the same values as the reference), X
 *            is packed (full 6-row tiles are read in place where X's row stride allows:
 *            GT_UKERNEL_X), and a 6 x 16 register tile (12 ymm accumulators, 2 loads +
 *            6 broadcasts per 12 FMAs) does the work; the epilogue (bias, erf-GELU,
 *            residual add) is fused into its store.
 *   small M (M <= GT_SMALL_M, e.g. the attentive-pool query or a short predictor): no
 *            packing; blocks of W rows (converted to f32 once, into ws, for every type
 *            but f32) are dotted with up to 3 rows of X at a time (8-wide partial
 *            sums along K reduced at the end: GEMV-like, W streamed once).
 * Activations stay f32 throughout. Parallel over output tiles only, so the bits do not
 * depend on the thread count; no allocation (ws, sized by jk_gemm_ws_avx2).
 *
 * Tested against kernels/ref/gemm_ref.c by tests/checkasm/test_gemm.c (meson test
 * --suite checkasm); timed by `jepa bench kernels` (bench/bench_kernels.c), numbers in
 * docs/performance-kernels.md.
 */
#include "kernels/x86/vec_avx2.h"
#include "kernels/x86/x86.h"

/* Blocking (tuned: docs/notes/kernel-tuning.md#gemm-avx2):
 *  - 6 x 16 tile: 12 accumulators + 2 B vectors + 1 broadcast of the 16 ymm registers.
 *  - KC 512 (K blocks of <= 512, equal length): fewer passes over Y than 256 or 384,
 *    though the 32 KiB B micro-panel then fills a 32 KiB L1.
 *  - MC 144, NC 1536: neighbouring sizes time the same.
 *  - SMALL_M 64: up to there the weight-streaming path beats packing, every dtype.
 *  - The Y tile is prefetched before the K loop (free, and Y is often far from cache
 *    between K blocks); prefetching A ahead and unrolling K by 4 gained nothing. */
#define GT_MR 6
#define GT_NR 16
#define GT_KC 512
#define GT_MC 144
#define GT_NC 1536
#define GT_SMALL_M 64
#define GT_UKERNEL_X 1   /* full tiles read X in place (gt_ukernel_x below) */
#define GEMM_ISA avx2
#define GT_KIND JK_GK_AVX2

#include "kernels/simd/gemm_tmpl.h"
#include "kernels/x86/gemm_x86.h"

/* acc -> Y for 8 columns (nr of them valid) with the epilogue of `mode`; bv: bias. */
static ALWAYS_INLINE void store8(float *y, __m256 acc, __m256 bv, int nr, int mode) {
    const enum jk_epilogue epi = GT_EPI(mode);
    const int last = mode & GT_LAST, load = !(mode & GT_FIRST) || epi == JK_EPI_ADD;
    if (nr >= 8) {
        if (last) acc = _mm256_add_ps(acc, bv);
        if (load) acc = _mm256_add_ps(_mm256_loadu_ps(y), acc);
        if (last && epi == JK_EPI_GELU) acc = gelu8(acc);
        _mm256_storeu_ps(y, acc);
    } else if (nr > 0) {
        const __m256i m = lane_mask(nr);
        if (last) acc = _mm256_add_ps(acc, bv);
        if (load) acc = _mm256_add_ps(_mm256_maskload_ps(y, m), acc);
        if (last && epi == JK_EPI_GELU) acc = gelu8(acc);
        _mm256_maskstore_ps(y, m, acc);
    }
}

/* ---- the microkernel: 6 x 16 ------------------------------------------------------- */

/* The tile's K loop and store; A's row i at step k is a[k * ka + i * ia]: a packed panel
 * (ka = GT_MR, ia = 1, constants) or X read in place (ka = 1, ia = its row stride; full
 * tiles only, gemm_tmpl.h's GT_UKERNEL_X). The same FMAs in the same order either way. */
static ALWAYS_INLINE void ukernel_6x16(int kc, const float *restrict a, size_t ka, size_t ia,
                                       const float *restrict b, float *y, size_t ldy, int mr,
                                       int nr, const float *bias, int mode) {
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
    __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
    __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
    __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
    __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
    __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
    /* The Y tile is read (or write-allocated) only after the loop: fetch it now, so the
     * misses overlap the FMAs instead of stalling the store. */
    for (int i = 0; i < mr; i++) {
        _mm_prefetch((const char *)(y + (size_t)i * ldy), _MM_HINT_T0);
        _mm_prefetch((const char *)(y + (size_t)i * ldy + nr - 1), _MM_HINT_T0);
    }
    const size_t i3 = 3 * ia, i5 = 5 * ia;
    for (int k = 0; k < kc; k++) {
        const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        __m256 ai;
        ai = _mm256_broadcast_ss(a);
        c00 = _mm256_fmadd_ps(ai, b0, c00);
        c01 = _mm256_fmadd_ps(ai, b1, c01);
        ai = _mm256_broadcast_ss(a + ia);
        c10 = _mm256_fmadd_ps(ai, b0, c10);
        c11 = _mm256_fmadd_ps(ai, b1, c11);
        ai = _mm256_broadcast_ss(a + 2 * ia);
        c20 = _mm256_fmadd_ps(ai, b0, c20);
        c21 = _mm256_fmadd_ps(ai, b1, c21);
        ai = _mm256_broadcast_ss(a + i3);
        c30 = _mm256_fmadd_ps(ai, b0, c30);
        c31 = _mm256_fmadd_ps(ai, b1, c31);
        ai = _mm256_broadcast_ss(a + 4 * ia);
        c40 = _mm256_fmadd_ps(ai, b0, c40);
        c41 = _mm256_fmadd_ps(ai, b1, c41);
        ai = _mm256_broadcast_ss(a + i5);
        c50 = _mm256_fmadd_ps(ai, b0, c50);
        c51 = _mm256_fmadd_ps(ai, b1, c51);
        a += ka;
        b += GT_NR;
    }
    __m256 bv0 = _mm256_setzero_ps(), bv1 = _mm256_setzero_ps();
    if ((mode & GT_LAST) && bias) {
        bv0 = nr >= 8 ? _mm256_loadu_ps(bias) : _mm256_maskload_ps(bias, lane_mask(nr));
        if (nr > 8)
            bv1 = nr >= 16 ? _mm256_loadu_ps(bias + 8) : _mm256_maskload_ps(bias + 8, lane_mask(nr - 8));
    }
    const __m256 acc[GT_MR][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                                  {c30, c31}, {c40, c41}, {c50, c51}};
    if ((mode & GT_LAST) && GT_EPI(mode) == JK_EPI_GELU && nr == GT_NR) {
        _Alignas(32) float c[GT_MR][GT_NR], bv[GT_NR];
        for (int i = 0; i < mr; i++) _mm256_store_ps(c[i], acc[i][0]), _mm256_store_ps(c[i] + 8, acc[i][1]);
        _mm256_store_ps(bv, bv0), _mm256_store_ps(bv + 8, bv1);
        gt_store_gelu(y, ldy, &c[0][0], bv, mr, !(mode & GT_FIRST));
        return;
    }
    for (int i = 0; i < mr; i++) {
        float *yi = y + (size_t)i * ldy;
        store8(yi, acc[i][0], bv0, nr, mode);
        if (nr > 8) store8(yi + 8, acc[i][1], bv1, nr - 8, mode);
    }
}

static void gt_ukernel(int kc, const float *restrict a, const float *restrict b, float *y,
                       size_t ldy, int mr, int nr, const float *bias, int mode) {
    ukernel_6x16(kc, a, GT_MR, 1, b, y, ldy, mr, nr, bias, mode);
}

static void gt_ukernel_x(int kc, const float *x, size_t ldx, const float *b, float *y, size_t ldy,
                         int nr, const float *bias, int mode) {
    ukernel_6x16(kc, x, 1, ldx, b, y, ldy, GT_MR, nr, bias, mode);
}

GEMM_X86_SLOTS_OF(GEMM_ISA)
