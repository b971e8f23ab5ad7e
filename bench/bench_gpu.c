/*
 * bench_gpu.c — `jepa bench gpu`: the CUDA kernel table on the shapes of the V-JEPA 2
 * encoders, in TFLOP/s.
 *
 *   matmul  f16 / bf16 / f32 weights (bf16x3 for f32) on the ViT-L and ViT-B layer shapes,
 *           M = 2048 tokens (one 16-frame 256^2 clip) and 8 x 2048 (a batch of 8);
 *           --kernel pipe: the pipelined kernel (kernels/cuda/gemm_pipe.cu) for f16 / bf16,
 *           with X also given as its 16-bit copy x16 (the same values rounded to the
 *           weight's type, as a forward's previous op writes it); f32 weights run the
 *           default kernel either way; its rows also run M = 577 (a batch-1 image of 577
 *           tokens, where the grid of tiles is short) and pass the workspace a forward
 *           plans (gemm_ws: split-K where its rule splits), and at M = 577 each shape is
 *           timed again without it ("no split-K": the one-pass kernel); --kernel wgmma:
 *           the same rows through the wgmma table (kernels/cuda/gemm_wgmma.cu on an sm_90
 *           device, else the pipelined kernel); q8_0 and q4_K on the ViT-L shapes (random codes
 *           and scales; --kernel pipe: the codes on f16 tensor cores, x16 in f16)
 *   attn    2048 tokens, head_dim 64 x 16 heads (ViT-L) and head_dim 32 x 12 heads (the
 *           V-JEPA 2 predictor), full and block-causal (8 frames of 256 tokens)
 *
 * Each case is queued `reps` times back to back on the device's stream and timed from
 * the host around a final sync, so launch gaps count (as they do in a forward); the
 * median of 5 such batches is reported. The baselines (cuBLAS through torch.matmul,
 * PyTorch SDPA, the device's measured bf16 matrix peak) are measured by
 * bench/gpu_torch.py in the same bench/gpu.sh run.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "kernels/device.h"
#include "kernels/kernels.h"
#include "runtime/dtype.h"

static const struct { int N, K; const char *what; } gpu_mm_shapes[] = {
    {3072, 1024, "ViT-L qkv"}, {1024, 1024, "ViT-L proj"}, {4096, 1024, "ViT-L fc1"},
    {1024, 4096, "ViT-L fc2"}, {2304, 768, "ViT-B qkv"},   {3072, 768, "ViT-B fc1"},
    {768, 3072, "ViT-B fc2"},
};

static float rnd(uint64_t *s) {   /* splitmix64 -> uniform in [-1, 1) */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * 0x1.0p-52 - 1.0);
}

/* The host buffer h (malloc'd, freed here) copied to a new device buffer; NULL on failure. */
static void *dev_take(struct jk_device *d, void *h, size_t bytes) {
    void *p = d->alloc(d, bytes);
    if (p && d->upload(d, p, h, bytes)) {
        d->free(d, p);
        p = NULL;
    }
    free(h);
    return p;
}

/* Device buffer of n floats scaled random values (f32), or the same values as 16-bit. */
static void *dev_random(struct jk_device *d, size_t n, enum jk_dtype t, float scale, uint64_t *seed) {
    size_t bytes = n * (t == JK_F32 ? 4 : 2);
    void *h = malloc(bytes ? bytes : 1);
    if (!h) return NULL;
    for (size_t i = 0; i < n; i++) {
        float v = scale * rnd(seed);
        if (t == JK_F32) ((float *)h)[i] = v;
        else if (t == JK_F16) ((uint16_t *)h)[i] = f32_to_f16(v);
        else ((uint16_t *)h)[i] = f32_to_bf16(v);
    }
    return dev_take(d, h, bytes);
}

/* Device buffer of N rows of K weights of block format t: random bytes (codes, K-quant
 * sub-block scales) with the f16 scales set so the weights are about 0.05 (finite). */
