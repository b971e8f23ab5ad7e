/*
 * loader.c — the schema-v1 loader: turns an open gguf_file into a struct jepa_model
 * (models/model.h) and checks everything the forward code assumes, so that after
 * jm_load() succeeds nothing downstream re-checks a shape, a dtype or a count.
 *
 * What it does, in order: general.* and the family; the encoder keys (with the
 * schema's defaults for absent optional keys), then its tensors; the optional
 * predictor (present iff jepa.pred.kind is present and not "none"), the optional head,
 * the preprocessing recipe; finally the per-type tensor counts and the tensors the
 * schema does not name for this family (accepted and counted).
 *
 * Rules it applies everywhere
 *  - Keys: integer keys accept any GGUF integer type whose value fits the range,
 *    float keys f32 or f64; a key of another kind is JEPA_ERR_SCHEMA naming the key,
 *    the expected and the found type.
 *  - Tensors are looked up one by one by name (never indexed by a count from the
 *    file), so a bad n_layer reports the first missing tensor. Shapes are compared in
 *    ggml order (ne[0] = the PyTorch last dim) against what the declared dims imply;
 *    trailing dims of 1 are ignored, so [d] and [d, 1] are the same shape.
 *  - Tensor types: every tensor of the file must have a type schema v1 allows
 *    (JEPA_ERR_SCHEMA otherwise; the GGUF reader itself takes any type whose layout it
 *    knows): the weight types of runtime/weight_types.h, every one a matmul weight may
 *    have (a schema type without a kernel would be JEPA_ERR_UNSUPPORTED); norms,
 *    biases, layer scales, tokens and tables must be F32. Every matmul weight is recorded in the model's weight list (model.h,
 *    struct jm_weight) with its place in the schema's quantization set.
 *  - Linear biases are optional (NULL when absent) unless a key says otherwise
 *    (jepa.pred.qkv_bias); when present they are checked like everything else.
 *  - MLP hidden widths the schema gives no key for (enc.proj, pred.embed.0/.2,
 *    pred.proj.0/.2, pred.action_embed.0/.2, the attentive-pool FFN) are read from the
 *    first tensor and every other tensor must agree with it.
 *
 * Tested by tests/models/test_loader.c (both fixtures, every value against the
 * fixtures' meta.json; one rewritten file per schema violation; also under ASan/UBSan)
 * and tests/models/test_loader_cli.sh (`jepa info`).
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/model.h"

/* Sanity bounds on the declared dims (the forward code computes in int). */
#define MAX_DIM 65536          /* embed / predictor width */
#define MAX_LAYER 4096
#define MAX_FFN (1 << 20)
#define MAX_HEAD_DIM 512
#define MAX_PATCH 1024
#define MAX_TUBELET 64
#define MAX_IMG 65536
#define MAX_FRAMES 65536
#define MAX_TOKENS (1 << 24)   /* training-grid tokens, pos-embed rows */
#define MAX_CLASSES (1 << 20)
#define NAME_LEN 128

struct ld {
    const struct gguf_file *g;
    struct jepa_model *m;
    struct jerr *err;
    /* every tensor looked up, to count the ones the schema does not name */
    const struct gguf_tensor **used;
    size_t n_used, cap_used;
    int cap_weights;             /* of m->weights */
};

/* ---- names of enum values, indexed by the enum ---------------------------------- */

static const char *const act_names[] = {"gelu_erf", "gelu_tanh", "silu"};
static const char *const pos_names[] = {"sincos2d", "sincos3d", "learned", "rope3d"};
static const char *const layout_names[] = {"tiled", "interleaved"};
static const char *const attn_names[] = {"full", "block_causal"};
static const char *const pred_names[] = {"masked", "ac", "lewm"};
static const char *const head_names[] = {"none", "attentive_pool", "linear_cls"};
static const char *const resize_names[] = {"shortest_edge", "squash"};   /* jepa_resize_mode */
static const char *const resample_names[] = {"bilinear", "bicubic"};   /* jepa_resample */
static const char *const modality_names[] = {"image", "video", "image+video"};
#define NNAMES(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- keys ------------------------------------------------------------------------- */

static void kv_type_str(const struct gguf_kv *kv, char *buf, size_t size) {
    if (kv->type == GGUF_V_ARRAY)
        snprintf(buf, size, "array of %s", jg_vtype_name(kv->arr_type));
    else
        snprintf(buf, size, "%s", jg_vtype_name(kv->type));
}

static jepa_status bad_type(struct ld *L, const struct gguf_kv *kv, const char *expected) {
    char found[48];
    kv_type_str(kv, found, sizeof found);
    return jr_err_set(L->err, JEPA_ERR_SCHEMA, "key %s: expected %s, found %s", kv->key,
                    expected, found);
}

static bool vt_is_int(uint32_t t) {
    return t == GGUF_V_U8 || t == GGUF_V_I8 || t == GGUF_V_U16 || t == GGUF_V_I16 ||
           t == GGUF_V_U32 || t == GGUF_V_I32 || t == GGUF_V_U64 || t == GGUF_V_I64;
}
static bool vt_is_unsigned(uint32_t t) {
    return t == GGUF_V_U8 || t == GGUF_V_U16 || t == GGUF_V_U32 || t == GGUF_V_U64;
}
static bool vt_is_float(uint32_t t) { return t == GGUF_V_F32 || t == GGUF_V_F64; }

/* An integer key in [lo, hi]. Absent: *out = def when optional, else an error. */
static jepa_status key_int(struct ld *L, const char *key, bool required, int def, int64_t lo,
                           int64_t hi, int *out) {
    const struct gguf_kv *kv = jg_find_kv(L->g, key);
    if (!kv) {
        if (required)
            return jr_err_set(L->err, JEPA_ERR_SCHEMA, "missing required key %s", key);
        *out = def;
        return JEPA_OK;
    }
    if (!vt_is_int(kv->type)) return bad_type(L, kv, "an integer (u32)");
    if (vt_is_unsigned(kv->type) && kv->v.u > (uint64_t)INT64_MAX)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "key %s = %llu is out of range [%lld, %lld]", key,
                        (unsigned long long)kv->v.u, (long long)lo, (long long)hi);
    int64_t x = vt_is_unsigned(kv->type) ? (int64_t)kv->v.u : kv->v.i;
    if (x < lo || x > hi)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "key %s = %lld is out of range [%lld, %lld]", key,
                        (long long)x, (long long)lo, (long long)hi);
    *out = (int)x;
    return JEPA_OK;
}

/* A finite float key > 0 (all the schema's float keys are eps, theta and scales). */
static jepa_status key_pos_float(struct ld *L, const char *key, bool required, float def,
                                 float *out) {
    const struct gguf_kv *kv = jg_find_kv(L->g, key);
    if (!kv) {
        if (required)
            return jr_err_set(L->err, JEPA_ERR_SCHEMA, "missing required key %s", key);
        *out = def;
        return JEPA_OK;
    }
    if (!vt_is_float(kv->type)) return bad_type(L, kv, "f32 (or f64)");
    double v = kv->v.f;
    if (!isfinite(v) || !(v >= FLT_MIN) || v > 3.4e38)   /* a positive normal float */
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "key %s = %g: expected a finite value >= %g", key, v,
                          (double)FLT_MIN);
    *out = (float)v;
    return JEPA_OK;
}

