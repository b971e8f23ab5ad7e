/*
 * emu.h — a SIMT emulator: the CUDA dialect of kernels/cuda/compat.cuh, run on the CPU.
 *
 * compat.cuh includes this header when __CUDACC__ is not defined, so every .cu file of
 * kernels/cuda/ compiles with the host C++ compiler and its kernels run here, in CI
 * without a GPU, against the C reference. Build recipe (one kernel file + the emulator):
 *
 *   g++ -std=c++17 -x c++ -I. -Iinclude -O2 -c kernels/cuda/gemm.cu -o gemm.o
 *   g++ -std=c++17 -I. -Iinclude -O2 -c kernels/cuda/emu/emu.cc -o emu.o
 *   g++ ... gemm.o emu.o -lpthread              (C callers: link with g++ / -lstdc++)
 *
 * ASan: add -fsanitize=address,undefined to every file (the emulator annotates its
 * fiber switches, so out-of-bounds accesses of kernels are reported, not false alarms).
 * Self-test: g++ -std=c++17 -I. -O2 tests/cuda/test_emu.cc kernels/cuda/emu/emu.cc -lpthread
 *
 * How it runs: a launch runs the grid's blocks one after another on the calling host
 * thread (launches from different host threads are serialized by a global mutex).
 * Each thread of a block is a coroutine with its own stack; a thread runs until it
 * reaches a barrier (__syncthreads for the block; __syncwarp, a shuffle, an mma or an
 * ldmatrix for its warp), parks, and the next ready thread runs. When every thread of
 * the block has returned, the next block starts. Consequences:
 *   - __shared__ is `static`: one copy, reused by block after block (never zeroed or
 *     poisoned between blocks); JKC_DYN_SMEM points at a per-launch buffer of exactly
 *     the requested size, filled with 0xff bytes (NaN / -1) before each block.
 *   - A barrier that not every thread of the block (or every lane of the warp) reaches,
 *     threads that returned early included, is a kernel bug: the emulator prints
 *     "emu: deadlock in kernel <name> block (x,y,z): ..." and aborts.
 *   - Warp ops need the whole warp: blockDim must be a multiple of 32 where they are
 *     used, and masks must be 0xffffffff. ldmatrix is a warp op like a shuffle.
 *   - cp.async copies land in shared memory only when a wait retires them (below); a
 *     thread that returns with copies pending is a kernel bug and aborts.
 *   - Memory is host memory; copies, memsets and launches are synchronous; cudaMemcpy /
 *     cudaMemsetAsync check that their device side lies inside one cudaMalloc block.
 *   - Device numerics: f16/bf16 conversions are bit-exact with CUDA's _rn conversions;
 *     mma sums exact f32 products in f32 in k order (tensor cores round differently,
 *     so compare with a tolerance); rsqrtf / expf / ... are the exact libm ones.
 *   - JEPA_EMU_NO_DEVICE=1 in the environment: no device (count 0, cudaErrorNoDevice).
 *   - JEPA_EMU_STACK_KB: per-thread stack size (default 256).
 */
#ifndef JEPA_KERNELS_CUDA_EMU_EMU_H
#define JEPA_KERNELS_CUDA_EMU_EMU_H

#if defined(__CUDACC__)
#error "emu.h is the non-nvcc path of kernels/cuda/compat.cuh"
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tuple>
#include <type_traits>
#include <utility>

/* ---- CUDA's built-in types and variables ------------------------------------------ */

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

/* Set by the scheduler each time a thread (coroutine) is resumed. */
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;

/* ---- the dialect's qualifiers ----------------------------------------------------- */

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
/* Blocks run one after another, so one static copy per declaration is block-private. */
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define JKC_LAUNCH_BOUNDS(n)
#define JKC_UNROLL

namespace jkc_emu {
extern unsigned char *dyn_smem; /* the running launch's dynamic shared memory */
}
#define JKC_DYN_SMEM(T, name) T *name = reinterpret_cast<T *>(::jkc_emu::dyn_smem)

/* ---- device math not in <math.h> ------------------------------------------------- */

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }

/* ---- barriers and warp ops (emu.cc) ----------------------------------------------- */

void __syncthreads();
void __syncwarp(unsigned mask = 0xffffffffu);
float __shfl_xor_sync(unsigned mask, float v, int lane_mask, int width = 32);
int __shfl_xor_sync(unsigned mask, int v, int lane_mask, int width = 32);
unsigned __shfl_xor_sync(unsigned mask, unsigned v, int lane_mask, int width = 32);
float __shfl_sync(unsigned mask, float v, int src_lane, int width = 32);
int __shfl_sync(unsigned mask, int v, int src_lane, int width = 32);
unsigned __shfl_sync(unsigned mask, unsigned v, int src_lane, int width = 32);

