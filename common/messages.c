/* messages.c — see messages.h. */
#include "common/messages.h"

#include <stdarg.h>
#include <stdio.h>

const char *cli_escape(const char *s, char *buf, size_t n) { return jr_escape(s, buf, n); }

void cli_json_str(FILE *f, const char *s) {
    static const char hex[] = "0123456789abcdef";
    putc('"', f);
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '"' || *c == '\\') {
            putc('\\', f);
            putc(*c, f);
        } else if (*c < 0x20 || *c == 0x7f) {
            fprintf(f, "\\u00%c%c", hex[*c >> 4], hex[*c & 15]);
        } else {
            putc(*c, f);
        }
    }
    putc('"', f);
}

/* The last message printed by cli_fail / cli_usage_error (for the index of a many-input
 * run). */
static char last_error[4 * 2048 + 1];

const char *cli_last_error(void) { return last_error; }

/* One escaped line on stderr: prefix, the formatted message, suffix. */
static void print_line(const char *prefix, const char *suffix, const char *fmt, va_list ap) {
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    cli_escape(msg, last_error, sizeof last_error);
    fprintf(stderr, "%s%s%s\n", prefix, last_error, suffix);
}

int cli_fail(const char *what, const char *fmt, ...) {
    char safe[4 * 512 + 1], prefix[sizeof safe + 16];
    snprintf(prefix, sizeof prefix, "jepa: %s%s", what ? cli_escape(what, safe, sizeof safe) : "", what ? ": " : "");
    va_list ap;
    va_start(ap, fmt);
    print_line(prefix, "", fmt, ap);
    va_end(ap);
    return CLI_EXIT_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    char prefix[128], suffix[128];
    snprintf(prefix, sizeof prefix, "jepa %s: ", cmd);
    snprintf(suffix, sizeof suffix, " (see 'jepa %s --help')", cmd);
    va_list ap;
    va_start(ap, fmt);
    print_line(prefix, suffix, fmt, ap);
    va_end(ap);
    return CLI_EXIT_USAGE;
}
