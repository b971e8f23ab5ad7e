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

int run_many(const struct many_opts *o, many_one_fn one, void *user) {
    struct list in = {0};
    int rc = 0;
    /* where the per-input files go, and the index */
    char dir[LINE_MAX_BYTES], index_path[LINE_MAX_BYTES + 16];
    if (o->stack_out) {
        const size_t n = strlen(o->stack_out);
        const bool npy = n > 4 && !strcasecmp(o->stack_out + n - 4, ".npy");
        if (snprintf(dir, sizeof dir, "%s.parts", o->stack_out) >= (int)sizeof dir ||
            snprintf(index_path, sizeof index_path, "%.*s.index.jsonl", (int)(npy ? n - 4 : n), o->stack_out) >=
                (int)sizeof index_path)
            return cli_usage_error(o->cmd, "the output path is longer than %d bytes", LINE_MAX_BYTES - 16);
    } else if (snprintf(dir, sizeof dir, "%s", o->out_dir) >= (int)sizeof dir ||
               snprintf(index_path, sizeof index_path, "%s/index.jsonl", o->out_dir) >= (int)sizeof index_path) {
        return cli_usage_error(o->cmd, "the output directory's path is longer than %d bytes", LINE_MAX_BYTES - 16);
    }
    if (stat(dir, &out_dir_st)) memset(&out_dir_st, 0, sizeof out_dir_st);
    for (int i = 0; !rc && i < o->n_args; i++) rc = add_arg(&in, o->cmd, o->args[i]);
    if (!rc && o->inputs_list) rc = add_list_file(&in, o->cmd, o->inputs_list);
    if (!rc && !in.n) rc = cli_usage_error(o->cmd, "no inputs (a directory lists only images and videos)");
    /* one output name per input */
    char **names = NULL;
    if (!rc) {
        names = malloc(sizeof(char *) * (size_t)in.n);
        if (!names) rc = cli_fail(NULL, "out of memory");
        for (int i = 0; !rc && i < in.n; i++) names[i] = (char *)file_name(in.v[i]);
        if (!rc) {
            char **sorted = malloc(sizeof(char *) * (size_t)in.n);
            if (!sorted) rc = cli_fail(NULL, "out of memory");
            else {
                memcpy(sorted, names, sizeof(char *) * (size_t)in.n);
                qsort(sorted, (size_t)in.n, sizeof *sorted, cmp_str);
                for (int i = 1; !rc && i < in.n; i++)
                    if (!strcmp(sorted[i], sorted[i - 1]))
                        rc = cli_usage_error(o->cmd, "two inputs are named %s: their outputs would be one file",
                                             sorted[i]);
                free(sorted);
            }
        }
    }
    /* every output path, once (at most LINE_MAX_BYTES + 63 bytes) */
    char **outs = rc ? NULL : calloc((size_t)in.n, sizeof *outs);
    if (!rc && !outs) rc = cli_fail(NULL, "out of memory");
    for (int i = 0; !rc && i < in.n; i++) {
        const size_t len = strlen(dir) + strlen(names[i]) + strlen(o->suffix) + 2;
        if (!names[i][0]) rc = cli_usage_error(o->cmd, "input '%s' has no file name", in.v[i]);
        else if (len > LINE_MAX_BYTES + 64)
            rc = cli_usage_error(o->cmd, "the output path for %s is longer than %d bytes", in.v[i], LINE_MAX_BYTES + 63);
        else if (!(outs[i] = malloc(len))) rc = cli_fail(NULL, "out of memory");
        else snprintf(outs[i], len, "%s/%s%s", dir, names[i], o->suffix);
    }
    const char *const extra[2] = {index_path, o->stack_out};   /* may not be inputs either */
    if (!rc) rc = check_no_overwrite(o->cmd, &in, outs, extra, o->stack_out ? 2 : 1);
    if (!rc && mkdir(dir, 0777) && errno != EEXIST)
        rc = cli_fail(dir, "cannot create the output directory: %s", strerror(errno));
    struct stat dst;
    if (!rc && (stat(dir, &dst) || !S_ISDIR(dst.st_mode)))
        rc = cli_fail(dir, "not a directory");
    int *status = rc ? NULL : calloc((size_t)in.n, sizeof *status);   /* 0 ok, 1 skipped, 2 error */
    struct many_result *res = rc ? NULL : calloc((size_t)in.n, sizeof *res);
    char **errs = rc ? NULL : calloc((size_t)in.n, sizeof *errs);
    if (!rc && (!status || !res || !errs)) rc = cli_fail(NULL, "out of memory");
    if (rc) {
        for (int i = 0; outs && i < in.n; i++) free(outs[i]);
        free(outs), free(names), free(status), free(res), free(errs);
        list_free(&in);
        return rc;
    }

    struct cli_progress pg;
    cli_progress_start(&pg, !o->quiet, "inputs");
    int n_ok = 0, n_skip = 0, n_err = 0;
    for (int i = 0; i < in.n; i++) {   /* --resume: what is done already */
        struct stat st;
        if (o->resume && !stat(outs[i], &st) && S_ISREG(st.st_mode)) status[i] = 1;
    }
    const char **group = o->batch > 1 && o->prefetch ? malloc(sizeof *group * (size_t)o->batch) : NULL;
    int prefetched_to = 0;   /* inputs before this one have been offered to prefetch */
    for (int i = 0; i < in.n; i++) {
        if (group && i >= prefetched_to && status[i] != 1) {   /* the next group of inputs to run */
            int n = 0, j = i;
            for (; j < in.n && n < o->batch; j++)
                if (status[j] != 1) group[n++] = in.v[j];
            prefetched_to = j;
            o->prefetch(user, group, n);
        }
        const char *out = outs[i];
        if (status[i] == 1) {
            n_skip++;
        } else {
            res[i].top1 = -1;
            cli_progress_clear(&pg);   /* an error line starts clean */
            if (one(user, in.v[i], out, &res[i])) {
                status[i] = 2, n_err++;
                errs[i] = strdup(cli_last_error());
            } else {
                n_ok++;
                if (o->verbose) fprintf(stderr, "jepa %s: %s -> %s\n", o->cmd, in.v[i], out);
            }
            pg.done_run++;
        }
        cli_progress_show(&pg, i + 1, in.n, i + 1 == in.n);
    }

    free(group);

    /* stacked: one array of every row, in list order */
    int64_t *row0 = NULL, *rows = NULL;
    bool stacked_ok = false;
    if (o->stack_out) {
        row0 = calloc((size_t)in.n, sizeof *row0), rows = calloc((size_t)in.n, sizeof *rows);
        if (!row0 || !rows) rc = cli_fail(NULL, "out of memory");
        else if (n_ok + n_skip) rc = stack_outputs(o, &in, outs, status, res, row0, rows);
        stacked_ok = !rc && n_ok + n_skip > 0;
    }
    /* the index, in list order (stacked: only beside a stacked file) */
    const bool write_index = !o->stack_out || stacked_ok;
    struct jr_outfile f;
    struct jerr e = {0};
    if (write_index && jr_outfile_open(&f, index_path, false, &e)) {
        rc = cli_fail(NULL, "%s", e.msg);
    } else if (write_index) {
        static const char *const word[] = {"ok", "skipped", "error"};
        for (int i = 0; i < in.n; i++) {
            fputs("{\"source\": ", f.f);
            json_str(f.f, in.v[i]);
            fputs(", \"output\": ", f.f);
            if (status[i] == 2) fputs("null", f.f);
            else json_str(f.f, o->stack_out ? o->stack_out : outs[i]);
            if (o->stack_out && status[i] != 2)
                fprintf(f.f, ", \"row\": %lld, \"rows\": %lld", (long long)row0[i], (long long)rows[i]);
            fprintf(f.f, ", \"status\": \"%s\"", word[status[i]]);
            if (status[i] == 0) fprintf(f.f, ", \"clips\": %d", res[i].clips);
            if (status[i] == 0 && res[i].top1 >= 0) {
                fprintf(f.f, ", \"top1\": %d, \"p\": %.6f, \"label\": ", res[i].top1, res[i].p1);
                json_str(f.f, res[i].label);
            }
            if (status[i] == 2) {
                fputs(", \"error\": ", f.f);
                json_str(f.f, errs[i]);
            }
            fputs("}\n", f.f);
        }
        if (jr_outfile_commit(&f, &e)) rc = cli_fail(NULL, "%s", e.msg);
    }
    /* the parts go once the stacked file and its index are written and nothing failed
     * (otherwise --resume reruns only the failures) */
    if (o->stack_out && stacked_ok && !rc && !n_err) {
        for (int i = 0; i < in.n; i++) unlink(outs[i]);
        rmdir(dir);   /* left when something else is in it */
    }
    int64_t total_rows = 0;
    for (int i = 0; rows && i < in.n; i++) total_rows += rows[i];
    if (n_err || !o->quiet) {
        if (o->stack_out && stacked_ok && !rc)
            fprintf(stderr, "jepa %s: %d inputs: %d written, %d skipped (--resume), %d failed; %lld rows in %s, "
                    "index %s%s\n", o->cmd, in.n, n_ok, n_skip, n_err, (long long)total_rows, o->stack_out, index_path, n_err ? "; the parts stay for --resume" : "");
        else
            fprintf(stderr, "jepa %s: %d inputs: %d written, %d skipped (--resume), %d failed; index %s\n", o->cmd,
                    in.n, n_ok, n_skip, n_err, write_index ? index_path : "(none: nothing stacked)");
    }
    for (int i = 0; i < in.n; i++) free(errs[i]), free(outs[i]);
    free(row0), free(rows), free(outs);
    free(names), free(status), free(res), free(errs);
    list_free(&in);
    return rc ? rc : n_err ? CLI_EXIT_FAIL : 0;
}
