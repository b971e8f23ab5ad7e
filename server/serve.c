/*
 * serve.c — see serve.h. The HTTP side: libmicrohttpd runs one thread per connection
 * (bounded by --max-connections), so a request's thread may block: it reads the body
 * into memory (at most --max-body-mb), decodes and preprocesses the inputs
 * (server/api.c), waits for the batcher, and writes the response. The workers
 * (server/batcher.c) only compute.
 *
 * Shutdown (SIGTERM / SIGINT, taken by sigwait on the main thread): the listening socket
 * closes, requests already read finish (new ones on open connections get 503), the
 * queue drains, the workers stop, exit 0. A forward that no request waits for any more
 * was cancelled when its last request went (server/batcher.h), so none holds it up.
 */
#include "server/serve.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/messages.h"
#include "runtime/dynlib.h"
#include "server/api.h"
#include "server/metrics.h"
#include "server/world.h"

/* libmicrohttpd is opened with dlopen when `jepa serve` starts, not linked (runtime/dynlib.h):
 * linked, it and the GnuTLS libraries it needs (p11-kit, nettle, gmp, ...) were mapped and
 * relocated by every jepa process, ~2.8 MiB of resident memory and most of `jepa --version`'s
 * start-up time (2.9 against 1.05 ms on Zen 4, perf stat), for a server that most runs never
 * start. The header is the build's and the library must be of its ABI: the soname
 * (server/meson.build). Every function called is in MHD_FUNCS; a call through mhd.NAME that
 * is not there does not compile. */
#define MHD_FUNCS(X)                                                                                   \
    X(MHD_start_daemon) X(MHD_stop_daemon) X(MHD_quiesce_daemon) X(MHD_get_daemon_info)               \
    X(MHD_lookup_connection_value) X(MHD_create_response_from_buffer) X(MHD_add_response_header)     \
    X(MHD_queue_response) X(MHD_destroy_response) X(MHD_get_connection_info) X(MHD_get_connection_values)        \
    X(MHD_get_version)

static struct {
#define MHD_MEMBER(name) __typeof__(name) *name;
    MHD_FUNCS(MHD_MEMBER)
#undef MHD_MEMBER
} mhd;

/* 0, or -1 with why libmicrohttpd is not there in err. */
static int mhd_load(char *err, size_t n) {
    static const char *const soname[] = {JEPA_MHD_SONAME};
    static const struct jr_dlsym syms[] = {
#define MHD_SYM(name) {0, #name, (void **)&mhd.name},
        MHD_FUNCS(MHD_SYM)
#undef MHD_SYM
    };
    char why[256];
    if (!jr_dl_load(soname, 1, syms, sizeof syms / sizeof *syms, "libmicrohttpd", why, sizeof why)) return 0;
    snprintf(err, n, "the HTTP server needs libmicrohttpd: %s; on Debian: apt-get install libmicrohttpd12", why);
    return -1;
}

/* Slow clients. libmicrohttpd's --idle-timeout-s only closes a connection that sends
 * nothing; one that trickles a byte now and then would hold its thread and its slot for
 * ever. So every connection is in the server's list (conn_notify) with the phase it is
 * in, and a watchdog thread (watchdog_main) closes it when
 *   - its headers are not all in within --timeout-s of the connection's opening (or of
 *     the previous answer on it), or its body within --timeout-s of its headers;
 *   - the server is full (more than --max-connections C open: a reserved slot is in use)
 *     and it has been in its headers for more than SV_PRESSURE_GRACE_MS, or in its body
 *     for as long while sending less than SV_MIN_BODY_RATE bytes a second: slow clients
 *     make room.
 * libmicrohttpd itself takes SV_RESERVE(C) connections more than C, so that a client
 * still gets in while slow ones fill the C slots, and the watchdog then makes room.
 * A connection in the middle of its first request is answered 408 before it is closed
 * (nothing else writes to the socket before the headers are in, or while the body is
 * read); an idle keep-alive one is closed as the idle timeout closes it. Closing is a
 * shutdown() of the socket, done under conn_mu: libmicrohttpd reports the connection
 * closed (MHD_CONNECTION_NOTIFY_CLOSED, which takes conn_mu) before it closes the
 * descriptor, so the watchdog never touches a descriptor that was reused. */
