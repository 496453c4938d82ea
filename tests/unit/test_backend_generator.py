"""DiffusersGenerator on a tiny random StableDiffusionPipeline, loaded by the real code."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.backends import DiffusersGenerator, Generator
from pytest_t2ibias.testing import make_tiny_pipeline, torch_threads

PROMPTS = ["a photo of a doctor", "a photo of a nurse", "a photo of a teacher"]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory):
    return make_tiny_pipeline(tmp_path_factory.mktemp("pipe") / "tiny-sd")


def load(path, **overrides):
    options = dict(device="cpu", dtype="float32", offline=True, steps=2, guidance_scale=3.0, batch_size=1)
    options.update(overrides)
    return DiffusersGenerator.from_pretrained(path, **options)


@pytest.fixture(scope="module")
def generator(pipeline_dir):
    return load(pipeline_dir)


def pixels(image):
    return np.asarray(image, dtype=np.float64)


def test_loads_through_the_real_code(generator):
    assert isinstance(generator, Generator)
    assert type(generator.pipeline).__name__ == "StableDiffusionPipeline"
    image = generator.generate([ImageRequest(PROMPTS[0], seed=0, index=0)])[0]
    assert image.mode == "RGB" and image.size == (16, 16)
    assert pixels(image).std() > 1.0  # an actual picture, not a blank


def test_image_is_independent_of_batch_size_and_batch_mates(pipeline_dir, generator):
    requests = [ImageRequest(p, seed=7, index=i) for p in PROMPTS[:2] for i in range(3)]
    one_at_a_time = generator.generate(requests)

    shuffled = requests[:]
    random.Random(0).shuffle(shuffled)
    in_threes = load(pipeline_dir, batch_size=3).generate(shuffled)
    by_request = dict(zip(shuffled, in_threes))

    for request, image in zip(requests, one_at_a_time):
        assert image.tobytes() == by_request[request].tobytes(), request


def test_seed_index_and_prompt_each_change_the_image(generator):
    base, other_index, other_seed, other_prompt = generator.generate([
        ImageRequest(PROMPTS[0], seed=0, index=0),
        ImageRequest(PROMPTS[0], seed=0, index=1),
        ImageRequest(PROMPTS[0], seed=1, index=0),
        ImageRequest(PROMPTS[1], seed=0, index=0),
    ])
    for changed in (other_index, other_seed, other_prompt):
        assert np.abs(pixels(base) - pixels(changed)).mean() > 0.5


def test_counterfactual_prompts_share_noise(generator):
    """Same (seed, index) under two prompts starts from the same latents: the images are
    closer to each other than two indices of one prompt are."""
    same_noise = generator.generate([ImageRequest(p, seed=0, index=0) for p in PROMPTS[:2]])
    other_noise = generator.generate([ImageRequest(PROMPTS[0], seed=0, index=i) for i in (0, 1)])
    paired = np.abs(pixels(same_noise[0]) - pixels(same_noise[1])).mean()
    unpaired = np.abs(pixels(other_noise[0]) - pixels(other_noise[1])).mean()
    assert paired < unpaired


def test_steps_change_images_and_fingerprint(pipeline_dir, generator):
    three_steps = load(pipeline_dir, steps=3)
    assert three_steps.fingerprint != generator.fingerprint
    request = [ImageRequest(PROMPTS[0], seed=0, index=0)]
    assert generator.generate(request)[0].tobytes() != three_steps.generate(request)[0].tobytes()


def test_fingerprint_covers_settings_but_not_batch_size(pipeline_dir, generator):
    assert load(pipeline_dir).fingerprint == generator.fingerprint
    assert load(pipeline_dir, batch_size=4).fingerprint == generator.fingerprint
    assert load(pipeline_dir, guidance_scale=5.0).fingerprint != generator.fingerprint
    assert load(pipeline_dir, height=8, width=8).fingerprint != generator.fingerprint


def test_fingerprint_changes_with_one_weight_byte(tmp_path, generator):
    path = make_tiny_pipeline(tmp_path / "copy")
    assert load(path).fingerprint == generator.fingerprint  # same seed, same bytes
    weights = path / "unet" / "diffusion_pytorch_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-7] ^= 0x01
    weights.write_bytes(bytes(data))
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert load(path).fingerprint != generator.fingerprint


def test_ancestral_scheduler_is_reproducible_per_image(tmp_path):
    """Euler ancestral draws noise every step: from the per-image generators, so still
    independent of the batch."""
    path = make_tiny_pipeline(tmp_path / "euler", scheduler="euler_ancestral")
    requests = [ImageRequest(PROMPTS[0], seed=3, index=i) for i in range(2)]
    single = load(path, batch_size=1).generate(requests)
    pair = load(path, batch_size=2).generate(requests)
    assert [i.tobytes() for i in single] == [i.tobytes() for i in pair]


def test_auto_batch_size_gives_the_same_images(pipeline_dir, generator):
    requests = [ImageRequest(PROMPTS[0], seed=3, index=i) for i in range(3)]
    auto = load(pipeline_dir, batch_size="auto")
    assert auto.batch_size is None  # sized on its first pass
    images = auto.generate(requests)
    assert auto.batch_size == 8  # the CPU default
    for image, reference in zip(images, generator.generate(requests)):
        assert np.abs(pixels(image) - pixels(reference)).max() <= 1.0
