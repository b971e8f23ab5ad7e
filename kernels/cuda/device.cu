/*
 * device.cu — struct jk_device for one CUDA device (kernels/device.h): device memory, one
 * non-blocking stream of its own on which every copy and kernel is queued, and sticky
 * errors; the device bound to the calling thread (jkc_stream, jkc_check_launch for the
 * other files of kernels/cuda/); and the CUDA kernel table (jk_init_cuda).
 *
 * Errors: the first failure (an allocation, a copy, a launch, a fault reported by a
 * sync) is kept as a one-line message; from then on every call returns -1 (NULL for
 * alloc) without touching the GPU, and sync reports it. A failed cudaMalloc is not an
 * error of the CUDA context, so it is cleared from the runtime's last-error slot after
 * being recorded (it would otherwise be blamed on the next launch).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "kernels/cuda/internal.cuh"

namespace {

struct cuda_device {
    struct jk_device base;   /* first: the public handle is a pointer to it */
    cudaStream_t stream;
    bool failed;
    char err[256];
    char name[320];   /* prop.name is up to 256 bytes */
};

/* The device bound to this thread by jk_device.bind (NULL: none). */
thread_local cuda_device *g_bound = nullptr;

cuda_device *cdev(struct jk_device *d) { return reinterpret_cast<cuda_device *>(d); }

/* Keep the first failure: "cuda: <what>: <reason>". */
void fail(cuda_device *c, const char *what, const char *reason) {
    if (c->failed) return;
    c->failed = true;
    snprintf(c->err, sizeof c->err, "cuda: %s: %s", what, reason);
}

/* Record a failed runtime call; 0 on success, -1 otherwise. */
int check(cuda_device *c, cudaError_t e, const char *what) {
    if (e == cudaSuccess) return 0;
    fail(c, what, cudaGetErrorString(e));
    return -1;
}

/* Make c's GPU current for this thread (another device may have been bound since). */
int set_current(cuda_device *c) {
    return check(c, cudaSetDevice(c->base.ordinal), "cudaSetDevice");
}

void *dev_alloc(struct jk_device *d, size_t n) {
    cuda_device *c = cdev(d);
    if (c->failed || set_current(c)) return nullptr;
    void *p = nullptr;
    const cudaError_t e = cudaMalloc(&p, n ? n : 1);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();   /* not a context error: do not let a launch inherit it */
        char what[96];
        snprintf(what, sizeof what, "cannot allocate %zu MiB", (n >> 20) + ((n & 0xfffff) != 0));
        fail(c, what, cudaGetErrorString(e));
        return nullptr;
    }
    return p;
}

void dev_free(struct jk_device *d, void *p) {
    if (!p) return;
    cuda_device *c = cdev(d);
    /* freed even after a failure: the caller tears down whatever it built */
    cudaSetDevice(d->ordinal);
    const cudaError_t e = cudaFree(p);
    if (e != cudaSuccess) fail(c, "cudaFree", cudaGetErrorString(e));
}

/* Host -> device on the stream. For pageable memory (malloc, mmap: everything the
 * library passes) CUDA returns once the source has been staged, so src may be reused
 * on return as device.h promises; the copy itself is ordered before later work. */
int dev_upload(struct jk_device *d, void *dst, const void *src, size_t n) {
    cuda_device *c = cdev(d);
    if (c->failed) return -1;
    if (!n) return 0;
    if (set_current(c)) return -1;
    return check(c, cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, c->stream),
                 "upload");
}

int dev_download(struct jk_device *d, void *dst, const void *src, size_t n) {
    cuda_device *c = cdev(d);
    if (c->failed) return -1;
    if (!n) return 0;
    if (set_current(c)) return -1;
    if (check(c, cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, c->stream), "download"))
        return -1;
    return check(c, cudaStreamSynchronize(c->stream), "download (stream)");
}

int dev_copy(struct jk_device *d, void *dst, const void *src, size_t n) {
    cuda_device *c = cdev(d);
    if (c->failed) return -1;
    if (!n) return 0;
    if (set_current(c)) return -1;
    return check(c, cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, c->stream), "copy");
}

int dev_zero(struct jk_device *d, void *dst, size_t n) {
    cuda_device *c = cdev(d);
    if (c->failed) return -1;
    if (!n) return 0;
    if (set_current(c)) return -1;
    return check(c, cudaMemsetAsync(dst, 0, n, c->stream), "zero");
}

/* Wait for the stream, then collect any error left by a launch (a kernel fault shows
 * up in the synchronize, a bad configuration in the last-error slot). */
int dev_sync(struct jk_device *d) {
    cuda_device *c = cdev(d);
    if (c->failed) return -1;
    if (set_current(c)) return -1;
    if (check(c, cudaStreamSynchronize(c->stream), "sync")) return -1;
    return check(c, cudaGetLastError(), "sync");
}

const char *dev_error(const struct jk_device *d) {
    return reinterpret_cast<const cuda_device *>(d)->err;
}

void dev_bind(struct jk_device *d) {
    cuda_device *c = cdev(d);
    g_bound = c;
    if (!c->failed) set_current(c);
}

void dev_init_kernels(struct jk_device *d, struct jk_kernels *k, unsigned cpu_flags) {
    (void)d, (void)cpu_flags;
    jk_init_cuda(k);
}

void dev_close(struct jk_device *d) {
    if (!d) return;
    cuda_device *c = cdev(d);
    cudaSetDevice(d->ordinal);
    cudaStreamSynchronize(c->stream);
    cudaStreamDestroy(c->stream);
    if (g_bound == c) g_bound = nullptr;
    free(c);
}

/* The pipelined matmul's split-K partial sums (gemm_pipe.cu); nothing otherwise. */
size_t gemm_ws_cuda(int nthreads, int K) {
    (void)nthreads;
    return jkc_gemm_splitk_ws(K);
}

