/*
 * init_x86.c — the x86-64 rung of the kernel ladder: AVX2 (+FMA+F16C) first, then
 * AVX-512 where the CPU and OS allow. Compiled without ISA flags; the ISA files are
 * reached only through the pointers set here.
 */
#include "kernels/x86/x86.h"

void jk_init_x86(struct jk_kernels *k, unsigned cpu_flags) {
    jk_init_gemm_x86(k, cpu_flags);
    jk_init_ops_x86(k, cpu_flags);
}
