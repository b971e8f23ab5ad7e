/*
 * hub.h — model files by Hugging Face repository name ("OWNER/NAME[:FILE]"), shared by the
 * `jepa` binary and the Python extension (docs/pull.md):
 *   hub.c        the names and the cache: parsing a reference, the cache folder
 *                ($JEPA_CACHE, else $XDG_CACHE_HOME/jepa, else ~/.cache/jepa), finding a
 *                file there, choosing a file by its quantization suffix. No dependencies:
 *                every build resolves `-m REPO` from the cache.
 *   hub_fetch.c  the download (libcurl, libcrypto's SHA-256, cJSON for the file listing),
 *                built where those are found (JEPA_HAVE_PULL).
 * Nothing here prints or exits: each call returns a status and writes its reason into err.
 * Tests: tests/pull/ (a loopback imitation of the hub).
 */
#ifndef JEPA_COMMON_HUB_H
#define JEPA_COMMON_HUB_H

#include <stddef.h>
#include <stdint.h>

#define JH_ERR_LEN 512
#define JH_PATH_LEN 4096

/* A parsed reference: repo "OWNER/NAME" (each part [A-Za-z0-9._-], 1..96 characters, not
 * starting with '.' or '-', no ".."), file a relative path inside it or "" when not named. */
struct jh_ref {
    char repo[200];
    char file[512];
};

enum jh_status {
    JH_OK = 0,
    JH_NOT_CACHED = 1, /* jh_cache_find: nothing of that name in the cache */
    JH_ERR_USAGE = 2,  /* the reference or an option is wrong: the caller's mistake */
    JH_ERR_FAIL = 3,   /* the network, the hub, the disk or a checksum */
    JH_CHECKPOINT = 4, /* jh_pull: the repo holds no .gguf but a checkpoint the converter reads
                        * (config.json and safetensors): python/jepa_c/hub.py converts it */
};

/* Write the reason into err (JH_ERR_LEN bytes, truncated if it must be) and return rc:
 * the error helper of hub.c and hub_fetch.c. */
int jh_errf(char *err, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* s as "OWNER/NAME[:FILE]". JH_OK, or JH_ERR_USAGE with the reason. */
int jh_ref_parse(const char *s, struct jh_ref *r, char *err);

/* Whether a -m argument names a repository rather than a file: it is not an existing path,
 * parses as a reference, and (without ':FILE') does not end in ".gguf" (a missing local
 * file keeps the loader's "no such file" error). */
int jh_is_ref(const char *s);

/* The cache root into buf: $JEPA_CACHE, $XDG_CACHE_HOME/jepa or $HOME/.cache/jepa
 * (relative XDG paths are ignored, as the XDG spec says). JH_OK or JH_ERR_USAGE. */
int jh_cache_root(char *buf, size_t n, char *err);

/* Where a repo's files live: ROOT/hub/OWNER/NAME. */
int jh_repo_dir(const struct jh_ref *r, char *buf, size_t n, char *err);

/* Of n file names, the GGUF to take: the one whose quantization suffix (the text after
 * the last '-' or '.' before ".gguf", case-insensitive) is type; with type NULL, the only
 * GGUF, or of several the f16 one. The index, or -1 with the reason (the types there). */
int jh_pick(const char *const *names, int n, const char *type, const char *repo, char *err);

/* The cached file of r into path: r->file when named, else jh_pick over the .gguf files
 * in the repo's cache folder (type as there). JH_OK, JH_NOT_CACHED (err says how to get
 * it), or an error. */
int jh_cache_find(const struct jh_ref *r, const char *type, char *path, size_t n, char *err);

/* Progress of a download: done of total bytes; final on the last call. */
typedef void (*jh_progress_fn)(void *user, const char *file, uint64_t done, uint64_t total, int final);
/* A progress bar on stderr redrawn at most 10 times a second (user unused). */
void jh_progress_stderr(void *user, const char *file, uint64_t done, uint64_t total, int final);

struct jh_pull_opts {
    const char *endpoint;     /* NULL: $HF_ENDPOINT, else https://huggingface.co */
    const char *type;         /* quantization suffix to pick (NULL: see jh_pick) */
    long connect_timeout_s;   /* 0: 15 */
    long stall_timeout_s;     /* below 1 KiB/s for this long fails an attempt; 0: 30 */
    int retries;              /* further attempts after a retryable failure; < 0: 4 */
    jh_progress_fn progress;  /* NULL: none */
    void *progress_user;
    /* A file the hub gives no sha256 for (not stored with LFS: config.json) is refused,
     * unless small_max > 0: then it is taken when the hub announces a size of at most
     * small_max bytes, and checked against that size only. */
    long long small_max;
};

/* The maximum small_max jepa_c.pull passes for a checkpoint's JSON files (docs/pull.md). */
#define JH_SMALL_MAX (4ll << 20)

/* Whether this build can download (hub_fetch.c linked in). */
int jh_can_pull(void);

/* Download r (or the file jh_pick chooses from the repo's listing) into the cache unless
 * the cached copy already has the hub's sha256, and write its path into path. The file
 * appears only complete and checked (a .part beside it, renamed into place); a partial
 * download is resumed with a Range request. JH_OK or an error with its reason. */
int jh_pull(const struct jh_ref *r, const struct jh_pull_opts *o, char *path, size_t n, char *err);

/* The repo's cache folder into dir and its file names, '\n'-joined, into *names (malloc'd;
 * the caller frees it), from the hub's listing. JH_OK or an error with its reason. */
int jh_list(const struct jh_ref *r, const struct jh_pull_opts *o, char *dir, size_t n, char **names, char *err);

#endif
