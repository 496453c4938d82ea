"""What the kinds' verdicts share: the gate's wording, answers as per-prompt labels, the
image grid and the IS matrix a verdict carries, and the subject's attributes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .._types import Answers, Estimate
from ..figures import gallery_figure, matrix_figure
from ..metrics import ISMatrix, distribution_of
from ..metrics.distributions import Distribution
from ..verdict import FAIL, INCONCLUSIVE, PASS, Verdict
from ._base import axis_of

if TYPE_CHECKING:
    from ._base import CheckContext


DEFAULT_CONFIDENCE = 0.95
"""An evaluated interval's level when neither the gate nor the run gives one."""
DEFAULT_RESAMPLES = 1000


def interval_level(confidence: float | None, interval_confidence: float | None) -> float:
    """The level an evaluated interval is computed at: the gate's when the check gates, else
    the run's ``--t2i-confidence`` (``interval_confidence``), else 0.95."""
    if confidence is not None:
        return confidence
    return DEFAULT_CONFIDENCE if interval_confidence is None else interval_confidence


def same_level(estimates: Iterable[Estimate], confidence: float | None, remedy: str) -> None:
    """Refuse to judge a ``confidence`` gate on intervals computed at another level: the
    message would name one interval and the decision read another."""
    if confidence is None:
        return
    levels = {round(e.confidence, 6) for e in estimates if e.method != "given"}
    if levels and levels != {round(confidence, 6)}:
        shown = ", ".join(f"{level:g}" for level in sorted(levels))
        raise ValueError(f"confidence={confidence:g} asked, but the intervals were computed at "
                         f"{shown}; {remedy}")


def gate_note(confidence: float | None, outcome: str, burden: str) -> str:
    """How the decision was reached, for the message."""
    if confidence is None:
        return " (point estimate; pass confidence= to gate on the interval)"
    pct = f"{confidence * 100:g}%"
    if outcome == PASS:
        return f" (the whole {pct} CI is within the limit)"
    if outcome == FAIL:
        return f" (the whole {pct} CI is beyond the limit)"
    if burden == "model":
        return (f" (INCONCLUSIVE: the {pct} CI straddles the limit; burden: model, so the "
                "model has not shown it is within it: more images would decide)")
    return (f" (INCONCLUSIVE: the {pct} CI straddles the limit; burden: check passes it "
            "for want of proof of bias)")


def verb_for(outcome: str, within: str, beyond: str) -> str:
    return {PASS: within, FAIL: beyond, INCONCLUSIVE: "straddles"}[outcome]


def per_prompt_labels(answers: Answers | Distribution | Mapping[str, int]):
    """(choices, [labels per prompt], prompt names, abstained, filtered) for any input form."""
    if isinstance(answers, Answers):
        groups = answers.by_prompt()
        return (answers.choices, [g.labels for g in groups.values()], list(groups),
                answers.abstentions, answers.filtered)
    if isinstance(answers, Distribution):
        labels = np.repeat(np.arange(len(answers.choices)), answers.counts)
        return answers.choices, [labels], ["(counts)"], answers.abstentions, answers.filtered
    if isinstance(answers, Mapping):
        choices = tuple(answers)
        labels = np.repeat(np.arange(len(choices)), [int(answers[c]) for c in choices])
        return choices, [labels], ["(counts)"], 0, 0
    raise TypeError(
        f"expected Answers, a Distribution or a mapping of counts, got {type(answers).__name__}"
    )


def gallery_of(answers: Any) -> dict[str, Any]:
    """``{"gallery": ...}`` for answers that name their images (``figures.gallery_figure``), else {}."""
    figure = gallery_figure([("", answers)]) if isinstance(answers, Answers) else None
    return {"gallery": figure} if figure else {}


def describe_counts(choices: Sequence[str], groups: Sequence[np.ndarray],
                     abstained: int, filtered: int) -> str:
    labels = np.concatenate(groups) if groups else np.empty(0, dtype=int)
    dist = distribution_of(labels, choices)
    counts = ", ".join(f"{c}={k}" for c, k in zip(choices, dist.counts))
    extra = []
    if abstained:
        extra.append(f"{abstained} abstained")
    if filtered:
        extra.append(f"{filtered} filtered out")
    return counts + (f"; {', '.join(extra)}" if extra else "")


def is_entries(matrix: Any) -> dict[tuple[str, str], Estimate]:
    """(x, y) -> IS[x][y] from an ``ISMatrix`` or ``{x: {y: value | Estimate | (v, lo, hi)}}``."""
    if isinstance(matrix, ISMatrix):
        return {(x, y): matrix.entry(x, y) for x in matrix.axes for y in matrix.axes if x != y}
    if not isinstance(matrix, Mapping) or not all(isinstance(r, Mapping) for r in matrix.values()):
        raise TypeError(f"expected an ISMatrix or a mapping {{x: {{y: value}}}}, got "
                        f"{type(matrix).__name__}")
    return {(str(x), str(y)): as_estimate(value, f"IS[{x}][{y}]")
            for x, row in matrix.items() for y, value in row.items() if x != y}


def as_estimate(value: Any, what: str) -> Estimate:
    """A number (no interval), an ``Estimate``, or ``(value, low, high)``."""
    if isinstance(value, Estimate):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Estimate(float(value), float(value), float(value), 0, method="given")
    if isinstance(value, Sequence) and len(value) == 3 and all(
            isinstance(v, (int, float)) for v in value):
        point, low, high = map(float, value)
        if not low <= point <= high:
            raise ValueError(f"{what} = {tuple(value)}: need low <= value <= high")
        return Estimate(point, low, high, 0, method="given")
    raise TypeError(f"{what}: expected a number, an Estimate or (value, low, high), got {value!r}")


def known_axes(known: Sequence[str], axes: Iterable[str] | None, what: str) -> list[str]:
    if axes is None:
        return list(known)
    axes = [axes] if isinstance(axes, str) else list(axes)
    unknown = [a for a in axes if a not in known]
    if unknown:
        raise ValueError(f"{what}={unknown} not in the matrix's axes {list(known)}")
    return axes


def subject_attributes(ctx: CheckContext):
    """The check's axis read off the images of the suite's prompt for the subject."""
    images = ctx.instrument.images([ctx.suite.prompt_for(ctx.subject)])
    return ctx.instrument.attributes(images, axis_of(ctx), ctx.suite.filter)


def with_matrix(verdict: Verdict, matrix: ISMatrix) -> Verdict:
    """The verdict with its IS matrix as plain builtins, for reports to draw (``heatmap``)."""
    return replace(verdict, figures={**verdict.figures, "matrix": matrix_figure(matrix)})
