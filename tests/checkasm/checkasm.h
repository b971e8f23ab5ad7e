/*
 * checkasm.h — shared helpers of the kernel tests (in the spirit of dav1d's checkasm):
 * a seeded RNG (the seed is printed, JEPA_SEED=... replays a run), random fills,
 * tolerance checks that print the worst element, and the list of ISA levels this
 * machine can run, each as a kernel table to compare against the reference table.
 *
 * A test program returns 0 when every check passed, 1 otherwise, and 77 (meson:
 * skipped) only when it had nothing to test on this machine (or nothing the filter
 * named). Every program takes (ca_options):
 *   --function NAME   only the slot NAME, as `jepa cpu` prints it (gemm_f16, attn, rope,
 *                     silu, ...); a slot of the other program runs nothing (exit 77)
 *   --isa LEVEL       only the ISA level LEVEL: ref (the reference's own checks), avx2,
 *                     avx512 (also the SIMDe build's avx512(simde)) or neon; a level this
 *                     machine lacks runs nothing (exit 77)
 * e.g. `checkasm_gemm --function gemm_q4_K --isa avx2`. With a filter the program ends by
 * listing the slot@level pairs it ran. A bad option prints the usage and exits 2.
 *
 * A fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE) prints, on stderr,
 *   checkasm: SIGSEGV in slot gemm_f16 at level avx2 (JEPA_SEED=... replays the run)
 * and the process then dies of that signal (the handler that was there before, a
 * sanitizer's, runs next). The slot and level are those of the last ca_run / ca_at
 * before the signal: each test names the slot before it calls it.
 * For the test of that handler (tests/checkasm/test_harness.sh) `--crash SLOT` makes SLOT
 * a function that writes through a null pointer, at every level above the reference.
 */
#ifndef JEPA_TESTS_CHECKASM_H
#define JEPA_TESTS_CHECKASM_H

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
static uint64_t ca_seed_value;
/* Seed from JEPA_SEED or the clock; printed so a failure can be replayed. stdout becomes
 * line-buffered, so that what was printed before a crash reaches the log. */
static inline void ca_seed(const char *prog) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *s = getenv("JEPA_SEED");
    ca_state = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    ca_seed_value = ca_state;
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

/* ---- the filter (--function, --isa) and the crash report ---- */

static const char *ca_only_fn, *ca_only_isa, *ca_crash_slot;
/* what runs now, for the signal handler: set by ca_run / ca_at before each slot is called */
static const char *volatile ca_cur_slot = "(setup)";
static const char *volatile ca_cur_isa = "-";
/* the slot@level pairs run under a filter, listed by ca_finish */
#define CA_MAX_RAN 64
static const char *ca_ran_slot[CA_MAX_RAN], *ca_ran_isa[CA_MAX_RAN];
static int ca_nran;

/* LEVEL names the level `name`: equal, or `name` is LEVEL followed by "(...)". */
static inline int ca_isa_is(const char *level, const char *name) {
    const size_t n = strlen(level);
    return !strcmp(level, name) || (!strncmp(level, name, n) && name[n] == '(');
}

/* Whether the filter lets the checks of `slot` at `isa` run. */
static inline int ca_wanted(const char *slot, const char *isa) {
    return (!ca_only_fn || !strcmp(ca_only_fn, slot)) &&
           (!ca_only_isa || ca_isa_is(ca_only_isa, isa));
}
/* ca_wanted, and if so the checks of `slot` at `isa` are what runs now (named on a crash)
 * and are listed at the end. */
static inline int ca_run(const char *slot, const char *isa) {
    if (!ca_wanted(slot, isa)) return 0;
    ca_cur_slot = slot, ca_cur_isa = isa;
    int seen = 0;
    for (int i = 0; i < ca_nran; i++)
        seen |= !strcmp(ca_ran_slot[i], slot) && !strcmp(ca_ran_isa[i], isa);
    if (!seen && ca_nran < CA_MAX_RAN) ca_ran_slot[ca_nran] = slot, ca_ran_isa[ca_nran++] = isa;
    return 1;
}
/* Name another slot called inside the checks of the current one (gemm_prepack in gemm's). */
static inline void ca_at(const char *slot, const char *isa) {
    ca_cur_slot = slot, ca_cur_isa = isa;
}

static inline void ca_write(const char *s) {   /* async-signal-safe */
    size_t n = 0;
    while (s[n]) n++;
    while (n) {
        const ssize_t w = write(2, s, n);
        if (w <= 0) return;
        s += w, n -= (size_t)w;
    }
}

#define CA_NSIG 4
static const int ca_signals[CA_NSIG] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
static const char *const ca_signal_names[CA_NSIG] = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"};
static struct sigaction ca_old_action[CA_NSIG];

/* Name the signal, the slot and the level; then hand the signal to the handler that was
 * there before (the default: the process dies of it; a sanitizer's: its report). */
