/*
 * tier_flags.h — the CPU flags the precision tiers' checkasm tests (test_gemm_tier.c,
 * test_attn_tier.c) initialise their tables at: the emulated (SIMDe) and modelled (tile
 * model) builds claim their features whatever the CPU says; a native build of an AMX rung
 * takes the CPU's flags, the rung below the tiles the CPU's flags less AMX (so that on an
 * AMX machine both rungs are tested).
 */
#ifndef JEPA_TESTS_CHECKASM_TIER_FLAGS_H
#define JEPA_TESTS_CHECKASM_TIER_FLAGS_H

#include "runtime/cpu.h"

static inline unsigned ca_tier_flags(int amx_rung) {
#if defined(CHECKASM_TILE_MODEL)
    (void)amx_rung;
    return JEPA_CPU_AVX2 | JEPA_CPU_AVX512 | JEPA_CPU_AVX512_BF16 | JEPA_CPU_AMX_BF16;
#elif defined(CHECKASM_AVX512_EMU)
    (void)amx_rung;
    return JEPA_CPU_AVX2 | JEPA_CPU_AVX512 | JEPA_CPU_AVX512_BF16;
#else
    return amx_rung ? jr_cpu_detect() : jr_cpu_detect() & ~(unsigned)JEPA_CPU_AMX_BF16;
#endif
}

#endif
