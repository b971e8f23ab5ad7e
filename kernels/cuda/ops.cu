/*
 * ops.cu — the row and element-wise slots of the CUDA table: LayerNorm, tanh-GELU,
 * SiLU, residual add / layer-scale, the modulation multiply-add, RoPE, patchify, row
 * gather and the column mean; and the x16 table's layernorm16 / patchify16 / gelu_tanh16 /
 * silu16 (the same kernels, also writing the 16-bit copy the next matmul reads) and round16
 * (the copy of an uploaded input). Same semantics as the
 * reference (kernels/ref/ops_ref.c), device pointers, queued on jkc_stream(); nthreads is
 * ignored.
 *
 * Determinism: every output element is computed by one thread, and every reduction
 * (a row's sums, the column sums of mean_rows) runs in an order fixed by the shape
 * alone, so a launch gives the same bits every time. f32 throughout, with the
 * reference's accuracy bought back where a plain f32 formula would lose it:
 *  - LayerNorm: two passes over a row held in registers, the first shifted by x[0]
 *    (a constant row gives exactly b), the second centred with a correction term
 *    (Chan, Golub and LeVeque's corrected two-pass variance), never E[x^2] - mean^2.
 *  - SiLU and the tanh GELU are x / (1 + e^w) with w formed in double and e^w carried
 *    as a float pair, so a large |w| does not amplify the rounding of w.
 *  - mean_rows sums each column with compensated (Kahan) sums.
 *
 * Shapes: a row of d <= 1024 is one warp's (four rows per block), held in registers;
 * a longer row is one block's (256 threads, held in registers up to 8192). Element-wise
 * kernels are grid-stride loops; row-by-column kernels put columns on x and rows on y,
 * the y grid capped at 65535 and looped over.
 */
#include <math.h>

#include "kernels/cuda/internal.cuh"
#include "kernels/cuda/math.cuh"

