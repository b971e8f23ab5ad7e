/*
 * kernels.h — the contract between the forward functions and the compute kernels.
 *
 * One table of function pointers (struct jk_kernels), filled once per context:
 * first with the plain C reference of every slot (kernels/ref/, the definition of
 * "correct"), then upgraded up the ISA ladder the CPU allows (kernels/x86/,
 * kernels/arm/). The forward code calls k->gemm[dtype](...) with no per-call
 * branching. tests/checkasm runs every slot of every ISA level against the
 * reference; bench/ times them.
 *
 * Conventions for every slot
 *  - Activations are f32 in memory everywhere. Weights may be f32, f16, bf16, q8_0 or one
 *    of ggml's 4-6 bit block formats (q4_0 .. q6_K below).
 *    CPU tables: weights are converted to f32 inside the kernel and every product is
 *    f32 x f32 — activations are never rounded to a 16-bit type (that is how ggml
 *    collapses tokens on f16 files). CUDA table (kernels/cuda/, docs/cuda.md): the
 *    tensor-core matmul rounds the f32 activations to the weight's type (f16 / bf16) as
 *    a tile is stored to shared memory, and f32 weights run as split bf16 (three
 *    products); attention rounds K and V tiles to f16; accumulators, softmax
 *    statistics and every stored activation stay f32.
 *  - Matrices are row-major with an explicit row stride (in elements for f32 data,
 *    in bytes for weights), so a kernel can read q/k/v straight out of a fused
 *    [N, 3D] qkv buffer and write into a column slice of a wider output.
 *  - Threads: a slot runs its own OpenMP team of `nthreads` (<= 0 means 1). Every
 *    output element is computed by one thread with a fixed reduction order, so the
 *    result has the same bits for any thread count.
 *  - Workspace: slots that need scratch take `ws`, at least the bytes the matching
 *    *_ws() function of the same table returns. The caller plans it in its arena;
 *    kernels never allocate.
 */
#ifndef JEPA_KERNELS_H
#define JEPA_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Weight data types the matmul slots take: enum jk_dtype (JK_F32, JK_F16, ..., JK_NDTYPES),
 * generated with everything else about them from the one table, runtime/weight_types.h. */
#include "runtime/weight_types.h"

/* "f32", "q8_0", ... ("?" for a value out of range). */
const char *jk_dtype_name(enum jk_dtype t);
/* Weights per block: 1 for the float types, 32 or 256 for the block formats. */
int jk_dtype_block(enum jk_dtype t);
/* Whether t is one of ggml's block formats (q8_0 and the 4-6 bit ones: block > 1). */
static inline int jk_dtype_is_block(enum jk_dtype t) { return jk_dtype_block(t) > 1; }
/* The weight type of ggml type id gguf_type (enum gguf_type), -1 if it is none of them;
 * and the other way (t a valid type). */
int jk_dtype_of_gguf(uint32_t gguf_type);
uint32_t jk_dtype_gguf(enum jk_dtype t);
/* The type with the printed name `name` (ASCII case ignored), -1 if none. */
int jk_dtype_by_name(const char *name);
/* The names of every type in table order, ", " between them and `last` before the last
 * ("f32, f16, ..., q5_1 or q4_K" with last " or "), into buf (truncated to size). */
void jk_dtype_list(char *buf, size_t size, const char *last);
/* Bytes of a weight row of K elements (0 if K does not fit the block size). */
size_t jk_row_bytes(enum jk_dtype t, int K);

/* Epilogue of a matmul, applied to acc = sum_k X[m,k] W[n,k] + bias[n]. */
enum jk_epilogue {
    JK_EPI_STORE = 0,      /* Y = acc             */
    JK_EPI_GELU = 1,       /* Y = gelu_erf(acc)   */
    JK_EPI_ADD = 2,        /* Y += acc (residual) */
};

/* Y[m, n] = epi(sum_k X[m, k] * W[n, k] + bias[n]), 0 <= m < M, 0 <= n < N.
 *   x: f32 [M, K], row stride ldx floats     w: N rows of K weights, row stride ldw bytes
 *   y: f32 [M, N], row stride ldy floats     bias: [N] f32 or NULL
 * M, N, K >= 1. K is a multiple of the weight type's block (jk_dtype_block: 32 for
 * q8_0 and q4_0 .. q5_1, 256 for the K-quants). x and y must not overlap. */
