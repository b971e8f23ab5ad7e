/*
 * main.c — the `jepa` binary: a table of subcommands, each in its own cmd_*.c.
 */
#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/buildinfo.h"
#include "jepa.h"
#include "kernels/kernels.h"
#include "runtime/dtype.h"

static const struct {
    const char *name;
    cli_cmd_fn fn;
    const char *help;
} commands[] = {
    {"embed", cmd_embed, "encode a clip or image into tokens / pooled features"},
    {"predict", cmd_predict, "predict target tokens (masked predictor) or the next states (world model)"},
    {"rollout", cmd_rollout, "roll a world model forward over a sequence of actions (LeWM, V-JEPA 2-AC)"},
    {"plan", cmd_plan, "plan the actions from a start to a goal with a world model (CEM; LeWM, V-JEPA 2-AC)"},
    {"classify", cmd_classify, "classify a clip with the model's head (top-k labels)"},
    {"serve", cmd_serve, "serve embeddings and classes over HTTP (OpenAI-style /v1/embeddings)"},
    {"pull", cmd_pull, "download a model from the Hugging Face hub into the cache (-m REPO, --pull)"},
    {"info", cmd_info, "describe a model file (--kv, --tensors)"},
    {"quantize", cmd_quantize, "convert a model's matmul weights to another type (--type: "},
    {"synth", cmd_synth, "write a random-weight model of a real architecture (for runs and benchmarks)"},
    {"cpu", cmd_cpu, "show the CPU features and the kernel chosen for each slot"},
    {"tune", cmd_tune, "time the matmul blockings on this CPU and keep the fastest (jepa cpu shows them)"},
    {"bench", cmd_bench, "time the CPU or GPU kernels, a world model or an encoder (bench kernels|gpu|world|encoder)"},
};

/* The same file: the same name, or both exist with one device and inode. */
static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (!strcmp(a, b)) return 1;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino &&
           S_ISREG(sa.st_mode);
}

int cli_check_finite_output(const char *what, const float *y, size_t n, const struct cli_out_rows *rows) {
    const size_t i = f32_first_nonfinite(y, n);
    if (i >= n) return 0;
    const char *bad = isnan(y[i]) ? "NaN" : "infinite";
    if (!rows || !rows->width)
        return cli_fail(what, "output element %zu is %s (non-finite weights in the model?); nothing written", i, bad);
    char buf[4 * 4096 + 64], num[48];
    const size_t r = i / rows->width;
    snprintf(num, sizeof num, "%s %zu", rows->row ? rows->row : "row", r);
    const char *row = rows->name ? rows->name(rows->user, r, buf, sizeof buf) : num;   /* "": one row */
    return cli_fail(what, "output %s%s%s %zu is %s (non-finite weights in the model?); nothing written", row,
                    *row ? ", " : "", rows->col ? rows->col : "column", i % rows->width, bad);
}

int cli_ctx_new(const char *cmd, const jepa_model *m, int threads, const char *cpu, const char *precision,
                int gpu, jepa_ctx **out) {
    jepa_ctx_params cp = jepa_ctx_default_params();
    cp.n_threads = threads;
    cp.cpu = cpu;
    cp.precision = precision;
    char device[32] = "cpu", err[JEPA_ERR_LEN];
    if (gpu >= 0) snprintf(device, sizeof device, "cuda:%d", gpu);
    cp.device = device;
    jepa_status st = jepa_ctx_new(out, m, &cp, err);
    if (!st) return 0;
    return st == JEPA_ERR_ARG ? cli_usage_error(cmd, "%s", err) : cli_fail(device, "%s", err);
}

int cli_check_outputs(const char *cmd, const char *const *ins, int n_in, const char *const *outs, int n_out) {
    for (int i = 0; i < n_out; i++) {
        if (!outs[i]) continue;
        for (int j = 0; j < n_in; j++)
            if (ins[j] && same_file(outs[i], ins[j]))
                return cli_usage_error(cmd, "the output '%s' is the input '%s'; write it elsewhere", outs[i], ins[j]);
        for (int j = 0; j < i; j++)
            if (outs[j] && same_file(outs[i], outs[j]))
                return cli_usage_error(cmd, "two outputs name one file, '%s'", outs[i]);
    }
    return 0;
}

