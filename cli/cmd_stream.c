/*
 * cmd_stream.c — live video (see stream.h): the window loop of `jepa embed --stream` and
 * `jepa plan --stream`, and `jepa embed --stream` itself.
 *
 *   jepa embed -m MODEL --stream URL|-|PATH [--pool mean|cls|lewm|none] [--format jsonl|npy]
 *              [--frames-per-clip F] [--frame-step S] [--stride K] [--open-timeout S]
 *              [--read-timeout S] [--reconnect N] [-t N] [--cpu ISA] [--precision T] [-g N]
 *
 * Output on stdout, one record per window, flushed as each window ends:
 *   jsonl  one JSON object per line: {"index": w, "first_frame": f0, "last_frame": f1,
 *          "pts": t0, "pts_last": t1, "shape": [...], "embedding": [...]} (times in
 *          seconds, null when the stream has none; the embedding flat in row-major order,
 *          each value printed with 9 significant digits, which reads back to the same
 *          float32)
 *   npy    one complete .npy file per window (float32, the shape of `jepa embed`'s output
 *          for one clip), concatenated: `while True: np.load(f)` on the stream reads them
 *          in turn (numpy raises EOFError after the last); window w's frames are as above
 */
#include "cli/stream.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "input/preprocess.h"
#include "input/video.h"

/* ---- options ---- */

void stream_opts_init(struct stream_opts *o) {
    memset(o, 0, sizeof *o);
    o->open_timeout = 10, o->read_timeout = 10;
}

int stream_parse(struct stream_opts *o, const char *cmd, bool pre_ok, int argc, char **argv, int *i) {
    static const struct {
        const char *flag;
        bool pre;             /* embed only */
        long long lo, hi;     /* an integer option; hi 0: a string or a flag */
    } opts[] = {
        {"--stream", false, 0, 0},           {"--frames-per-clip", true, 1, 4096},
        {"--frame-step", true, 1, 4096},     {"--stride", false, 1, 1 << 20},
        {"--open-timeout", false, 1, 86400}, {"--read-timeout", false, 1, 86400},
        {"--reconnect", false, 0, 1000000},  {"--no-antialias", true, 0, 0},
        {"--resize-short", true, 1, JI_MAX_PRE_SIDE}, {"--norm", true, 0, 0},
    };
    const char *a = argv[*i];
    size_t k = 0;
    while (k < sizeof opts / sizeof *opts && strcmp(a, opts[k].flag)) k++;
    if (k == sizeof opts / sizeof *opts || (opts[k].pre && !pre_ok)) return 0;
    if (!strcmp(a, "--no-antialias")) {
        o->no_antialias = o->pre_given = 1;
        return 1;
    }
    if (*i + 1 >= argc) return cli_usage_error(cmd, "option %s needs a value", a);
    const char *v = argv[++*i];
    if (!strcmp(a, "--stream")) {
        if (o->url) return cli_usage_error(cmd, "--stream given twice");
        o->url = v;
        return 1;
    }
    if (!strcmp(a, "--norm")) {
        if (strcmp(v, "fused") && strcmp(v, "sequential"))
            return cli_usage_error(cmd, "--norm takes fused or sequential, not '%s'", v);
        o->norm_sequential = !strcmp(v, "sequential");
        o->pre_given = 1;
        return 1;
    }
    long long x;
    const int rc = cli_parse_int(cmd, a, v, opts[k].lo, opts[k].hi, &x);
    if (rc) return rc;
    int *dst[] = {NULL, &o->fpc, &o->fstp, NULL, &o->open_timeout, &o->read_timeout, &o->reconnect, NULL,
                  &o->resize_short};
    if (k == 3) o->stride = x;
    else *dst[k] = (int)x;
    if (k == 8) o->pre_given = 1;
    return 1;
}

