/*
 * test_emu.cc — self-test of the SIMT emulator (kernels/cuda/emu/): the dialect of
 * kernels/cuda/compat.cuh run on the CPU. Exit 0 pass, 1 fail; prints what it checks.
 *
 *   g++ -std=c++17 -I. -O2 tests/cuda/test_emu.cc kernels/cuda/emu/emu.cc -lpthread
 *
 * JEPA_SEED=n replays the random tiles; JEPA_EMU_EXHAUSTIVE=1 checks the f32 -> f16 /
 * bf16 conversions on all 2^32 inputs (a few tens of seconds) instead of a sample.
 */
#include "kernels/cuda/compat.cuh"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

/* runtime/dtype.h is C; g++ does not know _Static_assert in C++. */
#define _Static_assert static_assert
#include "runtime/dtype.h"
#undef _Static_assert
#include "tests/check.h"



static uint64_t g_rng;
static uint32_t rnd() {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
static float rndf(float lo, float hi) {
    return lo + (hi - lo) * (float)(rnd() & 0xffffff) / 16777216.0f;
}

template <class T> static T *dev_alloc(size_t n) {
    T *p = nullptr;
    if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess) {
        printf("  FAIL cudaMalloc(%zu)\n", n * sizeof(T));
        exit(1);
    }
    return p;
}

/* ---- kernels ------------------------------------------------------------------------- */

/* Every thread writes its coordinates: checks threadIdx/blockIdx/blockDim/gridDim. */
__global__ void k_coords(unsigned *out) {
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    out[b * nt + t] = (b << 16) | t;
}

/* Tree reduction in static shared memory: each step reads values other threads wrote
 * before the barrier. Block size n (a power of 2, <= 1024), one sum per block. */
