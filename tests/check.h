/*
 * check.h — the one check harness of the C (and C++) tests: CHECK counts a check, and on
 * failure prints "FAIL file:line: <condition>: <message>" and keeps going; check_finish
 * prints one summary line and gives the exit code. Set check_verbose to also print
 * "ok   <message>" for every passing check (the API test narrates its steps that way).
 * Header-only: each test program has its own counters. Test code only.
 */
#ifndef JEPA_TESTS_CHECK_H
#define JEPA_TESTS_CHECK_H

#include <stdio.h>

static int check_passed __attribute__((unused));
static int check_failed __attribute__((unused));
static int check_verbose __attribute__((unused));

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (cond) {                                                             \
            check_passed++;                                                     \
            if (check_verbose) {                                                \
                printf("ok   ");                                                \
                printf(__VA_ARGS__);                                            \
                printf("\n");                                                   \
            }                                                                   \
        } else {                                                                \
            check_failed++;                                                     \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);              \
            printf(__VA_ARGS__);                                                \
            printf("\n");                                                       \
        }                                                                       \
    } while (0)

/* A failure found outside CHECK (a helper that reports its own message). */
static inline void check_fail_count(void) { check_failed++; }

/* Print "<name>: N checks passed, M failed" and return the exit code (1 on failure). */
static inline int check_finish(const char *name) {
    printf("%s: %d checks passed, %d failed\n", name, check_passed, check_failed);
    fflush(stdout);
    return check_failed ? 1 : 0;
}

#endif
