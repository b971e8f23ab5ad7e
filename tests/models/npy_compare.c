/*
 * npy_compare.c — compare two float .npy files of the same shape, row by row (rows = the
 * first dimension, or 1 for a vector): worst cosine and rel = max|a-b|/max|b|.
 *
 * usage: npy_compare GOT.npy REF.npy MIN_COSINE MAX_REL    exit 0 when within both bars
 */
#include <stdio.h>
#include <stdlib.h>

#include "input/npy.h"
#include "tests/models/parity.h"

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: npy_compare GOT.npy REF.npy MIN_COSINE MAX_REL\n");
        return 2;
    }
    struct npy a, b;
    struct jerr e = {0};
    if (npy_load_f32(&a, argv[1], &e)) { fprintf(stderr, "%s: %s\n", argv[1], e.msg); return 1; }
    if (npy_load_f32(&b, argv[2], &e)) { fprintf(stderr, "%s: %s\n", argv[2], e.msg); return 1; }
    int same = a.ndim == b.ndim && a.count == b.count;
    for (int i = 0; same && i < a.ndim; i++) same = a.shape[i] == b.shape[i];
    if (!same) {
        fprintf(stderr, "shape mismatch: %s vs %s\n", argv[1], argv[2]);
        return 1;
    }
    int rows = a.ndim > 1 ? (int)(a.count / a.shape[a.ndim - 1]) : 1;
    int cols = (int)(a.count / rows);
    int bad = parity_check(argv[1], a.data, b.data, rows, cols, atof(argv[3]), atof(argv[4]));
    npy_free(&a);
    npy_free(&b);
    return bad;
}
