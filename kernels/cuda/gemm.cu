/*
 * gemm.cu — Y = epi(X . W^T + b) on the GPU, for f16, bf16 and f32 weights and ggml's
 * block formats (q8_0, q4_0 .. q6_K).
 *
 *   x: f32 [M, K] (row stride ldx floats)   w: N rows of K weights (row stride ldw bytes)
 *   y: f32 [M, N] (row stride ldy floats)   bias: f32 [N] or NULL
 *
 * Two kernels:
 *
 *  - gemm_mma (M >= GEMV_MAX_M + 1): tensor cores, mma.sync m16n8k16 with f32
 *    accumulators. A block computes a BM x BN tile of Y, walking K in steps of BK = 32.
 *    Each step, the X tile (f32) is converted to the weight type as it is written to
 *    shared memory (round to nearest even), the W tile is copied as it is (16-bit) or
 *    split (f32, below); edges in M, N and K are zero-filled in shared memory, so the
 *    mma loop has no conditions. Shared memory is double buffered and the next K tile is
 *    loaded from global memory into registers while the current one is multiplied:
 *    one __syncthreads per K step. Rows of a tile in shared memory are BK/2 + 4 words
 *    long, which makes the fragment loads (8 rows x 4 consecutive words per warp)
 *    conflict-free. Two tile shapes: 128 x 128 with 8 warps of 64 x 32 when the large
 *    tiles alone fill the GPU, else 64 x 64 with 4 warps of 32 x 32.
 *    f32 weights go through "bf16x3": x = xh + xl, w = wh + wl (xh = bf16(x),
 *    xl = bf16(x - xh), the same for w) and acc += xl wh + xh wl + xh wh, three mma per
 *    step, which keeps 16 significant bits of each operand (error ~2^-16 |x w| per
 *    product at worst, summed with random signs) against bf16's 8.
 *    Bias, GELU and the residual add are applied to the accumulators before the store.
 *
 *    Unlike the CPU kernels (kernels.h: activations are never rounded to 16 bits), this
 *    path rounds X to the weight type: relative error up to 2^-11 (f16) or 2^-8 (bf16)
 *    per product, which is what tensor cores cost (tests/cuda/test_cuda_gemm.c measures
 *    it; bf16x3 keeps f32 weights within ~1e-5 of the reference).
 *
 *  - gemv (M <= GEMV_MAX_M = 8: the attentive-pool query, LeWM's projector): one warp
 *    per output column n and 4 rows of X (grid.y covers M 4 rows at a time); the lanes
 *    stride over k reading the W row (16-byte loads when allowed), convert to f32 and
 *    accumulate in f32, then reduce across the warp. Activations are not rounded here.
 *
 * Block formats: decoded 4 weights at a time (dequant.cuh) to the reference's exact f32
 * values where f32 weights are loaded, in both kernels, and from there handled as f32
 * weights are (bf16x3 in the tensor-core kernel): a block matrix gives the bits of its
 * decoded f32 matrix.
 *
 * Vector loads (16 bytes) are used only when the call allows them everywhere: x and w
 * 16-byte aligned, ldx a multiple of 4 floats, ldw a multiple of 16 bytes. The host
 * checks once per call and picks the kernel variant; the other variant loads element
 * by element. Element-wise alignment is assumed (f32 weights 4-byte aligned, f16/bf16
 * 2-byte aligned).
 */
#include <atomic>

#include "kernels/cuda/dequant.cuh"
#include "kernels/cuda/gemm_common.cuh"
#include "kernels/cuda/internal.cuh"
#include "kernels/cuda/math.cuh"

