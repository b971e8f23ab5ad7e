/* progress.c — see progress.h. */
#include "cli/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_start(struct cli_progress *p, bool on, const char *unit) {
    *p = (struct cli_progress){.on = on, .tty = on && isatty(2), .unit = unit};
    p->t0 = p->last = now_s();
}

void cli_progress_show(struct cli_progress *p, int k, int n, bool final) {
    if (!p->on) return;
    const double t = now_s();
    if (!p->tty && !final && t - p->last < 5.0) return;
    if (!p->tty && final && !p->shown) return;
    p->last = t, p->shown = true;
    const double rate = p->done_run > 0 ? p->done_run / (t - p->t0 > 1e-9 ? t - p->t0 : 1e-9) : 0;
    const double eta = rate > 0 ? (n - k) / rate : 0;
    fprintf(stderr, "%s%d/%d %s, %.2f/s, ETA %dm%02ds%s", p->tty ? "\r" : "", k, n, p->unit, rate, (int)(eta / 60),
            (int)eta % 60, p->tty ? "\033[K" : "\n");
    if (p->tty && final) fputc('\n', stderr);
}

void cli_progress_clear(const struct cli_progress *p) {
    if (p->on && p->tty && p->shown) fputs("\r\033[K", stderr);
}
