/*
 * tune_check.h — what tests/tune/test_gemm_tune.c and test_attn_tune.c share: the CPU
 * levels whose kernels they run, their random numbers, and a workspace with guard bytes after it that a call
 * must leave untouched.
 */
#ifndef JEPA_TESTS_TUNE_CHECK_H
#define JEPA_TESTS_TUNE_CHECK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const tune_levels[] = {"avx2", "avx512", "neon"};
enum { TUNE_NLEVELS = sizeof tune_levels / sizeof *tune_levels, TUNE_GUARD = 256 };

/* Uniform in [-1, 1), the same sequence every run. */
static uint64_t tune_rng = 12345;
static inline float urand(void) {
    tune_rng ^= tune_rng << 13, tune_rng ^= tune_rng >> 7, tune_rng ^= tune_rng << 17;
    return (float)((double)(tune_rng >> 11) / 4503599627370496.0 - 1.0);
}

/* bytes of workspace, then TUNE_GUARD guard bytes */
static inline uint8_t *tune_ws_alloc(size_t bytes) {
    uint8_t *ws = malloc(bytes + TUNE_GUARD);
    if (!ws) abort();
    memset(ws + bytes, 0xcd, TUNE_GUARD);
    return ws;
}

/* Frees ws: 0, or -1 where a guard byte changed. */
static inline int tune_ws_free(uint8_t *ws, size_t bytes) {
    int bad = 0;
    for (int i = 0; i < TUNE_GUARD; i++) bad |= ws[bytes + i] != 0xcd;
    free(ws);
    return bad ? -1 : 0;
}

#endif
