/* text.c — see text.h. */
#include "server/text.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct sbuf *s, size_t more) {
    if (s->oom) return false;
    if (s->len + more + 1 <= s->cap) return true;
    size_t cap = s->cap ? s->cap : 256;
    while (cap < s->len + more + 1) cap *= 2;
    char *p = realloc(s->p, cap);
    if (!p) {
        s->oom = true;
        return false;
    }
    s->p = p, s->cap = cap;
    return true;
}

void sb_putn(struct sbuf *s, const char *p, size_t n) {
    if (!reserve(s, n)) return;
    memcpy(s->p + s->len, p, n);
    s->len += n;
    s->p[s->len] = 0;
}

void sb_puts(struct sbuf *s, const char *p) { sb_putn(s, p, strlen(p)); }

void sb_printf(struct sbuf *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        sb_putn(s, small, (size_t)n);
        return;
    }
    if (!reserve(s, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(s->p + s->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0. */
static int utf8_len(const unsigned char *p) {
    const unsigned c = p[0];
    int n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || (n == 2 && c < 0xc2) || (n == 4 && c > 0xf4)) return 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    if (n == 3) {
        const unsigned cp = (c & 0x0f) << 12 | (p[1] & 0x3f) << 6 | (p[2] & 0x3f);
        if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    }
    if (n == 4) {
        const unsigned cp = (c & 0x07) << 18 | (p[1] & 0x3f) << 12;
        if (cp < 0x10000 || cp > 0x10ffff) return 0;
    }
    return n;
}

void sb_json_str(struct sbuf *s, const char *str) {
    sb_putn(s, "\"", 1);
    const unsigned char *p = (const unsigned char *)(str ? str : "");
    while (*p) {
        const unsigned char c = *p;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_putn(s, e, 2), p++;
        } else if (c < 0x20 || c == 0x7f) {
            sb_printf(s, "\\u%04x", c), p++;
        } else if (c < 0x80) {
            sb_putn(s, (const char *)p, 1), p++;
        } else {
            const int n = utf8_len(p);
            if (n) sb_putn(s, (const char *)p, (size_t)n), p += n;
            else sb_puts(s, "\\ufffd"), p++;
        }
    }
    sb_putn(s, "\"", 1);
}

void sb_json_floats(struct sbuf *s, const float *v, size_t n) {
    if (!reserve(s, n * 16 + 2)) return;
    char *o = s->p + s->len;
    *o++ = '[';
    for (size_t i = 0; i < n; i++) {
        if (i) *o++ = ',';
        o += snprintf(o, 16, "%.9g", (double)v[i]);   /* at most 15 characters: -1.23456789e-38 */
    }
    *o++ = ']';
    *o = 0;
    s->len = (size_t)(o - s->p);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void sb_json_base64(struct sbuf *s, const void *v, size_t n) {
    if (!reserve(s, (n + 2) / 3 * 4 + 2)) return;
    const unsigned char *p = v;
    char *o = s->p + s->len;
    *o++ = '"';
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        const unsigned x = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        *o++ = B64[x >> 18], *o++ = B64[(x >> 12) & 63], *o++ = B64[(x >> 6) & 63], *o++ = B64[x & 63];
    }
    if (n - i == 1) {
        const unsigned x = (unsigned)p[i] << 16;
        *o++ = B64[x >> 18], *o++ = B64[(x >> 12) & 63], *o++ = '=', *o++ = '=';
    } else if (n - i == 2) {
        const unsigned x = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
        *o++ = B64[x >> 18], *o++ = B64[(x >> 12) & 63], *o++ = B64[(x >> 6) & 63], *o++ = '=';
    }
    *o++ = '"';
    *o = 0;
    s->len = (size_t)(o - s->p);
}

char *sb_take(struct sbuf *s, size_t *len) {
    if (s->oom || (!s->p && !reserve(s, 0))) {
        sb_free(s);
        return NULL;
    }
    char *p = s->p;
    if (len) *len = s->len;
    s->p = NULL, s->len = s->cap = 0;
    return p;
}

void sb_free(struct sbuf *s) {
    free(s->p);
    s->p = NULL, s->len = s->cap = 0, s->oom = false;
}

/* The value of each base64 character, -1 for the rest. */
static signed char B64_VALUE[256];
static pthread_once_t b64_once = PTHREAD_ONCE_INIT;
static void b64_init(void) {
    memset(B64_VALUE, -1, sizeof B64_VALUE);
    for (int i = 0; i < 64; i++) B64_VALUE[(unsigned char)B64[i]] = (signed char)i;
}

bool base64_decode(const char *in, size_t n, uint8_t **out, size_t *out_len, long long *bad_at) {
    pthread_once(&b64_once, b64_init);
    *out = NULL, *out_len = 0, *bad_at = 0;
    size_t pad = 0;
    while (pad < 2 && n > pad && in[n - 1 - pad] == '=') pad++;
    const size_t body = n - pad;
    if (body % 4 == 1 || (pad && (body + pad) % 4)) {   /* no whole byte, or padding that does not close a quad */
        *bad_at = (long long)n;
        return false;
    }
    uint8_t *o = malloc(body / 4 * 3 + 3);
    if (!o) {
        *bad_at = -1;
        return false;
    }
    const unsigned char *p = (const unsigned char *)in;
    size_t i = 0, k = 0;
    for (; i + 4 <= body; i += 4) {   /* whole quads: 4 characters, 3 bytes */
        const int a = B64_VALUE[p[i]], b = B64_VALUE[p[i + 1]], c = B64_VALUE[p[i + 2]], d = B64_VALUE[p[i + 3]];
        if ((a | b | c | d) < 0) break;
        const unsigned x = (unsigned)a << 18 | (unsigned)b << 12 | (unsigned)c << 6 | (unsigned)d;
        o[k++] = (uint8_t)(x >> 16), o[k++] = (uint8_t)(x >> 8), o[k++] = (uint8_t)x;
    }
    unsigned acc = 0;
    int bits = 0;
    for (; i < body; i++) {   /* the tail, or the quad with a bad character in it */
        const int v = B64_VALUE[p[i]];
        if (v < 0) {
            free(o);
            *bad_at = (long long)i;
            return false;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[k++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    *out = o, *out_len = k;
    return true;
}
