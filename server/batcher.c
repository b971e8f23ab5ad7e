/* batcher.c — see batcher.h. */
#include "server/batcher.h"

#include "server/world.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct worker {
    struct sv_batcher *b;
    jepa_ctx *ctx;
    pthread_t thread;
    bool started;
    struct sv_job **batch;   /* [max_batch] the clips of the forward being formed */
    int n_run;               /* under b->mu: batch[0 .. n_run) are in the forward running now */
    bool cancelled;          /* under b->mu: jepa_ctx_cancel was called for that forward */
};

struct sv_batcher {
    struct sv_batcher_params p;
    jepa_model_info info;
    pthread_mutex_t mu;
    pthread_cond_t work;     /* a clip was queued, or stopping */
    struct sv_job *head, *tail;
    int queued, running;
    bool stopping;
    struct worker *w;
    int n_workers;
};

double sv_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct timespec abs_time(double ms) {   /* CLOCK_MONOTONIC, for the conds */
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1e3);
    ts.tv_nsec = (long)((ms - ts.tv_sec * 1e3) * 1e6);
    if (ts.tv_nsec < 0) ts.tv_nsec = 0;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    return ts;
}

static void cond_init_monotonic(pthread_cond_t *c) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
}

struct sv_group *sv_group_new(int n) {
    if (n < 1) return NULL;
    struct sv_group *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    if (!(g->jobs = calloc((size_t)n, sizeof *g->jobs))) {
        free(g);
        return NULL;
    }
    g->n = n;
    g->refs = 1;
    cond_init_monotonic(&g->done);
    for (int i = 0; i < n; i++) g->jobs[i].group = g;
    return g;
}

static void group_free(struct sv_group *g) {
    if (g->free_user) g->free_user(g->user);
    pthread_cond_destroy(&g->done);
    free(g->jobs);
    free(g);
}

/* With b->mu held: one reference fewer; the group is freed by whoever drops the last. */
static bool group_unref_locked(struct sv_group *g) { return --g->refs == 0; }

void sv_group_release(struct sv_batcher *b, struct sv_group *g) {
    if (!g) return;
    pthread_mutex_lock(&b->mu);
    const bool last = group_unref_locked(g);
    pthread_mutex_unlock(&b->mu);
    if (last) group_free(g);
}

/* With b->mu held: cancel each running forward whose clips' requests have all stopped
 * waiting (gone or timed out): nobody reads its outputs, and it would hold its worker for
 * as long as it runs. Once per forward: a second cancel could be left over for the next. */
static void cancel_unwanted(struct sv_batcher *b) {
    for (int i = 0; i < b->n_workers; i++) {
        struct worker *w = &b->w[i];
        bool wanted = false;
        for (int k = 0; k < w->n_run && !wanted; k++) wanted = !w->batch[k]->group->abandoned;
        if (w->n_run && !wanted && !w->cancelled) jepa_ctx_cancel(w->ctx), w->cancelled = true;
    }
}

/* ---- the queue ---- */

static bool same_key(const struct sv_job *a, const struct sv_job *b) {
    if (a->world || b->world) return a->world && b->world && sv_world_same(a->world, b->world);
    return a->T == b->T && a->H == b->H && a->W == b->W && (a->want == SV_HIER) == (b->want == SV_HIER);
}

/* With b->mu held: unlink job j (prev is the job before it, or NULL for the head). */
static void unlink_job(struct sv_batcher *b, struct sv_job *prev, struct sv_job *j) {
    if (prev) prev->next = j->next;
    else b->head = j->next;
    if (b->tail == j) b->tail = prev;
    j->next = NULL;
    b->queued--;
}

enum sv_submit_result sv_submit(struct sv_batcher *b, struct sv_group *g) {
    pthread_mutex_lock(&b->mu);
    if (b->stopping) {
        pthread_mutex_unlock(&b->mu);
        return SV_STOPPING;
    }
    if (g->n > b->p.queue - b->queued) {
        pthread_mutex_unlock(&b->mu);
        return SV_QUEUE_FULL;
    }
    const double now = sv_now_ms();
    g->pending = g->n;
    for (int i = 0; i < g->n; i++) {
        struct sv_job *j = &g->jobs[i];
        j->t_enqueued = now, j->next = NULL, j->status = JEPA_OK, j->err[0] = 0;
        if (b->tail) b->tail->next = j;
        else b->head = j;
        b->tail = j;
    }
    b->queued += g->n;
    pthread_cond_broadcast(&b->work);
    pthread_mutex_unlock(&b->mu);
    return SV_SUBMITTED;
}

