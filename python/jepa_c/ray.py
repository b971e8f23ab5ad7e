"""Embedding a corpus on Ray Data (docs/python.md, "Ray").

    import ray, jepa_c.ray
    ds = ray.data.read_images("s3://bucket/images/", mode="RGB", include_paths=True)
    ds = ds.map_batches(jepa_c.ray.Embedder, fn_constructor_kwargs={"model": "model.gguf"},
                        batch_size=32, concurrency=4, num_cpus=1)
    ds.write_parquet("s3://bucket/embeddings/")

`Embedder` is a callable class: Ray builds one per actor (the model is loaded, memory-
mapped, once per actor) and calls it on each batch, a dict of numpy columns:
  - "image": decoded uint8 RGB images (ray.data.read_images; [B, H, W, 3] when they share
    a size, an object array of [H, W, 3] arrays when not), each preprocessed by the
    model's recipe (as `jepa embed -i` does to the decoded file) and encoded;
  - or "path": files the actor decodes itself (images or videos, as `jepa embed FILE`
    does; a video gives one row per clip when num_clips / dense ask for several).
It returns the batch's "path" column (when there is one) and "embedding" (float32, one
row per input: the pooled vector, or the token map with pool="none"). A file that cannot
be read gets a NaN embedding and its reason in "error" instead of failing the job, unless
on_error="raise".

Same-shape inputs of a batch are encoded in one forward pass (batch=None) or in passes of
`batch`; one input at a time (batch=1) gives the CLI's bits exactly, larger passes agree
within float rounding (the SIMD matmuls sum in another order).
"""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from . import Error, Model

__all__ = ["Embedder"]


class Embedder:
    """Ray Data map_batches class: batches of images or file paths in, embeddings out.

    model: the GGUF file (on every node: a shared filesystem or a copy per node).
    pool: "mean" (default), "cls", "lewm" or "none" (Model.embed). threads: the engine's
    threads per actor (match the actor's num_cpus). column: "image" or "path" (default:
    whichever the batch has). batch: inputs per forward pass (None: every same-shape
    input of the Ray batch at once). prepack: Model's (the weights kept packed in the
    actor after the first batch: 4 bytes per weight). Clip and preprocessing options as
    Model.embed."""

    def __init__(self, model: str, pool: str = "mean", threads: int = 1, column: Optional[str] = None,
                 batch: Optional[int] = None, on_error: str = "record", device: str = "cpu", prepack: bool = False, **options):
        if on_error not in ("record", "raise"):
            raise Error("on_error: 'record' or 'raise'")
        self.model = Model(model, threads=threads, device=device, prepack=prepack)
        self.pool, self.column, self.batch, self.on_error = pool, column, batch, on_error
        self.options = options
        self.pre = {k: options[k] for k in ("antialias", "resize_short", "norm") if k in options}

    def _width(self) -> tuple:
        i = self.model.info
        return (i.emb_dim,) if self.pool == "lewm" else (i.embed_dim,)

    def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        column = self.column or ("image" if "image" in batch else "path" if "path" in batch else None)
        if column not in batch:
            raise Error(f"Embedder: the batch has no '{self.column or 'image'}' or 'path' column "
                        f"(columns: {', '.join(batch)})")
        items = list(batch[column])
        out: Dict[str, List] = {"embedding": [], "error": []}
        paths = list(batch["path"]) if "path" in batch else None
        if paths is not None:
            out["path"] = []
        if column == "image":
            clips, errors = [], []
            for img in items:
                try:
                    clips.append(self.model.preprocess(np.asarray(img, dtype=np.uint8), **self.pre))
                    errors.append("")
                except Error as e:
                    if self.on_error == "raise":
                        raise
                    clips.append(None), errors.append(str(e))
            rows = self._encode(clips)
            for k, (row, err) in enumerate(zip(rows, errors)):
                out["embedding"].append(row), out["error"].append(err)
                if paths is not None:
                    out["path"].append(paths[k])
        else:
            for k, p in enumerate(items):
                try:
                    e = self.model.embed(str(p), pool=self.pool, batch=self.batch, **self.options)
                    rows, err = (list(e) if e.ndim > len(self._row_shape()) else [e]), ""
                except Error as ex:
                    if self.on_error == "raise":
                        raise
                    rows, err = [np.full(self._row_shape(), np.nan, np.float32)], str(ex)
                for r in rows:
                    out["embedding"].append(r), out["error"].append(err)
                    if paths is not None:
                        out["path"].append(paths[k])
        res = {k: np.asarray(v) for k, v in out.items() if k != "embedding"}
        res["embedding"] = np.stack(out["embedding"]) if out["embedding"] else np.zeros((0,) + self._width(),
                                                                                       np.float32)
        return res

    def _row_shape(self) -> tuple:
        if self.pool == "none":
            raise Error("Embedder: pool='none' gives a token map per input; its shape depends on the input")
        return self._width()

    def _encode(self, clips: List[Optional[np.ndarray]]) -> List[np.ndarray]:
        """Preprocessed clips [3, T, H, W] (None: failed) -> one row each, same shapes batched."""
        rows: List[Optional[np.ndarray]] = [None] * len(clips)
        groups: Dict[tuple, List[int]] = {}
        for k, c in enumerate(clips):
            if c is not None:
                groups.setdefault(c.shape, []).append(k)
        for shape, ks in groups.items():
            x = np.stack([clips[k] for k in ks])
            e = self.model.embed(x, pool=self.pool, batch=self.batch)
            for j, k in enumerate(ks):
                rows[k] = e[j]
        fill = np.full(self._row_shape(), np.nan, np.float32) if any(r is None for r in rows) else None
        return [r if r is not None else fill for r in rows]