static void *dev_random_blocks(struct jk_device *d, int N, int K, enum jk_dtype t, uint64_t *seed) {
    const size_t bytes = (size_t)N * jk_row_bytes(t, K), bb = jr_block_bytes((int)t);
    unsigned char *h = malloc(bytes);
    if (!h) return NULL;
    for (size_t i = 0; i < bytes; i++) h[i] = (unsigned char)((rnd(seed) + 1.0f) * 127.5f);
    const uint16_t dq = f32_to_f16(t == JK_Q8_0 ? 8e-4f : 2e-4f), dm = f32_to_f16(1e-4f);
    for (size_t b = 0; b < bytes / bb; b++) {   /* q8_0: d; q4_K: d, dmin */
        unsigned char *p = h + b * bb;
        p[0] = (unsigned char)dq, p[1] = (unsigned char)(dq >> 8);
        if (t == JK_Q4_K) p[2] = (unsigned char)dm, p[3] = (unsigned char)(dm >> 8);
    }
    return dev_take(d, h, bytes);
}

typedef void (*gpu_case_fn)(const struct jk_kernels *k, void *ctx);

/* Median seconds per call over 5 batches of reps calls (after one warm-up batch). */
static double time_case(struct jk_device *d, const struct jk_kernels *k, gpu_case_fn fn, void *ctx,
                        int reps) {
    double t[5];
    for (int b = -1; b < 5; b++) {
        double t0 = bench_now();
        for (int r = 0; r < reps; r++) fn(k, ctx);
        if (d->sync(d)) return -1.0;
        if (b >= 0) t[b] = (bench_now() - t0) / reps;
    }
    qsort(t, 5, sizeof t[0], bench_cmp_double);
    return t[2];
}

struct gemm_case {
    enum jk_dtype t;   /* the slot; a.x16 set: the pipelined kernel reads it */
    struct jk_gemm_args a;
};
static void run_gemm(const struct jk_kernels *k, void *ctx) {
    const struct gemm_case *c = (const struct gemm_case *)ctx;
    k->gemm[c->t](&c->a);
}
static void run_attn(const struct jk_kernels *k, void *ctx) {
    k->attn((const struct jk_attn_args *)ctx);
}

/* op "pipe" / "wgmma": a matmul by that table's kernel (JSON: op "matmul" with "kernel":
 * "pipe" or "wgmma"). */
static void report(const struct bench_opts *o, const char *op, const char *dtype, const char *what,
                   int M, int N, int K, double sec, double flops, const char *devname) {
    const double tf = flops / sec * 1e-12;
    const int x16k = !strcmp(op, "pipe") || !strcmp(op, "wgmma");
    if (o->json)
        printf("{\"op\":\"%s\",%s%s%s\"dtype\":\"%s\",\"what\":\"%s\",\"M\":%d,\"N\":%d,"
               "\"K\":%d,\"ms\":%.4f,\"tflops\":%.2f,\"device\":\"%s\"}\n",
               x16k ? "matmul" : op, x16k ? "\"kernel\":\"" : "", x16k ? op : "",
               x16k ? "\"," : "", dtype, what, M, N, K, sec * 1e3, tf, devname);
    else
        printf("%-6s %-5s %-22s %6d %6d %5d %9.3f %8.1f\n", op, dtype, what, M, N, K, sec * 1e3, tf);
    fflush(stdout);
}

