/*
 * gemm_avx512.c — the matmul slots Y = epi(X . W^T + b) for AVX-512 (F/BW/VL/DQ), every
 * weight dtype of enum jk_dtype (f32, f16, bf16 and the block formats, q8_0 to q6_K)
 * through one f32 microkernel.
 *
 * Same algorithm as gemm_avx2.c (blocking and threads: gemm_tmpl.h; weight conversion
 * while packing, X packing, the small-M weight-streaming path and the 256-bit GELU for
 * edge tiles: gemm_x86.h), with a 14 x 32 register tile: 28 zmm accumulators,
 * 2 B vectors and 1 broadcast of the 32 zmm registers; per k 2 loads + 14 broadcasts
 * feed 28 FMAs. Full tiles of 14 rows broadcast from X in place where its row stride
 * allows (gt_ukernel_x; gemm_tmpl.h, GT_UKERNEL_X), other tiles from packed panels. Full
 * tiles store with 512-bit loads/stores and a 512-bit erf-GELU; partial tiles go through
 * 256-bit halves and AVX2 masked loads/stores.
 *
 * Only intrinsics SIMDe 0.7.4 implements are used (no _mm512_cvtph_ps, no masked
 * loads/stores, no _mm512_reduce_*), so tests/checkasm builds this file once more
 * against SIMDe (kernels/x86/simd.h, -DJEPA_SIMDE) and runs checkasm_gemm_avx512emu
 * on machines without AVX-512. On AVX-512 machines checkasm_gemm runs it natively; the
 * blocking below is tuned for 32 KiB L1d and 1 MiB L2 per core.
 *
 * Tested against kernels/ref/gemm_ref.c by tests/checkasm/test_gemm.c; timed by
 * `jepa bench kernels` (bench/bench_kernels.c) on AVX-512 machines.
 */
#include "kernels/x86/vec_avx512.h"
#include "kernels/x86/x86.h"

/* Blocking (tuned: docs/notes/kernel-tuning.md#gemm-avx512):
 *  - 14 x 32 tile: 28 accumulators + 2 B vectors + 1 broadcast of 32 zmm registers.
 *  - KC 384: the 14-row A micro-panel (21 KiB) stays in L1 and the 32-column B micro-panel
 *    (48 KiB) streams from L2, which the hardware prefetcher keeps up with; K = 768 is
 *    then 2 K blocks instead of 4, half the Y tile round trips.
 *  - MC 168 (12 x 14): the A block is 252 KiB of L2.
 *  - NC 1024: the B panel is 1.5 MiB per thread, in L3.
 *  - SMALL_M 16: the weight-streaming path is 256 bits wide (gemm_x86.h), half the
 *    microkernel's width, so it hands over earlier than on AVX2 (64). */
#define GT_MR 14
#define GT_NR 32
#define GT_KC 384
#define GT_MC 168
#define GT_NC 1024

/* Built twice (kernels/meson.build): as the exact tier's f32 kernel, and with
 * -DJK_GEMM_BF16X -mavx512bf16 as the bf16 tier's (kernels.h, JK_PREC_BF16): the same
 * blocking, threads and epilogues, with X and W packed as bf16 pairs (gemm_pairs.h) and
 * VDPBF16PS in the K loop. X is then always packed (it must be rounded), and every M takes
 * the packed path: the f32 weight-streaming path of small M would not round, and a row's
 * result would depend on how many rows came with it. */
#ifdef JK_GEMM_BF16X
#define GT_SMALL_M 0
#define GT_UKERNEL_X 0
#define GT_PACKED_K(kc) (((kc) + 1) / 2)
#define GEMM_ISA avx512_bf16
#define GT_KIND JK_GK_AVX512_BF16
#else
#define GT_SMALL_M 16
#define GT_UKERNEL_X 1   /* full tiles read X in place (gt_ukernel_x below) */
#define GEMM_ISA avx512
#define GT_KIND JK_GK_AVX512
#endif

#include "kernels/simd/gemm_tmpl.h"
#include "kernels/x86/gemm_x86.h"
#ifdef JK_GEMM_BF16X
#include "kernels/x86/gemm_pairs.h"
#endif

