/* topk.c — see topk.h. */
#include "common/topk.h"

#include <math.h>
#include <stdlib.h>

void topk_softmax(const float *logits, int K, double *p) {
    double mx = logits[0], sum = 0;
    for (int i = 1; i < K; i++)
        if (logits[i] > mx) mx = logits[i];
    for (int i = 0; i < K; i++) sum += p[i] = exp(logits[i] - mx);
    for (int i = 0; i < K; i++) p[i] /= sum;
}

struct ranked {
    double v;
    int i;
};

static int ranked_cmp(const void *a, const void *b) {
    const struct ranked *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

void topk_rank(const double *v, int n, int *order) {
    struct ranked small[1024], *r = n <= 1024 ? small : malloc(sizeof *r * (size_t)n);
    if (!r) {
        for (int i = 0; i < n; i++) order[i] = i;
        return;
    }
    for (int i = 0; i < n; i++) r[i].v = v[i], r[i].i = i;
    qsort(r, (size_t)n, sizeof *r, ranked_cmp);
    for (int i = 0; i < n; i++) order[i] = r[i].i;
    if (r != small) free(r);
}
