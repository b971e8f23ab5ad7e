/*
 * x86.h — declarations of the x86-64 kernels (the *_avx2.c and *_avx512.c files of kernels/x86/) and of
 * the two init functions that install them. Nothing here is inline: an inline helper
 * shared between ISA-flagged and plain files could be linked as its AVX-512 copy.
 */
#ifndef JEPA_KERNELS_X86_H
#define JEPA_KERNELS_X86_H

#include "kernels/kernels.h"
#include "runtime/cpu.h"

void jk_init_gemm_x86(struct jk_kernels *k, unsigned cpu_flags);
void jk_init_ops_x86(struct jk_kernels *k, unsigned cpu_flags);

#endif
