/*
 * text.h — the byte-level pieces of `jepa serve`'s responses and requests: a growable
 * string (struct sbuf) with JSON string escaping and float formatting, and base64.
 */
#ifndef JEPA_SERVER_TEXT_H
#define JEPA_SERVER_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/error.h"

struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;            /* an append failed: the text is incomplete */
};

void sb_putn(struct sbuf *s, const char *p, size_t n);
void sb_puts(struct sbuf *s, const char *p);
void sb_printf(struct sbuf *s, const char *fmt, ...) JEPA_PRINTF(2, 3);
/* s as a JSON string literal (quotes included); bytes that are not valid UTF-8 become
 * U+FFFD, control characters \uXXXX. */
void sb_json_str(struct sbuf *s, const char *str);
/* [a, b, ...] with %.9g per value: each float32 reads back to the same bits. */
void sb_json_floats(struct sbuf *s, const float *v, size_t n);
/* The bytes of v as base64 (standard alphabet, padded), in quotes. */
void sb_json_base64(struct sbuf *s, const void *v, size_t n);
/* The text, NUL-terminated, handed to the caller (NULL when out of memory). */
char *sb_take(struct sbuf *s, size_t *len);
void sb_free(struct sbuf *s);

/* Decode base64 (standard alphabet, padding optional; no whitespace) of n characters into
 * *out (malloc'ed, *out_len bytes). false on a bad character or length, with the offset
 * of the first bad character in *bad_at (or NULL out of memory: *bad_at = -1). */
bool base64_decode(const char *in, size_t n, uint8_t **out, size_t *out_len, long long *bad_at);

#endif
