/*
 * test_cuda_device.c — struct jk_device for CUDA (kernels/cuda/device.cu, the contract in
 * kernels/device.h): the handle's fields, upload / download round trips (odd sizes,
 * unaligned offsets, zero bytes), device-to-device copy, zero, the ordering of copies and
 * kernels on the device's stream, the kernel table it hands out, two handles bound in
 * turn from one thread, and the errors: a bad ordinal and an impossible allocation give
 * NULL and a one-line reason; the allocation failure is sticky (every later call returns
 * -1, sync reports it, the first message is kept) and does not leak into a device
 * opened afterwards. Exits 77 without a device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "tests/checkasm/checkasm.h"
#include "tests/cuda/cuda_test.h"

/* Under AddressSanitizer, an allocation beyond its limit aborts unless the allocator is
 * told to return NULL as malloc must; the test asks for 2^60 bytes on purpose (the
 * emulator's cudaMalloc is posix_memalign). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(CT_ASAN)
__attribute__((visibility("default"))) const char *__asan_default_options(void);
__attribute__((visibility("default"))) const char *__asan_default_options(void) {
    return "allocator_may_return_null=1";
}
#endif

static unsigned char *bytes(size_t n) {
    unsigned char *p = (unsigned char *)malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)ca_next();
    return p;
}

static void check_fields(struct jk_device *d) {
    CHECK(d->name && !strncmp(d->name, "cuda:0 ", 7), "name \"%s\" does not start with \"cuda:0 \"",
             d->name ? d->name : "(null)");
    CHECK(d->name && strstr(d->name, "(sm_") && strstr(d->name, " GiB)"),
             "name \"%s\" lacks \"(sm_XY, N GiB)\"", d->name ? d->name : "(null)");
    CHECK(!d->host_memory, "host_memory is true on a CUDA device");
    CHECK(d->ordinal == 0, "ordinal %d, expected 0", d->ordinal);
    CHECK(d->error(d) && !d->error(d)[0], "error() is \"%s\" on a fresh device",
             d->error(d) ? d->error(d) : "(null)");
    CHECK(jk_device_cuda_count() >= 1, "jk_device_cuda_count() = %d with device 0 open",
             jk_device_cuda_count());
}

static void check_copies(struct jk_device *d) {
    static const size_t sizes[] = {1, 3, 4096, (1u << 20) + 13};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        const size_t n = sizes[si];
        unsigned char *h = bytes(n + 16), *back = bytes(n + 16), *ref = (unsigned char *)malloc(n + 16);
        unsigned char *a = (unsigned char *)d->alloc(d, n + 16), *b = (unsigned char *)d->alloc(d, n + 16);
        CHECK(a && b, "alloc of %zu bytes failed: %s", n + 16, d->error(d));
        if (!a || !b) exit(1);
        /* whole buffer, then n bytes at an odd offset */
        CHECK(!d->upload(d, a, h, n + 16), "upload: %s", d->error(d));
        CHECK(!d->download(d, back, a, n + 16), "download: %s", d->error(d));
        CHECK(!memcmp(back, h, n + 16), "upload/download round trip of %zu bytes differs", n + 16);
        unsigned char *h2 = bytes(n);
        CHECK(!d->upload(d, a + 3, h2, n), "upload at offset 3: %s", d->error(d));
        memcpy(ref, h, n + 16), memcpy(ref + 3, h2, n);
        CHECK(!d->download(d, back, a, n + 16), "download: %s", d->error(d));
        CHECK(!memcmp(back, ref, n + 16), "upload of %zu bytes at offset 3 differs", n);
        /* upload returns once the source may be reused: scribble on it at once */
        memset(h2, 0xa5, n);
        CHECK(!d->download(d, back, a, n + 16), "download: %s", d->error(d));
        CHECK(!memcmp(back, ref, n + 16), "reusing an upload's source changed the copy (%zu bytes)", n);

        /* device to device, into an odd offset; then zero a middle range */
        CHECK(!d->zero(d, b, n + 16), "zero: %s", d->error(d));
        CHECK(!d->copy(d, b + 5, a + 1, n), "copy: %s", d->error(d));
        memset(ref, 0, n + 16);
        memcpy(ref + 5, back + 1, n);
        const size_t z0 = n / 3, zn = n / 2;
        CHECK(!d->zero(d, b + 5 + z0, zn), "zero: %s", d->error(d));
        memset(ref + 5 + z0, 0, zn);
        CHECK(!d->download(d, back, b, n + 16), "download: %s", d->error(d));
        CHECK(!memcmp(back, ref, n + 16), "copy + zero of %zu bytes differs", n);

        /* zero bytes: nothing to do, no error */
        CHECK(!d->upload(d, a, h, 0) && !d->download(d, back, a, 0) && !d->copy(d, b, a, 0) &&
                     !d->zero(d, a, 0), "a zero-byte transfer failed: %s", d->error(d));
        d->free(d, a), d->free(d, b);
        free(h), free(h2), free(back), free(ref);
    }
    d->free(d, NULL);   /* a no-op */
    CHECK(!d->sync(d), "sync after the copies: %s", d->error(d));
    printf("  copies: round trips, offsets, copy, zero on %zu sizes\n", sizeof sizes / sizeof *sizes);
}

