/*
 * tuning.h — the run-time blocking of the CPU kernels: cache blocks, the next-panel
 * prefetch and the thread split of the matmul (gemm_tmpl.h), the key tile and the K/V copy
 * threshold of attention (attn_tmpl.h), as data, one struct per kernel family and per
 * build of it ("kind": the avx512 matmul, the avx2 one, ...). The register tile (MR x NR),
 * which fixes the register allocation, stays a compile-time constant of each ISA file.
 *
 * Where the values come from, in order (decided once per process, at the first jk_init,
 * then constant, so every workspace planned with gemm_ws / attn_ws fits every later call):
 *   1. a tuning file written by `jepa tune` (cli/cmd_tune.c): JEPA_TUNE_FILE, else
 *      $XDG_CACHE_HOME/jepa/tune-<cpu-id>.txt (~/.cache/jepa/... without XDG_CACHE_HOME),
 *      used when its CPU identity is this CPU's; JEPA_TUNE=off skips it. A file that is
 *      stale (another version), foreign (another CPU), truncated, corrupted (checksum) or
 *      hostile (values outside the limits below, junk, not a regular file, too big) is
 *      ignored with one warning line on stderr;
 *   2. the built-in table entry for this CPU (vendor, family, model; kernels/tuning.c,
 *      reasoning in docs/notes/kernel-tuning.md#tuning-table);
 *   3. the generic fallback: each ISA file's compiled defaults (GT_KC, GT_MC, GT_NC, ...).
 * Every value is checked against the compile-time limits below before it is used; a set
 * that fails is never used (the kernels fall back to their defaults). The K block (kc)
 * fixes the order of each dot product's sum, so it changes the bits; the others do not.
 */
#ifndef JEPA_KERNELS_TUNING_H
#define JEPA_KERNELS_TUNING_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/cpu.h"

/* The matmul builds with a blocking of their own (one per gemm_tmpl.h instantiation). */
enum jk_gemm_kind {
    JK_GK_AVX2, JK_GK_AVX512, JK_GK_AVX512_BF16, JK_GK_AMX_BF16, JK_GK_AMX_HIGH,
    JK_GK_NEON, JK_GK_NEON_BF16, JK_NGK
};
/* The attention builds (attn_tmpl.h instantiations). */
enum jk_attn_kind { JK_AK_AVX2, JK_AK_AVX512, JK_AK_NEON, JK_NAK };

/* How a new kernel build gets its own record (a precision tier's matmul, an attention
 * build with other operands, as the bf16 tier's may be):
 *   1. a value in enum jk_gemm_kind / jk_attn_kind above (before JK_NGK / JK_NAK) and its
 *      name in tuning.c (gemm_kind_names / jk_attn_kind_names): the file's record name;
 *   2. the build defines GT_KIND (gemm_tmpl.h) or ATTN_KIND (attn_tmpl.h) to it, which
 *      exports jk_gemm_kind_<isa> (register tile and defaults) or jk_attn_kind_<sfx> (the
 *      slot function), and tuning.c lists that symbol beside the others of its
 *      architecture (jk_gemm_kind, attn_kinds);
 *   3. the rest follows: the kernels read their record (jk_tune.gemm[GT_KIND] /
 *      jk_tune.attn[ATTN_KIND]) or the call's set (jk_gemm_args.tune / jk_attn_args.tune);
 *      `jepa tune` finds the builds of every tier's table (jk_init_precision; the matmul
 *      by k.gemm_isa, the attention by jk_attn_kind_of(k.attn)), checks each candidate
 *      against the tier's reference and writes a record per build; `jepa cpu` prints every
 *      record; tests/tune runs every candidate of every kind this machine has. One thing
 *      more where the build's arithmetic is not the f32 one: `jepa tune` checks attention
 *      against jk_attn_ref with an f32 bound (attn_reference in cli/cmd_tune.c), so an
 *      attention build on bf16 operands adds its tier's reference and bound there, as
 *      gemm_reference has one per matmul tier, and test_attn_tune.c likewise.
 * A tuning file written before a kind existed simply lacks its record (the kind keeps the
 * table's or the generic values); one naming a kind this build lacks is refused whole. */

/* Compile-time limits: the largest blocks any source may set (a workspace is sized from
 * the values in force, which never exceed these). */
#define JK_TUNE_KC_MAX 1024
#define JK_TUNE_MC_MAX 1024
#define JK_TUNE_NC_MAX 4096
#define JK_TUNE_SPLIT_MAX 64
#define JK_TUNE_BK_MIN 256
#define JK_TUNE_BK_MAX 16384
#define JK_TUNE_PACK_MAX (1 << 20)

