/*
 * emu.cc — the SIMT emulator's scheduler, warp collectives and CUDA runtime subset
 * (see emu.h for what it promises).
 *
 * Scheduling: each CUDA thread of a block is a fiber (coroutine) with its own stack.
 * Fibers are created once per host thread and reused by every block of every launch:
 * a fiber's main loop runs the current launch's kernel body, then parks until the
 * next block needs it. Ready fibers wait in a FIFO; a fiber that reaches a barrier
 * parks and switches straight to the next ready fiber (no round trip through a
 * scheduler context), and the last arrival at a barrier requeues the others and
 * carries on. When the FIFO is empty: every fiber done means the block is over
 * (switch back to the host), anything else is a deadlock.
 *
 * Warp collectives exchange data through a per-warp double buffer indexed by the
 * warp's barrier generation, so one barrier per op suffices: a lane can only overwrite
 * a buffer again after the next op's barrier, which every lane reaches only once it
 * has read the previous op's results.
 *
 * Context switch: a few lines of assembly on x86-64 and AArch64 (callee-saved
 * registers + stack pointer; glibc's swapcontext would add a signal-mask system call
 * to every switch), ucontext elsewhere or with -DJKC_EMU_UCONTEXT. Under
 * AddressSanitizer every switch is announced with __sanitizer_start_switch_fiber /
 * __sanitizer_finish_switch_fiber.
 */
#include "kernels/cuda/emu/emu.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define JKC_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JKC_EMU_ASAN 1
#endif
#endif
#if JKC_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

/* The assembly switch is written for ELF targets (Linux and the BSDs). */
#if !defined(JKC_EMU_UCONTEXT) &&                                                          \
    (!defined(__ELF__) || (!defined(__x86_64__) && !defined(__aarch64__)))
#define JKC_EMU_UCONTEXT 1
#endif
#if defined(JKC_EMU_UCONTEXT)
#include <ucontext.h>
#endif

uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;

namespace jkc_emu {
unsigned char *dyn_smem;
}

namespace {

/* ---- fibers and the context switch ------------------------------------------------ */

enum : unsigned char { READY, AT_BLOCK_BARRIER, AT_WARP_OP, DONE };
enum : unsigned char {
    OP_NONE, OP_SYNCWARP, OP_SHFL_XOR, OP_SHFL_IDX, OP_MMA_F16, OP_MMA_BF16,
    /* ldmatrix: OP_LDSM + 2 * log2(matrices) + trans */
    OP_LDSM, OP_LDSM_X1 = OP_LDSM, OP_LDSM_X1_T, OP_LDSM_X2, OP_LDSM_X2_T, OP_LDSM_X4,
    OP_LDSM_X4_T
};

const char *op_name(unsigned op) {
    switch (op) {
    case OP_SYNCWARP: return "__syncwarp";
    case OP_SHFL_XOR: return "__shfl_xor_sync";
    case OP_SHFL_IDX: return "__shfl_sync";
    case OP_MMA_F16: return "jkc_mma_f16";
    case OP_MMA_BF16: return "jkc_mma_bf16";
    case OP_LDSM_X1: return "jkc_ldmatrix_x1";
    case OP_LDSM_X1_T: return "jkc_ldmatrix_x1_trans";
    case OP_LDSM_X2: return "jkc_ldmatrix_x2";
    case OP_LDSM_X2_T: return "jkc_ldmatrix_x2_trans";
    case OP_LDSM_X4: return "jkc_ldmatrix_x4";
    case OP_LDSM_X4_T: return "jkc_ldmatrix_x4_trans";
    }
    return "?";
}

/* A cp.async copy issued but not yet retired by a wait: its source bytes (read at
 * issue, zero-filled past src_bytes) and the group it belongs to. */
struct AsyncCopy {
    unsigned char *dst;
    unsigned char data[16];
    unsigned size;
    unsigned group;   /* == the fiber's `committed` while the group is still open */
};

struct Fiber {
    void *sp = nullptr; /* saved stack pointer (assembly switch) */
#if defined(JKC_EMU_UCONTEXT)
    ucontext_t uc;
#endif
    char *stack = nullptr; /* lowest usable byte (above the guard page) */
    size_t stack_size = 0;
    void *asan_fake = nullptr;
    uint3 tid{0, 0, 0};
    unsigned warp = 0, lane = 0;
    unsigned char state = READY;
    std::vector<AsyncCopy> copies; /* pending, in issue order */
    unsigned committed = 0;        /* groups committed by this thread in this block */
    bool async_stale = false;      /* cp.async data retired since jkc_fence_proxy_async */
};

extern "C" void jkc_emu_switch_ctx(void **save_sp, void *new_sp);
extern "C" void jkc_emu_fiber_trampoline();

#if !defined(JKC_EMU_UCONTEXT) && defined(__x86_64__)
/* Save rbp rbx r12-r15 on the current stack, swap stacks, restore them from the new one.
 * A new fiber's stack holds: r15 r14 r13 r12=entry rbx=arg rbp=0, then the trampoline's
 * address for `ret`; the trampoline calls entry(arg) with a 16-byte aligned stack. */
__asm__(".pushsection .text\n"
        ".globl jkc_emu_switch_ctx\n"
        ".hidden jkc_emu_switch_ctx\n"
        ".type jkc_emu_switch_ctx,@function\n"
        ".p2align 4\n"
        "jkc_emu_switch_ctx:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size jkc_emu_switch_ctx, .-jkc_emu_switch_ctx\n"
        ".globl jkc_emu_fiber_trampoline\n"
        ".hidden jkc_emu_fiber_trampoline\n"
        ".type jkc_emu_fiber_trampoline,@function\n"
        ".p2align 4\n"
        "jkc_emu_fiber_trampoline:\n"
        "    movq %rbx, %rdi\n"
        "    callq *%r12\n"
        "    ud2\n"
        ".size jkc_emu_fiber_trampoline, .-jkc_emu_fiber_trampoline\n"
        ".popsection\n");
#elif !defined(JKC_EMU_UCONTEXT) && defined(__aarch64__)
/* Save x19-x30 and d8-d15 in a 176-byte frame, swap stacks, restore. A new fiber's
 * frame holds x19=arg, x20=entry, x29=0, x30=trampoline. */
__asm__(".pushsection .text\n"
        ".globl jkc_emu_switch_ctx\n"
        ".hidden jkc_emu_switch_ctx\n"
        ".type jkc_emu_switch_ctx,%function\n"
        ".p2align 4\n"
        "jkc_emu_switch_ctx:\n"
        "    sub sp, sp, #176\n"
        "    stp x19, x20, [sp, #0]\n"
        "    stp x21, x22, [sp, #16]\n"
        "    stp x23, x24, [sp, #32]\n"
        "    stp x25, x26, [sp, #48]\n"
        "    stp x27, x28, [sp, #64]\n"
        "    stp x29, x30, [sp, #80]\n"
        "    stp d8, d9, [sp, #96]\n"
        "    stp d10, d11, [sp, #112]\n"
        "    stp d12, d13, [sp, #128]\n"
        "    stp d14, d15, [sp, #144]\n"
        "    mov x2, sp\n"
        "    str x2, [x0]\n"
        "    mov sp, x1\n"
        "    ldp x19, x20, [sp, #0]\n"
        "    ldp x21, x22, [sp, #16]\n"
        "    ldp x23, x24, [sp, #32]\n"
        "    ldp x25, x26, [sp, #48]\n"
        "    ldp x27, x28, [sp, #64]\n"
        "    ldp x29, x30, [sp, #80]\n"
        "    ldp d8, d9, [sp, #96]\n"
        "    ldp d10, d11, [sp, #112]\n"
        "    ldp d12, d13, [sp, #128]\n"
        "    ldp d14, d15, [sp, #144]\n"
        "    add sp, sp, #176\n"
        "    ret\n"
        ".size jkc_emu_switch_ctx, .-jkc_emu_switch_ctx\n"
        ".globl jkc_emu_fiber_trampoline\n"
        ".hidden jkc_emu_fiber_trampoline\n"
        ".type jkc_emu_fiber_trampoline,%function\n"
        ".p2align 4\n"
        "jkc_emu_fiber_trampoline:\n"
        "    mov x0, x19\n"
        "    blr x20\n"
        "    brk #0\n"
        ".size jkc_emu_fiber_trampoline, .-jkc_emu_fiber_trampoline\n"
        ".popsection\n");
#endif

/* The fibers of one host thread (fibers never move between host threads). */
struct Pool {
    std::vector<Fiber *> fibers;
    Fiber host; /* the host thread's own context while a block runs */
    const void *host_stack = nullptr;
    size_t host_stack_size = 0;