static jepa_status key_bool(struct ld *L, const char *key, bool def, bool *out) {
    const struct gguf_kv *kv = jg_find_kv(L->g, key);
    if (!kv) {
        *out = def;
        return JEPA_OK;
    }
    if (kv->type != GGUF_V_BOOL) return bad_type(L, kv, "bool");
    *out = kv->v.u != 0;
    return JEPA_OK;
}

/* A string key; absent: *out = NULL when optional. */
static jepa_status key_str(struct ld *L, const char *key, bool required, const char **out) {
    const struct gguf_kv *kv = jg_find_kv(L->g, key);
    *out = NULL;
    if (!kv) {
        if (required)
            return jr_err_set(L->err, JEPA_ERR_SCHEMA, "missing required key %s", key);
        return JEPA_OK;
    }
    if (kv->type != GGUF_V_STRING) return bad_type(L, kv, "string");
    *out = kv->v.s;
    return JEPA_OK;
}

/* A string key that must be one of names[] (*out = its index); absent: def, or an
 * error when def < 0. */
static jepa_status key_enum(struct ld *L, const char *key, int def, const char *const *names,
                            int n, int *out) {
    const char *s;
    jepa_status st = key_str(L, key, def < 0, &s);
    if (st) return st;
    if (!s) {
        *out = def;
        return JEPA_OK;
    }
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return JEPA_OK;
        }
    char list[256] = "";
    size_t len = 0;
    for (int i = 0; i < n && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
    return jr_err_set(L->err, JEPA_ERR_SCHEMA, "key %s: unknown value \"%s\" (expected one of: %s)",
                    key, s, list);
}

/* ---- tensors ------------------------------------------------------------------------ */

static jepa_status mark_used(struct ld *L, const struct gguf_tensor *t) {
    if (L->n_used == L->cap_used) {
        size_t cap = L->cap_used ? 2 * L->cap_used : 256;
        const struct gguf_tensor **p = realloc(L->used, cap * sizeof *p);
        if (!p) return jr_err_set(L->err, JEPA_ERR_NOMEM, "out of memory");
        L->used = p;
        L->cap_used = cap;
    }
    L->used[L->n_used++] = t;
    return JEPA_OK;
}

static void fmt_ne(char *buf, size_t size, const int64_t *ne, int n) {
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? ", " : "", (long long)ne[i]);
    if (len < size) snprintf(buf + len, size - len, "]");
}

/* The table's ggml ids are the reader's (gguf/gguf.h). */
#define GGUF_ID_MATCHES(a, name, NAME, id, gguf, ...) \
    _Static_assert(GGUF_TYPE_##NAME == gguf, "runtime/weight_types.h: ggml id of " #name);
JR_WEIGHT_TYPES(GGUF_ID_MATCHES, )
#undef GGUF_ID_MATCHES

/* Matmul weight types the kernels take: every type of runtime/weight_types.h. */
static bool matmul_dtype(uint32_t t, enum jk_dtype *dt) {
    const int j = jk_dtype_of_gguf(t);
    if (j >= 0) *dt = (enum jk_dtype)j;
    return j >= 0;
}

static const char *type_name(uint32_t t) {
    const struct jg_type_info *ti = jg_type_info(t);
    return ti ? ti->name : "unknown";
}

/* Every tensor of the file in a type schema v1 allows (docs/gguf-schema.md, "Tensor
 * types": the weight types of runtime/weight_types.h; the GGUF reader takes any type whose
 * layout it knows, this is the schema's rule). Checked over the whole file before any
 * tensor is read, so the reason is the type whatever the tensor's role. */
static jepa_status check_types(struct ld *L) {
    for (int64_t i = 0; i < jg_n_tensors(L->g); i++) {
        const struct gguf_tensor *t = jg_tensor_at(L->g, i);
        if (jk_dtype_of_gguf(t->type) < 0) {
            char types[160];
            jk_dtype_list(types, sizeof types, ", ");
            return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                              "tensor %s: type %s (%u) is not allowed by schema v1 (%s)",
                              t->name, type_name(t->type), t->type, types);
        }
    }
    return JEPA_OK;
}

enum tclass { T_F32, T_MATMUL };

/* Look up a tensor and check its class and shape. ne0, ne1 in ggml order; ne1 < 0
 * means "any row count >= 1" (the caller reads it). Absent and optional: *out = NULL. */
static jepa_status tensor(struct ld *L, const char *name, enum tclass cls, int64_t ne0, int64_t ne1,
                          bool optional, const struct gguf_tensor **out) {
    const struct gguf_tensor *t = jg_find_tensor(L->g, name);
    *out = NULL;
    if (!t) {
        if (optional) return JEPA_OK;
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "missing required tensor %s", name);
    }
    jepa_status st = mark_used(L, t);
    if (st) return st;
    int nd = t->n_dims < 1 ? 1 : t->n_dims > GGUF_MAX_DIMS ? GGUF_MAX_DIMS : t->n_dims;
    bool ok = t->ne[0] == ne0 && (ne1 < 0 ? t->ne[1] >= 1 : t->ne[1] == ne1);
    for (int i = 2; i < nd; i++) ok = ok && t->ne[i] == 1;
    if (!ok) {
        char found[96], want[64];
        fmt_ne(found, sizeof found, t->ne, nd);
        if (ne1 < 0) snprintf(want, sizeof want, "[%lld, n]", (long long)ne0);
        else fmt_ne(want, sizeof want, (const int64_t[]){ne0, ne1}, ne1 == 1 ? 1 : 2);
        return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                        "tensor %s: shape %s, expected %s (ggml order, ne[0] = PyTorch last dim)",
                        name, found, want);
    }
    enum jk_dtype dt;
    if (cls == T_F32 && t->type != GGUF_TYPE_F32)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                        "tensor %s: type %s, expected f32 (norms, biases, scales, tokens and "
                        "tables stay f32)", name, type_name(t->type));
    if (cls == T_MATMUL && !matmul_dtype(t->type, &dt)) {
        char types[160];
        jk_dtype_list(types, sizeof types, ", ");
        return jr_err_set(L->err, JEPA_ERR_UNSUPPORTED,
                        "tensor %s: type %s is not supported for a matmul weight (%s)", name,
                        type_name(t->type), types);
    }
    /* The reader checked data against the file; check it against this shape too, and the
     * alignment the kernels' loads need (general.alignment may be as small as 1). */
    size_t row = jg_row_bytes(t->type, t->ne[0]);
    if (row == 0 || t->nbytes / row < (uint64_t)t->ne[1])
        return jr_err_set(L->err, JEPA_ERR_FORMAT, "tensor %s: %zu data bytes do not hold its shape",
                        name, t->nbytes);
    if ((uintptr_t)t->data % (t->type == GGUF_TYPE_F32 ? 4u : 2u))
        return jr_err_set(L->err, JEPA_ERR_FORMAT,
                        "tensor %s: data is not aligned for %s (general.alignment %zu)", name,
                        type_name(t->type), jg_alignment(L->g));
    *out = t;
    return JEPA_OK;
}

static jepa_status name_of(struct ld *L, char *buf, const char *fmt, ...) JEPA_PRINTF(3, 4);
static jepa_status name_of(struct ld *L, char *buf, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, NAME_LEN, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= NAME_LEN)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "tensor name too long: %s...", buf);
    return JEPA_OK;
}

