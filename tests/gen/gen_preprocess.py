"""Generate tests/input/data/: references for jepa.c's input pipeline (input/), computed by
the libraries the models were evaluated with.

  resize     torchvision.transforms.v2.functional.resize on uint8 CHW tensors (bilinear and
             bicubic, antialias True and False) and cv2.resize INTER_LINEAR, on synthetic
             frames of several sizes and aspect ratios, up and down, odd sizes, 2x, 1 pixel
  pipeline   whole frame pipelines: Hugging Face processors (VJEPA2VideoProcessor,
             ViTImageProcessor in squash mode, BitImageProcessor bicubic) and Meta's V-JEPA
             2.1 eval transform (short side = crop through cv2, centre view, ClipToTensor +
             Normalize), as float tensors [3, T, crop, crop]
  indices    clip frame indices of Meta's loadvideo_decord (np.linspace) and of the dense
             tiling (input/video.h)
  video      three small H.264 files (made once with the ffmpeg CLI, committed) and what
             PyAV's to_ndarray(format="rgb24") returns for them: CRC32 of every frame and
             two frames in full
  e2e        a PNG, its HF-preprocessed tensor for tests/data/vjepa2_tiny, a uint8 frame
             array with its tensor, and the frames PyAV gives at Meta's indices of a video

The synthetic frames come from a 32-bit integer hash that test_preprocess.c evaluates
the same way (frame_pixel below), so only outputs are committed. manifest.txt lists every
case; the C tests read it.

Rerun (from the repository root, venv of tests/gen/README.md plus
`pip install torchvision av opencv-python-headless pillow`):
    .venv-gen/bin/python tests/gen/gen_preprocess.py               # writes tests/input/data/
    .venv-gen/bin/python tests/gen/gen_preprocess.py --fuzz 2000 --tool build/tests/input/resize_tool
The second form writes nothing: it compares pre_resize_u8 (through the resize_tool helper)
with torchvision and cv2 on random sizes and exits non-zero on any difference.
The run is deterministic; the videos are only re-encoded with --remake-videos.
"""
import argparse
import os
import subprocess
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "tests", "input", "data")
M32 = 0xFFFFFFFF

IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


# ---------------------------------------------------------------- synthetic frames
def _hash32(a):
    a = a & M32
    a = ((a ^ (a >> 16)) * 0x7FEB352D) & M32
    a = ((a ^ (a >> 15)) * 0x846CA68B) & M32
    return a ^ (a >> 16)


def frame_pixel(kind, seed, h, w):
    """uint8 [h, w, 3]. noise: a hash per sample; smooth: diagonal colour ramps that wrap
    (sharp edges) plus 3 bits of noise. test_preprocess.c has the same function."""
    y, x, c = np.meshgrid(np.arange(h, dtype=np.uint64), np.arange(w, dtype=np.uint64),
                          np.arange(3, dtype=np.uint64), indexing="ij")
    key = (((np.uint64(seed) * np.uint64(1000003) + y) & M32) * np.uint64(1000003) + x) & M32
    key = (key * np.uint64(4) + c) & M32
    noise = _hash32(key) & np.uint64(255)
    if kind == "noise":
        v = noise
    else:
        v = ((x * (c + np.uint64(1)) * np.uint64(7) + y * (np.uint64(3) - c) * np.uint64(5)) // np.uint64(4)
             + (noise & np.uint64(7))) & np.uint64(255)
    return v.astype(np.uint8)


# ---------------------------------------------------------------- references
def tv_resize(img, oh, ow, filt):
    import torch
    import torchvision.transforms.v2.functional as F
    from torchvision.transforms import InterpolationMode as IM
    modes = {"tv_bilinear_aa": (IM.BILINEAR, True), "tv_bicubic_aa": (IM.BICUBIC, True),
             "tv_bilinear": (IM.BILINEAR, False), "tv_bicubic": (IM.BICUBIC, False)}
    interp, aa = modes[filt]
    t = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1).contiguous()
    return F.resize(t, [oh, ow], interpolation=interp, antialias=aa).permute(1, 2, 0).numpy()


def cv2_resize(img, oh, ow):
    import cv2
    out = cv2.resize(img, (ow, oh), interpolation=cv2.INTER_LINEAR)
    return out if out.ndim == 3 else out[..., None]


def resize_ref(img, oh, ow, filt):
    return cv2_resize(img, oh, ow) if filt == "cv2_linear" else tv_resize(img, oh, ow, filt)