    ~Pool() {
        for (Fiber *f : fibers) {
            size_t page = (size_t)sysconf(_SC_PAGESIZE);
#if JKC_EMU_ASAN
            /* A parked fiber's frames leave poisoned shadow behind. */
            ASAN_UNPOISON_MEMORY_REGION(f->stack, f->stack_size);
#endif
            munmap(f->stack - page, f->stack_size + page);
            delete f;
        }
    }
};

thread_local Pool *t_pool;
thread_local bool t_in_launch;

/* ---- the state of the running launch (one at a time: g_launch_mutex) -------------- */

struct WarpSlot {
    uint32_t v[32];                /* shuffles */
    /* mma: each lane stores its fragments straight into place (layout of compat.cuh) */
    uint32_t A[16][8];             /* A, 16 rows of 16 halves (two per word, low first) */
    uint32_t Bt[8][8];             /* B transposed: 8 columns of 16 halves */
    float D[16][8];                /* accumulators in, results out */
    /* ldmatrix: each lane's row address in, each lane's fragment registers out */
    const void *addr[32];
    uint32_t frag[32][4];
};

struct Warp {
    unsigned arrived;
    unsigned gen;
    unsigned char op;
    bool partial;
    WarpSlot slot[2];
};

/* warpgroup ops (wgmma, sm_90a) */
enum : unsigned char { WG_NONE, WG_FENCE, WG_COMMIT, WG_WAIT, WG_MMA };

const char *wg_name(unsigned op) {
    switch (op) {
    case WG_FENCE: return "jkc_wgmma_fence";
    case WG_COMMIT: return "jkc_wgmma_commit";
    case WG_WAIT: return "jkc_wgmma_wait";
    case WG_MMA: return "jkc_wgmma_ss";
    }
    return "?";
}

/* An issued wgmma.mma_async not yet retired by a wait: its operands (the shared memory
 * is read at retirement) and its input accumulators, either snapshotted at issue (din,
 * 128 threads x n/2) or the result of the pending op `from` (an id) it chains on. */
struct WgOp {
    unsigned id, group;
    bool bf16;
    int n;
    uint64_t da, db;
    float *d[128];
    std::vector<float> din;
    unsigned from;
};

struct WarpGroup {
    unsigned arrived;
    unsigned char op;
    bool fenced;          /* a fence since the last wait (or the block's start) */
    unsigned committed;   /* groups committed; the open group's id */
    unsigned next_id;
    std::vector<WgOp> pending; /* issue order */
    /* the op being gathered: the first arrival's arguments, every thread's d */
    int n, arg;
    bool bf16;
    uint64_t da, db;
    float *d[128];
};

struct Sched {
    const jkc_emu::launch_desc *desc = nullptr;
    Pool *pool = nullptr;
    Fiber *cur = nullptr;
    unsigned n = 0;          /* threads per block */
    unsigned done = 0;       /* threads of this block that returned */
    unsigned bar_arrived = 0;
    std::vector<Fiber *> queue; /* ring buffer of ready fibers, capacity n */
    unsigned qhead = 0, qcount = 0;
    std::vector<Warp> warps;
    std::vector<WarpGroup> groups; /* empty when the block is not whole warpgroups */
} S;

std::mutex g_launch_mutex;

[[noreturn]] void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("emu: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    abort();
}

const char *kname() { return S.desc ? S.desc->name : "?"; }

size_t stack_bytes() {
    static size_t bytes = [] {
        size_t kb = 256;
        if (const char *e = getenv("JEPA_EMU_STACK_KB")) {
            long v = atol(e);
            if (v >= 16 && v <= 65536) kb = (size_t)v;
        }
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        return (kb * 1024 + page - 1) / page * page;
    }();
    return bytes;
}

void fiber_main(Fiber *self);

#if defined(JKC_EMU_UCONTEXT)
Fiber *g_starting; /* the fiber makecontext's entry is about to run */
void ucontext_entry() { fiber_main(g_starting); }
#endif

Fiber *new_fiber(unsigned index) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), size = stack_bytes();
    /* Stack colouring: start each fiber's frames at a different offset within a page.
     * Otherwise every fiber's hot frames share the same L1 cache sets, and a barrier over
     * more fibers than the cache has ways misses on every switch. */
    size_t color = (index % 64) * 64;
    void *mem = mmap(nullptr, size + page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) die("cannot map a %zu-byte fiber stack", size + page);
    mprotect(mem, page, PROT_NONE); /* guard: a stack overflow faults instead of corrupting */
    Fiber *f = new Fiber;
    f->stack = (char *)mem + page;
    f->stack_size = size;
#if defined(JKC_EMU_UCONTEXT)
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = size - color;
    f->uc.uc_link = nullptr;
    makecontext(&f->uc, ucontext_entry, 0);
#elif defined(__x86_64__)
    void **sp = (void **)(f->stack + size - color - 56);
    sp[0] = sp[1] = sp[2] = nullptr;                     /* r15 r14 r13 */
    sp[3] = (void *)&fiber_main;                         /* r12: entry */
    sp[4] = f;                                           /* rbx: its argument */
    sp[5] = nullptr;                                     /* rbp */
    sp[6] = (void *)&jkc_emu_fiber_trampoline;           /* ret */
    f->sp = sp;
#else
    void **sp = (void **)(f->stack + size - color - 176);
    memset(sp, 0, 176);
    sp[0] = f;                                           /* x19: argument */
    sp[1] = (void *)&fiber_main;                         /* x20: entry */
    sp[11] = (void *)&jkc_emu_fiber_trampoline;          /* x30 */
    f->sp = sp;
