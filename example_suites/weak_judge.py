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

The degradation stands for the judge's eyes, not the generator's: each wrapper declares
``judge_side`` (``methods.socialcf.judge_side_view``), so the judge audit by group makes and
CLIP-filters its counterfactual sets on toy-sd's own images, as the paper's filter reads the
generated image, and only the judge reads them degraded.

**The planted intersectional judge bias** (issue #45; ``misreads-old:<model>`` in a suite,
``toy_judge_group_bias.t2i.yaml``): ``OldDegradedGenerator``. Ground truth, written down:

- an image of a prompt that names ``old`` (a whole word) is degraded at blur
  ``OLD_BLUR_RADIUS`` px and noise ``OLD_NOISE_SD``; every other image is left as toy-sd made
  it. The judge therefore misreads old people far more than young or middle-aged ones, and
  the blur's confusion is one-sided: old men are read as women (measured in
  ``validation/judge_groups_toy_diagnosis.txt``), while young and middle-aged people are read as
  the clean judge reads them;
- the prompt stands for what the image shows: toy-sd draws the age a plain prompt names in
  every one of 48 seeds (``validation/p2p_adherence.txt``), so an image of "an old doctor"
  shows an old doctor; an old person drawn for a prompt that does not name the age is read
  cleanly (the bias is planted by prompt, which is what a check that names the group reads);
- ``degrade_folder(..., by_label=OLD)`` degrades a labelled folder the same way by its rows'
  true ``age``: the group's labelled calibration.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter

BLUR_RADIUS = 2.0
NOISE_SD = 45.0
PREFIX = "degraded:"
"""``models: {candidate: "degraded:<model>"}`` in a suite: that model's images, degraded."""


OLD_BLUR_RADIUS = BLUR_RADIUS
OLD_NOISE_SD = NOISE_SD
OLD = "old"
"""The group the planted judge bias misreads: images of prompts naming it (module doc)."""
OLD_PREFIX = "misreads-old:"
"""``models: {candidate: "misreads-old:<model>"}``: that model's images, read by a judge that
misreads old people (``OldDegradedGenerator``)."""


def degrade(image: Image.Image, seed: int, blur: float = BLUR_RADIUS,
            noise_sd: float = NOISE_SD) -> Image.Image:
    """``image`` blurred and noised; the noise is seeded, so an image degrades the same way
    in every run (its cache key stays its own)."""
    blurred = np.asarray(image.convert("RGB").filter(ImageFilter.GaussianBlur(blur)), dtype=float)
    noise = np.random.default_rng(seed).normal(0.0, noise_sd, blurred.shape)
    return Image.fromarray(np.clip(blurred + noise, 0, 255).astype(np.uint8))


class DegradedGenerator:
    """A generator whose every image is ``degrade``d (the ``Generator`` contract), as the
    judge sees it (``judge_side``: module doc)."""

    judge_side = True

    def __init__(self, inner) -> None:
        self.inner = inner
        self.fingerprint = f"degraded(blur {BLUR_RADIUS}, noise {NOISE_SD}):{inner.fingerprint}"

    def generate(self, requests):
        images = self.inner.generate(requests)
        return [degrade(image, request.noise_seed % 2**32) for image, request in zip(images, requests)]

    def around(self, inner):
        """The same degradation of another generator's images."""
        return type(self)(inner)

    def with_options(self, **options):
        return self.around(self.inner.with_options(**options))

    def prompt_problems(self, prompts):
        return self.inner.prompt_problems(prompts) if hasattr(self.inner, "prompt_problems") else {}


def names_old(prompt: str) -> bool:
    """Whether ``prompt`` names the misread group (``OLD`` as a whole word)."""
    return re.search(rf"\b{OLD}\b", prompt, flags=re.IGNORECASE) is not None


class OldDegradedGenerator(DegradedGenerator):
    """The planted intersectional judge bias (module doc): images of prompts naming ``old``
    degraded at ``OLD_BLUR_RADIUS`` / ``OLD_NOISE_SD``, every other image as made."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.fingerprint = (f"misreads-old(blur {OLD_BLUR_RADIUS}, noise {OLD_NOISE_SD} where "
                            f"the prompt names {OLD!r}):{inner.fingerprint}")

    def generate(self, requests):
        images = self.inner.generate(requests)
        return [degrade(image, request.noise_seed % 2**32, OLD_BLUR_RADIUS, OLD_NOISE_SD)
                if names_old(request.prompt) else image for image, request in zip(images, requests)]


def degrade_folder(source: Path, target: Path, by_label: str | None = None) -> None:
    """A labelled folder (``index.jsonl``) copied with every image degraded (seeded by its
    line); ``by_label=OLD``: only the rows whose true ``age`` is old, as the planted judge
    bias degrades (``OldDegradedGenerator``), the others copied as they are."""
    target.mkdir(parents=True, exist_ok=True)
    lines = [line for line in (source / "index.jsonl").read_text().splitlines() if line.strip()]
    for i, line in enumerate(lines):
        row = json.loads(line)
        if by_label is None:
            with Image.open(source / row["file"]) as image:
                degrade(image, i).save(target / row["file"])
        elif row.get("age") == by_label:
            with Image.open(source / row["file"]) as image:
                degrade(image, i, OLD_BLUR_RADIUS, OLD_NOISE_SD).save(target / row["file"])
        else:
            shutil.copyfile(source / row["file"], target / row["file"])
    shutil.copyfile(source / "index.jsonl", target / "index.jsonl")


if __name__ == "__main__":
    degrade_folder(Path(sys.argv[1]), Path(sys.argv[2]))
