/*
 * cmd_bench.c — `jepa bench kernels [--json] [-t N] [--quick] [--full] [--op OP] [--cpu L]`
 * , `jepa bench gpu [-g N] [--json] [--quick] [--op OP] [--kernel K]` (= `jepa bench kernels -g N`)
 * , `jepa bench world -m MODEL [--samples N] [--horizon H] [-t N] [--json] [--quick]`
 * and `jepa bench encoder -m MODEL [--frames T] [--size H[xW]] [--reps R] [-t N] [--json]`:
 * argument parsing only; the benchmarks are bench/bench_kernels.c, bench_gpu.c,
 * bench_world.c and bench_encoder.c
 * (see there for what is timed and how, and docs/performance-kernels.md for results).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "kernels/device.h"
#include "runtime/cpu.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: jepa bench kernels [--json] [-t N] [--quick | --full] [--cold] [--op all|matmul|attn]\n"
            "                          [--cpu scalar|avx2|avx512|neon] [--precision exact|high|bf16] [-g N]\n"
            "       jepa bench gpu [-g N] [--json] [--quick] [--op all|matmul|attn]\n"
            "                      [--kernel mma|pipe|wgmma]\n"
            "       jepa bench world -m MODEL [--samples N] [--horizon H] [-t N] [--json] [--quick]\n"
            "       jepa bench encoder -m MODEL [--frames T] [--size H[xW]] [--reps R] [-t N] [--prepack] [--json]\n"
            "\n"
            "Time the kernel table on the ViT matmul shapes (every weight dtype) and on\n"
            "attention, against the FMA peak measured in the same run and, when built with\n"
            "OpenBLAS, cblas_sgemm on the same shapes and threads. With -g N (or `bench gpu`,\n"
            "GPU 0 by default): the CUDA table on GPU N, in TFLOP/s. `bench world`: a LeWM\n"
            "model's predictor per call at 1 and N threads, N sequences batched against N\n"
            "single calls (default 300), and a batched rollout of H steps (default 5); a\n"
            "V-JEPA 2-AC model's one-frame call and one CEM iteration's rollout (default 400\n"
            "candidates x 2 steps) batched and as single calls. `bench encoder`: one encoder\n"
            "forward's first, warm and after-idle latency, then its best time at 1 and N\n"
            "threads against the FMA peak measured between the encodes (R rounds, default 5),\n"
            "on pseudo-random pixels of the model's size (or T frames of H x W).\n"
            "\n"
            "  --json      one JSON object per line on stdout (context lines go to stderr)\n"
            "  -t, --threads N  threads (default: the online CPUs)\n"
            "  -m, --model MODEL  the model (world, encoder), or OWNER/NAME[:FILE] from the cache\n"
            CLI_PULL_HELP
            "  --quick     fewer shapes (M = 1, 576; 577 tokens) and shorter timing\n"
            "  --full      also M = 4608 and 18432\n"
            "  --cold      matmul: every call reads another copy of the weights (256 MiB in all),\n"
            "              as a forward pass reads them from memory; M <= 16 rows only\n"
            "  --op OP     only matmul or only attn (default all)\n"
            "  --cpu L     cap the kernel ISA (as JEPA_CPU does)\n"
            "  --precision T  the precision tier: exact (default), high, bf16 (as JEPA_PRECISION;\n"
            "              kernels, encoder and world; `jepa cpu` shows what each tier runs here)\n"
            "  -g, --gpu N the CUDA kernels on GPU N instead of the CPU's\n"
            "  --kernel K  GPU matmul: mma (default) or pipe, the pipelined kernel (cp.async,\n"
            "              ldmatrix; f16 / bf16 and q8_0 / q4_K weights, X given as its 16-bit\n"
            "              copy; never run on a GPU yet: JEPA_CUDA_KERNELS=pipe selects it in\n"
            "              a forward), or wgmma: the same rows through the warpgroup-MMA kernel\n"
            "              on an sm_90 GPU for f16 / bf16 (else pipe's; never run on a GPU yet:\n"
            "              JEPA_CUDA_KERNELS=wgmma)\n"
            "  -h, --help  this help\n");
}

/* The options that exclude each other or need another: --quick / --full, --kernel K (mma,
 * pipe or wgmma, GPU only); nonzero after saying what is wrong. */
static int opts_error(const struct bench_opts *o, int gpu) {
    if (o->quick && o->full)
        return cli_usage_error("bench", "--quick and --full exclude each other");
    if (!o->kernel) return 0;
    if (strcmp(o->kernel, "mma") && strcmp(o->kernel, "pipe") && strcmp(o->kernel, "wgmma"))
        return cli_usage_error("bench", "unknown kernel '%s' (mma, pipe, wgmma)", o->kernel);
    if (gpu < 0)
        return cli_usage_error("bench", "--kernel is the GPU's matmul: bench gpu or -g N");
    return 0;
}

