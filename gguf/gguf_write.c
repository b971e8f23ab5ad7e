/*
 * gguf_write.c — the GGUF v3 writer: collect key/value pairs and tensors, then lay
 * them out the way ggml's own writers (gguf.cpp, gguf-py) do, so ggml-based tools
 * read the result:
 *
 *   header ("GGUF", u32 3, u64 n_tensors, u64 n_kv)
 *   key/values in insertion order (replacing a key keeps its place)
 *   tensor infos in insertion order, offsets relative to the data section
 *   zero padding to the alignment (general.alignment if set, else 32)
 *   tensor data, each tensor followed by zero padding to the alignment
 *
 * jg_writer_write streams into a temporary beside PATH (runtime/outfile.h: mkstemp,
 * O_EXCL), fsyncs it, renames it over PATH and fsyncs the directory; on any failure the
 * temporary is removed, so a file at PATH is always complete. jg_writer_write_mem produces the same bytes in memory.
 *
 * Tested by tests/gguf/test_gguf_roundtrip.c (every value type and every allowed tensor
 * type through the reader, memory and file, byte-identical; replace-in-place; .tmp
 * cleanup; unwritable paths) and by tests/gguf/check_gguf_py.py, which reads a file
 * written here (tests/gguf/gguf_write_sample.c) with ggml's gguf-py.
 */
#include "gguf/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/outfile.h"

struct wkv {
    char *key;
    uint32_t type;
    uint8_t scalar[8];      /* little-endian value bytes (scalar types) */
    char *s;                /* STRING */
    uint32_t arr_type;      /* ARRAY */
    uint64_t arr_n;
    void *arr_data;         /* numeric: arr_n packed little-endian values */
    char **arr_str;         /* strings: arr_n copies */
};

struct wtensor {
    char *name;
    uint32_t type;
    int n_dims;
    int64_t ne[GGUF_MAX_DIMS];
    void *data;
    size_t nbytes;
};

struct gguf_writer {
    struct wkv *kv;
    size_t n_kv, cap_kv;
    struct wtensor *t;
    size_t n_t, cap_t;
};

struct gguf_writer *jg_writer_new(void) { return calloc(1, sizeof(struct gguf_writer)); }

static void wkv_clear_value(struct wkv *kv) {
    free(kv->s);
    free(kv->arr_data);
    if (kv->arr_str)
        for (uint64_t i = 0; i < kv->arr_n; i++) free(kv->arr_str[i]);
    free(kv->arr_str);
    kv->s = NULL;
    kv->arr_data = NULL;
    kv->arr_str = NULL;
    kv->arr_n = 0;
    kv->arr_type = 0;
    memset(kv->scalar, 0, sizeof kv->scalar);
}

void jg_writer_free(struct gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        wkv_clear_value(&w->kv[i]);
        free(w->kv[i].key);
    }
    free(w->kv);
    for (size_t i = 0; i < w->n_t; i++) {
        free(w->t[i].name);
        free(w->t[i].data);
    }
    free(w->t);
    free(w);
}

/* Keys the reader will accept: non-empty, at most GGUF_MAX_NAME bytes. */
static bool key_ok(const char *key) {
    return key && *key && strlen(key) <= GGUF_MAX_NAME;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/*
 * Replace the value of `v` (already fully built by the caller, owning its buffers) into
 * the slot for `key`: the existing slot if the key is there, else a new one at the end.
 * On failure v's buffers are freed.
 */
static jepa_status put_kv(struct gguf_writer *w, const char *key, struct wkv *v) {
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, key) == 0) {
            wkv_clear_value(&w->kv[i]);
            v->key = w->kv[i].key;
            w->kv[i] = *v;
            return JEPA_OK;
        }
    }
    if (w->n_kv == w->cap_kv) {
        size_t cap = w->cap_kv ? 2 * w->cap_kv : 16;
        struct wkv *kv = realloc(w->kv, cap * sizeof *kv);
        if (!kv) goto fail;
        w->kv = kv;
        w->cap_kv = cap;
    }
    v->key = dup_str(key);
    if (!v->key) goto fail;
    w->kv[w->n_kv++] = *v;
    return JEPA_OK;
fail:
    wkv_clear_value(v);
    return JEPA_ERR_NOMEM;
}

