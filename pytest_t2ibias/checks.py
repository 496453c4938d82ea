"""The runs of the built-in check kinds (declared in ``kinds.py``): method, then verdict.

Each run measures through the context's instrument with one method and judges the result
with the matching ``evaluate_*`` helper, so a YAML item and a Python test reach the same
verdict on the same figures.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .assertions import (
    evaluate_entropy_below,
    evaluate_is_nonnegative,
    evaluate_no_bgps_prompt_exceeds,
    evaluate_no_regression,
    evaluate_w1_below,
)
from .methods.biasconnect import intersectional_sensitivity_for
from .methods.gate import mitigation_effect_for
from .methods.intermit import DEFAULT_EPSILON, intermit

if TYPE_CHECKING:
    from .kinds import CheckContext
    from .metrics import ISMatrix
    from .verdict import Verdict


def run_entropy_below(ctx: CheckContext) -> Verdict:
    answers = _subject_attributes(ctx)
    return evaluate_entropy_below(answers, ctx.check.params["threshold"],
                                  confidence=ctx.confidence, burden=ctx.plan.burden,
                                  label=ctx.label, n_resamples=ctx.n_resamples)


def run_w1_below(ctx: CheckContext) -> Verdict:
    answers = _subject_attributes(ctx)
    return evaluate_w1_below(answers, ctx.check.params["threshold"],
                             ideal=ctx.instrument.ideal(ctx.axis, ctx.suite.filter),
                             ordered=ctx.axis.ordered, confidence=ctx.confidence,
                             burden=ctx.plan.burden, label=ctx.label, n_resamples=ctx.n_resamples)


def run_is_nonnegative(ctx: CheckContext) -> Verdict:
    params = ctx.check.params
    on = params.get("on") or [a for a in ctx.suite.axes if a != ctx.axis.name]
    matrix = intersectional_sensitivity_for(
        ctx.instrument, ctx.counterfactual_suite(), ctx.subject, mitigate=[ctx.axis.name],
        axes=list(dict.fromkeys([ctx.axis.name, *on])),
        confidence=ctx.interval_confidence, n_resamples=ctx.n_resamples)
    verdict = evaluate_is_nonnegative(matrix, mitigate=[ctx.axis.name], on=on,
                                      tolerance=params.get("tolerance", 0.0),
                                      confidence=ctx.confidence, burden=ctx.plan.burden,
                                      label=ctx.subject)
    return _with_matrix(verdict, matrix)


def run_no_regression(ctx: CheckContext) -> Verdict:
    params = ctx.check.params
    on = params.get("on") or [a for a in ctx.suite.axes if a != ctx.axis.name]
    effect = mitigation_effect_for(ctx.instrument, ctx.suite, ctx.subject,
                                   axes=list(dict.fromkeys([ctx.axis.name, *on])),
                                   confidence=ctx.interval_confidence,
                                   n_resamples=ctx.n_resamples)
    return evaluate_no_regression(effect, fixes=[ctx.axis.name], on=on,
                                  tolerance=params.get("tolerance", 0.0),
                                  confidence=ctx.confidence, burden=ctx.plan.burden,
                                  label=ctx.label)


def run_intermit(ctx: CheckContext) -> Verdict:
    params = ctx.check.params
    epsilon = params.get("epsilon")
    result = intermit(ctx.instrument, ctx.counterfactual_suite(), ctx.subject,
                      priority=params.get("priority"),
                      epsilon=DEFAULT_EPSILON if epsilon is None else epsilon,
                      max_steps=params.get("max_steps"),
                      confidence=ctx.interval_confidence, n_resamples=ctx.n_resamples)
    verdict = result.verdict(confidence=ctx.confidence, burden=ctx.plan.burden,
                             label=ctx.subject)
    return _with_matrix(verdict, result.matrix) if result.matrix is not None else verdict


def run_no_bgps_prompt_exceeds(ctx: CheckContext) -> Verdict:
    """Search (or read the suite's BGPS lock), measure every found prompt, judge the worst."""
    from .locks.bgps import gate_from_params

    gate = gate_from_params(ctx.check.id, ctx.suite, ctx.check.params)
    result = ctx.bgps_locks.run(ctx.instrument, ctx.suite, gate,
                                confidence=ctx.interval_confidence, progress=ctx.progress)
    return evaluate_no_bgps_prompt_exceeds(result, ctx.check.params["threshold"],
                                           confidence=ctx.confidence, burden=ctx.plan.burden,
                                           label=f"{gate.axis.name}={gate.target}")


def _subject_attributes(ctx: CheckContext):
    """The check's axis read off the images of the suite's prompt for the subject."""
    images = ctx.instrument.images([ctx.suite.prompt_for(ctx.subject)])
    return ctx.instrument.attributes(images, ctx.axis, ctx.suite.filter)


def _with_matrix(verdict: Verdict, matrix: ISMatrix) -> Verdict:
    """The verdict with its IS matrix as plain builtins, for reports to draw (``heatmap``)."""
    from .figures import matrix_figure

    return replace(verdict, figures={**verdict.figures, "matrix": matrix_figure(matrix)})


# -- OpenBias, SocialCounterfactuals, ENTIGEN (issue #11) ------------------------------------


def run_open_set(ctx: CheckContext) -> Verdict:
    """Proposals from ``<suite>.openbias.lock.json`` (proposed when missing), then measured."""
    from .assertions import evaluate_open_set
    from .locks.openbias import run_openbias

    params = ctx.check.params
    captions = [c.replace("{subject}", ctx.subject) for c in params.get("captions") or ()] \
        or [ctx.suite.prompt_for(ctx.subject)]
    result = run_openbias(ctx.instrument, ctx.suite.path, f"{ctx.check.id}/{ctx.subject}",
                          captions, subject=ctx.subject, only=params.get("biases"),
                          max_biases=params.get("max_biases"),
                          update=ctx.instrument.models.settings.update_locks,
                          confidence=ctx.interval_confidence, n_resamples=ctx.n_resamples)
    return evaluate_open_set(result, params["threshold"], confidence=ctx.confidence,
                             burden=ctx.plan.burden, label=ctx.subject)


def run_max_skew_below(ctx: CheckContext) -> Verdict:
    from .assertions import evaluate_max_skew_below

    answers = _subject_attributes(ctx)
    target = ctx.check.params.get("target")
    if target is None and isinstance(ctx.axis.ideal, dict) and "reference" not in ctx.axis.ideal:
        target = ctx.axis.ideal
    return evaluate_max_skew_below(answers, ctx.check.params["threshold"], target=target,
                                   confidence=ctx.confidence, burden=ctx.plan.burden,
                                   label=ctx.label, n_resamples=ctx.n_resamples)


def run_judge_agrees(ctx: CheckContext) -> Verdict:
    from .assertions import evaluate_judge_agrees
    from .methods.socialcf import audit_judge

    params = ctx.check.params
    folder = (ctx.suite.path.parent / params["folder"]).resolve()
    audits = audit_judge(ctx.instrument, folder, [ctx.suite.axes[a] for a in params["axes"]],
                         k=params.get("k"), confidence=ctx.interval_confidence)
    return evaluate_judge_agrees(audits, params["threshold"], confidence=ctx.confidence,
                                 burden=ctx.plan.burden, label=str(params["folder"]))


def run_intervention_improves(ctx: CheckContext) -> Verdict:
    from .assertions import evaluate_intervention_improves
    from .methods.entigen import entigen

    params = ctx.check.params
    fill = lambda phrases: [p.replace("{subject}", ctx.subject) for p in phrases or ()]  # noqa: E731
    result = entigen(ctx.instrument, ctx.suite.prompt_for(ctx.subject), ctx.axis,
                     fill(params["interventions"]), controls=fill(params.get("controls")),
                     filter=ctx.suite.filter, confidence=ctx.interval_confidence,
                     n_resamples=ctx.n_resamples)
    return evaluate_intervention_improves(result, params.get("min_improvement") or 0.0,
                                          confidence=ctx.confidence, burden=ctx.plan.burden,
                                          label=ctx.label)
