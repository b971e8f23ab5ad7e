/*
 * run_many.c — see run_many.h. Tested by tests/input/test_cli_input.sh and
 * tests/input/test_cli_corpus.sh.
 *
 * The list: each FILE argument is one input; a DIR argument stands for its regular files
 * whose names end in an image or video extension, in byte order of their names, and with
 * --recursive for those of its subfolders too (symbolic links followed, a folder that is
 * its own ancestor passed over, at most WALK_MAX_DEPTH levels and WALK_MAX_DIRS folders);
 * without --recursive, a DIR's subfolders are named on one stderr line. --inputs LIST.txt
 * adds one path per line (blank lines and lines starting with # skipped). At most
 * MANY_MAX inputs. Each output is OUT_DIR/<the input's path under its DIR argument, or its
 * file name><suffix> (photo.jpg -> photo.jpg.npy, cat/x.jpg -> cat/x.jpg.npy); two inputs
 * with one output are refused before anything runs. An input found under a subfolder of a
 * DIR has that first subfolder as its class (ImageFolder's rule), in its index row.
 *
 * The index, OUT_DIR/index.jsonl, is only appended to: a header row per run ({"run":
 * {...}}: the version, the model, its identity, the fingerprint and the options that went
 * into it, the device, kernels and threads), then one row per input as it finishes
 * (written with one write(2), so that a run that is stopped, even by SIGKILL, keeps the
 * rows of what it finished): source, output (relative to OUT_DIR), status ("ok" or
 * "error"), clips, class, fingerprint, the output's size and FNV-1a 64 hash, the input's
 * size and mtime, and the error's reason or classify's top class. The latest row of an
 * output is its state. Outputs are written atomically and their row after them, so an
 * output without a row is one whose run stopped in between.
 *
 * --resume keeps an output only when its latest row is "ok" with this run's fingerprint,
 * the input has that size and mtime, and the file has that size and hash; any other input
 * runs again, and the summary line counts each reason. Kept outputs get no new row.
 *
 * Stacked (-o FEATS.npy / --logits-out L.npy): the same run into FEATS.npy.parts/ (its own
 * index.jsonl), then one array: each output is one row (a clip's [D], or [N, D] of
 * tokens), or one row per clip when it has a clip axis (a video's --num-clips / --dense
 * clips); every row must have the same shape. FEATS.index.jsonl (written whole, as the
 * array is) gives each input's first row and row count, and its header row the array's
 * size and hash. The parts are removed once the stacked file is written and no input
 * failed; otherwise they stay, so that --resume reruns only what failed. Named .npy inputs
 * are uint8 frame arrays [T, H, W, 3] (a DIR listing leaves .npy files out); an output
 * that would replace an input, or an output directory that is also an input directory, is
 * refused before anything runs (a --recursive walk passes over the output directory).
 */
#include "cli/run_many.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "input/npy.h"
#include "jepa.h"
#include "runtime/outfile.h"

#define MANY_MAX 1000000
#define LINE_MAX_BYTES 4096
#define WALK_MAX_DEPTH 32
#define WALK_MAX_DIRS 100000

/* One input: its path, its output's path under the output directory, its class. */
struct item {
    char *path, *rel, *cls;
};

struct list {
    struct item *v;
    int n, cap;
};

static int list_add(struct list *l, const char *path, const char *rel, const char *cls) {
    if (l->n == MANY_MAX) return -1;
    if (l->n == l->cap) {
        const int cap = l->cap ? 2 * l->cap : 64;
        struct item *v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) return -1;
        l->v = v, l->cap = cap;
    }
    struct item *it = &l->v[l->n];
    *it = (struct item){strdup(path), strdup(rel), cls ? strdup(cls) : NULL};
    if (!it->path || !it->rel || (cls && !it->cls)) {
        free(it->path), free(it->rel), free(it->cls);
        return -1;
    }
    l->n++;
    return 0;
}

static void list_free(struct list *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i].path), free(l->v[i].rel), free(l->v[i].cls);
    free(l->v);
}

static const char *file_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* An image or video a directory listing takes (by extension, case-insensitive). Frame
 * arrays (.npy) are inputs when named (FILE arguments, --inputs lines), never listed: a
 * folder's .npy files are as often outputs or other arrays. */
static bool wanted(const char *name) {
    static const char *const ext[] = {".png", ".jpg", ".jpeg", ".webp", ".mp4", ".webm", ".mkv", ".avi", ".mov", ".m4v"};
    const size_t n = strlen(name);
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        const size_t e = strlen(ext[i]);
        if (n > e && !strcasecmp(name + n - e, ext[i])) return true;
    }
    return false;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A walk over DIR arguments: the folders on the way down (a folder met again below itself
 * is a symbolic link loop), the output directory (passed over), what was left out. */
struct walk {
    const char *cmd;
    bool recursive;
    struct stat out_dir;           /* st_ino 0 when it does not exist yet */
    struct stat up[WALK_MAX_DEPTH + 1];
    int depth;
    long dirs;                     /* folders listed */
    long subdirs;                  /* subfolders not walked (no --recursive) */
    long loops;                    /* folders passed over: their own ancestor */
};