int cmd_bench(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : 0;
    }
    const int gpu_cmd = !strcmp(argv[1], "gpu"), world_cmd = !strcmp(argv[1], "world");
    const int enc_cmd = !strcmp(argv[1], "encoder");
    if (strcmp(argv[1], "kernels") && !gpu_cmd && !world_cmd && !enc_cmd)
        return cli_usage_error("bench", "unknown benchmark '%s' (kernels, gpu, world, encoder)", argv[1]);
    struct bench_encoder_opts eo = {.reps = 5};
    const char *model = NULL;
    int samples = 0, horizon = 0;   /* 0: the planner's defaults for the model's kind */
    int gpu = gpu_cmd ? 0 : -1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    struct bench_opts o = {.json = 0, .threads = ncpu > 0 && ncpu <= 1024 ? (int)ncpu : 1,
                           .quick = 0, .full = 0, .op = "all"};
    const char *cap = getenv("JEPA_CPU");
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (enc_cmd && !strcmp(a, "--prepack")) eo.prepack = 1;
        else if (!strcmp(a, "--json")) o.json = 1;
        else if (!strcmp(a, "--quick")) o.quick = 1;
        else if (!strcmp(a, "--full")) o.full = 1;
        else if (!strcmp(a, "--cold")) o.cold = 1;
        else if ((!strcmp(a, "-t") || !strcmp(a, "--threads")) && i + 1 < argc) {
            long long t;
            int rc = cli_parse_int("bench", a, argv[++i], 1, 4096, &t);
            if (rc) return rc;
            o.threads = (int)t;
        } else if (!strcmp(a, "--op") && i + 1 < argc) {
            o.op = argv[++i];
            if (strcmp(o.op, "all") && strcmp(o.op, "matmul") && strcmp(o.op, "attn"))
                return cli_usage_error("bench", "unknown op '%s'", o.op);
        } else if (!strcmp(a, "--kernel") && i + 1 < argc) o.kernel = argv[++i];
        else if (!strcmp(a, "--cpu") && i + 1 < argc) cap = argv[++i];
        else if (!strcmp(a, "--precision") && i + 1 < argc) {
            o.precision = argv[++i];
            if (jk_precision_parse(o.precision) < 0)
                return cli_usage_error("bench", "unknown precision '%s' (exact, high, bf16)", o.precision);
        }
        else if ((world_cmd || enc_cmd) && (!strcmp(a, "-m") || !strcmp(a, "--model")) && i + 1 < argc)
            model = argv[++i];
        else if (enc_cmd && (!strcmp(a, "--frames") || !strcmp(a, "--reps")) && i + 1 < argc) {
            long long v;
            int rc = cli_parse_int("bench", a, argv[++i], 1, a[2] == 'f' ? 4096 : 1000, &v);
            if (rc) return rc;
            *(a[2] == 'f' ? &eo.frames : &eo.reps) = (int)v;
        } else if (enc_cmd && !strcmp(a, "--size") && i + 1 < argc) {
            const char *v = argv[++i];
            char tail;
            int h, w, k = sscanf(v, "%dx%d%c", &h, &w, &tail);
            if (k == 1) w = h;
            if ((k != 1 && k != 2) || h < 1 || w < 1 || h > 8192 || w > 8192)
                return cli_usage_error("bench", "--size takes H or HxW (1 .. 8192), not '%s'", v);
            eo.height = h, eo.width = w;
        }
        else if (world_cmd && (!strcmp(a, "--samples") || !strcmp(a, "--horizon")) && i + 1 < argc) {
            long long v;
            int rc = cli_parse_int("bench", a, argv[++i], 1, a[2] == 's' ? 65536 : 1024, &v);
            if (rc) return rc;
            *(a[2] == 's' ? &samples : &horizon) = (int)v;
        }
        else if ((!strcmp(a, "-g") || !strcmp(a, "--gpu")) && i + 1 < argc) {
            long long g;
            int rc = cli_parse_int("bench", a, argv[++i], 0, 1024, &g);
            if (rc) return rc;
            gpu = (int)g;
        }
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else return cli_usage_error("bench", "unknown option '%s'", a);
    }
    if (opts_error(&o, gpu)) return CLI_EXIT_USAGE;
    long cpu = jr_cpu_cap(jr_cpu_detect(), cap);
    if (cpu < 0) return cli_usage_error("bench", "unknown cpu level '%s'", cap);
    o.cpu = (unsigned)cpu;
    o.cpu_name = cap;
    const int mrc = cli_resolve_model("bench", &model);   /* -m REPO: the cached file */
    if (mrc) return mrc;
    if (enc_cmd) {
        if (!model) return cli_usage_error("bench", "bench encoder needs -m MODEL");
        eo.model = model;
        return bench_encoder(&o, &eo) ? CLI_EXIT_FAIL : 0;
    }
    if (world_cmd) {
        if (!model) return cli_usage_error("bench", "bench world needs -m MODEL (a LeWM or V-JEPA 2-AC file)");
        return bench_world(&o, model, samples, horizon) ? CLI_EXIT_FAIL : 0;
    }
    if (gpu >= 0) {
        if (gpu >= jk_device_cuda_count()) {   /* the one-line reason, exit 1 */
            char err[256];
            struct jk_device *d = jk_device_open_cuda(gpu, err, sizeof err);
            if (!d) return cli_fail("bench", "cuda:%d: %s", gpu, err);
            d->close(d);
        }
        return bench_gpu(&o, gpu) ? CLI_EXIT_FAIL : 0;
    }
    return bench_kernels(&o) ? CLI_EXIT_FAIL : 0;
}
