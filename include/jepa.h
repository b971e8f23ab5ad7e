/*
 * jepa.h — the public C API of jepa.c, an inference runtime for JEPA vision models
 * (V-JEPA 2, V-JEPA 2.1, I-JEPA, LeVJEPA, LeJEPA/hfvit, LeWM) stored as GGUF files
 * in the jepa.cpp schema v1.
 *
 * Shape of the API
 *   jepa_model   a loaded GGUF: weights memory-mapped read-only, hyper-parameters
 *                validated. Immutable after load, so one model may be shared by
 *                several threads, each with its own context.
 *   jepa_ctx     everything one forward needs that is not a weight: the device it
 *                runs on (the CPU, or a CUDA GPU), the activation arena (sized for the
 *                largest input seen so far, reused), the kernel table (chosen once for
 *                the device), the thread count, the last error. On a GPU the weights
 *                are copied to device memory once per (model, GPU) and shared by every
 *                context on that GPU; inputs and outputs are always host memory.
 *
 * Errors: every fallible call returns a jepa_status. A call that fails leaves a
 * one-line message that says what was wrong (file, key or tensor, expected vs found):
 * jepa_ctx_error() for context calls, the `err` buffer for jepa_model_load*(). The
 * library never prints, never exits and never aborts on bad input.
 *
 * Layouts: every array is float32, row-major, C-contiguous, in host memory (also for a
 * context on a GPU).
 *   clip   [C, T, H, W]  (C = 3, already preprocessed: resized, cropped, normalised);
 *                        a batch of B clips is [B, C, T, H, W] and its outputs gain a
 *                        leading B axis
 *   tokens [N, D]        token i = t*gh*gw + h*gw + w (t counts tubelets), plus a CLS
 *                        row first for the families that have one.
 * Library-wide state: only the CPU features, detected once per process (pthread_once)
 * and constant after; a model owns its GPU weight copies (locked, reference-counted).
 */
#ifndef JEPA_H
#define JEPA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define JEPA_API __declspec(dllexport)
#else
#define JEPA_API __attribute__((visibility("default")))
#endif

typedef enum jepa_status {
    JEPA_OK = 0,
    JEPA_ERR_IO = 1,          /* cannot open / read / map / write a file */
    JEPA_ERR_FORMAT = 2,      /* malformed or hostile GGUF / npy */
    JEPA_ERR_SCHEMA = 3,      /* well-formed GGUF that breaks schema v1 */
    JEPA_ERR_UNSUPPORTED = 4, /* valid but not (yet) supported: tensor type, family, op */
    JEPA_ERR_ARG = 5,         /* bad argument: wrong shape, id out of range, NULL */
    JEPA_ERR_NOMEM = 6,       /* allocation failed */
    JEPA_ERR_DEVICE = 7,      /* the compute device is unavailable or failed (no CUDA in this
                                 build, no such GPU, a failed copy or kernel) */
    JEPA_ERR_CANCELLED = 8,   /* stopped by jepa_ctx_cancel */
} jepa_status;

/* A short English name of a status code ("format error", ...). */
JEPA_API const char *jepa_status_str(jepa_status s);

/* The library's version, "MAJOR.MINOR.PATCH" (the version its build was configured with:
 * what jepa.pc and `jepa --version` say; the shared library's soname is MAJOR). */
JEPA_API const char *jepa_version(void);

typedef struct jepa_model jepa_model;
typedef struct jepa_ctx jepa_ctx;

/* ---- model ------------------------------------------------------------------- */

#define JEPA_ERR_LEN 512

/* Load a schema-v1 GGUF. On failure *out is NULL and err (if not NULL, JEPA_ERR_LEN
 * bytes) holds the reason. */
JEPA_API jepa_status jepa_model_load(jepa_model **out, const char *path, char *err);
/* The same from memory: data must stay valid and unchanged until jepa_model_free. */
JEPA_API jepa_status jepa_model_load_memory(jepa_model **out, const void *data, size_t size,
                                            char *err);