void stream_usage(FILE *f, bool pre_ok) {
    fprintf(f, "  --stream URL|-|PATH   live video: anything FFmpeg opens (udp://, rtsp://, http://,\n"
               "                        tcp://...), - for standard input, a FIFO, or a file being\n"
               "                        written (followed as it grows); a streamable container\n"
               "                        (MPEG-TS, NUT, Matroska, Y4M, MJPEG; not an MP4 indexed at its end)\n");
    if (pre_ok)
        fprintf(f, "  --frames-per-clip F   frames per window (default: the model's jepa.enc.n_frames)\n"
                   "  --frame-step S        a window spans F*S frames, sampled as --dense samples (default 1)\n");
    fprintf(f, "  --stride K            frames between window starts (default: %s)\n"
               "  --open-timeout S      give up opening after S seconds (default 10)\n"
               "  --read-timeout S      a source silent for S seconds is an error (exit 1); a followed\n"
               "                        file has ended (default 10)\n"
               "  --reconnect N         network sources: reconnect after an error or a timeout, at most N\n"
               "                        times in a row, waiting 0.5, 1, 2, 4, 8 s... (default 0)\n"
               "  EOF, SIGINT and SIGTERM end the run with exit 0: the window being filled is dropped,\n"
               "  the one being %s is finished, the output is flushed (docs/streaming.md)\n",
            pre_ok ? "the window's span, back to back" : "1, every frame", pre_ok ? "encoded" : "planned");
}

bool cli_stream_requested(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--stream")) return true;
    return false;
}

/* ---- signals ---- */

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

struct saved_signals {
    struct sigaction intr, term;
    sigset_t mask;
};

/* SIGINT and SIGTERM set stop_signal (no SA_RESTART: a blocking call returns); the
 * handler is reset by its first delivery, so a second signal ends the process. They are
 * unblocked too: a parent may hand down a mask that holds them. */
static void catch_stop(struct saved_signals *s) {
    struct sigaction sa;
    sigset_t both;
    sigemptyset(&both);
    sigaddset(&both, SIGINT);
    sigaddset(&both, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &both, &s->mask);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGINT, &sa, &s->intr);
    sigaction(SIGTERM, &sa, &s->term);
}

static void release_stop(const struct saved_signals *s) {
    sigaction(SIGINT, &s->intr, NULL);
    sigaction(SIGTERM, &s->term, NULL);
    pthread_sigmask(SIG_SETMASK, &s->mask, NULL);
}

/* Sleep ms, in slices, unless a stop comes first: false when it did. */
static bool nap(int ms) {
    for (; ms > 0 && !stop_signal; ms -= 100) {
        const int t = ms < 100 ? ms : 100;
        nanosleep(&(struct timespec){0, (long)t * 1000000L}, NULL);
    }
    return !stop_signal;
}

/* ---- windows ---- */

/* A preprocessed frame some open window samples. */
struct slot {
    int64_t index;     /* -1: free */
    double pts;
    float *px;         /* [3, H, W] */
};

struct win_state {
    const struct stream_opts *o;
    struct pre_cfg cfg;
    int T, H, W;
    int64_t span, stride;      /* F S frames; frames between starts */
    int64_t off[4096];         /* the sampled offsets in a window */
    struct slot *slots;
    int n_slots;
    float *clip;               /* [3, T, H, W] */
    int64_t base;              /* the first frame since the last (re)connection */
    int64_t next_window;       /* windows emitted so far */
    stream_window_fn fn;
    void *user;
};

static bool sampled(const struct win_state *s, int64_t d) {
    for (int t = 0; t < s->T; t++)
        if (s->off[t] == d) return true;
    return false;
}

/* Whether frame j is sampled by a window not emitted yet. */
static bool frame_needed(const struct win_state *s, int64_t j) {
    const int64_t r = j - s->base;
    int64_t m0 = r - s->span + 1 > 0 ? (r - s->span + 1 + s->stride - 1) / s->stride : 0;
    if (m0 < s->next_window) m0 = s->next_window;
    for (int64_t m = m0; m * s->stride <= r; m++)
        if (sampled(s, r - m * s->stride)) return true;
    return false;
}

static struct slot *find_slot(struct win_state *s, int64_t j) {
    for (int i = 0; i < s->n_slots; i++)
        if (s->slots[i].index == j) return &s->slots[i];
    return NULL;
}

/* Frees the slots no window from next_window on samples. */
static void drop_old(struct win_state *s) {
    const int64_t first = s->base + s->next_window * s->stride;
    for (int i = 0; i < s->n_slots; i++)
        if (s->slots[i].index >= 0 && s->slots[i].index < first) s->slots[i].index = -1;
}

/* Frame j (rgb h x w, pts seconds) into a slot. 0 or CLI_EXIT_FAIL. */
static int keep_frame(struct win_state *s, int64_t j, double pts, const uint8_t *rgb, int h, int w) {
    struct slot *sl = find_slot(s, -1);
    if (!sl) return cli_fail(s->o->url, "internal: no free frame slot at frame %lld", (long long)j);
    struct jerr e = {0};
    if (ji_pre_clip_frame(&s->cfg, rgb, h, w, sl->px, 1, 0, &e))
        return cli_fail(s->o->url, "frame %lld: %s", (long long)j, e.msg);
    sl->index = j, sl->pts = pts;
    return 0;
}