/* An f32 vector or table [rows, ne0] (rows 1 for a vector). */
static jepa_status f32_tensor(struct ld *L, const float **out, const char *name, int64_t ne0,
                              int64_t rows, bool optional) {
    const struct gguf_tensor *t;
    jepa_status st = tensor(L, name, T_F32, ne0, rows, optional, &t);
    *out = t ? (const float *)t->data : NULL;
    return st;
}

/* A LayerNorm: <stem>.weight and <stem>.bias, f32 [d], both required. */
static jepa_status norm(struct ld *L, struct jm_norm *o, const char *stem, int d) {
    char name[NAME_LEN];
    jepa_status st;
    if ((st = name_of(L, name, "%s.weight", stem))) return st;
    if ((st = f32_tensor(L, &o->w, name, d, 1, false))) return st;
    if ((st = name_of(L, name, "%s.bias", stem))) return st;
    return f32_tensor(L, &o->b, name, d, 1, false);
}

enum bias { BIAS_OPT, BIAS_REQ, BIAS_NONE };

/* Record o in the model's list of matmul weights (model.h, struct jm_weight). */
static jepa_status record_weight(struct ld *L, const struct jm_linear *o, bool quantizable) {
    struct jepa_model *m = L->m;
    if (m->n_weights == L->cap_weights) {
        const int cap = L->cap_weights ? 2 * L->cap_weights : 64;
        struct jm_weight *w = realloc(m->weights, (size_t)cap * sizeof *w);
        if (!w) return jr_err_set(L->err, JEPA_ERR_NOMEM, "out of memory (%d weights)", cap);
        m->weights = w, L->cap_weights = cap;
    }
    m->weights[m->n_weights++] = (struct jm_weight){o, quantizable};
    return JEPA_OK;
}

/* Whether a linear layer's weight is in the schema's quantization set. */
enum quant { Q_NO, Q_YES };

/* A linear layer <stem>.weight [n_out, n_in] (+ <stem>.bias [n_out]). n_out < 0: the row
 * count is read from the file (an MLP hidden width without a key). Recorded in the
 * model's weight list. */
static jepa_status load_linear(struct ld *L, struct jm_linear *o, const char *stem, int64_t n_out,
                               int64_t n_in, enum bias bias, enum quant q) {
    char name[NAME_LEN];
    const struct gguf_tensor *t;
    jepa_status st;
    if ((st = name_of(L, name, "%s.weight", stem))) return st;
    if ((st = tensor(L, name, T_MATMUL, n_in, n_out, false, &t))) return st;
    if (t->ne[1] > MAX_FFN)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "tensor %s: %lld rows, at most %d allowed", name,
                        (long long)t->ne[1], MAX_FFN);
    o->name = t->name;
    o->w = t->data;
    matmul_dtype(t->type, &o->dt);
    o->n_out = (int)t->ne[1];
    o->n_in = (int)n_in;
    const int qk = jk_dtype_block(o->dt);
    if (n_in % qk)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "tensor %s: %s with %lld in-features, not a multiple of its %d-weight block%s",
                        name, jk_dtype_name(o->dt), (long long)n_in, qk,
                        qk == 256 ? " (schema: K-quants need ne[0] % 256 == 0, else the q8_0 / q4_0 / q5_0 fallback)" : "");
    if (o->dt > JK_Q8_0 && q != Q_YES)   /* the 4-6 bit types: the schema's quantization set only */
        return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                        "tensor %s: type %s, but schema v1 quantizes only the attention, MLP, projection, "
                        "predictor-embed and head matmul weights (this one may be f32, f16, bf16 or q8_0)",
                        name, jk_dtype_name(o->dt));
    o->ldw = jg_row_bytes(t->type, n_in);
    o->b = NULL;
    if ((st = record_weight(L, o, q == Q_YES))) return st;
    if (bias == BIAS_NONE) return JEPA_OK;
    if ((st = name_of(L, name, "%s.bias", stem))) return st;
    return f32_tensor(L, &o->b, name, o->n_out, 1, bias == BIAS_OPT);
}

/* ---- transformer blocks: one table for encoder, predictor and pooler blocks ---------- */

enum dsym { DS_D, DS_INNER, DS_3INNER, DS_FFN, DS_6D };   /* a dim in terms of the stack */
enum bkind { BK_NORM, BK_LINEAR, BK_VEC };
enum bcond { BC_ALWAYS, BC_FUSED, BC_SPLIT, BC_LAYER_SCALE, BC_ADALN };

static const struct {
    const char *name;      /* <prefix>.<i>.<name> */
    enum bkind kind;
    enum bcond cond;
    size_t off;            /* member of struct jm_block */
    enum dsym n_out, n_in; /* n_out is the width for norms and vectors */
    bool qkv;              /* bias follows the stack's qkv-bias rule */
} block_table[] = {
    {"ln1", BK_NORM, BC_ALWAYS, offsetof(struct jm_block, ln1), DS_D, DS_D, false},
    {"attn_qkv", BK_LINEAR, BC_FUSED, offsetof(struct jm_block, qkv), DS_3INNER, DS_D, true},
    {"attn_q", BK_LINEAR, BC_SPLIT, offsetof(struct jm_block, q), DS_INNER, DS_D, true},
    {"attn_k", BK_LINEAR, BC_SPLIT, offsetof(struct jm_block, k), DS_INNER, DS_D, true},
    {"attn_v", BK_LINEAR, BC_SPLIT, offsetof(struct jm_block, v), DS_INNER, DS_D, true},
    {"attn_out", BK_LINEAR, BC_ALWAYS, offsetof(struct jm_block, out), DS_D, DS_INNER, false},
    {"ln2", BK_NORM, BC_ALWAYS, offsetof(struct jm_block, ln2), DS_D, DS_D, false},
    {"ffn_up", BK_LINEAR, BC_ALWAYS, offsetof(struct jm_block, up), DS_FFN, DS_D, false},
    {"ffn_down", BK_LINEAR, BC_ALWAYS, offsetof(struct jm_block, down), DS_D, DS_FFN, false},
    {"ls1", BK_VEC, BC_LAYER_SCALE, offsetof(struct jm_block, ls1), DS_D, DS_D, false},
    {"ls2", BK_VEC, BC_LAYER_SCALE, offsetof(struct jm_block, ls2), DS_D, DS_D, false},
    {"adaln", BK_LINEAR, BC_ADALN, offsetof(struct jm_block, adaln), DS_6D, DS_D, false},
};

struct stack_spec {
    const char *prefix;    /* "enc.blk", "pred.blk", "head.blk" */
    int fused;             /* 1 attn_qkv, 0 attn_q/k/v, -1 whichever block i has */
    bool layer_scale, adaln;
    enum bias qkv_bias;
};

static int64_t dsym_value(const struct jm_vit *v, enum dsym s) {
    int64_t inner = (int64_t)v->n_head * v->head_dim;
    switch (s) {
    case DS_D: return v->d;
    case DS_INNER: return inner;
    case DS_3INNER: return 3 * inner;
    case DS_FFN: return v->ffn;
    case DS_6D: return 6 * (int64_t)v->d;
    }
    return 0;
}