#endif
    return f;
}

Pool *pool() {
    if (!t_pool) {
        t_pool = new Pool;
#if JKC_EMU_ASAN
        pthread_attr_t attr;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            void *addr;
            size_t size;
            pthread_attr_getstack(&attr, &addr, &size);
            t_pool->host_stack = addr;
            t_pool->host_stack_size = size;
            pthread_attr_destroy(&attr);
        }
#endif
        /* Free the fibers when the host thread exits. */
        static thread_local struct Reaper {
            ~Reaper() {
                delete t_pool;
                t_pool = nullptr;
            }
        } reaper;
        (void)reaper;
    }
    return t_pool;
}

inline void raw_switch(Fiber *from, Fiber *to) {
#if JKC_EMU_ASAN
    const void *bottom = to->stack;
    size_t size = to->stack_size;
    if (to == &S.pool->host) {
        bottom = S.pool->host_stack;
        size = S.pool->host_stack_size;
    }
    __sanitizer_start_switch_fiber(&from->asan_fake, bottom, size);
#endif
#if defined(JKC_EMU_UCONTEXT)
    g_starting = to;
    swapcontext(&from->uc, &to->uc);
#else
    jkc_emu_switch_ctx(&from->sp, to->sp);
#endif
#if JKC_EMU_ASAN
    __sanitizer_finish_switch_fiber(from->asan_fake, nullptr, nullptr);
#endif
}

/* Resume `to` (a fiber, or the host) from `from`. */
inline void switch_to(Fiber *from, Fiber *to) {
    S.cur = to;
    threadIdx = to->tid;
    raw_switch(from, to);
}

inline void push_ready(Fiber *f) {
    unsigned i = S.qhead + S.qcount;
    if (i >= S.n) i -= S.n;
    S.queue[i] = f;
    S.qcount++;
}

inline Fiber *pop_ready() {
    if (!S.qcount) return nullptr;
    Fiber *f = S.queue[S.qhead];
    if (++S.qhead == S.n) S.qhead = 0;
    S.qcount--;
    return f;
}

[[noreturn]] void deadlock() {
    unsigned at_bar = 0, at_warp = 0, done = 0;
    const Fiber *first_bar = nullptr, *first_warp = nullptr, *first_done = nullptr;
    for (unsigned i = 0; i < S.n; i++) {
        const Fiber *f = S.pool->fibers[i];
        switch (f->state) {
        case AT_BLOCK_BARRIER: at_bar++, first_bar = first_bar ? first_bar : f; break;
        case AT_WARP_OP: at_warp++, first_warp = first_warp ? first_warp : f; break;
        case DONE: done++, first_done = first_done ? first_done : f; break;
        default: break;
        }
    }
    /* One example thread per state, and the warps stuck in a collective. */
    char detail[640] = "";
    size_t len = 0;
    const struct {
        const Fiber *f;
        const char *what;
    } ex[] = {{first_bar, "waits at __syncthreads"}, {first_warp, "waits at a warp op"},
              {first_done, "returned"}};
    for (const auto &e : ex)
        if (e.f)
            len += (size_t)snprintf(detail + len, sizeof detail - len, "; thread (%u,%u,%u) %s",
                                    e.f->tid.x, e.f->tid.y, e.f->tid.z, e.what);
    for (unsigned w = 0; w < S.warps.size() && len + 80 < sizeof detail; w++)
        if (S.warps[w].arrived)
            len += (size_t)snprintf(detail + len, sizeof detail - len,
                                    "; warp %u: %u/32 lanes in %s", w, S.warps[w].arrived,
                                    op_name(S.warps[w].op));
    die("deadlock in kernel %s block (%u,%u,%u): of %u threads, %u wait at __syncthreads, "
        "%u at warp ops, %u returned (a barrier that not every thread of the block, or lane "
        "of the warp, reaches)%s",
        kname(), blockIdx.x, blockIdx.y, blockIdx.z, S.n, at_bar, at_warp, done, detail);
}

/* Park the running fiber (its state already says why) and run the next ready one. */
inline void park(Fiber *self) {
    Fiber *next = pop_ready();
    if (!next) deadlock();
    switch_to(self, next);
}

void fiber_main(Fiber *self) {
#if JKC_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
    for (;;) {
        S.desc->body(S.desc->ctx);
        /* Returned: hand over to the next ready thread, or back to the host when the
         * block is over. Resumed from here when a later block needs this fiber. */
        if (!self->copies.empty())
            die("kernel %s block (%u,%u,%u) thread (%u,%u,%u): returned with %zu cp.async "
                "copies pending (no jkc_cp_async_wait retired them)", kname(), blockIdx.x,
                blockIdx.y, blockIdx.z, self->tid.x, self->tid.y, self->tid.z,
                self->copies.size());
        if (!S.groups.empty() && !S.groups[self->warp / 4].pending.empty())
            die("kernel %s block (%u,%u,%u) thread (%u,%u,%u): returned with %zu wgmma ops "
                "pending (no jkc_wgmma_wait retired them)", kname(), blockIdx.x, blockIdx.y,
                blockIdx.z, self->tid.x, self->tid.y, self->tid.z,
                S.groups[self->warp / 4].pending.size());
        self->state = DONE;
        S.done++;
        Fiber *next = pop_ready();
        if (next) switch_to(self, next);
        else if (S.done == S.n) switch_to(self, &S.pool->host);
        else deadlock();
    }
}

inline Fiber *current(const char *what) {
    Fiber *f = S.cur;
    if (!f || !t_in_launch || f == &S.pool->host) die("%s called outside a kernel", what);
    return f;
}

Warp *warp_of(Fiber *f, unsigned op) {
    Warp *w = &S.warps[f->warp];
    if (w->partial)
        die("kernel %s: %s in a partial warp (blockDim (%u,%u,%u) = %u threads is not a "
            "multiple of 32)", kname(), op_name(op), blockDim.x, blockDim.y, blockDim.z, S.n);
    return w;
}

void check_mask(unsigned mask, unsigned op) {
    if (mask != 0xffffffffu)
        die("kernel %s: %s with mask 0x%08x (only full-warp masks are supported)", kname(),
            op_name(op), mask);
}

/* The warp's whole mma, done once by the lane that completes the barrier: D += A.B with
 * exact f32 products added to each accumulator in k order. Four rows at a time so the
 * additions form 8 independent vector chains instead of one long dependent one. */
template <bool BF16> inline float cvt16(uint32_t h) {
    return BF16 ? jkc_bf16_to_f32((uint16_t)h) : jkc_f16_to_f32((uint16_t)h);
}

