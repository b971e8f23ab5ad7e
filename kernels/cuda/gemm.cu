/*
 * gemm.cu — the GPU matmul (kernels in gemm.cuh) for f16, bf16 and f32 weights, the
 * device facts it reads and the tests' tile hook. The block formats: gemm_blocks.cu.
 */
#include <atomic>

#include "kernels/cuda/gemm.cuh"

namespace {
std::atomic<int> forced_tile{0};
} // namespace

/* Streaming multiprocessors of the current device (cached per device ordinal). */
int jkc_gemm_sm_count(void) {
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

int jkc_gemm_forced_tile(void) { return forced_tile.load(std::memory_order_relaxed); }

extern "C" {

void jkc_gemm_f16(const struct jk_gemm_args *a) { gemm<JK_F16>(a, "gemm f16"); }
void jkc_gemm_bf16(const struct jk_gemm_args *a) { gemm<JK_BF16>(a, "gemm bf16"); }
void jkc_gemm_f32(const struct jk_gemm_args *a) { gemm<JK_F32>(a, "gemm f32"); }

/* Test hook: 0 = choose the tile by the shape (the default), 64 or 128 = always that
 * tile in the tensor-core kernel, so tests/cuda/test_cuda_gemm.c reaches both on small
 * problems. Not part of any public header. */
void jkc_gemm_force_tile(int tile) { forced_tile.store(tile, std::memory_order_relaxed); }

}
