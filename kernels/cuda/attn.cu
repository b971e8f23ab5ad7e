/*
 * attn.cu — fused attention for the CUDA table (kernels.h, struct jk_attn_args):
 *
 *   for each head h and query i:  o_i = sum_j softmax_j(scale q_i . k_j) v_j
 *
 * over the keys j visible to i (q_pos[i] >= k_pos[j] when both arrays are given), a zero
 * row when none is. Two kernels (and attn_stage, the f16 staging of K and V):
 *
 *  attn_mma<HD, W, STAGED>  flash attention on the tensor cores, HD = 32, 64, 80, 96,
 *                 128. A block is W warps x 16 query rows of one head: W = 8 (128
 *                 queries) when that grid gives every SM a block, else 4 (64). Q,
 *                 multiplied by scale * log2(e), lives in registers as f16 A fragments;
 *                 the keys are walked in tiles of 64, in shared memory as f16 (K
 *                 row-major, V transposed, both laid out so that each mma B fragment is
 *                 one 64-bit load). The block converts each tile from f32 as it stages
 *                 it, or (STAGED) copies it from the workspace, where attn_stage wrote
 *                 every tile of every head once for the call (used when a head has
 *                 enough query blocks to pay for that pass). Per tile and warp: S = Q K^T
 *                 (16 x 64, mma.m16n8k16, f32 accumulate: base-2 logits), mask, online
 *                 softmax with f32 row statistics and exp2f, P rounded to f16 straight
 *                 from the S accumulators (their layout is the A fragment layout of P V),
 *                 O += P V in f32 registers, normalised once at the end. Key tiles that
 *                 no query of the block may see are skipped (block-causal: later
 *                 frames), tiles that every query sees entirely skip the per-element mask.
 *  attn_f32<NPL>  f32 everywhere, any head_dim <= 32 NPL (up to 512, the reference's
 *                 limit): one block per (query, head), each warp an online softmax over
 *                 its share of the keys (lanes across head_dim, warp-shuffle dot
 *                 products, several keys in flight), merged across warps at the end.
 *                 Taken for nq < 16 (the attentive pooler: 1 query over every token; a
 *                 64-query tile would be mostly empty and give only n_head blocks) and
 *                 for head sizes the mma kernel is not instantiated for.
 *  attn_pipe<HD>  the pipelined variant, only when jkc_kernels_pipe() (JEPA_CUDA_KERNELS=
 *                 pipe; it has never run on a GPU): attn_stage16 writes K and V as plain
 *                 f16 rows into the workspace, cp.async brings each key tile into the
 *                 second of two shared-memory buffers while the first is multiplied,
 *                 ldmatrix builds the fragments, a warp holds two 16-row query tiles
 *                 (one above head_dim 64). Same arithmetic, mask and row rules as
 *                 attn_mma. Without the workspace, or where attn_mma would not run, the
 *                 default kernels run.
 * jk_attn_args.o16, when set, receives the output rounded to f16 / bf16: attn_pipe writes
 * it with the f32 output, after the default kernels attn_round16 rounds what they stored.
 *
 * Range assumption of the mma path: q scale log2(e), k and v are rounded to f16, so
 * each must stay below 65504 in magnitude (larger values become inf and the row NaN);
 * values below 2^-14 lose relative precision (absolute error <= 2^-25) but not range.
 * f16 is chosen over bf16 for its 11-bit significand: q.k loses 2^-11 relative per
 * operand instead of 2^-8. Post-LayerNorm projections are O(1..100), far inside.
 * Error of the mma path against the exact result, for row i (E = scale sum_d |q_d k_d|
 * over the visible keys, V = max |v| over them): |o - o_ref| <~ V (2^-9 E + 2^-10), see
 * tests/cuda/test_cuda_attn.c for the full bound.
 */
#include <atomic>
#include <math.h>

#include "kernels/cuda/internal.cuh"

namespace {

struct bfrag;

/* Everything a kernel needs, passed by value. scale2 = scale * log2(e): the softmax is
 * computed in base 2 (exp2f) on scores already multiplied by it. */
struct attn_params {
    float *o;
    const float *q, *k, *v;
    size_t ldo, ldq, ldk, ldv;
    const int32_t *qpos, *kpos;   /* both non-NULL, or both NULL (no mask) */
    int nq, nkv, hd;
    float scale2;
    const struct bfrag *img;   /* K and V staged as f16 tiles (attn_stage), or NULL */
};

__host__ __device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__host__ __device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }

/* Two f32 -> one register of two f16 (lo = the lower index). */
__device__ __forceinline__ uint32_t pack_f16(float lo, float hi) {
    return jkc_pack2(jkc_f32_to_f16(lo), jkc_f32_to_f16(hi));
}

/* ---- tensor-core flash kernel ------------------------------------------------------ */

/* The two registers of an mma B fragment side by side, so that one 64-bit shared load
 * fetches both. A row of K (or of V^T) is stored in groups of 8 such slots per 16
 * elements along the mma k dimension: the f16 pair 4h + t of a group (t = 0..3, h = 0,1)
 * goes to slot t, half h, which is where lane t wants b[h]. */
struct alignas(8) bfrag {
    uint32_t r0, r1;
};
struct alignas(16) U32x4 {   /* two bfrag slots: one 16-byte copy */
    uint32_t v[4];
};
__device__ __forceinline__ void bfrag_put(bfrag *row, int pair, uint32_t w) {
    bfrag &d = row[pair / 8 * 4 + pair % 4];
    *(pair % 8 < 4 ? &d.r0 : &d.r1) = w;   /* a select of the address, one store */
}

constexpr int MMA_BK = 64;   /* keys per tile */

/* min and max over the 32 lanes of a warp (every lane ends with both). */
__device__ __forceinline__ void warp_minmax(int &lo, int &hi) {
    JKC_UNROLL
    for (int off = 16; off > 0; off /= 2) {
        lo = imin(lo, __shfl_xor_sync(0xffffffffu, lo, off));
        hi = imax(hi, __shfl_xor_sync(0xffffffffu, hi, off));
    }
}

/* [lo, hi] widened by pos[first .. first + N - 1] (those below end), in every lane of the
 * warp: the position range of a block's queries or of a key tile. */
template <int N>
__device__ __forceinline__ void pos_range(const int32_t *pos, int first, int end, int32_t &lo,
                                          int32_t &hi) {
    const int lane = (int)threadIdx.x % 32;
    JKC_UNROLL
    for (int x = 0; x < N; x += 32)
        if (first + x + lane < end) {
            const int32_t v = pos[first + x + lane];
            lo = imin(lo, v), hi = imax(hi, v);
        }
    warp_minmax(lo, hi);
}

