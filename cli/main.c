/*
 * main.c — the `jepa` binary: a table of subcommands, each in its own cmd_*.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "jepa.h"

static const struct {
    const char *name;
    cli_cmd_fn fn;
    const char *help;
} commands[] = {
    {"embed", cmd_embed, "encode a clip or image into tokens / pooled features"},
    {"predict", cmd_predict, "predict target tokens from context tokens (masked predictor)"},
    {"classify", cmd_classify, "classify a clip with the model's head (top-k labels)"},
    {"info", cmd_info, "describe a model file (--kv, --tensors)"},
    {"quantize", cmd_quantize, "convert a model's matmul weights to f16, bf16 or q8_0"},
    {"synth", cmd_synth, "write a random-weight model of a real architecture (for runs and benchmarks)"},
    {"cpu", cmd_cpu, "show the CPU features and the kernel chosen for each slot"},
    {"bench", cmd_bench, "time the kernels against the FMA peak and OpenBLAS (bench kernels)"},
};

int cli_fail(const char *what, const char *fmt, ...) {
    va_list ap;
    fputs("jepa: ", stderr);
    if (what) fprintf(stderr, "%s: ", what);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "jepa %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'jepa %s --help')\n", cmd);
    return CLI_EXIT_USAGE;
}

static void usage(FILE *f) {
    fprintf(f, "usage: jepa <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n'jepa <command> --help' describes each command.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("jepa.c 0.1.0\n");
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "jepa: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