jepa_status jg_writer_set_scalar(struct gguf_writer *w, const char *key, uint32_t vtype,
                                   const void *value) {
    size_t n = jg_vtype_size(vtype);
    if (!w || !key_ok(key) || !value || n == 0) return JEPA_ERR_ARG;
    if (vtype == GGUF_V_BOOL && *(const uint8_t *)value > 1) return JEPA_ERR_ARG;
    struct wkv v = {0};
    v.type = vtype;
    memcpy(v.scalar, value, n);
    return put_kv(w, key, &v);
}

/* Values of the typed setters in little-endian byte order. */
static void st_le(uint8_t *p, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

jepa_status jg_writer_set_u32(struct gguf_writer *w, const char *key, uint32_t v) {
    uint8_t b[4];
    st_le(b, v, 4);
    return jg_writer_set_scalar(w, key, GGUF_V_U32, b);
}

jepa_status jg_writer_set_i32(struct gguf_writer *w, const char *key, int32_t v) {
    uint8_t b[4];
    st_le(b, (uint32_t)v, 4);
    return jg_writer_set_scalar(w, key, GGUF_V_I32, b);
}

jepa_status jg_writer_set_u64(struct gguf_writer *w, const char *key, uint64_t v) {
    uint8_t b[8];
    st_le(b, v, 8);
    return jg_writer_set_scalar(w, key, GGUF_V_U64, b);
}

jepa_status jg_writer_set_f32(struct gguf_writer *w, const char *key, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    uint8_t b[4];
    st_le(b, u, 4);
    return jg_writer_set_scalar(w, key, GGUF_V_F32, b);
}

jepa_status jg_writer_set_bool(struct gguf_writer *w, const char *key, bool v) {
    uint8_t b = v ? 1 : 0;
    return jg_writer_set_scalar(w, key, GGUF_V_BOOL, &b);
}

jepa_status jg_writer_set_str(struct gguf_writer *w, const char *key, const char *v) {
    if (!w || !key_ok(key) || !v) return JEPA_ERR_ARG;
    struct wkv kv = {0};
    kv.type = GGUF_V_STRING;
    kv.s = dup_str(v);
    if (!kv.s) return JEPA_ERR_NOMEM;
    return put_kv(w, key, &kv);
}

jepa_status jg_writer_set_arr(struct gguf_writer *w, const char *key, uint32_t elem,
                                const void *data, uint64_t n) {
    size_t es = jg_vtype_size(elem), bytes;
    if (!w || !key_ok(key) || es == 0 || (n && !data)) return JEPA_ERR_ARG;
    if (__builtin_mul_overflow(n, (uint64_t)es, &bytes)) return JEPA_ERR_ARG;
    if (elem == GGUF_V_BOOL)
        for (size_t i = 0; i < bytes; i++)
            if (((const uint8_t *)data)[i] > 1) return JEPA_ERR_ARG;
    struct wkv kv = {0};
    kv.type = GGUF_V_ARRAY;
    kv.arr_type = elem;
    kv.arr_n = n;
    if (bytes) {
        kv.arr_data = malloc(bytes);
        if (!kv.arr_data) return JEPA_ERR_NOMEM;
        memcpy(kv.arr_data, data, bytes);
    }
    return put_kv(w, key, &kv);
}

jepa_status jg_writer_set_arr_str(struct gguf_writer *w, const char *key,
                                    const char *const *v, uint64_t n) {
    if (!w || !key_ok(key) || (n && !v) || n > SIZE_MAX / sizeof(char *)) return JEPA_ERR_ARG;
    for (uint64_t i = 0; i < n; i++)
        if (!v[i]) return JEPA_ERR_ARG;
    struct wkv kv = {0};
    kv.type = GGUF_V_ARRAY;
    kv.arr_type = GGUF_V_STRING;
    if (n) {
        kv.arr_str = calloc((size_t)n, sizeof *kv.arr_str);
        if (!kv.arr_str) return JEPA_ERR_NOMEM;
    }
    kv.arr_n = n;   /* wkv_clear_value frees the copies made so far (the rest are NULL) */
    for (uint64_t i = 0; i < n; i++) {
        kv.arr_str[i] = dup_str(v[i]);
        if (!kv.arr_str[i]) {
            wkv_clear_value(&kv);
            return JEPA_ERR_NOMEM;
        }
    }
    return put_kv(w, key, &kv);
}

jepa_status jg_writer_copy_kv(struct gguf_writer *w, const struct gguf_file *g) {
    if (!w || !g) return JEPA_ERR_ARG;
    for (int64_t i = 0; i < jg_n_kv(g); i++) {
        const struct gguf_kv *kv = jg_kv_at(g, i);
        jepa_status st;
        if (kv->type == GGUF_V_STRING) {
            st = jg_writer_set_str(w, kv->key, kv->v.s);
        } else if (kv->type == GGUF_V_ARRAY && kv->arr_type == GGUF_V_STRING) {
            st = jg_writer_set_arr_str(w, kv->key, kv->arr_str, kv->arr_n);
        } else if (kv->type == GGUF_V_ARRAY) {
            /* the reader's arr_data is the file's little-endian bytes: copy them as is */
            st = jg_writer_set_arr(w, kv->key, kv->arr_type, kv->arr_data, kv->arr_n);
        } else {
            uint8_t b[8];
            size_t n = jg_vtype_size(kv->type);
            if (n == 0 || n > sizeof b) return JEPA_ERR_FORMAT;   /* the reader never gives one */
            if (kv->type == GGUF_V_F32) {
                float f = (float)kv->v.f;
                uint32_t u;
                memcpy(&u, &f, 4);
                st_le(b, u, 4);
            } else if (kv->type == GGUF_V_F64) {
                uint64_t u;
                memcpy(&u, &kv->v.f, 8);
                st_le(b, u, 8);
            } else if (kv->type == GGUF_V_I8 || kv->type == GGUF_V_I16 || kv->type == GGUF_V_I32 ||
                       kv->type == GGUF_V_I64) {
                st_le(b, (uint64_t)kv->v.i, n);
            } else {
                st_le(b, kv->v.u, n);
            }
            st = jg_writer_set_scalar(w, kv->key, kv->type, b);
        }
        if (st) return st;
    }
    return JEPA_OK;
}

jepa_status jg_writer_add_tensor(struct gguf_writer *w, const char *name, uint32_t type,
                                   int n_dims, const int64_t *ne, const void *data,
                                   size_t nbytes, struct jerr *err) {
    if (!w || !name || !ne || !data)
        return jr_err_set(err, JEPA_ERR_ARG, "jg_writer_add_tensor: NULL argument");
    size_t len = strlen(name);
    if (len == 0) return jr_err_set(err, JEPA_ERR_ARG, "jg_writer_add_tensor: empty tensor name");
    if (len > GGUF_GGML_MAX_NAME)
        return jr_err_set(err, JEPA_ERR_ARG,
                        "tensor '%.64s...': name is %zu bytes, ggml allows at most %d", name, len,
                        GGUF_GGML_MAX_NAME);
    for (size_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return jr_err_set(err, JEPA_ERR_ARG, "tensor '%s': duplicate name", name);
    const struct jg_type_info *ti = jg_type_info(type);
    if (!ti)
        return jr_err_set(err, JEPA_ERR_ARG, "tensor '%s': type %u has no layout this writer knows", name,
                        type);
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS)
        return jr_err_set(err, JEPA_ERR_ARG, "tensor '%s': n_dims %d (expected 1..%d)", name,
                        n_dims, GGUF_MAX_DIMS);
    int64_t nel = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] < 1)
            return jr_err_set(err, JEPA_ERR_ARG, "tensor '%s': ne[%d] = %lld (expected >= 1)", name,
                            d, (long long)ne[d]);
        if (__builtin_mul_overflow(nel, ne[d], &nel))
            return jr_err_set(err, JEPA_ERR_ARG, "tensor '%s': element count overflows", name);
    }
    if (ne[0] % ti->block_size)
        return jr_err_set(err, JEPA_ERR_ARG,
                        "tensor '%s': ne[0] = %lld is not a multiple of the %s block size %lld",
                        name, (long long)ne[0], ti->name, (long long)ti->block_size);
    size_t want;
    if (__builtin_mul_overflow(jg_row_bytes(type, ne[0]), (uint64_t)(nel / ne[0]), &want))
        return jr_err_set(err, JEPA_ERR_ARG, "tensor '%s': size overflows", name);
    if (nbytes != want)
        return jr_err_set(err, JEPA_ERR_ARG, "tensor '%s': %zu bytes of data, expected %zu for %s",
                        name, nbytes, want, ti->name);

    if (w->n_t == w->cap_t) {
        size_t cap = w->cap_t ? 2 * w->cap_t : 16;
        struct wtensor *t = realloc(w->t, cap * sizeof *t);
        if (!t) return jr_err_set(err, JEPA_ERR_NOMEM, "tensor '%s': out of memory", name);
        w->t = t;
        w->cap_t = cap;
    }
    struct wtensor t = {0};
    t.name = dup_str(name);
    t.data = malloc(nbytes);
    if (!t.name || !t.data) {
        free(t.name);
        free(t.data);
        return jr_err_set(err, JEPA_ERR_NOMEM, "tensor '%s': cannot copy %zu bytes", name, nbytes);
    }
    memcpy(t.data, data, nbytes);
    t.type = type;
    t.n_dims = n_dims;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t.ne[d] = d < n_dims ? ne[d] : 1;
    t.nbytes = nbytes;
    w->t[w->n_t++] = t;
    return JEPA_OK;
}

