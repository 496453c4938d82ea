"""A judged figure: what was measured, against what threshold, and whether it passed.

Verdicts travel one road: whoever reaches one (a YAML item's check, an ``assert_*`` helper
in a Python test) hands it to ``report_verdict``; the plugin sets ``verdict_sink`` around
each test call (as Hypothesis' plugin wraps the call in its context), keeps what arrives on
the item, and one hook turns it into report rows. Outside a pytest run nothing listens.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ._types import Estimate


@dataclass(frozen=True)
class Verdict:
    """The outcome of one helper or check. ``message`` is what a failing test prints;
    ``figures`` holds plain builtins for reports, junit ``user_properties`` and xdist."""

    passed: bool
    check: str
    value: Estimate
    threshold: float
    message: str
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def margin(self) -> float:
        return self.threshold - self.value.value

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "passed": self.passed,
            "value": self.value.to_dict(),
            "threshold": self.threshold,
            "margin": self.margin,
            "message": self.message,
            **self.figures,
        }


def verdict_properties(verdict: Verdict) -> list[tuple[str, Any]]:
    """The verdict's figures as plain ``(name, value)`` pairs for junit and xdist."""
    estimate = verdict.value
    properties: list[tuple[str, Any]] = [
        ("value", float(estimate.value)),
        ("ci_low", float(estimate.low)),
        ("ci_high", float(estimate.high)),
        ("n", int(estimate.n)),
        ("threshold", float(verdict.threshold)),
        ("verdict", "pass" if verdict.passed else "fail"),
    ]
    properties += [(str(key), value) for key, value in verdict.figures.items()
                   if isinstance(value, (str, int, float, bool))]
    return properties


class CheckFailed(AssertionError):
    """Raised by an assertion helper; carries its ``Verdict`` for reports."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


verdict_sink: ContextVar[Callable[[Verdict], None] | None] = ContextVar(
    "t2ibias_verdict_sink", default=None)
"""Where the running test's verdicts go; a pytest run nested in a test (pytester) sets its
own for its own items and restores the outer one after."""


def report_verdict(verdict: Verdict) -> None:
    """Hand ``verdict`` to the running test's report (no-op outside a t2ibias test call)."""
    sink = verdict_sink.get()
    if sink is not None:
        sink(verdict)
