/*
 * test_cuda_gemm.c — the CUDA table's matmul slots (kernels/cuda/gemm.cu), every weight
 * type, against the reference gemm (kernels/ref, exact weight conversion, double
 * accumulation) on the host.
 *
 * Block formats (q8_0 .. q6_K): random codes with f16 scales of a sensible size, now and
 * then zero or subnormal; K rounded up to the block. They are decoded exactly and then
 * take the f32 weights' arithmetic, so they get the f32 model below, and one more check:
 * the output equals, bit for bit, the f32 slot's on the decoded matrix (always for the
 * tensor-core kernel; for the GEMV in the aligned cases, where both read X 16 bytes at a
 * time and so sum in the same order). They run the fixed shapes and a third of the random
 * ones (with N / 4 for the K-quants, whose K is 256 or more).
 *
 * Cases, for each of the 16/32-bit types:
 *  - random shapes M, N, K in 1..300 (a quarter with M <= 8, the GEMV kernel), each with
 *    a random epilogue (store / GELU / residual add), bias or NULL, and either "aligned"
 *    (x and w at the start of their allocation, ldx % 4 == 0, ldw % 16 == 0: the 16-byte
 *    load variants) or "odd" (x and w offset by a few elements, ldx > K, ldy > N and
 *    ldw > row bytes by odd amounts: the element-wise variants); the tensor-core tile
 *    is left to the shape or forced to 64 x 64 or 128 x 128 (jkc_gemm_force_tile);
 *    some with X over a wide dynamic range (2^-16 .. 2^6, f16 subnormals included);
 *  - edge shapes (K = 1, N = 1, M = 9, sizes one past a tile or a K step) and ViT-like
 *    shapes scaled down for the emulator (qkv, fc1, fc2 of a 192-wide ViT at 197 tokens,
 *    the attentive-pool query M = 1 at K = 1024);
 *  - every output written exactly once: Y is NaN before the call (ADD: random values),
 *    the padding between N and ldy and 16 floats either side of Y are NaN and must stay
 *    NaN; the padding of X and of the W rows is NaN too, so a read past K shows;
 *  - f16 and bf16 once more with the pipelined kernel (gemm_pipe.cu, the switch
 *    JEPA_CUDA_KERNELS=pipe forced on): the fixed shapes, shapes around its 32-deep
 *    stages and random ones, X given as x16 (X rounded to the weight type, NaN padding;
 *    16-byte aligned for its cp.async variant, or offset with odd strides for its
 *    plain-load one), y16 of either 16-bit type or none. Besides the two checks below,
 *    pipe_call checks y16 = Y rounded bit for bit, the switch off ignoring x16 / y16, and
 *    the pipelined Y equal bit for bit to the default kernel's (the same mma chain);
 *  - the pipelined kernel's split-K (jkc_gemm_force_splitk, or its rule with the workspace
 *    gemm_ws asks for): Y bit for bit against each K range run as a one-pass call of its
 *    own and the ranges summed in order on the host (split_check), the same bits from a
 *    second call, every partial sum written and nothing past them, plus the two checks
 *    below (the model's bound holds for any order of the f32 sum).
 *  - f16 and bf16 with the wgmma table (gemm_wgmma.cu, JEPA_CUDA_KERNELS=wgmma; the
 *    emulated device is sm_90): ragged shapes around its 128 x 128 tile and 64-deep steps,
 *    every epilogue, the same checks as pipe_call's (so its Y is the default and the
 *    pipelined kernels' bits), and that it ran (jkc_gemm_wgmma_count) and the pipe table
 *    never runs it.
 *  - f32 the same way with its pipelined kernel: W given as wsplit, split by the test
 *    (hi = bf16(w), lo = bf16(w - hi), NaN padding between and after the halves), aligned
 *    for cp.async or offset with odd strides; Y must be gemm.cu's bf16x3 bits.
 *  - every block format with the pipelined kernel's own arithmetic (the codes on f16 mma,
 *    the scales per 32; block_pipe_case has its model and bound): ragged shapes, x16 in
 *    f16, x (f32) NaN so that reading it shows, y16 bit for bit.
 *
 * Which arithmetic a case gets is mirrored from gemm.cu: M <= 8 takes the GEMV kernel
 * (f32 products of the exact weights, f32 sums); larger M the tensor cores, where X is
 * rounded to the weight type (f16 / bf16, nearest even), or for f32 weights split as
 * x = xh + xl, w = wh + wl in bf16 and summed as xl wh + xh wl + xh wh ("bf16x3").
 *
 * Tolerance, from the arithmetic (u = 2^-24). Per output, t = sum_k x_k w_k + b and
 * S = sum_k |x_k w_k| + |b| + |y_old| (y_old only for ADD). Two checks:
 *
 *  1. Against the model: the test computes in double exactly what the kernel is meant to
 *     sum (the rounded or split operands above; their products are exact in f32: 11 + 11
 *     or 8 + 8 significant bits), t~ and S~ = the sum of the |terms| + |b| + |y_old|.
 *     The kernel's only freedom is the f32 summation of n = K terms (3K for bf16x3) plus
 *     bias and y_old: each addition rounds by at most 2u relative to a partial sum
 *     <= S~ (2u, not u: tensor cores truncate instead of rounding to nearest), so
 *         |y - y~| <= (n + 4) 2u S~ + u |y~|.
 *     A lost or doubled term costs ~S~/n, far above this for every n here, as does a
 *     lost bias or residual: this is the check that catches indexing bugs.
 *  2. Against the reference: the model's own error adds, per product,
 *         f16 X: 2^-11 |x w| (+ 2^-25 |w| below 2^-14, f16's subnormal spacing / 2),
 *         bf16 X: 2^-8 |x w|,
 *         bf16x3: (2^-16 (1 + 2^-8)^2 + 2^-16 (1 + 2^-8) + 2^-16) |x w| <= 3.05 2^-16 |x w|
 *           (|x - xh - xl| <= 2^-16 |x|, likewise w, and the dropped xl wl),
 *         GEMV: 0,
 *     so |y - y_ref| <= rep + (n + 4) 2u S + u |y_ref|, rep = sum of those.
 *  GELU outputs: |gelu'| <= 1.13 multiplies the pre-activation bound, and evaluating
 *  0.5 t (1 + erf(t / sqrt 2)) in f32 with erff within 2 ulp adds 1.5e-7 |t| + 4u |y|.
 *
 * Printed per dtype: the worst |y - y_ref| / S over all cases (the componentwise
 * accuracy) and, for the f32 slot, what plain bf16 (x and w rounded) would have given
 * on the same data. Exit 0: passed, 1: failed, 77: no CUDA device (skipped).
 * JEPA_SEED=... replays a run.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "runtime/dtype.h"
#include "tests/checkasm/checkasm.h"
#include "tests/checkasm/ops_check.h"   /* U, xmalloc, ops_act_sweep */
#include "tests/cuda/cuda_test.h"

/* gemm.cu's test hook: 0 = tile chosen by the shape, 64 or 128 = forced. */
void jkc_gemm_force_tile(int tile);
/* The switch of the pipelined kernels (JEPA_CUDA_KERNELS=pipe), set by the test. */
void jkc_kernels_force_pipe(int on);
/* gemm_pipe.cu's split-K hook: 0 = its rule, 1 = never split, n >= 2 = n ranges. */
void jkc_gemm_force_splitk(int n);
/* The wgmma table (JEPA_CUDA_KERNELS=wgmma), and how many matmuls gemm_wgmma.cu ran. */
void jkc_kernels_force_wgmma(int on);
long jkc_gemm_wgmma_count(void);

#define GEMV_MAX_M 8           /* gemm.cu: M <= this takes the f32 GEMV kernel */

static struct jk_kernels kt, kref;


/* Uniform on [-sqrt 3, sqrt 3): unit variance. */
static float rnd(void) { return (float)((2.0 * ca_uniform() - 1.0) * 1.7320508075688772); }

static const char *epi_name(enum jk_epilogue e) {
    return e == JK_EPI_STORE ? "store" : e == JK_EPI_GELU ? "gelu" : "add";
}

static double round_f16(float v) { return f16_to_f32(f32_to_f16(v)); }
static double round_bf16(float v) { return bf16_to_f32(f32_to_bf16(v)); }
static void split_bf16(float v, double *hi, double *lo) {
    const float h = bf16_to_f32(f32_to_bf16(v));
    *hi = h;
    *lo = bf16_to_f32(f32_to_bf16(v - h));
}

struct gcase {
    enum jk_dtype t;
    int M, N, K;
    enum jk_epilogue epi;
    int bias;
    int odd;      /* offsets and odd strides: the element-wise load variants */
    int tile;     /* 0 (by shape), 64, 128 */
    int wide;     /* X over 2^-16 .. 2^6 */
    int report;   /* print this case's accuracy */
    int pipe;     /* the pipelined kernel: f16 / bf16 X from x16, f32 W from wsplit
                   * (pipe_call); 2: the wgmma table (gemm_wgmma.cu where the operands are
                   * aligned) */
    int split;    /* pipe: 0 no workspace (one pass), n >= 2 split-K forced to n ranges,
                   * -1 a workspace and the kernel's rule (split_check) */
};