JEPA_API void jepa_model_free(jepa_model *m);

typedef struct jepa_model_info {
    const char *family;     /* "vjepa2", "vjepa2_1", "ijepa", "levjepa", "hfvit", "lewm", "vjepa" */
    const char *modality;   /* "video", "image", "image+video" */
    const char *name;       /* general.name */
    int embed_dim, n_layer, n_head, head_dim, ffn_dim;
    int patch_size, tubelet_size, img_size, n_frames, in_chans;
    int has_cls;            /* a CLS row leads the token map */
    int has_predictor;      /* a predictor: see `predictor` for which calls run it */
    int pred_out_dim;
    int has_head;           /* jepa_ctx_classify works */
    int n_classes;
    int n_hier;             /* hierarchical levels (V-JEPA 2.1), else 0 */
    int emb_dim;            /* width of the LeWM projector output (jepa_embed_out.emb), else 0 */
    const char *predictor;  /* "masked" (jepa_ctx_predict), "lewm" (jepa_ctx_lewm_*), "ac", or NULL */
    int action_dim;         /* world models: width of one action, else 0 */
    int state_dim;          /* V-JEPA 2-AC: width of one proprioceptive state, else 0 */
    int pred_n_frames;      /* frames the predictor takes: LeWM jepa.pred.n_frames, V-JEPA 2-AC
                               jepa.enc.n_frames / tubelet_size; else 0 */
    int pred_tokens_per_frame; /* V-JEPA 2-AC: encoder tokens per frame (grid_size^2), else 0 */
    int pred_embed_dim, pred_n_layer, pred_n_head, pred_ffn_dim;   /* the predictor's stack, else 0 */
} jepa_model_info;

JEPA_API void jepa_model_get_info(const jepa_model *m, jepa_model_info *info);
/* The model described for a reader, as `jepa info` prints it: one labelled line each for
 * its name, family, encoder, predictor, head, preprocessing recipe, weight types and
 * size, licence and source (indented lines add detail). Text from the file is escaped
 * (control bytes as \xHH), so the description is safe to print. The layout is for
 * people and may change; programs read jepa_model_get_info. Writes at most size bytes
 * (NUL-terminated, cut short if it must be) into buf and returns the length of the whole
 * description, as snprintf does: call with size 0 (buf may then be NULL) to size the
 * buffer. 0 when m is NULL or memory runs out. */
JEPA_API size_t jepa_model_describe(const jepa_model *m, char *buf, size_t size);
/* Label of class i, or NULL when the file carries no labels or i is out of range. */
JEPA_API const char *jepa_model_label(const jepa_model *m, int i);

/* Token grid for an input of T frames of H x W pixels (a still image, T = 1, as the
 * encoder takes it: see JEPA_INPUT_AUTO): *n_tokens includes the CLS row where the
 * family has one. Frames, rows and columns that do not fill a tubelet or a patch are
 * dropped, as the reference patch embeddings (stride = kernel convolutions) drop them:
 * gt = T / tubelet, gh = H / patch, gw = W / patch (a still image: one tubelet).
 * JEPA_ERR_ARG when the size does not fit the model (smaller than a patch, a clip shorter
 * than a tubelet, more tokens than a clip may have). */
JEPA_API jepa_status jepa_model_grid(const jepa_model *m, int T, int H, int W,
                                     int *gt, int *gh, int *gw, int *n_tokens);

/* Floating-point operations (multiply-adds x 2) of one encoder pass over n_tokens tokens
 * of the model that info describes, whose patch embedding spans `tubelet` frames (1 for
 * a still image, else info->tubelet_size): the patch embedding, per layer the qkv, output
 * and MLP matmuls and full attention (q k^T and p v over all n_tokens keys). Norms,
 * activations and softmax are not counted. The figure that `jepa embed --time` and
 * `jepa bench encoder` divide by the time. */