#define SV_PRESSURE_GRACE_MS 2000.0
#define SV_MIN_BODY_RATE 16384.0
#define SV_WATCHDOG_TICK_US (100 * 1000)
#define SV_RESERVE(c) ((c) / 8 > 2 ? (c) / 8 : 2)

enum conn_phase { PH_HEADERS, PH_BODY, PH_ANSWER };

struct conn {
    struct conn *prev, *next;
    int fd;
    enum conn_phase phase;
    double t_phase;          /* ms: when the phase began */
    size_t got;              /* body bytes in this phase */
    int requests;            /* answered on this connection */
    bool cut;                /* closed by the watchdog: the handler answers nothing more */
    struct request *q;       /* the request under way (NULL: none), and where libmicrohttpd keeps it */
    void **req_cls;
};

struct server {
    struct sv_api api;
    const struct serve_opts *o;
    size_t max_body;
    atomic_int in_flight;
    atomic_bool draining;
    pthread_mutex_t log_mu;
    pthread_mutex_t conn_mu;
    struct conn *conns;      /* every open connection, under conn_mu */
    int n_conns;
    bool stop_watchdog;      /* under conn_mu */
    pthread_t watchdog;
};

/* One HTTP request's state, from its headers to its completion. */
struct request {
    double t0;
    struct conn *cn;         /* its connection (NULL: unknown) */
    enum sv_route route;
    bool post;
    char *body;
    size_t len, cap;
    bool too_large;          /* the body passed --max-body-mb (the rest is read and dropped) */
};

static enum sv_route route_of(const char *url) {
    for (int r = 0; r < R_OTHER; r++)
        if (!strcmp(url, sv_route_path((enum sv_route)r))) return (enum sv_route)r;
    return R_OTHER;
}

static bool route_is_post(enum sv_route r) { return r >= R_EMBEDDINGS && r <= R_PLAN; }

/* given (gl bytes, any bytes) equals key (kl bytes), compared in time that depends on the
 * lengths only, not on where they differ: every byte of the longer one is read, a length
 * mismatch included. */
static bool key_matches(const char *given, size_t gl, const char *key, size_t kl) {
    const size_t n = gl > kl ? gl : kl;
    unsigned diff = gl != kl;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned)(i < kl ? (unsigned char)key[i] : 0) ^ (unsigned)(i < gl ? (unsigned char)given[i] : 0);
    return diff == 0;
}

/* The Authorization header as the client sent it. libmicrohttpd keeps header values as
 * C strings in its read buffer, the line's CR and LF overwritten by NULs, so a value
 * with a NUL in it ("Bearer KEY\0junk") reads as the part before the NUL. Up to 0.9.75
 * (Debian 12's), the bytes that follow show it: the line's end is the NUL the value stops
 * at, so the next header's name starts 1 (LF) or 2 (CRLF) bytes after it, and the byte
 * after it is a NUL (CRLF's LF, or the empty line that ends the headers). Any other
 * layout is a NUL inside the value: its length is then reported as SIZE_MAX (no key
 * matches). What this cannot tell from a line end: a NUL followed by LF, and, in the
 * last header, NUL NUL then anything (both read as CRLF). Later versions lay headers out
 * otherwise and are not read this way: the key is compared over the length they give. */
struct auth_scan {
    const char *value;       /* the Authorization value */
    size_t len;
    const char *next_key;    /* the header after it (NULL: it is the last) */
    int seen;                /* 0: not yet, 1: found (the next one is looked for), 2: done */
};

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    struct auth_scan *a = cls;
    if (a->seen == 1) {
        a->next_key = key, a->seen = 2;
        return MHD_NO;
    }
    if (!a->seen && !strcasecmp(key, MHD_HTTP_HEADER_AUTHORIZATION)) a->value = value, a->len = strlen(value), a->seen = 1;
    return MHD_YES;
}

