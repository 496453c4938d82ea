"""``erasure``: what a debiasing fine-tune costs in erasure (issue #38).

The person filter already runs on every image the gate reads; a fine-tune that balances
the remaining shares by drawing no person in a share of the images shows here. The figure is
the candidate's kept share minus the baseline's, with Newcombe's interval for paired shares
(``metrics.costs.erasure_change``); ``at_least``: the candidate's own kept share (Wilson).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

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
from ._papers import INTERMIT_EVAL
from ._params import check_unit_interval, param

if TYPE_CHECKING:
    from ..methods.costs import Cost

TITLE = "erasure"
FILTER_READ_AS_TRUE = ("the person filter's answers taken as read: the filter question has no "
                       "calibration (a counterfactual or labelled one is read for axes only)")


@dataclass(frozen=True, kw_only=True)
class ErasureParams(CostParams):
    tolerance: float = param("the candidate's share of images that still show the subject may fall this far below the "
                             "baseline's (share points: 0.05 = 5 points)", default=0.05, check=check_unit_interval)
    at_least: float | None = param("one model: the candidate's own share of images that still show the subject must be at "
                                   "least this (no baseline drawn)")


def evaluate_erasure(cost: Cost, *, tolerance: float = ErasureParams.default("tolerance"), at_least: float | None = None,
                     confidence: float | None = None, burden: str = DEFAULT_BURDEN,
                     label: str = "") -> Verdict:
    """The candidate's share of images that still show the subject against the baseline's (``cost.change`` >= -tolerance),
    or its own against ``at_least``; ``cost``: ``methods.costs.cost_of(..., "kept_share", figure="erasure")``."""
    return evaluate_cost(cost, title=TITLE, tolerance=tolerance, at_least=at_least,
                         confidence=confidence, burden=burden, label=label,
                         uncorrected=FILTER_READ_AS_TRUE)


def run(ctx: CheckContext[ErasureParams]) -> Verdict:
    return run_cost(ctx, "kept_share", TITLE, tolerance=ctx.params.tolerance,
                    at_least=ctx.params.at_least, uncorrected=FILTER_READ_AS_TRUE)


KIND = CheckKind(
    name="erasure",
    sample="tolerance: 0.05",
    measures_cost=True,
    run=run,
    axes_param=None,
    params=ErasureParams,
    work=cost_work,
    never_passes=no_loss_tolerance,
    chart=chart,
    figure="kept-share change",
    doc='the candidate still draws the subject: the share of images the suite\'s filter keeps ("Is there a person in the image?"), candidate minus baseline on the same seeds, as InterMit\'s IsP? column',
    paper=f"{INTERMIT_EVAL}: " + "the filter's keep share, candidate minus baseline; Newcombe (1998) method 10 for paired shares" + ".",
    example=("checks:\n"
             "  - {id: erasure, kind: erasure, tolerance: 0.05}"),
    example_source="example_suites/toy_bad_finetune.t2i.yaml",
)