#ifdef JK_GEMM_BF16X
/* The same 64 bytes as the bf16 vector type VDPBF16PS takes (a copy the compiler drops). */
static ALWAYS_INLINE __m512bh as_bh(__m512i v) {
    __m512bh r;
    memcpy(&r, &v, sizeof r);
    return r;
}
#endif

#include "kernels/x86/gemm_store512.h"

/* ---- the microkernel: up to 14 x 32 --------------------------------------------------- */

/* The K loop for the first R rows of the tile (R a constant at each call below, so the
 * rows past it vanish): per k 2 B loads, R broadcasts, 2R FMAs. A tile of fewer than 14
 * rows (the last of M) costs its rows, not 14: 197 tokens are 14 tiles + 1 row. A's row i
 * at step k is a[k * ka + i * ia]: a packed panel (ka = GT_MR, ia = 1, constants) or X
 * read in place (ka = 1, ia = its row stride; full tiles only, gemm_tmpl.h's
 * GT_UKERNEL_X); the same FMAs in the same order either way. The rows are addressed from
 * two pointers, a and a + 7 ia, plus 0, ia, 2 ia, 3 ia, 4 ia, 5 ia and 6 ia, so that in
 * place the loop keeps its 14 broadcasts in base + index addressing with no pointer per
 * row. The accumulators then go to c[][] for the shared store (one copy of the epilogues
 * rather than one per R: 28 stores and reloads per tile and K block, against 2 x 14 x kc
 * FMAs). */
#define ACC_DECL(i) __m512 c##i##_0 = _mm512_setzero_ps(), c##i##_1 = _mm512_setzero_ps()
#define ACC_FMA(i, p)                                                                   \
    do {                                                                                \
        if ((i) < R) {                                                                  \
            const __m512 ai = _mm512_set1_ps(*(p));                                     \
            c##i##_0 = _mm512_fmadd_ps(ai, b0, c##i##_0);                               \
            c##i##_1 = _mm512_fmadd_ps(ai, b1, c##i##_1);                               \
        }                                                                               \
    } while (0)
/* The bf16 tier: row i's pair p broadcast, two VDPBF16PS on the 32 columns' pairs. */
#define ACC_DP(i, p)                                                                    \
    do {                                                                                \
        if ((i) < R) {                                                                  \
            const __m512bh ai = as_bh(_mm512_set1_epi32((int)*(const uint32_t *)(p)));  \
            c##i##_0 = _mm512_dpbf16_ps(c##i##_0, ai, b0);                              \
            c##i##_1 = _mm512_dpbf16_ps(c##i##_1, ai, b1);                              \
        }                                                                               \
    } while (0)