namespace {

/* ---- parameters and small types ---- */

struct GemmParams {
    float *y;
    size_t ldy;
    const float *x;
    size_t ldx;
    const void *w;
    size_t ldw;
    const float *bias;
    int M, N, K;
    int epi;
    bool xvec;   /* block-format weights: X may be read 16 bytes at a time (see gemm()) */
};

/* What the tensor-core kernel feeds the mma with. */
enum MmaMode {
    MODE_F16 = 0,     /* f16 weights, X rounded to f16          */
    MODE_BF16 = 1,    /* bf16 weights, X rounded to bf16        */
    MODE_BF16X3 = 2,  /* f32 weights, X and W split in bf16 x 2 */
};

/* Register images of 16-byte and 8-byte vectors (loads and stores of these compile to
 * ld/st .v4 / .v2 when the address is aligned, which the callers guarantee). */
struct alignas(16) F32x4 { float v[4]; };
struct alignas(16) U32x4 { uint32_t v[4]; };
struct alignas(8) U32x2 { uint32_t v[2]; };

constexpr int BK = 32;              /* K step of the mma kernel                           */
constexpr int SROW = BK / 2 + 4;    /* shared-memory row stride in 32-bit words (2 halves) */
constexpr int GEMV_MAX_M = 8;       /* M <= this: the f32 GEMV kernel                     */
constexpr int GEMV_WARPS = 8;       /* warps (output columns) per GEMV block              */

/* ---- epilogue ---- */

/* y[0] = epi(acc + b), acc already holding the dot product. */
__device__ __forceinline__ void store_out(float *y, float acc, float b, int epi) {
    float t = acc + b;
    if (epi == JK_EPI_GELU) t = gelu_erf(t);
    else if (epi == JK_EPI_ADD) t = *y + t;
    *y = t;
}

/* ---- conversions ---- */

template <int MODE>
__device__ __forceinline__ uint16_t to_half(float x) {
    if constexpr (MODE == MODE_F16) return jkc_f32_to_f16(x);
    else return jkc_f32_to_bf16(x);
}

template <int DT>
__device__ __forceinline__ float half_to_f32(uint16_t h) {
    if constexpr (DT == JK_F16) return jkc_f16_to_f32(h);
    else return jkc_bf16_to_f32(h);
}

/* ---- global -> registers ---- */

/* Four floats of row `row` starting at column k of an f32 matrix (X, or f32 weights
 * with `ld` in floats), zero outside [0, rows) x [0, cols). VEC: the 4 floats are
 * 16-byte aligned when they are all inside. */
template <bool VEC>
__device__ __forceinline__ void load_f32x4(float v[4], const float *__restrict__ base, size_t ld,
                                           int row, int rows, int k, int cols) {
    if (row < rows && k + 4 <= cols) {
        const float *src = base + (size_t)row * ld + k;
        if (VEC) {
            const F32x4 q = *reinterpret_cast<const F32x4 *>(src);
            v[0] = q.v[0], v[1] = q.v[1], v[2] = q.v[2], v[3] = q.v[3];
        } else {
            v[0] = src[0], v[1] = src[1], v[2] = src[2], v[3] = src[3];
        }
    } else {
        JKC_UNROLL
        for (int e = 0; e < 4; e++) v[e] = 0.0f;
        if (row < rows) {
            const float *src = base + (size_t)row * ld;
            JKC_UNROLL
            for (int e = 0; e < 4; e++)
                if (k + e < cols) v[e] = src[k + e];
        }
    }
}

/* Eight 16-bit weights of row n starting at column k, as four packed pairs; zero
 * outside [0, N) x [0, K). VEC: 16-byte aligned when all inside. */
template <bool VEC>
__device__ __forceinline__ void load_h16x8(uint32_t v[4], const unsigned char *__restrict__ w,
                                           size_t ldw, int n, int N, int k, int K) {
    if (n < N && k + 8 <= K) {
        const uint16_t *src = reinterpret_cast<const uint16_t *>(w + (size_t)n * ldw) + k;
        if (VEC) {
            const U32x4 q = *reinterpret_cast<const U32x4 *>(src);
            v[0] = q.v[0], v[1] = q.v[1], v[2] = q.v[2], v[3] = q.v[3];
        } else {
            JKC_UNROLL
            for (int e = 0; e < 4; e++) v[e] = jkc_pack2(src[2 * e], src[2 * e + 1]);
        }
    } else {
        uint16_t h[8];
        JKC_UNROLL
        for (int e = 0; e < 8; e++) h[e] = 0;
        if (n < N) {
            const uint16_t *src = reinterpret_cast<const uint16_t *>(w + (size_t)n * ldw);
            JKC_UNROLL
            for (int e = 0; e < 8; e++)
                if (k + e < K) h[e] = src[k + e];
        }
        JKC_UNROLL
        for (int e = 0; e < 4; e++) v[e] = jkc_pack2(h[2 * e], h[2 * e + 1]);
    }
}

/* Four weights of row n from column k of a block-format matrix (dequant.cuh), decoded
 * to f32; zero outside [0, N) x [0, K). k is a multiple of 4 and K of the block. */
template <int DT>
__device__ __forceinline__ void load_block4(float v[4], const unsigned char *__restrict__ w,
                                            size_t ldw, int n, int N, int k, int K) {
    if (n < N && k < K) {
        jkc_decode4<DT>(w + (size_t)n * ldw, k, v);
    } else {
        JKC_UNROLL
        for (int e = 0; e < 4; e++) v[e] = 0.0f;
    }
}

/* ---- the tensor-core kernel ---- */

/* The shape of one configuration: a BM x BN tile of Y per block of WM x WN warps, each
 * warp a TM x TN tile of MI x NJ mma tiles (16 x 8). */
template <int MODE_, int BM_, int BN_, int WM_, int WN_>
struct MmaCfg {
    static constexpr int MODE = MODE_;
    static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_;
    static constexpr int NTHR = WM * WN * 32;
    static constexpr int TM = BM / WM, TN = BN / WN;
    static constexpr int MI = TM / 16, NJ = TN / 8;
    static constexpr bool SPLIT = MODE == MODE_BF16X3;
    static constexpr int XCH = BM * BK / 4 / NTHR;        /* 4-float X chunks per thread */
    static constexpr int WPER = SPLIT ? 4 : 8;            /* weights per W chunk          */
    static constexpr int WCH = BN * BK / WPER / NTHR;     /* W chunks per thread          */
    /* Words of one shared-memory buffer: the X tile and the W tile (hi parts), then for
     * bf16x3 the lo parts at LO words further. Two buffers. */
    static constexpr int LO = (BM + BN) * SROW;
    static constexpr int BUF = LO * (SPLIT ? 2 : 1);
    static constexpr int SMEM_BYTES = 2 * BUF * 4;
    static_assert(TM % 16 == 0 && TN % 8 == 0, "warp tile must be whole mma tiles");
    static_assert(XCH * 4 * NTHR == BM * BK && WCH * WPER * NTHR == BN * BK,
                  "tile loads must divide evenly among the threads");
};

/* The next K tile, global -> registers: X as 4-float chunks, W as 8 16-bit weights
 * (packed pairs) or 4 floats (bf16x3). Chunk c of a thread is tid + i * NTHR, row-major
 * over the tile, so 8 (X) or 4 (W) consecutive threads read one 128-byte row segment. */
template <class C, int DT, bool VEC>
struct Prefetch {
    float x[C::XCH][4];
    uint32_t wh[C::SPLIT ? 1 : C::WCH][4];
    float wf[C::SPLIT ? C::WCH : 1][4];