/* When frame j completes the next window: assemble it and hand it out. 0, or the exit
 * status. */
static int maybe_emit(struct win_state *s, int64_t j) {
    const int64_t start = s->base + s->next_window * s->stride;
    if (j != start + s->off[s->T - 1]) return 0;
    const size_t plane = (size_t)s->H * s->W;
    struct stream_window w = {.index = s->next_window, .first = start + s->off[0], .last = j,
                              .clip = s->clip, .T = s->T, .H = s->H, .W = s->W};
    for (int t = 0; t < s->T; t++) {
        const struct slot *sl = find_slot(s, start + s->off[t]);
        if (!sl) return cli_fail(s->o->url, "internal: frame %lld of window %lld is missing",
                                 (long long)(start + s->off[t]), (long long)w.index);
        if (t == 0) w.pts_first = sl->pts;
        if (t == s->T - 1) w.pts_last = sl->pts;
        for (int c = 0; c < 3; c++)
            memcpy(s->clip + ((size_t)c * s->T + t) * plane, sl->px + (size_t)c * plane, sizeof(float) * plane);
    }
    s->next_window++;
    drop_old(s);
    return s->fn(s->user, &w);
}

static void win_free(struct win_state *s) {
    for (int i = 0; i < s->n_slots; i++) free(s->slots[i].px);
    free(s->slots);
    free(s->clip);
}

/* The geometry, the offsets and the frame slots: as many as frames the open windows can
 * sample at once (at most the span). 0, or the exit status. */
static int win_init(struct win_state *s, const struct stream_opts *o, const jepa_model *m, int fpc) {
    memset(s, 0, sizeof *s);
    s->o = o;
    jepa_preprocess_params pp = jepa_preprocess_default_params();
    if (o->no_antialias) pp.filter = JEPA_RESIZE_CV2_LINEAR;
    pp.resize_short = o->resize_short;
    pp.norm = o->norm_sequential ? JEPA_NORM_SEQUENTIAL : JEPA_NORM_FUSED;
    jepa_preprocess_recipe recipe;
    jepa_model_get_preprocess(m, &recipe);
    struct jerr e = {0};
    if (ji_pre_cfg(&recipe, &pp, &s->cfg, &e))
        return cli_fail(o->url, "the model's preprocessing (jepa.pre.*) with --resize-short %d does not fit: %s",
                        o->resize_short, e.msg);
    s->T = o->fpc ? o->fpc : fpc > 0 ? fpc : 1;
    s->H = s->W = s->cfg.crop;
    const int fstp = o->fstp ? o->fstp : 1;
    s->span = (int64_t)s->T * fstp;
    s->stride = o->stride ? o->stride : s->span;
    video_window_offsets(s->T, fstp, s->off);
    const int64_t per_window = s->stride >= s->span ? 1 : (s->span + s->stride - 1) / s->stride;
    int64_t n = (int64_t)s->T * per_window + 1;
    if (n > s->span + 1) n = s->span + 1;
    const int64_t frame_bytes = (int64_t)3 * 4 * s->H * s->W;
    if ((n + s->T) * frame_bytes > ((int64_t)1 << 31))
        return cli_fail(o->url, "windows of %d frames over %lld (stride %lld) of %dx%d would hold %lld MiB "
                               "of frames, more than 2048", s->T, (long long)s->span, (long long)s->stride, s->W, s->H,
                               (long long)(((n + s->T) * frame_bytes) >> 20));
    s->n_slots = (int)n;
    s->slots = calloc((size_t)n, sizeof *s->slots);
    s->clip = malloc((size_t)frame_bytes * (size_t)s->T);
    if (!s->slots || !s->clip) return cli_fail(NULL, "out of memory for the stream's frames");
    for (int i = 0; i < s->n_slots; i++) {
        s->slots[i].index = -1;
        if (!(s->slots[i].px = malloc((size_t)frame_bytes))) return cli_fail(NULL, "out of memory for the stream's frames");
    }
    return 0;
}

/* ---- the loop ---- */

/* Why one connection ended. */
enum conn_end { CONN_EOF, CONN_STOP, CONN_ERROR, CONN_CALLER };

