"""``vendi_diversity``: what a debiasing fine-tune costs in diversity (issue #38).

A fine-tune can balance its shares by collapsing every image of a prompt onto a few
near-copies (half of them women, all alike). The Vendi score counts the effective number of
distinct images (1: all alike, n: all orthogonal) in the run's judge's embedding space; the
figure is its relative change, with the jackknife over image pairs, bias-corrected (the
plug-in score is biased down at finite n; ``validation/cost_coverage.py``).
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
from ._papers import VENDI
from ._params import check_unit_interval, param

if TYPE_CHECKING:
    from ..methods.costs import Cost

TITLE = "diversity (Vendi)"


@dataclass(frozen=True, kw_only=True)
class VendiDiversityParams(CostParams):
    tolerance: float = param("the candidate's Vendi score may fall this far below the "
                             "baseline's (relative: 0.1 = 10%)", default=0.1, check=check_unit_interval)
    at_least: float | None = param("one model: the candidate's own Vendi score must be at "
                                   "least this (no baseline drawn)")


def evaluate_vendi_diversity(cost: Cost, *, tolerance: float = VendiDiversityParams.default("tolerance"),
                             at_least: float | None = None, confidence: float | None = None,
                             burden: str = DEFAULT_BURDEN, label: str = "") -> Verdict:
    """The candidate's Vendi score against the baseline's (``cost.change`` >= -tolerance),
    or its own against ``at_least``; ``cost``:
    ``methods.costs.cost_of(..., "vendi", figure="vendi_diversity")``."""
    return evaluate_cost(cost, title=TITLE, tolerance=tolerance, at_least=at_least,
                         confidence=confidence, burden=burden, label=label)


def run(ctx: CheckContext[VendiDiversityParams]) -> Verdict:
    return run_cost(ctx, "vendi", TITLE, tolerance=ctx.params.tolerance,
                    at_least=ctx.params.at_least)


KIND = CheckKind(
    name="vendi_diversity",
    sample="tolerance: 0.1",
    measures_cost=True,
    run=run,
    axes_param=None,
    params=VendiDiversityParams,
    work=cost_work,
    never_passes=no_loss_tolerance,
    chart=chart,
    figure="Vendi change",
    doc="the candidate's images of a prompt are as varied as the baseline's: the Vendi score (Friedman & Dieng 2023, the effective number of distinct images) of the prompt's image embeddings, candidate against baseline on the same seeds",
    paper=f"{VENDI}: " + 'exp(-sum lambda_i log lambda_i), lambda the eigenvalues of K/n, K the cosine kernel of the image embeddings (Def. 3.1)' + ".",
    example=("checks:\n"
             "  - {id: vendi_diversity, kind: vendi_diversity, tolerance: 0.1}"),
    example_source="example_suites/toy_bad_finetune.t2i.yaml",
)
