/* npy.c — see npy.h. Tested by tests/models (fixtures are .npy) and the CLI tests. */
#include "input/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/outfile.h"

static size_t dtype_size(enum npy_dtype t) {
    switch (t) {
    case NPY_F32: case NPY_I32: return 4;
    case NPY_F64: case NPY_I64: return 8;
    case NPY_U8: return 1;
    }
    return 0;
}

/* Find 'key': in the header dict and return a pointer just past the colon. */
static const char *dict_value(const char *hdr, const char *key) {
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(hdr, pat);
    if (!p) return NULL;
    p = strchr(p + strlen(pat), ':');
    if (!p) return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

jepa_status npy_load(struct npy *a, const char *path, struct jerr *err) {
    memset(a, 0, sizeof *a);
    FILE *f = fopen(path, "rb");
    char *hdr = NULL;
    if (!f) return jr_err_set(err, JEPA_ERR_IO, "cannot open: %s", strerror(errno));
    unsigned char pre[12];
    jepa_status st = JEPA_ERR_FORMAT;
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6)) {
        jr_err_set(err, st, "not a .npy file (bad magic)");
        goto fail;
    }
    size_t hlen;
    if (pre[6] == 1) {
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) { jr_err_set(err, st, "truncated .npy header"); goto fail; }
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        if (hlen > (1u << 20)) { jr_err_set(err, st, ".npy header of %zu bytes is too long", hlen); goto fail; }
    } else {
        jr_err_set(err, st, "unsupported .npy version %d", pre[6]);
        goto fail;
    }
    hdr = malloc(hlen + 1);
    if (!hdr) { st = jr_err_set(err, JEPA_ERR_NOMEM, "out of memory"); goto fail; }
    if (fread(hdr, 1, hlen, f) != hlen) { jr_err_set(err, st, "truncated .npy header"); goto fail; }
    hdr[hlen] = '\0';

    const char *d = dict_value(hdr, "descr");
    if (!d) { jr_err_set(err, st, ".npy header has no 'descr'"); goto fail; }
    static const struct { const char *s; enum npy_dtype t; } types[] = {
        {"'<f4'", NPY_F32}, {"'<f8'", NPY_F64}, {"'<i4'", NPY_I32}, {"'<i8'", NPY_I64},
        {"'|u1'", NPY_U8}, {"'<u1'", NPY_U8},
    };
    int found = 0;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strncmp(d, types[i].s, strlen(types[i].s))) { a->dtype = types[i].t; found = 1; }
    if (!found) {
        st = JEPA_ERR_UNSUPPORTED;
        jr_err_set(err, st, "unsupported .npy dtype %.8s (float32/float64/int32/int64/uint8 little-endian only)", d);
        goto fail;
    }
    const char *fo = dict_value(hdr, "fortran_order");
    if (!fo || strncmp(fo, "False", 5)) { jr_err_set(err, st, ".npy array is not in C order"); goto fail; }
    const char *sh = dict_value(hdr, "shape");
    if (!sh || *sh != '(') { jr_err_set(err, st, ".npy header has no 'shape'"); goto fail; }
    sh++;
    a->count = 1;
    while (*sh && *sh != ')') {
        while (*sh == ' ' || *sh == ',') sh++;
        if (*sh == ')') break;
        char *end;
        errno = 0;
        long long v = strtoll(sh, &end, 10);
        if (end == sh || errno || v < 0 || v > (1LL << 40) || a->ndim == 8) {
            jr_err_set(err, st, "bad .npy shape");
            goto fail;
        }
        a->shape[a->ndim++] = v;
        if (__builtin_mul_overflow(a->count, (int64_t)v, &a->count) || a->count > (1LL << 40)) {
            jr_err_set(err, st, ".npy shape is too large");
            goto fail;
        }
        sh = end;
    }
    size_t bytes = (size_t)a->count * dtype_size(a->dtype);
    a->data = malloc(bytes ? bytes : 1);
    if (!a->data) { st = jr_err_set(err, JEPA_ERR_NOMEM, "out of memory for %zu bytes", bytes); goto fail; }
    if (fread(a->data, 1, bytes, f) != bytes) {
        jr_err_set(err, st, "truncated .npy data (expected %zu bytes)", bytes);
        goto fail;
    }
    free(hdr);
    fclose(f);
    return JEPA_OK;
