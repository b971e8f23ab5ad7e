/* error.c — see error.h. */
#include "runtime/error.h"

#include <stdarg.h>
#include <stdio.h>

jepa_status jr_err_set(struct jerr *e, jepa_status s, const char *fmt, ...) {
    if (!e || e->status != JEPA_OK) return s;
    e->status = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return s;
}

void jr_err_clear(struct jerr *e) {
    if (!e) return;
    e->status = JEPA_OK;
    e->msg[0] = '\0';
}

const char *jr_status_str(jepa_status s) {
    switch (s) {
    case JEPA_OK: return "ok";
    case JEPA_ERR_IO: return "i/o error";
    case JEPA_ERR_FORMAT: return "format error";
    case JEPA_ERR_SCHEMA: return "schema error";
    case JEPA_ERR_UNSUPPORTED: return "unsupported";
    case JEPA_ERR_ARG: return "bad argument";
    case JEPA_ERR_NOMEM: return "out of memory";
    case JEPA_ERR_DEVICE: return "device error";
    }
    return "unknown status";
}
