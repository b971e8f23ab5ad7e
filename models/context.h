/*
 * context.h — struct jepa_ctx (the device, its kernel table, threads, the activation
 * arenas, the last error) and the buffer planning every forward uses. Internal to the
 * library: models/api.c creates contexts, the family forwards (models/forward.h) plan
 * and run in them; models/context.c reserves what a plan counted.
 *
 * Device model. A forward is one piece of code for the CPU and a GPU (kernels/device.h):
 *  - activations live in c->arena, allocated with c->dev->alloc (device memory on a
 *    GPU); only kernels of c->k and the device's copy / zero / upload / download touch
 *    them — never host code;
 *  - weights are passed to kernels through dw(c, p), the identity on the CPU and the
 *    same offset into the device copy of the model's data section on a GPU;
 *  - tables computed on the host (RoPE cos / sin, frame ids, interpolated position
 *    tables) go into a "staged" buffer: on the CPU one arena buffer, computed in place
 *    (upload with the same pointer is a no-op); on a GPU a host buffer in c->host plus
 *    its device twin in c->arena, uploaded once filled;
 *  - outputs are computed into device buffers and downloaded; on the CPU the "device
 *    buffer" is the caller's own buffer and the download is a no-op.
 * The public calls (api.c) bind the device first and sync it last; device failures are
 * sticky and reported there (JEPA_ERR_DEVICE).
 */
#ifndef JEPA_MODELS_CONTEXT_H
#define JEPA_MODELS_CONTEXT_H

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "jepa.h"
#include "kernels/device.h"
#include "kernels/kernels.h"
#include "models/model.h"
#include "runtime/arena.h"
#include "runtime/error.h"

struct jepa_ctx {
    const struct jepa_model *m;
    struct jk_device *dev;     /* jk_device_cpu(), or a CUDA device the context opened */
    struct jk_kernels k;       /* the device's table (CPU: capped by params / JEPA_CPU, its
                                  matmul that of the precision tier) */
    enum jk_precision precision;
    int nthreads;
    struct arena arena;        /* activations, device memory; grows to the largest input */
    struct arena host;         /* host side of staged buffers (GPU contexts only) */
    /* The model's data section on the host and its device copy (NULL on the CPU), shared
     * with every context of the model on the same device (models/devcache.c). */
    const uint8_t *w_host;
    size_t w_size;
    uint8_t *w_dev;
    /* Its f32 matmul weights split in bf16 hi / lo (devcache.c; the pipelined table only),
     * or NULL: jm_linear16 passes them as jk_gemm_args wsplit. */
    const struct jm_wsplit *wsplit;
    struct jm_prepack *pp;     /* weights packed once (prepack.c), or NULL */
    struct jerr err;
    atomic_bool cancel;        /* jepa_ctx_cancel asked, not yet consumed (jm_cancel_point) */
};

/* A cancel point, between two blocks of a forward: JEPA_ERR_CANCELLED (the request is
 * consumed) when jepa_ctx_cancel was called since the last one consumed, else JEPA_OK. */
static inline jepa_status jm_cancel_point(struct jepa_ctx *c) {
    if (!atomic_load_explicit(&c->cancel, memory_order_relaxed) || !atomic_exchange(&c->cancel, false))
        return JEPA_OK;
    return jr_err_set(&c->err, JEPA_ERR_CANCELLED, "cancelled (jepa_ctx_cancel)");
}

/* ---- weights packed once (prepack.c, jepa_ctx_set_prepack) ---- */
struct jm_prepack;
jepa_status jm_prepack_enable(struct jepa_ctx *c);
void jm_prepack_free(struct jm_prepack *pp);
size_t jm_prepack_bytes(const struct jm_prepack *pp);
/* L's panels for a matmul of M rows: packed at the first call that wants them, then
 * kept; NULL where none are kept (few rows, no memory): the gemm packs as usual. */
const float *jm_prepack_get(const struct jepa_ctx *c, const struct jm_linear *L, int M);

/* A weight pointer (into the model's mapping) as c's kernels take it. */
static inline const void *dw(const struct jepa_ctx *c, const void *p) {
    if (!p || !c->w_dev) return p;
    const uint8_t *q = (const uint8_t *)p;
    assert(q >= c->w_host && q < c->w_host + c->w_size);
    return c->w_dev + (q - c->w_host);
}

/* ---- planning: count, reserve, carve (arena.h), over the two arenas ---- */

struct plan {
    struct arena_cursor dev;    /* c->arena */
    struct arena_cursor host;   /* c->host (unused on the CPU) */
    bool host_memory;
};

/* A buffer the host fills and kernels read: host == dev on the CPU. */
struct staged {
    void *host, *dev;
    size_t n;
};

/* Pass 0 counts, pass 1 carves the blocks jm_ctx_reserve() made. */
static inline struct plan plan_begin(const struct jepa_ctx *c, int pass) {
    struct plan p = {{pass ? c->arena.base : NULL, 0}, {pass ? c->host.base : NULL, 0},
                     c->dev->host_memory};
    return p;
}

/* Device memory (activations, outputs before their download). */
static inline void *plan_dev(struct plan *p, size_t n) { return arena_take(&p->dev, n); }

/* Host memory only the host reads (RoPE positions): in the arena on the CPU. */
static inline void *plan_host(struct plan *p, size_t n) {
    return arena_take(p->host_memory ? &p->dev : &p->host, n);
}

static inline struct staged plan_staged(struct plan *p, size_t n) {
    struct staged s;
    s.dev = arena_take(&p->dev, n);
    s.host = p->host_memory ? s.dev : arena_take(&p->host, n);
    s.n = n;
    return s;
}

/* Host -> device once the host side is filled (nothing on the CPU). */
static inline void stage_upload(const struct jepa_ctx *c, const struct staged *s) {
    c->dev->upload(c->dev, s->dev, s->host, s->n);
}

/* Reserve what pass 0 counted in both arenas; JEPA_ERR_NOMEM on failure. */
jepa_status jm_ctx_reserve(struct jepa_ctx *c, const struct plan *p);

#endif
