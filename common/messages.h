/*
 * messages.h — how the front-ends of the `jepa` binary (its commands, `jepa serve`, the
 * benchmarks) report: one line on stderr per error, an exit code that says which kind.
 *   0 success, 1 runtime error (bad file, failed run), 2 usage error.
 * Errors read "jepa: <file>: <what is wrong>" or "jepa <cmd>: <what is wrong>". These are
 * the conventions of the command line (hence the cli_ prefix), shared here so that no
 * front-end reaches into another for them (tests/check_layers.sh).
 */
#ifndef JEPA_COMMON_MESSAGES_H
#define JEPA_COMMON_MESSAGES_H

#include <stddef.h>
#include <stdio.h>

#include "runtime/error.h"

#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

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

/* s as a JSON string, quotes included, into f (NULL: ""): '"', '\\' and the control
 * characters escaped, other bytes as they are (the CLI's --json output). */
void cli_json_str(FILE *f, const char *s);

#endif
