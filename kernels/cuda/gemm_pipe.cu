/*
 * gemm_pipe.cu — the pipelined tensor-core matmul (JEPA_CUDA_KERNELS=pipe): Y = epi(X . W^T
 * + b) for f16 and bf16 weights, reading X from its 16-bit copy x16 (jk_gemm_args: already
 * rounded to the weight's type by the op that produced X), and writing Y in f32 and, when
 * y16 is set, rounded to y16_type as well (the next matmul's x16). f32 weights have their
 * own section below (bf16x3 from the weights' split copy, jk_gemm_args wsplit).
 *
 *   x16: [M, K] 16-bit, row stride ldx16 elements   w: N rows of K weights, ldw bytes apart
 *   y: f32 [M, N], row stride ldy floats            y16: [M, N] 16-bit, ldy16, or NULL
 *
 * A block computes a BM x BN tile of Y, walking K in steps of BK = 32, with STAGES = 4
 * shared-memory stages in a ring:
 *
 *   - cp.async copies 16 bytes (8 elements) of a row of the X or W tile straight from
 *     global to shared memory, no registers on the way; a ragged edge (a row past M or N,
 *     columns past K) is the same copy with fewer source bytes (0..16), which cp.async
 *     zero-fills, so the mma loop has no conditions. Each K step is one commit group; the
 *     loads of step kt + STAGES - 1 are issued while step kt is multiplied, and the wait
 *     for step kt leaves STAGES - 2 groups in flight: one __syncthreads per step.
 *   - Shared memory: each stage is the X tile (BM rows) then the W tile (BN rows), a row
 *     of 32 elements = 64 bytes = four 16-byte chunks, stored unpadded with the chunk
 *     index swizzled, chunk c of row r at slot c ^ ((r >> 1) & 3). ldmatrix reads one
 *     chunk of 8 consecutive rows per 8x8 matrix: unswizzled those 8 rows would fall on
 *     two 16-byte bank groups (4-way conflict); swizzled they cover all eight.
 *   - Fragments: ldmatrix.x4 loads the A fragment of a 16 x 16 piece of X (matrices:
 *     rows 0-7 / 8-15 x k 0-7, then x k 8-15: a[0..3] of compat.cuh's mma layout) and the
 *     B fragments of two 8-column pieces of W (rows n 0-7 x k 0-7 / 8-15, then n 8-15),
 *     then mma.sync m16n8k16 with f32 accumulators.
 *   - Tiles: 128 x 128 with 8 warps of 64 x 32 when the large tiles alone fill the GPU,
 *     else 64 x 64 with 4 warps of 32 x 32. __launch_bounds__ asks for 128 registers a
 *     thread (two 256-thread blocks, or four 128-thread ones, per SM; the stages of the
 *     large tile take 64 KiB of shared memory, two blocks 128 KiB). The build refuses
 *     spills (kernels/cuda/meson.build).
 *   - Epilogue: bias, GELU or the residual add, exactly as gemm.cu's (acc + b with b = 0
 *     without a bias, then gelu_erf or y_old + t), stored to y; the stored value rounded
 *     (nearest even) to y16_type is stored to y16.
 *
 * Each output is the same chain of mma over K in the same order as gemm.cu's kernel runs
 * for the same 16-bit X, so given x16 = round(x) both kernels give the same bits (the
 * tests check that); only the loading differs.
 *
 * Alignment: cp.async needs 16-byte aligned sources: x16 and w 16-byte aligned, ldx16 a
 * multiple of 8 elements, ldw of 16 bytes. The host checks that once per call; otherwise
 * the same kernel is built with plain loads (element by element, zero past the edges)
 * stored to the same swizzled stages, which gives the same bits. Element alignment is
 * assumed (2 bytes).
 *
 * Split-K (the section "split-K" at the end): where the grid of tiles is short, blockIdx.z
 * walks one contiguous range of K steps and stores its raw sums to a workspace, and a
 * second kernel adds the ranges in order and applies the epilogue.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/dequant.cuh"
#include "kernels/cuda/gemm_common.cuh"
#include "kernels/cuda/internal.cuh"
#include "kernels/cuda/math.cuh"

#if defined(__CUDACC__)
/* Threads per block and the blocks per SM to budget registers for. */
#define PIPE_LAUNCH_BOUNDS(n, b) __launch_bounds__(n, b)
#else
#define PIPE_LAUNCH_BOUNDS(n, b)
#endif

