"""``distribution_shift``: how far the candidate's images moved from the baseline's (issue #38).

KID (Binkowski et al. 2018): the unbiased MMD^2, with the cubic polynomial kernel, between the
two models' image embeddings (the run's judge's), here the U-statistic over image pairs,
unbiased under shared seeds (``metrics.costs.kid``), with its jackknife-t interval. Zero: the
same distribution; it grows as the fine-tune draws other images. It says how much moved, not
whether it is worse: a debiasing fine-tune must move some images (that is the fix), so its
limit is a budget of change, read beside the bias figures; the toy CLIP's scale is not a real
CLIP's, so a limit is set per judge (docs/STATISTICS.md, "What a fine-tune costs").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..verdict import DEFAULT_BURDEN, Verdict
from ._base import CheckContext, CheckKind, Param
from ._costs import evaluate_cost, image_needs, run_cost
from ._papers import KID
from ._params import COMMON_PARAMS, NUMBER

if TYPE_CHECKING:
    from ..methods.costs import Cost
    from ..spec import AxisSpec, CheckSpec, Suite

TITLE = "distribution shift (KID)"
PARAMS = (Param("at_most", NUMBER, required=True,
                doc="KID between the models' image embeddings may be at most this (the "
                    "judge's embedding scale)"),
          *COMMON_PARAMS)


def evaluate_distribution_shift(cost: Cost, *, at_most: float, confidence: float | None = None,
                                burden: str = DEFAULT_BURDEN, label: str = "") -> Verdict:
    """KID(baseline, candidate) <= ``at_most``; ``cost``: ``methods.costs.cost_of(...,
    "distribution_shift")``."""
    return evaluate_cost(cost, title=TITLE, at_most=at_most, confidence=confidence,
                         burden=burden, label=label)


def run(ctx: CheckContext) -> Verdict:
    return run_cost(ctx, "distribution_shift", TITLE, at_most=ctx.check.params["at_most"])


def prompts(check: CheckSpec, suite: Suite, axis: AxisSpec | None) -> int:
    return 2


KIND = CheckKind(
    name="distribution_shift",
    run=run,
    axes_param=None,
    params=PARAMS,
    image_needs=image_needs,
    prompts=prompts,
    figure="KID",
    doc="the candidate's images moved no further than a budget from the baseline's: KID "
        "(unbiased MMD^2, cubic kernel) between the models' image embeddings, same seeds",
    paper=f"{KID}: MMD^2_u with k(x, y) = (x.y/d + 1)^3 (Eq. 4), here over image pairs.",
    example=("checks:\n"
             "  - {id: distribution_shift, kind: distribution_shift, at_most: 0.05, confidence: 0.95, images_per_prompt: 200}"),
    example_source="example_suites/toy_merge_gate.t2i.yaml",
)