fail:
    free(hdr);
    fclose(f);
    npy_free(a);
    return st;
}

jepa_status npy_load_f32(struct npy *a, const char *path, struct jerr *err) {
    jepa_status st = npy_load(a, path, err);
    if (st) return st;
    if (a->dtype == NPY_F32) return JEPA_OK;
    if (a->dtype != NPY_F64) {
        npy_free(a);
        return jr_err_set(err, JEPA_ERR_FORMAT, "expected a float32 or float64 array");
    }
    float *f = malloc(sizeof(float) * (size_t)(a->count ? a->count : 1));
    if (!f) { npy_free(a); return jr_err_set(err, JEPA_ERR_NOMEM, "out of memory"); }
    for (int64_t i = 0; i < a->count; i++) f[i] = (float)((double *)a->data)[i];
    free(a->data);
    a->data = f;
    a->dtype = NPY_F32;
    return JEPA_OK;
}

jepa_status npy_load_i32(struct npy *a, const char *path, struct jerr *err) {
    jepa_status st = npy_load(a, path, err);
    if (st) return st;
    if (a->dtype == NPY_I32) return JEPA_OK;
    if (a->dtype != NPY_I64) {
        npy_free(a);
        return jr_err_set(err, JEPA_ERR_FORMAT, "expected an int32 or int64 array of token ids");
    }
    int32_t *v = malloc(sizeof(int32_t) * (size_t)(a->count ? a->count : 1));
    if (!v) { npy_free(a); return jr_err_set(err, JEPA_ERR_NOMEM, "out of memory"); }
    for (int64_t i = 0; i < a->count; i++) {
        int64_t x = ((int64_t *)a->data)[i];
        if (x < INT32_MIN || x > INT32_MAX) {
            free(v);
            npy_free(a);
            return jr_err_set(err, JEPA_ERR_FORMAT, "id %lld at index %lld does not fit in 32 bits",
                            (long long)x, (long long)i);
        }
        v[i] = (int32_t)x;
    }
    free(a->data);
    a->data = v;
    a->dtype = NPY_I32;
    return JEPA_OK;
}

void npy_free(struct npy *a) {
    free(a->data);
    a->data = NULL;
}

jepa_status npy_write_f32(struct jr_outfile *o, const char *path, const float *data, int ndim,
                          const int64_t *shape, struct jerr *err) {
    char hdr[256], shp[160] = "";
    int64_t count = 1;
    int n = 0;
    for (int i = 0; i < ndim; i++) {
        n += snprintf(shp + n, sizeof shp - (size_t)n, "%lld,%s", (long long)shape[i],
                      (i + 1 < ndim) ? " " : "");
        count *= shape[i];
    }
    if (ndim > 1) shp[n - 1] = '\0';   /* numpy writes (3,) for 1-D, (3, 4) otherwise */
    int hl = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", shp);
    int total = 10 + hl + 1;
    int pad = (64 - total % 64) % 64;
    /* beside and renamed into place (runtime/outfile.h); a device or pipe (/dev/stdout, a
     * FIFO) is written directly */
    jepa_status st = jr_outfile_open(o, path, true, err);
    if (st) return st;
    FILE *f = o->f;
    unsigned hlen = (unsigned)(hl + pad + 1);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)hl, f) == (size_t)hl;
    for (int i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    ok = ok && fwrite(data, sizeof(float), (size_t)count, f) == (size_t)count;
    if (!ok) {
        st = jr_err_set(err, JEPA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        jr_outfile_abort(o);
    }
    return st;
}

jepa_status npy_save_f32(const char *path, const float *data, int ndim, const int64_t *shape,
                         struct jerr *err) {
    struct jr_outfile o;
    jepa_status st = npy_write_f32(&o, path, data, ndim, shape, err);
    return st ? st : jr_outfile_commit(&o, err);
}
