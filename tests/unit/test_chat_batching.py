"""An image-text-to-text judge scores a batch of same-size images in one forward pass
(issue #46: LLaVA was scored one image a pass), with the answers one image a pass gives."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from pytest_t2ibias.backends import load_answerer
from pytest_t2ibias.backends.vqa import _one_row_an_image
from pytest_t2ibias.testing import make_tiny_llava, torch_threads

CHOICES = ["yes", "no", "old man"]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    path = make_tiny_llava(tmp_path_factory.mktemp("llava") / "tiny-llava")
    return load_answerer(path, device="cpu", offline=True, batch_size=8)


def noise(n: int, size: tuple[int, int], seed: int) -> list[Image.Image]:
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
            for _ in range(n)]


def count_passes(model) -> list[int]:
    """The rows of each forward pass of ``model``."""
    rows: list[int] = []
    model.register_forward_pre_hook(
        lambda module, args, kwargs: rows.append(kwargs["input_ids"].shape[0]),
        with_kwargs=True)
    return rows


def one_image_a_pass(llava, images, question, choices):
    return np.stack([llava.score([image], question, choices)[0] for image in images])


def test_same_size_images_share_a_pass_with_the_answers_of_one_image_a_pass(llava):
    images = noise(6, (40, 24), seed=0)
    passes = count_passes(llava.model)
    batched = llava.score(images, "is there a person", CHOICES)
    assert passes == [6 * 3]  # the old code: six passes of 3 rows
    np.testing.assert_allclose(batched, one_image_a_pass(llava, images, "is there a person",
                                                         CHOICES), atol=1e-5, rtol=0)
    assert np.allclose(batched.sum(axis=1), 1.0)


def test_images_of_different_sizes_fall_back_to_one_a_pass(llava):
    images = noise(2, (40, 24), seed=1) + noise(1, (32, 32), seed=2)
    passes = count_passes(llava.model)
    scores = llava.score(images, "is there a person", CHOICES)
    assert passes == [3, 3, 3]
    np.testing.assert_allclose(scores, one_image_a_pass(llava, images, "is there a person",
                                                        CHOICES), atol=1e-5, rtol=0)


def test_a_processor_that_concatenates_patches_is_not_batched():
    import torch

    qwen_like = {"input_ids": torch.ones((2, 5), dtype=torch.long),
                 "pixel_values": torch.zeros((16, 8)), "image_grid_thw": torch.ones((2, 3))}
    assert not _one_row_an_image(qwen_like, 2)
    llava_like = {"input_ids": torch.ones((2, 5), dtype=torch.long),
                  "pixel_values": torch.zeros((2, 3, 8, 8))}
    assert _one_row_an_image(llava_like, 2)
    different_prompts = {"input_ids": torch.tensor([[1, 2], [1, 3]])}
    assert not _one_row_an_image(different_prompts, 2)
