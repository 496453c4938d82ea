"""``image_quality``: what a debiasing fine-tune costs in image quality (issue #38).

A no-reference quality score through the run's own CLIP: each image is compared with the
antonym pair ("Good photo.", "Bad photo.") and the softmax weight of the first is its score
(asked through the judge like any question, so it is cached as an answer). The figure is the
relative change of its mean, paired jackknife-t. ``antonyms:`` gives another pair, as the
paper does for each aspect it reads (Wang et al. 2023: quality, "Sharp photo."/"Blurry
photo.", and abstract perception, "Happy photo."/"Sad photo.", ...): one the judge can read,
and the aspect it names is the one measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..params import TEXT_SCHEMA, constraint
from ..verdict import DEFAULT_BURDEN, Verdict
from ._base import CheckContext, CheckKind
from ._costs import (
    CostParams,
    chart,
    cost_work,
    evaluate_cost,
    no_loss_tolerance,
    run_cost,
)
from ._papers import CLIPIQA
from ._params import check_text_pair, check_unit_interval, param

CLIP_IQA_PROMPTS: dict[str, tuple[str, str]] = {
    "quality": ("Good photo.", "Bad photo."),
    "brightness": ("Bright photo.", "Dark photo."),
    "noisiness": ("Clean photo.", "Noisy photo."),
    "colorfullness": ("Colorful photo.", "Dull photo."),
    "sharpness": ("Sharp photo.", "Blurry photo."),
    "contrast": ("High contrast photo.", "Low contrast photo."),
    "complexity": ("Complex photo.", "Simple photo."),
    "natural": ("Natural photo.", "Synthetic photo."),
    "happy": ("Happy photo.", "Sad photo."),
    "scary": ("Scary photo.", "Peaceful photo."),
    "new": ("New photo.", "Old photo."),
    "warm": ("Warm photo.", "Cold photo."),
    "real": ("Real photo.", "Abstract photo."),
    "beautiful": ("Beautiful photo.", "Ugly photo."),
    "lonely": ("Lonely photo.", "Sociable photo."),
    "relaxing": ("Relaxing photo.", "Stressful photo."),
}
"""CLIP-IQA's named prompt pairs, as torchmetrics' ``CLIPImageQualityAssessment(prompts=...)``
names them (``colorfullness`` spelled as there): ``antonyms: [brightness]`` reads that pair."""


@constraint({"anyOf": [
    {"enum": list(CLIP_IQA_PROMPTS)},
    {"type": "array", "items": {"enum": list(CLIP_IQA_PROMPTS)}, "minItems": 1, "maxItems": 1},
    {"type": "array", "items": TEXT_SCHEMA, "minItems": 2, "maxItems": 2, "uniqueItems": True}]},
    "two different non-empty strings, or a CLIP-IQA pair's name")
def check_antonyms(value: object) -> str | None:
    """A pair of captions, or one name of ``CLIP_IQA_PROMPTS`` (alone, or in a list)."""
    if isinstance(value, (list, tuple)) and len(value) == 1 and isinstance(value[0], str):
        value = value[0]
    if isinstance(value, str):
        if value.strip().lower() in CLIP_IQA_PROMPTS:
            return None
        return (f"must be two different captions, the positive then the negative, or the name "
                f"of a CLIP-IQA prompt pair as torchmetrics names them "
                f"({', '.join(CLIP_IQA_PROMPTS)}); got {value!r}")
    return check_text_pair(value)


def pair_of(antonyms: tuple[str, ...] | str | None) -> tuple[str, str] | None:
    """The caption pair ``antonyms`` says (a name looked up); None: the default pair."""
    if not antonyms:
        return None
    if isinstance(antonyms, str) or len(antonyms) == 1:
        name = antonyms if isinstance(antonyms, str) else antonyms[0]
        pair = CLIP_IQA_PROMPTS[name.strip().lower()]
        return None if pair == CLIP_IQA_PROMPTS["quality"] else pair  # the default's cache keys
    return (antonyms[0], antonyms[1])

if TYPE_CHECKING:
    from ..methods.costs import Cost

TITLE = "image quality"


@dataclass(frozen=True, kw_only=True)
class ImageQualityParams(CostParams):
    tolerance: float = param("the candidate's mean CLIP-IQA may fall this far below the "
                             "baseline's (relative: 0.05 = 5%)", default=0.05, check=check_unit_interval)
    at_least: float | None = param("one model: the candidate's own mean CLIP-IQA must be at "
                                   "least this (no baseline drawn)")
    antonyms: tuple[str, ...] | str | None = param(
        "CLIP-IQA's prompt pair, the positive then the negative (default [Good photo., Bad "
        "photo.]), or one of torchmetrics' names for the paper's pairs (brightness, "
        "sharpness, happy, ...: quality, brightness, noisiness, colorfullness, sharpness, "
        "contrast, complexity, natural, happy, scary, new, warm, real, beautiful, lonely, "
        "relaxing); the paper reads each aspect with its own pair: give one the judge can read",
        check=check_antonyms, types=(list, str))


def evaluate_image_quality(cost: Cost, *, tolerance: float = ImageQualityParams.default("tolerance"), at_least: float | None = None,
                           confidence: float | None = None, burden: str = DEFAULT_BURDEN,
                           label: str = "") -> Verdict:
    """The candidate's mean CLIP-IQA against the baseline's (``cost.change`` >= -tolerance),
    or its own against ``at_least``; ``cost``: ``methods.costs.cost_of(..., "clip_iqa", figure="image_quality")``."""
    return evaluate_cost(cost, title=TITLE, tolerance=tolerance, at_least=at_least,
                         confidence=confidence, burden=burden, label=label)


def title_for(antonyms: tuple[str, ...] | str | None) -> str:
    """The figure's name in messages: the pair it read when it is not the paper's default."""
    pair = pair_of(antonyms)
    if pair is None:
        return TITLE
    return f'{TITLE} ("{pair[0]}" over "{pair[1]}")'


def run(ctx: CheckContext[ImageQualityParams]) -> Verdict:
    antonyms = ctx.params.antonyms
    pair = pair_of(antonyms)
    options: dict[str, Any] = {"antonyms": pair} if pair else {}
    return run_cost(ctx, "clip_iqa", title_for(antonyms), tolerance=ctx.params.tolerance,
                    at_least=ctx.params.at_least, **options)


KIND = CheckKind(
    name="image_quality",
    sample="tolerance: 0.05",
    measures_cost=True,
    run=run,
    axes_param=None,
    params=ImageQualityParams,
    work=cost_work,
    never_passes=no_loss_tolerance,
    chart=chart,
    figure="CLIP-IQA change",
    doc='the candidate\'s images look as good as the baseline\'s: CLIP-IQA (Wang et al. 2023), the judge\'s weight of "Good photo." against "Bad photo.", candidate against baseline on the same seeds',
    paper=f"{CLIPIQA}: " + 'the softmax weight of "Good photo." against "Bad photo." in the image-text similarities (Eq. 2)' + ".",
    example=("checks:\n"
             "  - {id: image_quality, kind: image_quality, tolerance: 0.05, confidence: 0.95, "
             "images_per_prompt: 200}"),
)
