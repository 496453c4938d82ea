"""The one door to generation and answering: dedupe, look up the cache, batch the misses.

Every image and answer any test needs passes through ``RequestLayer``. Identical requests
from different tests are served once per process (memo) and once ever (disk cache). A later
planner can hand the layer every request of the selected items up front (``images`` and
``answers`` take whole lists), so batches are as full as they can be.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np

from .._types import ABSTAINED, Answers, GeneratedImage, ImageRequest, ImageSet
from ..backends._base import Answerer, Embedder, Generator
from ..errors import BackendError
from .cache import (
    Cache,
    Claim,
    answer_claim_key,
    answer_key,
    as_rgb,
    check_probabilities,
    content_hash,
    embedding_key,
    image_key,
)
from .degenerate import check_images, check_scores
from .write_behind import WriteBehind

if TYPE_CHECKING:
    from PIL import Image


@dataclass
class Counters:
    """What a session really computed; a warm second run shows zeros here."""

    images_generated: int = 0
    images_from_cache: int = 0
    answers_scored: int = 0
    answers_from_cache: int = 0


class Progress(Protocol):
    """Shown while work is computed (``progress.TerminalProgress`` on a terminal)."""

    def phase(self, what: str, total: int, model: str
              ) -> AbstractContextManager[Callable[[int], None]]:
        """A context for ``total`` entries of ``what``; its value is ``advance(n)``."""
        ...


class _Silent:
    def phase(self, what: str, total: int, model: str
              ) -> AbstractContextManager[Callable[[int], None]]:
        return nullcontext(lambda n: None)


T = TypeVar("T")


class RequestLayer:
    def __init__(self, cache: Cache, *, batch_size: int = 8, answer_batch_size: int = 64,
                 progress: Progress | None = None):
        self.cache = cache
        self.batch_size = batch_size
        """Images a generator call gets (its forward passes: the generator's own size)."""
        self.answer_batch_size = answer_batch_size
        """Images an answerer call gets; the answerer splits them into its own forward passes
        (CLIP 16 by default), so small request batches no longer cap its batches."""
        self.progress = progress or _Silent()
        self.counters = Counters()
        self._images: dict[str, GeneratedImage] = {}
        self._answers: dict[str, np.ndarray] = {}
        self._writes = WriteBehind()
        """Cache writes and claim releases, on a few threads, while the next batch computes;
        a call returns without waiting for its last ones (``flush``)."""

    def flush(self) -> None:
        """Until every cache write queued so far is on disk and its claim released; a write
        that failed raises here. The session calls it at its end; calls need not."""
        self._writes.wait()

    # -- images ---------------------------------------------------------------------------

    def images(self, generator: Generator, requests: Sequence[ImageRequest]) -> ImageSet:
        """The images for ``requests``, in order, generating only what no cache holds."""
        self._writes.raise_failed()  # an earlier call's write that failed: this call's error
        keys = [image_key(generator.fingerprint, request) for request in requests]

        def from_cache(key: str, request: ImageRequest) -> bool:
            cached = self.cache.get_image_hashed(key, request)
            if cached is not None:
                self._images[key] = _generated(request, cached[0], key, cached[1])
                self.counters.images_from_cache += 1
            return cached is not None

        missing: dict[str, ImageRequest] = {}
        for key, request in zip(keys, requests):
            if key not in self._images and key not in missing and not from_cache(key, request):
                missing[key] = request

        def generate(batch: list[tuple[str, ImageRequest]]) -> None:
            pictures = generator.generate([request for _, request in batch])
            if len(pictures) != len(batch):
                raise RuntimeError(
                    f"generator returned {len(pictures)} images for {len(batch)} requests"
                )
            pictures = [as_rgb(picture) for picture in pictures]
            check_images(_model_name(generator), [request for _, request in batch], pictures)
            for (key, request), picture in zip(batch, pictures):
                generated = _generated(request, picture, key)
                self._images[key] = generated
                # the writer gets its own copy: the caller may change the returned image
                self._behind(self.cache.put_image, key, generated.image.copy(), request,
                             generated.content_hash)
            self.counters.images_generated += len(batch)

        self._compute_once(missing, from_cache, generate, "generating images",
                           _model_name(generator), self.batch_size)
        return ImageSet(tuple(self._images[key] for key in keys))

    # -- answers --------------------------------------------------------------------------

    def answers(
        self,
        answerer: Answerer,
        images: ImageSet,
        question: str,
        choices: Sequence[str],
        statements: Sequence[str] | None = None,
        *,
        abstain_below: float = 0.0,
    ) -> Answers:
        """Score ``choices`` for every image; an image whose best choice has probability
        below ``abstain_below`` (or that could not be scored) is an abstention."""
        self._writes.raise_failed()
        choices = tuple(choices)
        statements = tuple(statements) if statements else None
        keys = [
            answer_key(item.content_hash, answerer.fingerprint, question, choices, statements)
            for item in images
        ]

        def answered(item: GeneratedImage) -> dict[str, object]:
            """What an answer entry answers: the key's parts, checked on every read."""
            return {"image": item.content_hash, "question": question, "choices": list(choices),
                    "statements": list(statements) if statements else None,
                    "answerer": answerer.fingerprint}

        def from_cache(key: str, item: GeneratedImage) -> bool:
            record = self.cache.get_answer(key, answered(item))
            if record is None:
                return False
            self._answers[key] = np.asarray(record["probabilities"], dtype=float)
            self.counters.answers_from_cache += 1
            return True

        missing: dict[str, GeneratedImage] = {}
        for key, item in zip(keys, images):
            if key not in self._answers and key not in missing and not from_cache(key, item):
                missing[key] = item

        def score(batch: list[tuple[str, GeneratedImage]]) -> None:
            scores = np.asarray(
                answerer.score([item.image for _, item in batch], question, list(choices),
                               list(statements) if statements else None),
                dtype=float,
            )
            if scores.shape != (len(batch), len(choices)):
                raise RuntimeError(
                    f"answerer returned scores of shape {scores.shape} for "
                    f"{len(batch)} images x {len(choices)} choices"
                )
            check_scores(_model_name(answerer), question, [item for _, item in batch], scores)
            records: list[tuple[str, dict[str, object]]] = []
            for (key, item), row in zip(batch, scores):
                probabilities = [None if np.isnan(p) else float(p) for p in row]
                try:
                    check_probabilities(probabilities)
                except ValueError as exc:
                    raise BackendError(
                        f"the judge {_model_name(answerer)} answered {question!r} for an image "
                        f"of {item.prompt!r} with {exc}; an answerer's score() must return "
                        f"rows of probabilities summing to 1, or a row of NaN to abstain"
                    ) from None
                self._answers[key] = row
                records.append((key, {**answered(item), "probabilities": probabilities}))
            self._behind(self.cache.put_answers, records)  # one flush of the disk a batch
            self.counters.answers_scored += len(batch)

        def claim_of(key: str, item: GeneratedImage) -> str:
            # One claim a prompt's images, not one an answer: a claim is a lock file made
            # and removed (0.35 to 0.7 ms), most of what an answer cost a GPU judge (issue
            # #46); two processes judging one prompt's images still judge each once.
            return answer_claim_key(answerer.fingerprint, question, choices, statements,
                                    item.prompt)

        self._compute_once(missing, from_cache, score, f"answering {question!r}",
                           _model_name(answerer), self.answer_batch_size, claim_of)
        probabilities = np.array([self._answers[key] for key in keys], dtype=float).reshape(
            len(keys), len(choices)
        )
        return Answers(
            question=question,
            choices=choices,
            labels=_labels(probabilities, abstain_below),
            probabilities=probabilities,
            prompts=tuple(item.prompt for item in images),
            image_keys=tuple(item.key for item in images),
        )

    # -- embeddings ----------------------------------------------------------------------

    def image_embeddings(self, embedder: Embedder, images: ImageSet) -> np.ndarray:
        """(n, d) embeddings of ``images`` by a contrastive judge (``embed_images``), each
        computed once ever like an answer (memo, disk cache, claims, batches)."""
        fingerprint = embedder.fingerprint
        keys = [embedding_key("image", item.content_hash, fingerprint) for item in images]

        def about(item: GeneratedImage) -> dict[str, object]:
            return {"image": item.content_hash, "embedder": fingerprint}

        def embed(batch: list[tuple[str, GeneratedImage]]) -> list[np.ndarray]:
            return list(embedder.embed_images([item.image for _, item in batch]))

        self._embeddings(keys, list(images), about, embed, "embedding images",
                         _model_name(embedder), self.answer_batch_size)
        return np.array([self._answers[key] for key in keys], dtype=float)

    def text_embeddings(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """(n, d) embeddings of ``texts`` (prompts, for CLIPScore), cached as images' are."""
        fingerprint = embedder.fingerprint
        keys = [embedding_key("text", text, fingerprint) for text in texts]

        def about(text: str) -> dict[str, object]:
            return {"text": text, "embedder": fingerprint}

        def embed(batch: list[tuple[str, str]]) -> list[np.ndarray]:
            return list(embedder.embed_texts([text for _, text in batch]))

        self._embeddings(keys, list(texts), about, embed, "", _model_name(embedder),
                         self.answer_batch_size)
        return np.array([self._answers[key] for key in keys], dtype=float)

    def _embeddings(self, keys: list[str], items: list[T], about: Callable[[T], dict[str, object]],
                    embed: Callable[[list[tuple[str, T]]], list[np.ndarray]], what: str, model: str,
                    batch_size: int) -> None:
        """``what``: the progress line's phase (images); empty for texts, computed quietly."""
        self._writes.raise_failed()
        def from_cache(key: str, item: T) -> bool:
            vector = self.cache.get_embedding(key, about(item))
            if vector is None:
                return False
            self._answers[key] = vector
            self.counters.answers_from_cache += 1
            return True

        missing: dict[str, T] = {}
        for key, item in zip(keys, items):
            if key not in self._answers and key not in missing and not from_cache(key, item):
                missing[key] = item

        def compute(batch: list[tuple[str, T]]) -> None:
            vectors = [np.asarray(v, dtype=float) for v in embed(batch)]
            if len(vectors) != len(batch) or any(
                    v.ndim != 1 or not np.all(np.isfinite(v)) for v in vectors):
                raise BackendError(f"the judge {model} returned {len(vectors)} embeddings for "
                                   f"{len(batch)} inputs, or one not a finite vector")
            for (key, _), vector in zip(batch, vectors):
                self._answers[key] = vector
            self._behind(self.cache.put_embeddings,
                         [(key, about(item), vector) for (key, item), vector in zip(batch, vectors)])
            self.counters.answers_scored += len(batch)

        if what:
            self._compute_once(missing, from_cache, compute, what, model, batch_size)
        elif missing:  # a prompt or two: no progress line, no work the run's total counts
            self._compute_claimed(missing, from_cache, compute, batch_size, lambda n: None)

    def _compute_once(self, missing: dict[str, T], from_cache: Callable[[str, T], bool],
                      compute: Callable[[list[tuple[str, T]]], None], what: str,
                      model: str, batch_size: int,
                      claim_of: Callable[[str, T], str] | None = None) -> None:
        """Compute the ``missing`` entries in batches, each once across all processes.

        A key is claimed (without waiting) before it joins a batch and re-read from the cache
        once claimed, since another process may have just written it; the batch's claims are
        released after its entries are written (behind the next batch, ``write_behind``).
        Keys claimed elsewhere are waited for only after our own batches, holding no claim
        while waiting (no deadlock), then read; one still missing (its owner failed) is
        claimed again in the next round. The last batch's writes (and claims' releases) may
        still be running when this returns (``flush``): the entries are in memory already.
        """
        if not missing:
            return
        computed = getattr(self.progress, "computed", None)  # which work, for the run's total

        def compute_and_note(batch: list[tuple[str, T]]) -> None:
            compute(batch)
            if computed is not None:
                computed(what, model, [item for _, item in batch])

        with self.progress.phase(what, len(missing), model) as advance:
            try:
                self._compute_claimed(missing, from_cache, compute_and_note, batch_size, advance,
                                      claim_of)
            except BaseException:
                self._writes.wait_quietly()  # what was computed is kept; the error is the news
                raise

    def _compute_claimed(self, missing: dict[str, T], from_cache: Callable[[str, T], bool],
                         compute: Callable[[list[tuple[str, T]]], None], batch_size: int,
                         advance: Callable[[int], None],
                         claim_of: Callable[[str, T], str] | None = None) -> None:
        """``claim_of(key, item)``: the claim guarding an entry (default: its own key); a
        batch takes each distinct claim once, and an entry whose claim another process holds
        is deferred with every other entry under that claim."""
        pending = dict(missing)
        while pending:
            queue, deferred = deque(pending.items()), {}
            while queue:
                batch: list[tuple[str, T]] = []
                claims: dict[str, Claim] = {}
                busy: set[str] = set()  # held elsewhere: asked once a batch
                try:
                    while queue and len(batch) < batch_size:
                        key, item = queue.popleft()
                        claim_key = key if claim_of is None else claim_of(key, item)
                        if claim_key not in claims and claim_key not in busy:
                            claim = self.cache.claim(claim_key)
                            if claim is None:
                                busy.add(claim_key)
                            else:
                                claims[claim_key] = claim
                        if claim_key in busy:
                            deferred[key] = (item, claim_key)
                            continue
                        if from_cache(key, item):
                            advance(1)
                            continue
                        batch.append((key, item))
                    if batch:
                        compute(batch)
                        advance(len(batch))
                finally:
                    for claim in claims.values():
                        self._behind(claim.release, after=True)
            if deferred:  # our claims released before we wait on other processes'
                self._writes.wait()
            pending = {}
            waited: set[str] = set()
            for key, (item, claim_key) in deferred.items():
                if claim_key not in waited:
                    self.cache.wait_for(claim_key)
                    waited.add(claim_key)
                if from_cache(key, item):
                    advance(1)
                else:
                    pending[key] = item

    def _behind(self, task: Callable[..., None], *args: object, after: bool = False) -> None:
        """``task(*args)`` on the writers (at once when nothing is cached); with ``after``,
        once the writes queued so far are done (a claim's release after its entry's write)."""
        if self.cache.enabled:
            self._writes.submit(lambda: task(*args), after=after)
        else:
            task(*args)


def _model_name(backend: object) -> str:
    """What the progress line calls a backend: its model's name, not its whole path."""
    model = getattr(backend, "model", None)
    if isinstance(model, str) and model:
        return Path(model).name if Path(model).exists() else model  # a path, or a hub id
    return type(backend).__name__


def _generated(request: ImageRequest, picture: Image.Image, key: str,
               image_hash: str | None = None) -> GeneratedImage:
    return GeneratedImage(
        prompt=request.prompt,
        seed=request.seed,
        index=request.index,
        image=picture,
        key=key,
        content_hash=image_hash or content_hash(picture),
    )


def _labels(probabilities: np.ndarray, abstain_below: float) -> np.ndarray:
    if probabilities.size == 0:
        return np.empty(len(probabilities), dtype=int)
    # NaN from json null (unscorable image) arrives as nan after np.asarray(float)
    scorable = ~np.isnan(probabilities).any(axis=1)
    best = np.argmax(np.where(np.isnan(probabilities), -np.inf, probabilities), axis=1)
    confident = np.max(np.nan_to_num(probabilities, nan=-1.0), axis=1) >= abstain_below
    return np.where(scorable & confident, best, ABSTAINED).astype(int)