/* Worst |y - y_ref| / S per dtype, and for f32 weights what plain bf16 would give. */
static double acc_worst[JK_NDTYPES], bf16_plain_worst;
/* Worst err / tol of the two checks per dtype: how much margin the bounds leave. */
static double q1_worst[JK_NDTYPES], q2_worst[JK_NDTYPES];

static double gelu(double t) { return jk_ref_gelu_erf(t); }

/* An f16 scale for a block: about `size` with a random factor in [0.5, 1.5), now and then
 * zero or an f16 subnormal (the decoders must widen those exactly too). */
static void put_scale(uint8_t *p, double size) {
    const int r = ca_int(0, 15);
    uint16_t h = r == 0 ? 0 : r == 1 ? (uint16_t)ca_int(1, 0x3ff)
                             : f32_to_f16((float)(size * (0.5 + ca_uniform())));
    if (ca_int(0, 1)) h |= 0x8000;
    p[0] = (uint8_t)h, p[1] = (uint8_t)(h >> 8);
}

/* A random row of K weights of block format t: random codes (and K-quant sub-block
 * scales), f16 scales set so the weights are of size ~ws. */
static void fill_block_row(enum jk_dtype t, uint8_t *row, int K, double ws) {
    const int qk = jk_dtype_block(t);
    const size_t bb = jr_block_bytes((int)t);
    for (int b = 0; b < K / qk; b++) {
        uint8_t *blk = row + (size_t)b * bb;
        for (size_t i = 0; i < bb; i++) blk[i] = (uint8_t)ca_int(0, 255);
        switch (t) {
        case JK_Q8_0: put_scale(blk, ws / 80); break;
        case JK_Q4_0: put_scale(blk, ws / 5); break;
        case JK_Q5_0: put_scale(blk, ws / 10); break;
        case JK_Q4_1: put_scale(blk, ws / 5), put_scale(blk + 2, ws); break;
        case JK_Q5_1: put_scale(blk, ws / 10), put_scale(blk + 2, ws); break;
        case JK_Q4_K: case JK_Q5_K: put_scale(blk, ws / 500), put_scale(blk + 2, ws / 60); break;
        case JK_Q6_K: put_scale(blk + 208, ws / 2500); break;
        default: break;
        }
    }
}

/* ---- split-K (gemm_pipe.cu) ---- */

/* The workspace a forward plans for the pipelined matmul (gemm_ws with the switch on, for
 * K up to 2^20), allocated once; before each call its first SPLIT_NAN bytes (more than any
 * case here uses) are set to NaN (0xff bytes), so a partial sum not written shows. */
#define SPLIT_NAN ((size_t)17 * 300 * 300 * 4)
static void *split_dws, *split_nan;
static void *split_ws(void) {
    if (!split_dws) {
        jkc_kernels_force_pipe(1);
        const size_t wsb = kt.gemm_ws(1, 1 << 20);
        const size_t w480 = kt.gemm_ws(1, 480), w481 = kt.gemm_ws(1, 481);
        jkc_kernels_force_pipe(0);
        const size_t off = kt.gemm_ws(1, 1 << 20);
        /* 16 ranges of the largest case here (300 x 300) must fit; K of 15 steps is never
         * split by the rule, so it asks for nothing; the switch off asks for nothing */
        CHECK(wsb >= SPLIT_NAN && w480 == 0 && w481 == wsb && !off,
              "gemm_ws with the switch on: %zu (K 2^20), %zu (K 480), %zu (K 481); off: %zu",
              wsb, w480, w481, off);
        if (wsb < SPLIT_NAN) ct_die("split-K workspace too small");
        split_nan = xmalloc(SPLIT_NAN);
        memset(split_nan, 0xff, SPLIT_NAN);
        split_dws = ct_dev->alloc(ct_dev, wsb);
        if (!split_dws) ct_die("split-K workspace");
    }
    ct_dev->upload(ct_dev, split_dws, split_nan, SPLIT_NAN);
    return split_dws;
}

/* The ranges a split case runs (gemm_pipe.cu's contract): n forced, or by its rule, which
 * on these shapes (at most 4 tiles of 64 x 64, so on any GPU of 8 SMs or more the grid is
 * short and every range is resident) is min(nk / 8, 16); then ksteps = ceil(nk / n) steps
 * a range and ceil(nk / ksteps) ranges. 1: one pass (M <= 8 is the GEMV). */
static int split_count(const struct gcase *c) {
    const int nk = (c->K + 31) / 32;
    int n = c->split > 0 ? c->split : nk / 8;
    if (n > 16) n = 16;
    if (n > nk) n = nk;
    if (c->M <= GEMV_MAX_M || n < 2) return 1;
    const int ks = (nk + n - 1) / n;
    return (nk + ks - 1) / ks;
}

/* y = gelu_erf(t) as the device computes it: the f32 GEMV with X = 1, K = 1 (its product
 * 1 * t and the warp's sum with zeros are exact; check_gelu_sweep measures that function). */
static void dev_gelu(const float *t, size_t n, float *out) {
    const float one = 1.0f;
    float *dx = ct_upload_f(&one, 1), *dw = ct_upload_f(t, n), *dy = ct_upload_f(t, n);
    struct jk_gemm_args g = {.y = dy, .ldy = n, .x = dx, .ldx = 1, .w = dw, .ldw = 4, .M = 1,
                             .N = (int)n, .K = 1, .epi = JK_EPI_GELU, .nthreads = 1};
    kt.gemm[JK_F32](&g);
    ct_download(out, dy, n * sizeof(float));
    ct_free(dx), ct_free(dw), ct_free(dy);
}

/* Case c ran split into nsplit ranges, giving yg. Independently of the kernel's split
 * path: each range j is run as a one-pass pipelined call of its own (x16 and w advanced to
 * its first column, K its length, no bias, store, no workspace), and
 *     y = epi((((p_0 + p_1) + p_2) + ... + p_{n-1}) + b)
 * in f32 on the host (GELU: the device's own, dev_gelu) must be yg bit for bit. Then the
 * split call again gives the same bits (run to run), writes every partial sum of the
 * workspace and nothing past them. Nonzero on a failure (printed). */
static int split_check(const struct gcase *c, const struct jk_gemm_args *a0, int nsplit,
                       const uint16_t *dx16, size_t ldx16, const float *yold, const float *bias,
                       const float *yg, size_t ny, const char *what) {
    const int M = c->M, N = c->N, K = c->K, nk = (K + 31) / 32;
    const int ks = (nk + nsplit - 1) / nsplit;
    const size_t ldy = a0->ldy, mn = (size_t)M * N;
    float *sum = (float *)xmalloc(mn * sizeof(float)), *part = ca_alloc_guarded(ny);
    float *want = (float *)xmalloc(mn * sizeof(float));
    float *dp = ct_upload_guarded(part, ny);
    int bad = 0;
    jkc_kernels_force_pipe(1);
    jkc_gemm_force_splitk(1);
    for (int j = 0; j < nsplit; j++) {
        const int k0 = j * ks * 32, len = K - k0 < ks * 32 ? K - k0 : ks * 32;
        struct jk_gemm_args r = *a0;
        r.y = dp, r.x = a0->x + k0, r.x16 = dx16 + k0, r.ldx16 = ldx16;
        r.w = (const uint8_t *)a0->w + (size_t)2 * k0, r.K = len;
        r.bias = NULL, r.epi = JK_EPI_STORE, r.y16 = NULL, r.ws = NULL;
        kt.gemm[c->t](&r);
        ct_download_guarded(part, dp, ny);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                const float v = part[(size_t)m * ldy + n];
                float *s = &sum[(size_t)m * N + n];
                *s = j ? *s + v : v;
            }
    }
    jkc_gemm_force_splitk(0);
    jkc_kernels_force_pipe(0);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const size_t i = (size_t)m * N + n;
            const float t = sum[i] + (bias ? bias[n] : 0.0f);
            want[i] = c->epi == JK_EPI_ADD ? yold[(size_t)m * ldy + n] + t : t;
        }
    if (c->epi == JK_EPI_GELU) dev_gelu(want, mn, want);
    for (size_t i = 0; i < mn && !bad; i++) {
        const size_t m = i / (size_t)N, n = i % (size_t)N;
        if (memcmp(&want[i], &yg[m * ldy + n], 4)) {
            printf("FAIL %s split %d: y[%zu,%zu] = %.9g, the ranges summed in order give %.9g\n",
                   what, nsplit, m, n, (double)yg[m * ldy + n], (double)want[i]);
            bad = 1;
        }
    }

    /* run to run, and the workspace: nsplit x M x N partial sums written, nothing after */
    float *dy2 = ct_upload_guarded(yold, ny), *y2 = ca_alloc_guarded(ny);
    struct jk_gemm_args a2 = *a0;
    a2.y = dy2, a2.x16 = dx16, a2.ldx16 = ldx16, a2.y16 = NULL;
    a2.ws = split_ws();
    jkc_kernels_force_pipe(1);
    jkc_gemm_force_splitk(c->split > 0 ? c->split : 0);
    kt.gemm[c->t](&a2);
    jkc_gemm_force_splitk(0);
    jkc_kernels_force_pipe(0);
    ct_download_guarded(y2, dy2, ny);
    if (memcmp(y2 - CA_GUARD, yg - CA_GUARD, (ny + 2 * CA_GUARD) * sizeof(float))) {
        printf("FAIL %s split %d: a second call gave other bits\n", what, nsplit);
        bad = 1;
    }
    const size_t used = (size_t)nsplit * mn, tail = 1024;
    uint32_t *wsh = (uint32_t *)xmalloc((used + tail) * 4);
    ct_download(wsh, split_dws, (used + tail) * 4);
    size_t unwritten = 0, past = 0;
    for (size_t i = 0; i < used + tail; i++) {
        if (i < used && wsh[i] == 0xffffffffu) unwritten++;
        if (i >= used && wsh[i] != 0xffffffffu) past++;
    }
    if (unwritten || past) {
        printf("FAIL %s split %d: %zu partial sums not written, %zu words written past them\n",
               what, nsplit, unwritten, past);
        bad = 1;
    }
    free(wsh), free(sum), free(want);
    ca_free_guarded(part), ca_free_guarded(y2);
    ct_free_guarded(dp), ct_free_guarded(dy2);
    return bad;
}