__global__ void k_reduce(float *out, const float *in, int n) {
    __shared__ float buf[1024];
    unsigned t = threadIdx.x;
    buf[t] = in[blockIdx.x * (unsigned)n + t];
    __syncthreads();
    for (unsigned s = (unsigned)n / 2; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = buf[0];
}

/* Ring exchange: thread t reads what thread t+1 wrote before the barrier, twice in a row
 * (the second round checks that nobody ran past the first barrier early). */
__global__ void k_ring(int *out) {
    __shared__ int a[1024];
    unsigned n = blockDim.x * blockDim.y, t = threadIdx.x + blockDim.x * threadIdx.y;
    a[t] = (int)(t * 3 + blockIdx.x);
    __syncthreads();
    int v = a[(t + 1) % n];
    __syncthreads();
    a[t] = v + 1;
    __syncthreads();
    out[blockIdx.x * n + t] = a[(t + 1) % n];
}

/* Warp shuffles: butterfly sums (float, int, unsigned), a broadcast, a rotation, and
 * sub-warp widths; lane ids follow the linear thread id (2-D blocks included). */
__global__ void k_shfl(float *fs, int *is, unsigned *us, float *bc, float *rot, float *w8) {
    unsigned t = threadIdx.x + blockDim.x * threadIdx.y;
    unsigned g = blockIdx.x * blockDim.x * blockDim.y + t;
    unsigned lane = t % 32;
    float f = (float)(g % 97) * 0.5f;
    int i = (int)(g % 13) - 6;
    unsigned u = g * 2654435761u;
    for (int o = 16; o > 0; o >>= 1) {
        f += __shfl_xor_sync(0xffffffffu, f, o);
        i += __shfl_xor_sync(0xffffffffu, i, o);
        u += __shfl_xor_sync(0xffffffffu, u, o);
    }
    fs[g] = f;
    is[g] = i;
    us[g] = u;
    bc[g] = __shfl_sync(0xffffffffu, (float)g, 5);
    rot[g] = __shfl_sync(0xffffffffu, (float)g, (int)(lane + 1) % 32);
    float s = (float)lane;
    for (int o = 4; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o, 8);
    w8[g] = s + __shfl_sync(0xffffffffu, 0.0f, 0, 8); /* width 8: source lane 0 of the group */
}

/* Dynamic shared memory: reads the poison, then a block-wide reversal through it. */
__global__ void k_dyn(int *out, unsigned *poison, int n) {
    JKC_DYN_SMEM(int, sm);
    unsigned t = threadIdx.x;
    if (t == 0) poison[blockIdx.x] = (unsigned)sm[n - 1];
    __syncthreads();
    for (int i = (int)t; i < n; i += (int)blockDim.x) sm[i] = i + (int)blockIdx.x;
    __syncthreads();
    for (int i = (int)t; i < n; i += (int)blockDim.x) out[blockIdx.x * n + i] = sm[n - 1 - i];
}

/* One mma per warp on fragments given per lane (the layout is built on the host from the
 * documentation in compat.cuh), `steps` times in a row over different tiles, with a
 * shuffle and a __syncwarp between them to mix warp ops. */
__global__ void k_mma(float *d_out, const uint32_t *af, const uint32_t *bf, const float *c,
                      int steps, int bf16) {
    unsigned t = threadIdx.x, warp = t / 32, lane = t % 32;
    float d[4];
    for (int i = 0; i < 4; i++) d[i] = c[(warp * 32 + lane) * 4 + i];
    for (int s = 0; s < steps; s++) {
        const uint32_t *ap = af + (((size_t)warp * steps + s) * 32 + lane) * 4;
        const uint32_t *bp = bf + (((size_t)warp * steps + s) * 32 + lane) * 2;
        uint32_t a[4] = {ap[0], ap[1], ap[2], ap[3]}, b[2] = {bp[0], bp[1]};
        if (bf16) jkc_mma_bf16(d, a, b);
        else jkc_mma_f16(d, a, b);
        float z = __shfl_xor_sync(0xffffffffu, 0.0f, 1);
        __syncwarp();
        d[0] += z;
    }
    for (int i = 0; i < 4; i++) d_out[(warp * 32 + lane) * 4 + i] = d[i];
}

__global__ void k_flag(int *flag) {
    if (threadIdx.x == 0 && blockIdx.x == 0) *flag = 1;
}

__global__ void k_bar_loop(int iters) {
    for (int i = 0; i < iters; i++) __syncthreads();
}

__global__ void k_shfl_loop(int iters, float *out) {
    float v = (float)threadIdx.x;
    for (int i = 0; i < iters; i++) v = __shfl_xor_sync(0xffffffffu, v, 1);
    if (threadIdx.x == 0) out[0] = v;
}

__global__ void k_mma_loop(int iters, float *out) {
    uint32_t a[4] = {0x3c003c00u, threadIdx.x, 0x3c00u, 1u}, b[2] = {0x3c003c00u, 0x3c00u};
    float d[4] = {0, 0, 0, 0};
    for (int i = 0; i < iters; i++) jkc_mma_f16(d, a, b);
    if (threadIdx.x == 0) out[0] = d[0];
}

__global__ void k_args(int *out, int a, float b, size_t c) {
    if (threadIdx.x == 0) {
        out[0] = a;
        out[1] = (int)b;
        out[2] = (int)c;
    }
}

/* cp.async groups, per thread: six 16-byte slots of dynamic shared memory (poisoned
 * 0xff), slot i copied from src + 16 * (6 * t + i). After each step the thread records
 * which slots hold their data (bit i): the steps are issue, commit, __syncthreads,
 * wait<2>, wait<1>, an uncommitted copy then wait<1>, wait<0>. */
__global__ void k_cp_groups(unsigned *seen, const unsigned char *src) {
    JKC_DYN_SMEM(unsigned char, sm);
    const unsigned t = threadIdx.x;
    unsigned char *mine = sm + 96 * t;
    const unsigned char *from = src + 96 * t;
    unsigned step = 0;
    auto record = [&] {
        unsigned mask = 0;
        for (unsigned i = 0; i < 6; i++) mask |= (unsigned)!memcmp(mine + 16 * i, from + 16 * i, 16) << i;
        seen[t * 8 + step++] = mask;
    };
    for (unsigned g = 0; g < 4; g++) {
        jkc_cp_async16(mine + 16 * g, from + 16 * g, 16);
        if (g == 0) record();                          /* step 0: issued, not committed */
        jkc_cp_async_commit();
        if (g == 0) record();                          /* step 1: committed */
    }
    __syncthreads();
    record();                                          /* step 2: __syncthreads */
    jkc_cp_async_wait<2>();
    record();                                          /* step 3: groups 0, 1 landed */
    jkc_cp_async_wait<1>();
    record();                                          /* step 4: group 2 */
    jkc_cp_async8(mine + 16 * 4, from + 16 * 4, 8);
    jkc_cp_async8(mine + 16 * 4 + 8, from + 16 * 4 + 8, 8);
    for (unsigned j = 0; j < 4; j++) jkc_cp_async4(mine + 16 * 5 + 4 * j, from + 16 * 5 + 4 * j, 4);
    jkc_cp_async_wait<1>();
    record();                                          /* step 5: the open group too, not 3 */
    jkc_cp_async_wait<0>();
    record();                                          /* step 6: everything */
}

/* Zero-fill: thread t copies 16 / 8 / 4 bytes with src_bytes = t % 17 / t % 9 / t % 5
 * from src + 32 t into dst + 32 t (and +16, +24) through shared memory. */
__global__ void k_cp_zfill(unsigned char *dst, const unsigned char *src) {
    JKC_DYN_SMEM(unsigned char, sm);
    const unsigned t = threadIdx.x;
    jkc_cp_async16(sm + 32 * t, src + 32 * t, (int)(t % 17));
    jkc_cp_async8(sm + 32 * t + 16, src + 32 * t + 16, (int)(t % 9));
    jkc_cp_async4(sm + 32 * t + 24, src + 32 * t + 24, (int)(t % 5));
    jkc_cp_async_wait_all();
    memcpy(dst + 32 * t, sm + 32 * t, 28);
}

/* Every ldmatrix form: four 8x8 b16 matrices in shared memory, row (i, r) at byte
 * 16 * perm[8 i + r] (scattered rows). Lane l posts row l%8 of matrix l/8 where the form
 * reads that matrix, and a misaligned address otherwise (it must be ignored). out: per
 * form, per lane, 4 words (unused ones left 0). */
__global__ void k_ldmatrix(uint32_t *out, const uint16_t *mats, const int *perm) {
    __shared__ __align__(16) uint16_t sm[32 * 8];
    const unsigned l = threadIdx.x;
    for (unsigned c = 0; c < 8; c++) sm[8 * perm[l] + c] = mats[8 * l + c];
    __syncwarp();
    const void *good = &sm[8 * perm[l]];
    const void *bad = (const char *)good + 2;
    for (unsigned form = 0; form < 6; form++) { /* x1 x2 x4, then their .trans */
        const unsigned nmat = 1u << (form % 3);
        const void *row = l < 8 * nmat ? good : bad;
        uint32_t r[4] = {0, 0, 0, 0};
        switch (form) {
        case 0: jkc_ldmatrix_x1(r, row); break;
        case 1: jkc_ldmatrix_x2(r, row); break;
        case 2: jkc_ldmatrix_x4(r, row); break;
        case 3: jkc_ldmatrix_x1_trans(r, row); break;
        case 4: jkc_ldmatrix_x2_trans(r, row); break;
        default: jkc_ldmatrix_x4_trans(r, row); break;
        }
        memcpy(out + 128 * form + 4 * l, r, 16);
    }
}

/* A small pipelined matmul: C[32x8] = A[32xK] . B, two warps of 16 rows, K in tiles of 16
 * brought by cp.async into two buffers (tile kt+1 copied while tile kt is multiplied),
 * fragments by ldmatrix, f16 mma. A: row-major [32][K]; B twice: bn [8][K] (read with
 * plain ldmatrix) and bk [K][8] (read with .trans); c gets both results, [2][32][8].
 * bug 1: wait<2> instead of wait<1> (multiplies a tile before it lands); bug 2: no wait
 * until the end. */
__global__ void k_pipe_mma(float *c, const uint16_t *a, const uint16_t *bn, const uint16_t *bk,
                           int K, int bug) {
    __shared__ __align__(16) uint16_t As[2][32][16];
    __shared__ __align__(16) uint16_t Bn[2][8][16];
    __shared__ __align__(16) uint16_t Bk[2][16][8];
    const unsigned t = threadIdx.x, warp = t / 32, l = t % 32, g = l / 4, q = l % 4;
    const int nk = K / 16;
    auto issue = [&](int kt) {
        const int buf = kt & 1, k0 = kt * 16;
        /* A: 32 rows x 2 chunks of 8 halves, one chunk per thread */
        jkc_cp_async16(&As[buf][t / 2][8 * (t % 2)], a + (size_t)(t / 2) * K + k0 + 8 * (t % 2), 16);
        if (t < 16) jkc_cp_async16(&Bn[buf][t / 2][8 * (t % 2)], bn + (size_t)(t / 2) * K + k0 + 8 * (t % 2), 16);
        else if (t < 32) jkc_cp_async16(&Bk[buf][t - 16][0], bk + (size_t)(k0 + t - 16) * 8, 16);
        jkc_cp_async_commit();
    };
    /* Poison the buffers the way a previous tile would leave them (static shared memory
     * keeps the last block's data, so make "not landed yet" visible as NaN). */
    for (unsigned i = t; i < sizeof As / 2; i += 64) (&As[0][0][0])[i] = 0x7e00u;
    for (unsigned i = t; i < sizeof Bn / 2; i += 64) (&Bn[0][0][0])[i] = 0x7e00u;
    for (unsigned i = t; i < sizeof Bk / 2; i += 64) (&Bk[0][0][0])[i] = 0x7e00u;
    __syncthreads();
    float dn[4] = {0, 0, 0, 0}, dk[4] = {0, 0, 0, 0};
    issue(0);
    for (int kt = 0; kt < nk; kt++) {
        const int buf = kt & 1;
        if (kt + 1 < nk) issue(kt + 1);
        else jkc_cp_async_commit(); /* an empty group keeps the count uniform */
        if (bug == 1) jkc_cp_async_wait<2>();
        else if (bug == 0) jkc_cp_async_wait<1>();
        __syncthreads();
        uint32_t af[4], bfn[2], bfk[2];
        const unsigned mi = l / 8, r = l % 8;
        jkc_ldmatrix_x4(af, &As[buf][16 * warp + 8 * (mi % 2) + r][8 * (mi / 2)]);
        jkc_ldmatrix_x2(bfn, &Bn[buf][r][8 * (mi % 2)]);
        jkc_ldmatrix_x2_trans(bfk, &Bk[buf][8 * (mi % 2) + r][0]);
        jkc_mma_f16(dn, af, bfn);
        jkc_mma_f16(dk, af, bfk);
        __syncthreads(); /* everyone is done with buf before it is refilled */
    }
    jkc_cp_async_wait_all();
    for (int h = 0; h < 2; h++) {
        const float *d = h ? dk : dn;
        float *o = c + (size_t)h * 256;
        o[(16 * warp + g) * 8 + 2 * q] = d[0];
        o[(16 * warp + g) * 8 + 2 * q + 1] = d[1];
        o[(16 * warp + g + 8) * 8 + 2 * q] = d[2];
        o[(16 * warp + g + 8) * 8 + 2 * q + 1] = d[3];
    }
}

/* cp.async / ldmatrix bugs the emulator must abort on. */
__global__ void k_cp_misaligned(const float *src) {
    __shared__ __align__(16) float sm[64];
    jkc_cp_async16(&sm[threadIdx.x % 2 ? 2 : 0], src, 16);
    jkc_cp_async_wait_all();
}
__global__ void k_cp_misaligned_src(const float *src) {
    __shared__ __align__(16) float sm[64];
    jkc_cp_async8(&sm[0], src + 1, 8);
    jkc_cp_async_wait_all();
}
__global__ void k_cp_bad_size(const float *src, int n) {
    __shared__ __align__(16) float sm[64];
    jkc_cp_async16(&sm[0], src, n);
    jkc_cp_async_wait_all();
}
__global__ void k_cp_pending(const float *src) {
    __shared__ __align__(16) float sm[64];
    jkc_cp_async16(&sm[4 * (threadIdx.x % 16)], src, 16);
    jkc_cp_async_commit();
    if (threadIdx.x != 5) jkc_cp_async_wait<0>();
}
__global__ void k_ldsm_misaligned() {
    __shared__ __align__(16) uint16_t sm[8 * 8 * 4];
    uint32_t r[4];
    jkc_ldmatrix_x4(r, &sm[8 * threadIdx.x + (threadIdx.x == 20 ? 4 : 0)]);
}

/* ---- wgmma (sm_90a) ---------------------------------------------------------------- */

/* The shared-memory image of a wgmma test: A (64 x 32) and B (N x 32), 16-bit, K-major,
 * in one layout mode; k-step s (k 16 s .. 16 s + 15) described by a descriptor each. */
struct WgLayout {
    int swz;                  /* JKC_WGMMA_SWZ_* */
    unsigned lbo, sbo;        /* bytes (lbo: no-swizzle mode only) */
    unsigned a_off[2], b_off[2]; /* each k-step's start, bytes */
    unsigned bytes;
};

/* Copy the image to dynamic shared memory, then run the two k-steps through wgmma into d
 * (zeroed); out[t * N / 2 + i] = thread t's d[i]. bug 1: read d before the wait; bug 2:
 * the descriptors name 64B swizzle whatever the image's layout is. */
template <bool BF16, int N>
__global__ void k_wgmma(float *out, const uint32_t *img, WgLayout L, int bug) {
    JKC_DYN_SMEM(uint32_t, sm);
    const int t = (int)threadIdx.x;
    for (unsigned i = (unsigned)t; i < L.bytes / 4; i += blockDim.x) sm[i] = img[i];
    __syncthreads();
    float d[N / 2];
    for (int i = 0; i < N / 2; i++) d[i] = 0.0f;
    const int swz = bug == 2 ? JKC_WGMMA_SWZ_64B : L.swz;
    const unsigned char *base = reinterpret_cast<const unsigned char *>(sm);
    jkc_wgmma_fence();
    for (int s = 0; s < 2; s++) {
        const uint64_t da = jkc_wgmma_desc(base + L.a_off[s], L.lbo, L.sbo, swz);
        const uint64_t db = jkc_wgmma_desc(base + L.b_off[s], L.lbo, L.sbo, swz);
        if (BF16) jkc_wgmma_ss_bf16<N>(d, da, db);
        else jkc_wgmma_ss_f16<N>(d, da, db);
    }
    jkc_wgmma_commit();
    if (bug == 1)
        for (int i = 0; i < N / 2; i++) out[t * (N / 2) + i] = d[i];
    jkc_wgmma_wait<0>();
    if (bug != 1)
        for (int i = 0; i < N / 2; i++) out[t * (N / 2) + i] = d[i];
}

/* Group retirement and chaining: d1 = A0 B0 (group 0), d2 = A0 B0 + A1 B1 (two chained
 * ops, group 1); after wait<1> d1 is final and d2 still in flight; after wait<0> both.
 * out: [3][128][4]: d1 and d2 after wait<1>, d2 after wait<0> (the first 4 of 8). */
__global__ void k_wgmma_groups(float *out, const uint32_t *img, WgLayout L) {
    JKC_DYN_SMEM(uint32_t, sm);
    const int t = (int)threadIdx.x;
    for (unsigned i = (unsigned)t; i < L.bytes / 4; i += blockDim.x) sm[i] = img[i];
    __syncthreads();
    float d1[8] = {}, d2[8] = {};
    const unsigned char *base = reinterpret_cast<const unsigned char *>(sm);
    uint64_t da[2], db[2];
    for (int s = 0; s < 2; s++) {
        da[s] = jkc_wgmma_desc(base + L.a_off[s], L.lbo, L.sbo, L.swz);
        db[s] = jkc_wgmma_desc(base + L.b_off[s], L.lbo, L.sbo, L.swz);
    }
    jkc_wgmma_fence();
    jkc_wgmma_ss_f16<16>(d1, da[0], db[0]);
    jkc_wgmma_commit();
    jkc_wgmma_ss_f16<16>(d2, da[0], db[0]);
    jkc_wgmma_ss_f16<16>(d2, da[1], db[1]);
    jkc_wgmma_commit();
    jkc_wgmma_wait<1>();
    for (int i = 0; i < 4; i++) {
        out[(0 * 128 + t) * 4 + i] = d1[i];
        out[(1 * 128 + t) * 4 + i] = d2[i];
    }
    jkc_wgmma_wait<0>();
    for (int i = 0; i < 4; i++) out[(2 * 128 + t) * 4 + i] = d2[i];
}

/* wgmma misuse the emulator must abort on. what: 0 no fence, 1 divergent warpgroup ops,
 * 2 pending at return, 3 swizzled start off its pattern, 4 B's second chunk (LBO) outside
 * shared memory, 5 misaligned descriptor pointer, 6 cp.async data without the proxy fence,
 * 7 (launched with 96 threads) not whole warpgroups. */
__global__ void k_wgmma_bug(const float *src, int what) {
    JKC_DYN_SMEM(unsigned char, sm);
    float d[4] = {};
    if (what == 6) {
        jkc_cp_async16(sm + 16 * threadIdx.x, src, 16);
        jkc_cp_async_wait_all();
        __syncthreads();
    }
    if (what == 1 && threadIdx.x >= 96) jkc_wgmma_commit();
    else if (what != 0) jkc_wgmma_fence();
    const uint64_t a = jkc_wgmma_desc(sm + (what == 3 ? 128 : what == 5 ? 8 : 0), 0, 1024,
                                      JKC_WGMMA_SWZ_128B);
    const uint64_t b = what == 4 ? jkc_wgmma_desc(sm, 16384, 128, JKC_WGMMA_SWZ_NONE)
                                 : jkc_wgmma_desc(sm, 0, 1024, JKC_WGMMA_SWZ_128B);
    jkc_wgmma_ss_f16<8>(d, a, b);
    jkc_wgmma_commit();
    if (what != 2) jkc_wgmma_wait<0>();
}

/* Kernel bugs the emulator must catch (run in forked children). */
__global__ void k_divergent_sync(int *out) {
    if (threadIdx.x < 100) __syncthreads(); /* only part of the block */
    out[threadIdx.x] = 1;
}
__global__ void k_early_return(int *out, int n) {
    if ((int)threadIdx.x >= n) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}
__global__ void k_partial_warp(float *out) {
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}
__global__ void k_divergent_warp(float *out) {
    float v = 1.0f;
    if (threadIdx.x % 2) v = __shfl_xor_sync(0xffffffffu, v, 1);
    else __syncwarp();
    out[threadIdx.x] = v;
}
__global__ void k_oob(float *out, int n) { out[threadIdx.x] = (float)n; }

/* ---- checks ---------------------------------------------------------------------------- */

static void test_coords() {
    printf("coordinates: threadIdx/blockIdx/blockDim/gridDim over 3-D grids and blocks\n");
    const dim3 grids[] = {dim3(1), dim3(3, 2), dim3(2, 2, 3)};
    const dim3 blocks[] = {dim3(1), dim3(32), dim3(7, 5), dim3(4, 3, 5), dim3(1024)};
    for (dim3 g : grids)
        for (dim3 b : blocks) {
            size_t nb = (size_t)g.x * g.y * g.z, nt = (size_t)b.x * b.y * b.z;
            unsigned *d = dev_alloc<unsigned>(nb * nt);
            JKC_LAUNCH(k_coords, g, b, 0, 0, d);
            CHECK(cudaGetLastError() == cudaSuccess, "launch failed");
            std::vector<unsigned> h(nb * nt);
            cudaMemcpy(h.data(), d, h.size() * 4, cudaMemcpyDeviceToHost);
            size_t bad = 0;
            for (size_t i = 0; i < h.size(); i++)
                bad += h[i] != (unsigned)(((i / nt) << 16) | (i % nt));
            CHECK(bad == 0, "grid (%u,%u,%u) block (%u,%u,%u): %zu wrong ids", g.x, g.y, g.z, b.x,
                  b.y, b.z, bad);
            cudaFree(d);
        }
}

static void test_barrier() {
    printf("__syncthreads: shared-memory tree reduction (32..1024 threads), ring exchange\n");
    for (int n = 32; n <= 1024; n *= 2) {
        const int blocks = 3;
        std::vector<float> h((size_t)n * blocks);
        for (float &v : h) v = (float)(rnd() % 100);
        float *in = dev_alloc<float>(h.size()), *out = dev_alloc<float>(blocks);
        cudaMemcpy(in, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
        JKC_LAUNCH(k_reduce, blocks, n, 0, 0, out, in, n);
        float r[blocks];
        cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost);
        for (int b = 0; b < blocks; b++) {
            double want = 0;
            for (int i = 0; i < n; i++) want += h[(size_t)b * n + i];
            CHECK(r[b] == (float)want, "reduce n=%d block %d: %g, want %g", n, b, r[b], want);
        }
        cudaFree(in);
        cudaFree(out);
    }
    const dim3 shapes[] = {dim3(64), dim3(16, 16), dim3(96, 2), dim3(1024), dim3(5, 3)};
    for (dim3 b : shapes) {
        unsigned n = b.x * b.y;
        int *d = dev_alloc<int>(2 * n);
        JKC_LAUNCH(k_ring, 2, b, 0, 0, d);
        std::vector<int> h(2 * n);
        cudaMemcpy(h.data(), d, h.size() * 4, cudaMemcpyDeviceToHost);
        size_t bad = 0;
        for (unsigned blk = 0; blk < 2; blk++)
            for (unsigned t = 0; t < n; t++)
                bad += h[blk * n + t] != (int)(((t + 2) % n) * 3 + blk + 1);
        CHECK(bad == 0, "ring block (%u,%u): %zu wrong", b.x, b.y, bad);
        cudaFree(d);
    }
}

static void test_shuffles() {
    printf("shuffles: xor butterfly (float/int/unsigned), broadcast, rotation, width 8\n");
    const dim3 shapes[] = {dim3(32), dim3(256), dim3(8, 8), dim3(32, 4)};
    for (dim3 b : shapes) {
        const unsigned blocks = 2, n = b.x * b.y, tot = blocks * n;
        float *fs = dev_alloc<float>(tot), *bc = dev_alloc<float>(tot);
        float *rot = dev_alloc<float>(tot), *w8 = dev_alloc<float>(tot);
        int *is = dev_alloc<int>(tot);
        unsigned *us = dev_alloc<unsigned>(tot);
        JKC_LAUNCH(k_shfl, blocks, b, 0, 0, fs, is, us, bc, rot, w8);
        CHECK(cudaGetLastError() == cudaSuccess, "launch failed");
        std::vector<float> hf(tot), hb(tot), hr(tot), hw(tot);
        std::vector<int> hi(tot);
        std::vector<unsigned> hu(tot);
        cudaMemcpy(hf.data(), fs, tot * 4, cudaMemcpyDeviceToHost);
        cudaMemcpy(hb.data(), bc, tot * 4, cudaMemcpyDeviceToHost);
        cudaMemcpy(hr.data(), rot, tot * 4, cudaMemcpyDeviceToHost);
        cudaMemcpy(hw.data(), w8, tot * 4, cudaMemcpyDeviceToHost);
        cudaMemcpy(hi.data(), is, tot * 4, cudaMemcpyDeviceToHost);
        cudaMemcpy(hu.data(), us, tot * 4, cudaMemcpyDeviceToHost);
        size_t bad = 0;
        for (unsigned g = 0; g < tot; g++) {
            unsigned w0 = g / 32 * 32, lane = g % 32;
            float sf = 0;
            int si = 0;
            unsigned su = 0;
            for (unsigned l = 0; l < 32; l++) {
                sf += (float)((w0 + l) % 97) * 0.5f;
                si += (int)((w0 + l) % 13) - 6;
                su += (w0 + l) * 2654435761u;
            }
            unsigned grp = lane / 8 * 8;
            float s8 = (float)(grp * 8 + 28); /* sum of lanes grp..grp+7 */
            bad += hf[g] != sf || hi[g] != si || hu[g] != su;
            bad += hb[g] != (float)(w0 + 5) || hr[g] != (float)(w0 + (lane + 1) % 32);
            bad += hw[g] != s8;
        }
        CHECK(bad == 0, "block (%u,%u): %zu wrong values", b.x, b.y, bad);
        cudaFree(fs);
        cudaFree(bc);
        cudaFree(rot);
        cudaFree(w8);
        cudaFree(is);
        cudaFree(us);
    }
}

static void test_dyn_smem() {
    printf("dynamic shared memory: 0xff poison per block, exchange, 48 KiB default limit, "
           "cudaFuncSetAttribute\n");
    for (int n : {1, 100, 4096, 12288}) {
        const int blocks = 3;
        int *out = dev_alloc<int>((size_t)n * blocks);
        unsigned *poison = dev_alloc<unsigned>(blocks);
        JKC_LAUNCH(k_dyn, blocks, 128, (size_t)n * 4, 0, out, poison, n);
        CHECK(cudaGetLastError() == cudaSuccess, "n=%d: launch failed", n);
        std::vector<int> h((size_t)n * blocks);
        unsigned p[blocks];
        cudaMemcpy(h.data(), out, h.size() * 4, cudaMemcpyDeviceToHost);
        cudaMemcpy(p, poison, sizeof p, cudaMemcpyDeviceToHost);
        size_t bad = 0;
        for (int b = 0; b < blocks; b++) {
            bad += p[b] != 0xffffffffu;
            for (int i = 0; i < n; i++) bad += h[(size_t)b * n + i] != n - 1 - i + b;
        }
        CHECK(bad == 0, "n=%d: %zu wrong", n, bad);
        cudaFree(out);
        cudaFree(poison);
    }
    /* 64 KiB needs the attribute, like on a GPU. */
    const int n = 16384;
    int *out = dev_alloc<int>(n);
    unsigned *poison = dev_alloc<unsigned>(1);
    cudaMemsetAsync(out, 0, n * 4, 0);
    JKC_LAUNCH(k_dyn, 1, 256, (size_t)n * 4, 0, out, poison, n);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue, "64 KiB without the attribute: not refused");
    int first = -1;
    cudaMemcpy(&first, out, 4, cudaMemcpyDeviceToHost);
    CHECK(first == 0, "refused launch ran anyway");
    CHECK(cudaFuncSetAttribute(k_dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, n * 4) ==
              cudaSuccess, "cudaFuncSetAttribute 64 KiB failed");
    JKC_LAUNCH(k_dyn, 1, 256, (size_t)n * 4, 0, out, poison, n);
    CHECK(cudaGetLastError() == cudaSuccess, "64 KiB with the attribute: refused");
    cudaMemcpy(&first, out, 4, cudaMemcpyDeviceToHost);
    CHECK(first == n - 1, "64 KiB launch: out[0] = %d", first);
    CHECK(cudaFuncSetAttribute(k_dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, 228 * 1024) ==
              cudaErrorInvalidValue, "an attribute above 227 KiB was accepted");
    cudaGetLastError();
    cudaFree(out);
    cudaFree(poison);
}