/* ---- 16-bit conversions: bit-exact with __float2half_rn / __half2float /
 *      __float2bfloat16_rn (round to nearest even; NaN becomes the canonical 0x7fff,
 *      as CUDA does; f16 NaN widens to 0x7fffffff) ----------------------------------- */

inline uint32_t jkc_emu_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
inline float jkc_emu_float(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

inline uint16_t jkc_f32_to_f16(float x) {
    uint32_t u = jkc_emu_bits(x);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return 0x7fffu;                      /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  /* >= 65520 (or inf): inf */
    if (a >= 0x38800000u) {                                   /* normal result */
        uint32_t r = a + 0xfffu + ((a >> 13) & 1u);           /* nearest even at bit 13 */
        return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
    }
    if (a <= 0x33000000u) return (uint16_t)sign;              /* <= 2^-25: ties to 0 */
    /* subnormal result: the 24-bit significand shifted right by 14..24 bits */
    uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126u - (a >> 23);
    uint32_t r = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    r += (rest > half || (rest == half && (r & 1u))) ? 1u : 0u;
    return (uint16_t)(sign | r);
}

inline float jkc_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = h & 0x7c00u, m = h & 0x3ffu;
    if (e == 0x7c00u) return jkc_emu_float(m ? 0x7fffffffu : (sign | 0x7f800000u));
    if (e == 0) { /* zero or subnormal: m * 2^-24, exact (and no f32 denormal on the way) */
        float f = (float)m * 0x1p-24f;
        return sign ? -f : f;
    }
    return jkc_emu_float(sign | (((uint32_t)(h & 0x7fffu) << 13) + 0x38000000u));
}

inline uint16_t jkc_f32_to_bf16(float x) {
    uint32_t u = jkc_emu_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;  /* NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline float jkc_bf16_to_f32(uint16_t h) { return jkc_emu_float((uint32_t)h << 16); }

/* D[16x8] += A[16x16] . B[16x8], the fragment layout documented in compat.cuh. A warp
 * collective: every lane of the warp must call it. */
void jkc_mma_f16(float d[4], const uint32_t a[4], const uint32_t b[2]);
void jkc_mma_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]);

/* ---- asynchronous copies: cp.async (sm_80), per thread ---------------------------
 * jkc_cp_async{16,8,4}(smem, gmem, src_bytes) copy n = 16 / 8 / 4 bytes: src_bytes (0..n)
 * from gmem, then zeros. Both addresses must be n-byte aligned. To catch pipeline bugs
 * rather than hide them, the source bytes are read when the copy is issued but written
 * into shared memory only when a wait retires the copy's group:
 *   jkc_cp_async_commit()     closes the thread's open group (its uncommitted copies);
 *   jkc_cp_async_wait<N>()    retires every committed group but the N most recently
 *                             committed, and the open group (PTX: wait_group N);
 *   jkc_cp_async_wait_all()   retires everything (PTX: wait_all).
 * Until then a thread reading the destination sees what was there before (the 0xff
 * poison of dynamic shared memory on a block's first use). __syncthreads completes
 * nothing. Misaligned addresses, src_bytes out of range, and copies still pending when
 * the thread returns abort with "emu: ..." naming the kernel. */
void jkc_cp_async16(void *smem, const void *gmem, int src_bytes);
void jkc_cp_async8(void *smem, const void *gmem, int src_bytes);
void jkc_cp_async4(void *smem, const void *gmem, int src_bytes);
void jkc_cp_async_commit();
void jkc_cp_async_wait_group(int n);
template <int N> inline void jkc_cp_async_wait() {
    static_assert(N >= 0, "cp.async.wait_group takes a non-negative count");
    jkc_cp_async_wait_group(N);
}
inline void jkc_cp_async_wait_all() { jkc_cp_async_wait_group(0); }

/* ---- ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 ------------------------
 * A warp collective (every lane calls it, same variant): lane l posts the address of
 * row l%8 of matrix l/8 (8 b16 values, 16-byte aligned; lanes past the matrices used
 * post addresses that are ignored). Once the whole warp has arrived, all matrices are
 * read at once and lane l receives, for matrix i, in r[i] (low half first):
 *   plain:  M_i[l/4][2(l%4)], M_i[l/4][2(l%4)+1]
 *   .trans: M_i[2(l%4)][l/4], M_i[2(l%4)+1][l/4]
 * which are mma.m16n8k16's A / B fragment pieces (compat.cuh). A misaligned row
 * address aborts with "emu: ..." naming the kernel and the lane. */
