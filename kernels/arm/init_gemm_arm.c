/*
 * init_gemm_arm.c — installs the NEON matmul kernels (every dtype slot and gemm_ws
 * together). Tested by tests/checkasm/test_gemm.c under qemu-aarch64 (cross file).
 */
#include "kernels/arm/arm.h"
#include "kernels/arm/gemm_arm.h"

void jk_init_gemm_arm(struct jk_kernels *k, unsigned cpu_flags) {
    if (!(cpu_flags & JEPA_CPU_NEON)) return;
    k->gemm[JK_F32] = gemm_f32_neon;
    k->gemm[JK_F16] = gemm_f16_neon;
    k->gemm[JK_BF16] = gemm_bf16_neon;
    k->gemm[JK_Q8_0] = gemm_q8_0_neon;
    k->gemm_ws = gemm_ws_neon;
}