int cli_parse_int(const char *cmd, const char *opt, const char *v, long long lo, long long hi,
                  long long *out) {
    char *end;
    errno = 0;
    long long x = v ? strtoll(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || x < lo || x > hi)
        return cli_usage_error(cmd, "%s takes an integer in [%lld, %lld], not '%s'", opt, lo, hi, v ? v : "");
    *out = x;
    return 0;
}

int cli_parse_u64(const char *cmd, const char *opt, const char *v, unsigned long long *out) {
    char *end;
    errno = 0;
    unsigned long long x = v && *v != '-' && *v != '+' ? strtoull(v, &end, 10) : 0;
    if (!v || *v == '-' || *v == '+' || errno || end == v || *end)
        return cli_usage_error(cmd, "%s takes an unsigned decimal integer, not '%s'", opt, v ? v : "");
    *out = x;
    return 0;
}

static void usage(FILE *f) {
    char types[192];
    jk_dtype_list(types, sizeof types, ", ");
    fprintf(f, "usage: jepa <command> [options]\n       jepa help <command> | jepa -V\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s%s%s\n", commands[i].name, commands[i].help,
                commands[i].fn == cmd_quantize ? types : "", commands[i].fn == cmd_quantize ? ")" : "");
    fprintf(f, "\n'jepa <command> --help' (or 'jepa help <command>') lists every option of a command.\n"
               "Conventions: --name=value is --name value; '-o -' writes the .npy to stdout (messages\n"
               "stay on stderr); '-' as an input (-i -, --input-tensor -, ...) reads stdin. Exit\n"
               "status: 0 success, 1 a runtime error, 2 a usage error (docs/cli.md).\n");
}

static int find_command(const char *name) {
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(name, commands[i].name)) return (int)i;
    return -1;
}

/* jepa help --options CMD: the option table of CMD (cli/options.c), one per line: the
 * name, its other spelling or '-', what it takes (flag, value, in: a file or '-' for
 * stdin, out: a file or '-' for stdout, file: a file) and the value's name (or choices
 * a|b|c; '-' for a flag). For the shell completion (tools/gen_completion.sh) and tests. */
static int print_options(const char *cmd) {
    if (find_command(cmd) < 0) {
        fprintf(stderr, "jepa: unknown command '%s'\n", cmd);
        return CLI_EXIT_USAGE;
    }
    static const char *const kinds[] = {"flag", "value", "in", "out", "file"};
    const struct cli_option *o;
    for (int k = 0; (o = cli_option_at(cmd, k)); k++)
        printf("%s %s %s %s\n", o->name, o->alias ? o->alias : "-", kinds[o->arg], o->meta ? o->meta : "-");
    return 0;
}

int main(int argc, char **argv) {
    /* a write past RLIMIT_FSIZE fails with EFBIG (one error line, the temporary removed)
     * instead of killing the process half-way through an output */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "help") && argc == 4 && !strcmp(argv[2], "--options"))
        return print_options(argv[3]);
    if (!strcmp(argv[1], "help") && argc > 2) {   /* jepa help CMD: CMD --help */
        const int k = find_command(argv[2]);
        if (k < 0) {
            fprintf(stderr, "jepa: unknown command '%s'\n", argv[2]);
            usage(stderr);
            return CLI_EXIT_USAGE;
        }
        char *args[] = {argv[2], "--help", NULL};
        return commands[k].fn(2, args);
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        /* the version alone on the first line; the commit and the build's features after */
        printf("jepa.c %s\ncommit: %s\n%s", jepa_version(), cli_build_commit, cli_build_features);
        return 0;
    }
    const int k = find_command(argv[1]);
    if (k >= 0) {
        const int rc = cli_normalize_argv(&argc, &argv);
        if (rc) return rc;
        if (cli_option_find(argv[1], "--pull"))   /* -m REPO downloads when missing */
            argc = cli_take_pull_flag(argc, argv);
        return commands[k].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "jepa: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
