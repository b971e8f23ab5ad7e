/*
 * tcheck.h — the few helpers the gguf tests share beside tests/check.h: a deterministic
 * byte generator and FNV-1a. Test-only code.
 */
#ifndef JEPA_TESTS_GGUF_TCHECK_H
#define JEPA_TESTS_GGUF_TCHECK_H

#include <stdint.h>
#include <stdio.h>

#include "tests/check.h"


/* splitmix64: a deterministic stream of bytes for tensor data and values. */
static inline uint64_t tc_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline void tc_fill(void *p, size_t n, uint64_t seed) {
    uint8_t *b = p;
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(tc_rand(&s) >> 56);
}

static inline uint64_t tc_fnv1a(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

#endif