static jepa_status load_blocks(struct ld *L, struct jm_vit *v, const struct stack_spec *s) {
    char stem[NAME_LEN];
    jepa_status st;
    v->blk = NULL;
    if (v->n_layer == 0) return JEPA_OK;
    v->blk = calloc((size_t)v->n_layer, sizeof *v->blk);
    if (!v->blk) return jr_err_set(L->err, JEPA_ERR_NOMEM, "out of memory (%d blocks)", v->n_layer);
    for (int i = 0; i < v->n_layer; i++) {
        struct jm_block *b = &v->blk[i];
        bool fused = s->fused == 1;
        if (s->fused < 0) {
            if ((st = name_of(L, stem, "%s.%d.attn_qkv.weight", s->prefix, i))) return st;
            fused = jg_find_tensor(L->g, stem) != NULL;
        }
        b->qkv_fused = fused;
        for (size_t k = 0; k < sizeof block_table / sizeof block_table[0]; k++) {
            enum bcond c = block_table[k].cond;
            if ((c == BC_FUSED && !fused) || (c == BC_SPLIT && fused) ||
                (c == BC_LAYER_SCALE && !s->layer_scale) || (c == BC_ADALN && !s->adaln))
                continue;
            if ((st = name_of(L, stem, "%s.%d.%s", s->prefix, i, block_table[k].name))) return st;
            char *field = (char *)b + block_table[k].off;
            int64_t n_out = dsym_value(v, block_table[k].n_out);
            switch (block_table[k].kind) {
            case BK_NORM: st = norm(L, (struct jm_norm *)(void *)field, stem, (int)n_out); break;
            case BK_VEC: st = f32_tensor(L, (const float **)(void *)field, stem, n_out, 1, false); break;
            case BK_LINEAR:
                st = load_linear(L, (struct jm_linear *)(void *)field, stem, n_out,
                                 dsym_value(v, block_table[k].n_in),
                                 block_table[k].qkv ? s->qkv_bias : BIAS_OPT,
                                 c == BC_ADALN ? Q_NO : Q_YES);   /* adaln: not in the set */
                break;
            }
            if (st) return st;
        }
    }
    return JEPA_OK;
}

/* Head count and width: head_dim given (pred only) or width / n_head; even when RoPE
 * rotates pairs of it; at most MAX_HEAD_DIM. pfx names the n_head key, dkey the width's. */
static jepa_status check_heads(struct ld *L, struct jm_vit *v, const char *pfx, const char *dkey,
                               int head_dim, bool rope) {
    if (head_dim == 0) {
        if (v->d % v->n_head)
            return jr_err_set(L->err, JEPA_ERR_SCHEMA, "%s.n_head = %d does not divide %s = %d", pfx,
                            v->n_head, dkey, v->d);
        head_dim = v->d / v->n_head;
    }
    if (head_dim > MAX_HEAD_DIM || (rope && head_dim % 2))
        return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                        "%s.n_head = %d gives head_dim %d; it must be %s<= %d", pfx, v->n_head,
                        head_dim, rope ? "even (RoPE rotates pairs) and " : "", MAX_HEAD_DIM);
    if ((int64_t)head_dim * v->n_head > 4 * MAX_DIM)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "%s: n_head * head_dim = %lld is too large", pfx,
                        (long long)head_dim * v->n_head);
    v->head_dim = head_dim;
    return JEPA_OK;
}

/* The RoPE reference grid: the key, or 256 / patch (Meta's hard-coded value) when the
 * positions are interpolated and the key is absent. */
static jepa_status rope_grid(struct ld *L, const char *key, bool interpolate, int patch, int *out) {
    int def = 256 / patch;
    jepa_status st = key_int(L, key, false, interpolate ? def : 0, 0, MAX_IMG, out);
    if (st) return st;
    if (interpolate && *out < 2)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "%s = %d: interpolated RoPE needs a grid >= 2%s", key,
                        *out, jg_find_kv(L->g, key) ? "" : " (default 256 / patch_size)");
    return JEPA_OK;
}

/* ---- encoder ------------------------------------------------------------------------ */

/* Number of enc.hier_norm.<k>.weight tensors in the file, whatever k is. */
static int count_hier_norms(const struct gguf_file *g) {
    static const char pfx[] = "enc.hier_norm.", sfx[] = ".weight";
    size_t lp = sizeof pfx - 1, ls = sizeof sfx - 1;
    int n = 0;
    for (int64_t i = 0; i < jg_n_tensors(g); i++) {
        const char *name = jg_tensor_at(g, i)->name;
        size_t len = strlen(name);
        if (len > lp + ls && !strncmp(name, pfx, lp) && !strcmp(name + len - ls, sfx)) n++;
    }
    return n;
}

static jepa_status load_hier(struct ld *L, struct jm_encoder *e) {
    const struct gguf_kv *kv = jg_find_kv(L->g, "jepa.enc.hier_layers");
    e->n_hier = 0;
    if (kv) {
        if (kv->type != GGUF_V_ARRAY || !vt_is_int(kv->arr_type))
            return bad_type(L, kv, "array of u32");
        if (kv->arr_n > JM_MAX_HIER)
            return jr_err_set(L->err, JEPA_ERR_SCHEMA, "key jepa.enc.hier_layers: %llu ids, at most %d",
                            (unsigned long long)kv->arr_n, JM_MAX_HIER);
        for (uint64_t k = 0; k < kv->arr_n; k++) {
            int64_t id = vt_is_unsigned(kv->arr_type)
                             ? (jg_arr_u64(kv, k) > (uint64_t)INT32_MAX ? -1 : (int64_t)jg_arr_u64(kv, k))
                             : jg_arr_i64(kv, k);
            if (id < 0 || id >= e->vit.n_layer)
                return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                                "key jepa.enc.hier_layers: id %lld at index %llu is outside [0, %d)",
                                (long long)id, (unsigned long long)k, e->vit.n_layer);
            if (k > 0 && id <= e->hier_layers[k - 1])
                return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                                "key jepa.enc.hier_layers: ids must be strictly increasing (%d then %lld)",
                                e->hier_layers[k - 1], (long long)id);
            e->hier_layers[k] = (int)id;
        }
        e->n_hier = (int)kv->arr_n;
    }
    jepa_status st;
    int n_norms = count_hier_norms(L->g);
    if (n_norms != e->n_hier)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                        "key jepa.enc.hier_layers has %d ids but the file has %d enc.hier_norm.*.weight tensors",
                        e->n_hier, n_norms);
    char stem[NAME_LEN];
    for (int k = 0; k < e->n_hier; k++) {
        if ((st = name_of(L, stem, "enc.hier_norm.%d", k))) return st;
        if ((st = norm(L, &e->hier_norm[k], stem, e->vit.d))) return st;
    }
    return JEPA_OK;
}

