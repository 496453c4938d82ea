"""Issue #45: Prompt-to-Prompt sets through the request layer, cached like every image:
image i of each prompt is that prompt's member of the set made at image i's noise seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def test_the_set_generator_answers_each_request_from_its_seeds_set_and_caches_it(tmp_path):
    from diffusers import DiffusionPipeline

    from pytest_t2ibias._types import ImageRequest
    from pytest_t2ibias.backends.generator import DiffusersGenerator
    from pytest_t2ibias.backends.prompt2prompt import (
        CounterfactualSetGenerator,
        generate_prompt_set,
    )
    from pytest_t2ibias.store.cache import Cache
    from pytest_t2ibias.store.request_layer import RequestLayer

    pipeline = DiffusionPipeline.from_pretrained(ROOT / "fixtures" / "toy-sd")
    inner = DiffusersGenerator(pipeline, model_fingerprint="toy-sd", steps=6, guidance_scale=7.5)
    prompts = ["a photo of a male doctor", "a photo of a female doctor"]
    sets = CounterfactualSetGenerator(inner, prompts)
    assert sets.fingerprint.startswith("prompt2prompt(cross 0.8, self 0.4, set ")
    assert sets.fingerprint != CounterfactualSetGenerator(inner, prompts[::-1]).fingerprint
    requests = [ImageRequest(p, 0, i) for p in prompts for i in range(2)]
    layer = RequestLayer(Cache(tmp_path / "cache"), batch_size=3)  # batches split the sets
    images = layer.images(sets, requests)
    for i in range(2):
        expected, _ = generate_prompt_set(pipeline, prompts, seed=requests[i].noise_seed % 2**63, steps=6)
        for p in range(2):
            got = np.asarray(images[p * 2 + i].image, dtype=float)
            assert np.abs(got - np.asarray(expected[p], dtype=float)).max() <= 1
    again = RequestLayer(Cache(tmp_path / "cache"), batch_size=3)
    again.images(sets, requests)
    assert again.counters.images_from_cache == 4 and again.counters.images_generated == 0
