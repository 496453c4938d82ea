"""The run's loud line when no check gated on an interval (issue #43): every verdict then
compares a point value with its limit, which at a few images a prompt passes a figure whose
interval reaches far past the limit (severity 0.461 [0.000, 0.911] passed at 0.5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class ReportRow(Protocol):
    """What this module reads of a ``rows.ReportRow`` (``rows`` imports this module)."""

    @property
    def status(self) -> str: ...

    @property
    def gate_confidence(self) -> float | None: ...


def ungated_warning(rows: Sequence[ReportRow]) -> str | None:
    """The warning for a run whose judged rows all decided on a point value; None when at
    least one gated on an interval, or nothing was judged."""
    judged = [row for row in rows if row.status != "error"]
    if not judged or any(row.gate_confidence is not None for row in judged):
        return None
    return (f"warning: no check gated on an interval: all {len(judged)} verdicts compare a "
            "point value with its limit, whatever its interval; set confidence: on the suite "
            "(or on each check) to gate on intervals")


def run_warnings(rows: Sequence[ReportRow]) -> list[str]:
    """Every warning about the run as a whole (the terminal summary and the JSON's
    ``warnings``)."""
    return [warning for warning in (ungated_warning(rows),) if warning]
