"""Writers of the converter's inputs, built byte by byte so that a test can make them wrong
on purpose (tests/python/test_convert_hostile.py, tests/python/fuzz_convert.py): torch.save's
zip format (a protocol-2 pickle assembled from opcodes, storages as stored records) and
safetensors. No torch: the pickle's opcodes are those torch.save writes for a dict of tensors
(torch._utils._rebuild_tensor_v2 over persistent-id storages, collections.OrderedDict)."""
import json
import struct
import zipfile

import numpy as np

PROTO = b"\x80\x02"
STOP = b"."
MARK = b"("
TUPLE = b"t"
EMPTY_DICT = b"}"
EMPTY_LIST = b"]"
EMPTY_TUPLE = b")"
SETITEMS = b"u"
APPENDS = b"e"
REDUCE = b"R"
BINPERSID = b"Q"
NONE = b"N"
NEWFALSE = b"\x89"
TUPLE1 = b"\x85"

_STORAGE = {np.dtype("<f4"): "FloatStorage", np.dtype("<f8"): "DoubleStorage", np.dtype("<f2"): "HalfStorage",
            np.dtype("<i8"): "LongStorage", np.dtype("<i4"): "IntStorage", np.dtype("u1"): "ByteStorage"}


def s(text: str) -> bytes:
    """BINUNICODE"""
    b = text.encode("utf-8", "surrogatepass")
    return b"X" + struct.pack("<I", len(b)) + b


def i(v: int) -> bytes:
    """BININT (a signed 32-bit integer) or LONG1 beyond it"""
    if -2 ** 31 <= v < 2 ** 31:
        return b"J" + struct.pack("<i", v)
    n = (v.bit_length() + 8) // 8
    return b"\x8a" + bytes([n]) + v.to_bytes(n, "little", signed=True)


def f(v: float) -> bytes:
    """BINFLOAT"""
    return b"G" + struct.pack(">d", v)


def glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def tup(*items: bytes) -> bytes:
    return MARK + b"".join(items) + TUPLE


def tensor(key: str, dtype, numel: int, offset: int, size, stride) -> bytes:
    """torch._utils._rebuild_tensor_v2(storage key, offset, size, stride, False, OrderedDict())"""
    pid = tup(s("storage"), glob("torch", _STORAGE[np.dtype(dtype)]), s(key), s("cpu"), i(numel))
    return (glob("torch._utils", "_rebuild_tensor_v2") +
            tup(pid + BINPERSID, i(offset), tup(*map(i, size)), tup(*map(i, stride)), NEWFALSE,
                glob("collections", "OrderedDict") + EMPTY_TUPLE + REDUCE) + REDUCE)


def value(v, storages: dict) -> bytes:
    """The opcodes of v: dicts, lists, str, int, float, None and numpy arrays (each array a
    storage of its own, appended to storages)."""
    if isinstance(v, dict):
        return EMPTY_DICT + (MARK + b"".join(value(k, storages) + value(x, storages) for k, x in v.items())
                             + SETITEMS if v else b"")
    if isinstance(v, (list, tuple)):
        return EMPTY_LIST + (MARK + b"".join(value(x, storages) for x in v) + APPENDS if v else b"")
    if isinstance(v, str):
        return s(v)
    if isinstance(v, bool) or v is None:
        return NONE if v is None else (b"\x88" if v else NEWFALSE)
    if isinstance(v, int):
        return i(v)
    if isinstance(v, float):
        return f(v)
    a = np.ascontiguousarray(v)
    a = a.astype(a.dtype.newbyteorder("<")) if a.dtype.byteorder == ">" else a
    key = str(len(storages))
    storages[key] = a.tobytes()
    stride, acc = [], 1
    for d in reversed(a.shape):
        stride.insert(0, acc)
        acc *= d
    return tensor(key, a.dtype, a.size, 0, a.shape, stride)


def pickle_of(obj, storages: dict) -> bytes:
    return PROTO + value(obj, storages) + STOP


def write_pt(path, pkl: bytes, storages: dict, root: str = "archive", pkl_method=zipfile.ZIP_STORED):
    """A torch.save-style zip: root/data.pkl, root/data/<key>, root/byteorder, root/version."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(zipfile.ZipInfo(f"{root}/data.pkl"), pkl, compress_type=pkl_method)
        z.writestr(f"{root}/byteorder", b"little")
        for k, b in storages.items():
            z.writestr(f"{root}/data/{k}", b)
        z.writestr(f"{root}/version", b"3\n")


def save_pt(path, obj):
    storages: dict = {}
    write_pt(path, pickle_of(obj, storages), storages)


def write_safetensors(path, tensors: dict, header_extra=None, raw_header: bytes = None):
    """tensors: name -> array (F32); header_extra entries are merged into the header as they
    are; raw_header replaces the JSON text."""
    header, blobs, off = {}, [], 0
    for k, a in tensors.items():
        a = np.ascontiguousarray(a, dtype=np.float32)
        header[k] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    header.update(header_extra or {})
    h = raw_header if raw_header is not None else json.dumps(header).encode()
    with open(path, "wb") as fh:
        fh.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))
