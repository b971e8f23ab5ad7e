/*
 * options.c — the options every `jepa` command accepts, in one table (cli.h), and the
 * conventions applied to the command line once, in main() before the command parses it:
 *
 *   --name=value   becomes --name value for an option that takes a value; a flag given
 *                  =value is a usage error naming it; nothing after a `--` is touched.
 *   -              as the value of a .npy output (-o -): the .npy bytes go to stdout and
 *                  everything the command prints goes to stderr (stdout is moved there);
 *                  two outputs to stdout (or one and --json) are refused, and so is a
 *                  terminal. As the value of an input option (or a run command's
 *                  positional input): stdin, read into memory (at most CLI_STDIN_MAX
 *                  bytes) and handed to the command as /dev/fd/N, a regular file the
 *                  decoders open as any other; its format is found from its bytes (an
 *                  image, or a .npy: float32/float64 is an --input-tensor, uint8 frames
 *                  a --frames-npy where a positional `-` names it).
 *
 * tests/cli/test_cli_conventions.sh checks this table against the parsers (every option
 * a parser accepts is here, and in the command's --help) and the rules above.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* memfd_create */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/cli.h"
#include "input/image.h"
#include "input/npy.h"

#define CLI_STDIN_MAX ((size_t)1 << 30)

/* Commands as bits, so that one row serves every command taking the option. */
#define EMB (1u << 0)
#define PRD (1u << 1)    /* predict: the encoder's form and the world model's */
#define CLS (1u << 2)
#define ROL (1u << 3)
#define PLN (1u << 4)
#define SRV (1u << 5)
#define INF (1u << 6)
#define QNT (1u << 7)
#define SYN (1u << 8)
#define CPU (1u << 9)
#define BEN (1u << 10)
#define PUL (1u << 11)
#define TUN (1u << 12)
#define RUN3 (EMB | PRD | CLS)
#define WORLD (PRD | ROL | PLN)

static const char *const cmd_names[] = {"embed", "predict", "classify", "rollout", "plan", "serve",
                                        "info", "quantize", "synth", "cpu", "bench", "pull", "tune"};

