/*
 * run_many.c — see run_many.h. Tested by tests/input/test_cli_input.sh.
 *
 * The list: each FILE argument is one input; a DIR argument stands for its regular files
 * whose names end in an image or video extension (not recursive), in byte order of their
 * names; --inputs LIST.txt adds one path per line (blank lines and lines starting with #
 * skipped). At most MANY_MAX inputs. Each output is OUT_DIR/<the input's file name><suffix>
 * (photo.jpg -> photo.jpg.npy); two inputs with one file name are refused before anything
 * runs. Outputs are written atomically by the per-input step, so an output that exists is
 * complete: --resume skips it. OUT_DIR/index.jsonl (written at the end, atomically) has
 * one JSON line per input, in list order: source, output, status ("ok", "skipped",
 * "error"), clips, and the error's reason or classify's top class.
 *
 * Stacked (-o FEATS.npy / --logits-out L.npy): the same run into FEATS.npy.parts/, then one
 * array: each output is one row (a clip's [D], or [N, D] of tokens), or one row per clip
 * when it has a clip axis (a video's --num-clips / --dense clips); every row must have the
 * same shape. FEATS.index.jsonl gives each input's first row and row count. The parts are
 * removed once the stacked file is written and no input failed; otherwise they stay, so
 * that --resume reruns only what failed. Named .npy inputs are uint8 frame arrays
 * [T, H, W, 3] (a DIR listing leaves .npy files out); an output that would replace an
 * input, or an output directory that is also an input directory, is refused before
 * anything runs.
 */
#include "cli/run_many.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "input/npy.h"
#include "runtime/outfile.h"

#define MANY_MAX 1000000
#define LINE_MAX_BYTES 4096

struct list {
    char **v;
    int n, cap;
};

static int list_add(struct list *l, const char *s) {
    if (l->n == MANY_MAX) return -1;
    if (l->n == l->cap) {
        const int cap = l->cap ? 2 * l->cap : 64;
        char **v = realloc(l->v, sizeof(char *) * (size_t)cap);
        if (!v) return -1;
        l->v = v, l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(s))) return -1;
    l->n++;
    return 0;
}

static void list_free(struct list *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
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

/* The output directory when it exists (st_ino 0 otherwise): a DIR input may not be it. */
static struct stat out_dir_st;

static int add_dir(struct list *l, const char *cmd, const char *dir) {
    struct stat ds;
    if (out_dir_st.st_ino && !stat(dir, &ds) && ds.st_dev == out_dir_st.st_dev && ds.st_ino == out_dir_st.st_ino)
        return cli_usage_error(cmd, "%s is both an input directory and the output directory (its outputs would "
                                    "become inputs)", dir);
    DIR *d = opendir(dir);
    if (!d) return cli_usage_error(cmd, "cannot list the directory %s: %s", dir, strerror(errno));
    struct list found = {0};
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (e->d_name[0] == '.' || !wanted(e->d_name)) continue;
        char path[LINE_MAX_BYTES];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) {
            rc = cli_usage_error(cmd, "a path in %s is longer than %d bytes", dir, LINE_MAX_BYTES - 1);
            break;
        }
        if (stat(path, &st) || !S_ISREG(st.st_mode)) continue;
        if (list_add(&found, path)) rc = cli_usage_error(cmd, "more than %d inputs (or out of memory)", MANY_MAX);
    }
    closedir(d);
    if (found.n) qsort(found.v, (size_t)found.n, sizeof *found.v, cmp_str);
    for (int i = 0; !rc && i < found.n; i++)
        if (list_add(l, found.v[i])) rc = cli_usage_error(cmd, "more than %d inputs (or out of memory)", MANY_MAX);
    list_free(&found);
    return rc;
}

static int add_arg(struct list *l, const char *cmd, const char *arg) {
    struct stat st;
    if (!stat(arg, &st) && S_ISDIR(st.st_mode)) return add_dir(l, cmd, arg);
    if (list_add(l, arg)) return cli_usage_error(cmd, "more than %d inputs (or out of memory)", MANY_MAX);
    return 0;
}

