/*
 * ab_attn.c — two builds' attention kernels in one process, called alternately on the
 * same data: the ratio of their times resolves ~0.3 %, where two `jepa bench kernels`
 * runs one after the other on a shared machine differ by 2-3 %. Built by bench/ab_attn.sh,
 * which renames each build's kernel symbols (A_jk_attn_<isa>, B_jk_attn_<isa>).
 *
 *   ab_attn N HEADS CALLS [FRAMES [HEAD_DIM]]
 *
 * q, k and v interleaved in one [N, 3 HEADS HEAD_DIM] buffer as the forward lays them out;
 * FRAMES > 0: LeVJEPA's block-causal mask (a CLS token that sees every key and no patch
 * query sees, then FRAMES frames). Prints the minimum and the median of each kernel's
 * CALLS calls, B/A for both, and whether the two outputs are the same bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "kernels/kernels.h"

#define AB_CAT2(a, b) a##b
#define AB_CAT(a, b) AB_CAT2(a, b)
#define AB_FN(prefix) AB_CAT(prefix, AB_ISA)   /* A_jk_attn_ -> A_jk_attn_avx512 */
void AB_FN(A_jk_attn_)(const struct jk_attn_args *a);
void AB_FN(B_jk_attn_)(const struct jk_attn_args *a);
size_t AB_FN(A_jk_attn_ws_)(int nthreads, int n_head, int head_dim, int nkv);
size_t AB_FN(B_jk_attn_ws_)(int nthreads, int n_head, int head_dim, int nkv);

static void *xalloc(size_t bytes) {
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "ab_attn: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: ab_attn N HEADS CALLS [FRAMES [HEAD_DIM]]\n");
        return 2;
    }
    const int N = atoi(argv[1]), H = atoi(argv[2]), calls = atoi(argv[3]);
    const int frames = argc > 4 ? atoi(argv[4]) : 0, hd = argc > 5 ? atoi(argv[5]) : 64;
    if (N < 2 || N > 65536 || H < 1 || H > 64 || calls < 1 || calls > 1000000 || frames < 0 ||
        frames > N - 1 || hd < 1 || hd > 512) {
        fprintf(stderr, "ab_attn: N 2..65536, HEADS 1..64, CALLS 1..1e6, FRAMES 0..N-1, HEAD_DIM 1..512\n");
        return 2;
    }
    const size_t D = (size_t)H * hd;
    float *qkv = xalloc((size_t)N * 3 * D * sizeof(float));
    float *oa = xalloc((size_t)N * D * sizeof(float)), *ob = xalloc((size_t)N * D * sizeof(float));
    uint64_t s = 1;
    for (size_t i = 0; i < (size_t)N * 3 * D; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        qkv[i] = (float)((s >> 40) & 0xffff) / 16384.0f - 2.0f;      /* uniform in [-2, 2) */
    }
    int32_t *pos = NULL;
    if (frames > 0) {
        pos = xalloc((size_t)N * sizeof(int32_t));
        const int per = (N - 1) / frames;
        pos[0] = INT32_MAX;
        for (int i = 1; i < N; i++) pos[i] = (i - 1) / per;
    }
    const size_t wa = AB_FN(A_jk_attn_ws_)(1, H, hd, N), wb = AB_FN(B_jk_attn_ws_)(1, H, hd, N);
    void *ws = xalloc(wa > wb ? wa : wb);
    struct jk_attn_args a = {oa, D, qkv, 3 * D, qkv + D, 3 * D, qkv + 2 * D, 3 * D, N, N, H, hd,
                             1.0f / 8.0f, pos, pos, 1, ws, NULL, 0, JK_F32, NULL};
    struct jk_attn_args b = a;
    b.o = ob;
    AB_FN(A_jk_attn_)(&a);
    AB_FN(B_jk_attn_)(&b);
    const int same = !memcmp(oa, ob, (size_t)N * D * sizeof(float));
    double *ta = xalloc((size_t)calls * sizeof(double)), *tb = xalloc((size_t)calls * sizeof(double));
    for (int r = 0; r < calls; r++) {     /* A first in even calls, B first in odd ones */
        const double t0 = bench_now();
        if (r & 1) AB_FN(B_jk_attn_)(&b);
        else AB_FN(A_jk_attn_)(&a);
        const double t1 = bench_now();
        if (r & 1) AB_FN(A_jk_attn_)(&a);
        else AB_FN(B_jk_attn_)(&b);
        const double t2 = bench_now();
        ta[r] = r & 1 ? t2 - t1 : t1 - t0;
        tb[r] = r & 1 ? t1 - t0 : t2 - t1;
    }
    qsort(ta, (size_t)calls, sizeof(double), bench_cmp_double);
    qsort(tb, (size_t)calls, sizeof(double), bench_cmp_double);
    printf("N %d heads %d head_dim %d%s: A min %.1f med %.1f us, B min %.1f med %.1f us, "
           "B/A min %.4f med %.4f, outputs %s\n",
           N, H, hd, frames ? " block-causal" : "", ta[0] * 1e6, ta[calls / 2] * 1e6, tb[0] * 1e6,
           tb[calls / 2] * 1e6, tb[0] / ta[0], tb[calls / 2] / ta[calls / 2],
           same ? "the same bytes" : "DIFFERENT bytes");
    return 0;
}
