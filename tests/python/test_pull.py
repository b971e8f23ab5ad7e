"""jepa.pull() against the loopback imitation of the hub (tests/pull/hubsim.py): the
downloaded bytes against the served ones, a wrong checksum refused with nothing left, a
404 as jepa.Error, a truncated body resumed, --type's choice; no network."""
import os
import sys

import numpy as np
import pytest

import jepa_c as jepa
from conftest import ROOT, data

sys.path.insert(0, os.path.join(ROOT, "tests", "pull"))
import hubsim  # noqa: E402

BLOB = bytes((i * 31 + 7) % 253 for i in range(200000))


@pytest.fixture
def hub(tmp_path, monkeypatch):
    h = hubsim.Hub()
    monkeypatch.setenv("JEPA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_ENDPOINT", h.url)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    yield h
    h.close()


def test_pull_bytes_and_model(hub, tmp_path):
    model = open(data("vjepa2_tiny", "model.gguf"), "rb").read()
    hub.add("org/tiny-GGUF", "tiny-f16.gguf", model)
    path = jepa.pull("org/tiny-GGUF")
    assert path == str(tmp_path / "cache" / "hub" / "org" / "tiny-GGUF" / "tiny-f16.gguf")
    assert open(path, "rb").read() == model
    assert jepa.Model(path).info.family == jepa.Model(data("vjepa2_tiny", "model.gguf")).info.family
    assert jepa.pull("org/tiny-GGUF:tiny-f16.gguf") == path
    assert len(hub.requests("GET", "/cdn/")) == 1          # the second call downloaded nothing


def test_pull_type(hub):
    for t in ("f16", "q8_0"):
        hub.add("org/multi", "m-%s.gguf" % t, BLOB + t.encode())
    assert open(jepa.pull("org/multi", type="q8_0"), "rb").read() == BLOB + b"q8_0"
    with pytest.raises(jepa.Error, match="no q4_0 file"):
        jepa.pull("org/multi", type="q4_0")


def test_pull_refusals(hub, tmp_path):
    hub.add("org/bad", "bad-f16.gguf", BLOB, "badsha")
    with pytest.raises(jepa.Error, match="sha256 mismatch"):
        jepa.pull("org/bad")
    assert os.listdir(tmp_path / "cache" / "hub" / "org" / "bad") == []
    with pytest.raises(jepa.Error, match="404"):
        jepa.pull("org/bad:missing.gguf")
    with pytest.raises(ValueError):
        jepa.pull("not a repo")


def test_pull_resume(hub):
    hub.add("org/trunc", "t-f16.gguf", BLOB, "truncate")
    with pytest.raises(jepa.Error, match="partial"):
        jepa.pull("org/trunc", retries=0)
    path = jepa.pull("org/trunc")
    assert open(path, "rb").read() == BLOB
    assert hub.requests("GET", "/cdn/")[-1][2] == "bytes=%d-" % (len(BLOB) // 2)


CKPT = data("checkpoints", "hf_vjepa2")


def test_pull_checkpoint_converts(hub, tmp_path):
    """A safetensors repository: pulled and converted into the cache; the GGUF embeds as the
    converter's own output of the same folder does; a second call downloads nothing."""
    from jepa_c.convert import convert
    hub.add_checkpoint("facebook/tiny-vjepa2", CKPT)
    path = jepa.pull("facebook/tiny-vjepa2")
    assert path == str(tmp_path / "cache" / "hub" / "facebook" / "tiny-vjepa2" / "tiny-vjepa2-f16.gguf")
    ref = str(tmp_path / "ref.gguf")
    convert(CKPT, ref, "f16")
    x = np.load(data("hf_vjepa2", "input.npy"))
    a, b = jepa.Model(path, threads=2).embed(x), jepa.Model(ref, threads=2).embed(x)
    assert a.shape == b.shape and np.array_equal(a, b)
    fetched = len(hub.requests("GET", "/cdn/")) + len(hub.requests("GET", "/facebook/tiny-vjepa2/resolve/"))
    assert fetched == 3                                   # config, processor config, safetensors
    assert jepa.pull("facebook/tiny-vjepa2") == path
    assert len(hub.requests("GET", "/cdn/")) + len(hub.requests("GET", "/facebook/tiny-vjepa2/resolve/")) == fetched
    assert jepa.pull("facebook/tiny-vjepa2", type="f32").endswith("tiny-vjepa2-f32.gguf")
    with pytest.raises(ValueError, match="f32, f16 or bf16"):
        jepa.pull("facebook/tiny-vjepa2", type="q4_0")


def test_pull_checkpoint_bad_sha(hub, tmp_path):
    hub.add_checkpoint("facebook/bad", CKPT, "badsha")
    with pytest.raises(jepa.Error, match="sha256 mismatch"):
        jepa.pull("facebook/bad")
    left = os.listdir(tmp_path / "cache" / "hub" / "facebook" / "bad")
    assert not any(n.endswith((".gguf", ".safetensors", ".part")) for n in left), left


def test_pull_checkpoint_small_file_bound(hub):
    hub.add("facebook/big", "config.json", b"{" + b" " * (4 << 20) + b"}", "plain")
    hub.add("facebook/big", "model.safetensors", open(os.path.join(CKPT, "model.safetensors"), "rb").read())
    with pytest.raises(jepa.Error, match="without a sha256"):
        jepa.pull("facebook/big")