namespace {

constexpr int kRowsPerBlock = 4;       /* warp-per-row kernels: blockDim (32, 4) */
constexpr int kRowThreads = 256;       /* block-per-row kernels */
constexpr unsigned kMaxGridY = 65535;
constexpr unsigned kMaxBlocks1D = 8192; /* grid-stride loops: enough to fill any GPU */

/* ---------------------------------------------------------------------------------
 * reductions (every lane / thread gets the same bits: a butterfly adds each pair in
 * both lanes in the same order, and IEEE addition commutes)
 * --------------------------------------------------------------------------------- */

__device__ __forceinline__ float warp_sum(float v) {
    JKC_UNROLL
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Over a block of whole warps, through red[32] in shared memory. The leading barrier
 * keeps a previous call's readers ahead of this call's writers. */
__device__ __forceinline__ float block_sum(float v, float *red) {
    v = warp_sum(v);
    const int nw = (int)(blockDim.x >> 5);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = red[0];
    for (int i = 1; i < nw; i++) s += red[i];
    return s;
}

/* A row spread over a group of threads: thread `lane` of `nthr` owns elements
 * lane + k nthr. VPL > 0: the row is held in registers, VPL values per thread
 * (VPL * nthr >= d); VPL == 0: rows too long for that are re-read from memory. The
 * reductions are the warp's (nthr = 32) or the block's. */
template <int VPL, bool kBlock>
struct row_group {
    int lane, nthr;
    float *red;
    __device__ float sum(float v) const { return kBlock ? block_sum(v, red) : warp_sum(v); }
};

/* ---------------------------------------------------------------------------------
 * LayerNorm
 * --------------------------------------------------------------------------------- */

/* One row: y = (x - mean) rstd * w + b.
 *   pass 1: m0 = x0 + sum(x - x0) / d      (shifted by x0 = x[0]: exact for a constant row)
 *   pass 2: c = x - m0, s1 = sum c, s2 = sum c^2, mean = m0 + s1/d,
 *           var = s2/d - (s1/d)^2          (the corrected two-pass variance: s1 is the
 *                                           rounding left in m0, tiny against s2)
 *   out:    (c - s1/d) rstd               (0 for a constant row: y = b exactly) */
/* A 16-bit copy of a row result (layernorm16, patchify16): the f32 value o rounded to
 * nearest even, to bf16 or to f16. */
__device__ __forceinline__ uint16_t round16(float o, bool bf16) {
    return bf16 ? jkc_f32_to_bf16(o) : jkc_f32_to_f16(o);
}

/* k16 (layernorm16): y may be NULL, and y16 (not NULL) gets every output rounded to bf16
 * or f16; the f32 arithmetic is the same code either way, so y has the same bits. */
template <int VPL, bool kBlock, bool k16 = false>
__device__ __forceinline__ void layernorm_row(const row_group<VPL, kBlock> &g, float *y,
                                              const float *x, const float *__restrict__ w,
                                              const float *__restrict__ b, int d, float eps,
                                              uint16_t *y16 = nullptr, bool bf16 = false) {
    const float x0 = x[0];
    const float rd = (float)d;
    float v[VPL > 0 ? VPL : 1];
    float s = 0.0f;
    if constexpr (VPL > 0) {
        JKC_UNROLL
        for (int k = 0; k < VPL; k++) {
            const int j = g.lane + k * g.nthr;
            v[k] = j < d ? x[j] : x0;
            s += v[k] - x0;
        }
    } else {
        for (int j = g.lane; j < d; j += g.nthr) s += x[j] - x0;
    }
    const float m0 = x0 + g.sum(s) / rd;

    float s1 = 0.0f, s2 = 0.0f;
    if constexpr (VPL > 0) {
        JKC_UNROLL
        for (int k = 0; k < VPL; k++) {
            const int j = g.lane + k * g.nthr;
            const float c = j < d ? v[k] - m0 : 0.0f;
            s1 += c;
            s2 = fmaf(c, c, s2);
        }
    } else {
        for (int j = g.lane; j < d; j += g.nthr) {
            const float c = x[j] - m0;
            s1 += c;
            s2 = fmaf(c, c, s2);
        }
    }
    const float dm = g.sum(s1) / rd;
    const float var = fmaxf(g.sum(s2) / rd - dm * dm, 0.0f);
    const float rstd = 1.0f / sqrtf(var + eps);

    /* y may be x: every element is read (above) by the thread that writes it, and the
     * reductions above are barriers for the block version. */
    if constexpr (VPL > 0) {
        JKC_UNROLL
        for (int k = 0; k < VPL; k++) {
            const int j = g.lane + k * g.nthr;
            if (j < d) {
                float o = ((v[k] - m0) - dm) * rstd;
                if (w) o *= w[j];
                if (b) o += b[j];
                if constexpr (k16) {
                    if (y) y[j] = o;
                    y16[j] = round16(o, bf16);
                } else {
                    y[j] = o;
                }
            }
        }
    } else {
        for (int j = g.lane; j < d; j += g.nthr) {
            float o = ((x[j] - m0) - dm) * rstd;
            if (w) o *= w[j];
            if (b) o += b[j];
            if constexpr (k16) {
                if (y) y[j] = o;
                y16[j] = round16(o, bf16);
            } else {
                y[j] = o;
            }
        }
    }
}

template <int VPL>
__global__ void JKC_LAUNCH_BOUNDS(32 * kRowsPerBlock)
layernorm_warp_kernel(float *y, size_t ldy, const float *x, size_t ldx, const float *w,
                      const float *b, int n, int d, float eps) {
    const int row = (int)(blockIdx.x * blockDim.y + threadIdx.y);
    if (row >= n) return;   /* the whole warp leaves together */
    const row_group<VPL, false> g = {(int)threadIdx.x, 32, nullptr};
    layernorm_row(g, y + (size_t)row * ldy, x + (size_t)row * ldx, w, b, d, eps);
}

template <int VPL>
__global__ void JKC_LAUNCH_BOUNDS(kRowThreads)
layernorm_block_kernel(float *y, size_t ldy, const float *x, size_t ldx, const float *w,
                       const float *b, int n, int d, float eps) {
    __shared__ float red[32];
    const row_group<VPL, true> g = {(int)threadIdx.x, (int)blockDim.x, red};
    (void)n;
    const size_t row = blockIdx.x;
    layernorm_row(g, y + row * ldy, x + row * ldx, w, b, d, eps);
}

/* layernorm16: the kernels above with the 16-bit copy (y NULL: the copy alone). */
template <int VPL>
__global__ void JKC_LAUNCH_BOUNDS(32 * kRowsPerBlock)
layernorm16_warp_kernel(float *y, size_t ldy, uint16_t *y16, size_t ldy16, bool bf16,
                        const float *x, size_t ldx, const float *w, const float *b, int n, int d,
                        float eps) {
    const int row = (int)(blockIdx.x * blockDim.y + threadIdx.y);
    if (row >= n) return;
    const row_group<VPL, false> g = {(int)threadIdx.x, 32, nullptr};
    layernorm_row<VPL, false, true>(g, y ? y + (size_t)row * ldy : nullptr, x + (size_t)row * ldx,
                                    w, b, d, eps, y16 + (size_t)row * ldy16, bf16);
}

template <int VPL>
__global__ void JKC_LAUNCH_BOUNDS(kRowThreads)
layernorm16_block_kernel(float *y, size_t ldy, uint16_t *y16, size_t ldy16, bool bf16,
                         const float *x, size_t ldx, const float *w, const float *b, int n, int d,
                         float eps) {
    __shared__ float red[32];
    const row_group<VPL, true> g = {(int)threadIdx.x, (int)blockDim.x, red};
    (void)n;
    const size_t row = blockIdx.x;
    layernorm_row<VPL, true, true>(g, y ? y + row * ldy : nullptr, x + row * ldx, w, b, d, eps,
                                   y16 + row * ldy16, bf16);
}

/* ---------------------------------------------------------------------------------
 * activations
 * --------------------------------------------------------------------------------- */

/* e^w for w in double, as hi + lo: e^hi (1 + lo), |lo| <= ulp(hi) / 2, so that the
 * rounding of w to float does not become a relative error of |w| u in the result.
 * -200 <= w <= 88 (callers clamp). */
__device__ __forceinline__ float exp_dbl(double w) {
    const float hi = (float)w, lo = (float)(w - (double)hi);
    const float e = expf(hi);
    return fmaf(e, lo, e);
}

/* x / (1 + e^w), w in double: silu (w = -x) and the tanh GELU (w = -2 u). For w > 80,
 * x e^-w, formed as (x e^(64 ln2 - w)) 2^-64 so that the exponential stays a normal
 * float while the result can still be nonzero (it rounds once, into the subnormals if
 * it must). */
__device__ __forceinline__ float x_over_1p_exp(float x, double w) {
    if (w > 80.0) {
        double a = 44.3614195558364998 - w;   /* 64 ln 2 - w */
        a = a < -200.0 ? -200.0 : a;
        return (x * exp_dbl(a)) * 0x1p-64f;
    }
    w = w < -200.0 ? -200.0 : w;
    return x / (1.0f + exp_dbl(w));
}

/* 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3). */
__device__ __forceinline__ float gelu_tanh_f(float x) {
    const double xd = x;
    const double u = 0.79788456080286535588 * (xd + 0.044715 * xd * xd * xd);
    return x_over_1p_exp(x, -2.0 * u);
}

/* x sigmoid(x) = x / (1 + e^-x). */
__device__ __forceinline__ float silu_f(float x) { return x_over_1p_exp(x, -(double)x); }

enum unary_op { OP_GELU_TANH, OP_SILU };

template <int OP>
__global__ void JKC_LAUNCH_BOUNDS(256) unary_kernel(float *x, size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        x[i] = OP == OP_GELU_TANH ? gelu_tanh_f(v) : silu_f(v);
    }
}

/* gelu_tanh16 / silu16: unary_kernel's values over rows of d at stride ldx, each also
 * written rounded to y16 (columns on x, rows on y). */
template <int OP>
__global__ void JKC_LAUNCH_BOUNDS(256)
unary16_kernel(float *x, size_t ldx, uint16_t *y16, size_t ldy16, bool bf16, int n, int d) {
    const int j = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (j >= d) return;
    for (int i = (int)blockIdx.y; i < n; i += (int)gridDim.y) {
        float *xi = x + (size_t)i * ldx + j;
        const float v = OP == OP_GELU_TANH ? gelu_tanh_f(*xi) : silu_f(*xi);
        *xi = v;
        y16[(size_t)i * ldy16 + j] = round16(v, bf16);
    }
}

/* ---------------------------------------------------------------------------------
 * row-by-column kernels: x over columns, y over rows (grid-stride)
 * --------------------------------------------------------------------------------- */

/* round16: y16[i, j] = x[i, j] rounded */
__global__ void JKC_LAUNCH_BOUNDS(256)
round16_kernel(uint16_t *y16, size_t ldy16, bool bf16, const float *x, size_t ldx, int n,
               int d) {
    const int j = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (j >= d) return;
    for (int i = (int)blockIdx.y; i < n; i += (int)gridDim.y)
        y16[(size_t)i * ldy16 + j] = round16(x[(size_t)i * ldx + j], bf16);
}

/* y[i, j] += s[j] x[i, j] (s NULL: 1); ldx = 0 adds the same row to every row. */
__global__ void JKC_LAUNCH_BOUNDS(256)
add_kernel(float *y, size_t ldy, const float *x, size_t ldx, const float *s, int n, int d) {
    const int j = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (j >= d) return;
    const float sj = s ? s[j] : 1.0f;
    for (int i = (int)blockIdx.y; i < n; i += (int)gridDim.y) {
        float *yi = y + (size_t)i * ldy + j;
        *yi = fmaf(sj, x[(size_t)i * ldx + j], *yi);
    }
}

/* y[i, j] = x[i, j] (c + m[i, j]) + a[i, j]; y may be x or a (each element is read
 * before it is written, by the same thread) */
__global__ void JKC_LAUNCH_BOUNDS(256)
madd_kernel(float *y, size_t ldy, const float *x, size_t ldx, const float *m, size_t ldm,
            const float *a, size_t lda, float c, int n, int d) {
    const int j = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (j >= d) return;
    for (int i = (int)blockIdx.y; i < n; i += (int)gridDim.y)
        y[(size_t)i * ldy + j] = fmaf(x[(size_t)i * ldx + j], c + m[(size_t)i * ldm + j],
                                      a[(size_t)i * lda + j]);
}

/* y[i, :] = x[idx[i], :] */
__global__ void JKC_LAUNCH_BOUNDS(256)
gather_kernel(float *y, size_t ldy, const float *x, size_t ldx, const int32_t *idx, int n,
              int d) {
    const int j = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (j >= d) return;
    for (int i = (int)blockIdx.y; i < n; i += (int)gridDim.y)
        y[(size_t)i * ldy + j] = x[(size_t)idx[i] * ldx + j];
}

/* RoPE: one thread per (token, head, pair), as jk_rope_ref: pair (2p, 2p+1) becomes
 * (x0 c - x1 s, x1 c' + x0 s'); an odd last dim has no partner and is scaled by cos. */
__global__ void JKC_LAUNCH_BOUNDS(256)
rope_kernel(float *x, size_t ldx, int n, int n_head, int head_dim, const float *cos,
            const float *sin) {
    const int np = (head_dim + 1) / 2;
    const int q = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (q >= n_head * np) return;
    const int h = q / np, p = 2 * (q % np);
    for (int i = (int)blockIdx.y; i < n; i += (int)gridDim.y) {
        float *v = x + (size_t)i * ldx + (size_t)h * head_dim + p;
        const float *c = cos + (size_t)i * head_dim + p, *s = sin + (size_t)i * head_dim + p;
        if (p + 1 < head_dim) {
            const float x0 = v[0], x1 = v[1];
            v[0] = fmaf(x0, c[0], -x1 * s[0]);
            v[1] = fmaf(x1, c[1], x0 * s[1]);
        } else {
            v[0] = v[0] * c[0];
        }
    }
}

/* Patchify: out[tok, f], f = ((c tubelet + dt) p + dy) p + dx, from
 * in[c, t tubelet + dt, h p + dy, w p + dx], tok = (t gh + h) gw + w. Writes are
 * contiguous along f; reads along dx. k16 (patchify16): out may be NULL, and out16 (not
 * NULL, rows of F) gets every value rounded to bf16 or f16. */
template <bool k16>
__global__ void JKC_LAUNCH_BOUNDS(256)
patchify_kernel(float *out, uint16_t *out16, bool bf16, const float *in, int T, int H, int W,
                int tubelet, int p, int ntok, int F) {
    const int f = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (f >= F) return;
    const int gh = H / p, gw = W / p, pp = p * p;
    const int c = f / (tubelet * pp), r = f % (tubelet * pp);
    const int dt = r / pp, dy = (r / p) % p, dx = r % p;
    for (int tok = (int)blockIdx.y; tok < ntok; tok += (int)gridDim.y) {
        const int t = tok / (gh * gw), h = (tok / gw) % gh, w = tok % gw;
        const size_t src = (((size_t)c * T + (size_t)(t * tubelet + dt)) * H +
                            (size_t)(h * p + dy)) * W + (size_t)(w * p + dx);
        if constexpr (k16) {
            const float v = in[src];
            if (out) out[(size_t)tok * F + f] = v;
            out16[(size_t)tok * F + f] = round16(v, bf16);
        } else {
            out[(size_t)tok * F + f] = in[src];
        }
    }
}

/* Column mean: block (32, kMeanRows) over 32 columns; thread (tx, ty) sums rows ty,
 * ty + kMeanRows, ... of column j with a Kahan sum, then row ty = 0 adds the kMeanRows
 * partials in order (their values, then their compensations). Error ~2u sum|x| / n
 * whatever n, and the order depends on n alone. */
constexpr int kMeanRows = 16;

__global__ void JKC_LAUNCH_BOUNDS(32 * kMeanRows)
mean_rows_kernel(float *y, const float *x, size_t ldx, int n, int d) {
    __shared__ float part[kMeanRows][33], comp[kMeanRows][33];
    const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    const int j = (int)blockIdx.x * 32 + tx;
    float s = 0.0f, c = 0.0f;   /* the sum and its lost low part (negated) */
    if (j < d) {
        for (int i = ty; i < n; i += kMeanRows) {
            const float yv = x[(size_t)i * ldx + j] - c;
            const float t = s + yv;
            c = (t - s) - yv;
            s = t;
        }
    }
    part[ty][tx] = s;
    comp[ty][tx] = c;
    __syncthreads();
    if (ty == 0 && j < d) {
        float tot = 0.0f, cc = 0.0f;
        for (int k = 0; k < kMeanRows; k++) {
            const float yv = part[k][tx] - cc;
            const float t = tot + yv;
            cc = (t - tot) - yv;
            tot = t;
            cc += comp[k][tx];
        }
        y[j] = (tot - cc) / (float)n;
    }
}

/* ---------------------------------------------------------------------------------
 * launch helpers
 * --------------------------------------------------------------------------------- */

unsigned blocks_1d(size_t n, unsigned per_block) {
    const size_t b = (n + per_block - 1) / per_block;
    return (unsigned)(b < kMaxBlocks1D ? b : kMaxBlocks1D);
}
unsigned grid_y(int n) { return (unsigned)n < kMaxGridY ? (unsigned)n : kMaxGridY; }

/* Rows of `cols` columns: x covers the columns with blocks of up to 256 threads (whole
 * warps, no wider than the row needs), y the rows. */
void cols_rows(int cols, int rows, dim3 *grid, dim3 *block) {
    const int bx = cols < 256 ? (cols + 31) / 32 * 32 : 256;
    *block = dim3((unsigned)bx);
    *grid = dim3((unsigned)((cols + bx - 1) / bx), grid_y(rows));
}

/* Values per thread for a row of d held by nthr threads: the smallest of 1, 2, 4, ...
 * 32 that covers d, or 0 (re-read from memory) past 32 nthr. */
int row_vpl(int d, int nthr) {
    for (int v = 1; v <= 32; v *= 2)
        if (d <= v * nthr) return v;
    return 0;
}

/* Launch WARP_K<VPL> (rows of d <= 1024: a warp each, four to a block) or BLOCK_K<VPL>
 * (longer rows: a block each), VPL chosen for d, with the arguments that follow. */
#define ROW_DISPATCH(WARP_K, BLOCK_K, n, d, ...)                                           \
    do {                                                                                   \
        const cudaStream_t st_ = jkc_stream();                                             \
        if ((d) <= 1024) {                                                                 \
            const dim3 grid_((unsigned)(((n) + kRowsPerBlock - 1) / kRowsPerBlock));       \
            const dim3 block_(32, kRowsPerBlock);                                          \
            switch (row_vpl((d), 32)) {                                                    \
            case 1: JKC_LAUNCH(WARP_K<1>, grid_, block_, 0, st_, __VA_ARGS__); break;      \
            case 2: JKC_LAUNCH(WARP_K<2>, grid_, block_, 0, st_, __VA_ARGS__); break;      \
            case 4: JKC_LAUNCH(WARP_K<4>, grid_, block_, 0, st_, __VA_ARGS__); break;      \
            case 8: JKC_LAUNCH(WARP_K<8>, grid_, block_, 0, st_, __VA_ARGS__); break;      \
            case 16: JKC_LAUNCH(WARP_K<16>, grid_, block_, 0, st_, __VA_ARGS__); break;    \
            default: JKC_LAUNCH(WARP_K<32>, grid_, block_, 0, st_, __VA_ARGS__); break;    \
            }                                                                              \
        } else {                                                                           \
            const dim3 grid_((unsigned)(n));                                               \
            const dim3 block_(kRowThreads);                                                \
            switch (row_vpl((d), kRowThreads)) {                                           \
            case 8: JKC_LAUNCH(BLOCK_K<8>, grid_, block_, 0, st_, __VA_ARGS__); break;     \
            case 16: JKC_LAUNCH(BLOCK_K<16>, grid_, block_, 0, st_, __VA_ARGS__); break;   \
            case 32: JKC_LAUNCH(BLOCK_K<32>, grid_, block_, 0, st_, __VA_ARGS__); break;   \
            default: JKC_LAUNCH(BLOCK_K<0>, grid_, block_, 0, st_, __VA_ARGS__); break;    \
            }                                                                              \
        }                                                                                  \
    } while (0)

} // namespace