struct jk_gemm_tuning;   /* kernels/tuning.h */
struct jk_attn_tuning;
struct jk_gemm_args {
    float *y; size_t ldy;
    const float *x; size_t ldx;
    const void *w; size_t ldw;
    const float *bias;
    int M, N, K;
    enum jk_epilogue epi;
    int nthreads;
    void *ws;
    /* W already in the gemm's f32 panels (gemm_prepack of the same table), or NULL: the
     * gemm packs W itself. The same bits either way; only the packing is skipped. */
    const float *w_packed;
    /* The blocking of this call (kernels/tuning.h; `jepa tune` and the tests), ws sized by
     * jk_gemm_ws_tuned for it; NULL (and with w_packed, always): the blocking in force.
     * A set outside the limits is never used (the one in force is). */
    const struct jk_gemm_tuning *tune;
    /* 16-bit operand copies, read and written only by a table whose x16 flag is set (the
     * GPU's pipelined kernels, kernels/cuda/); every other gemm ignores them. x16: X already
     * rounded (nearest even) to the weight's type (f16 or bf16 weights; f16 for the block
     * formats, whose codes the GPU multiplies in f16), row stride
     * ldx16 elements, or NULL (the gemm reads x). y16: NULL, or where the gemm also writes
     * its result (after the epilogue) rounded to y16_type (JK_F16 or JK_BF16), row stride
     * ldy16 elements: the next matmul's x16. y is written in f32 either way. */
    const uint16_t *x16; size_t ldx16;
    uint16_t *y16; size_t ldy16;
    enum jk_dtype y16_type;
    /* f32 weights split in bf16 once (a table with the x16 flag only; else ignored), or
     * NULL: row n holds the K hi parts bf16(w) at wsplit + n * ldwsplit and the K lo parts
     * bf16(w - hi) at wsplit + n * ldwsplit + ldwsplit / 2 (ldwsplit even, >= 2K elements),
     * both rounded to nearest even: the split the f32 gemm would make of W itself. */
    const uint16_t *wsplit; size_t ldwsplit;
};
typedef void jk_gemm_fn(const struct jk_gemm_args *a);

/* Weights packed once (`--prepack`, jepa_ctx_set_prepack): W [N, K] of type t (rows
 * ldw bytes apart) into the f32 panels that the table's gemm reads, dst holding
 * gemm_prepack_floats(N, K) floats, 64-byte aligned. The layout is the ISA's own (its
 * K block and panel width): the panels of a table are for that table's gemm only. */
typedef size_t jk_gemm_prepack_floats_fn(int N, int K);
typedef void jk_gemm_prepack_fn(enum jk_dtype t, float *dst, const void *w, size_t ldw, int N, int K);

/* Fused attention, never materialising the [nq, nkv] score matrix:
 *   for each head h, query i: o_i = sum_j softmax_j(scale * q_i . k_j) v_j
 * over the keys j visible to i. q, k, v, o: row r of head h at base + r*ld + h*head_dim.
 * Mask rule: if q_pos and k_pos are both non-NULL, key j is visible to query i iff
 * q_pos[i] >= k_pos[j] (block-causal by frame: pos = frame id, CLS query INT32_MAX and
 * CLS key INT32_MAX; causal: pos = index). Otherwise every key is visible. A query
 * with no visible key gets a zero output row. Softmax statistics and the P.V
 * accumulation are f32 (online softmax). */
struct jk_attn_args {
    float *o; size_t ldo;
    const float *q; size_t ldq;
    const float *k; size_t ldk;
    const float *v; size_t ldv;
    int nq, nkv, n_head, head_dim;
    float scale;
    const int32_t *q_pos, *k_pos;
    int nthreads;
    void *ws;   /* attn_ws(n, h, head_dim, m) bytes with n >= nthreads, h >= n_head and
                 * m >= nkv (it grows with the key count where K and V are copied: per
                 * head on the CPU, every head's at once on the GPU) */
    /* A table with the x16 flag only (else ignored): NULL, or where the output is also
     * written rounded to o16_type (JK_F16 or JK_BF16), row stride ldo16 elements (the
     * output projection's x16). */
    uint16_t *o16; size_t ldo16;
    enum jk_dtype o16_type;
    /* The CPU kernels' key tile and K/V copy threshold for this call (kernels/tuning.h;
     * `jepa tune` and the tests), ws sized by jk_attn_ws_tuned for it; NULL: the set in
     * force. A set outside the limits is never used (the one in force is). */
    const struct jk_attn_tuning *tune;
};
typedef void jk_attn_fn(const struct jk_attn_args *a);