static jepa_status load_encoder(struct ld *L) {
    struct jepa_model *m = L->m;
    struct jm_encoder *e = &m->enc;
    struct jm_vit *v = &e->vit;
    jepa_status st;
    int act = 0, pos = 0, layout = 0, attn = 0;
    if ((st = key_int(L, "jepa.enc.embed_dim", true, 0, 1, MAX_DIM, &v->d)) ||
        (st = key_int(L, "jepa.enc.n_layer", true, 0, 1, MAX_LAYER, &v->n_layer)) ||
        (st = key_int(L, "jepa.enc.n_head", true, 0, 1, MAX_DIM, &v->n_head)) ||
        (st = key_int(L, "jepa.enc.ffn_dim", true, 0, 1, MAX_FFN, &v->ffn)) ||
        (st = key_int(L, "jepa.enc.patch_size", true, 0, 1, MAX_PATCH, &e->patch)) ||
        (st = key_int(L, "jepa.enc.tubelet_size", true, 0, 1, MAX_TUBELET, &e->tubelet)) ||
        (st = key_int(L, "jepa.enc.img_size", true, 0, 1, MAX_IMG, &e->img_size)) ||
        (st = key_int(L, "jepa.enc.n_frames", true, 0, 1, MAX_FRAMES, &e->n_frames)) ||
        (st = key_int(L, "jepa.enc.in_chans", true, 0, 3, 3, &e->in_chans)) ||
        (st = key_pos_float(L, "jepa.enc.ln_eps", true, 0, &v->ln_eps)) ||
        (st = key_enum(L, "jepa.enc.act", -1, act_names, NNAMES(act_names), &act)) ||
        (st = key_enum(L, "jepa.enc.pos_type", -1, pos_names, NNAMES(pos_names), &pos)) ||
        (st = key_pos_float(L, "jepa.enc.rope_theta", false, 10000.0f, &e->rope_theta)) ||
        (st = key_enum(L, "jepa.enc.rope_freq_layout",
                       m->family == JM_FAMILY_VJEPA2_1 ? JM_ROPE_INTERLEAVED : JM_ROPE_TILED,
                       layout_names, NNAMES(layout_names), &layout)) ||
        (st = key_bool(L, "jepa.enc.rope_interpolate", false, &e->rope_interpolate)) ||
        (st = key_bool(L, "jepa.enc.cls_token", false, &e->cls)) ||
        (st = key_int(L, "jepa.enc.n_registers", false, 0, 0, MAX_LAYER, &e->n_registers)) ||
        (st = key_bool(L, "jepa.enc.modality_embed", false, &e->modality_embed)) ||
        (st = key_bool(L, "jepa.enc.image_patch_embed", false, &e->image_patch_embed)) ||
        (st = key_bool(L, "jepa.enc.layer_scale", false, &e->layer_scale)) ||
        (st = key_enum(L, "jepa.enc.attn_mode", JM_ATTN_FULL, attn_names, NNAMES(attn_names), &attn)))
        return st;
    bool fused;
    if ((st = key_bool(L, "jepa.enc.qkv_fused", true, &fused))) return st;
    v->act = (enum jm_act)act;
    e->pos_type = (enum jm_pos_type)pos;
    e->rope_layout = (enum jm_rope_layout)layout;
    e->attn_mode = (enum jm_attn_mode)attn;
    bool rope = e->pos_type == JM_POS_ROPE3D;
    if ((st = rope_grid(L, "jepa.enc.rope_ref_grid", rope && e->rope_interpolate, e->patch,
                        &e->rope_ref_grid)))
        return st;
    if (e->img_size % e->patch)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "jepa.enc.img_size = %d is not a multiple of jepa.enc.patch_size = %d",
                        e->img_size, e->patch);
    if (e->n_frames % e->tubelet)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                        "jepa.enc.n_frames = %d is not a multiple of jepa.enc.tubelet_size = %d",
                        e->n_frames, e->tubelet);
    if ((st = check_heads(L, v, "jepa.enc", "jepa.enc.embed_dim", 0, rope))) return st;

    /* tokenizer, tokens, position tables */
    int64_t g = e->img_size / e->patch;
    int64_t n_grid = (int64_t)(e->n_frames / e->tubelet) * g * g;
    if (n_grid > MAX_TOKENS)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "training grid of %lld tokens is too large", (long long)n_grid);
    int64_t pp = (int64_t)e->patch * e->patch * e->in_chans;
    if ((st = load_linear(L, &e->patch_embed, "enc.patch_embed", v->d, pp * e->tubelet, BIAS_OPT, Q_NO)))
        return st;
    if (e->image_patch_embed &&
        (st = load_linear(L, &e->patch_embed_img, "enc.patch_embed_img", v->d, pp, BIAS_OPT, Q_NO)))
        return st;
    e->pos_embed = NULL;
    e->n_pos = 0;
    if (!rope) {
        e->n_pos = (int)(n_grid + (e->cls ? 1 : 0));
        if ((st = f32_tensor(L, &e->pos_embed, "enc.pos_embed", v->d, e->n_pos, false))) return st;
    }
    if (e->cls && (st = f32_tensor(L, &e->cls_token, "enc.cls_token", v->d, 1, false))) return st;
    if (e->n_registers > 0 &&
        (st = f32_tensor(L, &e->reg_tokens, "enc.reg_tokens", v->d, e->n_registers, false)))
        return st;
    if (e->modality_embed &&
        ((st = f32_tensor(L, &e->mod_embed_img, "enc.mod_embed_img", v->d, 1, false)) ||
         (st = f32_tensor(L, &e->mod_embed_video, "enc.mod_embed_video", v->d, 1, false))))
        return st;

    struct stack_spec spec = {"enc.blk", fused ? 1 : 0, e->layer_scale, false, BIAS_OPT};
    if ((st = load_blocks(L, v, &spec))) return st;
    if ((st = norm(L, &e->norm, "enc.norm", v->d))) return st;
    if ((st = load_hier(L, e))) return st;

    e->has_proj = m->family == JM_FAMILY_LEWM;
    if (e->has_proj) {
        int pa;
        if ((st = key_enum(L, "jepa.enc.proj_act", JM_ACT_GELU_ERF, act_names, NNAMES(act_names), &pa)))
            return st;
        e->proj_act = (enum jm_act)pa;
        if ((st = load_linear(L, &e->proj0, "enc.proj.0", -1, v->d, BIAS_OPT, Q_YES)) ||
            (st = load_linear(L, &e->proj2, "enc.proj.2", v->d, e->proj0.n_out, BIAS_OPT, Q_YES)))
            return st;
    }
    return JEPA_OK;
}

/* ---- predictor ---------------------------------------------------------------------- */

static jepa_status unsupported_pred(struct ld *L, const char *what) {
    return jr_err_set(L->err, JEPA_ERR_UNSUPPORTED,
                    "%s with jepa.pred.kind = %s: schema v1 does not specify it", what,
                    pred_names[L->m->pred.kind]);
}

/* The jepa.pred.* keys into m->pred (its kind already read); head_dim (0: not given) and the
 * qkv bias the blocks must have into *head_dim and *qb. */
