/*
 * video.c — clip sampling (Meta's linspace convention, dense tiling) and sequential
 * FFmpeg decoding to RGB24 identical to PyAV's to_ndarray(format="rgb24"); see video.h.
 *
 * The decoder half is built only with -Dvideo (JEPA_HAVE_VIDEO); without it the entry
 * points report JEPA_ERR_UNSUPPORTED. Tested by tests/input/test_video.c.
 */
#include "input/video.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "input/image.h"

/* A path that names a local file (not a URL, a pipe or stdin) that cannot be opened:
 * image.c's message, the same whichever decoder the file was meant for. */
static jepa_status local_file_missing(const char *path, struct jerr *e) {
    if (!strcmp(path, "-") || strstr(path, "://") || !strncmp(path, "pipe:", 5)) return JEPA_OK;
    /* non-blocking: opening a FIFO for reading would wait for its writer */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        return JEPA_OK;
    }
    return image_open_error(path, e);
}

/* numpy rounds each step of linspace separately: no fused multiply-add here. */
#pragma STDC FP_CONTRACT OFF

/* ---- sampling ---------------------------------------------------------------------- */

/* numpy.linspace(start, stop, num)[k] (num >= 1). */
static double linspace_at(double start, double stop, int64_t num, int64_t k) {
    if (num > 1 && k == num - 1) return stop;
    if (num <= 1) return start;
    double step = (stop - start) / (double)(num - 1);
    double y = (double)k * step;
    return y + start;
}

/* numpy.clip(x, lo, hi).astype(int64): minimum(maximum(x, lo), hi), then truncation. */
static int64_t clip_trunc(double x, double lo, double hi) {
    if (x < lo) x = lo;
    if (x > hi) x = hi;
    return (int64_t)x;
}

/* One clip of the partition branch: a window of clip_len frames from 0. */
static void window_clip(int64_t clip_len, int fpc, int64_t offset, int64_t *idx) {
    for (int k = 0; k < fpc; k++)
        idx[k] = offset + clip_trunc(linspace_at(0.0, (double)clip_len, fpc, k), 0.0, (double)(clip_len - 1));
}

jepa_status video_clip_indices(int64_t video_len, int fpc, int fstp, int num_clips, int64_t *idx,
                               struct jerr *e) {
    if (video_len < 1 || fpc < 1 || fstp < 1 || num_clips < 1 || (int64_t)fpc * fstp > ((int64_t)1 << 40))
        return jr_err_set(e, JEPA_ERR_ARG, "clip sampling: %lld frames, %d frames per clip, step %d, %d clips",
                        (long long)video_len, fpc, fstp, num_clips);
    const int64_t clip_len = (int64_t)fpc * fstp;
    const int64_t partition_len = video_len / num_clips;
    for (int i = 0; i < num_clips; i++) {
        int64_t *out = idx + (size_t)i * (size_t)fpc;
        if (partition_len > clip_len) {
            window_clip(clip_len, fpc, (int64_t)i * partition_len, out);
            continue;
        }
        /* overlapping clips: linspace(0, sample_len, sample_len // fstp), padded with
         * sample_len, clipped to [0, sample_len - 1], shifted by i * clip_step */
        int64_t sample_len = (clip_len < video_len ? clip_len : video_len) - 1;
        int64_t n = sample_len / fstp;
        int64_t clip_step = 0;
        if (video_len > clip_len) clip_step = (video_len - clip_len) / (num_clips - 1);
        for (int k = 0; k < fpc; k++) {
            double v = k < n ? linspace_at(0.0, (double)sample_len, n, k) : (double)sample_len;
            double hi = (double)(sample_len - 1);
            /* numpy's clip with lo > hi (a one-frame video) gives hi = -1, which decord
             * reads as the last frame: frame 0 */
            int64_t j = v < 0.0 ? 0 : (int64_t)(v > hi ? hi : v);
            if (hi < 0.0) j = 0;
            out[k] = j + (int64_t)i * clip_step;
        }
    }
    for (size_t k = 0; k < (size_t)num_clips * (size_t)fpc; k++) {
        if (idx[k] < 0) idx[k] = 0;
        if (idx[k] > video_len - 1) idx[k] = video_len - 1;
    }
    return JEPA_OK;
}

void video_window_offsets(int fpc, int fstp, int64_t *off) {
    window_clip((int64_t)fpc * fstp, fpc, 0, off);
}