static const struct {
    unsigned cmds;
    struct cli_option o;
} table[] = {
    {RUN3 | WORLD | SRV | BEN | TUN, {"-m", "--model", CLI_ARG_IN, "MODEL"}},
    {RUN3 | WORLD | SRV | BEN | INF | QNT | TUN, {"--pull", NULL, CLI_ARG_FLAG, NULL}},
    {RUN3 | WORLD | SRV | BEN | TUN, {"-t", "--threads", CLI_ARG_VALUE, "N"}},
    {RUN3 | WORLD | SRV | BEN, {"-g", "--gpu", CLI_ARG_VALUE, "N"}},
    {RUN3 | WORLD | SRV | BEN | CPU, {"--cpu", NULL, CLI_ARG_VALUE, "scalar|avx2|avx512|neon"}},
    {RUN3 | WORLD | SRV | BEN | CPU, {"--precision", NULL, CLI_ARG_VALUE, "exact|high|bf16"}},
    {RUN3 | WORLD | SRV, {"-q", "--quiet", CLI_ARG_FLAG, NULL}},
    {RUN3 | SRV | BEN, {"--prepack", NULL, CLI_ARG_FLAG, NULL}},
    {EMB | WORLD, {"-o", "--out", CLI_ARG_OUT_NPY, "OUT.npy"}},
    /* embed, predict, classify */
    {RUN3, {"--input-tensor", NULL, CLI_ARG_IN, "X.npy"}},
    {RUN3, {"--test-pattern", NULL, CLI_ARG_VALUE, "TxHxW"}},
    {RUN3, {"--time", NULL, CLI_ARG_FLAG, NULL}},
    {RUN3, {"-v", "--verbose", CLI_ARG_FLAG, NULL}},
    {RUN3, {"-i", "--image", CLI_ARG_IN, "IMAGE"}},
    {RUN3, {"--frames-npy", NULL, CLI_ARG_IN, "F.npy"}},
    {RUN3, {"--frames-per-clip", NULL, CLI_ARG_VALUE, "F"}},
    {RUN3, {"--frame-step", NULL, CLI_ARG_VALUE, "S"}},
    {RUN3, {"--no-antialias", NULL, CLI_ARG_FLAG, NULL}},
    {RUN3, {"--resize-short", NULL, CLI_ARG_VALUE, "N"}},
    {RUN3, {"--norm", NULL, CLI_ARG_VALUE, "fused|sequential"}},
    {RUN3, {"--exif-rotate", NULL, CLI_ARG_FLAG, NULL}},
    {RUN3, {"--as-clip", NULL, CLI_ARG_FLAG, NULL}},
    {RUN3, {"--images-npy", NULL, CLI_ARG_IN, "F.npy"}},
    {EMB | CLS, {"--num-clips", NULL, CLI_ARG_VALUE, "C"}},
    {EMB | CLS, {"--dense", NULL, CLI_ARG_FLAG, NULL}},
    {EMB | CLS | PLN, {"--stride", NULL, CLI_ARG_VALUE, "K"}},
    {EMB | CLS, {"--batch", NULL, CLI_ARG_VALUE, "N"}},
    {EMB | CLS, {"--out-dir", NULL, CLI_ARG_VALUE, "DIR"}},
    {EMB | CLS, {"--inputs", NULL, CLI_ARG_VALUE, "LIST.txt"}},
    {EMB | CLS, {"--resume", NULL, CLI_ARG_FLAG, NULL}},
    {EMB | CLS, {"-r", "--recursive", CLI_ARG_FLAG, NULL}},
    {EMB | CLS | INF | BEN | ROL | PLN, {"--json", NULL, CLI_ARG_FLAG, NULL}},
    {EMB | PLN, {"--stream", NULL, CLI_ARG_VALUE, "URL|-|PATH"}},
    {EMB | PLN, {"--open-timeout", NULL, CLI_ARG_VALUE, "S"}},
    {EMB | PLN, {"--read-timeout", NULL, CLI_ARG_VALUE, "S"}},
    {EMB | PLN, {"--reconnect", NULL, CLI_ARG_VALUE, "N"}},
    {EMB, {"--format", NULL, CLI_ARG_VALUE, "jsonl|npy"}},
    {EMB, {"--pool", NULL, CLI_ARG_VALUE, "mean|cls|lewm|none"}},
    {EMB, {"--hier", NULL, CLI_ARG_FLAG, NULL}},
    {EMB, {"--repeat", NULL, CLI_ARG_VALUE, "N"}},
    {CLS, {"-k", NULL, CLI_ARG_VALUE, "K"}},
    {CLS, {"--logits-out", NULL, CLI_ARG_OUT_NPY, "L.npy"}},
    {PRD, {"--ctx", NULL, CLI_ARG_IN, "C.npy"}},
    {PRD, {"--tgt", NULL, CLI_ARG_IN, "T.npy"}},
    {PRD, {"--ctx-out", NULL, CLI_ARG_OUT_NPY, "CTX.npy"}},
    {PRD, {"--mask-index", NULL, CLI_ARG_VALUE, "K"}},
    {PRD, {"--modality", NULL, CLI_ARG_VALUE, "auto|video|image"}},
    /* world models */
    {PRD | ROL, {"--emb", NULL, CLI_ARG_IN, "E.npy"}},
    {PRD | ROL, {"--actions", NULL, CLI_ARG_IN, "A.npy"}},
    {PRD | ROL, {"--tokens", NULL, CLI_ARG_IN, "T.npy"}},
    {PRD | ROL, {"--states", NULL, CLI_ARG_IN, "S.npy"}},
    {ROL, {"--steps", NULL, CLI_ARG_VALUE, "K"}},
    {ROL, {"--traj-states", NULL, CLI_ARG_OUT_NPY, "TS.npy"}},
    {ROL, {"--no-normalize", NULL, CLI_ARG_FLAG, NULL}},
    {PLN, {"--start", NULL, CLI_ARG_IN, "IMAGE"}},
    {PLN, {"--start-tokens", NULL, CLI_ARG_IN, "S.npy"}},
    {PLN, {"--start-actions", NULL, CLI_ARG_IN, "P.npy"}},
    {PLN, {"--start-states", NULL, CLI_ARG_IN, "ST.npy"}},
    {PLN, {"--goal", NULL, CLI_ARG_IN, "IMAGE"}},
    {PLN, {"--goal-tokens", NULL, CLI_ARG_IN, "G.npy"}},
    {PLN, {"--energies", NULL, CLI_ARG_OUT_NPY, "E.npy"}},
    {PLN | BEN, {"--horizon", NULL, CLI_ARG_VALUE, "H"}},
    {PLN | BEN, {"--samples", NULL, CLI_ARG_VALUE, "N"}},
    {PLN, {"--iters", NULL, CLI_ARG_VALUE, "I"}},
    {PLN, {"--elites", NULL, CLI_ARG_VALUE, "K"}},
    {PLN, {"--std", NULL, CLI_ARG_VALUE, "S"}},
    {PLN, {"--momentum", NULL, CLI_ARG_VALUE, "M"}},
    {PLN, {"--maxnorm", NULL, CLI_ARG_VALUE, "X"}},
    {PLN | SYN, {"--seed", NULL, CLI_ARG_VALUE, "S"}},
    {PLN, {"--bounds", NULL, CLI_ARG_VALUE, "LO,HI"}},
    /* serve */
    {SRV, {"--model-id", NULL, CLI_ARG_VALUE, "ID"}},
    {SRV, {"--host", NULL, CLI_ARG_VALUE, "ADDR"}},
    {SRV, {"--port", NULL, CLI_ARG_VALUE, "N"}},
    {SRV, {"--workers", NULL, CLI_ARG_VALUE, "N"}},
    {SRV, {"--max-batch", NULL, CLI_ARG_VALUE, "B"}},
    {SRV, {"--batch-wait-ms", NULL, CLI_ARG_VALUE, "W"}},
    {SRV, {"--queue", NULL, CLI_ARG_VALUE, "Q"}},
    {SRV, {"--max-body-mb", NULL, CLI_ARG_VALUE, "S"}},
    {SRV, {"--timeout-s", NULL, CLI_ARG_VALUE, "X"}},
    {SRV, {"--max-connections", NULL, CLI_ARG_VALUE, "C"}},
    {SRV, {"--idle-timeout-s", NULL, CLI_ARG_VALUE, "I"}},
    {SRV, {"--decode-budget-mb", NULL, CLI_ARG_VALUE, "D"}},
    {SRV, {"--api-key", NULL, CLI_ARG_VALUE, "KEY"}},
    /* the others */
    {INF, {"--kv", NULL, CLI_ARG_FLAG, NULL}},
    {INF, {"--tensors", NULL, CLI_ARG_FLAG, NULL}},
    {QNT, {"--type", NULL, CLI_ARG_VALUE, "f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q4_K|q5_K|q6_K"}},
    {TUN, {"--budget", NULL, CLI_ARG_VALUE, "SECONDS"}},
    {TUN, {"--dtype", NULL, CLI_ARG_VALUE, "f32|f16|bf16"}},
    {TUN, {"--precision", NULL, CLI_ARG_VALUE, "exact|high|bf16|all"}},
    {TUN, {"-o", "--out", CLI_ARG_OUT_FILE, "FILE"}},
    {PUL, {"--type", NULL, CLI_ARG_VALUE, "TYPE"}},
    {PUL, {"--retries", NULL, CLI_ARG_VALUE, "N"}},
    {PUL, {"--stall-timeout", NULL, CLI_ARG_VALUE, "S"}},
    {PUL, {"-q", "--quiet", CLI_ARG_FLAG, NULL}},
    {SYN, {"--arch", NULL, CLI_ARG_VALUE, "NAME"}},
    {SYN, {"--dtype", NULL, CLI_ARG_VALUE, "f32|f16|bf16|q8_0"}},
    {SYN, {"-o", NULL, CLI_ARG_OUT_FILE, "OUT.gguf"}},
    {BEN, {"--quick", NULL, CLI_ARG_FLAG, NULL}},
    {BEN, {"--full", NULL, CLI_ARG_FLAG, NULL}},
    {BEN, {"--cold", NULL, CLI_ARG_FLAG, NULL}},
    {BEN, {"--op", NULL, CLI_ARG_VALUE, "all|matmul|attn"}},
    {BEN, {"--kernel", NULL, CLI_ARG_VALUE, "mma|pipe|wgmma"}},
    {BEN, {"--frames", NULL, CLI_ARG_VALUE, "T"}},
    {BEN, {"--size", NULL, CLI_ARG_VALUE, "H[xW]"}},
    {BEN, {"--reps", NULL, CLI_ARG_VALUE, "R"}},
};

