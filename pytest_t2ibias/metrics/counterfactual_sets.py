"""SocialCounterfactuals' filter and selection of counterfactual image sets (Howard et al. 2024,
seeds/002, section 3), on CLIP embeddings from an injected embedder.

A caption set (one template, every intersectional group) is over-generated: several candidate
image sets (seeds, Prompt-to-Prompt's replace fraction). Each candidate is

- **filtered**: every image's cosine similarity to its own caption must reach 0.2 (the
  paper's threshold), else the candidate is dropped, since an image that does not show its
  caption would measure the judge on a label the image does not carry;
- **scored** by CLIP directional similarity (Gal et al. 2022, as InstructPix2Pix's filter,
  which the paper follows): ``cos(E_I(x_j) - E_I(x_i), E_T(c_j) - E_T(c_i))``, the image edit
  against the text edit, averaged over the set's pairs i < j: high when the images change in
  the direction the captions do and only there;

and the candidates that pass are ranked by that score, the best ``keep`` kept.

The embedder is anything with ``embed_images(images) -> (n, d)`` and ``embed_texts(texts) ->
(n, d)`` (the CLIP judge, ``backends.vqa.ClipAnswerer``); nothing here imports a backend.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

CLIP_FILTER_THRESHOLD = 0.2
"""SocialCounterfactuals' minimum CLIP similarity of an image to its own caption."""


class Embedder(Protocol):
    def embed_images(self, images: list[Any]) -> np.ndarray: ...

    def embed_texts(self, texts: list[str]) -> np.ndarray: ...


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    unit: np.ndarray = rows / np.maximum(np.linalg.norm(rows, axis=-1, keepdims=True), 1e-12)
    return unit


def caption_similarities(image_embeddings: np.ndarray, caption_embeddings: np.ndarray) -> np.ndarray:
    """(n,) cosine similarity of image i to caption i."""
    similarities: np.ndarray = np.sum(_unit(image_embeddings) * _unit(caption_embeddings), axis=-1)
    return similarities


def directional_similarity(image_embeddings: np.ndarray, caption_embeddings: np.ndarray) -> float:
    """Mean over pairs i < j of cos(image_j - image_i, caption_j - caption_i); NaN when no
    pair has two distinct captions (a direction needs an edit)."""
    images, captions = _unit(image_embeddings), _unit(caption_embeddings)
    scores = []
    for i, j in itertools.combinations(range(len(images)), 2):
        text_edit = captions[j] - captions[i]
        if np.linalg.norm(text_edit) < 1e-9:
            continue
        image_edit = images[j] - images[i]
        norm = np.linalg.norm(image_edit)
        scores.append(0.0 if norm < 1e-12 else float(image_edit @ text_edit / (norm * np.linalg.norm(text_edit))))
    return float(np.mean(scores)) if scores else float("nan")


@dataclass(frozen=True)
class CandidateScore:
    """One candidate image set of a caption set: its filter figures and its selection score."""

    label: Any
    """What the caller names the candidate by (a seed, a (seed, replace fraction) pair)."""
    similarities: tuple[float, ...]
    passed: bool
    directional: float


def score_candidate(embedder: Embedder, images: Sequence[Any], captions: Sequence[str], label: Any = None,
                    threshold: float = CLIP_FILTER_THRESHOLD) -> CandidateScore:
    """The paper's filter (every image at least ``threshold`` to its caption) and its
    directional similarity, for one candidate set (image i drawn from caption i)."""
    if len(images) != len(captions) or len(images) < 2:
        raise ValueError("a counterfactual set needs two or more images, one per caption")
    image_embeddings = np.asarray(embedder.embed_images(list(images)))
    caption_embeddings = np.asarray(embedder.embed_texts(list(captions)))
    similarities = caption_similarities(image_embeddings, caption_embeddings)
    return CandidateScore(label, tuple(float(s) for s in similarities), bool(np.all(similarities >= threshold)),
                          directional_similarity(image_embeddings, caption_embeddings))


def select_candidates(scores: Sequence[CandidateScore], keep: int = 1) -> list[CandidateScore]:
    """The candidates that passed the filter, best directional similarity first, at most
    ``keep`` (none when none passed: a caption set with no faithful candidate is dropped)."""
    passed = [s for s in scores if s.passed and not np.isnan(s.directional)]
    return sorted(passed, key=lambda s: -s.directional)[:keep]