__attribute__((unused)) static void ca_on_signal(int sig) {
    int i = 0;
    while (i < CA_NSIG - 1 && ca_signals[i] != sig) i++;
    char seed[24];
    int n = (int)sizeof seed - 1;
    seed[n] = 0;
    uint64_t v = ca_seed_value;
    do seed[--n] = (char)('0' + v % 10), v /= 10; while (v && n > 0);
    ca_write("checkasm: ");
    ca_write(ca_signal_names[i]);
    ca_write(" in slot ");
    ca_write(ca_cur_slot);
    ca_write(" at level ");
    ca_write(ca_cur_isa);
    ca_write(" (JEPA_SEED=");
    ca_write(seed + n);
    ca_write(" replays the run)\n");
    sigaction(sig, &ca_old_action[i], NULL);
    raise(sig);   /* SA_NODEFER: delivered now; a fault would also recur on return */
}

/* The slot --crash installs: a write through a null pointer. */
__attribute__((unused)) static void ca_crash_fn(void) {
    static int *volatile null_ptr;
    *null_ptr = 1;
    raise(SIGSEGV);
}

/* --crash SLOT: put ca_crash_fn in that slot of k (a table of one level). Every slot is a
 * function pointer (kernels.c, jk_slot_fn); the slot's callers pass it arguments it
 * ignores, and it never returns. */
static inline void ca_inject(struct jk_kernels *k) {
    if (!ca_crash_slot) return;
    for (int s = 0; s < jk_nslots; s++)
        if (!strcmp(jk_slots[s].name, ca_crash_slot)) {
            void (*fn)(void) = ca_crash_fn;
            memcpy((char *)k + jk_slots[s].offset, &fn, sizeof fn);
        }
}

static inline void ca_usage(const char *prog, FILE *f) {
    fprintf(f, "usage: %s [--function SLOT] [--isa ref|avx2|avx512|neon]\n"
               "  SLOT: one of", prog);
    for (int s = 0; s < jk_nslots; s++) fprintf(f, " %s", jk_slots[s].name);
    fprintf(f, "\n  (JEPA_SEED=N replays a run)\n");
}

/* Parse the options above from argv[first..] and install the signal handler. Returns -1
 * to go on, or the exit code to end with after printing the usage: 2 on a bad option (on
 * stderr), 0 after --help. */
static inline int ca_options(const char *prog, int argc, char **argv, int first) {
    for (int i = first; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        const size_t klen = eq ? (size_t)(eq - a) : strlen(a);
        const char **dst = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            ca_usage(prog, stdout);
            return 0;
        }
        if (klen == 10 && !strncmp(a, "--function", klen)) dst = &ca_only_fn;
        else if (klen == 5 && !strncmp(a, "--isa", klen)) dst = &ca_only_isa;
        else if (klen == 7 && !strncmp(a, "--crash", klen)) dst = &ca_crash_slot;
        const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!dst || !v || !*v) {
            fprintf(stderr, "%s: %s %s\n", prog, dst ? "missing value for" : "unknown option", a);
            ca_usage(prog, stderr);
            return 2;
        }
        *dst = v;
    }
    int fn_ok = !ca_only_fn, crash_ok = !ca_crash_slot;
    for (int s = 0; s < jk_nslots; s++) {
        fn_ok |= ca_only_fn && !strcmp(ca_only_fn, jk_slots[s].name);
        crash_ok |= ca_crash_slot && !strcmp(ca_crash_slot, jk_slots[s].name);
    }
    static const char *const isas[] = {"ref", "avx2", "avx512", "neon"};
    int isa_ok = !ca_only_isa;
    for (size_t i = 0; i < sizeof isas / sizeof *isas; i++)
        isa_ok |= ca_only_isa && !strcmp(ca_only_isa, isas[i]);
    if (!fn_ok || !crash_ok || !isa_ok) {
        fprintf(stderr, "%s: unknown %s '%s'\n", prog, !isa_ok ? "ISA level" : "slot",
                !isa_ok ? ca_only_isa : !fn_ok ? ca_only_fn : ca_crash_slot);
        ca_usage(prog, stderr);
        return 2;
    }
    for (int i = 0; i < CA_NSIG; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = ca_on_signal;
        sa.sa_flags = SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(ca_signals[i], &sa, &ca_old_action[i]);
    }
    return -1;
}

/* The level named by --isa is not among the n of this machine (ref is always here). */
static inline int ca_isa_missing(const struct ca_level *lv, int n) {
    if (!ca_only_isa || !strcmp(ca_only_isa, "ref")) return 0;
    for (int i = 0; i < n; i++)
        if (ca_isa_is(ca_only_isa, lv[i].name)) return 0;
    return 1;
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

/* The summary line and the exit code; under a filter first the slot@level pairs that ran
 * (77 when none did). */
static inline int ca_finish(const char *prog) {
    if (ca_only_fn || ca_only_isa) {
        printf("%s: ran", prog);
        for (int i = 0; i < ca_nran; i++) printf(" %s@%s", ca_ran_slot[i], ca_ran_isa[i]);
        printf("%s\n", ca_nran ? "" : " nothing (skipped)");
        if (!ca_nran && !check_failed) return 77;
    }
    if (check_failed) {
        printf("%s: %d check(s) FAILED\n", prog, check_failed);
        return 1;
    }
    printf("%s: all checks passed\n", prog);
    return 0;
}

#endif