static bool same_file(const struct stat *a, const struct stat *b) {
    return a->st_ino && a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Names of dir's entries that the walk takes (not hidden), sorted. */
static int list_names(struct walk *w, const char *dir, struct list *names) {
    DIR *d = opendir(dir);
    if (!d) return cli_usage_error(w->cmd, "cannot list the directory %s: %s", dir, strerror(errno));
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));)
        if (e->d_name[0] != '.' && list_add(names, e->d_name, "", NULL))
            rc = cli_usage_error(w->cmd, "more than %d entries in %s (or out of memory)", MANY_MAX, dir);
    closedir(d);
    if (!rc && names->n) qsort(names->v, (size_t)names->n, sizeof *names->v, cmp_str);   /* path first */
    return rc;
}

static int walk_dir(struct walk *w, struct list *l, const char *dir, const char *rel, const char *cls);

/* One entry of a folder the walk lists: a wanted file, or a subfolder (walked with
 * --recursive, counted otherwise). */
static int walk_entry(struct walk *w, struct list *l, const char *dir, const char *rel, const char *cls,
                      const char *name) {
    char path[LINE_MAX_BYTES], sub[LINE_MAX_BYTES];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", name) >= (int)sizeof sub)
        return cli_usage_error(w->cmd, "a path in %s is longer than %d bytes", dir, LINE_MAX_BYTES - 1);
    if (stat(path, &st)) return 0;
    if (S_ISREG(st.st_mode)) {
        if (wanted(name) && list_add(l, path, sub, cls))
            return cli_usage_error(w->cmd, "more than %d inputs (or out of memory)", MANY_MAX);
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) return 0;
    if (!w->recursive) {
        w->subdirs++;
        return 0;
    }
    if (same_file(&w->out_dir, &st)) return 0;   /* the outputs */
    for (int k = 0; k <= w->depth; k++)
        if (same_file(&w->up[k], &st)) {
            w->loops++;
            return 0;
        }
    if (w->depth == WALK_MAX_DEPTH)
        return cli_usage_error(w->cmd, "%s is more than %d folders deep", path, WALK_MAX_DEPTH);
    w->up[++w->depth] = st;
    const int rc = walk_dir(w, l, path, sub, cls ? cls : name);
    w->depth--;
    return rc;
}

static int walk_dir(struct walk *w, struct list *l, const char *dir, const char *rel, const char *cls) {
    if (++w->dirs > WALK_MAX_DIRS)
        return cli_usage_error(w->cmd, "more than %d folders under the input directories", WALK_MAX_DIRS);
    struct list names = {0};
    int rc = list_names(w, dir, &names);
    for (int i = 0; !rc && i < names.n; i++) rc = walk_entry(w, l, dir, rel, cls, names.v[i].path);
    list_free(&names);
    return rc;
}

/* A DIR argument: its files (and with --recursive its subfolders'), outputs named by
 * their path under it. */
static int add_dir(struct walk *w, struct list *l, const char *dir) {
    struct stat ds;
    if (stat(dir, &ds)) return cli_usage_error(w->cmd, "cannot list the directory %s: %s", dir, strerror(errno));
    if (same_file(&w->out_dir, &ds))
        return cli_usage_error(w->cmd, "%s is both an input directory and the output directory (its outputs would "
                                       "become inputs)", dir);
    w->depth = 0, w->up[0] = ds, w->subdirs = 0;
    const int rc = walk_dir(w, l, dir, "", NULL);
    if (!rc && w->subdirs)
        fprintf(stderr, "jepa %s: %s: %ld subfolder%s not walked (--recursive walks them)\n", w->cmd, dir, w->subdirs,
                w->subdirs == 1 ? "" : "s");
    return rc;
}

static int add_arg(struct walk *w, struct list *l, const char *arg) {
    struct stat st;
    if (!stat(arg, &st) && S_ISDIR(st.st_mode)) return add_dir(w, l, arg);
    if (list_add(l, arg, file_name(arg), NULL))
        return cli_usage_error(w->cmd, "more than %d inputs (or out of memory)", MANY_MAX);
    return 0;
}

static int add_list_file(struct walk *w, struct list *l, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return cli_usage_error(w->cmd, "cannot open the input list %s", path);
    char line[LINE_MAX_BYTES + 2];
    int rc = 0;
    for (long no = 1; !rc && fgets(line, sizeof line, f); no++) {
        size_t n = strlen(line);
        if (n && line[n - 1] != '\n' && !feof(f)) {
            rc = cli_usage_error(w->cmd, "%s line %ld is longer than %d bytes", path, no, LINE_MAX_BYTES);
            break;
        }
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (!n || line[0] == '#') continue;
        rc = add_arg(w, l, line);
    }
    fclose(f);
    return rc;
}

struct file_id {
    dev_t dev;
    ino_t ino;
};

