/*
 * gemm_pipe.cu — the pipelined tensor-core matmul (JEPA_CUDA_KERNELS=pipe): Y = epi(X . W^T
 * + b) for f16 and bf16 weights, reading X from its 16-bit copy x16 (jk_gemm_args: already
 * rounded to the weight's type by the op that produced X), and writing Y in f32 and, when
 * y16 is set, rounded to y16_type as well (the next matmul's x16).
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
 * Split-K / stream-K is not done: the kernels.h workspace contract (gemm_ws(nthreads, K))
 * sizes scratch by K only, while deterministic split-K needs M x N partial sums per split,
 * and without atomics (which the emulator lacks) they have to be reduced in a fixed order
 * by a second pass through that scratch.
 */
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
    float *y = p.y + (size_t)row * p.ldy + col;
    float t = acc + b;
    if (p.epi == JK_EPI_GELU) t = gelu_erf(t);
    else if (p.epi == JK_EPI_ADD) t = *y + t;
    *y = t;
    if (p.y16)
        p.y16[(size_t)row * p.ldy16 + col] = p.y16_f16 ? jkc_f32_to_f16(t) : jkc_f32_to_bf16(t);
}

/* One BM x BN tile of Y per block; grid x over N tiles, y over M tiles. MODE: JK_F16 or
 * JK_BF16 (the weight type, and x16's). */
template <int MODE, int BM, int BN, int WM, int WN, bool ASYNC>
__global__ void PIPE_LAUNCH_BOUNDS(WM *WN * 32, (512 / (WM * WN * 32)))
    gemm_pipe(PipeParams p) {
    using C = PipeCfg<BM, BN, WM, WN>;
    JKC_DYN_SMEM(unsigned char, smem);

    const int tid = (int)threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm = (warp / WN) * C::TM, wn = (warp % WN) * C::TN;
    const int m0 = (int)blockIdx.y * BM, n0 = (int)blockIdx.x * BN;

    float acc[C::MI][C::NJ][4];
    jkc_acc_zero(acc);

    /* Prologue: steps 0 .. STAGES - 2 in flight, one commit group each (empty past K,
     * so that the group count the waits below rely on is the same for every K). */
    const int nk = (p.K + PBK - 1) / PBK;
    JKC_UNROLL
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < nk) load_stage<C, ASYNC>(p, smem + s * C::STAGE_BYTES, tid, m0, n0, s * PBK);
        jkc_cp_async_commit();
    }
    for (int kt = 0; kt < nk; kt++) {
        /* This thread's copies of step kt are done when at most STAGES - 2 younger groups
         * are pending; the barrier makes every thread's copies visible, and orders every
         * warp's reads of step kt - 1's stage before the copies issued into it below. */
        jkc_cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int next = kt + STAGES - 1;
        if (next < nk)
            load_stage<C, ASYNC>(p, smem + (next % STAGES) * C::STAGE_BYTES, tid, m0, n0,
                                 next * PBK);
        jkc_cp_async_commit();
        mma_stage<MODE, C>(acc, smem + (kt % STAGES) * C::STAGE_BYTES, wm, wn, lane);
    }
    jkc_cp_async_wait_all();   /* only empty groups are left; retire them */

    jkc_acc_store(acc, m0 + wm, n0 + wn, g, t, p.M, p.N, p.bias,
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
    return p;
}

template <int MODE, int BM, int BN, int WM, int WN, bool ASYNC>
void launch_pipe(const PipeParams &p, const char *what) {
    constexpr int smem = PipeCfg<BM, BN, WM, WN>::SMEM_BYTES;
    static std::atomic<uint64_t> optin{0};
    jkc_smem_optin(optin, gemm_pipe<MODE, BM, BN, WM, WN, ASYNC>, smem);
    const dim3 grid((unsigned)((p.N + BN - 1) / BN), (unsigned)((p.M + BM - 1) / BM));
    JKC_LAUNCH((gemm_pipe<MODE, BM, BN, WM, WN, ASYNC>), grid, dim3(WM * WN * 32), smem,
               jkc_stream(), p);
    jkc_check_launch(what);
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
