"""jepa — JEPA vision models (V-JEPA 2 / 2.1, I-JEPA, LeVJEPA, LeJEPA, LeWM, V-JEPA 2-AC)
read from GGUF files (jepa.cpp schema v1) and run on jepa.c's engine.

    import jepa_c as jepa
    model = jepa.Model("vjepa2_1_vitb.gguf", threads=2)
    feats = model.embed("frame.jpg", pool="mean")          # numpy float32 [D]
    rows = model.embed(["a.jpg", "b.png"], pool="mean")    # [2, D]: one row per item
    clips = model.embed("video.mp4", num_clips=4)           # [4, N, D]
    top = model.classify("video.mp4").top                   # [(index, label, prob), ...]

Arrays in and out are numpy. Inputs are items, each giving one output row (as `jepa serve`
treats a list):
  - an image path or a video path (decoded as `jepa embed` decodes it: frames_per_clip,
    frame_step, num_clips, dense, stride; the model's preprocessing, with antialias /
    resize_short / norm overrides); a PIL image of any mode (converted to RGB as Hugging
    Face's convert_to_rgb does) or a uint8 RGB image [H, W, 3];
  - several items: a list of those, or uint8 RGB images [N, H, W, 3]: the output gets a
    leading axis of N rows, row k what item k alone gives;
  - a preprocessed float32 image [C, H, W], clip [C, T, H, W], or a batch of B items:
    [B, C, T, H, W], layout="BCHW" for images [B, C, H, W] (Hugging Face's pixel_values),
    layout="BTCHW" for Hugging Face's pixel_values_videos [B, T, C, H, W] ("TCHW" one clip);
  - frames of one clip are said explicitly: as_clip=True makes one clip of a list of image
    paths, of PIL images or of uint8 frames [T, H, W, 3]; a video file is one clip per
    sampled window.

The computation releases the GIL. One Model may be used from any number of threads: each
call takes a context (the engine's per-thread state) from the model's pool, so calls from
two threads run at once. Errors raise jepa.Error with the engine's one-line reason.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import warnings
from dataclasses import dataclass, fields
from typing import Callable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _jepa

__all__ = ["Model", "ModelInfo", "Classification", "Plan", "Error", "__version__", "version", "pull"]
from .client import Client  # noqa: E402  jepa serve over HTTP with Model's methods
__all__.append("Client")

Error = _jepa.Error
__version__: str = _jepa.version()

PathLike = Union[str, "os.PathLike[str]"]
Input = Union[PathLike, Sequence[PathLike], np.ndarray, "PIL.Image.Image", Sequence["PIL.Image.Image"]]

_POOLS = ("none", "mean", "cls", "lewm")
_LAYOUTS = (None, "CHW", "BCHW", "CTHW", "BCTHW", "TCHW", "BTCHW")
_MODALITY = {"auto": 0, "video": 1, "image": 2}
_CV2_LINEAR = 4          # jepa_resize_filter JEPA_RESIZE_CV2_LINEAR (0: the model's)
_NORM = {"fused": 0, "sequential": 1}


def version() -> str:
    """The engine's version, as `jepa --version` prints it."""
    return __version__


def build_info() -> dict:
    """What this build of the engine is, as `jepa --version` prints it: {"version": ...,
    "commit": ... ("unknown" outside git), "kernels": [ISA levels compiled], "images":
    [formats decoded], "cuda", "openmp", "openblas", "video", "server", "pull", "static":
    bool, "compiler": str}. The `jepa` command installed beside the package is built with it
    and prints the same."""
    commit, lines = _jepa.build_info()
    info: dict = {"version": __version__, "commit": commit}
    for line in lines.splitlines():
        key, _, value = line.partition(": ")
        if value in ("yes", "no"):
            info[key] = value == "yes"
        elif key in ("kernels", "images"):
            info[key] = [] if value == "none" else value.split()
        else:
            info[key] = value
    return info


__all__.append("build_info")


def pull(repo: str, type: Optional[str] = None, *, endpoint: Optional[str] = None,
         retries: Optional[int] = None, stall_timeout: Optional[int] = None,
         progress: Optional[bool] = None) -> str:
    """Download a GGUF file from the Hugging Face hub into the cache, as `jepa pull` does,
    and return its path: ``jepa.Model(jepa.pull("OWNER/NAME"))``.

    repo is "OWNER/NAME" or "OWNER/NAME:FILE"; type picks the file by its quantization
    suffix ("f16", "q8_0", ...; default: the only GGUF, or the f16 one). The cache is
    $JEPA_CACHE, else $XDG_CACHE_HOME/jepa, else ~/.cache/jepa; the hub is endpoint, else
    $HF_ENDPOINT, else https://huggingface.co. The file's sha256 is checked against the
    hub's before it is put in place, a partial download is resumed, and a cached copy with
    the hub's sha256 is not downloaded again. retries (default 4) and stall_timeout
    (seconds below 1 KiB/s, default 30) bound each try; progress (default: stderr is a
    terminal) draws a bar on stderr. Raises ValueError for a bad name, jepa.Error for
    what failed (one line: a 404, a checksum mismatch, the network). docs/pull.md.

    A repository that holds a checkpoint the converter reads (config.json and safetensors,
    no GGUF) is downloaded and converted into the cache as NAME-TYPE.gguf (type f32, f16 or
    bf16; default f16), and that GGUF is returned; a second call returns it as it is
    (jepa_c.hub; jepa_c.convert.ConvertError when the converter refuses it)."""
    if progress is None:
        progress = sys.stderr is not None and sys.stderr.isatty()
    repo = os.fspath(repo)
    retries = -1 if retries is None else int(retries)
    stall_timeout = 0 if stall_timeout is None else int(stall_timeout)
    path = _jepa.pull(repo, type, endpoint, retries, stall_timeout, bool(progress))
    if path is not None:
        return path
    from .hub import pull_checkpoint
    return pull_checkpoint(repo, type, endpoint=endpoint, retries=retries, stall_timeout=stall_timeout,
                           progress=bool(progress))


@dataclass(frozen=True)
class ModelInfo:
    """What a model file holds (include/jepa.h, jepa_model_info)."""
    family: str
    modality: str
    name: str
    embed_dim: int
    n_layer: int
    n_head: int
    head_dim: int
    ffn_dim: int
    patch_size: int
    tubelet_size: int
    img_size: int
    n_frames: int
    in_chans: int
    has_cls: bool
    has_predictor: bool
    pred_out_dim: int
    has_head: bool
    n_classes: int
    n_hier: int
    emb_dim: int
    predictor: Optional[str]
    action_dim: int
    state_dim: int
    pred_n_frames: int
    pred_tokens_per_frame: int
    pred_embed_dim: int
    pred_n_layer: int
    pred_n_head: int
    pred_ffn_dim: int


