/*
 * hub_fetch.c — `jepa pull`'s download from a Hugging Face hub (hub.h), as huggingface_hub
 * does it: a HEAD of {endpoint}/{repo}/resolve/main/{file} (relative redirects followed,
 * the absolute one is the file's location) gives the file's sha256 (X-Linked-Etag) and size
 * (X-Linked-Size); a GET of the location writes FILE.part in the cache, resumed with a Range
 * request when a previous try left one; the sha256 (libcrypto's EVP) is checked before the
 * part is renamed into place. Bounded everywhere: the body to the announced size, each
 * attempt by a connect timeout and a low-speed timeout, the attempts by a count with
 * exponential backoff, and only failures that can pass (network, 408, 429, 5xx) retried.
 * A proxy comes from the environment (libcurl's http_proxy / https_proxy / no_proxy).
 * libcurl and libcrypto are opened with dlopen at the first download (below).
 * Tests: tests/pull/ against a loopback imitation of the hub.
 */
#include "common/hub.h"
#include "runtime/dynlib.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define FAIL(...) jh_errf(err, JH_ERR_FAIL, __VA_ARGS__)
#define LISTING_MAX (16u << 20)   /* a repo's JSON description; real ones are a few kB */

int jh_can_pull(void) { return 1; }

struct ctx {
    const struct jh_pull_opts *o;
    char endpoint[1024];
    char auth[600];   /* "Authorization: Bearer $HF_TOKEN", or "" */
};

/* What the headers of the last response said (reset at each status line). */
struct hdrs {
    long status;
    char location[2048], linked_etag[160], etag[160];
    long long linked_size, content_length, range_start;
};

static size_t on_header(char *b, size_t sz, size_t nm, void *user) {
    struct hdrs *h = user;
    const size_t n = sz * nm;
    char line[2200];
    if (n >= sizeof line) return n;
    memcpy(line, b, n);
    line[n] = 0;
    line[strcspn(line, "\r\n")] = 0;
    if (!strncmp(line, "HTTP/", 5)) {
        *h = (struct hdrs){.linked_size = -1, .content_length = -1, .range_start = -1};
        const char *sp = strchr(line, ' ');
        h->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        return n;
    }
    char *colon = strchr(line, ':');
    if (!colon) return n;
    *colon = 0;
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    if (!strcasecmp(line, "Location")) snprintf(h->location, sizeof h->location, "%s", v);
    else if (!strcasecmp(line, "X-Linked-Etag")) snprintf(h->linked_etag, sizeof h->linked_etag, "%s", v);
    else if (!strcasecmp(line, "ETag")) snprintf(h->etag, sizeof h->etag, "%s", v);
    else if (!strcasecmp(line, "X-Linked-Size")) h->linked_size = strtoll(v, NULL, 10);
    else if (!strcasecmp(line, "Content-Length")) h->content_length = strtoll(v, NULL, 10);
    else if (!strcasecmp(line, "Content-Range") && !strncasecmp(v, "bytes ", 6)) h->range_start = strtoll(v + 6, NULL, 10);
    return n;
}

/* libcurl and libcrypto are opened with dlopen at the first download, not linked
 * (runtime/dynlib.h): linked, they and the libraries they need (~30: nghttp2, ssh2, ldap,
 * kerberos, ...) cost every jepa process ~4.7 MiB of resident memory (GNU time, `jepa cpu`:
 * 4.4 against 9.1 MiB), for a download most runs never make. The headers are the build's;
 * the sonames come from meson (common/meson.build). Every function called is listed here. */
#define CURL_FUNCS(X)                                                                                  \
    X(global_init, curl_global_init) X(easy_init, curl_easy_init) X(easy_setopt, curl_easy_setopt)      \
    X(easy_perform, curl_easy_perform) X(easy_cleanup, curl_easy_cleanup)                              \
    X(easy_strerror, curl_easy_strerror) X(slist_append, curl_slist_append)                            \
    X(slist_free_all, curl_slist_free_all)
#define CRYPTO_FUNCS(X)                                                                                \
    X(md_new, EVP_MD_CTX_new) X(md_free, EVP_MD_CTX_free) X(digest_init, EVP_DigestInit_ex)             \
    X(digest_update, EVP_DigestUpdate) X(digest_final, EVP_DigestFinal_ex) X(sha256, EVP_sha256)

