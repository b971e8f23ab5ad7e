/*
 * gemm_ref.c — reference matmul Y = epi(X . W^T + b) for every weight dtype.
 *
 * The definition of "correct" for the SIMD variants (tests/checkasm/test_gemm.c):
 * each weight row is converted to f32 exactly (runtime/dtype.h), each dot product
 * is accumulated in double in k order, then rounded once. Parallel over rows of Y,
 * so the bits do not depend on the thread count. jk_gemm_bf16x_ref is the same with both
 * operands rounded to bf16 first: the reference of the bf16 precision tier.
 */
#include <math.h>
#include <string.h>
#ifdef JEPA_HAVE_OPENMP
#include <omp.h>
#endif

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "runtime/dtype.h"

/* Convert weight row n (K elements) of dtype t to f32. */
void jk_ref_weight_row(float *dst, const void *w, size_t ldw, enum jk_dtype t, int n, int K) {
    jk_dequant_ref(t, (const uint8_t *)w + (size_t)n * ldw, 0, K, dst);
}

/* 0.5 x (1 + erf(x / sqrt 2)); for x < 0 as 0.5 x erfc(-x / sqrt 2), which does not cancel
 * (1 + erf loses every digit below x = -8 even in double). */
double jk_ref_gelu_erf(double x) {
    const double z = x * 0.70710678118654752440;
    return x >= 0.0 ? 0.5 * x * (1.0 + erf(z)) : 0.5 * x * erfc(-z);
}

/* x rounded to bf16 (round to nearest even), back as f32: the bf16 tier's operands. */
static inline double bf16_round(float x) { return (double)bf16_to_f32(f32_to_bf16(x)); }

/* bf16x: the bf16 tier's operands (X and the f32 weights rounded to bf16 first). */
static void gemm_ref_tier(const struct jk_gemm_args *a, enum jk_dtype t, int bf16x) {
    const int M = a->M, N = a->N, K = a->K;
    float *wrow = (float *)a->ws;   /* [nthreads][K] */
    int nt = a->nthreads > 0 ? a->nthreads : 1;
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int n = 0; n < N; n++) {
        int tid = 0;
#ifdef JEPA_HAVE_OPENMP
        tid = omp_get_thread_num();
#endif
        float *wf = wrow + (size_t)tid * (size_t)K;
        jk_ref_weight_row(wf, a->w, a->ldw, t, n, K);
        if (bf16x)
            for (int k = 0; k < K; k++) wf[k] = (float)bf16_round(wf[k]);
        for (int m = 0; m < M; m++) {
            const float *x = a->x + (size_t)m * a->ldx;
            double acc = 0.0;
            if (bf16x)
                for (int k = 0; k < K; k++) acc += bf16_round(x[k]) * (double)wf[k];
            else
                for (int k = 0; k < K; k++) acc += (double)x[k] * (double)wf[k];
            if (a->bias) acc += a->bias[n];
            float *y = a->y + (size_t)m * a->ldy + n;
            switch (a->epi) {
            case JK_EPI_STORE: *y = (float)acc; break;
            case JK_EPI_GELU: *y = (float)jk_ref_gelu_erf(acc); break;
            case JK_EPI_ADD: *y = (float)((double)*y + acc); break;
            }
        }
    }
}

static void gemm_ref(const struct jk_gemm_args *a, enum jk_dtype t) { gemm_ref_tier(a, t, 0); }

void jk_gemm_bf16x_ref(const struct jk_gemm_args *a, enum jk_dtype t) { gemm_ref_tier(a, t, 1); }

/* jk_gemm_<name>_ref of every weight type (runtime/weight_types.h) */
#define GEMM_REF(isa, name, NAME, ...) \
    void jk_gemm_##name##_##isa(const struct jk_gemm_args *a) { gemm_ref(a, JK_##NAME); }
JR_WEIGHT_TYPES(GEMM_REF, ref)
#undef GEMM_REF

/* The reference converts one weight row per thread: K floats each. */
size_t jk_gemm_ws_ref(int nthreads, int K) {
    return (size_t)(nthreads > 0 ? nthreads : 1) * (size_t)K * sizeof(float);
}