/* Fragments of compat.cuh's documented layout, built independently of the emulator. */
static void make_fragments(const uint16_t A[16][16], const uint16_t B[16][8], uint32_t *af,
                           uint32_t *bf) {
    for (int lane = 0; lane < 32; lane++) {
        int g = lane / 4, t = lane % 4;
        af[lane * 4 + 0] = jkc_pack2(A[g][2 * t], A[g][2 * t + 1]);
        af[lane * 4 + 1] = jkc_pack2(A[g + 8][2 * t], A[g + 8][2 * t + 1]);
        af[lane * 4 + 2] = jkc_pack2(A[g][2 * t + 8], A[g][2 * t + 9]);
        af[lane * 4 + 3] = jkc_pack2(A[g + 8][2 * t + 8], A[g + 8][2 * t + 9]);
        bf[lane * 2 + 0] = jkc_pack2(B[2 * t][g], B[2 * t + 1][g]);
        bf[lane * 2 + 1] = jkc_pack2(B[2 * t + 8][g], B[2 * t + 9][g]);
    }
}

static void test_mma() {
    printf("mma m16n8k16 (f16, bf16): random and small-integer tiles vs a naive matmul, "
           "1 and 3 warps, 2 and 4 chained steps\n");
    for (int bf16 = 0; bf16 < 2; bf16++)
        for (int ints = 0; ints < 2; ints++)
            for (int warps : {1, 3}) {
                const int steps = ints ? 4 : 2;
                std::vector<uint32_t> af((size_t)warps * steps * 128);
                std::vector<uint32_t> bf((size_t)warps * steps * 64);
                std::vector<float> c((size_t)warps * 128), want((size_t)warps * 128);
                for (int w = 0; w < warps; w++) {
                    double D[16][8];
                    for (int r = 0; r < 16; r++)
                        for (int n = 0; n < 8; n++)
                            D[r][n] = ints ? (int)(rnd() % 9) - 4 : rndf(-1, 1);
                    for (int lane = 0; lane < 32; lane++) {
                        int g = lane / 4, t = lane % 4;
                        float *cd = &c[((size_t)w * 32 + lane) * 4];
                        cd[0] = (float)D[g][2 * t];
                        cd[1] = (float)D[g][2 * t + 1];
                        cd[2] = (float)D[g + 8][2 * t];
                        cd[3] = (float)D[g + 8][2 * t + 1];
                    }
                    for (int s = 0; s < steps; s++) {
                        uint16_t A[16][16], B[16][8];
                        double Af[16][16], Bf[16][8];
                        for (int r = 0; r < 16; r++)
                            for (int k = 0; k < 16; k++) {
                                float v = ints ? (float)((int)(rnd() % 7) - 3) : rndf(-2, 2);
                                A[r][k] = bf16 ? f32_to_bf16(v) : f32_to_f16(v);
                                Af[r][k] = bf16 ? bf16_to_f32(A[r][k]) : f16_to_f32(A[r][k]);
                            }
                        for (int k = 0; k < 16; k++)
                            for (int n = 0; n < 8; n++) {
                                float v = ints ? (float)((int)(rnd() % 7) - 3) : rndf(-2, 2);
                                B[k][n] = bf16 ? f32_to_bf16(v) : f32_to_f16(v);
                                Bf[k][n] = bf16 ? bf16_to_f32(B[k][n]) : f16_to_f32(B[k][n]);
                            }
                        make_fragments(A, B, &af[((size_t)w * steps + s) * 128],
                                       &bf[((size_t)w * steps + s) * 64]);
                        for (int r = 0; r < 16; r++)
                            for (int n = 0; n < 8; n++)
                                for (int k = 0; k < 16; k++) D[r][n] += Af[r][k] * Bf[k][n];
                    }
                    for (int lane = 0; lane < 32; lane++) {
                        int g = lane / 4, t = lane % 4;
                        float *wd = &want[((size_t)w * 32 + lane) * 4];
                        wd[0] = (float)D[g][2 * t];
                        wd[1] = (float)D[g][2 * t + 1];
                        wd[2] = (float)D[g + 8][2 * t];
                        wd[3] = (float)D[g + 8][2 * t + 1];
                    }
                }
                uint32_t *daf = dev_alloc<uint32_t>(af.size());
                uint32_t *dbf = dev_alloc<uint32_t>(bf.size());
                float *dc = dev_alloc<float>(c.size()), *dd = dev_alloc<float>(c.size());
                cudaMemcpy(daf, af.data(), af.size() * 4, cudaMemcpyHostToDevice);
                cudaMemcpy(dbf, bf.data(), bf.size() * 4, cudaMemcpyHostToDevice);
                cudaMemcpy(dc, c.data(), c.size() * 4, cudaMemcpyHostToDevice);
                JKC_LAUNCH(k_mma, 2, 32 * warps, 0, 0, dd, daf, dbf, dc, steps, bf16);
                std::vector<float> got(c.size());
                cudaMemcpy(got.data(), dd, got.size() * 4, cudaMemcpyDeviceToHost);
                double worst = 0;
                for (size_t i = 0; i < got.size(); i++) {
                    double e = fabs((double)got[i] - want[i]);
                    worst = e > worst ? e : worst;
                }
                /* Integer tiles are exact; random ones: f32 rounding of 16..64 terms ~ 4. */
                double tol = ints ? 0 : 1e-5;
                CHECK(worst <= tol, "%s %s warps=%d: max error %g", bf16 ? "bf16" : "f16",
                      ints ? "integers" : "random", warps, worst);
                cudaFree(daf);
                cudaFree(dbf);
                cudaFree(dc);
                cudaFree(dd);
            }
}