/* The pipelined kernel (gemm_pipe.cu) on case c: a has the device X, W, bias and Y (y_old
 * in it) set up by run_case. Makes x16 = X rounded to the weight type (nearest even, the
 * host's conversion; NaN padding, so a read past K or M shows) and, two times in three,
 * y16 of a random 16-bit type; either 16-byte aligned with ldx16 % 8 == 0 (the cp.async
 * variant, when W is aligned too) or offset by 1..7 elements with an odd stride (the
 * plain-load variant). Runs the slot with the switch on into dy and downloads Y into yg
 * for run_case's checks against the model and the reference. Then, independently:
 *  - y16 is, bit for bit, Y rounded to y16_type, and nothing around it is written;
 *  - the same call with the switch off gives the bits of a call without x16 / y16 (today's
 *    kernels: x16 and y16 ignored, y16 left as it was);
 *  - the pipelined result has those bits too: given x16 = round(x), each output is the
 *    same chain of mma in the same K order as gemm.cu's kernel (M <= 8: the same GEMV).
 * Returns nonzero on a failure (printed). */
/* The wgmma cases whose x16 is offset (so gemm_wgmma.cu refuses it and the pipelined kernel
 * runs): a third of them, chosen by the shape, so the count the kernel must run is known. */
static int wg_offset(const struct gcase *c) { return (c->M + c->K) % 3 == 0; }

static int pipe_call(const struct gcase *c, const struct jk_gemm_args *a0, const float *xm,
                     size_t ldx, const float *wf, const float *yold, const float *bias,
                     float *dy, float *yg,
                     size_t ny) {
    const int M = c->M, N = c->N, K = c->K;
    const enum jk_dtype t = c->t;
    const int x16_odd = c->odd ? ca_int(0, 1) : c->pipe == 2 ? wg_offset(c) : ca_int(0, 2) == 0;
    /* the operand copy: x16 [M, K], or for f32 weights W split (wsplit [N, 2 x ldx16 / 2]) */
    const int split = t == JK_F32, rows = split ? N : M;
    size_t ldx16 = x16_odd ? (size_t)K + 2 * (size_t)ca_int(0, 4) + 1
                           : ((size_t)K + 7) / 8 * 8 + 8 * (size_t)ca_int(0, 1);
    if (split) ldx16 = x16_odd ? 2 * ldx16 : ((size_t)K + 7) / 8 * 16 + 16 * (size_t)ca_int(0, 1);
    const size_t x16off = x16_odd ? (size_t)ca_int(1, 7) : 0;
    const size_t nx16 = x16off + (size_t)rows * ldx16;
    uint16_t *x16 = (uint16_t *)xmalloc(nx16 * 2);
    for (size_t i = 0; i < nx16; i++) x16[i] = 0xffff;   /* NaN in f16 and bf16 */
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < K; k++) {
            uint16_t *row = x16 + x16off + (size_t)r * ldx16;
            if (split) {
                /* the host's split: hi = bf16(w), lo = bf16(w - hi), nearest even */
                const float v = wf[(size_t)r * K + k];
                row[k] = f32_to_bf16(v);
                row[ldx16 / 2 + k] = f32_to_bf16(v - bf16_to_f32(row[k]));
                continue;
            }
            const float v = xm[(size_t)r * ldx + k];
            row[k] = t == JK_F16 ? f32_to_f16(v) : f32_to_bf16(v);
        }
    const int with_y16 = ca_int(0, 2) != 0;
    const enum jk_dtype y16t = ca_int(0, 1) ? JK_F16 : JK_BF16;
    const size_t ldy16 = (size_t)N + (size_t)ca_int(0, 3), G = 16;
    const size_t ny16 = (size_t)M * ldy16 + 2 * G;   /* G guard elements either side */
    uint16_t *y16 = (uint16_t *)xmalloc(ny16 * 2), *y16b = (uint16_t *)xmalloc(ny16 * 2);
    for (size_t i = 0; i < ny16; i++) y16[i] = 0xfffe;
    uint16_t *dx16 = (uint16_t *)ct_upload(x16, nx16 * 2);
    uint16_t *dy16 = (uint16_t *)ct_upload(y16, ny16 * 2);
    float *yb = ca_alloc_guarded(ny), *yc = ca_alloc_guarded(ny);
    char what[96];
    snprintf(what, sizeof what, "%s M=%d N=%d K=%d %s %s%s", jk_dtype_name(t), M, N, K,
             epi_name(c->epi), c->pipe == 2 ? "wgmma" : "pipe",
             x16_odd || c->odd ? " (plain loads)" : "");
    int bad = 0;

    /* the pipelined call (split: with the workspace the table asks for, NaN-filled) */
    struct jk_gemm_args a = *a0;
    if (split) a.wsplit = dx16 + x16off, a.ldwsplit = ldx16;
    else a.x16 = dx16 + x16off, a.ldx16 = ldx16;
    a.y16 = with_y16 ? dy16 + G : NULL, a.ldy16 = ldy16, a.y16_type = y16t;
    if (c->split) a.ws = split_ws();
    if (c->pipe == 2) jkc_kernels_force_wgmma(1);   /* where aligned: gemm_wgmma.cu */
    else jkc_kernels_force_pipe(1);
    jkc_gemm_force_splitk(c->split > 0 ? c->split : 0);
    kt.gemm[t](&a);
    jkc_gemm_force_splitk(0);
    jkc_kernels_force_pipe(0);
    ct_download_guarded(yg, dy, ny);
    ct_download(y16b, dy16, ny16 * 2);
    for (size_t i = 0; i < ny16; i++) {
        const size_t r = (i - G) / ldy16, col = (i - G) % ldy16;
        const int inside = with_y16 && i >= G && i < G + (size_t)M * ldy16 && col < (size_t)N;
        uint16_t want = 0xfffe;
        if (inside) {
            const float v = yg[r * a0->ldy + col];
            want = y16t == JK_F16 ? f32_to_f16(v) : f32_to_bf16(v);
        }
        if (y16b[i] != want) {
            printf("FAIL %s: y16 element %zu is 0x%04x, expected 0x%04x (%s)\n", what, i,
                   y16b[i], want, inside ? "Y rounded" : "untouched");
            bad = 1;
            break;
        }
    }

    /* switch off with x16 / y16 set, then today's call without them */
    float *dyb = ct_upload_guarded(yold, ny), *dyc = ct_upload_guarded(yold, ny);
    uint16_t *dy16b = (uint16_t *)ct_upload(y16, ny16 * 2);
    a.y = dyb, a.y16 = dy16b + G;
    a.ws = NULL;
    kt.gemm[t](&a);
    struct jk_gemm_args ac = *a0;
    ac.y = dyc;
    kt.gemm[t](&ac);
    ct_download_guarded(yb, dyb, ny);
    ct_download_guarded(yc, dyc, ny);
    ct_download(y16b, dy16b, ny16 * 2);
    if (memcmp(y16b, y16, ny16 * 2)) {
        printf("FAIL %s: the switch off wrote y16\n", what);
        bad = 1;
    }
    /* split into ranges: Y is the ranges' sum (split_check), not the one-pass bits */
    const int nsplit = c->split ? split_count(c) : 1;
    if (nsplit > 1)
        bad |= split_check(c, a0, nsplit, dx16 + x16off, ldx16, yold, bias, yg, ny, what);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const size_t i = (size_t)m * a0->ldy + (size_t)n;
            if (memcmp(&yb[i], &yc[i], 4) || (nsplit == 1 && memcmp(&yg[i], &yc[i], 4))) {
                printf("FAIL %s: y[%d,%d] = %.9g (pipe), %.9g (switch off, x16 set), today's "
                       "kernel %.9g\n", what, m, n, (double)yg[i], (double)yb[i], (double)yc[i]);
                bad = 1;
                m = M;
                break;
            }
        }
    ct_free(dx16), ct_free(dy16), ct_free(dy16b), ct_free_guarded(dyb), ct_free_guarded(dyc);
    free(x16), free(y16), free(y16b);
    ca_free_guarded(yb), ca_free_guarded(yc);
    return bad;
}

