/*
 * init.c — the x86-64 rung of the kernel ladder: AVX2 (+FMA+F16C) first, then AVX-512
 * (F/BW/VL/DQ) where the CPU and the OS allow it. Each level sets every slot it has at
 * once, so gemm_ws / attn_ws always describe the kernels in the table. Compiled without
 * ISA flags; the ISA files are reached only through the pointers set here. Tested by
 * tests/checkasm (every level this machine runs, and AVX-512 through SIMDe in the
 * *_avx512emu tests).
 */
#include "kernels/x86/x86.h"
#include "runtime/cpu.h"

#define JK_X86_INSTALL(k, name)                      \
    do {                                             \
        (k)->isa = #name;                            \
        JK_INSTALL_GEMM(k, name);                \
        (k)->attn = jk_attn_##name;                  \
        (k)->attn_ws = jk_attn_ws_##name;            \
        (k)->rope = jk_rope_##name;                  \
        (k)->layernorm = jk_layernorm_##name;        \
        (k)->gelu_tanh = jk_gelu_tanh_##name;        \
        (k)->silu = jk_silu_##name;                  \
        (k)->add = jk_add_##name;                    \
        (k)->patchify = jk_patchify_##name;          \
    } while (0)

/* The tiers' rungs on top of the AVX-512 level the table is at. bf16: AMX tiles
 * (TDPBF16PS; JEPA_CPU_AMX_BF16 means the OS granted the tile state too), else VDPBF16PS
 * (AVX512-BF16), the attention alike (attn_bf16.c). high: AMX tiles only (split terms cost 3 products, which pays only at the
 * tiles' rate); without them it stays exact. */
void jk_init_x86_precision(struct jk_kernels *k, unsigned cpu_flags, enum jk_precision p) {
    if (!(cpu_flags & JEPA_CPU_AVX512)) return;
    if (p == JK_PREC_HIGH && (cpu_flags & JEPA_CPU_AMX_BF16)) JK_INSTALL_GEMM(k, amx_high);
    if (p != JK_PREC_BF16) return;
    if (cpu_flags & JEPA_CPU_AMX_BF16) {
        JK_INSTALL_GEMM(k, amx_bf16);
        JK_INSTALL_ATTN(k, amx_bf16);
    } else if (cpu_flags & JEPA_CPU_AVX512_BF16) {
        JK_INSTALL_GEMM(k, avx512_bf16);
        JK_INSTALL_ATTN(k, avx512_bf16);
    }
}

void jk_init_x86(struct jk_kernels *k, unsigned cpu_flags) {
    if (!(cpu_flags & JEPA_CPU_AVX2)) return;
    JK_X86_INSTALL(k, avx2);
    if (!(cpu_flags & JEPA_CPU_AVX512)) return;
    JK_X86_INSTALL(k, avx512);
}
