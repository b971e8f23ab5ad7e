/*
 * bench_world.c — `jepa bench world -m MODEL [-t N] [--json] [--quick]`: the LeWM
 * predictor's per-call cost and what batching buys, through the public API.
 *
 *   call      one predict of B = 1 sequence of the full window (jepa.pred.n_frames rows):
 *             microseconds per call at 1 thread and at N threads (the per-call overhead:
 *             planning, the OpenMP team, the tiny matmuls);
 *   batch     the same work for `samples` sequences (the planner's candidates, 300 by
 *             default) as one batched call and as `samples` single calls: ms and the gain;
 *   rollout   a rollout of `horizon` steps (5) for the `samples` sequences in one batched
 *             call: one CEM iteration's predictor work, ms and candidates/s.
 * V-JEPA 2-AC (jepa.pred.kind = ac), with Meta's planner shape (400 samples, 2 steps, one
 * frame of history; --samples / --horizon change them):
 *   call      one predict of one frame (N + 2 rows): ms at 1 and N threads;
 *   rollout   one CEM iteration's predictor work: a rollout of `horizon` steps for the
 *             `samples` candidates in one call (jepa_ctx_ac_rollout), ms, candidates/s and
 *             GFLOP/s against the FMA peak (the matmul and visible-key attention FLOPs);
 *   singles   the same candidates as one call each: ms and the gain of batching.
 * Inputs are fixed pseudo-random values (the weights are what they are; timing does not
 * depend on the values). Each figure is the median of repeated timings (>= 0.3 s each,
 * 0.05 s with --quick), and the FMA peak of the same threads is measured in the same run
 * for reference (bench_fma_peak).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "jepa.h"

static double median3(double a, double b, double c) {
    return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

struct world_job {
    jepa_ctx *c;
    const float *emb, *act;
    float *out;
    int B, T, steps, single;   /* single: B calls of one sequence */
    size_t emb_row, act_row;   /* floats per frame */
};

static int run_job(const struct world_job *j) {
    if (j->steps) return jepa_ctx_lewm_rollout(j->c, j->emb, j->B, j->T, j->act, j->steps, j->out) != JEPA_OK;
    if (!j->single) return jepa_ctx_lewm_predict(j->c, j->emb, j->act, j->B, j->T, j->out) != JEPA_OK;
    for (int s = 0; s < j->B; s++)
        if (jepa_ctx_lewm_predict(j->c, j->emb + (size_t)s * j->T * j->emb_row, j->act + (size_t)s * j->T * j->act_row,
                                  1, j->T, j->out + (size_t)s * j->T * j->emb_row))
            return 1;
    return 0;
}

/* Seconds per run of the job: the median of three timings of >= min_s each. */
static double time_job(const struct world_job *j, double min_s, int *fail) {
    double t[3];
    if (run_job(j)) { *fail = 1; return 0; }   /* warm-up: the arena grows once */
    for (int r = 0; r < 3; r++) {
        int n = 0;
        const double t0 = bench_now();
        double el;
        do {
            if (run_job(j)) { *fail = 1; return 0; }
            n++;
            el = bench_now() - t0;
        } while (el < min_s);
        t[r] = el / n;
    }
    return median3(t[0], t[1], t[2]);
}

/* A context of `threads` threads, or NULL with the reason on stderr. */
static jepa_ctx *ctx_at(jepa_model *m, int threads, const char *precision) {
    char err[JEPA_ERR_LEN];
    jepa_ctx_params p = jepa_ctx_default_params();
    p.n_threads = threads;
    p.precision = precision;
    jepa_ctx *c = NULL;
    if (jepa_ctx_new(&c, m, &p, err)) fprintf(stderr, "jepa: %s\n", err);
    return c;
}