static int add_list_file(struct list *l, const char *cmd, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return cli_usage_error(cmd, "cannot open the input list %s", path);
    char line[LINE_MAX_BYTES + 2];
    int rc = 0;
    for (long no = 1; !rc && fgets(line, sizeof line, f); no++) {
        size_t n = strlen(line);
        if (n && line[n - 1] != '\n' && !feof(f)) {
            rc = cli_usage_error(cmd, "%s line %ld is longer than %d bytes", path, no, LINE_MAX_BYTES);
            break;
        }
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (!n || line[0] == '#') continue;
        rc = add_arg(l, cmd, line);
    }
    fclose(f);
    return rc;
}

/* s as a JSON string (quotes included) into f: ", \ and control bytes escaped. */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
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
        if (!stat(in->v[i], &st)) ids[n++] = (struct file_id){st.st_dev, st.st_ino};
    qsort(ids, (size_t)n, sizeof *ids, cmp_id);
    for (int i = 0; !rc && i < in->n + n_extra; i++) {
        const char *path = i < in->n ? outs[i] : extra[i - in->n];
        if (stat(path, &st)) continue;
        const struct file_id k = {st.st_dev, st.st_ino};
        if (!bsearch(&k, ids, (size_t)n, sizeof *ids, cmp_id)) continue;
        if (i < in->n) rc = cli_usage_error(cmd, "the output %s of %s is one of the inputs", path, in->v[i]);
        else rc = cli_usage_error(cmd, "the output %s is one of the inputs", path);
    }
    free(ids);
    return rc;
}

/* Stack the outputs of the inputs that succeeded (status 0, or 1: kept by --resume) into
 * o->stack_out: rows of one shape (see the header); row0[i] / rows[i] say where input i
 * went. Two passes over the parts: their shapes (the header needs the row count), then
 * their data, so memory holds one part at a time. */
static int stack_outputs(const struct many_opts *o, const struct list *in, char *const *outs, const int *status,
                         const struct many_result *res, int64_t *row0, int64_t *rows) {
    int64_t shape[9] = {0};   /* [total rows, the row's shape] */
    int nd = -1;              /* dimensions of one row */
    struct jerr e = {0};
    struct npy a;
    for (int i = 0; i < in->n; i++) {   /* pass 1: shapes */
        row0[i] = rows[i] = 0;
        if (status[i] == 2) continue;
        if (npy_load_f32(&a, outs[i], &e)) return cli_fail(NULL, "%s", e.msg);
        /* an output with a clip axis gives one row per clip; a resumed part (status 1) is
         * read as the others were: one dimension more than theirs is a clip axis */
        const bool by_clip = status[i] == 0 ? res[i].stacked : nd >= 0 && a.ndim == nd + 1;
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
            return cli_fail(outs[i], "the output of %s does not have the rows of the first output: the outputs "
                                     "cannot be stacked into one array (--out-dir writes one file each)", in->v[i]);
        shape[0] += rows[i];
    }
    if (nd < 0) return cli_fail(o->stack_out, "no input succeeded: nothing to stack");
    struct jr_outfile f;
    if (npy_write_f32_begin(&f, o->stack_out, nd + 1, shape, &e)) return cli_fail(NULL, "%s", e.msg);
    for (int i = 0; i < in->n; i++) {   /* pass 2: data */
        if (status[i] == 2) continue;
        if (npy_load_f32(&a, outs[i], &e)) {
            jr_outfile_abort(&f);
            return cli_fail(NULL, "%s", e.msg);
        }
        int64_t want = rows[i];
        for (int k = 0; k < nd; k++) want *= shape[k + 1];
        const bool ok = a.count == want && fwrite(a.data, sizeof(float), (size_t)a.count, f.f) == (size_t)a.count;
        npy_free(&a);
        if (!ok) {
            jr_outfile_abort(&f);
            return cli_fail(o->stack_out, "cannot write (or %s changed while stacking): %s", outs[i], strerror(errno));
        }
    }
    if (jr_outfile_commit(&f, &e)) return cli_fail(NULL, "%s", e.msg);
    return 0;
}

