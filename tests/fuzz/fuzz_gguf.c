/*
 * fuzz_gguf.c — libFuzzer target for the GGUF reader.
 *
 * Opens the input with jg_open_memory; when it is accepted, walks everything a
 * caller may touch: every kv (jg_kv_format with and without a item limit and into a
 * tiny buffer, every array element through jg_arr_u64/i64/f64, every string), the
 * lookups, and every tensor (type info, first and last byte of its data). A refusal must
 * come with a message. Any out-of-bounds read, leak or UB is reported by the sanitizers.
 *
 * Built with -fsanitize=fuzzer,address,undefined when meson -Dfuzz=true (CC=clang); the
 * same function is replayed over tests/fuzz/corpus by replay.c in every build (meson
 * test fuzz_replay, suite gguf). See tests/fuzz/README.md.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gguf/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct jerr err = {0};
    struct gguf_file *g = NULL;
    if (jg_open_memory(&g, data, size, &err) != JEPA_OK) {
        if (g != NULL || err.msg[0] == '\0') __builtin_trap();   /* refusal without a reason */
        return 0;
    }
    char buf[256], tiny[8];
    uint64_t acc = jg_version(g) + jg_alignment(g) + jg_file_size(g) + jg_data_offset(g);
    for (int64_t i = 0; i < jg_n_kv(g); i++) {
        const struct gguf_kv *kv = jg_kv_at(g, i);
        if (jg_find_kv(g, kv->key) != kv) __builtin_trap();   /* keys are unique */
        jg_kv_format(kv, buf, sizeof buf, 4);
        jg_kv_format(kv, buf, sizeof buf, 0);
        jg_kv_format(kv, tiny, sizeof tiny, 100);
        acc += strlen(buf) + strlen(tiny) + strlen(kv->key);
        if (kv->type == GGUF_V_STRING) acc += strlen(kv->v.s);
        if (kv->type != GGUF_V_ARRAY) continue;
        for (uint64_t k = 0; k < kv->arr_n; k++) {
            if (kv->arr_type == GGUF_V_STRING) {
                acc += strlen(kv->arr_str[k]);
            } else {
                acc += jg_arr_u64(kv, k) + (uint64_t)jg_arr_i64(kv, k);
                double f = jg_arr_f64(kv, k);
                acc += f == f;
            }
        }
    }
    for (int64_t i = 0; i < jg_n_tensors(g); i++) {
        const struct gguf_tensor *t = jg_tensor_at(g, i);
        const struct jg_type_info *ti = jg_type_info(t->type);
        if (!ti || jg_find_tensor(g, t->name) != t || t->nbytes == 0) __builtin_trap();
        const uint8_t *p = t->data;
        if (p < data || (size_t)(p - data) > size || t->nbytes > size - (size_t)(p - data)) __builtin_trap();
        acc += p[0] + p[t->nbytes - 1] + (uint64_t)t->n_elements + strlen(t->name);
    }
    sink = acc;
    jg_close(g);
    return 0;
}
