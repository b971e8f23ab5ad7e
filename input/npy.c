/* npy.c — see npy.h. Tested by tests/models (fixtures are .npy) and the CLI tests. */
#include "input/npy.h"

#include <errno.h>
#include <stdbool.h>
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

/* The header of b[0 .. n): magic, version, the dict. On success a holds dtype, ndim,
 * shape and count (no data yet), *data_off is where the data starts and *bytes its
 * size. n may stop anywhere after the header (the data is not read here). */
static jepa_status parse_header(const unsigned char *b, size_t n, struct npy *a, size_t *data_off, size_t *bytes,
                                struct jerr *err) {
    const jepa_status st = JEPA_ERR_FORMAT;
    memset(a, 0, sizeof *a);
    if (n < 10 || memcmp(b, "\x93NUMPY", 6)) return jr_err_set(err, st, "not a .npy file (bad magic)");
    size_t hlen, pre;
    if (b[6] == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8, pre = 10;
    } else if (b[6] == 2 || b[6] == 3) {
        if (n < 12) return jr_err_set(err, st, "truncated .npy header");
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24, pre = 12;
        if (hlen > (1u << 20)) return jr_err_set(err, st, ".npy header of %zu bytes is too long", hlen);
    } else {
        return jr_err_set(err, st, "unsupported .npy version %d", b[6]);
    }
    if (n - pre < hlen) return jr_err_set(err, st, "truncated .npy header");
    char *hdr = malloc(hlen + 1);
    if (!hdr) return jr_err_set(err, JEPA_ERR_NOMEM, "out of memory");
    memcpy(hdr, b + pre, hlen);
    hdr[hlen] = '\0';
    jepa_status rc = JEPA_OK;
    const char *d = dict_value(hdr, "descr");
    static const struct { const char *s; enum npy_dtype t; } types[] = {
        {"'<f4'", NPY_F32}, {"'<f8'", NPY_F64}, {"'<i4'", NPY_I32}, {"'<i8'", NPY_I64},
        {"'|u1'", NPY_U8}, {"'<u1'", NPY_U8},
    };
    int found = 0;
    for (size_t i = 0; d && i < sizeof types / sizeof types[0]; i++)
        if (!strncmp(d, types[i].s, strlen(types[i].s))) { a->dtype = types[i].t; found = 1; }
    const char *fo = dict_value(hdr, "fortran_order");
    const char *sh = dict_value(hdr, "shape");
    if (!d) rc = jr_err_set(err, st, ".npy header has no 'descr'");
    else if (!found)
        rc = jr_err_set(err, JEPA_ERR_UNSUPPORTED,
                        "unsupported .npy dtype %.8s (float32/float64/int32/int64/uint8 little-endian only)", d);
    else if (!fo || strncmp(fo, "False", 5)) rc = jr_err_set(err, st, ".npy array is not in C order");
    else if (!sh || *sh != '(') rc = jr_err_set(err, st, ".npy header has no 'shape'");
    if (rc) {
        free(hdr);
        return rc;
    }
    sh++;
    a->count = 1;
    while (*sh && *sh != ')') {
        while (*sh == ' ' || *sh == ',') sh++;
        if (*sh == ')') break;
        char *end;
        errno = 0;
        long long v = strtoll(sh, &end, 10);
        if (end == sh || errno || v < 0 || v > (1LL << 40) || a->ndim == 8) {
            rc = jr_err_set(err, st, "bad .npy shape");
            break;
        }
        a->shape[a->ndim++] = v;
        if (__builtin_mul_overflow(a->count, (int64_t)v, &a->count) || a->count > (1LL << 40)) {
            rc = jr_err_set(err, st, ".npy shape is too large");
            break;
        }
        sh = end;
    }
    free(hdr);
    if (rc) return rc;
    *data_off = pre + hlen;
    *bytes = (size_t)a->count * dtype_size(a->dtype);
    return JEPA_OK;
}

/* The data must be there before anything is allocated for it. */
static jepa_status check_data(size_t have, size_t bytes, struct jerr *err) {
    if (have < bytes)
        return jr_err_set(err, JEPA_ERR_FORMAT, "truncated .npy data (%zu bytes, the shape needs %zu)", have, bytes);
    return JEPA_OK;
}

jepa_status npy_parse(struct npy *a, const void *data, size_t size, struct jerr *err) {
    size_t off = 0, bytes = 0;
    jepa_status st = parse_header(data, size, a, &off, &bytes, err);
    if (!st) st = check_data(size - off, bytes, err);
    if (!st && !(a->data = malloc(bytes ? bytes : 1))) st = jr_err_set(err, JEPA_ERR_NOMEM, "out of memory");
    if (st) {
        npy_free(a);
        return st;
    }
    memcpy(a->data, (const unsigned char *)data + off, bytes);
    return JEPA_OK;
}