namespace {

struct PipeParams {
    float *y;
    size_t ldy;
    const uint16_t *x16;
    size_t ldx16;
    const unsigned char *w;
    size_t ldw;
    const float *bias;
    uint16_t *y16;
    size_t ldy16;
    int y16_f16;        /* y16 is f16 (else bf16) */
    int M, N, K;
    int epi;
    /* split-K: block z walks K steps [z * ksteps, (z + 1) * ksteps) (ksteps >= the step
     * count: one pass); with part set it stores its raw sums to part[z][M][N] (row stride
     * N) instead of the epilogue. ws: jk_gemm_args.ws (host side only). */
    float *part;
    int ksteps;
    void *ws;
};

constexpr int PBK = 32;          /* K step: a tile row is 32 elements = 64 bytes           */
constexpr int ROW_BYTES = PBK * 2;
constexpr int CHUNKS = PBK / 8;  /* 16-byte chunks per tile row                            */
constexpr int STAGES = 4;

struct alignas(16) U32x4p { uint32_t v[4]; };

template <int BM, int BN, int WM, int WN>
struct PipeCfg {
    static constexpr int NTHR = WM * WN * 32;
    static constexpr int BM_ROWS = BM, BN_ROWS = BN;      /* the W tile follows BM rows */
    static constexpr int TM = BM / WM, TN = BN / WN;     /* warp tile */
    static constexpr int MI = TM / 16, NJ = TN / 8;       /* mma tiles per warp */
    static constexpr int STAGE_BYTES = (BM + BN) * ROW_BYTES;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;
    static_assert(MI >= 1 && NJ % 2 == 0, "warp tile: 16 rows x 16 columns at least");
};

/* Byte offset of chunk c (0..3) of tile row r: the swizzle that keeps ldmatrix's eight
 * rows on distinct bank groups. */
__device__ __forceinline__ int swz(int r, int c) {
    return r * ROW_BYTES + ((c ^ ((r >> 1) & 3)) << 4);
}

/* One 16-byte chunk of a tile row to shared memory at dst: `n` 16-bit elements from src
 * (0 <= n <= 8), zeros after them. ASYNC: cp.async of 16 bytes (src 16-byte aligned);
 * else plain loads and one 16-byte store. */
template <bool ASYNC>
__device__ __forceinline__ void copy_chunk(unsigned char *dst, const unsigned char *src, int n) {
    if constexpr (ASYNC) {
        jkc_cp_async16(dst, src, 2 * n);
    } else {
        const uint16_t *s = reinterpret_cast<const uint16_t *>(src);
        uint16_t h[8];
        JKC_UNROLL
        for (int e = 0; e < 8; e++) h[e] = e < n ? s[e] : (uint16_t)0;
        U32x4p q;
        JKC_UNROLL
        for (int e = 0; e < 4; e++) q.v[e] = jkc_pack2(h[2 * e], h[2 * e + 1]);
        *reinterpret_cast<U32x4p *>(dst) = q;
    }
}

/* Queue rows r0 .. r0 + ROWS - 1 of a 16-bit matrix (rows of `ld` bytes, `rows` of them),
 * columns k0 .. k0 + 31, to the tile at dst. A row outside the matrix, or a chunk wholly
 * past K, copies 0 bytes (from the matrix's first element, a valid address): zeros. */
template <int ROWS, int NTHR, bool ASYNC>
__device__ __forceinline__ void load_tile(unsigned char *dst, const unsigned char *base, size_t ld,
                                          int r0, int rows, int k0, int K, int tid) {
    static_assert(ROWS * CHUNKS % NTHR == 0, "whole chunks per thread");
    JKC_UNROLL
    for (int i = 0; i < ROWS * CHUNKS / NTHR; i++) {
        const int c = tid + i * NTHR, r = c / CHUNKS, kc = c % CHUNKS;
        const int left = K - k0 - kc * 8;
        const int n = r0 + r < rows ? (left >= 8 ? 8 : left > 0 ? left : 0) : 0;
        const unsigned char *src =
            n ? base + (size_t)(r0 + r) * ld + (size_t)(k0 + kc * 8) * 2 : base;
        copy_chunk<ASYNC>(dst + swz(r, kc), src, n);
    }
}

/* Queue the X and W tiles of the K step starting at k0 into the stage at `st`. */
template <class C, bool ASYNC>
__device__ __forceinline__ void load_stage(const PipeParams &p, unsigned char *st, int tid,
                                           int m0, int n0, int k0) {
    load_tile<C::BM_ROWS, C::NTHR, ASYNC>(st, reinterpret_cast<const unsigned char *>(p.x16),
                                          p.ldx16 * 2, m0, p.M, k0, p.K, tid);
    load_tile<C::BN_ROWS, C::NTHR, ASYNC>(st + C::BM_ROWS * ROW_BYTES, p.w, p.ldw, n0, p.N, k0,
                                          p.K, tid);
}

template <int MODE>
__device__ __forceinline__ void pipe_mma(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    if constexpr (MODE == JK_F16) jkc_mma_f16(d, a, b);
    else jkc_mma_bf16(d, a, b);
}

/* acc += this warp's part of the 32-deep product of the tiles in stage `st`. */
template <int MODE, class C>
__device__ __forceinline__ void mma_stage(float (&acc)[C::MI][C::NJ][4], const unsigned char *st,
                                          int wm, int wn, int lane) {
    const unsigned char *sb = st + C::BM_ROWS * ROW_BYTES;
    const int l8 = lane & 7, q = lane >> 3;
    JKC_UNROLL
    for (int ks = 0; ks < PBK / 16; ks++) {
        /* B: lane l points at row l % 8 of matrix l / 8 = (n-half q >> 1, k-half q & 1) */
        uint32_t b[C::NJ][2];
        JKC_UNROLL
        for (int jp = 0; jp < C::NJ / 2; jp++) {
            uint32_t r[4];
            jkc_ldmatrix_x4(r, sb + swz(wn + jp * 16 + (q >> 1) * 8 + l8, ks * 2 + (q & 1)));
            b[2 * jp][0] = r[0], b[2 * jp][1] = r[1];
            b[2 * jp + 1][0] = r[2], b[2 * jp + 1][1] = r[3];
        }
        /* A: matrix q = (row-half q & 1, k-half q >> 1) */
        JKC_UNROLL
        for (int i = 0; i < C::MI; i++) {
            uint32_t a[4];
            jkc_ldmatrix_x4(a, st + swz(wm + i * 16 + (q & 1) * 8 + l8, ks * 2 + (q >> 1)));
            JKC_UNROLL
            for (int j = 0; j < C::NJ; j++) pipe_mma<MODE>(acc[i][j], a, b[j]);
        }
    }
}

/* y = epi(acc + b) as gemm.cu's store_out; y16 (when set) the stored value rounded. */
__device__ __forceinline__ void store_pipe(const PipeParams &p, int row, int col, float acc,
                                           float b) {
    jkc_epi_store(p.y + (size_t)row * p.ldy + col,
                  p.y16 ? p.y16 + (size_t)row * p.ldy16 + col : nullptr, p.y16_f16, p.epi, acc, b);
}

/* The ring of S stages over nk K steps (gemm_pipe's and gemm_pipe_f32's schedule): load(s, k0) queues the K
 * step at k0 into stage s (one commit group a step, empty past K), mma(s) multiplies stage
 * s once this thread's copies of it are done (at most S - 2 younger groups pending) and
 * the barrier has made every thread's visible and retired every read of the stage that
 * the next load overwrites. */
template <int S, class Load, class Mma>
__device__ __forceinline__ void pipe_ring(int nk, Load load, Mma mma) {
    JKC_UNROLL
    for (int s = 0; s < S - 1; s++) {
        if (s < nk) load(s, s * PBK);
        jkc_cp_async_commit();
    }
    for (int kt = 0; kt < nk; kt++) {
        jkc_cp_async_wait<S - 2>();
        __syncthreads();
        const int next = kt + S - 1;
        if (next < nk) load(next % S, next * PBK);
        jkc_cp_async_commit();
        mma(kt % S);
    }
    jkc_cp_async_wait_all();   /* only empty groups are left; retire them */
}

/* One BM x BN tile of Y per block; grid x over N tiles, y over M tiles. MODE: JK_F16 or
 * JK_BF16 (the weight type, and x16's). */
template <int MODE, int BM, int BN, int WM, int WN, bool ASYNC>
__global__ void PIPE_LAUNCH_BOUNDS(WM *WN * 32, (512 / (WM * WN * 32)))
    gemm_pipe(PipeParams p) {
    using C = PipeCfg<BM, BN, WM, WN>;
    JKC_DYN_SMEM(unsigned char, smem);
    const JkcTilePos q = jkc_tile_pos<BM, BN, WN, C::TM, C::TN>();
    float acc[C::MI][C::NJ][4];
    jkc_acc_zero(acc);

    /* This block's K steps: kt0 .. kt0 + nk - 1 (split-K: blockIdx.z's range), from column
     * kb on. */
    const int kt0 = (int)blockIdx.z * p.ksteps, left = (p.K + PBK - 1) / PBK - kt0;
    const int nk = left < p.ksteps ? left : p.ksteps, kb = kt0 * PBK;
    pipe_ring<STAGES>(
        nk,
        [&](int s, int k0) {
            load_stage<C, ASYNC>(p, smem + s * C::STAGE_BYTES, q.tid, q.m0, q.n0, kb + k0);
        },
        [&](int s) { mma_stage<MODE, C>(acc, smem + s * C::STAGE_BYTES, q.wm, q.wn, q.lane); });

    if (p.part) {   /* split-K: the raw sums of this range, no bias or epilogue */
        float *part = p.part + (size_t)blockIdx.z * (size_t)p.M * (size_t)p.N;
        jkc_acc_store(acc, q.m0 + q.wm, q.n0 + q.wn, q.g, q.t, p.M, p.N, nullptr,
                      [&](int row, int col, float v, float) { part[(size_t)row * p.N + col] = v; });
        return;
    }
    jkc_acc_store(acc, q.m0 + q.wm, q.n0 + q.wn, q.g, q.t, p.M, p.N, p.bias,
                  [&](int row, int col, float v, float b) { store_pipe(p, row, col, v, b); });
}

/* y16 = y rounded to y16's type, for the calls that another kernel served (gemm.cu):
 * rows blockIdx.y, + gridDim.y, ...; columns over x. */
__global__ void JKC_LAUNCH_BOUNDS(256) round_y16(PipeParams p) {
    const int n = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (n >= p.N) return;
    for (int m = (int)blockIdx.y; m < p.M; m += (int)gridDim.y) {
        const float v = p.y[(size_t)m * p.ldy + n];
        p.y16[(size_t)m * p.ldy16 + n] = p.y16_f16 ? jkc_f32_to_f16(v) : jkc_f32_to_bf16(v);
    }
}

/* ==== f32 weights: bf16x3 from the split copy =========================================
 *
 * gemm.cu's f32 path splits W and X into bf16 hi + lo at every tile load and runs three mma
 * per step. Here W comes already split (jk_gemm_args wsplit, made once when the weights were
 * uploaded: models/devcache.c) and is copied by cp.async like the 16-bit tiles above; X is
 * copied as f32 and split where its fragments are built (no 16-bit copy of X: the
 * producers stay as they are, and a hi / lo copy of X would cost 4 bytes an element, as
 * much as X itself).
 *
 *   - A stage: the X tile, BM rows of 32 floats (128 bytes = eight 16-byte chunks, chunk c
 *     of row r at slot c ^ (r & 7)), then the W hi tile and the W lo tile in the 16-bit
 *     layout above (swz, ldmatrix.x4). F32_STAGES = 3 in the ring: 128 x 128 takes 32 KiB a
 *     stage (96 KiB), 64 x 64 16 KiB (48 KiB).
 *   - A fragments: lane (g, t) reads 2 floats at (row g (+8), column 2t (+8)) of a 16-deep
 *     slice, 8 bytes a load; for one register the warp reads 8 rows x 2 chunks, which the
 *     swizzle puts on all eight bank groups twice (2 wavefronts for 256 bytes: the least).
 *     Each float is split by jkc_split_bf16 (gemm_common.cuh), as gemm.cu splits it.
 *   - Per 16-deep slice and mma tile: xl wh, xh wl, xh wh — gemm.cu's order over the same
 *     K steps, so given the same split of W the output has gemm.cu's bits.
 *   - Every warp that reads an X row splits it again (the WN warps across N: 4 in the large
 *     tile, 2 in the small): that many conversions a float against gemm.cu's one, in
 *     exchange for no register prefetch and no conversion pass through shared memory.
 * Alignment for cp.async: x 16-byte aligned and ldx a multiple of 4 floats; wsplit 16-byte
 * aligned and ldwsplit a multiple of 16 elements (so the lo half starts on 16 bytes too;
 * devcache.c's copy always is). Otherwise plain loads into the same stages, same bits.
 */

constexpr int F32_STAGES = 3;
constexpr int XROW_BYTES = PBK * 4;   /* a row of the f32 X tile: eight 16-byte chunks */

template <int BM, int BN, int WM, int WN>
struct F32Cfg {
    static constexpr int NTHR = WM * WN * 32;
    static constexpr int BM_ROWS = BM, BN_ROWS = BN;
    static constexpr int TM = BM / WM, TN = BN / WN;
    static constexpr int MI = TM / 16, NJ = TN / 8;
    static constexpr int WHI = BM * XROW_BYTES;        /* the W hi tile in a stage */
    static constexpr int WLO = WHI + BN * ROW_BYTES;   /* the W lo tile */
    static constexpr int STAGE_BYTES = WLO + BN * ROW_BYTES;
    static constexpr int SMEM_BYTES = F32_STAGES * STAGE_BYTES;
    static_assert(MI >= 1 && NJ % 2 == 0, "warp tile: 16 rows x 16 columns at least");
};

struct F32Params {
    PipeParams o;        /* y, bias, y16, M, N, K, epi (store_pipe); x16 and w unused */
    const float *x;
    size_t ldx;
    const uint16_t *wsplit;  /* row n: K hi, then at ldwsplit / 2 the K lo */
    size_t ldwsplit;
};

struct alignas(16) F32x4p { float v[4]; };
struct alignas(8) F32x2p { float v[2]; };

/* Byte offset of chunk c (0..7) of row r of the f32 X tile. */
__device__ __forceinline__ int swz32(int r, int c) {
    return r * XROW_BYTES + ((c ^ (r & 7)) << 4);
}

/* Rows r0 .. r0 + ROWS - 1, columns k0 .. k0 + 31 of f32 X (rows ld floats apart, `rows`
 * of them) to the tile at dst, 4 floats a chunk; a row outside X or columns past K copy
 * 0 bytes (from x's first element): zeros. */
template <int ROWS, int NTHR, bool ASYNC>
__device__ __forceinline__ void load_tile_f32(unsigned char *dst, const float *base, size_t ld,
                                              int r0, int rows, int k0, int K, int tid) {
    constexpr int XC = PBK / 4;
    static_assert(ROWS * XC % NTHR == 0, "whole chunks per thread");
    JKC_UNROLL
    for (int i = 0; i < ROWS * XC / NTHR; i++) {
        const int c = tid + i * NTHR, r = c / XC, kc = c % XC;
        const int left = K - k0 - kc * 4;
        const int n = r0 + r < rows ? (left >= 4 ? 4 : left > 0 ? left : 0) : 0;
        const float *src = n ? base + (size_t)(r0 + r) * ld + (size_t)(k0 + kc * 4) : base;
        if constexpr (ASYNC) {
            jkc_cp_async16(dst + swz32(r, kc), src, 4 * n);
        } else {
            F32x4p q;
            JKC_UNROLL
            for (int e = 0; e < 4; e++) q.v[e] = e < n ? src[e] : 0.0f;
            *reinterpret_cast<F32x4p *>(dst + swz32(r, kc)) = q;
        }
    }
}

/* Queue the X, W hi and W lo tiles of the K step starting at k0 into the stage at `st`. */
template <class C, bool ASYNC>
__device__ __forceinline__ void load_stage_f32(const F32Params &p, unsigned char *st, int tid,
                                                 int m0, int n0, int k0) {
    const unsigned char *wh = reinterpret_cast<const unsigned char *>(p.wsplit);
    const unsigned char *wl = reinterpret_cast<const unsigned char *>(p.wsplit + p.ldwsplit / 2);
    load_tile_f32<C::BM_ROWS, C::NTHR, ASYNC>(st, p.x, p.ldx, m0, p.o.M, k0, p.o.K, tid);
    load_tile<C::BN_ROWS, C::NTHR, ASYNC>(st + C::WHI, wh, p.ldwsplit * 2, n0, p.o.N, k0, p.o.K,
                                          tid);
    load_tile<C::BN_ROWS, C::NTHR, ASYNC>(st + C::WLO, wl, p.ldwsplit * 2, n0, p.o.N, k0, p.o.K,
                                          tid);
}

/* acc += this warp's part of the 32-deep bf16x3 product of the tiles in stage `st`. */
template <class C>
__device__ __forceinline__ void mma_stage_f32(float (&acc)[C::MI][C::NJ][4],
                                                const unsigned char *st, int wm, int wn,
                                                int lane) {
    const unsigned char *sh = st + C::WHI, *sl = st + C::WLO;
    const int l8 = lane & 7, q = lane >> 3, g = lane >> 2, t = lane & 3;
    JKC_UNROLL
    for (int ks = 0; ks < PBK / 16; ks++) {
        /* B of W hi and W lo: the 16-bit kernel's ldmatrix addressing */
        uint32_t bh[C::NJ][2], bl[C::NJ][2];
        JKC_UNROLL
        for (int jp = 0; jp < C::NJ / 2; jp++) {
            const int at = swz(wn + jp * 16 + (q >> 1) * 8 + l8, ks * 2 + (q & 1));
            uint32_t r[4];
            jkc_ldmatrix_x4(r, sh + at);
            bh[2 * jp][0] = r[0], bh[2 * jp][1] = r[1];
            bh[2 * jp + 1][0] = r[2], bh[2 * jp + 1][1] = r[3];
            jkc_ldmatrix_x4(r, sl + at);
            bl[2 * jp][0] = r[0], bl[2 * jp][1] = r[1];
            bl[2 * jp + 1][0] = r[2], bl[2 * jp + 1][1] = r[3];
        }
        JKC_UNROLL
        for (int i = 0; i < C::MI; i++) {
            /* register e: rows + 8 (e & 1), columns + 8 (e >> 1): a[0..3] of compat.cuh */
            uint32_t ah[4], al[4];
            JKC_UNROLL
            for (int e = 0; e < 4; e++) {
                const int row = wm + i * 16 + g + (e & 1) * 8;
                const int ch = ks * 4 + (e >> 1) * 2 + (t >> 1);
                const F32x2p v =
                    *reinterpret_cast<const F32x2p *>(st + swz32(row, ch) + (t & 1) * 8);
                uint16_t h0, l0, h1, l1;
                jkc_split_bf16(v.v[0], h0, l0);
                jkc_split_bf16(v.v[1], h1, l1);
                ah[e] = jkc_pack2(h0, h1), al[e] = jkc_pack2(l0, l1);
            }
            /* gemm.cu's order: the two small terms first, then the large one */
            JKC_UNROLL
            for (int j = 0; j < C::NJ; j++) {
                jkc_mma_bf16(acc[i][j], al, bh[j]);
                jkc_mma_bf16(acc[i][j], ah, bl[j]);
                jkc_mma_bf16(acc[i][j], ah, bh[j]);
            }
        }
    }
}

/* One BM x BN tile of Y per block; grid x over N tiles, y over M tiles, through pipe_ring
 * with F32_STAGES stages. Registers: 64 x 64 is budgeted for four blocks an SM
 * (128 a thread); 128 x 128 for one, as gemm.cu's kernel: at 128 a thread (two blocks)
 * ptxas spills 36-48 bytes, which the build refuses. */
template <int BM, int BN, int WM, int WN, bool ASYNC>
__global__ void PIPE_LAUNCH_BOUNDS(WM *WN * 32, (WM * WN * 32 >= 256 ? 1 : 4))
    gemm_pipe_f32(F32Params p) {
    using C = F32Cfg<BM, BN, WM, WN>;
    JKC_DYN_SMEM(unsigned char, smem);
    const JkcTilePos q = jkc_tile_pos<BM, BN, WN, C::TM, C::TN>();
    float acc[C::MI][C::NJ][4];
    jkc_acc_zero(acc);
    pipe_ring<F32_STAGES>(
        (p.o.K + PBK - 1) / PBK,
        [&](int s, int k0) {
            load_stage_f32<C, ASYNC>(p, smem + s * C::STAGE_BYTES, q.tid, q.m0, q.n0, k0);
        },
        [&](int s) { mma_stage_f32<C>(acc, smem + s * C::STAGE_BYTES, q.wm, q.wn, q.lane); });
    jkc_acc_store(acc, q.m0 + q.wm, q.n0 + q.wn, q.g, q.t, p.o.M, p.o.N, p.o.bias,
                  [&](int row, int col, float v, float b) { store_pipe(p.o, row, col, v, b); });
}

/* ---- host side ---- */

PipeParams params(const struct jk_gemm_args *a) {
    PipeParams p;
    p.y = a->y, p.ldy = a->ldy;
    p.x16 = a->x16, p.ldx16 = a->ldx16;
    p.w = static_cast<const unsigned char *>(a->w), p.ldw = a->ldw;
    p.bias = a->bias;
    p.y16 = a->y16, p.ldy16 = a->ldy16, p.y16_f16 = a->y16_type == JK_F16;
    p.M = a->M, p.N = a->N, p.K = a->K;
    p.epi = (int)a->epi;
    p.part = nullptr, p.ksteps = (a->K + PBK - 1) / PBK, p.ws = a->ws;
    return p;
}

int splitk_plan(PipeParams &p, int BM, int BN, int per_sm);
void splitk_reduce(const PipeParams &p, int nsplit, const char *what);

template <int MODE, int BM, int BN, int WM, int WN, bool ASYNC>
void launch_pipe(const PipeParams &p0, const char *what) {
    constexpr int smem = PipeCfg<BM, BN, WM, WN>::SMEM_BYTES;
    static std::atomic<uint64_t> optin{0};
    jkc_smem_optin(optin, gemm_pipe<MODE, BM, BN, WM, WN, ASYNC>, smem);
    PipeParams p = p0;
    const int nsplit = splitk_plan(p, BM, BN, 512 / (WM * WN * 32));
    const dim3 grid((unsigned)((p.N + BN - 1) / BN), (unsigned)((p.M + BM - 1) / BM),
                    (unsigned)nsplit);
    JKC_LAUNCH((gemm_pipe<MODE, BM, BN, WM, WN, ASYNC>), grid, dim3(WM * WN * 32), smem,
               jkc_stream(), p);
    jkc_check_launch(what);
    if (nsplit > 1) splitk_reduce(p, nsplit, what);
}

template <int MODE, bool ASYNC>
void run_pipe(const PipeParams &p, int tile, const char *what) {
    const long big = (long)((p.M + 127) / 128) * (long)((p.N + 127) / 128);
    if (tile == 128 || (tile == 0 && big >= jkc_sm_count()))
        launch_pipe<MODE, 128, 128, 2, 4, ASYNC>(p, what);
    else
        launch_pipe<MODE, 64, 64, 2, 2, ASYNC>(p, what);
}

bool al16(const void *ptr) { return ((uintptr_t)ptr & 15u) == 0; }

template <int BM, int BN, int WM, int WN, bool ASYNC>
void launch_pipe_f32(const F32Params &p, const char *what) {
    constexpr int smem = F32Cfg<BM, BN, WM, WN>::SMEM_BYTES;
    static std::atomic<uint64_t> optin{0};
    jkc_smem_optin(optin, gemm_pipe_f32<BM, BN, WM, WN, ASYNC>, smem);
    const dim3 grid((unsigned)((p.o.N + BN - 1) / BN), (unsigned)((p.o.M + BM - 1) / BM));
    JKC_LAUNCH((gemm_pipe_f32<BM, BN, WM, WN, ASYNC>), grid, dim3(WM * WN * 32), smem,
               jkc_stream(), p);
    jkc_check_launch(what);
}

template <bool ASYNC>
void run_pipe_f32(const F32Params &p, int tile, const char *what) {
    const long big = (long)((p.o.M + 127) / 128) * (long)((p.o.N + 127) / 128);
    if (tile == 128 || (tile == 0 && big >= jkc_sm_count()))
        launch_pipe_f32<128, 128, 2, 4, ASYNC>(p, what);
    else
        launch_pipe_f32<64, 64, 2, 2, ASYNC>(p, what);
}

} // namespace

