"""Check kinds: what a ``checks:`` entry of a suite may say, and how it is judged.

A kind declares its parameters (validated at collection, before any model loads), which
parameter names the axes its items expand over, and a ``run`` that returns a ``Verdict``.
Later methods register more kinds with ``register_check``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .suite.spec import AxisSpec, CheckSpec, Suite
    from .verdict import Verdict


@dataclass(frozen=True)
class Param:
    """One key of a check entry. ``types`` as for ``isinstance``; ``check`` may reject a value
    with a message (returned string) after the type matched."""

    name: str
    types: tuple[type, ...]
    required: bool = False
    default: Any = None
    check: Callable[[Any], str | None] | None = None
    doc: str = ""


@dataclass(frozen=True)
class CheckContext:
    """Everything one item needs: its spec, where it sits in the suite, and the facade."""

    check: CheckSpec
    suite: Suite
    subject: str
    axis: AxisSpec | None
    t2ibias: Any


@dataclass(frozen=True)
class CheckKind:
    name: str
    run: Callable[[CheckContext], Verdict]
    params: tuple[Param, ...] = ()
    axes_param: str | None = "axes"
    """Parameter listing the axes to expand items over (one item per subject x axis);
    None for kinds with one item per subject."""
    doc: str = ""


CHECK_KINDS: dict[str, CheckKind] = {}


def register_check(kind: CheckKind) -> CheckKind:
    if kind.name in CHECK_KINDS:
        raise ValueError(f"check kind {kind.name!r} is already registered")
    CHECK_KINDS[kind.name] = kind
    return kind


def _unit_interval(value: Any) -> str | None:
    return None if 0.0 <= float(value) <= 1.0 else f"must lie in [0, 1], got {value}"


def _confidence(value: Any) -> str | None:
    return None if 0.5 <= float(value) < 1.0 else f"must lie in [0.5, 1), got {value}"


NUMBER = (int, float)
AXIS_LIST = (list,)


def _at_least_one(value: Any) -> str | None:
    return None if value >= 1 else f"must be at least 1, got {value}"


COMMON_PARAMS = (
    Param("confidence", NUMBER, check=_confidence,
          doc="fail only when the whole CI is on the wrong side of the threshold"),
    Param("images_per_prompt", (int,), check=_at_least_one,
          doc="images per prompt for this check only (more images, a tighter interval); "
              "default: the suite's"),
)


def suite_for_check(suite: Suite, check: CheckSpec) -> Suite:
    """``suite`` as ``check`` sees it: its own ``images_per_prompt`` overrides the suite's."""
    n = check.params.get("images_per_prompt")
    if n is None:
        return suite
    return replace(suite, defaults={**suite.defaults, "images_per_prompt": n})


# -- the built-in kinds ---------------------------------------------------------------------


def _label(ctx: CheckContext) -> str:
    return f"{ctx.subject}/{ctx.axis.name}" if ctx.axis else ctx.subject


def _confidence_of(ctx: CheckContext) -> float | None:
    return ctx.check.params.get("confidence")


def _run_entropy_below(ctx: CheckContext) -> Verdict:
    from .assertions import evaluate_entropy_below

    answers = ctx.t2ibias.subject_attributes(ctx.suite, ctx.subject, ctx.axis)
    return evaluate_entropy_below(answers, ctx.check.params["threshold"],
                                  confidence=_confidence_of(ctx), label=_label(ctx),
                                  n_resamples=ctx.t2ibias.settings.bootstrap)


def _run_w1_below(ctx: CheckContext) -> Verdict:
    from .assertions import evaluate_w1_below
    from .methods.biasconnect import ideal_distribution

    answers = ctx.t2ibias.subject_attributes(ctx.suite, ctx.subject, ctx.axis)
    return evaluate_w1_below(answers, ctx.check.params["threshold"],
                             ideal=ideal_distribution(ctx.t2ibias, ctx.axis, ctx.suite),
                             ordered=ctx.axis.ordered, confidence=_confidence_of(ctx),
                             label=_label(ctx), n_resamples=ctx.t2ibias.settings.bootstrap)


def _run_is_nonnegative(ctx: CheckContext) -> Verdict:
    from .assertions import evaluate_is_nonnegative

    params = ctx.check.params
    on = params.get("on") or [a for a in ctx.suite.axes if a != ctx.axis.name]
    matrix = ctx.t2ibias.biasconnect(ctx.suite, ctx.subject, mitigate=[ctx.axis.name],
                                     axes=list(dict.fromkeys([ctx.axis.name, *on])))
    verdict = evaluate_is_nonnegative(matrix, mitigate=[ctx.axis.name], on=on,
                                      tolerance=params.get("tolerance", 0.0),
                                      confidence=_confidence_of(ctx), label=ctx.subject)
    return _with_matrix(verdict, matrix)


