/* many_index.c — see many_index.h. */
#include "cli/many_index.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/inputs.h"
#include "gguf/gguf.h"

#define FNV_START 0xcbf29ce484222325ull
#define MODEL_SAMPLES 64
#define MODEL_SAMPLE_BYTES 4096
#define ROW_MAX_BYTES (64 * 1024)   /* a longer line is not one of our rows */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t fnv1a_u64(uint64_t h, uint64_t v) {
    unsigned char b[8];
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)(v >> (8 * k));
    return fnv1a(h, b, 8);
}

/* The model's identity (see the header): what precedes the data section, the size, and
 * samples of the data. */
static int model_identity(const char *path, uint64_t *id) {
    struct gguf_file *g = NULL;
    struct jerr e = {0};
    if (jg_open(&g, path, &e)) return cli_fail(NULL, "%s", e.msg);
    const unsigned char *b = jg_base(g);
    const uint64_t size = jg_file_size(g), off = jg_data_offset(g), data = size - off;
    uint64_t h = fnv1a_u64(fnv1a(FNV_START, b, (size_t)off), size);
    for (uint64_t k = 0; data && k < MODEL_SAMPLES; k++) {
        const uint64_t n = data < MODEL_SAMPLE_BYTES ? data : MODEL_SAMPLE_BYTES;
        const uint64_t at = off + (data - n) * k / (MODEL_SAMPLES - 1);
        h = fnv1a(h, b + at, (size_t)n);
    }
    jg_close(g);
    *id = h;
    return 0;
}

/* The options that change the numbers of an output, besides the model file: every one
 * goes into the fingerprint. Options that can move only the last bits (-t, --cpu, -g,
 * --batch, --prepack) are recorded in the run's header row instead: a resume on another
 * machine keeps what was made within rounding of what it would make. */
static int many_numbers_json(char *buf, size_t size, const struct many_numbers *x) {
    const struct inputs_opts *in = x->in;
    const int n = snprintf(buf, size,
                           "{\"cmd\": \"%s\", \"pool\": \"%s\", \"hier\": %d, \"precision\": \"%s\", "
                           "\"frames_per_clip\": %d, \"frame_step\": %d, \"num_clips\": %d, \"dense\": %d, "
                           "\"stride\": %lld, \"antialias\": %d, \"resize_short\": %d, \"norm\": \"%s\"}",
                           x->cmd, x->pool, x->hier, x->precision, in->fpc, in->fstp, in->num_clips, in->dense,
                           in->stride, !in->no_antialias, in->resize_short,
                           in->norm_sequential ? "sequential" : "fused");
    return n > 0 && (size_t)n < size ? 0 : -1;
}

int many_fingerprint(struct many_fingerprint *f, const struct many_numbers *n) {
    uint64_t id;
    const int rc = model_identity(n->model, &id);
    if (rc) return rc;
    if (many_numbers_json(f->numbers, sizeof f->numbers, n)) return cli_fail(NULL, "the run's options are too long");
    snprintf(f->model_id, sizeof f->model_id, "%016" PRIx64, id);
    const uint64_t fp = fnv1a(fnv1a_u64(FNV_START, id), f->numbers, strlen(f->numbers));
    snprintf(f->fp, sizeof f->fp, "%016" PRIx64, fp);
    return 0;
}

int many_hash_file(const char *path, uint64_t *hash, long long *bytes) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    unsigned char buf[1 << 16];
    uint64_t h = FNV_START;
    long long total = 0;
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) h = fnv1a(h, buf, n), total += (long long)n;
    const int err = ferror(f);
    fclose(f);
    if (err) {
        errno = EIO;
        return -1;
    }
    *hash = h, *bytes = total;
    return 0;
}

void many_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* ---- reading rows back ---- */

