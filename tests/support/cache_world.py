"""A warmed cache and reruns of it, for the tests that damage its entries."""

from __future__ import annotations

import numpy as np

from pytest_t2ibias.store.cache import Cache
from pytest_t2ibias.store.request_layer import RequestLayer
from support.request_world import FixedAnswerer, NoiseColourGenerator, requests


def warm(tmp_path, n=2, row=(0.918, 0.082)):
    """A cache holding ``n`` images of prompt "a" and their answers to "q"; what was served."""
    layer = RequestLayer(Cache(tmp_path))
    images = layer.images(NoiseColourGenerator(), requests("a", n))
    answers = layer.answers(FixedAnswerer([list(row)]), images, "q", ["x", "y"])
    layer.flush()  # on disk, as at a session's end
    return images, answers


def image_file(tmp_path, item):
    return tmp_path / "images" / item.key[:2] / f"{item.key}.png"


def rerun_images(tmp_path, n=2):
    """A fresh process's images: (layer, generator, images), catching the warnings."""
    layer, generator = RequestLayer(Cache(tmp_path)), NoiseColourGenerator()
    images = layer.images(generator, requests("a", n))
    layer.flush()
    return layer, generator, images


def pixels(images):
    return [np.asarray(item.image).tolist() for item in images]


def answer_file(tmp_path):
    (path,) = (tmp_path / "answers").glob("*/*.json")
    return path


def rerun_answers(tmp_path, row=(0.918, 0.082)):
    layer = RequestLayer(Cache(tmp_path))
    images = layer.images(NoiseColourGenerator(), requests("a", 1))
    answerer = FixedAnswerer([list(row)])
    answers = layer.answers(answerer, images, "q", ["x", "y"])
    layer.flush()
    return layer, answerer, answers