static struct {
#define DL_MEMBER(member, name) __typeof__(name) *member;
    CURL_FUNCS(DL_MEMBER) CRYPTO_FUNCS(DL_MEMBER)
#undef DL_MEMBER
} dl;

static pthread_once_t dl_once = PTHREAD_ONCE_INIT;
static char dl_err[JH_ERR_LEN];   /* "" when both libraries loaded and libcurl initialised */

static void dl_init(void) {
    static const char *const sonames[] = {JEPA_CURL_SONAME, JEPA_CRYPTO_SONAME};
    static const struct jr_dlsym syms[] = {
#define CURL_SYM(member, name) {0, #name, (void **)&dl.member},
#define CRYPTO_SYM(member, name) {1, #name, (void **)&dl.member},
        CURL_FUNCS(CURL_SYM) CRYPTO_FUNCS(CRYPTO_SYM)
#undef CURL_SYM
#undef CRYPTO_SYM
    };
    char why[256];
    if (jr_dl_load(sonames, 2, syms, sizeof syms / sizeof *syms, "libcurl / libcrypto", why, sizeof why))
        snprintf(dl_err, sizeof dl_err, "downloading needs libcurl and libcrypto: %s; on Debian: apt-get install "
                 "libcurl4 libssl3", why);
    else if (dl.global_init(CURL_GLOBAL_DEFAULT))
        snprintf(dl_err, sizeof dl_err, "libcurl did not initialise");
}

/* An easy handle with the options every request shares. */
static CURL *easy_new(const struct ctx *c, const char *url, struct hdrs *h, struct curl_slist **hl) {
    CURL *e = dl.easy_init();
    if (!e) return NULL;
    dl.easy_setopt(e, CURLOPT_URL, url);
    dl.easy_setopt(e, CURLOPT_USERAGENT, "jepa.c/" JEPA_VERSION);
    dl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    dl.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    dl.easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    dl.easy_setopt(e, CURLOPT_CONNECTTIMEOUT, c->o->connect_timeout_s > 0 ? c->o->connect_timeout_s : 15L);
    dl.easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    dl.easy_setopt(e, CURLOPT_LOW_SPEED_TIME, c->o->stall_timeout_s > 0 ? c->o->stall_timeout_s : 30L);
    dl.easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    dl.easy_setopt(e, CURLOPT_HEADERDATA, h);
    /* the token goes to the hub only, never to the storage a download redirects to */
    if (c->auth[0] && !strncmp(url, c->endpoint, strlen(c->endpoint)) && url[strlen(c->endpoint)] == '/') {
        *hl = dl.slist_append(*hl, c->auth);
        dl.easy_setopt(e, CURLOPT_HTTPHEADER, *hl);
    }
    return e;
}

static int retryable(CURLcode cc, long status) {
    switch (cc) {
    case CURLE_OK: return status == 408 || status == 429 || (status >= 500 && status <= 504);
    case CURLE_COULDNT_CONNECT: case CURLE_OPERATION_TIMEDOUT: case CURLE_PARTIAL_FILE: case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR: case CURLE_GOT_NOTHING: case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
        return 1;
    default: return 0;
    }
}

/* Before attempt k (1..): 1, 2, 4, 8, 16, 16 ... s. */
static void backoff(int k) {
    const unsigned s = k > 5 ? 16u : 1u << (k - 1);
    sleep(s);
}

/* A status that ends the request: one line naming what. */
static int status_error(const struct ctx *c, long st, const char *what, char *err) {
    if (st == 401 || st == 403)
        return FAIL("%s: the hub at %s refused it (HTTP %ld): a private or gated repository needs HF_TOKEN", what,
                    c->endpoint, st);
    if (st == 404) return FAIL("%s: not found at %s (HTTP 404)", what, c->endpoint);
    return FAIL("%s: the hub at %s answered HTTP %ld", what, c->endpoint, st);
}

static int curl_error(CURLcode cc, const char *what, const char *url, char *err) {
    return FAIL("%s: %s (%s)", what, dl.easy_strerror(cc), url);
}

/* ---- the listing: GET {endpoint}/api/models/{repo}, its siblings' names ---- */

struct membuf {
    char *p;
    size_t n;
    int over;
};