    __device__ __forceinline__ void load(const GemmParams &p, int tid, int m0, int n0, int k0) {
        JKC_UNROLL
        for (int i = 0; i < C::XCH; i++) {
            const int c = tid + i * C::NTHR;
            const int row = m0 + c / (BK / 4), k = k0 + (c % (BK / 4)) * 4;
            if (DT >= JK_Q8_0 ? p.xvec : VEC) load_f32x4<true>(x[i], p.x, p.ldx, row, p.M, k, p.K);
            else load_f32x4<false>(x[i], p.x, p.ldx, row, p.M, k, p.K);
        }
        const unsigned char *wb = static_cast<const unsigned char *>(p.w);
        JKC_UNROLL
        for (int i = 0; i < C::WCH; i++) {
            const int c = tid + i * C::NTHR;
            const int n = n0 + c / (BK / C::WPER), k = k0 + (c % (BK / C::WPER)) * C::WPER;
            if constexpr (C::SPLIT && DT != JK_F32)
                load_block4<DT>(wf[i], wb, p.ldw, n, p.N, k, p.K);
            else if constexpr (C::SPLIT)
                load_f32x4<VEC>(wf[i], reinterpret_cast<const float *>(wb), p.ldw / 4, n, p.N, k,
                                p.K);
            else
                load_h16x8<VEC>(wh[i], wb, p.ldw, n, p.N, k, p.K);
        }
    }

