/* error.c — see error.h. */
#include "runtime/error.h"

#include <stdarg.h>
#include <stdio.h>

/* The message is one line of printable text whatever the arguments hold (strings from
 * a file: a key's value, a tensor name): control bytes are written as \xHH. */
jepa_status jr_err_set(struct jerr *e, jepa_status s, const char *fmt, ...) {
    if (!e || e->status != JEPA_OK) return s;
    e->status = s;
    char raw[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)raw; *p; p++) {
        const int ctl = *p < 0x20 || *p == 0x7f;
        if (o + (ctl ? 4 : 1) >= sizeof e->msg) break;
        if (ctl) o += (size_t)snprintf(e->msg + o, 5, "\\x%02x", *p);
        else e->msg[o++] = (char)*p;
    }
    e->msg[o] = '\0';
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