/* One run over many inputs: the list, where each output goes, what each input gave. */
struct many_state {
    struct list in;
    char dir[LINE_MAX_BYTES];                /* the per-input files */
    char index_path[LINE_MAX_BYTES + 16];
    const char **names;                      /* each input's file name (into in.v) */
    char **outs;                             /* each input's output path */
    int *status;                             /* 0 ok, 1 skipped (--resume), 2 error */
    struct many_result *res;
    char **errs;                             /* an error's message */
    int64_t *row0, *rows;                    /* stacked: where each input's rows went */
    int n_ok, n_skip, n_err;
};

static void many_free(struct many_state *s) {
    for (int i = 0; i < s->in.n; i++) {
        if (s->errs) free(s->errs[i]);
        if (s->outs) free(s->outs[i]);
    }
    free(s->row0), free(s->rows), free(s->outs);
    free(s->names), free(s->status), free(s->res), free(s->errs);
    list_free(&s->in);
}

/* Where the per-input files go, and the index. */
static int output_places(const struct many_opts *o, struct many_state *s) {
    if (o->stack_out) {
        const size_t n = strlen(o->stack_out);
        const bool npy = n > 4 && !strcasecmp(o->stack_out + n - 4, ".npy");
        if (snprintf(s->dir, sizeof s->dir, "%s.parts", o->stack_out) >= (int)sizeof s->dir ||
            snprintf(s->index_path, sizeof s->index_path, "%.*s.index.jsonl", (int)(npy ? n - 4 : n),
                     o->stack_out) >= (int)sizeof s->index_path)
            return cli_usage_error(o->cmd, "the output path is longer than %d bytes", LINE_MAX_BYTES - 16);
    } else if (snprintf(s->dir, sizeof s->dir, "%s", o->out_dir) >= (int)sizeof s->dir ||
               snprintf(s->index_path, sizeof s->index_path, "%s/index.jsonl", o->out_dir) >=
                   (int)sizeof s->index_path) {
        return cli_usage_error(o->cmd, "the output directory's path is longer than %d bytes", LINE_MAX_BYTES - 16);
    }
    return 0;
}

/* The inputs: the FILE / DIR arguments, then the lines of --inputs. */
static int gather_inputs(const struct many_opts *o, struct many_state *s) {
    int rc = 0;
    if (stat(s->dir, &out_dir_st)) memset(&out_dir_st, 0, sizeof out_dir_st);
    for (int i = 0; !rc && i < o->n_args; i++) rc = add_arg(&s->in, o->cmd, o->args[i]);
    if (!rc && o->inputs_list) rc = add_list_file(&s->in, o->cmd, o->inputs_list);
    if (!rc && !s->in.n) rc = cli_usage_error(o->cmd, "no inputs (a directory lists only images and videos)");
    return rc;
}

/* Each input's file name, which names its output: one output name per input. */
static int name_outputs(const struct many_opts *o, struct many_state *s) {
    const int n = s->in.n;
    if (!(s->names = malloc(sizeof(char *) * (size_t)n))) return cli_fail(NULL, "out of memory");
    for (int i = 0; i < n; i++) s->names[i] = file_name(s->in.v[i]);
    const char **sorted = malloc(sizeof(char *) * (size_t)n);
    if (!sorted) return cli_fail(NULL, "out of memory");
    memcpy(sorted, s->names, sizeof(char *) * (size_t)n);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_str);
    int rc = 0;
    for (int i = 1; !rc && i < n; i++)
        if (!strcmp(sorted[i], sorted[i - 1]))
            rc = cli_usage_error(o->cmd, "two inputs are named %s: their outputs would be one file", sorted[i]);
    free(sorted);
    return rc;
}

/* Every output path, once (at most LINE_MAX_BYTES + 63 bytes). */
static int output_paths(const struct many_opts *o, struct many_state *s) {
    if (!(s->outs = calloc((size_t)s->in.n, sizeof *s->outs))) return cli_fail(NULL, "out of memory");
    for (int i = 0; i < s->in.n; i++) {
        const size_t len = strlen(s->dir) + strlen(s->names[i]) + strlen(o->suffix) + 2;
        if (!s->names[i][0]) return cli_usage_error(o->cmd, "input '%s' has no file name", s->in.v[i]);
        if (len > LINE_MAX_BYTES + 64)
            return cli_usage_error(o->cmd, "the output path for %s is longer than %d bytes", s->in.v[i],
                                   LINE_MAX_BYTES + 63);
        if (!(s->outs[i] = malloc(len))) return cli_fail(NULL, "out of memory");
        snprintf(s->outs[i], len, "%s/%s%s", s->dir, s->names[i], o->suffix);
    }
    return 0;
}