/* ---- serialisation ---------------------------------------------------------------------- */

/* Where the bytes go: a FILE or a memory buffer already sized to the whole file. */
struct sink {
    FILE *f;
    uint8_t *mem;
    size_t pos;
    bool failed;
};

static void put(struct sink *s, const void *p, size_t n) {
    if (s->failed || n == 0) return;
    if (s->f) {
        if (fwrite(p, 1, n, s->f) != n) s->failed = true;
    } else {
        memcpy(s->mem + s->pos, p, n);
    }
    s->pos += n;
}

static void put_zeros(struct sink *s, size_t n) {
    static const uint8_t zeros[256];
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        put(s, zeros, k);
        n -= k;
    }
}

static void put_u32(struct sink *s, uint32_t v) {
    uint8_t b[4];
    st_le(b, v, 4);
    put(s, b, 4);
}

static void put_u64(struct sink *s, uint64_t v) {
    uint8_t b[8];
    st_le(b, v, 8);
    put(s, b, 8);
}

static void put_str(struct sink *s, const char *str) {
    size_t n = strlen(str);
    put_u64(s, n);
    put(s, str, n);
}

static size_t pad_to(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

/* The alignment the file will use, or 0 (with a message) if general.alignment is bad. */
static size_t file_alignment(const struct gguf_writer *w, struct jerr *err) {
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, "general.alignment") != 0) continue;
        if (w->kv[i].type != GGUF_V_U32) {
            jr_err_set(err, JEPA_ERR_ARG, "general.alignment: must be a u32, is %s",
                     jg_vtype_name(w->kv[i].type));
            return 0;
        }
        const uint8_t *b = w->kv[i].scalar;
        uint32_t a = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        if (a == 0 || (a & (a - 1)) || a > (1u << 30)) {
            jr_err_set(err, JEPA_ERR_ARG,
                     "general.alignment: %u is not a power of two in 1..2^30", a);
            return 0;
        }
        return a;
    }
    return GGUF_DEFAULT_ALIGNMENT;
}