static jepa_status read_predictor_keys(struct ld *L, int *head_dim, enum bias *qb) {
    struct jepa_model *m = L->m;
    const struct jm_encoder *e = &m->enc;
    struct jm_predictor *p = &m->pred;
    struct jm_vit *v = &p->vit;
    jepa_status st;
    int act = 0, layout = 0, aact = 0, pact = 0;
    bool masked = p->kind == JM_PRED_MASKED, lewm = p->kind == JM_PRED_LEWM;
    bool qkv_bias, has_qkv_bias_key = jg_find_kv(L->g, "jepa.pred.qkv_bias") != NULL;
    if ((st = key_int(L, "jepa.pred.embed_dim", true, 0, 1, MAX_DIM, &v->d)) ||
        (st = key_int(L, "jepa.pred.n_layer", true, 0, 1, MAX_LAYER, &v->n_layer)) ||
        (st = key_int(L, "jepa.pred.n_head", true, 0, 1, MAX_DIM, &v->n_head)) ||
        (st = key_int(L, "jepa.pred.ffn_dim", true, 0, 1, MAX_FFN, &v->ffn)) ||
        (st = key_int(L, "jepa.pred.head_dim", false, 0, 1, MAX_HEAD_DIM, head_dim)) ||
        (st = key_pos_float(L, "jepa.pred.ln_eps", false, e->vit.ln_eps, &v->ln_eps)) ||
        (st = key_enum(L, "jepa.pred.act", (int)e->vit.act, act_names, NNAMES(act_names), &act)) ||
        (st = key_bool(L, "jepa.pred.qkv_bias", true, &qkv_bias)) ||
        (st = key_int(L, "jepa.pred.n_mask_tokens", masked, 0, masked ? 1 : 0, MAX_TOKENS, &p->n_mask_tokens)) ||
        (st = key_int(L, "jepa.pred.out_dim", !lewm, e->vit.d, 1, MAX_FFN, &p->out_dim)) ||
        (st = key_enum(L, "jepa.pred.rope_freq_layout", (int)e->rope_layout, layout_names,
                       NNAMES(layout_names), &layout)) ||
        (st = key_bool(L, "jepa.pred.rope_interpolate", false, &p->rope_interpolate)) ||
        (st = key_int(L, "jepa.pred.grid_size", false, e->img_size / e->patch, 1, MAX_IMG, &p->grid_size)) ||
        (st = key_int(L, "jepa.pred.n_hier_in", false, 1, 1, JM_MAX_HIER, &p->n_hier_in)) ||
        (st = key_bool(L, "jepa.pred.modality_embed", false, &p->modality_embed)) ||
        (st = key_bool(L, "jepa.pred.context_proj", false, &p->context_proj)) ||
        (st = key_int(L, "jepa.pred.action_dim", !masked, 0, masked ? 0 : 1, MAX_DIM, &p->action_dim)) ||
        (st = key_int(L, "jepa.pred.state_dim", p->kind == JM_PRED_AC, 0, 0, MAX_DIM, &p->state_dim)) ||
        (st = key_bool(L, "jepa.pred.frame_causal", false, &p->frame_causal)) ||
        (st = key_int(L, "jepa.pred.n_frames", lewm, 0, lewm ? 1 : 0, MAX_FRAMES, &p->n_frames)) ||
        (st = key_pos_float(L, "jepa.pred.adaln_eps", false, 1e-6f, &p->adaln_eps)) ||
        (st = key_enum(L, "jepa.pred.action_act", JM_ACT_SILU, act_names, NNAMES(act_names), &aact)) ||
        (st = key_enum(L, "jepa.pred.proj_act", JM_ACT_GELU_ERF, act_names, NNAMES(act_names), &pact)))
        return st;
    v->act = (enum jm_act)act;
    p->rope_layout = (enum jm_rope_layout)layout;
    p->action_act = (enum jm_act)aact;
    p->proj_act = (enum jm_act)pact;
    p->rope_theta = e->rope_theta;
    *qb = has_qkv_bias_key ? (qkv_bias ? BIAS_REQ : BIAS_NONE) : BIAS_OPT;
    return JEPA_OK;
}

/* The predictor's shape against its keys and the encoder's, and the keys its kind ignores. */
static jepa_status check_predictor(struct ld *L, int head_dim) {
    const struct jm_encoder *e = &L->m->enc;
    struct jm_predictor *p = &L->m->pred;
    struct jm_vit *v = &p->vit;
    jepa_status st;
    bool masked = p->kind == JM_PRED_MASKED, lewm = p->kind == JM_PRED_LEWM;
    bool rope = !lewm && e->pos_type == JM_POS_ROPE3D;
    if ((st = rope_grid(L, "jepa.pred.rope_ref_grid", rope && p->rope_interpolate, e->patch,
                        &p->rope_ref_grid)))
        return st;
    if (head_dim && !lewm && (int64_t)head_dim * v->n_head != v->d)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                          "key jepa.pred.head_dim = %d: n_head x head_dim = %lld differs from jepa.pred.embed_dim = %d, "
                          "which only a lewm predictor implements", head_dim, (long long)head_dim * v->n_head, v->d);
    if ((st = check_heads(L, v, "jepa.pred", "jepa.pred.embed_dim", head_dim, rope))) return st;
    if ((int64_t)(e->n_frames / e->tubelet) * p->grid_size * p->grid_size > MAX_TOKENS)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                          "key jepa.pred.grid_size = %d: %d tubelets x %d^2 positions is more than %d tokens",
                          p->grid_size, e->n_frames / e->tubelet, p->grid_size, MAX_TOKENS);
    if (!masked) {
        if (p->n_hier_in != 1) return unsupported_pred(L, "jepa.pred.n_hier_in > 1");
        if (p->modality_embed) return unsupported_pred(L, "jepa.pred.modality_embed");
        if (p->context_proj) return unsupported_pred(L, "jepa.pred.context_proj");
    }
    if (p->n_hier_in > 1 && p->n_hier_in > e->n_hier)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                        "jepa.pred.n_hier_in = %d but the encoder has %d hier layers", p->n_hier_in,
                        e->n_hier);
    return JEPA_OK;
}

/* pred.pos_embed, where the predictor has one (lewm, or an encoder without RoPE): a lewm
 * predictor's covers at least its window, another's exactly the training grid. */
static jepa_status load_predictor_pos(struct ld *L) {
    const struct jm_encoder *e = &L->m->enc;
    struct jm_predictor *p = &L->m->pred;
    bool lewm = p->kind == JM_PRED_LEWM;
    jepa_status st;
    p->pos_embed = NULL;
    p->n_pos = 0;
    if (lewm || e->pos_type != JM_POS_ROPE3D) {
        const struct gguf_tensor *t;
        if ((st = tensor(L, "pred.pos_embed", T_F32, p->vit.d, -1, false, &t))) return st;
        int64_t want = lewm ? p->n_frames : (int64_t)(e->n_frames / e->tubelet) *
                                                (e->img_size / e->patch) * (e->img_size / e->patch);
        if (lewm ? t->ne[1] < want : t->ne[1] != want)
            return jr_err_set(L->err, JEPA_ERR_SCHEMA, "tensor pred.pos_embed: %lld rows, expected %s%lld",
                            (long long)t->ne[1], lewm ? "at least " : "", (long long)want);
        p->pos_embed = t->data;
        p->n_pos = (int)t->ne[1];
    }
    return JEPA_OK;
}

/* What the predictor's blocks read: the context projection (masked, ac) or the encoder's
 * projected CLS (lewm), mask tokens, positions, modality and action/state embeddings. */