/* With b->mu held: take g's clips that no worker has started out of the queue. */
static void take_back(struct sv_batcher *b, struct sv_group *g) {
    struct sv_job *prev = NULL, *j = b->head;
    while (j) {
        struct sv_job *next = j->next;
        if (j->group == g) {
            unlink_job(b, prev, j);
            g->pending--;
        } else {
            prev = j;
        }
        j = next;
    }
}

enum sv_wait_result sv_wait(struct sv_batcher *b, struct sv_group *g, double deadline_ms, const struct sv_client *cl) {
    const bool ask = cl && cl->gone;
    enum sv_wait_result res = SV_DONE;
    pthread_mutex_lock(&b->mu);
    while (g->pending > 0) {
        const double now = sv_now_ms();
        if (now >= deadline_ms) {
            res = SV_TIMED_OUT;
            break;
        }
        if (ask) {
            pthread_mutex_unlock(&b->mu);
            const bool gone = cl->gone(cl->fd);
            pthread_mutex_lock(&b->mu);
            if (gone && g->pending > 0) {
                res = SV_CLIENT_GONE;
                break;
            }
        }
        const double until = ask && now + SV_GONE_POLL_MS < deadline_ms ? now + SV_GONE_POLL_MS : deadline_ms;
        const struct timespec ts = abs_time(until);
        pthread_cond_timedwait(&g->done, &b->mu, &ts);
    }
    /* what runs finishes into the group, which its worker's reference keeps alive */
    if (res != SV_DONE) take_back(b, g), g->abandoned = true, cancel_unwanted(b);
    pthread_mutex_unlock(&b->mu);
    return res;
}

void sv_batcher_stats(struct sv_batcher *b, struct sv_stats *s) {
    pthread_mutex_lock(&b->mu);
    s->queued = b->queued, s->running = b->running;
    pthread_mutex_unlock(&b->mu);
}

/* ---- the workers ---- */

size_t sv_want_floats(const jepa_model_info *in, enum sv_want w, int n) {
    switch (w) {
    case SV_TOKENS: return (size_t)n * in->embed_dim;
    case SV_MEAN: case SV_CLS: return (size_t)in->embed_dim;
    case SV_LEWM: return (size_t)in->emb_dim;
    case SV_HIER: return (size_t)in->n_hier * n * in->embed_dim;
    case SV_LOGITS: return (size_t)in->n_classes;
    }
    return 0;
}

