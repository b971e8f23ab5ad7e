/*
 * arm.h — declarations of the aarch64 kernels (the *_neon.c files of kernels/arm/) and of the two
 * init functions that install them.
 */
#ifndef JEPA_KERNELS_ARM_H
#define JEPA_KERNELS_ARM_H

#include "kernels/kernels.h"
#include "runtime/cpu.h"

void jk_init_gemm_arm(struct jk_kernels *k, unsigned cpu_flags);
void jk_init_ops_arm(struct jk_kernels *k, unsigned cpu_flags);

#endif