template <bool BF16> void warp_mma(WarpSlot &s) {
    float A[16][16], B[16][8];
    for (unsigned r = 0; r < 16; r++)
        for (unsigned j = 0; j < 8; j++) {
            A[r][2 * j] = cvt16<BF16>(s.A[r][j] & 0xffffu);
            A[r][2 * j + 1] = cvt16<BF16>(s.A[r][j] >> 16);
        }
    for (unsigned c = 0; c < 8; c++)
        for (unsigned j = 0; j < 8; j++) {
            B[2 * j][c] = cvt16<BF16>(s.Bt[c][j] & 0xffffu);
            B[2 * j + 1][c] = cvt16<BF16>(s.Bt[c][j] >> 16);
        }
    for (unsigned r0 = 0; r0 < 16; r0 += 4) {
        float acc[4][8];
        memcpy(acc, s.D[r0], sizeof acc);
        for (unsigned k = 0; k < 16; k++)
            for (unsigned i = 0; i < 4; i++)
                for (unsigned c = 0; c < 8; c++) acc[i][c] += A[r0 + i][k] * B[k][c];
        memcpy(s.D[r0], acc, sizeof acc);
    }
}

/* The warp's whole ldmatrix, done once by the lane that completes the barrier (so no
 * lane's later stores can reach a row before every lane has read it). */
void warp_ldmatrix(WarpSlot &s, unsigned warp, unsigned op) {
    const unsigned nmat = 1u << ((op - OP_LDSM) / 2), trans = (op - OP_LDSM) & 1;
    for (unsigned l = 0; l < 8 * nmat; l++)
        if ((uintptr_t)s.addr[l] % 16)
            die("kernel %s block (%u,%u,%u) warp %u: %s: lane %u's row address %p is not "
                "16-byte aligned", kname(), blockIdx.x, blockIdx.y, blockIdx.z, warp,
                op_name(op), l, s.addr[l]);
    for (unsigned i = 0; i < nmat; i++) {
        uint16_t M[8][8];
        for (unsigned r = 0; r < 8; r++) memcpy(M[r], s.addr[8 * i + r], 16);
        for (unsigned l = 0; l < 32; l++) {
            unsigned g = l / 4, t = l % 4;
            s.frag[l][i] = trans ? (uint32_t)M[2 * t][g] | (uint32_t)M[2 * t + 1][g] << 16
                                 : (uint32_t)M[g][2 * t] | (uint32_t)M[g][2 * t + 1] << 16;
        }
    }
}

/* The warp barrier: park until all 32 lanes have arrived at the same kind of op. */
void warp_sync(Fiber *self, Warp *w, unsigned op) {
    if (w->arrived == 0) {
        w->op = (unsigned char)op;
    } else if (w->op != op) {
        die("kernel %s block (%u,%u,%u) warp %u: lane %u is in %s while %u lane(s) are in %s "
            "(divergent warp ops)", kname(), blockIdx.x, blockIdx.y, blockIdx.z, self->warp,
            self->lane, op_name(op), w->arrived, op_name(w->op));
    }
    if (++w->arrived < 32) {
        self->state = AT_WARP_OP;
        park(self);
        return;
    }
    w->arrived = 0;
    if (op == OP_MMA_F16) warp_mma<false>(w->slot[w->gen & 1]);
    else if (op == OP_MMA_BF16) warp_mma<true>(w->slot[w->gen & 1]);
    else if (op >= OP_LDSM) warp_ldmatrix(w->slot[w->gen & 1], self->warp, op);
    w->gen++;
    Fiber **lanes = &S.pool->fibers[self->warp * 32];
    for (unsigned l = 0; l < 32; l++) {
        if (lanes[l] != self) {
            lanes[l]->state = READY;
            push_ready(lanes[l]);
        }
    }
}

uint32_t shuffle(unsigned mask, uint32_t v, int arg, int width, unsigned op) {
    Fiber *self = current(op_name(op));
    check_mask(mask, op);
    if (width < 1 || width > 32 || (width & (width - 1)))
        die("kernel %s: %s with width %d (must be a power of 2 up to 32)", kname(), op_name(op),
            width);
    Warp *w = warp_of(self, op);
    WarpSlot &s = w->slot[w->gen & 1];
    s.v[self->lane] = v;
    warp_sync(self, w, op);
    unsigned lane = self->lane, base = lane & ~(unsigned)(width - 1), src;
    if (op == OP_SHFL_XOR) {
        src = lane ^ (unsigned)arg;
        if (src >= base + (unsigned)width) src = lane; /* beyond the group: own value */
    } else {
        src = base + ((unsigned)arg & (unsigned)(width - 1));
    }
    return s.v[src];
}

void mma(float d[4], const uint32_t a[4], const uint32_t b[2], unsigned op) {
    Fiber *self = current(op_name(op));
    Warp *w = warp_of(self, op);
    WarpSlot &s = w->slot[w->gen & 1];
    unsigned g = self->lane >> 2, t = self->lane & 3;
    s.A[g][t] = a[0];          /* A[g][2t..2t+1] */
    s.A[g + 8][t] = a[1];      /* A[g+8][2t..2t+1] */
    s.A[g][t + 4] = a[2];      /* A[g][2t+8..2t+9] */
    s.A[g + 8][t + 4] = a[3];  /* A[g+8][2t+8..2t+9] */
    s.Bt[g][t] = b[0];         /* B[2t..2t+1][g] */
    s.Bt[g][t + 4] = b[1];     /* B[2t+8..2t+9][g] */
    s.D[g][2 * t] = d[0];
    s.D[g][2 * t + 1] = d[1];
    s.D[g + 8][2 * t] = d[2];
    s.D[g + 8][2 * t + 1] = d[3];
    warp_sync(self, w, op);
    d[0] = s.D[g][2 * t];
    d[1] = s.D[g][2 * t + 1];
    d[2] = s.D[g + 8][2 * t];
    d[3] = s.D[g + 8][2 * t + 1];
}

void ldmatrix(uint32_t *r, const void *row, unsigned op) {
    Fiber *self = current(op_name(op));
    Warp *w = warp_of(self, op);
    WarpSlot &s = w->slot[w->gen & 1];
    s.addr[self->lane] = row;
    warp_sync(self, w, op);
    const unsigned nmat = 1u << ((op - OP_LDSM) / 2);
    for (unsigned i = 0; i < nmat; i++) r[i] = s.frag[self->lane][i];
}

void cp_async(void *smem, const void *gmem, int src_bytes, unsigned n, const char *what) {
    Fiber *self = current(what);
    if ((uintptr_t)smem % n || (uintptr_t)gmem % n)
        die("kernel %s block (%u,%u,%u) thread (%u,%u,%u): %s(%p, %p): addresses must be "
            "%u-byte aligned", kname(), blockIdx.x, blockIdx.y, blockIdx.z, self->tid.x,
            self->tid.y, self->tid.z, what, smem, gmem, n);
    if (src_bytes < 0 || (unsigned)src_bytes > n)
        die("kernel %s block (%u,%u,%u) thread (%u,%u,%u): %s: src_bytes %d is outside "
            "0..%u", kname(), blockIdx.x, blockIdx.y, blockIdx.z, self->tid.x, self->tid.y,
            self->tid.z, what, src_bytes, n);
    AsyncCopy c;
    c.dst = static_cast<unsigned char *>(smem);
    c.size = n;
    c.group = self->committed;
    memset(c.data, 0, sizeof c.data);
    if (src_bytes) memcpy(c.data, gmem, (size_t)src_bytes);
    self->copies.push_back(c);
}

