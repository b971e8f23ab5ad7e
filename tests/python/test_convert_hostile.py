"""python -m jepa_c.convert on hostile inputs, written here as an attacker would (each case builds
its files in a temporary folder from the fixtures of tests/data/checkpoints, or from nothing).

Every case runs the converter as a user does, in a subprocess under a memory limit
(RLIMIT_AS, LIMIT below) and a time limit, and expects a clean refusal: exit status 1 (2 for
an option argparse refuses), exactly one line on stderr naming the problem (no traceback, no
raw control character), and nothing written: the output folder holds what it held before (no
output, no temporary file), and the inputs are unchanged. The classes (docs/convert.md,
"Hostile files"): damaged archives, deep nesting, memory bombs, non-regular files, outputs
aliasing inputs, bad safetensors, bad sizes in configs and options, and GGUFs jepa.c's loader
would refuse."""
import hashlib
import json
import os
import resource
import shutil
import stat
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from conftest import data
import hostile_files as hf

pytest.importorskip("gguf", reason="the converter's tests need the gguf package (pip install .[convert])")

CK = data("checkpoints")
LIMIT = 768 << 20    # address space: the converter on the fixtures needs under 400 MiB
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
META_OPTS = ["--img-size", "64", "--n-frames", "4"]


def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run(args, timeout=60):
    return subprocess.run([sys.executable, "-m", "jepa_c.convert"] + [str(a) for a in args], capture_output=True,
                          text=True, env=ENV, preexec_fn=_limit, timeout=timeout)


def digest(path):
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(path)) if os.path.isdir(path) else [("", [], [path])]:
        for n in sorted(files):
            p = os.path.join(root, n)
            if os.path.isfile(p) and not stat.S_ISFIFO(os.stat(p).st_mode):
                h.update(p.encode() + open(p, "rb").read())
    return h.hexdigest()


def refused(src, out, match, extra=(), code=1, timeout=60):
    """The converter refuses src with one line containing match, writes nothing, leaves src."""
    out_dir = os.path.dirname(str(out))
    before, src_before = sorted(os.listdir(out_dir)), digest(str(src))
    r = run([src, out] + list(extra), timeout=timeout)
    assert r.returncode == code, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr[-2000:]
    assert match in r.stderr, r.stderr
    assert all(c == "\n" or c.isprintable() for c in r.stderr), repr(r.stderr)
    assert sorted(os.listdir(out_dir)) == before, (before, os.listdir(out_dir))
    assert digest(str(src)) == src_before
    return r.stderr


@pytest.fixture(scope="module")
def meta():
    """The Meta fixture's checkpoint as a dict of numpy arrays (read by the converter's own
    reader, re-written by hf.save_pt: test_meta_rewritten_converts shows it converts the same)."""
    from jepa_c import _pickle
    return _pickle.load(os.path.join(CK, "meta_vjepa2_1.pt"))


def hf_copy(tmp_path, case="hf_vit"):
    d = tmp_path / case
    shutil.copytree(os.path.join(CK, case), d)
    return d


def edit_json(path, edit):
    j = json.load(open(path))
    edit(j)
    with open(path, "w") as f:
        json.dump(j, f)


def deep_json(n):
    return "[" * n + "]" * n


# ---- the baseline: the writers here make files the converter takes ---------------------------

def test_meta_rewritten_converts(tmp_path, meta):
    """hf.save_pt of the fixture converts (so that the refusals below are about the defect each
    case adds, not about the writer)."""
    pt = tmp_path / "m.pt"
    hf.save_pt(pt, meta)
    r = run([pt, tmp_path / "m.gguf"] + META_OPTS)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["m.gguf", "m.pt"]


# ---- damaged archives -----------------------------------------------------------------------

def _pt(tmp_path, meta, **kw):
    pt = tmp_path / "m.pt"
    st: dict = {}
    hf.write_pt(pt, hf.pickle_of(meta, st), st, **kw)
    return pt


def _patch(path, find, new, which=0):
    b = bytearray(open(path, "rb").read())
    at = -1
    for _ in range(which + 1):
        at = b.index(find, at + 1)
    b[at:at + len(new)] = new
    open(path, "wb").write(bytes(b))
    return at


def test_bad_crc_in_a_storage(tmp_path, meta):
    pt = _pt(tmp_path, meta)
    with zipfile.ZipFile(pt) as z:
        info = z.getinfo("archive/data/3")
    at = info.header_offset + 30 + len(info.filename) + (len(info.extra) if info.extra else 0)
    b = bytearray(open(pt, "rb").read())
    b[at] ^= 0xFF
    open(pt, "wb").write(bytes(b))
    refused(pt, tmp_path / "o.gguf", "damaged archive", META_OPTS)


