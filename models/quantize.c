/* quantize.c — see quantize.h. Tested by tests/models/test_dtypes.c. */
#include "models/quantize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "runtime/quant.h"

/* Is t the weight of one of m's quantizable linear layers? (The loader's jm_linear
 * names point at the tensor's own name.) */
static bool quantizable(const struct jepa_model *m, const struct gguf_tensor *t) {
    for (int i = 0; i < m->n_weights; i++)
        if (m->weights[i].lin->name == t->name) return m->weights[i].quantizable;
    return false;
}

/* The kernels' weight type of a GGUF type, or -1. */
static int to_jk(uint32_t t) {
    switch (t) {
    case GGUF_TYPE_F32: return JK_F32;
    case GGUF_TYPE_F16: return JK_F16;
    case GGUF_TYPE_BF16: return JK_BF16;
    case GGUF_TYPE_Q8_0: return JK_Q8_0;
    case GGUF_TYPE_Q4_0: return JK_Q4_0;
    case GGUF_TYPE_Q4_1: return JK_Q4_1;
    case GGUF_TYPE_Q5_0: return JK_Q5_0;
    case GGUF_TYPE_Q5_1: return JK_Q5_1;
    case GGUF_TYPE_Q4_K: return JK_Q4_K;
    case GGUF_TYPE_Q5_K: return JK_Q5_K;
    case GGUF_TYPE_Q6_K: return JK_Q6_K;
    default: return -1;
    }
}

/* general.file_type for a file whose quantizable weights are `t` (ggml's llama_ftype:
 * ALL_F32 0, MOSTLY_F16 1, Q4_0 2, Q4_1 3, Q8_0 7, Q5_0 8, Q5_1 9, BF16 32; for the
 * K-quants, which jepa quantize applies to every quantizable tensor alike, the uniform
 * "_S" kinds Q4_K_S 14, Q5_K_S 16, and Q6_K 18). */
static uint32_t file_type_of(uint32_t t) {
    switch (t) {
    case GGUF_TYPE_F16: return 1;
    case GGUF_TYPE_Q4_0: return 2;
    case GGUF_TYPE_Q4_1: return 3;
    case GGUF_TYPE_Q8_0: return 7;
    case GGUF_TYPE_Q5_0: return 8;
    case GGUF_TYPE_Q5_1: return 9;
    case GGUF_TYPE_BF16: return 32;
    case GGUF_TYPE_Q4_K: return 14;
    case GGUF_TYPE_Q5_K: return 16;
    case GGUF_TYPE_Q6_K: return 18;
    default: return 0;
    }
}

/* "<name>-<type>", an earlier type suffix of the name replaced. */
static jepa_status set_name(struct gguf_writer *w, const struct gguf_file *in, uint32_t target) {
    const struct gguf_kv *kv = jg_find_kv(in, "general.name");
    const char *type = jg_type_info(target)->name;
    char name[256];
    size_t len = 0;
    if (kv && kv->type == GGUF_V_STRING) {
        len = strlen(kv->v.s);
        len = len < 200 ? len : 200;
        memcpy(name, kv->v.s, len);
        static const char *const sfx[] = {"-f32", "-f16", "-bf16", "-q8_0", "-q4_0", "-q4_1", "-q5_0", "-q5_1",
                                          "-q4_K", "-q5_K", "-q6_K"};
        for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++) {
            const size_t n = strlen(sfx[i]);
            if (len > n && !memcmp(name + len - n, sfx[i], n)) {
                len -= n;
                break;
            }
        }
    }
    snprintf(name + len, sizeof name - len, "%s%s", len ? "-" : "", type);
    return jg_writer_set_str(w, "general.name", name);
}

/* The type a tensor of rows of K weights gets for `target` (the schema's fallbacks): a
 * K-quant needs K % 256 == 0, else its sibling of the same width (q4_K -> q4_0, q5_K ->
 * q5_0) or q8_0 (q6_K); a 32-block type needs K % 32 == 0, else f16. */