static int bench_gpu_matmul(const struct bench_opts *o, struct jk_device *d, const struct jk_kernels *k) {
    /* pipe and wgmma: the tables that read x16 */
    const int pipe = o->kernel && (!strcmp(o->kernel, "pipe") || !strcmp(o->kernel, "wgmma"));
    static const enum jk_dtype types[] = {JK_F16, JK_BF16, JK_F32, JK_Q8_0, JK_Q4_K};
    const int Ms[] = {577, 2048, 8 * 2048};   /* 577: the pipelined kernel only */
    const int nshapes = o->quick ? 1 : (int)(sizeof gpu_mm_shapes / sizeof gpu_mm_shapes[0]);
    const int nm = o->quick ? 1 : 3;
    uint64_t seed = 11;
    for (int ti = 0; ti < (int)(sizeof types / sizeof *types); ti++) {
        const enum jk_dtype t = types[ti];
        const int blk = jk_dtype_is_block(t), qk = jk_dtype_block(t);
        if (!k->gemm[t]) continue;
        for (int mi = pipe || o->quick ? 0 : 1; mi < nm; mi++) {
            for (int si = 0; si < (blk && nshapes > 4 ? 4 : nshapes); si++) {   /* blocks: ViT-L */
                const int M = o->quick ? 64 : Ms[mi], N = o->quick ? 96 : gpu_mm_shapes[si].N;
                const int K = ((o->quick ? 80 : gpu_mm_shapes[si].K) + qk - 1) / qk * qk;
                uint64_t xseed = seed;   /* x16: the same draws as x, rounded to t (blocks: f16) */
                float *x = dev_random(d, (size_t)M * K, JK_F32, 1.0f, &seed);
                uint16_t *x16 = pipe && t != JK_F32
                                    ? dev_random(d, (size_t)M * K, blk ? JK_F16 : t, 1.0f, &xseed)
                                    : NULL;
                void *w = blk ? dev_random_blocks(d, N, K, t, &seed)
                              : dev_random(d, (size_t)N * K, t, 0.05f, &seed);
                float *bias = dev_random(d, (size_t)N, JK_F32, 0.1f, &seed);
                float *y = d->alloc(d, sizeof(float) * (size_t)M * N);
                /* the pipelined kernel: the workspace a forward plans (split-K) */
                const size_t wsb = x16 ? k->gemm_ws(1, K) : 0;
                void *ws = wsb ? d->alloc(d, wsb) : NULL;
                int rc = 0;
                if (!x || !w || !bias || !y || (pipe && t != JK_F32 && !x16) || (wsb && !ws)) {
                    fprintf(stderr, "jepa bench gpu: %s\n", d->error(d));
                    rc = 1;
                } else {
                    struct gemm_case a = {t, {
                        .y = y, .ldy = (size_t)N, .x = x, .ldx = (size_t)K, .w = w,
                        .ldw = jk_row_bytes(t, K), .bias = bias, .M = M, .N = N, .K = K,
                        .epi = JK_EPI_STORE, .nthreads = 1, .ws = ws,
                        .x16 = x16, .ldx16 = (size_t)K,
                    }};
                    const double flops = 2.0 * M * N * K;
                    const int reps = o->quick ? 2 : (int)fmax(3.0, fmin(200.0, 2e12 / flops));
                    /* then at M < 2048, without the workspace: never split */
                    for (int v = 0; v < (ws && M < 2048 ? 2 : 1) && !rc; v++) {
                        a.a.ws = v ? NULL : ws;
                        const double sec = time_case(d, k, run_gemm, &a, reps);
                        if (sec < 0) {
                            fprintf(stderr, "jepa bench gpu: %s\n", d->error(d));
                            rc = 1;
                        } else {
                            char what[64];
                            snprintf(what, sizeof what, "%s%s%s",
                                     o->quick ? "smoke" : gpu_mm_shapes[si].what,
                                     M > 2048 ? " x8" : "", v ? " no split-K" : "");
                            report(o, x16 ? o->kernel : "matmul", jk_dtype_name(t), what, M, N, K,
                                   sec, flops, d->name);
                        }
                    }
                }
                d->free(d, x), d->free(d, x16), d->free(d, w), d->free(d, bias), d->free(d, y);
                d->free(d, ws);
                if (rc) return rc;
            }
        }
    }
    return 0;
}

