/*
 * run_many.h — many inputs per process for `jepa embed` / `jepa classify --out-dir D`:
 * the input list (FILE and DIR arguments, --recursive, --inputs LIST.txt), one output
 * file per input named after it, --resume, the index and the fingerprint of what made
 * each output (cli/many_index.h), a clean stop on SIGINT / SIGTERM, progress on stderr.
 * The per-input work is the caller's (cmd_run.c): the model is loaded once and each
 * input goes through `one`.
 */
#ifndef JEPA_CLI_RUN_MANY_H
#define JEPA_CLI_RUN_MANY_H

#include <stdbool.h>

#include "cli/many_index.h"

struct jepa_ctx;

struct many_opts {
    const char *cmd;            /* "embed" | "classify" (messages) */
    const char *out_dir;        /* one file per input here, or */
    const char *stack_out;      /* every input's output stacked into this .npy (rows in the index) */
    const char *inputs_list;    /* --inputs LIST.txt or NULL */
    const char *const *args;    /* FILE / DIR arguments */
    int n_args;
    bool resume, quiet, verbose;
    bool recursive;             /* DIR arguments: their subfolders too (outputs mirror them) */
    bool json;                  /* --json: the summary as one JSON object on stdout */
    struct many_numbers numbers;   /* what decides the outputs' numbers (the fingerprint) */
    const struct jepa_ctx *ctx;    /* the run's device, kernels and threads (the header row) */
    const char *suffix;         /* appended to the input's file name: ".npy", ".logits.npy" */
    /* batching (--batch N, N > 1): before the inputs run one by one, groups of up to N
     * of them (the next ones to run, in list order) go to prefetch, which may encode
     * those of one shape together; `one` then takes what it finds prefetched */
    int batch;
    void (*prefetch)(void *user, const char *const *inputs, int n);
};

/* What one input gave (filled by `one`). */
struct many_result {
    int clips;                  /* clips encoded */
    bool stacked;               /* the output has a leading clip axis (one row per clip) */
    int top1;                   /* classify: top class, -1 for none */
    double p1;                  /* its probability */
    const char *label;          /* its label or NULL */
};

/* Process one input into `out` (the output file to write atomically). 0, or a non-zero
 * status after printing the reason (cli_fail). */
typedef int (*many_one_fn)(void *user, const char *input, const char *out, struct many_result *r);

/* Run every input: 0 when all succeeded (or were kept by --resume), CLI_EXIT_FAIL when
 * any failed (each reported on its own stderr line; the last line counts them),
 * CLI_EXIT_USAGE for a bad list (before any input runs), or 128 + the signal after a
 * SIGINT / SIGTERM (the input being run is finished first). Appends to OUT_DIR/index.jsonl
 * as each input finishes, or with stack_out: the outputs into STACK_OUT.parts/ first (its
 * own index.jsonl), then STACK_OUT (their rows concatenated) and STACK_OUT's name with
 * .index.jsonl for .npy. */
int run_many(const struct many_opts *o, many_one_fn one, void *user);

#endif