#define ACC_OUT(i)                                                                      \
    do {                                                                                \
        if ((i) < R) {                                                                  \
            _mm512_store_ps(c[i], c##i##_0);                                            \
            _mm512_store_ps(c[i] + 16, c##i##_1);                                       \
        }                                                                               \
    } while (0)

static ALWAYS_INLINE void ukernel_rows(const int R, int kc, const float *restrict a, size_t ka,
                                       size_t ia, const float *restrict b, float c[GT_MR][GT_NR]) {
    ACC_DECL(0); ACC_DECL(1); ACC_DECL(2); ACC_DECL(3); ACC_DECL(4); ACC_DECL(5); ACC_DECL(6);
    ACC_DECL(7); ACC_DECL(8); ACC_DECL(9); ACC_DECL(10); ACC_DECL(11); ACC_DECL(12); ACC_DECL(13);
    const size_t i3 = 3 * ia, i5 = 5 * ia;
    const float *a7 = a + 7 * ia;
#ifdef JK_GEMM_BF16X
    for (int p = 0; p < (kc + 1) / 2; p++) {   /* kc values = (kc + 1) / 2 pairs */
        const __m512bh b0 = as_bh(_mm512_load_si512(b)), b1 = as_bh(_mm512_load_si512(b + 16));
        ACC_DP(0, a); ACC_DP(1, a + ia); ACC_DP(2, a + 2 * ia); ACC_DP(3, a + i3);
        ACC_DP(4, a + 4 * ia); ACC_DP(5, a + i5); ACC_DP(6, a + 2 * i3);
        ACC_DP(7, a7); ACC_DP(8, a7 + ia); ACC_DP(9, a7 + 2 * ia); ACC_DP(10, a7 + i3);
        ACC_DP(11, a7 + 4 * ia); ACC_DP(12, a7 + i5); ACC_DP(13, a7 + 2 * i3);
        a += ka, a7 += ka;
        b += GT_NR;
    }
#else
    for (int k = 0; k < kc; k++) {
        const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
        ACC_FMA(0, a); ACC_FMA(1, a + ia); ACC_FMA(2, a + 2 * ia); ACC_FMA(3, a + i3);
        ACC_FMA(4, a + 4 * ia); ACC_FMA(5, a + i5); ACC_FMA(6, a + 2 * i3);
        ACC_FMA(7, a7); ACC_FMA(8, a7 + ia); ACC_FMA(9, a7 + 2 * ia); ACC_FMA(10, a7 + i3);
        ACC_FMA(11, a7 + 4 * ia); ACC_FMA(12, a7 + i5); ACC_FMA(13, a7 + 2 * i3);
        a += ka, a7 += ka;
        b += GT_NR;
    }
#endif
    ACC_OUT(0); ACC_OUT(1); ACC_OUT(2); ACC_OUT(3); ACC_OUT(4); ACC_OUT(5); ACC_OUT(6);
    ACC_OUT(7); ACC_OUT(8); ACC_OUT(9); ACC_OUT(10); ACC_OUT(11); ACC_OUT(12); ACC_OUT(13);
}

/* Fetch the Y tile into L2 now so its misses overlap the FMAs (it is read or written
 * after). Not into L1: Y's row stride is N floats, and at N = 1024, 3072, 4096 (12,
 * 16 KiB) all 14 rows fall in the same two L1 sets, where 28 lines evict each other and
 * the B micro-panel's (T0 against T1: docs/notes/kernel-tuning.md#gemm-avx512-prefetch-y). */
static ALWAYS_INLINE void prefetch_y(const float *y, size_t ldy, int mr, int nr) {
    for (int i = 0; i < mr; i++) {
        _mm_prefetch((const char *)(y + (size_t)i * ldy), _MM_HINT_T1);
        _mm_prefetch((const char *)(y + (size_t)i * ldy + nr - 1), _MM_HINT_T1);
    }
}

static void gt_ukernel(int kc, const float *restrict a, const float *restrict b, float *y,
                       size_t ldy, int mr, int nr, const float *bias, int mode) {
    _Alignas(64) float c[GT_MR][GT_NR];
    prefetch_y(y, ldy, mr, nr);
#ifdef JK_GEMM_BF16X   /* pair panels are [row][pair] (gemm_pairs.h) */
    const size_t ka = 1, ia = (size_t)(kc + 1) / 2;
#else
    const size_t ka = GT_MR, ia = 1;
#endif
    /* rows rounded up to even: 7 copies of the loop, at most one row of padding */
    switch ((mr + 1) / 2) {
    case 1: ukernel_rows(2, kc, a, ka, ia, b, c); break;
    case 2: ukernel_rows(4, kc, a, ka, ia, b, c); break;
    case 3: ukernel_rows(6, kc, a, ka, ia, b, c); break;
    case 4: ukernel_rows(8, kc, a, ka, ia, b, c); break;
    case 5: ukernel_rows(10, kc, a, ka, ia, b, c); break;
    case 6: ukernel_rows(12, kc, a, ka, ia, b, c); break;
    default: ukernel_rows(14, kc, a, ka, ia, b, c); break;
    }
    tile_out(c, y, ldy, mr, nr, bias, mode);
}

#if GT_UKERNEL_X
static void gt_ukernel_x(int kc, const float *x, size_t ldx, const float *b, float *y, size_t ldy,
                         int nr, const float *bias, int mode) {
    _Alignas(64) float c[GT_MR][GT_NR];
    prefetch_y(y, ldy, GT_MR, nr);
    ukernel_rows(GT_MR, kc, x, 1, ldx, b, c);
    tile_out(c, y, ldy, GT_MR, nr, bias, mode);
}
#endif

GEMM_X86_SLOTS_OF(GEMM_ISA)
