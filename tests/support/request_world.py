"""A generator whose images are noise around one colour a prompt, and an answerer with a fixed row."""

from __future__ import annotations

import threading

import numpy as np
from PIL import Image

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.errors import CacheError
from pytest_t2ibias.store.cache import Cache


class NoiseColourGenerator:
    """Paints each image from its noise seed, so pairing and batching are observable."""

    fingerprint = "noise-colour-v1"

    def __init__(self):
        self.batches: list[int] = []

    def generate(self, requests):
        self.batches.append(len(requests))
        return [Image.new("RGB", (4, 4), (r.noise_seed % 251, len(r.prompt), 0)) for r in requests]


class FixedAnswerer:
    fingerprint = "fixed-v1"

    def __init__(self, rows):
        self.rows = np.asarray(rows, dtype=float)
        self.calls = 0

    def score(self, images, question, choices, statements=None):
        self.calls += len(images)
        return np.resize(self.rows, (len(images), len(choices)))


def requests(prompt, n):
    return [ImageRequest(prompt, 0, i) for i in range(n)]


class GatedCache(Cache):
    """Its image writes wait for the test to open the gate (and fail if it never does)."""

    def __init__(self, root):
        super().__init__(root)
        self.gate = threading.Event()

    def put_image(self, key, image, request, image_hash=None):
        if not self.gate.wait(timeout=10):
            raise CacheError("the call waited for its own cache writes")
        super().put_image(key, image, request, image_hash)
