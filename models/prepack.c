/*
 * prepack.c — a context's weights packed once (jepa_ctx_set_prepack): each matmul weight
 * converted to the f32 panels that the context's gemm reads, at its first use with
 * enough rows, and kept. The gemm then skips its own packing, which on small models is
 * 4-9 % of the time (docs/performance.md); the results are the same bits.
 *
 * The cost is memory: 4 bytes per weight (twice an f16 file's weights, 8 times a q4_0
 * file's), per context. The table holds at most one entry per tensor of the file, and
 * the panels of one weight are bounded by its K x N. A weight whose panels cannot be
 * allocated runs unpacked, as without the option.
 */
#include <stdint.h>
#include <stdlib.h>

#include "gguf/gguf.h"
#include "models/context.h"
#include "models/model.h"

struct prepacked {
    const struct jm_linear *L;   /* NULL: a free slot */
    float *panels;               /* NULL: could not be allocated (the weight runs unpacked) */
};

struct jm_prepack {
    struct prepacked *slot;
    size_t cap, n;               /* slots (a power of two, over twice the file's tensor
                                    count) and those taken, never over half */
    size_t bytes;                /* of every panel held */
};

/* Below this many rows the gemm streams the weights (GT_SMALL_M, 16-64 per ISA) or runs
 * a handful of row tiles: no panels are kept for such calls. */
#define PREPACK_MIN_ROWS 64

jepa_status jm_prepack_enable(struct jepa_ctx *c) {
    if (c->pp) return JEPA_OK;
    if (!c->k.gemm_prepack || !c->k.gemm_prepack_floats || !c->dev->host_memory)
        return jr_err_set(&c->err, JEPA_ERR_UNSUPPORTED,
                          "pre-packed weights: the %s kernels pack no weights", c->k.isa);
    size_t cap = 16;
    const int64_t nt = jg_n_tensors(c->m->g);
    while (cap < 2 * (size_t)(nt > 0 ? nt : 1)) cap *= 2;
    struct jm_prepack *pp = calloc(1, sizeof *pp);
    if (!pp || !(pp->slot = calloc(cap, sizeof *pp->slot))) {
        free(pp);
        return jr_err_set(&c->err, JEPA_ERR_NOMEM, "pre-packed weights: out of memory");
    }
    pp->cap = cap;
    c->pp = pp;
    return JEPA_OK;
}

void jm_prepack_free(struct jm_prepack *pp) {
    if (!pp) return;
    for (size_t i = 0; i < pp->cap; i++) free(pp->slot[i].panels);
    free(pp->slot);
    free(pp);
}

size_t jm_prepack_bytes(const struct jm_prepack *pp) { return pp ? pp->bytes : 0; }

const float *jm_prepack_get(const struct jepa_ctx *c, const struct jm_linear *L, int M) {
    struct jm_prepack *pp = c->pp;
    if (!pp || M < PREPACK_MIN_ROWS) return NULL;
    size_t i = ((uintptr_t)L >> 4) * 0x9E3779B97F4A7C15u & (pp->cap - 1);
    for (; pp->slot[i].L; i = (i + 1) & (pp->cap - 1))
        if (pp->slot[i].L == L) return pp->slot[i].panels;
    if (2 * (pp->n + 1) > pp->cap) return NULL;   /* (more matmuls than tensors: the rest unpacked) */
    const size_t n = c->k.gemm_prepack_floats(L->n_out, L->n_in);
    float *p = n && n <= (SIZE_MAX - 63) / sizeof(float) ? aligned_alloc(64, (n * sizeof(float) + 63) & ~(size_t)63)
                                                          : NULL;
    if (p) {
        c->k.gemm_prepack(L->dt, p, L->w, L->ldw, L->n_out, L->n_in);
        pp->bytes += n * sizeof(float);
    }
    pp->slot[i] = (struct prepacked){L, p};
    pp->n++;
    return p;
}
