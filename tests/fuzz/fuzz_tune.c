/*
 * fuzz_tune.c — libFuzzer target for the tuning-file parser (kernels/tuning.c,
 * jk_tune_parse), for this CPU's identity and a fixed one. An accepted file must yield
 * sets inside the limits for every kind it names (jk_gemm_tuning_valid,
 * jk_attn_tuning_valid) and leave the others as they were; a refusal must carry a reason
 * and leave the output untouched; what it accepted, written again by jk_tune_format, must
 * read back the same. The corpus seeds a record per kernel build (the precision tiers'
 * matmul, attention) and version-1 files. Replayed over tests/fuzz/corpus_tune by
 * fuzz_tune_replay (tests/fuzz/meson.build).
 */
#include <stdint.h>
#include <string.h>

#include "kernels/tuning.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const uint8_t *data, size_t size, const struct jr_cpu_id *id) {
    struct jk_tuning base, out;
    memset(&base, 0x5a, sizeof base);
    memset(&out, 0xa5, sizeof out);
    const struct jk_tuning untouched = out;
    unsigned gs = 0, as = 0;
    char why[128] = "";
    if (jk_tune_parse((const char *)data, size, id, &base, &out, &gs, &as, why, sizeof why)) {
        if (!why[0] || memcmp(&out, &untouched, sizeof out)) __builtin_trap();
        return;
    }
    for (int k = 0; k < JK_NGK; k++) {
        if (gs >> k & 1 ? !jk_gemm_tuning_valid(&out.gemm[k], (enum jk_gemm_kind)k)
                        : memcmp(&out.gemm[k], &base.gemm[k], sizeof out.gemm[k]))
            __builtin_trap();
    }
    for (int k = 0; k < JK_NAK; k++) {
        if (as >> k & 1 ? !jk_attn_tuning_valid(&out.attn[k])
                        : memcmp(&out.attn[k], &base.attn[k], sizeof out.attn[k]))
            __builtin_trap();
    }
    /* what was accepted, written again (one record per build it named, the precision
     * tiers' and attention's among them), reads back the same */
    static char text[JK_TUNE_FILE_MAX];
    struct jk_tuning again;
    unsigned gs2 = 0, as2 = 0;
    const size_t n = jk_tune_format(text, sizeof text, id, &out, gs, as);
    if (!n || jk_tune_parse(text, n, id, &base, &again, &gs2, &as2, why, sizeof why) || gs2 != gs ||
        as2 != as || memcmp(&again, &out, sizeof again))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const struct jr_cpu_id fixed = {"AuthenticAMD", 25, 17, 1, "avx512"};
    one(data, size, jr_cpu_id());
    one(data, size, &fixed);
    return 0;
}