static void test_cp_async() {
    printf("cp.async: data lands only at the wait that retires its group (not at issue, "
           "commit or __syncthreads), wait<N> leaves the N newest groups, zero-fill\n");
    const unsigned n = 64;
    std::vector<unsigned char> src(96 * n);
    for (auto &b : src) b = (unsigned char)(rnd() % 255); /* never 0xff, the poison */
    unsigned char *dsrc = dev_alloc<unsigned char>(src.size());
    unsigned *dseen = dev_alloc<unsigned>(8 * n);
    cudaMemcpy(dsrc, src.data(), src.size(), cudaMemcpyHostToDevice);
    JKC_LAUNCH(k_cp_groups, 2, n, 96 * n, 0, dseen, dsrc);
    CHECK(cudaGetLastError() == cudaSuccess, "k_cp_groups: launch failed");
    std::vector<unsigned> seen(8 * n);
    cudaMemcpy(seen.data(), dseen, seen.size() * 4, cudaMemcpyDeviceToHost);
    /* slots landed after each step (bit i: slot i) */
    const unsigned want[7] = {0x00, 0x00, 0x00, 0x03, 0x07, 0x37, 0x3f};
    size_t bad = 0;
    for (unsigned t = 0; t < n; t++)
        for (int s = 0; s < 7; s++)
            if (seen[t * 8 + s] != want[s]) {
                if (!bad)
                    printf("  thread %u step %d: slots 0x%02x landed, want 0x%02x\n", t, s,
                           seen[t * 8 + s], want[s]);
                bad++;
            }
    CHECK(bad == 0, "cp.async group retirement: %zu wrong steps", bad);
    cudaFree(dseen);

    unsigned char *ddst = dev_alloc<unsigned char>(32 * n);
    JKC_LAUNCH(k_cp_zfill, 1, n, 32 * n, 0, ddst, dsrc);
    CHECK(cudaGetLastError() == cudaSuccess, "k_cp_zfill: launch failed");
    std::vector<unsigned char> dst(32 * n);
    cudaMemcpy(dst.data(), ddst, dst.size(), cudaMemcpyDeviceToHost);
    bad = 0;
    for (unsigned t = 0; t < n; t++) {
        const unsigned off[3] = {0, 16, 24}, size[3] = {16, 8, 4}, sb[3] = {t % 17, t % 9, t % 5};
        for (int c = 0; c < 3; c++)
            for (unsigned i = 0; i < size[c]; i++) {
                size_t at = 32 * t + off[c] + i;
                bad += dst[at] != (i < sb[c] ? src[at] : 0);
            }
    }
    CHECK(bad == 0, "cp.async zero-fill (16/8/4 bytes, every src_bytes): %zu wrong bytes", bad);
    cudaFree(ddst);
    cudaFree(dsrc);
}

