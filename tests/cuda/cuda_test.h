/*
 * cuda_test.h — what the CUDA tests share: open CUDA device 0 and bind it to the test's
 * thread (or print "SKIP: <reason>" and exit 77, meson's "skipped", when there is no
 * device: no GPU, no driver, or the emulator run with JEPA_EMU_NO_DEVICE=1), and move
 * host arrays to and from it. Any failure of the device itself (an allocation, a copy,
 * a sync) ends the test with exit 1 and the device's one-line error.
 *
 * The RNG, fills and tolerance checks are checkasm's (tests/checkasm/checkasm.h). Host
 * arrays with checkasm's NaN guard bands (ca_alloc_guarded) travel with their guards:
 * ct_upload_guarded copies the bands too, so that downloading them back after a kernel
 * shows whether it wrote outside its output.
 */
#ifndef JEPA_TESTS_CUDA_TEST_H
#define JEPA_TESTS_CUDA_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include "kernels/device.h"
#include "kernels/kernels.h"
#include "tests/checkasm/checkasm.h"

static struct jk_device *ct_dev;

static inline void ct_die(const char *what) {
    printf("FAIL: %s: %s\n", what, ct_dev ? ct_dev->error(ct_dev) : "no device");
    exit(1);
}

/* Open device 0, bind it, and print its name; exit 77 with the reason if there is none. */
static inline struct jk_device *ct_open(const char *prog) {
    char err[256] = "";
    struct jk_device *d = jk_device_open_cuda(0, err, sizeof err);
    if (!d) {
        printf("SKIP: %s: %s\n", prog, err[0] ? err : "no CUDA device");
        exit(77);
    }
    printf("%s: %s\n", prog, d->name);
    d->bind(d);
    ct_dev = d;
    return d;
}

static inline void ct_close(void) {
    if (ct_dev) ct_dev->close(ct_dev);
    ct_dev = NULL;
}

/* Device copy of `bytes` bytes of host memory. */
static inline void *ct_upload(const void *host, size_t bytes) {
    void *p = ct_dev->alloc(ct_dev, bytes);
    if (!p) ct_die("alloc");
    if (ct_dev->upload(ct_dev, p, host, bytes)) ct_die("upload");
    return p;
}
static inline float *ct_upload_f(const float *host, size_t n) {
    return (float *)ct_upload(host, n * sizeof(float));
}

/* Wait for the device, then copy `bytes` bytes back into host memory. */
static inline void ct_download(void *host, const void *dev, size_t bytes) {
    if (ct_dev->sync(ct_dev)) ct_die("sync");
    if (ct_dev->download(ct_dev, host, dev, bytes)) ct_die("download");
}

static inline void ct_free(void *dev) { ct_dev->free(ct_dev, dev); }

/* A guarded host array of n floats (ca_alloc_guarded) to the device, bands included;
 * returns the device address of element 0. */
static inline float *ct_upload_guarded(const float *host, size_t n) {
    return ct_upload_f(host - CA_GUARD, n + 2 * CA_GUARD) + CA_GUARD;
}
static inline void ct_download_guarded(float *host, const float *dev, size_t n) {
    ct_download(host - CA_GUARD, dev - CA_GUARD, (n + 2 * CA_GUARD) * sizeof(float));
}
static inline void ct_free_guarded(float *dev) { ct_free(dev - CA_GUARD); }

#endif