int64_t video_dense_indices(int64_t video_len, int fpc, int fstp, int64_t stride, int64_t *idx) {
    if (video_len < 1 || fpc < 1 || fstp < 1 || (int64_t)fpc * fstp > ((int64_t)1 << 40)) return 0;
    const int64_t W = (int64_t)fpc * fstp;
    if (stride <= 0) stride = W;
    if (video_len <= W) {
        if (idx && video_clip_indices(video_len, fpc, fstp, 1, idx, NULL)) return 0;
        return 1;
    }
    int64_t n = 0, s = 0;
    for (; s + W <= video_len; s += stride, n++)
        if (idx) window_clip(W, fpc, s, idx + (size_t)n * (size_t)fpc);
    int64_t last_end = (n - 1) * stride + W;
    if (last_end < video_len) {
        if (idx) window_clip(W, fpc, video_len - W, idx + (size_t)n * (size_t)fpc);
        n++;
    }
    return n;
}

/* ---- decoding ---------------------------------------------------------------------- */

#ifdef JEPA_HAVE_VIDEO

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/dynlib.h"

bool video_available(void) { return true; }

/* FFmpeg is opened with dlopen (runtime/dynlib.h) at the first video, not linked: linked, its
 * four libraries and the ~130 codec, network and font libraries they need are mapped
 * and relocated at every start of every program of the project, ~28 MiB of resident
 * memory (peak RSS under GNU time, bench/roofline.sh) and a few ms that a run on images or tensors never
 * uses. The headers are still the build's: the structs are read directly, so the
 * libraries must be the major versions the build saw (the names below), which is the
 * ABI FFmpeg keeps within a major version. Every function called is in FF_FUNCS; a call
 * through ff.NAME that is not there does not compile. */
#define FF_STR2(x) #x
#define FF_STR(x) FF_STR2(x)
#define FF_SONAME(lib, MAJOR) "lib" #lib ".so." FF_STR(MAJOR)
enum { FF_AVUTIL, FF_SWSCALE, FF_AVCODEC, FF_AVFORMAT, FF_NLIBS };   /* dependency order */
static const char *const ff_sonames[FF_NLIBS] = {
    FF_SONAME(avutil, LIBAVUTIL_VERSION_MAJOR), FF_SONAME(swscale, LIBSWSCALE_VERSION_MAJOR),
    FF_SONAME(avcodec, LIBAVCODEC_VERSION_MAJOR), FF_SONAME(avformat, LIBAVFORMAT_VERSION_MAJOR)};

#define FF_FUNCS(X)                                                                                    \
    X(FF_AVUTIL, av_free) X(FF_AVUTIL, av_freep) X(FF_AVUTIL, av_malloc) X(FF_AVUTIL, av_strdup)       \
    X(FF_AVUTIL, av_strerror) X(FF_AVUTIL, av_log_set_level) X(FF_AVUTIL, av_get_pix_fmt_name)       \
    X(FF_AVUTIL, av_frame_alloc) X(FF_AVUTIL, av_frame_free) X(FF_AVUTIL, av_frame_unref)            \
    X(FF_AVUTIL, av_frame_move_ref)                                                                  \
    X(FF_SWSCALE, sws_getContext) X(FF_SWSCALE, sws_freeContext) X(FF_SWSCALE, sws_scale)            \
    X(FF_SWSCALE, sws_setColorspaceDetails) X(FF_SWSCALE, sws_getCoefficients)                       \
    X(FF_AVCODEC, av_packet_alloc) X(FF_AVCODEC, av_packet_free) X(FF_AVCODEC, av_packet_unref)      \
    X(FF_AVCODEC, avcodec_find_decoder) X(FF_AVCODEC, avcodec_get_name)                              \
    X(FF_AVCODEC, avcodec_alloc_context3) X(FF_AVCODEC, avcodec_free_context)                        \
    X(FF_AVCODEC, avcodec_parameters_to_context) X(FF_AVCODEC, avcodec_open2)                        \
    X(FF_AVCODEC, avcodec_send_packet) X(FF_AVCODEC, avcodec_receive_frame)                          \
    X(FF_AVFORMAT, avformat_alloc_context) X(FF_AVFORMAT, avformat_open_input)                       \
    X(FF_AVFORMAT, avformat_find_stream_info) X(FF_AVFORMAT, avformat_close_input)                   \
    X(FF_AVFORMAT, av_find_best_stream) X(FF_AVFORMAT, av_read_frame)                                \
    X(FF_AVFORMAT, avio_alloc_context) X(FF_AVFORMAT, avio_context_free)

static struct {
#define FF_MEMBER(lib, name) __typeof__(name) *name;
    FF_FUNCS(FF_MEMBER)
#undef FF_MEMBER
} ff;

static pthread_once_t ff_once = PTHREAD_ONCE_INIT;
static char ff_error[320];   /* why loading failed, "" when it did not */