struct jk_gemm_tuning {
    int kc;      /* K block: a multiple of 8, 8 .. JK_TUNE_KC_MAX */
    int mc;      /* rows of X per packed block: a multiple of MR, MR .. JK_TUNE_MC_MAX */
    int nc;      /* columns (W rows) per packed panel: a multiple of NR, NR .. JK_TUNE_NC_MAX */
    int ahead;   /* 1: fetch the next W panel while this one is used (gt_ahead), 0: not */
    int colp;    /* thread split: split the columns while each part keeps >= colp NR-panels */
    int rowt;    /* with pre-packed W: split the rows when each thread gets >= rowt tiles */
};

struct jk_attn_tuning {
    int bk;      /* key tile: keys x head_dim ~ bk floats (JK_TUNE_BK_MIN .. _MAX) */
    int pack;    /* key count from which K and V are copied per head (64 .. JK_TUNE_PACK_MAX) */
};

/* Whether t is inside the limits (the test of jk_attn_tuning_valid, inline for the kernels'
 * per-call check). */
static inline int jk_attn_tuning_ok(const struct jk_attn_tuning *t) {
    return t->bk >= JK_TUNE_BK_MIN && t->bk <= JK_TUNE_BK_MAX && t->pack >= 64 &&
           t->pack <= JK_TUNE_PACK_MAX;
}

struct jk_tuning {
    struct jk_gemm_tuning gemm[JK_NGK];
    struct jk_attn_tuning attn[JK_NAK];
};

/* The compile-time facts of one kind: its name ("avx512"), register tile and defaults (the
 * generic fallback). Each build of gemm_tmpl.h defines its own (jk_gemm_kind_<isa>). */
struct jk_gemm_kind_info {
    const char *name;
    int mr, nr;                  /* 0 where this build has no such kernel (another arch) */
    struct jk_gemm_tuning def;
};
const struct jk_gemm_kind_info *jk_gemm_kind(enum jk_gemm_kind k);
/* The kind of the name (as jk_gemm_kind(k)->name), -1 if none. */
int jk_gemm_kind_by_name(const char *name);
extern const char *const jk_attn_kind_names[JK_NAK];
/* What an attention build exports (attn_tmpl.h, jk_attn_kind_<sfx>): its kind and slot. */
struct jk_attn_args;
struct jk_attn_kind_info {
    enum jk_attn_kind kind;
    void (*fn)(const struct jk_attn_args *a);
};
/* The kind of the attention slot fn (a table's k->attn), -1 for one with no record (the
 * reference, the GPU's). */
int jk_attn_kind_of(void (*fn)(const struct jk_attn_args *a));
/* Each attention build's defaults (attn_tmpl.h): key tile 4096 floats, copy from 1536 keys. */
#define JK_ATTN_DEFAULT_TUNING {4096, 1536}

/* The values in force (jk_tune_init fills them; read-only after). */
extern struct jk_tuning jk_tune;

/* Decide the values in force (once per process; later calls return at once). jk_init
 * calls it. */
void jk_tune_init(void);
/* Where the values in force came from: the file's path, "built-in <entry>" or "generic";
 * per kind. */
const char *jk_tune_gemm_source(enum jk_gemm_kind k);
const char *jk_tune_attn_source(enum jk_attn_kind k);

/* Whether t is inside the limits for kind k (NULL: no). */
int jk_gemm_tuning_valid(const struct jk_gemm_tuning *t, enum jk_gemm_kind k);
int jk_attn_tuning_valid(const struct jk_attn_tuning *t);

/* The workspace of one thread of a gemm at blocking t (valid) for rows of up to K
 * weights: a W panel (kc x nc) and an X block (mc x kc); the small-M path uses the same
 * slice for 8 or more W rows converted to f32 (>= 8 K). Sized with min(K rounded up to 8,
 * kc), which bounds the K step of every K' <= K (the step itself is not monotonic: K = 320
 * takes one block of 320, K = 588 two of 296 at kc 384), so that gemm_ws(nt, K) covers every
 * matmul with rows of up to K weights, as kernels.h promises. */
