/*
 * timing.c — the timing rule of `jepa bench kernels` (bench/bench.h, bench_time), apart
 * from the kernels so that tests/tune/test_bench_timing.c checks it on a clock of its own,
 * whatever the machine's speed.
 *
 * A warm-up call, then reps fitted to the budget (budget / the warm-up's time, at least 3,
 * at most BENCH_MAX_REPS), timed one by one; the median is the figure. A warm-up that
 * takes the budget or more is the figure alone. Besides, how many calls took the median's
 * time to BENCH_TIE_REL of it: a kernel's calls spread by microseconds (caches, interrupts),
 * so half of them or more equal to a tenth of a microsecond at 8 ms is not the kernel's
 * time but a wait that ends on a fixed grid: the scheduler tick where another runnable
 * thread shares the cores (the calls then start and end just after a tick, and a whole
 * number of ticks separates the two), or a clock that counts in ticks. Such a row is
 * marked suspect (docs/notes/kernel-tuning.md#bench-identical-times).
 */
#include <stdlib.h>

#include "bench/bench.h"

void bench_time(void (*fn)(void *ctx), void *ctx, double budget, double (*now)(void),
                struct bench_timing *out) {
    double t0 = now();
    fn(ctx);
    const double first = now() - t0;
    *out = (struct bench_timing){first, first, 0, 0, 0};
    if (first >= budget) return;
    int reps = (int)(budget / (first > 1e-7 ? first : 1e-7));
    reps = reps < 3 ? 3 : reps > BENCH_MAX_REPS ? BENCH_MAX_REPS : reps;
    double t[BENCH_MAX_REPS];
    for (int r = 0; r < reps; r++) {
        t0 = now();
        fn(ctx);
        t[r] = now() - t0;
    }
    qsort(t, (size_t)reps, sizeof t[0], bench_cmp_double);
    out->median = t[reps / 2], out->min = t[0], out->reps = reps;
    for (int r = 0; r < reps; r++) out->tied += t[r] - out->median <= BENCH_TIE_REL * out->median &&
                                                out->median - t[r] <= BENCH_TIE_REL * out->median;
    out->suspect = out->median > 0 && 2 * out->tied >= reps;
}