static void check_table(struct jk_device *d) {
    struct jk_kernels k;
    memset(&k, 0xff, sizeof k);   /* every field must be written */
    d->init_kernels(d, &k, 0);
    CHECK(k.isa && !strcmp(k.isa, "cuda"), "isa \"%s\"", k.isa ? k.isa : "(null)");
    for (int t = 0; t < JK_NDTYPES; t++)   /* every weight type, the block formats included */
        CHECK(k.gemm[t], "gemm[%s] of the CUDA table is NULL", jk_dtype_name((enum jk_dtype)t));
    for (int s = 0; s < jk_nslots; s++)
        if (jk_slots[s].dtype < 0)
            CHECK(jk_slot_fn(&k, &jk_slots[s]), "slot %s of the CUDA table is NULL", jk_slots[s].name);
    if (k.gemm_ws && k.attn_ws)
        CHECK(k.gemm_ws(8, 4096) == 0 && k.attn_ws(8, 16, 64, 4096) == (size_t)16 * 4096 * 64 * 4,
              "gemm_ws takes none, attn_ws the f16 K and V of every head: %zu %zu",
              k.gemm_ws(8, 4096), k.attn_ws(8, 16, 64, 4096));
}

/* Upload, a kernel, a device copy, a download, all queued on one stream: the download
 * must see the kernel's result. Then the same through a second handle on the same GPU
 * (its own stream), bound in turn. */
static void run_silu(struct jk_device *d, const struct jk_kernels *k, const float *x, float *out,
                     size_t n) {
    d->bind(d);
    float *a = (float *)d->alloc(d, n * sizeof(float)), *b = (float *)d->alloc(d, n * sizeof(float));
    if (!a || !b) { printf("FAIL alloc: %s\n", d->error(d)); exit(1); }
    d->upload(d, a, x, n * sizeof(float));
    k->silu(a, n, 1);
    d->copy(d, b, a, n * sizeof(float));
    d->zero(d, a, n * sizeof(float));
    CHECK(!d->download(d, out, b, n * sizeof(float)), "download: %s", d->error(d));
    d->free(d, a), d->free(d, b);
}

static void check_order_and_bind(struct jk_device *d) {
    const size_t n = 100003;
    float *x = (float *)malloc(n * sizeof(float)), *r = (float *)malloc(n * sizeof(float));
    float *g1 = (float *)malloc(n * sizeof(float)), *g2 = (float *)malloc(n * sizeof(float));
    ca_fill(x, n, 3.0f);
    memcpy(r, x, n * sizeof(float));
    jk_silu_ref(r, n, 1);
    struct jk_kernels k;
    d->init_kernels(d, &k, 0);
    run_silu(d, &k, x, g1, n);
    ca_close("silu through upload / kernel / copy / zero / download on one stream", g1, r, n, 1e-13, 1e-6);

    char err[256] = "";
    struct jk_device *d2 = jk_device_open_cuda(0, err, sizeof err);
    CHECK(d2 != NULL, "a second handle on device 0: %s", err);
    if (d2) {
        run_silu(d2, &k, x, g2, n);
        CHECK(!memcmp(g1, g2, n * sizeof(float)), "silu through a second handle differs");
        run_silu(d, &k, x, g2, n);   /* back to the first */
        CHECK(!memcmp(g1, g2, n * sizeof(float)), "silu after binding the first handle again differs");
        d2->close(d2);
    }
    d->bind(d);
    CHECK(!d->sync(d), "sync: %s", d->error(d));
    printf("  stream order and bind: two handles, %zu floats each\n", n);
    free(x), free(r), free(g1), free(g2);
}

