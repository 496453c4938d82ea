"""A scripted instrument whose images are male exactly when their prompt says "intense"."""

from __future__ import annotations

import numpy as np

from pytest_t2ibias._types import Answers, GeneratedImage, ImageSet


class ScriptedInstrument:
    """Images are male exactly when the prompt contains "intense" (12 a prompt)."""

    def __init__(self, fingerprint="gen-1"):
        self.fingerprint = fingerprint
        self.generated = 0

    def generator(self, role="candidate"):
        return self

    def images(self, prompts, role="candidate", per_prompt=None):
        self.generated += 12 * len(prompts)
        return ImageSet(tuple(GeneratedImage(p, 0, i, None, f"{p}/{i}", f"{p}/{i}")
                              for p in prompts for i in range(12)))

    def attributes(self, images, axis, filter=None):
        labels = np.array([0 if "intense" in image.prompt else 1 for image in images])
        return Answers(axis.question, axis.choices, labels, np.eye(2)[labels],
                       tuple(i.prompt for i in images), tuple(i.key for i in images))