/* ---- warpgroup MMA ------------------------------------------------------------------ */

[[noreturn]] void wg_die(Fiber *self, const char *what, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    die("kernel %s block (%u,%u,%u) thread (%u,%u,%u): %s: %s", kname(), blockIdx.x, blockIdx.y,
        blockIdx.z, self->tid.x, self->tid.y, self->tid.z, what, msg);
}

/* A wgmma descriptor, decoded (byte values). */
struct Desc {
    size_t start, lbo, sbo;
    unsigned base, swizzle;
};

Desc decode(uint64_t v) {
    return Desc{(size_t)(v & 0x3fffu) << 4, (size_t)((v >> 16) & 0x3fffu) << 4,
                (size_t)((v >> 32) & 0x3fffu) << 4, (unsigned)((v >> 49) & 7u),
                (unsigned)(v >> 62)};
}

/* Swizzle width in bytes (0: none). */
unsigned swz_bytes(unsigned mode) { return mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0; }

/* The shared-memory offset of element (r, k) of a K-major operand (emu.h). */
size_t desc_elem(const Desc &d, unsigned r, unsigned k) {
    const size_t c = k / 8, e = k % 8;
    const unsigned w = swz_bytes(d.swizzle);
    if (!w) return d.start + (r / 8) * d.sbo + (r % 8) * 16 + c * d.lbo + 2 * e;
    const size_t a = d.start + (r / 8) * d.sbo + (r % 8) * w + 16 * c + 2 * e;
    return a ^ (((a >> 7) & (w / 16 - 1)) << 4);
}

/* Abort unless every element of the rows x 16 operand lies in dynamic shared memory and
 * the descriptor is of a form the model knows. */
void check_desc(Fiber *self, const char *which, uint64_t v, unsigned rows) {
    const Desc d = decode(v);
    const size_t size = S.desc->smem;
    if (d.base)
        wg_die(self, "jkc_wgmma_ss", "descriptor %s has base offset %u (not modelled: start "
               "the matrix on its swizzle pattern)", which, d.base);
    const unsigned w = swz_bytes(d.swizzle);
    if (w && ((d.start >> 7) & (w / 16 - 1)))
        wg_die(self, "jkc_wgmma_ss", "descriptor %s: start 0x%zx is not aligned to its %u-byte "
               "swizzle pattern (address bits 7.. must be 0)", which, d.start, w);
    for (unsigned r = 0; r < rows; r++)
        for (unsigned k = 0; k < 16; k += 8) {
            const size_t a = desc_elem(d, r, k);
            if (a + 16 > size)
                wg_die(self, "jkc_wgmma_ss", "descriptor %s: row %u chunk %u at shared offset "
                       "%zu is outside the %zu bytes of dynamic shared memory", which, r, k / 8,
                       a, size);
        }
}

/* Retire one op: D (its input) += A . B^T read from shared memory now, written to every
 * thread's d; an op chained on this one takes the result as its input. */
void wg_retire(WarpGroup &wg, size_t idx) {
    WgOp &op = wg.pending[idx];
    const int n = op.n, h = n / 2;
    const Desc da = decode(op.da), db = decode(op.db);
    const unsigned char *sm = jkc_emu::dyn_smem;
    std::vector<float> A(64 * 16), B((size_t)n * 16), D((size_t)64 * n);
    auto rd = [&](const Desc &d, unsigned r, unsigned k) {
        uint16_t v;
        memcpy(&v, sm + desc_elem(d, r, k), 2);
        return op.bf16 ? jkc_bf16_to_f32(v) : jkc_f16_to_f32(v);
    };
    for (unsigned r = 0; r < 64; r++)
        for (unsigned k = 0; k < 16; k++) A[r * 16 + k] = rd(da, r, k);
    for (unsigned r = 0; r < (unsigned)n; r++)
        for (unsigned k = 0; k < 16; k++) B[r * 16 + k] = rd(db, r, k);
    /* thread t (warp w, lane l), register i <-> D[16 w + l / 4 + 8 ((i >> 1) & 1)]
     *                                          [8 (i >> 2) + 2 (l % 4) + (i & 1)] */
    auto at = [&](unsigned t, unsigned i) {
        const unsigned w = t / 32, l = t % 32;
        return (size_t)(16 * w + l / 4 + 8 * ((i >> 1) & 1)) * n + 8 * (i >> 2) + 2 * (l % 4) +
               (i & 1);
    };
    for (unsigned t = 0; t < 128; t++)
        for (unsigned i = 0; i < (unsigned)h; i++) D[at(t, i)] = op.din[(size_t)t * h + i];
    for (unsigned m = 0; m < 64; m++)
        for (unsigned c = 0; c < (unsigned)n; c++) {
            float acc = D[(size_t)m * n + c];
            for (unsigned k = 0; k < 16; k++) acc += A[m * 16 + k] * B[c * 16 + k];
            D[(size_t)m * n + c] = acc;
        }
    std::vector<float> out((size_t)128 * h);
    for (unsigned t = 0; t < 128; t++)
        for (unsigned i = 0; i < (unsigned)h; i++) {
            out[(size_t)t * h + i] = D[at(t, i)];
            op.d[t][i] = D[at(t, i)];
        }
    for (size_t j = idx + 1; j < wg.pending.size(); j++)
        if (wg.pending[j].from == op.id) {
            wg.pending[j].din = out;
            wg.pending[j].from = 0;
        }
}

/* The warpgroup's op, done by the last of its 128 threads to arrive. */
void wg_action(WarpGroup &wg, Fiber *self) {
    switch (wg.op) {
    case WG_FENCE: wg.fenced = true; break;
    case WG_COMMIT: wg.committed++; break;
    case WG_WAIT: {
        const unsigned n = (unsigned)wg.arg;
        const unsigned keep_from = n < wg.committed ? wg.committed - n : 0;
        size_t i = 0;
        while (i < wg.pending.size() && wg.pending[i].group < keep_from) i++;
        for (size_t j = 0; j < i; j++) wg_retire(wg, j);
        wg.pending.erase(wg.pending.begin(), wg.pending.begin() + (ptrdiff_t)i);
        wg.fenced = false;
        break;
    }
    case WG_MMA: {
        if (!wg.fenced)
            wg_die(self, "jkc_wgmma_ss", "no jkc_wgmma_fence since the last wait (or the start)");
        for (unsigned i = 0; i < S.n; i++)
            if (S.pool->fibers[i]->async_stale) {
                const Fiber *f = S.pool->fibers[i];
                wg_die(self, "jkc_wgmma_ss", "thread (%u,%u,%u) has cp.async data retired since "
                       "its last jkc_fence_proxy_async (wgmma reads shared memory through the "
                       "async proxy)", f->tid.x, f->tid.y, f->tid.z);
            }
        check_desc(self, "A", wg.da, 64);
        check_desc(self, "B", wg.db, (unsigned)wg.n);
        WgOp op;
        op.id = wg.next_id++;
        op.group = wg.committed;
        op.bf16 = wg.bf16;
        op.n = wg.n;
        op.da = wg.da;
        op.db = wg.db;
        memcpy(op.d, wg.d, sizeof op.d);
        op.from = 0;
        const size_t h = (size_t)wg.n / 2;
        for (size_t j = wg.pending.size(); j-- > 0;) {
            const WgOp &prev = wg.pending[j];
            if (prev.d[0] != op.d[0]) continue;
            for (unsigned t = 0; t < 128; t++)
                if (prev.d[t] != op.d[t] || prev.n != op.n)
                    wg_die(self, "jkc_wgmma_ss", "thread %u's accumulators overlap a pending "
                           "op's differently", t);
            op.from = prev.id;
            break;
        }
        if (!op.from) {
            op.din.resize(128 * h);
            for (unsigned t = 0; t < 128; t++) memcpy(&op.din[t * h], op.d[t], h * 4);
        }
        /* in flight: the registers are undefined until the wait */
        for (unsigned t = 0; t < 128; t++)
            for (size_t i = 0; i < h; i++) op.d[t][i] = jkc_emu_float(0x7fc00000u);
        wg.pending.push_back(std::move(op));
        break;
    }
    }
}

