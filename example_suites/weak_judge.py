"""A judge that errs, on purpose: toy-sd's images blurred and noised before any judge sees them.

Real judges misread (OpenBias measured LLaVA-1.5 at 72% on age, 56% on race); the toy world's
judges read its clean renders perfectly, so this is how the example suites show what a
misreading judge does to a verdict and what the judge correction makes of it
(``toy_weak_judge.t2i.yaml``). At a Gaussian blur of radius 2.5 px and pixel noise of
standard deviation 60, the gender classifier reads 72.5% of the VAE-limited labelled people
right, and a man as a woman 42% of the time (a one-sided confusion).

    python example_suites/weak_judge.py example_suites/judges/through-toy-sd-vae \\
        example_suites/judges/degraded

writes the labelled folder that calibrates it: the same people, degraded the same way.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter

BLUR_RADIUS = 2.0
NOISE_SD = 45.0
PREFIX = "degraded:"
"""``models: {candidate: "degraded:<model>"}`` in a suite: that model's images, degraded."""


def degrade(image: Image.Image, seed: int) -> Image.Image:
    """``image`` blurred and noised; the noise is seeded, so an image degrades the same way
    in every run (its cache key stays its own)."""
    blurred = np.asarray(image.convert("RGB").filter(ImageFilter.GaussianBlur(BLUR_RADIUS)), dtype=float)
    noise = np.random.default_rng(seed).normal(0.0, NOISE_SD, blurred.shape)
    return Image.fromarray(np.clip(blurred + noise, 0, 255).astype(np.uint8))


class DegradedGenerator:
    """A generator whose every image is ``degrade``d (the ``Generator`` contract)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.fingerprint = f"degraded(blur {BLUR_RADIUS}, noise {NOISE_SD}):{inner.fingerprint}"

    def generate(self, requests):
        images = self.inner.generate(requests)
        return [degrade(image, request.noise_seed % 2**32) for image, request in zip(images, requests)]

    def with_options(self, **options):
        return DegradedGenerator(self.inner.with_options(**options))

    def prompt_problems(self, prompts):
        return self.inner.prompt_problems(prompts) if hasattr(self.inner, "prompt_problems") else {}


def degrade_folder(source: Path, target: Path) -> None:
    """A labelled folder (``index.jsonl``) copied with every image degraded (seeded by its line)."""
    target.mkdir(parents=True, exist_ok=True)
    lines = [line for line in (source / "index.jsonl").read_text().splitlines() if line.strip()]
    for i, line in enumerate(lines):
        row = json.loads(line)
        with Image.open(source / row["file"]) as image:
            degrade(image, i).save(target / row["file"])
    shutil.copyfile(source / "index.jsonl", target / "index.jsonl")


if __name__ == "__main__":
    degrade_folder(Path(sys.argv[1]), Path(sys.argv[2]))