static void ff_load_once(void) {
    static const struct jr_dlsym syms[] = {
#define FF_SYM(l, name) {l, #name, (void **)&ff.name},
        FF_FUNCS(FF_SYM)
#undef FF_SYM
    };
    char why[256];
    if (jr_dl_load(ff_sonames, FF_NLIBS, syms, sizeof syms / sizeof *syms, "FFmpeg", why, sizeof why))
        snprintf(ff_error, sizeof ff_error, "video decoding needs FFmpeg: %s", why);
}

/* FFmpeg's functions in ff, or why they are not there (JEPA_ERR_UNSUPPORTED). */
static jepa_status ff_load(const char *path, struct jerr *e) {
    pthread_once(&ff_once, ff_load_once);
    return ff_error[0] ? jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: %s", path, ff_error) : JEPA_OK;
}

/* A video held in memory (video_*_memory), read through a custom AVIOContext. */
struct mem_io {
    const uint8_t *data;
    size_t size, pos;
};

static int mem_read(void *opaque, uint8_t *buf, int n) {
    struct mem_io *m = opaque;
    const size_t left = m->size - m->pos;
    if (!left) return AVERROR_EOF;
    if (n < 0) return AVERROR(EINVAL);
    if ((size_t)n > left) n = (int)left;
    memcpy(buf, m->data + m->pos, (size_t)n);
    m->pos += (size_t)n;
    return n;
}

static int64_t mem_seek(void *opaque, int64_t off, int whence) {
    struct mem_io *m = opaque;
    whence &= ~AVSEEK_FORCE;
    if (whence == AVSEEK_SIZE) return (int64_t)m->size;
    const int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)m->pos
                       : whence == SEEK_END ? (int64_t)m->size : -1;
    if (base < 0 || off < -base || off > (int64_t)m->size - base) return AVERROR(EINVAL);
    m->pos = (size_t)(base + off);
    return (int64_t)m->pos;
}

/* A demuxer reading from memory opens nothing else: playlists and reference files
 * (HLS, concat, mov data references) would name other files or URLs. */
static int refuse_io_open(struct AVFormatContext *s, AVIOContext **pb, const char *url, int flags,
                          AVDictionary **options) {
    (void)s, (void)pb, (void)url, (void)flags, (void)options;
    return AVERROR(EPERM);
}

/* Where a video comes from: a file, or bytes in memory (mem.data != NULL; *pb is the
 * AVIOContext made for them, freed by close_input). */
struct live_io;
struct video_src {
    const char *name;
    struct mem_io mem;
    struct live_io *live;    /* a live stream (video_open_stream), else NULL */
};

/* A live stream's deadlines and local reader: fd >= 0 for standard input, a FIFO or a
 * followed file (read by live_read), -1 for a URL FFmpeg opens (bounded by
 * live_interrupt). Why a read ended: stopped (*stop set) or timed_out (a deadline). */
struct live_io {
    struct video_stream_cfg cfg;
    int fd;
    bool own_fd, follow;
    int64_t deadline_us;
    bool stopped, timed_out;
};

static int64_t mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* FFmpeg's interrupt callback (network sources): polled by its protocols every ~0.1 s. */
static int live_interrupt(void *opaque) {
    struct live_io *l = opaque;
    if (l->cfg.stop && *l->cfg.stop) l->stopped = true;
    else if (mono_us() >= l->deadline_us) l->timed_out = true;
    else return 0;
    return 1;
}

/* The read of a local live source: waits in poll(2) slices of at most 0.1 s, checking the
 * stop flag and the deadline between them. A followed file at its end waits for it to
 * grow; past the deadline that is its end (AVERROR_EOF), where a pipe has timed out. */
static int live_read(void *opaque, uint8_t *buf, int n) {
    struct live_io *l = opaque;
    if (n <= 0) return AVERROR(EINVAL);
    for (;;) {
        if (l->cfg.stop && *l->cfg.stop) {
            l->stopped = true;
            return AVERROR_EXIT;
        }
        const int64_t left = l->deadline_us - mono_us();
        if (left <= 0) {
            if (l->follow) return AVERROR_EOF;
            l->timed_out = true;
            return AVERROR_EXIT;
        }
        const int slice = left < 100000 ? (int)(left / 1000) + 1 : 100;
        if (!l->follow) {
            struct pollfd p = {.fd = l->fd, .events = POLLIN};
            const int k = poll(&p, 1, slice);
            if (k < 0 && errno != EINTR) return AVERROR(errno);
            if (k <= 0) continue;
        }
        const ssize_t got = read(l->fd, buf, (size_t)n);
        if (got > 0) return (int)got;
        if (got < 0 && errno != EINTR && errno != EAGAIN) return AVERROR(errno);
        if (got == 0 && !l->follow) return AVERROR_EOF;
        if (got == 0) nanosleep(&(struct timespec){0, (long)slice * 1000000L}, NULL);
    }
}

