/*
 * init_ops_arm.c — installs the NEON attention / RoPE / norm / element-wise kernels
 * (NEON is part of every aarch64 CPU; the flag is checked all the same so that a
 * "scalar" cap keeps the reference). attn and attn_ws are set together.
 * Tested by tests/checkasm/test_ops.c.
 */
#include "kernels/arm/arm.h"
#include "kernels/arm/ops_arm.h"

void jk_init_ops_arm(struct jk_kernels *k, unsigned cpu_flags) {
    if (!(cpu_flags & JEPA_CPU_NEON)) return;
    k->attn = attn_neon;
    k->attn_ws = attn_ws_neon;
    k->rope = rope_neon;
    k->layernorm = layernorm_neon;
    k->gelu = gelu_neon;
    k->gelu_tanh = gelu_tanh_neon;
    k->silu = silu_neon;
    k->softmax = softmax_neon;
    k->add = add_neon;
    k->patchify = patchify_neon;
    k->isa = "neon";
}