static bool mhd_keeps_nul_lines(void) {
    const char *v = mhd.MHD_get_version();
    unsigned maj = 0, min = 0, pat = 0;
    return v && sscanf(v, "%u.%u.%u", &maj, &min, &pat) == 3 && maj == 0 && min == 9 && pat <= 75;
}

static const char *authorization(struct MHD_Connection *c, size_t *len) {
    struct auth_scan a = {0};
    mhd.MHD_get_connection_values(c, MHD_HEADER_KIND, scan_header, &a);
    if (!a.value) return NULL;
    *len = a.len;
    if (mhd_keeps_nul_lines()) {
        const char *end = a.value + a.len;   /* the NUL the value stops at */
        const bool lf_next = a.next_key && a.next_key == end + 1;
        const bool crlf_next = a.next_key && a.next_key == end + 2 && !end[1];
        if (!(lf_next || crlf_next || (!a.next_key && !end[1]))) *len = SIZE_MAX;
    }
    return a.value;
}

static bool authorized(const struct server *sv, struct MHD_Connection *c) {
    if (!sv->o->api_key) return true;
    size_t hl = 0;
    const char *h = authorization(c, &hl);
    if (!h || hl == SIZE_MAX || hl < 7 || strncmp(h, "Bearer ", 7)) return false;
    return key_matches(h + 7, hl - 7, sv->o->api_key, strlen(sv->o->api_key));
}

static void log_request(struct server *sv, const char *method, const char *url, const struct sv_response *r,
                        double ms) {
    if (sv->o->quiet) return;
    char u[4 * 96 + 1], m[4 * 16 + 1];
    char batch[32] = "";
    if (r->batch) snprintf(batch, sizeof batch, " batch %d", r->batch);
    pthread_mutex_lock(&sv->log_mu);
    fprintf(stderr, "jepa serve: %s %s %d %.1f ms%s\n", cli_escape(method, m, sizeof m), cli_escape(url, u, sizeof u),
            r->status, ms, batch);
    pthread_mutex_unlock(&sv->log_mu);
}

/* Queue r on c (taking its body), count it and log it. */
static enum MHD_Result reply(struct server *sv, struct MHD_Connection *c, struct request *q, const char *method,
                             const char *url, struct sv_response *r) {
    struct MHD_Response *resp = r->body ? mhd.MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE)
                                        : mhd.MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(r->body);
        return MHD_NO;   /* closes the connection */
    }
    r->body = NULL;
    mhd.MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type ? r->content_type : "application/json");
    if (r->retry_after) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", r->retry_after);
        mhd.MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (r->status == 401) mhd.MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (r->status == 405) mhd.MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, route_is_post(q->route) ? "POST" : "GET, HEAD");
    if (atomic_load(&sv->draining)) mhd.MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    const enum MHD_Result ok = mhd.MHD_queue_response(c, (unsigned)r->status, resp);
    mhd.MHD_destroy_response(resp);
    const double ms = sv_now_ms() - q->t0;
    metrics_request(q->route, r->status, ms / 1e3);
    if (r->reject >= 0) metrics_reject((enum sv_reject)r->reject);
    log_request(sv, method, url, r, ms);
    return ok;
}

/* The client sent "Expect: 100-continue": it waits for an answer before sending its body. */
static bool expects_continue(struct MHD_Connection *c) {
    const char *e = mhd.MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
    return e && !strcasecmp(e, "100-continue");
}

/* ---- connections and the watchdog ---- */

/* The connection's entry in the server's list (set by conn_notify), or NULL. */
static struct conn *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = mhd.MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* cn enters phase ph; false when the watchdog has closed it (the handler then answers
 * nothing: libmicrohttpd closes the connection). */
