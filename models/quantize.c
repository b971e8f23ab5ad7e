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

/* general.file_type for a file whose quantizable weights are `t` (the table's ftype). */
static uint32_t file_type_of(uint32_t t) {
    switch (t) {
#define FILE_TYPE(a, name, NAME, id, gguf, block, bytes, ftype, ...) case gguf: return ftype;
    JR_WEIGHT_TYPES(FILE_TYPE, )
#undef FILE_TYPE
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
        for (int t = 0; t < JK_NDTYPES; t++) {   /* "-f32", "-q8_0", ... */
            const char *sfx = jk_dtype_name((enum jk_dtype)t);
            const size_t n = strlen(sfx);
            if (len > n + 1 && name[len - n - 1] == '-' && !memcmp(name + len - n, sfx, n)) {
                len -= n + 1;
                break;
            }
        }
    }
    snprintf(name + len, sizeof name - len, "%s%s", len ? "-" : "", type);
    return jg_writer_set_str(w, "general.name", name);
}

/* The type a tensor of rows of K weights gets for `target` (the schema's fallbacks): the
 * table's fallback column followed until the type's block divides K. */
static uint32_t tensor_type(uint32_t target, int K) {
    static const enum jk_dtype fallback[JK_NDTYPES] = {
#define FALLBACK(a, name, NAME, id, gguf, block, bytes, ftype, fb) [JK_##NAME] = JK_##fb,
        JR_WEIGHT_TYPES(FALLBACK, )
#undef FALLBACK
    };
    enum jk_dtype t = (enum jk_dtype)jk_dtype_of_gguf(target);
    while (K % jk_dtype_block(t)) t = fallback[t];
    return jk_dtype_gguf(t);
}

jepa_status jm_quantize(const struct jepa_model *m, struct gguf_writer *w, uint32_t target,
                        bool store_as_f32, struct jerr *err) {
    const struct gguf_file *in = m->g;
    const int tj = jk_dtype_of_gguf(target);
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
        int src = jk_dtype_of_gguf(t->type);
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
        } else if (jr_quantize_row(jk_dtype_of_gguf(type), row, out, count)) {
            st = jr_err_set(err, JEPA_ERR_UNSUPPORTED, "quantize: no %s encoder", jg_type_info(type)->name);
            goto done;
        }
        if (store_as_f32) {   /* widen the converted values back: the same numbers as F32 */
            const enum jk_dtype dt = (enum jk_dtype)jk_dtype_of_gguf(type);
            for (int n = 0; n < N; n++) jk_ref_weight_row(row + (size_t)n * K, out, jg_row_bytes(type, K), dt, n, K);
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
