/*
 * gguf.c — the GGUF v3 (and v2) reader: map the file, parse it, check every field
 * before trusting it, and hand out typed views (see gguf.h for what is refused and
 * with which status).
 *
 * Layout read (little-endian):
 *   "GGUF" u32 version, u64 n_tensors, u64 n_kv
 *   n_kv      x { string key, u32 vtype, value }          string = u64 len + bytes
 *   n_tensors x { string name, u32 n_dims, i64 ne[n_dims], u32 type, u64 offset }
 *   padding to general.alignment (u32, default 32), then the data section; tensor
 *   offsets are relative to it, aligned, each tensor followed by padding.
 *
 * Every length and count is checked against the bytes left before it is used, with
 * overflow-checked arithmetic, so nothing is allocated from an untrusted count and
 * nothing is read out of bounds. All copies (keys, names, strings, pointer arrays)
 * live in one chunked arena owned by the gguf_file.
 *
 * Tested by tests/gguf/: test_gguf_roundtrip.c (writer -> reader, memory and file),
 * test_gguf_fixtures.c (the two fixture GGUFs written by ggml's gguf-py),
 * test_gguf_hostile.c (every corrupted field, truncation at every byte), the fuzz
 * corpus replay (tests/fuzz/replay.c) and check_gguf_py.py (our view == gguf-py's);
 * fuzzed by tests/fuzz/fuzz_gguf.c.
 */
#include "gguf/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_BYTES 24
/* Smallest possible encodings, used to bound counts by the bytes left. */
#define MIN_KV_BYTES 14      /* u64 key length, 1 key byte, u32 type, 1 value byte */
#define MIN_TENSOR_BYTES 33  /* u64 name length, 1 name byte, u32 n_dims, 1 ne, u32 type, u64 offset */

/* ---- arena: every copy the file owns ------------------------------------------ */

struct arena_blk {
    struct arena_blk *next;
    size_t used, cap;
    unsigned char data[];
};

#define ARENA_CHUNK ((size_t)64 << 10)

static void *arena_alloc(struct arena_blk **head, size_t n) {
    struct arena_blk *b = *head;
    size_t at = b ? (b->used + 7) & ~(size_t)7 : 0;
    if (!b || at > b->cap || n > b->cap - at) {
        size_t cap = n > ARENA_CHUNK ? n : ARENA_CHUNK;
        if (cap > SIZE_MAX - sizeof *b) return NULL;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->next = *head;
        b->used = 0;
        b->cap = cap;
        *head = b;
        at = 0;
    }
    b->used = at + n;
    return b->data + at;
}

static void arena_free(struct arena_blk *b) {
    while (b) {
        struct arena_blk *next = b->next;
        free(b);
        b = next;
    }
}

/* ---- the file ------------------------------------------------------------------ */

struct gguf_file {
    const uint8_t *base;
    size_t size;
    void *map;              /* jg_open's mapping (NULL for jg_open_memory) */
    size_t map_size;
    uint32_t version;
    size_t alignment;
    size_t data_offset;
    int64_t n_kv, n_tensors;
    struct gguf_kv *kv;
    struct gguf_tensor *tensors;
    const struct gguf_kv **kv_sorted;          /* by key, for lookups */
    const struct gguf_tensor **tensor_sorted;  /* by name, for lookups */
    struct arena_blk *arena;
};

/* ---- bounded little-endian cursor ---------------------------------------------- */

struct rd {
    const uint8_t *p;
    size_t size, pos;
};

static size_t rd_left(const struct rd *r) { return r->size - r->pos; }

static uint16_t ld_u16(const uint8_t *p) { return (uint16_t)(p[0] | (unsigned)p[1] << 8); }
static uint32_t ld_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t ld_u64(const uint8_t *p) { return ld_u32(p) | (uint64_t)ld_u32(p + 4) << 32; }

static bool rd_u32(struct rd *r, uint32_t *v) {
    if (rd_left(r) < 4) return false;
    *v = ld_u32(r->p + r->pos);
    r->pos += 4;
    return true;
}

static bool rd_u64(struct rd *r, uint64_t *v) {
    if (rd_left(r) < 8) return false;
    *v = ld_u64(r->p + r->pos);
    r->pos += 8;
    return true;
}

/* ---- messages -------------------------------------------------------------------- */