static size_t on_mem(char *b, size_t sz, size_t nm, void *user) {
    struct membuf *m = user;
    const size_t n = sz * nm;
    if (m->n + n > LISTING_MAX) { m->over = 1; return 0; }
    char *q = realloc(m->p, m->n + n + 1);
    if (!q) return 0;
    memcpy(q + m->n, b, n);
    m->p = q, m->n += n, m->p[m->n] = 0;
    return n;
}

/* The repo's listing, parsed into *j (its names with listing_names). */
static int get_listing(const struct ctx *c, const char *repo, cJSON **j, char *err) {
    char url[1400];
    snprintf(url, sizeof url, "%s/api/models/%s", c->endpoint, repo);
    struct membuf m = {0};
    struct hdrs h = {0};
    CURLcode cc = CURLE_OK;
    *j = NULL;
    for (int k = 0; k <= (c->o->retries < 0 ? 4 : c->o->retries); k++) {
        if (k) backoff(k);
        struct curl_slist *hl = NULL;
        CURL *e = easy_new(c, url, &h, &hl);
        if (!e) return FAIL("%s: libcurl could not start", repo);
        dl.easy_setopt(e, CURLOPT_WRITEFUNCTION, on_mem);
        dl.easy_setopt(e, CURLOPT_WRITEDATA, &m);
        dl.easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
        dl.easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
        dl.easy_setopt(e, CURLOPT_TIMEOUT, 120L);
        m.n = 0, m.over = 0;
        cc = dl.easy_perform(e);
        dl.easy_cleanup(e);
        dl.slist_free_all(hl);
        if (!retryable(cc, h.status)) break;
    }
    int rc = JH_OK;
    if (m.over) rc = FAIL("%s: the hub's listing is over %u MiB", repo, LISTING_MAX >> 20);
    else if (cc) rc = curl_error(cc, repo, url, err);
    else if (h.status != 200) rc = status_error(c, h.status, repo, err);
    else if (!m.p || !(*j = cJSON_ParseWithLength(m.p, m.n))) rc = FAIL("%s: the hub's listing is not JSON (%s)", repo, url);
    else if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(*j, "siblings")))
        rc = FAIL("%s: the hub's listing has no 'siblings' (%s)", repo, url);
    free(m.p);
    return rc;
}

/* The siblings' names (pointers into j, in an array the caller frees), each a
 * valid FILE of repo (a hostile name in the listing is left out); their count. */
static int listing_names(const cJSON *j, const char *repo, const char ***names) {
    const cJSON *sib = cJSON_GetObjectItemCaseSensitive(j, "siblings");
    const int n = cJSON_GetArraySize(sib);
    *names = n > 0 ? calloc((size_t)n, sizeof **names) : NULL;
    int k = 0;
    for (const cJSON *s = *names ? sib->child : NULL; s; s = s->next) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(s, "rfilename");
        struct jh_ref chk;
        char spec[1200], e[JH_ERR_LEN];
        if (!cJSON_IsString(f) || strlen(f->valuestring) >= sizeof chk.file) continue;
        snprintf(spec, sizeof spec, "%s:%s", repo, f->valuestring);
        if (!jh_ref_parse(spec, &chk, e)) (*names)[k++] = f->valuestring;
    }
    return k;
}

/* A checkpoint the converter reads: config.json and a safetensors file, no GGUF. */
static int is_checkpoint(const char *const *names, int n) {
    int cfg = 0, st = 0;
    for (int i = 0; i < n; i++) {
        const size_t l = strlen(names[i]);
        if (l >= 5 && !strcasecmp(names[i] + l - 5, ".gguf")) return 0;
        cfg |= !strcmp(names[i], "config.json");
        st |= !strcmp(names[i], "model.safetensors") || !strcmp(names[i], "model.safetensors.index.json");
    }
    return cfg && st;
}

