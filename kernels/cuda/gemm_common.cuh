/*
 * gemm_common.cuh — what the two tensor-core matmuls (gemm.cu, gemm_pipe.cu) share: the
 * opt-in to more than 48 KiB of dynamic shared memory, the bf16 hi / lo split of f32
 * operands, and a warp's accumulator fragments (mma.m16n8k16, compat.cuh) zeroed and
 * walked in the epilogue.
 */
#ifndef JEPA_KERNELS_CUDA_GEMM_COMMON_CUH
#define JEPA_KERNELS_CUDA_GEMM_COMMON_CUH

#include <atomic>

#include "kernels/cuda/compat.cuh"
#include "kernels/cuda/internal.cuh"
#include "kernels/cuda/math.cuh"

/* Let `kernel` use `smem` bytes of dynamic shared memory where that is above the 48 KiB
 * default: once per device (the attribute lives in the device's context; `done` is the
 * kernel's own bit set, a static of its launcher); concurrent first calls both set it,
 * which is harmless. */
template <class F>
void jkc_smem_optin(std::atomic<uint64_t> &done, F *kernel, int smem) {
    if (smem <= 48 * 1024) return;
    int dev = 0;
    cudaGetDevice(&dev);
    const uint64_t bit = 1ull << (dev & 63);
    if (!(done.load(std::memory_order_relaxed) & bit)) {
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        done.fetch_or(bit, std::memory_order_relaxed);
    }
}

/* x = hi + lo in bf16 ("bf16x3"), both rounded to nearest even; x - hi is exact in f32. */
__device__ __forceinline__ void jkc_split_bf16(float x, uint16_t &hi, uint16_t &lo) {
    hi = jkc_f32_to_bf16(x);
    lo = jkc_f32_to_bf16(x - jkc_bf16_to_f32(hi));
}

/* Where a thread stands in a kernel computing a BM x BN tile of Y per block (grid x over N
 * tiles, y over M tiles) with warps of TM x TN tiles, WN warps across N: its lane (g, t as
 * the mma fragments name them), its warp tile's origin (wm, wn) in the block tile and the
 * block tile's (m0, n0) in Y. */
struct JkcTilePos {
    int tid, lane, g, t, wm, wn, m0, n0;
};
template <int BM, int BN, int WN, int TM, int TN>
__device__ __forceinline__ JkcTilePos jkc_tile_pos() {
    JkcTilePos q;
    q.tid = (int)threadIdx.x;
    q.lane = q.tid & 31;
    const int warp = q.tid >> 5;
    q.g = q.lane >> 2, q.t = q.lane & 3;
    q.wm = (warp / WN) * TM, q.wn = (warp % WN) * TN;
    q.m0 = (int)blockIdx.y * BM, q.n0 = (int)blockIdx.x * BN;
    return q;
}

template <int MI, int NJ>
__device__ __forceinline__ void jkc_acc_zero(float (&acc)[MI][NJ][4]) {
    JKC_UNROLL
    for (int i = 0; i < MI; i++)
        JKC_UNROLL
        for (int j = 0; j < NJ; j++)
            JKC_UNROLL
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
}

/* store(row, col, v, b) for every element of a warp's MI x NJ mma tiles that lies inside
 * [0, M) x [0, N): (row0, col0) is the warp tile's origin in Y, lane (g, t) holds
 * d[0..1] = D[g][2t..2t+1] and d[2..3] = D[g+8][2t..2t+1] of each tile, b = bias[col]
 * (0 without a bias). */
template <int MI, int NJ, class Store>
__device__ __forceinline__ void jkc_acc_store(const float (&acc)[MI][NJ][4], int row0, int col0,
                                              int g, int t, int M, int N,
                                              const float *__restrict__ bias, Store store) {
    JKC_UNROLL
    for (int j = 0; j < NJ; j++) {
        const int col = col0 + j * 8 + 2 * t;
        float b[2] = {0.0f, 0.0f};
        if (bias) {
            if (col < N) b[0] = bias[col];
            if (col + 1 < N) b[1] = bias[col + 1];
        }
        JKC_UNROLL
        for (int i = 0; i < MI; i++)
            JKC_UNROLL
            for (int h = 0; h < 2; h++) {
                const int row = row0 + i * 16 + g + 8 * h;
                if (row >= M) continue;
                JKC_UNROLL
                for (int e = 0; e < 2; e++)
                    if (col + e < N) store(row, col + e, acc[i][j][2 * h + e], b[e]);
            }
    }
}

/* The 16-bit-operand matmuls' store of one element (gemm_pipe.cu, gemm_wgmma.cu): *y =
 * epi(acc + b) as gemm.cu's store_out (GELU, or the residual add of the old *y), and, when
 * y16 is set, the stored value rounded to nearest even to f16 (y16_f16) or bf16 there. */
__device__ __forceinline__ void jkc_epi_store(float *y, uint16_t *y16, int y16_f16, int epi,
                                              float acc, float b) {
    float t = acc + b;
    if (epi == JK_EPI_GELU) t = gelu_erf(t);
    else if (epi == JK_EPI_ADD) t = *y + t;
    *y = t;
    if (y16) *y16 = y16_f16 ? jkc_f32_to_f16(t) : jkc_f32_to_bf16(t);
}

#endif