void jkc_gemm_pipe(const struct jk_gemm_args *a, int dt, int tile, const char *what) {
    if (a->M <= 0 || a->N <= 0 || a->K <= 0) return;
    const PipeParams p = params(a);
    const bool async = al16(a->x16) && a->ldx16 % 8 == 0 && al16(a->w) && a->ldw % 16 == 0;
    if (dt == JK_F16) {
        if (async) run_pipe<JK_F16, true>(p, tile, what);
        else run_pipe<JK_F16, false>(p, tile, what);
    } else {
        if (async) run_pipe<JK_BF16, true>(p, tile, what);
        else run_pipe<JK_BF16, false>(p, tile, what);
    }
}

void jkc_gemm_y16(const struct jk_gemm_args *a, const char *what) {
    if (a->M <= 0 || a->N <= 0 || !a->y16) return;
    const PipeParams p = params(a);
    const dim3 grid((unsigned)((p.N + 255) / 256), (unsigned)(p.M < 65535 ? p.M : 65535));
    JKC_LAUNCH(round_y16, grid, dim3(256), 0, jkc_stream(), p);
    jkc_check_launch(what);
}

/* ---- split-K ----
 *
 * When the grid of tiles leaves most of the GPU idle (batch-1 shapes: M = 577 tokens with
 * N = 1024 is 160 tiles of 64 x 64 for 132 SMs x 4 resident blocks), the K steps are cut
 * into nsplit contiguous ranges and blockIdx.z = j walks range j: steps
 * [j * ksteps, min((j + 1) * ksteps, nk)) with ksteps = ceil(nk / nsplit), nk = ceil(K / 32),
 * every range non-empty (nsplit = ceil(nk / ksteps)). Each block stores the raw f32 sums of
 * its range (no bias, no epilogue) to part[j][M][N] in the workspace; then splitk_reduce,
 * one thread per output, adds the ranges in order and applies the one-pass epilogue:
 *
 *     s = part[0]; s += part[1]; ...; s += part[nsplit - 1];   (f32, in this order)
 *     y = epi(s + b)  (store_pipe: b = bias or 0; GELU; or y_old + t), y16 = y rounded.
 *
 * part[j] is, bit for bit, what the one-pass kernel gives with K cut down to range j (x16
 * and w advanced to its first column, no bias, store): the same chain of mma from zero.
 * So the result is deterministic (no atomics: the emulator has none, and the order of the
 * sum is fixed), and differs from the one-pass kernel's only by where the f32 sum is cut.
 *
 * When (the rule, host side; jkc_gemm_force_splitk overrides it for the tests):
 *   - a workspace is given (jk_gemm_args.ws; NULL: one pass), JEPA_CUDA_SPLITK is not "0";
 *   - slots = SMs x the blocks per SM the launch bounds budget for (2 of 128 x 128, 4 of
 *     64 x 64); split only if the tiles fill at most half of them (tiles * 2 <= slots):
 *     a fuller grid has enough warps per SM to hide latency, and the partial sums cost
 *     2 x nsplit x M x N x 4 bytes of traffic;
 *   - nsplit = min(slots / tiles, nk / 8, 16): all nsplit x tiles blocks resident at once
 *     (one wave, no tail), each range at least 8 steps (twice the 4-stage ring, so the
 *     prologue is amortised), at most 16 ranges for the reduction to read; no split below 2.
 * The tile choice (run_pipe) is unchanged, so only the 64 x 64 tile splits by this rule.
 * Not measured: the rule is the reasoning above, for the first GPU run to confirm.
 *
 * Workspace: nsplit x M x N x 4 <= slots x BM x BN x 4 <= SMs x 2 x 128 x 128 x 4 bytes
 * (16.5 MiB for 132 SMs; SMs of the current device, which a forward binds before it plans
 * and runs): the bound gemm_ws returns (jkc_gemm_splitk_ws) for K of at least 16 steps, the
 * only K the rule splits; a call is split only if its partial sums fit that bound, whatever
 * the tests force.
 */

