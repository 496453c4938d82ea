"""What the cost kinds share (issue #38): their parameters, their judgement of a paired
change (or of one model against a limit), their run and the images they name up front.

Each cost kind (``prompt_alignment``, ``vendi_diversity``, ``image_quality``,
``distribution_shift``, ``erasure``) is one figure of ``methods.costs`` on the subject's
prompt, drawn by the baseline and the candidate at the plan's seed and images per prompt: the
merge gate's own images, so a cost check beside a ``no_regression`` of the same sampling
draws none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._types import three_places
from ..figures import Interval, interval_of
from ..verdict import DEFAULT_BURDEN, Verdict, decide
from ._base import CheckContext, PlannedItem
from ._params import Params, check_unit_interval, param
from ._verdicts import gate_note, verb_for
from ._work import Work, planned

if TYPE_CHECKING:
    from ..methods.costs import Cost


@dataclass(frozen=True, kw_only=True)
class CostParams(Params):
    """``tolerance`` against the baseline, or ``at_least`` on the candidate alone; a cost
    kind subclasses it to give ``tolerance`` its default and both fields their figure's docs."""

    tolerance: float = param("the candidate's figure may fall this far below the baseline's",
                             default=0.0, check=check_unit_interval)
    at_least: float | None = param("one model: the candidate's own figure must be at least "
                                   "this (no baseline drawn)")


EMBEDDING_SCORE = ("an embedding score of the judge, not a share of classes: it has no "
                   "confusion to correct")
"""Why a cost figure reads its judge uncorrected (``judge_correction: off`` on its row); the
erasure kind, a share read by the person filter, says its own."""


def _shown(value: float, relative: bool) -> str:
    return f"{value * 100:+.1f}%" if relative else f"{value:+.3f}"


def evaluate_cost(
    cost: Cost,
    *,
    title: str,
    tolerance: float = 0.0,
    at_least: float | None = None,
    at_most: float | None = None,
    confidence: float | None = None,
    burden: str = DEFAULT_BURDEN,
    label: str = "",
    uncorrected: str = EMBEDDING_SCORE,
) -> Verdict:
    """The candidate's cost judged: its change against the baseline must be >= -tolerance
    (``at_least`` None), the candidate's own figure >= ``at_least`` (one model), or the
    figure <= ``at_most`` (a distance, KID)."""
    if at_most is not None:
        estimate, limit, upper = cost.change or cost.candidate, float(at_most), True
    elif at_least is not None:
        estimate, limit, upper = cost.candidate, float(at_least), False
    else:
        if cost.change is None:
            raise ValueError(f"{cost.figure}: no baseline to compare with; give at_least")
        estimate, limit, upper = cost.change, -float(tolerance), False
    outcome = decide(estimate, limit, confidence=confidence, at_most=upper)
    relative = cost.relative and at_least is None and at_most is None
    interval = (f"{_shown(estimate.value, relative)} [{_shown(estimate.low, relative)}, "
                f"{_shown(estimate.high, relative)}]")
    models = (f" ({three_places(cost.baseline.value)} -> {three_places(cost.candidate.value)})"
              if cost.baseline is not None else "")
    subject = f" for {label}" if label else ""
    bound = (f"at most {three_places(limit)}" if upper else
             f"at least {three_places(limit)}" if at_least is not None else
             f"a loss of at most {_shown(tolerance, relative).lstrip('+')}")
    verb = verb_for(outcome, "within", "beyond")
    message = (f"{title}{subject}: {interval}{models}, {verb} the limit ({bound}); "
               f"n={cost.images} images a model{gate_note(confidence, outcome, burden)}")
    return Verdict(
        outcome=outcome, burden=burden, confidence=confidence,
        check=cost.figure, at_most=upper, value=estimate, threshold=limit, message=message,
        figures={"cost": {"figure": cost.figure, "title": title, "relative": relative,
                          "candidate": cost.candidate.to_dict(),
                          "baseline": cost.baseline.to_dict() if cost.baseline else None,
                          "change": cost.change.to_dict() if cost.change else None},
                 "label": label, "about": title,
                 "judge_correction": "off", "judge_uncorrected": uncorrected},
    )


def run_cost(ctx: CheckContext[Any], measure: str, title: str, *, tolerance: float = 0.0,
             at_least: float | None = None, at_most: float | None = None,
             uncorrected: str = EMBEDDING_SCORE, **options: Any) -> Verdict:
    """The kind's ``measure`` of ``methods.costs`` on the context's subject, named after the
    check's kind, judged; paired with the baseline unless ``at_least`` (one model);
    ``options``: the measure's own (``antonyms`` for ``clip_iqa``)."""
    from ..methods.costs import cost_of

    cost = cost_of(ctx.instrument, ctx.suite, ctx.subject, measure, figure=ctx.check.kind,
                   paired=at_least is None, confidence=ctx.interval_confidence, **options)
    return evaluate_cost(cost, title=title, tolerance=tolerance, at_least=at_least,
                         at_most=at_most, confidence=ctx.confidence, burden=ctx.plan.burden,
                         label=ctx.label, uncorrected=uncorrected)


def image_needs(item: PlannedItem, one_model: bool) -> list[tuple[str, list[str]]]:
    """The subject's prompt on the candidate, and on the baseline unless ``one_model``
    (``at_least``): the merge gate's images."""
    prompt = item.suite.prompt_for(item.subject)
    if one_model:
        return [("candidate", [prompt])]
    return [("baseline", [prompt]), ("candidate", [prompt])]


def cost_work(item: PlannedItem) -> Work:
    """A ``tolerance``/``at_least`` cost kind's ``work``: its images (``image_needs``); it
    reads no axis off them (its figure is the judge's embeddings or the filter's answers)."""
    params = item.params_as(CostParams)
    return planned(item, image_needs(item, params.at_least is not None), [])


def paired_work(item: PlannedItem) -> Work:
    """A paired-only cost kind's ``work``: the prompt on the baseline and the candidate."""
    return planned(item, image_needs(item, False), [])


def no_loss_tolerance(params: CostParams) -> str:
    """A paired cost gated at a loss of 0 cannot be shown above the no-change value."""
    if params.at_least is None and float(params.tolerance) == 0.0:
        return ("never passes for a fine-tune that costs nothing: tolerance 0 is the "
                "no-change value, which an interval cannot be shown above; give a "
                "tolerance > 0 (or at_least)")
    return ""


def chart(figures: Mapping[str, Any]) -> list[Interval]:
    """The judged figure (the change, or the candidate's own), the models' figures in grey."""
    cost = figures.get("cost")
    if not isinstance(cost, Mapping):
        return []
    title = str(cost.get("title") or cost.get("figure") or "cost")
    change = cost.get("change")
    lines = []
    if isinstance(change, Mapping):
        lines.append(interval_of(f"{title}: candidate - baseline"
                                 + (" (relative)" if cost.get("relative") else ""), change))
    for role in ("baseline", "candidate"):
        if isinstance(cost.get(role), Mapping):
            lines.append(interval_of(f"{title}: {role}", cost[role],
                                     judged=not isinstance(change, Mapping)))
    return lines