/* One forward over the g clips of batch[] (one key), each clip's output copied out. */
static void run_batch(struct worker *w, struct sv_job **batch, int g) {
    const jepa_model_info *in = &w->b->info;
    if (batch[0]->world) {
        sv_world_run(w->ctx, in, batch, g);
        if (w->b->p.on_batch) w->b->p.on_batch(w->b->p.user, g, 0);
        return;
    }
    const struct sv_job *j0 = batch[0];
    const int n = j0->n_tokens, D = in->embed_dim;
    const bool hier = j0->want == SV_HIER;
    const size_t clip = (size_t)3 * j0->T * j0->H * j0->W;
    float *tokens = malloc(sizeof(float) * (size_t)g * n * D);
    float *pooled = malloc(sizeof(float) * (size_t)g * D);
    float *cls = in->has_cls ? malloc(sizeof(float) * (size_t)g * D) : NULL;
    float *emb = in->emb_dim ? malloc(sizeof(float) * (size_t)g * in->emb_dim) : NULL;
    float *hr = hier ? malloc(sizeof(float) * (size_t)g * in->n_hier * n * D) : NULL;
    jepa_status st = JEPA_OK;
    const char *why = "out of memory for the batch";
    if (!tokens || !pooled || (in->has_cls && !cls) || (in->emb_dim && !emb) || (hier && !hr)) {
        st = JEPA_ERR_NOMEM;
    } else {
        jepa_embed_params ep = {.batch = g};
        jepa_embed_out eo = {.tokens = tokens, .pooled = pooled, .cls = cls, .emb = emb, .hier = hr};
        /* the g clips side by side in the context's arena (jepa_ctx_embed_input: no copy of
         * the batch of its own); one clip is read where it is */
        float *xs = NULL;
        if (g > 1 && (st = jepa_ctx_embed_input(w->ctx, j0->T, j0->H, j0->W, &ep, &eo, &xs))) {
            why = jepa_ctx_error(w->ctx);
        } else {
            for (int k = 0; g > 1 && k < g; k++) memcpy(xs + clip * (size_t)k, batch[k]->x, sizeof(float) * clip);
            if ((st = jepa_ctx_embed(w->ctx, g > 1 ? xs : j0->x, j0->T, j0->H, j0->W, &ep, &eo)))
                why = jepa_ctx_error(w->ctx);
        }
    }
    for (int k = 0; k < g; k++) {
        struct sv_job *j = batch[k];
        j->batch = g;
        if (st) {
            j->status = st;
            snprintf(j->err, sizeof j->err, "%s", why);
            continue;
        }
        const size_t per = sv_want_floats(in, j->want, n);
        const float *src = j->want == SV_TOKENS ? tokens : j->want == SV_MEAN ? pooled : j->want == SV_CLS ? cls
                         : j->want == SV_LEWM ? emb : hier ? hr : NULL;
        if (src) {
            memcpy(j->out, src + per * (size_t)k, sizeof(float) * per);
        } else if (jepa_ctx_classify(w->ctx, tokens + (size_t)k * n * D, n, j->out)) {
            j->status = JEPA_ERR_ARG;
            snprintf(j->err, sizeof j->err, "classify: %s", jepa_ctx_error(w->ctx));
        }
    }
    free(tokens), free(pooled), free(cls), free(emb), free(hr);
    if (w->b->p.on_batch && !st) w->b->p.on_batch(w->b->p.user, g, (long long)g * n);
}

/* With b->mu held: a worker takes queued clip j for a batch; its group stays alive until
 * the clip has run, whether or not its request still waits. */
static struct sv_job *take(struct sv_batcher *b, struct sv_job *prev, struct sv_job *j) {
    unlink_job(b, prev, j);
    j->group->refs++;
    return j;
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    struct sv_batcher *b = w->b;
    const int maxb = b->p.max_batch;
    struct sv_job **batch = w->batch;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->head && !b->stopping) pthread_cond_wait(&b->work, &b->mu);
        if (!b->head) break;   /* stopping, nothing left */
        int g = 0;
        batch[g++] = take(b, NULL, b->head);
        const double deadline = batch[0]->t_enqueued + b->p.batch_wait_ms;
        for (;;) {   /* gather clips of the same key, waiting up to the deadline for more */
            struct sv_job *prev = NULL, *j = b->head;
            while (j && g < maxb) {
                struct sv_job *next = j->next;
                if (same_key(j, batch[0])) {
                    batch[g++] = take(b, prev, j);
                } else {
                    prev = j;
                }
                j = next;
            }
            if (g >= maxb || b->stopping || sv_now_ms() >= deadline) break;
            const struct timespec ts = abs_time(deadline);
            pthread_cond_timedwait(&b->work, &b->mu, &ts);
        }
        /* a clip whose request stopped waiting while the batch formed is not run */
        int kept = 0;
        for (int k = 0; k < g; k++) {
            struct sv_group *gr = batch[k]->group;
            if (!gr->abandoned) {
                batch[kept++] = batch[k];
                continue;
            }
            --gr->pending;
            if (group_unref_locked(gr)) {
                pthread_mutex_unlock(&b->mu);
                group_free(gr);
                pthread_mutex_lock(&b->mu);
            }
        }
        if (!(g = kept)) continue;
        b->running += g;
        w->n_run = g;
        for (;;) {
            w->cancelled = false;
            pthread_mutex_unlock(&b->mu);
            run_batch(w, batch, g);
            pthread_mutex_lock(&b->mu);
            /* cancelled while a request still waits for it: a cancel meant for the forward
             * before, which ended first and left it to this one; it is consumed, run again */
            bool cancelled = false, wanted = false;
            for (int k = 0; k < g; k++)
                cancelled |= batch[k]->status == JEPA_ERR_CANCELLED, wanted |= !batch[k]->group->abandoned;
            if (!cancelled || !wanted) break;
        }
        w->n_run = 0;
        b->running -= g;
        for (int k = 0; k < g; k++) {
            struct sv_group *gr = batch[k]->group;
            if (--gr->pending == 0) pthread_cond_signal(&gr->done);
            if (group_unref_locked(gr)) {   /* its request gave up: free it here */
                pthread_mutex_unlock(&b->mu);
                group_free(gr);
                pthread_mutex_lock(&b->mu);
            }
        }
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

