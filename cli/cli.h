/*
 * cli.h — shared pieces of the `jepa` command-line tool: the subcommand signature and
 * the error / usage conventions. Only the CLI prints and chooses exit codes:
 *   0 success, 1 runtime error (bad file, failed run), 2 usage error.
 * Errors are one line on stderr: "jepa: <file>: <what is wrong>".
 */
#ifndef JEPA_CLI_H
#define JEPA_CLI_H

#include <stddef.h>

#include "runtime/error.h"

#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

typedef int (*cli_cmd_fn)(int argc, char **argv);

/* The message of the last cli_fail / cli_usage_error, escaped ("" before any). */
const char *cli_last_error(void);
/* Print "jepa: <what>: <msg>" (what may be NULL) and return CLI_EXIT_FAIL. */
int cli_fail(const char *what, const char *fmt, ...) JEPA_PRINTF(2, 3);
/* Print "jepa <cmd>: <msg>" plus a hint to --help and return CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) JEPA_PRINTF(2, 3);
/* Both print their message with control characters escaped (\n, \x1b, ... as \xHH): a
 * string that came from a file can neither split the one-line error nor reach the
 * terminal as an escape sequence. */

/* s with every control character (< 0x20, 0x7f) written as \xHH, into buf (n bytes,
 * truncated if it must be): for text from a file printed to stdout (names, labels). */
const char *cli_escape(const char *s, char *buf, size_t n);

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
int cli_ctx_new(const char *cmd, const struct jepa_model *m, int threads, const char *cpu, int gpu,
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
int cmd_bench(int argc, char **argv);

struct jepa_model_info;
/* Multiply-adds x 2 of an encoder pass over n tokens (cmd_run.c): the patch embedding,
 * per layer the qkv / out / MLP matmuls and attention (q k^T and p v over all n keys),
 * as `jepa embed --time` and `jepa bench encoder` count them. */
double cli_encoder_flops(const struct jepa_model_info *i, int n, int tubelet);
int cmd_serve(int argc, char **argv);

#endif
