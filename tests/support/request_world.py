"""A generator whose images are noise around one colour a prompt, and an answerer with a fixed row."""

from __future__ import annotations

import numpy as np
from PIL import Image

from pytest_t2ibias._types import ImageRequest


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