static void test_ldmatrix() {
    printf("ldmatrix x1/x2/x4 and .trans: every lane's registers against the PTX fragment "
           "layout, scattered rows, ignored addresses of unused lanes\n");
    uint16_t mats[32][8]; /* row 8 i + r of matrix i */
    for (int r = 0; r < 32; r++)
        for (int c = 0; c < 8; c++) mats[r][c] = (uint16_t)(rnd() & 0xffff);
    int perm[32];
    for (int i = 0; i < 32; i++) perm[i] = i;
    for (int i = 31; i > 0; i--) std::swap(perm[i], perm[rnd() % (unsigned)(i + 1)]);
    uint16_t *dm = dev_alloc<uint16_t>(256);
    int *dp = dev_alloc<int>(32);
    uint32_t *dout = dev_alloc<uint32_t>(6 * 128);
    cudaMemcpy(dm, mats, sizeof mats, cudaMemcpyHostToDevice);
    cudaMemcpy(dp, perm, sizeof perm, cudaMemcpyHostToDevice);
    cudaMemsetAsync(dout, 0, 6 * 128 * 4, 0);
    JKC_LAUNCH(k_ldmatrix, 1, 32, 0, 0, dout, dm, dp);
    CHECK(cudaGetLastError() == cudaSuccess, "k_ldmatrix: launch failed");
    std::vector<uint32_t> got(6 * 128);
    cudaMemcpy(got.data(), dout, got.size() * 4, cudaMemcpyDeviceToHost);
    /* The PTX layout read per element: element (row, col) of matrix i goes to register i
     * of lane 4 row + col / 2, half col % 2 (plain); transposed, to lane 4 col + row / 2,
     * half row % 2. */
    const char *names[6] = {"x1", "x2", "x4", "x1.trans", "x2.trans", "x4.trans"};
    for (int form = 0; form < 6; form++) {
        const int nmat = 1 << (form % 3), trans = form / 3;
        uint32_t want[32][4] = {};
        for (int i = 0; i < nmat; i++)
            for (int row = 0; row < 8; row++)
                for (int col = 0; col < 8; col++) {
                    int lane = trans ? 4 * col + row / 2 : 4 * row + col / 2;
                    int half = trans ? row % 2 : col % 2;
                    want[lane][i] |= (uint32_t)mats[8 * i + row][col] << (16 * half);
                }
        size_t bad = 0;
        for (int lane = 0; lane < 32; lane++)
            for (int i = 0; i < 4; i++) bad += got[(size_t)form * 128 + 4 * lane + i] != want[lane][i];
        CHECK(bad == 0, "ldmatrix %s: %zu wrong registers", names[form], bad);
    }
    cudaFree(dm);
    cudaFree(dp);
    cudaFree(dout);
}

/* Runs k_pipe_mma; returns the largest error of both results against a naive matmul. */
static double pipe_mma_error(int K, int bug) {
    std::vector<uint16_t> a((size_t)32 * K), bn((size_t)8 * K), bk((size_t)K * 8);
    std::vector<double> want(32 * 8, 0.0);
    for (auto &v : a) v = f32_to_f16((float)((int)(rnd() % 9) - 4));
    for (int k = 0; k < K; k++)
        for (int j = 0; j < 8; j++) {
            uint16_t v = f32_to_f16((float)((int)(rnd() % 9) - 4));
            bn[(size_t)j * K + k] = v;
            bk[(size_t)k * 8 + j] = v;
        }
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 8; j++)
            for (int k = 0; k < K; k++)
                want[i * 8 + j] += (double)f16_to_f32(a[(size_t)i * K + k]) *
                                   f16_to_f32(bn[(size_t)j * K + k]);
    uint16_t *da = dev_alloc<uint16_t>(a.size()), *dbn = dev_alloc<uint16_t>(bn.size()),
             *dbk = dev_alloc<uint16_t>(bk.size());
    float *dc = dev_alloc<float>(512);
    cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dbn, bn.data(), bn.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dbk, bk.data(), bk.size() * 2, cudaMemcpyHostToDevice);
    JKC_LAUNCH(k_pipe_mma, 1, 64, 0, 0, dc, da, dbn, dbk, K, bug);
    std::vector<float> c(512);
    cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 256; i++) {
            double e = fabs((double)c[(size_t)h * 256 + i] - want[i]);
            worst = e > worst || e != e ? e : worst;
        }
    cudaFree(da);
    cudaFree(dbn);
    cudaFree(dbk);
    cudaFree(dc);
    return worst;
}

static void test_pipeline() {
    printf("pipeline: cp.async double buffer + ldmatrix (plain and .trans) + mma against a "
           "naive matmul; the same kernel waiting too little is caught\n");
    for (int K : {16, 32, 112}) {
        double e = pipe_mma_error(K, 0);
        CHECK(e == 0, "K=%d: max error %g (small integers: exact)", K, e);
    }
    for (int bug : {1, 2}) {
        double e = pipe_mma_error(64, bug);
        CHECK(!(e == 0), "bug %d (%s): the result is still right (error %g)", bug,
              bug == 1 ? "wait<2>" : "no wait", e);
    }
}

static bool same_f32(float a, float b) { return f32_bits(a) == f32_bits(b); }

