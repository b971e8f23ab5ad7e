/*
 * hub.c — repository references, the cache folder and the choice of a file (hub.h).
 * No dependencies: the download is hub_fetch.c. Tested by tests/pull/.
 */
#include "common/hub.h"

#include <ctype.h>
#include <stdarg.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ERR(...) jh_errf(err, JH_ERR_USAGE, __VA_ARGS__)

int jh_errf(char *err, int rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, JH_ERR_LEN, fmt, ap);
    va_end(ap);
    return rc;
}

/* One part of "OWNER/NAME": [A-Za-z0-9._-]{1,96}, not starting with '.' or '-', no "..". */
static int repo_part_ok(const char *s, size_t len) {
    if (len < 1 || len > 96 || s[0] == '.' || s[0] == '-') return 0;
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-') return 0;
        if (c == '.' && i + 1 < len && s[i + 1] == '.') return 0;
    }
    return 1;
}

/* A file inside a repo: relative, '/'-separated, no empty, "." or ".." component, no
 * backslash or control character. */
static int file_ok(const char *f) {
    if (!*f || *f == '/') return 0;
    for (const char *p = f; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\\') return 0;
    for (const char *c = f; c;) {
        const char *e = strchr(c, '/');
        const size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.')) return 0;
        c = e ? e + 1 : NULL;
    }
    return 1;
}

int jh_ref_parse(const char *s, struct jh_ref *r, char *err) {
    memset(r, 0, sizeof *r);
    const char *colon = strchr(s, ':');
    const size_t rlen = colon ? (size_t)(colon - s) : strlen(s);
    const char *slash = memchr(s, '/', rlen);
    if (!slash || !repo_part_ok(s, (size_t)(slash - s)) || !repo_part_ok(slash + 1, rlen - (size_t)(slash - s) - 1))
        return jh_errf(err, -1, "'%.*s' is not a repository name OWNER/NAME (letters, digits, '.', '_', '-')", (int)(rlen > 200 ? 200 : rlen), s);
    memcpy(r->repo, s, rlen);
    if (colon) {
        if (!file_ok(colon + 1) || strlen(colon + 1) >= sizeof r->file)
            return ERR("'%.200s' is not a file inside the repository (a relative path, no '..')", colon + 1);
        strcpy(r->file, colon + 1);
    }
    return JH_OK;
}

static int ends_with_ci(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcasecmp(s + n - m, suffix);
}

int jh_is_ref(const char *s) {
    struct jh_ref r;
    char err[JH_ERR_LEN];
    if (!s || access(s, F_OK) == 0 || jh_ref_parse(s, &r, err)) return 0;
    return r.file[0] || !ends_with_ci(r.repo, ".gguf");
}

int jh_cache_root(char *buf, size_t n, char *err) {
    const char *env = getenv("JEPA_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int w;
    if (env && *env) w = snprintf(buf, n, "%s", env);
    else if (xdg && xdg[0] == '/') w = snprintf(buf, n, "%s/jepa", xdg);
    else if (home && *home) w = snprintf(buf, n, "%s/.cache/jepa", home);
    else return ERR("no cache folder: set JEPA_CACHE (or HOME / XDG_CACHE_HOME)");
    if (w < 0 || (size_t)w >= n) return ERR("the cache folder's path is too long");
    return JH_OK;
}

int jh_repo_dir(const struct jh_ref *r, char *buf, size_t n, char *err) {
    char root[JH_PATH_LEN];
    const int rc = jh_cache_root(root, sizeof root, err);
    if (rc) return rc;
    const int w = snprintf(buf, n, "%s/hub/%s", root, r->repo);
    if (w < 0 || (size_t)w >= n) return ERR("the cache path of %s is too long", r->repo);
    return JH_OK;
}

/* The quantization suffix of a GGUF name: after the last '-' or '.' of the stem. */
static void suffix_of(const char *name, char *out, size_t n) {
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    size_t stem = strlen(base) - 5;   /* callers pass names ending in .gguf */
    size_t i = stem;
    while (i > 0 && base[i - 1] != '-' && base[i - 1] != '.') i--;
    snprintf(out, n, "%.*s", (int)(stem - i), base + i);
}

int jh_pick(const char *const *names, int n, const char *type, const char *repo, char *err) {
    int found = -1, n_gguf = 0, f16 = -1;
    char types[256] = "", suf[64];
    size_t tl = 0;
    for (int i = 0; i < n; i++) {
        if (!ends_with_ci(names[i], ".gguf")) continue;
        n_gguf++;
        suffix_of(names[i], suf, sizeof suf);
        if (tl + strlen(suf) + 3 < sizeof types) tl += (size_t)snprintf(types + tl, sizeof types - tl, "%s%s", tl ? ", " : "", suf);
        if (type && !strcasecmp(suf, type)) {
            if (found >= 0) return ERR("%s has several %s files (%s and %s); name one as %s:FILE", repo, type, names[found], names[i], repo);
            found = i;
        }
        if (!strcasecmp(suf, "f16")) f16 = f16 < 0 ? i : -2;
    }
    if (n_gguf == 0) return jh_errf(err, -1, "%s holds no .gguf file", repo);
    if (type) {
        if (found < 0) return jh_errf(err, -1, "%s has no %s file (its GGUF types: %s)", repo, type, types);
        return found;
    }
    if (n_gguf == 1)
        for (int i = 0; i < n; i++)
            if (ends_with_ci(names[i], ".gguf")) return i;
    if (f16 >= 0) return f16;
    return jh_errf(err, -1, "%s has several GGUF files (types: %s); pick one with --type or %s:FILE", repo, types, repo);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of the regular *.gguf files directly in dir (at most cap), sorted. */
static int list_cached(const char *dir, char names[][256], const char **ptr, int cap) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int k = 0;
    for (struct dirent *e; k < cap && (e = readdir(d));) {
        char p[JH_PATH_LEN];
        struct stat st;
        if (!ends_with_ci(e->d_name, ".gguf") || strlen(e->d_name) >= 256) continue;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || stat(p, &st) || !S_ISREG(st.st_mode))
            continue;
        strcpy(names[k], e->d_name);
        ptr[k] = names[k];
        k++;
    }
    closedir(d);
    qsort(ptr, (size_t)k, sizeof *ptr, cmp_str);
    return k;
}

int jh_cache_find(const struct jh_ref *r, const char *type, char *path, size_t n, char *err) {
    char dir[JH_PATH_LEN];
    int rc = jh_repo_dir(r, dir, sizeof dir, err);
    if (rc) return rc;
    struct stat st;
    if (r->file[0]) {
        const int w = snprintf(path, n, "%s/%s", dir, r->file);
        if (w < 0 || (size_t)w >= n) return ERR("the cache path of %s:%s is too long", r->repo, r->file);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return JH_OK;
        return jh_errf(err, JH_NOT_CACHED, "%s:%s is not in the cache (%s); get it with `jepa pull %s:%s` or add --pull",
                       r->repo, r->file, dir, r->repo, r->file);
    }
    enum { CAP = 64 };
    char names[CAP][256];
    const char *ptr[CAP];
    const int k = list_cached(dir, names, ptr, CAP);
    if (k == 0)
        return jh_errf(err, JH_NOT_CACHED, "%s is not in the cache (%s); get it with `jepa pull %s` or add --pull",
                       r->repo, dir, r->repo);
    const int i = jh_pick(ptr, k, type, r->repo, err);
    if (i < 0) return JH_ERR_USAGE;
    const int w = snprintf(path, n, "%s/%s", dir, ptr[i]);
    if (w < 0 || (size_t)w >= n) return ERR("the cache path of %s is too long", r->repo);
    return JH_OK;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void jh_progress_stderr(void *user, const char *file, uint64_t done, uint64_t total, int final) {
    (void)user;
    static double t0, last;
    static uint64_t start;
    const double t = now_s();
    if (done == 0 || t0 == 0 || done < start) t0 = t, start = done;
    if (!final && t - last < 0.1) return;
    last = t;
    const double mib = 1024.0 * 1024.0, rate = t > t0 ? (double)(done - start) / (t - t0) : 0;
    const double eta = rate > 0 && total > done ? (double)(total - done) / rate : 0;
    const int pct = total ? (int)(100.0 * (double)done / (double)total) : 0, bar = pct * 24 / 100;
    const char *base = strrchr(file, '/');
    fprintf(stderr, "\r%s [%.*s%*s] %3d%% %.1f/%.1f MiB %.1f MiB/s ETA %dm%02ds\033[K%s", base ? base + 1 : file, bar,
            "########################", 24 - bar, "", pct, (double)done / mib, (double)total / mib, rate / mib,
            (int)(eta / 60), (int)eta % 60, final ? "\n" : "");
    if (final) t0 = 0;
}
