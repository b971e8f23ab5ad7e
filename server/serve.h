/*
 * serve.h — `jepa serve`: an HTTP server (libmicrohttpd, one thread per connection) in
 * front of the batcher (server/batcher.h). docs/server.md describes the API.
 */
#ifndef JEPA_SERVER_SERVE_H
#define JEPA_SERVER_SERVE_H

struct serve_opts {
    const char *model;         /* the GGUF */
    const char *model_id;      /* what /v1/models calls it (NULL: the file's name without .gguf) */
    const char *host;          /* a numeric IPv4 / IPv6 address, or "localhost" */
    int port;                  /* 0: any free port (the startup line says which) */
    int workers, threads;      /* contexts; threads each (0: all cores / workers) */
    const char *cpu;
    const char *precision;     /* the CPU's precision tier (NULL: JEPA_PRECISION, else exact) */
    int gpu;                   /* < 0: the CPU */
    int prepack;               /* --prepack: each worker keeps its weights packed */
    int max_batch, batch_wait_ms, queue;
    int max_body_mb;
    int timeout_s;             /* per request; also the headers' and the body's deadline */
    int decode_budget_mb;      /* decoded input all requests may hold (0: api_default_decode_budget) */
    int max_connections;
    int idle_timeout_s;        /* a connection that sends nothing for this long is closed */
    const char *api_key;       /* NULL: none */
    int quiet;                 /* no per-request log lines */
};

/* Run until SIGTERM / SIGINT; the exit code (0 after a clean shutdown). */
int serve_run(const struct serve_opts *o);

#endif
