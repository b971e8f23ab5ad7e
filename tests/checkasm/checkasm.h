/*
 * checkasm.h — shared helpers of the kernel tests (in the spirit of dav1d's checkasm):
 * a seeded RNG (the seed is printed, JEPA_SEED=... replays a run), random fills,
 * tolerance checks that print the worst element, and the list of ISA levels this
 * machine can run, each as a kernel table to compare against the reference table.
 *
 * A test program returns 0 when every check passed, 1 otherwise, and 77 (meson:
 * skipped) only when it had nothing to test on this machine.
 */
#ifndef JEPA_TESTS_CHECKASM_H
#define JEPA_TESTS_CHECKASM_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"
#include "runtime/cpu.h"
#include "tests/check.h"

/* ---- RNG: splitmix64 ---- */
static uint64_t ca_state;
static inline uint64_t ca_next(void) {
    uint64_t z = (ca_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double ca_uniform(void) { return (double)(ca_next() >> 11) * 0x1.0p-53; }
static inline int ca_int(int lo, int hi) { return lo + (int)(ca_next() % (uint64_t)(hi - lo + 1)); }
static inline float ca_normal(void) {
    double u = ca_uniform(), v = ca_uniform();
    if (u < 1e-300) u = 1e-300;
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}
static inline void ca_fill(float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * ca_normal();
}
/* Seed from JEPA_SEED or the clock; printed so a failure can be replayed. */
static inline void ca_seed(const char *prog) {
    const char *s = getenv("JEPA_SEED");
    ca_state = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    printf("%s: seed %llu (JEPA_SEED=%llu to replay)\n", prog, (unsigned long long)ca_state,
           (unsigned long long)ca_state);
}

/* ---- ISA levels ---- */
struct ca_level {
    const char *name;
    unsigned flags;
};
/* Levels to test on this machine (beyond the reference): those the CPU has. */
static inline int ca_levels(struct ca_level *out) {
    unsigned f = jr_cpu_detect();
    int n = 0;
    if (f & JEPA_CPU_AVX2) out[n++] = (struct ca_level){"avx2", (unsigned)jr_cpu_cap(f, "avx2")};
    if (f & JEPA_CPU_AVX512) out[n++] = (struct ca_level){"avx512", (unsigned)jr_cpu_cap(f, "avx512")};
    if (f & JEPA_CPU_NEON) out[n++] = (struct ca_level){"neon", (unsigned)jr_cpu_cap(f, "neon")};
    for (int i = 0; i < n; i++) printf("  level %s available\n", out[i].name);
    return n;
}

/* ---- checks: CHECK and the counters of tests/check.h ---- */

/* |got - ref| <= atol + rtol * |ref| elementwise (NaN never passes). Returns the number
 * of violations and prints the worst one under `what`. */
static inline int ca_close(const char *what, const float *got, const float *ref, size_t n,
                           double atol, double rtol) {
    size_t bad = 0, worst = 0;
    double wr = -1.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)ref[i]);
        double lim = atol + rtol * fabs((double)ref[i]);
        double r = d / (lim > 0 ? lim : 1e-300);
        if (!(d <= lim)) bad++;
        if (!(r <= wr)) { wr = r; worst = i; }
    }
    if (bad) {
        check_failed++;
        printf("FAIL %s: %zu of %zu outside tolerance; worst [%zu] got %.9g ref %.9g\n", what,
               bad, n, worst, (double)got[worst], (double)ref[worst]);
    }
    return (int)bad;
}

/* Allocate n floats with a guard band of NaN-poisoned floats on both sides; ca_guard_ok
 * checks that a kernel wrote nothing outside [0, n). */
#define CA_GUARD 16
static inline float *ca_alloc_guarded(size_t n) {
    float *p = (float *)malloc((n + 2 * CA_GUARD) * sizeof(float));
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (size_t i = 0; i < n + 2 * CA_GUARD; i++) p[i] = NAN;
    return p + CA_GUARD;
}
static inline int ca_guard_ok(const float *p, size_t n) {
    for (int i = 1; i <= CA_GUARD; i++)
        if (!isnan(p[-i]) || !isnan(p[n + (size_t)i - 1])) return 0;
    return 1;
}
static inline void ca_free_guarded(float *p) { free(p - CA_GUARD); }

static inline int ca_finish(const char *prog) {
    if (check_failed) {
        printf("%s: %d check(s) FAILED\n", prog, check_failed);
        return 1;
    }
    printf("%s: all checks passed\n", prog);
    return 0;
}

#endif
