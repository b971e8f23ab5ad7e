/*
 * inputs.c — see inputs.h: the options of pixel inputs, and opening them for a model as
 * a clip reader (input/clips.h, where the decoding, the clip plan and the frame cache
 * live). Tested by tests/input/test_cli_input.sh.
 */
#include "cli/inputs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "input/image.h"

/* ---- parsing ------------------------------------------------------------------------ */

/* One more image (an item, or a frame of the --as-clip clip). 0 or CLI_EXIT_USAGE. */
static int add_image(struct inputs_opts *o, const char *cmd, const char *path) {
    if (o->n_images < CLIPS_MAX_IMAGES) {
        o->images[o->n_images++] = path;
        return 0;
    }
    return cli_usage_error(cmd, "more than %d images; a longer list goes in --inputs LIST.txt (with --out-dir D "
                                "or -o FEATS.npy)", CLIPS_MAX_IMAGES);
}

static int cmp_path(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* --as-clip DIR: the directory's image files (by their bytes, not their names; hidden ones
 * left out) as frames, in byte order of their names. 0, or the exit status after printing. */
static int add_dir_frames(struct inputs_opts *o, const char *cmd, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return cli_fail(dir, "cannot list the directory: %s", strerror(errno));
    const int first = o->n_listed;
    int rc = 0;
    for (struct dirent *de; !rc && (de = readdir(d));) {
        char path[4096];
        struct stat st;
        if (de->d_name[0] == '.') continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path) {
            rc = cli_usage_error(cmd, "a path in %s is longer than %zu bytes", dir, sizeof path - 1);
        } else if (!stat(path, &st) && S_ISREG(st.st_mode) && image_is_image_file(path)) {
            char **grown = o->n_listed + o->n_images < CLIPS_MAX_IMAGES
                         ? realloc(o->listed, sizeof(char *) * (size_t)(o->n_listed + 1)) : NULL;
            if (grown) o->listed = grown;
            if (!grown || !(o->listed[o->n_listed] = strdup(path)))
                rc = cli_usage_error(cmd, "%s: more than %d images in one clip (or out of memory)", dir,
                                     CLIPS_MAX_IMAGES);
            else
                o->n_listed++;
        }
    }
    closedir(d);
    if (rc) return rc;
    if (o->n_listed == first) return cli_fail(dir, "no image files in this directory");
    qsort(o->listed + first, (size_t)(o->n_listed - first), sizeof(char *), cmp_path);
    for (int k = first; k < o->n_listed && !rc; k++) rc = add_image(o, cmd, o->listed[k]);
    return rc;
}

void inputs_free(struct inputs_opts *o) {
    for (int k = 0; k < o->n_listed; k++) free(o->listed[k]);
    free(o->listed);
    o->listed = NULL, o->n_listed = 0;
}

int inputs_parse(struct inputs_opts *o, const char *cmd, bool clips_ok, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    long long x = 0;
    int rc;
    enum { NONE, INT_FPC, INT_STEP, INT_CLIPS, INT_STRIDE, INT_SHORT } kind = NONE;
    const bool multi = !strcmp(a, "--dense") || !strcmp(a, "--num-clips") || !strcmp(a, "--stride");
    if (multi && !clips_ok) return 0;   /* not an option of this command */
    if (!strcmp(a, "--dense")) { o->dense = 1; o->sampling_given = 1; return 1; }
    if (!strcmp(a, "--no-antialias")) { o->no_antialias = 1; o->pre_given = 1; return 1; }
    if (!strcmp(a, "--exif-rotate")) { image_exif_rotate = true; return 1; }   /* every image decoded after this */
    if (!strcmp(a, "--as-clip")) { o->as_clip = 1; return 1; }
    if (!strcmp(a, "-i") || !strcmp(a, "--image") || !strcmp(a, "--frames-npy") || !strcmp(a, "--norm") ||
        !strcmp(a, "--images-npy") ||
        !strcmp(a, "--frames-per-clip") || !strcmp(a, "--frame-step") || !strcmp(a, "--num-clips") ||
        !strcmp(a, "--stride") || !strcmp(a, "--resize-short")) {
        if (!v) return cli_usage_error(cmd, "option %s needs a value", a);
        (*i)++;
    } else {
        return 0;
    }
    if (!strcmp(a, "-i") || !strcmp(a, "--image")) return add_image(o, cmd, v) ? CLI_EXIT_USAGE : 1;
    if (!strcmp(a, "--images-npy")) {
        if (o->images_npy) return cli_usage_error(cmd, "--images-npy given twice");
        o->images_npy = v;
        return 1;
    }
    if (!strcmp(a, "--frames-npy")) {
        if (o->frames_npy) return cli_usage_error(cmd, "--frames-npy given twice");
        o->frames_npy = v;
        return 1;
    }
    if (!strcmp(a, "--norm")) {
        o->pre_given = 1;
        if (!strcmp(v, "fused")) o->norm_sequential = 0;
        else if (!strcmp(v, "sequential")) o->norm_sequential = 1;
        else return cli_usage_error(cmd, "--norm takes fused or sequential, not '%s'", v);
        return 1;
    }
    if (!strcmp(a, "--frames-per-clip")) kind = INT_FPC;
    else if (!strcmp(a, "--frame-step")) kind = INT_STEP;
    else if (!strcmp(a, "--num-clips")) kind = INT_CLIPS;
    else if (!strcmp(a, "--stride")) kind = INT_STRIDE;
    else kind = INT_SHORT;
    long long hi = kind == INT_STRIDE ? (1LL << 40) : kind == INT_FPC ? 4096 : kind == INT_SHORT ? JI_MAX_PRE_SIDE
                 : CLIPS_MAX_CLIPS;
    if ((rc = cli_parse_int(cmd, a, v, 1, hi, &x))) return rc;
    switch (kind) {
    case INT_FPC: o->fpc = (int)x; break;
    case INT_STEP: o->fstp = (int)x; break;
    case INT_CLIPS: o->num_clips = (int)x; break;
    case INT_STRIDE: o->stride = x; break;
    default: o->resize_short = (int)x; o->pre_given = 1; return 1;
    }
    o->sampling_given = 1;
    return 1;
}

