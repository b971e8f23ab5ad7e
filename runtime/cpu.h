/*
 * cpu.h — what the processor can run, detected once at run time.
 *
 * x86-64: cpuid + xgetbv (a feature counts only when the OS saves its registers; AMX
 * also only once the OS has granted the process its tile data, asked for at detection).
 * aarch64: getauxval(AT_HWCAP) and getauxval(AT_HWCAP2). JEPA_CPU caps the level
 * (scalar|avx2|avx512|neon), for tests and benchmarks; the API's jepa_ctx_params.cpu does
 * the same.
 */
#ifndef JEPA_RUNTIME_CPU_H
#define JEPA_RUNTIME_CPU_H

enum jepa_cpu_flag {
    JEPA_CPU_AVX2 = 1u << 0,        /* AVX2 + FMA + F16C, YMM state enabled */
    JEPA_CPU_AVX512 = 1u << 1,      /* AVX-512 F/BW/VL/DQ, ZMM state enabled */
    JEPA_CPU_AVX512_VNNI = 1u << 2,
    JEPA_CPU_AVX512_BF16 = 1u << 3,
    JEPA_CPU_AMX_BF16 = 1u << 4,    /* AMX-TILE + AMX-BF16 with AVX-512, the tile state
                                     * enabled in XCR0 and granted to this process by the
                                     * OS (Linux: arch_prctl ARCH_REQ_XCOMP_PERM) */
    JEPA_CPU_NEON = 1u << 8,        /* Advanced SIMD (always on aarch64) */
    JEPA_CPU_DOTPROD = 1u << 9,
    JEPA_CPU_FP16 = 1u << 10,       /* FEAT_FP16 arithmetic */
    JEPA_CPU_BF16 = 1u << 11,       /* FEAT_BF16 (BFDOT, BFMMLA; AT_HWCAP2) */
};

/* Flags of this machine (cached after the first call). */
unsigned jr_cpu_detect(void);

/* Apply a cap by name ("auto"/NULL = none, "scalar", "avx2", "avx512", "neon").
 * Returns the capped flags, or -1 for an unknown name. */
long jr_cpu_cap(unsigned flags, const char *name);

/* The processor's identity, for the tuning table and file (kernels/tuning.h). x86-64: the
 * cpuid vendor string, display family and model (the extended fields folded in as the
 * vendors document) and stepping; aarch64: vendor "arm-0x<implementer>", family 8, model
 * the MIDR part number, stepping the revision (all 0 where MIDR_EL1 cannot be read).
 * isa: the widest kernel level the CPU has ("avx512", "avx2", "neon", "scalar"). */
struct jr_cpu_id {
    char vendor[16];
    int family, model, stepping;
    char isa[16];
};
/* This CPU's (detected once). */
const struct jr_cpu_id *jr_cpu_id(void);

/* Human-readable list of flags ("avx2 avx512 avx512_vnni ..."). */
const char *jr_cpu_describe(unsigned flags, char *buf, int size);

#endif