    /* Registers -> shared buffer `sa` (X tile at sa, W tile at sa + BM * SROW), converted
     * to the mma type. */
    __device__ __forceinline__ void store(uint32_t *sa, int tid) const {
        uint32_t *sb = sa + C::BM * SROW;
        JKC_UNROLL
        for (int i = 0; i < C::XCH; i++) {
            const int c = tid + i * C::NTHR;
            const int at = (c / (BK / 4)) * SROW + (c % (BK / 4)) * 2;
            U32x2 hi;
            if constexpr (C::SPLIT) {
                uint16_t h[4], l[4];
                JKC_UNROLL
                for (int e = 0; e < 4; e++) jkc_split_bf16(x[i][e], h[e], l[e]);
                U32x2 lo;
                hi.v[0] = jkc_pack2(h[0], h[1]), hi.v[1] = jkc_pack2(h[2], h[3]);
                lo.v[0] = jkc_pack2(l[0], l[1]), lo.v[1] = jkc_pack2(l[2], l[3]);
                *reinterpret_cast<U32x2 *>(sa + C::LO + at) = lo;
            } else {
                hi.v[0] = jkc_pack2(to_half<C::MODE>(x[i][0]), to_half<C::MODE>(x[i][1]));
                hi.v[1] = jkc_pack2(to_half<C::MODE>(x[i][2]), to_half<C::MODE>(x[i][3]));
            }
            *reinterpret_cast<U32x2 *>(sa + at) = hi;
        }
        JKC_UNROLL
        for (int i = 0; i < C::WCH; i++) {
            const int c = tid + i * C::NTHR;
            const int at = (c / (BK / C::WPER)) * SROW + (c % (BK / C::WPER)) * (C::WPER / 2);
            if constexpr (C::SPLIT) {
                uint16_t h[4], l[4];
                JKC_UNROLL
                for (int e = 0; e < 4; e++) jkc_split_bf16(wf[i][e], h[e], l[e]);
                U32x2 hi, lo;
                hi.v[0] = jkc_pack2(h[0], h[1]), hi.v[1] = jkc_pack2(h[2], h[3]);
                lo.v[0] = jkc_pack2(l[0], l[1]), lo.v[1] = jkc_pack2(l[2], l[3]);
                *reinterpret_cast<U32x2 *>(sb + at) = hi;
                *reinterpret_cast<U32x2 *>(sb + C::LO + at) = lo;
            } else {
                U32x4 q;
                JKC_UNROLL
                for (int e = 0; e < 4; e++) q.v[e] = wh[i][e];
                *reinterpret_cast<U32x4 *>(sb + at) = q;
            }
        }
    }
};

template <int MODE>
__device__ __forceinline__ void mma16816(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    if constexpr (MODE == MODE_F16) jkc_mma_f16(d, a, b);
    else jkc_mma_bf16(d, a, b);
}

/* acc += the BK-deep product of the tiles in shared buffer `sa` for this warp.
 * Fragments (compat.cuh): a[0] = A[g][2t..], a[1] = A[g+8][2t..], a[2] = A[g][2t+8..],
 * a[3] = A[g+8][2t+8..]; b[0] = B[2t..][g] = W[g][2t..], b[1] = W[g][2t+8..]. In words
 * of a shared-memory row: column 2t is word t, column 2t+8 word t+4. */
template <int MODE, class C>
__device__ __forceinline__ void mma_tile(float (&acc)[C::MI][C::NJ][4], const uint32_t *sa,
                                         int wm, int wn, int g, int t) {
    const uint32_t *sb = sa + C::BM * SROW;
    JKC_UNROLL
    for (int ks = 0; ks < BK / 16; ks++) {
        const int kw = ks * 8 + t;
        uint32_t bh[C::NJ][2], bl[C::SPLIT ? C::NJ : 1][2];
        JKC_UNROLL
        for (int j = 0; j < C::NJ; j++) {
            const uint32_t *q = sb + (wn + j * 8 + g) * SROW + kw;
            bh[j][0] = q[0], bh[j][1] = q[4];
            if constexpr (C::SPLIT) bl[j][0] = q[C::LO], bl[j][1] = q[C::LO + 4];
        }
        JKC_UNROLL
        for (int i = 0; i < C::MI; i++) {
            const uint32_t *q = sa + (wm + i * 16 + g) * SROW + kw;
            const uint32_t ah[4] = {q[0], q[8 * SROW], q[4], q[8 * SROW + 4]};
            if constexpr (C::SPLIT) {
                q += C::LO;
                const uint32_t al[4] = {q[0], q[8 * SROW], q[4], q[8 * SROW + 4]};
                /* the two small terms first, then the large one */
                JKC_UNROLL
                for (int j = 0; j < C::NJ; j++) {
                    mma16816<MODE>(acc[i][j], al, bh[j]);
                    mma16816<MODE>(acc[i][j], ah, bl[j]);
                    mma16816<MODE>(acc[i][j], ah, bh[j]);
                }
            } else {
                JKC_UNROLL
                for (int j = 0; j < C::NJ; j++) mma16816<MODE>(acc[i][j], ah, bh[j]);
            }
        }
    }
}

/* One BM x BN tile of Y per block. Grid: x over N tiles, y over M tiles (consecutive
 * blocks share the f32 X tile, the larger operand, in L2). */
template <int MODE, int DT, int BM, int BN, int WM, int WN, bool VEC>
__global__ void JKC_LAUNCH_BOUNDS(WM *WN * 32) gemm_mma(GemmParams p) {
    using C = MmaCfg<MODE, BM, BN, WM, WN>;
    JKC_DYN_SMEM(uint32_t, smem);

    const int tid = (int)threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm = (warp / WN) * C::TM, wn = (warp % WN) * C::TN;
    const int m0 = (int)blockIdx.y * BM, n0 = (int)blockIdx.x * BN;

    float acc[C::MI][C::NJ][4];
    jkc_acc_zero(acc);

    Prefetch<C, DT, VEC> pf;
    const int nk = (p.K + BK - 1) / BK;
    pf.load(p, tid, m0, n0, 0);
    pf.store(smem, tid);
    __syncthreads();
    for (int kt = 0; kt < nk; kt++) {
        /* Buffer kt & 1 is read below while (kt + 1) & 1 is written: the barrier at the
         * end of step kt - 1 ordered every read of that buffer before these writes. */
        const bool more = kt + 1 < nk;
        if (more) pf.load(p, tid, m0, n0, (kt + 1) * BK);
        mma_tile<MODE, C>(acc, smem + (kt & 1) * C::BUF, wm, wn, g, t);
        if (more) pf.store(smem + ((kt + 1) & 1) * C::BUF, tid);
        __syncthreads();
    }

    jkc_acc_store(acc, m0 + wm, n0 + wn, g, t, p.M, p.N, p.bias,
                  [&](int row, int col, float v, float b) {
                      store_out(p.y + (size_t)row * p.ldy + col, v, b, p.epi);
                  });
}

/* ---- the GEMV kernel (tiny M) ---- */

/* GEMV_WARPS warps per block, warp w computes column n = blockIdx.x * GEMV_WARPS + w for
 * rows blockIdx.y * MR ... + MR - 1 (rows past M read row M - 1 and are not stored).
 * DT: the weight type. 16- and 32-bit weights are read 16 bytes at a time when VEC;
 * block formats are decoded 4 weights at a time (K is a multiple of the block, so there
 * is no tail), in the same lane order as f32 weights with VEC (whether X is read 16
 * bytes at a time is then p.xvec): a block matrix gives the bits its decoded f32 matrix
 * gives. */
template <int DT, int MR, bool VEC>
__global__ void JKC_LAUNCH_BOUNDS(GEMV_WARPS * 32) gemv(GemmParams p) {
    constexpr bool BLOCK = DT >= JK_Q8_0;
    constexpr int ESZ = DT == JK_F32 ? 4 : 2;
    constexpr int VW = BLOCK ? 4 : 16 / ESZ;        /* weights per load or decode */
    const int lane = (int)threadIdx.x & 31;
    const int n = (int)blockIdx.x * GEMV_WARPS + ((int)threadIdx.x >> 5);
    if (n >= p.N) return;                           /* whole warps leave together */
    const int M = p.M, K = p.K, mb = (int)blockIdx.y * MR;

    const float *__restrict__ xrow[MR];
    JKC_UNROLL
    for (int r = 0; r < MR; r++) xrow[r] = p.x + (size_t)(mb + r < M ? mb + r : M - 1) * p.ldx;
    const unsigned char *__restrict__ wrow =
        static_cast<const unsigned char *>(p.w) + (size_t)n * p.ldw;

    float acc[MR];
    JKC_UNROLL
    for (int r = 0; r < MR; r++) acc[r] = 0.0f;

    int ktail = 0;
    if (VEC || BLOCK) {
        /* chunk c = k / VW, lane c % 32: every whole chunk, then the last K % VW */
        for (int k = lane * VW; k + VW <= K; k += 32 * VW) {
            float wv[VW];
            if constexpr (BLOCK) {
                jkc_decode4<DT>(wrow, k, wv);
            } else if constexpr (DT == JK_F32) {
                const F32x4 q = *reinterpret_cast<const F32x4 *>(wrow + (size_t)k * ESZ);
                JKC_UNROLL
                for (int e = 0; e < 4; e++) wv[e] = q.v[e];
            } else {
                const U32x4 q = *reinterpret_cast<const U32x4 *>(wrow + (size_t)k * ESZ);
                JKC_UNROLL
                for (int e = 0; e < VW; e++)
                    wv[e] = half_to_f32<DT>((uint16_t)(q.v[e / 2] >> (16 * (e & 1))));
            }
            JKC_UNROLL
            for (int r = 0; r < MR; r++) {
                JKC_UNROLL
                for (int c = 0; c < VW / 4; c++) {
                    float xv[4];
                    if (BLOCK ? p.xvec : VEC) {
                        const F32x4 q = *reinterpret_cast<const F32x4 *>(xrow[r] + k + 4 * c);
                        xv[0] = q.v[0], xv[1] = q.v[1], xv[2] = q.v[2], xv[3] = q.v[3];
                    } else {
                        JKC_UNROLL
                        for (int e = 0; e < 4; e++) xv[e] = xrow[r][k + 4 * c + e];
                    }
                    JKC_UNROLL
                    for (int e = 0; e < 4; e++) acc[r] = fmaf(xv[e], wv[4 * c + e], acc[r]);
                }
            }
        }
        ktail = K / VW * VW;
    }
    if constexpr (!BLOCK) {
        for (int k = ktail + lane; k < K; k += 32) {
            float wk;
            if constexpr (DT == JK_F32) wk = reinterpret_cast<const float *>(wrow)[k];
            else wk = half_to_f32<DT>(reinterpret_cast<const uint16_t *>(wrow)[k]);
            JKC_UNROLL
            for (int r = 0; r < MR; r++) acc[r] = fmaf(xrow[r][k], wk, acc[r]);
        }
    }

    JKC_UNROLL
    for (int r = 0; r < MR; r++)
        JKC_UNROLL
        for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);

