/*
 * test_npy.c — the .npy reader's two-step form (npy_peek_f32, then npy_read_f32 into memory
 * the caller gives), against the one-step npy_load_f32 on the same files, and against a
 * file changed between the two steps:
 *   float32 and float64 (converted), 3-D and 4-D, a size that is not a multiple of the
 *   float64 reader's 1024-value blocks: the same floats as npy_load_f32, and both the values
 *   written, rounded once to float;
 *   the file rewritten with another shape after npy_peek_f32: refused ("changed");
 *   the file cut short after npy_peek_f32: refused (truncated); an int32 file: refused by
 *   npy_peek_f32 and npy_load_f32, and after npy_peek_f32 as another header;
 *   nothing written past the a->count floats.
 *
 * usage: test_npy TMP_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/npy.h"

static int failures;

#define CHECK(cond, ...)                    \
    do {                                    \
        if (!(cond)) {                      \
            printf("FAIL ");                \
            printf(__VA_ARGS__);            \
            printf("\n");                   \
            failures++;                     \
        }                                   \
    } while (0)

/* A version 1.0 .npy of n values of type descr ("<f4", "<f8", "<i4"), from doubles. */
static void write_npy(const char *path, const char *descr, const int64_t *shape, int ndim, const double *v,
                      size_t n) {
    char dict[256], sh[128] = "";
    size_t k = 0;
    for (int i = 0; i < ndim; i++) k += (size_t)snprintf(sh + k, sizeof sh - k, "%lld,", (long long)shape[i]);
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, sh);
    const int pad = 64 - (10 + len + 1) % 64;
    FILE *f = fopen(path, "wb");
    const unsigned short hl = (unsigned short)(len + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hl & 0xff, f), fputc(hl >> 8, f);
    fwrite(dict, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    for (size_t i = 0; i < n; i++) {
        if (descr[1] == 'f' && descr[2] == '4') { float x = (float)v[i]; fwrite(&x, 4, 1, f); }
        else if (descr[1] == 'f') fwrite(&v[i], 8, 1, f);
        else { int x = (int)v[i]; fwrite(&x, 4, 1, f); }
    }
    fclose(f);
}

static void same_as_load(const char *path, const char *descr, const int64_t *shape, int ndim) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    double *v = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) v[i] = 0.1 * (double)i - 3.0 + 1e-9 * (double)(i % 7);
    write_npy(path, descr, shape, ndim, v, n);
    struct npy want, a;
    struct jerr e = {0};
    CHECK(!npy_load_f32(&want, path, &e), "%s %s: npy_load_f32: %s", path, descr, e.msg);
    CHECK(!npy_peek_f32(&a, path, &e) && !a.data && (size_t)a.count == n, "%s %s: npy_peek_f32: %s", path, descr, e.msg);
    float *got = malloc(sizeof(float) * (n + 16));
    for (size_t i = 0; i < n + 16; i++) got[i] = -77.0f;
    CHECK(!npy_read_f32(&a, path, got, &e), "%s %s: npy_read_f32: %s", path, descr, e.msg);
    CHECK(want.data && !memcmp(got, want.data, sizeof(float) * n), "%s %s: npy_read_f32 != npy_load_f32", path,
          descr);
    int known = 1;   /* both readers against the values written, rounded once to float */
    for (size_t i = 0; i < n; i++) known &= got[i] == (float)v[i] && ((float *)want.data)[i] == (float)v[i];
    CHECK(known, "%s %s: not the values written (rounded to float)", path, descr);
    int guard = 1;
    for (size_t i = n; i < n + 16; i++) guard &= got[i] == -77.0f;
    CHECK(guard, "%s %s: npy_read_f32 wrote past %zu floats", path, descr, n);
    printf("ok   %s [%zu values]: peek + read_f32 = npy_load_f32\n", descr, n);
    npy_free(&want);
    free(got), free(v);
}

/* A float32 file of shape s (nd axes, n0 values) peeked, then rewritten as `descr` of
 * shape s1 (nd axes) holding n1 values: npy_read_f32 must refuse it, naming `why`. */
static void refused_after_peek(const char *path, const int64_t *s, int nd, size_t n0, const char *descr,
                               const int64_t *s1, size_t n1, const char *why, const char *what) {
    static double v[4096];
    static float dst[4096];
    struct npy a;
    struct jerr e = {0};
    write_npy(path, "<f4", s, nd, v, n0);
    CHECK(!npy_peek_f32(&a, path, &e), "peek: %s", e.msg);
    write_npy(path, descr, s1, nd, v, n1);
    e = (struct jerr){0};
    CHECK(npy_read_f32(&a, path, dst, &e) == JEPA_ERR_FORMAT && strstr(e.msg, why),
          "a file rewritten %s after npy_peek_f32 was read (%s)", what, e.msg);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_npy TMP_DIR\n");
        return 2;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/test_npy.npy", argv[1]);
    const int64_t s4[] = {3, 2, 16, 21}, s3[] = {3, 7, 5};   /* 2016 and 105 values */
    same_as_load(path, "<f4", s4, 4);
    same_as_load(path, "<f8", s4, 4);
    same_as_load(path, "<f8", s3, 3);

    /* the file rewritten between npy_peek_f32 and npy_read_f32 */
    const int64_t other[] = {3, 2, 16, 20};
    refused_after_peek(path, s4, 4, 2016, "<f4", other, 1920, "changed", "with another shape");
    refused_after_peek(path, s4, 4, 2016, "<f4", s4, 2000, "truncated", "cut short (the same header)");
    refused_after_peek(path, s3, 3, 105, "<i4", s3, 105, "changed", "as int32 (the same shape)");
    struct npy a;
    struct jerr e = {0};
    double v[105] = {0};
    write_npy(path, "<i4", s3, 3, v, 105);
    CHECK(npy_peek_f32(&a, path, &e) == JEPA_ERR_FORMAT && strstr(e.msg, "float32 or float64"),
          "an int32 file's header was taken (%s)", e.msg);
    e = (struct jerr){0};
    CHECK(npy_load_f32(&a, path, &e) == JEPA_ERR_FORMAT && strstr(e.msg, "float32 or float64") && !a.data,
          "an int32 file was loaded as floats (%s)", e.msg);
    if (!failures) printf("ok   a changed, a truncated and an int32 file refused with one line each\n");
    remove(path);
    printf("%s\n", failures ? "npy: FAILED" : "npy: all checks passed");
    return failures ? 1 : 0;
}
