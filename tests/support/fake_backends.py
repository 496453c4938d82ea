"""A fake generator and judge for the kind-recipe tests: images that differ by seed, and a
judge that reads three of four images as the first choice (so a share is 0.75, not a coin)."""

from __future__ import annotations

import numpy as np
from PIL import Image


class Painter:
    fingerprint = "painter-v1"

    def __init__(self):
        self.prompts: list[str] = []

    def generate(self, requests):
        self.prompts += [r.prompt for r in requests]
        return [Image.new("RGB", (4, 4), (r.noise_seed % 251, 0, 0)) for r in requests]


class Scorer:
    fingerprint = "scorer-v1"

    def __init__(self):
        self.questions: list[tuple[str, int]] = []

    def score(self, images, question, choices, statements=None):
        self.questions.append((question, len(images)))
        return np.array([[0.8, 0.2] if i % 4 else [0.2, 0.8] for i in range(len(images))])


class Provider:
    def __init__(self):
        self.painter, self.scorer = Painter(), Scorer()

    def generator(self, model, role):
        return self.painter

    def vqa(self, model):
        return self.scorer