/* Y [M, N] at stride ldy, NaN before the call: anything written outside it (the guards
 * around the ny elements, the padding between N and ldy)? */
static int wrote_outside(const float *yg, size_t ny, int M, int N, size_t ldy) {
    int outside = !ca_guard_ok(yg, ny);
    for (int m = 0; m < M; m++)
        for (size_t n = (size_t)N; n < ldy; n++)
            if (!isnan(yg[(size_t)m * ldy + n])) outside++;
    return outside;
}

static int run_case(const struct gcase *c) {
    const int M = c->M, N = c->N, K = c->K;
    const enum jk_dtype t = c->t;
    /* block formats are decoded to f32 exactly and then multiplied as f32 weights are */
    const int blk = jk_dtype_is_block(t), f32like = t == JK_F32 || blk;
    const size_t esz = t == JK_F32 ? 4 : 2;
    size_t ldx = (size_t)K, ldy = (size_t)N, ldw = blk ? jk_row_bytes(t, K) : (size_t)K * esz,
           xoff = 0, woff = 0;
    if (c->odd) {
        ldx += (size_t)ca_int(1, 9);
        ldy += (size_t)ca_int(1, 9);
        ldw += blk ? (size_t)ca_int(1, 9) : esz * (size_t)ca_int(1, 9);
        xoff = (size_t)ca_int(1, 3);                  /* floats */
        woff = blk ? (size_t)ca_int(1, 15)            /* bytes: never 16-byte aligned */
                   : esz * (size_t)ca_int(1, 16 / esz - 1);
    } else if (blk) {
        ldx = (ldx + 3) / 4 * 4 + 4 * (size_t)ca_int(0, 1);
        ldw += (size_t)ca_int(0, 1) * (size_t)ca_int(1, 40);   /* any byte stride */
        ldy += (size_t)ca_int(0, 3);
    } else {
        ldx = (ldx + 3) / 4 * 4 + 4 * (size_t)ca_int(0, 1);
        ldw = (ldw + 15) / 16 * 16 + 16 * (size_t)ca_int(0, 1);
        ldy += (size_t)ca_int(0, 3);
    }

    /* host data: X (NaN padding), W (0xff = NaN padding), bias, y_old */
    float *x = (float *)xmalloc((xoff + (size_t)M * ldx) * sizeof(float));
    for (size_t i = 0; i < xoff + (size_t)M * ldx; i++) x[i] = NAN;
    float *xm = x + xoff;
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++)
            xm[(size_t)m * ldx + k] = c->wide ? ldexpf(rnd(), ca_int(-16, 6)) : rnd();
    uint8_t *w = (uint8_t *)xmalloc(woff + (size_t)N * ldw);
    memset(w, 0xff, woff + (size_t)N * ldw);
    uint8_t *wm = w + woff;
    const float ws = 1.0f / sqrtf((float)K);
    float *wf = (float *)xmalloc((size_t)N * K * sizeof(float)); /* W as f32 [N, K] */
    for (int n = 0; n < N; n++) {
        if (blk) fill_block_row(t, wm + (size_t)n * ldw, K, ws);
        for (int k = 0; k < K && !blk; k++) {
            const float v = ws * rnd();
            uint8_t *dst = wm + (size_t)n * ldw + (size_t)k * esz;
            if (t == JK_F32) memcpy(dst, &v, 4);
            else {
                const uint16_t h = t == JK_F16 ? f32_to_f16(v) : f32_to_bf16(v);
                memcpy(dst, &h, 2);
            }
        }
        jk_ref_weight_row(wf + (size_t)n * K, wm, ldw, t, n, K);
    }
    float *bias = (float *)xmalloc((size_t)N * sizeof(float));
    for (int n = 0; n < N; n++) bias[n] = rnd();
    const size_t ny = (size_t)M * ldy;
    float *yold = ca_alloc_guarded(ny), *yr = ca_alloc_guarded(ny), *yg = ca_alloc_guarded(ny);
    for (size_t i = 0; i < ny; i++)
        if (c->epi == JK_EPI_ADD && i % ldy < (size_t)N) yold[i] = 3.0f * rnd();

    /* reference on the host */
    memcpy(yr - CA_GUARD, yold - CA_GUARD, (ny + 2 * CA_GUARD) * sizeof(float));
    void *wsr = xmalloc(kref.gemm_ws(1, K));
    struct jk_gemm_args a = {
        .y = yr, .ldy = ldy, .x = xm, .ldx = ldx, .w = wm, .ldw = ldw,
        .bias = c->bias ? bias : NULL, .M = M, .N = N, .K = K, .epi = c->epi,
        .nthreads = 1, .ws = wsr,
    };
    kref.gemm[t](&a);

    /* the same on the device */
    float *dx = ct_upload_f(x, xoff + (size_t)M * ldx);
    uint8_t *dw = (uint8_t *)ct_upload(w, woff + (size_t)N * ldw);
    float *db = ct_upload_f(bias, (size_t)N);
    float *dy = ct_upload_guarded(yold, ny);
    a.y = dy, a.x = dx + xoff, a.w = dw + woff, a.bias = c->bias ? db : NULL, a.ws = NULL;
    jkc_gemm_force_tile(c->tile);
    int pipe_bad = 0;
    if (c->pipe)
        pipe_bad = pipe_call(c, &a, xm, ldx, wf, yold, c->bias ? bias : NULL, dy, yg, ny);
    else kt.gemm[t](&a);
    if (!c->pipe) ct_download_guarded(yg, dy, ny);
    const int gemv = M <= GEMV_MAX_M;

    /* A block matrix must give the bits its decoded f32 matrix gives in the f32 slot
     * (gemm.cu): always in the tensor-core kernel, and in the GEMV when both read X 16
     * bytes at a time (aligned cases; the f32 slot then also reads W so). */
    int same_bits = 1;
    if (blk && (!gemv || !c->odd)) {
        float *dwf = ct_upload_f(wf, (size_t)N * K);
        float *dy2 = ct_upload_guarded(yold, ny);
        float *yf = ca_alloc_guarded(ny);
        struct jk_gemm_args af = a;
        af.y = dy2, af.w = dwf, af.ldw = (size_t)K * 4;
        kt.gemm[JK_F32](&af);
        ct_download_guarded(yf, dy2, ny);
        for (int m = 0; m < M && same_bits; m++)
            for (int n = 0; n < N; n++) {
                const size_t i = (size_t)m * ldy + n;
                if (memcmp(&yf[i], &yg[i], sizeof(float))) {
                    printf("FAIL %s M=%d N=%d K=%d: y[%d,%d] = %.9g, the f32 slot on the decoded "
                           "weights gives %.9g\n", jk_dtype_name(t), M, N, K, m, n, (double)yg[i],
                           (double)yf[i]);
                    same_bits = 0;
                    break;
                }
            }
        ct_free(dwf), ct_free_guarded(dy2), ca_free_guarded(yf);
    }
    jkc_gemm_force_tile(0);
    ct_free(dx), ct_free(dw), ct_free(db), ct_free_guarded(dy);

    /* element by element: the model (check 1) and the reference (check 2) */
    const int nterms = gemv || !f32like ? K : 3 * K;
    double rep_rel = 0.0, rep_sub = 0.0;
    if (!gemv) {
        rep_rel = t == JK_F16 ? 1.0 / 2048 : t == JK_BF16 ? 1.0 / 256 : 3.05 / 65536;
        rep_sub = t == JK_F16 ? 1.0 / 33554432 : 0.0;
    }
    int bad1 = 0, bad2 = 0, w1m = 0, w1n = 0, w2m = 0, w2n = 0;
    double q1 = -1.0, q2 = -1.0, y1w = 0.0, accw = 0.0, plainw = 0.0;
    double emax = 0.0, pmax = 0.0, rsq = 0.0;   /* max |y - y_ref|, plain bf16's, sum y_ref^2 */
    for (int m = 0; m < M; m++) {
        const float *xr = xm + (size_t)m * ldx;
        for (int n = 0; n < N; n++) {
            const float *wr = wf + (size_t)n * K;
            double tm = 0.0, sm = 0.0, sxw = 0.0, sw = 0.0, tp = 0.0;
            for (int k = 0; k < K; k++) {
                const double xv = xr[k], wv = wr[k];
                sxw += fabs(xv * wv);
                sw += fabs(wv);
                if (gemv) {
                    tm += xv * wv, sm += fabs(xv * wv);
                } else if (f32like) {
                    double xh, xl, wh, wl;
                    split_bf16(xr[k], &xh, &xl);
                    split_bf16(wr[k], &wh, &wl);
                    tm += xl * wh + xh * wl + xh * wh;
                    sm += fabs(xl * wh) + fabs(xh * wl) + fabs(xh * wh);
                    tp += round_bf16(xr[k]) * round_bf16(wr[k]);
                } else {
                    const double xq = t == JK_F16 ? round_f16(xr[k]) : round_bf16(xr[k]);
                    tm += xq * wv, sm += fabs(xq * wv);
                }
            }
            const size_t i = (size_t)m * ldy + (size_t)n;
            const double b = c->bias ? bias[n] : 0.0;
            const double yo = c->epi == JK_EPI_ADD ? yold[i] : 0.0;
            tm += b, sm += fabs(b) + fabs(yo);
            tp += b;
            const double s = sxw + fabs(b) + fabs(yo);
            double ymod, yplain;
            switch (c->epi) {
            case JK_EPI_GELU: ymod = gelu(tm), yplain = gelu(tp); break;
            case JK_EPI_ADD: ymod = yo + tm, yplain = yo + tp; break;
            default: ymod = tm, yplain = tp; break;
            }
            const double g = yg[i], r = yr[i];
            const double gf = c->epi == JK_EPI_GELU ? 1.13 : 1.0;
            const double ev = c->epi == JK_EPI_GELU ? 1.5e-7 * fabs(tm) + 4 * U * fabs(ymod) : 0.0;
            const double tol1 = gf * (nterms + 4) * 2 * U * sm + U * fabs(ymod) + ev + 1e-37;
            const double tol2 = gf * (rep_rel * sxw + rep_sub * sw + (nterms + 4) * 2 * U * s) +
                                U * fabs(r) + ev + 1e-37;
            const double d1 = fabs(g - ymod), d2 = fabs(g - r);
            if (!(d1 <= tol1)) bad1++;
            if (!(d2 <= tol2)) bad2++;
            if (!(d1 / tol1 <= q1)) q1 = d1 / tol1, w1m = m, w1n = n, y1w = ymod;
            if (!(d2 / tol2 <= q2)) q2 = d2 / tol2, w2m = m, w2n = n;
            if (s > 0 && d2 / s > accw) accw = d2 / s;
            if (d2 > emax) emax = d2;
            if (fabs(yplain - r) > pmax) pmax = fabs(yplain - r);
            rsq += r * r;
            if (f32like && !gemv && s > 0 && fabs(yplain - r) / s > plainw)
                plainw = fabs(yplain - r) / s;
        }
    }
    if (!c->wide && accw > acc_worst[t]) acc_worst[t] = accw;
    if (q1 > q1_worst[t]) q1_worst[t] = q1;
    if (q2 > q2_worst[t]) q2_worst[t] = q2;
    if (!c->wide && t == JK_F32 && plainw > bf16_plain_worst) bf16_plain_worst = plainw;

    char what[160];
    snprintf(what, sizeof what, "%s M=%d N=%d K=%d %s%s%s%s tile=%d%s", jk_dtype_name(t), M, N,
             K, epi_name(c->epi), c->bias ? " bias" : "", c->odd ? " odd" : " aligned",
             c->wide ? " wide" : "", c->tile, c->pipe == 2 ? " wgmma" : c->pipe ? " pipe" : "");
    int bad = !same_bits || pipe_bad;
    if (bad1) {
        const size_t i = (size_t)w1m * ldy + (size_t)w1n;
        printf("FAIL %s: %d outside the model's tolerance; worst [%d,%d] got %.9g model %.9g "
               "(err/tol %.3g)\n", what, bad1, w1m, w1n, (double)yg[i], y1w, q1);
        bad = 1;
    }
    if (bad2) {
        const size_t i = (size_t)w2m * ldy + (size_t)w2n;
        printf("FAIL %s: %d outside the reference's tolerance; worst [%d,%d] got %.9g ref %.9g "
               "(err/tol %.3g)\n", what, bad2, w2m, w2n, (double)yg[i], (double)yr[i], q2);
        bad = 1;
    }
    if (wrote_outside(yg, ny, M, N, ldy)) {
        printf("FAIL %s: wrote outside Y[M, N]\n", what);
        bad = 1;
    }
    if (bad) check_failed++;
    if (c->report) {
        const double rms = sqrt(rsq / ((double)M * N));
        printf("    %-5s M=%d N=%d K=%d %-5s: max |err| / S %.3g, max |err| / rms(y) %.3g", 
               jk_dtype_name(t), M, N, K, epi_name(c->epi), accw, emax / rms);
        if (t == JK_F32 && !gemv) printf(" (plain bf16: %.3g, %.3g)", plainw, pmax / rms);
        printf("\n");
    }

    free(x), free(w), free(wf), free(bias), free(wsr);
    ca_free_guarded(yold), ca_free_guarded(yr), ca_free_guarded(yg);
    return bad;
}