static bool conn_enter(struct server *sv, struct conn *cn, enum conn_phase ph) {
    if (!cn) return true;
    pthread_mutex_lock(&sv->conn_mu);
    const bool live = !cn->cut;
    if (live && cn->phase != ph) cn->phase = ph, cn->t_phase = sv_now_ms(), cn->got = 0;
    pthread_mutex_unlock(&sv->conn_mu);
    return live;
}

/* With conn_mu held: close cn, first answering 408 when a request is under way on it. */
static void conn_cut(struct server *sv, struct conn *cn, const char *why) {
#define SV_408_BODY "{\"error\":{\"message\":\"the request was not sent in time; closed\",\"type\":\"request_timeout\"}}"
    _Static_assert(sizeof SV_408_BODY - 1 == 89, "the 408's Content-Length");
    static const char resp[] = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json\r\n"
                               "Content-Length: 89\r\n\r\n" SV_408_BODY;
    cn->cut = true;
    if (cn->phase == PH_BODY || !cn->requests) (void)!send(cn->fd, resp, sizeof resp - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    shutdown(cn->fd, SHUT_RDWR);
    metrics_reject(REJ_SLOW_CLIENT);
    if (!sv->o->quiet) {
        pthread_mutex_lock(&sv->log_mu);
        fprintf(stderr, "jepa serve: closed a slow connection (%s)\n", why);
        pthread_mutex_unlock(&sv->log_mu);
    }
}

static void *watchdog_main(void *arg) {
    struct server *sv = arg;
    const double limit = sv->o->timeout_s * 1e3;
    pthread_mutex_lock(&sv->conn_mu);
    while (!sv->stop_watchdog) {
        pthread_mutex_unlock(&sv->conn_mu);
        usleep(SV_WATCHDOG_TICK_US);
        pthread_mutex_lock(&sv->conn_mu);
        const double now = sv_now_ms();
        const bool full = sv->n_conns > sv->o->max_connections;   /* a reserved slot is taken */
        for (struct conn *cn = sv->conns; cn; cn = cn->next) {
            const double t = now - cn->t_phase;
            if (cn->cut || cn->phase == PH_ANSWER) continue;
            if (t > limit) {
                conn_cut(sv, cn, cn->phase == PH_HEADERS ? "headers past --timeout-s" : "body past --timeout-s");
            } else if (full && t > SV_PRESSURE_GRACE_MS &&
                       (cn->phase == PH_HEADERS || (double)cn->got < t / 1e3 * SV_MIN_BODY_RATE)) {
                conn_cut(sv, cn, cn->phase == PH_HEADERS ? "headers, the server full"
                                                         : "body under 16 KiB/s, the server full");
            }
        }
    }
    pthread_mutex_unlock(&sv->conn_mu);
    return NULL;
}

/* The end of request q: its memory, its in-flight count, and its connection's next phase.
 * Called by on_completed, or when its connection closes without libmicrohttpd reporting
 * the request completed (libmicrohttpd 1.0.0 and 1.0.1 do so after the second of two error
 * answers to a chunk-size line past their buffer, connection.c,
 * handle_req_chunk_size_line_no_space): without this the request would count as in
 * flight for ever, and every shutdown would wait --timeout-s for it. */
static void request_end(struct server *sv, struct request *q) {
    if (q->cn) {   /* the next request's headers are timed from here */
        pthread_mutex_lock(&sv->conn_mu);
        q->cn->phase = PH_HEADERS, q->cn->t_phase = sv_now_ms(), q->cn->got = 0, q->cn->requests++;
        if (q->cn->q == q) *q->cn->req_cls = NULL, q->cn->q = NULL, q->cn->req_cls = NULL;
        pthread_mutex_unlock(&sv->conn_mu);
    }
    free(q->body);
    free(q);
    atomic_fetch_sub(&sv->in_flight, 1);
}

static void conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code) {
    struct server *sv = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = mhd.MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct conn *cn = ci ? calloc(1, sizeof *cn) : NULL;
        if (!cn) return;   /* not watched (out of memory): the idle timeout still applies */
        cn->fd = ci->connect_fd, cn->phase = PH_HEADERS, cn->t_phase = sv_now_ms();
        pthread_mutex_lock(&sv->conn_mu);
        cn->next = sv->conns;
        if (sv->conns) sv->conns->prev = cn;
        sv->conns = cn;
        sv->n_conns++;
        pthread_mutex_unlock(&sv->conn_mu);
        *socket_context = cn;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        struct conn *cn = *socket_context;
        if (cn->q) request_end(sv, cn->q);   /* its completion was never reported */
        pthread_mutex_lock(&sv->conn_mu);
        if (cn->prev) cn->prev->next = cn->next;
        else sv->conns = cn->next;
        if (cn->next) cn->next->prev = cn->prev;
        sv->n_conns--;
        pthread_mutex_unlock(&sv->conn_mu);
        free(cn);
        *socket_context = NULL;
    }
}

