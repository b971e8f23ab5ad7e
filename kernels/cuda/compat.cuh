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
 *   __global__ __device__ __host__ __forceinline__ __shared__ (fixed-size arrays, with
 *   __align__(16) where cp.async or ldmatrix use them) and __restrict__, JKC_DYN_SMEM(T, name) for dynamic shared memory, JKC_UNROLL before a
 *   loop, JKC_LAUNCH_BOUNDS(n) on a kernel;
 *   expf exp2f logf erff tanhf sqrtf rsqrtf fmaxf fminf fabsf fmaf, INFINITY;
 *   the helpers below (16-bit conversions, packing, mma), and the sm_80 data movement:
 *   jkc_cp_async16 / 8 / 4(smem, gmem, src_bytes) (cp.async: n bytes, the first src_bytes
 *   read from gmem and the rest zero-filled; both addresses n-byte aligned),
 *   jkc_cp_async_commit(), jkc_cp_async_wait<N>() (cp.async.wait_group N: every group
 *   but the N most recently committed has landed, for the calling thread only: a
 *   __syncthreads after it makes the data visible to the block), jkc_cp_async_wait_all();
 *   jkc_ldmatrix_x1 / x2 / x4 and their _trans forms (ldmatrix.m8n8.b16, a warp
 *   collective: lane l gives the 16-byte aligned address of row l%8 of matrix l/8 in
 *   shared memory, and receives the mma fragment layout below). A thread must not return
 *   with copies pending. The emulator checks all of this (kernels/cuda/emu/emu.h).
 * Files built for sm_90a only (gemm_wgmma.cu) may also use kernels/cuda/wgmma.cuh:
 * warpgroup MMA with shared-memory descriptors (wgmma), which the emulator models too.
 * Nothing else: no atomics, no cuda_fp16 types in signatures (16-bit values travel as
 * uint16_t bit patterns, pairs as uint32_t).
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

/* Asynchronous global -> shared copies (sm_80): n bytes land at smem, src_bytes (0..n)
 * of them read from gmem and the rest zero-filled (PTX's src-size operand). 16 bytes go
 * through L2 only (.cg), 8 and 4 through L1 too (.ca: .cg takes 16 bytes only). */
__device__ __forceinline__ uint32_t jkc_smem_addr(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void jkc_cp_async16(void *smem, const void *gmem, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(jkc_smem_addr(smem)), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void jkc_cp_async8(void *smem, const void *gmem, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n"
                 :: "r"(jkc_smem_addr(smem)), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void jkc_cp_async4(void *smem, const void *gmem, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(jkc_smem_addr(smem)), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void jkc_cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void jkc_cp_async_wait() {
    static_assert(N >= 0, "cp.async.wait_group takes a non-negative count");
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}
__device__ __forceinline__ void jkc_cp_async_wait_all() {
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}

/* ldmatrix: lane l posts row l%8 of matrix l/8; matrix i arrives in r[i], lane l holding
 * M_i[l/4][2(l%4)..+1] (plain) or M_i[2(l%4)..+1][l/4] (.trans), low half first. */
#define JKC_LDMATRIX_(name, ptx, ...)                                                  \
    __device__ __forceinline__ void name(uint32_t *r, const void *row) {                    \
        asm volatile(ptx : __VA_ARGS__ : "r"(jkc_smem_addr(row)) : "memory");               \
    }
#define JKC_LDSM_X1_ "=r"(r[0])
#define JKC_LDSM_X2_ "=r"(r[0]), "=r"(r[1])
#define JKC_LDSM_X4_ "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
JKC_LDMATRIX_(jkc_ldmatrix_x1, "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n",
              JKC_LDSM_X1_)
JKC_LDMATRIX_(jkc_ldmatrix_x2, "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n",
              JKC_LDSM_X2_)
JKC_LDMATRIX_(jkc_ldmatrix_x4,
              "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n", JKC_LDSM_X4_)
JKC_LDMATRIX_(jkc_ldmatrix_x1_trans,
              "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n", JKC_LDSM_X1_)
JKC_LDMATRIX_(jkc_ldmatrix_x2_trans,
              "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n", JKC_LDSM_X2_)
JKC_LDMATRIX_(jkc_ldmatrix_x4_trans,
              "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n",
              JKC_LDSM_X4_)
#undef JKC_LDMATRIX_
#undef JKC_LDSM_X1_
#undef JKC_LDSM_X2_
#undef JKC_LDSM_X4_

#else /* the SIMT emulator: same names, run on the CPU */

#include "kernels/cuda/emu/emu.h"

#endif

/* Two 16-bit values in one register: lo in bits 0..15 (the lower index), hi above. */
__device__ __forceinline__ uint32_t jkc_pack2(uint16_t lo, uint16_t hi) {
    return (uint32_t)lo | ((uint32_t)hi << 16);
}

#endif
