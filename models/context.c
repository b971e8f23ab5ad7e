/*
 * context.c — reserving the arenas of a context for what a plan counted (pass 0 of the
 * planning in models/context.h). The only function the forwards need from outside
 * themselves, kept out of api.c so that api.c -> forwards -> context is a chain, not a
 * cycle.
 */
#include "models/context.h"

jepa_status jm_ctx_reserve(struct jepa_ctx *c, const struct plan *p) {
    if (jr_arena_reserve(&c->arena, p->dev.used))
        return jr_err_set(&c->err, JEPA_ERR_NOMEM, "cannot allocate %zu MiB of activations%s%s%s%s",
                        p->dev.used >> 20, c->dev->host_memory ? "" : " on ",
                        c->dev->host_memory ? "" : c->dev->name,
                        c->dev->host_memory ? "" : ": ",
                        c->dev->host_memory ? "" : c->dev->error(c->dev));
    if (!c->dev->host_memory && jr_arena_reserve(&c->host, p->host.used))
        return jr_err_set(&c->err, JEPA_ERR_NOMEM, "cannot allocate %zu MiB of host tables",
                        p->host.used >> 20);
    return JEPA_OK;
}
