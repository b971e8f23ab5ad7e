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
 */
#include "cli/run_many.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
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

/* An image or video a directory listing takes (by extension, case-insensitive). */
static bool wanted(const char *name) {
    static const char *const ext[] = {".png", ".jpg", ".jpeg", ".mp4", ".webm", ".mkv", ".avi", ".mov", ".m4v"};
    const size_t n = strlen(name);
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        const size_t e = strlen(ext[i]);
        if (n > e && !strcasecmp(name + n - e, ext[i])) return true;
    }
    return false;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int add_dir(struct list *l, const char *cmd, const char *dir) {
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

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Progress on stderr: redrawn in place on a terminal, a plain line every 5 s otherwise. */
struct progress {
    bool tty, shown;
    double t0, last;
    int done_run;   /* inputs actually run (the rate leaves --resume skips out) */
};

static void progress_show(struct progress *p, int k, int n, bool final) {
    const double t = now_s();
    if (!p->tty && !final && t - p->last < 5.0) return;
    if (!p->tty && final && !p->shown) return;
    p->last = t, p->shown = true;
    const double rate = p->done_run > 0 ? p->done_run / (t - p->t0 > 1e-9 ? t - p->t0 : 1e-9) : 0;
    const double eta = rate > 0 ? (n - k) / rate : 0;
    fprintf(stderr, "%s%d/%d inputs, %.2f/s, ETA %dm%02ds%s", p->tty ? "\r" : "", k, n, rate, (int)(eta / 60),
            (int)eta % 60, p->tty ? "\033[K" : "\n");
    if (p->tty && final) fputc('\n', stderr);
}

int run_many(const struct many_opts *o, many_one_fn one, void *user) {
    struct list in = {0};
    int rc = 0;
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
        char out[LINE_MAX_BYTES + 64];
        if (snprintf(out, sizeof out, "%s/index.jsonl", o->out_dir) >= (int)sizeof out)
            rc = cli_usage_error(o->cmd, "the output directory's path is longer than %d bytes", LINE_MAX_BYTES);
        for (int i = 0; !rc && i < in.n; i++) {
            if (!names[i][0]) rc = cli_usage_error(o->cmd, "input '%s' has no file name", in.v[i]);
            else if (snprintf(out, sizeof out, "%s/%s%s", o->out_dir, names[i], o->suffix) >= (int)sizeof out)
                rc = cli_usage_error(o->cmd, "the output path for %s is longer than %zu bytes", in.v[i], sizeof out - 1);
        }
    }
    if (!rc && mkdir(o->out_dir, 0777) && errno != EEXIST)
        rc = cli_fail(o->out_dir, "cannot create the output directory: %s", strerror(errno));
    struct stat dst;
    if (!rc && (stat(o->out_dir, &dst) || !S_ISDIR(dst.st_mode)))
        rc = cli_fail(o->out_dir, "not a directory");
    int *status = rc ? NULL : calloc((size_t)in.n, sizeof *status);   /* 0 ok, 1 skipped, 2 error */
    struct many_result *res = rc ? NULL : calloc((size_t)in.n, sizeof *res);
    char **errs = rc ? NULL : calloc((size_t)in.n, sizeof *errs);
    if (!rc && (!status || !res || !errs)) rc = cli_fail(NULL, "out of memory");
    if (rc) {
        free(names), free(status), free(res), free(errs);
        list_free(&in);
        return rc;
    }

    struct progress pg = {.tty = !o->quiet && isatty(2), .t0 = now_s()};
    pg.last = pg.t0;
    int n_ok = 0, n_skip = 0, n_err = 0;
    char out[LINE_MAX_BYTES + 64];
    for (int i = 0; i < in.n; i++) {
        snprintf(out, sizeof out, "%s/%s%s", o->out_dir, names[i], o->suffix);
        struct stat st;
        if (o->resume && !stat(out, &st) && S_ISREG(st.st_mode)) {
            status[i] = 1, n_skip++;
        } else {
            res[i].top1 = -1;
            if (pg.tty && pg.shown) fputs("\r\033[K", stderr);   /* an error line starts clean */
            if (one(user, in.v[i], out, &res[i])) {
                status[i] = 2, n_err++;
                errs[i] = strdup(cli_last_error());
            } else {
                n_ok++;
                if (o->verbose) fprintf(stderr, "jepa %s: %s -> %s\n", o->cmd, in.v[i], out);
            }
            pg.done_run++;
        }
        if (!o->quiet) progress_show(&pg, i + 1, in.n, i + 1 == in.n);
    }

    /* the index, in list order */
    snprintf(out, sizeof out, "%s/index.jsonl", o->out_dir);
    struct jr_outfile f;
    struct jerr e = {0};
    if (jr_outfile_open(&f, out, false, &e)) {
        rc = cli_fail(NULL, "%s", e.msg);
    } else {
        static const char *const word[] = {"ok", "skipped", "error"};
        for (int i = 0; i < in.n; i++) {
            char path[LINE_MAX_BYTES + 64];
            snprintf(path, sizeof path, "%s/%s%s", o->out_dir, names[i], o->suffix);
            fputs("{\"source\": ", f.f);
            json_str(f.f, in.v[i]);
            fputs(", \"output\": ", f.f);
            if (status[i] == 2) fputs("null", f.f);
            else json_str(f.f, path);
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
    if (n_err || !o->quiet)
        fprintf(stderr, "jepa %s: %d inputs: %d written, %d skipped (--resume), %d failed; index %s\n", o->cmd, in.n,
                n_ok, n_skip, n_err, out);
    for (int i = 0; i < in.n; i++) free(errs[i]);
    free(names), free(status), free(res), free(errs);
    list_free(&in);
    return rc ? rc : n_err ? CLI_EXIT_FAIL : 0;
}