struct video_reader {
    AVFormatContext *fc;
    AVIOContext *pb;         /* a video in memory: its reader (src.mem), else NULL */
    AVCodecContext *cc;
    int stream;
    AVPacket *pkt;
    AVFrame *frame;
    AVFrame *last;           /* the most recent frame handed out (a reference, for video_last) */
    int64_t last_index;
    struct SwsContext *sws;
    int sws_w, sws_h, sws_fmt, sws_cs, sws_full;   /* what r->sws is set up for */
    bool sws_ready;
    uint8_t *rgb;
    size_t rgb_cap;
    int64_t next_index;
    bool draining, done;
    char path[256];
    struct video_src src;    /* src.mem: the bytes of a video in memory */
    struct live_io live;     /* a live stream: src.live == &live */
};

static jepa_status av_fail(struct jerr *e, jepa_status s, const char *path, const char *what, int err) {
    char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
    ff.av_strerror(err, buf, sizeof buf);
    return jr_err_set(e, s, "%s: %s (%s)", path, what, buf);
}

/* The library never prints: FFmpeg's own log goes quiet; errors come back as messages. */
static void quiet_ffmpeg(void) { ff.av_log_set_level(AV_LOG_QUIET); }

static void close_input(AVFormatContext **fc, AVIOContext **pb) {
    ff.avformat_close_input(fc);
    if (*pb) {
        ff.av_freep(&(*pb)->buffer);
        ff.avio_context_free(pb);
    }
}

/* The demuxers a video in memory may use: MP4 / QuickTime and Matroska / WebM. */
#define MEMORY_FORMATS "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm"

/* A live source's format context before avformat_open_input: the open deadline, and
 * either a reader of its own over fd (standard input, a FIFO, a followed file) or FFmpeg's
 * protocols bounded by the interrupt callback. */
static jepa_status open_live(AVFormatContext **fc, AVIOContext **pb, struct video_src *src, struct jerr *e) {
    struct live_io *l = src->live;
    l->deadline_us = mono_us() + (int64_t)l->cfg.open_timeout_ms * 1000;
    if (!(*fc = ff.avformat_alloc_context())) return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", src->name);
    if (l->fd < 0) {
        (*fc)->interrupt_callback.callback = live_interrupt;
        (*fc)->interrupt_callback.opaque = l;
        return JEPA_OK;
    }
    enum { IO_BUF = 1 << 16 };
    uint8_t *buf = ff.av_malloc(IO_BUF);
    if (!buf || !(*pb = ff.avio_alloc_context(buf, IO_BUF, 0, l, live_read, NULL, NULL))) {
        ff.av_free(buf);
        ff.avformat_close_input(fc);
        return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", src->name);
    }
    (*pb)->seekable = 0;
    (*fc)->pb = *pb;
    (*fc)->flags |= AVFMT_FLAG_CUSTOM_IO;
    return JEPA_OK;
}

