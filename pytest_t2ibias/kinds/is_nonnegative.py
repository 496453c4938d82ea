"""``is_nonnegative``: BiasConnect's Intersectional Sensitivity (Eqs. 2-4).

Mitigating axis x is simulated by pooling the counterfactual prompts of x (one per value, so
x is balanced by construction); IS[x][y] = w̄_init(y) - w̄_x(y) (Eq. 4) is how much closer to
its ideal axis y gets. A negative IS is the paper's warning: balancing x pushes y away from
its ideal. The interval is the profile interval of ``metrics.intersectional`` (its
default): the range of IS[x][y] over a likelihood-ratio ellipsoid of every prompt's shares,
traced by joint Jeffreys-Dirichlet posterior draws, so it still covers where a distance sits
at its ideal (docs/STATISTICS.md); under a judge correction, each axis' shares corrected for
its confusion first. Not a bootstrap over images (``interval="bootstrap"`` is no longer the
default).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..figures import Interval, interval_of
from ..metrics import ISMatrix
from ..verdict import DEFAULT_BURDEN, FAIL, INCONCLUSIVE, PASS, Verdict, decide, worst
from ._base import CheckContext, CheckKind, PlannedItem, axis_of
from ._judge import AxisReadings, calibration_needs, readings_for
from ._needs import affected, axis_and_affected
from ._papers import BIASCONNECT
from ._params import INDEX_COST_DOC, Params, check_unit_interval, param, with_index_cost
from ._rules import no_effect_tolerance
from ._verdicts import gate_note, is_entries, known_axes, same_level, with_matrix
from ._work import Work, planned

if TYPE_CHECKING:
    from ..suite_spec import AxisSpec



@dataclass(frozen=True, kw_only=True)
class IsNonnegativeParams(Params):
    mitigate: tuple[str, ...] = param("axes whose mitigation is simulated", required=True,
                                      names_axes=True)
    on: tuple[str, ...] | None = param("affected axes (default: all others)", names_axes=True)
    tolerance: float = param("IS may go this far below zero", default=0.0,
                             check=check_unit_interval)
    index_cost: bool = param(INDEX_COST_DOC, default=False)


def evaluate_is_nonnegative(
    matrix: ISMatrix | Mapping[str, Mapping[str, Any]],
    *,
    mitigate: Iterable[str] | None = None,
    on: Iterable[str] | None = None,
    tolerance: float = IsNonnegativeParams.default("tolerance"),
    confidence: float | None = None,
    burden: str = DEFAULT_BURDEN,
    label: str = "",
    judges: AxisReadings | None = None,
) -> Verdict:
    """Every IS[x][y] (x in ``mitigate``, y in ``on``, y != x) must be >= -tolerance.
    ``judges``: how each axis y was read (``kinds._judge``): an axis its judge cannot read
    leaves the verdict inconclusive.

    ``matrix`` is an ``ISMatrix`` or plain data ``{x: {y: value}}``, a value being a number,
    an ``Estimate`` or ``(value, low, high)``."""
    entries_by_pair = is_entries(matrix)
    axes = list(dict.fromkeys(a for pair in entries_by_pair for a in pair))
    rows = known_axes(axes, mitigate, "mitigate")
    columns = known_axes(axes, on, "on")
    entries = {(x, y): entries_by_pair[(x, y)] for x in rows for y in columns
               if x != y and (x, y) in entries_by_pair}
    entries = {pair: e for pair, e in entries.items() if not np.isnan(e.value)}
    if not entries:
        raise ValueError(
            f"no IS entries to judge for mitigate={rows} on={columns}: "
            "the mitigated axes need counterfactual prompts"
        )
    same_level(entries.values(), confidence,
                f"compute the matrix at that level (t2ibias.biasconnect(..., confidence={confidence}))")
    outcomes = {pair: decide(e, -tolerance, confidence=confidence, at_most=False)
                for pair, e in entries.items()}
    outcome = worst(list(outcomes.values()))
    judges = judges or AxisReadings({})
    outcome, readable, judge_note = judges.decided(outcome, sorted({y for _, y in entries}))
    offending = sorted((pair for pair, o in outcomes.items() if o == FAIL),
                       key=lambda pair: entries[pair].value)
    undecided = sorted(pair for pair, o in outcomes.items() if o == INCONCLUSIVE)
    worst_pair = min(entries, key=lambda pair: entries[pair].value)
    lowest = entries[worst_pair]
    subject = f" for {label}" if label else ""
    note = gate_note(confidence, outcome, burden) if not judge_note.startswith("\n  INCONCLUSIVE") \
        else " (INCONCLUSIVE: a judge cannot read an axis, below; not a pass under any burden)"
    if outcome == PASS:
        message = (f"IS{subject}: no mitigation pushes another axis away from its ideal beyond "
                   f"tolerance {tolerance:.3f}; lowest IS[{worst_pair[0]}->{worst_pair[1]}] = "
                   f"{lowest}{note}")
    else:
        lines = [f"  IS[{x}->{y}] = {entries[(x, y)]}: mitigating {x} pushes {y} "
                 f"{-entries[(x, y)].value:.3f} further from its ideal" for x, y in offending]
        lines += [f"  IS[{x}->{y}] = {entries[(x, y)]}: undecided at tolerance {tolerance:.3f}"
                  for x, y in undecided]
        head = (f"{len(offending)} of {len(entries)} pairs are below -{tolerance:.3f}"
                if offending else f"{len(undecided)} of {len(entries)} pairs are undecided")
        message = (f"IS{subject}: {head}{note}\n" + "\n".join(lines)
                   + "\n  IS[x->y] = wbar_init(y) - wbar_x(y) (BiasConnect Eq. 4); "
                   "negative: mitigating x skews y")
    message += judge_note
    return Verdict(
        readable=readable,
        outcome=outcome,
        burden=burden,
        confidence=confidence,
        check="is_nonnegative",
        at_most=False,
        value=lowest,
        threshold=-tolerance,
        message=message,
        figures={"pairs": {f"{x}->{y}": e.to_dict() for (x, y), e in entries.items()},
                 "offending": [f"{x}->{y}" for x, y in offending],
                 "undecided": [f"{x}->{y}" for x, y in undecided], "label": label,
                 "about": f"{worst_pair[0]} -> {worst_pair[1]}", **judges.figures()},
    )


def run(ctx: CheckContext[IsNonnegativeParams]) -> Verdict:
    from ..methods.biasconnect import intersectional_sensitivity_for

    on = affected(ctx.params.on, ctx.suite, axis_of(ctx))
    suite = ctx.counterfactual_suite()
    suite = with_index_cost(suite) if ctx.params.index_cost else suite
    judges = readings_for(ctx, list(on), suite)

    def matrix_for(calibration):
        return intersectional_sensitivity_for(
            ctx.instrument, suite, ctx.subject, mitigate=[axis_of(ctx).name],
            axes=list(dict.fromkeys([axis_of(ctx).name, *on])), confidence=ctx.interval_confidence,
            n_resamples=ctx.n_resamples, calibration=calibration)

    matrix = matrix_for(None)
    if calibration := judges.calibration():
        matrix = judges.judged_matrix(matrix, matrix_for(calibration))
    verdict = evaluate_is_nonnegative(matrix, mitigate=[axis_of(ctx).name], on=on,
                                      tolerance=ctx.params.tolerance,
                                      confidence=ctx.confidence, burden=ctx.plan.burden,
                                      label=ctx.subject, judges=judges)
    return with_matrix(verdict, matrix)


def image_needs(item: PlannedItem) -> list[tuple[str, list[str]]]:
    """The subject's prompt and its counterfactual prompts for the mitigated axis."""
    from ..methods.biasconnect import counterfactual_prompts

    if item.axis is None:
        return []
    prompt = item.suite.prompt_for(item.subject)
    by_axis = counterfactual_prompts(item.suite, item.subject, [item.axis.name])
    prompts = [prompt] + [p for by_value in by_axis.values() for p in by_value.values()]
    return [("candidate", list(dict.fromkeys(prompts)))]