static size_t str_bytes(const char *s) { return 8 + strlen(s); }

/* Total file size and each tensor's offset (written into offs[]); 0 on overflow. */
static size_t layout(const struct gguf_writer *w, size_t align, uint64_t *offs, size_t *data_off) {
    size_t n = 24;
    for (size_t i = 0; i < w->n_kv; i++) {
        const struct wkv *kv = &w->kv[i];
        n += str_bytes(kv->key) + 4;
        if (kv->type == GGUF_V_STRING) {
            n += str_bytes(kv->s);
        } else if (kv->type == GGUF_V_ARRAY) {
            n += 4 + 8;
            if (kv->arr_type == GGUF_V_STRING)
                for (uint64_t k = 0; k < kv->arr_n; k++) n += str_bytes(kv->arr_str[k]);
            else
                n += (size_t)kv->arr_n * jg_vtype_size(kv->arr_type);
        } else {
            n += jg_vtype_size(kv->type);
        }
    }
    for (size_t i = 0; i < w->n_t; i++) n += str_bytes(w->t[i].name) + 4 + 8 * (size_t)w->t[i].n_dims + 4 + 8;
    n = pad_to(n, align);
    *data_off = n;
    size_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        offs[i] = off;
        if (__builtin_add_overflow(off, pad_to(w->t[i].nbytes, align), &off)) return 0;
    }
    size_t total;
    if (__builtin_add_overflow(n, off, &total)) return 0;
    return total;
}

