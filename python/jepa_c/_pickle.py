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
data.pkl and the storages must be stored uncompressed (as torch.save writes them: no zip
bomb), each storage the size its persistent id declares, and a tensor that reaches past its
storage is refused.

Before the pickle is unpickled, its opcodes are walked once (pickletools.genops, which builds
nothing) with a model of the unpickler's stack: more than _MAX_OPS opcodes, a memo index past
the opcodes seen, or objects nested deeper than _MAX_DEPTH are refused. The depth bound is
ours, not Python's recursion limit: hashing a tuple nested a million deep (a dict key) recurses
in C without a check and crashes the interpreter. While unpickling, the tensors rebuilt are
bounded by a budget derived from the file's size (all together at most the archive's size
plus _SLACK): a zero-stride view declaring GiBs or
thousands of views of one storage are refused before anything is allocated.
"""
from __future__ import annotations

import collections
import io
import os
import pickle
import pickletools
import stat
import struct
import zipfile
import zlib
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
_MAX_PICKLE = 64 << 20    # the pickle holds structure, not tensor data
_MAX_OPS = 1 << 20        # a checkpoint of 5,000 tensors has ~150,000
_MAX_DEPTH = 64           # a checkpoint nests 4 or 5 deep
_SLACK = 64 << 20         # tensors may overlap their storages by this much in all
# what zipfile raises on a damaged archive (OSError: a seek to a negative offset it read)
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError,
               zlib.error, ValueError, OSError, struct.error, OverflowError)


def show(name) -> str:
    """A name from a file, printable on one line: repr's escapes for control characters and
    other unprintable ones (a newline, an ANSI escape), at most 80 characters."""
    s = str(name) if isinstance(name, str) else repr(name)
    s = repr(s)[1:-1] if not s.isprintable() else s
    return s if len(s) <= 80 else s[:77] + "..."


def open_regular(path: str, seen: list = None):
    """path opened for reading, refused unless it is a regular file (a FIFO or a device is
    never read: the open does not block, O_NONBLOCK). Symbolic links are followed (Hugging
    Face caches are made of them). seen, when given, collects (device, inode) of each file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise UnsafeCheckpoint(f"{path}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeCheckpoint(f"{path}: not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        if seen is not None:
            seen.append((st.st_dev, st.st_ino))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class BF16(np.ndarray):
    """A bfloat16 tensor held as its uint16 bit patterns (numpy has no bfloat16)."""


class _StorageType:
    def __init__(self, name: str):
        self.name = name
        self.dtype, self.itemsize = _STORAGES[name]


class _Storage:
    def __init__(self, data: bytes, st: _StorageType, budget: list):
        if len(data) % st.itemsize:
            raise UnsafeCheckpoint(f"a {st.name} of {len(data)} bytes is not a whole number of elements")
        self.array = np.frombuffer(data, dtype=st.dtype)
        self.bf16 = st.name == "BFloat16Storage"
        self.budget = budget   # [bytes the tensors rebuilt may still take], shared by the archive


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
    # bounded before anything is allocated: the views materialized (a zero-stride view declaring
    # GiBs, thousands of views of one storage) may take the archive's size plus _SLACK in all
    if n * a.itemsize > storage.budget[0]:
        raise UnsafeCheckpoint(f"a tensor of shape {tuple(size)} ({n * a.itemsize} bytes) takes the tensors "
                               "rebuilt past the archive's size plus 64 MiB (broadcast or repeated views "
                               "of a storage): refused before allocating")
    storage.budget[0] -= n * a.itemsize
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


_MARK = object()
_BUILDS = {"TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "LIST", "DICT", "FROZENSET"}
_FILLS = {"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"}
_CALLS = {"REDUCE", "NEWOBJ", "NEWOBJ_EX", "BINPERSID", "OBJ", "INST"}
_EMPTIES = {"EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET", "EMPTY_TUPLE"}


class _Cell:
    """A value of the model stack that may hold others: its depth and the cells holding it."""
    __slots__ = ("depth", "parents")

    def __init__(self, depth: int = 0):
        self.depth, self.parents = depth, None


_LEAF = _Cell()   # every value that holds nothing (a number, a string, a global) shares it


def _hold(parent: _Cell, children, where: str, steps: list):
    """parent holds children: its depth is at least one more than theirs, and so on up every
    cell that holds it (a list filled after it was put in another raises that one too).
    steps[0] is what the walk may still spend: a container held by 10^5 others and deepened
    63 times would otherwise take minutes."""
    work = [(parent, c) for c in children if c is not _LEAF]
    for c in children:
        if c is not _LEAF:
            if c.parents is None:
                c.parents = []
            c.parents.append(parent)
    if not work and parent.depth < 1:
        parent.depth = 1
    while work:
        steps[0] -= 1
        if steps[0] < 0:
            raise UnsafeCheckpoint(f"{where}: the pickle shares containers among too many others to check")
        p, c = work.pop()
        if p.depth <= c.depth:
            p.depth = c.depth + 1
            if p.depth > _MAX_DEPTH:
                raise UnsafeCheckpoint(f"{where}: the pickle nests objects more than {_MAX_DEPTH} deep "
                                       "(or holds a container in itself)")
            work.extend((q, p) for q in p.parents or ())


def _check_structure(pkl: bytes, where: str):
    """Walk the pickle's opcodes with a model of the unpickler's stack in which each value that
    may hold others is a _Cell (shared with the memo: a container filled after it was memoized
    is seen by every reference), without building anything. Refuses more than _MAX_OPS
    opcodes, a memo index past the opcodes seen (the C unpickler sizes its memo by the largest
    index), and a value nested deeper than _MAX_DEPTH (a container holding itself included)."""
    stack: list = []
    memo: Dict[int, _Cell] = {}
    steps = [2 * _MAX_OPS]
    try:
        for n, (op, arg, _pos) in enumerate(pickletools.genops(pkl)):
            if n >= _MAX_OPS:
                raise UnsafeCheckpoint(f"{where}: the pickle has more than {_MAX_OPS} opcodes")
            name = op.name
            if name == "MARK":
                stack.append(_MARK)
                continue
            if name == "STOP":
                break
            before = op.stack_before
            items: list = []
            if pickletools.markobject in before:
                while stack and stack[-1] is not _MARK:
                    items.append(stack.pop())
                if not stack:
                    raise UnsafeCheckpoint(f"{where}: the pickle pops a mark it never set")
                stack.pop()
                under = before.index(pickletools.markobject)
            else:
                under = len(before)
            if len(stack) < under:
                raise UnsafeCheckpoint(f"{where}: the pickle pops an empty stack")
            popped = [stack.pop() for _ in range(under)][::-1]
            if any(v is _MARK for v in popped):
                raise UnsafeCheckpoint(f"{where}: the pickle uses a mark as a value")
            if name in ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"):
                idx = len(memo) if name == "MEMOIZE" else arg
                if not stack or stack[-1] is _MARK or not isinstance(idx, int) or not 0 <= idx <= n:
                    raise UnsafeCheckpoint(f"{where}: a memo index {show(idx)} past the pickle's {n} opcodes")
                memo[idx] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                if arg not in memo:
                    raise UnsafeCheckpoint(f"{where}: the pickle reads memo {show(arg)}, never written")
                stack.append(memo[arg])
            elif name == "DUP":
                stack.extend(popped * 2)
            elif name in _FILLS:
                container = popped[0]
                if container is _LEAF:   # filling a value that holds nothing: the unpickler refuses it
                    container = _Cell()
                _hold(container, items + popped[1:], where, steps)
                stack.append(container)
            elif name in _BUILDS or name in _CALLS:
                cell = _Cell()
                _hold(cell, items + popped, where, steps)
                stack.append(cell)
            elif name in _EMPTIES:
                stack.append(_Cell())
            else:
                stack.extend(_LEAF for _ in op.stack_after)
    except (ValueError, TypeError, KeyError, IndexError) as e:
        raise UnsafeCheckpoint(f"{where}: a malformed checkpoint pickle ({type(e).__name__}: {show(str(e))})") \
            from None


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, zf: zipfile.ZipFile, root: str, size: int):
        super().__init__(f)
        self.zf, self.root, self.cache, self.size, self.budget = zf, root, {}, size, [size + _SLACK]

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
            raise UnsafeCheckpoint(f"an unknown persistent id {show(pid)}")
        _, st, key, _location, numel = pid
        if key not in self.cache:
            name = f"{self.root}/data/{key}"
            try:
                info = self.zf.getinfo(name)
            except KeyError:
                raise UnsafeCheckpoint(f"storage {show(key)} is missing from the archive") from None
            _stored(info, f"storage {show(key)}", self.size)
            if not isinstance(numel, int) or isinstance(numel, bool) or info.file_size != numel * st.itemsize:
                raise UnsafeCheckpoint(f"storage {show(key)}: {info.file_size} bytes for {show(numel)} elements "
                                       f"of {st.name}")
            try:
                data = self.zf.read(name)
            except _ZIP_ERRORS as e:
                raise UnsafeCheckpoint(f"storage {show(key)}: a damaged archive record ({type(e).__name__}: "
                                       f"{show(str(e))})") from None
            self.cache[key] = _Storage(data, st, self.budget)
        return self.cache[key]


def _stored(info: zipfile.ZipInfo, what: str, size: int):
    """Refuses a record torch.save would not write: compressed (or of an unknown method), or
    encrypted. Reading it then needs no decompressor: its size is its size in the file, which
    must lie inside the archive of size bytes (zipfile reads the size the directory declares
    in one allocation)."""
    if info.flag_bits & 1:
        raise UnsafeCheckpoint(f"{what} is encrypted")
    if info.compress_type != zipfile.ZIP_STORED:
        raise UnsafeCheckpoint(f"{what} is compressed (method {info.compress_type}); torch.save stores "
                               "records as they are")
    if info.compress_size != info.file_size or info.header_offset + info.compress_size > size:
        raise UnsafeCheckpoint(f"{what}: the archive's directory declares {info.compress_size} bytes "
                               f"({info.file_size} uncompressed) at offset {info.header_offset} of a "
                               f"{size}-byte file")


def load(path: str, seen: list = None) -> Any:
    """The object a torch.save wrote to path, with tensors as numpy arrays (bfloat16 as
    BF16, a uint16 view). Raises UnsafeCheckpoint for anything but a plain checkpoint.
    seen, when given, collects (device, inode) of the file read."""
    with open_regular(path, seen) as f:
        size = os.fstat(f.fileno()).st_size
        try:
            return _load(f, path, size)
        except _ZIP_ERRORS as e:
            raise UnsafeCheckpoint(f"{path}: a damaged archive ({type(e).__name__}: {show(str(e))})") from None


def _load(f, path: str, size: int) -> Any:
    try:
        zf = zipfile.ZipFile(f)
    except zipfile.BadZipFile:
        raise UnsafeCheckpoint(f"{path}: not a torch.save zip archive (legacy, non-zip checkpoints are not "
                               "read: re-save it with a recent torch)") from None
    with zf:
        names = zf.namelist()
        pkls = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pkls) != 1:
            raise UnsafeCheckpoint(f"{path}: {len(pkls)} data.pkl records; a torch.save archive has one")
        root = pkls[0].split("/")[0]
        bo = f"{root}/byteorder"
        if bo in names:
            _stored(zf.getinfo(bo), "the byteorder record", size)
            if zf.getinfo(bo).file_size > 16 or zf.read(bo).strip() not in (b"little",):
                raise UnsafeCheckpoint(f"{path}: a big-endian checkpoint")
        info = zf.getinfo(pkls[0])
        _stored(info, "data.pkl", size)
        if info.file_size > _MAX_PICKLE:
            raise UnsafeCheckpoint(f"{path}: a {info.file_size}-byte pickle (at most {_MAX_PICKLE})")
        pkl = zf.read(pkls[0])
        _check_structure(pkl, path)
        try:
            return _Unpickler(io.BytesIO(pkl), zf, root, size).load()
        except UnsafeCheckpoint:
            raise
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError,
                AttributeError, OverflowError, MemoryError, ArithmeticError) as e:
            raise UnsafeCheckpoint(f"{path}: a malformed checkpoint pickle ({type(e).__name__}: "
                                   f"{show(str(e))})") from None