/* Opens path and reads and checks its header into a (data NULL): *off and *bytes locate
 * the data, which the file is checked to hold. On success *fp is the open file. */
static jepa_status open_npy(const char *path, FILE **fp, struct npy *a, size_t *off, size_t *bytes,
                            struct jerr *err) {
    memset(a, 0, sizeof *a);
    *fp = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return jr_err_set(err, JEPA_ERR_IO, "cannot open: %s", strerror(errno));
    struct stat sb;
    unsigned char *head = NULL;
    jepa_status st = JEPA_OK;
    /* the header (at most 12 + 2^20 bytes), then the data, bounded by the file's size */
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = jr_err_set(err, JEPA_ERR_IO, "not a regular file");
        goto done;
    }
    const size_t fsize = (size_t)sb.st_size, hmax = fsize < 12 + (1u << 20) ? fsize : 12 + (1u << 20);
    head = malloc(hmax ? hmax : 1);
    if (!head) { st = jr_err_set(err, JEPA_ERR_NOMEM, "out of memory"); goto done; }
    if (fread(head, 1, hmax, f) != hmax) { st = jr_err_set(err, JEPA_ERR_IO, "cannot read"); goto done; }
    if ((st = parse_header(head, hmax, a, off, bytes, err))) goto done;
    st = check_data(fsize - *off, *bytes, err);
done:
    free(head);
    if (st) fclose(f);
    else *fp = f;
    return st;
}

jepa_status npy_load(struct npy *a, const char *path, struct jerr *err) {
    FILE *f;
    size_t off = 0, bytes = 0;
    jepa_status st = open_npy(path, &f, a, &off, &bytes, err);
    if (st) return st;
    if (!(a->data = malloc(bytes ? bytes : 1)))
        st = jr_err_set(err, JEPA_ERR_NOMEM, "out of memory for %zu bytes", bytes);
    else if (fseek(f, (long)off, SEEK_SET) != 0 || fread(a->data, 1, bytes, f) != bytes)
        st = jr_err_set(err, JEPA_ERR_FORMAT, "truncated .npy data (expected %zu bytes)", bytes);
    fclose(f);
    if (st) npy_free(a);
    return st;
}

static jepa_status need_floats(const struct npy *a, struct jerr *err) {
    if (a->dtype == NPY_F32 || a->dtype == NPY_F64) return JEPA_OK;
    return jr_err_set(err, JEPA_ERR_FORMAT, "expected a float32 or float64 array");
}

/* The data of the open file f (header a, the data at off) as float32 into dst (a->count
 * floats): float32 as it is, float64 converted a block at a time. */
static jepa_status read_floats(FILE *f, const struct npy *a, size_t off, size_t bytes, float *dst,
                               struct jerr *err) {
    if (fseek(f, (long)off, SEEK_SET) != 0) return jr_err_set(err, JEPA_ERR_IO, "cannot seek to the .npy data");
    if (a->dtype == NPY_F32) {
        if (fread(dst, sizeof(float), (size_t)a->count, f) != (size_t)a->count)
            return jr_err_set(err, JEPA_ERR_FORMAT, "truncated .npy data (expected %zu bytes)", bytes);
        return JEPA_OK;
    }
    double blk[1024];
    for (int64_t i = 0; i < a->count; i += 1024) {
        const size_t k = (size_t)(a->count - i < 1024 ? a->count - i : 1024);
        if (fread(blk, sizeof(double), k, f) != k)
            return jr_err_set(err, JEPA_ERR_FORMAT, "truncated .npy data (expected %zu bytes)", bytes);
        for (size_t j = 0; j < k; j++) dst[i + (int64_t)j] = (float)blk[j];
    }
    return JEPA_OK;
}

jepa_status npy_peek_f32(struct npy *a, const char *path, struct jerr *err) {
    FILE *f;
    size_t off, bytes;
    jepa_status st = open_npy(path, &f, a, &off, &bytes, err);
    if (st) return st;
    fclose(f);
    return need_floats(a, err);
}

jepa_status npy_read_f32(const struct npy *a, const char *path, float *dst, struct jerr *err) {
    FILE *f;
    struct npy b;
    size_t off = 0, bytes = 0;
    jepa_status st = open_npy(path, &f, &b, &off, &bytes, err);
    if (st) return st;
    bool same = b.dtype == a->dtype && b.ndim == a->ndim;
    for (int i = 0; same && i < b.ndim; i++) same = b.shape[i] == a->shape[i];
    if (!same) st = jr_err_set(err, JEPA_ERR_FORMAT, "the file changed while it was read (another header)");
    else if (!(st = need_floats(&b, err))) st = read_floats(f, &b, off, bytes, dst, err);
    fclose(f);
    return st;
}