static void test_conversions() {
    bool full = getenv("JEPA_EMU_EXHAUSTIVE") && atoi(getenv("JEPA_EMU_EXHAUSTIVE")) != 0;
    printf("conversions vs runtime/dtype.h (NaN -> CUDA's canonical 0x7fff): all f16 -> f32; "
           "f32 -> f16/bf16 on %s\n",
           full ? "all 2^32 inputs" : "every f16/bf16 value, its neighbours and midpoints, "
                                      "and a stride through all inputs");
    size_t bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float want = f16_to_f32((uint16_t)h), got = jkc_f16_to_f32((uint16_t)h);
        if (want != want) bad += f32_bits(got) != 0x7fffffffu;
        else bad += !same_f32(got, want);
        bad += !same_f32(jkc_bf16_to_f32((uint16_t)h), bf16_to_f32((uint16_t)h));
    }
    CHECK(bad == 0, "16 -> 32 bit: %zu mismatches", bad);

    size_t checked = 0;
    bad = 0;
    auto check = [&](uint32_t u) {
        float f = f32_from_bits(u);
        bool nan = (u & 0x7fffffffu) > 0x7f800000u;
        uint16_t wh = nan ? 0x7fff : f32_to_f16(f), wb = nan ? 0x7fff : f32_to_bf16(f);
        uint16_t gh = jkc_f32_to_f16(f), gb = jkc_f32_to_bf16(f);
        if (gh != wh || gb != wb) {
            if (bad < 5)
                printf("  f32 0x%08x: f16 0x%04x want 0x%04x, bf16 0x%04x want 0x%04x\n", u, gh,
                       wh, gb, wb);
            bad++;
        }
        checked++;
    };
    if (full) {
        uint32_t u = 0;
        do check(u); while (++u != 0);
    } else {
        for (uint32_t h = 0; h < 65536; h++) {
            /* the f32 images of every f16 and bf16 value, +-1 ulp, and the midpoints
             * between neighbours (ties: round to even) +-1 ulp */
            uint32_t hb = f32_bits(f16_to_f32((uint16_t)h)), bb = h << 16;
            for (uint32_t base : {hb, bb})
                for (int32_t d : {-1, 0, 1}) check(base + (uint32_t)d);
            uint32_t mid_b = bb + 0x8000u;
            for (int32_t d : {-1, 0, 1}) check(mid_b + (uint32_t)d);
            if ((h & 0x7c00) != 0x7c00) {
                float lo = f16_to_f32((uint16_t)h), hi = f16_to_f32((uint16_t)(h + 1));
                if ((h & 0x7fff) != 0x7bff && lo == lo && hi == hi) {
                    uint32_t mid = f32_bits((lo + hi) * 0.5f);
                    for (int32_t d : {-1, 0, 1}) check(mid + (uint32_t)d);
                }
            }
        }
        for (uint64_t u = 0; u < (1ull << 32); u += 4099) check((uint32_t)u);
        for (int i = 0; i < 1000000; i++) check(rnd() ^ (rnd() << 16));
    }
    CHECK(bad == 0, "f32 -> 16 bit: %zu of %zu mismatch", bad, checked);
    /* Spot values: overflow, subnormals, signed zero, NaN. */
    CHECK(jkc_f32_to_f16(65519.0f) == 0x7bff && jkc_f32_to_f16(65520.0f) == 0x7c00 &&
              jkc_f32_to_f16(-1e9f) == 0xfc00 && jkc_f32_to_f16(0x1p-24f) == 0x0001 &&
              jkc_f32_to_f16(0x1p-25f) == 0x0000 && jkc_f32_to_f16(-0.0f) == 0x8000 &&
              jkc_f32_to_f16(-NAN) == 0x7fff && jkc_f32_to_bf16(-NAN) == 0x7fff &&
              jkc_f32_to_bf16(INFINITY) == 0x7f80 && jkc_f32_to_bf16(3.4e38f) == 0x7f80,
          "spot values");
}

static void test_launch_errors() {
    printf("launch configuration: >1024 threads, zero grid/block, bad dims refused like CUDA; "
           "cudaGetLastError clears, cudaPeekAtLastError does not; args converted once\n");
    int *flag = dev_alloc<int>(1);
    auto expect = [&](dim3 g, dim3 b, size_t smem, cudaError_t want, const char *what) {
        cudaMemsetAsync(flag, 0, 4, 0);
        JKC_LAUNCH(k_flag, g, b, smem, 0, flag);
        cudaError_t peek = cudaPeekAtLastError();
        cudaError_t e = cudaGetLastError();
        int ran = -1;
        cudaMemcpy(&ran, flag, 4, cudaMemcpyDeviceToHost);
        CHECK(e == want && peek == want, "%s: got %s, want %s", what, cudaGetErrorName(e),
              cudaGetErrorName(want));
        CHECK(cudaGetLastError() == cudaSuccess, "%s: error not cleared", what);
        CHECK(ran == (want == cudaSuccess), "%s: kernel %s", what, ran ? "ran" : "did not run");
    };
    expect(dim3(1), dim3(1024), 0, cudaSuccess, "1024 threads");
    expect(dim3(1), dim3(1025), 0, cudaErrorInvalidConfiguration, "1025 threads");
    expect(dim3(1), dim3(64, 32), 0, cudaErrorInvalidConfiguration, "64x32 threads");
    expect(dim3(1), dim3(1, 1, 65), 0, cudaErrorInvalidConfiguration, "blockDim.z 65");
    expect(dim3(0), dim3(32), 0, cudaErrorInvalidConfiguration, "zero grid");
    expect(dim3(2, 0), dim3(32), 0, cudaErrorInvalidConfiguration, "zero grid.y");
    expect(dim3(1), dim3(0), 0, cudaErrorInvalidConfiguration, "zero block");
    expect(dim3(1, 65536), dim3(32), 0, cudaErrorInvalidConfiguration, "grid.y 65536");
    expect(dim3(1), dim3(32), 48 * 1024, cudaSuccess, "48 KiB dynamic smem");
    expect(dim3(1), dim3(32), 48 * 1024 + 1, cudaErrorInvalidValue, "48 KiB + 1 dynamic smem");

    int *out = dev_alloc<int>(3);
    int counter = 7;
    JKC_LAUNCH(k_args, 2, 64, 0, 0, out, counter++, 2.75, (unsigned)9);
    int h[3];
    cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    CHECK(counter == 8 && h[0] == 7 && h[1] == 2 && h[2] == 9,
          "arguments: counter %d, got %d %d %d", counter, h[0], h[1], h[2]);
    cudaFree(out);
    cudaFree(flag);
}

static void test_runtime() {
    printf("runtime: device properties, copies checked against cudaMalloc blocks (3 'emu:' "
           "lines on stderr are expected), streams, events, JEPA_EMU_NO_DEVICE\n");
    int count = -1, dev = -1;
    CHECK(cudaGetDeviceCount(&count) == cudaSuccess && count == 1, "device count %d", count);
    CHECK(cudaSetDevice(0) == cudaSuccess && cudaGetDevice(&dev) == cudaSuccess && dev == 0,
          "set/get device");
    CHECK(cudaSetDevice(1) == cudaErrorInvalidDevice, "cudaSetDevice(1) accepted");
    cudaGetLastError();
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0) == cudaSuccess && p.major == 9 && p.minor == 0 &&
              p.multiProcessorCount == 132 && p.sharedMemPerBlockOptin == 227 * 1024 &&
              strcmp(p.name, "jepa.c SIMT emulator") == 0 && p.totalGlobalMem > 0,
          "device properties");

    void *huge = nullptr;
    CHECK(cudaMalloc(&huge, (size_t)1 << 60) == cudaErrorMemoryAllocation && !huge,
          "cudaMalloc(2^60) did not fail with cudaErrorMemoryAllocation");
    CHECK(cudaGetLastError() == cudaErrorMemoryAllocation, "allocation error not recorded");
    float *d = dev_alloc<float>(16), host[16] = {0};
    CHECK(cudaMemcpy(host, host + 1, 8, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
          "host pointer accepted as a copy destination");
    CHECK(cudaGetLastError() == cudaErrorInvalidValue, "copy error not recorded");
    CHECK(cudaMemcpy(d + 8, host, 9 * 4, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
          "copy past the end of a block accepted");
    CHECK(cudaMemcpy(d + 8, host, 8 * 4, cudaMemcpyHostToDevice) == cudaSuccess,
          "copy to the tail of a block refused");
    CHECK(cudaMemcpy(d, d + 8, 8 * 4, cudaMemcpyDeviceToDevice) == cudaSuccess, "D2D refused");
    CHECK(cudaFree(host) == cudaErrorInvalidValue, "cudaFree of a host pointer accepted");
    cudaGetLastError();

    cudaStream_t s = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    float ms = -1;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
    CHECK(cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess, "events");
    cudaEventRecord(e0, s);
    CHECK(cudaMemsetAsync(d, 0, 64, s) == cudaSuccess, "memset");
    JKC_LAUNCH(k_bar_loop, 2, 64, 0, s, 10);
    cudaEventRecord(e1, s);
    CHECK(cudaStreamSynchronize(s) == cudaSuccess && cudaEventSynchronize(e1) == cudaSuccess &&
              cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess && ms >= 0,
          "event timing %g ms", ms);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(s);
    cudaFree(d);

    setenv("JEPA_EMU_NO_DEVICE", "1", 1);
    count = -1;
    cudaError_t e = cudaGetDeviceCount(&count);
    CHECK(e == cudaErrorNoDevice && count == 0, "JEPA_EMU_NO_DEVICE: %s, count %d",
          cudaGetErrorName(e), count);
    void *m = nullptr;
    CHECK(cudaSetDevice(0) == cudaErrorNoDevice && cudaMalloc(&m, 16) == cudaErrorNoDevice,
          "JEPA_EMU_NO_DEVICE: calls succeed");
    unsetenv("JEPA_EMU_NO_DEVICE");
    cudaGetLastError();
    CHECK(cudaGetDeviceCount(&count) == cudaSuccess && count == 1, "device not back");
}

static void test_threads() {
    printf("host threads: 4 threads launching concurrently (serialized, own fibers)\n");
    std::vector<std::thread> th;
    int fails[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++)
        th.emplace_back([i, &fails] {
            for (int rep = 0; rep < 20; rep++) {
                unsigned n = 64u << (i % 3);
                int *d = nullptr;
                cudaMalloc(&d, 2 * n * 4);
                JKC_LAUNCH(k_ring, 2, n, 0, 0, d);
                std::vector<int> h(2 * n);
                cudaMemcpy(h.data(), d, h.size() * 4, cudaMemcpyDeviceToHost);
                for (unsigned blk = 0; blk < 2; blk++)
                    for (unsigned t = 0; t < n; t++)
                        fails[i] += h[blk * n + t] != (int)(((t + 2) % n) * 3 + blk + 1);
                cudaFree(d);
            }
        });
    for (auto &t : th) t.join();
    CHECK(fails[0] + fails[1] + fails[2] + fails[3] == 0, "wrong results from threads");
}

/* Run fn in a child; it must die (abort, or an ASan report) with `want` on stderr. */
template <class F> static void expect_abort(const char *what, const char *want, F fn) {
    int fd[2];
    if (pipe(fd) != 0) {
        CHECK(false, "pipe");
        return;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        fn();
        fprintf(stderr, "(returned)\n");
        _exit(0);
    }
    close(fd[1]);
    std::string err;
    char buf[4096];
    ssize_t r;
    while ((r = read(fd[0], buf, sizeof buf)) > 0) err.append(buf, (size_t)r);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    /* abort() from the emulator; ASan reports end the process with exit code 1 */
    bool aborted = (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) ||
                   (WIFEXITED(status) && WEXITSTATUS(status) != 0);
    CHECK(aborted && err.find(want) != std::string::npos, "%s: %s, stderr: %s", what,
          aborted ? "aborted" : "did not abort", err.c_str());
}

/* A K-major operand of `rows` x 32 16-bit values into the image, in L's mode: 16-byte
 * chunk j of a row holds k 8 j .. 8 j + 7. Written the way the PTX ISA draws the layouts
 * (core matrices of 8 rows x 16 bytes; a swizzled row of W bytes stores chunk j at
 * j ^ (row / (128 / W)) % (W / 16) of its 8-row pattern), independently of the emulator's
 * address formula. */
static void wg_place(std::vector<uint16_t> &img, const WgLayout &L, const unsigned off[2],
                     const std::vector<uint16_t> &m, int rows) {
    const unsigned W = L.swz == JKC_WGMMA_SWZ_128B ? 128 : L.swz == JKC_WGMMA_SWZ_64B ? 64
                     : L.swz == JKC_WGMMA_SWZ_32B ? 32 : 0;
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < 32; k++) {
            const unsigned s = (unsigned)k / 16, j = (unsigned)(k % 16) / 8, e = (unsigned)k % 8;
            unsigned byte;
            if (!W) {
                byte = off[s] + (unsigned)(r / 8) * L.sbo + (unsigned)(r % 8) * 16 + j * L.lbo +
                       2 * e;
            } else {
                /* this k-step's chunk within the row: the start's offset in the row + j */
                const unsigned chunk = (off[s] % W) / 16 + j, rr = (unsigned)r % 8;
                const unsigned sw = chunk ^ ((rr / (128 / W)) % (W / 16));
                byte = off[s] - off[s] % W + (unsigned)(r / 8) * L.sbo + rr * W + 16 * sw + 2 * e;
            }
            img[byte / 2] = m[(size_t)r * 32 + (size_t)k];
        }
}

