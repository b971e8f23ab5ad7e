/*
 * test_quant.c — the block formats against gguf-py (tests/data/quant/quant.gguf, made by
 * tests/gen/gen_quant.py with gguf.quants):
 *
 *  - decoding: kernels/ref/dequant_ref.c on every row of every type jepa.c reads (q8_0,
 *    q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K; random blocks and adversarial ones: all
 *    codes 0 or at their maximum, f16 scales at 65504, -65504, 2^-14, 2^-24, a subnormal,
 *    0 and -0) equals gguf.quants.dequantize bit for bit; and any sub-range of a row
 *    (what the SIMD kernels ask for, 8 weights or a K block at a time) equals the same
 *    slice of the whole row;
 *  - encoding: runtime/quant.c's jr_quantize_row on quant.src equals, byte for byte,
 *    gguf.quants.quantize for q8_0, q4_0, q4_1, q5_0 and q5_1, and for q4_K, q5_K and
 *    q6_K (which gguf-py cannot make) ggml's reference quantizer as tests/gen/
 *    kquant_ref.py reimplements it in numpy (random rows at four scales, zero, constant,
 *    outliers, +- ties of the largest magnitude, values on code boundaries, sub-blocks
 *    whose stored scale rounds to 0, all-positive and all-negative rows, groups below
 *    ggml's 1e-15).
 *
 * usage: test_quant DATA_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "runtime/quant.h"
#include "tests/check.h"


static const struct {
    const char *name;
    enum jk_dtype t;
    uint32_t gguf;
} types[] = {
    {"q8_0", JK_Q8_0, GGUF_TYPE_Q8_0}, {"q4_0", JK_Q4_0, GGUF_TYPE_Q4_0}, {"q4_1", JK_Q4_1, GGUF_TYPE_Q4_1},
    {"q5_0", JK_Q5_0, GGUF_TYPE_Q5_0}, {"q5_1", JK_Q5_1, GGUF_TYPE_Q5_1}, {"q4_k", JK_Q4_K, GGUF_TYPE_Q4_K},
    {"q5_k", JK_Q5_K, GGUF_TYPE_Q5_K}, {"q6_k", JK_Q6_K, GGUF_TYPE_Q6_K},
};

static const struct gguf_tensor *find(const struct gguf_file *g, const char *name) {
    const struct gguf_tensor *t = jg_find_tensor(g, name);
    CHECK(t != NULL, "tensor %s in the fixture", name);
    return t;
}

static void decode_case(const struct gguf_file *g, int i) {
    char name[64];
    snprintf(name, sizeof name, "deq.%s", types[i].name);
    const struct gguf_tensor *raw = find(g, name);
    snprintf(name, sizeof name, "deq.%s.f32", types[i].name);
    const struct gguf_tensor *ref = find(g, name);
    if (!raw || !ref) return;
    const int K = (int)raw->ne[0], R = (int)raw->ne[1];
    const enum jk_dtype t = types[i].t;
    const size_t rb = jk_row_bytes(t, K);
    CHECK(raw->type == types[i].gguf && rb == jg_row_bytes(raw->type, K) && ref->ne[0] == K && ref->ne[1] == R,
           "%s: fixture layout", types[i].name);
    float *row = malloc(sizeof(float) * K), *part = malloc(sizeof(float) * K);
    int bad_rows = 0, bad_ranges = 0;
    uint32_t seed = 12345u + (uint32_t)i;
    for (int r = 0; r < R; r++) {
        const uint8_t *q = (const uint8_t *)raw->data + (size_t)r * rb;
        const float *want = (const float *)ref->data + (size_t)r * K;
        jk_dequant_ref(t, q, 0, K, row);
        if (memcmp(row, want, sizeof(float) * K)) {
            int k = 0;
            while (k < K && !memcmp(row + k, want + k, 4)) k++;
            if (!bad_rows++)
                printf("     %s row %d weight %d: %.9g, gguf-py %.9g\n", types[i].name, r, k, (double)row[k], (double)want[k]);
        }
        for (int s = 0; s < 16; s++) {   /* random sub-ranges, and the 8-wide ones */
            seed = seed * 1664525u + 1013904223u;
            int k0 = (int)(seed >> 8) % K, n;
            seed = seed * 1664525u + 1013904223u;
            if (s < 8) k0 &= ~7, n = 8;
            else n = 1 + (int)(seed >> 8) % (K - k0);
            jk_dequant_ref(t, q, k0, n, part);
            bad_ranges += memcmp(part, row + k0, sizeof(float) * n) != 0;
        }
    }
    printf("%-4s %s decode: %d rows of %d weights against gguf-py, %d differ; 16 sub-ranges per row, %d differ\n",
           bad_rows || bad_ranges ? "FAIL" : "ok", types[i].name, R, K, bad_rows, bad_ranges);
    CHECK(!bad_rows, "%s decode differs from gguf-py in %d rows", types[i].name, bad_rows);
    CHECK(!bad_ranges, "%s: %d sub-range decodes differ from the whole row's", types[i].name, bad_ranges);
    free(row), free(part);
}

static void encode_case(const struct gguf_file *g, int i) {
    char name[64];
    snprintf(name, sizeof name, "quant.%s", types[i].name);
    const struct gguf_tensor *want = find(g, name), *src = find(g, "quant.src");
    if (!want || !src) return;
    const int K = (int)src->ne[0], R = (int)src->ne[1];
    const size_t rb = jk_row_bytes(types[i].t, K);
    uint8_t *out = malloc(rb);
    int bad = 0;
    for (int r = 0; r < R; r++) {
        const int rc = jr_quantize_row((int)types[i].t, (const float *)src->data + (size_t)r * K, out, K);
        const uint8_t *w = (const uint8_t *)want->data + (size_t)r * rb;
        if (rc || memcmp(out, w, rb)) {
            size_t j = 0;
            while (j < rb && out[j] == w[j]) j++;
            if (!bad++) printf("     %s row %d: byte %zu is %02x, the fixture's %02x\n", types[i].name, r, j, out[j], w[j]);
        }
    }
    const char *other = types[i].t >= JK_Q4_K ? "kquant_ref.py (ggml's reference algorithm)" : "gguf.quants.quantize";
    printf("%-4s %s encode: %d rows of %d weights against %s, %d differ\n", bad ? "FAIL" : "ok",
           types[i].name, R, K, other, bad);
    CHECK(!bad, "%s blocks differ from %s's in %d rows", types[i].name, other, bad);
    free(out);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_quant DATA_DIR\n");
        return 2;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/quant/quant.gguf", argv[1]);
    struct gguf_file *g = NULL;
    struct jerr e = {0};
    if (jg_open(&g, path, &e)) {
        printf("FAIL %s: %s\n", path, e.msg);
        return 1;
    }
    const int n = (int)(sizeof types / sizeof *types);
    for (int i = 0; i < n; i++) decode_case(g, i);
    for (int i = 0; i < n; i++) encode_case(g, i);
    CHECK(jr_quantize_row((int)JK_F16, NULL, NULL, 256) == -1, "jr_quantize_row refuses a type that is not a block format");
    jg_close(g);
    return check_finish("quant");
}
