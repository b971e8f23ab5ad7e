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
    jr_escape(raw, e->msg, sizeof e->msg);
    return s;
}

const char *jr_escape(const char *s, char *buf, size_t n) {
    size_t k = 0;
    if (!n) return "";
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p && k + 1 < n; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            if (k + 5 > n) break;
            snprintf(buf + k, n - k, "\\x%02x", *p);
            k += 4;
        } else {
            buf[k++] = (char)*p;
        }
    }
    buf[k] = '\0';
    return buf;
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
    case JEPA_ERR_CANCELLED: return "cancelled";
    }
    return "unknown status";
}
