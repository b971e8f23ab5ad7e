/*
 * init_ops_x86.c — installs the x86 attention / RoPE / norm / element-wise kernels:
 * AVX2+FMA+F16C first, then AVX-512 (F/BW/VL/DQ) where the CPU and the OS allow it.
 * attn and attn_ws are always set together, so attn_ws describes the kernel in the table.
 * Compiled without ISA flags. Tested by tests/checkasm/test_ops.c (every level this
 * machine runs, and AVX-512 through SIMDe in checkasm_ops_avx512emu).
 */
#include "kernels/x86/ops_x86.h"
#include "kernels/x86/x86.h"

#define OPS_X86_INSTALL(k, isa)            \
    do {                                   \
        (k)->attn = attn_##isa;            \
        (k)->attn_ws = attn_ws_##isa;      \
        (k)->rope = rope_##isa;            \
        (k)->layernorm = layernorm_##isa;  \
        (k)->gelu = gelu_##isa;            \
        (k)->gelu_tanh = gelu_tanh_##isa;  \
        (k)->silu = silu_##isa;            \
        (k)->softmax = softmax_##isa;      \
        (k)->add = add_##isa;              \
        (k)->patchify = patchify_##isa;    \
    } while (0)

void jk_init_ops_x86(struct jk_kernels *k, unsigned cpu_flags) {
    if (!(cpu_flags & JEPA_CPU_AVX2)) return;
    OPS_X86_INSTALL(k, avx2);
    k->isa = "avx2";
    if (!(cpu_flags & JEPA_CPU_AVX512)) return;
    OPS_X86_INSTALL(k, avx512);
    k->isa = "avx512";
}
