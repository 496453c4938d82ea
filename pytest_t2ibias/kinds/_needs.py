"""What the kinds that read the subject's own prompt ask for up front (prefetch, planning)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..suite_spec import AxisSpec, Suite
    from ._base import PlannedItem
    from ._work import Work


def subject_work(item: PlannedItem) -> Work:
    """The candidate model's images of the suite's prompt for the subject, the item's axis
    read off each, and the images that calibrate its judge on that axis."""
    from ._judge import calibration_needs
    from ._work import planned

    axes = [] if item.axis is None else [item.axis]
    return planned(item, [("candidate", [item.suite.prompt_for(item.subject)])], axes,
                   calibration=calibration_needs(item, axes))


def affected(on: Sequence[str] | None, suite: Suite, axis: AxisSpec) -> list[str]:
    """The axes a check's ``on:`` names, by default every axis but ``axis`` (the mitigated or
    fixed one)."""
    return list(on or [a for a in suite.axes if a != axis.name])


def axis_and_affected(item: PlannedItem, on: Sequence[str] | None) -> list[AxisSpec]:
    """The item's axis and the axes it reads the effect on (``affected``)."""
    if item.axis is None:
        return []
    names = [item.axis.name, *affected(on, item.suite, item.axis)]
    return [item.suite.axes[y] for y in dict.fromkeys(names)]


def questions_of(suite: Suite, axes: Iterable[str]) -> tuple[str, ...]:
    """What is asked of each image that reads ``axes``: one answer an axis, and the suite's
    filter (the session plan's count of answers keys them the same way)."""
    return (*axes, *(("<filter>",) if suite.filter is not None else ()))
