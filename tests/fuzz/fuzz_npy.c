/*
 * fuzz_npy.c — libFuzzer target for the .npy reader (input/npy.c, npy_parse). An accepted
 * array must hold count elements of its dtype, its shape multiplying to count; a refusal
 * must carry a reason. Replayed over tests/fuzz/corpus_npy and the fixtures' .npy files
 * by fuzz_npy_replay (tests/fuzz/meson.build).
 */
#include <stdint.h>
#include <string.h>

#include "input/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct npy a;
    struct jerr err = {0};
    if (npy_parse(&a, data, size, &err) != JEPA_OK) {
        if (!err.msg[0] || a.data) __builtin_trap();
        return 0;
    }
    int64_t count = 1;
    for (int i = 0; i < a.ndim; i++) count *= a.shape[i];
    if (count != a.count || !a.data) __builtin_trap();
    const size_t es = a.dtype == NPY_U8 ? 1 : a.dtype == NPY_F32 || a.dtype == NPY_I32 ? 4 : 8;
    uint64_t acc = 0;
    if (a.count) acc = ((const uint8_t *)a.data)[0] + ((const uint8_t *)a.data)[(size_t)a.count * es - 1];
    sink = acc;
    npy_free(&a);
    return 0;
}
