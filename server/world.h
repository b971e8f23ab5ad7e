/*
 * world.h — `jepa serve`'s world-model routes, POST /v1/predict, /v1/rollout and /v1/plan,
 * for LeWM (jepa.pred.kind lewm) and V-JEPA 2-AC (ac): the calls of `jepa predict --emb /
 * --tokens`, `jepa rollout` and `jepa plan --start-tokens / --goal-tokens` (include/jepa.h),
 * with the CLI's checks and bounds and the server's per-request ones (docs/server.md).
 *
 * A request is one job in the batcher's queue (server/batcher.h). A worker runs the
 * predict or rollout jobs of one key (operation, frames, steps, normalize) that are queued
 * together as one call over all their sequences (the calls are per sequence: the same
 * bits as one call each, as `jepa predict` of a [B, ...] file gives each row); a plan runs
 * alone (its candidates are its batch).
 */
#ifndef JEPA_SERVER_WORLD_H
#define JEPA_SERVER_WORLD_H

#include <stdbool.h>

#include "jepa.h"
#include "server/api.h"
#include "server/batcher.h"

enum sv_world_op { SW_LEWM_PREDICT, SW_LEWM_ROLLOUT, SW_AC_PREDICT, SW_AC_ROLLOUT, SW_LEWM_PLAN, SW_AC_PLAN };

/* One world-model job: its inputs and outputs (owned by the request), set by the
 * submitter; status in the job. */
struct sv_world {
    enum sv_world_op op;
    int B, T, steps, normalize;
    const float *x;          /* LeWM emb [B, T, emb_dim]; V-JEPA 2-AC tokens [B, T N, D] */
    const float *actions;    /* [B, T (+ steps - 1), action_dim]; a plan: its past actions [T - 1, A] */
    const float *states;     /* V-JEPA 2-AC [B, T, state_dim] */
    const float *goal;       /* a plan's goal */
    jepa_plan_params pp;     /* a plan's settings */
    jepa_plan_component box[7];
    float *out;              /* prediction / trajectory / a plan's actions */
    float *out_states;       /* V-JEPA 2-AC rollout: the steps' states */
    float *energies;         /* a plan's best energy per iteration */
    float final_energy;
};

/* Jobs a and b may run as one call. */
bool sv_world_same(const struct sv_world *a, const struct sv_world *b);
/* Run the g jobs of one key on c, merged along their sequences; status and err into each. */
void sv_world_run(jepa_ctx *c, const jepa_model_info *in, struct sv_job **jobs, int g);

enum sv_world_route { SW_ROUTE_PREDICT, SW_ROUTE_ROLLOUT, SW_ROUTE_PLAN };
/* POST /v1/predict, /v1/rollout, /v1/plan. */
void api_world(struct sv_api *a, const char *body, size_t len, enum sv_world_route route, double t0_ms,
               const struct sv_client *cl, struct sv_response *r);

#endif
