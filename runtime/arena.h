/*
 * arena.h — the activation arena: every buffer one forward needs, planned up front
 * and carved out of one allocation.
 *
 * A forward plans its buffers twice with the same code: once against a counting arena
 * (base == NULL) to learn the total, then, after jr_arena_reserve() made the block big
 * enough, against the real block. The block only grows, so a context reused for inputs
 * of the same (or smaller) size never allocates again.
 *
 * The block comes from the arena's allocator: host memory by default, or whatever the
 * alloc / free hooks return (a GPU context's arena lives in device memory; only the
 * offsets are computed on the host, the bytes are never touched here).
 */
#ifndef JEPA_RUNTIME_ARENA_H
#define JEPA_RUNTIME_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define ARENA_ALIGN 64

struct arena {
    uint8_t *base;   /* the block (NULL before the first reserve) */
    size_t cap;      /* its size in bytes */
    /* Allocator of the block; both NULL: host memory aligned to ARENA_ALIGN. A hook's
     * blocks must be aligned to ARENA_ALIGN too. */
    void *(*alloc)(void *ud, size_t n);
    void (*free)(void *ud, void *p);
    void *ud;
};

/* A planning pass: base NULL counts, base = the block carves. */
struct arena_cursor {
    uint8_t *base;
    size_t used;
};

/* Take n bytes aligned to ARENA_ALIGN: NULL while counting. */
static inline void *arena_take(struct arena_cursor *c, size_t n) {
    size_t off = (c->used + (ARENA_ALIGN - 1)) & ~(size_t)(ARENA_ALIGN - 1);
    c->used = off + n;
    return c->base ? c->base + off : NULL;
}

/* Make the block at least n bytes (contents are not kept: the old block is freed before
 * the new one is allocated, which keeps the peak low on a GPU). 0 on success; on failure
 * the arena is empty (cap 0). */
int jr_arena_reserve(struct arena *a, size_t n);
void jr_arena_free(struct arena *a);

#endif