/* A warpgroup collective: post this thread's arguments, park until the 128 threads have
 * arrived at the same op with the same arguments; the last one does it. */
void wg_sync(unsigned op, float *d, int n, int arg, bool bf16, uint64_t da, uint64_t db) {
    Fiber *self = current(wg_name(op));
    if (S.groups.empty())
        die("kernel %s: %s with blockDim (%u,%u,%u) = %u threads, not whole warpgroups (a "
            "multiple of 128: 4 whole warps)", kname(), wg_name(op), blockDim.x, blockDim.y,
            blockDim.z, S.n);
    WarpGroup &wg = S.groups[self->warp / 4];
    const unsigned t = (self->warp % 4) * 32 + self->lane;
    if (wg.arrived == 0) {
        wg.op = (unsigned char)op;
        wg.n = n, wg.arg = arg, wg.bf16 = bf16, wg.da = da, wg.db = db;
    } else if (wg.op != op) {
        wg_die(self, wg_name(op), "warpgroup %u: %u thread(s) are in %s (divergent warpgroup "
               "ops: the 4 warps must run them in lockstep)", self->warp / 4, wg.arrived,
               wg_name(wg.op));
    } else if (wg.n != n || wg.arg != arg || wg.bf16 != bf16 || wg.da != da || wg.db != db) {
        wg_die(self, wg_name(op), "warpgroup %u: arguments differ from its other threads' "
               "(descriptors, shape and counts must be uniform)", self->warp / 4);
    }
    wg.d[t] = d;
    if (++wg.arrived < 128) {
        self->state = AT_WARP_OP;
        park(self);
        return;
    }
    wg.arrived = 0;
    wg_action(wg, self);
    Fiber **f = &S.pool->fibers[(self->warp / 4) * 128];
    for (unsigned i = 0; i < 128; i++)
        if (f[i] != self) {
            f[i]->state = READY;
            push_ready(f[i]);
        }
}

/* ---- runtime state ----------------------------------------------------------------- */

thread_local cudaError_t t_last_error = cudaSuccess;

inline cudaError_t fail(cudaError_t e) {
    t_last_error = e;
    return e;
}

bool no_device() {
    const char *e = getenv("JEPA_EMU_NO_DEVICE");
    return e && *e && strcmp(e, "0") != 0;
}

std::mutex g_mem_mutex;
std::map<uintptr_t, size_t> g_allocs;   /* cudaMalloc blocks: start -> size */
std::map<uintptr_t, int> g_max_dyn_smem; /* per kernel, cudaFuncSetAttribute */

/* The emulated device's memory: the host's. */
size_t total_mem() {
    static size_t bytes = [] {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : (size_t)1 << 34;
    }();
    return bytes;
}

const size_t kDefaultDynSmem = 48 * 1024;
const size_t kOptinSmem = 227 * 1024;

/* Whether [p, p+n) lies inside one cudaMalloc block. */
bool is_device_range(const void *p, size_t n) {
    if (n == 0) return true;
    uintptr_t a = (uintptr_t)p;
    std::lock_guard<std::mutex> lock(g_mem_mutex);
    auto it = g_allocs.upper_bound(a);
    if (it == g_allocs.begin()) return false;
    --it;
    return a - it->first <= it->second && n <= it->second - (a - it->first);
}

} // namespace

/* ---- barriers, shuffles, mma (the kernel-side API) -------------------------------- */

void __syncthreads() {
    Fiber *self = current("__syncthreads");
    if (++S.bar_arrived < S.n) {
        self->state = AT_BLOCK_BARRIER;
        park(self);
        return;
    }
    /* Last arrival: every other thread of the block is parked here; requeue them. */
    S.bar_arrived = 0;
    Fiber **f = S.pool->fibers.data();
    for (unsigned i = 0; i < S.n; i++) {
        if (f[i] != self) {
            f[i]->state = READY;
            push_ready(f[i]);
        }
    }
}

void __syncwarp(unsigned mask) {
    Fiber *self = current("__syncwarp");
    check_mask(mask, OP_SYNCWARP);
    warp_sync(self, warp_of(self, OP_SYNCWARP), OP_SYNCWARP);
}

float __shfl_xor_sync(unsigned mask, float v, int lane_mask, int width) {
    return jkc_emu_float(shuffle(mask, jkc_emu_bits(v), lane_mask, width, OP_SHFL_XOR));
}
int __shfl_xor_sync(unsigned mask, int v, int lane_mask, int width) {
    return (int)shuffle(mask, (uint32_t)v, lane_mask, width, OP_SHFL_XOR);
}
unsigned __shfl_xor_sync(unsigned mask, unsigned v, int lane_mask, int width) {
    return shuffle(mask, v, lane_mask, width, OP_SHFL_XOR);
}
float __shfl_sync(unsigned mask, float v, int src_lane, int width) {
    return jkc_emu_float(shuffle(mask, jkc_emu_bits(v), src_lane, width, OP_SHFL_IDX));
}
int __shfl_sync(unsigned mask, int v, int src_lane, int width) {
    return (int)shuffle(mask, (uint32_t)v, src_lane, width, OP_SHFL_IDX);
}
unsigned __shfl_sync(unsigned mask, unsigned v, int src_lane, int width) {
    return shuffle(mask, v, src_lane, width, OP_SHFL_IDX);
}

void jkc_mma_f16(float d[4], const uint32_t a[4], const uint32_t b[2]) { mma(d, a, b, OP_MMA_F16); }
void jkc_mma_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    mma(d, a, b, OP_MMA_BF16);
}

void jkc_ldmatrix_x1(uint32_t r[1], const void *row) { ldmatrix(r, row, OP_LDSM_X1); }
void jkc_ldmatrix_x2(uint32_t r[2], const void *row) { ldmatrix(r, row, OP_LDSM_X2); }
void jkc_ldmatrix_x4(uint32_t r[4], const void *row) { ldmatrix(r, row, OP_LDSM_X4); }
void jkc_ldmatrix_x1_trans(uint32_t r[1], const void *row) { ldmatrix(r, row, OP_LDSM_X1_T); }
void jkc_ldmatrix_x2_trans(uint32_t r[2], const void *row) { ldmatrix(r, row, OP_LDSM_X2_T); }
void jkc_ldmatrix_x4_trans(uint32_t r[4], const void *row) { ldmatrix(r, row, OP_LDSM_X4_T); }

