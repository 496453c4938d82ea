"""One plan per session: every image and answer the selected checks can name up front,
deduplicated and computed in full batches across prompts and checks (issue #14).

The kinds whose requests follow from the suite alone are planned: each declares them in its
``Work`` (``CheckKind.work``: ``Work.planned``, the prompts, the images a prompt and the axes
read off each, with the images that calibrate its judge; a user's kind the same way). Search
kinds decide their next prompt from what they measured, so they request as they go. The checks then run as before and find every planned
result in the request layer's memo (or the disk cache), so a verdict never depends on
whether the plan ran.

Answers are planned by running the same ``Instrument.attributes`` a check runs against a
recording request layer, so the plan cannot drift from what the checks ask: each
(answerer, question, choices, statements) is then answered once for all planned images.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ._types import ABSTAINED, Answers, ImageRequest, ImageSet
from .kinds import PlannedItem, work_of

if TYPE_CHECKING:
    from .backends._base import Embedder, Generator
    from .instrument import Instrument, Requests
    from .kinds import Draw, Work
    from .plan import Plan


class _RecordingLayer:
    """A request layer that serves images from the real one and records answer requests."""

    def __init__(self, real: Requests) -> None:
        self.real = real
        self.asked: dict[tuple, tuple[Any, dict[str, Any]]] = {}
        self.asker: PlannedItem | None = None
        """The item whose answers are being recorded; the first to ask a question owns a
        failure to answer it (``first_asker``)."""
        self.first_asker: dict[tuple, PlannedItem] = {}

    def images(self, generator: Generator, requests: Sequence[ImageRequest]) -> ImageSet:
        return self.real.images(generator, requests)

    def image_embeddings(self, embedder: Embedder, images: ImageSet) -> np.ndarray:
        return self.real.image_embeddings(embedder, images)

    def text_embeddings(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        return self.real.text_embeddings(embedder, texts)

    def answers(self, answerer, images: ImageSet, question: str, choices: Sequence[str],
                statements: Sequence[str] | None = None, *, abstain_below: float = 0.0) -> Answers:
        choices = tuple(choices)
        statements = tuple(statements) if statements else None
        key = (answerer.fingerprint, question, choices, statements)
        _, pending = self.asked.setdefault(key, (answerer, {}))
        if self.asker is not None:
            self.first_asker.setdefault(key, self.asker)
        for item in images:
            pending.setdefault(item.key, item)
        n = len(images)
        return Answers(question, choices, np.full(n, ABSTAINED), np.zeros((n, len(choices))),
                       tuple(i.prompt for i in images), tuple(i.key for i in images))


def prefetch(items: Sequence[PlannedItem], instrument_for: Callable[[Plan], Instrument],
             *, on_error: Callable[[PlannedItem, BaseException], None] | None = None,
             share: Callable[[list], list] | None = None,
             barrier: Callable[[], None] | None = None,
             works: Sequence[Work | None] | None = None) -> int:
    """Compute every planned image, then every planned answer, in full batches.

    Across processes (``python -m pytest_t2ibias prefetch`` under ``accelerate launch``),
    ``share`` picks this process's part of each deduplicated request list and ``barrier``
    waits for every process between the images and the answers (which read the images the
    others generated from the shared cache).

    An item whose needs cannot be worked out (an LLM-phrased axis without its lock, a model
    that fails to load) or whose images cannot be made (a ``--t2i-images`` folder without a
    prompt's images) is left to its own run, which reports the error where it belongs: a
    batch that fails is retried item by item to find whose it is, and nothing raised here
    lands on another item (#35: the first item of the run used to take the ERROR).
    ``works``: each item's ``Work`` when the session plan has it (else worked out here).
    Returns how many items were planned.
    """
    # 1. images: one request list per generator (model x steps x guidance), across checks
    by_generator: dict[str, tuple[Any, list[ImageRequest]]] = {}
    ready: list[_Ready] = []
    for position, item in enumerate(items):
        known = works[position] if works is not None else None
        work = known if known is not None else work_of(item)
        if work.error is not None:  # its needs cannot be worked out: its own run says why
            _tell(on_error, item, work.error)
            continue
        if not work.planned:
            continue
        try:
            instrument = instrument_for(item.plan)
            wants = []
            for draw in work.planned:  # the kind's own, then its judge's calibration
                if draw.role is None:  # a folder's images: nothing to generate
                    continue
                generator = instrument.generator(draw.role)
                wanted = [ImageRequest(draw.prompt, item.plan.seed, i, **item.plan.sampling)
                          for i in range(draw.images)]
                _, requests = by_generator.setdefault(generator.fingerprint, (generator, []))
                requests.extend(wanted)
                wants.append((generator, wanted))
        except Exception as error:  # a model that will not load: kept for its run
            _tell(on_error, item, error)
            continue
        ready.append(_Ready(item, instrument, work.planned, wants))
    if not ready:
        return 0
    real = ready[0].instrument.requests
    share = share or (lambda requests: requests)
    batches_failed = False
    for generator, requests in by_generator.values():
        mine = share(list(dict.fromkeys(requests)))
        if mine:
            try:
                real.images(generator, mine)
            except Exception:  # whose images failed: asked item by item below
                batches_failed = True
    if batches_failed:
        ready = [entry for entry in ready if _images_made(entry, real, share, on_error)]
    if barrier is not None:
        barrier()
    # 2. answers: what each check would ask, recorded, then asked once per question
    recorder = _RecordingLayer(real)
    for entry in ready:
        recorder.asker = entry.item
        recording = replace(entry.instrument, requests=recorder)
        try:
            for draw in entry.needs:
                if draw.role is None:  # a folder's images: asked in the item's own run
                    continue
                images = recording.images([draw.prompt], role=draw.role, per_prompt=draw.images)
                for axis in draw.axes:
                    recording.attributes(images, axis, entry.item.suite.filter)
        except Exception as error:
            _tell(on_error, entry.item, error)
    for key, (answerer, pending) in recorder.asked.items():
        _, question, choices, statements = key
        mine = share(list(pending.values()))
        if mine:
            try:
                real.answers(answerer, ImageSet(tuple(mine)), question, choices, statements)
            except Exception as error:  # the first asker's; the others meet
                if key in recorder.first_asker:  # its repeat in their own runs
                    _tell(on_error, recorder.first_asker[key], error)
    return len(ready)


@dataclass
class _Ready:
    """A planned item whose needs are known: its instrument, its planned draws and the image
    requests it makes of each generator."""

    item: PlannedItem
    instrument: Instrument
    needs: tuple[Draw, ...]
    wants: list[tuple[Any, list[ImageRequest]]]


def _images_made(entry: _Ready, real: Requests, share: Callable[[list], list],
                 on_error: Callable[[PlannedItem, BaseException], None] | None) -> bool:
    """Make one item's images alone; False (the error told) if they cannot be made."""
    try:
        for generator, requests in entry.wants:
            mine = share(list(dict.fromkeys(requests)))
            if mine:
                real.images(generator, mine)
    except Exception as error:  # the item's own run reports it
        _tell(on_error, entry.item, error)
        return False
    return True


def _tell(on_error, item: PlannedItem, error: BaseException) -> None:
    if on_error is not None:
        on_error(item, error)


def adaptive_rounds(items: Sequence[PlannedItem], instrument_for: Callable[[Plan], Instrument],
                    decided: Callable[[int, Plan], bool], *,
                    fixed: Sequence[PlannedItem] = (),
                    on_error: Callable[[PlannedItem, BaseException], None] | None = None,
                    works: Sequence[Work | None] | None = None,
                    fixed_works: Sequence[Work | None] | None = None) -> dict[int, int]:
    """Adaptive sampling across checks (issue #26): round r plans look r of every adaptive
    item not yet decided (``Plan.looks``: 16, 32, 64 ... images per prompt up to its cap) in
    one ``prefetch``, the first round together with the ``fixed`` items' full n; then
    ``decided(i, plan)`` judges item i at that look (its own run's statistics, at its
    per-look level) and a decided item stops. Image i of a prompt is the same image whatever
    the round (its noise depends on the seed and i only), so a look reads the images of the
    earlier ones plus the new ones, and a warm rerun stops at the same look.

    Returns, per index into ``items``, the images per prompt it stopped at (its cap when no
    look decided it). An item whose judging raises stops at that look; its own run reports
    the error. ``works``/``fixed_works``: the items' ``Work`` at their full plan, when the
    session plan has it (a look scales it, ``Work.at``)."""
    stopped: dict[int, int] = {}
    pending = dict(enumerate(items))
    round_ = 0
    while pending:
        at = {i: replace(item, plan=replace(item.plan, images_per_prompt=item.plan.looks[round_]))
              for i, item in pending.items()}
        looked = [_at_look(works[i] if works is not None else None, item, items[i].plan)
                  for i, item in at.items()]
        first = (list(fixed), list(fixed_works or [None] * len(fixed))) if round_ == 0 else ([], [])
        prefetch([*first[0], *at.values()], instrument_for, on_error=on_error,
                 works=[*first[1], *looked])
        for i, item in at.items():
            last = round_ == len(item.plan.looks) - 1
            try:
                done = last or decided(i, item.plan)
            except Exception:  # the item's own run reports it
                done = True
            if done:
                stopped[i] = item.plan.images_per_prompt
                del pending[i]
        round_ += 1
    return stopped


def _at_look(work: Work | None, item: PlannedItem, full: Plan) -> Work | None:
    """``work`` (the item's at its full plan) at the item's look; None: not known."""
    if work is None:
        return None
    return work.at(item.plan.images_per_prompt, full.images_per_prompt)
