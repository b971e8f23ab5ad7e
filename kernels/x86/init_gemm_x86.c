/*
 * init_gemm_x86.c — installs the x86 matmul kernels: AVX2+FMA+F16C first, then AVX-512
 * (F/BW/VL/DQ) where the CPU and the OS allow it. Every dtype slot and gemm_ws are set
 * together at each level, so gemm_ws always describes the kernels in the table.
 * Compiled without ISA flags. Tested by tests/checkasm/test_gemm.c (every level this
 * machine runs, and AVX-512 through SIMDe in checkasm_gemm_avx512emu).
 */
#include "kernels/x86/gemm_x86.h"
#include "kernels/x86/x86.h"

void jk_init_gemm_x86(struct jk_kernels *k, unsigned cpu_flags) {
    if (!(cpu_flags & JEPA_CPU_AVX2)) return;
    k->gemm[JK_F32] = gemm_f32_avx2;
    k->gemm[JK_F16] = gemm_f16_avx2;
    k->gemm[JK_BF16] = gemm_bf16_avx2;
    k->gemm[JK_Q8_0] = gemm_q8_0_avx2;
    k->gemm_ws = gemm_ws_avx2;
    if (!(cpu_flags & JEPA_CPU_AVX512)) return;
    k->gemm[JK_F32] = gemm_f32_avx512;
    k->gemm[JK_F16] = gemm_f16_avx512;
    k->gemm[JK_BF16] = gemm_bf16_avx512;
    k->gemm[JK_Q8_0] = gemm_q8_0_avx512;
    k->gemm_ws = gemm_ws_avx512;
}