/* ---- asynchronous copies ------------------------------------------------------------ */

void jkc_cp_async16(void *smem, const void *gmem, int src_bytes) {
    cp_async(smem, gmem, src_bytes, 16, "jkc_cp_async16");
}
void jkc_cp_async8(void *smem, const void *gmem, int src_bytes) {
    cp_async(smem, gmem, src_bytes, 8, "jkc_cp_async8");
}
void jkc_cp_async4(void *smem, const void *gmem, int src_bytes) {
    cp_async(smem, gmem, src_bytes, 4, "jkc_cp_async4");
}

void jkc_cp_async_commit() {
    Fiber *self = current("jkc_cp_async_commit");
    /* An empty group is still a group (PTX), so wait counts stay those of the hardware. */
    self->committed++;
}

void jkc_cp_async_wait_group(int n) {
    Fiber *self = current("jkc_cp_async_wait");
    /* Retire, in issue order, the copies of the open group and of every committed group
     * older than the n newest: group ids below committed - n. */
    const unsigned keep_from = (unsigned)n < self->committed ? self->committed - (unsigned)n : 0;
    size_t kept = 0;
    for (size_t i = 0; i < self->copies.size(); i++) {
        AsyncCopy &c = self->copies[i];
        if (c.group < keep_from || c.group == self->committed) {
            memcpy(c.dst, c.data, c.size);
            self->async_stale = true;
        } else {
            self->copies[kept++] = c;
        }
    }
    self->copies.resize(kept);
}

/* ---- warpgroup MMA (the kernel-side API) ------------------------------------------- */

/* Offset of p in the launch's dynamic shared memory, or abort naming `what`. */
static size_t smem_offset(const void *smem, const char *what) {
    Fiber *self = current(what);
    const unsigned char *p = static_cast<const unsigned char *>(smem);
    const unsigned char *base = jkc_emu::dyn_smem;
    if (!base || p < base || p >= base + S.desc->smem)
        wg_die(self, what, "%p is not in the launch's dynamic shared memory", smem);
    return (size_t)(p - base);
}

uint32_t jkc_smem_addr(const void *p) { return (uint32_t)smem_offset(p, "jkc_smem_addr"); }

uint64_t jkc_wgmma_desc(const void *smem, uint32_t lbo, uint32_t sbo, int swizzle) {
    const size_t off = smem_offset(smem, "jkc_wgmma_desc");
    Fiber *self = S.cur;
    if (off % 16 || lbo % 16 || sbo % 16 || lbo >= (1u << 18) || sbo >= (1u << 18) ||
        swizzle < 0 || swizzle > 3)
        wg_die(self, "jkc_wgmma_desc", "start offset %zu, LBO %u, SBO %u must be multiples of "
               "16 below 2^18, swizzle %d one of 0..3", off, lbo, sbo, swizzle);
    return (uint64_t)(off >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32 |
           (uint64_t)swizzle << 62;
}

void jkc_wgmma_fence() { wg_sync(WG_FENCE, nullptr, 0, 0, false, 0, 0); }
void jkc_wgmma_commit() { wg_sync(WG_COMMIT, nullptr, 0, 0, false, 0, 0); }
void jkc_wgmma_wait_group(int n) { wg_sync(WG_WAIT, nullptr, 0, n, false, 0, 0); }
void jkc_wgmma_ss(float *d, int n, uint64_t da, uint64_t db, bool bf16) {
    wg_sync(WG_MMA, d, n, 0, bf16, da, db);
}

void jkc_fence_proxy_async() { current("jkc_fence_proxy_async")->async_stale = false; }

/* ---- launches ---------------------------------------------------------------------- */

namespace jkc_emu {

cudaError_t func_set_attribute(uintptr_t key, cudaFuncAttribute attr, int value) {
    if (no_device()) return fail(cudaErrorNoDevice);
    if (!key) return fail(cudaErrorInvalidDeviceFunction);
    if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return cudaSuccess;
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
        (size_t)value > kOptinSmem)
        return fail(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(g_mem_mutex);
    g_max_dyn_smem[key] = value;
    return cudaSuccess;
}

void launch(const launch_desc &d) {
    if (no_device()) {
        fail(cudaErrorNoDevice);
        return;
    }
    const dim3 g = d.grid, b = d.block;
    uint64_t nthreads = (uint64_t)b.x * b.y * b.z;
    if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z || b.x > 1024 || b.y > 1024 || b.z > 64 ||
        nthreads > 1024 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) {
        fail(cudaErrorInvalidConfiguration);
        return;
    }
    size_t max_smem = kDefaultDynSmem;
    {
        std::lock_guard<std::mutex> lock(g_mem_mutex);
        auto it = g_max_dyn_smem.find(d.key);
        if (it != g_max_dyn_smem.end()) max_smem = (size_t)it->second;
    }
    if (d.smem > max_smem) {
        fail(cudaErrorInvalidValue);
        return;
    }
    if (t_in_launch) die("kernel %s launched from inside kernel %s", d.name, kname());

    Pool *p = pool();
    std::lock_guard<std::mutex> lock(g_launch_mutex);
    t_in_launch = true;
    const unsigned n = (unsigned)nthreads;
    while (p->fibers.size() < n) p->fibers.push_back(new_fiber((unsigned)p->fibers.size()));
    for (unsigned i = 0; i < n; i++) {
        Fiber *f = p->fibers[i];
        f->tid = uint3{i % b.x, i / b.x % b.y, i / (b.x * b.y)};
        f->warp = i / 32;
        f->lane = i % 32;
    }
    S.desc = &d;
    S.pool = p;
    S.n = n;
    S.queue.assign(n, nullptr);
    S.warps.resize((n + 31) / 32);
    for (unsigned w = 0; w < S.warps.size(); w++) S.warps[w].partial = (w + 1) * 32 > n;
    S.groups.clear();
    if (n % 128 == 0) S.groups.resize(n / 128);
    blockDim = b;
    gridDim = g;
    /* 1024-byte aligned: shared address 0 (wgmma's descriptors, jkc_wgmma_desc) is its
     * start, and the swizzle modes XOR address bits up to bit 9. */
    void *smem_mem = nullptr;
    if (d.smem && posix_memalign(&smem_mem, 1024, d.smem) != 0) smem_mem = nullptr;
    unsigned char *smem = (unsigned char *)smem_mem;
    if (d.smem && !smem)
        die("kernel %s: cannot allocate %zu bytes of shared memory", d.name, d.smem);
    jkc_emu::dyn_smem = smem;

    for (unsigned z = 0; z < g.z; z++)
        for (unsigned y = 0; y < g.y; y++)
            for (unsigned x = 0; x < g.x; x++) {
                blockIdx = uint3{x, y, z};
                if (smem) memset(smem, 0xff, d.smem);
                S.done = 0;
                S.bar_arrived = 0;
                for (Warp &w : S.warps) {
                    w.arrived = 0;
                    w.gen = 0;
                    w.op = OP_NONE;
                }
                for (WarpGroup &wg : S.groups) {
                    wg.arrived = 0;
                    wg.op = WG_NONE;
                    wg.fenced = false;
                    wg.committed = 0;
                    wg.next_id = 1;
                    wg.pending.clear();
                }
                S.qhead = 0;
                S.qcount = 0;
                for (unsigned i = 0; i < n; i++) {
                    p->fibers[i]->state = READY;
                    p->fibers[i]->copies.clear();
                    p->fibers[i]->committed = 0;
                    p->fibers[i]->async_stale = false;
                    push_ready(p->fibers[i]);
                }
                switch_to(&p->host, pop_ready());
            }

    free(smem);
    jkc_emu::dyn_smem = nullptr;
    S.cur = nullptr;
    S.desc = nullptr;
    t_in_launch = false;
}

} // namespace jkc_emu