JEPA_API double jepa_encoder_flops(const jepa_model_info *info, int n_tokens, int tubelet);

/* ---- context ----------------------------------------------------------------- */

typedef struct jepa_ctx_params {
    int n_threads;       /* 0 = all cores */
    const char *cpu;     /* cap the kernel ISA: NULL/"auto", "scalar", "avx2", "avx512", "neon";
                            the environment variable JEPA_CPU does the same */
    const char *device;  /* NULL, "" or "cpu": the CPU; "cuda" (= "cuda:0") or "cuda:N": CUDA
                            GPU number N. A zero-initialised struct means the CPU. */
    const char *precision; /* the CPU's precision tier; NULL or "": the environment variable
                            JEPA_PRECISION, else "exact".
                              "exact": f32 products of the exact weight values (the default)
                              "high":  the matmuls f32-grade on 16-bit matrix units (bf16
                                       split terms, Intel AMX); attention f32; "exact" where
                                       the CPU has no such units
                              "bf16":  the operands of every matmul and of attention's two
                                       products (q, k, v and the probabilities) rounded to
                                       bf16, as PyTorch bf16 does, accumulated and stored in
                                       f32; on AMX tiles, AVX512-BF16 (VDPBF16PS) or Arm
                                       FEAT_BF16 (BFDOT), "exact" elsewhere
                            jepa_ctx_matmul_isa / jepa_ctx_attn_isa say what ran. A GPU keeps
                            its own rule (16-bit tiles, kernels/kernels.h) whatever the tier. */
} jepa_ctx_params;

JEPA_API jepa_ctx_params jepa_ctx_default_params(void);
/* Create a context for model m (which must outlive it). p may be NULL (defaults). On
 * failure *out is NULL and err (if not NULL, JEPA_ERR_LEN bytes) holds a one-line reason:
 * JEPA_ERR_ARG (unknown cpu level or device name), JEPA_ERR_DEVICE (no CUDA in this build,
 * no such GPU, the weights could not be copied), JEPA_ERR_UNSUPPORTED (a weight type the
 * device cannot run: q8_0 on a GPU), JEPA_ERR_NOMEM. */
JEPA_API jepa_status jepa_ctx_new(jepa_ctx **out, const jepa_model *m, const jepa_ctx_params *p,
                                  char *err);
JEPA_API void jepa_ctx_free(jepa_ctx *c);
JEPA_API const char *jepa_ctx_error(const jepa_ctx *c);
JEPA_API void jepa_ctx_set_threads(jepa_ctx *c, int n_threads);
/* Weights packed once (on: 1; off: 0, which frees them). Each matmul weight is converted
 * to the f32 panels that the CPU matmul reads at its first use with 64 rows or more, and
 * kept: later calls skip that packing (4-9 % of the time of a small model), with the same
 * outputs bit for bit. It costs 4 bytes per weight in this context (twice an f16 file's
 * weights). JEPA_ERR_UNSUPPORTED on the scalar and CUDA kernels, which pack nothing. */
JEPA_API jepa_status jepa_ctx_set_prepack(jepa_ctx *c, int on);
/* The bytes of the weights that this context holds packed (0 without jepa_ctx_set_prepack). */
JEPA_API size_t jepa_ctx_prepacked_bytes(const jepa_ctx *c);
JEPA_API int jepa_ctx_threads(const jepa_ctx *c);
/* Which implementation fills the kernel slots ("avx512", "avx2", "neon", "scalar", "cuda"). */
JEPA_API const char *jepa_ctx_isa(const jepa_ctx *c);
/* The precision tier asked for ("exact", "high", "bf16") and the kernels the matmul got for
 * it here: the ISA itself where the tier runs exact, else the tier's ("avx512_bf16",
 * "neon_bf16"). */
