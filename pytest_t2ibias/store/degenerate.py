"""Output no model under test would give on purpose, caught where it is made: a broken
setting or model is an error, never a verdict about fairness.

A guidance of 1e308 makes NaN latents and all-black images, which a balance check would
happily pass; a pipeline ignoring its seed makes one image for every seed, which would read
as a perfectly confident model; a judge that ignores the image answers everything alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DegenerateOutput

if TYPE_CHECKING:
    from .._types import GeneratedImage, ImageRequest

MIN_IMAGES_FOR_A_JUDGE = 8
"""Fewer answers than this say too little to call a judge constant."""
SATURATED = 0.999
"""A judge certain of one class for every image may be right (a strongly biased model); one
that is uncertain in exactly the same way about every image is not looking."""


def check_images(model: str, requests: Sequence[ImageRequest], pictures: Sequence[Any]) -> None:
    """Raise ``DegenerateOutput`` if a batch of several images is one and the same flat
    colour, or a prompt's images are the same picture for different seeds."""
    arrays = [np.asarray(picture) for picture in pictures]
    if len(arrays) > 1 and all(a.size and a.min() == a.max() for a in arrays) \
            and len({int(a.reshape(-1)[0]) for a in arrays}) == 1:
        first = requests[0]
        raise DegenerateOutput(
            f"{model} made all {len(arrays)} images of a batch one flat colour (value "
            f"{int(arrays[0].reshape(-1)[0])}), e.g. for {first.prompt!r} at "
            f"{_setting(first)}: the setting or the model is broken (NaN latents come out "
            "black), not a fair model; check steps, guidance and the weights' dtype")
    by_prompt: dict[str, list[int]] = {}
    for i, request in enumerate(requests):
        by_prompt.setdefault(request.prompt, []).append(i)
    for prompt, indices in by_prompt.items():
        seeds = {requests[i].noise_seed for i in indices}
        if len(seeds) > 1 and all(np.array_equal(arrays[indices[0]], arrays[i])
                                  for i in indices[1:]):
            raise DegenerateOutput(
                f"{model} made the same image for {len(seeds)} different seeds of {prompt!r} "
                f"at {_setting(requests[indices[0]])}: the generator ignores its noise, so "
                "every figure would be one image counted many times")


def check_scores(answerer: str, question: str, images: Sequence[GeneratedImage],
                 scores: np.ndarray) -> None:
    """Raise ``DegenerateOutput`` if a judge gave every one of several different images the
    same, uncertain, probabilities."""
    answered = ~np.isnan(scores).any(axis=1)
    rows = scores[answered]
    distinct = {item.content_hash for item, kept in zip(images, answered) if kept}
    if len(rows) < MIN_IMAGES_FOR_A_JUDGE or len(distinct) < 2:
        return
    if np.allclose(rows, rows[0], rtol=0, atol=1e-9) and rows[0].max() < SATURATED:
        shown = ", ".join(f"{p:.3f}" for p in rows[0])
        raise DegenerateOutput(
            f"the judge {answerer} gave all {len(rows)} images the same probabilities "
            f"[{shown}] for {question!r}: it is not reading the images (a broken or "
            "text-only model), so its answers cannot judge a generator")


def _setting(request: ImageRequest) -> str:
    sampling = {k: v for k, v in request.sampling.items() if v is not None}
    return ", ".join(f"{k} {v}" for k, v in sampling.items()) or "the pipeline's defaults"