/* Read one connection to its end: every frame some window needs preprocessed, every
 * complete window handed out. *frames counts the frames read (over connections), *got
 * those of this connection; the error's reason is in e. */
static enum conn_end read_connection(struct win_state *s, struct video_reader *vr, int64_t *frames, int64_t *got,
                                     int *rc, struct jerr *e) {
    for (;;) {
        const int64_t j = *frames;
        const bool want = frame_needed(s, j);
        const uint8_t *rgb = NULL;
        int h = 0, w = 0;
        int64_t idx = 0;
        bool eof = false;
        if (video_next(vr, want, &rgb, &h, &w, &idx, &eof, e)) return CONN_ERROR;
        if (eof) return video_stopped(vr) || stop_signal ? CONN_STOP : CONN_EOF;
        (*frames)++, (*got)++;
        if (want && (*rc = keep_frame(s, j, video_last_seconds(vr), rgb, h, w))) return CONN_CALLER;
        if ((*rc = maybe_emit(s, j))) return CONN_CALLER;
        if (stop_signal) return CONN_STOP;
    }
}

int stream_run(const struct stream_opts *o, const jepa_model *m, int fpc, stream_window_fn fn, void *user) {
    struct win_state s;
    int rc = win_init(&s, o, m, fpc);
    if (rc) {
        win_free(&s);
        return rc;
    }
    s.fn = fn, s.user = user;
    struct saved_signals saved;
    catch_stop(&saved);
    const struct video_stream_cfg cfg = {.open_timeout_ms = o->open_timeout * 1000,
                                         .read_timeout_ms = o->read_timeout * 1000, .stop = &stop_signal};
    const bool network = video_is_network(o->url);
    int64_t frames = 0;
    int failures = 0;
    enum conn_end end = CONN_EOF;
    if (o->verbose)
        fprintf(stderr, "jepa: %s: windows of %d frames over %lld, one every %lld frames, %dx%d\n", o->url, s.T,
                (long long)s.span, (long long)s.stride, s.W, s.H);
    for (;;) {
        struct video_reader *vr = NULL;
        struct jerr e = {0};
        int64_t got = 0;
        end = video_open_stream(&vr, o->url, &cfg, &e) ? CONN_ERROR : read_connection(&s, vr, &frames, &got, &rc, &e);
        video_close(vr);
        if (end == CONN_ERROR && stop_signal) end = CONN_STOP;
        if (end != CONN_ERROR) break;
        if (got) failures = 0;
        if (!network || failures >= o->reconnect) {
            rc = cli_fail(NULL, "%s", e.msg);
            break;
        }
        const int wait_ms = failures < 4 ? 500 << failures : 8000;
        failures++;
        if (!o->quiet)
            fprintf(stderr, "jepa: %s; reconnecting in %.1f s (%d of %d)\n", e.msg, wait_ms / 1e3, failures, o->reconnect);
        if (!nap(wait_ms)) {
            end = CONN_STOP;
            break;
        }
        s.base = frames, s.next_window = 0;   /* windows restart after the gap */
        for (int i = 0; i < s.n_slots; i++) s.slots[i].index = -1;
    }
    if ((end == CONN_EOF || end == CONN_STOP) && !o->quiet) {
        const int64_t since = frames - s.base;
        if (end == CONN_STOP)
            fprintf(stderr, "jepa: %s: stopped by %s after %lld frames\n", o->url,
                    stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", (long long)frames);
        if (frames && since < s.span && s.next_window == 0)
            fprintf(stderr, "jepa: %s: note: %lld frames, fewer than one window (%lld): nothing written\n", o->url,
                    (long long)since, (long long)s.span);
    }
    release_stop(&saved);
    win_free(&s);
    return end == CONN_EOF || end == CONN_STOP ? 0 : rc ? rc : CLI_EXIT_FAIL;
}

/* ---- jepa embed --stream ---- */

struct embed_stream {
    const char *model, *pool, *cpu, *precision;
    int threads, gpu, npy, prepack;
    struct stream_opts so;
    /* the run */
    jepa_ctx *c;
    jepa_model_info info;
    float *tokens, *pooled, *cls, *emb;
    int n;                      /* tokens of one window */
};

void cli_embed_stream_usage(void) {
    printf("usage: jepa embed -m MODEL --stream URL|-|PATH [--pool mean|cls|lewm|none] [--format jsonl|npy]\n"
           "  one embedding per clip window as the frames arrive, on stdout: JSON lines (index,\n"
           "  first_frame, last_frame, pts, pts_last, shape, embedding) or, with --format npy, one\n"
           "  complete .npy per window, concatenated (read with a loop of np.load on the stream).\n"
           "  --pool                as for a file (default here: mean; none writes the tokens [N, D])\n");
    stream_usage(stdout, true);
    printf("  --no-antialias, --resize-short N, --norm fused|sequential   as for a video file\n"
           "  -t N, --cpu ISA, --precision T, -g N, --prepack, -q, -v   as for `jepa embed`\n");
}

static int embed_stream_parse(int argc, char **argv, struct embed_stream *o) {
    o->pool = "mean", o->gpu = -1;
    stream_opts_init(&o->so);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x;
        int rc = stream_parse(&o->so, "embed", true, argc, argv, &i);
        if (rc == 1) continue;
        if (rc) return rc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cli_embed_stream_usage();
            return -1;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) { o->so.quiet = 1, o->so.verbose = 0; continue; }
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) { o->so.verbose = 1; continue; }
        if (!strcmp(a, "--prepack")) { o->prepack = 1; continue; }
        const bool valued = !strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "--pool") ||
                            !strcmp(a, "--format") || !strcmp(a, "--cpu") || !strcmp(a, "--precision") ||
                            !strcmp(a, "-t") || !strcmp(a, "--threads") || !strcmp(a, "-g") || !strcmp(a, "--gpu");
        if (!valued) return cli_usage_error("embed", "--stream: unknown option '%s' (jepa embed --stream --help)", a);
        if (!v) return cli_usage_error("embed", "option %s needs a value", a);
        i++;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--cpu")) o->cpu = v;
        else if (!strcmp(a, "--precision")) o->precision = v;
        else if (!strcmp(a, "--pool")) {
            if (strcmp(v, "mean") && strcmp(v, "cls") && strcmp(v, "lewm") && strcmp(v, "none"))
                return cli_usage_error("embed", "--pool takes mean, cls, lewm or none, not '%s'", v);
            o->pool = v;
        } else if (!strcmp(a, "--format")) {
            if (strcmp(v, "jsonl") && strcmp(v, "npy"))
                return cli_usage_error("embed", "--format takes jsonl or npy, not '%s'", v);
            o->npy = !strcmp(v, "npy");
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if ((rc = cli_parse_int("embed", a, v, 1, 4096, &x))) return rc;
            o->threads = (int)x;
        } else {
            if ((rc = cli_parse_int("embed", a, v, 0, 1024, &x))) return rc;
            o->gpu = (int)x;
        }
    }
    if (!o->model) return cli_usage_error("embed", "missing -m MODEL");
    if (!o->so.url) return cli_usage_error("embed", "--stream needs a URL, - or a PATH");
    return cli_resolve_model("embed", &o->model);   /* -m REPO: the cached file */
}