    const float b = p.bias ? p.bias[n] : 0.0f;
    JKC_UNROLL
    for (int r = 0; r < MR; r++)
        if (lane == r && mb + r < M)
            store_out(p.y + (size_t)(mb + r) * p.ldy + n, acc[r], b, p.epi);
}

/* ---- host side ---- */

/* Tile choice forced by the tests (0: automatic, 64 or 128). */
std::atomic<int> forced_tile{0};

template <int MODE, int DT, int BM, int BN, int WM, int WN, bool VEC>
void launch_mma(const GemmParams &p, const char *what) {
    constexpr int smem = MmaCfg<MODE, BM, BN, WM, WN>::SMEM_BYTES;
    static std::atomic<uint64_t> optin{0};
    jkc_smem_optin(optin, gemm_mma<MODE, DT, BM, BN, WM, WN, VEC>, smem);
    const dim3 grid((unsigned)((p.N + BN - 1) / BN), (unsigned)((p.M + BM - 1) / BM));
    JKC_LAUNCH((gemm_mma<MODE, DT, BM, BN, WM, WN, VEC>), grid, dim3(WM * WN * 32), smem,
               jkc_stream(), p);
    jkc_check_launch(what);
}

template <int MODE, int DT, bool VEC>
void run_mma(const GemmParams &p, const char *what) {
    const long big = (long)((p.M + 127) / 128) * (long)((p.N + 127) / 128);
    const int f = forced_tile.load(std::memory_order_relaxed);
    if (f == 128 || (f == 0 && big >= jkc_sm_count()))
        launch_mma<MODE, DT, 128, 128, 2, 4, VEC>(p, what);
    else
        launch_mma<MODE, DT, 64, 64, 2, 2, VEC>(p, what);
}