static struct gcase random_case(enum jk_dtype t) {
    struct gcase c;
    c.t = t;
    const int r = ca_int(0, 3);
    c.M = r == 0 ? ca_int(1, GEMV_MAX_M) : r == 1 ? ca_int(9, 40) : ca_int(1, 300);
    c.N = ca_int(1, 300);
    c.K = ca_int(1, 300);
    c.epi = (enum jk_epilogue)ca_int(0, 2);
    c.bias = ca_int(0, 1);
    c.odd = ca_int(0, 1);
    static const int tiles[] = {0, 64, 128};
    c.tile = tiles[ca_int(0, 2)];
    c.wide = ca_int(0, 4) == 0;
    c.report = 0;
    c.pipe = 0;
    c.split = 0;
    return c;
}

/* `test_cuda_gemm vit`: the full-size ViT-B / ViT-L matmuls at 197 and 257 tokens, every
 * dtype, accuracy printed per shape (minutes on the emulator; not part of the test run). */
static int run_vit(void) {
    static const int shapes[][3] = {
        {197, 2304, 768}, {197, 3072, 768}, {197, 768, 3072}, {257, 3072, 1024}, {257, 1024, 4096},
        {1, 1024, 1024},
    };
    for (int ti = 0; ti < 3; ti++) {
        const enum jk_dtype t = ti == 0 ? JK_F16 : ti == 1 ? JK_BF16 : JK_F32;
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            struct gcase c = {t, shapes[i][0], shapes[i][1], shapes[i][2],
                              (enum jk_epilogue)(i % 3), 1, 0, 0, 0, 1, 0, 0};
            run_case(&c);
        }
    }
    ct_close();
    return ca_finish("test_cuda_gemm");
}

/* The GELU epilogue (math.cuh gelu_erf) over every binade of [-16, 16]: every 1021st
 * float bit pattern, both signs (2.2 million values), as the f32 weights of one row each
 * against X = 1 (M = 1, K = 1: the GEMV kernel, whose f32 product 1 * w is exact), so
 * only the activation is measured. Against 0.5 x erfc(-x / sqrt 2) in double (no
 * cancellation for either sign). gelu_erf: x >= 0, x (0.5 + 0.5 erf) with erff (2 ulp on
 * the GPU): 5 u; x < 0, 0.5 x q(t) / (1 + 2z) (1 - l/2) e^(-h/2): the fit 1.5 u, z and t
 * 1.5 u, six roundings, expf 2 ulp, so 11 u (two more past x = -12.6, where e^(-h/4) is
 * squared): bound 13 u relative, and a subnormal result that relative error plus one
 * step (2^-149) for its rounding. */
static void check_gelu_sweep(void) {
    size_t m;
    float *w = ops_act_sweep(1021, &m);
    const int n = (int)m;
    float *y = ca_alloc_guarded(m);
    const float one = 1.0f;
    float *dx = ct_upload_f(&one, 1), *dw = ct_upload_f(w, (size_t)n);
    float *dy = ct_upload_guarded(y, (size_t)n);
    struct jk_gemm_args a = {.y = dy, .ldy = (size_t)n, .x = dx, .ldx = 1, .w = dw, .ldw = 4,
                             .M = 1, .N = n, .K = 1, .epi = JK_EPI_GELU, .nthreads = 1};
    kt.gemm[JK_F32](&a);
    ct_download_guarded(y, dy, (size_t)n);
    ct_free(dx), ct_free(dw), ct_free_guarded(dy);
    CHECK(ca_guard_ok(y, (size_t)n), "gelu epilogue sweep: wrote outside Y");
    const double rel = 13.0 * U;
    int bad = 0;
    double worst = 0.0, wx = 0.0;
    for (int i = 0; i < n; i++) {
        const double xv = w[i], e = 0.5 * xv * erfc(-xv * 0.70710678118654752440);
        const double d = fabs((double)y[i] - e);
        const double q = d / (rel * fabs(e) + (fabs(e) < 0x1p-126 ? 0x1p-149 : 0.0));
        if (!(q <= 1.0)) bad++;
        if (!(q <= worst)) worst = q, wx = xv;
    }
    printf("  f32 gelu epilogue: worst error %.3g of the bound (at x = %.9g) over %d floats in [-16, 16]\n",
           worst, wx, n);
    CHECK(!bad, "gelu epilogue vs 0.5 x erfc(-x / sqrt 2): %d of %d values beyond 13 u relative", bad, n);
    free(w);
    ca_free_guarded(y);
}

