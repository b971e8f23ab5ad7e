/*
 * clips.h — pixel sources as preprocessed clips [3, T, H, W]: still images, uint8 frame
 * arrays (.npy) and video files, through one preprocessing configuration
 * (input/preprocess.h; the caller makes it from the model's recipe).
 *
 *   images   the files form one clip, in order, each resized and cropped on its own
 *            (one image is one frame: the model fills a tubelet, takes V-JEPA 2.1's
 *            image path or repeats it as its family says); as items, each file is a
 *            clip of its own (one frame), clip k the k-th file
 *   frames   a uint8 [T, H, W, 3] RGB array, one clip; as items, [N, H, W, 3] is N
 *            clips of one frame each
 *   video    decoded once, in order, never seeking (input/video.h). The clip plan (the
 *            frame indices of every clip: Meta's partitioned sampling, or dense windows
 *            over the whole video) is made up front from the packet count; decoding then
 *            runs forward as far as the next clip needs, preprocessing only frames some
 *            clip uses, and keeps the preprocessed frames later clips still need
 *            (overlapping windows): a long video in dense mode costs one decode and
 *            memory for one window.
 *
 * Errors are status + a one-line reason naming the file (or the frame), never printed.
 * Tested by tests/input/test_cli_input.sh (bit-identical outputs against the
 * torchvision-preprocessed tensors of tests/gen/gen_preprocess.py) and test_video.c.
 */
#ifndef JEPA_INPUT_CLIPS_H
#define JEPA_INPUT_CLIPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "input/preprocess.h"
#include "runtime/error.h"

#define CLIPS_MAX_IMAGES 4096
#define CLIPS_DEFAULT_FRAME_STEP 4   /* Meta's frame_step in every V-JEPA 2 / 2.1 eval config */
#define CLIPS_MAX_CLIPS 1000000
/* Bounds checked before anything is allocated or decoded: one preprocessed clip (3 x T x
 * crop^2 floats) at most 1 GiB, a video's clip plan at most 2^22 frame indices (32 MiB),
 * a video at most 2^24 frames (its per-frame bookkeeping 64 MiB). */
#define CLIPS_MAX_CLIP_BYTES ((int64_t)1 << 30)
#define CLIPS_MAX_PLAN ((int64_t)1 << 22)
#define CLIPS_MAX_VIDEO_FRAMES ((int64_t)1 << 24)

/* How a video is cut into clips. */
struct clip_sampling {
    int frames_per_clip;   /* >= 1 */
    int frame_step;        /* >= 1: a clip spans frames_per_clip * frame_step frames */
    int num_clips;         /* >= 1: Meta's partitioned sampling (ignored when dense) */
    bool dense;            /* windows over the whole video */
    int64_t stride;        /* dense: a window every `stride` frames (0: back to back) */
};

/* s with its 0 fields given the defaults: frames_per_clip the model's jepa.enc.n_frames
 * (model_frames; 1 when it has none), frame_step CLIPS_DEFAULT_FRAME_STEP, num_clips 1. */
struct clip_sampling clips_sampling_defaults(struct clip_sampling s, int model_frames);

struct clip_reader;

jepa_status clips_open_images(struct clip_reader **r, const char *const *paths, int n,
                              const struct pre_cfg *cfg, struct jerr *e);
jepa_status clips_open_frames(struct clip_reader **r, const char *npy_path, const struct pre_cfg *cfg,
                              struct jerr *e);
/* The same as items: n images, or the N rows of a uint8 [N, H, W, 3] array, as n (N)
 * clips of one frame each, read in order. */
jepa_status clips_open_image_items(struct clip_reader **r, const char *const *paths, int n,
                                   const struct pre_cfg *cfg, struct jerr *e);
jepa_status clips_open_frame_items(struct clip_reader **r, const char *npy_path, const struct pre_cfg *cfg,
                                   struct jerr *e);
jepa_status clips_open_video(struct clip_reader **r, const char *path, const struct pre_cfg *cfg,
                             const struct clip_sampling *s, struct jerr *e);
/* What a caller names to read, the CLI's -i / --frames-npy / VIDEO and the Python
 * package's paths: a video, else a frame array, else the images (one clip, or with
 * items one clip per image). Sampling fields at 0 take clips_sampling_defaults. */
struct clip_inputs {
    const char *video;
    const char *frames_npy;
    const char *const *images;   /* kept by the reader: valid until clips_close */
    int n_images;
    struct clip_sampling sampling;
    bool items;                  /* the images, or the frame array's rows, are items: one
                                    clip of one frame each (not the frames of one clip) */
};

/* Open in with the model's preprocessing recipe and the caller's overrides pp (NULL:
 * none); model_frames is the model's jepa.enc.n_frames. A recipe that the overrides do
 * not fit is reported naming resize_opt (the caller's name of the resize_short option). */
jepa_status clips_open_inputs(struct clip_reader **r, const struct clip_inputs *in, const jepa_preprocess_recipe *recipe,
                              const struct jepa_preprocess_params *pp, int model_frames, const char *resize_opt,
                              struct jerr *e);
/* The same from memory (a server's request): one encoded image (PNG / JPEG), one clip;
 * an MP4 / WebM video's bytes (input/video.h, video_open_memory). data must stay valid
 * until clips_close; name is for messages. */
jepa_status clips_open_image_memory(struct clip_reader **r, const char *name, const void *data, size_t size,
                                    const struct pre_cfg *cfg, struct jerr *e);
jepa_status clips_open_video_memory(struct clip_reader **r, const char *name, const void *data, size_t size,
                                    const struct pre_cfg *cfg, const struct clip_sampling *s, struct jerr *e);
void clips_close(struct clip_reader *r);

/* The number of clips, and the geometry every clip has. */
int clips_count(const struct clip_reader *r);
void clips_shape(const struct clip_reader *r, int *T, int *H, int *W);
/* Video only (NULL / 0 otherwise): clip k's frame indices [T], the video's packet count
 * and frame size. */
const int64_t *clips_frames(const struct clip_reader *r, int k);
int64_t clips_video_length(const struct clip_reader *r, int *w, int *h);

/* The next clip into x [3, T, H, W] (caller's memory). */
jepa_status clips_next(struct clip_reader *r, float *x, struct jerr *e);

/* A note for the user, once (NULL: none): the video's decodable frames ran out before its
 * packet count, and later indices repeat the last decoded frame. */
const char *clips_take_note(struct clip_reader *r);

#endif
