"""The values that flow between layers: images, answers, estimates.

Everything here is plain data. Backends produce ``ImageSet``/``Answers``; methods turn
``Answers`` into ``Estimate``s; checks and helpers compare ``Estimate``s to thresholds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
from PIL import Image

ABSTAINED = -1
"""Label of an image whose answer was withheld (low confidence or failed scoring)."""

FILTERED = -2
"""Label of an image dropped by a filter question (e.g. "no person in the image")."""


def three_places(x: float) -> str:
    """``x`` to three decimals, never "-0.000" (a figure a hair below 0 is 0 as shown)."""
    shown = f"{x:.3f}"
    return "0.000" if shown == "-0.000" else shown


@dataclass(frozen=True)
class Estimate:
    """A figure with its uncertainty: value, confidence interval and sample size."""

    value: float
    low: float
    high: float
    n: int
    confidence: float = 0.95
    method: str = "bootstrap"

    def __str__(self) -> str:
        pct = round(self.confidence * 100)
        return (f"{three_places(self.value)} [{pct}% CI {three_places(self.low)}, "
                f"{three_places(self.high)}; n={self.n}]")

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "confidence": self.confidence,
            "method": self.method,
        }


@dataclass(frozen=True)
class ImageRequest:
    """Image ``index`` of ``prompt`` under suite ``seed``, sampled with the plan's settings.

    ``noise_seed`` depends on (seed, index) only, never on the prompt or the batch: image i
    is the same whatever else is generated with it, and counterfactual prompts (or a baseline
    and a candidate model) share their initial noise, so their images are paired.

    ``steps``, ``guidance``, ``height``, ``width`` and ``scheduler`` (a diffusers scheduler
    class name) are the plan's sampling; None means the generator's own default. Every
    generator, built-in or hook, receives them, and they are part of every image's cache key
    (``_cache.image_key``), so changing them regenerates instead of serving stale images.
    """

    prompt: str
    seed: int
    index: int
    steps: int | None = None
    guidance: float | None = None
    height: int | None = None
    width: int | None = None
    scheduler: str | None = None

    @property
    def sampling(self) -> dict[str, int | float | str | None]:
        """The sampling settings, by name (what the cache key and an HTTP payload carry)."""
        return {"steps": self.steps, "guidance": self.guidance, "height": self.height,
                "width": self.width, "scheduler": self.scheduler}

    @property
    def noise_seed(self) -> int:
        digest = hashlib.blake2b(f"{self.seed}:{self.index}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") >> 1  # torch seeds must fit in a signed int64


@dataclass(frozen=True)
class GeneratedImage:
    """One image and where it came from; ``key`` is its content-addressed cache key."""

    prompt: str
    seed: int
    index: int
    image: Image.Image = field(repr=False, compare=False)
    key: str
    content_hash: str


@dataclass(frozen=True)
class ImageSet(Sequence[GeneratedImage]):
    """Images in request order: for each prompt, indices ``0..n-1`` under one seed."""

    items: tuple[GeneratedImage, ...]

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, i: int) -> GeneratedImage: ...

    @overload
    def __getitem__(self, i: slice) -> ImageSet: ...

    def __getitem__(self, i: int | slice) -> GeneratedImage | ImageSet:
        if isinstance(i, slice):
            return ImageSet(self.items[i])
        return self.items[i]

    def __iter__(self) -> Iterator[GeneratedImage]:
        return iter(self.items)

    @property
    def images(self) -> list[Image.Image]:
        return [item.image for item in self.items]

    @property
    def prompts(self) -> list[str]:
        """Distinct prompts, in first-seen order."""
        return list(dict.fromkeys(item.prompt for item in self.items))

    def for_prompt(self, prompt: str) -> ImageSet:
        return ImageSet(tuple(item for item in self.items if item.prompt == prompt))

    def by_prompt(self) -> dict[str, ImageSet]:
        """Each prompt's images, prompts in first-seen order (one pass: InterMit's states
        hold thousands of prompts)."""
        groups: dict[str, list[GeneratedImage]] = {}
        for item in self.items:
            groups.setdefault(item.prompt, []).append(item)
        return {prompt: ImageSet(tuple(items)) for prompt, items in groups.items()}

    def __add__(self, other: ImageSet) -> ImageSet:
        return ImageSet(self.items + other.items)


@dataclass(frozen=True)
class Answers:
    """Answers to one multiple-choice question over an ``ImageSet``.

    ``labels[i]`` is the index into ``choices`` for image i, ``ABSTAINED`` when the answerer
    withheld it, or ``FILTERED`` when a filter question dropped the image. ``probabilities``
    holds the answerer's calibrated scores over ``choices`` (rows of NaN where none exist).
    """

    question: str
    choices: tuple[str, ...]
    labels: np.ndarray
    probabilities: np.ndarray
    prompts: tuple[str, ...]
    image_keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.labels)
        if self.probabilities.shape != (n, len(self.choices)):
            raise ValueError(
                f"probabilities shape {self.probabilities.shape} does not match "
                f"{n} images x {len(self.choices)} choices"
            )
        if len(self.prompts) != n:
            raise ValueError(f"{len(self.prompts)} prompts for {n} labels")

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def answered(self) -> np.ndarray:
        """Labels of the images that got an answer (neither abstained nor filtered)."""
        return self.labels[self.labels >= 0]

    @property
    def counts(self) -> dict[str, int]:
        tally = np.bincount(self.answered, minlength=len(self.choices))
        return {choice: int(c) for choice, c in zip(self.choices, tally)}

    @property
    def abstentions(self) -> int:
        return int(np.sum(self.labels == ABSTAINED))

    @property
    def filtered(self) -> int:
        return int(np.sum(self.labels == FILTERED))

    @property
    def confidence(self) -> np.ndarray:
        """Per image: the probability of the chosen answer (NaN if none)."""
        rows = np.arange(len(self.labels))
        picked = np.where(self.labels >= 0, self.labels, 0)
        conf = self.probabilities[rows, picked] if len(rows) else np.empty(0)
        return np.where(self.labels >= 0, conf, np.nan)

    def for_prompt(self, prompt: str) -> Answers:
        mask = np.array([p == prompt for p in self.prompts], dtype=bool)
        return self.select(mask)

    def by_prompt(self) -> dict[str, Answers]:
        return {p: self.for_prompt(p) for p in dict.fromkeys(self.prompts)}

    def select(self, mask: np.ndarray) -> Answers:
        keys = tuple(k for k, m in zip(self.image_keys, mask) if m) if self.image_keys else ()
        return Answers(
            question=self.question,
            choices=self.choices,
            labels=self.labels[mask],
            probabilities=self.probabilities[mask],
            prompts=tuple(p for p, m in zip(self.prompts, mask) if m),
            image_keys=keys,
        )

    def __add__(self, other: Answers) -> Answers:
        if other.choices != self.choices:
            raise ValueError(f"cannot join answers over {self.choices} and {other.choices}")
        return Answers(
            question=self.question,
            choices=self.choices,
            labels=np.concatenate([self.labels, other.labels]),
            probabilities=np.concatenate([self.probabilities, other.probabilities]),
            prompts=self.prompts + other.prompts,
            image_keys=self.image_keys + other.image_keys,
        )
