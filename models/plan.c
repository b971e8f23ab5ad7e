/*
 * plan.c — the cross-entropy method (CEM) over a LeWM world model's action sequences
 * (docs/world-models.md, "Planning"):
 *
 *   mean = 0, std = init_std                       [horizon, action_dim]
 *   each iteration:
 *     candidate n = clip(mean + std * eps_n)       eps from the stream of plan.h, in the
 *                                                  order n, step, component
 *     energy n = mean_j |rollout(history, past actions ++ candidate n)[horizon - 1, j]
 *                       - goal_j|                  (the L1 distance at the horizon)
 *     the `elites` lowest energies (ties: the lower index) refit mean and std (the
 *     elites' mean and their standard deviation with K - 1, as torch's std)
 *   plan = clip(mean); its energy is computed once more
 *
 * All candidates of an iteration go through the predictor as one batched rollout. The
 * sampling and the selection run on the host in a fixed order and the predictor gives the
 * same bits at any thread count, so one seed gives one plan.
 */
#include "models/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/forward.h"

uint64_t jm_rng_next(struct jm_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double jm_rng_uniform(struct jm_rng *r) { return (double)(jm_rng_next(r) >> 11) * 0x1.0p-53; }

double jm_rng_normal(struct jm_rng *r) {
    double u = jm_rng_uniform(r), v = jm_rng_uniform(r);
    if (u <= 0.0) u = 1e-300;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Limits of one plan: every buffer below is bounded by them before it is allocated. */
#define PLAN_MAX_SAMPLES 65536
#define PLAN_MAX_HORIZON 1024
#define PLAN_MAX_ITERS 100000

static float clip(float x, const jepa_plan_params *p) {
    if (p->lo < p->hi) x = x < p->lo ? p->lo : x > p->hi ? p->hi : x;
    return x;
}

/* mean_j |x_j - g_j|, NaN as +inf (a non-finite prediction is never an elite) */
static double energy(const float *x, const float *g, int d) {
    double s = 0.0;
    for (int j = 0; j < d; j++) s += fabs((double)x[j] - g[j]);
    s /= d;
    return isnan(s) ? INFINITY : s;
}

struct ranked {
    double e;
    int i;
};

static int by_energy(const void *a, const void *b) {
    const struct ranked *x = a, *y = b;
    if (x->e != y->e) return x->e < y->e ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static jepa_status check_params(struct jepa_ctx *c, const jepa_plan_params *p) {
    if (p->horizon < 1 || p->horizon > PLAN_MAX_HORIZON)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "plan horizon %d: 1 .. %d", p->horizon, PLAN_MAX_HORIZON);
    if (p->samples < 1 || p->samples > PLAN_MAX_SAMPLES)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "plan samples %d: 1 .. %d", p->samples, PLAN_MAX_SAMPLES);
    if (p->iterations < 1 || p->iterations > PLAN_MAX_ITERS)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "plan iterations %d: 1 .. %d", p->iterations, PLAN_MAX_ITERS);
    if (p->elites < 1 || p->elites > p->samples)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "plan elites %d: 1 .. samples (%d)", p->elites, p->samples);
    if (!isfinite(p->init_std) || p->init_std < 0)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "plan init_std %g: a finite value >= 0", (double)p->init_std);
    if (!isfinite(p->lo) || !isfinite(p->hi))
        return jr_err_set(&c->err, JEPA_ERR_ARG, "plan bounds must be finite");
    return JEPA_OK;
}

