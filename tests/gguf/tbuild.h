/*
 * tbuild.h — build GGUF bytes by hand (independently of gguf_write.c) for the tests:
 * a growing buffer with little-endian puts that can record where each field starts,
 * so a test can corrupt exactly one field afterwards. Test-only code.
 */
#ifndef JEPA_TESTS_GGUF_TBUILD_H
#define JEPA_TESTS_GGUF_TBUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct tb {
    uint8_t *p;
    size_t n, cap;
};

static inline void tb_bytes(struct tb *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) abort();   /* test code: out of memory is fatal */
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}

static inline size_t tb_u8(struct tb *b, uint8_t v) {
    size_t at = b->n;
    tb_bytes(b, &v, 1);
    return at;
}

static inline size_t tb_le(struct tb *b, uint64_t v, int n) {
    size_t at = b->n;
    uint8_t x[8];
    for (int i = 0; i < n; i++) x[i] = (uint8_t)(v >> (8 * i));
    tb_bytes(b, x, (size_t)n);
    return at;
}
static inline size_t tb_u32(struct tb *b, uint32_t v) { return tb_le(b, v, 4); }
static inline size_t tb_u64(struct tb *b, uint64_t v) { return tb_le(b, v, 8); }

/* A GGUF string; returns the offset of its length field. */
static inline size_t tb_str(struct tb *b, const char *s) {
    size_t at = tb_u64(b, strlen(s));
    tb_bytes(b, s, strlen(s));
    return at;
}

static inline void tb_pad(struct tb *b, size_t align) {
    while (b->n % align) tb_u8(b, 0);
}

/* Overwrite n little-endian bytes at offset at. */
static inline void tb_poke(uint8_t *p, size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[at + i] = (uint8_t)(v >> (8 * i));
}

#endif