/* Runs k_wgmma<BF16, N> in mode swz; the largest |error| against a naive matmul of
 * small integers (exact), or NaN / nonzero for a broken use. */
template <bool BF16, int N> static double wgmma_error(int swz, int bug) {
    WgLayout L{};
    L.swz = swz;
    const unsigned W = swz == JKC_WGMMA_SWZ_128B ? 128 : swz == JKC_WGMMA_SWZ_64B ? 64
                     : swz == JKC_WGMMA_SWZ_32B ? 32 : 0;
    const unsigned a_bytes = 64 * 64, b_bytes = (unsigned)N * 64; /* 32 values a row */
    if (!W) {
        /* one k-step: chunk 0 of every 8-row group (SBO 128 apart), then chunk 1, LBO
         * further; one LBO serves A and B when both have 64 rows */
        if (N != 64) return -1;
        L.sbo = 128, L.lbo = 1024;
        L.a_off[0] = 0, L.a_off[1] = a_bytes / 2;
        L.b_off[0] = a_bytes, L.b_off[1] = a_bytes + b_bytes / 2;
    } else if (W == 32) {
        /* a row holds one k-step: the two k-steps are two blocks of rows */
        L.sbo = 256;
        L.a_off[0] = 0, L.a_off[1] = a_bytes / 2;
        L.b_off[0] = a_bytes, L.b_off[1] = a_bytes + b_bytes / 2;
    } else {
        /* a row holds both k-steps (32 bytes apart): rows of W bytes, 8-row patterns */
        L.sbo = 8 * W;
        L.a_off[0] = 0, L.a_off[1] = 32;
        L.b_off[0] = (64 / 8 * L.sbo + 1023) / 1024 * 1024, L.b_off[1] = L.b_off[0] + 32;
    }
    L.bytes = 2 * (a_bytes + b_bytes) + 2048;
    std::vector<uint16_t> A((size_t)64 * 32), B((size_t)N * 32), img(L.bytes / 2, 0xffff);
    auto h = [](float v) { return BF16 ? f32_to_bf16(v) : f32_to_f16(v); };
    auto f = [](uint16_t v) { return BF16 ? bf16_to_f32(v) : f16_to_f32(v); };
    for (auto &v : A) v = h((float)((int)(rnd() % 9) - 4));
    for (auto &v : B) v = h((float)((int)(rnd() % 9) - 4));
    wg_place(img, L, L.a_off, A, 64);
    wg_place(img, L, L.b_off, B, N);
    uint32_t *dimg = dev_alloc<uint32_t>(L.bytes / 4);
    float *dout = dev_alloc<float>((size_t)64 * N);
    cudaMemcpy(dimg, img.data(), L.bytes, cudaMemcpyHostToDevice);
    JKC_LAUNCH((k_wgmma<BF16, N>), 1, 128, L.bytes, 0, dout, dimg, L, bug);
    CHECK(cudaGetLastError() == cudaSuccess, "k_wgmma: launch failed");
    std::vector<float> out((size_t)64 * N);
    cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (int t = 0; t < 128; t++)
        for (int i = 0; i < N / 2; i++) {
            const int w = t / 32, l = t % 32;
            const int row = 16 * w + l / 4 + 8 * ((i >> 1) & 1);
            const int col = 8 * (i >> 2) + 2 * (l % 4) + (i & 1);
            double want = 0;
            for (int k = 0; k < 32; k++)
                want += (double)f(A[(size_t)row * 32 + k]) * f(B[(size_t)col * 32 + k]);
            const double e = fabs((double)out[(size_t)t * (N / 2) + i] - want);
            worst = e > worst || e != e ? e : worst;
        }
    cudaFree(dimg);
    cudaFree(dout);
    return worst;
}

static void test_wgmma() {
    printf("wgmma m64nNk16 (f16, bf16; N 64, 128, 16): A and B through descriptors in every "
           "swizzle mode against a naive matmul on the PTX layouts; group retirement and "
           "chaining; reading too early and a wrong swizzle come out wrong\n");
    const int modes[4] = {JKC_WGMMA_SWZ_NONE, JKC_WGMMA_SWZ_32B, JKC_WGMMA_SWZ_64B,
                          JKC_WGMMA_SWZ_128B};
    const char *names[4] = {"none", "32B", "64B", "128B"};
    for (int m = 0; m < 4; m++) {
        double e = wgmma_error<false, 64>(modes[m], 0);
        CHECK(e == 0, "f16 N=64 swizzle %s: max error %g", names[m], e);
        e = wgmma_error<true, 64>(modes[m], 0);
        CHECK(e == 0, "bf16 N=64 swizzle %s: max error %g", names[m], e);
        if (modes[m] != JKC_WGMMA_SWZ_NONE) {
            e = wgmma_error<false, 128>(modes[m], 0);
            CHECK(e == 0, "f16 N=128 swizzle %s: max error %g", names[m], e);
            e = wgmma_error<true, 128>(modes[m], 0);
            CHECK(e == 0, "bf16 N=128 swizzle %s: max error %g", names[m], e);
        }
    }
    double e = wgmma_error<false, 128>(JKC_WGMMA_SWZ_128B, 1);
    CHECK(!(e == 0), "accumulators read before the wait: still right (error %g)", e);
    e = wgmma_error<false, 128>(JKC_WGMMA_SWZ_128B, 2);
    CHECK(!(e == 0), "128B data read as 64B swizzle: still right (error %g)", e);
    e = wgmma_error<true, 64>(JKC_WGMMA_SWZ_32B, 2);
    CHECK(!(e == 0), "32B data read as 64B swizzle: still right (error %g)", e);

    /* groups: N = 16 tiles of the 64B layout */
    WgLayout L{};
    L.swz = JKC_WGMMA_SWZ_64B;
    L.sbo = 512;
    L.a_off[0] = 0, L.a_off[1] = 32, L.b_off[0] = 4096, L.b_off[1] = 4096 + 32;
    L.bytes = 8192;
    std::vector<uint16_t> A((size_t)64 * 32), B((size_t)16 * 32), img(L.bytes / 2, 0xffff);
    for (auto &v : A) v = f32_to_f16((float)((int)(rnd() % 9) - 4));
    for (auto &v : B) v = f32_to_f16((float)((int)(rnd() % 9) - 4));
    wg_place(img, L, L.a_off, A, 64);
    wg_place(img, L, L.b_off, B, 16);
    uint32_t *dimg = dev_alloc<uint32_t>(L.bytes / 4);
    float *dout = dev_alloc<float>(3 * 128 * 4);
    cudaMemcpy(dimg, img.data(), L.bytes, cudaMemcpyHostToDevice);
    JKC_LAUNCH(k_wgmma_groups, 1, 128, L.bytes, 0, dout, dimg, L);
    CHECK(cudaGetLastError() == cudaSuccess, "k_wgmma_groups: launch failed");
    std::vector<float> out(3 * 128 * 4);
    cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost);
    size_t bad[3] = {0, 0, 0};
    for (int t = 0; t < 128; t++)
        for (int i = 0; i < 4; i++) {
            const int w = t / 32, l = t % 32;
            const int row = 16 * w + l / 4 + 8 * ((i >> 1) & 1), col = 2 * (l % 4) + (i & 1);
            float k16 = 0, k32 = 0;
            for (int k = 0; k < 32; k++) {
                const float p = f16_to_f32(A[(size_t)row * 32 + k]) *
                                f16_to_f32(B[(size_t)col * 32 + k]);
                if (k < 16) k16 += p;
                k32 += p;
            }
            bad[0] += out[(size_t)t * 4 + i] != k16;
            bad[1] += out[(size_t)(128 + t) * 4 + i] == out[(size_t)(128 + t) * 4 + i]; /* NaN */
            bad[2] += out[(size_t)(256 + t) * 4 + i] != k32;
        }
    CHECK(bad[0] == 0, "wait<1>: %zu wrong values of the retired group", bad[0]);
    CHECK(bad[1] == 0, "wait<1>: %zu values of the pending group already landed", bad[1]);
    CHECK(bad[2] == 0, "wait<0>: %zu wrong values of the chained pair", bad[2]);
    cudaFree(dimg);
    cudaFree(dout);
}

