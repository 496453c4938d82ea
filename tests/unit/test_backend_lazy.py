"""Lazy backends: keys from the model's files, weights loaded only on a cache miss."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support.settings import SETTINGS

from pytest_t2ibias._settings import BatchSizes
from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.backends._lazy import LazyDiffusersGenerator
from pytest_t2ibias.testing import make_tiny_pipeline


@pytest.fixture
def pipeline_dir(tmp_path) -> Path:
    return make_tiny_pipeline(tmp_path / "sd")


def test_fingerprint_needs_no_loading_and_loading_happens_once(pipeline_dir):
    generator = LazyDiffusersGenerator(str(pipeline_dir), SETTINGS, origin="--t2i-model", steps=2)
    assert generator._base._value is None
    other_steps = generator.with_options(steps=3)
    assert other_steps.fingerprint != generator.fingerprint
    assert generator.with_options(guidance_scale=1.0).fingerprint != generator.fingerprint
    assert generator.with_options(steps=2).fingerprint == generator.fingerprint
    assert generator._base._value is None

    images = generator.generate([ImageRequest("a photo of a doctor", 0, 0)])
    assert images[0].size == (16, 16)
    other_steps.generate([ImageRequest("a photo of a doctor", 0, 0)])
    assert other_steps._base is generator._base  # one pipeline for every sampling setting


def test_fingerprint_follows_the_weights_and_the_scheduler(pipeline_dir):
    before = LazyDiffusersGenerator(str(pipeline_dir), SETTINGS, origin="--t2i-model").fingerprint
    weights = next((pipeline_dir / "unet").glob("*.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    after_weights = LazyDiffusersGenerator(str(pipeline_dir), SETTINGS, origin="--t2i-model").fingerprint
    assert after_weights != before

    config = pipeline_dir / "scheduler" / "scheduler_config.json"
    config.write_text(config.read_text().replace('"beta_end": 0.012', '"beta_end": 0.02'))
    after_scheduler = LazyDiffusersGenerator(str(pipeline_dir), SETTINGS, origin="--t2i-model").fingerprint
    assert after_scheduler != after_weights

    half = dataclasses.replace(SETTINGS, dtype="bfloat16")
    assert LazyDiffusersGenerator(str(pipeline_dir), half, origin="--t2i-model").fingerprint != after_scheduler


def test_per_role_batch_sizes_reach_the_backends(tmp_path):
    from pytest_t2ibias.backends._lazy import lazy_answerer
    from pytest_t2ibias.testing import make_tiny_clip

    clip = make_tiny_clip(tmp_path / "clip")
    roles = BatchSizes.parse("generator=2,vqa=3")
    settings = dataclasses.replace(SETTINGS, batch_size=roles)
    assert lazy_answerer(str(clip), settings, origin="--t2i-vqa")._backend().batch.size == 3
    default = lazy_answerer(str(clip), SETTINGS, origin="--t2i-vqa")._backend()
    assert default.batch.size == 16  # the answerer's own default when no role size is given