jepa_status jm_lewm_plan(struct jepa_ctx *c, const float *emb, int T, const float *past_actions,
                         const float *goal, const jepa_plan_params *p, float *actions, float *energies,
                         float *final_energy) {
    const struct jm_predictor *pr = &c->m->pred;
    if (!c->m->has_pred || pr->kind != JM_PRED_LEWM)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "this model file has no LeWM predictor (jepa.pred.kind = lewm)");
    jepa_status st = check_params(c, p);
    if (st) return st;
    if (T < 1 || T > JM_MAX_CLIP_TOKENS) return jr_err_set(&c->err, JEPA_ERR_ARG, "plan history of %d frames", T);
    if (T > 1 && !past_actions)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "a history of %d frames needs its %d past actions", T, T - 1);
    const int D = pr->vit.d, A = pr->action_dim, H = p->horizon, N = p->samples, K = p->elites;
    const int S = T - 1 + H;   /* actions of one candidate's rollout */
    if ((int64_t)N * (T + H) > JM_MAX_CLIP_TOKENS)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "plan of %d samples x %d frames: more than %d rows", N, T + H,
                          JM_MAX_CLIP_TOKENS);
    if ((st = jm_check_finite(c, emb, (size_t)T * D, "embedding")) ||
        (st = jm_check_finite(c, goal, (size_t)D, "goal")) ||
        (T > 1 && (st = jm_check_finite(c, past_actions, (size_t)(T - 1) * A, "past action"))))
        return st;

    float *seq = malloc(sizeof(float) * (size_t)N * S * A);
    float *rep = malloc(sizeof(float) * (size_t)N * T * D);
    float *traj = malloc(sizeof(float) * (size_t)N * H * D);
    double *mean = malloc(sizeof(double) * (size_t)H * A), *sd = malloc(sizeof(double) * (size_t)H * A);
    struct ranked *rk = malloc(sizeof *rk * (size_t)N);
    if (!seq || !rep || !traj || !mean || !sd || !rk) {
        st = jr_err_set(&c->err, JEPA_ERR_NOMEM, "out of memory for a plan of %d samples", N);
        goto done;
    }
    for (int n = 0; n < N; n++) {   /* every candidate starts from the same history */
        memcpy(rep + (size_t)n * T * D, emb, sizeof(float) * (size_t)T * D);
        if (T > 1) memcpy(seq + (size_t)n * S * A, past_actions, sizeof(float) * (size_t)(T - 1) * A);
    }
    for (int i = 0; i < H * A; i++) mean[i] = 0.0, sd[i] = p->init_std;
    struct jm_rng rng = {p->seed};
    for (int it = 0; it < p->iterations; it++) {
        for (int n = 0; n < N; n++) {
            float *cand = seq + ((size_t)n * S + (T - 1)) * A;
            for (int i = 0; i < H * A; i++) cand[i] = clip((float)(mean[i] + sd[i] * jm_rng_normal(&rng)), p);
        }
        if ((st = jm_lewm_rollout(c, rep, N, T, seq, H, traj))) goto done;
        for (int n = 0; n < N; n++) rk[n] = (struct ranked){energy(traj + ((size_t)n * H + H - 1) * D, goal, D), n};
        qsort(rk, (size_t)N, sizeof *rk, by_energy);
        if (!isfinite(rk[0].e)) {
            st = jr_err_set(&c->err, JEPA_ERR_ARG, "plan: every candidate's prediction is non-finite");
            goto done;
        }
        if (energies) energies[it] = (float)rk[0].e;
        if (p->on_iteration) p->on_iteration(p->user, it, (float)rk[0].e);
        for (int i = 0; i < H * A; i++) {   /* refit to the elites */
            double m = 0.0, v = 0.0;
            for (int k = 0; k < K; k++) m += seq[((size_t)rk[k].i * S + (T - 1)) * A + i];
            m /= K;
            for (int k = 0; k < K; k++) {
                const double dlt = seq[((size_t)rk[k].i * S + (T - 1)) * A + i] - m;
                v += dlt * dlt;
            }
            mean[i] = m;
            sd[i] = K > 1 ? sqrt(v / (K - 1)) : 0.0;
        }
    }
    /* the plan and its energy: candidate 0's slot reused for one more rollout */
    for (int i = 0; i < H * A; i++) actions[i] = clip((float)mean[i], p);
    memcpy(seq + (size_t)(T - 1) * A, actions, sizeof(float) * (size_t)H * A);
    if ((st = jm_lewm_rollout(c, rep, 1, T, seq, H, traj))) goto done;
    if (final_energy) *final_energy = (float)energy(traj + (size_t)(H - 1) * D, goal, D);
done:
    free(seq), free(rep), free(traj), free(mean), free(sd), free(rk);
    return st;
}
