/*
 * compat.cuh — the dialect every file in kernels/cuda/ is written in.
 *
 * The same source is compiled two ways:
 *   nvcc (__CUDACC__)      the real kernels, for sm_80 / sm_89 / sm_90;
 *   the host C++ compiler  against kernels/cuda/emu/emu.h, a SIMT emulator that runs
 *                          each block's threads as coroutines on the CPU, so that CI
 *                          (which has no GPU) checks the kernels' indexing, masking,
 *                          tiling and mma fragment layouts against the C reference.
 *
 * Kernel code may use, besides plain C++17 and templates:
 *   threadIdx, blockIdx, blockDim, gridDim (.x .y .z), __syncthreads(), __syncwarp(),
 *   __shfl_xor_sync(0xffffffffu, v, laneMask) and __shfl_sync(0xffffffffu, v, srcLane)
 *   for float / int / unsigned (every lane of the warp must take part),
 *   __global__ __device__ __host__ __forceinline__ __shared__ (fixed-size arrays) and
 *   __restrict__, JKC_DYN_SMEM(T, name) for dynamic shared memory, JKC_UNROLL before a
 *   loop, JKC_LAUNCH_BOUNDS(n) on a kernel;
 *   expf exp2f logf erff tanhf sqrtf rsqrtf fmaxf fminf fabsf fmaf, INFINITY;
 *   the helpers below (16-bit conversions, packing, mma).
 * Nothing else: no atomics, no cp.async / ldmatrix, no cuda_fp16 types in signatures
 * (16-bit values travel as uint16_t bit patterns, pairs as uint32_t).
 * Host code launches with JKC_LAUNCH(kernel, grid, block, smem_bytes, stream, args...)
 * and may use this subset of the runtime: cudaMalloc cudaFree cudaMemcpy
 * cudaMemcpyAsync cudaMemsetAsync cudaStreamCreateWithFlags cudaStreamDestroy
 * cudaStreamSynchronize cudaDeviceSynchronize cudaGetLastError cudaPeekAtLastError
 * cudaGetErrorString cudaGetDeviceCount cudaSetDevice cudaGetDevice
 * cudaGetDeviceProperties (name, major, minor, totalGlobalMem, multiProcessorCount,
 * sharedMemPerBlockOptin) cudaFuncSetAttribute(kernel,
 * cudaFuncAttributeMaxDynamicSharedMemorySize, n), cudaEventCreate cudaEventRecord
 * cudaEventSynchronize cudaEventElapsedTime cudaEventDestroy.
 */
#ifndef JEPA_KERNELS_CUDA_COMPAT_CUH
#define JEPA_KERNELS_CUDA_COMPAT_CUH

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define JKC_DYN_SMEM(T, name)                                                   \
    extern __shared__ __align__(16) unsigned char jkc_dyn_smem_[];             \
    T *name = reinterpret_cast<T *>(jkc_dyn_smem_)
#define JKC_LAUNCH(kern, grid, block, smem, stream, ...)                        \
    kern<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__)
#define JKC_LAUNCH_BOUNDS(n) __launch_bounds__(n)
#define JKC_UNROLL _Pragma("unroll")

/* f32 <-> f16 / bf16 bit patterns, round to nearest even. */
__device__ __forceinline__ uint16_t jkc_f32_to_f16(float x) {
    return __half_as_ushort(__float2half_rn(x));
}
__device__ __forceinline__ float jkc_f16_to_f32(uint16_t h) {
    return __half2float(__ushort_as_half(h));
}
__device__ __forceinline__ uint16_t jkc_f32_to_bf16(float x) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}
__device__ __forceinline__ float jkc_bf16_to_f32(uint16_t h) {
    return __uint_as_float((uint32_t)h << 16);
}

/* D[16x8] += A[16x16] . B[16x8], f32 accumulators, PTX ISA "mma.m16n8k16" fragments
 * (g = lane / 4, t = lane % 4; each 32-bit register holds two 16-bit values, the lower
 * column / row in the low half):
 *   a[0] = A[g][2t..2t+1]     a[1] = A[g+8][2t..2t+1]
 *   a[2] = A[g][2t+8..2t+9]   a[3] = A[g+8][2t+8..2t+9]
 *   b[0] = B[2t..2t+1][g]     b[1] = B[2t+8..2t+9][g]
 *   d[0..1] = D[g][2t..2t+1]  d[2..3] = D[g+8][2t..2t+1]                              */
__device__ __forceinline__ void jkc_mma_f16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void jkc_mma_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#else /* the SIMT emulator: same names, run on the CPU */

#include "kernels/cuda/emu/emu.h"

#endif

/* Two 16-bit values in one register: lo in bits 0..15 (the lower index), hi above. */
__device__ __forceinline__ uint32_t jkc_pack2(uint16_t lo, uint16_t hi) {
    return (uint32_t)lo | ((uint32_t)hi << 16);
}

#endif
