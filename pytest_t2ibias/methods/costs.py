"""What a debiasing fine-tune costs (issue #38): alignment, diversity, quality, distribution
shift and erasure of the candidate against its baseline, on the merge gate's own images.

A mitigation can balance its shares by drawing the subject less often, by drawing a few
near-copies, or by degrading the images until the judge reads a coin flip (InterMit, seed
000, Table 1, reports CLIP-IQA and the share of images that still show a person beside
every mitigation's bias). Each figure here is read off the subject's prompt drawn by both
models at the plan's seed and images per prompt: the images ``methods.gate`` draws for the
merge gate, so these figures cost no image (their embeddings and answers are cached as any
answer). The math is ``metrics.costs``; the embeddings are the run's judge's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._types import Estimate
from ..errors import BackendError, ContractError
from ..metrics.costs import (
    IQA_PROMPTS,
    clip_scores,
    erasure_change,
    iqa_scores,
    kept_share,
    kid_estimate,
    mean_change,
    mean_estimate,
    vendi_change,
    vendi_estimate,
)

if TYPE_CHECKING:
    from .._types import ImageSet
    from ..instrument import Instrument
    from ..suite_spec import Suite

IQA_QUESTION = "Is this a good photo or a bad photo?"
"""What the judge is asked for CLIP-IQA; a contrastive judge compares ``IQA_PROMPTS``."""

MEASURES = ("clipscore", "vendi", "clip_iqa", "kid", "kept_share")
"""What ``cost_of`` computes: mean CLIPScore, Vendi score, mean CLIP-IQA, KID, the filter's
kept share."""


@dataclass(frozen=True)
class Cost:
    """One cost figure of the candidate: its change against the baseline (``change``; None
    on a single model) and each model's own figure (``baseline`` None on a single model)."""

    figure: str
    """What the figure is called (the check's kind): the verdict's ``check``."""
    candidate: Estimate
    baseline: Estimate | None
    change: Estimate | None
    relative: bool
    """``change`` is ``candidate / baseline - 1`` (True) or ``candidate - baseline``."""
    images: int


def cost_of(instrument: Instrument, suite: Suite, subject: str, measure: str, *, figure: str,
            paired: bool, confidence: float,
            antonyms: tuple[str, str] = IQA_PROMPTS) -> Cost:
    """``measure`` (one of ``MEASURES``) of the subject's prompt, called ``figure``: the
    candidate's own, and with ``paired`` its change against the baseline on the same seeds;
    ``antonyms``: CLIP-IQA's prompt pair (positive, negative) for ``clip_iqa``."""
    if measure not in MEASURES:
        raise ValueError(f"unknown cost measure {measure!r}; measures: {', '.join(MEASURES)}")
    prompt = suite.prompt_for(subject)
    candidate = instrument.images([prompt], role="candidate")
    baseline = instrument.images([prompt], role="baseline") if paired else None
    if measure == "kid":
        if baseline is None:
            raise ValueError(f"{figure}: KID compares two models: it needs the baseline")
        shift = kid_estimate(instrument.image_embeddings(baseline),
                             instrument.image_embeddings(candidate), confidence=confidence)
        return Cost(figure, shift, None, shift, False, len(candidate))
    if measure == "kept_share":
        if suite.filter is None:
            raise ValueError(f"suite {suite.name!r} has no filter: {figure} is the share of "
                             f"images the filter keeps (add a filter: question)")
        kept = instrument.keep_mask(candidate, suite.filter)
        own = kept_share(kept, confidence=confidence)
        if baseline is None:
            return Cost(figure, own, None, None, False, len(candidate))
        base_kept = instrument.keep_mask(baseline, suite.filter)
        return Cost(figure, own, kept_share(base_kept, confidence=confidence),
                    erasure_change(base_kept, kept, confidence=confidence), False, len(candidate))
    if measure == "vendi":
        c = instrument.image_embeddings(candidate)
        own = vendi_estimate(c, confidence=confidence)
        if baseline is None:
            return Cost(figure, own, None, None, True, len(candidate))
        b = instrument.image_embeddings(baseline)
        return Cost(figure, own, vendi_estimate(b, confidence=confidence),
                    vendi_change(b, c, confidence=confidence), True, len(candidate))
    scores = {"clipscore": lambda images: _clip_scores(instrument, images, prompt),
              "clip_iqa": lambda images: clip_iqa(instrument, images, antonyms)}[measure]
    c = scores(candidate)
    own = mean_estimate(c, confidence=confidence)
    if baseline is None:
        return Cost(figure, own, None, None, True, len(candidate))
    b = scores(baseline)
    return Cost(figure, own, mean_estimate(b, confidence=confidence),
                mean_change(b, c, confidence=confidence), True, len(candidate))


def _clip_scores(instrument: Instrument, images: ImageSet, prompt: str) -> np.ndarray:
    """CLIPScore of each image with its own prompt (Hessel et al. 2021, Eq. 1)."""
    return clip_scores(instrument.image_embeddings(images), instrument.text_embeddings([prompt]))


def iqa_question(antonyms: tuple[str, str]) -> tuple[str, tuple[str, str]]:
    """What the judge is asked for CLIP-IQA with ``antonyms`` and its two choices: the
    paper's pair asks ``IQA_QUESTION`` (good, bad); another pair (the paper's other quality
    and abstract aspects: "Sharp photo."/"Blurry photo.", "Happy photo."/"Sad photo.", ...)
    asks which of its two captions fits, the captions as choices (a generative judge scores
    them after the question; a contrastive one compares the image with each)."""
    positive, negative = antonyms
    if tuple(antonyms) == IQA_PROMPTS:
        return IQA_QUESTION, ("good", "bad")
    return f'Which fits the image better: "{positive}" or "{negative}"?', (positive, negative)


def clip_iqa(instrument: Instrument, images: ImageSet,
             antonyms: tuple[str, str] = IQA_PROMPTS) -> np.ndarray:
    """CLIP-IQA (Wang et al. 2023): the judge's softmax weight of the positive prompt
    ("Good photo.") over the negative ("Bad photo.") (the judge's own logit scale; CLIP's is
    100, as CLIP-IQA's)."""
    question, choices = iqa_question(antonyms)
    answers = instrument.ask(images, question, choices, statements=tuple(antonyms))
    return iqa_scores(answers.probabilities)


def why_no_clip_iqa(instrument: Instrument, images: ImageSet) -> str | None:
    """Why the run's judge cannot give CLIP-IQA, or None when it can: CLIP-IQA is a
    contrastive judge's image-text similarity (CLIP, SigLIP); a judge is one when it embeds
    images (told on one of ``images``: one embedding, cached as any answer)."""
    try:
        instrument.image_embeddings(images[:1])
    except (BackendError, ContractError) as error:
        return f"CLIP-IQA needs a contrastive judge (CLIP, SigLIP): {error}"
    return None