namespace {

constexpr int SPLITK_MIN_STEPS = 8;   /* K steps per range at least (the rule above)  */
constexpr int SPLITK_MAX = 16;        /* ranges at most                               */

/* Forced by the tests: 0 = the rule, 1 = never split, n >= 2 = n ranges. */
std::atomic<int> forced_splitk{0};

/* JEPA_CUDA_SPLITK, read once: "0" turns split-K off, unset / "" / "1" leaves it on. */
bool splitk_env_on() {
    static const bool on = [] {
        const char *e = getenv("JEPA_CUDA_SPLITK");
        if (!e || !*e || !strcmp(e, "1")) return true;
        if (!strcmp(e, "0")) return false;
        fprintf(stderr, "jepa: JEPA_CUDA_SPLITK=%s ignored (\"0\" or \"1\"); split-K stays on\n",
                e);
        return true;
    }();
    return on;
}

size_t splitk_ws_bound() { return (size_t)jkc_sm_count() * 2 * 128 * 128 * 4; }

/* The ranges for a call of BM x BN tiles, per_sm of them resident on an SM: p.ksteps and
 * p.part set (p.part NULL, one pass, when the result is 1). */
int splitk_plan(PipeParams &p, int BM, int BN, int per_sm) {
    const int nk = (p.K + PBK - 1) / PBK;
    p.part = nullptr, p.ksteps = nk;
    const int forced = forced_splitk.load(std::memory_order_relaxed);
    if (!p.ws || forced == 1 || (forced == 0 && !splitk_env_on())) return 1;
    const long tiles = (long)((p.M + BM - 1) / BM) * (long)((p.N + BN - 1) / BN);
    const long slots = (long)jkc_sm_count() * per_sm;
    long n;
    if (forced >= 2) {
        n = forced;
    } else {
        if (tiles * 2 > slots) return 1;
        n = slots / tiles;
        if (n > nk / SPLITK_MIN_STEPS) n = nk / SPLITK_MIN_STEPS;
        if (n > SPLITK_MAX) n = SPLITK_MAX;
    }
    const size_t plane = (size_t)p.M * (size_t)p.N * sizeof(float);
    if ((size_t)n > splitk_ws_bound() / plane) n = (long)(splitk_ws_bound() / plane);
    if (n > nk) n = nk;
    if (n < 2) return 1;
    p.ksteps = (int)((nk + n - 1) / n);
    p.part = static_cast<float *>(p.ws);
    return (nk + p.ksteps - 1) / p.ksteps;
}

/* y = epi(sum of the ranges in order + b) for column blockIdx.x * 256 + threadIdx.x, rows
 * blockIdx.y, + gridDim.y, ... */
__global__ void JKC_LAUNCH_BOUNDS(256) splitk_sum(PipeParams p, int nsplit) {
    const int n = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (n >= p.N) return;
    const float b = p.bias ? p.bias[n] : 0.0f;
    const size_t plane = (size_t)p.M * (size_t)p.N;
    for (int m = (int)blockIdx.y; m < p.M; m += (int)gridDim.y) {
        const float *q = p.part + (size_t)m * p.N + n;
        float s = q[0];
        for (int j = 1; j < nsplit; j++) s += q[(size_t)j * plane];
        store_pipe(p, m, n, s, b);
    }
}

void splitk_reduce(const PipeParams &p, int nsplit, const char *what) {
    const dim3 grid((unsigned)((p.N + 255) / 256), (unsigned)(p.M < 65535 ? p.M : 65535));
    JKC_LAUNCH(splitk_sum, grid, dim3(256), 0, jkc_stream(), p, nsplit);
    jkc_check_launch(what);
}

} // namespace