def test_bad_crc_in_the_pickle(tmp_path, meta):
    pt = _pt(tmp_path, meta)
    _patch(pt, b"predictor", b"predictoR")
    refused(pt, tmp_path / "o.gguf", "damaged archive", META_OPTS)


def test_bad_local_header(tmp_path, meta):
    pt = _pt(tmp_path, meta)
    _patch(pt, b"PK\x03\x04", b"PK\x09\x09", which=2)
    refused(pt, tmp_path / "o.gguf", "damaged archive", META_OPTS)


@pytest.mark.parametrize("method, word", [(99, "method 99"), (zipfile.ZIP_DEFLATED, "method 8")])
def test_compressed_or_unknown_method_pickle(tmp_path, meta, method, word):
    pt = _pt(tmp_path, meta, pkl_method=zipfile.ZIP_DEFLATED)
    if method == 99:   # the method field of the local header (offset 8) and of the central one (10)
        with zipfile.ZipFile(pt) as z:
            info = z.getinfo("archive/data.pkl")
        b = bytearray(open(pt, "rb").read())
        b[info.header_offset + 8:info.header_offset + 10] = struct.pack("<H", 99)
        cd = b.index(b"PK\x01\x02" + b[b.index(b"PK\x01\x02") + 4:b.index(b"PK\x01\x02") + 10])
        b[cd + 10:cd + 12] = struct.pack("<H", 99)
        open(pt, "wb").write(bytes(b))
    refused(pt, tmp_path / "o.gguf", word, META_OPTS)


def test_directory_declaring_a_gib_record(tmp_path, meta):
    """The central directory says the (stored) byteorder record is 1 GiB: zipfile would
    allocate that much to read it. Found by tests/fuzz/fuzz_convert.py (seed 1)."""
    pt = _pt(tmp_path, meta)
    b = bytearray(open(pt, "rb").read())
    at = b.index(b"PK\x01\x02")
    while b[at + 46:at + 46 + struct.unpack("<H", b[at + 28:at + 30])[0]] != b"archive/byteorder":
        at = b.index(b"PK\x01\x02", at + 4)
    b[at + 20:at + 24] = struct.pack("<I", 1 << 30)   # compressed size
    open(pt, "wb").write(bytes(b))
    refused(pt, tmp_path / "o.gguf", "the archive's directory declares 1073741824 bytes", META_OPTS)