static int make_output_dir(const char *dir) {
    if (mkdir(dir, 0777) && errno != EEXIST)
        return cli_fail(dir, "cannot create the output directory: %s", strerror(errno));
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) return cli_fail(dir, "not a directory");
    return 0;
}

/* Everything before the first input runs: the list, the output paths (none may be an
 * input), the output directory, the per-input records. */
static int many_setup(const struct many_opts *o, struct many_state *s) {
    int rc = output_places(o, s);
    if (!rc) rc = gather_inputs(o, s);
    if (!rc) rc = name_outputs(o, s);
    if (!rc) rc = output_paths(o, s);
    const char *const extra[2] = {s->index_path, o->stack_out};   /* may not be inputs either */
    if (!rc) rc = check_no_overwrite(o->cmd, &s->in, s->outs, extra, o->stack_out ? 2 : 1);
    if (!rc) rc = make_output_dir(s->dir);
    if (rc) return rc;
    s->status = calloc((size_t)s->in.n, sizeof *s->status);
    s->res = calloc((size_t)s->in.n, sizeof *s->res);
    s->errs = calloc((size_t)s->in.n, sizeof *s->errs);
    if (!s->status || !s->res || !s->errs) return cli_fail(NULL, "out of memory");
    return 0;
}

/* The next group of inputs to run from input i (at most o->batch, those --resume does not
 * skip) offered to prefetch: the index after the last one offered. */
static int prefetch_group(const struct many_opts *o, void *user, const struct many_state *s, int i,
                          const char **group) {
    int n = 0, j = i;
    for (; j < s->in.n && n < o->batch; j++)
        if (s->status[j] != 1) group[n++] = s->in.v[j];
    o->prefetch(user, group, n);
    return j;
}

/* Every input through `one`, in list order, but those --resume skips. */
static void run_each(const struct many_opts *o, many_one_fn one, void *user, struct many_state *s) {
    struct cli_progress pg;
    cli_progress_start(&pg, !o->quiet, "inputs");
    for (int i = 0; i < s->in.n; i++) {   /* --resume: what is done already */
        struct stat st;
        if (o->resume && !stat(s->outs[i], &st) && S_ISREG(st.st_mode)) s->status[i] = 1;
    }
    const char **group = o->batch > 1 && o->prefetch ? malloc(sizeof *group * (size_t)o->batch) : NULL;
    int prefetched_to = 0;   /* inputs before this one have been offered to prefetch */
    for (int i = 0; i < s->in.n; i++) {
        if (group && i >= prefetched_to && s->status[i] != 1) prefetched_to = prefetch_group(o, user, s, i, group);
        if (s->status[i] == 1) {
            s->n_skip++;
        } else {
            s->res[i].top1 = -1;
            cli_progress_clear(&pg);   /* an error line starts clean */
            if (one(user, s->in.v[i], s->outs[i], &s->res[i])) {
                s->status[i] = 2, s->n_err++;
                s->errs[i] = strdup(cli_last_error());
            } else {
                s->n_ok++;
                if (o->verbose) fprintf(stderr, "jepa %s: %s -> %s\n", o->cmd, s->in.v[i], s->outs[i]);
            }
            pg.done_run++;
        }
        cli_progress_show(&pg, i + 1, s->in.n, i + 1 == s->in.n);
    }
    free(group);
}

