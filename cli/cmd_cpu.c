/*
 * cmd_cpu.c — `jepa cpu`: the CPU features found, the cap applied (JEPA_CPU or --cpu),
 * which implementation fills every kernel slot, so a fallback is never silent, the
 * matmul kernels each precision tier gets here (and the one in force: JEPA_PRECISION or
 * --precision), the blocking in force for each kernel build and where it came from
 * (kernels/tuning.h: a tuning file, the built-in table's entry, or the generic defaults),
 * and the CUDA devices this build can use (or why there are none).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "kernels/device.h"
#include "kernels/kernels.h"
#include "kernels/tuning.h"
#include "runtime/cpu.h"

int cmd_cpu(int argc, char **argv) {
    const char *cap = getenv("JEPA_CPU"), *tier = getenv("JEPA_PRECISION");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cpu") && i + 1 < argc) cap = argv[++i];
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc) tier = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: jepa cpu [--cpu scalar|avx2|avx512|neon] [--precision exact|high|bf16]\n");
            return 0;
        } else return cli_usage_error("cpu", "unknown option '%s'", argv[i]);
    }
    unsigned found = jr_cpu_detect();
    long capped = jr_cpu_cap(found, cap);
    if (capped < 0) return cli_usage_error("cpu", "unknown cpu level '%s'", cap);
    const int prec = jk_precision_parse(tier);
    if (prec < 0) return cli_usage_error("cpu", "unknown precision '%s' (exact, high, bf16)", tier);
    char buf[256];
    printf("cpu features: %s\n", jr_cpu_describe(found, buf, sizeof buf));
    printf("cap:          %s -> %s\n", cap ? cap : "auto", jr_cpu_describe((unsigned)capped, buf, sizeof buf));

    /* Tables at every level up to the cap: a slot's ISA is the first level that set it. */
    static const char *const levels[] = {"scalar", "avx2", "avx512", "neon"};
    struct jk_kernels tab[4], use;
    int nl = 0;
    for (int i = 0; i < 4; i++) {
        long f = jr_cpu_cap((unsigned)capped, levels[i]);
        if (i > 0 && f == 0) continue;
        jk_init(&tab[nl], (unsigned)f);
        tab[nl].isa = levels[i];
        nl++;
    }
    jk_init(&use, (unsigned)capped);
    printf("kernels:\n");
    for (int s = 0; s < jk_nslots; s++) {
        const void *fn = jk_slot_fn(&use, &jk_slots[s]);
        const char *isa = "?";
        for (int i = 0; i < nl; i++)
            if (jk_slot_fn(&tab[i], &jk_slots[s]) == fn) { isa = tab[i].isa; break; }
        printf("  %-10s %s\n", jk_slots[s].name, isa);
    }
    /* the tiers: each one's matmul kernels here (a tier without kernels runs exact's) */
    printf("precision tiers (matmul kernels, attention kernels):\n");
    for (int p = 0; p < JK_NPREC; p++) {
        struct jk_kernels t;
        jk_init_precision(&t, (unsigned)capped, (enum jk_precision)p);
        const int own = strcmp(t.gemm_isa, use.isa) != 0 || strcmp(t.attn_isa, use.isa) != 0;
        printf("  %-10s %s, attention %s%s%s\n", jk_precision_name((enum jk_precision)p), t.gemm_isa, t.attn_isa,
               p > 0 && !own ? " (as exact: no kernels of this tier here)" : "", p == prec ? "  <- in force" : "");
    }
    /* the blocking in force, per kernel build of this architecture */
    char cid[96];
    jk_cpu_id_string(jr_cpu_id(), cid, sizeof cid);
    const char *entry = jk_tune_table_entry(jr_cpu_id(), NULL);
    printf("tuning (cpu id %s; built-in entry %s; JEPA_TUNE=%s):\n", cid, entry ? entry : "none",
           getenv("JEPA_TUNE") ? getenv("JEPA_TUNE") : "on");
    for (int g = 0; g < JK_NGK; g++) {
        const struct jk_gemm_kind_info *ki = jk_gemm_kind((enum jk_gemm_kind)g);
        const struct jk_gemm_tuning *t = &jk_tune.gemm[g];
        if (ki->mr <= 0) continue;
        printf("  gemm %-11s kc=%d mc=%d nc=%d ahead=%d colp=%d rowt=%d  (%s)\n", ki->name, t->kc,
               t->mc, t->nc, t->ahead, t->colp, t->rowt, jk_tune_gemm_source((enum jk_gemm_kind)g));
    }
    for (int a = 0; a < JK_NAK; a++) {
#if defined(__aarch64__)
        if (a != JK_AK_NEON) continue;
#else
        if (a == JK_AK_NEON) continue;
#endif
        printf("  attn %-11s bk=%d pack=%d  (%s)\n", jk_attn_kind_names[a], jk_tune.attn[a].bk,
               jk_tune.attn[a].pack, jk_tune_attn_source((enum jk_attn_kind)a));
    }
    /* GPUs (-g N / jepa_ctx_params.device "cuda:N"); opening one names it */
    int ng = jk_device_cuda_count();
    if (ng == 0) {
        char err[256];
        struct jk_device *d = jk_device_open_cuda(0, err, sizeof err);
        if (d) d->close(d);
        printf("cuda devices: none: %s\n", d ? "the device count is 0" : err);
    } else {
        printf("cuda devices: %d\n", ng);
        for (int i = 0; i < ng; i++) {
            char err[256];
            struct jk_device *d = jk_device_open_cuda(i, err, sizeof err);
            printf("  -g %d       %s\n", i, d ? d->name : err);
            if (d) d->close(d);
        }
    }
    return 0;
}