static int bench_gpu_attn(const struct bench_opts *o, struct jk_device *d, const struct jk_kernels *k) {
    static const struct { int hd, heads; const char *what; } cfg[] = {
        {64, 16, "ViT-L hd64"}, {32, 12, "predictor hd32"},
    };
    uint64_t seed = 23;
    for (int ci = 0; ci < 2; ci++) {
        for (int masked = 0; masked < 2; masked++) {
            const int N = o->quick ? 80 : 2048, hd = cfg[ci].hd, heads = cfg[ci].heads;
            const int D = hd * heads, frames = 8;
            /* a fused [N, 3D] qkv buffer, as in the forward */
            float *qkv = dev_random(d, (size_t)N * 3 * D, JK_F32, 1.0f, &seed);
            float *out = d->alloc(d, sizeof(float) * (size_t)N * D);
            /* the workspace the forward plans (the staged K and V), whatever the kernel
             * then decides to use */
            const size_t wsb = k->attn_ws(1, heads, hd, N);
            void *ws = wsb ? d->alloc(d, wsb) : NULL;
            int32_t *pos = NULL, *hpos = malloc(sizeof(int32_t) * (size_t)N);
            int rc = 0;
            if (hpos && masked) {
                for (int i = 0; i < N; i++) hpos[i] = i / (N / frames > 0 ? N / frames : 1);
                pos = d->alloc(d, sizeof(int32_t) * (size_t)N);
                if (pos && d->upload(d, pos, hpos, sizeof(int32_t) * (size_t)N)) rc = 1;
            }
            if (!qkv || !out || !hpos || (masked && !pos) || (wsb && !ws) || rc) {
                fprintf(stderr, "jepa bench gpu: %s\n", hpos ? d->error(d) : "out of host memory");
                rc = 1;
            } else {
                struct jk_attn_args a = {
                    .o = out, .ldo = (size_t)D, .q = qkv, .ldq = (size_t)3 * D, .k = qkv + D,
                    .ldk = (size_t)3 * D, .v = qkv + 2 * D, .ldv = (size_t)3 * D, .nq = N, .nkv = N,
                    .n_head = heads, .head_dim = hd, .scale = 1.0f / sqrtf((float)hd),
                    .q_pos = pos, .k_pos = pos, .nthreads = 1, .ws = ws,
                };
                /* block-causal work: frame f sees frames 0..f, i.e. (frames + 1) / (2 frames) */
                const double frac = masked ? (frames + 1.0) / (2.0 * frames) : 1.0;
                const double flops = 4.0 * N * N * hd * heads * frac;
                const int reps = o->quick ? 2 : 20;
                const double sec = time_case(d, k, run_attn, &a, reps);
                if (sec < 0) {
                    fprintf(stderr, "jepa bench gpu: %s\n", d->error(d));
                    rc = 1;
                } else {
                    char what[64];
                    snprintf(what, sizeof what, "%s%s", cfg[ci].what, masked ? " block-causal" : "");
                    report(o, "attn", "f32", what, N, N, hd, sec, flops, d->name);
                }
            }
            d->free(d, qkv), d->free(d, out), d->free(d, pos), d->free(d, ws);
            free(hpos);
            if (rc) return rc;
        }
    }
    return 0;
}

int bench_gpu(const struct bench_opts *o, int ordinal) {
    /* --kernel: the CUDA table's matmul for this process, through the variable the table
     * reads once, at its first matmul (kernels/cuda/device.cu); the default kernel unless
     * pipe or wgmma is asked for, whatever the environment says */
    const int pipe = o->kernel && !strcmp(o->kernel, "pipe");
    const int wgmma = o->kernel && !strcmp(o->kernel, "wgmma");
    setenv("JEPA_CUDA_KERNELS", pipe ? "pipe" : wgmma ? "wgmma" : "mma", 1);
    char err[256];
    struct jk_device *d = jk_device_open_cuda(ordinal, err, sizeof err);
    if (!d) {
        fprintf(stderr, "jepa bench gpu: %s\n", err);
        return 1;
    }
    struct jk_kernels k;
    d->init_kernels(d, &k, 0);
    d->bind(d);
    FILE *info = o->json ? stderr : stdout;
    fprintf(info, "jepa bench gpu: %s, kernels %s%s%s\n", d->name, k.isa,
            pipe    ? " (matmul: pipe for f16 / bf16, never run on a GPU before)"
            : wgmma ? " (matmul: wgmma for f16 / bf16 on sm_90, else pipe; never run on a GPU "
                      "before)"
                    : "",
            o->quick ? " (smoke shapes: checks the harness, not the speed)" : "");
    if (!o->json)
        printf("\n%-6s %-5s %-22s %6s %6s %5s %9s %8s\n", "op", "dtype", "shape", "M", "N", "K",
               "ms", "TFLOP/s");
    fflush(info);
    int rc = 0;
    if (!strcmp(o->op, "all") || !strcmp(o->op, "matmul")) rc |= bench_gpu_matmul(o, d, &k);
    if (!rc && (!strcmp(o->op, "all") || !strcmp(o->op, "attn"))) rc |= bench_gpu_attn(o, d, &k);
    d->close(d);
    return rc;
}