JEPA_API const char *jepa_ctx_precision(const jepa_ctx *c);
JEPA_API const char *jepa_ctx_matmul_isa(const jepa_ctx *c);
/* The kernels the attention got for the tier, in the same way ("avx512_bf16", "amx_bf16",
 * "neon_bf16" where the bf16 tier has its own; the ISA itself otherwise). */
JEPA_API const char *jepa_ctx_attn_isa(const jepa_ctx *c);
/* The device the context runs on: "cpu", or e.g. "cuda:0 NVIDIA H200 (sm_90, 139 GiB)". */
JEPA_API const char *jepa_ctx_device(const jepa_ctx *c);
/* Bytes of activation arena the context holds now (device memory on a GPU, plus the
 * host staging of its tables). */
JEPA_API size_t jepa_ctx_arena_bytes(const jepa_ctx *c);
/* Stop the call running on c: callable from any thread at any time (the one exception to
 * "one call at a time per context"); it never blocks. The call running on c, or if none
 * runs the next one, returns JEPA_ERR_CANCELLED at its next cancel point: before each
 * block of the encoder and of the predictors, and after the last (a rollout or a plan
 * stops inside its step or iteration). The request is consumed there: the call after runs
 * normally. A call that reaches no cancel point (jepa_ctx_classify, jepa_ctx_embed_input)
 * leaves it for the next. What a cancelled call wrote: jepa_ctx_embed, the predict calls
 * and jepa_ctx_lewm_rollout write no output (on the CPU, jepa_ctx_embed may have written
 * the hierarchical levels it computed, jepa_embed_out.hier); a V-JEPA 2-AC rollout and a
 * plan may have written part of theirs. On a GPU the blocks already queued run first.
 * NULL: nothing. */
JEPA_API void jepa_ctx_cancel(jepa_ctx *c);

/* ---- embed ------------------------------------------------------------------- */

typedef enum jepa_input_kind {
    JEPA_INPUT_AUTO = 0,   /* video for T > 1; for T == 1: V-JEPA 2.1's native image path,
                              LeVJEPA's clip of 16 copies of the image,
                              repetition to fill the tubelet elsewhere */
    JEPA_INPUT_VIDEO = 1,
    JEPA_INPUT_IMAGE = 2,
} jepa_input_kind;

typedef struct jepa_embed_params {
    jepa_input_kind kind;
    const int32_t *ctx_ids;  /* optional masked encoder: keep only these token ids (with their
                                true positions) before the first block; the same ids for
                                every clip of a batch */
    int n_ctx;
    int batch;               /* clips B in x (0 or 1: one clip) */
    /* progress: called from the calling thread after each encoder block with the blocks
       done (1 .. n_layers) and their count; NULL: not called. On a GPU each call first
       waits for its block to finish. The callback must not use the context, except to
       call jepa_ctx_cancel (the call then stops before the next block). */
    void (*on_layer)(void *user, int layers_done, int n_layers);
    void *user;
} jepa_embed_params;

/* Every output is stacked over the B clips of a batch (B = 1: the shapes without it). */
typedef struct jepa_embed_out {
    float *tokens;   /* [B, n_tokens, D] after the final norm (or NULL) */
    float *pooled;   /* [B, D] mean of the patch tokens (CLS excluded), or NULL */
    float *cls;      /* [B, D] CLS row (families with CLS), or NULL */
    float *hier;     /* [B, n_hier, n_tokens, D] (V-JEPA 2.1), or NULL */
    float *emb;      /* [B, emb_dim] LeWM projector of the CLS, or NULL */
} jepa_embed_out;

/* Encode x[B, C, T, H, W]: B = p->batch clips of one shape (x[C, T, H, W] when p is NULL
 * or p->batch <= 1), in one pass (one matmul per layer over every clip's tokens). Each
 * clip's outputs are those of a single call: the same bits with the reference kernels;
 * the SIMD / GPU matmuls may sum in another order once the row count grows (differences
 * near float rounding, ~1e-6 relative). Buffers in out are caller-owned, sized from
 * jepa_model_grid() (with ctx_ids: n_ctx tokens) times B. */