static jepa_status open_input(AVFormatContext **fc, AVIOContext **pb, int *stream, struct video_src *src,
                              struct jerr *e) {
    const char *path = src->name;
    *fc = NULL, *pb = NULL;
    jepa_status st = src->mem.data || src->live ? JEPA_OK : local_file_missing(path, e);
    if (!st) st = ff_load(path, e);
    if (st) return st;
    quiet_ffmpeg();
    int r;
    if (src->mem.data) {
        enum { IO_BUF = 1 << 16 };
        uint8_t *buf = ff.av_malloc(IO_BUF);
        if (!buf || !(*pb = ff.avio_alloc_context(buf, IO_BUF, 0, &src->mem, mem_read, NULL, mem_seek)) ||
            !(*fc = ff.avformat_alloc_context())) {
            if (*pb) close_input(fc, pb);
            else ff.av_free(buf);
            return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", path);
        }
        (*fc)->pb = *pb;
        (*fc)->flags |= AVFMT_FLAG_CUSTOM_IO;
        (*fc)->io_open = refuse_io_open;
        if (!((*fc)->format_whitelist = ff.av_strdup(MEMORY_FORMATS))) {
            close_input(fc, pb);
            return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", path);
        }
        r = ff.avformat_open_input(fc, NULL, NULL, NULL);   /* frees *fc on failure */
    } else if (src->live) {
        if ((st = open_live(fc, pb, src, e))) return st;
        r = ff.avformat_open_input(fc, src->live->fd >= 0 ? NULL : path, NULL, NULL);
    } else {
        r = ff.avformat_open_input(fc, path, NULL, NULL);
    }
    if (r >= 0) r = ff.avformat_find_stream_info(*fc, NULL);
    if (r < 0 && src->live && (src->live->stopped || src->live->timed_out)) {
        close_input(fc, pb);
        return src->live->stopped ? jr_err_set(e, JEPA_ERR_IO, "%s: stopped while opening", path)
                                  : jr_err_set(e, JEPA_ERR_IO, "%s: no video within %.3g s of opening", path,
                                               src->live->cfg.open_timeout_ms / 1e3);
    }
    if (r < 0 && !*fc) {
        close_input(fc, pb);
        if (!src->mem.data && r == AVERROR_INVALIDDATA)   /* a file, neither a still image nor a video */
            return jr_err_set(e, JEPA_ERR_FORMAT, "%s: %s", path, IMAGE_NOT_MEDIA);
        return av_fail(e, JEPA_ERR_IO, path, src->mem.data ? "cannot read as an MP4 or WebM video"
                                                          : "cannot open as a video", r);
    }
    if (r < 0) {
        close_input(fc, pb);
        return av_fail(e, JEPA_ERR_FORMAT, path, "cannot read the stream info", r);
    }
    *stream = ff.av_find_best_stream(*fc, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (*stream < 0) {
        close_input(fc, pb);
        return jr_err_set(e, JEPA_ERR_FORMAT, "%s: no video stream", path);
    }
    return JEPA_OK;
}

static jepa_status probe(struct video_src *src, int64_t *n_frames, int *h, int *w, struct jerr *e) {
    const char *path = src->name;
    AVFormatContext *fc;
    AVIOContext *pb;
    int si;
    *n_frames = 0, *h = *w = 0;
    jepa_status st = open_input(&fc, &pb, &si, src, e);
    if (st) return st;
    AVPacket *pkt = ff.av_packet_alloc();
    if (!pkt) {
        close_input(&fc, &pb);
        return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", path);
    }
    int64_t n = 0;
    int r;
    while ((r = ff.av_read_frame(fc, pkt)) >= 0) {
        if (pkt->stream_index == si) n++;
        ff.av_packet_unref(pkt);
    }
    if (r != AVERROR_EOF && n == 0) st = av_fail(e, JEPA_ERR_FORMAT, path, "cannot read packets", r);
    else if (n == 0) st = jr_err_set(e, JEPA_ERR_FORMAT, "%s: the video stream has no frames", path);
    *n_frames = n;
    *h = fc->streams[si]->codecpar->height;
    *w = fc->streams[si]->codecpar->width;
    ff.av_packet_free(&pkt);
    close_input(&fc, &pb);
    return st;
}

jepa_status video_probe(const char *path, int64_t *n_frames, int *h, int *w, struct jerr *e) {
    struct video_src src = {.name = path};
    return probe(&src, n_frames, h, w, e);
}

jepa_status video_probe_memory(const char *name, const void *data, size_t size, int64_t *n_frames, int *h,
                               int *w, struct jerr *e) {
    if (!data || !size) return jr_err_set(e, JEPA_ERR_ARG, "%s: an empty video", name);
    struct video_src src = {.name = name, .mem = {data, size, 0}};
    return probe(&src, n_frames, h, w, e);
}

static jepa_status open_reader(struct video_reader **out, const struct video_src *src, struct jerr *e) {
    const char *path = src->name;
    *out = NULL;
    struct video_reader *r = calloc(1, sizeof *r);
    if (!r) return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", path);
    snprintf(r->path, sizeof r->path, "%s", path);
    r->src = *src;
    r->src.name = r->path;
    if (src->live) r->live = *src->live, r->src.live = &r->live;
    jepa_status st = open_input(&r->fc, &r->pb, &r->stream, &r->src, e);
    if (st) {
        free(r);
        return st;
    }
    const AVCodecParameters *par = r->fc->streams[r->stream]->codecpar;
    const AVCodec *dec = ff.avcodec_find_decoder(par->codec_id);
    int ret;
    if (!dec) {
        st = jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: no decoder for codec '%s'", path, ff.avcodec_get_name(par->codec_id));
        goto fail;
    }
    if (!(r->cc = ff.avcodec_alloc_context3(dec)) || !(r->pkt = ff.av_packet_alloc()) || !(r->frame = ff.av_frame_alloc()) ||
        !(r->last = ff.av_frame_alloc())) {
        st = jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    if ((ret = ff.avcodec_parameters_to_context(r->cc, par)) < 0) {
        st = av_fail(e, JEPA_ERR_FORMAT, path, "bad codec parameters", ret);
        goto fail;
    }
    r->cc->thread_count = 0;   /* threads change the speed, never the pixels */
    if ((ret = ff.avcodec_open2(r->cc, dec, NULL)) < 0) {
        st = av_fail(e, JEPA_ERR_UNSUPPORTED, path, "cannot open the decoder", ret);
        goto fail;
    }
    *out = r;
    return JEPA_OK;
fail:
    video_close(r);
    return st;
}

jepa_status video_open(struct video_reader **out, const char *path, struct jerr *e) {
    struct video_src src = {.name = path};
    return open_reader(out, &src, e);
}

jepa_status video_open_memory(struct video_reader **out, const char *name, const void *data, size_t size,
                              struct jerr *e) {
    *out = NULL;
    if (!data || !size) return jr_err_set(e, JEPA_ERR_ARG, "%s: an empty video", name);
    struct video_src src = {.name = name, .mem = {data, size, 0}};
    return open_reader(out, &src, e);
}

void video_close(struct video_reader *r) {
    if (!r) return;
    ff.sws_freeContext(r->sws);
    ff.av_frame_free(&r->frame);
    ff.av_frame_free(&r->last);
    ff.av_packet_free(&r->pkt);
    ff.avcodec_free_context(&r->cc);
    close_input(&r->fc, &r->pb);
    if (r->live.own_fd) close(r->live.fd);
    free(r->rgb);
    free(r);
}

/* yuvj* are yuv* with full range; swscale wants the plain format and the range apart. */
static enum AVPixelFormat plain_format(enum AVPixelFormat f, bool *full) {
    switch (f) {
    case AV_PIX_FMT_YUVJ420P: *full = true; return AV_PIX_FMT_YUV420P;
    case AV_PIX_FMT_YUVJ422P: *full = true; return AV_PIX_FMT_YUV422P;
    case AV_PIX_FMT_YUVJ444P: *full = true; return AV_PIX_FMT_YUV444P;
    case AV_PIX_FMT_YUVJ440P: *full = true; return AV_PIX_FMT_YUV440P;
    case AV_PIX_FMT_YUVJ411P: *full = true; return AV_PIX_FMT_YUV411P;
    default: return f;
    }
}

/* Frame -> packed RGB24 in r->rgb, as PyAV's reformat(format="rgb24") does: swscale,
 * SWS_BILINEAR, the frame's colour matrix (sws_getCoefficients(frame->colorspace):
 * BT.601 when unspecified) and range, full-range RGB out.
 * 4:2:0 input takes swscale's unscaled YUV->RGB converter, whose x86 SIMD form in
 * FFmpeg < 6 leaves the last (width mod 8) columns unwritten; the conversion then runs
 * over the width rounded up to 16 — the decoder's buffers are padded that far, each
 * output pixel depends only on its own luma and chroma samples, and the surplus columns
 * are dropped — which gives what newer FFmpeg (PyAV's) writes there. */
static jepa_status convert(struct video_reader *r, const AVFrame *f, struct jerr *e) {
    const int w = f->width, h = f->height;
    bool full = f->color_range == AVCOL_RANGE_JPEG;
    enum AVPixelFormat fmt = plain_format((enum AVPixelFormat)f->format, &full);
    int wp = w;
    if (fmt == AV_PIX_FMT_YUV420P) {
        int w16 = (w + 15) & ~15;
        if (f->linesize[0] >= w16 && f->linesize[1] >= w16 / 2 && f->linesize[2] >= w16 / 2) wp = w16;
    }
    size_t need = (size_t)wp * (size_t)h * 3;
    if (need > r->rgb_cap) {
        uint8_t *p = realloc(r->rgb, need);
        if (!p) return jr_err_set(e, JEPA_ERR_NOMEM, "%s: out of memory for a %dx%d frame", r->path, w, h);
        r->rgb = p, r->rgb_cap = need;
    }
    if (!r->sws_ready || r->sws_w != wp || r->sws_h != h || r->sws_fmt != (int)fmt ||
        r->sws_cs != (int)f->colorspace || r->sws_full != (int)full) {
        ff.sws_freeContext(r->sws);
        r->sws = ff.sws_getContext(wp, h, fmt, wp, h, AV_PIX_FMT_RGB24, SWS_BILINEAR, NULL, NULL, NULL);
        r->sws_ready = false;
        if (!r->sws)
            return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: cannot convert %s frames to RGB", r->path,
                            ff.av_get_pix_fmt_name((enum AVPixelFormat)f->format));
        ff.sws_setColorspaceDetails(r->sws, ff.sws_getCoefficients((int)f->colorspace), full ? 1 : 0,
                                 ff.sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16);
        r->sws_w = wp, r->sws_h = h, r->sws_fmt = (int)fmt;
        r->sws_cs = (int)f->colorspace, r->sws_full = (int)full, r->sws_ready = true;
    }
    uint8_t *dst[4] = {r->rgb, NULL, NULL, NULL};
    int dst_ls[4] = {wp * 3, 0, 0, 0};
    int ret = ff.sws_scale(r->sws, (const uint8_t *const *)f->data, f->linesize, 0, h, dst, dst_ls);
    if (ret != h) return av_fail(e, JEPA_ERR_FORMAT, r->path, "colour conversion failed", ret < 0 ? ret : AVERROR_BUG);
    if (wp != w)
        for (int y = 1; y < h; y++)
            memmove(r->rgb + (size_t)y * w * 3, r->rgb + (size_t)y * wp * 3, (size_t)w * 3);
    return JEPA_OK;
}

jepa_status video_next(struct video_reader *r, bool want_rgb, const uint8_t **rgb, int *h, int *w,
                       int64_t *index, bool *eof, struct jerr *e) {
    *eof = false;
    if (rgb) *rgb = NULL;
    struct live_io *l = r->src.live;
    while (!r->done) {
        if (l && l->cfg.stop && *l->cfg.stop) l->stopped = true;
        if (l && l->stopped) break;   /* what the decoder holds is dropped */
        int ret = ff.avcodec_receive_frame(r->cc, r->frame);
        if (ret >= 0) {
            jepa_status st = JEPA_OK;
            *h = r->frame->height, *w = r->frame->width;
            *index = r->next_index++;
            if (want_rgb) {
                st = convert(r, r->frame, e);
                if (!st && rgb) *rgb = r->rgb;
            }
            ff.av_frame_unref(r->last);
            ff.av_frame_move_ref(r->last, r->frame);
            r->last_index = *index;
            return st;
        }
        if (ret == AVERROR_EOF) {
            r->done = true;
            break;
        }
        if (ret != AVERROR(EAGAIN)) return av_fail(e, JEPA_ERR_FORMAT, r->path, "decoding failed", ret);
        if (r->draining) return av_fail(e, JEPA_ERR_FORMAT, r->path, "decoder stalled", ret);
        /* feed the next packet of our stream, or the end-of-stream marker */
        if (l) l->deadline_us = mono_us() + (int64_t)l->cfg.read_timeout_ms * 1000, l->timed_out = false;
        ret = ff.av_read_frame(r->fc, r->pkt);
        if (ret < 0 && l && l->stopped) break;
        if (ret < 0 && l && l->timed_out)
            return jr_err_set(e, JEPA_ERR_IO, "%s: nothing received for %.3g s", r->path, l->cfg.read_timeout_ms / 1e3);
        if (ret < 0) {
            if (ret != AVERROR_EOF) return av_fail(e, JEPA_ERR_IO, r->path, "cannot read", ret);
            r->draining = true;
            ret = ff.avcodec_send_packet(r->cc, NULL);
            if (ret < 0 && ret != AVERROR_EOF) return av_fail(e, JEPA_ERR_FORMAT, r->path, "decoding failed", ret);
            continue;
        }
        if (r->pkt->stream_index == r->stream) {
            ret = ff.avcodec_send_packet(r->cc, r->pkt);
            /* a damaged packet is skipped, as the decoders themselves conceal errors */
            if (ret < 0 && ret != AVERROR_INVALIDDATA && ret != AVERROR(EAGAIN)) {
                ff.av_packet_unref(r->pkt);
                return av_fail(e, JEPA_ERR_FORMAT, r->path, "decoding failed", ret);
            }
        }
        ff.av_packet_unref(r->pkt);
    }
    *eof = true;
    return JEPA_OK;
}

jepa_status video_last(struct video_reader *r, const uint8_t **rgb, int *h, int *w, int64_t *index,
                       struct jerr *e) {
    *rgb = NULL;
    if (!r->last->data[0]) return jr_err_set(e, JEPA_ERR_FORMAT, "%s: no frame was decoded", r->path);
    jepa_status st = convert(r, r->last, e);
    if (st) return st;
    *rgb = r->rgb, *h = r->last->height, *w = r->last->width, *index = r->last_index;
    return JEPA_OK;
}

jepa_status video_open_stream(struct video_reader **out, const char *url, const struct video_stream_cfg *cfg,
                              struct jerr *e) {
    *out = NULL;
    if (cfg->open_timeout_ms < 1 || cfg->read_timeout_ms < 1)
        return jr_err_set(e, JEPA_ERR_ARG, "%s: a stream needs open and read timeouts", url);
    struct live_io l = {.cfg = *cfg, .fd = -1};
    if (!strcmp(url, "-")) {
        l.fd = 0;
    } else if (!strstr(url, "://") && strncmp(url, "pipe:", 5) && strncmp(url, "file:", 5)) {
        /* a local path: never through FFmpeg's file protocol, whose reads block */
        struct stat sb;
        if (stat(url, &sb)) return jr_err_set(e, JEPA_ERR_IO, "%s: %s", url, strerror(errno));
        if (S_ISDIR(sb.st_mode)) return jr_err_set(e, JEPA_ERR_IO, "%s: a directory, not a stream", url);
        l.follow = S_ISREG(sb.st_mode);
        if ((l.fd = open(url, O_RDONLY | O_CLOEXEC | (l.follow ? 0 : O_NONBLOCK))) < 0)
            return jr_err_set(e, JEPA_ERR_IO, "%s: %s", url, strerror(errno));
        l.own_fd = true;
    }
    struct video_src src = {.name = url, .live = &l};
    jepa_status st = open_reader(out, &src, e);
    if (st && l.own_fd) close(l.fd);
    return st;
}

bool video_stopped(const struct video_reader *r) { return r && r->src.live && r->live.stopped; }

double video_last_seconds(const struct video_reader *r) {
    if (!r->last->data[0] || r->last->best_effort_timestamp == AV_NOPTS_VALUE) return NAN;
    const AVRational tb = r->fc->streams[r->stream]->time_base;
    return tb.den ? (double)r->last->best_effort_timestamp * tb.num / tb.den : NAN;
}

#else /* !JEPA_HAVE_VIDEO */

bool video_available(void) { return false; }

struct video_reader {
    int unused;
};

/* Why there is no decoder, and how to get one (input/meson.build decides). */
#ifdef JEPA_STATIC_BUILD
#define NO_VIDEO_WHY "a static build: FFmpeg does not link statically here; build with -Dstatic=false"
#else
#define NO_VIDEO_WHY "FFmpeg not found; install libavformat-dev libavcodec-dev libswscale-dev and configure with -Dvideo=enabled"
#endif

static jepa_status no_video(const char *path, struct jerr *e) {
    return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "%s: this build has no video decoding (" NO_VIDEO_WHY ")", path);
}