size_t jkc_gemm_splitk_ws(int K) {
    if (!jkc_kernels_pipe() || !splitk_env_on() || (K + PBK - 1) / PBK < 2 * SPLITK_MIN_STEPS)
        return 0;
    return splitk_ws_bound();
}

/* Test hook (not in any public header): 0 = the rule, 1 = never split, n >= 2 = n ranges
 * (fewer where K has fewer steps or the partial sums would not fit the workspace bound). */
extern "C" void jkc_gemm_force_splitk(int n) {
    forced_splitk.store(n < 0 ? 0 : n, std::memory_order_relaxed);
}

void jkc_gemm_pipe_f32(const struct jk_gemm_args *a, int tile, const char *what) {
    if (a->M <= 0 || a->N <= 0 || a->K <= 0) return;
    F32Params p;
    p.o = params(a);
    p.x = a->x, p.ldx = a->ldx;
    p.wsplit = a->wsplit, p.ldwsplit = a->ldwsplit;
    const bool async = al16(a->x) && a->ldx % 4 == 0 && al16(a->wsplit) && a->ldwsplit % 16 == 0;
    if (async) run_pipe_f32<true>(p, tile, what);
    else run_pipe_f32<false>(p, tile, what);
}

/* ==== Block-format weights (q8_0 .. q6_K): the integer codes on f16 tensor cores ====
 *
 * jkc_gemm_pipe_blk: the same pipeline and epilogue as above, with the 64 x 64 tile only
 * (run_pipe_blk says why), for ggml's block formats, X read from its f16 copy x16 (f16
 * whatever the format: the codes are exact in f16, the scales are applied in f32). Per
 * 32-deep K step:
 *
 *   - X: the f16 tile as above (cp.async when x16 allows it, else plain loads; the flag is
 *     a kernel argument, not a template parameter, which halves what nvcc compiles).
 *   - W: the block bytes are read with plain loads (a block is 18 to 210 bytes, and only
 *     q4_K / q5_K blocks are 16-byte multiples, so cp.async cannot take them in general),
 *     decoded by jkc_codes8 to the integer codes q (|q| <= 128), stored as f16 into the
 *     swizzled W tile, where ldmatrix reads them as it reads f16 weights; the scale d of
 *     each W row (q6_K: two, one per 16-deep half) and its offset m (q4_1, q5_1: the min;
 *     q4_K, q5_K: -dmin * mn; jkc_scale_offset) go to a small f32 array after the tiles.
 *     A step is one block (q8_0 .. q5_1) or one 32-weight sub-block (the K-quants), whole:
 *     K is a multiple of the block. The W of step kt + STAGES - 1 is decoded after step
 *     kt's mma are issued, into the stage step kt - 1 used (the barrier at the top of step
 *     kt ordered its reads), so the tensor cores have work while the loads wait.
 *   - Arithmetic, per output (r, n) and step: P = sum_k x16[r][k] * q[n][k] by mma
 *     m16n8k16 (f16 x f16, exact products, f32 sums) into a zeroed fragment, then
 *     acc = fmaf(d_n, P, acc); with an offset also S = sum_k x16[r][k] (the same mma
 *     against a column of ones: exact products, f32 sums) and acc = fmaf(m_n, S, acc).
 *     q6_K: P per 16-deep half, each with its own d. So one mma per 16 x 8 x 16 piece
 *     (the bf16x3 path of gemm.cu takes three), plus one per 16 rows for S.
 *   - Precision contract: X rounded to f16 (nearest even; overflow past 65504 is inf, as
 *     for f16 weights), products of X and codes exact, the scale applied in f32 once per
 *     32 (q6_K: 16) terms. Against the exact product of x16 and the decoded weights:
 *         |y - y~| <= 68 u A + (F + 2) u A' + u |y~|
 *     (u = 2^-24; A = the sum over slices of |d| sum|x q| + |m| sum|x|, A' = A + |b| +
 *     |y_old|, F the fmas along K: 2u for each of the <= 34 truncating additions of a
 *     slice's sums, u for each fma and the epilogue's add); tests/cuda/test_cuda_gemm.c
 *     derives and checks it. Not the default kernel's bits (it splits X in bf16 hi + lo
 *     and decodes the weights to f32 first).
 *   - Epilogue, y16 and the M / N edges: as above (store_pipe, jkc_acc_store).
 */
