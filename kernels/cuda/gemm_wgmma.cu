/*
 * gemm_wgmma.cu — the warpgroup-MMA matmul for sm_90 (JEPA_CUDA_KERNELS=wgmma): Y = epi(X .
 * W^T + b) for f16 and bf16 weights, X read from its 16-bit copy x16, Y written in f32 and,
 * when y16 is set, rounded to y16_type (the same contract as gemm_pipe.cu, which serves
 * every call this one does not: another GPU, unaligned operands, the switch off).
 *
 * nvcc builds this file for sm_90a only (wgmma exists on no other target; meson.build), so
 * the host asks jkc_gemm_wgmma_ready() (the device is compute capability 9.0) before it
 * launches anything from here; the other architectures' objects never reference the
 * kernels. The SIMT emulator models wgmma (kernels/cuda/emu/emu.h) and reports 9.0.
 *
 * A block computes a 128 x 128 tile of Y with two warpgroups (256 threads), warpgroup g
 * owning rows 64 g .. 64 g + 63 through wgmma.mma_async m64n128k16 (f32 accumulators: 64
 * a thread, the mma.m16n8k16 fragment layout repeated over 16 column tiles, which is what
 * gemm_common.cuh's jkc_acc_store walks). K is walked in steps of BK = 64 elements:
 *
 *   - Shared memory: STAGES = 4 stages in a ring, each the X tile (128 rows) then the W
 *     tile (128 rows), a row of 64 elements = 128 bytes = eight 16-byte chunks, chunk c of
 *     row r stored at slot c ^ (r % 8): wgmma's 128-byte swizzle, with 8-row patterns of
 *     1024 bytes (the stages start on a 1024-byte boundary, so the pattern's address bits
 *     are those of the offset). Both operands are K-major; the descriptor of the k16 step s
 *     starts 32 s bytes into the rows, SBO = 1024 (8 rows), LBO unused by this mode.
 *   - Copies: cp.async of 16 bytes, 8 chunks a thread a step; a ragged edge (rows past M
 *     or N, columns past K) copies fewer source bytes and cp.async zero-fills the rest. Each
 *     K step is one commit group, issued two steps ahead.
 *   - Order per K step kt: wait for step kt's copies (cp.async.wait_group 1), the
 *     generic-to-async proxy fence (cp.async writes are generic; wgmma reads through the
 *     async proxy), __syncthreads; queue the copies of step kt + 2 into the stage of step
 *     kt - 2, whose wgmma every warpgroup retired before the barrier; then fence, four
 *     wgmma (k16 steps), commit, and wait until at most this step's group is in flight.
 *     So one wgmma group overlaps the next step's barrier and copies.
 *   - Epilogue: bias, GELU or the residual add, then y16, as gemm_pipe.cu's (the same
 *     helper, jkc_epi_store).
 *
 * Bits: each output is the chain of k16 products over K in the same order as the pipelined
 * and default kernels (under the emulator, which adds the exact products in k order, the
 * same bits; tensor cores may round the partial sums differently).
 *
 * Registers: 64 accumulators and the addressing; __launch_bounds__(256, 1): the stages take
 * 129 KiB, so one block per SM. Never run on a GPU: selectable, not the default.
 */
#include "kernels/cuda/gemm_common.cuh"
#include "kernels/cuda/internal.cuh"
#include "kernels/cuda/math.cuh"
#include "kernels/cuda/wgmma.cuh"

#if defined(__CUDACC__)
#define WG_LAUNCH_BOUNDS(n, b) __launch_bounds__(n, b)
#else
#define WG_LAUNCH_BOUNDS(n, b)
#endif