/* 3-D RoPE from per-token tables, in place on n tokens x n_head heads:
 *   x[i, h, :] = x * cos[i, :] + rot90(x) * sin[i, :]
 *   rot90(x)[2p] = -x[2p+1], rot90(x)[2p+1] = x[2p]
 * x row i head h at x + i*ldx + h*head_dim; cos/sin [n, head_dim] contiguous (identity
 * rows cos 1 / sin 0 for tokens without position, e.g. CLS; pass-through dims 1 / 0).
 * The table encodes the layout (tiled or interleaved) and the positions; see
 * models/rope.h for how it is built. */
typedef void jk_rope_fn(float *x, size_t ldx, int n, int n_head, int head_dim,
                           const float *cos, const float *sin, int nthreads);

/* LayerNorm over rows of d: y = (x - mean) / sqrt(var + eps) * w + b, with mean and a
 * centred variance (two passes) accumulated in f32. w, b may be NULL (no affine).
 * y may equal x (same stride). */
typedef void jk_layernorm_fn(float *y, size_t ldy, const float *x, size_t ldx,
                                const float *w, const float *b, int n, int d, float eps,
                                int nthreads);

/* Elementwise, in place on n contiguous floats: gelu_tanh = 0.5 x (1 + tanh(sqrt(2/pi)
 * (x + 0.044715 x^3))), silu = x sigmoid(x), each to ~1e-7 relative. (The erf-GELU has
 * no slot: every erf-GELU of a forward follows a matmul, and is that matmul's
 * JK_EPI_GELU epilogue.) */
typedef void jk_unary_fn(float *x, size_t n, int nthreads);

/* y[i, j] += s[j] * x[i, j] (s NULL: y += x), rows of d, strides in floats.
 * Residual add and layer-scale. */
typedef void jk_add_fn(float *y, size_t ldy, const float *x, size_t ldx, const float *s,
                          int n, int d, int nthreads);

/* y[i, j] = x[i, j] * (c + m[i, j]) + a[i, j], rows of d, strides in floats; y may be x
 * or a (same stride): elementwise. adaLN modulation (c = 1: x (1 + scale) + shift) and
 * a gated residual (c = 0, a = y: y += gate * x) of the LeWM predictor. */
typedef void jk_madd_fn(float *y, size_t ldy, const float *x, size_t ldx, const float *m,
                        size_t ldm, const float *a, size_t lda, float c, int n, int d,
                        int nthreads);

/* Patchify (im2col of the Conv3d patch embedding, stride = kernel):
 *   in:  [C, T, H, W] f32 (T >= tubelet, H >= p, W >= p)
 *   out: [gt*gh*gw, C*tubelet*p*p], gt = T / tubelet, gh = H / p, gw = W / p (floored: the
 *        last T % tubelet frames, H % p rows and W % p columns are not read, as the Conv3d
 *        leaves them), row i = t*gh*gw + h*gw + w, features in C-T-H-W order
 * so that out . Wpe^T is the Conv3d. */
typedef void jk_patchify_fn(float *out, const float *in, int C, int T, int H, int W,
                               int tubelet, int p, int nthreads);

/* The x16 table's variants of layernorm and patchify (optional, not slots: NULL in every
 * other table): the same result, written in f32 to y / out where that is not NULL, and
 * rounded (nearest even) to t (JK_F16 or JK_BF16) to y16 / out16 (row stride in
 * elements; patchify's rows are C*tubelet*p*p long) where that is not NULL. */
typedef void jk_layernorm16_fn(float *y, size_t ldy, uint16_t *y16, size_t ldy16,
                               enum jk_dtype t, const float *x, size_t ldx, const float *w,
                               const float *b, int n, int d, float eps, int nthreads);
typedef void jk_patchify16_fn(float *out, uint16_t *out16, enum jk_dtype t, const float *in,
                              int C, int T, int H, int W, int tubelet, int p, int nthreads);
/* The x16 table's variants of gelu_tanh and silu (optional, not slots), on n rows of d
 * floats at row stride ldx: the same f32 values as the slot's, in place, each also written
 * rounded (nearest even) to t (JK_F16 or JK_BF16) to y16 (row stride ldy16 elements). */
