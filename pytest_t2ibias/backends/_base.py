"""What a backend must offer. Users supply their own through the hooks in ``hookspecs``.

The request layer (``pytest_t2ibias.store.request_layer``) owns caching, deduplication and batching;
backends only turn inputs into outputs, deterministically.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
from PIL import Image

from .._types import ImageRequest

if TYPE_CHECKING:
    from .llm import Reply


@runtime_checkable
class Generator(Protocol):
    """Turns prompts into images.

    ``fingerprint`` identifies everything that changes the pixels (weights, pipeline class,
    scheduler config, steps, guidance, size, dtype): it is part of every image's cache key.
    """

    fingerprint: str

    def generate(self, requests: list[ImageRequest]) -> list[Image.Image]:
        """One image per request, seeded from ``request.noise_seed`` alone, so a request's
        noise is the same whatever else is in the batch (its pixels, to the rounding of
        batched forwards: ``validation/batch_pixels.py``; the cache key holds no batch size)."""
        ...


@runtime_checkable
class Answerer(Protocol):
    """Scores the choices of a multiple-choice question for each image (VQA or classifier).

    ``fingerprint`` identifies the model and the scoring rule: part of every answer's key.
    """

    fingerprint: str

    def score(
        self,
        images: list[Image.Image],
        question: str,
        choices: list[str],
        statements: list[str] | None = None,
    ) -> np.ndarray:
        """Return an (images x choices) array of probabilities, each row summing to 1.

        ``statements`` (one caption per choice, e.g. "a photo of a woman") are what a
        contrastive model compares images with; generative models score ``question`` +
        choice instead. A row of NaN means the image could not be scored (an abstention)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """A judge that also embeds (CLIP: ``vqa.ClipAnswerer``): what the cost kinds measure
    with (CLIPScore, Vendi, KID) through the request layer's embedding cache.

    ``fingerprint`` identifies the model: part of every embedding's key.
    """

    fingerprint: str

    def embed_images(self, images: list[Image.Image]) -> np.ndarray:
        """One unit-norm row per image (images x dimensions)."""
        ...

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """One unit-norm row per text, in the images' space."""
        ...


@runtime_checkable
class LanguageModel(Protocol):
    """A causal LM, for BGPS prompt search, OpenBias proposals and perplexity.

    Optional, used when present (``CausalLM`` has them): ``token_log_likelihoods(texts) ->
    (sums, token counts)`` for per-token means, ``context_length`` and ``count_tokens(text)``
    so prompts are kept within the model's context; a model with a chat template is a
    ``ChatModel``.
    """

    fingerprint: str

    def log_likelihood(self, texts: list[str]) -> np.ndarray:
        """Sum of token log-probabilities of each text (natural log)."""
        ...

    def complete(self, prompt: str, max_new_tokens: int = 32) -> str:
        """Greedy continuation of ``prompt`` (deterministic)."""
        ...

    def perplexity(self, texts: list[str]) -> np.ndarray:
        """Each text's perplexity, exp of minus its mean token log-likelihood (the
        ``--t2i-eval-llm`` score of the prompts BGPS found)."""
        ...


@runtime_checkable
class ChatModel(LanguageModel, Protocol):
    """A language model asked by instruction through its chat template: counterfactual
    phrasing (``methods.counterfactuals.chats``) and OpenBias' proposals use ``reply`` when a
    model has it, ``complete`` otherwise."""

    has_chat_template: bool

    def reply(self, instruction: str, max_new_tokens: int) -> Reply:
        """The model's answer to ``instruction`` (greedy), and whether the budget cut it."""
        ...