JEPA_API jepa_status jepa_ctx_embed(jepa_ctx *c, const float *x, int T, int H, int W,
                                    const jepa_embed_params *p, jepa_embed_out *out);

/* Room for the input of one jepa_ctx_embed call inside this context's activation arena,
 * so that the clip costs no memory of its own: the patch embedding reads it from memory
 * the encoder's blocks reuse afterwards (host memory; on a GPU a host buffer of the
 * context, uploaded from). Plans the call jepa_ctx_embed(c, x, T, H, W, p, out) (the same
 * T, H, W, p->kind, batch and ctx_ids, and the same outputs asked for: which of out's
 * pointers are non-NULL; out may be NULL for none), reserves its arena and sets *x to
 * room for [B, C, T, H, W] floats (NULL on failure). Write the clips there and make that
 * call with this pointer before any other call on c, which may move or free it; the call
 * reads the clips and then overwrites them. A pointer into the arena given for another
 * call is refused (JEPA_ERR_ARG). */
JEPA_API jepa_status jepa_ctx_embed_input(jepa_ctx *c, int T, int H, int W, const jepa_embed_params *p,
                                          const jepa_embed_out *out, float **x);

/* ---- predict (masked predictors) -------------------------------------------- */

typedef enum jepa_modality {
    JEPA_MODALITY_AUTO = 0,  /* image when every id lies in one temporal slice of an image-capable
                                model, else video */
    JEPA_MODALITY_VIDEO = 1,
    JEPA_MODALITY_IMAGE = 2,
} jepa_modality;

typedef struct jepa_predict_params {
    const int32_t *ctx_ids; int n_ctx;   /* ids of the context tokens (order kept) */
    const int32_t *tgt_ids; int n_tgt;   /* ids to predict (order kept) */
    int mask_index;                      /* which mask token (mod n_mask_tokens); default 1 */
    jepa_modality modality;              /* V-JEPA 2.1 */
} jepa_predict_params;

/* tokens: [n_ctx, D] encoder tokens at ctx_ids (finite). pred: [n_tgt, out_dim].
 * ctx_out: [n_ctx, out_dim] (V-JEPA 2.1 context projection) or NULL. Ids lie in the
 * predictor's grid, jepa.enc.n_frames / tubelet x grid_size^2 tokens, and each list holds
 * at most that many (JEPA_ERR_ARG otherwise). */
JEPA_API jepa_status jepa_ctx_predict(jepa_ctx *c, const float *tokens,
                                      const jepa_predict_params *p, float *pred, float *ctx_out);

/* ---- world models: LeWM (predictor "lewm") -----------------------------------
 * The state of a frame is its embedding, jepa_embed_out.emb of the frame (emb_dim
 * wide); an action is action_dim floats. B sequences of T frames (1 <= T <=
 * pred_n_frames), all finite:
 *   emb [B, T, emb_dim], actions [B, T, action_dim] -> pred [B, T, pred_out_dim]
 * where row t of a sequence predicts the embedding of frame t + 1 from frames 0 .. t
 * and their actions (causal: it does not read later rows). */
JEPA_API jepa_status jepa_ctx_lewm_predict(jepa_ctx *c, const float *emb, const float *actions,
                                           int B, int T, float *pred);

/* Autoregressive rollout of B sequences from a history of T >= 1 embeddings:
 *   emb [B, T, emb_dim], actions [B, T + steps - 1, action_dim] -> traj [B, steps, emb_dim]
 * Step s runs the predictor on the last min(T + s, pred_n_frames) embeddings of the
 * sequence so far (the history, then the steps before it) with their actions, and
 * appends its last row: traj[s]. Step 0 is the last row of jepa_ctx_lewm_predict on the
 * history (with actions[0 .. T)); each later step uses one more action. Needs
 * pred_out_dim == emb_dim (JEPA_ERR_UNSUPPORTED otherwise). */
