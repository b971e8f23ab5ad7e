/* arena.c — see arena.h. */
#include "runtime/arena.h"

#include <stdlib.h>

static void block_free(struct arena *a) {
    if (!a->base) return;
    if (a->free) a->free(a->ud, a->base);
    else free(a->base);
}

int jr_arena_reserve(struct arena *a, size_t n) {
    if (n <= a->cap && a->base) return 0;
    size_t sz = (n + (ARENA_ALIGN - 1)) & ~(size_t)(ARENA_ALIGN - 1);
    if (sz == 0) sz = ARENA_ALIGN;
    block_free(a);
    a->base = NULL;
    a->cap = 0;
    void *p = NULL;
    if (a->alloc) p = a->alloc(a->ud, sz);
    else if (posix_memalign(&p, ARENA_ALIGN, sz) != 0) p = NULL;
    if (!p) return -1;
    a->base = (uint8_t *)p;
    a->cap = sz;
    return 0;
}

void jr_arena_free(struct arena *a) {
    block_free(a);
    a->base = NULL;
    a->cap = 0;
}