/* Stacked: one array of every row, in list order; *ok when it was written. */
static int stack_all(const struct many_opts *o, struct many_state *s, bool *ok) {
    int rc = 0;
    s->row0 = calloc((size_t)s->in.n, sizeof *s->row0), s->rows = calloc((size_t)s->in.n, sizeof *s->rows);
    if (!s->row0 || !s->rows) rc = cli_fail(NULL, "out of memory");
    else if (s->n_ok + s->n_skip) rc = stack_outputs(o, &s->in, s->outs, s->status, s->res, s->row0, s->rows);
    *ok = !rc && s->n_ok + s->n_skip > 0;
    return rc;
}

/* Input i's line of the index. */
static void index_line(FILE *f, const struct many_opts *o, const struct many_state *s, int i) {
    static const char *const word[] = {"ok", "skipped", "error"};
    const int st = s->status[i];
    fputs("{\"source\": ", f);
    json_str(f, s->in.v[i]);
    fputs(", \"output\": ", f);
    if (st == 2) fputs("null", f);
    else json_str(f, o->stack_out ? o->stack_out : s->outs[i]);
    if (o->stack_out && st != 2)
        fprintf(f, ", \"row\": %lld, \"rows\": %lld", (long long)s->row0[i], (long long)s->rows[i]);
    fprintf(f, ", \"status\": \"%s\"", word[st]);
    if (st == 0) fprintf(f, ", \"clips\": %d", s->res[i].clips);
    if (st == 0 && s->res[i].top1 >= 0) {
        fprintf(f, ", \"top1\": %d, \"p\": %.6f, \"label\": ", s->res[i].top1, s->res[i].p1);
        json_str(f, s->res[i].label);
    }
    if (st == 2) {
        fputs(", \"error\": ", f);
        json_str(f, s->errs[i]);
    }
    fputs("}\n", f);
}

/* The index, in list order, written whole or not at all. */
static int write_index(const struct many_opts *o, const struct many_state *s) {
    struct jr_outfile f;
    struct jerr e = {0};
    if (jr_outfile_open(&f, s->index_path, false, &e)) return cli_fail(NULL, "%s", e.msg);
    for (int i = 0; i < s->in.n; i++) index_line(f.f, o, s, i);
    if (jr_outfile_commit(&f, &e)) return cli_fail(NULL, "%s", e.msg);
    return 0;
}

/* The last line on stderr: what became of the inputs. */
static void print_summary(const struct many_opts *o, const struct many_state *s, bool stacked, bool indexed) {
    int64_t total_rows = 0;
    for (int i = 0; s->rows && i < s->in.n; i++) total_rows += s->rows[i];
    if (stacked)
        fprintf(stderr, "jepa %s: %d inputs: %d written, %d skipped (--resume), %d failed; %lld rows in %s, "
                "index %s%s\n", o->cmd, s->in.n, s->n_ok, s->n_skip, s->n_err, (long long)total_rows, o->stack_out,
                s->index_path, s->n_err ? "; the parts stay for --resume" : "");
    else
        fprintf(stderr, "jepa %s: %d inputs: %d written, %d skipped (--resume), %d failed; index %s\n", o->cmd,
                s->in.n, s->n_ok, s->n_skip, s->n_err, indexed ? s->index_path : "(none: nothing stacked)");
}

int run_many(const struct many_opts *o, many_one_fn one, void *user) {
    struct many_state s = {0};
    int rc = many_setup(o, &s);
    if (rc) {
        many_free(&s);
        return rc;
    }
    run_each(o, one, user, &s);
    bool stacked_ok = false;
    if (o->stack_out) rc = stack_all(o, &s, &stacked_ok);
    const bool indexed = !o->stack_out || stacked_ok;   /* stacked: only beside a stacked file */
    if (indexed) rc = write_index(o, &s);
    /* the parts go once the stacked file and its index are written and nothing failed
     * (otherwise --resume reruns only the failures) */
    if (o->stack_out && stacked_ok && !rc && !s.n_err) {
        for (int i = 0; i < s.in.n; i++) unlink(s.outs[i]);
        rmdir(s.dir);   /* left when something else is in it */
    }
    if (s.n_err || !o->quiet) print_summary(o, &s, o->stack_out && stacked_ok && !rc, indexed);
    const int n_err = s.n_err;
    many_free(&s);
    return rc ? rc : n_err ? CLI_EXIT_FAIL : 0;
}