int inputs_positional(struct inputs_opts *o, const char *cmd, const char *arg) {
    /* a PNG, JPEG or WebP goes through the image decoder, as -i does (PIL's pixels), not through
     * the video decoder */
    if (image_is_image_file(arg)) return add_image(o, cmd, arg);
    struct stat st;
    if (!stat(arg, &st) && S_ISDIR(st.st_mode)) {
        if (!o->as_clip)
            return cli_usage_error(cmd, "%s is a directory: its images are one clip with --as-clip (a list of "
                                        "inputs, one output each, is embed / classify --out-dir D)", arg);
        return add_dir_frames(o, cmd, arg);
    }
    if (o->video)
        return cli_usage_error(cmd, "one video at a time ('%s' and '%s'); a list of inputs goes with --out-dir D "
                                    "or -o FEATS.npy --inputs LIST.txt", o->video, arg);
    o->video = arg;
    return 0;
}

int inputs_given(const struct inputs_opts *o) {
    return (o->n_images > 0) + (o->images_npy != NULL) + (o->frames_npy != NULL) + (o->video != NULL);
}

bool inputs_are_items(const struct inputs_opts *o) {
    return o->images_npy || (o->n_images > 1 && !o->as_clip);
}

const char *inputs_item_name(const struct inputs_opts *o, int k) {
    return o->images_npy ? o->images_npy : k >= 0 && k < o->n_images ? o->images[k] : inputs_name(o);
}

int inputs_check(const struct inputs_opts *o, const char *cmd) {
    if (inputs_given(o) > 1)
        return cli_usage_error(cmd, "give one kind of input: images (-i IMAGE or FILE, one output row each), "
                                    "--images-npy, --frames-npy or one VIDEO; a mixed list goes with --out-dir D");
    if (o->as_clip && !o->n_images)
        return cli_usage_error(cmd, "--as-clip makes one clip of the images (-i IMAGE, FILE, a DIR); --frames-npy "
                                    "and a VIDEO are clips already, --images-npy holds items");
    if (o->pre_given && !inputs_given(o))
        return cli_usage_error(cmd, "--no-antialias / --resize-short / --norm preprocess -i, --frames-npy or a "
                                    "VIDEO; an --input-tensor is used as it is");
    if (o->sampling_given && !o->video)
        return cli_usage_error(cmd, "--frames-per-clip / --frame-step / --num-clips / --dense / --stride "
                                    "sample a VIDEO; images, --images-npy and --frames-npy are used as given");
    if (o->dense && o->num_clips)
        return cli_usage_error(cmd, "--dense tiles the whole video; it does not take --num-clips");
    if (o->stride && !o->dense) return cli_usage_error(cmd, "--stride goes with --dense");
    return 0;
}