void jkc_ldmatrix_x1(uint32_t r[1], const void *row);
void jkc_ldmatrix_x2(uint32_t r[2], const void *row);
void jkc_ldmatrix_x4(uint32_t r[4], const void *row);
void jkc_ldmatrix_x1_trans(uint32_t r[1], const void *row);
void jkc_ldmatrix_x2_trans(uint32_t r[2], const void *row);
void jkc_ldmatrix_x4_trans(uint32_t r[4], const void *row);

/* ---- warpgroup MMA (sm_90a): wgmma.mma_async and its fences, kernels/cuda/wgmma.cuh --
 * A warpgroup is 4 consecutive warps (threads 128 g .. 128 g + 127 of the block); every op
 * below is a warpgroup collective: all 128 threads call it, the same op with the same
 * arguments (descriptors, shape), else "emu: ..." names the kernel and aborts, as does a
 * block whose size is not a multiple of 128 threads.
 *
 * Shared memory for descriptors is the launch's dynamic shared memory: its start is shared
 * address 0 (1024-byte aligned in host memory, so the swizzle's address bits are those of
 * the offset); jkc_wgmma_desc(p, lbo, sbo, swizzle) aborts on a pointer outside it or not
 * 16-byte aligned and encodes PTX's 64-bit matrix descriptor: bits 0-13 start >> 4, 16-29
 * LBO >> 4, 32-45 SBO >> 4, 49-51 base offset (0), 62-63 the swizzle (0 none, 1 128B, 2
 * 64B, 3 32B).
 *
 * jkc_wgmma_ss_f16 / _bf16<N>(d, da, db): wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,
 * bf16} with A (64 x 16) and B (N x 16, i.e. B^T: both K-major, no transpose) read through
 * the descriptors, D (64 x N, f32) += A . B^T. Thread t of the warpgroup (warp w = t / 32,
 * lane l) holds in d[i], i < N / 2:
 *   D[16 w + l / 4 + 8 ((i >> 1) & 1)][8 (i >> 2) + 2 (l % 4) + (i & 1)].
 * Element (r, k) of a K-major operand (r the M or N row, k < 16, chunk c = k / 8) is at
 *   no swizzle:        start + (r / 8) SBO + (r % 8) 16 + c LBO + 2 (k % 8)
 *   swizzle W = 32/64/128 bytes: a = start + (r / 8) SBO + (r % 8) W + 16 c + 2 (k % 8),
 *                      then bits 4.. of a XORed with bits 7.. of a (log2(W / 16) bits);
 * a swizzled start must have those bits 7.. zero (the base offset is not modelled), and
 * every byte read must lie inside dynamic shared memory.
 * Asynchrony, modelled to make misuse show: the issue snapshots the accumulators (or, when
 * an earlier pending op of the warpgroup targets the same d, chains on its result) and
 * fills d with NaN; shared memory is read, and the results written to every thread's d,
 * only when jkc_wgmma_wait<N>() retires the op's group: wait<N> retires every committed
 * group but the N newest (ops not yet committed stay pending). jkc_wgmma_commit() closes
 * the group of the ops issued since the last commit. A jkc_wgmma_fence() is required since
 * the last wait (or the block's start) before an mma; an mma while some thread of the block
 * has cp.async data retired since its last jkc_fence_proxy_async() (the generic-to-async
 * proxy fence that makes it visible to wgmma) aborts; so do ops pending when a thread
 * returns. Arithmetic: exact f32 products added in k order per element, as jkc_mma_f16. */
enum { JKC_WGMMA_SWZ_NONE = 0, JKC_WGMMA_SWZ_128B = 1, JKC_WGMMA_SWZ_64B = 2,
       JKC_WGMMA_SWZ_32B = 3 };
/* The shared address of p: its offset in the launch's dynamic shared memory (aborts
 * outside it). */
