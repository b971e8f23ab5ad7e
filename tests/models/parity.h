/*
 * parity.h — comparing a jepa.c output with a reference array: per-row cosine and
 * rel = max|a - b| / max|b|, printed in one line per check, and the bars of the
 * parity tests (tests/data/README.md: cosine >= 0.99999 on every token,
 * rel <= 1e-4 — a correct forward lands near rel 1e-6).
 */
#ifndef JEPA_TESTS_PARITY_H
#define JEPA_TESTS_PARITY_H

#include <math.h>
#include <stdio.h>

#include "jepa.h"

struct parity {
    double cos_min, cos_mean, rel;
    int worst_row;
};

/* got/ref: [rows, cols]. */
static inline struct parity parity_compare(const float *got, const float *ref, int rows, int cols) {
    struct parity p = {2.0, 0.0, 0.0, -1};
    double maxdiff = 0.0, maxref = 0.0;
    for (int r = 0; r < rows; r++) {
        double ab = 0, aa = 0, bb = 0;
        for (int j = 0; j < cols; j++) {
            double a = got[(size_t)r * cols + j], b = ref[(size_t)r * cols + j];
            ab += a * b, aa += a * a, bb += b * b;
            double d = fabs(a - b);
            if (!(d <= maxdiff)) maxdiff = d;   /* NaN poisons the result */
            if (fabs(b) > maxref) maxref = fabs(b);
        }
        double c = (aa > 0 && bb > 0) ? ab / sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
        if (!(c >= p.cos_min)) { p.cos_min = c; p.worst_row = r; }
        p.cos_mean += c / rows;
    }
    p.rel = maxref > 0 ? maxdiff / maxref : maxdiff;
    return p;
}

/* Print and judge one comparison; returns 1 on failure. */
static inline int parity_check(const char *what, const float *got, const float *ref, int rows,
                               int cols, double min_cos, double max_rel) {
    struct parity p = parity_compare(got, ref, rows, cols);
    int ok = p.cos_min >= min_cos && p.rel <= max_rel;
    printf("%-4s %-44s rows %5d  cos min %.9f (row %d) mean %.9f  rel %.2e   [bar cos >= %g, rel <= %g]\n",
           ok ? "ok" : "FAIL", what, rows, p.cos_min, p.worst_row, p.cos_mean, p.rel, min_cos, max_rel);
    return !ok;
}

/* A context on the CPU with the kernels capped at `cpu` ("scalar", "avx2", ...) and
 * `threads` threads; NULL (the reason printed) when it cannot be made. */
static inline jepa_ctx *parity_ctx(const jepa_model *m, const char *cpu, int threads) {
    jepa_ctx_params p = jepa_ctx_default_params();
    p.cpu = cpu;
    p.n_threads = threads;
    jepa_ctx *c = NULL;
    char err[JEPA_ERR_LEN];
    if (jepa_ctx_new(&c, m, &p, err)) printf("FAIL a context for cpu '%s': %s\n", cpu, err);
    return c;
}

#endif