jepa_status video_probe(const char *path, int64_t *n_frames, int *h, int *w, struct jerr *e) {
    *n_frames = 0, *h = *w = 0;
    jepa_status st = local_file_missing(path, e);
    return st ? st : no_video(path, e);
}

jepa_status video_open(struct video_reader **out, const char *path, struct jerr *e) {
    *out = NULL;
    jepa_status st = local_file_missing(path, e);
    return st ? st : no_video(path, e);
}

jepa_status video_probe_memory(const char *name, const void *data, size_t size, int64_t *n_frames, int *h,
                               int *w, struct jerr *e) {
    (void)data, (void)size;
    *n_frames = 0, *h = *w = 0;
    return no_video(name, e);
}

jepa_status video_open_memory(struct video_reader **out, const char *name, const void *data, size_t size,
                              struct jerr *e) {
    (void)data, (void)size;
    *out = NULL;
    return no_video(name, e);
}

jepa_status video_next(struct video_reader *r, bool want_rgb, const uint8_t **rgb, int *h, int *w,
                       int64_t *index, bool *eof, struct jerr *e) {
    (void)r, (void)want_rgb, (void)h, (void)w, (void)index;
    if (rgb) *rgb = NULL;
    *eof = true;
    return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "video decoding is not built");
}

jepa_status video_last(struct video_reader *r, const uint8_t **rgb, int *h, int *w, int64_t *index,
                       struct jerr *e) {
    (void)r, (void)h, (void)w, (void)index;
    *rgb = NULL;
    return jr_err_set(e, JEPA_ERR_UNSUPPORTED, "video decoding is not built");
}

void video_close(struct video_reader *r) { (void)r; }

jepa_status video_open_stream(struct video_reader **out, const char *url, const struct video_stream_cfg *cfg,
                              struct jerr *e) {
    (void)cfg;
    *out = NULL;
    return no_video(url, e);
}

bool video_stopped(const struct video_reader *r) { (void)r; return false; }

double video_last_seconds(const struct video_reader *r) {
    (void)r;
    return NAN;
}

#endif

/* A scheme other than file: and pipe: (built either way: the CLI's policy reads it). */
bool video_is_network(const char *url) {
    const char *p = strstr(url, "://");
    if (!p || p == url) return false;
    for (const char *q = url; q < p; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '+' ||
              *q == '-' || *q == '.'))
            return false;
    return strncmp(url, "file:", 5) != 0 && strncmp(url, "pipe:", 5) != 0;
}
