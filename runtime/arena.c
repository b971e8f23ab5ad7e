/* arena.c — see arena.h. */
#include "runtime/arena.h"

#include <stdlib.h>

int arena_reserve(struct arena *a, size_t n) {
    if (n <= a->cap && a->base) return 0;
    void *p = NULL;
    size_t sz = (n + (ARENA_ALIGN - 1)) & ~(size_t)(ARENA_ALIGN - 1);
    if (sz == 0) sz = ARENA_ALIGN;
    if (posix_memalign(&p, ARENA_ALIGN, sz) != 0) return -1;
    free(a->base);
    a->base = (uint8_t *)p;
    a->cap = sz;
    return 0;
}

void arena_free(struct arena *a) {
    free(a->base);
    a->base = NULL;
    a->cap = 0;
}
