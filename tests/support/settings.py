"""Settings for a backend built outside a pytest session (cache off, offline, CPU)."""

from __future__ import annotations

from pathlib import Path

from pytest_t2ibias._settings import BatchSizes, Settings

SETTINGS = Settings(
    model=None, baseline_model=None, images=None, vqa=None, classifiers={}, llm=None,
    device="cpu", dtype="float32", images_per_prompt=None, steps=None, guidance=None, seed=None,
    batch_size=BatchSizes(generator=4), cache_dir=Path("unused"), no_cache=True, refresh=False, offline=True,
    allow_pickle=False, json=None, html=None, confidence=0.95, bootstrap=100,
)


