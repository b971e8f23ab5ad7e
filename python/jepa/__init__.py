"""jepa — JEPA vision models (V-JEPA 2 / 2.1, I-JEPA, LeVJEPA, LeJEPA, LeWM, V-JEPA 2-AC)
read from GGUF files (jepa.cpp schema v1) and run on jepa.c's engine.

    import jepa
    model = jepa.Model("vjepa2_1_vitb.gguf", threads=2)
    feats = model.embed("frame.jpg", pool="mean")          # numpy float32 [D]
    clips = model.embed("video.mp4", num_clips=4)           # [4, N, D]
    top = model.classify("video.mp4").top                   # [(index, label, prob), ...]

Arrays in and out are numpy. Inputs may be:
  - an image path, a list of image paths (they form one clip, in order), or a video path
    (decoded as `jepa embed` decodes it: frames_per_clip, frame_step, num_clips, dense,
    stride; the model's preprocessing, with antialias / resize_short / norm overrides);
  - uint8 RGB frames [T, H, W, 3] (or one image [H, W, 3]), preprocessed by the model's
    recipe as `jepa embed --frames-npy` does;
  - a preprocessed float32 image [C, H, W], clip [C, T, H, W] or batch [B, C, T, H, W];
    layout="BTCHW" takes Hugging Face's pixel_values_videos [B, T, C, H, W] (and "TCHW"
    one clip), as `jepa embed --input-tensor` takes the others.

The computation releases the GIL. One Model may be used from any number of threads: each
call takes a context (the engine's per-thread state) from the model's pool, so calls from
two threads run at once. Errors raise jepa.Error with the engine's one-line reason.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from dataclasses import dataclass, fields
from typing import Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _jepa

__all__ = ["Model", "ModelInfo", "Classification", "Plan", "Error", "__version__", "version", "pull"]

Error = _jepa.Error
__version__: str = _jepa.version()

PathLike = Union[str, "os.PathLike[str]"]
Input = Union[PathLike, Sequence[PathLike], np.ndarray]

_POOLS = ("none", "mean", "cls", "lewm")
_LAYOUTS = (None, "CHW", "CTHW", "BCTHW", "TCHW", "BTCHW")
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
    what failed (one line: a 404, a checksum mismatch, the network). docs/pull.md."""
    if progress is None:
        progress = sys.stderr is not None and sys.stderr.isatty()
    return _jepa.pull(os.fspath(repo), type, endpoint, -1 if retries is None else int(retries),
                      0 if stall_timeout is None else int(stall_timeout), bool(progress))


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