static void check_errors(void) {
    char err[256];
    /* a bad ordinal: NULL and a reason */
    const int count = jk_device_cuda_count();
    const int bad[] = {count, count + 7, -1};
    for (int i = 0; i < 3; i++) {
        strcpy(err, "");
        struct jk_device *d = jk_device_open_cuda(bad[i], err, sizeof err);
        CHECK(!d, "jk_device_open_cuda(%d) with %d device(s) did not fail", bad[i], count);
        CHECK(err[0] && !strchr(err, '\n'), "jk_device_open_cuda(%d): no one-line reason", bad[i]);
        if (d) d->close(d);
        else if (i == 0) printf("  bad ordinal: \"%s\"\n", err);
    }
    CHECK(!jk_device_open_cuda(count + 1, NULL, 0), "a bad ordinal with no error buffer did not fail");

    /* an allocation that cannot succeed: NULL, a reason, sticky */
    struct jk_device *d = jk_device_open_cuda(0, err, sizeof err);
    if (!d) { printf("FAIL reopen: %s\n", err); exit(1); }
    void *ok = d->alloc(d, 4096);
    CHECK(ok != NULL, "alloc(4096): %s", d->error(d));
    void *p = d->alloc(d, (size_t)1 << 60);
    CHECK(!p, "alloc(2^60) succeeded");
    char first[256];
    snprintf(first, sizeof first, "%s", d->error(d));
    printf("  alloc(2^60): \"%s\"\n", first);
    CHECK(strstr(first, "cannot allocate") && strstr(first, "MiB") && !strchr(first, '\n'),
             "alloc(2^60): the error \"%s\" is not \"cuda: cannot allocate N MiB: ...\"", first);
    CHECK(d->sync(d) == -1, "sync after a failed alloc returned 0");
    unsigned char buf[64] = {0};
    CHECK(d->upload(d, ok, buf, sizeof buf) == -1, "upload after a failed alloc returned 0");
    CHECK(d->download(d, buf, ok, sizeof buf) == -1, "download after a failed alloc returned 0");
    CHECK(d->copy(d, ok, ok, 16) == -1 && d->zero(d, ok, 16) == -1,
             "copy / zero after a failed alloc returned 0");
    CHECK(d->alloc(d, 16) == NULL, "alloc after a failed alloc succeeded");
    CHECK(!strcmp(d->error(d), first), "the first error was replaced by \"%s\"", d->error(d));
    d->free(d, ok);
    d->close(d);

    /* the failure belonged to that handle: a new one works */
    d = jk_device_open_cuda(0, err, sizeof err);
    CHECK(d != NULL, "reopen after a failed alloc: %s", err);
    if (d) {
        unsigned char *h = bytes(1000), back[1000];
        void *a = d->alloc(d, 1000);
        CHECK(a && !d->upload(d, a, h, 1000) && !d->download(d, back, a, 1000) &&
                     !memcmp(back, h, 1000) && !d->sync(d) && !d->error(d)[0],
                 "a device opened after a failed alloc does not work: %s", d->error(d));
        d->free(d, a);
        d->close(d);
        free(h);
    }
}

int main(void) {
    ca_seed("test_cuda_device");
    struct jk_device *d = ct_open("test_cuda_device");
    check_fields(d);
    check_copies(d);
    check_table(d);
    check_order_and_bind(d);
    ct_close();
    check_errors();
    return ca_finish("test_cuda_device");
}