static jepa_status load_predictor_inputs(struct ld *L) {
    const struct jm_encoder *e = &L->m->enc;
    struct jm_predictor *p = &L->m->pred;
    struct jm_vit *v = &p->vit;
    bool lewm = p->kind == JM_PRED_LEWM;
    jepa_status st;
    if (lewm) {
        if (v->d != e->vit.d)
            return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                            "jepa.pred.embed_dim = %d must equal jepa.enc.embed_dim = %d for lewm",
                            v->d, e->vit.d);
    } else if (p->n_hier_in == 1) {
        if ((st = load_linear(L, &p->embed, "pred.embed", v->d, e->vit.d, BIAS_OPT, Q_YES))) return st;
    } else {
        if ((st = load_linear(L, &p->embed0, "pred.embed.0", -1, (int64_t)p->n_hier_in * e->vit.d, BIAS_OPT, Q_YES)) ||
            (st = load_linear(L, &p->embed2, "pred.embed.2", v->d, p->embed0.n_out, BIAS_OPT, Q_YES)))
            return st;
    }
    if (p->n_mask_tokens > 0 &&
        (st = f32_tensor(L, &p->mask_tokens, "pred.mask_tokens", v->d, p->n_mask_tokens, false)))
        return st;
    if ((st = load_predictor_pos(L))) return st;
    if (p->modality_embed &&
        ((st = f32_tensor(L, &p->mod_embed_img, "pred.mod_embed_img", v->d, 1, false)) ||
         (st = f32_tensor(L, &p->mod_embed_video, "pred.mod_embed_video", v->d, 1, false))))
        return st;
    if (p->kind == JM_PRED_AC) {
        if ((st = load_linear(L, &p->action_embed, "pred.action_embed", v->d, p->action_dim, BIAS_OPT, Q_NO)))
            return st;
        if (p->state_dim > 0 &&
            (st = load_linear(L, &p->state_embed, "pred.state_embed", v->d, p->state_dim, BIAS_OPT, Q_NO)))
            return st;
    }
    if (lewm &&
        ((st = load_linear(L, &p->action_embed0, "pred.action_embed.0", -1, p->action_dim, BIAS_OPT, Q_NO)) ||
         (st = load_linear(L, &p->action_embed2, "pred.action_embed.2", v->d, p->action_embed0.n_out, BIAS_OPT, Q_NO))))
        return st;
    return JEPA_OK;
}

/* The blocks (their qkv bias qb), the final norm and the output projections. */
static jepa_status load_predictor_outputs(struct ld *L, enum bias qb) {
    struct jm_predictor *p = &L->m->pred;
    struct jm_vit *v = &p->vit;
    bool lewm = p->kind == JM_PRED_LEWM;
    jepa_status st;
    struct stack_spec spec = {"pred.blk", -1, false, lewm, qb};
    if ((st = load_blocks(L, v, &spec))) return st;
    if ((st = norm(L, &p->norm, "pred.norm", v->d))) return st;
    if (lewm) {
        if ((st = load_linear(L, &p->proj0, "pred.proj.0", -1, v->d, BIAS_OPT, Q_YES)) ||
            (st = load_linear(L, &p->proj2, "pred.proj.2", p->out_dim, p->proj0.n_out, BIAS_OPT, Q_YES)))
            return st;
    } else if ((st = load_linear(L, &p->proj, "pred.proj", p->out_dim, v->d, BIAS_OPT, Q_YES))) {
        return st;
    }
    if (p->context_proj &&
        (st = load_linear(L, &p->proj_context, "pred.proj_context", p->out_dim, v->d, BIAS_OPT, Q_YES)))
        return st;
    return JEPA_OK;
}

static jepa_status load_predictor(struct ld *L) {
    struct jepa_model *m = L->m;
    struct jm_predictor *p = &m->pred;
    jepa_status st;
    const char *kind;
    m->has_pred = false;
    if ((st = key_str(L, "jepa.pred.kind", false, &kind))) return st;
    if (!kind || !strcmp(kind, "none")) return JEPA_OK;
    int ki = 0, head_dim = 0;
    if ((st = key_enum(L, "jepa.pred.kind", -1, pred_names, NNAMES(pred_names), &ki))) return st;
    p->kind = (enum jm_pred_kind)ki;
    m->has_pred = true;
    enum bias qb = BIAS_OPT;
    if ((st = read_predictor_keys(L, &head_dim, &qb)) || (st = check_predictor(L, head_dim)) ||
        (st = load_predictor_inputs(L)) || (st = load_predictor_outputs(L, qb)))
        return st;
    return JEPA_OK;
}

/* ---- head --------------------------------------------------------------------------- */

static jepa_status load_labels(struct ld *L, struct jm_head *h) {
    const struct gguf_kv *kv = jg_find_kv(L->g, "jepa.head.labels");
    h->labels = NULL;
    if (!kv) return JEPA_OK;
    if (kv->type != GGUF_V_ARRAY || kv->arr_type != GGUF_V_STRING)
        return bad_type(L, kv, "array of string");
    if (kv->arr_n != (uint64_t)h->n_classes)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                        "key jepa.head.labels: %llu labels, expected jepa.head.n_classes = %d",
                        (unsigned long long)kv->arr_n, h->n_classes);
    h->labels = kv->arr_str;
    return JEPA_OK;
}

static jepa_status load_head(struct ld *L) {
    struct jepa_model *m = L->m;
    const struct jm_encoder *e = &m->enc;
    struct jm_head *h = &m->head;
    struct jm_vit *v = &h->vit;
    jepa_status st;
    int kind;
    h->kind = JM_HEAD_NONE;
    if ((st = key_enum(L, "jepa.head.kind", JM_HEAD_NONE, head_names, NNAMES(head_names), &kind)))
        return st;
    h->kind = (enum jm_head_kind)kind;
    if (h->kind == JM_HEAD_NONE) return JEPA_OK;
    int d = e->vit.d;
    if ((st = key_int(L, "jepa.head.n_classes", true, 0, 1, MAX_CLASSES, &h->n_classes)) ||
        (st = load_labels(L, h)) ||
        (st = key_pos_float(L, "jepa.head.ln_eps", false, 1e-6f, &h->ln_eps)) ||
        (st = key_int(L, "jepa.head.n_head", false, e->vit.n_head, 1, MAX_DIM, &h->n_head)))
        return st;
    if (h->kind == JM_HEAD_ATTENTIVE_POOL) {
        if ((st = key_int(L, "jepa.head.n_pool_layers", true, 0, 0, MAX_LAYER, &h->n_pool_layers)))
            return st;
        v->d = d;
        v->n_layer = h->n_pool_layers;
        v->n_head = h->n_head;
        v->ln_eps = h->ln_eps;
        v->act = e->vit.act;
        if ((st = check_heads(L, v, "jepa.head", "jepa.enc.embed_dim", 0, false))) return st;
        /* the pooler's MLP width has no key: the cross-attention MLP gives it */
        if ((st = load_linear(L, &h->up, "head.xattn.ffn_up", -1, d, BIAS_OPT, Q_YES))) return st;
        v->ffn = h->up.n_out;
        struct stack_spec spec = {"head.blk", -1, false, false, BIAS_OPT};
        if ((st = load_blocks(L, v, &spec)) ||
            (st = f32_tensor(L, &h->query, "head.query", d, 1, false)) ||
            (st = norm(L, &h->ln_kv, "head.xattn.ln_kv", d)) ||
            (st = load_linear(L, &h->q, "head.xattn.q", d, d, BIAS_OPT, Q_YES)) ||
            (st = load_linear(L, &h->k, "head.xattn.k", d, d, BIAS_OPT, Q_YES)) ||
            (st = load_linear(L, &h->v, "head.xattn.v", d, d, BIAS_OPT, Q_YES)) ||
            (st = norm(L, &h->ln2, "head.xattn.ln2", d)) ||
            (st = load_linear(L, &h->down, "head.xattn.ffn_down", d, v->ffn, BIAS_OPT, Q_YES)))
            return st;
    }
    return load_linear(L, &h->cls, "head.cls", h->n_classes, d, BIAS_OPT, Q_YES);
}

