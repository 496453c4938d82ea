"""``prompt_alignment``: what a debiasing fine-tune costs in prompt alignment (issue #38).

A fine-tune that balances a subject's gender by drawing another subject (a nurse for a
doctor) or no subject at all moves its images away from the prompt: the image-text cosine of
the run's judge falls. The figure is the relative change of the mean CLIPScore, candidate
against baseline, image i of both drawn from the same seed; its interval is the paired
jackknife-t (``metrics.costs.mean_change``). ``at_least``: the candidate's own mean CLIPScore
against a limit, on one model.
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
from ._papers import CLIPSCORE
from ._params import check_unit_interval, param

if TYPE_CHECKING:
    from ..methods.costs import Cost

TITLE = "prompt alignment"


@dataclass(frozen=True, kw_only=True)
class PromptAlignmentParams(CostParams):
    tolerance: float = param("the candidate's mean CLIPScore may fall this far below the "
                             "baseline's (relative: 0.05 = 5%)", default=0.05, check=check_unit_interval)
    at_least: float | None = param("one model: the candidate's own mean CLIPScore must be at "
                                   "least this (no baseline drawn)")


def evaluate_prompt_alignment(cost: Cost, *, tolerance: float = PromptAlignmentParams.default("tolerance"), at_least: float | None = None,
                              confidence: float | None = None, burden: str = DEFAULT_BURDEN,
                              label: str = "") -> Verdict:
    """The candidate's mean CLIPScore against the baseline's (``cost.change`` >= -tolerance),
    or its own against ``at_least``; ``cost``: ``methods.costs.cost_of(..., "clipscore", figure="prompt_alignment")``."""
    return evaluate_cost(cost, title=TITLE, tolerance=tolerance, at_least=at_least,
                         confidence=confidence, burden=burden, label=label)


def run(ctx: CheckContext[PromptAlignmentParams]) -> Verdict:
    return run_cost(ctx, "clipscore", TITLE, tolerance=ctx.params.tolerance,
                    at_least=ctx.params.at_least)


KIND = CheckKind(
    name="prompt_alignment",
    sample="tolerance: 0.05",
    measures_cost=True,
    run=run,
    axes_param=None,
    params=PromptAlignmentParams,
    work=cost_work,
    never_passes=no_loss_tolerance,
    chart=chart,
    figure="CLIPScore change",
    doc="the candidate still draws what its prompt says: CLIPScore (Hessel et al. 2021) of each image with its own prompt, read by the run's CLIP judge; the candidate's mean against the baseline's on the same seeds",
    paper=f"{CLIPSCORE}: " + 'w * max(cos(E_image, E_prompt), 0), w = 2.5 (Eq. 1)' + ".",
    example=("checks:\n"
             "  - {id: prompt_alignment, kind: prompt_alignment, tolerance: 0.002, confidence: 0.95,\n"
             "     images_per_prompt: 200, marks: [xfail]}"),
    example_source="example_suites/toy_bad_finetune.t2i.yaml",
)
