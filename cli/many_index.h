/*
 * many_index.h — what a many-input run (cli/run_many.c) records so that --resume cannot
 * keep a stale output: the fingerprint of what made the outputs, a content hash of each
 * output, and the rows of index.jsonl read back.
 *
 * The fingerprint is FNV-1a 64 over the model's identity and the options that change the
 * numbers (many_numbers_json lists them, in one place). The model's identity is FNV-1a 64
 * over the GGUF's bytes before its data section (header, every KV pair, the tensor table:
 * names, types, shapes, offsets), the file size, and 64 samples of 4 KiB spread evenly
 * through the data section: another model, a requantized or re-exported one, or one whose
 * weights were retrained (every weight moves, so every sample does) reads differently,
 * for about 300 KiB read instead of the whole file (GiBs for a ViT-g). It is a change
 * detector, not a defence against a file forged to collide.
 *
 * Tested by tests/input/test_cli_corpus.sh.
 */
#ifndef JEPA_CLI_MANY_INDEX_H
#define JEPA_CLI_MANY_INDEX_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct inputs_opts;

/* What decides the numbers of a many-input run's outputs. */
struct many_numbers {
    const char *cmd;                /* "embed" | "classify" */
    const char *model;              /* the model file */
    const char *pool;               /* --pool */
    int hier;                       /* --hier */
    const char *precision;          /* the tier in force (jepa_ctx_precision) */
    const struct inputs_opts *in;   /* the preprocessing and clip sampling options */
};

struct many_fingerprint {
    char fp[17];          /* the fingerprint, 16 hex digits */
    char model_id[17];    /* the model's identity, 16 hex digits */
    char numbers[512];    /* the options that went into fp, as a JSON object */
};

/* 0, or CLI_EXIT_FAIL after printing (the model cannot be read as a GGUF). */
int many_fingerprint(struct many_fingerprint *f, const struct many_numbers *n);

/* FNV-1a 64 of a file's bytes and its size. 0, or -1 with errno set. */
int many_hash_file(const char *path, uint64_t *hash, long long *bytes);

/* s as a JSON string (quotes included): ", \ and control bytes escaped. */
void many_json_str(FILE *f, const char *s);

/* One row of index.jsonl as read back (strings point into the reader's line buffer). */
struct many_row {
    const char *output;        /* NULL: null or absent */
    const char *status;
    const char *fingerprint;
    const char *hash;          /* "fnv1a64:<16 hex>" */
    long long bytes, source_bytes, source_mtime_ns;   /* -1: absent */
    bool clip_axis;
};

/* Call row(user, r) for each input row of the index at path, in file order (the run
 * header rows and lines that are not a whole row, such as a last line cut short by a
 * crash, are passed over and counted in *unreadable). A missing index is no rows. 0, or
 * CLI_EXIT_FAIL after printing (the index cannot be read). */
int many_index_read(const char *path, void (*row)(void *user, const struct many_row *r), void *user,
                    long *unreadable);

#endif