/* Bytes of one staged tile: 64 keys of K as rows of HD/4 bfrag slots, then V^T as HD
 * rows of 64/4 slots (the shared-memory layout of attn_mma without its row padding). */
template <int HD>
__host__ __device__ constexpr int tile_slots() { return MMA_BK * HD / 4 + HD * MMA_BK / 4; }

/* The 64-key tile at k0 of one head (kh, vh: that head's columns of K and V) as f16:
 * K into rows of ks (ks_stride slots apart), V^T into rows of vt (vt_stride apart), by
 * NTHR threads (this one is tid). K goes as f16 pairs along the head dim; V transposed,
 * as f16 pairs of consecutive keys at one dim (a warp covers 8 dims x 4 key pairs:
 * 32-byte global segments, at the price of 2-way bank conflicts on shared stores; the
 * fragment loads, 4x as many, have none). Keys past nkv are zero, never garbage: their
 * weight is 0, but 0 * NaN is NaN. Each thread moves its share of pairs in batches of
 * NB whose loads are all issued before any store; which pair a thread moves depends on
 * idx alone, whatever NTHR. */
template <int HD, int NTHR>
__device__ __forceinline__ void stage_tile(bfrag *ks, int ks_stride, bfrag *vt, int vt_stride,
                                           const float *kh, size_t ldk, const float *vh,
                                           size_t ldv, int k0, int nkv, int tid) {
    constexpr int PAIRS = MMA_BK * HD / 2, PER_THREAD = PAIRS / NTHR;
    constexpr int NB = PER_THREAD % 4 == 0 ? 4 : 2;
    static_assert(PER_THREAD * NTHR == PAIRS && PER_THREAD % NB == 0,
                  "the tile's pairs divide evenly among the threads");
    for (int it0 = 0; it0 < PER_THREAD; it0 += NB) {
        float kx[NB][2], vx[NB][2];
        JKC_UNROLL
        for (int b = 0; b < NB; b++) {
            const int idx = (it0 + b) * NTHR + tid;   /* < PAIRS = 32 HD */
            const int key = k0 + idx / (HD / 2), pr = idx % (HD / 2);
            kx[b][0] = kx[b][1] = 0.0f;
            if (key < nkv) {
                const float *s = kh + (size_t)key * ldk + 2 * pr;
                kx[b][0] = s[0], kx[b][1] = s[1];
            }
            const int sub = idx % 32, blk = idx / 32;
            const int e = blk % (HD / 8) * 8 + sub % 8;
            const int j = k0 + 2 * (blk / (HD / 8) * 4 + sub / 8);
            vx[b][0] = j < nkv ? vh[(size_t)j * ldv + e] : 0.0f;
            vx[b][1] = j + 1 < nkv ? vh[(size_t)(j + 1) * ldv + e] : 0.0f;
        }
        JKC_UNROLL
        for (int b = 0; b < NB; b++) {
            const int idx = (it0 + b) * NTHR + tid;
            bfrag_put(ks + idx / (HD / 2) * ks_stride, idx % (HD / 2), pack_f16(kx[b][0], kx[b][1]));
            const int sub = idx % 32, blk = idx / 32;
            const int e = blk % (HD / 8) * 8 + sub % 8;
            bfrag_put(vt + e * vt_stride, blk / (HD / 8) * 4 + sub / 8, pack_f16(vx[b][0], vx[b][1]));
        }
    }
}

/* Every tile of every head staged once per call into p.img (grid: tiles x heads, 128
 * threads), so that the query blocks of attn_mma<HD, W, true> copy f16 tiles instead
 * of each converting them again. */
constexpr int STAGE_THREADS = 128;

template <int HD>
__global__ void JKC_LAUNCH_BOUNDS(STAGE_THREADS) attn_stage(const attn_params p, bfrag *img) {
    const int k0 = (int)blockIdx.x * MMA_BK;
    const size_t hoff = (size_t)blockIdx.y * HD;
    bfrag *ks = img + ((size_t)blockIdx.y * gridDim.x + blockIdx.x) * tile_slots<HD>();
    stage_tile<HD, STAGE_THREADS>(ks, HD / 4, ks + MMA_BK * HD / 4, MMA_BK / 4, p.k + hoff, p.ldk,
                                  p.v + hoff, p.ldv, k0, p.nkv, (int)threadIdx.x);
}

/* The online-softmax step of one 16-row query tile over a 64-key tile, in the mma D
 * layout (element x of n-tile n: row x < 2 ? g : g + 8, key 8n + 2t + (x & 1)): with
 * need_mask, keys at or past kleft (= nkv - k0) and, when masked, keys whose position
 * kps[key] is above the row's (qp0, qp1) become -inf; the running max (m0, m1), the
 * thread's part of the running sums (l0, l1) and O (acc) are rescaled, and P =
 * exp2(S - max) goes to pa as f16 A fragments of P V (key chunk c = n-tiles 2c, 2c + 1:
 * a[0..3] = {2c rows g, 2c rows g+8, 2c+1 g, 2c+1 g+8}). attn_pipe's; attn_mma keeps
 * the same steps inline (and pos_range's loops): calling these from it changed its register
 * allocation enough to spill (attn_mma<64, 8, true>), which the build refuses. */
