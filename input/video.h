/*
 * video.h — video files in: sequential FFmpeg decoding to packed RGB24 and the clip
 * sampling conventions of Meta's V-JEPA evaluations.
 *
 * Decoding (needs -Dvideo, FFmpeg's libavformat/libavcodec/libswscale): frames come out
 * in presentation order, one after the other, exactly as PyAV's
 *   for f in container.decode(video=0): f.to_ndarray(format="rgb24")
 * returns them — swscale with SWS_BILINEAR, the frame's own colour matrix and range
 * (BT.601 when untagged), full-range RGB out. Nothing ever seeks: seeking snaps to
 * key frames on many codecs and quietly returns a neighbouring frame.
 *
 * Sampling (always built): a video's length is its number of video packets (what
 * decord's len(VideoReader) counts, found by demuxing without decoding); clip frame
 * indices follow src/datasets/video_dataset.py of facebookresearch/vjepa2 with
 * random_clip_sampling=False and allow_clip_overlap=True (the eval setting):
 *   window = fpc * fstp frames, indices = clip(linspace(start, start + window, fpc),
 *   start, start + window - 1) truncated to integers — so the effective stride is
 *   window / (fpc - 1), not fstp.
 *
 * Tested by tests/input/test_video.c: decoded frames against PyAV's (CRC32 of every
 * frame, two frames in full), indices against numpy (tests/gen/gen_preprocess.py).
 */
#ifndef JEPA_INPUT_VIDEO_H
#define JEPA_INPUT_VIDEO_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/error.h"

/* ---- sampling ---- */

/* Meta's partitioned sampling: num_clips clips of fpc indices each, idx[num_clips * fpc].
 * The video is split into num_clips equal partitions; a partition longer than the window
 * gets one window at its start; otherwise clips are spread with a common step over the
 * video and a video shorter than the window repeats its last sampled frame. */
jepa_status video_clip_indices(int64_t video_len, int fpc, int fstp, int num_clips, int64_t *idx,
                               struct jerr *e);

/* Dense tiling for long videos: windows of fpc * fstp frames starting every `stride`
 * frames (stride <= 0: one window, i.e. no overlap), plus one window ending on the last
 * frame when the tiling would leave a tail, so every frame lies in some window. Each
 * window is sampled like one Meta clip. A video no longer than a window gives one clip
 * (video_clip_indices with num_clips = 1). Returns the number of clips; with idx != NULL
 * also writes idx[n * fpc]. 0 on bad arguments. */
int64_t video_dense_indices(int64_t video_len, int fpc, int fstp, int64_t stride, int64_t *idx);

/* The fpc frame offsets a window of fpc * fstp frames samples, as each full window of
 * video_dense_indices does (a live stream's windows, cli/cmd_stream.c): off[fpc], from 0 to
 * at most fpc * fstp - 1. */
void video_window_offsets(int fpc, int fstp, int64_t *off);

/* ---- decoding ---- */

/* True when this build can decode video files. */
bool video_available(void);

/* Demux the file (no decoding): number of video packets = frames, and the frame size. */
jepa_status video_probe(const char *path, int64_t *n_frames, int *h, int *w, struct jerr *e);

struct video_reader;

jepa_status video_open(struct video_reader **out, const char *path, struct jerr *e);
/* The same for a video held in memory (an MP4 / QuickTime or Matroska / WebM file's bytes,
 * valid until video_close; name is for messages). Only those two demuxers are tried, and
 * the demuxer may open nothing else (no playlists, no referenced files). */
jepa_status video_probe_memory(const char *name, const void *data, size_t size, int64_t *n_frames, int *h,
                               int *w, struct jerr *e);
jepa_status video_open_memory(struct video_reader **out, const char *name, const void *data, size_t size,
                              struct jerr *e);
/* Decode the next frame in order. *index is its number (0, 1, ...). With want_rgb the
 * frame is converted and *rgb points to h * w * 3 packed bytes owned by the reader,
 * valid until the next call; otherwise *rgb is NULL (decoded but not converted).
 * At the end: JEPA_OK with *eof = true. */
jepa_status video_next(struct video_reader *r, bool want_rgb, const uint8_t **rgb, int *h, int *w,
                       int64_t *index, bool *eof, struct jerr *e);
/* The last frame video_next() returned, converted again (for a file whose decodable
 * frames run out before its packet count: callers repeat it, as decord would clamp). */
jepa_status video_last(struct video_reader *r, const uint8_t **rgb, int *h, int *w, int64_t *index,
                       struct jerr *e);
void video_close(struct video_reader *r);

/* ---- live streams ---- */

/* A source read as it arrives (`jepa embed --stream`): anything FFmpeg opens by URL
 * (udp://, rtsp://, http://, tcp://, ...), "-" for standard input, or a local path: a
 * regular file is followed as it grows (it ends when it has not grown for the read
 * timeout), a FIFO or character device is read as a pipe. Local sources are read through
 * poll(2), network ones through FFmpeg's interrupt callback, so that nothing blocks past
 * a deadline: opening (and probing the stream) within open_timeout_ms, each packet
 * within read_timeout_ms, and *stop (set by a signal handler) ends a read within ~0.1 s.
 * Pipes and streams cannot seek: the container must be streamable (MPEG-TS, NUT,
 * Matroska, Y4M, MJPEG, fragmented MP4; not an MP4 whose index is at its end). */
struct video_stream_cfg {
    int open_timeout_ms, read_timeout_ms;   /* >= 1 */
    volatile sig_atomic_t *stop;            /* NULL: never stopped */
};

/* True for a URL that FFmpeg reaches over a network (a scheme other than file: / pipe:):
 * the sources a reconnect policy applies to. */
bool video_is_network(const char *url);
jepa_status video_open_stream(struct video_reader **out, const char *url, const struct video_stream_cfg *cfg,
                              struct jerr *e);
/* How a stream's video_next ended with *eof: true when *cfg->stop was set (the frames
 * still in the decoder are dropped), false at the source's own end. A read timeout is an
 * error (JEPA_ERR_IO, "nothing received for ..."), except on a followed file, where it is
 * the end. */
bool video_stopped(const struct video_reader *r);
/* The presentation time in seconds of the last frame video_next returned (its best-effort
 * timestamp in the stream's time base); NAN when the stream has none. */
double video_last_seconds(const struct video_reader *r);

#endif