JEPA_API jepa_status jepa_ctx_lewm_rollout(jepa_ctx *c, const float *emb, int B, int T,
                                           const float *actions, int steps, float *traj);

/* ---- world models: V-JEPA 2-AC (predictor "ac") --------------------------------
 * B sequences of F frames; each frame is N = grid^2 encoder tokens (jepa.pred.grid_size,
 * frame-major: row f N + h grid + w), one action and one proprioceptive state, all finite:
 *   tokens [B, F N, embed_dim], actions [B, F, action_dim], states [B, F, state_dim]
 *   -> pred [B, F N, pred_out_dim]
 * Row f N + i predicts token i of frame f + 1 from frames 0 .. f (frame-causal). */
JEPA_API jepa_status jepa_ctx_ac_predict(jepa_ctx *c, const float *tokens, const float *actions,
                                         const float *states, int B, int F, float *pred);

/* Autoregressive rollout of B sequences from a history of T frames, as Meta's planner
 * steps its world model (notebooks/utils/world_model_wrapper.py of facebookresearch/vjepa2):
 *   tokens [B, T N, embed_dim], states [B, T, 7], actions [B, T + steps - 1, 7]
 *   -> traj [B, steps N, embed_dim] (step-major), traj_states [B, steps, 7] or NULL.
 * Step s predicts on the last min(T + s, pred_n_frames) frames so far and takes the N
 * rows of the last one; normalize != 0 layer-norms each of them (no affine, eps 1e-5:
 * Meta's normalize_reps, its default); they are frame T + s, whose state is Meta's pose
 * rule applied to the previous frame's state and action (compute_new_pose: xyz and
 * gripper add, the gripper clipped to [0, 1], the rotations compose as Euler xyz angles).
 * Needs 7-d actions and states, the pose rule's (JEPA_ERR_UNSUPPORTED otherwise). */
JEPA_API jepa_status jepa_ctx_ac_rollout(jepa_ctx *c, const float *tokens, const float *states, int B, int T,
                                         const float *actions, int steps, int normalize, float *traj,
                                         float *traj_states);

/* Planning with the cross-entropy method (docs/world-models.md, "Planning"). Defaults
 * for LeWM (jepa_plan_default_params) are the LeWM authors' planner: horizon 5 (le-wm
 * config/eval/pusht.yaml), 300 samples, 30 iterations, 30 elites, std 1, seed 1234
 * (stable-worldmodel's CEMSolver); no bounds, no momentum. For V-JEPA 2-AC
 * (jepa_plan_ac_default_params) they are Meta's WorldModel mpc_args: 2 steps, 400
 * samples, 10 iterations, 10 elites, momentum 0.15 for mean and std, and its action box
 * (below); seed 1234. */

/* One action component's search: clipped to [lo, hi] (lo == hi: held at lo, never
 * sampled); the Gaussian's initial std; the plan's component is set to 0 where its
 * magnitude is below deadband (0: never). */
typedef struct jepa_plan_component {
    float lo, hi, init_std, deadband;
} jepa_plan_component;

typedef struct jepa_plan_params {
    int horizon;        /* actions planned */
    int samples;        /* candidate sequences per iteration, run as one batch */
    int iterations;
    int elites;         /* lowest-energy candidates that refit the Gaussian */
    float init_std;     /* the Gaussian's initial std (its mean starts at 0) */
    float lo, hi;       /* every action component clipped to [lo, hi]; lo >= hi: no bounds */
    uint64_t seed;      /* the random stream (documented): one seed, one plan, any threads */
    /* per-component search [action_dim] in place of lo, hi, init_std (NULL: those) */
    const jepa_plan_component *components;
    /* after each iteration mean = (1 - m) elites' mean + m mean, std likewise (0: the elites') */
    float momentum_mean, momentum_std;
    /* progress: called after each iteration with its best energy (NULL: not called); it may
       call jepa_ctx_cancel, which stops the plan inside the next iteration */
    void (*on_iteration)(void *user, int iteration, float best_energy);
    void *user;
} jepa_plan_params;