class Model:
    """A JEPA model from a schema-v1 GGUF file (memory-mapped; loaded once).

    threads: the engine's threads per call (None or 0: every core). device: "cpu",
    "cuda" or "cuda:N". cpu: cap the CPU kernels' instruction set ("scalar", "avx2",
    "avx512", "neon"), as `jepa --cpu`. prepack: keep each matmul weight in the CPU
    kernels' packed f32 form after its first use (`jepa embed --prepack`): the same
    outputs bit for bit, a few % faster on small models over many calls, at 4 bytes per
    weight in every context (one per thread that calls the model at once). It raises
    jepa.Error on the scalar kernels and on a GPU, which pack nothing. precision: the CPU
    matmul's tier, "exact" (the default: f32 products), "high" (f32-grade on matrix units,
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
               norm: str) -> _Clips:
        pre = self._pre(antialias, resize_short, norm)
        sampling = frames_per_clip or frame_step or num_clips or dense or stride
        if layout not in _LAYOUTS:
            raise Error(f"layout: one of CHW, CTHW, BCTHW, TCHW, BTCHW, not {layout!r}")
        if isinstance(x, (str, os.PathLike)) or (isinstance(x, (list, tuple)) and x and
                                                  all(isinstance(p, (str, os.PathLike)) for p in x)):
            paths = [os.fspath(p) for p in ([x] if isinstance(x, (str, os.PathLike)) else x)]
            for p in paths:
                if not os.path.exists(p):
                    raise Error(f"{p}: no such file")
            video = len(paths) == 1 and not _jepa.is_image_file(paths[0])
            if sampling and not video:
                raise Error("frames_per_clip / frame_step / num_clips / dense / stride sample a video; "
                            "images are used as given")
            rdr = _jepa.ClipReader(self._m, paths, video, frames_per_clip, frame_step, num_clips,
                                   dense, stride, *pre)
            return _Clips(None, rdr, video and rdr.count > 1, paths[0])
        if sampling:
            raise Error("frames_per_clip / frame_step / num_clips / dense / stride sample a video file")
        a = np.asarray(x)
        if a.dtype == np.uint8:
            if layout is not None:
                raise Error("layout describes float32 clips; uint8 frames are [T, H, W, 3]")
            if a.ndim == 3:
                a = a[None]
            if a.ndim != 4 or a.shape[3] != 3:
                raise Error(f"uint8 frames are [T, H, W, 3] (or [H, W, 3]) RGB, got {list(a.shape)}")
            a = np.ascontiguousarray(a)
            T, h, w, _ = a.shape
            H, W = self._m.preprocess_size(*pre)
            clip = np.empty((1, 3, T, H, W), dtype=np.float32)
            self._m.preprocess_frames(a, T, h, w, clip[0], *pre)
            return _Clips(clip, None, False, "frames")
        if a.dtype.kind not in "fiu":
            raise Error(f"an input array is uint8 frames or a float32 clip, not {a.dtype}")
        if pre != (0, 0, 0):
            raise Error("antialias / resize_short / norm preprocess pixels; a float32 clip is used as it is")
        lay = layout or {3: "CHW", 4: "CTHW"}.get(a.ndim, "BCTHW")
        if a.ndim != len(lay):
            raise Error(f"a {lay} input has {len(lay)} axes, got {list(a.shape)}")
        stacked = lay.startswith("B")
        if lay == "CHW":          # one image: one frame
            a = a[:, None]
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
              resize_short: int = 0, norm: str = "fused") -> np.ndarray:
        """Encode x (see the module's docstring for the inputs).

        pool: "none" the token map [N, D] (CLS first where the family has one), "mean" the
        mean of the patch tokens [D], "cls" the CLS token [D], "lewm" LeWM's projector
        output [emb_dim]; hier=True: V-JEPA 2.1's hierarchical outputs [n_hier, N, D].
        Several clips (a batch, or a video's num_clips / dense clips) add a leading axis.
        batch: clips per forward pass (default: an in-memory batch at once, a file's clips
        one at a time, as `jepa embed`)."""
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
        clips = self._clips(x, layout, frames_per_clip, frame_step, num_clips, dense, stride,
                            antialias, resize_short, norm)
        out = self._encode(clips, pool, hier, batch)
        return out if clips.stacked else out[0]

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
                 norm: str = "fused") -> Classification:
        """Classify x with the file's head (attentive probe): each clip's logits, and the
        mean of the clips' softmax ranked (Meta's evaluation; `jepa classify`)."""
        i = self.info
        if not i.has_head:
            raise Error(f"{self.path}: this model file has no classifier head")
        if top_k < 1:
            raise Error("top_k: at least 1")
        clips = self._clips(x, layout, frames_per_clip, frame_step, num_clips, dense, stride,
                            antialias, resize_short, norm)
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
        probs = np.zeros(K, dtype=np.float64)
        for row in logits:
            z = np.exp(row.astype(np.float64) - float(row.max()))
            probs += z / z.sum() / B
        order = sorted(range(K), key=lambda q: (-probs[q], q))[:min(top_k, K)]
        labels = self.labels
        top = [(q, labels[q] if labels else None, float(probs[q])) for q in order]
        return Classification(probs, logits if clips.stacked else logits[0], top)

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
            clips = self._clips(x, layout, **_clip_options(input_options))
            if clips.stacked or clips.count != 1:
                raise Error("predict takes one clip")
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
        e, a, one = _batched(_f32(emb, "emb"), _f32(actions, "actions"), 3)
        B, T = e.shape[:2]
        pred = np.empty((B, T, self.info.pred_out_dim), dtype=np.float32)
        with self._context() as c:
            c.lewm_predict(e, a, B, T, pred)
        return pred[0] if one else pred

    def lewm_rollout(self, emb, actions, steps: int) -> np.ndarray:
        """LeWM: `steps` predicted embeddings from a history emb [T, emb_dim] and actions
        [T + steps - 1, action_dim] (or [B, ...] each) -> [steps, emb_dim]."""
        self._need("lewm")
        e, a, one = _batched(_f32(emb, "emb"), _f32(actions, "actions"), 3)
        B, T = e.shape[:2]
        traj = np.empty((B, int(steps), self.info.emb_dim), dtype=np.float32)
        with self._context() as c:
            c.lewm_rollout(e, B, T, a, int(steps), traj)
        return traj[0] if one else traj

    def ac_predict(self, tokens, actions, states) -> np.ndarray:
        """V-JEPA 2-AC: tokens [F N, D] frame-major, actions [F, action_dim], states
        [F, state_dim] (or [B, ...] each) -> [F N, pred_out_dim]: row f N + i predicts
        token i of frame f + 1."""
        self._need("ac")
        t, a, one = _batched(_f32(tokens, "tokens"), _f32(actions, "actions"), 3)
        s, _, _ = _batched(_f32(states, "states"), None, 3)
        B, F = a.shape[:2]
        N = self.info.pred_tokens_per_frame
        pred = np.empty((B, F * N, self.info.pred_out_dim), dtype=np.float32)
        with self._context() as c:
            c.ac_predict(t, a, s, B, F, pred)
        return pred[0] if one else pred

    def ac_rollout(self, tokens, states, actions, steps: int, normalize: bool = True):
        """V-JEPA 2-AC, as Meta's planner steps its world model: from a history tokens
        [T N, D], states [T, 7] and actions [T + steps - 1, 7] (or [B, ...] each) ->
        (traj [steps N, D], traj_states [steps, 7]); normalize layer-norms each step."""
        self._need("ac")
        t, s, one = _batched(_f32(tokens, "tokens"), _f32(states, "states"), 3)
        a, _, _ = _batched(_f32(actions, "actions"), None, 3)
        B, T = s.shape[:2]
        N, D = self.info.pred_tokens_per_frame, self.info.embed_dim
        traj = np.empty((B, int(steps) * N, D), dtype=np.float32)
        traj_states = np.empty((B, int(steps), self.info.state_dim), dtype=np.float32)
        with self._context() as c:
            c.ac_rollout(t, s, B, T, a, int(steps), bool(normalize), traj, traj_states)
        return (traj[0], traj_states[0]) if one else (traj, traj_states)

    def plan(self, history, goal, past_actions=None, states=None, **settings) -> Plan:
        """The cross-entropy-method planner (docs/world-models.md): the actions whose
        predicted outcome ends closest to goal.

        LeWM: history [T, emb_dim] embeddings, goal [emb_dim]. V-JEPA 2-AC: history tokens
        [T N, D] and states [T, 7], goal [N, D] (layer-normed, as Meta's planner expects).
        past_actions [T - 1, action_dim] (None when T == 1). settings: horizon, samples,
        iterations, elites, init_std, lo, hi, seed, momentum_mean, momentum_std (defaults:
        plan_defaults())."""
        i = self.info
        which = i.predictor if i.predictor in ("lewm", "ac") else None
        if which is None:
            raise Error(f"{self.path}: this model file has no world model to plan with")
        p = dict(_jepa.plan_defaults(which))
        for k, v in settings.items():
            if k not in p:
                raise Error(f"plan: unknown setting '{k}'")
            p[k] = v
        h = _f32(history, "history")
        if which == "ac":
            N = i.pred_tokens_per_frame
            if h.ndim != 2 or h.shape[0] % N:
                raise Error(f"history: tokens [T N, D] with N = {N} per frame, got {list(h.shape)}")
            T = h.shape[0] // N
            st = _f32(states, "states") if states is not None else None
            if st is None:
                raise Error("plan: V-JEPA 2-AC needs the history's states [T, 7]")
        else:
            if h.ndim != 2:
                raise Error(f"history: embeddings [T, emb_dim], got {list(h.shape)}")
            T, st = h.shape[0], None
        pa = _f32(past_actions, "past_actions") if past_actions is not None else None
        if T > 1 and pa is None:
            raise Error(f"plan: a history of {T} frames needs its {T - 1} past actions")
        actions = np.empty((int(p["horizon"]), i.action_dim), dtype=np.float32)
        energies = np.empty(int(p["iterations"]), dtype=np.float32)
        with self._context() as c:
            final = c.plan(which, h, T, st, pa, _f32(goal, "goal"), p, actions, energies)
        return Plan(actions, energies, final)

    def plan_defaults(self) -> dict:
        """The planner's default settings for this model's world model."""
        self._need(self.info.predictor if self.info.predictor in ("lewm", "ac") else "lewm")
        return dict(_jepa.plan_defaults(self.info.predictor))


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