static unsigned cmd_bit(const char *cmd) {
    for (size_t k = 0; k < sizeof cmd_names / sizeof *cmd_names; k++)
        if (!strcmp(cmd, cmd_names[k])) return 1u << k;
    return 0;
}

const struct cli_option *cli_option_at(const char *cmd, int k) {
    const unsigned bit = cmd_bit(cmd);
    for (size_t j = 0; j < sizeof table / sizeof *table; j++)
        if ((table[j].cmds & bit) && k-- == 0) return &table[j].o;
    return NULL;
}

const struct cli_option *cli_option_find(const char *cmd, const char *name) {
    const struct cli_option *o;
    for (int k = 0; (o = cli_option_at(cmd, k)); k++)
        if (!strcmp(name, o->name) || (o->alias && !strcmp(name, o->alias))) return o;
    return NULL;
}

/* ---- stdin ---------------------------------------------------------------------------- */

/* stdin whole into an anonymous in-memory file (memfd; an unlinked temporary where there is
 * none), at most CLI_STDIN_MAX bytes, its descriptor into *out: 0, or the exit code after
 * printing. */
static int stdin_to_memory(const char *cmd, size_t *size, int *out) {
#ifdef MFD_CLOEXEC
    int fd = memfd_create("stdin", 0);
#else
    FILE *t = tmpfile();
    int fd = t ? dup(fileno(t)) : -1;
    if (t) fclose(t);
#endif
    if (fd < 0) return cli_fail("stdin", "cannot hold it in memory: %s", strerror(errno));
    static char buf[1 << 16];
    size_t total = 0;
    for (;;) {
        const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return close(fd), cli_fail("stdin", "cannot read: %s", strerror(errno));
        if (n == 0) break;
        if (total + (size_t)n > CLI_STDIN_MAX)
            return close(fd), cli_usage_error(cmd, "stdin holds more than %zu MiB; give a file instead",
                                              CLI_STDIN_MAX >> 20);
        for (ssize_t w = 0; w < n;) {
            const ssize_t k = write(fd, buf + w, (size_t)(n - w));
            if (k < 0 && errno == EINTR) continue;
            if (k < 0) return close(fd), cli_fail("stdin", "cannot hold it in memory: %s", strerror(errno));
            w += k;
        }
        total += (size_t)n;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) return close(fd), cli_fail("stdin", "cannot rewind: %s", strerror(errno));
    *size = total;
    *out = fd;
    return 0;
}

