/*
 * wgmma.cuh — warpgroup MMA (sm_90a) in the dialect of compat.cuh: included only by the
 * files built for compute_90a (gemm_wgmma.cu). Under the SIMT emulator the same names
 * come from kernels/cuda/emu/emu.h, which documents the model (layouts, asynchrony, what
 * aborts).
 *
 *   jkc_wgmma_desc(smem, lbo, sbo, swizzle)  the 64-bit shared-memory matrix descriptor
 *       (PTX ISA "Matrix Descriptor Format": start >> 4 in bits 0-13, LBO >> 4 in 16-29,
 *       SBO >> 4 in 32-45, base offset 0 in 49-51, swizzle in 62-63: JKC_WGMMA_SWZ_*);
 *   jkc_wgmma_fence()        wgmma.fence: before the first mma after a wait, or after the
 *                            accumulators were touched by other instructions;
 *   jkc_fence_proxy_async()  fence.proxy.async.shared::cta: after this thread's cp.async
 *                            data landed (generic proxy), before wgmma reads it (async proxy);
 *   jkc_wgmma_ss_f16 / _bf16<N>(d, da, db)   wgmma.mma_async m64nNk16, f32 accumulators
 *                            d[N/2], A and B from descriptors, both K-major (no transpose);
 *   jkc_wgmma_commit(), jkc_wgmma_wait<N>()  commit_group / wait_group N;
 *   jkc_wgmma_fence_acc(d, n)  keeps the compiler from moving accesses of d[0..n) across
 *                            the asynchronous ops (an empty asm that "modifies" each).
 * All of them are warpgroup collectives (4 consecutive warps, every thread, in lockstep).
 * N = 128 only (the tile gemm_wgmma.cu uses).
 */
#ifndef JEPA_KERNELS_CUDA_WGMMA_CUH
#define JEPA_KERNELS_CUDA_WGMMA_CUH

#include "kernels/cuda/compat.cuh"

#if defined(__CUDACC__)

enum { JKC_WGMMA_SWZ_NONE = 0, JKC_WGMMA_SWZ_128B = 1, JKC_WGMMA_SWZ_64B = 2,
       JKC_WGMMA_SWZ_32B = 3 };

__device__ __forceinline__ uint64_t jkc_wgmma_desc(const void *smem, uint32_t lbo, uint32_t sbo,
                                                   int swizzle) {
    const uint32_t a = jkc_smem_addr(smem);
    return (uint64_t)((a & 0x3ffffu) >> 4) | (uint64_t)((lbo >> 4) & 0x3fffu) << 16 |
           (uint64_t)((sbo >> 4) & 0x3fffu) << 32 | (uint64_t)(swizzle & 3) << 62;
}
__device__ __forceinline__ void jkc_wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void jkc_wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void jkc_wgmma_wait() {
    static_assert(N >= 0 && N <= 7, "wgmma.wait_group takes 0..7");
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory");
}
__device__ __forceinline__ void jkc_fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void jkc_wgmma_fence_acc(float *d, int n) {
    JKC_UNROLL
    for (int i = 0; i < n; i++) asm volatile("" : "+f"(d[i]) :: "memory");
}

/* The 64 accumulator operands of m64n128k16, d[0..63]. */
#define JKC_WGMMA_N128_REGS_                                                                       \
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,"      \
        "%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,"         \
        "%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,"         \
        "%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n"
#define JKC_WGMMA_N128_OPS_                                                                        \
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),    \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),             \
        "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),          \
        "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),          \
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),          \
        "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),          \
        "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),          \
        "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),          \
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]),          \
        "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]),          \
        "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

/* D[64 x 128] += A[64 x 16] . B[128 x 16]^T, f32 accumulators (scale-d 1, no negation, no
 * transpose). */
template <int N>
__device__ __forceinline__ void jkc_wgmma_ss_f16(float *d, uint64_t da, uint64_t db) {
    static_assert(N == 128, "only m64n128k16 is written out");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " JKC_WGMMA_N128_REGS_ "}\n"
                 : JKC_WGMMA_N128_OPS_
                 : "l"(da), "l"(db), "r"(1) : "memory");
}
template <int N>
__device__ __forceinline__ void jkc_wgmma_ss_bf16(float *d, uint64_t da, uint64_t db) {
    static_assert(N == 128, "only m64n128k16 is written out");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " JKC_WGMMA_N128_REGS_
                 "}\n"
                 : JKC_WGMMA_N128_OPS_
                 : "l"(da), "l"(db), "r"(1) : "memory");
}
#undef JKC_WGMMA_N128_REGS_
#undef JKC_WGMMA_N128_OPS_

#endif /* __CUDACC__; the emulator's are in emu.h */

#endif
