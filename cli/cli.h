/*
 * cli.h — shared pieces of the `jepa` command-line tool: the subcommand signature and
 * the error / usage conventions. Only the CLI prints and chooses exit codes:
 *   0 success, 1 runtime error (bad file, failed run), 2 usage error.
 * Errors are one line on stderr: "jepa: <file>: <what is wrong>".
 */
#ifndef JEPA_CLI_H
#define JEPA_CLI_H

#include "runtime/error.h"

#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

typedef int (*cli_cmd_fn)(int argc, char **argv);

/* Print "jepa: <what>: <msg>" (what may be NULL) and return CLI_EXIT_FAIL. */
int cli_fail(const char *what, const char *fmt, ...) JEPA_PRINTF(2, 3);
/* Print "jepa <cmd>: <msg>" plus a hint to --help and return CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) JEPA_PRINTF(2, 3);

int cmd_info(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_classify(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_cpu(int argc, char **argv);
int cmd_bench(int argc, char **argv);

#endif