/* The repo's file names picked by jh_pick into r->file; JH_CHECKPOINT for a checkpoint. */
static int pick_from_listing(const struct ctx *c, struct jh_ref *r, char *err) {
    cJSON *j;
    int rc = get_listing(c, r->repo, &j, err);
    const char **names = NULL;
    const int k = rc ? 0 : listing_names(j, r->repo, &names);
    if (!rc && is_checkpoint(names, k))
        rc = jh_errf(err, JH_CHECKPOINT, "%s holds a checkpoint (config.json, safetensors) and no .gguf: "
                     "jepa_c.pull converts it (pip install jepa-c)", r->repo);
    else if (!rc) {
        const int i = jh_pick(names, k, c->o->type, r->repo, err);
        if (i < 0) rc = JH_ERR_FAIL;
        else strcpy(r->file, names[i]);
    }
    free(names);
    cJSON_Delete(j);
    return rc;
}

/* ---- the file's metadata: HEAD of the resolve URL ---- */

struct meta {
    char url[4096];      /* where to GET it */
    char sha256[65];     /* lower-case hex; "" for a small file checked by its size only */
    long long size;
};

/* Percent-encode a repo file path, keeping '/' and RFC 3986's unreserved characters. */
static void url_path(const char *f, char *out, size_t n) {
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)f; *p && k + 4 < n; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-._~/", *p))
            out[k++] = (char)*p;
        else k += (size_t)snprintf(out + k, n - k, "%%%02X", *p);
    }
    out[k] = 0;
}

