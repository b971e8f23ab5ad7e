/*
 * attn_ref.c — reference attention: for each head and query, the exact softmax over
 * the visible keys, in double, in three passes over the keys (max, normaliser, then
 * the weighted sum of V), recomputing q.k each time so no score row is stored.
 * Parallel over (head, query); the bits do not depend on the thread count. Non-finite
 * inputs follow the formula: a NaN score, an inf - inf or a NaN in a visible V row makes
 * the row NaN (every ISA level's kernel does the same: tests/checkasm/test_ops.c).
 *
 * jk_attn_bf16x_ref is the same computation on the bf16 tier's operands (kernels.h): q, k
 * and v rounded to bf16 (nearest even, NaN kept), each probability rounded to bf16 (as an
 * f32, nearest even) before it multiplies v, the normaliser the sum of the unrounded
 * probabilities. Both are one function (attn_ref_rows), the rounding a constant flag.
 */
#include <math.h>

#include "kernels/ref/ref.h"
#include "runtime/dtype.h"

/* x, or x rounded to bf16 where the bf16 tier's operands are asked for */
static inline double opnd(float x, const int bf) {
    return bf ? (double)bf16_to_f32(f32_to_bf16(x)) : (double)x;
}

static inline double dot(const float *a, const float *b, int n, const int bf) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += opnd(a[i], bf) * opnd(b[i], bf);
    return s;
}

static inline void attn_ref_rows(const struct jk_attn_args *a, const int bf) {
    const int hd = a->head_dim;
    const int masked = a->q_pos && a->k_pos;
    int nt = a->nthreads > 0 ? a->nthreads : 1;
    (void)nt;
#pragma omp parallel for num_threads(nt) schedule(static) collapse(2)
    for (int h = 0; h < a->n_head; h++) {
        for (int i = 0; i < a->nq; i++) {
            const float *q = a->q + (size_t)i * a->ldq + (size_t)h * hd;
            float *o = a->o + (size_t)i * a->ldo + (size_t)h * hd;
            double mx = -INFINITY;
            for (int j = 0; j < a->nkv; j++) {
                if (masked && a->q_pos[i] < a->k_pos[j]) continue;
                double s = a->scale * dot(q, a->k + (size_t)j * a->ldk + (size_t)h * hd, hd, bf);
                if (s > mx || s != s) mx = s;   /* a NaN score makes the row NaN */
                if (mx != mx) break;
            }
            double acc[512];   /* head_dim <= 512 (checked by the model loader) */
            for (int d = 0; d < hd; d++) acc[d] = 0.0;
            double l = 0.0;
            if (mx != -INFINITY) {
                for (int j = 0; j < a->nkv; j++) {
                    if (masked && a->q_pos[i] < a->k_pos[j]) continue;
                    const float *v = a->v + (size_t)j * a->ldv + (size_t)h * hd;
                    const float *k = a->k + (size_t)j * a->ldk + (size_t)h * hd;
                    double p = exp(a->scale * dot(q, k, hd, bf) - mx);
                    l += p;
                    /* the bf16 tier multiplies v by p rounded to bf16; l keeps p itself */
                    const double pv = bf ? opnd((float)p, 1) : p;
                    for (int d = 0; d < hd; d++) acc[d] += pv * opnd(v[d], bf);
                }
            }
            /* l = 0: no visible key, zeros; l NaN: a NaN score or value, NaN out */
            for (int d = 0; d < hd; d++) o[d] = l > 0.0 ? (float)(acc[d] / l) : (float)l;
        }
    }
}

void jk_attn_ref(const struct jk_attn_args *a) { attn_ref_rows(a, 0); }

void jk_attn_bf16x_ref(const struct jk_attn_args *a) { attn_ref_rows(a, 1); }

size_t jk_attn_ws_ref(int nthreads, int n_head, int head_dim, int nkv) {
    (void)nthreads, (void)n_head, (void)head_dim, (void)nkv;
    return 0;
}
