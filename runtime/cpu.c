/* cpu.c — run-time CPU feature detection; see cpu.h. */
#include <pthread.h>
#include "runtime/cpu.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#include <errno.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

static unsigned long long xgetbv0(void) {
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

/* Ask Linux for the AMX tile data state (XFEATURE_XTILEDATA, component 18), which it
 * grants per process on request since 5.16; a tile instruction before the grant faults.
 * A refusal (an older kernel, a seccomp filter, a signal stack too small for the state)
 * gets a one-line notice: the bf16 tier then takes the next kernels. */
static int amx_permitted(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0) return 1;
    fprintf(stderr, "jepa: the CPU has AMX but the OS refused the tile state (%s); the bf16 tier "
                    "runs without it\n", strerror(errno));
#endif
    return 0;
}

static unsigned detect(void) {
    unsigned a, b, c, d, flags = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1, avx = (c >> 28) & 1;
    if (!osxsave || !avx) return 0;
    unsigned long long xcr0 = xgetbv0();
    int ymm_ok = (xcr0 & 0x6) == 0x6;
    int zmm_ok = (xcr0 & 0xe6) == 0xe6;
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    int avx2 = (b >> 5) & 1;
    int f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
    int vnni = (c >> 11) & 1;
    /* AMX-TILE (EDX bit 24), AMX-BF16 (bit 22); XTILECFG and XTILEDATA (XCR0 bits 17, 18) */
    const int amx = ((d >> 24) & 1) && ((d >> 22) & 1) && (xcr0 & 0x60000) == 0x60000;
    if (ymm_ok && avx2 && fma && f16c) flags |= JEPA_CPU_AVX2;
    if ((flags & JEPA_CPU_AVX2) && zmm_ok && f && dq && bw && vl) {
        flags |= JEPA_CPU_AVX512;
        if (vnni) flags |= JEPA_CPU_AVX512_VNNI;
        __cpuid_count(7, 1, a, b, c, d);
        if ((a >> 5) & 1) flags |= JEPA_CPU_AVX512_BF16;
        if (amx && amx_permitted()) flags |= JEPA_CPU_AMX_BF16;
    }
    return flags;
}
#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP_FPHP
#define HWCAP_FPHP (1 << 9)
#endif
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1 << 10)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1 << 14)
#endif
static unsigned detect(void) {
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    unsigned flags = JEPA_CPU_NEON;
    if (hw & HWCAP_ASIMDDP) flags |= JEPA_CPU_DOTPROD;
    if ((hw & HWCAP_FPHP) && (hw & HWCAP_ASIMDHP)) flags |= JEPA_CPU_FP16;
    if (hw2 & HWCAP2_BF16) flags |= JEPA_CPU_BF16;
    return flags;
}
#else
static unsigned detect(void) { return 0; }
#endif

/* The features, detected once per process (pthread_once orders the write before every
 * read), then constant. */
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static unsigned cpu_flags;
static void cpu_detect_once(void) { cpu_flags = detect(); }

unsigned jr_cpu_detect(void) {
    pthread_once(&cpu_once, cpu_detect_once);
    return cpu_flags;
}

#if defined(__x86_64__) || defined(_M_X64)
static void identify(struct jr_cpu_id *id) {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return;
    memcpy(id->vendor, &b, 4), memcpy(id->vendor + 4, &d, 4), memcpy(id->vendor + 8, &c, 4);
    id->vendor[12] = '\0';
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    const int fam = (int)(a >> 8) & 15, ext_fam = (int)(a >> 20) & 255;
    const int mod = (int)(a >> 4) & 15, ext_mod = (int)(a >> 16) & 15;
    id->family = fam == 15 ? fam + ext_fam : fam;
    id->model = fam == 6 || fam == 15 ? ext_mod << 4 | mod : mod;
    id->stepping = (int)a & 15;
}
#elif defined(__aarch64__)
#ifndef HWCAP_CPUID
#define HWCAP_CPUID (1 << 11)
#endif
static void identify(struct jr_cpu_id *id) {
    unsigned long midr = 0;
    /* MIDR_EL1 is trapped and emulated by Linux for user space where it says so */
    if (getauxval(AT_HWCAP) & HWCAP_CPUID) __asm__ volatile("mrs %0, midr_el1" : "=r"(midr));
    snprintf(id->vendor, sizeof id->vendor, "arm-0x%02lx", (midr >> 24) & 255);
    id->family = 8;
    id->model = (int)((midr >> 4) & 0xfff);
    id->stepping = (int)(midr & 15);
}
#else
static void identify(struct jr_cpu_id *id) { (void)id; }
#endif

static pthread_once_t id_once = PTHREAD_ONCE_INIT;
static struct jr_cpu_id cpu_ident;
static void id_detect_once(void) {
    snprintf(cpu_ident.vendor, sizeof cpu_ident.vendor, "unknown");
    identify(&cpu_ident);
    const unsigned f = jr_cpu_detect();
    const char *isa = f & JEPA_CPU_AVX512 ? "avx512" : f & JEPA_CPU_AVX2 ? "avx2"
                      : f & JEPA_CPU_NEON ? "neon" : "scalar";
    snprintf(cpu_ident.isa, sizeof cpu_ident.isa, "%s", isa);
}

const struct jr_cpu_id *jr_cpu_id(void) {
    pthread_once(&id_once, id_detect_once);
    return &cpu_ident;
}

long jr_cpu_cap(unsigned flags, const char *name) {
    if (!name || !*name || !strcmp(name, "auto")) return flags;
    if (!strcmp(name, "scalar") || !strcmp(name, "c")) return 0;
    if (!strcmp(name, "avx2")) return flags & JEPA_CPU_AVX2;
    if (!strcmp(name, "avx512")) return flags & (JEPA_CPU_AVX2 | JEPA_CPU_AVX512 |
                                                 JEPA_CPU_AVX512_VNNI | JEPA_CPU_AVX512_BF16);
    if (!strcmp(name, "neon"))
        return flags & (JEPA_CPU_NEON | JEPA_CPU_DOTPROD | JEPA_CPU_FP16 | JEPA_CPU_BF16);
    return -1;
}

const char *jr_cpu_describe(unsigned flags, char *buf, int size) {
    static const struct { unsigned f; const char *n; } names[] = {
        {JEPA_CPU_AVX2, "avx2"}, {JEPA_CPU_AVX512, "avx512"},
        {JEPA_CPU_AVX512_VNNI, "avx512_vnni"}, {JEPA_CPU_AVX512_BF16, "avx512_bf16"},
        {JEPA_CPU_AMX_BF16, "amx_bf16"},
        {JEPA_CPU_NEON, "neon"}, {JEPA_CPU_DOTPROD, "dotprod"}, {JEPA_CPU_FP16, "fp16"},
        {JEPA_CPU_BF16, "bf16"},
    };
    int n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (flags & names[i].f && n < size)
            n += snprintf(buf + n, (size_t)(size - n), "%s%s", n ? " " : "", names[i].n);
    if (!n) snprintf(buf, (size_t)size, "none");
    return buf;
}