uint32_t jkc_smem_addr(const void *p);
uint64_t jkc_wgmma_desc(const void *smem, uint32_t lbo, uint32_t sbo, int swizzle);
void jkc_wgmma_fence();
void jkc_wgmma_commit();
void jkc_wgmma_wait_group(int n);
template <int N> inline void jkc_wgmma_wait() {
    static_assert(N >= 0 && N <= 7, "wgmma.wait_group takes 0..7");
    jkc_wgmma_wait_group(N);
}
void jkc_fence_proxy_async();
void jkc_wgmma_ss(float *d, int n, uint64_t da, uint64_t db, bool bf16);
template <int N> inline void jkc_wgmma_ss_f16(float *d, uint64_t da, uint64_t db) {
    static_assert(N >= 8 && N <= 256 && N % 8 == 0, "m64nNk16: N = 8, 16, ..., 256");
    jkc_wgmma_ss(d, N, da, db, false);
}
template <int N> inline void jkc_wgmma_ss_bf16(float *d, uint64_t da, uint64_t db) {
    static_assert(N >= 8 && N <= 256 && N % 8 == 0, "m64nNk16: N = 8, 16, ..., 256");
    jkc_wgmma_ss(d, N, da, db, true);
}
/* The compiler barrier that keeps accumulator accesses on their side of a wait (nvcc); a
 * no-op here. */
inline void jkc_wgmma_fence_acc(float *, int) {}

/* ---- the runtime subset (CUDA's names, types and error numbers) ------------------- */

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInvalidDeviceFunction = 98,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchFailure = 719,
    cudaErrorNotSupported = 801,
    cudaErrorUnknown = 999,
};
typedef enum cudaError_t cudaError;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};

#define cudaStreamDefault 0x00u
#define cudaStreamNonBlocking 0x01u

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int major;
    int minor;
    int multiProcessorCount;
    size_t sharedMemPerMultiprocessor;
    size_t sharedMemPerBlockOptin;
    int l2CacheSize;
};

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char *cudaGetErrorString(cudaError_t err);
const char *cudaGetErrorName(cudaError_t err);

cudaError_t cudaMalloc(void **ptr, size_t size);
template <class T> cudaError_t cudaMalloc(T **ptr, size_t size) {
    return cudaMalloc(reinterpret_cast<void **>(ptr), size);
}
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                            cudaStream_t stream = 0);
cudaError_t cudaMemsetAsync(void *dst, int value, size_t n, cudaStream_t stream = 0);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);

cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t event);

namespace jkc_emu {

/* A kernel's identity (its address) for per-kernel attributes. */
template <class F> inline uintptr_t func_key(F *f) { return reinterpret_cast<uintptr_t>(f); }
cudaError_t func_set_attribute(uintptr_t key, cudaFuncAttribute attr, int value);

struct launch_desc {
    const char *name;  /* the kernel's name as written in JKC_LAUNCH, for diagnostics */
    uintptr_t key;
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    void (*body)(void *ctx); /* runs the kernel once, for the current thread */
    void *ctx;
};
/* Validates like CUDA (errors go to cudaGetLastError), then runs every block. */
void launch(const launch_desc &d);

/* JKC_LAUNCH(k, ...)(args...): the arguments are converted to the kernel's parameter
 * types once, as CUDA does, and every thread calls the kernel on those copies. */
template <class... P> struct launcher {
    launch_desc d;
    void (*kern)(P...);

    template <class... A> void operator()(A &&...args) {
        static_assert(sizeof...(A) == sizeof...(P),
                      "JKC_LAUNCH: the number of arguments does not match the kernel");
        using Args = std::tuple<std::decay_t<P>...>;
        struct Frame {
            void (*kern)(P...);
            Args args;
        } frame{kern, Args(std::forward<A>(args)...)};
        d.body = [](void *ctx) {
            Frame *f = static_cast<Frame *>(ctx);
            std::apply(f->kern, f->args);
        };
        d.ctx = &frame;
        launch(d);
    }
};

template <class... P>
inline launcher<P...> make_launcher(const char *name, void (*kern)(P...), dim3 grid, dim3 block,
                                    size_t smem, cudaStream_t stream) {
    return launcher<P...>{launch_desc{name, func_key(kern), grid, block, smem, stream, nullptr,
                                      nullptr},
                          kern};
}

} // namespace jkc_emu

template <class F>
inline cudaError_t cudaFuncSetAttribute(F *func, cudaFuncAttribute attr, int value) {
    return jkc_emu::func_set_attribute(jkc_emu::func_key(func), attr, value);
}

#define JKC_LAUNCH(kern, grid, block, smem, stream, ...)                                    \
    ::jkc_emu::make_launcher(#kern, kern, (grid), (block), (size_t)(smem), (stream))(       \
        __VA_ARGS__)

#endif