/* ---- the runtime subset ------------------------------------------------------------ */

struct CUstream_st {
    unsigned flags;
};
struct CUevent_st {
    std::chrono::steady_clock::time_point t;
    bool recorded;
};

cudaError_t cudaGetDeviceCount(int *count) {
    if (!count) return fail(cudaErrorInvalidValue);
    if (no_device()) {
        *count = 0;
        return fail(cudaErrorNoDevice);
    }
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    if (no_device()) return fail(cudaErrorNoDevice);
    return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice);
}

cudaError_t cudaGetDevice(int *device) {
    if (!device) return fail(cudaErrorInvalidValue);
    if (no_device()) return fail(cudaErrorNoDevice);
    *device = 0;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
    if (!prop) return fail(cudaErrorInvalidValue);
    if (no_device()) return fail(cudaErrorNoDevice);
    if (device != 0) return fail(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "jepa.c SIMT emulator");
    prop->totalGlobalMem = total_mem();
    prop->sharedMemPerBlock = kDefaultDynSmem;
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = 1024;
    prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 0x7fffffff;
    prop->maxGridSize[1] = 65535;
    prop->maxGridSize[2] = 65535;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 132;
    prop->sharedMemPerMultiprocessor = 228 * 1024;
    prop->sharedMemPerBlockOptin = kOptinSmem;
    prop->l2CacheSize = 50 * 1024 * 1024;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() { return no_device() ? fail(cudaErrorNoDevice) : cudaSuccess; }

cudaError_t cudaGetLastError() {
    cudaError_t e = t_last_error;
    t_last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError() { return t_last_error; }

const char *cudaGetErrorName(cudaError_t err) {
    switch (err) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    case cudaErrorUnknown: return "cudaErrorUnknown";
    }
    return "unrecognized error code";
}

const char *cudaGetErrorString(cudaError_t err) {
    switch (err) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorUnknown: return "unknown error";
    }
    return "unrecognized error code";
}

cudaError_t cudaMalloc(void **ptr, size_t size) {
    if (!ptr) return fail(cudaErrorInvalidValue);
    *ptr = nullptr;
    if (no_device()) return fail(cudaErrorNoDevice);
    if (size == 0) return cudaSuccess;
    /* More than the device has fails like on a GPU (and before ASan's allocator, which
     * would abort on absurd sizes rather than return NULL). */
    if (size > total_mem()) return fail(cudaErrorMemoryAllocation);
    void *p = nullptr;
    /* posix_memalign: the exact size, so ASan's redzone starts right after the block. */
    if (posix_memalign(&p, 256, size) != 0 || !p) return fail(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> lock(g_mem_mutex);
    g_allocs[(uintptr_t)p] = size;
    *ptr = p;
    return cudaSuccess;
}

cudaError_t cudaFree(void *ptr) {
    if (!ptr) return cudaSuccess;
    {
        std::lock_guard<std::mutex> lock(g_mem_mutex);
        auto it = g_allocs.find((uintptr_t)ptr);
        if (it == g_allocs.end()) {
            fprintf(stderr, "emu: cudaFree(%p): not a cudaMalloc block\n", ptr);
            return fail(cudaErrorInvalidValue);
        }
        g_allocs.erase(it);
    }
    free(ptr);
    return cudaSuccess;
}

static cudaError_t check_copy(const char *what, void *dst, const void *src, size_t n,
                              cudaMemcpyKind kind) {
    if ((unsigned)kind > cudaMemcpyDefault) return fail(cudaErrorInvalidMemcpyDirection);
    if (no_device()) return fail(cudaErrorNoDevice);
    if (n && (!dst || !src)) return fail(cudaErrorInvalidValue);
    bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (dst_dev && !is_device_range(dst, n)) {
        fprintf(stderr, "emu: %s: destination [%p, +%zu) is not inside a cudaMalloc block\n",
                what, dst, n);
        return fail(cudaErrorInvalidValue);
    }
    if (src_dev && !is_device_range(src, n)) {
        fprintf(stderr, "emu: %s: source [%p, +%zu) is not inside a cudaMalloc block\n", what,
                src, n);
        return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
    cudaError_t e = check_copy("cudaMemcpy", dst, src, n, kind);
    if (e != cudaSuccess) return e;
    if (n && dst != src) memmove(dst, src, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                            cudaStream_t stream) {
    (void)stream;
    cudaError_t e = check_copy("cudaMemcpyAsync", dst, src, n, kind);
    if (e != cudaSuccess) return e;
    if (n && dst != src) memmove(dst, src, n);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t n, cudaStream_t stream) {
    (void)stream;
    if (no_device()) return fail(cudaErrorNoDevice);
    if (!is_device_range(dst, n)) {
        fprintf(stderr, "emu: cudaMemsetAsync: [%p, +%zu) is not inside a cudaMalloc block\n",
                dst, n);
        return fail(cudaErrorInvalidValue);
    }
    if (n) memset(dst, value, n);
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags) {
    if (!stream || flags > cudaStreamNonBlocking) return fail(cudaErrorInvalidValue);
    if (no_device()) return fail(cudaErrorNoDevice);
    *stream = new (std::nothrow) CUstream_st{flags};
    return *stream ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    if (!stream) return fail(cudaErrorInvalidResourceHandle);
    delete stream;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    (void)stream;
    return no_device() ? fail(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) {
    if (!event) return fail(cudaErrorInvalidValue);
    if (no_device()) return fail(cudaErrorNoDevice);
    *event = new (std::nothrow) CUevent_st{std::chrono::steady_clock::time_point(), false};
    return *event ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    (void)stream;
    if (!event) return fail(cudaErrorInvalidResourceHandle);
    event->t = std::chrono::steady_clock::now();
    event->recorded = true;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    return event ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
    if (!ms) return fail(cudaErrorInvalidValue);
    if (!start || !end || !start->recorded || !end->recorded)
        return fail(cudaErrorInvalidResourceHandle);
    *ms = std::chrono::duration<float, std::milli>(end->t - start->t).count();
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    if (!event) return fail(cudaErrorInvalidResourceHandle);
    delete event;
    return cudaSuccess;
}