/* "sha" from an ETag value: W/ and quotes stripped, 64 hex digits, lower-cased. */
static int etag_sha256(const char *v, char out[65]) {
    if (!strncmp(v, "W/", 2)) v += 2;
    if (*v == '"') v++;
    size_t i = 0;
    for (; i < 64 && v[i]; i++) {
        const char ch = v[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F'))) return 0;
        out[i] = (char)(ch >= 'A' && ch <= 'F' ? ch + 32 : ch);
    }
    out[i] = 0;
    return i == 64 && (v[64] == 0 || v[64] == '"');
}

static int head_once(const struct ctx *c, const char *url, struct hdrs *h, CURLcode *cc) {
    struct curl_slist *hl = NULL;
    CURL *e = easy_new(c, url, h, &hl);
    if (!e) return -1;
    dl.easy_setopt(e, CURLOPT_NOBODY, 1L);
    dl.easy_setopt(e, CURLOPT_TIMEOUT, 120L);
    *cc = dl.easy_perform(e);
    dl.easy_cleanup(e);
    dl.slist_free_all(hl);
    return 0;
}

static int head_meta(const struct ctx *c, const struct jh_ref *r, struct meta *m, char *err) {
    char url[4096], enc[1600], what[sizeof r->repo + sizeof r->file + 2];
    snprintf(what, sizeof what, "%s:%s", r->repo, r->file);
    url_path(r->file, enc, sizeof enc);
    snprintf(url, sizeof url, "%s/%s/resolve/main/%s", c->endpoint, r->repo, enc);
    struct hdrs h = {0};
    for (int hop = 0; hop < 6; hop++) {
        CURLcode cc = CURLE_OK;
        for (int k = 0; k <= (c->o->retries < 0 ? 4 : c->o->retries); k++) {
            if (k) backoff(k);
            if (head_once(c, url, &h, &cc)) return FAIL("%s: libcurl could not start", what);
            if (!retryable(cc, h.status)) break;
        }
        if (cc) return curl_error(cc, what, url, err);
        const int redirect = h.status >= 300 && h.status < 400 && h.location[0];
        if (redirect && h.location[0] == '/') {   /* a renamed repo: the hub's own path */
            snprintf(url, sizeof url, "%s%s", c->endpoint, h.location);
            continue;
        }
        if (!redirect && h.status != 200) return status_error(c, h.status, what, err);
        snprintf(m->url, sizeof m->url, "%s", redirect ? h.location : url);
        m->size = h.linked_size >= 0 ? h.linked_size : redirect ? -1 : h.content_length;
        if (m->size < 0) return FAIL("%s: the hub announces no size for it (X-Linked-Size)", what);
        if (etag_sha256(h.linked_etag[0] ? h.linked_etag : h.etag, m->sha256)) return JH_OK;
        if (c->o->small_max <= 0)
            return FAIL("%s: the hub gives no sha256 for it (no LFS X-Linked-Etag); a download that cannot be "
                        "checked is refused", what);
        if (m->size > c->o->small_max)
            return FAIL("%s: %lld bytes without a sha256 (not an LFS file); at most %lld are taken so", what, m->size,
                        c->o->small_max);
        m->sha256[0] = 0;   /* checked by its size only: download() ends at exactly that many bytes */
        return JH_OK;
    }
    return FAIL("%s: more than 5 redirects inside the hub", what);
}

/* ---- the download ---- */

struct dl {
    int fd;
    EVP_MD_CTX *md;
    long long have, size;   /* bytes in the .part; the announced size */
    const struct hdrs *h;
    const struct ctx *c;
    const char *file;
    int started, bad;       /* bad: 1 Content-Range not where we are, 2 over size, 3 write */
};

static size_t on_body(char *b, size_t sz, size_t nm, void *user) {
    struct dl *d = user;
    const size_t n = sz * nm;
    if (d->h->status != 200 && d->h->status != 206) return n;   /* an error page: dropped */
    if (!d->started) {
        d->started = 1;
        if (d->h->status == 200 && d->have > 0) {   /* the range was ignored: from the start */
            if (ftruncate(d->fd, 0) || lseek(d->fd, 0, SEEK_SET) < 0) { d->bad = 3; return 0; }
            dl.digest_init(d->md, dl.sha256(), NULL);
            d->have = 0;
        } else if (d->h->status == 206 && d->h->range_start != d->have) {
            d->bad = 1;
            return 0;
        }
    }
    if ((long long)n > d->size - d->have) { d->bad = 2; return 0; }
    for (size_t off = 0; off < n;) {
        const ssize_t w = write(d->fd, b + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { d->bad = 3; return 0; }
        off += (size_t)w;
    }
    dl.digest_update(d->md, b, n);
    d->have += (long long)n;
    if (d->c->o->progress) d->c->o->progress(d->c->o->progress_user, d->file, (uint64_t)d->have, (uint64_t)d->size, 0);
    return n;
}

/* Hash the first d->have bytes of the .part (a resumed download) into d->md. */
static int hash_prefix(struct dl *d) {
    static char buf[1 << 16];
    long long left = d->have;
    if (lseek(d->fd, 0, SEEK_SET) < 0) return -1;
    while (left > 0) {
        const ssize_t r = read(d->fd, buf, left < (long long)sizeof buf ? (size_t)left : sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        dl.digest_update(d->md, buf, (size_t)r);
        left -= r;
    }
    return lseek(d->fd, d->have, SEEK_SET) < 0 ? -1 : 0;
}

/* One GET from d->have on. The curl code; *st the HTTP status. */
static CURLcode get_once(struct dl *d, const char *url, struct hdrs *h) {
    struct curl_slist *hl = NULL;
    CURL *e = easy_new(d->c, url, h, &hl);
    if (!e) return CURLE_FAILED_INIT;
    char range[64];
    snprintf(range, sizeof range, "%lld-", d->have);
    if (d->have > 0) dl.easy_setopt(e, CURLOPT_RANGE, range);
    dl.easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
    dl.easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
    dl.easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)(d->size - d->have));
    dl.easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    dl.easy_setopt(e, CURLOPT_WRITEDATA, d);
    d->started = 0, d->bad = 0;
    const CURLcode cc = dl.easy_perform(e);
    dl.easy_cleanup(e);
    dl.slist_free_all(hl);
    return cc;
}

/* GET until d->have == d->size, resuming after each retryable failure. */
static int download(struct dl *d, const struct meta *m, const char *what, char *err) {
    struct hdrs h = {0};
    d->h = &h;
    const int tries = 1 + (d->c->o->retries < 0 ? 4 : d->c->o->retries);
    for (int k = 0; k < tries; k++) {
        if (k) backoff(k);
        if (d->have == d->size) return JH_OK;
        const CURLcode cc = get_once(d, m->url, &h);
        if (d->bad == 3) return FAIL("%s: cannot write the download: %s", what, strerror(errno));
        if (d->bad == 2 || cc == CURLE_FILESIZE_EXCEEDED)
            return FAIL("%s: the server sent more than the announced %lld bytes", what, m->size);
        if (d->bad == 1) return FAIL("%s: the server resumed at byte %lld, not %lld", what, h.range_start, d->have);
        if (cc == CURLE_OK && h.status == 416) {   /* the range is past its end: start over */
            if (ftruncate(d->fd, 0) || lseek(d->fd, 0, SEEK_SET) < 0) return FAIL("%s: %s", what, strerror(errno));
            dl.digest_init(d->md, dl.sha256(), NULL);
            d->have = 0;
            continue;
        }
        if (cc == CURLE_OK && h.status != 200 && h.status != 206 && !retryable(cc, h.status))
            return status_error(d->c, h.status, what, err);
        if (cc != CURLE_OK && !retryable(cc, h.status)) return curl_error(cc, what, m->url, err);
        if (cc == CURLE_OK && d->have == d->size) return JH_OK;
        /* retryable, or the body ended short: the next attempt resumes from d->have */
        if (k + 1 == tries)
            return cc ? FAIL("%s: %s after %d attempts, %lld of %lld bytes kept for a later resume (%s)", what,
                             dl.easy_strerror(cc), tries, d->have, d->size, m->url)
                      : FAIL("%s: %lld of %lld bytes after %d attempts (HTTP %ld), kept for a later resume", what,
                             d->have, d->size, tries, h.status);
    }
    return d->have == d->size ? JH_OK : FAIL("%s: incomplete download", what);
}

static int mkdir_p(char *path) {   /* path's folders, path itself included */
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p) continue;
        const char save = *p;
        *p = 0;
        const int rc = mkdir(path, 0755);
        *p = save;
        if (rc && errno != EEXIST) return -1;
        if (!save) return 0;
    }
}