void inputs_usage(bool clips_ok) {
    printf("  [-i, --image] IMAGE ...  images (-i may be left out): each image is one item with\n"
           "                        its own output row, on image and video models alike;\n"
           "                        several are stacked ([B, D] pooled, [B, N, D] tokens), each\n"
           "                        preprocessed on its own and encoded alone (--batch N: N\n"
           "                        per forward, within rounding; default N = 8 with -g)\n"
           "  --images-npy F.npy    uint8 [N, H, W, 3] RGB images: N items, stacked\n"
           "  --as-clip             the images, in order, are the frames of ONE clip; a DIR\n"
           "                        with --as-clip: its images, in byte order of their names\n"
           "  --frames-npy F.npy    uint8 [T, H, W, 3] RGB frames, one clip\n"
           "  VIDEO                 a video file (decoded in order, never seeking); an image\n"
           "                        named this way is read as -i reads it (PNG, JPEG, WebP,\n"
           "                        BMP, GIF, TGA, TIFF: the decoder goes by the file's bytes);\n"
           "                        on an image-only model say which frames\n"
           "                        (--frames-per-clip 1 with --num-clips C or --dense): one\n"
           "                        row per frame\n"
           "  --exif-rotate         turn images by their EXIF orientation, as PIL's\n"
           "                        ImageOps.exif_transpose (default: as stored, as HF does)\n"
           "  --frames-per-clip F   frames per clip (default: the model's jepa.enc.n_frames)\n"
           "  --frame-step S        a clip spans F*S frames, sampled with np.linspace (default 4)\n");
    if (clips_ok)
        printf("  --num-clips C         C clips over the video; classify averages their softmax\n"
               "  --dense [--stride K]  clips every K frames over the whole video (default: back to\n"
               "                        back); one output per clip\n");
    printf("  --no-antialias        cv2.INTER_LINEAR resize, as Meta's V-JEPA 2.1 eval (with\n"
           "                        --resize-short CROP --norm sequential: its whole transform)\n"
           "  --resize-short N      short side after the resize (default: jepa.pre.resize_short)\n"
           "  --norm fused|sequential  (px-255m)/(255s) as HF (default) or (px/255-m)/s as Meta\n");
}


/* ---- opening ----------------------------------------------------------------------------- */

const char *inputs_name(const struct inputs_opts *o) {
    return o->video ? o->video : o->frames_npy ? o->frames_npy : o->images_npy ? o->images_npy
         : o->n_images ? o->images[0] : "input";
}

jepa_status inputs_open_quiet(struct clip_reader **out, const struct inputs_opts *o, const jepa_model *m,
                              struct jerr *e) {
    jepa_preprocess_params pp = jepa_preprocess_default_params();
    if (o->no_antialias) pp.filter = JEPA_RESIZE_CV2_LINEAR;
    pp.resize_short = o->resize_short;
    pp.norm = o->norm_sequential ? JEPA_NORM_SEQUENTIAL : JEPA_NORM_FUSED;
    const struct clip_inputs in = {
        .video = o->video, .frames_npy = o->images_npy ? o->images_npy : o->frames_npy, .images = o->images,
        .n_images = o->n_images,
        .sampling = {.frames_per_clip = o->fpc, .frame_step = o->fstp, .num_clips = o->num_clips,
                     .dense = o->dense, .stride = o->stride},
        .items = o->images_npy || (!o->frames_npy && !o->as_clip)};
    jepa_preprocess_recipe recipe;
    jepa_model_info info;
    jepa_model_get_preprocess(m, &recipe);
    jepa_model_get_info(m, &info);
    return clips_open_inputs(out, &in, &recipe, &pp, info.n_frames, "--resize-short", e);
}

int inputs_open(struct clip_reader **out, const struct inputs_opts *o, const jepa_model *m, bool verbose) {
    struct jerr e = {0};
    if (inputs_open_quiet(out, o, m, &e)) return cli_fail(NULL, "%s", e.msg);
    if (o->video && verbose) {   /* the clip plan */
        int w, h, T, H, W;
        const int64_t len = clips_video_length(*out, &w, &h), n = clips_count(*out);
        clips_shape(*out, &T, &H, &W);
        const int step = o->fstp ? o->fstp : CLIPS_DEFAULT_FRAME_STEP;
        fprintf(stderr, "jepa: %s: %lld frames of %dx%d; %lld clip%s of %d frames, step %d (window %lld)%s",
                o->video, (long long)len, w, h, (long long)n, n > 1 ? "s" : "", T, step,
                (long long)T * step, n == 1 ? ": frames" : "\n");
        if (n == 1) {
            for (int t = 0; t < T; t++) fprintf(stderr, " %lld", (long long)clips_frames(*out, 0)[t]);
            fprintf(stderr, "\n");
        }
    }
    return 0;
}