static jepa_status fail(struct jerr *e, jepa_status s, const char *fmt, ...) JEPA_PRINTF(3, 4);
static jepa_status fail(struct jerr *e, jepa_status s, const char *fmt, ...) {
    char buf[JEPA_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return jr_err_set(e, s, "%s", buf);
}

/* "truncated file: <what> needs N bytes at offset P, only L left (file is S bytes)" */
static jepa_status truncated(struct jerr *e, const struct rd *r, size_t need, const char *what) {
    return fail(e, JEPA_ERR_FORMAT,
                "truncated file: %s needs %zu bytes at offset %zu, only %zu left (file is %zu bytes)",
                what, need, r->pos, rd_left(r), r->size);
}

/* A name as it can appear in a one-line message: at most 64 bytes, control bytes as '?'. */
struct shown { char s[72]; };
static struct shown show(const char *name) {
    struct shown o;
    size_t i = 0;
    for (; name[i] && i < 64; i++) {
        unsigned char c = (unsigned char)name[i];
        o.s[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (name[i]) { memcpy(o.s + i, "...", 3); i += 3; }
    o.s[i] = '\0';
    return o;
}

/* ---- strings --------------------------------------------------------------------- */

/*
 * Read a GGUF string at the cursor and copy it, NUL-terminated, into the arena. `ctx`
 * names it in messages ("kv 3 key"); idx >= 0 appends " element idx". Names (keys,
 * tensor names) must be non-empty, at most GGUF_MAX_NAME bytes, without NUL.
 */
static jepa_status read_string(struct gguf_file *g, struct rd *r, struct jerr *e,
                               const char *ctx, int64_t idx, bool is_name, const char **out) {
    char where[160];
    if (idx >= 0) snprintf(where, sizeof where, "%s element %lld", ctx, (long long)idx);
    else snprintf(where, sizeof where, "%s", ctx);
    uint64_t len;
    if (!rd_u64(r, &len)) {
        char what[200];
        snprintf(what, sizeof what, "%s length", where);
        return truncated(e, r, 8, what);
    }
    if (is_name && len == 0) return fail(e, JEPA_ERR_FORMAT, "%s: empty name", where);
    if (is_name && len > GGUF_MAX_NAME)
        return fail(e, JEPA_ERR_FORMAT, "%s: name length %llu exceeds the limit of %d bytes",
                    where, (unsigned long long)len, GGUF_MAX_NAME);
    if (len > rd_left(r))
        return fail(e, JEPA_ERR_FORMAT,
                    "%s: string of %llu bytes at offset %zu runs past the end of the file (%zu bytes)",
                    where, (unsigned long long)len, r->pos, r->size);
    const uint8_t *src = r->p + r->pos;
    if (is_name) {
        const void *nul = memchr(src, 0, (size_t)len);
        if (nul)
            return fail(e, JEPA_ERR_FORMAT, "%s: name has an embedded NUL at byte %zu of %llu",
                        where, (size_t)((const uint8_t *)nul - src), (unsigned long long)len);
    }
    char *s = arena_alloc(&g->arena, (size_t)len + 1);
    if (!s) return fail(e, JEPA_ERR_NOMEM, "%s: cannot allocate %llu bytes", where,
                        (unsigned long long)len + 1);
    if (len) memcpy(s, src, (size_t)len);
    s[len] = '\0';
    r->pos += (size_t)len;
    *out = s;
    return JEPA_OK;
}

/* ---- key/value pairs ---------------------------------------------------------------- */

/* Widen a scalar of type vt stored at p into kv->v. */
static void load_scalar(struct gguf_kv *kv, uint32_t vt, const uint8_t *p) {
    switch (vt) {
    case GGUF_V_U8: case GGUF_V_BOOL: kv->v.u = p[0]; break;
    case GGUF_V_I8: kv->v.i = (int8_t)p[0]; break;
    case GGUF_V_U16: kv->v.u = ld_u16(p); break;
    case GGUF_V_I16: kv->v.i = (int16_t)ld_u16(p); break;
    case GGUF_V_U32: kv->v.u = ld_u32(p); break;
    case GGUF_V_I32: kv->v.i = (int32_t)ld_u32(p); break;
    case GGUF_V_U64: kv->v.u = ld_u64(p); break;
    case GGUF_V_I64: kv->v.i = (int64_t)ld_u64(p); break;
    case GGUF_V_F32: {
        uint32_t u = ld_u32(p);
        float f;
        memcpy(&f, &u, 4);
        kv->v.f = f;
        break;
    }
    case GGUF_V_F64: {
        uint64_t u = ld_u64(p);
        memcpy(&kv->v.f, &u, 8);
        break;
    }
    default: break;
    }
}

static jepa_status read_kv(struct gguf_file *g, struct rd *r, struct jerr *e, int64_t i,
                           struct gguf_kv *kv) {
    char ctx[160];
    snprintf(ctx, sizeof ctx, "kv %lld key", (long long)i);
    jepa_status st = read_string(g, r, e, ctx, -1, true, &kv->key);
    if (st) return st;
    snprintf(ctx, sizeof ctx, "kv %lld '%s'", (long long)i, show(kv->key).s);

    char what[200];
    if (!rd_u32(r, &kv->type)) {
        snprintf(what, sizeof what, "%s value type", ctx);
        return truncated(e, r, 4, what);
    }
    uint32_t vt = kv->type;
    if (vt >= GGUF_V_COUNT)
        return fail(e, JEPA_ERR_FORMAT, "%s: unknown value type %u (expected 0..%d)", ctx, vt,
                    GGUF_V_COUNT - 1);

    if (vt == GGUF_V_STRING) return read_string(g, r, e, ctx, -1, false, &kv->v.s);

    if (vt != GGUF_V_ARRAY) {
        size_t n = jg_vtype_size(vt);
        if (rd_left(r) < n) {
            snprintf(what, sizeof what, "%s %s value", ctx, jg_vtype_name(vt));
            return truncated(e, r, n, what);
        }
        const uint8_t *p = r->p + r->pos;
        if (vt == GGUF_V_BOOL && p[0] > 1)
            return fail(e, JEPA_ERR_FORMAT, "%s: bool value at offset %zu is %u (expected 0 or 1)",
                        ctx, r->pos, p[0]);
        load_scalar(kv, vt, p);
        r->pos += n;
        return JEPA_OK;
    }

    /* array: u32 element type, u64 count, elements */
    uint32_t et;
    uint64_t n;
    if (!rd_u32(r, &et)) {
        snprintf(what, sizeof what, "%s array element type", ctx);
        return truncated(e, r, 4, what);
    }
    if (et == GGUF_V_ARRAY)
        return fail(e, JEPA_ERR_FORMAT, "%s: nested array (array of arrays) is not allowed", ctx);
    if (et >= GGUF_V_COUNT)
        return fail(e, JEPA_ERR_FORMAT, "%s: unknown array element type %u (expected 0..%d)", ctx,
                    et, GGUF_V_COUNT - 1);
    if (!rd_u64(r, &n)) {
        snprintf(what, sizeof what, "%s array length", ctx);
        return truncated(e, r, 8, what);
    }
    kv->arr_type = et;
    kv->arr_n = n;
    if (et == GGUF_V_STRING) {
        /* each element takes at least its 8-byte length */
        if (n > rd_left(r) / 8)
            return fail(e, JEPA_ERR_FORMAT,
                        "%s: array of %llu strings at offset %zu cannot fit in the %zu bytes left "
                        "(at least 8 bytes each)", ctx, (unsigned long long)n, r->pos, rd_left(r));
        const char **v = NULL;
        if (n) {
            v = arena_alloc(&g->arena, (size_t)n * sizeof *v);
            if (!v) return fail(e, JEPA_ERR_NOMEM, "%s: cannot allocate %llu string pointers",
                                ctx, (unsigned long long)n);
        }
        for (uint64_t k = 0; k < n; k++) {
            st = read_string(g, r, e, ctx, (int64_t)k, false, &v[k]);
            if (st) return st;
        }
        kv->arr_str = v;
        return JEPA_OK;
    }
    size_t es = jg_vtype_size(et), bytes;
    if (__builtin_mul_overflow((uint64_t)n, (uint64_t)es, &bytes) || bytes > rd_left(r))
        return fail(e, JEPA_ERR_FORMAT,
                    "%s: array of %llu %s at offset %zu runs past the end of the file (%zu bytes)",
                    ctx, (unsigned long long)n, jg_vtype_name(et), r->pos, r->size);
    const uint8_t *p = r->p + r->pos;
    if (et == GGUF_V_BOOL) {
        for (size_t k = 0; k < bytes; k++)
            if (p[k] > 1)
                return fail(e, JEPA_ERR_FORMAT, "%s: bool element %zu is %u (expected 0 or 1)",
                            ctx, k, p[k]);
    }
    kv->arr_data = p;
    r->pos += bytes;
    return JEPA_OK;
}

/* ---- tensor infos ----------------------------------------------------------------- */

static jepa_status read_tensor_info(struct gguf_file *g, struct rd *r, struct jerr *e, int64_t i,
                                    struct gguf_tensor *t) {
    char ctx[160], what[200];
    snprintf(ctx, sizeof ctx, "tensor %lld name", (long long)i);
    jepa_status st = read_string(g, r, e, ctx, -1, true, &t->name);
    if (st) return st;
    snprintf(ctx, sizeof ctx, "tensor '%s'", show(t->name).s);

    uint32_t n_dims;
    if (!rd_u32(r, &n_dims)) {
        snprintf(what, sizeof what, "%s n_dims", ctx);
        return truncated(e, r, 4, what);
    }
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS)
        return fail(e, JEPA_ERR_FORMAT, "%s: n_dims is %u (expected 1..%d)", ctx, n_dims,
                    GGUF_MAX_DIMS);
    t->n_dims = (int)n_dims;
    int64_t nel = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (int d = 0; d < (int)n_dims; d++) {
        uint64_t u;
        if (!rd_u64(r, &u)) {
            snprintf(what, sizeof what, "%s ne[%d]", ctx, d);
            return truncated(e, r, 8, what);
        }
        int64_t v = (int64_t)u;
        if (v <= 0)
            return fail(e, JEPA_ERR_FORMAT, "%s: ne[%d] is %lld (expected >= 1)", ctx, d,
                        (long long)v);
        t->ne[d] = v;
        if (__builtin_mul_overflow(nel, v, &nel))
            return fail(e, JEPA_ERR_FORMAT,
                        "%s: the product of the dims overflows (ne[%d] = %lld; at most 2^63-1 "
                        "elements)", ctx, d, (long long)v);
    }
    t->n_elements = nel;

    if (!rd_u32(r, &t->type)) {
        snprintf(what, sizeof what, "%s type", ctx);
        return truncated(e, r, 4, what);
    }
    const struct jg_type_info *ti = jg_type_info(t->type);
    if (!ti) {
        /* ids ggml has used: 0..39 except the retired 4, 5, 31..33, 36..38 */
        bool ggml_known = t->type < GGUF_TYPE_COUNT && t->type != 4 && t->type != 5 &&
                          !(t->type >= 31 && t->type <= 33) && !(t->type >= 36 && t->type <= 38);
        if (ggml_known)
            return fail(e, JEPA_ERR_UNSUPPORTED,
                        "%s: ggml tensor type %u has a block layout this reader does not know "
                        "(it knows f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q8_1, q2_K .. q8_K)",
                        ctx, t->type);
        return fail(e, JEPA_ERR_FORMAT, "%s: unknown tensor type %u", ctx, t->type);
    }
    if (t->ne[0] % ti->block_size != 0)
        return fail(e, JEPA_ERR_FORMAT,
                    "%s: ne[0] = %lld is not a multiple of the %s block size %lld", ctx,
                    (long long)t->ne[0], ti->name, (long long)ti->block_size);
    size_t row = jg_row_bytes(t->type, t->ne[0]);
    if (row == 0 || __builtin_mul_overflow(row, (uint64_t)(nel / t->ne[0]), &t->nbytes))
        return fail(e, JEPA_ERR_FORMAT, "%s: data size overflows (%lld elements of %s)", ctx,
                    (long long)nel, ti->name);

    if (!rd_u64(r, &t->offset)) {
        snprintf(what, sizeof what, "%s offset", ctx);
        return truncated(e, r, 8, what);
    }
    return JEPA_OK;
}

/* ---- sorting and lookups ------------------------------------------------------------ */

static int cmp_kv_key(const void *a, const void *b) {
    return strcmp((*(const struct gguf_kv *const *)a)->key, (*(const struct gguf_kv *const *)b)->key);
}
static int cmp_tensor_name(const void *a, const void *b) {
    return strcmp((*(const struct gguf_tensor *const *)a)->name,
                  (*(const struct gguf_tensor *const *)b)->name);
}
static int cmp_tensor_offset(const void *a, const void *b) {
    uint64_t x = (*(const struct gguf_tensor *const *)a)->offset;
    uint64_t y = (*(const struct gguf_tensor *const *)b)->offset;
    return (x > y) - (x < y);
}

static bool align_up(size_t x, size_t a, size_t *out) {
    size_t y;
    if (__builtin_add_overflow(x, a - 1, &y)) return false;
    *out = y & ~(a - 1);
    return true;
}

/* ---- parse ------------------------------------------------------------------------- */

/* The magic and version, then the counts, each checked against the bytes left for it. */
static jepa_status read_header(struct gguf_file *g, struct rd *r, uint64_t *n_kv, uint64_t *n_tensors,
                               struct jerr *e) {
    if (g->size >= 4 && memcmp(g->base, GGUF_MAGIC, 4) != 0) {
        const uint8_t *m = g->base;
        char shown_magic[5];
        for (int k = 0; k < 4; k++) shown_magic[k] = (m[k] >= 0x20 && m[k] < 0x7f) ? (char)m[k] : '?';
        shown_magic[4] = '\0';
        return fail(e, JEPA_ERR_FORMAT,
                    "bad magic: expected \"GGUF\", found \"%s\" (bytes %02x %02x %02x %02x); "
                    "not a GGUF file", shown_magic, m[0], m[1], m[2], m[3]);
    }
    if (g->size >= 8) {
        uint32_t v = ld_u32(g->base + 4);
        if (v == 1)
            return fail(e, JEPA_ERR_UNSUPPORTED,
                        "version 1 is not supported (GGUF v1 has 32-bit counts; expected 2 or 3)");
        if (v == 0x02000000u || v == 0x03000000u)
            return fail(e, JEPA_ERR_UNSUPPORTED,
                        "version 0x%08x: a big-endian GGUF, which is not supported (expected 2 or 3)",
                        v);
        if (v != 2 && v != 3)
            return fail(e, JEPA_ERR_FORMAT, "unsupported version %u (expected 2 or 3)", v);
        g->version = v;
    }
    if (g->size < HEADER_BYTES)
        return fail(e, JEPA_ERR_FORMAT,
                    "truncated header: the file is %zu bytes, a GGUF header needs %d", g->size,
                    HEADER_BYTES);
    *n_tensors = ld_u64(g->base + 8), *n_kv = ld_u64(g->base + 16);
    r->pos = HEADER_BYTES;
    size_t left = rd_left(r);
    if (*n_kv > left / MIN_KV_BYTES)
        return fail(e, JEPA_ERR_FORMAT,
                    "header: n_kv = %llu cannot fit in the %zu bytes after the header "
                    "(at least %d bytes each)", (unsigned long long)*n_kv, left, MIN_KV_BYTES);
    if (*n_tensors > left / MIN_TENSOR_BYTES)
        return fail(e, JEPA_ERR_FORMAT,
                    "header: n_tensors = %llu cannot fit in the %zu bytes after the header "
                    "(at least %d bytes each)", (unsigned long long)*n_tensors, left, MIN_TENSOR_BYTES);
    if (*n_kv * MIN_KV_BYTES + *n_tensors * MIN_TENSOR_BYTES > left)   /* no overflow: both bounded */
        return fail(e, JEPA_ERR_FORMAT,
                    "header: n_kv = %llu and n_tensors = %llu cannot fit in the %zu bytes after "
                    "the header", (unsigned long long)*n_kv, (unsigned long long)*n_tensors, left);
    return JEPA_OK;
}

/* The kv and tensor-info arrays: allocations bounded by the file size (read_header checked). */
static jepa_status alloc_tables(struct gguf_file *g, uint64_t n_kv, uint64_t n_tensors, struct jerr *e) {
    g->n_kv = (int64_t)n_kv;
    g->n_tensors = (int64_t)n_tensors;
    if (n_kv) {
        g->kv = calloc((size_t)n_kv, sizeof *g->kv);
        g->kv_sorted = malloc((size_t)n_kv * sizeof *g->kv_sorted);
        if (!g->kv || !g->kv_sorted)
            return fail(e, JEPA_ERR_NOMEM, "cannot allocate %llu kv entries", (unsigned long long)n_kv);
    }
    if (n_tensors) {
        g->tensors = calloc((size_t)n_tensors, sizeof *g->tensors);
        g->tensor_sorted = malloc((size_t)n_tensors * sizeof *g->tensor_sorted);
        if (!g->tensors || !g->tensor_sorted)
            return fail(e, JEPA_ERR_NOMEM, "cannot allocate %llu tensor infos",
                        (unsigned long long)n_tensors);
    }
    return JEPA_OK;
}

/* The key/value pairs, whose keys must be unique. */
static jepa_status read_kvs(struct gguf_file *g, struct rd *r, struct jerr *e) {
    for (int64_t i = 0; i < g->n_kv; i++) {
        jepa_status st = read_kv(g, r, e, i, &g->kv[i]);
        if (st) return st;
        g->kv_sorted[i] = &g->kv[i];
    }
    if (g->n_kv > 1) qsort(g->kv_sorted, (size_t)g->n_kv, sizeof *g->kv_sorted, cmp_kv_key);
    for (int64_t i = 1; i < g->n_kv; i++)
        if (strcmp(g->kv_sorted[i - 1]->key, g->kv_sorted[i]->key) == 0) {
            long long a = (long long)(g->kv_sorted[i - 1] - g->kv);
            long long b = (long long)(g->kv_sorted[i] - g->kv);
            return fail(e, JEPA_ERR_FORMAT, "duplicate key '%s' (kv %lld and kv %lld)",
                        show(g->kv_sorted[i]->key).s, a < b ? a : b, a < b ? b : a);
        }
    return JEPA_OK;
}

/* general.alignment, when given: a u32 power of two. */
static jepa_status read_alignment(struct gguf_file *g, struct jerr *e) {
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const struct gguf_kv *al = jg_find_kv(g, "general.alignment");
    if (al) {
        if (al->type != GGUF_V_U32)
            return fail(e, JEPA_ERR_FORMAT, "general.alignment: expected type u32, found %s",
                        jg_vtype_name(al->type));
        if (al->v.u == 0 || (al->v.u & (al->v.u - 1)) != 0)
            return fail(e, JEPA_ERR_FORMAT,
                        "general.alignment: expected a non-zero power of two, found %llu",
                        (unsigned long long)al->v.u);
        g->alignment = (size_t)al->v.u;
    }
    return JEPA_OK;
}

/* The tensor infos, whose names must be unique. */
static jepa_status read_tensor_infos(struct gguf_file *g, struct rd *r, struct jerr *e) {
    for (int64_t i = 0; i < g->n_tensors; i++) {
        jepa_status st = read_tensor_info(g, r, e, i, &g->tensors[i]);
        if (st) return st;
        g->tensor_sorted[i] = &g->tensors[i];
    }
    if (g->n_tensors > 1)
        qsort(g->tensor_sorted, (size_t)g->n_tensors, sizeof *g->tensor_sorted, cmp_tensor_name);
    for (int64_t i = 1; i < g->n_tensors; i++)
        if (strcmp(g->tensor_sorted[i - 1]->name, g->tensor_sorted[i]->name) == 0) {
            long long a = (long long)(g->tensor_sorted[i - 1] - g->tensors);
            long long b = (long long)(g->tensor_sorted[i] - g->tensors);
            return fail(e, JEPA_ERR_FORMAT, "duplicate tensor name '%s' (tensor %lld and tensor %lld)",
                        show(g->tensor_sorted[i]->name).s, a < b ? a : b, a < b ? b : a);
        }
    return JEPA_OK;
}

/* Every tensor's data inside the data section (which starts at end_of_infos, aligned), padded
 * to the alignment, and no two of them overlapping. */
static jepa_status place_tensors(struct gguf_file *g, size_t end_of_infos, struct jerr *e) {
    if (!align_up(end_of_infos, g->alignment, &g->data_offset))
        return fail(e, JEPA_ERR_FORMAT, "data section offset overflows (alignment %zu)", g->alignment);
    if (g->n_tensors == 0) return JEPA_OK;

    for (int64_t i = 0; i < g->n_tensors; i++) {
        struct gguf_tensor *t = &g->tensors[i];
        if (t->offset % g->alignment != 0)
            return fail(e, JEPA_ERR_FORMAT,
                        "tensor '%s': data offset %llu is not a multiple of the alignment %zu",
                        show(t->name).s, (unsigned long long)t->offset, g->alignment);
        size_t start, end, padded;
        if (__builtin_add_overflow(g->data_offset, t->offset, &start) ||
            __builtin_add_overflow(start, t->nbytes, &end) || end > g->size)
            return fail(e, JEPA_ERR_FORMAT,
                        "tensor '%s': data [offset %llu, %zu bytes] runs past the end of the "
                        "file (%zu bytes, data section at %zu)", show(t->name).s,
                        (unsigned long long)t->offset, t->nbytes, g->size, g->data_offset);
        if (!align_up(end, g->alignment, &padded) || padded > g->size)
            return fail(e, JEPA_ERR_FORMAT,
                        "tensor '%s': data [offset %llu, %zu bytes] padded to the alignment %zu "
                        "runs past the end of the file (%zu bytes): truncated file",
                        show(t->name).s, (unsigned long long)t->offset, t->nbytes, g->alignment,
                        g->size);
        t->data = g->base + start;
    }
    /* no two tensors overlap: sorted by offset, each starts at or after the previous end
     * (the name-sorted array is rebuilt below) */
    qsort(g->tensor_sorted, (size_t)g->n_tensors, sizeof *g->tensor_sorted, cmp_tensor_offset);
    for (int64_t i = 1; i < g->n_tensors; i++) {
        const struct gguf_tensor *a = g->tensor_sorted[i - 1], *b = g->tensor_sorted[i];
        if (b->offset - a->offset < a->nbytes)
            return fail(e, JEPA_ERR_FORMAT,
                        "tensors '%s' [offset %llu, %zu bytes] and '%s' [offset %llu] overlap",
                        show(a->name).s, (unsigned long long)a->offset, a->nbytes,
                        show(b->name).s, (unsigned long long)b->offset);
    }
    qsort(g->tensor_sorted, (size_t)g->n_tensors, sizeof *g->tensor_sorted, cmp_tensor_name);
    return JEPA_OK;
}

static jepa_status parse(struct gguf_file *g, struct jerr *e) {
    struct rd r = {g->base, g->size, 0};
    uint64_t n_kv = 0, n_tensors = 0;
    jepa_status st;
    if ((st = read_header(g, &r, &n_kv, &n_tensors, e)) || (st = alloc_tables(g, n_kv, n_tensors, e)) ||
        (st = read_kvs(g, &r, e)) || (st = read_alignment(g, e)) || (st = read_tensor_infos(g, &r, e)))
        return st;
    return place_tensors(g, r.pos, e);
}

/* ---- open / close -------------------------------------------------------------------- */

static jepa_status open_common(struct gguf_file *g, struct gguf_file **out, struct jerr *err) {
    jepa_status st = parse(g, err);
    if (st) {
        jg_close(g);
        return st;
    }
    *out = g;
    return JEPA_OK;
}

jepa_status jg_open_memory(struct gguf_file **out, const void *data, size_t size,
                             struct jerr *err) {
    if (!out) return jr_err_set(err, JEPA_ERR_ARG, "jg_open_memory: out is NULL");
    *out = NULL;
    if (!data && size) return jr_err_set(err, JEPA_ERR_ARG, "jg_open_memory: data is NULL");
    struct gguf_file *g = calloc(1, sizeof *g);
    if (!g) return jr_err_set(err, JEPA_ERR_NOMEM, "jg_open_memory: out of memory");
    g->base = data;
    g->size = size;
    return open_common(g, out, err);
}

jepa_status jg_open(struct gguf_file **out, const char *path, struct jerr *err) {
    if (!out || !path) return jr_err_set(err, JEPA_ERR_ARG, "jg_open: NULL argument");
    *out = NULL;
    struct gguf_file *g = NULL;
    struct jerr inner = {0};
    jepa_status st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return jr_err_set(err, JEPA_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = jr_err_set(err, JEPA_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = jr_err_set(err, JEPA_ERR_IO, "'%s' is not a regular file", path);
        goto fail;
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        st = jr_err_set(err, JEPA_ERR_IO, "'%s' is too large to map", path);
        goto fail;
    }
    g = calloc(1, sizeof *g);
    if (!g) {
        st = jr_err_set(err, JEPA_ERR_NOMEM, "'%s': out of memory", path);
        goto fail;
    }
    g->size = (size_t)sb.st_size;
    if (g->size > 0) {
        void *m = mmap(NULL, g->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            st = jr_err_set(err, JEPA_ERR_IO, "cannot map '%s' (%zu bytes): %s", path, g->size,
                          strerror(errno));
            goto fail;
        }
        g->map = m;
        g->map_size = g->size;
        g->base = m;
    }
    close(fd);
    fd = -1;
    st = parse(g, &inner);
    if (st) {
        jr_err_set(err, st, "%s: %s", path, inner.msg);
        goto fail;
    }
    *out = g;
    return JEPA_OK;
fail:
    if (fd >= 0) close(fd);
    jg_close(g);
    return st;
}

void jg_close(struct gguf_file *g) {
    if (!g) return;
    if (g->map) munmap(g->map, g->map_size);
    free(g->kv);
    free(g->kv_sorted);
    free(g->tensors);
    free(g->tensor_sorted);
    arena_free(g->arena);
    free(g);
}

/* ---- accessors ------------------------------------------------------------------------ */

uint32_t jg_version(const struct gguf_file *g) { return g->version; }
size_t jg_alignment(const struct gguf_file *g) { return g->alignment; }
size_t jg_file_size(const struct gguf_file *g) { return g->size; }
size_t jg_data_offset(const struct gguf_file *g) { return g->data_offset; }
const void *jg_base(const struct gguf_file *g) { return g->base; }
int64_t jg_n_kv(const struct gguf_file *g) { return g->n_kv; }
int64_t jg_n_tensors(const struct gguf_file *g) { return g->n_tensors; }

const struct gguf_kv *jg_kv_at(const struct gguf_file *g, int64_t i) {
    return (i >= 0 && i < g->n_kv) ? &g->kv[i] : NULL;
}

const struct gguf_tensor *jg_tensor_at(const struct gguf_file *g, int64_t i) {
    return (i >= 0 && i < g->n_tensors) ? &g->tensors[i] : NULL;
}

const struct gguf_kv *jg_find_kv(const struct gguf_file *g, const char *key) {
    if (!key) return NULL;
    size_t lo = 0, hi = (size_t)g->n_kv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key, g->kv_sorted[mid]->key);
        if (c == 0) return g->kv_sorted[mid];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

const struct gguf_tensor *jg_find_tensor(const struct gguf_file *g, const char *name) {
    if (!name) return NULL;
    size_t lo = 0, hi = (size_t)g->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, g->tensor_sorted[mid]->name);
        if (c == 0) return g->tensor_sorted[mid];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

/* ---- array elements ---------------------------------------------------------------------- */

/* Element i as the widest value of its kind; false for strings, out of range or no array. */
struct elem { int kind; uint64_t u; int64_t i; double f; };   /* kind: 0 u, 1 i, 2 f */

static bool arr_elem(const struct gguf_kv *kv, uint64_t i, struct elem *x) {
    if (!kv || kv->type != GGUF_V_ARRAY || i >= kv->arr_n || !kv->arr_data) return false;
    size_t es = jg_vtype_size(kv->arr_type);
    if (es == 0) return false;
    struct gguf_kv tmp = {0};
    load_scalar(&tmp, kv->arr_type, (const uint8_t *)kv->arr_data + i * es);
    switch (kv->arr_type) {
    case GGUF_V_U8: case GGUF_V_U16: case GGUF_V_U32: case GGUF_V_U64: case GGUF_V_BOOL:
        x->kind = 0; x->u = tmp.v.u; break;
    case GGUF_V_F32: case GGUF_V_F64:
        x->kind = 2; x->f = tmp.v.f; break;
    default:
        x->kind = 1; x->i = tmp.v.i; break;
    }
    return true;
}

uint64_t jg_arr_u64(const struct gguf_kv *kv, uint64_t i) {
    struct elem x;
    if (!arr_elem(kv, i, &x)) return 0;
    if (x.kind == 0) return x.u;
    if (x.kind == 1) return x.i < 0 ? 0 : (uint64_t)x.i;
    if (!(x.f > 0)) return 0;                                  /* negative, zero, NaN */
    if (x.f >= 18446744073709551616.0) return UINT64_MAX;
    return (uint64_t)x.f;
}

int64_t jg_arr_i64(const struct gguf_kv *kv, uint64_t i) {
    struct elem x;
    if (!arr_elem(kv, i, &x)) return 0;
    if (x.kind == 1) return x.i;
    if (x.kind == 0) return x.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)x.u;
    if (isnan(x.f)) return 0;
    if (x.f >= 9223372036854775808.0) return INT64_MAX;
    if (x.f < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x.f;
}

double jg_arr_f64(const struct gguf_kv *kv, uint64_t i) {
    struct elem x;
    if (!arr_elem(kv, i, &x)) return 0;
    if (x.kind == 0) return (double)x.u;
    if (x.kind == 1) return (double)x.i;
    return x.f;
}

/* ---- formatting ----------------------------------------------------------------------------- */

struct sbuf {
    char *buf;
    size_t size, len;   /* len may pass size: the output is then truncated */
};

static void sb_add(struct sbuf *b, const char *fmt, ...) JEPA_PRINTF(2, 3);
static void sb_add(struct sbuf *b, const char *fmt, ...) {
    size_t room = b->len < b->size ? b->size - b->len : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(room ? b->buf + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) b->len += (size_t)n;
}

/* Shortest decimal that reads back as the same float (f32) or double. */
static void sb_float(struct sbuf *b, double v, bool is_f32) {
    if (isnan(v)) { sb_add(b, "nan"); return; }
    if (isinf(v)) { sb_add(b, v < 0 ? "-inf" : "inf"); return; }
    char tmp[40];
    int maxp = is_f32 ? 9 : 17;
    for (int p = 1; p <= maxp; p++) {
        snprintf(tmp, sizeof tmp, "%.*g", p, v);
        if (is_f32 ? strtof(tmp, NULL) == (float)v : strtod(tmp, NULL) == v) break;
    }
    sb_add(b, "%s", tmp);
}

static void sb_quoted(struct sbuf *b, const char *s) {
    sb_add(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') sb_add(b, "\\%c", *p);
        else if (*p == '\n') sb_add(b, "\\n");
        else if (*p == '\t') sb_add(b, "\\t");
        else if (*p < 0x20 || *p == 0x7f) sb_add(b, "\\x%02x", *p);
        else sb_add(b, "%c", *p);
    }
    sb_add(b, "\"");
}

static void sb_scalar(struct sbuf *b, uint32_t vt, const struct gguf_kv *kv) {
    switch (vt) {
    case GGUF_V_BOOL: sb_add(b, "%s", kv->v.u ? "true" : "false"); break;
    case GGUF_V_U8: case GGUF_V_U16: case GGUF_V_U32: case GGUF_V_U64:
        sb_add(b, "%llu", (unsigned long long)kv->v.u); break;
    case GGUF_V_I8: case GGUF_V_I16: case GGUF_V_I32: case GGUF_V_I64:
        sb_add(b, "%lld", (long long)kv->v.i); break;
    case GGUF_V_F32: sb_float(b, kv->v.f, true); break;
    case GGUF_V_F64: sb_float(b, kv->v.f, false); break;
    case GGUF_V_STRING: sb_quoted(b, kv->v.s ? kv->v.s : ""); break;
    default: sb_add(b, "?"); break;
    }
}

void jg_kv_format(const struct gguf_kv *kv, char *buf, size_t size, int max_items) {
    if (!buf || size == 0) return;
    struct sbuf b = {buf, size, 0};
    buf[0] = '\0';
    if (!kv) return;
    if (kv->type != GGUF_V_ARRAY) {
        sb_scalar(&b, kv->type, kv);
        return;
    }
    bool strs = kv->arr_type == GGUF_V_STRING;
    if (max_items <= 0 && kv->arr_n > 0) {
        if (strs) sb_add(&b, "[%llu strings]", (unsigned long long)kv->arr_n);
        else sb_add(&b, "[%llu x %s]", (unsigned long long)kv->arr_n, jg_vtype_name(kv->arr_type));
        return;
    }
    sb_add(&b, "[");
    uint64_t shown = kv->arr_n < (uint64_t)(max_items > 0 ? max_items : 0) ? kv->arr_n : (uint64_t)max_items;
    for (uint64_t i = 0; i < shown && b.len < b.size; i++) {
        if (i) sb_add(&b, ", ");
        if (strs) {
            sb_quoted(&b, kv->arr_str && kv->arr_str[i] ? kv->arr_str[i] : "");
        } else {
            struct gguf_kv one = {0};
            size_t es = jg_vtype_size(kv->arr_type);
            if (!kv->arr_data || es == 0) break;
            load_scalar(&one, kv->arr_type, (const uint8_t *)kv->arr_data + i * es);
            sb_scalar(&b, kv->arr_type, &one);
        }
    }
    if (kv->arr_n > shown) sb_add(&b, ", ... (%llu items)", (unsigned long long)kv->arr_n);
    sb_add(&b, "]");
}
