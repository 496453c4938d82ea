"""``image_quality``: what a debiasing fine-tune costs in image quality (issue #38).

A no-reference quality score through the run's own CLIP: each image is compared with the
antonym pair ("Good photo.", "Bad photo.") and the softmax weight of the first is its score
(asked through the judge like any question, so it is cached as an answer). The figure is the
relative change of its mean, paired jackknife-t.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..verdict import DEFAULT_BURDEN, Verdict
from ._base import CheckContext, CheckKind
from ._costs import cost_params, evaluate_cost, image_needs, prompts, run_cost
from ._papers import CLIPIQA

if TYPE_CHECKING:
    from ..methods.costs import Cost

TITLE = "image quality"
PARAMS = cost_params(0.05, "mean CLIP-IQA", "relative: 0.05 = 5%")


def evaluate_image_quality(cost: Cost, *, tolerance: float = 0.05, at_least: float | None = None,
                           confidence: float | None = None, burden: str = DEFAULT_BURDEN,
                           label: str = "") -> Verdict:
    """The candidate's mean CLIP-IQA against the baseline's (``cost.change`` >= -tolerance),
    or its own against ``at_least``; ``cost``: ``methods.costs.cost_of(..., "image_quality")``."""
    return evaluate_cost(cost, title=TITLE, tolerance=tolerance, at_least=at_least,
                         confidence=confidence, burden=burden, label=label)


def run(ctx: CheckContext) -> Verdict:
    return run_cost(ctx, "image_quality", TITLE)


KIND = CheckKind(
    name="image_quality",
    run=run,
    axes_param=None,
    params=PARAMS,
    image_needs=image_needs,
    prompts=prompts,
    figure="CLIP-IQA change",
    doc='the candidate\'s images look as good as the baseline\'s: CLIP-IQA (Wang et al. 2023), the judge\'s weight of "Good photo." against "Bad photo.", candidate against baseline on the same seeds',
    paper=f"{CLIPIQA}: " + 'the softmax weight of "Good photo." against "Bad photo." in the image-text similarities (Eq. 2)' + ".",
    example=("checks:\n"
             "  - {id: image_quality, kind: image_quality, tolerance: 0.05, confidence: 0.95, "
             "images_per_prompt: 200}"),
)