template <int DT, bool VEC>
void run_gemv(const GemmParams &p, const char *what) {
    const dim3 block(GEMV_WARPS * 32);
    const unsigned gx = (unsigned)((p.N + GEMV_WARPS - 1) / GEMV_WARPS);
    cudaStream_t s = jkc_stream();
    if (p.M == 1) JKC_LAUNCH((gemv<DT, 1, VEC>), dim3(gx, 1), block, 0, s, p);
    else if (p.M == 2) JKC_LAUNCH((gemv<DT, 2, VEC>), dim3(gx, 1), block, 0, s, p);
    else JKC_LAUNCH((gemv<DT, 4, VEC>), dim3(gx, (unsigned)((p.M + 3) / 4)), block, 0, s, p);
    jkc_check_launch(what);
}

bool aligned16(const void *ptr) { return ((uintptr_t)ptr & 15u) == 0; }

/* DT: the weight type. 16- and 32-bit weights take the tensor-core mode of their type;
 * block formats are decoded to f32 while the tiles are loaded and multiplied as f32
 * weights are (bf16x3), or decoded in the GEMV. */
template <int DT>
void gemm_today(const struct jk_gemm_args *a, const char *what) {
    constexpr int MODE = DT == JK_F16 ? MODE_F16 : DT == JK_BF16 ? MODE_BF16 : MODE_BF16X3;
    /* 16-byte loads of X need x and every row 16-byte aligned, of W likewise. Block
     * weights are read byte by byte, and their kernels are built once (VEC = true,
     * which for them means nothing) with the X test made at run time (xvec), which
     * halves the instantiations nvcc compiles. */
    const bool xvec = aligned16(a->x) && a->ldx % 4 == 0;
    const bool vec = DT >= JK_Q8_0 || (xvec && aligned16(a->w) && a->ldw % 16 == 0);
    const GemmParams p = {a->y, a->ldy, a->x, a->ldx, a->w, a->ldw, a->bias,
                          a->M, a->N, a->K, (int)a->epi, xvec};
    if constexpr (DT >= JK_Q8_0) {
        if (a->M <= GEMV_MAX_M) run_gemv<DT, true>(p, what);
        else run_mma<MODE, DT, true>(p, what);
    } else if (a->M <= GEMV_MAX_M) {
        if (vec) run_gemv<DT, true>(p, what);
        else run_gemv<DT, false>(p, what);
    } else {
        if (vec) run_mma<MODE, DT, true>(p, what);
        else run_mma<MODE, DT, false>(p, what);
    }
}

