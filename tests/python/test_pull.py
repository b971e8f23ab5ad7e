"""jepa.pull() against the loopback imitation of the hub (tests/pull/hubsim.py): the
downloaded bytes against the served ones, a wrong checksum refused with nothing left, a
404 as jepa.Error, a truncated body resumed, --type's choice; no network."""
import os
import sys

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