def meta_resize_sizes(h, w, size):
    """get_resize_sizes of Meta's src/datasets/utils/video/functional.py."""
    if w < h:
        return int(size * h / w), size
    return size, int(size * w / h)


def meta21_eval(frames, crop, mean, std):
    """V-JEPA 2.1's EvalVideoTransform (evals/video_classification_frozen/utils.py) for the
    centre one of its 3 spatial views: resize_clip(short side = crop) with cv2 INTER_LINEAR,
    the view at start = (long - crop) // 2, ClipToTensor (float, / 255) and Normalize."""
    import cv2
    import torch
    h, w = frames[0].shape[:2]
    if not ((w <= h and w == crop) or (h <= w and h == crop)):
        nh, nw = meta_resize_sizes(h, w, crop)
        frames = [cv2.resize(f, (nw, nh), interpolation=cv2.INTER_LINEAR) for f in frames]
    buf = np.stack(frames)                       # T H W C
    T, H, W, _ = buf.shape
    step = (max(H, W) - crop) // 2               # num_views = 3: the middle view
    buf = buf[:, step:step + crop] if H > W else buf[:, :, step:step + crop]
    clip = torch.from_numpy(np.ascontiguousarray(buf).transpose(3, 0, 1, 2).astype(np.float64)).float()
    clip = torch.div(clip, 255)
    m = torch.as_tensor(mean, dtype=clip.dtype)[:, None, None, None]
    s = torch.as_tensor(std, dtype=clip.dtype)[:, None, None, None]
    return clip.sub_(m).div_(s).numpy()          # [3, T, crop, crop]


def mirror_pipeline(frames, filt, mode, short, crop, mean, std):
    """Our reading of the HF torchvision backend: resize (shortest edge via
    get_resize_output_image_size, or squash), crop top = int((H - c) / 2), fused
    normalisation. Each case below also runs the real processor and asserts equality."""
    import torch
    out = []
    for f in frames:
        h, w = f.shape[:2]
        if mode == "squash":
            rh = rw = short
        elif w <= h:
            rw, rh = short, int(short * h / w)
        else:
            rh, rw = short, int(short * w / h)
        r = resize_ref(f, rh, rw, filt)
        top, left = int((rh - crop) / 2.0), int((rw - crop) / 2.0)
        r = r[top:top + crop, left:left + crop]
        x = torch.from_numpy(np.ascontiguousarray(r)).permute(2, 0, 1).to(torch.float32)
        m = torch.tensor(mean) * (1.0 / (1 / 255))
        s = torch.tensor(std) * (1.0 / (1 / 255))
        out.append(x.sub(m[:, None, None]).div_(s[:, None, None]).numpy())
    return np.stack(out, axis=1)                 # [3, T, crop, crop]


