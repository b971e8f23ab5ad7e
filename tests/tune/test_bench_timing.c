/*
 * test_bench_timing.c — the timing rule of `jepa bench kernels` (bench/timing.c,
 * bench_time) on a clock of its own, so that nothing here depends on the machine's speed:
 * each call of the timed function moves a virtual clock by a scripted time, and the rule
 * must give back what the script says.
 *  - reps fitted to the budget (budget / the warm-up's time, 3 .. BENCH_MAX_REPS), the
 *    median and the minimum of the scripted times; a warm-up over the budget is the figure;
 *  - calls that spread by microseconds (a kernel's) are not suspect;
 *  - calls that end on a fixed grid are: the tick-bound wait of issue 44's "exactly 8.000
 *    ms" (each call starts just after a 4 ms tick and ends just after the second tick
 *    from there, so every call measures 8 ms to the nanosecond), and a clock that counts
 *    in 4 ms ticks.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "tests/check.h"

static double vclock;          /* the virtual time, seconds */
static double tick;            /* > 0: now() reads the clock rounded down to it */
static const double *script;   /* the time of call i */
static int ncalls;

static double vnow(void) { return tick > 0 ? floor(vclock / tick) * tick : vclock; }
static void scripted(void *ctx) {
    (void)ctx;
    vclock += script[ncalls++];
}

/* A call that waits for the tick after `work` seconds from its start, the start being
 * just after a tick (delta past it): the process shares its cores with a runnable thread,
 * and the scheduler gives it the core back at ticks. */
static double work, tick_wait;
static void tick_bound(void *ctx) {
    (void)ctx;
    const double delta = 2e-6, end = vclock + work;
    vclock = ceil((end - delta) / tick_wait) * tick_wait + delta;
    ncalls++;
}

static void run(void (*fn)(void *), double budget, struct bench_timing *t) {
    ncalls = 0;
    bench_time(fn, NULL, budget, vnow, t);
}

int main(void) {
    struct bench_timing t;
    /* a kernel of ~2.4 ms spreading by microseconds: 0.15 s / 2.4 ms = 62 reps -> 31 */
    double d[40];
    for (int i = 0; i < 40; i++) d[i] = 2.4e-3 + 1e-6 * ((i * 7919) % 23);
    script = d, tick = 0, vclock = 100.0;
    run(scripted, 0.15, &t);
    double s[BENCH_MAX_REPS];
    for (int i = 0; i < BENCH_MAX_REPS; i++) s[i] = d[i + 1];
    qsort(s, BENCH_MAX_REPS, sizeof s[0], bench_cmp_double);
    CHECK(t.reps == BENCH_MAX_REPS && ncalls == BENCH_MAX_REPS + 1, "reps capped at %d (got %d, %d calls)",
          BENCH_MAX_REPS, t.reps, ncalls);
    CHECK(fabs(t.median - s[BENCH_MAX_REPS / 2]) < 1e-12 && fabs(t.min - s[0]) < 1e-12,
          "the median and the minimum of the timed calls (%.9f, %.9f)", t.median, t.min);
    CHECK(!t.suspect, "a spread of microseconds is not suspect (%d of %d tied)", t.tied, t.reps);

    /* reps = budget / the warm-up's time: 40 ms calls, 0.15 s -> 3; 0.41 s -> 10 */
    for (int i = 0; i < 40; i++) d[i] = 40e-3 + 1e-6 * i;
    run(scripted, 0.15, &t);
    CHECK(t.reps == 3 && ncalls == 4, "0.15 s of 40 ms calls: 3 reps (got %d)", t.reps);
    run(scripted, 0.41, &t);
    CHECK(t.reps == 10, "0.41 s of 40 ms calls: 10 reps (got %d)", t.reps);
    /* a warm-up over the budget is the figure */
    d[0] = 0.2;
    run(scripted, 0.15, &t);
    CHECK(t.reps == 0 && ncalls == 1 && fabs(t.median - 0.2) < 1e-12 && !t.suspect,
          "a warm-up of 0.2 s over a 0.15 s budget: one call, its time (got %d reps, %.6f)", t.reps, t.median);

    /* issue 44's row: 2.4 ms of work, each call given its core back at the second 4 ms
     * tick: every call 8 ms to the nanosecond, the median "exactly 8.000 ms": suspect */
    work = 2.4e-3 + 4e-3, tick_wait = 4e-3, tick = 0, vclock = 1000.0 + 2e-6;
    run(tick_bound, 0.15, &t);
    CHECK(fabs(t.median - 8e-3) < 1e-9, "the tick-bound calls measure 8 ms (%.9f)", t.median);
    CHECK(t.suspect && t.tied == t.reps, "and are marked suspect (%d of %d tied)", t.tied, t.reps);

    /* a clock that counts in 4 ms ticks over calls of ~2.4 ms: whole ticks, suspect */
    for (int i = 0; i < 40; i++) d[i] = 2.4e-3 + 1e-6 * ((i * 31) % 17);
    script = d, tick = 4e-3, vclock = 7.0;
    run(scripted, 0.15, &t);
    CHECK(fabs(t.median / 4e-3 - floor(t.median / 4e-3 + 0.5)) < 1e-9, "a 4 ms clock gives whole ticks (%.9f)",
          t.median);
    CHECK(t.suspect, "and is marked suspect (%d of %d tied)", t.tied, t.reps);
    return check_finish("test_bench_timing");
}