/* ---------------------------------------------------------------------------------
 * the slots
 * --------------------------------------------------------------------------------- */

extern "C" {

void jkc_layernorm(float *y, size_t ldy, const float *x, size_t ldx, const float *w,
                   const float *b, int n, int d, float eps, int nthreads) {
    (void)nthreads;
    if (n <= 0 || d <= 0) return;
    ROW_DISPATCH(layernorm_warp_kernel, layernorm_block_kernel, n, d, y, ldy, x, ldx, w, b, n,
                 d, eps);
    jkc_check_launch("layernorm");
}

void jkc_layernorm16(float *y, size_t ldy, uint16_t *y16, size_t ldy16, enum jk_dtype t,
                     const float *x, size_t ldx, const float *w, const float *b, int n, int d,
                     float eps, int nthreads) {
    if (!y16) {
        if (y) jkc_layernorm(y, ldy, x, ldx, w, b, n, d, eps, nthreads);
        return;
    }
    if (n <= 0 || d <= 0) return;
    const bool bf16 = t == JK_BF16;
    ROW_DISPATCH(layernorm16_warp_kernel, layernorm16_block_kernel, n, d, y, ldy, y16, ldy16,
                 bf16, x, ldx, w, b, n, d, eps);
    jkc_check_launch("layernorm16");
}

static void unary(float *x, size_t n, int op, const char *what) {
    if (n == 0) return;
    const dim3 grid(blocks_1d(n, 256)), block(256);
    const cudaStream_t st = jkc_stream();
    switch (op) {
    case OP_GELU_TANH: JKC_LAUNCH(unary_kernel<OP_GELU_TANH>, grid, block, 0, st, x, n); break;
    default: JKC_LAUNCH(unary_kernel<OP_SILU>, grid, block, 0, st, x, n); break;
    }
    jkc_check_launch(what);
}

void jkc_gelu_tanh(float *x, size_t n, int nthreads) {
    (void)nthreads;
    unary(x, n, OP_GELU_TANH, "gelu_tanh");
}
void jkc_silu(float *x, size_t n, int nthreads) {
    (void)nthreads;
    unary(x, n, OP_SILU, "silu");
}

static void unary16(float *x, size_t ldx, uint16_t *y16, size_t ldy16, enum jk_dtype t, int n,
                    int d, int op, const char *what) {
    if (n <= 0 || d <= 0) return;
    dim3 grid, block;
    cols_rows(d, n, &grid, &block);
    const bool bf16 = t == JK_BF16;
    const cudaStream_t st = jkc_stream();
    switch (op) {
    case OP_GELU_TANH:
        JKC_LAUNCH(unary16_kernel<OP_GELU_TANH>, grid, block, 0, st, x, ldx, y16, ldy16, bf16, n,
                   d);
        break;
    default:
        JKC_LAUNCH(unary16_kernel<OP_SILU>, grid, block, 0, st, x, ldx, y16, ldy16, bf16, n, d);
        break;
    }
    jkc_check_launch(what);
}

void jkc_gelu_tanh16(float *x, size_t ldx, uint16_t *y16, size_t ldy16, enum jk_dtype t, int n,
                     int d, int nthreads) {
    (void)nthreads;
    unary16(x, ldx, y16, ldy16, t, n, d, OP_GELU_TANH, "gelu_tanh16");
}
void jkc_silu16(float *x, size_t ldx, uint16_t *y16, size_t ldy16, enum jk_dtype t, int n, int d,
                int nthreads) {
    (void)nthreads;
    unary16(x, ldx, y16, ldy16, t, n, d, OP_SILU, "silu16");
}

void jkc_round16(uint16_t *y16, size_t ldy16, enum jk_dtype t, const float *x, size_t ldx, int n,
                 int d, int nthreads) {
    (void)nthreads;
    if (n <= 0 || d <= 0) return;
    dim3 grid, block;
    cols_rows(d, n, &grid, &block);
    JKC_LAUNCH(round16_kernel, grid, block, 0, jkc_stream(), y16, ldy16, t == JK_BF16, x, ldx, n,
               d);
    jkc_check_launch("round16");
}

void jkc_add(float *y, size_t ldy, const float *x, size_t ldx, const float *s, int n, int d,
             int nthreads) {
    (void)nthreads;
    if (n <= 0 || d <= 0) return;
    dim3 grid, block;
    cols_rows(d, n, &grid, &block);
    JKC_LAUNCH(add_kernel, grid, block, 0, jkc_stream(), y, ldy, x, ldx, s, n, d);
    jkc_check_launch("add");
}

void jkc_madd(float *y, size_t ldy, const float *x, size_t ldx, const float *m, size_t ldm,
              const float *a, size_t lda, float c, int n, int d, int nthreads) {
    (void)nthreads;
    if (n <= 0 || d <= 0) return;
    dim3 grid, block;
    cols_rows(d, n, &grid, &block);
    JKC_LAUNCH(madd_kernel, grid, block, 0, jkc_stream(), y, ldy, x, ldx, m, ldm, a, lda, c, n, d);
    jkc_check_launch("madd");
}

void jkc_gather(float *y, size_t ldy, const float *x, size_t ldx, const int32_t *idx, int n,
                int d, int nthreads) {
    (void)nthreads;
    if (n <= 0 || d <= 0) return;
    dim3 grid, block;
    cols_rows(d, n, &grid, &block);
    JKC_LAUNCH(gather_kernel, grid, block, 0, jkc_stream(), y, ldy, x, ldx, idx, n, d);
    jkc_check_launch("gather");
}

void jkc_rope(float *x, size_t ldx, int n, int n_head, int head_dim, const float *cos,
              const float *sin, int nthreads) {
    (void)nthreads;
    if (n <= 0 || n_head <= 0 || head_dim <= 0) return;
    const int pairs = n_head * ((head_dim + 1) / 2);
    dim3 grid, block;
    cols_rows(pairs, n, &grid, &block);
    JKC_LAUNCH(rope_kernel, grid, block, 0, jkc_stream(), x, ldx, n, n_head, head_dim, cos,
               sin);
    jkc_check_launch("rope");
}

void jkc_patchify(float *out, const float *in, int C, int T, int H, int W, int tubelet, int p,
                  int nthreads) {
    (void)nthreads;
    const int ntok = (T / tubelet) * (H / p) * (W / p), F = C * tubelet * p * p;
    if (ntok <= 0 || F <= 0) return;
    dim3 grid, block;
    cols_rows(F, ntok, &grid, &block);
    JKC_LAUNCH(patchify_kernel<false>, grid, block, 0, jkc_stream(), out, nullptr, false, in, T,
               H, W, tubelet, p, ntok, F);
    jkc_check_launch("patchify");
}

void jkc_patchify16(float *out, uint16_t *out16, enum jk_dtype t, const float *in, int C,
                    int T, int H, int W, int tubelet, int p, int nthreads) {
    if (!out16) {
        if (out) jkc_patchify(out, in, C, T, H, W, tubelet, p, nthreads);
        return;
    }
    const int ntok = (T / tubelet) * (H / p) * (W / p), F = C * tubelet * p * p;
    if (ntok <= 0 || F <= 0) return;
    dim3 grid, block;
    cols_rows(F, ntok, &grid, &block);
    JKC_LAUNCH(patchify_kernel<true>, grid, block, 0, jkc_stream(), out, out16, t == JK_BF16,
               in, T, H, W, tubelet, p, ntok, F);
    jkc_check_launch("patchify16");
}

void jkc_mean_rows(float *y, const float *x, size_t ldx, int n, int d, int nthreads) {
    (void)nthreads;
    if (n <= 0 || d <= 0) return;
    const dim3 grid((unsigned)((d + 31) / 32)), block(32, kMeanRows);
    JKC_LAUNCH(mean_rows_kernel, grid, block, 0, jkc_stream(), y, x, ldx, n, d);
    jkc_check_launch("mean_rows");
}

} // extern "C"