static int cmp_id(const void *a, const void *b) {
    const struct file_id *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* Refuse (usage error) when an output path that exists is one of the inputs: outs[i] for
 * i < in->n is input i's, then n_extra more (the stacked file and its index). */
static int check_no_overwrite(const char *cmd, const struct list *in, char *const *outs,
                              const char *const *extra, int n_extra) {
    struct file_id *ids = malloc(sizeof *ids * (size_t)(in->n ? in->n : 1));
    if (!ids) return cli_fail(NULL, "out of memory");
    int n = 0, rc = 0;
    struct stat st;
    for (int i = 0; i < in->n; i++)
        if (!stat(in->v[i].path, &st)) ids[n++] = (struct file_id){st.st_dev, st.st_ino};
    qsort(ids, (size_t)n, sizeof *ids, cmp_id);
    for (int i = 0; !rc && i < in->n + n_extra; i++) {
        const char *path = i < in->n ? outs[i] : extra[i - in->n];
        if (stat(path, &st)) continue;
        const struct file_id k = {st.st_dev, st.st_ino};
        if (!bsearch(&k, ids, (size_t)n, sizeof *ids, cmp_id)) continue;
        if (i < in->n) rc = cli_usage_error(cmd, "the output %s of %s is one of the inputs", path, in->v[i].path);
        else rc = cli_usage_error(cmd, "the output %s is one of the inputs", path);
    }
    free(ids);
    return rc;
}

/* Why --resume runs an input again (R_KEEP: it does not). */
enum reason { R_KEEP, R_NOT_DONE, R_NO_ROW, R_FAILED, R_FINGERPRINT, R_INPUT, R_OUTPUT, R_N };
static const char *const reason_text[R_N] = {
    "", "not done", "output without an index row", "failed before", "made by another model or options",
    "input changed", "output changed"};
static const char *const reason_key[R_N] = {"kept",   "not_done",      "no_index_row",  "failed_before",
                                            "other_fingerprint", "input_changed", "output_changed"};

/* What the index says of an output: its latest row. */
struct prev {
    bool seen, ok, clip_axis;
    char fp[17];
    char hash[32];
    long long bytes, source_bytes, source_mtime_ns;
};

/* One run over many inputs: the list, where each output goes, what each input gave. */
struct many_state {
    struct list in;
    char dir[LINE_MAX_BYTES];                /* the per-input files, and the appended index */
    char log_path[LINE_MAX_BYTES + 16];      /* dir/index.jsonl */
    char index_path[LINE_MAX_BYTES + 16];    /* the index of the run: log_path, or the stacked file's */
    char **outs;                             /* each input's output path */
    int *status;                             /* 0 ok, 1 kept (--resume), 2 error, 3 not run (stopped) */
    struct many_result *res;
    char **errs;                             /* an error's message */
    struct prev *prev;                       /* --resume: the index's rows */
    int *order;                              /* the inputs by output (rel), for finding rows */
    int64_t *row0, *rows;                    /* stacked: where each input's rows went */
    struct many_fingerprint fp;
    int log_fd;                              /* the appended index (-1: not open) */
    int n_ok, n_skip, n_err, n_reason[R_N];
    int stopped;                             /* the signal that stopped the run, or 0 */
};

/* Stack the outputs of the inputs that succeeded (status 0, or 1: kept by --resume) into
 * o->stack_out: rows of one shape (see the header); row0[i] / rows[i] say where input i
 * went. Two passes over the parts: their shapes (the header needs the row count), then
 * their data, so memory holds one part at a time. */
static int stack_outputs(const struct many_opts *o, const struct many_state *s, int64_t *row0, int64_t *rows) {
    int64_t shape[9] = {0};   /* [total rows, the row's shape] */
    int nd = -1;              /* dimensions of one row */
    struct jerr e = {0};
    struct npy a;
    for (int i = 0; i < s->in.n; i++) {   /* pass 1: shapes */
        row0[i] = rows[i] = 0;
        if (s->status[i] >= 2) continue;
        if (npy_load_f32(&a, s->outs[i], &e)) return cli_fail(NULL, "%s", e.msg);
        const bool by_clip = s->res[i].stacked;   /* a clip axis: one row per clip */
        const int rnd = by_clip ? a.ndim - 1 : a.ndim;
        if (nd < 0 && rnd < 8) {
            nd = rnd;
            for (int k = 0; k < nd; k++) shape[k + 1] = a.shape[a.ndim - nd + k];
        }
        bool same = rnd == nd;
        for (int k = 0; same && k < nd; k++) same = shape[k + 1] == a.shape[a.ndim - nd + k];
        row0[i] = shape[0], rows[i] = by_clip ? a.shape[0] : 1;
        npy_free(&a);
        if (!same)
            return cli_fail(s->outs[i], "the output of %s does not have the rows of the first output: the outputs "
                                        "cannot be stacked into one array (--out-dir writes one file each)",
                            s->in.v[i].path);
        shape[0] += rows[i];
    }
    if (nd < 0) return cli_fail(o->stack_out, "no input succeeded: nothing to stack");
    struct jr_outfile f;
    if (npy_write_f32_begin(&f, o->stack_out, nd + 1, shape, &e)) return cli_fail(NULL, "%s", e.msg);
    for (int i = 0; i < s->in.n; i++) {   /* pass 2: data */
        if (s->status[i] >= 2) continue;
        if (npy_load_f32(&a, s->outs[i], &e)) {
            jr_outfile_abort(&f);
            return cli_fail(NULL, "%s", e.msg);
        }
        int64_t want = rows[i];
        for (int k = 0; k < nd; k++) want *= shape[k + 1];
        const bool ok = a.count == want && fwrite(a.data, sizeof(float), (size_t)a.count, f.f) == (size_t)a.count;
        npy_free(&a);
        if (!ok) {
            jr_outfile_abort(&f);
            return cli_fail(o->stack_out, "cannot write (or %s changed while stacking): %s", s->outs[i],
                            strerror(errno));
        }
    }
    if (jr_outfile_commit(&f, &e)) return cli_fail(NULL, "%s", e.msg);
    return 0;
}

static void many_free(struct many_state *s) {
    for (int i = 0; i < s->in.n; i++) {
        if (s->errs) free(s->errs[i]);
        if (s->outs) free(s->outs[i]);
    }
    if (s->log_fd >= 0) close(s->log_fd);
    free(s->row0), free(s->rows), free(s->outs), free(s->prev), free(s->order);
    free(s->status), free(s->res), free(s->errs);
    list_free(&s->in);
}

/* Where the per-input files go, and the indexes. */
static int output_places(const struct many_opts *o, struct many_state *s) {
    const size_t n = o->stack_out ? strlen(o->stack_out) : 0;
    const bool npy = n > 4 && !strcasecmp(o->stack_out + n - 4, ".npy");
    if ((o->stack_out ? snprintf(s->dir, sizeof s->dir, "%s.parts", o->stack_out)
                      : snprintf(s->dir, sizeof s->dir, "%s", o->out_dir)) >= (int)sizeof s->dir)
        return cli_usage_error(o->cmd, "the output path is longer than %d bytes", LINE_MAX_BYTES - 16);
    snprintf(s->log_path, sizeof s->log_path, "%s/index.jsonl", s->dir);
    if (o->stack_out)
        snprintf(s->index_path, sizeof s->index_path, "%.*s.index.jsonl", (int)(npy ? n - 4 : n), o->stack_out);
    else
        snprintf(s->index_path, sizeof s->index_path, "%s", s->log_path);
    return 0;
}

/* The inputs: the FILE / DIR arguments, then the lines of --inputs. */
static int gather_inputs(const struct many_opts *o, struct many_state *s) {
    struct walk *w = calloc(1, sizeof *w);
    if (!w) return cli_fail(NULL, "out of memory");
    w->cmd = o->cmd, w->recursive = o->recursive;
    if (stat(s->dir, &w->out_dir)) memset(&w->out_dir, 0, sizeof w->out_dir);
    int rc = 0;
    for (int i = 0; !rc && i < o->n_args; i++) rc = add_arg(w, &s->in, o->args[i]);
    if (!rc && o->inputs_list) rc = add_list_file(w, &s->in, o->inputs_list);
    if (!rc && w->loops && !o->quiet)
        fprintf(stderr, "jepa %s: %ld folder%s passed over: a symbolic link to a folder above it\n", o->cmd, w->loops,
                w->loops == 1 ? "" : "s");
    if (!rc && !s->in.n)
        rc = cli_usage_error(o->cmd, "no inputs (a directory lists only images and videos%s)",
                             o->recursive ? "" : "; --recursive walks its subfolders");
    free(w);
    return rc;
}

static int cmp_rel(const void *a, const void *b, const struct list *l) {
    return strcmp(l->v[*(const int *)a].rel, l->v[*(const int *)b].rel);
}

static const struct list *sort_list;   /* qsort's comparator has no user pointer */
static int cmp_order(const void *a, const void *b) { return cmp_rel(a, b, sort_list); }

/* The inputs sorted by output (s->order): one output per input, and the rows of the
 * index found by their output. */
static int name_outputs(const struct many_opts *o, struct many_state *s) {
    const int n = s->in.n;
    if (!(s->order = malloc(sizeof *s->order * (size_t)n))) return cli_fail(NULL, "out of memory");
    for (int i = 0; i < n; i++) s->order[i] = i;
    sort_list = &s->in;
    qsort(s->order, (size_t)n, sizeof *s->order, cmp_order);
    for (int i = 1; i < n; i++)
        if (!strcmp(s->in.v[s->order[i]].rel, s->in.v[s->order[i - 1]].rel))
            return cli_usage_error(o->cmd, "%s and %s would have one output, %s%s", s->in.v[s->order[i - 1]].path,
                                   s->in.v[s->order[i]].path, s->in.v[s->order[i]].rel, o->suffix);
    return 0;
}

/* Every output path, once (at most LINE_MAX_BYTES + 63 bytes). */
static int output_paths(const struct many_opts *o, struct many_state *s) {
    if (!(s->outs = calloc((size_t)s->in.n, sizeof *s->outs))) return cli_fail(NULL, "out of memory");
    for (int i = 0; i < s->in.n; i++) {
        const char *rel = s->in.v[i].rel;
        const size_t len = strlen(s->dir) + strlen(rel) + strlen(o->suffix) + 2;
        if (!rel[0]) return cli_usage_error(o->cmd, "input '%s' has no file name", s->in.v[i].path);
        if (len > LINE_MAX_BYTES + 64)
            return cli_usage_error(o->cmd, "the output path for %s is longer than %d bytes", s->in.v[i].path,
                                   LINE_MAX_BYTES + 63);
        if (!(s->outs[i] = malloc(len))) return cli_fail(NULL, "out of memory");
        snprintf(s->outs[i], len, "%s/%s%s", s->dir, rel, o->suffix);
    }
    return 0;
}

static int make_dir(const char *dir) {
    if (mkdir(dir, 0777) && errno != EEXIST)
        return cli_fail(dir, "cannot create the output directory: %s", strerror(errno));
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) return cli_fail(dir, "not a directory");
    return 0;
}