#if defined(__CUDACC__)
/* The W chunks of a thread decoded one after the other, not interleaved: the decoding's
 * registers stay those of one chunk. */
#define BLK_ONE_AT_A_TIME _Pragma("unroll 1")
#else
#define BLK_ONE_AT_A_TIME
#endif

namespace {

template <int DT, int BM, int BN, int WM, int WN>
struct BlkCfg : PipeCfg<BM, BN, WM, WN> {
    /* an offset term: the formats whose weight is d q + m */
    static constexpr bool OFFSET = DT == JK_Q4_1 || DT == JK_Q5_1 || DT == JK_Q4_K ||
                                   DT == JK_Q5_K;
    static constexpr int NSC = DT == JK_Q6_K ? 2 : 1;   /* scales per step and W row */
    /* A stage: the X tile, the W tile (codes), then f32 d[NSC][BN] and m[BN]. */
    static constexpr int SC_OFF = (BM + BN) * ROW_BYTES;
    static constexpr int STAGE_BYTES = SC_OFF + (NSC + (OFFSET ? 1 : 0)) * BN * 4;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;
};

/* The W tile of the step at k0 (codes, scales, offsets) into the stage at `st`; rows past
 * N and steps past K get zero codes and scales. */
template <int DT, class C>
__device__ __forceinline__ void load_wblk(const PipeParams &p, unsigned char *st, int tid, int n0,
                                          int k0) {
    unsigned char *sw = st + C::BM_ROWS * ROW_BYTES;
    float *sc = reinterpret_cast<float *>(st + C::SC_OFF);
    static_assert(C::BN_ROWS * CHUNKS % C::NTHR == 0, "whole chunks per thread");
    BLK_ONE_AT_A_TIME
    for (int i = 0; i < C::BN_ROWS * CHUNKS / C::NTHR; i++) {
        const int c = tid + i * C::NTHR, r = c / CHUNKS, kc = c % CHUNKS;
        const bool in = n0 + r < p.N && k0 < p.K;
        const unsigned char *row = p.w + (size_t)(in ? n0 + r : 0) * p.ldw;
        int q[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (in) jkc_codes8<DT>(row, k0 + kc * 8, q);
        U32x4p v;
        JKC_UNROLL
        for (int e = 0; e < 4; e++)
            v.v[e] = jkc_pack2(jkc_f32_to_f16((float)q[2 * e]),
                               jkc_f32_to_f16((float)q[2 * e + 1]));
        *reinterpret_cast<U32x4p *>(sw + swz(r, kc)) = v;
        if (kc % (CHUNKS / C::NSC) == 0) {   /* the first chunk of a scale's span */
            float d = 0.0f, m = 0.0f;
            if (in) jkc_scale_offset<DT>(row, k0 + kc * 8, d, m);
            sc[kc / (CHUNKS / C::NSC) * C::BN_ROWS + r] = d;
            if (C::OFFSET) sc[C::NSC * C::BN_ROWS + r] = m;
        }
    }
}

/* acc += this warp's part of the step in stage `st`, scaled per block (see above). */
template <int DT, class C>
__device__ __forceinline__ void mma_stage_blk(float (&acc)[C::MI][C::NJ][4],
                                              const unsigned char *st, int wm, int wn, int lane) {
    const unsigned char *sb = st + C::BM_ROWS * ROW_BYTES;
    const float *sc = reinterpret_cast<const float *>(st + C::SC_OFF);
    const int l8 = lane & 7, q = lane >> 3, t = lane & 3;
    /* B fragments of both 16-deep halves: lane l points at row l % 8 of matrix l / 8 =
     * (n-half q >> 1, k-half q & 1), as in mma_stage */
    uint32_t b[2][C::NJ][2];
    JKC_UNROLL
    for (int ks = 0; ks < 2; ks++)
        JKC_UNROLL
        for (int jp = 0; jp < C::NJ / 2; jp++) {
            uint32_t r[4];
            jkc_ldmatrix_x4(r, sb + swz(wn + jp * 16 + (q >> 1) * 8 + l8, ks * 2 + (q & 1)));
            b[ks][2 * jp][0] = r[0], b[ks][2 * jp][1] = r[1];
            b[ks][2 * jp + 1][0] = r[2], b[ks][2 * jp + 1][1] = r[3];
        }
    JKC_UNROLL
    for (int i = 0; i < C::MI; i++) {
        uint32_t a[2][4];
        JKC_UNROLL
        for (int ks = 0; ks < 2; ks++)
            jkc_ldmatrix_x4(a[ks], st + swz(wm + i * 16 + (q & 1) * 8 + l8, ks * 2 + (q >> 1)));
        float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};   /* row sums of x16: rows g, g, g+8, g+8 */
        if constexpr (C::OFFSET) {
            const uint32_t ones[2] = {0x3c003c00u, 0x3c003c00u};   /* f16 1.0 pairs */
            jkc_mma_f16(s, a[0], ones);
            jkc_mma_f16(s, a[1], ones);
        }
        JKC_UNROLL
        for (int j = 0; j < C::NJ; j++) {
            const int col = wn + j * 8 + 2 * t;
            float *o = acc[i][j];
            JKC_UNROLL
            for (int h = 0; h < C::NSC; h++) {
                float pp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                JKC_UNROLL
                for (int ks = h; ks < (C::NSC == 2 ? h + 1 : 2); ks++)
                    jkc_mma_f16(pp, a[ks], b[ks][j]);
                const float d0 = sc[h * C::BN_ROWS + col], d1 = sc[h * C::BN_ROWS + col + 1];
                o[0] = fmaf(d0, pp[0], o[0]), o[1] = fmaf(d1, pp[1], o[1]);
                o[2] = fmaf(d0, pp[2], o[2]), o[3] = fmaf(d1, pp[3], o[3]);
            }
            if constexpr (C::OFFSET) {
                const float *mv = sc + C::NSC * C::BN_ROWS;
                const float m0 = mv[col], m1 = mv[col + 1];
                o[0] = fmaf(m0, s[0], o[0]), o[1] = fmaf(m1, s[1], o[1]);
                o[2] = fmaf(m0, s[2], o[2]), o[3] = fmaf(m1, s[3], o[3]);
            }
        }
    }
}

/* One BM x BN tile of Y per block, as gemm_pipe; xasync: x16 may be copied by cp.async. */
template <int DT, int BM, int BN, int WM, int WN>
__global__ void PIPE_LAUNCH_BOUNDS(WM *WN * 32, (512 / (WM * WN * 32)))
    gemm_pipe_blk(PipeParams p, int xasync) {
    using C = BlkCfg<DT, BM, BN, WM, WN>;
    JKC_DYN_SMEM(unsigned char, smem);

    const int tid = (int)threadIdx.x, lane = tid & 31;
    const int m0 = (int)blockIdx.y * BM, wm = (tid >> 5) / WN * C::TM;   /* block, warp */
    const int n0 = (int)blockIdx.x * BN, wn = (tid >> 5) % WN * C::TN;
    const unsigned char *xb = reinterpret_cast<const unsigned char *>(p.x16);
    const size_t ldxb = p.ldx16 * 2;

    float acc[C::MI][C::NJ][4];
    jkc_acc_zero(acc);

    const int nk = (p.K + PBK - 1) / PBK;
    JKC_UNROLL
    for (int s = 0; s < STAGES - 1; s++) {
        unsigned char *st = smem + s * C::STAGE_BYTES;
        if (s < nk) {
            if (xasync) load_tile<BM, C::NTHR, true>(st, xb, ldxb, m0, p.M, s * PBK, p.K, tid);
            else load_tile<BM, C::NTHR, false>(st, xb, ldxb, m0, p.M, s * PBK, p.K, tid);
            load_wblk<DT, C>(p, st, tid, n0, s * PBK);
        }
        jkc_cp_async_commit();
    }
    for (int kt = 0; kt < nk; kt++) {
        jkc_cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int next = kt + STAGES - 1;
        unsigned char *sn = smem + (next % STAGES) * C::STAGE_BYTES;
        if (next < nk) {
            if (xasync) load_tile<BM, C::NTHR, true>(sn, xb, ldxb, m0, p.M, next * PBK, p.K, tid);
            else load_tile<BM, C::NTHR, false>(sn, xb, ldxb, m0, p.M, next * PBK, p.K, tid);
        }
        jkc_cp_async_commit();
        mma_stage_blk<DT, C>(acc, smem + (kt % STAGES) * C::STAGE_BYTES, wm, wn, lane);
        if (next < nk) load_wblk<DT, C>(p, sn, tid, n0, next * PBK);
    }
    jkc_cp_async_wait_all();

    jkc_acc_store(acc, m0 + wm, n0 + wn, lane >> 2, lane & 3, p.M, p.N, p.bias,
                  [&](int row, int col, float v, float b) { store_pipe(p, row, col, v, b); });
}

template <int DT, int BM, int BN, int WM, int WN>
void launch_pipe_blk(const PipeParams &p, int xasync, const char *what) {
    constexpr int smem = BlkCfg<DT, BM, BN, WM, WN>::SMEM_BYTES;
    static std::atomic<uint64_t> optin{0};
    jkc_smem_optin(optin, gemm_pipe_blk<DT, BM, BN, WM, WN>, smem);
    const dim3 grid((unsigned)((p.N + BN - 1) / BN), (unsigned)((p.M + BM - 1) / BM));
    JKC_LAUNCH((gemm_pipe_blk<DT, BM, BN, WM, WN>), grid, dim3(WM * WN * 32), smem, jkc_stream(),
               p, xasync);
    jkc_check_launch(what);
}

/* The 64 x 64 tile only (4 warps of 32 x 32, four blocks per SM at <= 128 registers):
 * the 128 x 128 one, with its 64 accumulators a thread next to the block decoding, spills
 * (4 - 100 bytes on sm_80 at 128 registers, whichever way the step's loops were
 * arranged). */
template <int DT>
void run_pipe_blk(const PipeParams &p, int xasync, const char *what) {
    launch_pipe_blk<DT, 64, 64, 2, 2>(p, xasync, what);
}

} // namespace

void jkc_gemm_pipe_blk(const struct jk_gemm_args *a, int dt, const char *what) {
    if (a->M <= 0 || a->N <= 0 || a->K <= 0) return;
    const PipeParams p = params(a);
    const int xasync = al16(a->x16) && a->ldx16 % 8 == 0;
    switch (dt) {
    case JK_Q8_0: run_pipe_blk<JK_Q8_0>(p, xasync, what); break;
    case JK_Q4_0: run_pipe_blk<JK_Q4_0>(p, xasync, what); break;
    case JK_Q4_1: run_pipe_blk<JK_Q4_1>(p, xasync, what); break;
    case JK_Q5_0: run_pipe_blk<JK_Q5_0>(p, xasync, what); break;
    case JK_Q5_1: run_pipe_blk<JK_Q5_1>(p, xasync, what); break;
    case JK_Q4_K: run_pipe_blk<JK_Q4_K>(p, xasync, what); break;
    case JK_Q5_K: run_pipe_blk<JK_Q5_K>(p, xasync, what); break;
    case JK_Q6_K: run_pipe_blk<JK_Q6_K>(p, xasync, what); break;
    default: break;
    }
}