static uint32_t tensor_type(uint32_t target, int K) {
    uint32_t type = target;
    if (jk_dtype_block((enum jk_dtype)to_jk(type)) == QK_K && K % QK_K)
        type = type == GGUF_TYPE_Q4_K ? GGUF_TYPE_Q4_0 : type == GGUF_TYPE_Q5_K ? GGUF_TYPE_Q5_0 : GGUF_TYPE_Q8_0;
    if (jk_dtype_block((enum jk_dtype)to_jk(type)) > 1 && K % 32) type = GGUF_TYPE_F16;
    return type;
}

jepa_status jm_quantize(const struct jepa_model *m, struct gguf_writer *w, uint32_t target,
                        bool store_as_f32, struct jerr *err) {
    const struct gguf_file *in = m->g;
    const int tj = to_jk(target);
    if (tj < 0)
        return jr_err_set(err, JEPA_ERR_UNSUPPORTED, "quantize: target type %u is not one jepa.c writes", target);
    jepa_status st = jg_writer_copy_kv(w, in);
    if (st) return jr_err_set(err, st, "quantize: out of memory copying the metadata");
    if ((st = jg_writer_set_u32(w, "general.file_type", store_as_f32 ? 0 : file_type_of(target))) ||
        (!store_as_f32 && (st = set_name(w, in, target))))
        return jr_err_set(err, st, "quantize: out of memory setting the metadata");

    float *row = NULL;
    void *out = NULL;
    size_t cap = 0;
    for (int64_t i = 0; i < jg_n_tensors(in); i++) {
        const struct gguf_tensor *t = jg_tensor_at(in, i);
        int src = to_jk(t->type);
        if (!quantizable(m, t) || src < 0 || (t->type == target && !store_as_f32)) {
            st = jg_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes, err);
            if (st) goto done;
            continue;
        }
        const int K = (int)t->ne[0], N = (int)t->ne[1];
        const uint32_t type = tensor_type(target, K);
        size_t need = (size_t)N * K * sizeof(float) * 2;
        if (need > cap) {
            free(row), free(out);
            row = malloc(need / 2), out = malloc(need);
            cap = need;
            if (!row || !out) { st = jr_err_set(err, JEPA_ERR_NOMEM, "quantize: out of memory"); goto done; }
        }
        const size_t in_row = jg_row_bytes(t->type, K);
        for (int n = 0; n < N; n++) jk_ref_weight_row(row + (size_t)n * K, t->data, in_row, (enum jk_dtype)src, n, K);
        const int64_t count = (int64_t)N * K;
        size_t nbytes = jg_row_bytes(type, K) * (size_t)N;
        if (type == GGUF_TYPE_F32) {
            memcpy(out, row, nbytes);
        } else if (type == GGUF_TYPE_F16 || type == GGUF_TYPE_BF16) {
            uint16_t *h = out;
            for (int64_t j = 0; j < count; j++) h[j] = type == GGUF_TYPE_F16 ? f32_to_f16(row[j]) : f32_to_bf16(row[j]);
        } else if (jr_quantize_row(to_jk(type), row, out, count)) {
            st = jr_err_set(err, JEPA_ERR_UNSUPPORTED, "quantize: no %s encoder", jg_type_info(type)->name);
            goto done;
        }
        if (store_as_f32) {   /* widen the converted values back: the same numbers as F32 */
            for (int n = 0; n < N; n++) jk_ref_weight_row(row + (size_t)n * K, out, jg_row_bytes(type, K), (enum jk_dtype)to_jk(type), n, K);
            st = jg_writer_add_tensor(w, t->name, GGUF_TYPE_F32, 2, t->ne, row, (size_t)count * 4, err);
        } else {
            st = jg_writer_add_tensor(w, t->name, type, 2, t->ne, out, nbytes, err);
        }
        if (st) goto done;
    }
done:
    free(row);
    free(out);
    return st;
}
