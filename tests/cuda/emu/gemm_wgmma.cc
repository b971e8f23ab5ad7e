/* gemm_wgmma.cu compiled by the host C++ compiler against the SIMT emulator (README.md). */
#include "kernels/cuda/gemm_wgmma.cu"
