/*
 * clip_source.h — where `jepa embed / predict / classify` take their clips from: nb clips
 * held in memory (a preprocessed input tensor, test patterns, a one-clip pixel input), or
 * a reader streaming a video's clips or the items of several images, one clip each
 * (input/clips.h). The run loop of cli/cmd_run.c asks
 * for them in passes of g clips (source_clips).
 *
 * A single clip (of a pixel input, a test pattern or an input tensor) is only sized by
 * source_open and made by source_load once the request is known, so that it can be
 * written straight into the context's arena (jepa_ctx_embed_input), where it costs no
 * memory of its own.
 *
 *   --input-tensor X.npy   float32 [C, T, H, W], [C, H, W] (T = 1) or, with batch_ok,
 *                          [B, C, T, H, W]: B clips; C must be the model's channels
 *   --test-pattern TxHxW   deterministic drifting colour gratings, normalised to about
 *                          [-2, 2] like an ImageNet-normalised frame; with batch N > 1,
 *                          N clips each with its own phase (clip 0 is the single run's)
 *
 * Tested by tests/models/test_cli_run.sh and tests/input/test_cli_input.sh.
 */
#ifndef JEPA_CLI_CLIP_SOURCE_H
#define JEPA_CLI_CLIP_SOURCE_H

#include <stdbool.h>

#include "cli/inputs.h"
#include "input/clips.h"
#include "input/npy.h"
#include "jepa.h"

/* The input options of one run, as source_open reads them: exactly one of the pixel
 * inputs, input_tensor and test_pattern is given (the parser checks). */
struct clip_request {
    const struct inputs_opts *in;   /* -i / --frames-npy / VIDEO (cli/inputs.h) */
    const char *input_tensor;       /* --input-tensor X.npy, or NULL */
    const char *test_pattern;       /* --test-pattern TxHxW, or NULL */
    int batch;                      /* test patterns: this many clips (0: one) */
    bool batch_ok;                  /* a 5-D tensor is accepted as B clips (embed) */
    bool verbose;                   /* a video's clip plan and its notes on stderr */
};

struct clip_source {
    struct clip_reader *rdr;   /* streams clips when they are more than one */
    struct npy mem;            /* the clips in memory [nb, C, T, H, W] */
    int nb, T, H, W;
    bool stacked;              /* the outputs get a leading clip (or item) axis */
    const char *name;          /* for messages */
    bool pending;              /* mem is sized, its one clip not made yet (source_load) */
    struct clip_reader *one;   /* the reader of a pending pixel input */
    const char *npy_path;      /* the file of a pending input tensor (mem: its header) */
                               /* neither: a pending test pattern */
    int in_chans;
    bool in_arena;             /* mem.data is the context's (not freed here) */
};

/* Open the request's input for model m (in_chans: its input channels): its geometry, its
 * clip count, and the clips themselves where they are several in memory. 0, or the exit
 * status after printing the reason (source_close is still due). */
int source_open(struct clip_source *s, const struct clip_request *rq, const jepa_model *m, int in_chans);
/* A source whose one clip was encoded already (a batch of many inputs): its name and
 * geometry only, no clips. */
void source_open_encoded(struct clip_source *s, const char *name, int T, int H, int W);
/* Makes a pending source's clip(s): into dst (room for them: the context's arena), or
 * into memory of its own when dst is NULL. 0 at once when nothing is pending. */
int source_load(struct clip_source *s, float *dst);
/* Clips k0 .. k0 + g - 1 as one [g, C, T, H, W] array: in place for clips in memory, read
 * into buf (room for g clips) otherwise. NULL after printing the reason. */
const float *source_clips(struct clip_source *s, int k0, int g, float *buf, bool verbose);
/* The source frame indices of streamed clip k (T of them), NULL for clips in memory. */
const int64_t *source_frames(const struct clip_source *s, int k);
void source_close(struct clip_source *s);

#endif