/* The folders of an output under the output directory (its first `base` bytes), made. */
static int make_parents(const char *out, size_t base) {
    char path[LINE_MAX_BYTES + 64];
    snprintf(path, sizeof path, "%s", out);
    for (char *p = path + base + 1; (p = strchr(p, '/')); *p++ = '/') {
        *p = '\0';
        const int rc = make_dir(path);
        if (rc) return rc;
    }
    return 0;
}

/* The folders make_parents made for an output, removed where empty (deepest first). */
static void remove_parents(const char *out, size_t base) {
    char path[LINE_MAX_BYTES + 64];
    snprintf(path, sizeof path, "%s", out);
    for (char *p; (p = strrchr(path, '/')) && (size_t)(p - path) > base;) {
        *p = '\0';
        if (rmdir(path)) return;
    }
}

/* ---- the index ---- */

struct prev_reader {
    struct many_state *s;
    const char *suffix;   /* a row's output is its input's rel with this */
};

/* One row of the index read back: the latest one of its output wins. */
static void take_row(void *user, const struct many_row *r) {
    struct prev_reader *pr = user;
    struct many_state *s = pr->s;
    const size_t ns = strlen(pr->suffix), no = r->output ? strlen(r->output) : 0;
    if (no <= ns || strcmp(r->output + no - ns, pr->suffix) || no - ns >= LINE_MAX_BYTES) return;
    char rel[LINE_MAX_BYTES];
    memcpy(rel, r->output, no - ns);
    rel[no - ns] = '\0';
    int lo = 0, hi = s->in.n - 1;
    while (lo <= hi) {   /* rel among the inputs sorted by rel */
        const int mid = lo + (hi - lo) / 2, c = strcmp(s->in.v[s->order[mid]].rel, rel);
        if (c < 0) {
            lo = mid + 1;
        } else if (c > 0) {
            hi = mid - 1;
        } else {
            struct prev *p = &s->prev[s->order[mid]];
            *p = (struct prev){.seen = true, .ok = !strcmp(r->status, "ok"), .clip_axis = r->clip_axis,
                               .bytes = r->bytes, .source_bytes = r->source_bytes,
                               .source_mtime_ns = r->source_mtime_ns};
            snprintf(p->fp, sizeof p->fp, "%s", r->fingerprint ? r->fingerprint : "");
            snprintf(p->hash, sizeof p->hash, "%s", r->hash ? r->hash : "");
            return;
        }
    }
}