template <int NO>
__device__ __forceinline__ void softmax_tile(float (&s)[8][4], float &m0, float &m1, float &l0,
                                             float &l1, float (&acc)[NO][4], uint32_t (&pa)[4][4],
                                             bool need_mask, bool masked, int kleft, int32_t qp0,
                                             int32_t qp1, const int32_t *kps, int t) {
    if (need_mask) {
        JKC_UNROLL
        for (int n = 0; n < 8; n++)
            JKC_UNROLL
            for (int x = 0; x < 4; x++) {
                const int col = 8 * n + 2 * t + (x & 1);
                bool vis = col < kleft;
                if (masked) vis = vis && (x < 2 ? qp0 : qp1) >= kps[col];
                if (!vis) s[n][x] = -INFINITY;
            }
    }
    /* new row max over the quad (the 4 lanes of a row) */
    float mx0 = m0, mx1 = m1;
    JKC_UNROLL
    for (int n = 0; n < 8; n++) {
        mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
        mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    /* A row that has seen no key yet keeps max -inf; subtract 0 instead so that
     * exp2(-inf - max) is 0, not NaN. alpha rescales what was accumulated. */
    const float mu0 = mx0 == -INFINITY ? 0.0f : mx0;
    const float mu1 = mx1 == -INFINITY ? 0.0f : mx1;
    const float al0 = exp2f(m0 - mu0), al1 = exp2f(m1 - mu1);
    m0 = mx0, m1 = mx1;
    l0 *= al0, l1 *= al1;
    JKC_UNROLL
    for (int n = 0; n < NO; n++) {
        acc[n][0] *= al0, acc[n][1] *= al0;
        acc[n][2] *= al1, acc[n][3] *= al1;
    }
    JKC_UNROLL
    for (int n = 0; n < 8; n++) {
        const float e0 = exp2f(s[n][0] - mu0), e1 = exp2f(s[n][1] - mu0);
        const float e2 = exp2f(s[n][2] - mu1), e3 = exp2f(s[n][3] - mu1);
        l0 += e0 + e1, l1 += e2 + e3;
        pa[n / 2][(n % 2) * 2] = pack_f16(e0, e1);
        pa[n / 2][(n % 2) * 2 + 1] = pack_f16(e2, e3);
    }
}

/* W warps of 16 query rows: 4 (64 queries a block) or 8 (128; each key tile then serves
 * twice the queries, chosen when the grid still fills the GPU). STAGED: the tiles come
 * from p.img (attn_stage), 16-byte copies; else each block converts them itself. */
template <int HD, int W, bool STAGED>
__global__ void JKC_LAUNCH_BOUNDS(32 * W) attn_mma(const attn_params p) {
    static_assert(HD % 16 == 0 && HD <= 128, "head_dim: a multiple of 16 up to 128");
    static_assert(W == 4 || W == 8, "4 or 8 warps a block");
    constexpr int MMA_THREADS = 32 * W;
    constexpr int MMA_BQ = 16 * W;    /* queries per block */
    constexpr int NC = HD / 16;       /* k-steps of Q K^T, 16 dims each */
    constexpr int NO = HD / 8;        /* n-tiles of O, 8 dims each */
    /* Row strides in bfrag slots (8 bytes), both 4 mod 8: a half-warp's fragment loads
     * read slot row * stride + 4c + t of rows g = 0..3 (or 4..7), t = 0..3, which then
     * cover 32 distinct banks. */
    constexpr int KS = HD / 4 + (HD / 4 % 8 == 0 ? 4 : 0);   /* ks[key][dims]  */
    constexpr int VS = MMA_BK / 4 + 4;                        /* vt[dim][keys] (V^T) */
    /* rows 16-byte aligned (KS and VS are even) for the staged tiles' 16-byte copies */
    alignas(16) __shared__ bfrag ks[MMA_BK * KS];
    alignas(16) __shared__ bfrag vt[HD * VS];
    __shared__ int32_t kps[MMA_BK];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;          /* mma fragment coordinates */
    const int q0 = blockIdx.x * MMA_BQ;            /* first query of the block */
    const int r0 = q0 + warp * 16 + g, r1 = r0 + 8; /* the two rows this thread holds */
    const bool active = q0 + warp * 16 < p.nq;     /* the warp has a row to compute */
    const bool masked = p.qpos != nullptr;
    const size_t hoff = (size_t)blockIdx.y * HD;
    const float *qh = p.q + hoff, *kh = p.k + hoff, *vh = p.v + hoff;

    /* Q scale log2(e) as A fragments, f16 (the scores come out of the mma in base-2
     * units, ready for exp2f), rows past nq zero. */
    uint32_t qa[NC][4];
    JKC_UNROLL
    for (int c = 0; c < NC; c++) {
        JKC_UNROLL
        for (int x = 0; x < 4; x++) {
            const int r = x & 1 ? r1 : r0, col = 16 * c + 2 * t + (x & 2 ? 8 : 0);
            qa[c][x] = 0u;
            if (r < p.nq) {
                const float *s = qh + (size_t)r * p.ldq + col;
                qa[c][x] = pack_f16(s[0] * p.scale2, s[1] * p.scale2);
            }
        }
    }

    /* Query positions: rows past nq see nothing (INT32_MIN; no real key carries it).
     * [qlo, qhi]: the positions of the block's queries, for the tile tests below. */
    int32_t qp0 = INT32_MIN, qp1 = INT32_MIN, qlo = INT32_MAX, qhi = INT32_MIN;
    if (masked) {
        if (r0 < p.nq) qp0 = p.qpos[r0];
        if (r1 < p.nq) qp1 = p.qpos[r1];
        JKC_UNROLL
        for (int x = 0; x < MMA_BQ; x += 32)
            if (q0 + x + lane < p.nq) {
                const int32_t v = p.qpos[q0 + x + lane];
                qlo = imin(qlo, v), qhi = imax(qhi, v);
            }
        warp_minmax(qlo, qhi);
    }

    float acc[NO][4];                  /* O, rows g and g + 8 */
    JKC_UNROLL
    for (int n = 0; n < NO; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY;   /* running max (base-2 scores) */
    float l0 = 0.0f, l1 = 0.0f;             /* this thread's part of the running sum */

    for (int k0 = 0; k0 < p.nkv; k0 += MMA_BK) {
        const bool ragged = k0 + MMA_BK > p.nkv;
        bool need_mask = ragged;
        if (masked) {
            /* Every warp reduces the tile's key positions itself: the same data, so the
             * same decision in every warp, and no barrier. */
            int32_t klo = INT32_MAX, khi = INT32_MIN;
            JKC_UNROLL
            for (int x = 0; x < MMA_BK; x += 32)
                if (k0 + x + lane < p.nkv) {
                    const int32_t v = p.kpos[k0 + x + lane];
                    klo = imin(klo, v), khi = imax(khi, v);
                }
            warp_minmax(klo, khi);
            if (klo > qhi) continue;         /* no query of the block sees any key here */
            need_mask = need_mask || khi > qlo;  /* some query misses some key */
            if (need_mask && tid < MMA_BK)
                kps[tid] = k0 + tid < p.nkv ? p.kpos[k0 + tid] : 0;
        }

        if constexpr (STAGED) {
            /* the tile's image (K rows of HD/4 slots, then V^T rows of 16), 16 bytes a
             * thread at a time, into the padded rows */
            const U32x4 *src = reinterpret_cast<const U32x4 *>(
                p.img + ((size_t)blockIdx.y * ((p.nkv + MMA_BK - 1) / MMA_BK) + k0 / MMA_BK) *
                            tile_slots<HD>());
            constexpr int K4 = MMA_BK * HD / 8, V4 = HD * MMA_BK / 8;   /* 16-byte pieces */
#pragma unroll 1
            for (int c = tid; c < K4; c += MMA_THREADS)
                *reinterpret_cast<U32x4 *>(ks + c / (HD / 8) * KS + 2 * (c % (HD / 8))) = src[c];
#pragma unroll 1
            for (int c = tid; c < V4; c += MMA_THREADS)
                *reinterpret_cast<U32x4 *>(vt + c / (MMA_BK / 8) * VS + 2 * (c % (MMA_BK / 8))) =
                    src[K4 + c];
        } else {
            stage_tile<HD, MMA_THREADS>(ks, KS, vt, VS, kh, p.ldk, vh, p.ldv, k0, p.nkv, tid);
        }
        __syncthreads();

        if (active) {
            /* S = Q K^T: 8 n-tiles of 8 keys; b[0] = K[key][16c + 2t ..], b[1] = +8 */
            float s[8][4];
            JKC_UNROLL
            for (int n = 0; n < 8; n++) {
                s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
                const bfrag *kr = ks + (8 * n + g) * KS + t;
                JKC_UNROLL
                for (int c = 0; c < NC; c++) {
                    const bfrag f = kr[4 * c];
                    const uint32_t b[2] = {f.r0, f.r1};
                    jkc_mma_f16(s[n], qa[c], b);
                }
            }
            /* hidden keys (mask or past nkv) -inf. Element x of n-tile n is row
             * x < 2 ? g : g + 8, key 8n + 2t + (x & 1). */
            if (need_mask) {
                JKC_UNROLL
                for (int n = 0; n < 8; n++)
                    JKC_UNROLL
                    for (int x = 0; x < 4; x++) {
                        const int col = 8 * n + 2 * t + (x & 1);
                        bool vis = k0 + col < p.nkv;
                        if (masked) vis = vis && (x < 2 ? qp0 : qp1) >= kps[col];
                        if (!vis) s[n][x] = -INFINITY;
                    }
            }

            /* online softmax: new row max over the quad (the 4 lanes of a row) */
            float mx0 = m0, mx1 = m1;
            JKC_UNROLL
            for (int n = 0; n < 8; n++) {
                mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
                mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
            }
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
            /* A row that has seen no key yet keeps max -inf; subtract 0 instead so that
             * exp2(-inf - max) is 0, not NaN. alpha rescales what was accumulated. */
            const float mu0 = mx0 == -INFINITY ? 0.0f : mx0;
            const float mu1 = mx1 == -INFINITY ? 0.0f : mx1;
            const float al0 = exp2f(m0 - mu0), al1 = exp2f(m1 - mu1);
            m0 = mx0, m1 = mx1;
            l0 *= al0, l1 *= al1;
            JKC_UNROLL
            for (int n = 0; n < NO; n++) {
                acc[n][0] *= al0, acc[n][1] *= al0;
                acc[n][2] *= al1, acc[n][3] *= al1;
            }
            /* P = exp2(S - max), f16 as the A fragments of P V: key chunk c (16 keys) is
             * n-tiles 2c and 2c + 1, a[0..3] = {2c rows g, 2c rows g+8, 2c+1 g, 2c+1 g+8} */
            uint32_t pa[4][4];
            JKC_UNROLL
            for (int n = 0; n < 8; n++) {
                const float e0 = exp2f(s[n][0] - mu0), e1 = exp2f(s[n][1] - mu0);
                const float e2 = exp2f(s[n][2] - mu1), e3 = exp2f(s[n][3] - mu1);
                l0 += e0 + e1, l1 += e2 + e3;
                pa[n / 2][(n % 2) * 2] = pack_f16(e0, e1);
                pa[n / 2][(n % 2) * 2 + 1] = pack_f16(e2, e3);
            }
            /* O += P V: b[0] = V[16c + 2t ..][8n + g] (V^T row 8n + g), b[1] = keys + 8 */
            JKC_UNROLL
            for (int c = 0; c < 4; c++)
                JKC_UNROLL
                for (int n = 0; n < NO; n++) {
                    const bfrag f = vt[(8 * n + g) * VS + 4 * c + t];
                    const uint32_t b[2] = {f.r0, f.r1};
                    jkc_mma_f16(acc[n], pa[c], b);
                }
        }
        __syncthreads();   /* the tile is consumed before the next one overwrites it */
    }

    if (!active) return;
    /* the row sums are split over the quad */
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    /* no visible key (l = 0): zero row; a NaN score or value (l NaN): NaN row, as the CPU
     * kernels give (kernels/simd/attn_tmpl.h) */
    const float inv0 = l0 > 0.0f ? 1.0f / l0 : l0;
    const float inv1 = l1 > 0.0f ? 1.0f / l1 : l1;
    float *o0 = p.o + (size_t)r0 * p.ldo + hoff + 2 * t;
    float *o1 = p.o + (size_t)r1 * p.ldo + hoff + 2 * t;
    JKC_UNROLL
    for (int n = 0; n < NO; n++) {
        if (r0 < p.nq) o0[8 * n] = acc[n][0] * inv0, o0[8 * n + 1] = acc[n][1] * inv0;
        if (r1 < p.nq) o1[8 * n] = acc[n][2] * inv1, o1[8 * n + 1] = acc[n][3] * inv1;
    }
}

/* ---- f32 fallback: one block per (query, head) --------------------------------------- */

/* Warps per block at most: up to 32 (a whole block) for head_dim <= 128, where the
 * per-warp partials of the merge fit in 16 KB of shared memory; 8 above. The pooler's
 * few blocks (nq x n_head) need the width to keep enough loads in flight. */
template <int NPL> __host__ __device__ constexpr int f32_max_warps() { return NPL <= 4 ? 32 : 8; }

/* NPL: head-dim elements per lane (head_dim <= 32 NPL); U: keys in flight per warp. */
template <int NPL>
__global__ void JKC_LAUNCH_BOUNDS(32 * f32_max_warps<NPL>()) attn_f32(const attn_params p) {
    constexpr int MAXW = f32_max_warps<NPL>();
    constexpr int U = NPL <= 2 ? 4 : NPL <= 4 ? 2 : 1;
    __shared__ float s_acc[MAXW][32 * NPL];
    __shared__ float s_m[MAXW], s_l[MAXW];

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    const int i = blockIdx.x, hd = p.hd;
    const size_t hoff = (size_t)blockIdx.y * hd;
    const float *kh = p.k + hoff, *vh = p.v + hoff;
    const bool masked = p.qpos != nullptr;
    const int32_t qp = masked ? p.qpos[i] : 0;

    /* q scaled by scale * log2(e) once (one f32 rounding per element) */
    float q[NPL], acc[NPL];
    JKC_UNROLL
    for (int e = 0; e < NPL; e++) {
        const int d = lane + 32 * e;
        q[e] = d < hd ? p.q[(size_t)i * p.ldq + hoff + d] * p.scale2 : 0.0f;
        acc[e] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;   /* identical in every lane of the warp */

    /* warp w takes keys [(w + nw c) U, + U) for c = 0, 1, ...: the warps stream through
     * K and V side by side */
    for (int j0 = warp * U; j0 < p.nkv; j0 += nw * U) {
        bool vis[U], any = false;
        JKC_UNROLL
        for (int u = 0; u < U; u++) {
            const int j = j0 + u;
            vis[u] = j < p.nkv && (!masked || qp >= p.kpos[j]);
            any = any || vis[u];
        }
        if (!any) continue;   /* the same in every lane */

        float s[U];
        JKC_UNROLL
        for (int u = 0; u < U; u++) {
            s[u] = 0.0f;
            if (vis[u]) {
                const float *kr = kh + (size_t)(j0 + u) * p.ldk;
                JKC_UNROLL
                for (int e = 0; e < NPL; e++) {
                    const int d = lane + 32 * e;
                    if (d < hd) s[u] = fmaf(q[e], kr[d], s[u]);
                }
            }
        }
        /* butterfly sums: every lane ends with the same bits (each step adds the same
         * two values in both lanes of a pair) */
        JKC_UNROLL
        for (int off = 16; off > 0; off /= 2)
            JKC_UNROLL
            for (int u = 0; u < U; u++) s[u] += __shfl_xor_sync(0xffffffffu, s[u], off);

        float mx = m;
        JKC_UNROLL
        for (int u = 0; u < U; u++) {
            if (!vis[u]) s[u] = -INFINITY;
            mx = fmaxf(mx, s[u]);
        }
        /* mx stays -inf when every visible score is -inf or NaN (fmaxf drops NaN): subtract
         * 0 then, as the block path does, so that those give P = 0 and NaN, not inf - inf */
        const float mu = mx == -INFINITY ? 0.0f : mx;
        const float alpha = exp2f(m - mu);   /* m = -inf: 0 */
        m = mx;
        l *= alpha;
        JKC_UNROLL
        for (int e = 0; e < NPL; e++) acc[e] *= alpha;
        JKC_UNROLL
        for (int u = 0; u < U; u++) {
            if (!vis[u]) continue;
            const float pu = exp2f(s[u] - mu);
            l += pu;
            const float *vr = vh + (size_t)(j0 + u) * p.ldv;
            JKC_UNROLL
            for (int e = 0; e < NPL; e++) {
                const int d = lane + 32 * e;
                if (d < hd) acc[e] = fmaf(pu, vr[d], acc[e]);
            }
        }
    }

    /* merge the warps: o = sum_w acc_w 2^(m_w - M) / sum_w l_w 2^(m_w - M) */
    if (lane == 0) s_m[warp] = m, s_l[warp] = l;
    JKC_UNROLL
    for (int e = 0; e < NPL; e++)
        if (lane + 32 * e < hd) s_acc[warp][lane + 32 * e] = acc[e];
    __syncthreads();
    float mall = -INFINITY;
    for (int w = 0; w < nw; w++) mall = fmaxf(mall, s_m[w]);
    mall = mall == -INFINITY ? 0.0f : mall;
    float *o = p.o + (size_t)i * p.ldo + hoff;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float lsum = 0.0f, a = 0.0f;
        for (int w = 0; w < nw; w++) {
            if (s_m[w] == -INFINITY && s_l[w] == 0.0f) continue;   /* that warp saw no key (or P = 0) */
            const float f = exp2f(s_m[w] - mall);
            lsum = fmaf(s_l[w], f, lsum);
            a = fmaf(s_acc[w][d], f, a);
        }
        o[d] = lsum > 0.0f ? a / lsum : lsum;   /* 0: no visible key, zero row; NaN: NaN row */
    }
}

/* Warps per block forced by the tests (0: by the grid, 4 or 8). */
std::atomic<int> forced_warps{0};
/* Staging forced by the tests: 0 by the rule below, 1 whenever there is a workspace. */
std::atomic<int> forced_staging{0};

/* 8 warps (128 queries) a block when that grid still gives every SM a block: a staged
 * key tile then serves twice the queries (the staging, f32 loads and f16 conversion,
 * is a large share of the kernel's instructions); else 4, for short sequences. */
bool use_8_warps(const attn_params &p, int n_head) {
    const long blocks8 = (long)((p.nq + 127) / 128) * n_head;
    const int f = forced_warps.load(std::memory_order_relaxed);
    return f == 8 || (f == 0 && blocks8 >= jkc_sm_count());
}

template <int HD, bool STAGED>
void launch_mma_blocks(const attn_params &p, int n_head, bool w8) {
    if (w8) {
        const dim3 grid((unsigned)((p.nq + 127) / 128), (unsigned)n_head);
        JKC_LAUNCH((attn_mma<HD, 8, STAGED>), grid, dim3(256), 0, jkc_stream(), p);
    } else {
        const dim3 grid((unsigned)((p.nq + 63) / 64), (unsigned)n_head);
        JKC_LAUNCH((attn_mma<HD, 4, STAGED>), grid, dim3(128), 0, jkc_stream(), p);
    }
    jkc_check_launch("attn (mma)");
}

/* With a workspace (p.img) and at least STAGE_MIN_BLOCKS query blocks per head, K and V
 * are staged once (attn_stage) and the query blocks copy the tiles; otherwise every
 * block converts them itself. Staging is one more pass over K and V and a launch, which
 * pays only with many blocks a head to share it
 * (tuned: docs/notes/kernel-tuning.md#cuda-attn-staging). */
constexpr int STAGE_MIN_BLOCKS = 12;

template <int HD>
void launch_mma(const attn_params &p, int n_head) {
    const bool w8 = use_8_warps(p, n_head);
    const int bq = w8 ? 128 : 64;
    const bool stage = forced_staging.load(std::memory_order_relaxed) == 1 ||
                       (p.nq + bq - 1) / bq >= STAGE_MIN_BLOCKS;
    if (!p.img || !stage) {
        launch_mma_blocks<HD, false>(p, n_head, w8);
        return;
    }
    const dim3 grid((unsigned)((p.nkv + MMA_BK - 1) / MMA_BK), (unsigned)n_head);
    if (p.nkv > 0) {
        JKC_LAUNCH(attn_stage<HD>, grid, dim3(STAGE_THREADS), 0, jkc_stream(), p,
                   const_cast<bfrag *>(p.img));
        jkc_check_launch("attn (stage)");
    }
    launch_mma_blocks<HD, true>(p, n_head, w8);
}

/* Bytes of the staged tiles of n_head heads of nkv keys for the tensor-core path (0 for
 * head sizes it does not take). */
size_t staged_bytes(int n_head, int head_dim, int nkv) {
    if (n_head <= 0 || nkv <= 0) return 0;
    size_t slots;
    switch (head_dim) {
    case 32: slots = tile_slots<32>(); break;
    case 64: slots = tile_slots<64>(); break;
    case 80: slots = tile_slots<80>(); break;
    case 96: slots = tile_slots<96>(); break;
    case 128: slots = tile_slots<128>(); break;
    default: return 0;
    }
    return (size_t)n_head * (size_t)((nkv + MMA_BK - 1) / MMA_BK) * slots * sizeof(bfrag);
}

template <int NPL>
void launch_f32(const attn_params &p, int n_head) {
    /* about 64 keys per warp before a second warp helps; the merge costs one barrier */
    const int nw = imin(f32_max_warps<NPL>(), imax(1, (p.nkv + 63) / 64));
    const dim3 grid((unsigned)p.nq, (unsigned)n_head);
    JKC_LAUNCH(attn_f32<NPL>, grid, dim3((unsigned)(32 * nw)), 0, jkc_stream(), p);
    jkc_check_launch("attn (f32)");
}

/* The default kernels: the tensor cores for nq >= 16 and their head sizes, else f32. */
void launch_default(const attn_params &p, int hd, int nh) {
    if (p.nq >= 16) {
        switch (hd) {
        case 32: launch_mma<32>(p, nh); return;
        case 64: launch_mma<64>(p, nh); return;
        case 80: launch_mma<80>(p, nh); return;
        case 96: launch_mma<96>(p, nh); return;
        case 128: launch_mma<128>(p, nh); return;
        default: break;
        }
    }
    if (hd <= 32) launch_f32<1>(p, nh);
    else if (hd <= 64) launch_f32<2>(p, nh);
    else if (hd <= 128) launch_f32<4>(p, nh);
    else if (hd <= 256) launch_f32<8>(p, nh);
    else launch_f32<16>(p, nh);
}

/* ---- pipelined tensor-core kernel (JEPA_CUDA_KERNELS=pipe; never run on a GPU yet) ---- */

/* K and V of every head as f16, row-major [n_head][nkv][HD] (K), then the same for V,
 * in the workspace: written once per call by attn_stage16, then copied tile by tile with
 * cp.async into the pipe kernel's shared memory (where ldmatrix builds the fragments:
 * plain for K, .trans for V, so neither needs a transposed image). */
constexpr int PIPE_WARPS = 4;
constexpr int PIPE_THREADS = 32 * PIPE_WARPS;

/* 16-row query tiles per warp: two where the registers allow (O for 32 rows of HD
 * dims, HD <= 64), one above. */
template <int HD> __host__ __device__ constexpr int pipe_qtiles() { return HD <= 64 ? 2 : 1; }
/* Shared-memory row pitch in halves: HD + 8, so a row is 16-byte aligned (cp.async,
 * ldmatrix) and 8 consecutive rows start in 8 different 16-byte bank groups (an odd
 * number of 16-byte units apart): ldmatrix reads without bank conflicts. */
template <int HD> __host__ __device__ constexpr int pipe_pitch() { return HD + 8; }
/* Dynamic shared memory: two buffers of (K tile, V tile), 64 rows each. */
template <int HD> __host__ __device__ constexpr size_t pipe_smem() {
    return (size_t)2 * 2 * MMA_BK * pipe_pitch<HD>() * sizeof(uint16_t);
}

template <int HD>
__global__ void JKC_LAUNCH_BOUNDS(STAGE_THREADS) attn_stage16(const attn_params p, uint16_t *img) {
    const int k0 = (int)blockIdx.x * MMA_BK;
    const size_t hoff = (size_t)blockIdx.y * HD;
    uint16_t *kd = img + (size_t)blockIdx.y * p.nkv * HD;
    uint16_t *vd = img + ((size_t)gridDim.y + blockIdx.y) * p.nkv * HD;
    for (int idx = threadIdx.x; idx < MMA_BK * HD / 2; idx += STAGE_THREADS) {
        const int key = k0 + idx / (HD / 2), d = 2 * (idx % (HD / 2));
        if (key >= p.nkv) break;   /* idx only grows */
        const float *ks = p.k + (size_t)key * p.ldk + hoff + d;
        const float *vs = p.v + (size_t)key * p.ldv + hoff + d;
        *reinterpret_cast<uint32_t *>(kd + (size_t)key * HD + d) = pack_f16(ks[0], ks[1]);
        *reinterpret_cast<uint32_t *>(vd + (size_t)key * HD + d) = pack_f16(vs[0], vs[1]);
    }
}

/* The first key tile at or after k0 that some query of the block (positions up to qhi)
 * sees, or nkv when none is left; khi: that tile's largest key position. The same in
 * every thread (each warp reduces the same positions). */
__device__ __forceinline__ int next_tile(const attn_params &p, int k0, int32_t qhi, int32_t &khi) {
    khi = INT32_MIN;
    for (; k0 < p.nkv; k0 += MMA_BK) {
        if (!p.qpos) return k0;
        int32_t klo = INT32_MAX;
        khi = INT32_MIN;
        pos_range<MMA_BK>(p.kpos, k0, p.nkv, klo, khi);
        if (klo <= qhi) return k0;
    }
    return p.nkv;
}

/* One K tile and one V tile (64 keys from k0) of the staged image into a buffer, 16
 * bytes a copy; keys past nkv are zero-filled (src_bytes 0, from a valid row). */
template <int HD>
__device__ __forceinline__ void pipe_issue(uint16_t *buf, const uint16_t *kimg,
                                           const uint16_t *vimg, int k0, int nkv) {
    constexpr int P = pipe_pitch<HD>(), CH = MMA_BK * HD / 8;   /* 16-byte pieces a tile */
    for (int c = (int)threadIdx.x; c < CH; c += PIPE_THREADS) {
        const int row = c / (HD / 8), col = 8 * (c % (HD / 8)), key = k0 + row;
        const size_t src = (size_t)(key < nkv ? key : 0) * HD + col;
        const int bytes = key < nkv ? 16 : 0;
        jkc_cp_async16(buf + row * P + col, kimg + src, bytes);
        jkc_cp_async16(buf + (MMA_BK + row) * P + col, vimg + src, bytes);
    }
}

/* Flash attention like attn_mma, with the key tiles brought by cp.async from the staged
 * f16 image (p.img, attn_stage16) into two buffers: tile i + 1 is in flight while tile i
 * is multiplied. 4 warps, each QT 16-row query tiles (BQ = 64 QT queries a block); the
 * K fragments of a tile step serve every query tile of the warp. Fragments by ldmatrix
 * (K plain, V .trans), mma.m16n8k16 f16 with f32 accumulators, the online softmax,
 * masking, tile skipping and NaN rule of attn_mma. o16: NULL, or the output also rounded
 * to f16 (bf16 when o16_bf16) there. */
template <int HD>
__global__ void JKC_LAUNCH_BOUNDS(PIPE_THREADS)
    attn_pipe(const attn_params p, const uint16_t *img, uint16_t *o16, size_t ldo16, int o16_bf16) {
    static_assert(HD % 16 == 0 && HD <= 128, "head_dim: a multiple of 16 up to 128");
    constexpr int QT = pipe_qtiles<HD>(), P = pipe_pitch<HD>();
    constexpr int NC = HD / 16, NO = HD / 8, BQ = 16 * QT * PIPE_WARPS;
    JKC_DYN_SMEM(uint16_t, sm);   /* [buffer 0, 1][K rows 0..63, V rows 0..63][P] */
    __shared__ int32_t kps[MMA_BK];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4, mi = lane / 8, r8 = lane % 8;
    const int q0 = blockIdx.x * BQ, wq0 = q0 + warp * 16 * QT;   /* block's, warp's first */
    const bool masked = p.qpos != nullptr, active = wq0 < p.nq;
    const size_t hoff = (size_t)blockIdx.y * HD;
    const uint16_t *kimg = img + (size_t)blockIdx.y * p.nkv * HD;
    const uint16_t *vimg = img + ((size_t)gridDim.y + blockIdx.y) * p.nkv * HD;

    /* Q scale log2(e) as f16 A fragments (rows past nq zero), as attn_mma */
    uint32_t qa[QT][NC][4];
    JKC_UNROLL
    for (int qt = 0; qt < QT; qt++)
        JKC_UNROLL
        for (int c = 0; c < NC; c++)
            JKC_UNROLL
            for (int x = 0; x < 4; x++) {
                const int r = wq0 + 16 * qt + g + (x & 1 ? 8 : 0);
                const int col = 16 * c + 2 * t + (x & 2 ? 8 : 0);
                qa[qt][c][x] = 0u;
                if (r < p.nq) {
                    const float *s = p.q + (size_t)r * p.ldq + hoff + col;
                    qa[qt][c][x] = pack_f16(s[0] * p.scale2, s[1] * p.scale2);
                }
            }
    int32_t qp[QT][2], qlo = INT32_MAX, qhi = INT32_MIN;
    JKC_UNROLL
    for (int qt = 0; qt < QT; qt++) {
        const int r = wq0 + 16 * qt + g;
        qp[qt][0] = masked && r < p.nq ? p.qpos[r] : INT32_MIN;
        qp[qt][1] = masked && r + 8 < p.nq ? p.qpos[r + 8] : INT32_MIN;
    }
    if (masked) pos_range<BQ>(p.qpos, q0, p.nq, qlo, qhi);

    float acc[QT][NO][4], m[QT][2], l[QT][2];
    JKC_UNROLL
    for (int qt = 0; qt < QT; qt++) {
        m[qt][0] = m[qt][1] = -INFINITY;
        l[qt][0] = l[qt][1] = 0.0f;
        JKC_UNROLL
        for (int n = 0; n < NO; n++) acc[qt][n][0] = acc[qt][n][1] = acc[qt][n][2] = acc[qt][n][3] = 0.0f;
    }

    int32_t khi;
    int cur = next_tile(p, 0, qhi, khi), buf = 0;
    if (cur < p.nkv) pipe_issue<HD>(sm, kimg, vimg, cur, p.nkv);
    jkc_cp_async_commit();
    while (cur < p.nkv) {
        const int32_t cur_khi = khi;
        const int nxt = next_tile(p, cur + MMA_BK, qhi, khi);
        /* the other buffer was last read before the previous iteration's final barrier */
        if (nxt < p.nkv) pipe_issue<HD>(sm + (buf ^ 1) * 2 * MMA_BK * P, kimg, vimg, nxt, p.nkv);
        jkc_cp_async_commit();   /* possibly empty: the count below stays one group */
        const bool need_mask = cur + MMA_BK > p.nkv || (masked && cur_khi > qlo);
        if (masked && need_mask && tid < MMA_BK)
            kps[tid] = cur + tid < p.nkv ? p.kpos[cur + tid] : 0;
        jkc_cp_async_wait<1>();   /* this thread's copies of tile cur have landed */
        __syncthreads();          /* ... and everyone's */

        const uint16_t *ks = sm + buf * 2 * MMA_BK * P, *vs = ks + MMA_BK * P;
        if (active) {
            /* S = Q K^T; one ldmatrix.x4 gives the B fragments of n-tiles n, n + 1 at
             * k-step c: matrix mi = keys 8 (n + mi / 2) .., dims 16 c + 8 (mi % 2) .. */
            float s[QT][8][4];
            JKC_UNROLL
            for (int qt = 0; qt < QT; qt++)
                JKC_UNROLL
                for (int n = 0; n < 8; n++) s[qt][n][0] = s[qt][n][1] = s[qt][n][2] = s[qt][n][3] = 0.0f;
            JKC_UNROLL
            for (int n = 0; n < 8; n += 2)
                JKC_UNROLL
                for (int c = 0; c < NC; c++) {
                    uint32_t b[4];
                    jkc_ldmatrix_x4(b, ks + (8 * (n + mi / 2) + r8) * P + 16 * c + 8 * (mi % 2));
                    JKC_UNROLL
                    for (int qt = 0; qt < QT; qt++) {
                        if (wq0 + 16 * qt >= p.nq) continue;   /* the same in every lane */
                        jkc_mma_f16(s[qt][n], qa[qt][c], b);
                        jkc_mma_f16(s[qt][n + 1], qa[qt][c], b + 2);
                    }
                }
            uint32_t pa[QT][4][4];
            JKC_UNROLL
            for (int qt = 0; qt < QT; qt++)
                softmax_tile<NO>(s[qt], m[qt][0], m[qt][1], l[qt][0], l[qt][1], acc[qt], pa[qt],
                                 need_mask, masked, p.nkv - cur, qp[qt][0], qp[qt][1], kps, t);
            /* O += P V; one ldmatrix.x4.trans gives the B fragments of n-tiles n, n + 1
             * for key chunk c: matrix mi = keys 16 c + 8 (mi % 2) .., dims 8 (n + mi / 2) .. */
            JKC_UNROLL
            for (int c = 0; c < 4; c++)
                JKC_UNROLL
                for (int n = 0; n < NO; n += 2) {
                    uint32_t b[4];
                    jkc_ldmatrix_x4_trans(b, vs + (16 * c + 8 * (mi % 2) + r8) * P + 8 * (n + mi / 2));
                    JKC_UNROLL
                    for (int qt = 0; qt < QT; qt++) {
                        if (wq0 + 16 * qt >= p.nq) continue;
                        jkc_mma_f16(acc[qt][n], pa[qt][c], b);
                        jkc_mma_f16(acc[qt][n + 1], pa[qt][c], b + 2);
                    }
                }
        }
        __syncthreads();   /* buf is consumed before the next iteration refills it */
        buf ^= 1;
        cur = nxt;
    }
    jkc_cp_async_wait<0>();   /* only empty groups can be left; none may outlive the thread */

    if (!active) return;
    JKC_UNROLL
    for (int qt = 0; qt < QT; qt++) {
        float l0 = l[qt][0], l1 = l[qt][1];
        l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
        l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
        l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
        l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
        /* zero row without a visible key, NaN row for a NaN score or value (attn_mma) */
        const float inv0 = l0 > 0.0f ? 1.0f / l0 : l0, inv1 = l1 > 0.0f ? 1.0f / l1 : l1;
        JKC_UNROLL
        for (int half = 0; half < 2; half++) {
            const int r = wq0 + 16 * qt + g + 8 * half;
            if (r >= p.nq) continue;
            const float inv = half ? inv1 : inv0;
            float *o = p.o + (size_t)r * p.ldo + hoff + 2 * t;
            uint16_t *o2 = o16 ? o16 + (size_t)r * ldo16 + hoff + 2 * t : nullptr;
            JKC_UNROLL
            for (int n = 0; n < NO; n++) {
                const float v0 = acc[qt][n][2 * half] * inv, v1 = acc[qt][n][2 * half + 1] * inv;
                o[8 * n] = v0, o[8 * n + 1] = v1;
                if (o2) {
                    o2[8 * n] = o16_bf16 ? jkc_f32_to_bf16(v0) : jkc_f32_to_f16(v0);
                    o2[8 * n + 1] = o16_bf16 ? jkc_f32_to_bf16(v1) : jkc_f32_to_f16(v1);
                }
            }
        }
    }
}

/* o16 from o where the output came from a kernel that does not write it: every element
 * of nq rows of d values rounded to f16 (bf16 when bf16). */
__global__ void JKC_LAUNCH_BOUNDS(256) attn_round16(const float *o, size_t ldo, uint16_t *o16,
                                                    size_t ldo16, int d, int bf16) {
    const float *src = o + (size_t)blockIdx.x * ldo;
    uint16_t *dst = o16 + (size_t)blockIdx.x * ldo16;
    for (int e = threadIdx.x; e < d; e += blockDim.x)
        dst[e] = bf16 ? jkc_f32_to_bf16(src[e]) : jkc_f32_to_f16(src[e]);
}

template <int HD>
void launch_pipe(const attn_params &p, int n_head, uint16_t *o16, size_t ldo16, int bf16) {
    uint16_t *img = reinterpret_cast<uint16_t *>(const_cast<bfrag *>(p.img));
    if (p.nkv > 0) {
        const dim3 grid((unsigned)((p.nkv + MMA_BK - 1) / MMA_BK), (unsigned)n_head);
        JKC_LAUNCH(attn_stage16<HD>, grid, dim3(STAGE_THREADS), 0, jkc_stream(), p, img);
        jkc_check_launch("attn (stage16)");
    }
    constexpr size_t smem = pipe_smem<HD>();
    if (smem > 48 * 1024)
        cudaFuncSetAttribute(attn_pipe<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    constexpr int bq = 16 * pipe_qtiles<HD>() * PIPE_WARPS;
    const dim3 grid((unsigned)((p.nq + bq - 1) / bq), (unsigned)n_head);
    JKC_LAUNCH(attn_pipe<HD>, grid, dim3(PIPE_THREADS), smem, jkc_stream(), p,
               static_cast<const uint16_t *>(img), o16, ldo16, bf16);
    jkc_check_launch("attn (pipe)");
}

/* The pipelined kernel where it applies (nq >= 16, a tensor-core head size, the
 * workspace given): true when it ran (and wrote o16 if asked). */
bool try_pipe(const attn_params &p, int n_head, uint16_t *o16, size_t ldo16, int bf16) {
    if (p.nq < 16 || !p.img) return false;
    switch (p.hd) {
    case 32: launch_pipe<32>(p, n_head, o16, ldo16, bf16); return true;
    case 64: launch_pipe<64>(p, n_head, o16, ldo16, bf16); return true;
    case 80: launch_pipe<80>(p, n_head, o16, ldo16, bf16); return true;
    case 96: launch_pipe<96>(p, n_head, o16, ldo16, bf16); return true;
    case 128: launch_pipe<128>(p, n_head, o16, ldo16, bf16); return true;
    default: return false;
    }
}

}  // namespace

extern "C" void jkc_attn(const struct jk_attn_args *a) {
    if (a->nq <= 0 || a->n_head <= 0 || a->head_dim <= 0 || a->head_dim > 512) return;
    attn_params p;
    p.o = a->o, p.q = a->q, p.k = a->k, p.v = a->v;
    p.ldo = a->ldo, p.ldq = a->ldq, p.ldk = a->ldk, p.ldv = a->ldv;
    const bool masked = a->q_pos && a->k_pos;
    p.qpos = masked ? a->q_pos : nullptr;
    p.kpos = masked ? a->k_pos : nullptr;
    p.nq = a->nq, p.nkv = a->nkv > 0 ? a->nkv : 0, p.hd = a->head_dim;
    p.scale2 = a->scale * 1.4426950408889634f;   /* log2(e) */
    const int hd = a->head_dim, nh = a->n_head;
    /* the staged tiles need the workspace jkc_attn_ws asks for, 16-byte aligned */
    p.img = a->ws && ((uintptr_t)a->ws & 15u) == 0 ? static_cast<const bfrag *>(a->ws) : nullptr;
    const int bf16 = a->o16_type == JK_BF16;

    if (jkc_kernels_pipe() && try_pipe(p, nh, a->o16, a->ldo16, bf16)) return;
    launch_default(p, hd, nh);
    if (a->o16) {   /* the default kernels write f32 only: round what they wrote */
        JKC_LAUNCH(attn_round16, dim3((unsigned)p.nq), dim3(256), 0, jkc_stream(), p.o, p.ldo,
                   a->o16, a->ldo16, nh * hd, bf16);
        jkc_check_launch("attn (round16)");
    }
}

/* Workspace: the staged K and V tiles of the tensor-core path (attn_stage), for any nq:
 * the caller plans before it knows whether a call will take that path. */
extern "C" size_t jkc_attn_ws(int nthreads, int n_head, int head_dim, int nkv) {
    (void)nthreads;
    return staged_bytes(n_head, head_dim, nkv);
}

/* Test hook: warps 0 = warps per block by the grid (the default), 4 or 8 = always that
 * many in the tensor-core kernel; staging 0 = by the rule of launch_mma (the default),
 * 1 = whenever a workspace is given. So tests/cuda/test_cuda_attn.c reaches every
 * variant on small problems. Not part of any public header. */
extern "C" void jkc_attn_force(int warps, int staging) {
    forced_warps.store(warps, std::memory_order_relaxed);
    forced_staging.store(staging, std::memory_order_relaxed);
}