static void test_bug_detection() {
    printf("kernel bugs abort with a message: divergent __syncthreads, early return before a "
           "barrier, partial warp, divergent warp ops, misaligned or oversized cp.async, "
           "cp.async pending at return, misaligned ldmatrix, wgmma misuse (no fence, divergence, "
           "pending at return, descriptors off pattern / outside / misaligned, no proxy fence, "
           "partial warpgroup)\n");
    int *out = dev_alloc<int>(1024);
    float *fo = dev_alloc<float>(1024);
    expect_abort("divergent __syncthreads",
                 "emu: deadlock in kernel k_divergent_sync block (0,0,0)",
                 [&] { JKC_LAUNCH(k_divergent_sync, dim3(2), dim3(128), 0, 0, out); });
    expect_abort("early return", "emu: deadlock in kernel k_early_return block (0,0,0)",
                 [&] { JKC_LAUNCH(k_early_return, 1, 256, 0, 0, out, 200); });
    expect_abort("partial warp", "partial warp",
                 [&] { JKC_LAUNCH(k_partial_warp, 1, 48, 0, 0, fo); });
    expect_abort("divergent warp ops", "divergent warp ops",
                 [&] { JKC_LAUNCH(k_divergent_warp, 1, 64, 0, 0, fo); });
    float *src = dev_alloc<float>(64);
    expect_abort("cp.async misaligned shared address", "addresses must be 16-byte aligned",
                 [&] { JKC_LAUNCH(k_cp_misaligned, 1, 32, 0, 0, src); });
    expect_abort("cp.async misaligned global address", "addresses must be 8-byte aligned",
                 [&] { JKC_LAUNCH(k_cp_misaligned_src, 1, 32, 0, 0, src); });
    expect_abort("cp.async src_bytes 17", "src_bytes 17 is outside 0..16",
                 [&] { JKC_LAUNCH(k_cp_bad_size, 1, 32, 0, 0, src, 17); });
    expect_abort("cp.async src_bytes -1", "src_bytes -1 is outside 0..16",
                 [&] { JKC_LAUNCH(k_cp_bad_size, 1, 32, 0, 0, src, -1); });
    expect_abort("cp.async pending at return",
                 "kernel k_cp_pending block (0,0,0) thread (5,0,0): returned with 1 cp.async",
                 [&] { JKC_LAUNCH(k_cp_pending, 1, 32, 0, 0, src); });
    expect_abort("ldmatrix misaligned row", "jkc_ldmatrix_x4: lane 20's row address",
                 [&] { JKC_LAUNCH(k_ldsm_misaligned, 1, 32, 0, 0); });
    const struct {
        const char *what, *want;
        unsigned threads;
    } wg_bugs[] = {
        {"wgmma without a fence", "no jkc_wgmma_fence since the last wait", 128},
        {"wgmma divergent warpgroup", "divergent warpgroup ops", 128},
        {"wgmma pending at return", "returned with 1 wgmma ops pending", 256},
        {"wgmma swizzled start off its pattern",
         "descriptor A: start 0x80 is not aligned to its 128-byte swizzle pattern", 128},
        {"wgmma operand outside shared memory",
         "descriptor B: row 0 chunk 1 at shared offset 16384 is outside the 8192 bytes", 128},
        {"wgmma misaligned descriptor", "start offset 8, LBO 0, SBO 1024 must be", 128},
        {"wgmma on cp.async data without the proxy fence",
         "has cp.async data retired since its last jkc_fence_proxy_async", 128},
        {"wgmma in a block of 96 threads", "kernel k_wgmma_bug: jkc_wgmma_fence with blockDim "
         "(96,1,1) = 96 threads, not whole warpgroups", 96},
    };
    for (int i = 0; i < (int)(sizeof wg_bugs / sizeof wg_bugs[0]); i++)
        expect_abort(wg_bugs[i].what, wg_bugs[i].want, [&] {
            JKC_LAUNCH(k_wgmma_bug, 1, wg_bugs[i].threads, 8192, 0, src, i);
        });
    cudaFree(src);
#if defined(__SANITIZE_ADDRESS__)
    printf("ASan: an out-of-bounds store in a kernel is reported\n");
    expect_abort("out of bounds", "heap-buffer-overflow",
                 [&] {
                     float *small = dev_alloc<float>(32);
                     JKC_LAUNCH(k_oob, 1, 64, 0, 0, small, 1);
                 });
#endif
    cudaFree(out);
    cudaFree(fo);
}

static void test_speed() {
    printf("speed:\n");
    const int iters = 2000;
    auto t0 = std::chrono::steady_clock::now();
    JKC_LAUNCH(k_bar_loop, 1, 256, 0, 0, iters);
    auto t1 = std::chrono::steady_clock::now();
    double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / iters;
    printf("  __syncthreads over 256 threads: %.2f us (%.1f ns per thread)\n", us, us * 1e3 / 256);
    float *o = dev_alloc<float>(1);
    t0 = std::chrono::steady_clock::now();
    JKC_LAUNCH(k_shfl_loop, 1, 256, 0, 0, iters, o);
    t1 = std::chrono::steady_clock::now();
    us = std::chrono::duration<double, std::micro>(t1 - t0).count() / iters;
    printf("  __shfl_xor_sync over 256 threads: %.2f us (%.1f ns per thread)\n", us,
           us * 1e3 / 256);
    t0 = std::chrono::steady_clock::now();
    JKC_LAUNCH(k_mma_loop, 1, 256, 0, 0, iters, o);
    t1 = std::chrono::steady_clock::now();
    us = std::chrono::duration<double, std::micro>(t1 - t0).count() / iters / 8;
    printf("  jkc_mma_f16: %.2f us per warp-wide mma (8 warps)\n", us);
    int *f = dev_alloc<int>(1);
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; i++) JKC_LAUNCH(k_flag, 64, 128, 0, 0, f);
    t1 = std::chrono::steady_clock::now();
    us = std::chrono::duration<double, std::micro>(t1 - t0).count() / 200;
    printf("  empty launch of 64 blocks x 128 threads: %.1f us\n", us);
    cudaFree(o);
    cudaFree(f);
}

int main() {
    const char *seed = getenv("JEPA_SEED");
    uint64_t s = seed ? strtoull(seed, nullptr, 0) : (uint64_t)time(nullptr);
    printf("test_emu: JEPA_SEED=%llu\n", (unsigned long long)s);
    g_rng = s * 0x9e3779b97f4a7c15ull | 1;
    unsetenv("JEPA_EMU_NO_DEVICE");

    test_coords();
    test_barrier();
    test_shuffles();
    test_dyn_smem();
    test_mma();
    test_cp_async();
    test_ldmatrix();
    test_pipeline();
    test_wgmma();
    test_conversions();
    test_launch_errors();
    test_runtime();
    test_threads();
    test_bug_detection();
    test_speed();

    if (check_failed) {
        printf("test_emu: %d FAILED\n", check_failed);
        return 1;
    }
    printf("test_emu: all passed\n");
    return 0;
}
