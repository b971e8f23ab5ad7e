/*
 * cli.h — shared pieces of the `jepa` command-line tool: the subcommand signature, the
 * option parsing and output checks its commands share. Only the front-ends print and
 * choose exit codes; their conventions (one line per error, exit 1 or 2) are
 * common/messages.h, which the server and the benchmarks share.
 */
#ifndef JEPA_CLI_H
#define JEPA_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/messages.h"

typedef int (*cli_cmd_fn)(int argc, char **argv);

/* Strict numbers for options: the whole of v is one decimal integer in [lo, hi] (no
 * sign for the unsigned one), or a usage error naming opt. 0 or CLI_EXIT_USAGE. */
int cli_parse_int(const char *cmd, const char *opt, const char *v, long long lo, long long hi,
                  long long *out);
int cli_parse_u64(const char *cmd, const char *opt, const char *v, unsigned long long *out);

/* Outputs that would destroy an input or each other are usage errors: an output naming
 * the same file as an input (by device and inode, so another path to it counts), or two
 * outputs naming one file. NULL entries are skipped. 0 or CLI_EXIT_USAGE. */
int cli_check_outputs(const char *cmd, const char *const *ins, int n_in, const char *const *outs, int n_out);

/* How a flat output reads in the user's units: rows of `width` values, the row called `row`
 * ("step", "target token"; NULL: "row") and each value in it `col` ("dim", "class"; NULL:
 * "column"); where name is set, it writes what row r is instead ("row 3 (item 1 b.jpg)")
 * into buf and returns buf. */
struct cli_out_rows {
    size_t width;
    const char *row, *col;
    const char *(*name)(const void *user, size_t r, char *buf, size_t size);
    const void *user;
};

/* An output about to be written must be finite: 0, or CLI_EXIT_FAIL with one line
 * naming `what` and the first NaN / Inf by its row and column (rows NULL: its flat index;
 * non-finite weights reach the outputs). */
int cli_check_finite_output(const char *what, const float *y, size_t n, const struct cli_out_rows *rows);

/* A context for the options every run command takes: -t (0: all cores), --cpu (NULL:
 * auto), -g (< 0: the CPU). 0, or the exit code with the error printed (a bad --cpu is a
 * usage error, a missing or failing GPU a runtime one). */
struct jepa_model;
struct jepa_ctx;
int cli_ctx_new(const char *cmd, const struct jepa_model *m, int threads, const char *cpu,
                const char *precision, int gpu,
                struct jepa_ctx **out);

/* The options of every command (cli/options.c), one table for the command-line conventions
 * (--name=value, `-` as stdin / stdout), the shell completion and the help test. */
enum cli_arg {
    CLI_ARG_FLAG,       /* takes no value */
    CLI_ARG_VALUE,      /* a value */
    CLI_ARG_IN,         /* an input file: `-` is stdin */
    CLI_ARG_OUT_NPY,    /* a .npy output: `-` is stdout */
    CLI_ARG_OUT_FILE,   /* another output file: `-` is refused */
};
struct cli_option {
    const char *name, *alias;   /* "-o", "--out" (alias NULL: none) */
    enum cli_arg arg;
    const char *meta;           /* the value's name, or its choices a|b|c; NULL for a flag */
};
/* The k-th option of cmd (NULL past the last, or for an unknown command), and the option
 * of cmd named name (either spelling; NULL: none). */
const struct cli_option *cli_option_at(const char *cmd, int k);
const struct cli_option *cli_option_find(const char *cmd, const char *name);
/* The conventions applied before a command parses argv (cli/options.c): --name=value
 * split, `-` as stdin (read into memory, replaced by a path) or stdout (stdout moved to
 * stderr, the .npy bytes to the original). *argc / *argv replaced; 0 or the exit code
 * after printing the reason. */
int cli_normalize_argv(int *argc, char ***argv);

int cmd_info(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_classify(int argc, char **argv);
/* World models (cmd_world.c): `jepa predict` with --emb / --actions, `jepa rollout`. */
int cli_is_world_predict(int argc, char **argv);
int cmd_world_predict(int argc, char **argv);
/* The world-model forms of `jepa predict`, for its --help. */
void cli_world_predict_usage(FILE *f);
int cmd_rollout(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_cpu(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);
/* `jepa pull` (cmd_pull.c). cli_resolve_model: a -m argument naming a repository,
 * OWNER/NAME[:FILE], becomes the path of its file in the cache (downloaded first when
 * missing, only with --pull); a file path is left as it is. 0, or the exit code with the
 * error printed. cli_take_pull_flag: --pull taken out of argv (main.c), argc returned. */
int cmd_pull(int argc, char **argv);
/* The help line of --pull, for every command that takes a model. */
#define CLI_PULL_HELP \
    "  --pull                a model named OWNER/NAME[:FILE] (a hub repository, `jepa pull`)\n" \
    "                        is downloaded when it is not in the cache\n"
int cli_resolve_model(const char *cmd, const char **model);
int cli_take_pull_flag(int argc, char **argv);

#endif