/* With the switch on, the calls the pipelined kernel does not serve (f32 weights, a block
 * format, f16 without x16; tensor-core and GEMV shapes) run the default kernels on x and
 * then write y16 from Y: Y must have the bits of the same call with the switch off, and
 * y16 must be Y rounded to y16_type, bit for bit. */
static void check_y16_others(void) {
    static const enum jk_dtype types[] = {JK_F32, JK_Q8_0, JK_F16};
    const int N = 50, K = 64;
    for (int ti = 0; ti < 3; ti++)
        for (int mi = 0; mi < 2; mi++) {
            const enum jk_dtype t = types[ti];
            const int M = mi ? 40 : 5;
            const enum jk_dtype y16t = (ti + mi) & 1 ? JK_F16 : JK_BF16;
            const size_t ldw = jk_row_bytes(t, K), ny = (size_t)M * N;
            float *x = (float *)xmalloc(sizeof(float) * (size_t)M * K);
            for (int i = 0; i < M * K; i++) x[i] = rnd();
            uint8_t *w = (uint8_t *)xmalloc(ldw * (size_t)N);
            for (int n = 0; n < N; n++) {
                uint8_t *row = w + (size_t)n * ldw;
                if (t == JK_Q8_0) fill_block_row(t, row, K, 0.125);
                for (int k = 0; k < K && t != JK_Q8_0; k++) {
                    const float v = 0.125f * rnd();
                    const uint16_t h = f32_to_f16(v);
                    if (t == JK_F32) memcpy(row + 4 * (size_t)k, &v, 4);
                    else memcpy(row + 2 * (size_t)k, &h, 2);
                }
            }
            float *dx = ct_upload_f(x, (size_t)M * K), *ya = (float *)xmalloc(4 * ny);
            float *yb = (float *)xmalloc(4 * ny), *dya = ct_upload_f(ya, ny);
            float *dyb = ct_upload_f(yb, ny);
            uint16_t *y16 = (uint16_t *)xmalloc(2 * ny);
            memset(y16, 0xff, 2 * ny);   /* NaN: never a rounded finite Y */
            uint16_t *dy16 = (uint16_t *)ct_upload(y16, 2 * ny);
            void *dw = ct_upload(w, ldw * (size_t)N);
            struct jk_gemm_args a = {.y = dya, .ldy = (size_t)N, .x = dx, .ldx = (size_t)K,
                                     .w = dw, .ldw = ldw, .M = M, .N = N, .K = K,
                                     .epi = JK_EPI_GELU, .nthreads = 1};
            kt.gemm[t](&a);
            a.y = dyb, a.y16 = dy16, a.ldy16 = (size_t)N, a.y16_type = y16t;
            jkc_kernels_force_pipe(1);
            kt.gemm[t](&a);
            jkc_kernels_force_pipe(0);
            ct_download(ya, dya, 4 * ny);
            ct_download(yb, dyb, 4 * ny);
            ct_download(y16, dy16, 2 * ny);
            int bad = 0;
            for (size_t i = 0; i < ny && !bad; i++) {
                const uint16_t want = y16t == JK_F16 ? f32_to_f16(yb[i]) : f32_to_bf16(yb[i]);
                bad = memcmp(&ya[i], &yb[i], 4) || y16[i] != want;
            }
            CHECK(!bad, "%s M=%d with the switch on, x16 absent: Y not today's bits or y16 not "
                  "Y rounded to %s", jk_dtype_name(t), M, jk_dtype_name(y16t));
            ct_free(dx), ct_free(dya), ct_free(dyb), ct_free(dy16), ct_free(dw);
            free(x), free(w), free(ya), free(yb), free(y16);
        }
}

/* ---- the pipelined kernel on block-format weights (gemm_pipe.cu, jkc_gemm_pipe_blk) ----
 * X from its f16 copy x16; per 32-deep slice s of K (one block, or one K-quant sub-block;
 * q6_K: per 16) the kernel sums P_s = sum_k x16_k q_k (codes) and, for the formats with an
 * offset, S_s = sum_k x16_k by mma (exact products, f32 sums), then acc = fma(d_s, P_s,
 * acc) and acc = fma(m_s, S_s, acc). The model is that sum in exact arithmetic,
 *     y~ = sum_k x16_k w~_k,  w~_k = d_s q_k + m_s  (the weight before any rounding),
 * and its error bound (u = 2^-24):
 *   - each P_s (S_s) is a chain of at most 33 additions into a zeroed f32 fragment, each
 *     off by at most 2u (tensor cores truncate) of a partial sum <= sum |x16 q|: so
 *     |d_s| |P^_s - P_s| + |m_s| |S^_s - S_s| <= 2u 34 A_s,
 *     A_s = sum_k |x16_k| (|w~_k - m_s| + |m_s|);
 *   - each fma rounds once, by at most u of a value <= A' = sum_s A_s + |b| + |y_old|;
 *     F of them (slices, times two with an offset; q6_K two per slice), then the bias and
 *     the residual add:
 *         |y - y~| <= 68 u A + (F + 2) u A' + u |y~|    (GELU: as run_case's).
 * A scale or an offset applied to the wrong row or slice, a lost slice or a lost S costs
 * about A / (number of slices), far above this bound.
 * Check 2, against the f64 product of x16 and the decoded weights w (kernels/ref's f32
 * decoding, which rounds d q + m once: |w - w~| <= u |w~|): the bound above plus
 * 2u sum |x16 w|.
 * w~ from w: m_s from the block bytes, q = round((w - m_s) / d_s) (d_s from the bytes too),
 * exact in double. */
