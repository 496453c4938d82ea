"""Model fingerprints: deterministic, and changed by any weight byte."""

from __future__ import annotations

import os

import pytest

from pytest_t2ibias.backends import model_fingerprint
from pytest_t2ibias.backends._fingerprint import _FILE_HASHES
from pytest_t2ibias.testing import make_tiny_causal_lm


@pytest.fixture
def tiny_lm(tmp_path):
    return make_tiny_causal_lm(tmp_path / "lm")


def _flip_one_byte(path, offset=-5):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    stat = path.stat()
    path.write_bytes(bytes(data))
    # a new mtime even on coarse-clock filesystems: the in-process cache keys on it
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_directory_fingerprint_is_deterministic_and_content_based(tmp_path, tiny_lm):
    first = model_fingerprint(tiny_lm)
    assert first.startswith("sha256:") and len(first) == len("sha256:") + 64
    assert model_fingerprint(tiny_lm) == first
    twin = make_tiny_causal_lm(tmp_path / "twin")  # same seed, same bytes, other place
    assert model_fingerprint(twin) == first
    other = make_tiny_causal_lm(tmp_path / "other", seed=1)
    assert model_fingerprint(other) != first


def test_one_weight_byte_changes_the_fingerprint(tiny_lm):
    before = model_fingerprint(tiny_lm)
    _flip_one_byte(tiny_lm / "model.safetensors")
    assert model_fingerprint(tiny_lm) != before


def test_tokenizer_and_config_count_but_readmes_do_not(tiny_lm):
    before = model_fingerprint(tiny_lm)
    (tiny_lm / "README.md").write_text("a model card")
    (tiny_lm / ".cache").mkdir()
    (tiny_lm / ".cache" / "x.json").write_text("{}")
    assert model_fingerprint(tiny_lm) == before
    _flip_one_byte(tiny_lm / "tokenizer.json", offset=-3)
    assert model_fingerprint(tiny_lm) != before


def test_files_are_hashed_once_per_process(tiny_lm):
    model_fingerprint(tiny_lm)
    cached = len(_FILE_HASHES)
    model_fingerprint(tiny_lm)
    assert len(_FILE_HASHES) == cached


def test_uncached_hub_id_falls_back_to_id_and_revision():
    assert model_fingerprint("t2ibias-nobody/not-a-model") == "hub:t2ibias-nobody/not-a-model@main"
    assert model_fingerprint("t2ibias-nobody/not-a-model", "v2") == "hub:t2ibias-nobody/not-a-model@v2"


def test_cached_hub_id_uses_the_snapshot_commit(monkeypatch, tmp_path):
    import huggingface_hub

    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = tmp_path / "models--org--name" / "snapshots" / commit
    snapshot.mkdir(parents=True)
    calls = []

    def fake_snapshot_download(repo_id, revision=None, local_files_only=False):
        calls.append((repo_id, revision, local_files_only))
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    assert model_fingerprint("org/name", "main") == f"hub:org/name@{commit}"
    assert calls == [("org/name", "main", True)]