namespace {

/* The kernel takes the call's jk_gemm_args by value (its x16, w, y, y16, bias, strides,
 * shape and epilogue; device pointers). */
typedef struct jk_gemm_args WgArgs;

constexpr int WBM = 128, WBN = 128;  /* block tile                                      */
constexpr int WBK = 64;              /* K step: a tile row is 64 elements = 128 bytes   */
constexpr int WROW = WBK * 2;
constexpr int WSTAGES = 4;
constexpr int WAHEAD = 2;            /* K steps whose copies are in flight ahead         */
constexpr int WTHR = 256;            /* two warpgroups                                   */
constexpr int WTILE_BYTES = 128 * WROW;
constexpr int WSTAGE_BYTES = 2 * WTILE_BYTES;
constexpr int WSMEM = WSTAGES * WSTAGE_BYTES + 1024; /* + the alignment to 1024 bytes */
static_assert(WAHEAD <= WSTAGES - 2, "a stage is refilled only after its wgmma retired");

/* Byte offset of chunk c (0..7) of tile row r in the 128-byte swizzle. */
__device__ __forceinline__ int wswz(int r, int c) { return r * WROW + ((c ^ (r & 7)) << 4); }

/* Queue the 128 rows r0.. of a 16-bit matrix (`rows` rows of `ld` bytes), columns k0 ..
 * k0 + 63, into the tile at dst; zeros past the matrix. */
__device__ __forceinline__ void wload_tile(unsigned char *dst, const unsigned char *base,
                                           size_t ld, int r0, int rows, int k0, int K, int tid) {
    JKC_UNROLL
    for (int i = 0; i < 128 * 8 / WTHR; i++) {
        const int c = tid + i * WTHR, r = c / 8, kc = c % 8;
        const int left = K - k0 - kc * 8;
        const int n = r0 + r < rows ? (left >= 8 ? 8 : left > 0 ? left : 0) : 0;
        const unsigned char *src =
            n ? base + (size_t)(r0 + r) * ld + (size_t)(k0 + kc * 8) * 2 : base;
        jkc_cp_async16(dst + wswz(r, kc), src, 2 * n);
    }
}

__device__ __forceinline__ void wload_stage(const WgArgs &p, unsigned char *st, int tid, int m0,
                                            int n0, int k0) {
    wload_tile(st, reinterpret_cast<const unsigned char *>(p.x16), p.ldx16 * 2, m0, p.M, k0, p.K,
               tid);
    wload_tile(st + WTILE_BYTES, static_cast<const unsigned char *>(p.w), p.ldw, n0, p.N, k0, p.K,
               tid);
}

template <int MODE>
__device__ __forceinline__ void wmma(float *acc, uint64_t da, uint64_t db) {
    if constexpr (MODE == JK_F16) jkc_wgmma_ss_f16<WBN>(acc, da, db);
    else jkc_wgmma_ss_bf16<WBN>(acc, da, db);
}

template <int MODE>
__global__ void WG_LAUNCH_BOUNDS(WTHR, 1) gemm_wgmma(WgArgs p) {
    JKC_DYN_SMEM(unsigned char, smem_raw);
    unsigned char *smem = smem_raw + ((1024u - (jkc_smem_addr(smem_raw) & 1023u)) & 1023u);

    const int tid = (int)threadIdx.x;
    const int wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    const int m0 = (int)blockIdx.y * WBM, n0 = (int)blockIdx.x * WBN;

    float acc[1][WBN / 8][4];
    jkc_acc_zero(acc);
    float *d = &acc[0][0][0];
    jkc_wgmma_fence_acc(d, WBN / 2);

    const int nk = (p.K + WBK - 1) / WBK;
    JKC_UNROLL
    for (int s = 0; s < WAHEAD; s++) {
        if (s < nk) wload_stage(p, smem + s * WSTAGE_BYTES, tid, m0, n0, s * WBK);
        jkc_cp_async_commit();
    }
    for (int kt = 0; kt < nk; kt++) {
        jkc_cp_async_wait<WAHEAD - 1>();
        jkc_fence_proxy_async();
        __syncthreads();
        const int next = kt + WAHEAD;
        if (next < nk)
            wload_stage(p, smem + (next % WSTAGES) * WSTAGE_BYTES, tid, m0, n0, next * WBK);
        jkc_cp_async_commit();

        const unsigned char *st = smem + (kt % WSTAGES) * WSTAGE_BYTES;
        jkc_wgmma_fence();
        JKC_UNROLL
        for (int ks = 0; ks < WBK / 16; ks++) {
            const uint64_t da = jkc_wgmma_desc(st + wg * 64 * WROW + 32 * ks, 16, 8 * WROW,
                                               JKC_WGMMA_SWZ_128B);
            const uint64_t db = jkc_wgmma_desc(st + WTILE_BYTES + 32 * ks, 16, 8 * WROW,
                                               JKC_WGMMA_SWZ_128B);
            wmma<MODE>(d, da, db);
        }
        jkc_wgmma_commit();
        jkc_wgmma_wait<1>();
    }
    jkc_wgmma_wait<0>();
    jkc_wgmma_fence_acc(d, WBN / 2);
    jkc_cp_async_wait_all();   /* only empty groups are left; retire them */

    jkc_acc_store(acc, m0 + wg * 64 + warp * 16, n0, lane >> 2, lane & 3, p.M, p.N, p.bias,
                  [&](int row, int col, float v, float b) {
                      jkc_epi_store(p.y + (size_t)row * p.ldy + col,
                                    p.y16 ? p.y16 + (size_t)row * p.ldy16 + col : nullptr,
                                    p.y16_type == JK_F16, (int)p.epi, v, b);
                  });
}

template <int MODE> void launch_wgmma(const WgArgs &p, const char *what) {
    static std::atomic<uint64_t> optin{0};
    jkc_smem_optin(optin, gemm_wgmma<MODE>, WSMEM);
    const dim3 grid((unsigned)((p.N + WBN - 1) / WBN), (unsigned)((p.M + WBM - 1) / WBM));
    JKC_LAUNCH(gemm_wgmma<MODE>, grid, dim3(WTHR), WSMEM, jkc_stream(), p);
    jkc_check_launch(what);
}

bool al16(const void *ptr) { return ((uintptr_t)ptr & 15u) == 0; }

std::atomic<long> g_calls{0};

} // namespace

/* Test hook (tests/cuda/test_cuda_gemm.c): matmuls this file has queued. */
extern "C" long jkc_gemm_wgmma_count(void) { return g_calls.load(std::memory_order_relaxed); }

bool jkc_gemm_wgmma_ready(const struct jk_gemm_args *a) {
    if (!(al16(a->x16) && a->ldx16 % 8 == 0 && al16(a->w) && a->ldw % 16 == 0)) return false;
    /* compute capability 9.0 (the sm_90a image), cached per device ordinal */
    static std::atomic<int> cache[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) dev = 0;
    if (dev >= 64) dev = 63;
    int v = cache[dev].load(std::memory_order_relaxed);
    if (!v) {
        cudaDeviceProp prop;
        v = cudaGetDeviceProperties(&prop, dev) == cudaSuccess && prop.major == 9 &&
                    prop.minor == 0
                ? 1
                : 2;
        cache[dev].store(v, std::memory_order_relaxed);
    }
    return v == 1;
}

void jkc_gemm_wgmma(const struct jk_gemm_args *a, int dt, const char *what) {
    if (a->M <= 0 || a->N <= 0 || a->K <= 0) return;
    g_calls.fetch_add(1, std::memory_order_relaxed);
    if (dt == JK_F16) launch_wgmma<JK_F16>(*a, what);
    else launch_wgmma<JK_BF16>(*a, what);
}