# ---------------------------------------------------------------- sampling
def meta_clip_indices(video_len, fpc, fstp, num_clips):
    """loadvideo_decord of facebookresearch/vjepa2 src/datasets/video_dataset.py, with
    random_clip_sampling=False and allow_clip_overlap=True (the evaluation setting)."""
    clip_len = int(fpc * fstp)
    partition_len = video_len // num_clips
    clips = []
    for i in range(num_clips):
        if partition_len > clip_len:
            end_indx = clip_len
            start_indx = end_indx - clip_len
            indices = np.linspace(start_indx, end_indx, num=fpc)
            indices = np.clip(indices, start_indx, end_indx - 1).astype(np.int64)
            indices = indices + i * partition_len
        else:
            sample_len = min(clip_len, video_len) - 1
            indices = np.linspace(0, sample_len, num=sample_len // fstp)
            indices = np.concatenate((indices, np.ones(fpc - sample_len // fstp) * sample_len))
            indices = np.clip(indices, 0, sample_len - 1).astype(np.int64)
            clip_step = 0
            if video_len > clip_len:
                clip_step = (video_len - clip_len) // (num_clips - 1)
            indices = indices + i * clip_step
        clips.append(np.clip(indices, 0, video_len - 1))   # decord reads -1 as the last frame
    return clips


def dense_clip_indices(video_len, fpc, fstp, stride):
    """Dense tiling of input/video.h: windows every `stride` frames, one more ending on the
    last frame if a tail is left, each window sampled with np.linspace like one Meta clip."""
    W = fpc * fstp
    stride = stride if stride > 0 else W
    if video_len <= W:
        return meta_clip_indices(video_len, fpc, fstp, 1)
    within = np.clip(np.linspace(0, W, num=fpc), 0, W - 1).astype(np.int64)
    starts = list(range(0, video_len - W + 1, stride))
    if starts[-1] + W < video_len:
        starts.append(video_len - W)
    return [within + s for s in starts]


# ---------------------------------------------------------------- writers
class Manifest:
    def __init__(self):
        self.lines = ["# tests/input/data manifest: written by tests/gen/gen_preprocess.py, read by tests/input/*.c"]

    def add(self, *fields):
        self.lines.append(" ".join(str(f) for f in fields))

    def write(self, path):
        with open(path, "w") as f:
            f.write("\n".join(self.lines) + "\n")


def save(name, arr):
    np.save(os.path.join(OUT, name), np.ascontiguousarray(arr))
    return name


RESIZE_CASES = [
    # name, kind, seed, h, w, oh, ow
    ("up", "noise", 1, 37, 53, 61, 87),
    ("down", "smooth", 2, 199, 301, 70, 105),
    ("down_far", "noise", 3, 480, 640, 43, 57),
    ("mixed", "noise", 4, 64, 48, 30, 97),
    ("half", "smooth", 5, 96, 128, 48, 64),
    ("width_only", "noise", 6, 50, 70, 50, 33),
    ("one_px", "noise", 7, 1, 1, 5, 7),
    ("column", "smooth", 8, 9, 1, 3, 4),
]
FILTERS = ["tv_bilinear_aa", "tv_bicubic_aa", "tv_bilinear", "tv_bicubic", "cv2_linear"]


def gen_resize(man):
    for name, kind, seed, h, w, oh, ow in RESIZE_CASES:
        img = frame_pixel(kind, seed, h, w)
        for filt in FILTERS:
            ref = resize_ref(img, oh, ow, filt)
            assert ref.shape == (oh, ow, 3), (name, filt, ref.shape)
            f = save(f"resize_{name}_{filt}.npy", ref)
            man.add("resize", name, kind, seed, h, w, filt, oh, ow, f)


def gen_pipelines(man):
    import torch
    from transformers import BitImageProcessor, VJEPA2VideoProcessor, ViTImageProcessor

    def add(name, kind, seed, T, h, w, filt, mode, short, crop, norm, mean, std, tensor):
        f = save(f"pipe_{name}.npy", tensor.astype(np.float32))
        man.add("pipeline", name, kind, seed, T, h, w, filt, mode, short, crop, norm,
                *[repr(float(v)) for v in mean], *[repr(float(v)) for v in std], repr(1 / 255), f)

    # V-JEPA 2 (HF VJEPA2VideoProcessor): short int(64 * 256 / 224) = 73, crop 64
    frames = [frame_pixel("smooth", 20 + t, 90, 120) for t in range(2)]
    hf = VJEPA2VideoProcessor(crop_size={"height": 64, "width": 64})(
        np.stack(frames), return_tensors="pt")["pixel_values_videos"][0].permute(1, 0, 2, 3).numpy()
    ours = mirror_pipeline(frames, "tv_bilinear_aa", "shortest_edge", 73, 64, *IMAGENET)
    assert np.array_equal(hf.view(np.uint32), ours.view(np.uint32)), "VJEPA2VideoProcessor mirror"
    add("vjepa2_video", "smooth", 20, 2, 90, 120, "tv_bilinear_aa", "shortest_edge", 73, 64, "fused", *IMAGENET, hf)

    # portrait, odd sizes, noise: the same processor
    frames = [frame_pixel("noise", 30, 101, 67)]
    hf = VJEPA2VideoProcessor(crop_size={"height": 48, "width": 48})(
        np.stack(frames), return_tensors="pt")["pixel_values_videos"][0].permute(1, 0, 2, 3).numpy()
    ours = mirror_pipeline(frames, "tv_bilinear_aa", "shortest_edge", 54, 48, *IMAGENET)
    assert np.array_equal(hf.view(np.uint32), ours.view(np.uint32)), "VJEPA2VideoProcessor mirror (portrait)"
    add("vjepa2_portrait", "noise", 30, 1, 101, 67, "tv_bilinear_aa", "shortest_edge", 54, 48, "fused", *IMAGENET, hf)

    # I-JEPA (HF ViTImageProcessor): squash to 40 x 40, mean = std = 0.5
    half = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    img = frame_pixel("noise", 40, 37, 53)
    hf = ViTImageProcessor(size={"height": 40, "width": 40}, image_mean=half[0], image_std=half[1])(
        img, return_tensors="pt")["pixel_values"][0].numpy()[:, None]
    ours = mirror_pipeline([img], "tv_bilinear_aa", "squash", 40, 40, *half)
    assert np.array_equal(hf.view(np.uint32), ours.view(np.uint32)), "ViTImageProcessor mirror"
    add("ijepa_squash", "noise", 40, 1, 37, 53, "tv_bilinear_aa", "squash", 40, 40, "fused", *half, hf)

    # LeJEPA-like (HF BitImageProcessor): bicubic, short 36, crop 32
    img = frame_pixel("smooth", 50, 75, 44)
    hf = BitImageProcessor(size={"shortest_edge": 36}, crop_size={"height": 32, "width": 32}, resample=3,
                           image_mean=IMAGENET[0], image_std=IMAGENET[1], do_convert_rgb=False)(
        img, return_tensors="pt")["pixel_values"][0].numpy()[:, None]
    ours = mirror_pipeline([img], "tv_bicubic_aa", "shortest_edge", 36, 32, *IMAGENET)
    assert np.array_equal(hf.view(np.uint32), ours.view(np.uint32)), "BitImageProcessor mirror"
    add("lejepa_bicubic", "smooth", 50, 1, 75, 44, "tv_bicubic_aa", "shortest_edge", 36, 32, "fused", *IMAGENET, hf)

    # V-JEPA 2.1 eval (Meta's EvalVideoTransform): short = crop = 32 through cv2, sequential
    frames = [frame_pixel("noise", 60 + t, 45, 70) for t in range(2)]
    meta = meta21_eval(frames, 32, *IMAGENET)
    add("vjepa21_eval", "noise", 60, 2, 45, 70, "cv2_linear", "shortest_edge", 32, 32, "sequential", *IMAGENET, meta)
    frames = [frame_pixel("smooth", 70, 96, 64)]   # portrait, exact 2x downscale (cv2's INTER_AREA route)
    meta = meta21_eval(frames, 32, *IMAGENET)
    add("vjepa21_eval_2x", "smooth", 70, 1, 96, 64, "cv2_linear", "shortest_edge", 32, 32, "sequential", *IMAGENET, meta)


def gen_indices(man):
    combos = []
    for L in [1, 2, 5, 31, 64, 65, 100, 129, 300, 3001]:
        for fpc, fstp in [(16, 4), (8, 2), (4, 1), (2, 3), (1, 5), (64, 2)]:
            for nc in [1, 2, 3, 8]:
                combos.append((L, fpc, fstp, nc))
    for L, fpc, fstp, nc in combos:
        clips = meta_clip_indices(L, fpc, fstp, nc)
        man.add("clips", L, fpc, fstp, nc, ":", *np.concatenate(clips).tolist())
    for L in [1, 10, 64, 65, 100, 129, 1000, 3001]:
        for fpc, fstp in [(16, 4), (8, 2), (4, 1)]:
            for stride in [0, 7, 32]:
                clips = dense_clip_indices(L, fpc, fstp, stride)
                man.add("dense", L, fpc, fstp, stride, len(clips), ":", *np.concatenate(clips).tolist())


VIDEOS = [
    # file, ffmpeg arguments after the lavfi input
    ("video_601.mp4", "testsrc2=size=64x48:rate=25", ["-frames:v", "40", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                                                      "-g", "12", "-bf", "2"]),
    ("video_709_w98.mp4", "testsrc2=size=98x66:rate=30", ["-frames:v", "20", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                                                          "-colorspace", "bt709", "-color_primaries", "bt709",
                                                          "-color_trc", "bt709"]),
    ("video_full.mp4", "mandelbrot=size=80x48:rate=25", ["-frames:v", "16", "-c:v", "libx264", "-pix_fmt", "yuvj420p"]),
]


def gen_videos(man, remake):
    import av
    for name, src, args in VIDEOS:
        path = os.path.join(OUT, name)
        if remake or not os.path.exists(path):
            subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", src, *args,
                            "-map_metadata", "-1", "-fflags", "+bitexact", "-flags:v", "+bitexact", path], check=True)
        with av.open(path) as c:
            frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
        with av.open(path) as c:
            n_packets = sum(1 for p in c.demux(video=0) if p.size > 0)
        h, w = frames[0].shape[:2]
        crcs = [f"{zlib.crc32(f.tobytes()):08x}" for f in frames]
        man.add("video", name, len(frames), n_packets, h, w, ":", *crcs)
        for k in (0, len(frames) - 1):
            man.add("videoframe", name, k, save(f"{name[:-4]}_frame{k}.npy", frames[k]))


def gen_e2e(man):
    import av
    from PIL import Image
    from transformers import VJEPA2VideoProcessor
    proc = VJEPA2VideoProcessor(crop_size={"height": 64, "width": 64})   # tests/data/vjepa2_tiny: 73 / 64

    img = frame_pixel("smooth", 80, 90, 120)
    png = os.path.join(OUT, "e2e.png")
    Image.fromarray(img).save(png, optimize=True)
    dec = np.asarray(Image.open(png).convert("RGB"))
    assert np.array_equal(dec, img)
    t = proc(dec[None], return_tensors="pt")["pixel_values_videos"][0].permute(1, 0, 2, 3).numpy()
    man.add("e2e_image", "e2e.png", "smooth", 80, 90, 120, save("e2e_png_input.npy", t))   # [3, 1, 64, 64]

    frames = np.stack([frame_pixel("noise", 90 + k, 50, 70) for k in range(2)])
    save("e2e_frames.npy", frames)                                                        # [2, 50, 70, 3] uint8
    t = proc(frames, return_tensors="pt")["pixel_values_videos"][0].permute(1, 0, 2, 3).numpy()
    man.add("e2e_frames", "e2e_frames.npy", save("e2e_frames_input.npy", t))              # [3, 2, 64, 64]

    # jepa embed VIDEO --frames-per-clip 4 --frame-step 3 must equal --frames-npy of these
    name = "video_601.mp4"
    with av.open(os.path.join(OUT, name)) as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    idx = meta_clip_indices(len(frames), 4, 3, 1)[0]
    man.add("e2e_video", name, 4, 3, save("e2e_video_frames.npy", np.stack([frames[i] for i in idx])),
            ":", *idx.tolist())


# ---------------------------------------------------------------- fuzz
def fuzz(n, tool, seed):
    rng = np.random.default_rng(seed)
    bad = 0
    for it in range(n):
        h, w = (int(v) for v in rng.integers(1, 400, 2))
        hi = 80 if rng.random() < 0.3 else 500
        oh, ow = (int(v) for v in rng.integers(1, hi, 2))
        img = frame_pixel("noise" if it % 2 else "smooth", it, h, w)
        for filt in FILTERS:
            ref = resize_ref(img, oh, ow, filt)
            r = subprocess.run([tool, filt, str(h), str(w), "3", str(oh), str(ow)], input=img.tobytes(),
                               capture_output=True)
            out = np.frombuffer(r.stdout, np.uint8).reshape(oh, ow, 3) if r.returncode == 0 else None
            if out is None or not np.array_equal(out, ref):
                bad += 1
                print(f"MISMATCH {filt} {h}x{w} -> {oh}x{ow}: "
                      f"{'tool failed' if out is None else int(np.abs(out.astype(int) - ref).max())}")
    print(f"fuzz: {n} sizes x {len(FILTERS)} filters, {bad} mismatches")
    return bad == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fuzz", type=int, default=0, help="compare N random sizes through --tool, write nothing")
    ap.add_argument("--tool", default=os.path.join(ROOT, "build", "tests", "input", "resize_tool"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--remake-videos", action="store_true")
    a = ap.parse_args()
    if a.fuzz:
        sys.exit(0 if fuzz(a.fuzz, a.tool, a.seed) else 1)

    import cv2
    import torch
    import torchvision
    import transformers
    import av
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    man = Manifest()
    man.add("# torch", torch.__version__, "torchvision", torchvision.__version__, "opencv", cv2.__version__,
            "transformers", transformers.__version__, "av", av.__version__, "numpy", np.__version__,
            "cpu_capability", torch.backends.cpu.get_cpu_capability())
    gen_resize(man)
    gen_pipelines(man)
    gen_indices(man)
    gen_videos(man, a.remake_videos)
    gen_e2e(man)
    man.write(os.path.join(OUT, "manifest.txt"))
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"wrote {OUT}: {len(os.listdir(OUT))} files, {total / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
