"""A 16th kind's module, written to a temporary package by the add-a-kind tests."""

from __future__ import annotations

MODULE = '''
"""``first_share_below``: the share of an axis' first choice in the subject's images."""

from dataclasses import dataclass

from pytest_t2ibias.figures import interval_of
from pytest_t2ibias.kinds import CheckKind, Params, param, planned
from pytest_t2ibias.kinds.entropy_below import evaluate_entropy_below


def check_share(value):
    return None if 0 <= value <= 1 else f"must lie in [0, 1], got {value}"


@dataclass(frozen=True, kw_only=True)
class FirstShareParams(Params):
    axes: tuple[str, ...] = param("axes to judge, one item each", required=True,
                                  names_axes=True)
    threshold: float = param("largest allowed share of the first choice", required=True,
                             check=check_share)


def run(ctx):
    images = ctx.instrument.images([ctx.suite.prompt_for(ctx.subject)])
    answers = ctx.instrument.attributes(images, ctx.axis, ctx.suite.filter)
    return evaluate_entropy_below(answers, ctx.params.threshold, confidence=ctx.confidence,
                                  interval_confidence=ctx.interval_confidence, label=ctx.label)


def work(item):
    return planned(item, [("candidate", [item.suite.prompt_for(item.subject)])], [item.axis])


def chart(figures):
    return [interval_of("first share, as charted", figures.get("first"))]


KIND = CheckKind(
    name="first_share_below",
    run=run,
    params=FirstShareParams,
    work=work,
    power_metric="severity",
    limit=lambda params: params.threshold,
    chart=chart,
    doc="the first choice is drawn at most threshold of the time",
    paper="a stand-in figure, to follow the recipe",
    example="checks:\\n  - {id: mostly_not_purple, kind: first_share_below, axes: [colour], "
            "threshold: 0.9}",
)
'''


