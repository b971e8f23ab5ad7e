/* gemm_pipe.cu compiled by the host C++ compiler against the SIMT emulator (README.md). */
#include "kernels/cuda/gemm_pipe.cu"
