/*
 * topk.h — class probabilities for `jepa classify` and `jepa serve`: the softmax of one
 * clip's logits (in double, max-shifted) and the classes in order of a score.
 */
#ifndef JEPA_COMMON_TOPK_H
#define JEPA_COMMON_TOPK_H

/* p[K] = softmax(logits[K]). */
void topk_softmax(const float *logits, int K, double *p);
/* order[n] = the indices of v[n], largest value first (ties: the lower index first).
 * Thread-safe; allocates only past 1024 entries (out of memory: index order). */
void topk_rank(const double *v, int n, int *order);

#endif