def axes_read(item: PlannedItem) -> list[AxisSpec]:
    """The mitigated axis and the axes the effect is read on."""
    return axis_and_affected(item, item.params_as(IsNonnegativeParams).on)


def work(item: PlannedItem) -> Work:
    """Its images (``image_needs``), every axis it reads off each (``axes_read``), and the
    images that calibrate the judge on those axes."""
    axes = axes_read(item)
    return planned(item, image_needs(item), axes, calibration=calibration_needs(item, axes))



def chart(figures: Mapping[str, Any]) -> list[Interval]:
    """Each judged IS[x->y] with its interval."""
    pairs = figures.get("pairs")
    return [interval_of(f"IS[{name}]", e) for name, e in pairs.items()] \
        if isinstance(pairs, Mapping) else []


KIND = CheckKind(
    chart=chart,
    name="is_nonnegative",
    sample="mitigate: [gender], on: [age]",
    run=run,
    adaptive=True,
    axes_param="mitigate",
    params=IsNonnegativeParams,
    paper_protocol={"index_cost": True},  # BiasConnect Eq. 1: W1 over category indices
    work=work,
    never_passes=no_effect_tolerance,
    figure="IS",
    doc="BiasConnect: mitigating an axis does not push another away from its ideal",
    paper=(f"{BIASCONNECT}, Eq. 4: Intersectional Sensitivity IS[x][y] = w̄_init(y) − w̄_x(y), "
           "where w̄_x pools the counterfactual prompts of axis x (simulating x mitigated); a "
           "negative IS means balancing x pushes y away from its ideal. Needs `counterfactuals` "
           "on the mitigated axes."),
    example=("checks:\n"
             "  - {id: gender_spillover, kind: is_nonnegative, mitigate: [gender], on: [age], "
             "tolerance: 0.0,\n"
             "     confidence: 0.95, images_per_prompt: 600, subjects: [musician], marks: [xfail]}"),
    example_source="example_suites/toy_occupations.t2i.yaml",
)