/* An input's size and mtime (nanoseconds), as its row records them; -1 when it cannot be
 * read (a row that says -1 never matches). */
static void source_stat(const char *path, long long *bytes, long long *mtime_ns) {
    struct stat st;
    *bytes = *mtime_ns = -1;
    if (stat(path, &st) || !S_ISREG(st.st_mode)) return;
    *bytes = (long long)st.st_size;
    *mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

static void hash_text(char *buf, size_t n, uint64_t h) { snprintf(buf, n, "fnv1a64:%016" PRIx64, h); }

/* --resume: why input i runs again (R_KEEP when its output is kept). */
static enum reason resume_reason(const struct many_state *s, int i) {
    const struct prev *p = &s->prev[i];
    struct stat st;
    if (p->seen && !p->ok) return R_FAILED;
    if (stat(s->outs[i], &st) || !S_ISREG(st.st_mode)) return R_NOT_DONE;
    if (!p->seen) return R_NO_ROW;
    if (strcmp(p->fp, s->fp.fp)) return R_FINGERPRINT;
    long long b, m;
    source_stat(s->in.v[i].path, &b, &m);
    if (b < 0 || b != p->source_bytes || m != p->source_mtime_ns) return R_INPUT;
    uint64_t h;
    long long bytes;
    char hash[32];
    if ((long long)st.st_size != p->bytes || many_hash_file(s->outs[i], &h, &bytes)) return R_OUTPUT;
    hash_text(hash, sizeof hash, h);
    return bytes == p->bytes && !strcmp(hash, p->hash) ? R_KEEP : R_OUTPUT;
}

/* --resume: the index's rows, then what is kept and why the rest runs. */
static int resume_plan(const struct many_opts *o, struct many_state *s) {
    if (!(s->prev = calloc((size_t)s->in.n, sizeof *s->prev))) return cli_fail(NULL, "out of memory");
    struct prev_reader pr = {s, o->suffix};
    long unreadable = 0;
    const int rc = many_index_read(s->log_path, take_row, &pr, &unreadable);
    if (rc) return rc;
    if (unreadable && !o->quiet)
        fprintf(stderr, "jepa %s: %s: %ld line%s not read (cut short or not a row of this index)\n", o->cmd,
                s->log_path, unreadable, unreadable == 1 ? "" : "s");
    for (int i = 0; i < s->in.n; i++) {
        const enum reason r = resume_reason(s, i);
        if (r == R_KEEP) s->status[i] = 1, s->res[i].stacked = s->prev[i].clip_axis;
        s->n_reason[r]++;
    }
    return 0;
}

/* A row into the index with one write(2) (a row is whole or absent after a crash), or
 * CLI_EXIT_FAIL after printing. */
static int append_row(struct many_state *s, char *text, size_t n) {
    for (size_t done = 0; done < n;) {
        const ssize_t k = write(s->log_fd, text + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return cli_fail(s->log_path, "cannot append to the index: %s", strerror(errno));
        done += (size_t)k;
    }
    return 0;
}

/* The run's header row: what made the outputs that follow (extra: more fields, or ""). */
static void header_row(FILE *f, const struct many_opts *o, const struct many_state *s, const char *extra) {
    char when[32];
    const time_t t = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    fprintf(f, "{\"run\": {\"jepa\": \"%s\", \"cmd\": \"%s\", \"started\": \"%s\", \"model\": ", jepa_version(),
            o->cmd, when);
    many_json_str(f, o->numbers.model);
    fprintf(f, ", \"model_id\": \"%s\", \"fingerprint\": \"%s\", \"numbers\": %s", s->fp.model_id, s->fp.fp,
            s->fp.numbers);
    if (o->ctx) {
        fputs(", \"device\": ", f);
        many_json_str(f, jepa_ctx_device(o->ctx));
        fprintf(f, ", \"isa\": \"%s\", \"matmul\": \"%s\", \"threads\": %d", jepa_ctx_isa(o->ctx),
                jepa_ctx_matmul_isa(o->ctx), jepa_ctx_threads(o->ctx));
    }
    fprintf(f, ", \"batch\": %d, \"resume\": %s, \"inputs\": %d%s}}\n", o->batch, o->resume ? "true" : "false",
            s->in.n, extra);
}

/* Input i's row. stacked: for the stacked file's index (its row range; an error has no
 * output), else for the per-input files (the output relative to their directory). */
static void index_row(FILE *f, const struct many_opts *o, const struct many_state *s, int i, bool stacked) {
    const int st = s->status[i];
    const struct many_result *r = &s->res[i];
    fputs("{\"source\": ", f);
    many_json_str(f, s->in.v[i].path);
    fputs(", \"output\": ", f);
    if (stacked && st == 2) {
        fputs("null", f);
    } else if (stacked) {
        many_json_str(f, o->stack_out);
        fprintf(f, ", \"row\": %lld, \"rows\": %lld", (long long)s->row0[i], (long long)s->rows[i]);
    } else {
        many_json_str(f, s->outs[i] + strlen(s->dir) + 1);
    }
    fprintf(f, ", \"status\": \"%s\"", st == 2 ? "error" : "ok");
    if (st == 0) fprintf(f, ", \"clips\": %d%s", r->clips, r->stacked ? ", \"clip_axis\": true" : "");
    if (s->in.v[i].cls) {
        fputs(", \"class\": ", f);
        many_json_str(f, s->in.v[i].cls);
    }
    if (st == 0 && r->top1 >= 0) {
        fprintf(f, ", \"top1\": %d, \"p\": %.6f, \"label\": ", r->top1, r->p1);
        many_json_str(f, r->label);
    }
    if (st == 2) {
        fputs(", \"error\": ", f);
        many_json_str(f, s->errs[i]);
    }
    fprintf(f, ", \"fingerprint\": \"%s\"", s->fp.fp);
}

/* Input i's row appended to the index as it finishes: with the output's size and hash and
 * the input's size and mtime, which --resume checks. */
static int log_row(const struct many_opts *o, struct many_state *s, int i, const long long *src) {
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f) return cli_fail(NULL, "out of memory");
    index_row(f, o, s, i, false);
    if (s->status[i] == 0) {
        uint64_t h;
        long long bytes;
        char hash[32];
        if (many_hash_file(s->outs[i], &h, &bytes)) bytes = -1, h = 0;   /* never matches: runs again */
        hash_text(hash, sizeof hash, h);
        fprintf(f, ", \"bytes\": %lld, \"hash\": \"%s\"", bytes, hash);
    }
    fprintf(f, ", \"source_bytes\": %lld, \"source_mtime_ns\": %lld}\n", src[0], src[1]);
    if (fclose(f)) {
        free(text);
        return cli_fail(NULL, "out of memory");
    }
    const int rc = append_row(s, text, n);
    free(text);
    return rc;
}

/* ---- the run ---- */

/* Everything before the first input runs: the list, the output paths (none may be an
 * input), the output directory, the fingerprint, the per-input records, --resume's plan,
 * the index opened for appending and the run's header row. */
static int many_setup(const struct many_opts *o, struct many_state *s) {
    s->log_fd = -1;
    int rc = output_places(o, s);
    if (!rc) rc = gather_inputs(o, s);
    if (!rc) rc = name_outputs(o, s);
    if (!rc) rc = output_paths(o, s);
    const char *const extra[3] = {s->log_path, s->index_path, o->stack_out};   /* may not be inputs either */
    if (!rc) rc = check_no_overwrite(o->cmd, &s->in, s->outs, extra, o->stack_out ? 3 : 1);
    if (!rc) rc = many_fingerprint(&s->fp, &o->numbers);
    if (!rc) rc = make_dir(s->dir);
    if (rc) return rc;
    s->status = calloc((size_t)s->in.n, sizeof *s->status);
    s->res = calloc((size_t)s->in.n, sizeof *s->res);
    s->errs = calloc((size_t)s->in.n, sizeof *s->errs);
    if (!s->status || !s->res || !s->errs) return cli_fail(NULL, "out of memory");
    if (o->resume && (rc = resume_plan(o, s))) return rc;
    s->log_fd = open(s->log_path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (s->log_fd < 0) return cli_fail(s->log_path, "cannot open the index: %s", strerror(errno));
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f) return cli_fail(NULL, "out of memory");
    header_row(f, o, s, "");
    rc = fclose(f) ? cli_fail(NULL, "out of memory") : append_row(s, text, n);
    free(text);
    return rc;
}

/* SIGINT / SIGTERM during the run: the input being run finishes (its output and row
 * written), then the run stops. The handler is reset by the first one, so a second
 * signal ends the process at once (the rows written so far stay). */
static volatile sig_atomic_t many_signal;

static void on_signal(int sig) { many_signal = sig; }

static void catch_signals(struct sigaction *old) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    many_signal = 0;
    sigaction(SIGINT, &sa, &old[0]);
    sigaction(SIGTERM, &sa, &old[1]);
}

