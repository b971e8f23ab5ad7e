"""jepa.Client — `jepa serve` over HTTP with the methods of jepa.Model, so that code moves
between a local model and a server by changing one line:

    model = jepa.Model("lewm.gguf")                       # local
    model = jepa.Client("http://127.0.0.1:8080")           # remote, the same calls
    feats = model.embed(["a.png", "b.jpg"], pool="mean")   # numpy float32 [2, D]

What the server offers: embed (image and video files, PIL images and uint8 images are sent
as files; float32 clips as tensors), classify, lewm_predict, lewm_rollout, ac_predict,
ac_rollout, plan (arrays; a LeWM start or goal image is embedded first, as Model.plan does)
and info. The arguments, defaults and return types are Model's (numpy arrays,
Classification, Plan); the server's errors raise jepa.Error with its message, as the engine's
do. The standard library's urllib carries the requests (docs/server.md).
"""
from __future__ import annotations

import base64
import io
import json
import math
import os
import sys
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _jepa

Error = _jepa.Error


def _b64(a: np.ndarray) -> Dict[str, Any]:
    a = np.ascontiguousarray(a, dtype="<f4")
    if not np.isfinite(a).all():
        raise Error("an array holds NaN or infinity")
    return {"tensor": base64.b64encode(a.tobytes()).decode(), "shape": list(a.shape)}


def _arr(v, shape) -> np.ndarray:
    """A response's array (base64 float32) as numpy."""
    return np.frombuffer(base64.b64decode(v), dtype="<f4").astype(np.float32).reshape(shape)