static inline size_t jk_gemm_thread_bytes(const struct jk_gemm_tuning *t, int K) {
    const size_t k8 = (size_t)(((K > 0 ? K : 1) + 7) & ~7);
    const size_t kc = k8 < (size_t)t->kc ? k8 : (size_t)t->kc;
    const size_t blis = kc * (size_t)t->nc + (size_t)t->mc * kc, small = 8 * (size_t)(K > 0 ? K : 1);
    return ((blis > small ? blis : small) * sizeof(float) + 63) & ~(size_t)63;
}
/* The workspace bytes of a gemm call at blocking t, nthreads threads, rows of up to K
 * weights: what gemm_ws returns at the blocking in force; + 64: ws need not be aligned. */
static inline size_t jk_gemm_ws_tuned(const struct jk_gemm_tuning *t, int nthreads, int K) {
    return (size_t)(nthreads > 0 ? nthreads : 1) * jk_gemm_thread_bytes(t, K) + 64;
}

/* The workspace bytes of an attention call at a set of its own (jk_attn_args.tune): at most
 * ws_in_force (the table's attn_ws at the same nthreads, n_head, head_dim, nkv) plus the K
 * and V copy, which another copy threshold may add (the per-thread part does not depend on
 * the set). */
static inline size_t jk_attn_ws_tuned(size_t ws_in_force, int head_dim, int nkv) {
    return ws_in_force + 2 * (size_t)(nkv > 0 ? nkv : 0) * (size_t)(head_dim > 0 ? head_dim : 0) *
                             sizeof(float);
}

/* The candidates `jepa tune` may choose among for kind k: every combination of the axes
 * below, in a fixed order, index 0 the kind's defaults (index 0 .. jk_gemm_candidates(k,
 * NULL, 0) - 1). Writes up to `max` of them to out; returns how many there are.
 * tests/tune/test_gemm_tune.c runs every one of them against the reference. */
int jk_gemm_candidates(enum jk_gemm_kind k, struct jk_gemm_tuning *out, int max);
/* The same for attention (every kind: key tile 4096, 2048, 8192, 1024 floats x copy
 * threshold 1536, 512, 1024, 2048, 3072 keys; index 0 the defaults);
 * tests/tune/test_attn_tune.c runs every one. */
int jk_attn_candidates(struct jk_attn_tuning *out, int max);

/* ---- the CPU's identity and the tuning file ------------------------------------------ */

/* The CPU's identity: struct jr_cpu_id, jr_cpu_id() (runtime/cpu.h). */
/* "authenticamd-f25-m17-s1-avx512": the file name's part (lower case, [a-z0-9-]). */
void jk_cpu_id_string(const struct jr_cpu_id *id, char *buf, size_t size);
/* The built-in table entry's name for id ("zen4"), or NULL (generic). */
const char *jk_tune_table_entry(const struct jr_cpu_id *id, struct jk_tuning *out);

/* Entry i of the built-in table (its kind and gemm set, where 0 <= i < the count returned):
 * the tests run every one. */
int jk_tune_table_gemm(int i, enum jk_gemm_kind *kind, struct jk_gemm_tuning *t);

/* Version 2: a record per kernel build, the precision tiers' matmul and the attention
 * builds chosen by timing too (version 1 had the exact tier's matmul only). */
#define JK_TUNE_VERSION 2
#define JK_TUNE_FILE_MAX 16384   /* bytes: a larger file is not a tuning file */

/* The default path of the tuning file for id ($XDG_CACHE_HOME/jepa/tune-<id>.txt or
 * $HOME/.cache/jepa/...): 0, or -1 when neither variable is set or it does not fit. */
int jk_tune_default_path(const struct jr_cpu_id *id, char *buf, size_t size);

/* Parse a tuning file's bytes for the CPU id, over `base` (the values the file does not
 * name stay): 0 and *out filled, or -1 with the reason in why (nothing written to out).
 * Never reads past n bytes; needs no terminating NUL. */
int jk_tune_parse(const char *buf, size_t n, const struct jr_cpu_id *id,
                  const struct jk_tuning *base, struct jk_tuning *out, unsigned *gemm_set,
                  unsigned *attn_set, char *why, size_t why_size);
/* The file's text for id with the gemm kinds in gemm_mask (bit k) and the attention kinds
 * in attn_mask at t, checksum included; the length, or 0 if it does not fit size. */
size_t jk_tune_format(char *buf, size_t size, const struct jr_cpu_id *id, const struct jk_tuning *t,
                      unsigned gemm_mask, unsigned attn_mask);
/* Read path (a regular file of at most JK_TUNE_FILE_MAX bytes, opened without blocking)
 * into buf: the length, or -1 with the reason in why. */
long jk_tune_read(const char *path, char *buf, size_t size, char *why, size_t why_size);

#endif
