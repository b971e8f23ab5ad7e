/*
 * progress.h — a sign of life on stderr for long CLI work (many inputs, a video's many
 * clips): "k/n UNIT, R/s, ETA MmSSs", redrawn in place on a terminal, a plain line every
 * 5 s otherwise (and a last one if any was shown), nothing when disabled (-q).
 */
#ifndef JEPA_CLI_PROGRESS_H
#define JEPA_CLI_PROGRESS_H

#include <stdbool.h>

struct cli_progress {
    bool on, tty, shown;
    double t0, last;
    int done_run;      /* items actually run (the rate leaves skipped ones out) */
    const char *unit;  /* "inputs", "clips" */
};

void cli_progress_start(struct cli_progress *p, bool on, const char *unit);
/* k of n done; final: the last call (ends a redrawn line). */
void cli_progress_show(struct cli_progress *p, int k, int n, bool final);
/* Before another stderr line: a redrawn progress line is cleared first. */
void cli_progress_clear(const struct cli_progress *p);

#endif