enum stdin_kind { STDIN_IMAGE, STDIN_NPY_FLOAT, STDIN_NPY_U8, STDIN_NPY_OTHER, STDIN_OTHER };

static enum stdin_kind sniff(const char *path) {
    if (image_is_image_file(path)) return STDIN_IMAGE;
    struct npy a;
    struct jerr e = {0};
    if (npy_load(&a, path, &e)) return STDIN_OTHER;
    const enum npy_dtype t = a.dtype;
    npy_free(&a);
    return t == NPY_F32 || t == NPY_F64 ? STDIN_NPY_FLOAT : t == NPY_U8 ? STDIN_NPY_U8 : STDIN_NPY_OTHER;
}

/* ---- the command line ------------------------------------------------------------------ */

struct norm {
    const char *cmd;
    char **out;            /* the new argv */
    int n;
    const char *stdout_opt;    /* the option writing to stdout */
    const char *stdin_opt;     /* the option reading stdin */
    char stdin_path[32];
};

/* `-` as the value of option o (name as given): stdout or stdin. 0 or an exit code. */
static int dash_value(struct norm *s, const struct cli_option *o, const char *name, bool json) {
    if (o->arg == CLI_ARG_OUT_FILE)
        return cli_usage_error(s->cmd, "%s writes a model file; '-' (stdout) is for .npy outputs", name);
    if (o->arg == CLI_ARG_OUT_NPY) {
        if (s->stdout_opt)
            return cli_usage_error(s->cmd, "two outputs to stdout (%s - and %s -); give one a file", s->stdout_opt,
                                   name);
        if (json) return cli_usage_error(s->cmd, "%s - and --json both write stdout; give one a file", name);
        if (isatty(STDOUT_FILENO))
            return cli_usage_error(s->cmd, "%s -: stdout is a terminal; redirect it or name a file", name);
        s->stdout_opt = name;
        return 0;
    }
    if (o->arg != CLI_ARG_IN) return 0;
    if (s->stdin_opt) return cli_usage_error(s->cmd, "stdin is read once (%s - and %s -)", s->stdin_opt, name);
    s->stdin_opt = name;
    return 1;   /* read it */
}

/* Read stdin for the option (or positional, opt NULL) whose value s->out[s->n - 1] is `-`,
 * and put its path there; a positional npy becomes --input-tensor / --frames-npy. */
