/*
 * metrics.h — `jepa serve`'s counters, rendered at GET /metrics in the Prometheus text
 * exposition format (version 0.0.4). Every label takes values from a fixed set (the
 * routes, the statuses the server sends, the rejection reasons), so the series count is
 * bounded whatever the clients send.
 */
#ifndef JEPA_SERVER_METRICS_H
#define JEPA_SERVER_METRICS_H

#include "server/text.h"

enum sv_route { R_HEALTH, R_MODELS, R_METRICS, R_EMBEDDINGS, R_CLASSIFY, R_PREDICT, R_ROLLOUT, R_PLAN, R_OTHER, R_COUNT };
enum sv_reject { REJ_QUEUE_FULL, REJ_TIMEOUT, REJ_TOO_LARGE, REJ_UNAUTHORIZED, REJ_SHUTTING_DOWN, REJ_SLOW_CLIENT,
                 REJ_DECODE_BUDGET, REJ_CLIENT_GONE, REJ_COUNT };

const char *sv_route_path(enum sv_route r);

/* One finished request: its route, status and time. */
void metrics_request(enum sv_route r, int status, double seconds);
void metrics_reject(enum sv_reject why);
/* One forward of `clips` clips, `tokens` tokens in all. */
void metrics_batch(int clips, long long tokens);
/* The whole exposition; queued / running clips and requests in flight are the gauges. */
void metrics_render(struct sbuf *s, int queued, int running, int in_flight);

#endif
