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
    JK_INSTALL_GEMM(k, neon);
    k->attn = jk_attn_neon;
    k->attn_ws = jk_attn_ws_neon;
    k->rope = jk_rope_neon;
    k->layernorm = jk_layernorm_neon;
    k->gelu_tanh = jk_gelu_tanh_neon;
    k->silu = jk_silu_neon;
    k->add = jk_add_neon;
    k->patchify = jk_patchify_neon;
}

/* The bf16 tier wants BFDOT (FEAT_BF16) on top of the NEON level the table is at: its matmul
 * and its attention (both operands of Q.K^T and P.V in bf16); the high tier has no kernels
 * without 16-bit matrix units and stays exact. */
void jk_init_arm_precision(struct jk_kernels *k, unsigned cpu_flags, enum jk_precision p) {
    if (p == JK_PREC_BF16 && (cpu_flags & JEPA_CPU_NEON) && (cpu_flags & JEPA_CPU_BF16)) {
        JK_INSTALL_GEMM(k, neon_bf16);
        JK_INSTALL_ATTN(k, neon_bf16);
    }
}
