/*
 * device_nocuda.c — the CUDA entry points of kernels/device.h in a build without CUDA
 * (nvcc not found, or meson -Dcuda=disabled): no device can be opened, and the reason
 * says how to get one. Linked instead of the real kernels/cuda/ device library.
 */
#include <stdio.h>

#include "kernels/device.h"

struct jk_device *jk_device_open_cuda(int ordinal, char *err, size_t errlen) {
    (void)ordinal;
    if (err && errlen)
        snprintf(err, errlen, "this build has no CUDA support (rebuild with nvcc installed; "
                              "meson -Dcuda=enabled)");
    return NULL;
}

int jk_device_cuda_count(void) { return 0; }