static int read_stdin(struct norm *s, const char *opt) {
    size_t size = 0;
    int fd = -1;
    const int rc = stdin_to_memory(s->cmd, &size, &fd);
    if (rc) return rc;
    snprintf(s->stdin_path, sizeof s->stdin_path, "/dev/fd/%d", fd);
    const enum stdin_kind k = size ? sniff(s->stdin_path) : STDIN_OTHER;
    const bool wants_image = opt && (!strcmp(opt, "-i") || !strcmp(opt, "--image") || !strcmp(opt, "--start") ||
                                     !strcmp(opt, "--goal"));
    const bool wants_npy = opt && !wants_image && strcmp(opt, "-m") && strcmp(opt, "--model");
    if (!size) return cli_usage_error(s->cmd, "%s -: stdin is empty", opt ? opt : "the input");
    if (wants_image && k != STDIN_IMAGE)
        return cli_usage_error(s->cmd, "%s -: stdin holds no PNG, JPEG or WebP image", opt);
    if (wants_npy && k != STDIN_NPY_FLOAT && k != STDIN_NPY_U8 && k != STDIN_NPY_OTHER)
        return cli_usage_error(s->cmd, "%s -: stdin holds no .npy array", opt);
    if (!opt && (k == STDIN_NPY_FLOAT || k == STDIN_NPY_U8)) {   /* positional: by its dtype */
        s->out[s->n - 1] = k == STDIN_NPY_FLOAT ? "--input-tensor" : "--frames-npy";
        s->out[s->n++] = s->stdin_path;
        return 0;
    }
    if (!opt && k != STDIN_IMAGE)
        return cli_usage_error(s->cmd, "-: stdin holds no image and no float32 / uint8 .npy (a video must be a file)");
    s->out[s->n - 1] = s->stdin_path;
    return 0;
}

static bool has_json(int argc, char **argv) {
    for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--json")) return true;
    return false;
}

int cli_normalize_argv(int *argc, char ***argv) {
    const char *cmd = (*argv)[1];
    if (!cmd_bit(cmd)) return 0;   /* help, a version flag or an unknown command: as given */
    static struct norm s;
    memset(&s, 0, sizeof s);
    s.cmd = cmd;
    /* at most two entries per argument, and the terminating NULL */
    s.out = calloc((size_t)*argc * 2 + 1, sizeof *s.out);
    if (!s.out) return cli_fail(NULL, "out of memory");
    const bool json = has_json(*argc, *argv);
    const bool run = cmd_bit(cmd) & (EMB | CLS | PRD);
    int rc = 0;
    s.out[s.n++] = (*argv)[0];
    s.out[s.n++] = (*argv)[1];
    for (int i = 2; i < *argc && !rc; i++) {
        char *a = (*argv)[i];
        if (!strcmp(a, "--")) {
            while (i < *argc) s.out[s.n++] = (*argv)[i++];
            break;
        }
        char *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
        const struct cli_option *o = NULL;
        const char *value = NULL;
        if (eq) {
            *eq = '\0';
            o = cli_option_find(cmd, a);
            if (!o) {
                *eq = '=';
                s.out[s.n++] = a;   /* the command says it is unknown */
                continue;
            }
            if (o->arg == CLI_ARG_FLAG) {
                rc = cli_usage_error(cmd, "%s takes no value ('%s=%s')", a, a, eq + 1);
                break;
            }
            s.out[s.n++] = a;
            value = eq + 1;
        } else if ((o = cli_option_find(cmd, a)) && o->arg != CLI_ARG_FLAG) {
            s.out[s.n++] = a;
            if (i + 1 >= *argc) break;   /* the command says the value is missing */
            value = (*argv)[++i];
        } else {
            s.out[s.n++] = a;
            if (run && !strcmp(a, "-")) {   /* a positional input read from stdin */
                if (s.stdin_opt) rc = cli_usage_error(cmd, "stdin is read once (%s - and -)", s.stdin_opt);
                else s.stdin_opt = "-", rc = read_stdin(&s, NULL);
            }
            continue;
        }
        s.out[s.n++] = (char *)value;
        if (!strcmp(value, "-") && (rc = dash_value(&s, o, a, json)) == 1) rc = read_stdin(&s, a);
    }
    if (rc) return rc;
    if (s.stdout_opt) {   /* the .npy bytes alone on stdout; whatever else is printed, on stderr */
        fflush(stdout);
        const int fd = dup(STDOUT_FILENO);
        if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
            return cli_fail("stdout", "cannot set it aside: %s", strerror(errno));
        npy_set_stdout(fd);
    }
    s.out[s.n] = NULL;
    *argc = s.n;
    *argv = s.out;
    return 0;
}