/* The client of connection fd has closed its side (api.c drops the work of a request
 * whose client is gone). */
static bool client_gone(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* A piece of a request's body: counted against the connection's budget, kept up to the
 * cap (past it the request is marked too large and the rest is read and dropped). */
static enum MHD_Result take_body(struct server *sv, struct request *q, const char *upload, size_t *upload_size) {
    const size_t n = *upload_size;
    *upload_size = 0;
    if (q->cn) {
        pthread_mutex_lock(&sv->conn_mu);
        const bool cut = q->cn->cut;
        q->cn->got += n;
        pthread_mutex_unlock(&sv->conn_mu);
        if (cut) return MHD_NO;
    }
    if (!q->post || q->too_large) return MHD_YES;
    if (n > sv->max_body - q->len) {
        q->too_large = true;
        free(q->body), q->body = NULL, q->len = q->cap = 0;
        return MHD_YES;
    }
    if (q->len + n > q->cap) {   /* no (or a wrong) Content-Length: grow to the cap */
        size_t cap = q->cap ? q->cap : 4096;
        while (cap < q->len + n) cap = cap > sv->max_body / 2 ? sv->max_body : cap * 2;
        char *p = realloc(q->body, cap + 1);
        if (!p) return MHD_NO;
        q->body = p, q->cap = cap;
    }
    memcpy(q->body + q->len, upload, n);
    q->len += n;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **req_cls) {
    (void)version;
    struct server *sv = cls;
    struct request *q = *req_cls;
    struct sv_response r = {.reject = -1};
    if (!q) {   /* the headers are in: answer now what needs no body */
        if (!(q = calloc(1, sizeof *q))) return MHD_NO;
        *req_cls = q;
        atomic_fetch_add(&sv->in_flight, 1);
        q->t0 = sv_now_ms();
        q->cn = conn_of(c);
        if (q->cn) {
            pthread_mutex_lock(&sv->conn_mu);
            q->cn->q = q, q->cn->req_cls = req_cls;
            pthread_mutex_unlock(&sv->conn_mu);
        }
        if (!conn_enter(sv, q->cn, PH_BODY)) return MHD_NO;
        q->route = route_of(url);
        q->post = !strcmp(method, MHD_HTTP_METHOD_POST);
        const bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
        const char *cl = mhd.MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (q->route == R_OTHER) {
            api_error(&r, 404, "not_found_error", "no such route; the routes are /v1/embeddings, /v1/classify, "
                      "/v1/predict, /v1/rollout, /v1/plan, /v1/models, /health and /metrics");
        } else if (route_is_post(q->route) ? !q->post : !get) {
            api_error(&r, 405, "method_not_allowed", "%s takes %s", sv_route_path(q->route),
                      route_is_post(q->route) ? "POST" : "GET");
        } else if (q->route != R_HEALTH && !authorized(sv, c)) {
            api_error(&r, 401, "authentication_error", "a valid API key is needed (Authorization: Bearer KEY)");
            r.reject = REJ_UNAUTHORIZED;
        } else if (route_is_post(q->route) && atomic_load(&sv->draining)) {
            api_error(&r, 503, "unavailable", "the server is shutting down");
            r.retry_after = 1, r.reject = REJ_SHUTTING_DOWN;
        } else if (q->post && cl) {
            char *end;
            const unsigned long long n = strtoull(cl, &end, 10);
            if (*end || end == cl) {
                api_error(&r, 400, "invalid_request_error", "bad Content-Length");
            } else if (n > sv->max_body && (expects_continue(c) || n / 8 > sv->max_body)) {
                /* refused before the body is sent: the client waits for "100 Continue", or
                   the body is far past the cap */
                api_error(&r, 413, "request_too_large", "the body is %llu bytes, more than the %zu bytes this server "
                          "takes (--max-body-mb)", n, sv->max_body);
                r.reject = REJ_TOO_LARGE;
            } else if (n > sv->max_body) {
                q->too_large = true;   /* read and dropped, then 413: the client sees the answer */
            } else if (n && !(q->body = malloc(n + 1))) {
                api_error(&r, 503, "unavailable", "out of memory for a %llu-byte body", n);
                r.retry_after = 1;
            } else {
                q->cap = n;
            }
        }
        if (r.status) return conn_enter(sv, q->cn, PH_ANSWER) ? reply(sv, c, q, method, url, &r) : MHD_NO;
        return MHD_YES;
    }
    if (*upload_size) return take_body(sv, q, upload, upload_size);   /* a piece of the body */
    /* the whole request is in */
    if (!conn_enter(sv, q->cn, PH_ANSWER)) return MHD_NO;
    if (q->too_large) {
        api_error(&r, 413, "request_too_large", "the body is more than the %zu bytes this server takes (--max-body-mb)",
                  sv->max_body);
        r.reject = REJ_TOO_LARGE;
    } else if (q->route == R_HEALTH) {
        api_health(&sv->api, atomic_load(&sv->draining), &r);
    } else if (q->route == R_MODELS) {
        api_models(&sv->api, &r);
    } else if (q->route == R_METRICS) {
        api_metrics(&sv->api, atomic_load(&sv->in_flight), &r);
    } else if (!q->len) {
        api_error(&r, 400, "invalid_request_error", "an empty body; send a JSON object");
    } else {
        const struct sv_client cl = {.gone = client_gone, .fd = q->cn ? q->cn->fd : -1};
        if (q->route == R_EMBEDDINGS || q->route == R_CLASSIFY)
            api_run(&sv->api, q->body, q->len, q->route == R_CLASSIFY, q->t0, &cl, &r);
        else
            api_world(&sv->api, q->body, q->len, q->route == R_PREDICT ? SW_ROUTE_PREDICT
                      : q->route == R_ROLLOUT ? SW_ROUTE_ROLLOUT : SW_ROUTE_PLAN, q->t0, &cl, &r);
    }
    return reply(sv, c, q, method, url, &r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode why) {
    (void)c, (void)why;
    struct server *sv = cls;
    struct request *q = *req_cls;
    if (!q) return;
    request_end(sv, q);
    *req_cls = NULL;
}

static void count_batch(void *user, int clips, long long tokens) {
    (void)user;
    metrics_batch(clips, tokens);
}

/* The file name without its directory and .gguf: the model's id. */
static void model_id(const char *path, char *buf, size_t n) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(buf, n, "%s", b);
    const size_t k = strlen(buf);
    if (k > 5 && !strcmp(buf + k - 5, ".gguf")) buf[k - 5] = 0;
}

union listen_addr {
    struct sockaddr sa;
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
};

/* --host and --port into *addr (*v6: an IPv6 one): 0 or the usage error's exit status. */
static int listen_address(const struct serve_opts *o, const char *host, union listen_addr *addr, bool *v6) {
    memset(addr, 0, sizeof *addr);
    *v6 = false;
    if (inet_pton(AF_INET, host, &addr->v4.sin_addr) == 1) {
        addr->v4.sin_family = AF_INET, addr->v4.sin_port = htons((uint16_t)o->port);
    } else if (inet_pton(AF_INET6, host, &addr->v6.sin6_addr) == 1) {
        addr->v6.sin6_family = AF_INET6, addr->v6.sin6_port = htons((uint16_t)o->port);
        *v6 = true;
    } else {
        return cli_usage_error("serve", "--host takes a numeric IPv4 or IPv6 address (or localhost), not '%s'", o->host);
    }
    return 0;
}

/* The model (into *out, the caller frees it), its id (into id), preprocessing and the
 * batcher's workers into sv->api: 0, or the exit status with nothing left to free. */
static int start_api(struct server *sv, const struct serve_opts *o, char *id, size_t id_len, jepa_model **out) {
    char err[JEPA_ERR_LEN];
    jepa_model *m = NULL;
    if (jepa_model_load(&m, o->model, err)) return cli_fail(o->model, "%s", err);
    struct sv_api *a = &sv->api;
    a->model = m;
    jepa_model_get_info(m, &a->info);
    api_weight_types(m, a->weight_types, sizeof a->weight_types);
    if (o->model_id) snprintf(id, id_len, "%s", o->model_id);
    else model_id(o->model, id, id_len);
    a->model_id = id;
    a->timeout_ms = o->timeout_s * 1e3;
    a->queue = o->queue;
    struct jerr pe = {0};
    jepa_preprocess_recipe recipe;
    jepa_model_get_preprocess(m, &recipe);
    if (ji_pre_cfg(&recipe, NULL, &a->pre, &pe)) {
        jepa_model_free(m);
        return cli_fail(o->model, "the model's preprocessing (jepa.pre.*): %s", pe.msg);
    }
    /* after the recipe: the default budget is counted in the model's own clips */
    a->decode_budget = o->decode_budget_mb ? (size_t)o->decode_budget_mb << 20 : api_default_decode_budget(a);
    atomic_init(&a->held, 0);
    int threads = o->threads;   /* 0: the cores shared among the workers */
    if (!threads && o->workers > 1) {
        const long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores > o->workers ? (int)(cores / o->workers) : 1;
    }
    const struct sv_batcher_params bp = {
        .model = m, .workers = o->workers, .threads = threads, .cpu = o->cpu, .precision = o->precision, .gpu = o->gpu, .prepack = o->prepack,
        .max_batch = o->max_batch, .batch_wait_ms = o->batch_wait_ms, .queue = o->queue, .on_batch = count_batch};
    jepa_status st = sv_batcher_start(&a->batcher, &bp, err);
    if (st) {
        jepa_model_free(m);
        return st == JEPA_ERR_ARG ? cli_usage_error("serve", "%s", err) : cli_fail(o->gpu >= 0 ? "cuda" : "cpu", "%s", err);
    }
    *out = m;
    return 0;
}

/* The HTTP daemon on addr, its threads serving sv; NULL when it cannot listen. */
static struct MHD_Daemon *start_daemon(struct server *sv, const struct serve_opts *o, union listen_addr *addr,
                                       bool v6) {
    const unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
                           MHD_USE_ITC | (v6 ? MHD_USE_IPv6 : 0);
    return mhd.MHD_start_daemon(
        flags, (uint16_t)o->port, NULL, NULL, on_request, sv,
        MHD_OPTION_SOCK_ADDR, &addr->sa,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)(o->max_connections + SV_RESERVE(o->max_connections)),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->idle_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, sv,
        MHD_OPTION_NOTIFY_CONNECTION, conn_notify, sv,
        MHD_OPTION_END);
}