JEPA_API jepa_plan_params jepa_plan_default_params(void);

/* Meta's V-JEPA 2-AC planner (notebooks/utils/mpc_utils.py cem with the WorldModel
 * mpc_args). components points at a static 7-entry table, the Franka action box: xyz
 * in +-0.05 (maxnorm) with std 0.05, the three rotations held at 0, the gripper in
 * +-0.75 with std 1 and a 0.25 deadband (round_small_elements). */
JEPA_API jepa_plan_params jepa_plan_ac_default_params(void);

/* LeWM: the actions [horizon, action_dim] that bring the predicted embedding at the
 * horizon closest (mean |x - goal|) to goal [emb_dim], from a history emb [T, emb_dim]
 * and its past actions [T - 1, action_dim] (NULL when T == 1). energies: NULL or
 * [iterations], the best candidate's energy per iteration; final_energy: NULL or the
 * energy of the returned plan. */
JEPA_API jepa_status jepa_ctx_lewm_plan(jepa_ctx *c, const float *emb, int T, const float *past_actions,
                                        const float *goal, const jepa_plan_params *p, float *actions,
                                        float *energies, float *final_energy);

/* V-JEPA 2-AC: the actions [horizon, 7] whose rollout (jepa_ctx_ac_rollout, normalized)
 * from a history of T frames, tokens [T N, embed_dim] and states [T, 7], with its past
 * actions [T - 1, 7] (NULL when T == 1), ends closest (mean |x - goal| over all N
 * embed_dim values) to goal [N, embed_dim]. As Meta's WorldModel, the history and goal
 * are expected layer-normed (`jepa plan` does that to the images it encodes). */
JEPA_API jepa_status jepa_ctx_ac_plan(jepa_ctx *c, const float *tokens, const float *states, int T,
                                      const float *past_actions, const float *goal, const jepa_plan_params *p,
                                      float *actions, float *energies, float *final_energy);

/* ---- classify ---------------------------------------------------------------- */

/* tokens: [n_tokens, D] encoder output. logits: [n_classes]. */
JEPA_API jepa_status jepa_ctx_classify(jepa_ctx *c, const float *tokens, int n_tokens,
                                       float *logits);

/* ---- preprocessing (input/preprocess.c) --------------------------------------
 * Decoded 8-bit RGB pixels -> the clip layout jepa_ctx_embed() takes, following the
 * model's jepa.pre.* keys: resize (shortest edge or squash), centre crop, normalise.
 * The default reproduces the Hugging Face processors bit for bit: torchvision's uint8
 * resize with antialias=True, top = (H - crop) / 2, (px - 255 mean) / (255 std) in f32. */

typedef enum jepa_resize_filter {
    JEPA_RESIZE_MODEL = 0,     /* jepa.pre.resample, antialiased (torchvision, HF processors) */
    JEPA_RESIZE_BILINEAR_AA,   /* torchvision bilinear, antialias=True */
    JEPA_RESIZE_BICUBIC_AA,    /* torchvision bicubic (Keys a = -0.5), antialias=True */
    JEPA_RESIZE_BILINEAR,      /* torchvision bilinear, antialias=False */
    JEPA_RESIZE_CV2_LINEAR,    /* cv2.resize INTER_LINEAR: Meta's V-JEPA 2.1 eval, no antialias */
} jepa_resize_filter;

typedef enum jepa_norm_form {
    JEPA_NORM_FUSED = 0,       /* (px - 255 mean) / (255 std): HF torchvision backend */
    JEPA_NORM_SEQUENTIAL = 1,  /* (px / 255 - mean) / std: Meta's ClipToTensor + Normalize */
} jepa_norm_form;