static double h16le(const uint8_t *p) { return f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* d and m of the slice of K-offset k (a multiple of 16) of a block row of type t. */
static void slice_dm(enum jk_dtype t, const uint8_t *row, int k, double *d, double *m) {
    const uint8_t *b = row + (size_t)(k / jk_dtype_block(t)) * jr_block_bytes((int)t);
    *m = 0.0;
    if (t == JK_Q4_K || t == JK_Q5_K) {
        int sc, mn;
        jr_scale_min_k4(b + 4, k % 256 / 32, &sc, &mn);
        *d = h16le(b) * sc, *m = -h16le(b + 2) * mn;
    } else if (t == JK_Q6_K) {
        *d = h16le(b + 208) * (int8_t)b[192 + k % 256 / 16];
    } else {
        *d = h16le(b);
        if (t == JK_Q4_1 || t == JK_Q5_1) *m = h16le(b + 2);
    }
}

static double blk_q1_worst[JK_NDTYPES], blk_q2_worst[JK_NDTYPES];

static int block_pipe_case(enum jk_dtype t, int M, int N, int K, int odd, enum jk_epilogue epi,
                           int with_bias) {
    const int offset = t == JK_Q4_1 || t == JK_Q5_1 || t == JK_Q4_K || t == JK_Q5_K;
    const int sl = t == JK_Q6_K ? 16 : 32;   /* slice: the span of one scale */
    const size_t ldx16 = odd ? (size_t)K + 2 * (size_t)ca_int(0, 4) + 1
                             : (size_t)K + 8 * (size_t)ca_int(0, 1);
    const size_t x16off = odd ? (size_t)ca_int(1, 7) : 0, woff = odd ? (size_t)ca_int(1, 15) : 0;
    const size_t ldw = jk_row_bytes(t, K) + (size_t)ca_int(0, 1) * (size_t)ca_int(1, 40);
    const size_t ldy = (size_t)N + (size_t)ca_int(0, 3), ny = (size_t)M * ldy;
    const size_t nx16 = x16off + (size_t)M * ldx16;
    uint16_t *x16 = (uint16_t *)xmalloc(nx16 * 2);
    for (size_t i = 0; i < nx16; i++) x16[i] = 0xffff;   /* NaN padding */
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) x16[x16off + (size_t)m * ldx16 + k] = f32_to_f16(rnd());
    uint8_t *w = (uint8_t *)xmalloc(woff + (size_t)N * ldw);
    memset(w, 0xff, woff + (size_t)N * ldw);
    float *wf = (float *)xmalloc(sizeof(float) * (size_t)N * K);
    for (int n = 0; n < N; n++) {
        fill_block_row(t, w + woff + (size_t)n * ldw, K, 1.0 / sqrt((double)K));
        jk_ref_weight_row(wf + (size_t)n * K, w + woff, ldw, t, n, K);
    }
    float *bias = (float *)xmalloc(sizeof(float) * (size_t)N);
    for (int n = 0; n < N; n++) bias[n] = rnd();
    float *yold = ca_alloc_guarded(ny), *yg = ca_alloc_guarded(ny);
    for (size_t i = 0; i < ny; i++)
        if (epi == JK_EPI_ADD && i % ldy < (size_t)N) yold[i] = 3.0f * rnd();
    const enum jk_dtype y16t = ca_int(0, 1) ? JK_F16 : JK_BF16;
    const size_t G = 16, ny16 = (size_t)M * ldy + 2 * G;
    uint16_t *y16 = (uint16_t *)xmalloc(ny16 * 2);
    for (size_t i = 0; i < ny16; i++) y16[i] = 0xfffe;

    uint16_t *dx16 = (uint16_t *)ct_upload(x16, nx16 * 2);
    uint16_t *dy16 = (uint16_t *)ct_upload(y16, ny16 * 2);
    uint8_t *dw = (uint8_t *)ct_upload(w, woff + (size_t)N * ldw);
    float *db = ct_upload_f(bias, (size_t)N), *dy = ct_upload_guarded(yold, ny);
    /* x (f32) is required by the slot's contract; the pipelined kernel must not read it:
     * NaN everywhere */
    float *xnan = (float *)xmalloc(sizeof(float) * (size_t)M * K);
    for (size_t i = 0; i < (size_t)M * K; i++) xnan[i] = NAN;
    float *dx = ct_upload_f(xnan, (size_t)M * K);
    struct jk_gemm_args a = {.y = dy, .ldy = ldy, .x = dx, .ldx = (size_t)K, .w = dw + woff,
                             .ldw = ldw, .bias = with_bias ? db : NULL, .M = M, .N = N, .K = K,
                             .epi = epi, .nthreads = 1, .x16 = dx16 + x16off, .ldx16 = ldx16,
                             .y16 = dy16 + G, .ldy16 = ldy, .y16_type = y16t};
    jkc_kernels_force_pipe(1);
    kt.gemm[t](&a);
    jkc_kernels_force_pipe(0);
    ct_download_guarded(yg, dy, ny);
    ct_download(y16, dy16, ny16 * 2);

    char what[128];
    snprintf(what, sizeof what, "%s M=%d N=%d K=%d %s%s pipe%s", jk_dtype_name(t), M, N, K,
             epi_name(epi), with_bias ? " bias" : "", odd ? " (plain loads)" : "");
    int bad = 0, bad1 = 0, bad2 = 0;
    double q1 = 0.0, q2 = 0.0;
    const int F = (K / sl) * (offset ? 2 : 1);
    for (int m = 0; m < M; m++) {
        const uint16_t *xr = x16 + x16off + (size_t)m * ldx16;
        for (int n = 0; n < N; n++) {
            const uint8_t *row = w + woff + (size_t)n * ldw;
            const float *wr = wf + (size_t)n * K;
            double tm = 0.0, A = 0.0, tr = 0.0, sxw = 0.0, d = 0.0, mo = 0.0;
            for (int k = 0; k < K; k++) {
                if (k % sl == 0) slice_dm(t, row, k, &d, &mo);
                const double xv = f16_to_f32(xr[k]);
                /* the code: exact, as the decoded weight is d q + m rounded once */
                const double q = d != 0.0 ? nearbyint(((double)wr[k] - mo) / d) : 0.0;
                const double wt = d * q + mo;
                tm += xv * wt;
                A += fabs(xv) * (fabs(wt - mo) + fabs(mo));
                tr += xv * wr[k];
                sxw += fabs(xv * wr[k]);
            }
            const size_t i = (size_t)m * ldy + (size_t)n;
            const double b = with_bias ? bias[n] : 0.0, yo = epi == JK_EPI_ADD ? yold[i] : 0.0;
            tm += b, tr += b;
            double ym, yr;
            switch (epi) {
            case JK_EPI_GELU: ym = gelu(tm), yr = gelu(tr); break;
            case JK_EPI_ADD: ym = yo + tm, yr = yo + tr; break;
            default: ym = tm, yr = tr; break;
            }
            const double gf = epi == JK_EPI_GELU ? 1.13 : 1.0;
            const double ev = epi == JK_EPI_GELU ? 1.5e-7 * fabs(tm) + 4 * U * fabs(ym) : 0.0;
            const double A2 = A + fabs(b) + fabs(yo);
            const double tol1 = gf * (68 * U * A + (F + 2) * U * A2) + U * fabs(ym) + ev + 1e-37;
            const double tol2 = tol1 + gf * 2 * U * sxw;
            const double g = yg[i], e1 = fabs(g - ym) / tol1, e2 = fabs(g - yr) / tol2;
            if (!(e1 <= 1.0)) {
                if (!bad1++)
                    printf("FAIL %s: y[%d,%d] = %.9g, the model %.9g (err/tol %.3g)\n", what, m, n,
                           g, ym, e1);
            }
            if (!(e2 <= 1.0)) {
                if (!bad2++)
                    printf("FAIL %s: y[%d,%d] = %.9g, x16 . decoded W %.9g (err/tol %.3g)\n", what,
                           m, n, g, yr, e2);
            }
            if (e1 > q1) q1 = e1;
            if (e2 > q2) q2 = e2;
        }
    }
    bad = bad1 || bad2;
    if (q1 > blk_q1_worst[t]) blk_q1_worst[t] = q1;
    if (q2 > blk_q2_worst[t]) blk_q2_worst[t] = q2;
    /* y16: Y rounded, nothing around it written; Y: nothing outside [M, N] */
    for (size_t i = 0; i < ny16; i++) {
        const size_t r = (i - G) / ldy, col = (i - G) % ldy;
        const int inside = i >= G && i < G + (size_t)M * ldy && col < (size_t)N;
        const float v = inside ? yg[r * ldy + col] : 0.0f;
        const uint16_t want = !inside ? 0xfffe : y16t == JK_F16 ? f32_to_f16(v) : f32_to_bf16(v);
        if (y16[i] != want) {
            printf("FAIL %s: y16 element %zu is 0x%04x, expected 0x%04x\n", what, i, y16[i], want);
            bad = 1;
            break;
        }
    }
    if (wrote_outside(yg, ny, M, N, ldy)) {
        printf("FAIL %s: wrote outside Y[M, N]\n", what);
        bad = 1;
    }
    ct_free(dx16), ct_free(dy16), ct_free(dw), ct_free(db), ct_free_guarded(dy), ct_free(dx);
    free(x16), free(w), free(wf), free(bias), free(y16), free(xnan);
    ca_free_guarded(yold), ca_free_guarded(yg);
    if (bad) check_failed++;
    return bad;
}

/* Every block format through the pipelined kernel (its 64 x 64 tile): ragged M and N
 * (not tile multiples), K of one block, K shorter than the pipeline's three stages in
 * flight, K of a few steps not a multiple of the four stages, both X loads (cp.async /
 * plain), every epilogue. */
static void check_block_pipe(void) {
    /* M, N, K in blocks of 32 (the K-quants: one 256 block up to 2, else two) */
    static const int shapes[][3] = {
        {9, 7, 1}, {70, 65, 2}, {130, 129, 5}, {33, 72, 3}, {17, 130, 1},
    };
    const int ns = (int)(sizeof shapes / sizeof *shapes);
    for (int t = JK_Q8_0; t < JK_NDTYPES; t++) {
        const int qk = jk_dtype_block((enum jk_dtype)t);
        int tf = 0;
        for (int i = 0; i < ns; i++) {
            const int K = qk == 32 ? 32 * shapes[i][2] : 256 * (shapes[i][2] > 2 ? 2 : 1);
            tf += block_pipe_case((enum jk_dtype)t, shapes[i][0], shapes[i][1], K, (i + t) % 2,
                                  (enum jk_epilogue)((i + t) % 3), (i + t) % 3 != 1);
        }
        printf("  %s pipe (codes on f16 mma): %d shapes, %d failed; worst err/tol %.2g (model), "
               "%.2g (x16 . decoded W)\n", jk_dtype_name((enum jk_dtype)t), ns, tf,
               blk_q1_worst[t], blk_q2_worst[t]);
    }
}

