/*
 * test_loader_util.h — helpers of tests/models/test_loader.c: a pass/fail counter and
 * the GGUF rewriter that turns a fixture into a schema-violating variant (copy the
 * metadata with jg_writer_copy_kv, or key by key when keys are to be dropped;
 * re-add the tensors; change one thing), plus a builder of small synthetic models
 * from tables of keys and tensor shapes (for the families without a fixture).
 *
 * Everything is written to memory and opened with jg_open_memory.
 */
#ifndef JEPA_TESTS_LOADER_UTIL_H
#define JEPA_TESTS_LOADER_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "models/model.h"
#include "runtime/dtype.h"
#include "tests/check.h"



#define CHECK_INT(a, b) CHECK((long long)(a) == (long long)(b), "%s = %lld, expected %lld", #a, \
                              (long long)(a), (long long)(b))
#define CHECK_F(a, b) CHECK(fabs((double)(a) - (double)(b)) <= 1e-6 * fabs((double)(b)),        \
                            "%s = %.9g, expected %.9g", #a, (double)(a), (double)(b))
#define CHECK_STR(a, b) CHECK((a) && !strcmp((a), (b)), "%s = \"%s\", expected \"%s\"", #a,    \
                              (a) ? (a) : "(null)", (b))

/* ---- metadata edits ---- */

enum kop { K_NONE, K_U32, K_I32, K_U64, K_I64, K_U8, K_F32, K_F64, K_BOOL, K_STR, K_DEL,
           K_ARR_I32, K_ARR_F32, K_ARR_STR };

struct kedit {
    enum kop op;
    const char *key;
    double num;                 /* K_U*, K_I*, K_F*, K_BOOL */
    const char *s;              /* K_STR */
    const double *arr;          /* K_ARR_I32, K_ARR_F32 */
    const char *const *sarr;    /* K_ARR_STR */
    int n;                      /* array length */
};

/* ---- tensor edits ---- */

struct tedit {
    const char *name;     /* tensor to change, drop or add */
    int drop;             /* not re-added */
    int add;              /* a new f32 tensor (zeros) */
    int retype;           /* store as `type`: f32 data converted for f16, else zeros */
    uint32_t type;
    int n_dims;           /* new shape when > 0 (zeros) */
    int64_t ne[4];
};

#define TL_MAX_EDITS 6

static jepa_status tl_set_kv(struct gguf_writer *w, const struct kedit *k) {
    switch (k->op) {
    case K_NONE: case K_DEL: return JEPA_OK;
    case K_U32: return jg_writer_set_u32(w, k->key, (uint32_t)k->num);
    case K_I32: return jg_writer_set_i32(w, k->key, (int32_t)k->num);
    case K_U64: return jg_writer_set_u64(w, k->key, (uint64_t)k->num);
    case K_I64: { int64_t v = (int64_t)k->num; return jg_writer_set_scalar(w, k->key, GGUF_V_I64, &v); }
    case K_U8: { uint8_t v = (uint8_t)k->num; return jg_writer_set_scalar(w, k->key, GGUF_V_U8, &v); }
    case K_F32: return jg_writer_set_f32(w, k->key, (float)k->num);
    case K_F64: { double v = k->num; return jg_writer_set_scalar(w, k->key, GGUF_V_F64, &v); }
    case K_BOOL: return jg_writer_set_bool(w, k->key, k->num != 0);
    case K_STR: return jg_writer_set_str(w, k->key, k->s);
    case K_ARR_I32: {
        int32_t v[32];
        for (int i = 0; i < k->n && i < 32; i++) v[i] = (int32_t)k->arr[i];
        return jg_writer_set_arr(w, k->key, GGUF_V_I32, v, (uint64_t)k->n);
    }
    case K_ARR_F32: {
        float v[32];
        for (int i = 0; i < k->n && i < 32; i++) v[i] = (float)k->arr[i];
        return jg_writer_set_arr(w, k->key, GGUF_V_F32, v, (uint64_t)k->n);
    }
    case K_ARR_STR: return jg_writer_set_arr_str(w, k->key, k->sarr, (uint64_t)k->n);
    }
    return JEPA_ERR_ARG;
}

/* Copy one key/value of an open file (used when some keys are to be dropped). */
static jepa_status tl_copy_one(struct gguf_writer *w, const struct gguf_kv *kv) {
    unsigned char raw[8];
    switch (kv->type) {
    case GGUF_V_STRING: return jg_writer_set_str(w, kv->key, kv->v.s);
    case GGUF_V_ARRAY:
        if (kv->arr_type == GGUF_V_STRING)
            return jg_writer_set_arr_str(w, kv->key, kv->arr_str, kv->arr_n);
        return jg_writer_set_arr(w, kv->key, kv->arr_type, kv->arr_data, kv->arr_n);
    case GGUF_V_U8: case GGUF_V_I8: case GGUF_V_BOOL: raw[0] = (unsigned char)kv->v.u; break;
    case GGUF_V_U16: case GGUF_V_I16: { uint16_t v = (uint16_t)kv->v.u; memcpy(raw, &v, 2); break; }
    case GGUF_V_U32: case GGUF_V_I32: { uint32_t v = (uint32_t)kv->v.u; memcpy(raw, &v, 4); break; }
    case GGUF_V_F32: { float v = (float)kv->v.f; memcpy(raw, &v, 4); break; }
    case GGUF_V_F64: memcpy(raw, &kv->v.f, 8); break;
    default: memcpy(raw, &kv->v.u, 8); break;
    }
    return jg_writer_set_scalar(w, kv->key, kv->type, raw);
}

