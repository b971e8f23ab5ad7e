/*
 * device.h — where a context's activations live and how bytes move there.
 *
 * A forward function is one piece of code for every device: it plans its buffers in
 * an arena allocated with dev->alloc, computes host-side tables (RoPE cos/sin, frame
 * ids, interpolated position tables) in host memory and uploads them, runs every op
 * through the kernel table that goes with the device, and downloads its outputs.
 *
 *   jk_device_cpu()        host memory; upload/download/copy are memcpy (nothing at
 *                          all when source and destination are the same pointer), the
 *                          table is jk_init's CPU table.
 *   jk_device_open_cuda()  one CUDA device and one stream; weights live in device
 *                          memory (see upload_weights), the table is jk_init_cuda's.
 *
 * Ordering: every call on one device is ordered after the previous ones (one stream).
 * upload returns once src may be reused; download returns once dst holds the data;
 * copy, zero and kernel launches may still be running when they return. Errors are
 * sticky: the first failure (a bad launch, an out-of-memory copy, a kernel fault) is
 * kept, every later call returns -1, and error() says what happened.
 */
#ifndef JEPA_KERNELS_DEVICE_H
#define JEPA_KERNELS_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/kernels.h"

struct jk_device {
    const char *name;          /* "cpu", "cuda:0 NVIDIA H200 (sm_90, 139 GiB)" */
    bool host_memory;          /* device pointers are host pointers (the CPU) */
    int ordinal;               /* CUDA device number, -1 for the CPU */

    /* Fill the kernel table for this device (cpu_flags: the capped CPU flags, used by
     * the CPU device only). */
    void (*init_kernels)(struct jk_device *d, struct jk_kernels *k, unsigned cpu_flags);
    /* Make this device and its stream the target of kernel-table calls made by the
     * calling thread (a no-op on the CPU). Called at the start of every forward. */
    void (*bind)(struct jk_device *d);

    /* Device memory: NULL on failure (and the error is recorded). */
    void *(*alloc)(struct jk_device *d, size_t n);
    void (*free)(struct jk_device *d, void *p);

    /* 0 on success, -1 on failure (see error()). */
    int (*upload)(struct jk_device *d, void *dst, const void *src, size_t n);   /* host -> dev */
    int (*download)(struct jk_device *d, void *dst, const void *src, size_t n); /* dev -> host */
    int (*copy)(struct jk_device *d, void *dst, const void *src, size_t n);     /* dev -> dev */
    int (*zero)(struct jk_device *d, void *dst, size_t n);
    /* Wait for everything queued; -1 if anything failed since the device opened. */
    int (*sync)(struct jk_device *d);
    const char *(*error)(const struct jk_device *d);

    void (*close)(struct jk_device *d);
};

/* The CPU (static, never closed; close is a no-op). */
struct jk_device *jk_device_cpu(void);

/* Open CUDA device `ordinal` with one stream of its own. Returns NULL and writes a
 * one-line reason into err (errlen bytes) when the build has no CUDA, when no device
 * is present, or when the ordinal is out of range. */
struct jk_device *jk_device_open_cuda(int ordinal, char *err, size_t errlen);

/* Number of CUDA devices usable by this build (0 without CUDA or without a GPU). */
int jk_device_cuda_count(void);

#endif