static void restore_signals(const struct sigaction *old) {
    sigaction(SIGINT, &old[0], NULL);
    sigaction(SIGTERM, &old[1], NULL);
}

/* The next group of inputs to run from input i (at most o->batch, those --resume does not
 * keep) offered to prefetch: the index after the last one offered. */
static int prefetch_group(const struct many_opts *o, void *user, const struct many_state *s, int i,
                          const char **group) {
    int n = 0, j = i;
    for (; j < s->in.n && n < o->batch; j++)
        if (s->status[j] != 1) group[n++] = s->in.v[j].path;
    o->prefetch(user, group, n);
    return j;
}

/* Input i through `one` (its output's folders made first), and its row. 0, or
 * CLI_EXIT_FAIL when the index cannot be written (the run stops). */
static int run_one(const struct many_opts *o, many_one_fn one, void *user, struct many_state *s, int i) {
    long long src[2];
    source_stat(s->in.v[i].path, &src[0], &src[1]);
    s->res[i].top1 = -1;
    if (make_parents(s->outs[i], strlen(s->dir)) || one(user, s->in.v[i].path, s->outs[i], &s->res[i])) {
        s->status[i] = 2, s->n_err++;
        s->errs[i] = strdup(cli_last_error());
    } else {
        s->n_ok++;
        if (o->verbose) fprintf(stderr, "jepa %s: %s -> %s\n", o->cmd, s->in.v[i].path, s->outs[i]);
    }
    return log_row(o, s, i, src);
}