/* The line that says the server is up, where, and with what. */
static void announce(const struct server *sv, struct MHD_Daemon *d, const char *host, bool v6) {
    const struct serve_opts *o = sv->o;
    const struct sv_api *a = &sv->api;
    const union MHD_DaemonInfo *di = mhd.MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    const int port = di ? di->port : o->port;
    char desc[256], hb[INET6_ADDRSTRLEN + 2];
    snprintf(hb, sizeof hb, v6 ? "[%s]" : "%s", host);
    fprintf(stderr, "jepa serve: %s (%s, %s) on http://%s:%d/ with %s; batches of up to %d clips (wait %d ms), "
            "queue %d clips, decode budget %zu MiB%s\n", a->model_id, a->info.family, a->info.modality, hb, port,
            sv_batcher_describe(a->batcher, desc, sizeof desc), o->max_batch, o->batch_wait_ms, o->queue,
            a->decode_budget >> 20, o->api_key ? ", API key required" : "");
    if (a->info.name && !strncmp(a->info.name, "random-", 7))
        fprintf(stderr, "jepa serve: note: %s has RANDOM weights (written by jepa synth)\n", o->model);
    fflush(stderr);
}

/* Wait for SIGINT or SIGTERM, then stop taking connections and let the requests in flight
 * finish (each bounded by --timeout-s; idle keep-alive connections are closed by
 * MHD_stop_daemon). */