int main(int argc, char **argv) {
    ca_seed("test_cuda_gemm");
    /* argument: random cases per dtype (default 24: ~10 s on the emulator), or "vit";
     * then "reduced" (the sanitizer build, where the emulator runs ~6x slower): the block
     * formats skip the four fixed ViT-like shapes above M N K = 4e6 (their decoding is the
     * same at every shape; every tile edge is in the smaller ones) */
    const int vit = argc > 1 && !strcmp(argv[1], "vit");
    const int nrand = argc > 1 && !vit ? atoi(argv[1]) : 24;
    const int reduced = argc > 2 && !strcmp(argv[2], "reduced");
    struct jk_device *d = ct_open("test_cuda_gemm");
    d->init_kernels(d, &kt, 0);
    jk_init_ref(&kref);
    if (vit) return run_vit();

    /* M, N, K: edges of every tile and K step, then ViT-like shapes scaled down */
    static const int fixed[][4] = {
        /* M, N, K, tile */
        {9, 1, 1, 0},      {1, 1, 1, 0},      {8, 3, 5, 0},      {2, 300, 31, 0},
        {17, 3, 33, 64},   {65, 65, 31, 64},  {64, 64, 32, 64},  {129, 129, 33, 128},
        {128, 128, 64, 128}, {16, 8, 16, 0},  {3, 40, 1024, 0},  {1, 96, 1024, 0},
        {197, 576, 192, 0}, {197, 192, 96, 128}, {50, 768, 192, 0}, {197, 192, 768, 0},
    };
    const int nfixed = (int)(sizeof fixed / sizeof *fixed);
    int cases = 0, fails = 0;
    /* the 16/32-bit types with every case; the block formats (K rounded up to their block)
     * with the fixed shapes and a third of the random ones */
    for (int ti = 0; ti < JK_NDTYPES; ti++) {
        const enum jk_dtype t = ti == 0 ? JK_F16 : ti == 1 ? JK_BF16 : ti == 2 ? JK_F32 : (enum jk_dtype)ti;
        const int qk = jk_dtype_block(t);
        if (!kt.gemm[t]) {
            printf("FAIL: the CUDA table has no gemm[%s]\n", jk_dtype_name(t));
            check_failed++;
            continue;
        }
        int tc = 0, tf = 0;
        for (int f = 0; f < nfixed; f++) {
            const int K = (fixed[f][2] + qk - 1) / qk * qk;
            if (qk == 256 && f % 2) continue;   /* K >= 256: half the shapes are enough */
            if (reduced && qk > 1 && (double)fixed[f][0] * fixed[f][1] * K > 4e6) continue;
            struct gcase c = {t, fixed[f][0], fixed[f][1], K,
                              (enum jk_epilogue)((f + ti) % 3), (f + ti) & 1, f % 3 == 1,
                              fixed[f][3], 0, K >= 96 && qk == 1, 0, 0};
            tf += run_case(&c);
            tc++;
        }
        for (int r = 0; r < (qk == 1 ? nrand : (nrand + 2) / 3); r++) {
            struct gcase c = random_case(t);
            c.K = (c.K + qk - 1) / qk * qk;
            if (qk == 256) c.N = (c.N + 3) / 4;   /* the emulator's time: K is 256 .. 512 */
            tf += run_case(&c);
            tc++;
        }
        printf("  %s: %d shapes, %d failed; worst |y - y_ref| / S = %.3g (X not wide); "
               "worst err/tol %.2g (model), %.2g (reference)\n",
               jk_dtype_name(t), tc, tf, acc_worst[t], q1_worst[t], q2_worst[t]);
        cases += tc, fails += tf;
    }
    printf("  f32 as plain bf16 (x and w rounded) would give %.3g on the same data (M > 8)\n",
           bf16_plain_worst);

    /* The pipelined kernel (JEPA_CUDA_KERNELS=pipe), f16 and bf16 weights: the fixed shapes,
     * shapes around its stages (K below one 32-deep stage, one stage and a bit, whole
     * stages, more steps than stages), and the random ones (a quarter with M <= 8: the
     * GEMV, then y16 from Y). */
    static const int pipe_fixed[][4] = {
        {130, 200, 40, 128}, {200, 72, 160, 64}, {33, 130, 97, 128}, {100, 100, 7, 0},
        {9, 17, 250, 64},    {257, 129, 300, 128}, {5, 40, 70, 0},   {72, 64, 128, 64},
    };
    const int npfixed = (int)(sizeof pipe_fixed / sizeof *pipe_fixed);
    for (int ti = 0; ti < 3; ti++) {
        const enum jk_dtype t = ti == 0 ? JK_F16 : ti == 1 ? JK_BF16 : JK_F32;
        int tc = 0, tf = 0;
        q1_worst[t] = q2_worst[t] = 0.0;
        for (int f = 0; f < nfixed + npfixed; f++) {
            const int *s = f < nfixed ? fixed[f] : pipe_fixed[f - nfixed];
            struct gcase c = {t, s[0], s[1], s[2], (enum jk_epilogue)((f + ti) % 3), (f + ti) & 1,
                              f % 3 == 1, s[3], f % 5 == 4, 0, 1, 0};
            tf += run_case(&c);
            tc++;
        }
        for (int r = 0; r < nrand; r++) {
            struct gcase c = random_case(t);
            c.pipe = 1;
            tf += run_case(&c);
            tc++;
        }
        printf("  %s pipe: %d shapes, %d failed; worst err/tol %.2g (model), %.2g (reference)\n",
               jk_dtype_name(t), tc, tf, q1_worst[t], q2_worst[t]);
    }

    /* Split-K (gemm_pipe.cu): ranges forced (K not a multiple of the ranges, ranges of one
     * 32-deep step, a last range of one column, more ranges asked than K has steps, M or N
     * below a tile, both tiles) and chosen by the kernel's rule (17 and 33 steps: 2 and 4
     * ranges; 15 steps: none, the one-pass bits); every epilogue, bias or not, aligned or
     * odd strides, y16 or not, as pipe_call draws them. */
    static const int split_fixed[][5] = {
        /* M, N, K, tile, split */
        {40, 72, 300, 64, 3},  {9, 5, 97, 0, 4},      {130, 200, 33, 128, 2}, {65, 130, 260, 64, 16},
        {17, 300, 128, 64, 2}, {100, 100, 520, 0, -1}, {33, 40, 1040, 0, -1},  {70, 90, 480, 0, -1},
        {24, 48, 200, 128, 5},
    };
    for (int ti = 0; ti < 2; ti++) {
        const enum jk_dtype t = ti == 0 ? JK_F16 : JK_BF16;
        const int nsf = (int)(sizeof split_fixed / sizeof *split_fixed);
        int tf = 0;
        q1_worst[t] = q2_worst[t] = 0.0;
        for (int f = 0; f < nsf; f++) {
            const int *s = split_fixed[f];
            struct gcase c = {t, s[0], s[1], s[2], (enum jk_epilogue)((f + ti) % 3), (f + ti) & 1,
                              (f + ti) % 3 == 2, s[3], 0, 0, 1, s[4]};
            tf += run_case(&c);
        }
        printf("  %s split-K: %d shapes, %d failed; worst err/tol %.2g (model), %.2g (reference)\n",
               jk_dtype_name(t), nsf, tf, q1_worst[t], q2_worst[t]);
    }
    if (split_dws) ct_free(split_dws);
    free(split_nan);
    /* The wgmma table (JEPA_CUDA_KERNELS=wgmma; the emulated device is sm_90): f16 and
     * bf16, shapes ragged in M, N and K around its 128 x 128 tile and 64-deep steps (K below
     * one step, one and a bit, more steps than its 4 stages), every epilogue, aligned
     * operands (a third, by wg_offset, with x16 offset: the pipelined fallback). The same
     * checks as the pipelined kernel's: the model, the reference, y16 = Y rounded and Y the default
     * kernel's bits (so the pipelined kernel's too). */
    static const int wg_shapes[][3] = {
        {130, 200, 40}, {200, 72, 160}, {33, 130, 97}, {100, 100, 7}, {9, 17, 250},
        {257, 129, 300}, {140, 260, 520}, {72, 64, 128}, {128, 128, 64}, {20, 300, 65},
    };
    const long wg0 = jkc_gemm_wgmma_count();
    int wg_cases = 0, wg_aligned = 0;
    for (int ti = 0; ti < 2; ti++) {
        const enum jk_dtype t = ti == 0 ? JK_F16 : JK_BF16;
        int tf = 0;
        q1_worst[t] = q2_worst[t] = 0.0;
        for (int f = 0; f < (int)(sizeof wg_shapes / sizeof *wg_shapes); f++) {
            const int *s = wg_shapes[f];
            struct gcase c = {t, s[0], s[1], s[2], (enum jk_epilogue)((f + ti) % 3),
                              (f + ti) & 1, 0, 0, f % 5 == 4, 0, 2, 0};
            tf += run_case(&c);
            wg_aligned += !wg_offset(&c);
            wg_cases++;
        }
        printf("  %s wgmma: %d shapes, %d failed; worst err/tol %.2g (model), %.2g "
               "(reference)\n", jk_dtype_name(t), (int)(sizeof wg_shapes / sizeof *wg_shapes),
               tf, q1_worst[t], q2_worst[t]);
    }
    const long wg_ran = jkc_gemm_wgmma_count() - wg0;
    printf("  the wgmma kernel ran %ld of the %d calls (the others: x16 offset, pipelined)\n",
           wg_ran, wg_cases);
    CHECK(wg_ran == wg_aligned, "the wgmma table ran the wgmma kernel %ld times in %d calls, "
          "not on exactly the %d with aligned operands", wg_ran, wg_cases, wg_aligned);
    jkc_kernels_force_pipe(1);
    const long wg1 = jkc_gemm_wgmma_count();
    for (int ti = 0; ti < 2; ti++) {
        struct gcase c = {ti ? JK_BF16 : JK_F16, 130, 200, 40, JK_EPI_STORE, 1, 0, 0, 0, 0, 1, 0};
        run_case(&c);
    }
    CHECK(jkc_gemm_wgmma_count() == wg1, "the pipe table ran the wgmma kernel");
    jkc_kernels_force_pipe(-1);

    check_block_pipe();
    check_y16_others();
    check_gelu_sweep();
    (void)cases, (void)fails;
    ct_close();
    return ca_finish("test_cuda_gemm");
}
