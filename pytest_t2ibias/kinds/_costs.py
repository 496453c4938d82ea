"""What the cost kinds share (issue #38): their parameters, their judgement of a paired
change (or of one model against a limit), their run and the images they name up front.

Each cost kind (``prompt_alignment``, ``diversity``, ``image_quality``, ``distribution_shift``,
``erasure``) is one figure of ``methods.costs`` on the subject's prompt, drawn by the
baseline and the candidate at the plan's seed and images per prompt: the merge gate's own
images, so a cost check beside a ``no_regression`` of the same sampling draws none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._types import three_places
from ..verdict import DEFAULT_BURDEN, Verdict, decide, passes
from ._base import CheckContext, Param, PlannedItem
from ._params import COMMON_PARAMS, NUMBER, check_unit_interval
from ._verdicts import gate_note, verb_for

if TYPE_CHECKING:
    from ..methods.costs import Cost
    from ..spec import AxisSpec, CheckSpec, Suite


def cost_params(tolerance: float, what: str, unit: str) -> tuple[Param, ...]:
    """``tolerance`` against the baseline, or ``at_least`` on the candidate alone."""
    return (Param("tolerance", NUMBER, default=tolerance, check=check_unit_interval,
                  doc=f"the candidate's {what} may fall this far below the baseline's ({unit})"),
            Param("at_least", NUMBER,
                  doc=f"one model: the candidate's own {what} must be at least this (no "
                      f"baseline drawn)"),
            *COMMON_PARAMS)


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
    passed = passes(outcome, burden)
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
        passed=passed, outcome=outcome, burden=burden, confidence=confidence,
        check=cost.figure, at_most=upper, value=estimate, threshold=limit, message=message,
        figures={"cost": {"figure": cost.figure, "title": title, "relative": relative,
                          "candidate": cost.candidate.to_dict(),
                          "baseline": cost.baseline.to_dict() if cost.baseline else None,
                          "change": cost.change.to_dict() if cost.change else None},
                 "label": label, "about": title},
    )


def run_cost(ctx: CheckContext, figure: str, title: str, *, at_most: float | None = None) -> Verdict:
    from ..methods.costs import cost_of

    params = ctx.check.params
    at_least = params.get("at_least")
    cost = cost_of(ctx.instrument, ctx.suite, ctx.subject, figure,
                   paired=at_least is None, confidence=ctx.interval_confidence)
    return evaluate_cost(cost, title=title, tolerance=params.get("tolerance", 0.0),
                         at_least=at_least, at_most=at_most, confidence=ctx.confidence,
                         burden=ctx.plan.burden, label=ctx.label)


def image_needs(item: PlannedItem) -> list[tuple[str, list[str]]]:
    """The subject's prompt on the candidate, and on the baseline unless ``at_least`` (one
    model): the merge gate's images."""
    prompt = item.suite.prompt_for(item.subject)
    if item.check.params.get("at_least") is not None:
        return [("candidate", [prompt])]
    return [("baseline", [prompt]), ("candidate", [prompt])]


def prompts(check: CheckSpec, suite: Suite, axis: AxisSpec | None) -> int:
    return 1 if check.params.get("at_least") is not None else 2