static void wait_and_drain(struct server *sv, struct MHD_Daemon *d, const sigset_t *sigs) {
    int sig = 0;
    sigwait(sigs, &sig);
    fprintf(stderr, "jepa serve: %s: finishing %d request(s) in flight, then exiting\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT", atomic_load(&sv->in_flight));
    atomic_store(&sv->draining, true);
    const int lfd = mhd.MHD_quiesce_daemon(d);
    if (lfd >= 0) close(lfd);
    const double until = sv_now_ms() + sv->api.timeout_ms + 5e3;
    while (atomic_load(&sv->in_flight) > 0 && sv_now_ms() < until) usleep(10 * 1000);
    mhd.MHD_stop_daemon(d);
}

int serve_run(const struct serve_opts *o) {
    char why[JEPA_ERR_LEN];
    if (mhd_load(why, sizeof why)) return cli_fail("serve", "%s", why);
    struct server sv = {.o = o, .max_body = (size_t)o->max_body_mb << 20};
    pthread_mutex_init(&sv.log_mu, NULL);
    pthread_mutex_init(&sv.conn_mu, NULL);
    atomic_init(&sv.in_flight, 0);
    atomic_init(&sv.draining, false);
    /* every thread started from here on inherits the mask: the signals reach sigwait only */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    union listen_addr addr;
    const char *host = !strcmp(o->host, "localhost") ? "127.0.0.1" : o->host;
    bool v6;
    char id[256];
    jepa_model *m = NULL;
    int rc = listen_address(o, host, &addr, &v6);
    if (rc || (rc = start_api(&sv, o, id, sizeof id, &m))) return rc;
    struct MHD_Daemon *d = start_daemon(&sv, o, &addr, v6);
    if (!d) {
        sv_batcher_stop(sv.api.batcher);
        jepa_model_free(m);
        return cli_fail("serve", "cannot listen on %s port %d (in use, or not an address of this machine?)", o->host,
                        o->port);
    }
    const bool watched = !pthread_create(&sv.watchdog, NULL, watchdog_main, &sv);
    announce(&sv, d, host, v6);
    wait_and_drain(&sv, d, &sigs);
    if (watched) {
        pthread_mutex_lock(&sv.conn_mu);
        sv.stop_watchdog = true;
        pthread_mutex_unlock(&sv.conn_mu);
        pthread_join(sv.watchdog, NULL);
    }
    sv_batcher_stop(sv.api.batcher);
    jepa_model_free(m);
    pthread_mutex_destroy(&sv.log_mu);
    pthread_mutex_destroy(&sv.conn_mu);
    fprintf(stderr, "jepa serve: stopped\n");
    return 0;
}