def _with_matrix(verdict: Verdict, matrix: Any) -> Verdict:
    """The verdict with its IS matrix as plain builtins, for reports to draw (``heatmap``)."""
    from dataclasses import replace

    from .heatmap import matrix_figure

    return replace(verdict, figures={**verdict.figures, "matrix": matrix_figure(matrix)})


def _run_no_regression(ctx: CheckContext) -> Verdict:
    from .assertions import evaluate_no_regression

    params = ctx.check.params
    on = params.get("on") or [a for a in ctx.suite.axes if a != ctx.axis.name]
    effect = ctx.t2ibias.mitigation_effect(ctx.suite, ctx.subject,
                                           axes=list(dict.fromkeys([ctx.axis.name, *on])))
    return evaluate_no_regression(effect, fixes=[ctx.axis.name], on=on,
                                  tolerance=params.get("tolerance", 0.0),
                                  confidence=_confidence_of(ctx), label=_label(ctx))


def _run_intermit(ctx: CheckContext) -> Verdict:
    params = ctx.check.params
    result = ctx.t2ibias.intermit(ctx.suite, ctx.subject, priority=params.get("priority"),
                                  epsilon=params.get("epsilon"), max_steps=params.get("max_steps"))
    verdict = result.verdict(confidence=_confidence_of(ctx), label=ctx.subject)
    return _with_matrix(verdict, result.matrix) if result.matrix is not None else verdict


def _priority(value: Any) -> str | None:
    weights = list(value.values())
    if any(not isinstance(w, (int, float)) or isinstance(w, bool) for w in weights):
        return "must map axes to numbers (weights)"
    if any(w < 0 for w in weights):
        return f"weights must be >= 0, got {value}"
    if not any(w > 0 for w in weights):
        return "needs at least one positive weight"
    return None


register_check(CheckKind(
    name="entropy_below",
    run=_run_entropy_below,
    params=(Param("axes", AXIS_LIST, required=True, doc="axes to judge, one item each"),
            Param("threshold", NUMBER, required=True, check=_unit_interval,
                  doc="largest allowed severity 1 - H(p)/log|C|"),
            *COMMON_PARAMS),
    doc="OpenBias severity of the subject's attribute distribution is at most threshold",
))

register_check(CheckKind(
    name="w1_below",
    run=_run_w1_below,
    params=(Param("axes", AXIS_LIST, required=True, doc="axes to judge, one item each"),
            Param("threshold", NUMBER, required=True, check=_unit_interval,
                  doc="largest allowed normalised W1 to the axis' ideal"),
            *COMMON_PARAMS),
    doc="normalised Wasserstein-1 distance to the axis' ideal distribution is at most threshold",
))

register_check(CheckKind(
    name="is_nonnegative",
    run=_run_is_nonnegative,
    axes_param="mitigate",
    params=(Param("mitigate", AXIS_LIST, required=True, doc="axes whose mitigation is simulated"),
            Param("on", AXIS_LIST, doc="affected axes (default: all others)"),
            Param("tolerance", NUMBER, default=0.0, check=_unit_interval,
                  doc="IS may go this far below zero"),
            *COMMON_PARAMS),
    doc="BiasConnect: mitigating an axis does not push another away from its ideal",
))

register_check(CheckKind(
    name="no_regression",
    run=_run_no_regression,
    axes_param="fixes",
    params=(Param("fixes", AXIS_LIST, required=True,
                  doc="axes the candidate (fine-tune) is meant to fix, one item each"),
            Param("on", AXIS_LIST, doc="axes that must not get worse (default: all others)"),
            Param("tolerance", NUMBER, default=0.0, check=_unit_interval,
                  doc="IS_mit may go this far below zero"),
            *COMMON_PARAMS),
    doc="merge gate: the candidate model is no further from the ideal than the baseline on "
        "any axis it was not meant to fix (IS_mit, paired seeds)",
))

register_check(CheckKind(
    name="intermit",
    run=_run_intermit,
    axes_param=None,
    params=(Param("priority", (dict,), doc="axis -> weight over the axes to mitigate "
                                           "(B*, normalised; default: every axis equally)",
                  check=_priority),
            Param("epsilon", NUMBER, default=0.35, check=_unit_interval,
                  doc="stop when tau = <wbar(B*), p> is at most this"),
            Param("max_steps", (int,), check=_at_least_one,
                  doc="most axes to mitigate (default: as many as there are axes)"),
            *COMMON_PARAMS),
    doc="InterMit (BiasConnect Algorithm 1): prompt modification reaches tau <= epsilon "
        "without making a prioritised axis worse",
))
