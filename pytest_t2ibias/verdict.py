"""A judged figure: what was measured, against what threshold, and whether it passed.

Verdicts travel one road: whoever reaches one (a YAML item's check, an ``assert_*`` helper
in a Python test) hands it to ``report_verdict``; the plugin sets ``verdict_sink`` around
each test call (as Hypothesis' plugin wraps the call in its context), keeps what arrives on
the item, and one hook turns it into report rows. Outside a pytest run nothing listens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._settings import BURDENS
from ._test_call import verdict_sink
from ._text import shown

if TYPE_CHECKING:
    from ._types import Estimate


PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
"""What an interval says about a limit: wholly within it, wholly beyond it, or across it."""


DEFAULT_BURDEN = "model"


def decide(estimate: Estimate, limit: float, *, confidence: float | None,
           at_most: bool = True) -> str:
    """PASS, FAIL or INCONCLUSIVE for "figure <= limit" (``at_most``) or "figure >= limit".

    With ``confidence`` the interval decides; without it the point value does (never
    inconclusive, and no statement about sampling noise). A NaN figure (no answered image)
    is INCONCLUSIVE: there were no images to decide with.
    """
    value, low, high = estimate.value, estimate.low, estimate.high
    if value != value:  # NaN
        return INCONCLUSIVE
    if not at_most:  # "figure >= limit" is "-figure <= -limit"
        value, low, high, limit = -value, -high, -low, -limit
    if confidence is None:
        return PASS if value <= limit else FAIL
    if high <= limit:
        return PASS
    if low > limit:
        return FAIL
    return INCONCLUSIVE


def passes(outcome: str, burden: str, readable: bool = True) -> bool:
    """Whether ``outcome`` passes the gate under ``burden``: the one place a status is
    derived (``Verdict.passed``, ``ReportRow.passed`` and ``status`` all read it). An
    interval within the limit passes; an inconclusive one passes under ``burden: check``,
    unless the judge could not read an axis (``readable`` False: it measured nothing)."""
    if burden not in BURDENS:
        raise ValueError(f"burden={burden!r}: use 'model' or 'check'")
    return outcome == PASS or (outcome == INCONCLUSIVE and burden == "check" and readable)


ERROR = "error"
"""A row's outcome when the check could not run: no figure, an error under every burden."""


XFAIL, STRICT_XFAIL = "xfail", "strict"
"""A row's ``xfail``: the test ran under an xfail mark, or a strict one (``xfail_strict``)."""


def status(outcome: str, burden: str, readable: bool = True, xfail: str = "") -> str:
    """pytest's word for a judged figure (passed, failed, xfailed, xpassed, error): what
    ``passes`` makes of it, turned round by an xfail mark (``xfail``: ``XFAIL`` or
    ``STRICT_XFAIL``; a strict mark's pass fails the test, as pytest's XPASS(strict))."""
    if outcome == ERROR:
        return "error"
    passed = passes(outcome, burden, readable)
    if xfail == STRICT_XFAIL and passed:
        return "failed"
    if xfail:
        return "xpassed" if passed else "xfailed"
    return "passed" if passed else "failed"


def worst(outcomes: list[str]) -> str:
    """FAIL if any failed, else INCONCLUSIVE if any was, else PASS (also for none)."""
    return FAIL if FAIL in outcomes else INCONCLUSIVE if INCONCLUSIVE in outcomes else PASS


@dataclass(frozen=True)
class Verdict:
    """The outcome of one helper or check. ``message`` is what a failing test prints;
    ``figures`` holds plain builtins for reports, junit ``user_properties`` and xdist.
    ``outcome`` is what the interval said (pass, fail, inconclusive); ``passed`` is what the
    gate makes of it under ``burden`` (``passes``: derived, never stored)."""

    check: str
    value: Estimate
    threshold: float
    message: str
    outcome: str
    figures: dict[str, Any] = field(default_factory=dict)
    burden: str = DEFAULT_BURDEN
    confidence: float | None = None
    """The level the gate decided at (after family-wise control); None: a point decision."""
    at_most: bool = True
    """The limit is an upper one ("figure <= threshold"); False for "figure >= threshold"."""
    readable: bool = True
    """False when the judge cannot read an axis the figure is about: the outcome is then
    inconclusive and fails the gate under every burden (``passes``)."""

    @property
    def passed(self) -> bool:
        """Whether the gate passes it (``passes`` of its outcome, burden and readability)."""
        return passes(self.outcome, self.burden, self.readable)

    @property
    def margin(self) -> float:
        """How far the figure is inside its limit: positive within, negative beyond."""
        gap = self.threshold - self.value.value
        return gap if self.at_most else -gap

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "passed": self.passed,
            "outcome": self.outcome,
            "burden": self.burden,
            "readable": self.readable,
            "confidence": self.confidence,
            "at_most": self.at_most,
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
        ("outcome", verdict.outcome),
    ]
    properties += [(str(key), value) for key, value in verdict.figures.items()
                   if isinstance(value, (str, int, float, bool))]
    return properties


class CheckFailed(AssertionError):
    """Raised by an assertion helper; carries its ``Verdict`` for reports."""

    def __init__(self, verdict: Verdict) -> None:
        # pytest prints this message as is: user text in it is shown, never obeyed
        super().__init__(shown(verdict.message, keep_newlines=True))
        self.verdict = verdict


def report_verdict(verdict: Verdict) -> None:
    """Hand ``verdict`` to the running test's report (no-op outside a t2ibias test call)."""
    sink = verdict_sink.get()
    if sink is not None:
        sink(verdict)