static char *skip_ws(char *p) {
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

/* The JSON string at p (at its opening quote) decoded in place: the text at *out, NUL
 * terminated; the position after the closing quote, or NULL when it is not a string. */
static char *json_string(char *p, char **out) {
    if (*p++ != '"') return NULL;
    char *w = p;
    *out = p;
    for (;;) {
        unsigned char c = (unsigned char)*p++;
        if (!c || c < 0x20) return NULL;
        if (c == '"') break;
        if (c != '\\') {
            *w++ = (char)c;
            continue;
        }
        switch (c = (unsigned char)*p++) {
        case '"': case '\\': case '/': *w++ = (char)c; continue;
        case 'b': *w++ = '\b'; continue;
        case 'f': *w++ = '\f'; continue;
        case 'n': *w++ = '\n'; continue;
        case 'r': *w++ = '\r'; continue;
        case 't': *w++ = '\t'; continue;
        case 'u': break;
        default: return NULL;
        }
        unsigned v = 0;
        for (int k = 0; k < 4; k++, p++) {
            const char h = *p;
            const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (d < 0) return NULL;
            v = v * 16 + (unsigned)d;
        }
        if (!v) return NULL;   /* a NUL would cut the text short */
        if (v < 0x80) {
            *w++ = (char)v;
        } else if (v < 0x800) {
            *w++ = (char)(0xc0 | v >> 6), *w++ = (char)(0x80 | (v & 0x3f));
        } else {
            *w++ = (char)(0xe0 | v >> 12), *w++ = (char)(0x80 | ((v >> 6) & 0x3f)), *w++ = (char)(0x80 | (v & 0x3f));
        }
    }
    *w = '\0';
    return p;
}

static long long number_or(const char *v, long long absent) {
    char *end;
    errno = 0;
    const long long x = strtoll(v, &end, 10);
    return v[0] && !*end && !errno ? x : absent;
}

static void row_field(struct many_row *r, const char *key, char *v, bool is_str) {
    if (!strcmp(key, "output")) r->output = is_str ? v : NULL;
    else if (!strcmp(key, "status") && is_str) r->status = v;
    else if (!strcmp(key, "fingerprint") && is_str) r->fingerprint = v;
    else if (!strcmp(key, "hash") && is_str) r->hash = v;
    else if (!strcmp(key, "bytes") && !is_str) r->bytes = number_or(v, -1);
    else if (!strcmp(key, "source_bytes") && !is_str) r->source_bytes = number_or(v, -1);
    else if (!strcmp(key, "source_mtime_ns") && !is_str) r->source_mtime_ns = number_or(v, -1);
    else if (!strcmp(key, "clip_axis") && !is_str) r->clip_axis = !strcmp(v, "true");
}

/* A flat JSON object (string, number, true / false / null values, as run_many writes its
 * rows) into r. 0, or -1 when the line is not one (a header row has an object value). */
static int parse_row(char *p, struct many_row *r) {
    *r = (struct many_row){.bytes = -1, .source_bytes = -1, .source_mtime_ns = -1};
    p = skip_ws(p);
    if (*p++ != '{') return -1;
    for (p = skip_ws(p); *p != '}';) {
        char *key, *v;
        if (!(p = json_string(p, &key))) return -1;
        p = skip_ws(p);
        if (*p++ != ':') return -1;
        p = skip_ws(p);
        const bool is_str = *p == '"';
        if (is_str) {
            if (!(p = json_string(p, &v))) return -1;
        } else {
            v = p;
            while (*p && *p != ',' && *p != '}' && *p != ' ') p++;
            if (p == v) return -1;
            const char end = *p;
            *p = '\0';
            row_field(r, key, v, false);
            *p = end;
            p = skip_ws(p);
            if (*p == ',') p = skip_ws(p + 1);
            continue;
        }
        row_field(r, key, v, true);
        p = skip_ws(p);
        if (*p == ',') p = skip_ws(p + 1);
        else if (*p != '}') return -1;
    }
    p = skip_ws(p + 1);
    return *p == '\n' || *p == '\r' || !*p ? 0 : -1;
}

int many_index_read(const char *path, void (*row)(void *user, const struct many_row *r), void *user,
                    long *unreadable) {
    *unreadable = 0;
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? 0 : cli_fail(path, "cannot read the index: %s", strerror(errno));
    char *line = malloc(ROW_MAX_BYTES + 2);
    if (!line) {
        fclose(f);
        return cli_fail(NULL, "out of memory");
    }
    while (fgets(line, ROW_MAX_BYTES + 2, f)) {
        const size_t n = strlen(line);
        struct many_row r;
        if (!n || line[n - 1] != '\n') {   /* too long, or cut short: pass it over */
            int c;
            while (!feof(f) && (c = fgetc(f)) != EOF && c != '\n') {}
            (*unreadable)++;
            continue;
        }
        if (!strncmp(line, "{\"run\":", 7)) continue;
        if (parse_row(line, &r) || !r.status) (*unreadable)++;
        else row(user, &r);
    }
    const int err = ferror(f);
    fclose(f);
    free(line);
    return err ? cli_fail(path, "cannot read the index") : 0;
}