/* Every input through `one`, in list order, but those --resume keeps; a signal stops the
 * run between two inputs (those not run get status 3). 0, or CLI_EXIT_FAIL when the index
 * cannot be written. */
static int run_each(const struct many_opts *o, many_one_fn one, void *user, struct many_state *s) {
    struct cli_progress pg;
    cli_progress_start(&pg, !o->quiet, "inputs");
    const char **group = o->batch > 1 && o->prefetch ? malloc(sizeof *group * (size_t)o->batch) : NULL;
    int prefetched_to = 0;   /* inputs before this one have been offered to prefetch */
    struct sigaction old[2];
    catch_signals(old);
    int rc = 0, i = 0;
    for (; !rc && !many_signal && i < s->in.n; i++) {
        if (group && i >= prefetched_to && s->status[i] != 1) prefetched_to = prefetch_group(o, user, s, i, group);
        if (s->status[i] == 1) {
            s->n_skip++;
        } else {
            cli_progress_clear(&pg);   /* an error line starts clean */
            rc = run_one(o, one, user, s, i);
            pg.done_run++;
        }
        cli_progress_show(&pg, i + 1, s->in.n, i + 1 == s->in.n || many_signal);
    }
    restore_signals(old);
    for (; i < s->in.n; i++)
        if (s->status[i] != 1) s->status[i] = 3;
    s->stopped = many_signal;
    free(group);
    return rc;
}

/* Stacked: one array of every row, in list order; *ok when it was written. */
static int stack_all(const struct many_opts *o, struct many_state *s, bool *ok) {
    int rc = 0;
    s->row0 = calloc((size_t)s->in.n, sizeof *s->row0), s->rows = calloc((size_t)s->in.n, sizeof *s->rows);
    if (!s->row0 || !s->rows) rc = cli_fail(NULL, "out of memory");
    else if (s->n_ok + s->n_skip) rc = stack_outputs(o, s, s->row0, s->rows);
    *ok = !rc && s->n_ok + s->n_skip > 0;
    return rc;
}

/* The stacked file's index, in list order, written whole or not at all: a header row (as
 * the run's, with the stacked file's size and hash), then one row per input. */
static int write_stacked_index(const struct many_opts *o, const struct many_state *s) {
    uint64_t h;
    long long bytes;
    char hash[32];
    if (many_hash_file(o->stack_out, &h, &bytes)) return cli_fail(o->stack_out, "cannot read back: %s", strerror(errno));
    char extra[96];
    hash_text(hash, sizeof hash, h);
    snprintf(extra, sizeof extra, ", \"bytes\": %lld, \"hash\": \"%s\"", bytes, hash);
    struct jr_outfile f;
    struct jerr e = {0};
    if (jr_outfile_open(&f, s->index_path, false, &e)) return cli_fail(NULL, "%s", e.msg);
    header_row(f.f, o, s, extra);
    for (int i = 0; i < s->in.n; i++) {
        index_row(f.f, o, s, i, true);
        fputs("}\n", f.f);
    }
    if (jr_outfile_commit(&f, &e)) return cli_fail(NULL, "%s", e.msg);
    return 0;
}