/* With the pipelined kernels on (jkc_kernels_pipe), f16 / bf16 and block-format weights
 * with x16 above the GEMV's M go to gemm_pipe.cu (f16 / bf16 to gemm_wgmma.cu with the
 * wgmma switch on a 9.0 device and aligned operands), and so do f32 weights with their
 * split copy (wsplit); every other call runs the kernels above on x, and then writes y16
 * from y when asked. With them off, x16, y16 and wsplit are ignored. */
template <int DT>
void gemm(const struct jk_gemm_args *a, const char *what) {
    if (a->M <= 0 || a->N <= 0 || a->K <= 0) return;
    const bool pipe = jkc_kernels_pipe();
    if constexpr (DT == JK_F16 || DT == JK_BF16) {
        if (pipe && a->x16 && a->M > GEMV_MAX_M) {
            if (jkc_kernels_wgmma() && jkc_gemm_wgmma_ready(a)) jkc_gemm_wgmma(a, DT, what);
            else jkc_gemm_pipe(a, DT, forced_tile.load(std::memory_order_relaxed), what);
            return;
        }
    }
    if constexpr (DT == JK_F32) {
        if (pipe && a->wsplit && a->M > GEMV_MAX_M) {
            jkc_gemm_pipe_f32(a, forced_tile.load(std::memory_order_relaxed), what);
            return;
        }
    }
    if constexpr (DT >= JK_Q8_0) {   /* block formats: x16 is f16 (gemm_pipe.cu) */
        if (pipe && a->x16 && a->M > GEMV_MAX_M) {
            jkc_gemm_pipe_blk(a, DT, what);
            return;
        }
    }
    gemm_today<DT>(a, what);
    if (pipe && a->y16) jkc_gemm_y16(a, what);
}

} // namespace