static void serialise(const struct gguf_writer *w, struct sink *s, size_t align,
                      const uint64_t *offs, size_t data_off) {
    put(s, GGUF_MAGIC, 4);
    put_u32(s, GGUF_VERSION);
    put_u64(s, w->n_t);
    put_u64(s, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        const struct wkv *kv = &w->kv[i];
        put_str(s, kv->key);
        put_u32(s, kv->type);
        if (kv->type == GGUF_V_STRING) {
            put_str(s, kv->s);
        } else if (kv->type == GGUF_V_ARRAY) {
            put_u32(s, kv->arr_type);
            put_u64(s, kv->arr_n);
            if (kv->arr_type == GGUF_V_STRING)
                for (uint64_t k = 0; k < kv->arr_n; k++) put_str(s, kv->arr_str[k]);
            else
                put(s, kv->arr_data, (size_t)kv->arr_n * jg_vtype_size(kv->arr_type));
        } else {
            put(s, kv->scalar, jg_vtype_size(kv->type));
        }
    }
    for (size_t i = 0; i < w->n_t; i++) {
        const struct wtensor *t = &w->t[i];
        put_str(s, t->name);
        put_u32(s, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++) put_u64(s, (uint64_t)t->ne[d]);
        put_u32(s, t->type);
        put_u64(s, offs[i]);
    }
    put_zeros(s, data_off - s->pos);
    for (size_t i = 0; i < w->n_t; i++) {
        put(s, w->t[i].data, w->t[i].nbytes);
        put_zeros(s, pad_to(w->t[i].nbytes, align) - w->t[i].nbytes);
    }
}

/* Alignment, offsets and size: the part both writers share. */
static jepa_status plan(const struct gguf_writer *w, uint64_t **offs, size_t *data_off,
                        size_t *total, size_t *align, struct jerr *err) {
    *align = file_alignment(w, err);
    if (*align == 0) return JEPA_ERR_ARG;
    *offs = malloc((w->n_t ? w->n_t : 1) * sizeof **offs);
    if (!*offs) return jr_err_set(err, JEPA_ERR_NOMEM, "gguf writer: out of memory");
    *total = layout(w, *align, *offs, data_off);
    if (*total == 0) {
        free(*offs);
        *offs = NULL;
        return jr_err_set(err, JEPA_ERR_ARG, "gguf writer: file size overflows");
    }
    return JEPA_OK;
}

jepa_status jg_writer_write_mem(const struct gguf_writer *w, void **data, size_t *size,
                                  struct jerr *err) {
    if (!w || !data || !size) return jr_err_set(err, JEPA_ERR_ARG, "jg_writer_write_mem: NULL argument");
    *data = NULL;
    *size = 0;
    uint64_t *offs = NULL;
    size_t data_off, total, align;
    jepa_status st = plan(w, &offs, &data_off, &total, &align, err);
    if (st) return st;
    struct sink s = {0};
    s.mem = malloc(total);
    if (!s.mem) {
        free(offs);
        return jr_err_set(err, JEPA_ERR_NOMEM, "gguf writer: cannot allocate %zu bytes", total);
    }
    serialise(w, &s, align, offs, data_off);
    free(offs);
    *data = s.mem;
    *size = total;
    return JEPA_OK;
}

jepa_status jg_writer_write(const struct gguf_writer *w, const char *path, struct jerr *err) {
    if (!w || !path || !*path) return jr_err_set(err, JEPA_ERR_ARG, "jg_writer_write: NULL argument");
    uint64_t *offs = NULL;
    size_t data_off, total, align;
    jepa_status st = plan(w, &offs, &data_off, &total, &align, err);
    if (st) return st;
    /* beside the target, renamed into place (runtime/outfile.h); a device or a FIFO is
     * refused: renaming over it would replace it (as root, `-o /dev/null` would become a
     * regular file) */
    struct jr_outfile o;
    if ((st = jr_outfile_open(&o, path, false, err))) {
        free(offs);
        return st;
    }
    struct sink s = {.f = o.f};
    serialise(w, &s, align, offs, data_off);
    free(offs);
    if (s.failed) {
        st = jr_err_set(err, JEPA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        jr_outfile_abort(&o);
        return st;
    }
    return jr_outfile_commit(&o, err);
}
