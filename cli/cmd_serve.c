/*
 * cmd_serve.c — `jepa serve`: the options of the HTTP embedding server (server/serve.c).
 * Built when configure found libmicrohttpd and cJSON (JEPA_HAVE_SERVER); otherwise the
 * command says what is missing.
 *
 *   jepa serve -m MODEL [--model-id ID] [--host 127.0.0.1] [--port 8080] [--workers N] [--threads T]
 *              [--max-batch B] [--batch-wait-ms W] [--queue Q] [--max-body-mb S]
 *              [--timeout-s X] [--max-connections C] [--idle-timeout-s I] [--decode-budget-mb D]
 *              [--api-key KEY | env JEPA_API_KEY] [-g N] [--cpu ISA] [-q]
 *
 * Tested by tests/server/test_server.py.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#ifdef JEPA_HAVE_SERVER
#include "server/serve.h"

static void serve_usage(void) {
    printf("usage: jepa serve -m MODEL [options]\n"
           "  an HTTP server: POST /v1/embeddings (OpenAI's request shape; images, videos and\n"
           "  tensors in base64; one vector per input unless \"pool\": \"none\"), POST /v1/classify,\n"
           "  POST /v1/predict, /v1/rollout, /v1/plan (LeWM, V-JEPA 2-AC), GET /v1/models,\n"
           "  /health (the model's facts), /metrics\n"
           "  (docs/server.md). Stops on SIGTERM / SIGINT after finishing what it has read.\n"
           "  -m, --model MODEL      the model file (.gguf), or OWNER/NAME[:FILE] from the cache\n"
           CLI_PULL_HELP
           "  --model-id ID          the model's name in /v1/models and requests (default: the\n"
           "                         file's name without .gguf)\n"
           "  --host ADDR            numeric IPv4 / IPv6 address to listen on (default 127.0.0.1:\n"
           "                         this machine only; 0.0.0.0 for every interface)\n"
           "  --port N               TCP port (default 8080; 0: any free port, printed at start)\n"
           "  --workers N            compute contexts on the one mapped model (default 1)\n"
           "  -t, --threads T        threads per worker (default: all cores / workers)\n"
           "  --max-batch B          clips of one shape run as one forward, up to B (default 8)\n"
           "  --batch-wait-ms W      how long the oldest clip waits for others (default 5)\n"
           "  --queue Q              clips queued at most; beyond it 429 + Retry-After (default 64)\n"
           "  --max-body-mb S        request body cap, 413 above it (default 32)\n"
           "  --timeout-s X          a request's time limit, 504 after it (default 60); its headers\n"
           "                         and its body must each arrive within X s too (408)\n"
           "  --max-connections C    open connections at most (default 64; C/8, at least 2, more are\n"
           "                         taken while slow clients are closed to make room)\n"
           "  --idle-timeout-s I     close a connection silent for I s (default 15)\n"
           "  --decode-budget-mb D   decoded input (frames x pixels as float32) all requests may hold\n"
           "                         at once, 429 past it; one request 413 past min(D, 512)\n"
           "                         (default: 2 x --queue clips of the model's size, >= 256)\n"
           "  --api-key KEY          require 'Authorization: Bearer KEY' on every route but\n"
           "                         /health (default: the JEPA_API_KEY environment variable)\n"
           "  -g, --gpu N            run on CUDA GPU N\n"
           "  --cpu ISA              cap the kernels: scalar, avx2, avx512, neon\n"
           "  --precision T          the CPU's precision tier: exact (default), high, bf16\n"
           "                         (docs/precision.md; JEPA_PRECISION does the same)\n"
           "  --prepack              each worker keeps the matmul weights packed after their\n"
           "                         first use (4-9 %% faster on small models; 4 bytes per\n"
           "                         weight per worker)\n"
           "  -q, --quiet            no log line per request\n");
}

int cmd_serve(int argc, char **argv) {
    struct serve_opts o = {
        .host = "127.0.0.1", .port = 8080, .workers = 1, .gpu = -1, .max_batch = 8, .batch_wait_ms = 5,
        .queue = 64, .max_body_mb = 32, .timeout_s = 60, .max_connections = 64, .idle_timeout_s = 15};
    const struct {
        const char *name;
        int *dst;
        long long lo, hi;
    } ints[] = {
        {"--port", &o.port, 0, 65535}, {"--workers", &o.workers, 1, 64}, {"--threads", &o.threads, 1, 4096},
        {"--max-batch", &o.max_batch, 1, 128}, {"--batch-wait-ms", &o.batch_wait_ms, 0, 10000},
        {"--queue", &o.queue, 1, 1 << 20}, {"--max-body-mb", &o.max_body_mb, 1, 4096},
        {"--timeout-s", &o.timeout_s, 1, 86400}, {"--max-connections", &o.max_connections, 1, 65536},
        {"--idle-timeout-s", &o.idle_timeout_s, 1, 86400}, {"--decode-budget-mb", &o.decode_budget_mb, 1, 1 << 22}, {"-g", &o.gpu, 0, 1024}, {"--gpu", &o.gpu, 0, 1024},
        {"-t", &o.threads, 1, 4096},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            serve_usage();
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o.quiet = 1;
            continue;
        }
        if (!strcmp(a, "--prepack")) {
            o.prepack = 1;
            continue;
        }
        bool known = false;
        for (size_t k = 0; k < sizeof ints / sizeof ints[0] && !known; k++) {
            if (strcmp(a, ints[k].name)) continue;
            known = true;
            long long num;
            int rc = cli_parse_int("serve", a, v, ints[k].lo, ints[k].hi, &num);
            if (rc) return rc;
            *ints[k].dst = (int)num;
            i++;
        }
        if (known) continue;
        const char **sdst = !strcmp(a, "-m") || !strcmp(a, "--model") ? &o.model : !strcmp(a, "--host") ? &o.host
                          : !strcmp(a, "--model-id") ? &o.model_id
                          : !strcmp(a, "--api-key") ? &o.api_key : !strcmp(a, "--cpu") ? &o.cpu
                          : !strcmp(a, "--precision") ? &o.precision : NULL;
        if (!sdst) return cli_usage_error("serve", "unknown option '%s'", a);
        if (!v) return cli_usage_error("serve", "option %s needs a value", a);
        *sdst = v;
        i++;
    }
    if (!o.model) return cli_usage_error("serve", "missing -m MODEL");
    const int mrc = cli_resolve_model("serve", &o.model);   /* -m REPO: the cached file */
    if (mrc) return mrc;
    if (!o.api_key) o.api_key = getenv("JEPA_API_KEY");
    if (o.api_key && !*o.api_key) return cli_usage_error("serve", "the API key is empty");
    if (o.model_id && (!*o.model_id || strlen(o.model_id) > 200))
        return cli_usage_error("serve", "--model-id takes 1 to 200 characters");
    if (o.max_batch > o.queue)
        return cli_usage_error("serve", "--max-batch %d is more than --queue %d clips", o.max_batch, o.queue);
    return serve_run(&o);
}

#else

int cmd_serve(int argc, char **argv) {
    (void)argc, (void)argv;
#ifdef JEPA_STATIC_BUILD
    return cli_fail("serve", "this build has no server: a static binary cannot load libmicrohttpd "
                    "(build with -Dstatic=false)");
#else
    return cli_fail("serve", "this build has no server: configure found no libmicrohttpd or cJSON "
                    "(apt-get install libmicrohttpd-dev libcjson-dev, then reconfigure)");
#endif
}

#endif