typedef void jk_unary16_fn(float *x, size_t ldx, uint16_t *y16, size_t ldy16, enum jk_dtype t,
                           int n, int d, int nthreads);
/* The x16 table's copy of an f32 matrix it did not produce (an uploaded input): y16[i, j] =
 * x[i, j] rounded (nearest even) to t (JK_F16 or JK_BF16), rows of d, strides in elements.
 * Optional, not a slot. (In every copy a NaN becomes a NaN of t, its payload not kept.) */
typedef void jk_round16_fn(uint16_t *y16, size_t ldy16, enum jk_dtype t, const float *x,
                           size_t ldx, int n, int d, int nthreads);

/* Row gather: y[i, :] = x[idx[i], :] for 0 <= i < n, rows of d floats (strides in
 * floats). idx lives in the same memory as x (device memory for a GPU table); every
 * idx[i] is a valid row. y and x must not overlap. Masked encoder: keep context rows. */
typedef void jk_gather_fn(float *y, size_t ldy, const float *x, size_t ldx,
                             const int32_t *idx, int n, int d, int nthreads);

/* Column mean: y[j] = (1/n) sum_i x[i, j], n >= 1 rows of d (row stride ldx floats).
 * Mean pooling of the patch tokens. */
typedef void jk_mean_rows_fn(float *y, const float *x, size_t ldx, int n, int d,
                                int nthreads);

/* Workspace bytes for nthreads threads: gemm for any of the gemm slots with rows of up
 * to K weights; attention for up to n_head heads of the given head_dim and up to nkv
 * keys (more heads or keys may need more: plan with the largest call's). The CUDA table's
 * gemm_ws is a bound independent of M and N (the pipelined matmul's split-K partial sums,
 * kernels/cuda/gemm_pipe.cu), and its gemm also takes ws NULL: no split then. */
typedef size_t jk_gemm_ws_fn(int nthreads, int K);
typedef size_t jk_attn_ws_fn(int nthreads, int n_head, int head_dim, int nkv);

/* The jk_*_fn above are function types, not pointers: a kernel file's header declares
 * its slots with them (`jk_unary_fn jk_silu_neon;`), so each signature is written once,
 * here, and a kernel whose definition drifts from it fails to compile. */

struct jk_kernels {
    const char *isa;                 /* "scalar", "avx2", "avx512", "neon", "cuda" */
    /* where the gemm slots, gemm_ws and the prepacking come from: isa itself (the exact
     * tier), or a precision tier's kernels (jk_init_precision): "avx512_bf16",
     * "amx_bf16", "amx_high", "neon_bf16" */
    const char *gemm_isa;
    /* where attn and attn_ws come from, in the same way: isa itself, or the bf16 tier's
     * attention (jk_init_precision, JK_INSTALL_ATTN): "avx512_bf16", "amx_bf16",
     * "neon_bf16" */
    const char *attn_isa;
    /* optional, not slots: NULL where the gemm packs nothing (scalar, CUDA) */
    jk_gemm_prepack_fn *gemm_prepack;
    jk_gemm_prepack_floats_fn *gemm_prepack_floats;
    /* The GPU's pipelined kernels (JEPA_CUDA_KERNELS=pipe): the gemm reads jk_gemm_args'
     * x16 and writes y16, the attention writes o16, and layernorm16 / patchify16 /
     * gelu_tanh16 / silu16 / round16 are set;
     * a forward then plans the 16-bit copies and passes them. false everywhere else. */
    bool x16;
    jk_layernorm16_fn *layernorm16;
    jk_patchify16_fn *patchify16;
    jk_unary16_fn *gelu_tanh16, *silu16;
    jk_round16_fn *round16;
    jk_gemm_fn *gemm[JK_NDTYPES];
    jk_attn_fn *attn;
    jk_rope_fn *rope;
    jk_layernorm_fn *layernorm;
    jk_unary_fn *gelu_tanh, *silu;
    jk_add_fn *add;
    jk_madd_fn *madd;
    jk_patchify_fn *patchify;
    jk_gather_fn *gather;
    jk_mean_rows_fn *mean_rows;
    jk_gemm_ws_fn *gemm_ws;
    jk_attn_ws_fn *attn_ws;
};

/* The gemm slots of one ISA, one per weight type, named jk_gemm_<name>_<isa> (the full
 * list of names is in runtime/weight_types.h): JK_GEMM_DECLARE(avx2) declares them all,
 * JK_GEMM_INSTALL(avx2) sets them in the table `k` of the function it is used in. */
