/*
 * plan.c — the cross-entropy method (CEM) over a world model's action sequences, for
 * LeWM and V-JEPA 2-AC (docs/world-models.md, "Planning"):
 *
 *   mean = 0, std = init_std                       [horizon, action_dim]
 *   each iteration:
 *     candidate n = clip(mean + std * eps_n)       eps from the stream of plan.h, in the
 *                                                  order n, step, component; a held
 *                                                  component (lo == hi) is lo and draws none
 *     energy n = mean |rollout(history, past actions ++ candidate n) at the horizon
 *                      - goal|                     (the L1 distance)
 *     the `elites` lowest energies (ties: the lower index) give the elites' mean and their
 *     standard deviation (K - 1, as torch's std);
 *     mean = (1 - momentum_mean) elite mean + momentum_mean mean, std likewise
 *   plan = clip(mean), a component set to 0 where |it| < its deadband; its energy is
 *   computed once more
 *
 * All candidates of an iteration go through the predictor as one batched rollout. The
 * sampling and the selection run on the host in a fixed order and the predictors give
 * the same bits at any thread count, so one seed gives one plan.
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

/* One action component's search box: the table's entry, or the scalar fields. */
struct box {
    float lo, hi, std, deadband;
    bool bounded;
};

static struct box box_of(const jepa_plan_params *p, int j) {
    if (p->components) {
        const jepa_plan_component *q = &p->components[j];
        return (struct box){q->lo, q->hi, q->init_std, q->deadband, true};
    }
    return (struct box){p->lo, p->hi, p->init_std, 0.0f, p->lo < p->hi};
}

static float clip(float x, const struct box *b) {
    if (b->bounded) x = x < b->lo ? b->lo : x > b->hi ? b->hi : x;
    return x;
}

