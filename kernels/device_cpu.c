/*
 * device_cpu.c — the CPU as a struct jk_device (kernels/device.h): host memory, the
 * kernel table of jk_init for the (capped) CPU flags. Moving bytes is memcpy, and nothing
 * at all when source and destination are the same pointer, which is how the forward
 * functions stay free of extra copies on the CPU: a "device" buffer there is the host
 * buffer itself. Nothing can fail after an allocation, so there is no sticky error.
 * Stateless: one static instance, shared by every context and thread, never closed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kernels/device.h"
#include "runtime/arena.h"

static void cpu_init_kernels(struct jk_device *d, struct jk_kernels *k, unsigned cpu_flags) {
    (void)d;
    jk_init(k, cpu_flags);
}

static void cpu_bind(struct jk_device *d) { (void)d; }

/* A block of at least HUGE_MIN bytes (the arena of a large input: a video clip, a big
 * model) is aligned to and rounded up to HUGE_PAGE and offered to the kernel's
 * transparent huge pages (madvise; a no-op where THP is off). Attention reads a K and a V
 * row a qkv row apart (9 KiB for ViT-B), so with 4 KiB pages every key of a long clip is
 * a TLB miss and a page walk: 4608 tokens are 42 MiB of qkv, 10 K pages, over the L2
 * TLB's reach. With 2 MiB pages that buffer is 21 pages
 * (docs/notes/kernel-tuning.md#huge-pages). The rounding costs at most 2 MiB of address
 * space, and of resident memory only what is touched. */
#define HUGE_MIN ((size_t)8 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

/* Aligned like the arena's carving (ARENA_ALIGN), so every buffer the forward plans
 * keeps the alignment the SIMD kernels like. */
static void *cpu_alloc(struct jk_device *d, size_t n) {
    (void)d;
    void *p = NULL;
    size_t sz = (n + (ARENA_ALIGN - 1)) & ~(size_t)(ARENA_ALIGN - 1);
#ifdef MADV_HUGEPAGE
    if (sz >= HUGE_MIN && sz <= SIZE_MAX - HUGE_PAGE) {
        sz = (sz + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        if (posix_memalign(&p, HUGE_PAGE, sz) != 0) return NULL;
        (void)madvise(p, sz, MADV_HUGEPAGE);   /* advice only: failure leaves 4 KiB pages */
        return p;
    }
#endif
    if (posix_memalign(&p, ARENA_ALIGN, sz ? sz : ARENA_ALIGN) != 0) return NULL;
    return p;
}

static void cpu_free(struct jk_device *d, void *p) {
    (void)d;
    free(p);
}

static int cpu_move(struct jk_device *d, void *dst, const void *src, size_t n) {
    (void)d;
    if (n && dst != src) memcpy(dst, src, n);
    return 0;
}

static int cpu_zero(struct jk_device *d, void *dst, size_t n) {
    (void)d;
    if (n) memset(dst, 0, n);
    return 0;
}

static int cpu_sync(struct jk_device *d) {
    (void)d;
    return 0;
}

static const char *cpu_error(const struct jk_device *d) {
    (void)d;
    return "no error";
}

static void cpu_close(struct jk_device *d) { (void)d; }

static struct jk_device cpu_device = {
    .name = "cpu",
    .host_memory = true,
    .ordinal = -1,
    .init_kernels = cpu_init_kernels,
    .bind = cpu_bind,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_move,
    .download = cpu_move,
    .copy = cpu_move,
    .zero = cpu_zero,
    .sync = cpu_sync,
    .error = cpu_error,
    .close = cpu_close,
};

struct jk_device *jk_device_cpu(void) { return &cpu_device; }
