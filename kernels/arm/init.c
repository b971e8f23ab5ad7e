/*
 * init.c — the aarch64 rung of the kernel ladder: NEON (part of every aarch64 CPU; the
 * flag is checked all the same so that a "scalar" cap keeps the reference). Every slot
 * is set at once, so gemm_ws / attn_ws describe the kernels in the table.
 */
#include "kernels/arm/arm.h"
#include "runtime/cpu.h"

void jk_init_arm(struct jk_kernels *k, unsigned cpu_flags) {
    if (!(cpu_flags & JEPA_CPU_NEON)) return;
    k->isa = "neon";
    JK_GEMM_INSTALL(neon);
    k->gemm_ws = jk_gemm_ws_neon;
    k->gemm_prepack = jk_gemm_prepack_neon;
    k->gemm_prepack_floats = jk_gemm_prepack_floats_neon;
    k->attn = jk_attn_neon;
    k->attn_ws = jk_attn_ws_neon;
    k->rope = jk_rope_neon;
    k->layernorm = jk_layernorm_neon;
    k->gelu_tanh = jk_gelu_tanh_neon;
    k->silu = jk_silu_neon;
    k->add = jk_add_neon;
    k->patchify = jk_patchify_neon;
}