/* mean_j |x_j - g_j|, NaN as +inf (a non-finite prediction is never an elite) */
static double energy(const float *x, const float *g, size_t d) {
    double s = 0.0;
    for (size_t j = 0; j < d; j++) s += fabs((double)x[j] - g[j]);
    s /= (double)d;
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

static jepa_status check_params(struct jepa_ctx *c, const jepa_plan_params *p, int A) {
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
    if (!(p->momentum_mean >= 0 && p->momentum_mean <= 1 && p->momentum_std >= 0 && p->momentum_std <= 1))
        return jr_err_set(&c->err, JEPA_ERR_ARG, "plan momentum (mean %g, std %g): each in [0, 1]",
                          (double)p->momentum_mean, (double)p->momentum_std);
    for (int j = 0; p->components && j < A; j++) {
        const jepa_plan_component *q = &p->components[j];
        if (!isfinite(q->lo) || !isfinite(q->hi) || q->lo > q->hi || !isfinite(q->init_std) || q->init_std < 0 ||
            !isfinite(q->deadband) || q->deadband < 0)
            return jr_err_set(&c->err, JEPA_ERR_ARG,
                              "plan component %d: bounds [%g, %g], std %g, deadband %g (finite, lo <= hi, std and deadband >= 0)",
                              j, (double)q->lo, (double)q->hi, (double)q->init_std, (double)q->deadband);
    }
    return JEPA_OK;
}

/* What the CEM needs of a world model: the energies of N candidate action sequences,
 * seq [N, n_past + horizon, A] (the same past actions in every one). */
struct cem_model {
    int A, n_past;
    jepa_status (*energies)(struct jepa_ctx *c, void *u, const float *seq, int N, double *e);
    void *u;
};

static jepa_status cem(struct jepa_ctx *c, const struct cem_model *cm, const float *past,
                       const jepa_plan_params *p, float *actions, float *energies, float *final_energy) {
    const int A = cm->A, H = p->horizon, N = p->samples, K = p->elites, P = cm->n_past, S = P + H;
    jepa_status st = JEPA_OK;
    float *seq = malloc(sizeof(float) * (size_t)N * S * A);
    double *mean = malloc(sizeof(double) * (size_t)H * A), *sd = malloc(sizeof(double) * (size_t)H * A);
    double *e = malloc(sizeof(double) * (size_t)N);
    struct ranked *rk = malloc(sizeof *rk * (size_t)N);
    struct box *bx = malloc(sizeof *bx * (size_t)A);
    if (!seq || !mean || !sd || !e || !rk || !bx) {
        st = jr_err_set(&c->err, JEPA_ERR_NOMEM, "out of memory for a plan of %d samples", N);
        goto done;
    }
    for (int j = 0; j < A; j++) bx[j] = box_of(p, j);
    for (int n = 0; n < N; n++)   /* every candidate starts from the same past */
        if (P) memcpy(seq + (size_t)n * S * A, past, sizeof(float) * (size_t)P * A);
    for (int i = 0; i < H * A; i++) mean[i] = 0.0, sd[i] = bx[i % A].std;
    struct jm_rng rng = {p->seed};
    for (int it = 0; it < p->iterations; it++) {
        for (int n = 0; n < N; n++) {
            float *cand = seq + ((size_t)n * S + P) * A;
            for (int i = 0; i < H * A; i++) {
                const struct box *b = &bx[i % A];
                cand[i] = b->bounded && b->lo == b->hi ? b->lo : clip((float)(mean[i] + sd[i] * jm_rng_normal(&rng)), b);
            }
        }
        if ((st = cm->energies(c, cm->u, seq, N, e))) goto done;
        for (int n = 0; n < N; n++) rk[n] = (struct ranked){e[n], n};
        qsort(rk, (size_t)N, sizeof *rk, by_energy);
        if (!isfinite(rk[0].e)) {
            st = jr_err_set(&c->err, JEPA_ERR_ARG, "plan: every candidate's prediction is non-finite");
            goto done;
        }
        if (energies) energies[it] = (float)rk[0].e;
        if (p->on_iteration) p->on_iteration(p->user, it, (float)rk[0].e);
        for (int i = 0; i < H * A; i++) {   /* refit to the elites */
            double m = 0.0, v = 0.0;
            for (int k = 0; k < K; k++) m += seq[((size_t)rk[k].i * S + P) * A + i];
            m /= K;
            for (int k = 0; k < K; k++) {
                const double dlt = seq[((size_t)rk[k].i * S + P) * A + i] - m;
                v += dlt * dlt;
            }
            const double s = K > 1 ? sqrt(v / (K - 1)) : 0.0;
            mean[i] = (1.0 - p->momentum_mean) * m + p->momentum_mean * mean[i];
            sd[i] = (1.0 - p->momentum_std) * s + p->momentum_std * sd[i];
        }
    }
    for (int i = 0; i < H * A; i++) {   /* the plan; its energy from candidate 0's slot */
        const struct box *b = &bx[i % A];
        const float x = b->bounded && b->lo == b->hi ? b->lo : clip((float)mean[i], b);
        actions[i] = fabsf(x) < b->deadband ? 0.0f : x;
    }
    memcpy(seq + (size_t)P * A, actions, sizeof(float) * (size_t)H * A);
    if ((st = cm->energies(c, cm->u, seq, 1, e))) goto done;
    if (final_energy) *final_energy = (float)e[0];
done:
    free(seq), free(mean), free(sd), free(e), free(rk), free(bx);
    return st;
}

/* ---- LeWM: the history's embeddings rolled out; the embedding at the horizon ---- */

struct lewm_plan {
    const float *emb, *goal;
    int T, H, D;
    float *rep, *traj;   /* [N, T, D] the history per candidate, [N, H, D] */
};

static jepa_status lewm_energies(struct jepa_ctx *c, void *u, const float *seq, int N, double *e) {
    struct lewm_plan *q = u;
    jepa_status st = jm_lewm_rollout(c, q->rep, N, q->T, seq, q->H, q->traj);
    for (int n = 0; !st && n < N; n++) e[n] = energy(q->traj + ((size_t)n * q->H + q->H - 1) * q->D, q->goal, (size_t)q->D);
    return st;
}

jepa_status jm_lewm_plan(struct jepa_ctx *c, const float *emb, int T, const float *past_actions,
                         const float *goal, const jepa_plan_params *p, float *actions, float *energies,
                         float *final_energy) {
    const struct jm_predictor *pr = &c->m->pred;
    if (!c->m->has_pred || pr->kind != JM_PRED_LEWM)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "this model file has no LeWM predictor (jepa.pred.kind = lewm)");
    jepa_status st = check_params(c, p, pr->action_dim);
    if (st) return st;
    if (T < 1 || T > JM_MAX_CLIP_TOKENS) return jr_err_set(&c->err, JEPA_ERR_ARG, "plan history of %d frames", T);
    if (T > 1 && !past_actions)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "a history of %d frames needs its %d past actions", T, T - 1);
    const int D = pr->vit.d, A = pr->action_dim, H = p->horizon, N = p->samples;
    if ((int64_t)N * (T + H) > JM_MAX_CLIP_TOKENS)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "plan of %d samples x %d frames: more than %d rows", N, T + H,
                          JM_MAX_CLIP_TOKENS);
    if ((st = jm_check_finite(c, emb, (size_t)T * D, "embedding")) ||
        (st = jm_check_finite(c, goal, (size_t)D, "goal")) ||
        (T > 1 && (st = jm_check_finite(c, past_actions, (size_t)(T - 1) * A, "past action"))))
        return st;
    struct lewm_plan q = {emb, goal, T, H, D, malloc(sizeof(float) * (size_t)N * T * D),
                          malloc(sizeof(float) * (size_t)N * H * D)};
    if (!q.rep || !q.traj) {
        st = jr_err_set(&c->err, JEPA_ERR_NOMEM, "out of memory for a plan of %d samples", N);
    } else {
        for (int n = 0; n < N; n++) memcpy(q.rep + (size_t)n * T * D, emb, sizeof(float) * (size_t)T * D);
        const struct cem_model cm = {A, T - 1, lewm_energies, &q};
        st = cem(c, &cm, past_actions, p, actions, energies, final_energy);
    }
    free(q.rep), free(q.traj);
    return st;
}

