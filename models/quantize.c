/* quantize.c — see quantize.h. Tested by tests/models/test_dtypes.c. */
#include "models/quantize.h"

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

static int to_jk(uint32_t t) {
    switch (t) {
    case GGUF_TYPE_F32: return JK_F32;
    case GGUF_TYPE_F16: return JK_F16;
    case GGUF_TYPE_BF16: return JK_BF16;
    case GGUF_TYPE_Q8_0: return JK_Q8_0;
    default: return -1;
    }
}

jepa_status jm_quantize(const struct jepa_model *m, struct gguf_writer *w, uint32_t target,
                        bool store_as_f32, struct jerr *err) {
    const struct gguf_file *in = m->g;
    if (to_jk(target) < 0)
        return jr_err_set(err, JEPA_ERR_UNSUPPORTED, "quantize: target type %u is not f32, f16, bf16 or q8_0",
                        target);
    jepa_status st = jg_writer_copy_kv(w, in);
    if (st) return jr_err_set(err, st, "quantize: out of memory copying the metadata");
    static const uint32_t ftype_of[] = {[GGUF_TYPE_F32] = 0, [GGUF_TYPE_F16] = 1,
                                        [GGUF_TYPE_Q8_0] = 7, [GGUF_TYPE_BF16] = 32};
    jg_writer_set_u32(w, "general.file_type", store_as_f32 ? 0 : ftype_of[target]);

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
        uint32_t type = target;
        if (type == GGUF_TYPE_Q8_0 && K % QK8_0) type = GGUF_TYPE_F16;   /* schema fallback */
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
        } else {
            jr_quantize_row_q8_0(row, out, count);
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