jepa_status sv_batcher_start(struct sv_batcher **out, const struct sv_batcher_params *p, char *err) {
    *out = NULL;
    struct sv_batcher *b = calloc(1, sizeof *b);
    if (!b) return snprintf(err, JEPA_ERR_LEN, "out of memory"), JEPA_ERR_NOMEM;
    b->p = *p;
    jepa_model_get_info(p->model, &b->info);
    pthread_mutex_init(&b->mu, NULL);
    cond_init_monotonic(&b->work);
    b->w = calloc((size_t)p->workers, sizeof *b->w);
    if (!b->w) {
        sv_batcher_stop(b);
        return snprintf(err, JEPA_ERR_LEN, "out of memory"), JEPA_ERR_NOMEM;
    }
    for (int i = 0; i < p->workers; i++) {
        jepa_ctx_params cp = jepa_ctx_default_params();
        cp.n_threads = p->threads;
        cp.cpu = p->cpu;
        cp.precision = p->precision;
        char device[32] = "cpu";
        if (p->gpu >= 0) snprintf(device, sizeof device, "cuda:%d", p->gpu);
        cp.device = device;
        jepa_status st = jepa_ctx_new(&b->w[i].ctx, p->model, &cp, err);
        if (!st && p->prepack && (st = jepa_ctx_set_prepack(b->w[i].ctx, 1)))
            snprintf(err, JEPA_ERR_LEN, "--prepack: %s", jepa_ctx_error(b->w[i].ctx));
        if (st) {
            if (b->w[i].ctx) b->n_workers = i + 1;   /* (stopped below with the others) */
            sv_batcher_stop(b);
            return st;
        }
        b->w[i].b = b;
        b->n_workers = i + 1;
        if (!(b->w[i].batch = malloc(sizeof *b->w[i].batch * (size_t)p->max_batch))) {
            sv_batcher_stop(b);
            return snprintf(err, JEPA_ERR_LEN, "out of memory"), JEPA_ERR_NOMEM;
        }
    }
    for (int i = 0; i < p->workers; i++) {
        if (pthread_create(&b->w[i].thread, NULL, worker_main, &b->w[i])) {
            sv_batcher_stop(b);
            return snprintf(err, JEPA_ERR_LEN, "cannot start worker thread %d", i), JEPA_ERR_NOMEM;
        }
        b->w[i].started = true;
    }
    *out = b;
    return JEPA_OK;
}

void sv_batcher_stop(struct sv_batcher *b) {
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    b->stopping = true;
    pthread_cond_broadcast(&b->work);
    pthread_mutex_unlock(&b->mu);
    for (int i = 0; i < b->n_workers; i++) {
        if (b->w[i].started) pthread_join(b->w[i].thread, NULL);
        jepa_ctx_free(b->w[i].ctx);
        free(b->w[i].batch);
    }
    free(b->w);
    pthread_cond_destroy(&b->work);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

const char *sv_batcher_describe(struct sv_batcher *b, char *buf, size_t n) {
    jepa_ctx *c = b->w[0].ctx;
    snprintf(buf, n, "%d worker%s x %d threads, %s kernels on %s", b->n_workers, b->n_workers > 1 ? "s" : "",
             jepa_ctx_threads(c), jepa_ctx_isa(c), jepa_ctx_device(c));
    return buf;
}