/* ---- V-JEPA 2-AC: the history's tokens rolled out; the frame at the horizon ---- */

struct ac_plan {
    const float *tok, *st, *goal;  /* the history [T N, D], [T, 7]; the goal [N, D] */
    int T, H;
    size_t fr;                     /* floats of one frame's tokens */
    float *last;                   /* [N, fr] the frame at the horizon */
};

static jepa_status ac_energies(struct jepa_ctx *c, void *u, const float *seq, int N, double *e) {
    struct ac_plan *q = u;
    const unsigned flags = JM_AC_NORMALIZE | JM_AC_LAST_ONLY | JM_AC_SHARED_HISTORY;
    jepa_status st = jm_ac_rollout(c, q->tok, q->st, N, q->T, seq, q->H, flags, q->last, NULL);
    for (int n = 0; !st && n < N; n++) e[n] = energy(q->last + (size_t)n * q->fr, q->goal, q->fr);
    return st;
}

jepa_status jm_ac_plan(struct jepa_ctx *c, const float *tokens, const float *states, int T, const float *past_actions,
                       const float *goal, const jepa_plan_params *p, float *actions, float *energies,
                       float *final_energy) {
    const struct jepa_model *m = c->m;
    const struct jm_predictor *pr = &m->pred;
    if (!m->has_pred || pr->kind != JM_PRED_AC)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "this model file has no V-JEPA 2-AC predictor (jepa.pred.kind = ac)");
    jepa_status st = check_params(c, p, pr->action_dim);
    if (st) return st;
    if (T < 1 || T > jm_ac_max_frames(m))
        return jr_err_set(&c->err, JEPA_ERR_ARG, "plan history of %d frames: 1 .. %d", T, jm_ac_max_frames(m));
    if (T > 1 && !past_actions)
        return jr_err_set(&c->err, JEPA_ERR_ARG, "a history of %d frames needs its %d past actions", T, T - 1);
    const int A = pr->action_dim, N = p->samples;
    const size_t fr = (size_t)pr->grid_size * pr->grid_size * m->enc.vit.d;
    if ((st = jm_check_finite(c, goal, fr, "goal")) ||
        (T > 1 && (st = jm_check_finite(c, past_actions, (size_t)(T - 1) * A, "past action"))))
        return st;
    struct ac_plan q = {tokens, states, goal, T, p->horizon, fr, malloc(sizeof(float) * (size_t)N * fr)};
    if (!q.last) {
        st = jr_err_set(&c->err, JEPA_ERR_NOMEM, "out of memory for a plan of %d samples", N);
    } else {
        const struct cem_model cm = {A, T - 1, ac_energies, &q};
        st = cem(c, &cm, past_actions, p, actions, energies, final_energy);
    }
    free(q.last);
    return st;
}
