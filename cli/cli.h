/*
 * cli.h — shared pieces of the `jepa` command-line tool: the subcommand signature, the
 * option parsing and output checks its commands share. Only the front-ends print and
 * choose exit codes; their conventions (one line per error, exit 1 or 2) are
 * common/messages.h, which the server and the benchmarks share.
 */
#ifndef JEPA_CLI_H
#define JEPA_CLI_H

#include <stddef.h>

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

/* An output about to be written must be finite: 0, or CLI_EXIT_FAIL with one line
 * naming `what` and the first NaN / Inf (non-finite weights reach the outputs). */
int cli_check_finite_output(const char *what, const float *y, size_t n);

/* A context for the options every run command takes: -t (0: all cores), --cpu (NULL:
 * auto), -g (< 0: the CPU). 0, or the exit code with the error printed (a bad --cpu is a
 * usage error, a missing or failing GPU a runtime one). */
struct jepa_model;
struct jepa_ctx;
int cli_ctx_new(const char *cmd, const struct jepa_model *m, int threads, const char *cpu,
                const char *precision, int gpu,
                struct jepa_ctx **out);

int cmd_info(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_classify(int argc, char **argv);
/* World models (cmd_world.c): `jepa predict` with --emb / --actions, `jepa rollout`. */
int cli_is_world_predict(int argc, char **argv);
int cmd_world_predict(int argc, char **argv);
int cmd_rollout(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_cpu(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