def test_not_a_zip_and_a_truncated_zip(tmp_path, meta):
    pt = tmp_path / "t.pt"
    pt.write_bytes(b"PK\x03\x04" + bytes(100))
    refused(pt, tmp_path / "o.gguf", "not a torch.save zip", META_OPTS)
    full = _pt(tmp_path, meta)
    pt.write_bytes(open(full, "rb").read()[:len(open(full, "rb").read()) // 2])
    refused(pt, tmp_path / "o.gguf", "not a torch.save zip", META_OPTS)


# ---- deep nesting ---------------------------------------------------------------------------

def test_deep_pickle_tuple_key(tmp_path):
    """A dict key that is a tuple nested 200,000 deep: hashing it recursed in C and crashed
    the interpreter (SIGSEGV). The opcode walk refuses it before anything is built."""
    depth = 200_000
    pkl = hf.PROTO + hf.EMPTY_DICT + hf.EMPTY_TUPLE + hf.TUPLE1 * depth + hf.NONE + b"s" + hf.STOP
    pt = tmp_path / "d.pt"
    hf.write_pt(pt, pkl, {})
    refused(pt, tmp_path / "o.gguf", "more than 64 deep", META_OPTS)


def test_deep_pickle_lists_filled_after_memo(tmp_path):
    """Lists nested by filling each one after it was memoized (the depth a naive count misses)."""
    n = 5000
    body = b"".join(hf.EMPTY_LIST + b"r" + struct.pack("<I", k) for k in range(n))   # LONG_BINPUT k
    body += b"".join(b"j" + struct.pack("<I", k) + b"j" + struct.pack("<I", k + 1) + b"a" + b"0"
                     for k in range(n - 1))   # memo[k].append(memo[k + 1]); POP
    pkl = hf.PROTO + body + b"j" + struct.pack("<I", 0) + hf.STOP
    pt = tmp_path / "l.pt"
    hf.write_pt(pt, pkl, {})
    refused(pt, tmp_path / "o.gguf", "more than 64 deep", META_OPTS)


def test_container_shared_by_many_then_deepened(tmp_path):
    """One list held by 150,000 others, then deepened link by link: each link raises the depth
    of every holder, so the depth walk has a budget of steps and refuses past it."""
    body = hf.EMPTY_LIST + b"r" + struct.pack("<I", 0) + (hf.EMPTY_LIST + b"j" + struct.pack("<I", 0) + b"a0") * 150_000
    for k in range(63):   # memo[k].append(new list as memo[k + 1])
        body += b"j" + struct.pack("<I", k) + hf.EMPTY_LIST + b"r" + struct.pack("<I", k + 1) + b"a0"
    pt = tmp_path / "w.pt"
    hf.write_pt(pt, hf.PROTO + body + hf.NONE + hf.STOP, {})
    refused(pt, tmp_path / "o.gguf", "too many others to check", META_OPTS)


@pytest.mark.parametrize("name", ["config.json", "preprocessor_config.json"])
def test_deep_json_configs(tmp_path, name):
    d = hf_copy(tmp_path)
    (d / name).write_text('{"model_type": "vit", "x": ' + deep_json(100_000) + "}")
    refused(d, tmp_path / "o.gguf", "nested more than 32 deep")


def test_deep_shard_index(tmp_path):
    d = hf_copy(tmp_path)
    os.rename(d / "model.safetensors", d / "model-00001-of-00001.safetensors")
    (d / "model.safetensors.index.json").write_text('{"weight_map": ' + deep_json(100_000) + "}")
    refused(d, tmp_path / "o.gguf", "nested more than 32 deep")


def test_deep_safetensors_header(tmp_path):
    d = hf_copy(tmp_path)
    hf.write_safetensors(d / "model.safetensors", {}, raw_header=('{"a": ' + deep_json(100_000) + "}").encode())
    refused(d, tmp_path / "o.gguf", "nested more than 32 deep")


# ---- memory bombs (the converter under LIMIT of address space) ------------------------------

def test_zero_stride_tensor_of_gibs(tmp_path):
    """One float32 storage element viewed as 2.5 GiB by stride 0."""
    n = 5 << 27
    pkl = hf.PROTO + hf.EMPTY_DICT + hf.s("ema_encoder") + hf.tensor("0", "<f4", 1, 0, [n], [0]) + b"s" + hf.STOP
    pt = tmp_path / "z.pt"
    hf.write_pt(pt, pkl, {"0": bytes(4)})
    refused(pt, tmp_path / "o.gguf", "refused before allocating", META_OPTS)


def test_thousands_of_views_of_one_storage(tmp_path):
    numel = 1 << 18   # 1 MiB of float32, viewed whole 3,000 times (3 GiB)
    views = b"".join(hf.s(f"t{k}") + hf.tensor("0", "<f4", numel, 0, [numel], [1]) for k in range(3000))
    pkl = hf.PROTO + hf.EMPTY_DICT + hf.MARK + views + hf.SETITEMS + hf.STOP
    pt = tmp_path / "v.pt"
    hf.write_pt(pt, pkl, {"0": bytes(4 * numel)})
    refused(pt, tmp_path / "o.gguf", "refused before allocating", META_OPTS)


def test_millions_of_list_items(tmp_path):
    pkl = hf.PROTO + hf.EMPTY_LIST + hf.MARK + hf.NONE * (3 << 20) + hf.APPENDS + hf.STOP
    pt = tmp_path / "n.pt"
    hf.write_pt(pt, pkl, {})
    refused(pt, tmp_path / "o.gguf", "opcodes", META_OPTS)


def test_huge_memo_index(tmp_path):
    pkl = hf.PROTO + hf.NONE + b"r" + struct.pack("<I", 1 << 27) + hf.STOP   # LONG_BINPUT 2^27
    pt = tmp_path / "m.pt"
    hf.write_pt(pt, pkl, {})
    refused(pt, tmp_path / "o.gguf", "memo index", META_OPTS)


def test_huge_safetensors_headers(tmp_path):
    d = hf_copy(tmp_path)
    st = d / "model.safetensors"
    hf.write_safetensors(st, {}, raw_header=b"[" + b"{}," * (35 << 20) + b"{}]")   # 100 MiB of objects
    refused(d, tmp_path / "o.gguf", "at most 8388608")
    hf.write_safetensors(st, {}, raw_header=b"[" + b"{}," * (2 << 20) + b"{}]")    # 6 MiB of objects
    refused(d, tmp_path / "o.gguf", "JSON objects and arrays")
    st.write_bytes((1 << 62).to_bytes(8, "little") + b"{}")                       # a header length of 2^62
    refused(d, tmp_path / "o.gguf", "a safetensors header of")


def test_unterminated_string_of_escaped_quotes(tmp_path):
    """A header that is one unterminated string of 3.5 M escaped quotes: a scan that retried
    the string at each quote took hours; this one is linear."""
    d = hf_copy(tmp_path)
    hf.write_safetensors(d / "model.safetensors", {}, raw_header=b'"' + b'\\"' * (7 << 19))
    refused(d, tmp_path / "o.gguf", "not JSON", timeout=30)


def test_oversized_config(tmp_path):
    d = hf_copy(tmp_path)
    (d / "config.json").write_text('{"model_type": "vit", "pad": "' + "x" * (2 << 20) + '"}')
    refused(d, tmp_path / "o.gguf", "larger than 1048576 bytes")


# ---- files that are not regular ---------------------------------------------------------------

def test_shard_index_naming_a_fifo(tmp_path):
    d = hf_copy(tmp_path)
    os.rename(d / "model.safetensors", d / "real.safetensors")
    os.mkfifo(d / "fifo.safetensors")
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "fifo.safetensors"}}))
    refused(d, tmp_path / "o.gguf", "not a regular file", timeout=30)


