"""Output no model gives on purpose is caught where it is made (issue #23)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from pytest_t2ibias._types import GeneratedImage, ImageRequest
from pytest_t2ibias.errors import DegenerateOutput
from pytest_t2ibias.store.degenerate import check_images, check_scores


def _requests(prompt="a photo of a nurse", n=4, **sampling):
    return [ImageRequest(prompt, 0, i, **sampling) for i in range(n)]


def _noise(seed):
    return Image.fromarray(np.random.default_rng(seed).integers(0, 255, (8, 8, 3), np.uint8))


def test_a_batch_of_black_images_names_the_model_and_the_setting():
    with pytest.raises(DegenerateOutput, match=r"toy-sd made all 4 images of a batch one flat "
                       r"colour \(value 0\), e.g. for 'a photo of a nurse' at steps 20, "
                       r"guidance 1e\+308"):
        check_images("toy-sd", _requests(steps=20, guidance=1e308),
                     [Image.new("RGB", (8, 8)) for _ in range(4)])


def test_one_image_for_every_seed_is_caught():
    same = _noise(0)
    with pytest.raises(DegenerateOutput, match="the same image for 4 different seeds"):
        check_images("m", _requests(), [same.copy() for _ in range(4)])


def test_ordinary_images_pass_even_flat_ones_of_different_colours():
    check_images("m", _requests(), [_noise(i) for i in range(4)])
    check_images("m", _requests(), [Image.new("RGB", (4, 4), (i, 0, 0)) for i in range(4)])
    check_images("m", _requests(n=1), [Image.new("RGB", (4, 4))])  # one image says too little


def _images(n):
    return [GeneratedImage("p", 0, i, _noise(i), f"k{i}", f"h{i}") for i in range(n)]


def test_a_judge_that_answers_every_image_alike_is_caught():
    with pytest.raises(DegenerateOutput, match=r"the judge clip gave all 8 images the same "
                       r"probabilities \[0.600, 0.400\] for 'gender\?'"):
        check_scores("clip", "gender?", _images(8), np.tile([0.6, 0.4], (8, 1)))


def test_a_certain_judge_a_varied_one_and_few_answers_pass():
    check_scores("clip", "q", _images(8), np.tile([1.0, 0.0], (8, 1)))  # a biased model, read
    varied = np.stack([np.linspace(0.2, 0.8, 8), 1 - np.linspace(0.2, 0.8, 8)], axis=1)
    check_scores("clip", "q", _images(8), varied)
    check_scores("clip", "q", _images(7), np.tile([0.6, 0.4], (7, 1)))