/* --json: the summary as one object on stdout, the counts of the text line: {"cmd",
 * "inputs", "written", "failed", "kept" (by --resume), "run_again": {reason: count} (with
 * --resume, every reason), "stopped": "SIGINT" | "SIGTERM" | null, "not_run", "output"
 * (the stacked file, or null), "rows" (its rows; null when none was written), "parts_kept"
 * (stacked: the parts stay for --resume), "index"}. */
static void summary_json(const struct many_opts *o, const struct many_state *s, bool stacked, bool indexed,
                         int64_t total_rows, int not_run) {
    printf("{\"cmd\": ");
    cli_json_str(stdout, o->cmd);
    printf(", \"inputs\": %d, \"written\": %d, \"failed\": %d, \"kept\": %d", s->in.n, s->n_ok, s->n_err,
           o->resume ? s->n_reason[R_KEEP] : 0);
    if (o->resume) {
        printf(", \"run_again\": {");
        for (int r = 1; r < R_N; r++) printf("%s\"%s\": %d", r > 1 ? ", " : "", reason_key[r], s->n_reason[r]);
        printf("}");
    }
    printf(", \"stopped\": %s, \"not_run\": %d, \"output\": ",
           !s->stopped ? "null" : s->stopped == SIGINT ? "\"SIGINT\"" : "\"SIGTERM\"", not_run);
    if (o->stack_out) cli_json_str(stdout, o->stack_out);
    else printf("null");
    if (o->stack_out && stacked && !s->stopped) printf(", \"rows\": %lld", (long long)total_rows);
    else printf(", \"rows\": null");
    printf(", \"parts_kept\": %s, \"index\": ", o->stack_out && (!stacked || s->n_err) ? "true" : "false");
    cli_json_str(stdout, !s->stopped && indexed ? s->index_path : s->log_path);
    printf("}\n");
    fflush(stdout);
}

/* The last line on stderr: what became of the inputs, what --resume kept and why it ran
 * the others, and a stop by a signal; with --json, summary_json instead. */
static void print_summary(const struct many_opts *o, const struct many_state *s, bool stacked, bool indexed) {
    int64_t total_rows = 0;
    int not_run = 0;
    for (int i = 0; s->rows && i < s->in.n; i++) total_rows += s->rows[i];
    for (int i = 0; s->status && i < s->in.n; i++) not_run += s->status[i] == 3;
    if (o->json) {
        summary_json(o, s, stacked, indexed, total_rows, not_run);
        return;
    }
    fprintf(stderr, "jepa %s: %d inputs: %d written, %d failed", o->cmd, s->in.n, s->n_ok, s->n_err);
    if (o->resume) {
        const int again = s->in.n - s->n_reason[R_KEEP];
        fprintf(stderr, ", %d kept by --resume (%d to run again", s->n_reason[R_KEEP], again);
        for (int r = 1, first = 1; r < R_N; r++)
            if (s->n_reason[r]) fprintf(stderr, "%s %d %s", first ? ":" : ",", s->n_reason[r], reason_text[r]), first = 0;
        fputc(')', stderr);
    }
    if (s->stopped) {
        fprintf(stderr, "; stopped by %s with %d not run (--resume runs them); index %s\n",
                s->stopped == SIGINT ? "SIGINT" : "SIGTERM", not_run, s->log_path);
    } else if (o->stack_out && stacked) {
        fprintf(stderr, "; %lld rows in %s, index %s%s\n", (long long)total_rows, o->stack_out, s->index_path,
                s->n_err ? "; the parts stay for --resume" : "");
    } else {
        fprintf(stderr, "; index %s\n", indexed ? s->index_path : s->log_path);
    }
}

int run_many(const struct many_opts *o, many_one_fn one, void *user) {
    struct many_state s = {0};
    int rc = many_setup(o, &s);
    if (rc) {
        many_free(&s);
        return rc;
    }
    rc = run_each(o, one, user, &s);
    if (rc || s.stopped) {
        print_summary(o, &s, false, false);
        many_free(&s);
        return rc ? rc : 128 + s.stopped;
    }
    bool stacked_ok = false;
    if (o->stack_out) rc = stack_all(o, &s, &stacked_ok);
    if (stacked_ok) rc = write_stacked_index(o, &s);
    /* the parts go once the stacked file and its index are written and nothing failed
     * (otherwise --resume reruns only the failures) */
    if (o->stack_out && stacked_ok && !rc && !s.n_err) {
        for (int i = 0; i < s.in.n; i++) unlink(s.outs[i]);
        unlink(s.log_path);
        for (int i = 0; i < s.in.n; i++) remove_parents(s.outs[i], strlen(s.dir));
        rmdir(s.dir);   /* left when something else is in it */
    }
    if (s.n_err || !o->quiet || o->json) print_summary(o, &s, o->stack_out && stacked_ok && !rc, !o->stack_out || stacked_ok);
    const int n_err = s.n_err;
    many_free(&s);
    return rc ? rc : n_err ? CLI_EXIT_FAIL : 0;
}