@dataclass(frozen=True)
class Classification:
    """`probs` [K]: the mean over clips of each clip's softmax (as `jepa classify` ranks);
    `logits` [K] for one clip, [B, K] for several; `top`: (index, label, prob), best first."""
    probs: np.ndarray
    logits: np.ndarray
    top: List[Tuple[int, Optional[str], float]]


@dataclass(frozen=True)
class Plan:
    """A planner's answer: actions [horizon, action_dim], the best energy of each
    iteration [iterations], and the energy of the returned plan."""
    actions: np.ndarray
    energies: np.ndarray
    final_energy: float


def _f32(a, name: str) -> np.ndarray:
    """A C-contiguous float32 view of a, copying only when it is not one already."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    if not np.isfinite(a).all():
        raise Error(f"{name}: the array holds NaN or infinity")
    return a


def _ids(a, name: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
        raise Error(f"{name}: a 1-D array of integer token ids, got {a.dtype} {a.shape}")
    if a.size and (a.min() < -(2 ** 31) or a.max() >= 2 ** 31):
        raise Error(f"{name}: ids beyond int32")
    return np.ascontiguousarray(a, dtype=np.int32)


class _Clips:
    """The clips of one input: either in memory (x [B, C, T, H, W]) or a reader."""

    def __init__(self, x: Optional[np.ndarray], reader, stacked: bool, name: str):
        self.x, self.reader, self.stacked, self.name = x, reader, stacked, name
        if x is not None:
            self.count = x.shape[0]
            _, self.T, self.H, self.W = x.shape[1:]
        else:
            self.count = reader.count
            _, self.T, self.H, self.W = reader.shape
        self.note: Optional[str] = None

    def batches(self, G: int) -> Iterator[Tuple[int, int, object]]:
        """(k0, g, x) per pass of g <= G clips: x the clips [g, C, T, H, W] in memory, or the
        reader, which Context.embed reads the next g clips from straight into its arena
        (jepa_ctx_embed_input: the clips cost no memory of their own)."""
        for k0 in range(0, self.count, G):
            g = min(G, self.count - k0)
            yield k0, g, (self.x[k0:k0 + g] if self.x is not None else self.reader)

    def noted(self, note: Optional[str]) -> None:
        """Keeps the reader's first note (what its decoding had to do: Context.embed's return)."""
        if note and not self.note:
            self.note = note


class _Later:
    """An item of several, opened when its forward pass comes: open() gives its _Clips.
    shape (T, H, W): an image's, known before decoding (images of one shape share passes);
    None: a video, encoded on its own."""

    def __init__(self, open_: Callable[[], _Clips], name: str, shape: Optional[Tuple[int, int, int]]):
        self.open, self.name, self.shape = open_, name, shape


def _is_path(x) -> bool:
    return isinstance(x, (str, os.PathLike))


def _is_pil(x) -> bool:
    image = sys.modules.get("PIL.Image")   # not imported: x cannot be a PIL image
    return image is not None and isinstance(x, image.Image)


def _pil_rgb(img) -> np.ndarray:
    """A PIL image of any mode as uint8 RGB [H, W, 3], by Hugging Face's convert_to_rgb
    (transformers.image_transforms): an image with an alpha band ("A" among its bands: RGBA,
    LA, PA) or a transparency entry (a P or L image's tRNS) is converted to RGBA and
    composited over opaque white; any other mode (L, P, CMYK, I;16, YCbCr, ...) is PIL's
    convert("RGB"). A multi-frame image gives its current frame."""
    from PIL import Image
    if "A" in img.getbands() or img.info.get("transparency") is not None:
        rgba = img.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        rgb = Image.alpha_composite(white, rgba).convert("RGB")
    else:
        rgb = img.convert("RGB")
    return np.asarray(rgb, dtype=np.uint8)


class Model:
    """A JEPA model from a schema-v1 GGUF file (memory-mapped; loaded once).

    threads: the engine's threads per call (None or 0: every core). device: "cpu",
    "cuda" or "cuda:N". cpu: cap the CPU kernels' instruction set ("scalar", "avx2",
    "avx512", "neon"), as `jepa --cpu`. prepack: keep each matmul weight in the CPU
    kernels' packed f32 form after its first use (`jepa embed --prepack`): the same
    outputs bit for bit, a few % faster on small models over many calls, at 4 bytes per
    weight in every context (one per thread that calls the model at once). It raises
    jepa.Error on the scalar kernels and on a GPU, which pack nothing. precision: the CPU's
    precision tier, "exact" (the default: f32 products), "high" (f32-grade on matrix units,
    "exact" without them) or "bf16" (bf16 operands, f32 sums; faster where the CPU has a
    bf16 dot product), as `jepa --precision` (None: the JEPA_PRECISION variable, else
    exact; docs/precision.md). `matmul_isa` says what the tier runs here.
    """

    def __init__(self, path: PathLike, threads: Optional[int] = None, device: str = "cpu",
                 cpu: Optional[str] = None, prepack: bool = False, precision: Optional[str] = None):
        self.path = os.fspath(path)
        self._m = _jepa.Model(self.path)
        raw = self._m.info()
        self.info = ModelInfo(**{f.name: raw[f.name] for f in fields(ModelInfo)})
        self.labels: Optional[List[str]] = self._m.labels()
        self._threads = 0 if threads is None else int(threads)
        self._device = None if device in (None, "", "cpu") else device
        self._cpu = cpu
        self._prepack = bool(prepack)
        self._precision = precision
        self._lock = threading.Lock()
        self._free = [self._new_context()]   # device and thread errors surface here

    def __repr__(self) -> str:
        i = self.info
        return (f"jepa.Model({self.path!r}: {i.family} {i.name!r}, {i.n_layer} layers x {i.embed_dim}, "
                f"device {self.device!r})")

    # ---- contexts -------------------------------------------------------------------

    def _new_context(self):
        return _jepa.Context(self._m, self._threads, self._device, self._cpu, self._prepack,
                             self._precision)

    @contextlib.contextmanager
    def _context(self):
        with self._lock:
            c = self._free.pop() if self._free else None
        if c is None:
            c = self._new_context()
        try:
            yield c
        finally:
            with self._lock:
                self._free.append(c)

    @property
    def device(self) -> str:
        """The device the model runs on ("cpu" or the GPU's description)."""
        with self._context() as c:
            return c.device

    @property
    def isa(self) -> str:
        """The kernels' instruction set ("avx512", "avx2", "neon", "scalar", "cuda")."""
        with self._context() as c:
            return c.isa

    @property
    def precision(self) -> str:
        """The matmul's precision tier ("exact", "high", "bf16")."""
        with self._context() as c:
            return c.precision

    @property
    def matmul_isa(self) -> str:
        """The kernels the matmul runs for the tier ("avx512", or a tier's: "avx512_bf16")."""
        with self._context() as c:
            return c.matmul_isa

    @property
    def prepacked_bytes(self) -> int:
        """The bytes of packed weights that the model's contexts hold (0 without prepack)."""
        with self._lock:
            return sum(c.prepacked_bytes for c in self._free)

    def grid(self, T: int, H: int, W: int) -> Tuple[int, int, int, int]:
        """(gt, gh, gw, n_tokens) of an input of T frames of H x W pixels."""
        return self._m.grid(T, H, W)

    # ---- inputs ---------------------------------------------------------------------

    def _pre(self, antialias: bool, resize_short: int, norm: str) -> Tuple[int, int, int]:
        if norm not in _NORM:
            raise Error(f"norm: 'fused' or 'sequential', not {norm!r}")
        return (0 if antialias else _CV2_LINEAR, int(resize_short), _NORM[norm])

    def _clips(self, x: Input, layout: Optional[str], frames_per_clip: int, frame_step: int,
               num_clips: int, dense: bool, stride: int, antialias: bool, resize_short: int,
               norm: str, as_clip: bool = False) -> _Clips:
        """One source of clips: a path (an image or a video), images forming one clip
        (as_clip), uint8 frames of one clip (as_clip) or one image, or a float32 array."""
        pre = self._pre(antialias, resize_short, norm)
        sampling = frames_per_clip or frame_step or num_clips or dense or stride
        if layout not in _LAYOUTS:
            raise Error(f"layout: one of {', '.join(_LAYOUTS[1:])}, not {layout!r}")
        if _is_path(x) or (isinstance(x, (list, tuple)) and x and all(_is_path(p) for p in x)):
            paths = [os.fspath(p) for p in ([x] if _is_path(x) else x)]
            for p in paths:
                if not os.path.exists(p):
                    raise Error(f"{p}: no such file")
            video = len(paths) == 1 and not _jepa.is_image_file(paths[0])
            if len(paths) > 1:
                for p in paths:
                    if not _jepa.is_image_file(p):
                        raise Error(f"{p}: as_clip makes one clip of image files; this is not one")
            if sampling and not video:
                raise Error("frames_per_clip / frame_step / num_clips / dense / stride sample a video; "
                            "images are used as given")
            rdr = _jepa.ClipReader(self._m, paths, video, frames_per_clip, frame_step, num_clips,
                                   dense, stride, *pre)
            return _Clips(None, rdr, video and rdr.count > 1, paths[0])
        if sampling:
            raise Error("frames_per_clip / frame_step / num_clips / dense / stride sample a video file")
        if _is_pil(x):
            x = _pil_rgb(x)
        elif isinstance(x, (list, tuple)) and x and all(_is_pil(p) or isinstance(p, np.ndarray) for p in x):
            frames = [_pil_rgb(p) if _is_pil(p) else np.asarray(p) for p in x]   # as_clip: one clip
            if len({f.shape for f in frames}) != 1 or any(f.dtype != np.uint8 for f in frames):
                raise Error("as_clip: the frames of one clip in memory are uint8 RGB images of one size "
                            "(image files may differ in size)")
            x = np.stack(frames)
        a = np.asarray(x)
        if a.dtype == np.uint8:
            if layout is not None:
                raise Error("layout describes float32 arrays; uint8 images are [N, H, W, 3] "
                            "(as_clip=True: one clip of frames [T, H, W, 3])")
            if a.ndim == 3:
                a = a[None]
            if a.ndim != 4 or a.shape[3] != 3:
                raise Error(f"uint8 images are [N, H, W, 3] (or [H, W, 3]) RGB, got {list(a.shape)}")
            a = np.ascontiguousarray(a)
            T, h, w, _ = a.shape
            H, W = self._m.preprocess_size(*pre)
            clip = np.empty((1, 3, T, H, W), dtype=np.float32)
            self._m.preprocess_frames(a, T, h, w, clip[0], *pre)
            return _Clips(clip, None, False, "frames")
        if a.dtype.kind not in "fiu":
            raise Error(f"an input array is uint8 images or a float32 clip, not {a.dtype}")
        if as_clip:
            raise Error("as_clip: a float32 array says its frames by its layout (CTHW, TCHW, ...)")
        if pre != (0, 0, 0):
            raise Error("antialias / resize_short / norm preprocess pixels; a float32 clip is used as it is")
        lay = layout or {3: "CHW", 4: "CTHW"}.get(a.ndim, "BCTHW")
        if a.ndim != len(lay):
            raise Error(f"a {lay} input has {len(lay)} axes, got {list(a.shape)}")
        stacked = lay.startswith("B")
        if lay in ("CHW", "BCHW"):          # images: one frame each
            a = a[:, :, None] if stacked else a[:, None]
        if not stacked:
            a = a[None]
        if lay in ("TCHW", "BTCHW"):
            a = a.transpose(0, 2, 1, 3, 4)
        a = _f32(a, "x")
        if a.shape[1] != self.info.in_chans:
            raise Error(f"x: {a.shape[1]} channels, the model takes {self.info.in_chans} "
                        f"(layout {lay}, shape {list(np.shape(x))})")
        if a.shape[0] < 1:
            raise Error("x: an empty batch")
        return _Clips(a, None, stacked, "x")

    def _items(self, x: Input, layout: Optional[str], as_clip: bool, frames_per_clip: int, frame_step: int,
               num_clips: int, dense: bool, stride: int, antialias: bool, resize_short: int,
               norm: str) -> Tuple[list, bool]:
        """x as items: (sources, listed). listed: x is several items (a list, uint8 [N, H, W, 3]),
        each source one item; else one source, whose clips are the output's leading axis when
        it is stacked (a float batch: one item per clip; a video's clips)."""
        opts = (frames_per_clip, frame_step, num_clips, dense, stride, antialias, resize_short, norm)
        if as_clip or _is_path(x) or _is_pil(x):
            return [self._clips(x, layout, *opts, as_clip=as_clip)], False
        if isinstance(x, (list, tuple)):
            if not x:
                raise Error("an empty list of inputs")
            if layout is not None:
                raise Error("layout describes one array; a list's items are paths, PIL images or uint8 "
                            "[H, W, 3] images")
            return [self._item(p, k, opts) for k, p in enumerate(x)], True
        a = np.asarray(x)
        if a.dtype == np.uint8 and a.ndim == 4 and layout is None:
            if a.shape[0] < 1:
                raise Error("x: an empty batch")
            return [self._item(a[k], k, opts) for k in range(a.shape[0])], True
        return [self._clips(a, layout, *opts)], False

    def _item(self, p, k: int, opts: tuple) -> _Later:
        """Item k of a list or an image array: a video's clips (opened when encoded), or one
        image, decoded and preprocessed when its forward pass comes (a list of a thousand
        files costs memory for one pass)."""
        if _is_path(p):
            path = os.fspath(p)
            if not os.path.exists(path):
                raise Error(f"{path}: no such file")
            if not _jepa.is_image_file(path):
                return _Later(lambda: self._clips(path, None, *opts), path, None)
        elif not (_is_pil(p) or (isinstance(p, np.ndarray) and p.dtype == np.uint8 and p.ndim == 3)):
            raise Error(f"item {k}: a path, a PIL image or a uint8 [H, W, 3] image, not {type(p).__name__}"
                        + (f" {p.dtype} {list(p.shape)}" if isinstance(p, np.ndarray) else ""))
        if any(opts[:5]):
            raise Error("frames_per_clip / frame_step / num_clips / dense / stride sample a video; "
                        "images are used as given")
        H, W = self._m.preprocess_size(*self._pre(*opts[5:]))
        return _Later(lambda: self._clips(p, None, *opts), os.fspath(p) if _is_path(p) else f"item {k}",
                      (1, H, W))

    def preprocess(self, frames: np.ndarray, antialias: bool = True, resize_short: int = 0,
                   norm: str = "fused") -> np.ndarray:
        """uint8 RGB frames [T, H, W, 3] (or one image [H, W, 3]) -> the float32 clip
        [3, T, crop, crop] the encoder takes, by the model's recipe (jepa.pre.*) with the
        CLI's overrides; what embed() does to uint8 input."""
        a = np.asarray(frames)
        if a.dtype != np.uint8:
            raise Error(f"preprocess takes uint8 RGB frames, not {a.dtype}")
        clips = self._clips(a, None, 0, 0, 0, False, 0, antialias, resize_short, norm)
        return clips.x[0]

    # ---- embed ----------------------------------------------------------------------

    def embed(self, x: Input, pool: str = "none", hier: bool = False, batch: Optional[int] = None,
              layout: Optional[str] = None, frames_per_clip: int = 0, frame_step: int = 0,
              num_clips: int = 0, dense: bool = False, stride: int = 0, antialias: bool = True,
              resize_short: int = 0, norm: str = "fused", as_clip: bool = False) -> np.ndarray:
        """Encode x (see the module's docstring for the inputs): one row per item.

        pool: "none" the token map [N, D] (CLS first where the family has one), "mean" the
        mean of the patch tokens [D], "cls" the CLS token [D], "lewm" LeWM's projector
        output [emb_dim]; hier=True: V-JEPA 2.1's hierarchical outputs [n_hier, N, D].
        Several items (a list, uint8 [N, H, W, 3], a float batch [B, ...]) add a leading
        axis, row k what item k alone gives (items whose rows differ in shape, such as token
        maps of images and videos, raise: pool them or embed them apart); so do a video's
        num_clips / dense clips. uint8 [N, H, W, 3] is N images (as_clip=True: one clip of
        N frames, what it meant before).
        batch: items (clips) per forward pass. Default: items that jepa decodes (paths, PIL
        images, uint8 arrays) one per pass on the CPU, where a pass of several moves the last
        bits, and 8 on a GPU, as `jepa embed` of many inputs; a float batch at once, as
        `--input-tensor`; a video's clips one at a time. Image items of one shape share
        passes."""
        if pool not in _POOLS:
            raise Error(f"pool: one of {', '.join(_POOLS)}, not {pool!r}")
        i = self.info
        if hier and pool != "none":
            raise Error("hier gives every token of every level; drop pool")
        if hier and not i.n_hier:
            raise Error(f"hier: family '{i.family}' has no hierarchical outputs")
        if pool == "cls" and not i.has_cls:
            raise Error(f"pool='cls': family '{i.family}' has no CLS token")
        if pool == "lewm" and not i.emb_dim:
            raise Error(f"pool='lewm': family '{i.family}' has no LeWM projector")
        items, listed = self._items(x, layout, as_clip, frames_per_clip, frame_step, num_clips, dense, stride,
                                    antialias, resize_short, norm)
        if not listed:
            out = self._encode(items[0], pool, hier, batch)
            return out if items[0].stacked else out[0]
        rows = [o if stacked else o[0]
                for o, stacked in self._run_items(items, batch, lambda c, g: self._encode(c, pool, hier, g))]
        shapes = sorted({r.shape for r in rows})
        if len(shapes) > 1:
            raise Error(f"the items give outputs of different shapes ({' and '.join(map(str, shapes[:2]))}): "
                        "pool them (pool='mean') or embed them apart")
        return np.stack(rows)

    def _run_items(self, items: list, batch: Optional[int], run) -> List[Tuple[np.ndarray, bool]]:
        """(run(clips, g), stacked) of every item, in order: run(clips, g) encodes a source's
        clips g per pass. Images of one shape go G per pass (read into one buffer of G clips;
        one at a time, straight from its reader into the engine's arena); a video alone."""
        if batch is not None and int(batch) < 1:
            raise Error("batch: at least 1 item per forward pass")
        G = int(batch) if batch is not None else 1 if self._device is None else 8
        out: List[Optional[Tuple[np.ndarray, bool]]] = [None] * len(items)
        groups: dict = {}
        for k, it in enumerate(items):
            if it.shape is not None:
                groups.setdefault(it.shape, []).append(k)
            else:
                c = it.open()
                out[k] = (run(c, batch), c.stacked)
        for (T, H, W), ks in groups.items():
            for j0 in range(0, len(ks), G):
                js = ks[j0:j0 + G]
                if len(js) == 1:
                    out[js[0]] = (run(items[js[0]].open(), 1), False)
                    continue
                x = np.empty((len(js), self.info.in_chans, T, H, W), dtype=np.float32)
                for j, k in enumerate(js):
                    c = items[k].open()
                    if c.x is not None:
                        x[j] = c.x[0]
                    else:
                        c.reader.read_into(x[j])
                res = run(_Clips(x, None, True, items[js[0]].name), len(js))
                for j, k in enumerate(js):
                    out[k] = (res[j:j + 1], False)
        return out   # type: ignore[return-value]

    def _encode(self, clips: _Clips, pool: str, hier: bool, batch: Optional[int]) -> np.ndarray:
        """Every clip's output [B, ...], in passes of `batch` clips."""
        i = self.info
        _, _, _, n = self.grid(clips.T, clips.H, clips.W)
        D, B = i.embed_dim, clips.count
        per = ((i.n_hier, n, D) if hier else (i.emb_dim,) if pool == "lewm" else (D,) if pool in ("mean", "cls")
               else (n, D))
        out = np.empty((B,) + per, dtype=np.float32)
        key = "hier" if hier else {"none": "tokens", "mean": "pooled", "cls": "cls", "lewm": "emb"}[pool]
        G = _batch_size(batch, B, clips)
        with self._context() as c:
            for k0, g, xb in clips.batches(G):
                clips.noted(c.embed(xb, g, clips.T, clips.H, clips.W, **{key: out[k0:k0 + g]}))
        if not np.isfinite(out).all():
            raise Error(f"{clips.name}: the encoder's output is not finite")
        return out

    def classify(self, x: Input, top_k: int = 5, batch: Optional[int] = None, layout: Optional[str] = None,
                 frames_per_clip: int = 0, frame_step: int = 0, num_clips: int = 0, dense: bool = False,
                 stride: int = 0, antialias: bool = True, resize_short: int = 0,
                 norm: str = "fused", as_clip: bool = False) -> Union[Classification, List[Classification]]:
        """Classify x (the inputs of embed) with the file's head (attentive probe): each
        clip's logits, and the mean of an item's clips' softmax ranked (Meta's evaluation;
        `jepa classify`). One item (a path, an image, a clip): a Classification. Several
        (a list, uint8 [N, H, W, 3], a float batch [B, ...]): a list of one Classification
        per item."""
        i = self.info
        if not i.has_head:
            raise Error(f"{self.path}: this model file has no classifier head")
        if top_k < 1:
            raise Error("top_k: at least 1")
        items, listed = self._items(x, layout, as_clip, frames_per_clip, frame_step, num_clips, dense, stride,
                                    antialias, resize_short, norm)
        if listed:
            return [self._ranked(lg, stacked, top_k)
                    for lg, stacked in self._run_items(items, batch, self._logits)]
        clips = items[0]
        logits = self._logits(clips, batch)
        if clips.x is not None and clips.stacked:   # a float batch: its clips are items
            return [self._ranked(logits[j:j + 1], False, top_k) for j in range(clips.count)]
        return self._ranked(logits, clips.stacked, top_k)

    def _logits(self, clips: _Clips, batch: Optional[int]) -> np.ndarray:
        """The head's logits [B, K] of every clip, in passes of `batch` clips."""
        i = self.info
        _, _, _, n = self.grid(clips.T, clips.H, clips.W)
        B, K, D = clips.count, i.n_classes, i.embed_dim
        logits = np.empty((B, K), dtype=np.float32)
        G = _batch_size(batch, B, clips)
        tokens = np.empty((G, n, D), dtype=np.float32)
        with self._context() as c:
            for k0, g, xb in clips.batches(G):
                clips.noted(c.embed(xb, g, clips.T, clips.H, clips.W, tokens=tokens[:g]))
                for j in range(g):
                    c.classify(tokens[j], n, logits[k0 + j])
        if not np.isfinite(logits).all():
            raise Error(f"{clips.name}: the classifier's logits are not finite")
        return logits

    def _ranked(self, logits: np.ndarray, stacked: bool, top_k: int) -> Classification:
        """One item's Classification from its clips' logits [B, K]."""
        B, K = logits.shape
        probs = np.zeros(K, dtype=np.float64)
        for row in logits:
            z = np.exp(row.astype(np.float64) - float(row.max()))
            probs += z / z.sum() / B
        order = sorted(range(K), key=lambda q: (-probs[q], q))[:min(top_k, K)]
        labels = self.labels
        top = [(q, labels[q] if labels else None, float(probs[q])) for q in order]
        return Classification(probs, logits if stacked else logits[0], top)

    # ---- masked prediction -------------------------------------------------------------

    def predict(self, x: Input, ctx_ids, tgt_ids, mask_index: int = 1, modality: str = "auto",
                return_context: bool = False, **input_options):
        """The masked predictor: the tokens at tgt_ids predicted from those at ctx_ids.

        x: a float32 token map [N, D] (the encoder's output, e.g. embed(...)), or any one-clip
        input of embed (encoded first, as `jepa predict` does). Returns pred [n_tgt, out_dim],
        and with return_context=True also V-JEPA 2.1's context projection [n_ctx, out_dim]."""
        i = self.info
        if i.predictor != "masked":
            raise Error(f"{self.path}: this model file has no masked predictor")
        if modality not in _MODALITY:
            raise Error(f"modality: auto, video or image, not {modality!r}")
        ci, ti = _ids(ctx_ids, "ctx_ids"), _ids(tgt_ids, "tgt_ids")
        mod = _MODALITY[modality]
        a = x if isinstance(x, np.ndarray) else None
        if a is not None and a.dtype != np.uint8 and a.ndim == 2:
            tokens = _f32(a, "tokens")
            if tokens.shape[1] != i.embed_dim:
                raise Error(f"tokens: {tokens.shape[1]} wide, the encoder's are {i.embed_dim}")
        else:
            layout = input_options.pop("layout", None)
            as_clip = bool(input_options.pop("as_clip", False))
            items, listed = self._items(x, layout, as_clip, **_clip_options(input_options))
            clips = items[0] if not listed and len(items) == 1 else None
            if clips is None or clips.stacked or clips.count != 1:
                raise Error("predict takes one clip (as_clip=True makes one of several images)")
            tokens = self._encode(clips, "none", False, None)[0]
            if mod == 0:
                mod = 2 if clips.T == 1 else 1
        n = tokens.shape[0]
        for name, ids in (("ctx_ids", ci), ("tgt_ids", ti)):
            if ids.size == 0 or ids.min() < 0 or ids.max() >= n:
                raise Error(f"{name}: ids must lie in 0 .. {n - 1} (the token map's rows)")
        ctx_tok = np.ascontiguousarray(tokens[ci])
        od = i.pred_out_dim
        pred = np.empty((ti.size, od), dtype=np.float32)
        ctx_out = np.empty((ci.size, od), dtype=np.float32) if return_context else None
        with self._context() as c:
            c.predict(ctx_tok, ci, ci.size, ti, ti.size, pred, ctx_out, int(mask_index), mod)
        return (pred, ctx_out) if return_context else pred

    # ---- world models ------------------------------------------------------------------

    def _need(self, which: str):
        if self.info.predictor != which:
            name = "LeWM" if which == "lewm" else "V-JEPA 2-AC"
            raise Error(f"{self.path}: this model file has no {name} predictor (family '{self.info.family}')")

    def lewm_predict(self, emb, actions) -> np.ndarray:
        """LeWM: emb [T, emb_dim] (or [B, T, emb_dim]) frame embeddings (embed(pool="lewm")),
        actions [T, action_dim] (or [B, ...]) -> [T, pred_out_dim]: row t predicts frame t + 1."""
        self._need("lewm")
        i = self.info
        e, a, one = _batched(_f32(emb, "emb"), _f32(actions, "actions"), 3)
        B, T = e.shape[:2]
        _rows(e, "emb", None, "", i.emb_dim, "embeddings", "")
        _rows(a, "actions", T, "actions", i.action_dim, "actions", f"a history of {T} frames (one action each)")
        pred = np.empty((B, T, i.pred_out_dim), dtype=np.float32)
        with self._context() as c:
            c.lewm_predict(e, a, B, T, pred)
        return pred[0] if one else pred

    def lewm_rollout(self, emb, actions, steps: int) -> np.ndarray:
        """LeWM: `steps` predicted embeddings from a history emb [T, emb_dim] and actions
        [T + steps - 1, action_dim] (or [B, ...] each) -> [steps, emb_dim]."""
        self._need("lewm")
        i = self.info
        steps = _steps(steps)
        e, a, one = _batched(_f32(emb, "emb"), _f32(actions, "actions"), 3)
        B, T = e.shape[:2]
        _rows(e, "emb", None, "", i.emb_dim, "embeddings", "")
        _rows(a, "actions", T + steps - 1, "actions", i.action_dim, "actions",
              f"a history of {T} frames rolled out {steps} steps (T + steps - 1)")
        traj = np.empty((B, steps, i.emb_dim), dtype=np.float32)
        with self._context() as c:
            c.lewm_rollout(e, B, T, a, steps, traj)
        return traj[0] if one else traj

    def _ac_frames(self, t: np.ndarray, name: str) -> int:
        """The frames of V-JEPA 2-AC tokens [B, F N, D], checked: F."""
        N = self.info.pred_tokens_per_frame
        _rows(t, name, None, "", self.info.embed_dim, "tokens", "")
        if t.shape[1] % N or not t.shape[1]:
            raise Error(f"{name}: {t.shape[1]} tokens are not whole frames of {N} tokens")
        return t.shape[1] // N

    def ac_predict(self, tokens, actions, states) -> np.ndarray:
        """V-JEPA 2-AC: tokens [F N, D] frame-major, actions [F, action_dim], states
        [F, state_dim] (or [B, ...] each) -> [F N, pred_out_dim]: row f N + i predicts
        token i of frame f + 1."""
        self._need("ac")
        i = self.info
        t, a, one = _batched(_f32(tokens, "tokens"), _f32(actions, "actions"), 3)
        s, _, _ = _batched(_f32(states, "states"), None, 3)
        F = self._ac_frames(t, "tokens")
        _rows(a, "actions", F, "actions", i.action_dim, "actions", f"tokens of {F} frames (one action each)")
        _rows(s, "states", F, "states", i.state_dim, "states", f"tokens of {F} frames (one state each)")
        if s.shape[0] != t.shape[0]:
            raise Error(f"batch sizes differ: {t.shape[0]} and {s.shape[0]}")
        B, N = a.shape[0], i.pred_tokens_per_frame
        pred = np.empty((B, F * N, i.pred_out_dim), dtype=np.float32)
        with self._context() as c:
            c.ac_predict(t, a, s, B, F, pred)
        return pred[0] if one else pred

    def ac_rollout(self, tokens, states, actions, steps: int, normalize: bool = True):
        """V-JEPA 2-AC, as Meta's planner steps its world model: from a history tokens
        [T N, D], states [T, 7] and actions [T + steps - 1, 7] (or [B, ...] each) ->
        (traj [steps N, D], traj_states [steps, 7]); normalize layer-norms each step."""
        self._need("ac")
        i = self.info
        steps = _steps(steps)
        t, s, one = _batched(_f32(tokens, "tokens"), _f32(states, "states"), 3)
        a, _, _ = _batched(_f32(actions, "actions"), None, 3)
        T = self._ac_frames(t, "tokens")
        _rows(s, "states", T, "states", i.state_dim, "states", f"tokens of {T} frames (one state each)")
        _rows(a, "actions", T + steps - 1, "actions", i.action_dim, "actions",
              f"a history of {T} frames rolled out {steps} steps (T + steps - 1)")
        if a.shape[0] != t.shape[0]:
            raise Error(f"batch sizes differ: {t.shape[0]} and {a.shape[0]}")
        B = s.shape[0]
        N, D = i.pred_tokens_per_frame, i.embed_dim
        traj = np.empty((B, steps * N, D), dtype=np.float32)
        traj_states = np.empty((B, steps, i.state_dim), dtype=np.float32)
        with self._context() as c:
            c.ac_rollout(t, s, B, T, a, steps, bool(normalize), traj, traj_states)
        return (traj[0], traj_states[0]) if one else (traj, traj_states)

    def _world_state(self, x, name: str, which: str) -> np.ndarray:
        """A plan's start or goal: an array as given, or an image (a path or a PIL image)
        encoded as `jepa plan --start IMG` does: LeWM its embedding [emb_dim]; V-JEPA 2-AC the
        frame twice (one tubelet, as Meta's WorldModel.encode repeats it), its tokens
        layer-normed [N, D]."""
        if not (_is_path(x) or _is_pil(x)):
            return _f32(x, name)
        if _is_path(x) and not os.path.exists(os.fspath(x)):
            raise Error(f"{os.fspath(x)}: no such file")
        if _is_path(x) and not _jepa.is_image_file(os.fspath(x)):
            raise Error(f"{os.fspath(x)}: {name} is an image file (PNG, JPEG, WebP) or an array")
        if which == "lewm":
            return self.embed(x, pool="lewm")
        frame = x if _is_path(x) else _pil_rgb(x)
        tokens = self.embed([frame, frame], as_clip=True)
        N = self.info.pred_tokens_per_frame
        if tokens.shape[0] != N:
            raise Error(f"{name}: the encoder makes {tokens.shape[0]} tokens of this image; the predictor "
                        f"takes {N} per frame")
        return _layer_norm_rows(tokens)

    def plan(self, history, goal, past_actions=None, states=None, **settings) -> Plan:
        """The cross-entropy-method planner (docs/world-models.md), `jepa plan`: the actions
        whose predicted outcome ends closest to goal.

        history and goal: image paths or PIL images (encoded as `jepa plan --start IMG`
        does), or arrays: LeWM history [T, emb_dim] embeddings, goal [emb_dim]; V-JEPA 2-AC
        history tokens [T N, D], goal [N, D] (layer-normed, as Meta's planner expects).
        states: V-JEPA 2-AC's robot poses of the history, [T, 7] (or [7]). past_actions
        [T - 1, action_dim] (None when T == 1).
        settings, named as the CLI's options: horizon, samples, iters, elites, momentum (of
        the mean and the std at each refit), seed; LeWM: std (the initial std), bounds
        ((lo, hi) clipping every action component; None: none); V-JEPA 2-AC: maxnorm (the xyz
        box and its initial std). Defaults: plan_defaults(). The names before the CLI's
        (iterations, init_std, lo / hi, momentum_mean / momentum_std) still work and warn
        (DeprecationWarning). A non-finite energy raises, as the CLI writes no plan then."""
        i = self.info
        which = i.predictor if i.predictor in ("lewm", "ac") else None
        if which is None:
            raise Error(f"{self.path}: this model file has no world model to plan with")
        p = _plan_settings(which, _jepa.plan_defaults(which), settings)
        h = self._world_state(history, "history", which)
        g = self._world_state(goal, "goal", which)
        if which == "ac":
            N, D = i.pred_tokens_per_frame, i.embed_dim
            if h.ndim != 2 or h.shape[0] % N or not h.shape[0] or h.shape[1] != D:
                raise Error(f"history: tokens [T {N}, {D}] ({N} per frame), got {list(h.shape)}")
            T = h.shape[0] // N
            if g.shape not in ((N, D), (N * D,)):
                raise Error(f"goal: one frame's tokens [{N}, {D}], got {list(g.shape)}")
            if states is None:
                raise Error("plan: V-JEPA 2-AC needs the history's states [T, 7]")
            st = _f32(states, "states")
            if st.size != T * i.state_dim or st.ndim > 2 or st.shape[-1] != i.state_dim:
                raise Error(f"states: {st.shape[0] if st.ndim == 2 else 1} states of {st.shape[-1]}; "
                            f"a history of {T} frames needs {T} of {i.state_dim}")
        else:
            if h.ndim == 1:
                h = h[None]
            if h.ndim != 2 or not h.shape[0]:
                raise Error(f"history: embeddings [T, {i.emb_dim}], got {list(h.shape)}")
            _rows(h, "history", None, "", i.emb_dim, "embeddings", "")
            if g.shape != (i.emb_dim,):
                raise Error(f"goal: one embedding [{i.emb_dim}], got {list(g.shape)}")
            T, st = h.shape[0], None
        pa = _f32(past_actions, "past_actions") if past_actions is not None else None
        if T > 1 and pa is None:
            raise Error(f"plan: a history of {T} frames needs its {T - 1} past actions")
        if pa is not None:
            if pa.ndim == 1 and T == 2:
                pa = pa[None]
            if pa.ndim != 2:
                raise Error(f"past_actions: [{T - 1}, {i.action_dim}], got {list(pa.shape)}")
            _rows(pa, "past_actions", T - 1, "actions", i.action_dim, "actions",
                  f"a history of {T} frames (T - 1 past actions)")
        actions = np.empty((p["horizon"], i.action_dim), dtype=np.float32)
        energies = np.empty(p["iterations"], dtype=np.float32)
        with self._context() as c:
            final = c.plan(which, h, T, st, pa, g, p, actions, energies)
        bad = [k for k in range(energies.size) if not math.isfinite(float(energies[k]))]
        if bad or not math.isfinite(final):
            what = f"iteration {bad[0] + 1}'s best energy is {energies[bad[0]]}" if bad else f"the plan's energy is {final}"
            raise Error(f"plan: {what}, not finite (non-finite weights in the model, or inputs that overflow?)")
        return Plan(actions, energies, final)

    def plan_defaults(self) -> dict:
        """The planner's default settings for this model's world model, by the names plan()
        takes (those of `jepa plan`'s options)."""
        self._need(self.info.predictor if self.info.predictor in ("lewm", "ac") else "lewm")
        which = self.info.predictor
        d = _jepa.plan_defaults(which)
        out = {"horizon": d["horizon"], "samples": d["samples"], "iters": d["iterations"], "elites": d["elites"],
               "momentum": d["momentum_mean"]}
        if which == "ac":
            out["maxnorm"] = d["maxnorm"]
        else:
            out["std"] = d["init_std"]
            out["bounds"] = (d["lo"], d["hi"]) if d["lo"] < d["hi"] else None
        out["seed"] = d["seed"]
        return out


# The planner's settings: plan()'s names (the CLI's options) -> the extension's keys; the
# names before them, kept as deprecated aliases.
_PLAN_INTS = {"horizon": ("horizon", 1, 1024), "samples": ("samples", 1, 65536),
              "iters": ("iterations", 1, 100000), "elites": ("elites", 1, 65536)}
_PLAN_NAMES = tuple(_PLAN_INTS) + ("momentum", "std", "bounds", "maxnorm", "seed")
_PLAN_OLD = {"iterations": "iters", "init_std": "std", "lo": "bounds", "hi": "bounds",
             "momentum_mean": "momentum", "momentum_std": "momentum"}


def _real(v, name: str, lo: float, hi: float) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise Error(f"plan: {name} takes a number, not {v!r}") from None
    if not lo <= x <= hi:
        raise Error(f"plan: {name} takes a number in [{lo:g}, {hi:g}], not {v!r}")
    return x


def _int(v, name: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= int(v) <= hi:
        raise Error(f"plan: {name} takes an integer in [{lo}, {hi}], not {v!r}")
    return int(v)


def _plan_settings(which: str, defaults: dict, settings: dict) -> dict:
    """plan()'s settings over the defaults (the extension's keys), checked as `jepa plan`
    checks its options, each named as the caller named it."""
    p = dict(defaults)
    p.pop("maxnorm", None)
    for k in settings:
        if k not in _PLAN_NAMES and k not in _PLAN_OLD:
            raise Error(f"plan: unknown setting '{k}' (settings: {', '.join(_PLAN_NAMES)})")
        if k in _PLAN_OLD:
            if _PLAN_OLD[k] in settings:
                raise Error(f"plan: '{k}' and '{_PLAN_OLD[k]}' set the same thing; give '{_PLAN_OLD[k]}'")
            warnings.warn(f"plan: '{k}' is deprecated; use '{_PLAN_OLD[k]}' (the name of jepa plan's option)",
                          DeprecationWarning, stacklevel=3)
    ac = which == "ac"
    for k in ("std", "init_std", "bounds", "lo", "hi"):
        if ac and k in settings:
            raise Error(f"plan: V-JEPA 2-AC plans in Meta's action box: maxnorm sets its xyz range (not {k})")
    if not ac and "maxnorm" in settings:
        raise Error("plan: maxnorm is V-JEPA 2-AC's; this is a LeWM model")
    for k, (key, lo, hi) in _PLAN_INTS.items():
        for name in (k, "iterations") if k == "iters" else (k,):
            if name in settings:
                p[key] = _int(settings[name], name, lo, hi)
    if "seed" in settings:
        p["seed"] = _int(settings["seed"], "seed", 0, 2 ** 64 - 1)
    if "momentum" in settings:
        p["momentum_mean"] = p["momentum_std"] = _real(settings["momentum"], "momentum", 0, 1)
    for k in ("momentum_mean", "momentum_std"):
        if k in settings:
            p[k] = _real(settings[k], k, 0, 1)
    for k in ("std", "init_std"):
        if k in settings:
            p["init_std"] = _real(settings[k], k, 0, 1e6)
    if "maxnorm" in settings:
        p["maxnorm"] = _real(settings["maxnorm"], "maxnorm", 0, 1e6)
    if "bounds" in settings and settings["bounds"] is not None:
        b = settings["bounds"]
        lo, hi = (_real(b[0], "bounds", -math.inf, math.inf), _real(b[1], "bounds", -math.inf, math.inf)) \
            if isinstance(b, (tuple, list)) and len(b) == 2 else (None, None)
        if lo is None or not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise Error(f"plan: bounds takes (lo, hi) with lo < hi, both finite, not {b!r}")
        p["lo"], p["hi"] = lo, hi
    for k in ("lo", "hi"):   # the deprecated form: lo == hi is no bounds, lo > hi refused
        if k in settings:
            p[k] = _real(settings[k], k, -math.inf, math.inf)
    if p["elites"] > p["samples"]:
        raise Error(f"plan: elites {p['elites']} is more than samples {p['samples']}")
    return p


def _steps(steps) -> int:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise Error(f"steps: an integer of at least 1, not {steps!r}")
    return int(steps)


def _rows(a: np.ndarray, name: str, rows: Optional[int], rows_unit: str, width: int, width_unit: str,
          why: str) -> None:
    """a [..., rows, width] checked, the mismatch said in the caller's units (actions,
    states, frames), not in floats."""
    if a.shape[-1] != width:
        raise Error(f"{name}: {width_unit} of {a.shape[-1]} values; this model's {width_unit} have {width}")
    if rows is not None and a.shape[-2] != rows:
        raise Error(f"{name}: {a.shape[-2]} {rows_unit}; {why} needs {rows}")


def _layer_norm_rows(t: np.ndarray) -> np.ndarray:
    """F.layer_norm of each row, no weight, eps 1e-5 (Meta's normalize_reps), in double with
    each sum taken in order, as the CLI's `jepa plan --start IMG` computes it (same bits)."""
    v = t.astype(np.float64)
    d = v.shape[1]
    mu = np.add.accumulate(v, axis=1)[:, -1] / d
    dv = v - mu[:, None]
    var = np.add.accumulate(dv * dv, axis=1)[:, -1]
    s = 1.0 / np.sqrt(var / d + 1e-5)
    return np.ascontiguousarray((dv * s[:, None]).astype(np.float32))


def _clip_options(opts: dict) -> dict:
    keys = ("frames_per_clip", "frame_step", "num_clips", "dense", "stride", "antialias", "resize_short", "norm")
    bad = set(opts) - set(keys)
    if bad:
        raise Error(f"unknown option(s): {', '.join(sorted(bad))}")
    d = dict(frames_per_clip=0, frame_step=0, num_clips=0, dense=False, stride=0, antialias=True,
             resize_short=0, norm="fused")
    d.update({k: opts[k] for k in keys if k in opts})
    return d


def _batch_size(batch: Optional[int], B: int, clips: _Clips) -> int:
    if batch is None:
        return B if clips.x is not None else 1
    if int(batch) < 1:
        raise Error("batch: at least 1 clip per forward pass")
    return min(int(batch), B)


def _batched(a: np.ndarray, b: Optional[np.ndarray], nd: int):
    """(a, b) with a leading batch axis (added when a has nd - 1 axes), and whether it was added."""
    one = a.ndim == nd - 1
    if one:
        a = a[None]
        b = b[None] if b is not None else None
    if a.ndim != nd or (b is not None and b.ndim != nd):
        raise Error(f"expected {nd - 1}-D arrays (or {nd}-D with a leading batch axis), got "
                    f"{list(a.shape)}" + (f" and {list(b.shape)}" if b is not None else ""))
    if b is not None and b.shape[0] != a.shape[0]:
        raise Error(f"batch sizes differ: {a.shape[0]} and {b.shape[0]}")
    return a, b, one
