/* gemm_neon.c — (to be written) */
#include "kernels/arm/arm.h"