static void hex(const unsigned char *d, char out[65]) {
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* sha256 of a whole file into out; 0 or -1. */
static int file_sha256(const char *path, char out[65]) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st = {0};
    struct dl d = {.fd = fd, .md = dl.md_new()};
    int rc = d.md && !fstat(fd, &st) && dl.digest_init(d.md, dl.sha256(), NULL) ? 0 : -1;
    d.have = st.st_size;
    unsigned char dig[32];
    if (!rc) rc = hash_prefix(&d) || !dl.digest_final(d.md, dig, NULL) ? -1 : 0;
    if (!rc) hex(dig, out);
    dl.md_free(d.md);
    close(fd);
    return rc;
}

/* m into final through final.part: locked against a second puller, resumed, its sha256
 * checked (a mismatch removes the part), renamed into place. */
static int fetch_file(const struct ctx *c, const struct meta *m, const char *final, const char *what, char *err) {
    char part[JH_PATH_LEN + 8];
    snprintf(part, sizeof part, "%s.part", final);
    /* never through a link planted at the part's name: its target would be written */
    struct dl d = {.fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644), .size = m->size, .c = c,
                   .file = final};
    if (d.fd < 0) return FAIL("%s: %s", part, strerror(errno));
    if (flock(d.fd, LOCK_EX | LOCK_NB)) {
        close(d.fd);
        return FAIL("%s: another process is downloading it (%s is locked)", what, part);
    }
    struct stat st = {0};
    struct statvfs vs;
    int rc = JH_OK;
    d.md = dl.md_new();
    if (!d.md || !dl.digest_init(d.md, dl.sha256(), NULL) || fstat(d.fd, &st))
        rc = FAIL("%s: cannot start the sha256 or read %s", what, part);
    else if (!S_ISREG(st.st_mode))
        rc = FAIL("%s: %s is not a regular file", what, part);
    d.have = rc ? 0 : st.st_size;
    if (!rc && d.have > d.size && ftruncate(d.fd, 0) == 0) d.have = 0;
    if (!rc && hash_prefix(&d)) rc = FAIL("%s: cannot read %s: %s", what, part, strerror(errno));
    if (!rc && fstatvfs(d.fd, &vs) == 0 && (long long)(vs.f_bavail * vs.f_frsize) < d.size - d.have)
        rc = FAIL("%s: %lld bytes to download, %lld free in %s", what, d.size - d.have,
                  (long long)(vs.f_bavail * vs.f_frsize), part);
    if (!rc) rc = download(&d, m, what, err);
    unsigned char dig[32];
    char got[65];
    if (!rc && !dl.digest_final(d.md, dig, NULL)) rc = FAIL("%s: the sha256 failed", what);
    if (!rc && m->sha256[0]) {
        hex(dig, got);
        if (strcmp(got, m->sha256)) {
            unlink(part);
            rc = FAIL("%s: sha256 mismatch (the hub says %s, the download is %s); the download was removed", what,
                      m->sha256, got);
        }
    }
    if (!rc && fsync(d.fd)) rc = FAIL("%s: %s", part, strerror(errno));
    if (!rc && rename(part, final)) rc = FAIL("%s: cannot rename into place: %s", final, strerror(errno));
    if (!rc && c->o->progress) c->o->progress(c->o->progress_user, final, (uint64_t)d.have, (uint64_t)d.size, 1);
    dl.md_free(d.md);
    close(d.fd);
    return rc;
}

