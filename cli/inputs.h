/*
 * inputs.h — the options of the CLI's pixel inputs for `jepa embed / classify / predict`
 * (still images, uint8 frame arrays, video files) and opening them for a model as a clip
 * reader (input/clips.h: decoding, the clip plan, the model's jepa.pre.* preprocessing).
 * The clips run through the one loop of cli/cmd_run.c.
 *
 *   [-i] IMAGE ...           (repeatable) each image is one item with one output row,
 *                            on image and video models alike: a still image is one
 *                            frame (the library fills a tubelet or takes V-JEPA 2.1's
 *                            image path; LeVJEPA repeats it as 16 frames); several
 *                            items are stacked on a leading axis, each preprocessed
 *                            on its own (every item's crop has the model's size)
 *   --images-npy F.npy       uint8 [N, H, W, 3] RGB images, N items (stacked even for N = 1)
 *   --as-clip                the images (or a DIR's images, by name) are the frames of
 *                            one clip, in order, each resized and cropped on its own
 *   --frames-npy F.npy       uint8 [T, H, W, 3] RGB frames, one clip
 *   VIDEO                    a video file, decoded in order (input/video.c)
 *   --frames-per-clip F      frames per clip (default: the model's jepa.enc.n_frames)
 *   --frame-step S           Meta's frame_step (default 4): a clip covers F * S frames,
 *                            sampled with np.linspace
 *   --num-clips C            Meta's partitioned sampling, C clips; classify averages
 *                            their softmax distributions (embed, classify)
 *   --dense [--stride K]     tile the whole video with windows every K frames (default:
 *                            one window, no overlap); one output per clip (embed,
 *                            classify)
 *   --no-antialias           cv2.INTER_LINEAR resize (Meta's V-JEPA 2.1 evaluation)
 *   --resize-short N         short side after the resize (default jepa.pre.resize_short)
 *   --norm fused|sequential  (px - 255 mean) / (255 std) (HF, default) or
 *                            (px / 255 - mean) / std (Meta)
 *
 * Tested by tests/input/test_cli_input.sh.
 */
#ifndef JEPA_CLI_INPUTS_H
#define JEPA_CLI_INPUTS_H

#include <stdbool.h>

#include "input/clips.h"
#include "jepa.h"

struct inputs_opts {
    const char *images[CLIPS_MAX_IMAGES];
    int n_images;
    int as_clip;                /* --as-clip: the images are one clip's frames */
    const char *images_npy;     /* --images-npy: uint8 [N, H, W, 3], N items */
    char **listed;              /* a DIR's image paths (--as-clip), owned: inputs_free */
    int n_listed;
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

/* Consume argv[*i] (and its value, advancing *i) when it is an input option (the
 * several-clip ones, --num-clips / --dense / --stride, only with clips_ok). Returns 1
 * when consumed, 0 when it is not an input option, CLI_EXIT_USAGE after printing a usage
 * error. */
int inputs_parse(struct inputs_opts *o, const char *cmd, bool clips_ok, int argc, char **argv, int *i);
/* A positional argument: an image (an item, or with --as-clip a frame), a DIR of
 * frames (--as-clip: its images in byte order of their names) or the video file. 0, or
 * the exit status after printing. */
int inputs_positional(struct inputs_opts *o, const char *cmd, const char *arg);
/* Number of pixel inputs given (the images count once); 0 when none. */
int inputs_given(const struct inputs_opts *o);
/* The input is items (one output row each: several images without --as-clip, or
 * --images-npy), not the clips of one video or one clip of frames. */
bool inputs_are_items(const struct inputs_opts *o);
/* The name of item k (an image's path; --images-npy: the array's). */
const char *inputs_item_name(const struct inputs_opts *o, int k);
/* What inputs_positional listed. */
void inputs_free(struct inputs_opts *o);
/* Cross-option checks after parsing: 0 or CLI_EXIT_USAGE after printing. */
int inputs_check(const struct inputs_opts *o, const char *cmd);
/* The usage lines of the input options (with or without the several-clip ones). */
void inputs_usage(bool clips_ok);

/* ---- opening ---- */

/* A name for messages: the video path, the .npy path or the first image. */
const char *inputs_name(const struct inputs_opts *o);
/* Open the pixel inputs for model m as a clip reader (input/clips.h) with the model's
 * preprocessing and the options' overrides; with verbose, a video's clip plan goes to
 * stderr. 0, or CLI_EXIT_FAIL after printing the reason. */
int inputs_open(struct clip_reader **r, const struct inputs_opts *o, const jepa_model *m, bool verbose);
/* The same without printing: the status and the reason in e. */
jepa_status inputs_open_quiet(struct clip_reader **r, const struct inputs_opts *o, const jepa_model *m,
                              struct jerr *e);

#endif