/* Streaming multiprocessors of the current device (cached per device ordinal). */
int jkc_sm_count(void) {
    static std::atomic<int> cache[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) dev = 0;
    if (dev >= 64) dev = 63;
    int n = cache[dev].load(std::memory_order_relaxed);
    if (n > 0) return n;
    cudaDeviceProp prop;
    n = cudaGetDeviceProperties(&prop, dev) == cudaSuccess && prop.multiProcessorCount > 0
            ? prop.multiProcessorCount
            : 132;
    cache[dev].store(n, std::memory_order_relaxed);
    return n;
}

extern "C" {

/* jk_gemm_<name>_cuda of every weight type (runtime/weight_types.h) */
#define GEMM_CUDA(isa, name, NAME, ...) \
    void jk_gemm_##name##_##isa(const struct jk_gemm_args *a) { gemm<JK_##NAME>(a, "gemm " #name); }
JR_WEIGHT_TYPES(GEMM_CUDA, cuda)
#undef GEMM_CUDA

/* Test hook: 0 = choose the tile by the shape (the default), 64 or 128 = always that
 * tile in the tensor-core kernel, so tests/cuda/test_cuda_gemm.c reaches both on small
 * problems. Not part of any public header. */
void jkc_gemm_force_tile(int tile) { forced_tile.store(tile, std::memory_order_relaxed); }

}