typedef struct jepa_preprocess_params {
    jepa_resize_filter filter;
    int resize_short;          /* 0: jepa.pre.resize_short (the square side in squash mode) */
    int crop;                  /* 0: jepa.pre.crop */
    jepa_norm_form norm;
} jepa_preprocess_params;

JEPA_API jepa_preprocess_params jepa_preprocess_default_params(void);

/* The model's own recipe, its jepa.pre.* keys (docs/gguf-schema.md, "Preprocessing"),
 * which jepa_preprocess_params override in part. */
typedef enum jepa_resize_mode {
    JEPA_RESIZE_MODE_SHORTEST_EDGE = 0, /* short side to resize_short (aspect kept), centre crop */
    JEPA_RESIZE_MODE_SQUASH = 1,        /* both sides to resize_short (aspect lost), no crop */
} jepa_resize_mode;

typedef enum jepa_resample {
    JEPA_RESAMPLE_BILINEAR = 0,
    JEPA_RESAMPLE_BICUBIC = 1,
} jepa_resample;

typedef struct jepa_preprocess_recipe {
    float mean[3], std[3];     /* per RGB channel, in units of the rescaled pixel */
    int resize_short;          /* shortest edge: the short side after the resize; squash: the side */
    int crop;                  /* centre crop side (shortest edge; <= resize_short) */
    jepa_resample resample;    /* the filter JEPA_RESIZE_MODEL stands for */
    jepa_resize_mode mode;
    float rescale;             /* pixel scale: 1/255 unless the file says otherwise */
} jepa_preprocess_recipe;

/* Copy m's recipe into *r (zeros when m is NULL). It stays what the loader validated:
 * sides in 1 .. 4096, std >= 1e-6, rescale in [1e-6, 1]. */
JEPA_API void jepa_model_get_preprocess(const jepa_model *m, jepa_preprocess_recipe *r);

/* Size of one preprocessed frame (crop x crop). p may be NULL (defaults). */
JEPA_API jepa_status jepa_preprocess_size(const jepa_model *m, const jepa_preprocess_params *p,
                                          int *out_h, int *out_w);

/* Preprocess one frame rgb[h][w][3] (uint8 RGB, rows packed) into frame t of the clip
 * out[3][T][out_h][out_w]. p may be NULL; err (JEPA_ERR_LEN bytes, or NULL) gets the
 * reason of a failure. Frames of one clip may have different source sizes. */
JEPA_API jepa_status jepa_preprocess_rgb(const jepa_model *m, const uint8_t *rgb, int h, int w,
                                         const jepa_preprocess_params *p, float *out, int T,
                                         int t, char *err);

/* ---- tools: rewriting a model file ------------------------------------------- */

/* Write m's GGUF to path with the matmul weights of the schema's quantization set
 * (docs/gguf-schema.md, "Quantization rules") converted to `type`, a GGUF tensor type
 * number (ggml_type): 0 F32, 1 F16, 30 BF16, 8 Q8_0, 2 Q4_0, 3 Q4_1, 6 Q5_0, 7 Q5_1,
 * 12 Q4_K, 13 Q5_K, 14 Q6_K. Every other key and tensor is copied byte for byte; a weight
 * whose rows do not fill the type's blocks takes the schema's fallback (q4_0, q5_0, q8_0
 * for the K-quants, f16 for the 32-blocks). What `jepa quantize` and `jepa synth` write.
 * JEPA_ERR_UNSUPPORTED for another type, JEPA_ERR_IO when path cannot be written (the
 * message names it), JEPA_ERR_NOMEM; err: JEPA_ERR_LEN bytes, or NULL. */
JEPA_API jepa_status jepa_model_quantize(const jepa_model *m, const char *path, uint32_t type, char *err);

#ifdef __cplusplus
}
#endif
#endif /* JEPA_H */
