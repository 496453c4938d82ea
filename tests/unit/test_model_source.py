"""A model id resolved once (``backends._source.ModelSource``): path or hub id decided once,
each config read once, the weights fingerprinted once, to the values the cache keys had."""

from __future__ import annotations

import json

from pytest_t2ibias._settings import Settings
from pytest_t2ibias.backends import _fingerprint
from pytest_t2ibias.backends._fingerprint import config_file, model_fingerprint
from pytest_t2ibias.backends._lazy import LazyDiffusersGenerator
from pytest_t2ibias.backends._source import ModelSource


def _pipeline(root):
    (root / "scheduler").mkdir(parents=True)
    (root / "model_index.json").write_text(json.dumps({"_class_name": "NoSuchPipeline"}))
    (root / "scheduler" / "scheduler_config.json").write_text(
        json.dumps({"_class_name": "DDIMScheduler", "num_train_timesteps": 1000}))
    (root / "weights.safetensors").write_bytes(b"w" * 64)
    return root


def test_a_folder_is_a_path_and_an_id_is_a_hub_id(tmp_path):
    folder = _pipeline(tmp_path / "toy")
    local = ModelSource.of(str(folder))
    assert local.path == folder and local.folder == folder and local.hub_id is None
    hub = ModelSource.of("org/name")
    assert hub.path is None and hub.folder is None and hub.hub_id == "org/name"
    assert ModelSource.of(local) is local  # resolved already


def test_its_configs_and_fingerprint_are_what_the_cache_keys_read(tmp_path):
    folder = str(_pipeline(tmp_path / "toy"))
    source = ModelSource.of(folder)
    assert source.fingerprint == model_fingerprint(folder)
    for name in ("model_index.json", "scheduler/scheduler_config.json", "vae/config.json"):
        assert source.config(name) == config_file(folder, name, offline=False)


def test_a_generator_reads_each_config_once_and_fingerprints_once(tmp_path, monkeypatch):
    folder = str(_pipeline(tmp_path / "toy"))
    reads: list[str] = []
    hashes: list[str] = []
    real_config, real_hash = _fingerprint.config_file, _fingerprint.model_fingerprint
    monkeypatch.setattr("pytest_t2ibias.backends._source.config_file",
                        lambda model, name, *, offline, revision=None: reads.append(name)
                        or real_config(model, name, offline=offline, revision=revision))
    monkeypatch.setattr("pytest_t2ibias.backends._source.model_fingerprint",
                        lambda root, revision=None: hashes.append(str(root))
                        or real_hash(root, revision))
    settings = Settings.standalone(model=folder)
    generator = LazyDiffusersGenerator(folder, settings, origin="--t2i-model")
    other = generator.with_options(steps=3)  # the same source: nothing read again
    assert other.fingerprint != generator.fingerprint
    assert sorted(reads) == sorted(set(reads)) and "model_index.json" in reads
    assert len(hashes) == 1
