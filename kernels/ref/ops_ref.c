/*
 * ops_ref.c — reference element-wise and row ops: RoPE, LayerNorm, GELU (erf and
 * tanh), SiLU, residual add / layer-scale, the modulation multiply-add, patchify, row
 * gather, column mean.
 * Exact formulas in double; parallel over rows (bits independent of the thread count).
 */
#include <math.h>

#include "kernels/ref/ref.h"

void jk_rope_ref(float *x, size_t ldx, int n, int n_head, int head_dim, const float *cos,
              const float *sin, int nthreads) {
    int nt = nthreads > 0 ? nthreads : 1;
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int i = 0; i < n; i++) {
        const float *c = cos + (size_t)i * head_dim, *s = sin + (size_t)i * head_dim;
        for (int h = 0; h < n_head; h++) {
            float *v = x + (size_t)i * ldx + (size_t)h * head_dim;
            for (int p = 0; p + 1 < head_dim; p += 2) {
                double x0 = v[p], x1 = v[p + 1];
                v[p] = (float)(x0 * c[p] - x1 * s[p]);
                v[p + 1] = (float)(x1 * c[p + 1] + x0 * s[p + 1]);
            }
            if (head_dim & 1) {   /* an odd last dim has no partner: x * cos */
                int p = head_dim - 1;
                v[p] = (float)((double)v[p] * c[p]);
            }
        }
    }
}

void jk_layernorm_ref(float *y, size_t ldy, const float *x, size_t ldx, const float *w,
                   const float *b, int n, int d, float eps, int nthreads) {
    int nt = nthreads > 0 ? nthreads : 1;
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int i = 0; i < n; i++) {
        const float *xi = x + (size_t)i * ldx;
        float *yi = y + (size_t)i * ldy;
        double mean = 0.0, var = 0.0;
        for (int j = 0; j < d; j++) mean += xi[j];
        mean /= d;
        for (int j = 0; j < d; j++) var += (xi[j] - mean) * (xi[j] - mean);
        var /= d;
        double rstd = 1.0 / sqrt(var + (double)eps);
        for (int j = 0; j < d; j++) {
            double v = (xi[j] - mean) * rstd;
            if (w) v *= w[j];
            if (b) v += b[j];
            yi[j] = (float)v;
        }
    }
}

void jk_gelu_tanh_ref(float *x, size_t n, int nthreads) {
    int nt = nthreads > 0 ? nthreads : 1;
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        x[i] = (float)(0.5 * v * (1.0 + tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v))));
    }
}

void jk_silu_ref(float *x, size_t n, int nthreads) {
    int nt = nthreads > 0 ? nthreads : 1;
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        x[i] = (float)(v / (1.0 + exp(-v)));
    }
}

void jk_add_ref(float *y, size_t ldy, const float *x, size_t ldx, const float *s, int n, int d,
             int nthreads) {
    int nt = nthreads > 0 ? nthreads : 1;
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int i = 0; i < n; i++) {
        float *yi = y + (size_t)i * ldy;
        const float *xi = x + (size_t)i * ldx;
        for (int j = 0; j < d; j++) yi[j] += s ? s[j] * xi[j] : xi[j];
    }
}

void jk_madd_ref(float *y, size_t ldy, const float *x, size_t ldx, const float *m, size_t ldm,
                 const float *a, size_t lda, float c, int n, int d, int nthreads) {
    int nt = nthreads > 0 ? nthreads : 1;
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int i = 0; i < n; i++) {
        float *yi = y + (size_t)i * ldy;
        const float *xi = x + (size_t)i * ldx, *mi = m + (size_t)i * ldm, *ai = a + (size_t)i * lda;
        for (int j = 0; j < d; j++) yi[j] = (float)((double)xi[j] * ((double)c + mi[j]) + ai[j]);
    }
}

void jk_patchify_ref(float *out, const float *in, int C, int T, int H, int W, int tubelet, int p,
                  int nthreads) {
    const int gt = T / tubelet, gh = H / p, gw = W / p;
    const int F = C * tubelet * p * p;
    int nt = nthreads > 0 ? nthreads : 1;
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int tok = 0; tok < gt * gh * gw; tok++) {
        int t = tok / (gh * gw), h = (tok / gw) % gh, w = tok % gw;
        float *o = out + (size_t)tok * F;
        for (int c = 0; c < C; c++)
            for (int dt = 0; dt < tubelet; dt++)
                for (int dy = 0; dy < p; dy++) {
                    const float *src = in + (((size_t)c * T + (size_t)(t * tubelet + dt)) * H +
                                             (size_t)(h * p + dy)) * W + (size_t)w * p;
                    for (int dx = 0; dx < p; dx++) *o++ = src[dx];
                }
    }
}

void jk_gather_ref(float *y, size_t ldy, const float *x, size_t ldx, const int32_t *idx, int n,
                int d, int nthreads) {
    int nt = nthreads > 0 ? nthreads : 1;
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int i = 0; i < n; i++) {
        float *yi = y + (size_t)i * ldy;
        const float *xi = x + (size_t)idx[i] * ldx;
        for (int j = 0; j < d; j++) yi[j] = xi[j];
    }
}

/* Each column summed in double, rows in order, then divided once and rounded: the
 * result does not depend on n's split over threads (threads take columns). */
void jk_mean_rows_ref(float *y, const float *x, size_t ldx, int n, int d, int nthreads) {
    int nt = nthreads > 0 ? nthreads : 1;
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int j = 0; j < d; j++) {
        double acc = 0.0;
        for (int i = 0; i < n; i++) acc += x[(size_t)i * ldx + j];
        y[j] = (float)(acc / n);
    }
}
