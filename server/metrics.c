/* metrics.c — see metrics.h. */
#include "server/metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const char *const ROUTE_PATH[R_COUNT] = {"/health", "/v1/models", "/metrics", "/v1/embeddings",
                                                "/v1/classify", "/v1/predict", "/v1/rollout", "/v1/plan", "other"};
static const int STATUSES[] = {200, 400, 401, 404, 405, 408, 413, 429, 431, 499, 500, 503, 504};
#define N_STATUS ((int)(sizeof STATUSES / sizeof STATUSES[0]))
static const char *const REJECT[REJ_COUNT] = {"queue_full", "timeout", "body_too_large", "unauthorized",
                                              "shutting_down", "slow_client", "decode_budget", "client_gone"};
/* request latency buckets (s) and batch size buckets (clips) */
static const double LAT_LE[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
#define N_LAT ((int)(sizeof LAT_LE / sizeof LAT_LE[0]))
static const int BATCH_LE[] = {1, 2, 4, 8, 16, 32, 64, 128};
#define N_BATCH ((int)(sizeof BATCH_LE / sizeof BATCH_LE[0]))

static struct {
    pthread_mutex_t mu;
    unsigned long long requests[R_COUNT][N_STATUS + 1];   /* last column: any other status */
    unsigned long long lat[R_COUNT][N_LAT + 1];           /* per bucket (not cumulative); last: +Inf */
    double lat_sum[R_COUNT];
    unsigned long long lat_count[R_COUNT];
    unsigned long long rejected[REJ_COUNT];
    unsigned long long batch[N_BATCH + 1];
    unsigned long long batches, clips, tokens;
} M = {.mu = PTHREAD_MUTEX_INITIALIZER};

const char *sv_route_path(enum sv_route r) { return ROUTE_PATH[r]; }

void metrics_request(enum sv_route r, int status, double seconds) {
    int si = N_STATUS, li = N_LAT;
    for (int i = 0; i < N_STATUS; i++)
        if (STATUSES[i] == status) si = i;
    for (int i = N_LAT - 1; i >= 0; i--)
        if (seconds <= LAT_LE[i]) li = i;
    pthread_mutex_lock(&M.mu);
    M.requests[r][si]++;
    M.lat[r][li]++;
    M.lat_sum[r] += seconds;
    M.lat_count[r]++;
    pthread_mutex_unlock(&M.mu);
}

void metrics_reject(enum sv_reject why) {
    pthread_mutex_lock(&M.mu);
    M.rejected[why]++;
    pthread_mutex_unlock(&M.mu);
}

void metrics_batch(int clips, long long tokens) {
    int bi = N_BATCH;
    for (int i = N_BATCH - 1; i >= 0; i--)
        if (clips <= BATCH_LE[i]) bi = i;
    pthread_mutex_lock(&M.mu);
    M.batch[bi]++;
    M.batches++;
    M.clips += (unsigned long long)clips;
    M.tokens += (unsigned long long)tokens;
    pthread_mutex_unlock(&M.mu);
}

void metrics_render(struct sbuf *s, int queued, int running, int in_flight) {
    pthread_mutex_lock(&M.mu);
    sb_puts(s, "# HELP jepa_requests_total HTTP requests answered, by route and status.\n"
               "# TYPE jepa_requests_total counter\n");
    for (int r = 0; r < R_COUNT; r++)
        for (int i = 0; i <= N_STATUS; i++)
            if (M.requests[r][i] || (i == 0 && r != R_OTHER)) {
                char st[8] = "other";
                if (i < N_STATUS) snprintf(st, sizeof st, "%d", STATUSES[i]);
                sb_printf(s, "jepa_requests_total{route=\"%s\",status=\"%s\"} %llu\n", ROUTE_PATH[r], st,
                          M.requests[r][i]);
            }
    sb_puts(s, "# HELP jepa_request_duration_seconds Time from the request's first byte to its response, by route.\n"
               "# TYPE jepa_request_duration_seconds histogram\n");
    for (int r = 0; r < R_COUNT; r++) {
        unsigned long long cum = 0;
        for (int i = 0; i <= N_LAT; i++) {
            cum += M.lat[r][i];
            if (i < N_LAT)
                sb_printf(s, "jepa_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n", ROUTE_PATH[r],
                          LAT_LE[i], cum);
            else
                sb_printf(s, "jepa_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", ROUTE_PATH[r], cum);
        }
        sb_printf(s, "jepa_request_duration_seconds_sum{route=\"%s\"} %.6f\n", ROUTE_PATH[r], M.lat_sum[r]);
        sb_printf(s, "jepa_request_duration_seconds_count{route=\"%s\"} %llu\n", ROUTE_PATH[r], M.lat_count[r]);
    }
    sb_puts(s, "# HELP jepa_rejected_total Requests refused before or instead of compute, by reason.\n"
               "# TYPE jepa_rejected_total counter\n");
    for (int i = 0; i < REJ_COUNT; i++) sb_printf(s, "jepa_rejected_total{reason=\"%s\"} %llu\n", REJECT[i], M.rejected[i]);
    sb_puts(s, "# HELP jepa_batch_size Clips per encoder forward.\n# TYPE jepa_batch_size histogram\n");
    unsigned long long cum = 0;
    for (int i = 0; i <= N_BATCH; i++) {
        cum += M.batch[i];
        if (i < N_BATCH) sb_printf(s, "jepa_batch_size_bucket{le=\"%d\"} %llu\n", BATCH_LE[i], cum);
        else sb_printf(s, "jepa_batch_size_bucket{le=\"+Inf\"} %llu\n", cum);
    }
    sb_printf(s, "jepa_batch_size_sum %llu\njepa_batch_size_count %llu\n", M.clips, M.batches);
    sb_printf(s, "# HELP jepa_clips_total Clips encoded.\n# TYPE jepa_clips_total counter\njepa_clips_total %llu\n",
              M.clips);
    sb_printf(s, "# HELP jepa_tokens_total Encoder tokens computed (rate() of it is tokens/s).\n"
                 "# TYPE jepa_tokens_total counter\njepa_tokens_total %llu\n", M.tokens);
    pthread_mutex_unlock(&M.mu);
    sb_printf(s, "# HELP jepa_queue_depth Clips waiting for a worker.\n# TYPE jepa_queue_depth gauge\n"
                 "jepa_queue_depth %d\n", queued);
    sb_printf(s, "# HELP jepa_clips_running Clips in a forward now.\n# TYPE jepa_clips_running gauge\n"
                 "jepa_clips_running %d\n", running);
    sb_printf(s, "# HELP jepa_requests_in_flight Requests being read, computed or answered.\n"
                 "# TYPE jepa_requests_in_flight gauge\njepa_requests_in_flight %d\n", in_flight);
}
