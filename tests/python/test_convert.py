"""python -m jepa_c.convert on the checkpoints of tests/data/checkpoints (tests/gen/gen_checkpoints.py):
Hugging Face folders written by save_pretrained and a Meta V-JEPA 2.1 torch.save checkpoint.

Each converted file is checked three ways:
  - its keys and tensors against the GGUF the fixture generator wrote from the same torch
    model with its own mapping (tests/gen/gen_hf_*.py; for Meta, the fixture bundle);
  - jepa.c's outputs on it against the committed PyTorch outputs (Hugging Face's modules,
    Meta's for V-JEPA 2.1) at the parity bar;
  - refusals: a hostile pickle, unmapped and missing tensors, a wrong architecture.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import jepa_c as jepa
from conftest import data, parity
from hostile_files import write_safetensors
from jepa_c import convert as jc

gguf = pytest.importorskip("gguf", reason="the converter's tests need the gguf package (pip install .[convert])")

CK = data("checkpoints")


def read_gguf(path):
    r = gguf.GGUFReader(path)
    kv = {}
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name.startswith("general."):
            continue
        v = f.contents()
        kv[f.name] = [float(np.float32(x)) for x in v] if isinstance(v, list) and v and isinstance(v[0], float) else v
    tensors = {t.name: (t.tensor_type.name, np.array(t.data)) for t in r.tensors}
    return kv, tensors, [t.name for t in r.tensors]


def same_file(got_path, ref_path, ignore_keys=()):
    """Every jepa.* key and every tensor (name, order, type, bits) of ref in got."""
    gk, gt, go = read_gguf(got_path)
    rk, rt, ro = read_gguf(ref_path)
    for k in ignore_keys:
        gk.pop(k, None), rk.pop(k, None)
    assert gk == rk, {k: (gk.get(k), rk.get(k)) for k in set(gk) | set(rk) if gk.get(k) != rk.get(k)}
    assert go == ro
    for n in ro:
        assert gt[n][0] == rt[n][0], (n, gt[n][0], rt[n][0])
        assert np.array_equal(gt[n][1].view(np.uint8), rt[n][1].view(np.uint8)), n


CASES = [  # checkpoint, the generator's GGUF, outputs: (input, reference, embed options)
    ("hf_vjepa2", "hf_vjepa2/model.gguf", [("hf_vjepa2/input.npy", "hf_vjepa2/tokens.npy", {})]),
    ("hf_ijepa", "hf_ijepa/model.gguf", [("hf_ijepa/input.npy", "hf_ijepa/tokens.npy", {}),
                                         ("hf_ijepa/input_84x70.npy", "hf_ijepa/tokens_84x70.npy", {})]),
    ("hf_vit", "hf_vit/model.gguf", [("hf_vit/input.npy", "hf_vit/tokens.npy", {}),
                                     ("hf_vit/input_96x80.npy", "hf_vit/tokens_96x80.npy", {})]),
    ("hf_dinov2", "hf_vit/model_ls.gguf", [("hf_vit/input.npy", "hf_vit/ls_tokens.npy", {}),
                                           ("hf_vit/input_48x64.npy", "hf_vit/ls_tokens_48x64.npy", {})]),
]


@pytest.mark.parametrize("case, ref_gguf, outputs", CASES, ids=[c[0] for c in CASES])
def test_hugging_face_checkpoints(tmp_path, case, ref_gguf, outputs):
    out = str(tmp_path / "m.gguf")
    s = jc.convert(os.path.join(CK, case), out)
    assert s["preprocessing"] == "the processor config"
    same_file(out, data(ref_gguf))
    m = jepa.Model(out, threads=2)
    for x, ref, opts in outputs:
        cos, rel = parity(m.embed(np.load(data(x)), **opts), np.load(data(ref)))
        print(f"{case} {os.path.basename(x)}: min cos {cos:.9f}, rel {rel:.2e}")


def test_hf_vjepa2_head_and_predictor(tmp_path):
    out = str(tmp_path / "m.gguf")
    jc.convert(os.path.join(CK, "hf_vjepa2"), out)
    m = jepa.Model(out, threads=2)
    assert m.labels == ["pour", "stir", "cut", "open", "close"]
    x = np.load(data("hf_vjepa2", "input.npy"))
    parity(m.classify(x).logits[None], np.load(data("hf_vjepa2", "logits.npy"))[None])
    pred = m.predict(m.embed(x), np.load(data("hf_vjepa2", "ctx_ids.npy")), np.load(data("hf_vjepa2", "tgt_ids.npy")))
    parity(pred, np.load(data("hf_vjepa2", "pred_split.npy")))


def test_f16_equals_the_generators_f16_file(tmp_path):
    """--ftype f16 writes the schema's quantization set as F16: the generator's f16 file has
    the same set (it was written from weights rounded to f16, so the bits agree)."""
    out = str(tmp_path / "m16.gguf")
    s = jc.convert(os.path.join(CK, "hf_vjepa2"), out, ftype="f16")
    assert s["tensors"]["F16"] == 36
    gk, gt, _ = read_gguf(out)
    rk, rt, _ = read_gguf(data("hf_vjepa2", "model_f16.gguf"))
    assert {n for n, (t, _) in gt.items() if t == "F16"} == {n for n, (t, _) in rt.items() if t == "F16"}
    for n, (t, a) in rt.items():
        if t == "F16":
            assert np.array_equal(gt[n][1], a), n
    parity(jepa.Model(out).embed(np.load(data("hf_vjepa2", "input.npy"))), np.load(data("hf_vjepa2", "tokens_f16w.npy")))


def test_bf16(tmp_path):
    out = str(tmp_path / "mbf.gguf")
    s = jc.convert(os.path.join(CK, "hf_vit"), out, ftype="bf16")
    assert s["tensors"]["BF16"] == 8 and s["tensors"]["F16"] == 0
    got = jepa.Model(out).embed(np.load(data("hf_vit", "input.npy")))
    ref = np.load(data("hf_vit", "tokens.npy"))
    # bfloat16 weights: 8 bits of mantissa, so the HF float32 outputs are only close
    cos, rel = parity(got, ref, cos_bar=0.999, rel_bar=0.05)
    print(f"hf_vit bf16 weights vs HF float32: min cos {cos:.6f}, rel {rel:.3g}")


def test_meta_vjepa2_1(tmp_path):
    out = str(tmp_path / "m21.gguf")
    s = jc.convert(os.path.join(CK, "meta_vjepa2_1.pt"), out, img_size=64, n_frames=4)
    assert "encoder" in s["dropped"] and "opt" in s["dropped"]
    same_file(out, data("vjepa2_1_tiny", "model.gguf"))
    m = jepa.Model(out, threads=2)
    d = lambda n: np.load(data("vjepa2_1_tiny", n))
    parity(m.embed(d("input_video.npy"), hier=True), d("hier_video.npy"))
    parity(m.embed(d("input_image.npy")), d("tokens_image.npy"))
    pred, ctx = m.predict(m.embed(d("input_video.npy")), d("h_ctx_ids.npy"), d("h_tgt_ids.npy"), return_context=True)
    parity(pred, d("h_pred.npy"))
    parity(ctx, d("h_ctx_out.npy"))


def test_meta_student_encoder_is_not_the_hub_model(tmp_path):
    """--encoder-key encoder reads the student encoder, which this checkpoint fills with -1."""
    out = str(tmp_path / "student.gguf")
    jc.convert(os.path.join(CK, "meta_vjepa2_1.pt"), out, encoder_key="encoder", img_size=64, n_frames=4)
    _, t, _ = read_gguf(out)
    assert np.all(t["enc.blk.0.attn_qkv.weight"][1] == -1)


def test_hostile_pickle_is_refused_without_running(tmp_path):
    flag = "/tmp/jepa_hostile_ran"
    if os.path.exists(flag):
        os.unlink(flag)
    out = tmp_path / "h.gguf"
    r = subprocess.run([sys.executable, "-m", "jepa_c.convert", os.path.join(CK, "hostile.pt"), str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "system" in r.stderr and "refused" in r.stderr and r.stderr.count("\n") == 1
    assert not os.path.exists(flag) and not out.exists() and not os.path.exists(str(out) + ".tmp")


def edited(tmp_path, case, edit):
    d = tmp_path / case
    shutil.copytree(os.path.join(CK, case), d)
    t = {k: np.array(v) for k, v in jc.read_safetensors(str(d / "model.safetensors")).items()}
    edit(t)
    write_safetensors(str(d / "model.safetensors"), t)
    return str(d)


def test_refusals(tmp_path):
    out = str(tmp_path / "x.gguf")

    def extra(t):
        t["encoder.layer.0.attention.attention.rel_pos_bias"] = np.zeros(4, np.float32)
    with pytest.raises(jc.ConvertError, match="unmapped tensor encoder.layer.0.attention.attention.rel_pos_bias"):
        jc.convert(edited(tmp_path, "hf_vit", extra), out)

    def missing(t):
        del t["encoder.layer.1.output.dense.bias"]
    with pytest.raises(jc.ConvertError, match="tensor encoder.layer.1.output.dense.bias is missing"):
        jc.convert(edited(tmp_path / "b", "hf_vit", missing), out)

    def truncated(d):
        p = os.path.join(d, "model.safetensors")
        with open(p, "r+b") as f:
            f.truncate(os.path.getsize(p) - 100)
    d = str(tmp_path / "c" / "hf_ijepa")
    shutil.copytree(os.path.join(CK, "hf_ijepa"), d)
    truncated(d)
    with pytest.raises(jc.ConvertError, match="data offsets"):
        jc.convert(d, out)

    d = str(tmp_path / "d" / "hf_vit")
    shutil.copytree(os.path.join(CK, "hf_vit"), d)
    cfg = json.load(open(os.path.join(d, "config.json")))
    cfg["model_type"] = "swin"
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    with pytest.raises(jc.ConvertError, match="model_type 'swin'"):
        jc.convert(d, out)
    cfg["model_type"], cfg["hidden_size"] = "vit", "sixty-four"
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    with pytest.raises(jc.ConvertError, match="malformed config"):
        jc.convert(d, out)
    st = os.path.join(d, "model.safetensors")   # a header declaring a 2^80-element tensor
    h = json.dumps({"x": {"dtype": "F32", "shape": [2 ** 40, 2 ** 40], "data_offsets": [0, 16]}}).encode()
    with open(st, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + bytes(16))
    with pytest.raises(jc.ConvertError, match="do not hold shape"):
        jc.convert(d, out)
    with pytest.raises(jc.ConvertError, match="no such file"):
        jc.convert(str(tmp_path / "nothing"), out)
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a zip at all")
    with pytest.raises(jc.ConvertError, match="not a torch.save zip"):
        jc.convert(str(bad), out)
    assert not os.path.exists(out) and not os.path.exists(out + ".tmp")
