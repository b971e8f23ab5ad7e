/*
 * stream.h — live video for `jepa embed --stream` and `jepa plan --stream`: frames read
 * as they arrive (input/video.h, video_open_stream), preprocessed with the model's
 * recipe, and cut into clip windows that are handed out as each one completes.
 *
 * Windows: F frames per clip (embed: --frames-per-clip, default the model's
 * jepa.enc.n_frames; plan: 1), a window spans F * S frames (--frame-step S, default 1
 * here: the latest frames, not Meta's evaluation step) sampled as a --dense window of a
 * video file is (np.linspace), and a new window starts every --stride K frames (default:
 * the window's span, back to back). Window w covers frames w K .. w K + F S - 1 (counted
 * from the first frame since the last (re)connection). Memory: the preprocessed frames of
 * the windows still open (at most F S of them), never the stream.
 *
 * The end: at the source's end (EOF) the window in progress is dropped (it has too few
 * frames) and the run exits 0; SIGINT or SIGTERM stops the reads within ~0.1 s, a window
 * being encoded is finished and written, the one being filled is dropped, the output is
 * flushed and the run exits 0 (a second signal kills as usual). A source that sends
 * nothing for --read-timeout seconds is an error (exit 1), except a regular file, which
 * is followed as it grows and ends when it has not grown for that long; opening gives up
 * after --open-timeout seconds. Network sources (a URL with a scheme other than file: /
 * pipe:) reconnect after an error or a timeout, --reconnect N times at most (default 0),
 * waiting 0.5, 1, 2, 4, 8, 8 ... s; a frame received resets the count; windows restart
 * after a reconnection. Files and pipes never reconnect.
 *
 * Tested by tests/input/test_cli_stream.sh.
 */
#ifndef JEPA_CLI_STREAM_H
#define JEPA_CLI_STREAM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "jepa.h"

struct stream_opts {
    const char *url;            /* --stream URL|-|PATH */
    int fpc, fstp;              /* 0: the default */
    long long stride;           /* 0: the window's span */
    int open_timeout, read_timeout;   /* seconds */
    int reconnect;
    int no_antialias, resize_short, norm_sequential, pre_given;
    int quiet, verbose;
};

void stream_opts_init(struct stream_opts *o);
/* Consume argv[*i] (and its value) when it is a stream option: 1 when consumed, 0 when
 * not one, CLI_EXIT_USAGE after printing. With pre_ok the preprocessing overrides
 * (--no-antialias, --resize-short, --norm) and --frames-per-clip / --frame-step count. */
int stream_parse(struct stream_opts *o, const char *cmd, bool pre_ok, int argc, char **argv, int *i);
/* The usage lines of the stream options. */
void stream_usage(FILE *f, bool pre_ok);

/* One complete window: clip [3, T, H, W] preprocessed (valid during the call), its
 * number, its first and last frames and their presentation times (NAN: none). */
struct stream_window {
    int64_t index, first, last;
    double pts_first, pts_last;
    const float *clip;
    int T, H, W;
};

/* Called for each window: 0 to go on, or an exit status (printed already) to stop. */
typedef int (*stream_window_fn)(void *user, const struct stream_window *w);

/* Read o->url for model m (fpc: frames per clip when o->fpc is 0) and call fn for every
 * window until the end, a signal, or an error. SIGINT and SIGTERM are caught for the
 * duration. 0 (EOF, signal), or the exit status after printing the reason. */
int stream_run(const struct stream_opts *o, const jepa_model *m, int fpc, stream_window_fn fn, void *user);

/* `jepa embed --stream ...` (cmd_run.c hands it over when --stream is among the
 * arguments). */
bool cli_stream_requested(int argc, char **argv);
int cmd_embed_stream(int argc, char **argv);
/* The usage of `jepa embed --stream` (also the end of `jepa embed --help`). */
void cli_embed_stream_usage(void);

#endif