class Client:
    """A `jepa serve` server at url (http://host:port). api_key: its --api-key (None: the
    JEPA_API_KEY environment variable, else none). timeout: seconds per request."""

    def __init__(self, url: str, api_key: Optional[str] = None, timeout: float = 60.0):
        self.url = url.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("JEPA_API_KEY") or None
        self.timeout = float(timeout)
        self._health: Optional[dict] = None

    def __repr__(self) -> str:
        return f"jepa.Client({self.url!r})"

    # ---- HTTP -------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: Optional[dict] = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            try:
                msg = json.loads(e.read())["error"]["message"]
            except (ValueError, KeyError, TypeError):
                msg = e.reason
            raise Error(f"{path}: {e.code}: {msg}") from None
        except (urllib.error.URLError, OSError) as e:
            raise Error(f"{self.url}{path}: {getattr(e, 'reason', e)}") from None

    def health(self) -> dict:
        """GET /health: the status and the model's facts."""
        return self._call("GET", "/health")

    @property
    def model_facts(self) -> dict:
        if self._health is None:
            self._health = self.health()["model"]
        return self._health

    def models(self) -> List[dict]:
        """GET /v1/models: the served model (its id, family and sizes)."""
        return self._call("GET", "/v1/models")["data"]

    # ---- inputs -----------------------------------------------------------------------

    def _input(self, x, k: int) -> Any:
        """One item as the server's input: a file's bytes, a PIL or uint8 image as PNG, or a
        float32 clip as a tensor."""
        if isinstance(x, (str, os.PathLike)):
            p = os.fspath(x)
            if not os.path.exists(p):
                raise Error(f"{p}: no such file")
            with open(p, "rb") as f:
                return base64.b64encode(f.read()).decode()
        image = sys.modules.get("PIL.Image")
        if image is not None and isinstance(x, image.Image) or (isinstance(x, np.ndarray) and x.dtype == np.uint8):
            from PIL import Image   # a uint8 image travels as a lossless PNG
            img = x if not isinstance(x, np.ndarray) else Image.fromarray(x)
            buf = io.BytesIO()
            img.save(buf, format="PNG")
            return {"image": base64.b64encode(buf.getvalue()).decode()}
        a = np.asarray(x)
        if a.dtype.kind == "f" and a.ndim in (3, 4):
            return {"tensor": _b64(a)["tensor"], "shape": list(a.shape)}
        raise Error(f"item {k}: a path, a PIL image, a uint8 [H, W, 3] image or a float32 [C, (T,) H, W] clip, "
                    f"not {type(x).__name__}")

    def _inputs(self, x) -> Tuple[list, bool]:
        """(inputs, listed): a list (or uint8 [N, H, W, 3], a float batch [B, C, T, H, W]) is
        several items, each one output row; anything else one item."""
        if isinstance(x, (list, tuple)):
            if not x:
                raise Error("an empty list of inputs")
            return [self._input(p, k) for k, p in enumerate(x)], True
        if isinstance(x, np.ndarray) and ((x.dtype == np.uint8 and x.ndim == 4) or (x.dtype.kind == "f" and x.ndim == 5)):
            return [self._input(x[k], k) for k in range(x.shape[0])], True
        return [self._input(x, 0)], False

    @staticmethod
    def _clip_opts(frames_per_clip: int, frame_step: int, num_clips: int) -> dict:
        o = {}
        for k, v in (("frames_per_clip", frames_per_clip), ("frame_step", frame_step), ("num_clips", num_clips)):
            if v:
                o[k] = int(v)
        return o

    # ---- embed, classify --------------------------------------------------------------

    def embed(self, x, pool: str = "none", hier: bool = False, batch: Optional[int] = None,
              layout: Optional[str] = None, frames_per_clip: int = 0, frame_step: int = 0,
              num_clips: int = 0, **unsupported) -> np.ndarray:
        """Model.embed through POST /v1/embeddings: one row per item (a list adds a leading
        axis). batch is the server's (--max-batch); layout, dense, stride and the
        preprocessing overrides are not served (jepa.Error)."""
        if layout is not None or any(v for v in unsupported.values()):
            raise Error(f"not served: {', '.join(['layout'] * (layout is not None) + sorted(k for k, v in unsupported.items() if v))}")
        inputs, listed = self._inputs(x)
        body = {"input": inputs, "pool": pool, "encoding_format": "base64",
                **self._clip_opts(frames_per_clip, frame_step, num_clips)}
        if hier:
            body["hier"] = True
        data = self._call("POST", "/v1/embeddings", body)["data"]
        rows = [_arr(d["embedding"], d["shape"]) for d in data]
        if not listed:
            return rows[0]
        if len({r.shape for r in rows}) > 1:
            raise Error("the items give outputs of different shapes: pool them (pool='mean') or embed them apart")
        return np.stack(rows)

    def classify(self, x, top_k: int = 5, batch: Optional[int] = None, layout: Optional[str] = None,
                 frames_per_clip: int = 0, frame_step: int = 0, num_clips: int = 0, **unsupported):
        """Model.classify through POST /v1/classify: a Classification (a list of them for
        several items), its probabilities ranked from the logits as Model ranks them."""
        from . import Classification
        if layout is not None or any(v for v in unsupported.values()):
            raise Error("not served: layout, dense, stride and the preprocessing overrides")
        if top_k < 1:
            raise Error("top_k: at least 1")
        inputs, listed = self._inputs(x)
        body = {"input": inputs, "logits": True, "top_k": max(1, min(top_k, int(self.model_facts.get("n_classes") or 1))),
                "encoding_format": "base64",
                **self._clip_opts(frames_per_clip, frame_step, num_clips)}
        data = self._call("POST", "/v1/classify", body)["data"]
        labels = self._labels(data)
        out = []
        for d in data:
            lg = _arr(d["logits"], d["logits_shape"])
            lg2 = lg.reshape(-1, lg.shape[-1])
            probs = np.zeros(lg2.shape[1], dtype=np.float64)
            for row in lg2:
                z = np.exp(row.astype(np.float64) - float(row.max()))
                probs += z / z.sum()
            probs /= lg2.shape[0]
            order = sorted(range(probs.size), key=lambda c: (-probs[c], c))[:min(top_k, probs.size)]
            top = [(c, labels.get(c), float(probs[c])) for c in order]
            out.append(Classification(probs, lg, top))
        return out if listed else out[0]

    def _labels(self, data) -> Dict[int, Optional[str]]:
        """The labels the server names in its answers (the top class of each)."""
        return {t["class"]: t["label"] for d in data for t in d.get("top_k", [])}

    # ---- world models -----------------------------------------------------------------

    def _world(self, path: str, body: dict) -> dict:
        body = {k: (_b64(np.asarray(v, dtype=np.float32)) if isinstance(v, (np.ndarray, list, tuple)) and k not in
                    ("bounds",) else v) for k, v in body.items() if v is not None}
        body["encoding_format"] = "base64"
        return self._call("POST", path, body)

    def lewm_predict(self, emb, actions) -> np.ndarray:
        """Model.lewm_predict through POST /v1/predict."""
        r = self._world("/v1/predict", {"emb": emb, "actions": actions})
        return _arr(r["prediction"], r["shape"])

    def lewm_rollout(self, emb, actions, steps: int) -> np.ndarray:
        """Model.lewm_rollout through POST /v1/rollout."""
        r = self._world("/v1/rollout", {"emb": emb, "actions": actions, "steps": _steps(steps)})
        return _arr(r["trajectory"], r["shape"])

    def ac_predict(self, tokens, actions, states) -> np.ndarray:
        """Model.ac_predict through POST /v1/predict."""
        r = self._world("/v1/predict", {"tokens": tokens, "actions": actions, "states": states})
        return _arr(r["prediction"], r["shape"])

    def ac_rollout(self, tokens, states, actions, steps: int, normalize: bool = True):
        """Model.ac_rollout through POST /v1/rollout: (traj, traj_states)."""
        r = self._world("/v1/rollout", {"tokens": tokens, "states": states, "actions": actions,
                                        "steps": _steps(steps), "normalize": bool(normalize)})
        return _arr(r["trajectory"], r["shape"]), _arr(r["states"], r["states_shape"])

    def plan(self, history, goal, past_actions=None, states=None, **settings):
        """Model.plan through POST /v1/plan, the settings by the same names (those of
        `jepa plan`'s options). A LeWM history or goal given as an image is embedded first
        (pool "lewm"), as Model.plan does; V-JEPA 2-AC takes arrays here."""
        from . import Plan
        known = ("horizon", "samples", "iters", "elites", "momentum", "std", "bounds", "maxnorm", "seed")
        for k in settings:
            if k not in known:
                raise Error(f"plan: unknown setting '{k}' (settings: {', '.join(known)})")
        if settings.get("seed") is not None and not 0 <= int(settings["seed"]) < 2 ** 53:
            raise Error("plan: seed: the server takes seeds below 2**53")
        world = self.model_facts.get("world_model")
        h, g = (self._state(v, name, world) for v, name in ((history, "history"), (goal, "goal")))
        body = {"history": h, "goal": g, "past_actions": past_actions, "states": states}
        for k, v in settings.items():
            body[k] = list(v) if k == "bounds" and v is not None else v
        r = self._world("/v1/plan", body)
        return Plan(_arr(r["actions"], r["shape"]), np.asarray(r["energies"], dtype=np.float32),
                    float(np.float32(r["final_energy"])))

    def _state(self, x, name: str, world: Optional[str]):
        if not isinstance(x, (str, os.PathLike)) and not type(x).__module__.startswith("PIL"):
            return np.asarray(x, dtype=np.float32)
        if world != "lewm":
            raise Error(f"{name}: the client plans V-JEPA 2-AC from arrays (tokens [T N, D]); "
                        "encode the images with a local Model")
        return self.embed(x, pool="lewm")


def _steps(steps) -> int:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise Error(f"steps: an integer of at least 1, not {steps!r}")
    return int(steps)