static void fill(float *x, size_t n, uint32_t *r) {
    for (size_t i = 0; i < n; i++) x[i] = (float)((*r = *r * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
}

/* FLOPs of one AC predictor call on B sequences of F frames: the matmuls (embeddings,
 * qkv, out, the MLP, the projection) and attention over the visible keys (a query of
 * frame f sees (f + 1)(N + 2) keys: QK^T and PV, 4 pd per query-key pair). */
static double ac_call_flops(const jepa_model_info *in, int B, int F) {
    const double N = in->pred_tokens_per_frame, R = (double)B * F * (N + 2), pd = in->pred_embed_dim;
    const double ffn = in->pred_ffn_dim, D = in->embed_dim;
    double f = 2.0 * R * in->pred_n_layer * (4 * pd * pd + 2 * pd * ffn);
    f += 2.0 * B * F * (N * D * pd + (in->action_dim + in->state_dim) * pd) + 2.0 * B * F * N * pd * in->pred_out_dim;
    double keys = 0;
    for (int q = 0; q < F; q++) keys += (N + 2) * (q + 1) * (N + 2);
    return f + (double)B * in->pred_n_layer * 4.0 * pd * keys;
}

static int bench_world_ac(const struct bench_opts *o, jepa_model *m, const jepa_model_info *info, int samples, int horizon) {
    const int N = info->pred_tokens_per_frame, D = info->embed_dim, A = info->action_dim, S = info->state_dim;
    if (!samples) samples = 400;
    if (!horizon) horizon = 2;
    if (1 + horizon > info->pred_n_frames + 1 || A != 7 || S != 7) {
        fprintf(stderr, "jepa: bench world: V-JEPA 2-AC rollouts need 7-d actions and states and horizon <= %d\n",
                info->pred_n_frames);
        return 1;
    }
    const size_t fr = (size_t)N * D;
    float *tok = malloc(sizeof(float) * fr * samples), *st = malloc(sizeof(float) * 7 * samples);
    float *act = malloc(sizeof(float) * 7 * horizon * samples), *traj = malloc(sizeof(float) * fr * horizon * samples);
    int fail = 0;
    if (!tok || !st || !act || !traj) {
        fprintf(stderr, "jepa: out of memory for %d candidates\n", samples);
        fail = 1;
        goto done;
    }
    uint32_t r = 12345;
    fill(tok, fr, &r), fill(st, 7, &r);
    for (int n = 1; n < samples; n++) {   /* one start for every candidate, as in a plan */
        memcpy(tok + fr * n, tok, sizeof(float) * fr);
        memcpy(st + 7 * n, st, sizeof(float) * 7);
    }
    fill(act, (size_t)7 * horizon * samples, &r);
    for (size_t i = 0; i < (size_t)7 * horizon * samples; i++) act[i] *= 0.1f;
    double flops = 0;   /* one candidate's rollout: calls of 1, 2, .. horizon frames */
    for (int k = 0; k < horizon; k++) flops += ac_call_flops(info, 1, 1 + k);
    const char *isa = NULL;
    const double peak = bench_fma_peak(o->cpu, o->threads, &isa);
    if (!o->json)
        printf("bench world: %s, V-JEPA 2-AC predictor %d-d x %d layers, %d tokens per frame; %d candidates x %d steps; "
               "%d threads; FMA peak %.1f GFLOP/s (%s); %.1f GFLOP per candidate\n",
               info->name ? info->name : "?", info->pred_embed_dim, info->pred_n_layer, N, samples, horizon, o->threads,
               peak, isa, flops * 1e-9);
    const int nt[2] = {1, o->threads};
    for (int k = 0; k < 2 && !fail; k++) {
        if (k == 1 && nt[1] == 1) break;
        jepa_ctx *c = ctx_at(m, nt[k], o->precision);
        if (!c) {
            fail = 1;
            break;
        }
        double t[4] = {0};
        for (int phase = 0; phase < 3 && !fail; phase++) {   /* call, batched rollout, singles */
            if (phase == 1 && k == 0 && o->quick) continue;   /* --quick: the batch at N threads only */
            if (phase == 2 && k == 0) continue;               /* singles at N threads only */
            /* a first, untimed call grows the arena: for the batch one of up to 32
             * candidates (the rollout runs about that many per predictor call at the
             * real shape); the singles reuse the batch's */
            if (phase == 0) fail = jepa_ctx_ac_predict(c, tok, act, st, 1, 1, traj) != JEPA_OK;
            if (phase == 1)
                fail = jepa_ctx_ac_rollout(c, tok, st, samples < 32 ? samples : 32, 1, act, horizon, 1, traj, NULL) != JEPA_OK;
            {
                const double t0 = bench_now();
                if (fail) break;
                if (phase == 0) fail = jepa_ctx_ac_predict(c, tok, act, st, 1, 1, traj) != JEPA_OK;
                else if (phase == 1) fail = jepa_ctx_ac_rollout(c, tok, st, samples, 1, act, horizon, 1, traj, NULL) != JEPA_OK;
                else
                    for (int n = 0; n < samples && !fail; n++)
                        fail = jepa_ctx_ac_rollout(c, tok + fr * n, st + 7 * n, 1, 1, act + (size_t)7 * horizon * n, horizon, 1,
                                                   traj + fr * horizon * n, NULL) != JEPA_OK;
                t[phase] = bench_now() - t0;
            }
        }
        if (fail) {
            fprintf(stderr, "jepa: %s\n", jepa_ctx_error(c));
        } else if (o->json) {
            printf("{\"bench\": \"world_ac\", \"threads\": %d, \"call_ms\": %.3f, \"samples\": %d, \"horizon\": %d, "
                   "\"rollout_ms\": %.1f, \"candidates_per_s\": %.3f, \"gflops\": %.1f, \"peak_gflops\": %.1f, "
                   "\"singles_ms\": %.1f, \"batch_gain\": %.3f, \"isa\": \"%s\"}\n",
                   nt[k], t[0] * 1e3, samples, horizon, t[1] * 1e3, t[1] > 0 ? samples / t[1] : 0.0,
                   t[1] > 0 ? flops * samples / t[1] * 1e-9 : 0.0, peak, t[2] * 1e3, t[1] > 0 && t[2] > 0 ? t[2] / t[1] : 0.0,
                   jepa_ctx_isa(c));
        } else {
            printf("  %d thread%s (%s): one call (1 frame, %d rows) %8.1f ms", nt[k], nt[k] > 1 ? "s" : "", jepa_ctx_isa(c),
                   N + 2, t[0] * 1e3);
            if (t[1] > 0)
                printf(" | one CEM iteration (%d x %d steps, batched): %.1f ms, %.2f candidates/s, %.1f GFLOP/s (%.0f %% of peak)",
                       samples, horizon, t[1] * 1e3, samples / t[1], flops * samples / t[1] * 1e-9,
                       100.0 * flops * samples / t[1] * 1e-9 / (k ? peak : peak / o->threads));
            if (t[2] > 0) printf(" | %d single rollouts: %.1f ms, gain of batching %.2fx", samples, t[2] * 1e3, t[2] / t[1]);
            printf("\n");
        }
        jepa_ctx_free(c);
    }
done:
    free(tok), free(st), free(act), free(traj);
    return fail;
}

int bench_world(const struct bench_opts *o, const char *model_path, int samples, int horizon) {
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    if (jepa_model_load(&m, model_path, err)) {
        fprintf(stderr, "jepa: %s: %s\n", model_path, err);
        return 1;
    }
    jepa_model_info info;
    jepa_model_get_info(m, &info);
    if (info.predictor && !strcmp(info.predictor, "ac")) {
        const int rc = bench_world_ac(o, m, &info, samples, horizon);
        jepa_model_free(m);
        return rc;
    }
    if (!info.predictor || strcmp(info.predictor, "lewm")) {
        fprintf(stderr, "jepa: %s: no world-model predictor (bench world times jepa_ctx_lewm_* and jepa_ctx_ac_*)\n", model_path);
        jepa_model_free(m);
        return 1;
    }
    if (!samples) samples = 300;
    if (!horizon) horizon = 5;
    const int T = info.pred_n_frames, D = info.emb_dim, A = info.action_dim;
    const int L = T + horizon;   /* rollout: a full-window history, then horizon steps */
    const size_t n_emb = (size_t)samples * L * D, n_act = (size_t)samples * L * A;
    float *emb = malloc(sizeof(float) * n_emb), *act = malloc(sizeof(float) * n_act);
    float *out = malloc(sizeof(float) * (size_t)samples * L * (D > info.pred_out_dim ? D : info.pred_out_dim));
    if (!emb || !act || !out) {
        fprintf(stderr, "jepa: out of memory\n");
        free(emb), free(act), free(out), jepa_model_free(m);
        return 1;
    }
    uint32_t r = 12345;
    fill(emb, n_emb, &r), fill(act, n_act, &r);
    const double min_s = o->quick ? 0.05 : 0.3;
    const int nt[2] = {1, o->threads};
    int fail = 0;
    const char *isa = NULL;
    const double peak = bench_fma_peak(o->cpu, o->threads, &isa);
    if (!o->json)
        printf("bench world: %s (%s), window %d, %d-d, actions %d; %d threads; FMA peak %.1f GFLOP/s (%s)\n",
               info.name ? info.name : "?", model_path, T, D, A, o->threads, peak, isa);
    for (int k = 0; k < 2 && !fail; k++) {
        if (k == 1 && nt[1] == 1) break;
        jepa_ctx *c = ctx_at(m, nt[k], o->precision);
        if (!c) {
            fail = 1;
            break;
        }
        struct world_job one = {c, emb, act, out, 1, T, 0, 0, (size_t)D, (size_t)A};
        struct world_job batch = {c, emb, act, out, samples, T, 0, 0, (size_t)D, (size_t)A};
        struct world_job singles = batch;
        singles.single = 1;
        struct world_job roll = {c, emb, act, out, samples, T, horizon, 0, (size_t)D, (size_t)A};
        const double t1 = time_job(&one, min_s, &fail), tb = time_job(&batch, min_s, &fail);
        const double ts = time_job(&singles, min_s, &fail), tr = time_job(&roll, min_s, &fail);
        if (!fail) {
            if (o->json) {
                printf("{\"bench\": \"world\", \"threads\": %d, \"window\": %d, \"call_us\": %.2f, \"samples\": %d, "
                       "\"batch_ms\": %.3f, \"singles_ms\": %.3f, \"batch_gain\": %.2f, \"horizon\": %d, "
                       "\"rollout_ms\": %.3f, \"candidates_per_s\": %.1f, \"isa\": \"%s\"}\n",
                       nt[k], T, t1 * 1e6, samples, tb * 1e3, ts * 1e3, ts / tb, horizon, tr * 1e3, samples / tr,
                       jepa_ctx_isa(c));
            } else {
                printf("  %d thread%s (%s): one call (1 x %d rows) %8.1f us | %d sequences: batched %7.2f ms, "
                       "%d single calls %7.2f ms, gain %.2fx | rollout of %d steps x %d: %7.2f ms, %.0f candidates/s\n",
                       nt[k], nt[k] > 1 ? "s" : "", jepa_ctx_isa(c), T, t1 * 1e6, samples, tb * 1e3, samples, ts * 1e3,
                       ts / tb, horizon, samples, tr * 1e3, samples / tr);
            }
        } else {
            fprintf(stderr, "jepa: %s\n", jepa_ctx_error(c));
        }
        jepa_ctx_free(c);
    }
    free(emb), free(act), free(out);
    jepa_model_free(m);
    return fail;
}
