/*
 * inputs.h — the CLI's pixel inputs for `jepa embed / classify / predict`: still images,
 * uint8 frame arrays and video files, turned into preprocessed clips [3, T, H, W] with
 * the model's jepa.pre.* parameters (input/preprocess.c), and the multi-clip runs
 * (several sampled clips of a video, or dense tiling of a long one).
 *
 *   -i IMAGE (repeatable)    the images form one clip, in order, each resized and
 *                            cropped on its own; one image is one frame (the library
 *                            fills a tubelet or takes V-JEPA 2.1's image path), except
 *                            for LeVJEPA, which takes a still as 16 repeated frames
 *   --frames-npy F.npy       uint8 [T, H, W, 3] RGB frames, one clip
 *   VIDEO                    a video file, decoded in order (input/video.c)
 *   --frames-per-clip F      frames per clip (default: the model's jepa.enc.n_frames)
 *   --frame-step S           Meta's frame_step (default 4): a clip covers F * S frames,
 *                            sampled with np.linspace
 *   --num-clips C            Meta's partitioned sampling, C clips; classify averages
 *                            their softmax distributions
 *   --dense [--stride K]     tile the whole video with windows every K frames (default:
 *                            one window, no overlap); one output per clip
 *   --no-antialias           cv2.INTER_LINEAR resize (Meta's V-JEPA 2.1 evaluation)
 *   --resize-short N         short side after the resize (default jepa.pre.resize_short)
 *   --norm fused|sequential  (px - 255 mean) / (255 std) (HF, default) or
 *                            (px / 255 - mean) / std (Meta)
 *
 * Tested by tests/input/test_cli_input.sh.
 */
#ifndef JEPA_CLI_INPUTS_H
#define JEPA_CLI_INPUTS_H

#include "cli/npy.h"
#include "jepa.h"

#define INPUTS_MAX_IMAGES 4096

struct inputs_opts {
    const char *images[INPUTS_MAX_IMAGES];
    int n_images;
    const char *frames_npy;
    const char *video;
    int fpc, fstp, num_clips;   /* 0: default */
    int dense;
    long long stride;           /* 0: one window */
    int no_antialias;
    int resize_short;           /* 0: the model's */
    int norm_sequential;
    int sampling_given;         /* any of the sampling options was given */
    int pre_given;              /* any of the preprocessing options was given */
};

/* Consume argv[*i] (and its value, advancing *i) when it is an input option.
 * Returns 1 when consumed, 0 when it is not an input option, CLI_EXIT_USAGE after
 * printing a usage error. */
int inputs_parse(struct inputs_opts *o, const char *cmd, int argc, char **argv, int *i);
/* A positional argument: the video file. 0, or CLI_EXIT_USAGE after printing. */
int inputs_positional(struct inputs_opts *o, const char *cmd, const char *arg);
/* Number of pixel inputs given (-i counts once); 0 when none. */
int inputs_given(const struct inputs_opts *o);
/* Cross-option checks after parsing: 0 or CLI_EXIT_USAGE after printing. */
int inputs_check(const struct inputs_opts *o, const char *cmd);
/* The usage lines of the input options. */
void inputs_usage(void);

/* ---- loading ---- */

struct inputs_reader;

/* Open the inputs for model m: decode / probe, plan the clips. 0, or CLI_EXIT_FAIL after
 * printing the reason. */
int inputs_open(struct inputs_reader **r, const struct inputs_opts *o, const jepa_model *m, int quiet);
int inputs_n_clips(const struct inputs_reader *r);
/* A name for messages: the video path, the .npy path or the first image. */
const char *inputs_name(const struct inputs_reader *r);
/* The next clip as a float32 npy [3, T, H, W] (clip->data malloc'ed; npy_free() it).
 * 0, or CLI_EXIT_FAIL after printing. */
int inputs_next(struct inputs_reader *r, struct npy *clip, int *T, int *H, int *W);
void inputs_close(struct inputs_reader *r);

/* ---- runs over several clips ---- */

enum inputs_cmd { INPUTS_EMBED, INPUTS_PREDICT, INPUTS_CLASSIFY };

struct inputs_run_opts {
    enum inputs_cmd cmd;
    const char *pool;       /* embed: none | mean | cls | lewm */
    int hier;               /* embed: hierarchical levels */
    const char *out;        /* embed: -o, one row block per clip */
    const char *logits_out; /* classify: [n_clips, K] logits */
    int topk, quiet, timing;
    int batch;              /* embed: clips per forward pass (0, 1: one at a time) */
};

/* Encode every clip of r (embed / classify). Classify prints, for sampled clips, the
 * top-k of the mean of the per-clip softmax distributions (Meta's evaluation), and for
 * dense clips the top-k of every clip with its frame range. Embed writes the per-clip
 * outputs stacked on a leading clip axis (ro->batch clips per forward pass: the same
 * outputs, in fewer passes). Returns the exit code. */
int inputs_run_clips(struct inputs_reader *r, const jepa_model *m, jepa_ctx *c,
                     const struct inputs_run_opts *ro);

#endif