/* The window's requested output: its floats, shape and number of dimensions. */
static const float *embed_output(const struct embed_stream *o, int64_t *shape, int *nd) {
    const int D = o->info.embed_dim;
    *nd = 1, shape[0] = D;
    if (!strcmp(o->pool, "lewm")) return shape[0] = o->info.emb_dim, o->emb;
    if (!strcmp(o->pool, "cls")) return o->cls;
    if (!strcmp(o->pool, "mean")) return o->pooled;
    *nd = 2, shape[0] = o->n, shape[1] = D;
    return o->tokens;
}

static void print_pts(const char *key, double t) {
    if (isfinite(t)) printf(", \"%s\": %.6f", key, t);
    else printf(", \"%s\": null", key);
}

/* One .npy (version 1.0, float32, C order) of x on stdout. */
static void write_npy(const float *x, int nd, const int64_t *shape, size_t count) {
    char dict[160];
    int k = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld,%s",
                     (long long)shape[0], nd == 1 ? "" : " ");
    if (nd == 2) k += snprintf(dict + k, sizeof dict - (size_t)k, "%lld", (long long)shape[1]);
    k += snprintf(dict + k, sizeof dict - (size_t)k, "), }");
    const int hlen = ((10 + k + 1 + 63) / 64) * 64 - 10;   /* dict, spaces, '\n': 64-byte aligned */
    const unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                                     (unsigned char)(hlen >> 8)};
    fwrite(magic, 1, sizeof magic, stdout);
    fprintf(stdout, "%s%*s\n", dict, hlen - k - 1, "");
    fwrite(x, sizeof(float), count, stdout);
}

