"""Reading PyTorch checkpoints (torch.save's zip format) without torch and without running
the pickle's code.

A torch.save file is a zip archive: `<root>/data.pkl` (a pickle of the saved object),
`<root>/data/<key>` (the raw bytes of each storage, little-endian), `<root>/byteorder`,
`<root>/version`. Tensors appear in the pickle as calls to a few rebuild functions on
storages named by persistent ids ("storage", <dtype class>, key, location, numel).

`load(path)` unpickles data.pkl with an Unpickler whose find_class allows only:
  - the tensor rebuilders torch._utils._rebuild_tensor_v2 / _rebuild_tensor /
    _rebuild_parameter (rebuilt here as numpy arrays over the storage bytes),
  - the storage dtype classes (torch.FloatStorage, HalfStorage, BFloat16Storage, ...),
  - collections.OrderedDict, torch.Size, and numpy's scalar / dtype reconstruction
    (training checkpoints keep a float loss or learning rate as numpy scalars),
  - builtins that construct plain values (set, frozenset, slice, complex), and
    _codecs.encode(str, "latin1"), protocol 2's spelling of a bytes object.
Every other global (os.system, builtins.eval, subprocess.Popen, any class) is refused with
UnsafeCheckpoint naming it, before anything is called. Sizes are bounded by the archive:
storages must be stored uncompressed (as torch.save writes them: no zip bomb), each the
size its persistent id declares, and a tensor that reaches past its storage is refused.
"""
from __future__ import annotations

import collections
import pickle
import zipfile
from typing import Any, Dict, Tuple

import numpy as np


class UnsafeCheckpoint(Exception):
    """The checkpoint is not a plain torch.save of tensors (or is malformed)."""


# storage class name -> (numpy dtype, bytes per element); bfloat16 is kept as uint16 bits
_STORAGES: Dict[str, Tuple[str, int]] = {
    "FloatStorage": ("<f4", 4), "DoubleStorage": ("<f8", 8), "HalfStorage": ("<f2", 2),
    "BFloat16Storage": ("<u2", 2), "LongStorage": ("<i8", 8), "IntStorage": ("<i4", 4),
    "ShortStorage": ("<i2", 2), "CharStorage": ("i1", 1), "ByteStorage": ("u1", 1), "BoolStorage": ("?", 1),
}

_MAX_NDIM = 8
_MAX_PICKLE = 256 << 20   # the pickle holds structure, not tensor data


class BF16(np.ndarray):
    """A bfloat16 tensor held as its uint16 bit patterns (numpy has no bfloat16)."""


class _StorageType:
    def __init__(self, name: str):
        self.name = name
        self.dtype, self.itemsize = _STORAGES[name]


class _Storage:
    def __init__(self, data: bytes, st: _StorageType):
        if len(data) % st.itemsize:
            raise UnsafeCheckpoint(f"a {st.name} of {len(data)} bytes is not a whole number of elements")
        self.array = np.frombuffer(data, dtype=st.dtype)
        self.bf16 = st.name == "BFloat16Storage"


def _rebuild_tensor(storage, offset, size, stride, *rest):
    if not isinstance(storage, _Storage):
        raise UnsafeCheckpoint("a tensor is rebuilt from something that is not a storage")
    if (not isinstance(size, (tuple, list)) or not isinstance(stride, (tuple, list)) or len(size) != len(stride)
            or len(size) > _MAX_NDIM or not isinstance(offset, int)):
        raise UnsafeCheckpoint("a tensor with a malformed size / stride")
    for v in list(size) + list(stride):
        if not isinstance(v, int) or v < 0:
            raise UnsafeCheckpoint("a tensor with a negative or non-integer size / stride")
    a = storage.array
    n = 1
    for s in size:
        n *= s
    if n:
        last = offset + sum((s - 1) * st for s, st in zip(size, stride))
        if offset < 0 or last >= a.size:
            raise UnsafeCheckpoint(f"a tensor of shape {tuple(size)} reaches past its storage ({a.size} elements)")
        out = np.lib.stride_tricks.as_strided(a[offset:], shape=tuple(size),
                                              strides=tuple(st * a.itemsize for st in stride), writeable=False)
    else:
        out = np.zeros(tuple(size), dtype=a.dtype)
    out = np.ascontiguousarray(out)
    return out.view(BF16) if storage.bf16 else out


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None, *rest):
    if not isinstance(data, np.ndarray):
        raise UnsafeCheckpoint("a parameter that does not hold a tensor")
    return data