def test_fifo_config_and_checkpoint(tmp_path):
    d = hf_copy(tmp_path)
    os.unlink(d / "config.json")
    os.mkfifo(d / "config.json")
    refused(d, tmp_path / "o.gguf", "not a regular file", timeout=30)
    os.mkfifo(tmp_path / "c.pt")
    refused(tmp_path / "c.pt", tmp_path / "o.gguf", "not a regular file", META_OPTS, timeout=30)


# ---- outputs aliasing inputs ----------------------------------------------------------------

def test_output_is_the_checkpoint(tmp_path):
    pt = tmp_path / "m.pt"
    shutil.copy(os.path.join(CK, "meta_vjepa2_1.pt"), pt)
    refused(pt, pt, "is a file this conversion reads", META_OPTS)
    os.symlink(pt, tmp_path / "link.gguf")
    refused(pt, tmp_path / "link.gguf", "is a file this conversion reads", META_OPTS)
    os.link(pt, tmp_path / "hard.gguf")
    refused(pt, tmp_path / "hard.gguf", "is a file this conversion reads", META_OPTS)


def test_output_is_a_file_of_the_model_folder(tmp_path):
    d = hf_copy(tmp_path)
    for n in ("model.safetensors", "config.json", "preprocessor_config.json"):
        refused(d, d / n, "is a file this conversion reads")
    os.symlink(d / "model.safetensors", tmp_path / "s.gguf")
    refused(d, tmp_path / "s.gguf", "is a file this conversion reads")
    refused(d, d, "is a folder")


def test_output_folder_missing(tmp_path):
    r = run([os.path.join(CK, "hf_vit"), tmp_path / "no" / "o.gguf"])
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "cannot write in its folder" in r.stderr and ".jepa-convert-" not in r.stderr
    assert os.listdir(tmp_path) == []