static int embed_window(void *user, const struct stream_window *w) {
    struct embed_stream *o = user;
    const jepa_embed_params ep = {.batch = 1};
    jepa_embed_out eo = {.tokens = o->tokens, .pooled = o->pooled, .cls = o->cls, .emb = o->emb};
    if (jepa_ctx_embed(o->c, w->clip, w->T, w->H, w->W, &ep, &eo))
        return cli_fail(o->so.url, "window %lld: %s", (long long)w->index, jepa_ctx_error(o->c));
    int64_t shape[2];
    int nd;
    const float *x = embed_output(o, shape, &nd);
    const size_t count = (size_t)shape[0] * (size_t)(nd == 2 ? shape[1] : 1);
    char row[48];
    snprintf(row, sizeof row, "window %lld, %s", (long long)w->index, nd == 2 ? "token" : "row");
    const struct cli_out_rows rows = {(size_t)shape[nd - 1], row, "dim", NULL, NULL};
    if (cli_check_finite_output(o->so.url, x, count, &rows)) return CLI_EXIT_FAIL;
    if (o->npy) {
        write_npy(x, nd, shape, count);
    } else {
        printf("{\"index\": %lld, \"first_frame\": %lld, \"last_frame\": %lld", (long long)w->index,
               (long long)w->first, (long long)w->last);
        print_pts("pts", w->pts_first);
        print_pts("pts_last", w->pts_last);
        printf(", \"shape\": [%lld%s", (long long)shape[0], nd == 2 ? ", " : "]");
        if (nd == 2) printf("%lld]", (long long)shape[1]);
        printf(", \"embedding\": [");
        for (size_t i = 0; i < count; i++) printf(i ? ", %.9g" : "%.9g", (double)x[i]);
        printf("]}\n");
    }
    if (fflush(stdout) || ferror(stdout)) return cli_fail("stdout", "cannot write: %s", strerror(errno));
    return 0;
}

int cmd_embed_stream(int argc, char **argv) {
    struct embed_stream o = {0};
    int rc = embed_stream_parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    if (jepa_model_load(&m, o.model, err)) return cli_fail(o.model, "%s", err);
    jepa_model_get_info(m, &o.info);
    const jepa_model_info *in = &o.info;
    int T = o.so.fpc ? o.so.fpc : in->n_frames > 0 ? in->n_frames : 1, H = 0, W = 0, gt, gh, gw;
    rc = CLI_EXIT_FAIL;
    if (!strcmp(o.pool, "cls") && !in->has_cls) {
        rc = cli_usage_error("embed", "--pool cls: family '%s' has no CLS token", in->family);
    } else if (!strcmp(o.pool, "lewm") && !in->emb_dim) {
        rc = cli_usage_error("embed", "--pool lewm: family '%s' has no LeWM projector", in->family);
    } else if (jepa_preprocess_size(m, NULL, &H, &W) || jepa_model_grid(m, T, H, W, &gt, &gh, &gw, &o.n)) {
        rc = cli_fail(o.model, "windows of %d frames of %dx%d do not fit this model", T, H, W);
    } else if (!(rc = cli_ctx_new("embed", m, o.threads, o.cpu, o.precision, o.gpu, &o.c)) && o.prepack &&
               jepa_ctx_set_prepack(o.c, 1)) {
        rc = cli_fail(NULL, "--prepack: %s", jepa_ctx_error(o.c));
    } else if (!rc) {
        const size_t D = (size_t)in->embed_dim;
        /* what `jepa embed` asks the encoder for, so that the numbers are its numbers */
        o.pooled = malloc(sizeof(float) * D);
        o.tokens = !strcmp(o.pool, "none") ? malloc(sizeof(float) * D * (size_t)o.n) : NULL;
        o.cls = in->has_cls ? malloc(sizeof(float) * D) : NULL;
        o.emb = in->emb_dim ? malloc(sizeof(float) * (size_t)in->emb_dim) : NULL;
        if (!o.pooled || (!strcmp(o.pool, "none") && !o.tokens) || (in->has_cls && !o.cls) || (in->emb_dim && !o.emb))
            rc = cli_fail(NULL, "out of memory");
        else
            rc = stream_run(&o.so, m, in->n_frames, embed_window, &o);
    }
    free(o.tokens), free(o.pooled), free(o.cls), free(o.emb);
    jepa_ctx_free(o.c);
    jepa_model_free(m);
    return rc;
}