#define JK_GEMM_DECLARE_ONE(isa, name, ...) jk_gemm_fn jk_gemm_##name##_##isa;
#define JK_GEMM_DECLARE(isa) JR_WEIGHT_TYPES(JK_GEMM_DECLARE_ONE, isa)
#define JK_GEMM_INSTALL_ONE(isa, name, NAME, ...) k->gemm[JK_##NAME] = jk_gemm_##name##_##isa;
#define JK_GEMM_INSTALL(isa) do { JR_WEIGHT_TYPES(JK_GEMM_INSTALL_ONE, isa) } while (0)

/* The one list of the slots of struct jk_kernels, in table order: every place that walks
 * the slots (a context's completeness check, `jepa cpu`, the kernel and device tests)
 * reads it, so a new slot is one field above and one row in kernels.c. */
struct jk_slot {
    const char *name;   /* "gemm_f16", "attn", ... (as `jepa cpu` prints them) */
    size_t offset;      /* of the function pointer in struct jk_kernels */
    int dtype;          /* a gemm slot: its weight type (needed only by models that have
                           such weights); -1: every forward needs the slot */
};
extern const struct jk_slot jk_slots[];
extern const int jk_nslots;

/* The pointer in slot s of k, as an untyped address (NULL: the slot is empty). */
const void *jk_slot_fn(const struct jk_kernels *k, const struct jk_slot *s);

/* Fill k for the CPU flags (runtime/cpu.h), capped by nothing: the caller applies
 * jr_cpu_cap() first. Always succeeds: the reference covers every slot. */
void jk_init(struct jk_kernels *k, unsigned cpu_flags);

/* Precision tiers of the matmul (include/jepa.h, jepa_ctx_params.precision):
 *   JK_PREC_EXACT  the slots above: f32 x f32 products of the exact weight values.
 *   JK_PREC_HIGH   f32-grade through 16-bit matrix units (bf16 split terms: X and W as
 *                  hi + lo, three tile products; AMX); on a CPU without such units it is
 *                  the exact tier.
 *   JK_PREC_BF16   X and W rounded to bf16 (round to nearest even) as they are packed,
 *                  products of bf16 pairs accumulated in f32 (TDPBF16PS on AMX tiles, else
 *                  VDPBF16PS on AVX512-BF16; BFDOT on aarch64 FEAT_BF16, whose additions
 *                  round to odd and flush subnormals); Y, the bias and the epilogues stay
 *                  f32. Where the CPU has no bf16 dot product it is the exact tier.
 * Only the gemm slots (with gemm_ws and gemm_prepack*) change between tiers, and in the
 * bf16 tier attn and attn_ws where the CPU has a bf16 attention (JK_INSTALL_ATTN: q, k, v
 * and the probabilities P rounded to bf16, the scores, softmax and sums in f32; its
 * reference is jk_attn_bf16x_ref); the high tier keeps the exact tier's f32 attention. A
 * tier's kernels give the same bits for any thread count, like every slot. */
enum jk_precision { JK_PREC_EXACT = 0, JK_PREC_HIGH = 1, JK_PREC_BF16 = 2, JK_NPREC };

const char *jk_precision_name(enum jk_precision p);
/* "exact", "high" or "bf16" (NULL or "" = exact); -1 for anything else. */
int jk_precision_parse(const char *s);

/* jk_init, then the gemm slots of the tier p where this CPU has kernels for it (the exact
 * ones stay otherwise), and the tier's attention likewise; k->gemm_isa says which kernels
 * the matmul got, k->attn_isa which the attention got. */
void jk_init_precision(struct jk_kernels *k, unsigned cpu_flags, enum jk_precision p);

/* The reference of the bf16 tier (kernels/ref/gemm_ref.c): X and the weights (decoded to
 * f32 exactly) rounded to bf16, each dot product accumulated in double, rounded once.
 * The tier's kernels are checked against it with the bound of their f32 accumulation. */
void jk_gemm_bf16x_ref(const struct jk_gemm_args *a, enum jk_dtype t);