jepa_status npy_load_f32(struct npy *a, const char *path, struct jerr *err) {
    FILE *f;
    size_t off = 0, bytes = 0;
    jepa_status st = open_npy(path, &f, a, &off, &bytes, err);
    if (st) return st;
    float *x = NULL;
    if (!(st = need_floats(a, err)) && !(x = malloc(sizeof(float) * (size_t)(a->count ? a->count : 1))))
        st = jr_err_set(err, JEPA_ERR_NOMEM, "out of memory");
    if (!st) st = read_floats(f, a, off, bytes, x, err);
    fclose(f);
    if (st) {
        free(x);
        memset(a, 0, sizeof *a);
        return st;
    }
    a->data = x;
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

static int stdout_fd = STDOUT_FILENO;

void npy_set_stdout(int fd) { stdout_fd = fd; }

/* o for "-": a copy of the stdout descriptor, written directly (tmp NULL: commit flushes
 * and closes it, abort closes it). */
static jepa_status open_stdout(struct jr_outfile *o, struct jerr *err) {
    memset(o, 0, sizeof *o);
    const int fd = dup(stdout_fd);
    o->path = strdup("stdout");
    if (fd < 0 || !o->path || !(o->f = fdopen(fd, "wb"))) {
        jepa_status st = jr_err_set(err, JEPA_ERR_IO, "cannot write stdout: %s", strerror(errno));
        if (fd >= 0) close(fd);
        free(o->path);
        o->path = NULL;
        return st;
    }
    return JEPA_OK;
}

jepa_status npy_write_f32_begin(struct jr_outfile *o, const char *path, int ndim, const int64_t *shape,
                                struct jerr *err) {
    char hdr[256], shp[160] = "";
    int n = 0;
    if (ndim < 1 || ndim > 8) return jr_err_set(err, JEPA_ERR_ARG, "'%s': %d dimensions", path, ndim);
    for (int i = 0; i < ndim; i++)
        n += snprintf(shp + n, sizeof shp - (size_t)n, "%lld,%s", (long long)shape[i],
                      (i + 1 < ndim) ? " " : "");
    if (ndim > 1) shp[n - 1] = '\0';   /* numpy writes (3,) for 1-D, (3, 4) otherwise */
    int hl = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", shp);
    int total = 10 + hl + 1;
    int pad = (64 - total % 64) % 64;
    /* beside and renamed into place (runtime/outfile.h); a device or pipe (/dev/stdout, a
     * FIFO) is written directly */
    jepa_status st = strcmp(path, "-") ? jr_outfile_open(o, path, true, err) : open_stdout(o, err);
    if (st) return st;
    FILE *f = o->f;
    unsigned hlen = (unsigned)(hl + pad + 1);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)hl, f) == (size_t)hl;
    for (int i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    if (!ok) {
        st = jr_err_set(err, JEPA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        jr_outfile_abort(o);
    }
    return st;
}

jepa_status npy_write_f32(struct jr_outfile *o, const char *path, const float *data, int ndim,
                          const int64_t *shape, struct jerr *err) {
    int64_t count = 1;
    for (int i = 0; i < ndim; i++) count *= shape[i];
    jepa_status st = npy_write_f32_begin(o, path, ndim, shape, err);
    if (st) return st;
    if (fwrite(data, sizeof(float), (size_t)count, o->f) != (size_t)count) {
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

jepa_status npy_save_f32_all(int n, const char *const *paths, const float *const *data, const int *ndim,
                             const int64_t *const *shapes, struct jerr *err) {
    struct jr_outfile o[4] = {{0}};
    if (n < 0 || n > 4) return jr_err_set(err, JEPA_ERR_ARG, "%d outputs at once; at most 4", n);
    jepa_status st = JEPA_OK;
    int i = 0;
    for (; i < n && !st; i++) {
        if (!paths[i]) continue;
        st = npy_write_f32(&o[i], paths[i], data[i], ndim[i], shapes[i], err);
        if (!st && fflush(o[i].f) != 0) {
            st = jr_err_set(err, JEPA_ERR_IO, "cannot write '%s': %s", paths[i], strerror(errno));
            jr_outfile_abort(&o[i]);
        }
    }
    for (int j = 0; j < i; j++) {
        if (!paths[j] || !o[j].path) continue;   /* skipped, or removed by its own failure */
        if (st) jr_outfile_abort(&o[j]);
        else st = jr_outfile_commit(&o[j], err);   /* the rest are aborted once one fails */
    }
    return st;
}