/* ---- preprocessing ------------------------------------------------------------------ */

static jepa_status key_f32x3(struct ld *L, const char *key, float out[3]) {
    const struct gguf_kv *kv = jg_find_kv(L->g, key);
    if (!kv) return jr_err_set(L->err, JEPA_ERR_SCHEMA, "missing required key %s", key);
    if (kv->type != GGUF_V_ARRAY || !vt_is_float(kv->arr_type)) return bad_type(L, kv, "array of f32");
    if (kv->arr_n != 3)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "key %s: %llu values, expected 3", key,
                        (unsigned long long)kv->arr_n);
    for (int i = 0; i < 3; i++) {
        double x = jg_arr_f64(kv, (uint64_t)i);
        if (!isfinite(x) || fabs(x) > 1e6)
            return jr_err_set(L->err, JEPA_ERR_SCHEMA, "key %s: value %d = %g is not a sane number", key, i, x);
        out[i] = (float)x;
    }
    return JEPA_OK;
}

static jepa_status load_pre(struct ld *L) {
    jepa_preprocess_recipe *p = &L->m->pre;
    jepa_status st;
    int resample = 0, mode = 0;
    if ((st = key_f32x3(L, "jepa.pre.mean", p->mean)) || (st = key_f32x3(L, "jepa.pre.std", p->std)) ||
        (st = key_int(L, "jepa.pre.resize_short", true, 0, 1, JI_MAX_PRE_SIDE, &p->resize_short)) ||
        (st = key_int(L, "jepa.pre.crop", true, 0, 1, JI_MAX_PRE_SIDE, &p->crop)) ||
        (st = key_enum(L, "jepa.pre.resample", -1, resample_names, NNAMES(resample_names), &resample)) ||
        (st = key_enum(L, "jepa.pre.resize_mode", JEPA_RESIZE_MODE_SHORTEST_EDGE, resize_names,
                       NNAMES(resize_names), &mode)) ||
        (st = key_pos_float(L, "jepa.pre.rescale", false, 1.0f / 255.0f, &p->rescale)))
        return st;
    for (int i = 0; i < 3; i++)
        if (!(p->std[i] >= 1e-6f))
            return jr_err_set(L->err, JEPA_ERR_SCHEMA, "key jepa.pre.std: value %d = %g must be >= 1e-6", i,
                              (double)p->std[i]);
    if (!(p->rescale >= 1e-6f && p->rescale <= 1.0f))
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "key jepa.pre.rescale = %g: expected a pixel scale in [1e-6, 1]",
                          (double)p->rescale);
    if (p->crop > p->resize_short)
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "key jepa.pre.crop = %d is larger than jepa.pre.resize_short = %d",
                          p->crop, p->resize_short);
    p->resample = (jepa_resample)resample;
    p->mode = (jepa_resize_mode)mode;
    return JEPA_OK;
}

/* ---- general, bookkeeping, entry points --------------------------------------------- */

static jepa_status load_general(struct ld *L) {
    struct jepa_model *m = L->m;
    jepa_status st;
    const char *arch;
    int version = 0, file_type = 0, mod = 0;
    if ((st = key_str(L, "general.architecture", true, &arch))) return st;
    if (strcmp(arch, "jepa"))
        return jr_err_set(L->err, JEPA_ERR_SCHEMA, "key general.architecture: expected \"jepa\", found \"%s\"", arch);
    if ((st = key_int(L, "jepa.schema_version", true, 0, 0, INT32_MAX, &version))) return st;
    if (version != 1)
        return jr_err_set(L->err, JEPA_ERR_UNSUPPORTED,
                        "key jepa.schema_version = %d: this build reads schema version 1", version);
    if ((st = key_str(L, "general.name", false, &m->name)) ||
        (st = key_str(L, "general.license", false, &m->license)) ||
        (st = key_str(L, "general.source_url", false, &m->source_url)) ||
        (st = key_int(L, "general.file_type", false, 0, 0, INT32_MAX, &file_type)) ||
        (st = key_str(L, "jepa.family", true, &m->family_name)) ||
        (st = key_enum(L, "jepa.modality", -1, modality_names, NNAMES(modality_names), &mod)))
        return st;
    m->modality = modality_names[mod];
    m->file_type = (uint32_t)file_type;
    for (int f = JM_FAMILY_IJEPA; f <= JM_FAMILY_LEWM; f++)
        if (!strcmp(m->family_name, jm_family_name((enum jm_family)f))) {
            m->family = (enum jm_family)f;
            m->family_name = jm_family_name(m->family);
            return JEPA_OK;
        }
    return jr_err_set(L->err, JEPA_ERR_SCHEMA,
                    "key jepa.family: unknown family \"%s\" (expected one of: ijepa, vjepa, vjepa2, "
                    "vjepa2_1, levjepa, hfvit, lewm)", m->family_name);
}

static int cmp_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (const void *const *)a, y = (uintptr_t) * (const void *const *)b;
    return (x > y) - (x < y);
}

static void count_tensors(struct ld *L) {
    struct jepa_model *m = L->m;
    if (L->n_used) qsort(L->used, L->n_used, sizeof *L->used, cmp_ptr);
    m->weight_bytes = 0;
    m->n_unknown_tensors = 0;
    m->unknown_tensor = NULL;
    for (int64_t i = 0; i < jg_n_tensors(L->g); i++) {
        const struct gguf_tensor *t = jg_tensor_at(L->g, i);
        m->weight_bytes += t->nbytes;
        if (t->type < GGUF_TYPE_COUNT) m->n_tensors_by_type[t->type]++;
        if (!L->n_used || !bsearch(&t, L->used, L->n_used, sizeof *L->used, cmp_ptr)) {
            if (!m->unknown_tensor) m->unknown_tensor = t->name;
            m->n_unknown_tensors++;
        }
    }
}

static void free_model(struct jepa_model *m) {
    if (!m) return;
    free(m->weights);
    free(m->enc.vit.blk);
    free(m->pred.vit.blk);
    free(m->head.vit.blk);
    free(m);
}

jepa_status jm_load(struct jepa_model **out, struct gguf_file *g, struct jerr *err) {
    struct ld L = {.g = g, .err = err};
    jepa_status st;
    *out = NULL;
    if (!g) return jr_err_set(err, JEPA_ERR_ARG, "jm_load: no file");
    L.m = calloc(1, sizeof *L.m);
    if (!L.m) return jr_err_set(err, JEPA_ERR_NOMEM, "out of memory");
    if ((st = load_general(&L)) || (st = check_types(&L)) || (st = load_encoder(&L)) || (st = load_predictor(&L)) ||
        (st = load_head(&L)) || (st = load_pre(&L)))
        goto fail;
    count_tensors(&L);
    free(L.used);
    if (!(L.m->dev_cache = jm_dev_cache_new())) {
        free_model(L.m);
        return jr_err_set(err, JEPA_ERR_NOMEM, "out of memory");
    }
    L.m->g = g;
    *out = L.m;
    return JEPA_OK;
fail:
    free(L.used);
    free_model(L.m);
    return st;
}

void jm_free(struct jepa_model *m) {
    if (!m) return;
    jm_dev_cache_free(m->dev_cache);
    jg_close(m->g);
    free_model(m);
}