/* The reference of the bf16 tier's attention (kernels/ref/attn_ref.c): jk_attn_ref's
 * computation (mask rule, empty rows and NaN rows alike) on q, k and v rounded to bf16
 * (nearest even), the scores scale * (bf16 q . bf16 k), each probability p_j (an f32)
 * rounded to bf16 before it multiplies bf16 v_j, sums in double, the output divided by
 * the sum of the unrounded p_j. The tier's attention kernels are checked against it
 * (tests/checkasm/test_attn_tier.c) with the bound of their f32 arithmetic and of the
 * running maximum, which makes a kernel round P at another scale than this one. */
void jk_attn_bf16x_ref(const struct jk_attn_args *a);

/* The reference table alone (the truth for tests). */
void jk_init_ref(struct jk_kernels *k);

/* Kernels of one ISA family, each upgrading the slots its level allows (they return
 * at once when the flags do not include their ISA). Called in order by jk_init. */
void jk_init_x86(struct jk_kernels *k, unsigned cpu_flags);
void jk_init_arm(struct jk_kernels *k, unsigned cpu_flags);
/* The tier's gemm kernels of one ISA family over a table jk_init filled (no-op where the
 * family has none for this CPU). */
void jk_init_x86_precision(struct jk_kernels *k, unsigned cpu_flags, enum jk_precision p);
void jk_init_arm_precision(struct jk_kernels *k, unsigned cpu_flags, enum jk_precision p);

/* The matmul slots of one gemm build of an ISA file, declared (in the ISA family's header)
 * and installed (by its jk_init_* rung) under one name: jk_gemm_<type>_<isa>, jk_gemm_ws_<isa>,
 * jk_gemm_prepack_<isa>, jk_gemm_prepack_floats_<isa>; the exact ones of each ISA or a
 * precision tier's ("avx512_bf16", "neon_bf16"). JK_INSTALL_GEMM sets k->gemm_isa. */
#define JK_DECLARE_GEMM(isa)                                                                \
    JK_GEMM_DECLARE(isa)                                                                   \
    jk_gemm_ws_fn jk_gemm_ws_##isa;                                                        \
    jk_gemm_prepack_fn jk_gemm_prepack_##isa;                                              \
    jk_gemm_prepack_floats_fn jk_gemm_prepack_floats_##isa;
/* (the table must be the variable k: JK_GEMM_INSTALL names it) */
#define JK_INSTALL_GEMM(k, isa)                                   \
    do {                                                          \
        (k)->gemm_isa = #isa;                                     \
        JK_GEMM_INSTALL(isa);                                     \
        (k)->gemm_ws = jk_gemm_ws_##isa;                          \
        (k)->gemm_prepack = jk_gemm_prepack_##isa;                \
        (k)->gemm_prepack_floats = jk_gemm_prepack_floats_##isa;  \
    } while (0)

/* The attention of a precision tier, installed like JK_INSTALL_GEMM (by the ISA family's
 * jk_init_*_precision): attn = jk_attn_<isa>, attn_ws = jk_attn_ws_<isa>, attn_isa = "<isa>". */
#define JK_DECLARE_ATTN(isa)  \
    jk_attn_fn jk_attn_##isa; \
    jk_attn_ws_fn jk_attn_ws_##isa;
#define JK_INSTALL_ATTN(k, isa)                \
    do {                                       \
        (k)->attn_isa = #isa;                  \
        (k)->attn = jk_attn_##isa;             \
        (k)->attn_ws = jk_attn_ws_##isa;       \
    } while (0)

/* The CUDA table (kernels/cuda/): every pointer argument is device memory of the
 * device bound to the calling thread (kernels/device.h, jk_device.bind); slots are
 * queued on that device's stream and return at once; nthreads is ignored. Every gemm
 * slot is set (the block formats included). Defined only in builds with CUDA
 * (or the SIMT emulator used by the tests); callers reach it through
 * jk_device_open_cuda(). */
void jk_init_cuda(struct jk_kernels *k);
/* The CUDA table's kernel choice for the whole process: 1 = the pipelined kernels
 * (cp.async, ldmatrix; never run on a GPU yet), 0 = the default ones, -1 = back to the
 * environment (JEPA_CUDA_KERNELS=pipe, else the default). For the tests and `jepa bench
 * gpu`; set it before the work it should apply to is queued. */
void jkc_kernels_force_pipe(int on);
/* The same, for the wgmma table: 1 = the pipelined kernels plus the wgmma matmul where the
 * device is sm_90 (never run on a GPU yet), 0 = the default ones, -1 = the environment
 * (JEPA_CUDA_KERNELS=wgmma). */
void jkc_kernels_force_wgmma(int on);

#endif