static int tl_deleted(const struct kedit *ke, const char *key) {
    for (int i = 0; i < TL_MAX_EDITS; i++)
        if (ke[i].op == K_DEL && !strcmp(ke[i].key, key)) return 1;
    return 0;
}

/* Re-add one tensor of src, edited as te says. */
static jepa_status tl_add_tensor(struct gguf_writer *w, const struct gguf_tensor *t,
                                 const struct tedit *te, struct jerr *err) {
    uint32_t type = t->type;
    int nd = t->n_dims;
    int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
    const void *data = t->data;
    size_t nbytes = t->nbytes;
    void *tmp = NULL;
    if (te && (te->retype || te->n_dims > 0)) {
        if (te->retype) type = te->type;
        if (te->n_dims > 0) {
            nd = te->n_dims;
            for (int i = 0; i < 4; i++) ne[i] = i < nd ? te->ne[i] : 1;
        }
        nbytes = jg_row_bytes(type, ne[0]) * (size_t)(ne[1] * ne[2] * ne[3]);
        tmp = calloc(1, nbytes ? nbytes : 1);
        if (!tmp) return JEPA_ERR_NOMEM;
        if (te->n_dims == 0 && t->type == GGUF_TYPE_F32 && type == GGUF_TYPE_F16) {
            uint16_t *h = tmp;
            const float *f = t->data;
            for (int64_t i = 0; i < t->n_elements; i++) h[i] = f32_to_f16(f[i]);
        }
        data = tmp;
    }
    jepa_status st = jg_writer_add_tensor(w, t->name, type, nd, ne, data, nbytes, err);
    free(tmp);
    return st;
}

/* Rewrite the GGUF at src with the edits (arrays of TL_MAX_EDITS, K_NONE / name NULL
 * terminated) into memory: *buf (caller frees) of *size bytes. */
static jepa_status tl_rewrite(const char *src, const struct kedit *ke, const struct tedit *te,
                              void **buf, size_t *size, struct jerr *err) {
    struct gguf_file *g = NULL;
    struct gguf_writer *w = NULL;
    jepa_status st = jg_open(&g, src, err);
    if (st) return st;
    w = jg_writer_new();
    if (!w) { st = JEPA_ERR_NOMEM; goto fail; }
    int any_del = 0;
    for (int i = 0; i < TL_MAX_EDITS && ke && ke[i].op != K_NONE; i++) any_del |= ke[i].op == K_DEL;
    if (!any_del) {
        if ((st = jg_writer_copy_kv(w, g))) goto fail;
    } else {
        for (int64_t i = 0; i < jg_n_kv(g); i++) {
            const struct gguf_kv *kv = jg_kv_at(g, i);
            if (!tl_deleted(ke, kv->key) && (st = tl_copy_one(w, kv))) goto fail;
        }
    }
    for (int i = 0; i < TL_MAX_EDITS && ke && ke[i].op != K_NONE; i++)
        if ((st = tl_set_kv(w, &ke[i]))) goto fail;
    for (int64_t i = 0; i < jg_n_tensors(g); i++) {
        const struct gguf_tensor *t = jg_tensor_at(g, i);
        const struct tedit *edit = NULL;
        int drop = 0;
        for (int k = 0; k < TL_MAX_EDITS && te && te[k].name; k++)
            if (!te[k].add && !strcmp(te[k].name, t->name)) {
                if (te[k].drop) drop = 1;
                else edit = &te[k];
            }
        if (!drop && (st = tl_add_tensor(w, t, edit, err))) goto fail;
    }
    for (int k = 0; k < TL_MAX_EDITS && te && te[k].name; k++) {
        if (!te[k].add) continue;
        size_t nbytes = 4 * (size_t)(te[k].ne[0] * te[k].ne[1]);
        void *zeros = calloc(1, nbytes);
        if (!zeros) { st = JEPA_ERR_NOMEM; goto fail; }
        st = jg_writer_add_tensor(w, te[k].name, GGUF_TYPE_F32, te[k].n_dims, te[k].ne, zeros,
                                    nbytes, err);
        free(zeros);
        if (st) goto fail;
    }
    st = jg_writer_write_mem(w, buf, size, err);
fail:
    jg_writer_free(w);
    jg_close(g);
    return st;
}

/* ---- synthetic models: keys and f32/typed zero tensors from tables ---- */

struct syn_tensor {
    const char *name;
    int64_t ne0, ne1;     /* ggml order; ne1 0 = a vector */
    int type;             /* 0 = f32 */
};

static jepa_status tl_build(const struct kedit *keys, int n_keys, const struct syn_tensor *ts,
                            int n_ts, void **buf, size_t *size, struct jerr *err) {
    struct gguf_writer *w = jg_writer_new();
    jepa_status st = JEPA_OK;
    if (!w) return JEPA_ERR_NOMEM;
    for (int i = 0; i < n_keys; i++)
        if ((st = tl_set_kv(w, &keys[i]))) goto fail;
    for (int i = 0; i < n_ts; i++) {
        int64_t ne[2] = {ts[i].ne0, ts[i].ne1 ? ts[i].ne1 : 1};
        size_t nbytes = jg_row_bytes((uint32_t)ts[i].type, ne[0]) * (size_t)ne[1];
        void *zeros = calloc(1, nbytes ? nbytes : 1);
        if (!zeros) { st = JEPA_ERR_NOMEM; goto fail; }
        st = jg_writer_add_tensor(w, ts[i].name, (uint32_t)ts[i].type, ts[i].ne1 ? 2 : 1, ne,
                                    zeros, nbytes, err);
        free(zeros);
        if (st) goto fail;
    }
    st = jg_writer_write_mem(w, buf, size, err);
fail:
    jg_writer_free(w);
    return st;
}

#endif
