/*
 * bench.h — the benchmarks behind `jepa bench ...` (cli/cmd_bench.c). Each one prints a
 * human table, or with json one JSON object per line, and returns a CLI exit code.
 */
#ifndef JEPA_BENCH_H
#define JEPA_BENCH_H

struct bench_opts {
    int json;          /* one JSON object per line instead of the table */
    int threads;       /* >= 1 */
    int quick, full;   /* fewer shapes and reps / the large-M shapes too */
    int cold;          /* matmul: each call reads another copy of W (>= 256 MiB in all), so
                          the weights come from memory as in a forward pass, not from cache */
    const char *op;    /* "all", "matmul", "attn" */
    unsigned cpu;      /* kernel ISA flags (runtime/cpu.h), already capped */
    const char *cpu_name;   /* the cap as given (--cpu or JEPA_CPU), or NULL */
    const char *precision;  /* the matmul's tier (--precision, else JEPA_PRECISION, else
                               exact): jepa_ctx_params.precision */
    const char *kernel;     /* bench gpu: the matmul kernels, "mma" (NULL: the default) or
                               "pipe" (JEPA_CUDA_KERNELS=pipe: X read from its 16-bit copy) */
};

struct bench_encoder_opts {
    const char *model;
    int frames;           /* T of the input; 0: 1 (an image) */
    int height, width;    /* 0: the model's img_size */
    int reps;             /* rounds of (peak, encode) per thread count, >= 1 */
    int prepack;          /* --prepack: weights packed once (jepa_ctx_set_prepack); the
                             first encode packs them */
};

/* `jepa bench kernels`: matmul (every dtype, ViT shapes, OpenBLAS sgemm baseline when
 * built with it) and attention, each against the FMA peak measured in the same run. */
int bench_kernels(const struct bench_opts *o);

/* `jepa bench gpu`: the CUDA kernel table (matmul per weight dtype on the ViT shapes,
 * flash attention) on device `ordinal`, in TFLOP/s (bench/bench_gpu.c). With quick, one
 * small shape per case: a check of the harness, not a measurement. */
int bench_gpu(const struct bench_opts *o, int ordinal);

/* `jepa bench world`: the LeWM predictor of model_path per call (1 and o->threads
 * threads), batched against single calls over `samples` sequences, and a batched rollout
 * of `horizon` steps (bench/bench_world.c). */
int bench_world(const struct bench_opts *o, const char *model_path, int samples, int horizon);

/* `jepa bench encoder`: one encoder forward's first, warm and after-idle latency, and
 * its best time at 1 and o->threads threads against the FMA peak measured between the
 * encodes (bench/bench_encoder.c). */
int bench_encoder(const struct bench_opts *o, const struct bench_encoder_opts *e);

/* Peak f32 FMA throughput in GFLOP/s of `threads` threads running a register-only FMA
 * loop of the widest vector unit in `cpu` (bench/peak.c). */
double bench_fma_peak(unsigned cpu, int threads, const char **isa);
/* The same for the bf16 dot product the bf16 tier's matmul runs on: TDPBF16PS on AMX tiles
 * (16384 FLOP an instruction) where `cpu` has them, else VDPBF16PS (64 FLOP per 512-bit
 * instruction), or 0 where `cpu` has neither. */
double bench_bf16_peak(unsigned cpu, int threads, const char **isa);

/* Monotonic seconds. */
double bench_now(void);

/* qsort comparator for doubles, ascending (bench/peak.c). */
int bench_cmp_double(const void *a, const void *b);

#endif
