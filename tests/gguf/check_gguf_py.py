#!/usr/bin/env python3
"""check_gguf_py.py — cross-check jepa.c's GGUF writer and reader against ggml's own
Python reader (the PyPI package `gguf`, i.e. ggml's gguf-py).

(a) Writer: runs BUILD/tests/gguf/gguf_write_sample (our writer; every value type,
    string arrays, a replaced key, one tensor of every schema-v1 type, at the default
    alignment and at 64), reads the GGUF with gguf.GGUFReader and checks every key (in
    order), type and value, and every tensor's type, shape, size, bytes and offset
    against the JSON the C program wrote from its own in-memory values. Offsets must
    also follow ggml's packing rule (each tensor at the padded end of the previous one),
    which ggml's C reader enforces.
(b) Reader: runs BUILD/tests/gguf/gguf_dump (our reader) on the fixture GGUFs (written
    by gguf-py) and compares version, alignment, data offset, every key/type/value and
    every tensor's type/shape/offset/size/bytes (FNV-1a) with gguf-py's view.
(c) Quantizer: runs BUILD/cli/jepa quantize on a fixture model for every type it writes,
    reads each output with gguf.GGUFReader and checks that every tensor loads, that the
    file's tensors are either the input's bytes or of the target type (or the schema's
    fallback), that general.file_type / general.name were set, and that gguf.quants.
    dequantize of each converted tensor is within the type's rounding of the f32 input.

Needs only `pip install gguf numpy`. Exit status 0 when everything matches, 1 on any
mismatch (each printed), 2 on a usage/setup error. See tests/gguf/README.md.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from gguf import GGUFReader

VTYPE_NAMES = ["u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array",
               "u64", "i64", "f64"]

errors = []


def err(msg):
    errors.append(msg)
    print("MISMATCH: " + msg)


def fnv1a64(data: bytes) -> str:
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def same_scalar(vtype, want, got):
    if vtype == "f32":
        a, b = np.float32(want), np.float32(got)
        return (math.isnan(a) and math.isnan(b)) or a == b
    if vtype == "f64":
        return (math.isnan(want) and math.isnan(got)) or float(want) == float(got)
    if vtype == "bool":
        return bool(want) == bool(got) and isinstance(want, bool)
    return want == got


def field_view(field):
    """(type name, element type name or None, value) of a gguf-py ReaderField."""
    main = VTYPE_NAMES[int(field.types[0])]
    elem = None
    if main == "array":
        # parts = [key length, key, value type, element type, count, elements...]; an empty
        # array has no element entry in field.types, so read the element type from parts
        elem = VTYPE_NAMES[int(field.parts[3][0])]
        if len(field.types) > 2 or (len(field.types) == 2 and int(field.types[1]) != int(field.parts[3][0])):
            elem = "inconsistent"
    return main, elem, field.contents()


def compare_kv(where, want_list, reader):
    fields = [(k, f) for k, f in reader.fields.items() if not k.startswith("GGUF.")]
    got_keys = [k for k, _ in fields]
    want_keys = [kv["key"] for kv in want_list]
    if got_keys != want_keys:
        err(f"{where}: keys differ\n  ours   {want_keys}\n  gguf-py {got_keys}")
        return
    for kv, (key, field) in zip(want_list, fields):
        main, elem, value = field_view(field)
        if main != kv["type"] or elem != kv.get("elem"):
            err(f"{where}: '{key}' type {main}/{elem}, expected {kv['type']}/{kv.get('elem')}")
            continue
        if main == "array":
            if len(value) != len(kv["value"]) or not all(
                    same_scalar(elem, w, g) for w, g in zip(kv["value"], value)):
                err(f"{where}: '{key}' = {value!r}, expected {kv['value']!r}")
        elif not same_scalar(main, kv["value"], value):
            err(f"{where}: '{key}' = {value!r}, expected {kv['value']!r}")


def check_writer(build, tmp, alignment):
    exe = os.path.join(build, "tests", "gguf", "gguf_write_sample")
    path = os.path.join(tmp, f"sample{alignment or ''}.gguf")
    desc = os.path.join(tmp, f"sample{alignment or ''}.json")
    cmd = [exe, path, desc] + ([str(alignment)] if alignment else [])
    subprocess.run(cmd, check=True)
    with open(desc, encoding="utf-8") as f:
        want = json.load(f)
    where = f"writer sample (alignment {want['alignment']})"
    n_err = len(errors)
    r = GGUFReader(path)
    if int(r.fields["GGUF.version"].contents()) != 3:
        err(f"{where}: version {r.fields['GGUF.version'].contents()}, expected 3")
    if r.alignment != want["alignment"]:
        err(f"{where}: gguf-py alignment {r.alignment}, expected {want['alignment']}")
    compare_kv(where, want["kv"], r)
    if [t.name for t in r.tensors] != [t["name"] for t in want["tensors"]]:
        err(f"{where}: tensor names/order differ")
        return
    expect_off = r.data_offset
    for t, w in zip(r.tensors, want["tensors"]):
        if int(t.tensor_type) != w["type"]:
            err(f"{where}: tensor {t.name} type {int(t.tensor_type)}, expected {w['type']}")
        if [int(x) for x in t.shape] != w["ne"]:
            err(f"{where}: tensor {t.name} shape {list(t.shape)}, expected {w['ne']}")
        if int(t.n_bytes) != w["nbytes"]:
            err(f"{where}: tensor {t.name} {t.n_bytes} bytes, expected {w['nbytes']}")
        if t.data_offset != expect_off or t.data_offset % want["alignment"]:
            err(f"{where}: tensor {t.name} at {t.data_offset}, ggml packing expects {expect_off}")
        got = np.ascontiguousarray(t.data).tobytes()
        if got.hex() != w["hex"]:
            err(f"{where}: tensor {t.name} bytes differ")
        a = want["alignment"]
        expect_off += (w["nbytes"] + a - 1) // a * a
    if os.path.getsize(path) != expect_off:
        err(f"{where}: file is {os.path.getsize(path)} bytes, expected {expect_off} "
            "(data section with every tensor padded)")
    if len(errors) == n_err:
        print(f"ok   {where}: {len(want['kv'])} kv, {len(want['tensors'])} tensors")


def check_reader(build, fixture):
    exe = os.path.join(build, "tests", "gguf", "gguf_dump")
    out = subprocess.run([exe, fixture], check=True, capture_output=True).stdout
    ours = json.loads(out.decode("utf-8"))
    where = f"reader on {fixture}"
    n_err = len(errors)
    r = GGUFReader(fixture)
    if ours["version"] != int(r.fields["GGUF.version"].contents()):
        err(f"{where}: version {ours['version']} vs gguf-py {r.fields['GGUF.version'].contents()}")
    if ours["alignment"] != r.alignment:
        err(f"{where}: alignment {ours['alignment']} vs gguf-py {r.alignment}")
    if ours["data_offset"] != r.data_offset:
        err(f"{where}: data offset {ours['data_offset']} vs gguf-py {r.data_offset}")
    compare_kv(where, ours["kv"], r)
    if [t["name"] for t in ours["tensors"]] != [t.name for t in r.tensors]:
        err(f"{where}: tensor names/order differ")
        return
    for o, t in zip(ours["tensors"], r.tensors):
        got = (int(t.tensor_type), [int(x) for x in t.shape], int(t.n_elements),
               int(t.data_offset), int(t.n_bytes))
        mine = (o["type"], o["ne"], o["n_elements"], o["file_offset"], o["nbytes"])
        if got != mine:
            err(f"{where}: tensor {o['name']}: ours {mine} vs gguf-py {got}")
            continue
        if o["file_offset"] - ours["data_offset"] != o["offset"]:
            err(f"{where}: tensor {o['name']}: relative offset {o['offset']} inconsistent")
        data = np.ascontiguousarray(t.data).tobytes()
        if fnv1a64(data) != o["fnv1a64"]:
            err(f"{where}: tensor {o['name']}: data hash differs")
    if len(errors) == n_err:
        print(f"ok   {where}: {len(ours['kv'])} kv, {len(ours['tensors'])} tensors")


# --type -> (GGML type name, general.file_type, the fallbacks a tensor may take instead,
# largest |error| / max|w| of a row allowed: half a step, d = max|w| / 127 (q8_0) or
# (max - min) / 15, 31 (q4_1, q5_1); a whole step |d| = max|w| / 8, / 16 for q4_0 / q5_0,
# whose top code is clipped on the side opposite the largest magnitude; for the K-quants,
# whose sub-block scales are themselves rounded to 6 bits, a loose bound)
QUANT_TYPES = {
    "q8_0": ("Q8_0", 7, ("F16",), 1 / 254 + 1e-3), "q4_0": ("Q4_0", 2, ("F16",), 1 / 8 + 1e-3),
    "q4_1": ("Q4_1", 3, ("F16",), 1 / 15 + 1e-3), "q5_0": ("Q5_0", 8, ("F16",), 1 / 16 + 1e-3),
    "q5_1": ("Q5_1", 9, ("F16",), 1 / 31 + 1e-3), "q4_K": ("Q4_K", 14, ("Q4_0", "F16"), 0.15),
    "q5_K": ("Q5_K", 16, ("Q5_0", "F16"), 0.08), "q6_K": ("Q6_K", 18, ("Q8_0", "F16"), 0.04),
}


def check_quantize(build, model, tmp):
    from gguf.quants import dequantize
    jepa = os.path.join(build, "cli", "jepa")
    src = GGUFReader(model)
    orig = {t.name: t for t in src.tensors}
    for typ, (gname, ftype, fallback, bound) in QUANT_TYPES.items():
        where = f"quantize {os.path.basename(os.path.dirname(model))} --type {typ}"
        out = os.path.join(tmp, typ + ".gguf")
        p = subprocess.run([jepa, "quantize", model, out, "--type", typ], capture_output=True, text=True)
        if p.returncode:
            err(f"{where}: exit {p.returncode}: {p.stderr.strip()}")
            continue
        n_err = len(errors)
        r = GGUFReader(out)
        if int(r.fields["general.file_type"].contents()) != ftype:
            err(f"{where}: general.file_type {r.fields['general.file_type'].contents()}, want {ftype}")
        if not str(r.fields["general.name"].contents()).endswith("-" + typ):
            err(f"{where}: general.name {r.fields['general.name'].contents()!r} lacks -{typ}")
        n_target = worst = 0
        for t in r.tensors:
            o = orig[t.name]
            if bytes(np.asarray(t.data).tobytes()) == bytes(np.asarray(o.data).tobytes()) and t.tensor_type == o.tensor_type:
                continue
            tn = t.tensor_type.name
            if tn != gname and tn not in fallback:
                err(f"{where}: {t.name} is {tn}, want {gname} or {fallback}")
                continue
            n_target += tn == gname
            got = dequantize(np.asarray(t.data), t.tensor_type).reshape(-1, int(t.shape[0]))
            ref = dequantize(np.asarray(o.data), o.tensor_type).reshape(got.shape).astype(np.float64)
            scale = np.abs(ref).max(axis=1, keepdims=True) + 1e-30
            e = float((np.abs(got - ref) / scale).max())
            worst = max(worst, e)
            if e > bound:
                err(f"{where}: {t.name}: max |w - w_ref| / max|w_row| {e:.3g} > {bound:.3g}")
        if not n_target:
            err(f"{where}: no tensor of type {gname}")
        if len(errors) == n_err:
            print(f"ok   {where}: {len(r.tensors)} tensors load in gguf-py, {n_target} {gname}, "
                  f"worst row error {worst:.3g} of the row's max")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="meson build directory (built)")
    ap.add_argument("--fixtures", nargs="*",
                    default=[os.path.join(os.path.dirname(__file__), "..", "data", d, "model.gguf")
                             for d in ("vjepa2_tiny", "vjepa2_1_tiny")],
                    help="GGUF files written by gguf-py to read with our reader")
    args = ap.parse_args()
    for tool in ("gguf_write_sample", "gguf_dump"):
        if not os.path.exists(os.path.join(args.build, "tests", "gguf", tool)):
            print(f"missing {args.build}/tests/gguf/{tool}: build it first")
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        check_writer(args.build, tmp, None)
        check_writer(args.build, tmp, 64)
    for fx in args.fixtures:
        check_reader(args.build, os.path.normpath(fx))
    if os.path.exists(os.path.join(args.build, "cli", "jepa")):
        with tempfile.TemporaryDirectory() as tmp:
            check_quantize(args.build, os.path.normpath(args.fixtures[0]), tmp)
    else:
        err(f"missing {args.build}/cli/jepa: the quantizer is not checked")
    print(f"check_gguf_py: {len(errors)} mismatches")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
