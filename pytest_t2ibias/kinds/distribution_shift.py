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

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..verdict import DEFAULT_BURDEN, Verdict
from ._base import CheckContext, CheckKind
from ._costs import chart, evaluate_cost, paired_work, run_cost
from ._papers import KID
from ._params import Params, param

if TYPE_CHECKING:
    from ..methods.costs import Cost

TITLE = "distribution shift (KID)"


@dataclass(frozen=True, kw_only=True)
class DistributionShiftParams(Params):
    at_most: float = param("KID between the models' image embeddings may be at most this (the "
                           "judge's embedding scale)", required=True)


def evaluate_distribution_shift(cost: Cost, *, at_most: float, confidence: float | None = None,
                                burden: str = DEFAULT_BURDEN, label: str = "") -> Verdict:
    """KID(baseline, candidate) <= ``at_most``; ``cost``: ``methods.costs.cost_of(..., "kid",
    figure="distribution_shift")``."""
    return evaluate_cost(cost, title=TITLE, at_most=at_most, confidence=confidence,
                         burden=burden, label=label)


def run(ctx: CheckContext[DistributionShiftParams]) -> Verdict:
    return run_cost(ctx, "kid", TITLE, at_most=ctx.params.at_most)


KIND = CheckKind(
    name="distribution_shift",
    sample="at_most: 0.05",
    measures_cost=True,
    run=run,
    axes_param=None,
    params=DistributionShiftParams,
    work=paired_work,
    chart=chart,
    figure="KID",
    doc="the candidate's images moved no further than a budget from the baseline's: KID "
        "(unbiased MMD^2, cubic kernel) between the models' image embeddings, same seeds",
    paper=f"{KID}: MMD^2_u with k(x, y) = (x.y/d + 1)^3 (Eq. 4), here over image pairs.",
    example=("checks:\n"
             "  - {id: distribution_shift, kind: distribution_shift, at_most: 0.05}"),
    example_source="example_suites/toy_bad_finetune.t2i.yaml",
)