/* The reason an open failed, into the caller's buffer (which may be NULL). */
__attribute__((format(printf, 3, 4))) void set_err(char *err, size_t errlen, const char *fmt,
                                                   ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

} // namespace

cudaStream_t jkc_stream(void) { return g_bound ? g_bound->stream : (cudaStream_t)0; }

void jkc_check_launch(const char *what) {
    /* Unbound (a caller that did not bind): leave the error in the runtime's slot for
     * the next sync to find rather than consume it with no device to record it on. */
    if (!g_bound) return;
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) fail(g_bound, what, cudaGetErrorString(e));
}

extern "C" {

/* JEPA_CUDA_KERNELS, read once: "pipe" selects the pipelined kernels, "wgmma" those and
 * the wgmma matmul on sm_90, unset / "" / "mma" the default ones; anything else warns once
 * and keeps the default. 0 default, 1 pipe, 2 wgmma. */
static int env_kernels(void) {
    static const int mode = [] {
        const char *e = getenv("JEPA_CUDA_KERNELS");
        if (!e || !*e || !strcmp(e, "mma")) return 0;
        if (!strcmp(e, "pipe")) return 1;
        if (!strcmp(e, "wgmma")) return 2;
        fprintf(stderr, "jepa: JEPA_CUDA_KERNELS=%s ignored (\"pipe\", \"wgmma\" or \"mma\"); "
                "the default (mma) kernels are in force\n", e);
        return 0;
    }();
    return mode;
}

/* -1: the environment decides; 0 / 1 / 2: forced by jkc_kernels_force_pipe / _wgmma. */
static std::atomic<int> g_force_kernels{-1};

static int kernels_mode(void) {
    const int f = g_force_kernels.load(std::memory_order_relaxed);
    return f >= 0 ? f : env_kernels();
}

int jkc_kernels_pipe(void) { return kernels_mode() >= 1; }
int jkc_kernels_wgmma(void) { return kernels_mode() == 2; }

void jkc_kernels_force_pipe(int on) {
    g_force_kernels.store(on < 0 ? -1 : on != 0, std::memory_order_relaxed);
}

void jkc_kernels_force_wgmma(int on) {
    g_force_kernels.store(on < 0 ? -1 : on ? 2 : 0, std::memory_order_relaxed);
}

int jk_device_cuda_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

struct jk_device *jk_device_open_cuda(int ordinal, char *err, size_t errlen) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count <= 0) {
        (void)cudaGetLastError();
        set_err(err, errlen, "no CUDA device: %s",
                e != cudaSuccess ? cudaGetErrorString(e) : "none present");
        return nullptr;
    }
    if (ordinal < 0 || ordinal >= count) {
        set_err(err, errlen, "no CUDA device %d (%d present)", ordinal, count);
        return nullptr;
    }
    cudaDeviceProp prop;
    if ((e = cudaSetDevice(ordinal)) != cudaSuccess ||
        (e = cudaGetDeviceProperties(&prop, ordinal)) != cudaSuccess) {
        (void)cudaGetLastError();
        set_err(err, errlen, "cuda:%d: %s", ordinal, cudaGetErrorString(e));
        return nullptr;
    }
    cuda_device *c = static_cast<cuda_device *>(calloc(1, sizeof *c));
    if (!c) {
        set_err(err, errlen, "cuda:%d: out of host memory", ordinal);
        return nullptr;
    }
    if ((e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        (void)cudaGetLastError();
        set_err(err, errlen, "cuda:%d: cannot create a stream: %s", ordinal,
                cudaGetErrorString(e));
        free(c);
        return nullptr;
    }
    /* totalGlobalMem in GiB, to the nearest */
    const unsigned long long gib = ((unsigned long long)prop.totalGlobalMem + (1ull << 29)) >> 30;
    snprintf(c->name, sizeof c->name, "cuda:%d %s (sm_%d%d, %llu GiB)", ordinal, prop.name,
             prop.major, prop.minor, gib);
    struct jk_device *d = &c->base;
    d->name = c->name;
    d->host_memory = false;
    d->ordinal = ordinal;
    d->init_kernels = dev_init_kernels;
    d->bind = dev_bind;
    d->alloc = dev_alloc;
    d->free = dev_free;
    d->upload = dev_upload;
    d->download = dev_download;
    d->copy = dev_copy;
    d->zero = dev_zero;
    d->sync = dev_sync;
    d->error = dev_error;
    d->close = dev_close;
    return d;
}

void jk_init_cuda(struct jk_kernels *k) {
    memset(k, 0, sizeof *k);
    k->isa = "cuda";
    k->gemm_isa = "cuda";
    k->attn_isa = "cuda";
    JK_GEMM_INSTALL(cuda);
    k->attn = jkc_attn;
    k->rope = jkc_rope;
    k->layernorm = jkc_layernorm;
    k->gelu_tanh = jkc_gelu_tanh;
    k->silu = jkc_silu;
    k->add = jkc_add;
    k->madd = jkc_madd;
    k->patchify = jkc_patchify;
    k->gather = jkc_gather;
    k->mean_rows = jkc_mean_rows;
    k->gemm_ws = gemm_ws_cuda;
    k->attn_ws = jkc_attn_ws;
    if (jkc_kernels_pipe()) {   /* the 16-bit operand copies (kernels.h, jk_gemm_args x16) */
        k->x16 = true;
        k->layernorm16 = jkc_layernorm16;
        k->patchify16 = jkc_patchify16;
        k->gelu_tanh16 = jkc_gelu_tanh16;
        k->silu16 = jkc_silu16;
        k->round16 = jkc_round16;
    }
}

} // extern "C"