def test_symlink_at_the_old_temporary_name_is_not_followed(tmp_path):
    """OUT.tmp (the temporary name of earlier versions) a link to a victim: the conversion
    succeeds, the victim and the link are untouched (the temporary file is made in a private
    folder of a random name)."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    out = tmp_path / "o.gguf"
    os.symlink(victim, str(out) + ".tmp")
    r = run([os.path.join(CK, "hf_vit"), out])
    assert r.returncode == 0, r.stderr
    assert victim.read_bytes() == b"precious" and os.readlink(str(out) + ".tmp") == str(victim)
    assert sorted(os.listdir(tmp_path)) == ["o.gguf", "o.gguf.tmp", "victim"]


# ---- safetensors ------------------------------------------------------------------------------

def _tensors(d):
    from jepa_c import convert as jc
    return {k: np.array(v) for k, v in jc.read_safetensors(str(d / "model.safetensors")).items()}


def test_overlapping_offsets(tmp_path):
    d = hf_copy(tmp_path)
    t = _tensors(d)
    hf.write_safetensors(d / "model.safetensors", t)
    h = json.loads(open(d / "model.safetensors", "rb").read()[8:8 + int.from_bytes(
        open(d / "model.safetensors", "rb").read(8), "little")])
    a, b = sorted(h, key=lambda k: h[k]["data_offsets"][0])[:2]
    n = h[a]["data_offsets"][1] - h[a]["data_offsets"][0]
    h[b]["data_offsets"] = [h[b]["data_offsets"][0] - 4, h[b]["data_offsets"][0] - 4 + (
        h[b]["data_offsets"][1] - h[b]["data_offsets"][0])]   # b starts inside a, same length
    assert n >= 4
    blob = open(d / "model.safetensors", "rb").read()
    old = int.from_bytes(blob[:8], "little")
    hf.write_safetensors(d / "model.safetensors", {}, raw_header=json.dumps(h).encode())
    with open(d / "model.safetensors", "ab") as f:
        f.write(blob[8 + old:])
    refused(d, tmp_path / "o.gguf", "share bytes")


def test_duplicate_tensor_name(tmp_path):
    d = hf_copy(tmp_path)
    t = _tensors(d)
    hf.write_safetensors(d / "model.safetensors", t)
    blob = open(d / "model.safetensors", "rb").read()
    n = int.from_bytes(blob[:8], "little")
    head = blob[8:8 + n].decode()
    first = next(iter(t))
    entry = head[head.index(json.dumps(first)):]
    entry = entry[:entry.index("}") + 1]
    h = ("{" + entry + ", " + head[1:]).encode()
    hf.write_safetensors(d / "model.safetensors", {}, raw_header=h)
    with open(d / "model.safetensors", "ab") as f:
        f.write(blob[8 + n:])
    refused(d, tmp_path / "o.gguf", "appears twice")


@pytest.mark.parametrize("evil", ["a\nb", "x\x1b[31mred\x1b[0m", "tab\there", "bell\x07", "\u202eltr"])
def test_control_characters_in_names_are_escaped(tmp_path, evil):
    d = hf_copy(tmp_path)
    t = _tensors(d)
    t[evil] = np.zeros(2, np.float32)
    hf.write_safetensors(d / "model.safetensors", t)
    err = refused(d, tmp_path / "o.gguf", "unmapped tensor")
    assert repr(evil)[1:-1] in err


def test_control_characters_in_checkpoint_keys(tmp_path, meta):
    pt = tmp_path / "k.pt"
    hf.save_pt(pt, dict(meta, **{"evil\n\x1b[2J": 1}))
    err = refused(pt, tmp_path / "o.gguf", "unknown top-level entries", META_OPTS)
    assert "evil\\n\\x1b[2J" in err


# ---- sizes in configs and options -------------------------------------------------------------

@pytest.mark.parametrize("key, value, match", [
    ("hidden_size", -64, "expected (-64, -1)"),
    ("hidden_size", 1e12, "malformed"),
    ("num_hidden_layers", 10 ** 12, "layers"),
    ("intermediate_size", 1e30, "jepa.enc.ffn_dim"),
    ("intermediate_size", float("inf"), "jepa.enc.ffn_dim"),
    ("intermediate_size", -1, "jepa.enc.ffn_dim"),
    ("image_size", 1e30, "jepa.enc.img_size"),
    ("image_size", 2 ** 40, "jepa.enc.img_size"),
    ("patch_size", 0, "jepa.enc.patch_size = 0 is out of range"),
    ("layer_norm_eps", float("nan"), "jepa.enc.ln_eps"),
    ("layer_norm_eps", float("inf"), "jepa.enc.ln_eps"),
    ("layer_norm_eps", "1e-6", "not a number"),
])
def test_bad_sizes_in_config(tmp_path, key, value, match):
    d = hf_copy(tmp_path)
    edit_json(d / "config.json", lambda c: c.update({key: value}))
    refused(d, tmp_path / "o.gguf", match)


@pytest.mark.parametrize("key, value, match", [
    ("size", {"shortest_edge": -73}, "jepa.pre.resize_short"),
    ("size", {"shortest_edge": 1e30}, "jepa.pre.resize_short"),
    ("size", {"shortest_edge": float("inf")}, "malformed"),
    ("crop_size", {"height": 2 ** 33, "width": 2 ** 33}, "jepa.pre.crop"),
    ("rescale_factor", float("nan"), "jepa.pre.rescale"),
    ("rescale_factor", 1e300, "jepa.pre.rescale"),
])
def test_bad_sizes_in_processor_config(tmp_path, key, value, match):
    d = hf_copy(tmp_path)
    edit_json(d / "preprocessor_config.json", lambda c: c.update({key: value}))
    refused(d, tmp_path / "o.gguf", match)


@pytest.mark.parametrize("opts, match, code", [
    (["--img-size", "-5"], "img_size = -5", 1),
    (["--img-size", "1000000000000"], "img_size = 1000000000000", 1),
    (["--img-size", "1e30"], "invalid int value", 2),
    (["--img-size", "inf"], "invalid int value", 2),
    (["--n-frames", "0"], "n_frames = 0", 1),
    (["--enc-heads", "-1"], "enc_heads = -1", 1),
    (["--pred-heads", "99999999999"], "pred_heads", 1),
    (["--ftype", "q4"], "invalid choice", 2),
])
def test_bad_options(tmp_path, opts, match, code):
    pt = os.path.join(CK, "meta_vjepa2_1.pt")
    refused(pt, tmp_path / "o.gguf", match, ["--img-size", "64", "--n-frames", "4"] + opts, code=code)


def test_zero_sized_patch_and_empty_storage(tmp_path, meta):
    """A patch embedding with zero-sized kernel dimensions (patch size 0) and a tensor over a
    storage of no elements."""
    enc = dict(meta["ema_encoder"])
    key = next(k for k in enc if k.endswith("patch_embed.proj.weight"))
    enc[key] = np.zeros(enc[key].shape[:3] + (0, 0), np.float32)
    pt = tmp_path / "p.pt"
    hf.save_pt(pt, dict(meta, ema_encoder=enc))
    refused(pt, tmp_path / "o.gguf", "expected [D, 3, t, p, p] (none 0)", META_OPTS)
    pkl = hf.PROTO + hf.EMPTY_DICT + hf.s("x") + hf.tensor("0", "<f4", 0, 0, [4], [1]) + b"s" + hf.STOP
    hf.write_pt(pt, pkl, {"0": b""})
    refused(pt, tmp_path / "o.gguf", "reaches past its storage", META_OPTS)


# ---- GGUFs jepa.c's loader would refuse ------------------------------------------------------
# The converter opens the file it wrote with jepa.c's loader (the extension's Model) before
# the rename; the cases below are refused by the loader ("would not load in jepa.c") or,
# where a value cannot be written at all (NaN, beyond uint32), by the converter's own check.

@pytest.mark.parametrize("where, key, value, match", [
    ("config.json", "image_size", 0, "jepa.enc.img_size"),
    ("config.json", "patch_size", 7, "not a multiple"),
    ("config.json", "num_attention_heads", 0, "jepa.enc.n_head"),
    ("config.json", "num_attention_heads", 7, "does not divide"),
    ("config.json", "layer_norm_eps", -1e-6, "jepa.enc.ln_eps"),
    ("config.json", "layer_norm_eps", 0, "jepa.enc.ln_eps"),
    ("preprocessor_config.json", "image_mean", [float("nan")] * 3, "jepa.pre.mean"),
    ("preprocessor_config.json", "image_mean", [0.5, 0.5], "jepa.pre.mean"),
    ("preprocessor_config.json", "image_std", [0.0, 0.2, 0.2], "jepa.pre.std"),
    ("preprocessor_config.json", "image_std", [-0.2, 0.2, 0.2], "jepa.pre.std"),
    ("preprocessor_config.json", "size", {"shortest_edge": 0}, "jepa.pre.resize_short"),
])
def test_files_the_loader_refuses(tmp_path, where, key, value, match):
    d = hf_copy(tmp_path)
    edit_json(d / where, lambda c: c.update({key: value}))
    refused(d, tmp_path / "o.gguf", match)


@pytest.mark.parametrize("opts, match", [
    (["--enc-heads", "7"], "not a multiple of 7 heads"),
    (["--pred-heads", "7"], "does not divide"),
    (["--img-size", "60"], "not a multiple"),
    (["--n-frames", "3"], "not a multiple"),
])
def test_meta_options_the_loader_refuses(tmp_path, opts, match):
    pt = os.path.join(CK, "meta_vjepa2_1.pt")
    refused(pt, tmp_path / "o.gguf", match, META_OPTS + opts)


def test_loader_refusal_is_named(tmp_path):
    """The loader's refusal names the output file, not the private temporary one."""
    d = hf_copy(tmp_path)
    edit_json(d / "config.json", lambda c: c.update({"num_attention_heads": 7}))
    err = refused(d, tmp_path / "o.gguf", "would not load in jepa.c")
    assert ".jepa-convert-" not in err