def _numpy_scalar(dtype, data=None):
    if not isinstance(dtype, np.dtype) or dtype.kind not in "biufc" or not isinstance(data, (bytes, type(None))):
        raise UnsafeCheckpoint("a numpy scalar of a type that is not a number")
    if data is None:
        return dtype.type(0)
    if len(data) != dtype.itemsize:
        raise UnsafeCheckpoint("a numpy scalar of the wrong size")
    return np.frombuffer(data, dtype=dtype)[0]


def _numpy_dtype(name, align=False, copy=False):
    if not isinstance(name, str) or len(name) > 8:
        raise UnsafeCheckpoint("a numpy dtype that is not a plain number type")
    d = np.dtype(name)
    if d.kind not in "biufc":
        raise UnsafeCheckpoint(f"numpy dtype {name!r} is not a number type")
    return d


def _codecs_encode(text, encoding="utf-8", errors="strict"):
    """Protocol 2 pickles bytes as _codecs.encode(str, "latin1"); nothing else is allowed."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1") or errors != "strict":
        raise UnsafeCheckpoint("_codecs.encode used for something other than bytes")
    return text.encode("latin1")


class _TorchSize(tuple):
    pass


_ALLOWED = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch", "Size"): _TorchSize,
    ("numpy.core.multiarray", "scalar"): _numpy_scalar,
    ("numpy._core.multiarray", "scalar"): _numpy_scalar,
    ("numpy", "dtype"): _numpy_dtype,
    ("_codecs", "encode"): _codecs_encode,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "slice"): slice,
    ("builtins", "complex"): complex,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, zf: zipfile.ZipFile, root: str):
        super().__init__(f)
        self.zf, self.root, self.cache = zf, root, {}

    def find_class(self, module: str, name: str):
        if module == "torch" and name in _STORAGES:
            return _StorageType(name)
        fn = _ALLOWED.get((module, name))
        if fn is None:
            raise UnsafeCheckpoint(f"the checkpoint's pickle calls {module}.{name}, which is not a tensor or a "
                                   "plain value: refused (only torch.save files of tensors are read)")
        return fn

    def persistent_load(self, pid):
        if (not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage" or
                not isinstance(pid[1], _StorageType) or not isinstance(pid[2], str)):
            raise UnsafeCheckpoint(f"an unknown persistent id {str(pid)[:80]!r}")
        _, st, key, _location, numel = pid
        if key not in self.cache:
            name = f"{self.root}/data/{key}"
            try:
                info = self.zf.getinfo(name)
            except KeyError:
                raise UnsafeCheckpoint(f"storage {key!r} is missing from the archive ({name})") from None
            if info.compress_type != zipfile.ZIP_STORED:
                raise UnsafeCheckpoint(f"storage {key!r} is compressed; torch.save stores storages as they are")
            if isinstance(numel, int) and info.file_size != numel * st.itemsize:
                raise UnsafeCheckpoint(f"storage {key!r}: {info.file_size} bytes for {numel} elements of {st.name}")
            self.cache[key] = _Storage(self.zf.read(name), st)
        return self.cache[key]


def load(path: str) -> Any:
    """The object a torch.save wrote to path, with tensors as numpy arrays (bfloat16 as
    BF16, a uint16 view). Raises UnsafeCheckpoint for anything but a plain checkpoint."""
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise UnsafeCheckpoint(f"{path}: not a torch.save zip archive (legacy, non-zip checkpoints are not "
                               "read: re-save it with a recent torch)") from None
    with zf:
        pkls = [n for n in zf.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pkls) != 1:
            raise UnsafeCheckpoint(f"{path}: {len(pkls)} data.pkl records; a torch.save archive has one")
        root = pkls[0].split("/")[0]
        bo = f"{root}/byteorder"
        if bo in zf.namelist() and zf.read(bo).strip() not in (b"little",):
            raise UnsafeCheckpoint(f"{path}: a big-endian checkpoint")
        if zf.getinfo(pkls[0]).file_size > _MAX_PICKLE:
            raise UnsafeCheckpoint(f"{path}: a {zf.getinfo(pkls[0]).file_size}-byte pickle (at most {_MAX_PICKLE})")
        with zf.open(pkls[0]) as f:
            try:
                return _Unpickler(f, zf, root).load()
            except UnsafeCheckpoint:
                raise
            except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError,
                    AttributeError, OverflowError, MemoryError) as e:
                raise UnsafeCheckpoint(f"{path}: a malformed checkpoint pickle ({type(e).__name__}: {e})") from None
