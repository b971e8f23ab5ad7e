/*
 * error.h — status plus reason, the one error convention of jepa.c.
 *
 * A fallible internal function takes a `struct jerr *` and returns a jepa_status; on
 * failure it calls jr_err_set(), which keeps the first message (the innermost, most
 * specific reason) and returns the status, so `return jr_err_set(e, JEPA_ERR_FORMAT,
 * "...")` is the usual way out. `e` may be NULL (the message is then dropped).
 */
#ifndef JEPA_RUNTIME_ERROR_H
#define JEPA_RUNTIME_ERROR_H

#include "jepa.h"

struct jerr {
    jepa_status status;
    char msg[JEPA_ERR_LEN];
};

#if defined(__GNUC__)
#define JEPA_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define JEPA_PRINTF(a, b)
#endif

/* Record a failure (only if none is recorded yet) and return s. The message is kept as
 * one line: control bytes the arguments carry (strings from a file) become \xHH. */
jepa_status jr_err_set(struct jerr *e, jepa_status s, const char *fmt, ...) JEPA_PRINTF(3, 4);
/* s with every control byte (< 0x20, 0x7f) written as \xHH, into buf (n bytes, cut
 * short at a whole character when it must be; s NULL reads as ""): text from a file made
 * safe for one line of a terminal. Returns buf ("" when n is 0). */
const char *jr_escape(const char *s, char *buf, size_t n);
/* Forget a recorded failure. */
void jr_err_clear(struct jerr *e);
/* The status's name ("schema error"): what the public jepa_status_str returns, for the
 * layers below the API (the GGUF tools and tests). */
const char *jr_status_str(jepa_status s);

#endif