static int ctx_init(struct ctx *c, const struct jh_pull_opts *o, char *err) {
    *c = (struct ctx){.o = o};
    const char *ep = o->endpoint && *o->endpoint ? o->endpoint : getenv("HF_ENDPOINT");
    if (!ep || !*ep) ep = "https://huggingface.co";
    size_t len = strlen(ep);
    while (len > 0 && ep[len - 1] == '/') len--;
    if (len >= sizeof c->endpoint || (strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8)))
        return jh_errf(err, JH_ERR_USAGE, "the hub's address '%.200s' (HF_ENDPOINT) is not an http(s) URL", ep);
    memcpy(c->endpoint, ep, len);
    const char *tok = getenv("HF_TOKEN");
    if (tok && *tok) {
        if (strlen(tok) > 500 || strpbrk(tok, "\r\n")) return jh_errf(err, JH_ERR_USAGE, "HF_TOKEN is not a token");
        snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s", tok);
    }
    pthread_once(&dl_once, dl_init);
    if (dl_err[0]) return FAIL("%s", dl_err);
    return JH_OK;
}

int jh_pull(const struct jh_ref *r0, const struct jh_pull_opts *o, char *path, size_t n, char *err) {
    struct ctx c;
    int rc = ctx_init(&c, o, err);
    if (rc) return rc;
    struct jh_ref r = *r0;
    if (r.file[0] && o->type)
        return jh_errf(err, JH_ERR_USAGE, "--type picks among a repository's files; %s:%s names one already", r.repo,
                       r.file);
    if (!r.file[0] && (rc = pick_from_listing(&c, &r, err))) return rc;
    struct meta m;
    if ((rc = head_meta(&c, &r, &m, err))) return rc;
    char dir[JH_PATH_LEN], what[sizeof r.repo + sizeof r.file + 2];
    snprintf(what, sizeof what, "%s:%s", r.repo, r.file);
    if ((rc = jh_repo_dir(&r, dir, sizeof dir, err))) return rc;
    const int w = snprintf(path, n, "%s/%s", dir, r.file);
    if (w < 0 || (size_t)w >= n || (size_t)w + 8 > JH_PATH_LEN) return FAIL("%s: the cache path is too long", what);
    char parent[JH_PATH_LEN];
    snprintf(parent, sizeof parent, "%s", path);
    *strrchr(parent, '/') = 0;
    if (mkdir_p(parent)) return FAIL("%s: cannot create %s: %s", what, parent, strerror(errno));
    struct stat st;
    char have[65];
    if (m.sha256[0] && stat(path, &st) == 0 && st.st_size == m.size && file_sha256(path, have) == 0 &&
        !strcmp(have, m.sha256))
        return JH_OK;   /* the cached copy is the hub's (a small unchecked file is fetched again) */
    return fetch_file(&c, &m, path, what, err);
}

int jh_list(const struct jh_ref *r, const struct jh_pull_opts *o, char *dir, size_t n, char **names, char *err) {
    struct ctx c;
    cJSON *j = NULL;
    *names = NULL;
    int rc = ctx_init(&c, o, err);
    if (!rc) rc = jh_repo_dir(r, dir, n, err);
    if (!rc) rc = get_listing(&c, r->repo, &j, err);
    const char **v = NULL;
    const int k = rc ? 0 : listing_names(j, r->repo, &v);
    size_t len = 1;
    for (int i = 0; i < k; i++) len += strlen(v[i]) + 1;
    if (!rc && !(*names = calloc(1, len))) rc = FAIL("%s: out of memory", r->repo);
    for (int i = 0, at = 0; !rc && i < k; i++) at += sprintf(*names + at, "%s%s", i ? "\n" : "", v[i]);
    free(v);
    cJSON_Delete(j);
    return rc;
}
