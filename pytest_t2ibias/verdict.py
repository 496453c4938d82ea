"""A judged figure: what was measured, against what threshold, and whether it passed."""

from __future__ import annotations

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


class CheckFailed(AssertionError):
    """Raised by an assertion helper; carries its ``Verdict`` for reports."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict
