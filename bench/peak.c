/*
 * peak.c — the machine's f32 FMA peak, measured: every thread runs a loop of independent
 * FMAs on registers only (no loads, no stores), long enough to reach its steady clock,
 * and the best of a few runs counts. bench_kernels.c reports each kernel as a fraction of
 * this number, taken in the same run at the same thread count, so "% of peak" means the
 * same thing on every machine (turbo, SMT and a shared host included). The best of 10
 * runs of ~10-20 ms counts: on a shared host that filters out the runs another process
 * interrupted (the kernels' times are medians, so they keep that noise).
 *
 * 12 independent accumulators per loop: more than latency x issue width on every target
 * here (Zen 1: 5 cycles x 1 ymm FMA per cycle; Skylake-X: 4 x 2 zmm; Neoverse: 4 x 4),
 * so the loop is throughput-bound. The ISA loops use target attributes, so this file
 * needs no -m flags; they run only when cpu says the ISA is there.
 */
#include <string.h>
#include <time.h>
#ifdef JEPA_HAVE_OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "bench/bench.h"
#if defined(__x86_64__)
#include "kernels/x86/amx_cfg.h"
#endif
#include "runtime/cpu.h"

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int bench_cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define ITERS 2000000L
#define NACC 12

/* 12 named accumulators (an array indexed in a loop may be left in memory at -O2). */
#define FMA12(T, fma, m, c, init, add, out)                                              \
    T a0 = init(0.f), a1 = init(1.f), a2 = init(2.f), a3 = init(3.f), a4 = init(4.f);   \
    T a5 = init(5.f), a6 = init(6.f), a7 = init(7.f), a8 = init(8.f), a9 = init(9.f);   \
    T a10 = init(10.f), a11 = init(11.f);                                               \
    for (long it = 0; it < iters; it++) {                                               \
        a0 = fma(a0, m, c), a1 = fma(a1, m, c), a2 = fma(a2, m, c), a3 = fma(a3, m, c); \
        a4 = fma(a4, m, c), a5 = fma(a5, m, c), a6 = fma(a6, m, c), a7 = fma(a7, m, c); \
        a8 = fma(a8, m, c), a9 = fma(a9, m, c), a10 = fma(a10, m, c);                   \
        a11 = fma(a11, m, c);                                                           \
    }                                                                                   \
    out = add(add(add(add(a0, a1), add(a2, a3)), add(add(a4, a5), add(a6, a7))),        \
              add(add(a8, a9), add(a10, a11)))

/* Each loop returns a value that depends on every accumulator, so nothing is dead. */
#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static float fma_loop_avx2(long iters) {
    const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    __m256 s;
    FMA12(__m256, _mm256_fmadd_ps, m, c, _mm256_set1_ps, _mm256_add_ps, s);
    return _mm256_cvtss_f32(s);
}
__attribute__((target("avx512f"))) static float fma_loop_avx512(long iters) {
    const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    __m512 s;
    FMA12(__m512, _mm512_fmadd_ps, m, c, _mm512_set1_ps, _mm512_add_ps, s);
    return _mm512_reduce_add_ps(s);
}
/* a += m . c over bf16 pairs: 32 products and 32 additions into 16 lanes. */
#define DPBF16(a, m, c) _mm512_dpbf16_ps(a, m, c)
__attribute__((target("avx512f,avx512bf16"))) static float dp_loop_avx512bf16(long iters) {
    const __m512i mi = _mm512_set1_epi32(0x3f7f3f7f), ci = _mm512_set1_epi32(0x3a833a83);
    __m512bh m, c;   /* bf16 0.996 and 0.001 in every half */
    memcpy(&m, &mi, sizeof m);
    memcpy(&c, &ci, sizeof c);
    __m512 s;
    FMA12(__m512, DPBF16, m, c, _mm512_set1_ps, _mm512_add_ps, s);
    return _mm512_reduce_add_ps(s);
}
/* TDPBF16PS on tiles only: four 16 x 16 f32 accumulators (tiles 0-3) fed by two A tiles
 * (4, 5) and two B tiles (6, 7) of 16 rows x 32 bf16, each instruction 16 x 16 x 32 products
 * and sums (16384 FLOP). Four independent accumulators cover the instruction's latency. Run
 * only where the OS granted the tile state (JEPA_CPU_AMX_BF16, runtime/cpu.c). Not yet run
 * on AMX hardware. */
__attribute__((target("amx-tile,amx-bf16"))) static float tile_loop(long iters) {
    struct jk_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
    _tile_loadconfig(&cfg);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_zero(4);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
    for (long it = 0; it < iters; it++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    float out[16 * 16];
    __asm__ volatile("" ::: "memory");
    _tile_stored(0, out, 64);
    __asm__ volatile("" ::: "memory");
    _tile_release();
    return out[0];
}
#define TILE_FLOPS_PER_ITER (4.0 * 16 * 16 * 32 * 2)
#elif defined(__aarch64__)
#define NEON_FMA(a, m, c) vfmaq_f32(c, a, m)
static float fma_loop_neon(long iters) {
    const float32x4_t m = vdupq_n_f32(0.999999f), c = vdupq_n_f32(1e-7f);
    float32x4_t s;
    FMA12(float32x4_t, NEON_FMA, m, c, vdupq_n_f32, vaddq_f32, s);
    return vaddvq_f32(s);
}
/* a += m . c over bf16 pairs (BFDOT, FEAT_BF16): 8 products and 8 additions into 4 lanes.
 * Not yet run on an Arm core with FEAT_BF16 (checked under qemu-aarch64 only). */
#define BFDOT(a, m, c) vbfdotq_f32(a, m, c)
__attribute__((target("arch=armv8.2-a+bf16"))) static float dot_loop_bfdot(long iters) {
    /* bf16 0.996 and 0.001 in every half */
    const bfloat16x8_t m = vreinterpretq_bf16_u32(vdupq_n_u32(0x3f7f3f7f));
    const bfloat16x8_t c = vreinterpretq_bf16_u32(vdupq_n_u32(0x3a833a83));
    float32x4_t s;
    FMA12(float32x4_t, BFDOT, m, c, vdupq_n_f32, vaddq_f32, s);
    return vaddvq_f32(s);
}
#endif

#define SCALAR_FMA(a, m, c) ((a) * (m) + (c))
#define SCALAR_INIT(x) (x)
#define SCALAR_ADD(x, y) ((x) + (y))
static float fma_loop_scalar(long iters) {
    float s;
    FMA12(float, SCALAR_FMA, 0.999999f, 1e-7f, SCALAR_INIT, SCALAR_ADD, s);
    return s;
}

/* GFLOP/s of `threads` threads each running loop (FLOPs per call: flops_per_iter x iters),
 * the best of 10 runs. */
static double loop_peak(float (*loop)(long), double flops_per_iter, long iters, int threads) {
    double best = 0.0;
    volatile float sink = 0.0f;
    (void)threads;
    for (int rep = 0; rep < 10; rep++) {
        int nth = 0;
        double t0 = bench_now();
#pragma omp parallel num_threads(threads)
        {
            float r = loop(iters);
#pragma omp critical
            {
                sink += r;
                nth++;
            }
        }
        double dt = bench_now() - t0;
        double flops = flops_per_iter * (double)iters * nth;
        if (flops / dt > best) best = flops / dt;
    }
    (void)sink;
    return best * 1e-9;
}

double bench_bf16_peak(unsigned cpu, int threads, const char **isa) {
    *isa = "none";
#if defined(__x86_64__)
    if (cpu & JEPA_CPU_AMX_BF16) {
        *isa = "amx_bf16 tiles";
        return loop_peak(tile_loop, TILE_FLOPS_PER_ITER, ITERS / 16, threads);
    }
    if ((cpu & JEPA_CPU_AVX512) && (cpu & JEPA_CPU_AVX512_BF16)) {
        *isa = "avx512_bf16";
        return loop_peak(dp_loop_avx512bf16, 4.0 * NACC * 16, ITERS, threads);
    }
#elif defined(__aarch64__)
    if ((cpu & JEPA_CPU_NEON) && (cpu & JEPA_CPU_BF16)) {
        *isa = "neon_bf16 BFDOT";
        return loop_peak(dot_loop_bfdot, 4.0 * NACC * 4, ITERS / 4, threads);
    }
#endif
    (void)cpu, (void)threads;
    return 0.0;
}

double bench_fma_peak(unsigned cpu, int threads, const char **isa) {
    int lanes = 1;
    float (*loop)(long) = fma_loop_scalar;
    *isa = "scalar";
#if defined(__x86_64__)
    if (cpu & JEPA_CPU_AVX512) loop = fma_loop_avx512, lanes = 16, *isa = "avx512";
    else if (cpu & JEPA_CPU_AVX2) loop = fma_loop_avx2, lanes = 8, *isa = "avx2";
#elif defined(__aarch64__)
    if (cpu & JEPA_CPU_NEON) loop = fma_loop_neon, lanes = 4, *isa = "neon";
#endif
    return loop_peak(loop, 2.0 * NACC * lanes, ITERS / (lanes >= 8 ? 1 : 4), threads);
}
