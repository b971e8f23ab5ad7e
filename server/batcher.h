/*
 * batcher.h — the compute side of `jepa serve`: a bounded queue of clips and N worker
 * threads, each with its own context on the one model, that run queued clips of one
 * shape together in one forward (dynamic batching).
 *
 * A request thread (one per HTTP connection) decodes and preprocesses its inputs into
 * clips, submits them as one group, and waits for the group with a deadline. A worker
 * takes the oldest clip, then every queued clip with the same key (T, H, W, hier) up to
 * max_batch, waiting at most batch_wait_ms from the oldest clip's arrival for more to
 * come; it runs them as one jepa_ctx_embed batch and copies each clip's requested output
 * (and, for classification, its logits) into the clip's own buffer.
 *
 * A group whose deadline passes, or whose client closes its connection, is taken back:
 * its clips still queued leave the queue, those a worker holds for a batch it is still
 * forming are dropped from it, and a clip already running finishes into memory that the worker frees with the group
 * (sv_group_release), so a timed-out request never waits for the compute it started. A
 * running forward whose clips' groups have all been taken back is cancelled
 * (jepa_ctx_cancel): it stops at its next block boundary and its worker takes the next job.
 * Stopping (sv_batcher_stop) lets the workers finish every queued clip first.
 */
#ifndef JEPA_SERVER_BATCHER_H
#define JEPA_SERVER_BATCHER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "jepa.h"

/* Which output of the encoder a clip wants (the CLI's --pool / --hier words). */
enum sv_want { SV_TOKENS, SV_MEAN, SV_CLS, SV_LEWM, SV_HIER, SV_LOGITS };

struct sv_group;

/* Floats of one clip's output w for a clip of n tokens. */
size_t sv_want_floats(const jepa_model_info *in, enum sv_want w, int n);

struct sv_world;

struct sv_job {
    /* set by the submitter */
    struct sv_world *world;  /* a world-model job (server/world.h; x, T, H, W, out unused), or NULL */
    const float *x;          /* [3, T, H, W], valid until the group is released */
    int T, H, W, n_tokens;
    enum sv_want want;
    float *out;              /* the wanted output [per] (SV_LOGITS: [n_classes]) */
    /* set by the worker */
    jepa_status status;
    char err[JEPA_ERR_LEN];
    int batch;               /* how many clips its forward ran */
    /* queue bookkeeping */
    struct sv_job *next;
    struct sv_group *group;
    double t_enqueued;       /* ms, CLOCK_MONOTONIC */
};

/* One request's clips. The submitter allocates it (sv_group_new), fills jobs[0 .. n),
 * and frees it with sv_group_release after sv_wait, whatever sv_wait returned. */
struct sv_group {
    struct sv_job *jobs;
    int n;
    int pending;             /* clips not finished yet */
    int refs;                /* the submitter + the workers running its clips */
    bool abandoned;          /* its request stopped waiting: clips not started yet are dropped */
    pthread_cond_t done;
    void (*free_user)(void *user);   /* frees what the jobs point at, with the group */
    void *user;
};

struct sv_stats {            /* a snapshot for /metrics */
    int queued;              /* clips waiting */
    int running;             /* clips in a forward */
};

struct sv_batcher;

struct sv_batcher_params {
    const jepa_model *model;
    int workers, threads;    /* contexts, threads each (0: all cores / workers) */
    const char *cpu;         /* ISA cap (NULL: auto) */
    const char *precision;   /* the CPU's precision tier (NULL: JEPA_PRECISION, else exact) */
    int gpu;                 /* < 0: the CPU */
    int prepack;             /* each worker's weights packed once (jepa_ctx_set_prepack) */
    int max_batch;           /* >= 1 */
    int batch_wait_ms;       /* >= 0 */
    int queue;               /* most clips queued at once */
    /* called by a worker after each forward with its clip count and tokens (metrics) */
    void (*on_batch)(void *user, int clips, long long tokens);
    void *user;
};

/* Start the workers (one context each). err: JEPA_ERR_LEN bytes. */
jepa_status sv_batcher_start(struct sv_batcher **out, const struct sv_batcher_params *p, char *err);
/* Finish every queued clip, stop the workers, free the contexts. */
void sv_batcher_stop(struct sv_batcher *b);
void sv_batcher_stats(struct sv_batcher *b, struct sv_stats *s);
/* The ISA / device / threads of the first worker's context, for the startup line. */
const char *sv_batcher_describe(struct sv_batcher *b, char *buf, size_t n);

struct sv_group *sv_group_new(int n);
/* Drop the submitter's reference: frees the group now, or when its last running clip ends. */
void sv_group_release(struct sv_batcher *b, struct sv_group *g);

enum sv_submit_result { SV_SUBMITTED, SV_QUEUE_FULL, SV_STOPPING };
/* Queue every clip of g, or none: SV_QUEUE_FULL when they do not all fit. */
enum sv_submit_result sv_submit(struct sv_batcher *b, struct sv_group *g);

/* Who waits for a group: gone(fd) is true once that client has closed its connection
 * (gone NULL: never asked). */
struct sv_client {
    bool (*gone)(int fd);
    int fd;
};
#define SV_GONE_POLL_MS 100.0   /* how often a waiting request asks whether its client left */

enum sv_wait_result { SV_DONE, SV_TIMED_OUT, SV_CLIENT_GONE };
/* Wait for g until deadline_ms (CLOCK_MONOTONIC) or until cl's client is gone (asked every
 * SV_GONE_POLL_MS; cl may be NULL): SV_DONE when every clip finished; otherwise its
 * queued clips are taken back (no worker starts them) and the reason is returned. */
enum sv_wait_result sv_wait(struct sv_batcher *b, struct sv_group *g, double deadline_ms, const struct sv_client *cl);

double sv_now_ms(void);

#endif
