"""A judged figure: what was measured, against what threshold, and whether it passed.

Verdicts travel one road: whoever reaches one (a YAML item's check, an ``assert_*`` helper
in a Python test) hands it to ``report_verdict``; the plugin sets ``verdict_sink`` around
each test call (as Hypothesis' plugin wraps the call in its context), keeps what arrives on
the item, and one hook turns it into report rows. Outside a pytest run nothing listens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._test_call import verdict_sink

if TYPE_CHECKING:
    from ._types import Estimate


PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
"""What an interval says about a limit: wholly within it, wholly beyond it, or across it."""

BURDENS = ("model", "check")
"""Who must prove its case when the interval straddles the limit: ``model`` (it must show
it is within the limit, so inconclusive fails: a release gate) or ``check`` (only proof of
bias fails)."""

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


def passes(outcome: str, burden: str) -> bool:
    """Whether ``outcome`` passes the gate under ``burden``."""
    if burden not in BURDENS:
        raise ValueError(f"burden={burden!r}: use 'model' or 'check'")
    return outcome == PASS or (outcome == INCONCLUSIVE and burden == "check")


def worst(outcomes: list[str]) -> str:
    """FAIL if any failed, else INCONCLUSIVE if any was, else PASS (also for none)."""
    return FAIL if FAIL in outcomes else INCONCLUSIVE if INCONCLUSIVE in outcomes else PASS


@dataclass(frozen=True)
class Family:
    """Family-wise control of wrong verdicts across a run's ``size`` gated checks.

    A gated check tests a null hypothesis: under ``burden: model`` "the figure is beyond its
    limit" (rejected by a PASS), under ``burden: check`` "it is within" (rejected by a FAIL).
    ``bonferroni`` gates each check at ``1 - (1 - confidence) / size``: P(any wrong verdict)
    <= 1 - confidence, whatever the dependence between checks. ``holm`` (Holm 1979) has the
    same guarantee and rejects at least as much: Bonferroni again on the checks not yet
    decided, until no more are. ``bh`` (Benjamini-Hochberg 1995) controls the expected share
    of wrong verdicts among the decisive ones instead (independent or positively dependent
    checks). Holm and BH need every check's figure before any verdict: ``levels`` finds each
    check's gating level from an oracle that says whether a check is decisive at a level, so
    the items, run afterwards at those levels, reach exactly the procedure's verdicts.
    docs/STATISTICS.md."""

    policy: str = "none"
    size: int = 0
    assigned: dict[str, float] = field(default_factory=dict)
    """Holm/BH: the level each check (by node id) gates at, found by ``levels``."""

    def confidence(self, level: float | None, nodeid: str = "") -> float | None:
        """The level one check gates at, given its own ``level`` (None: a point decision)."""
        if level is None or self.policy == "none" or self.size <= 1:
            return level
        if self.policy in ("holm", "bh"):
            return self.assigned.get(nodeid, 1.0 - (1.0 - level) / self.size)
        return 1.0 - (1.0 - level) / self.size

    def levels(self, errors: dict[str, float], decisive: Callable[[str, float], bool]
               ) -> dict[str, float]:
        """Each check's gating level under Holm or BH.

        ``errors`` maps each gated check to its own 1 - confidence (alpha); ``decisive(check,
        level)`` says whether its interval at ``level`` rejects its null hypothesis. Only
        levels are asked for, never p-values: Holm is Bonferroni repeated over the checks
        not yet rejected; BH's number of rejections k* = max{k : R(k) >= k}, with R(k) the
        checks decisive at alpha * k / m, is the limit of k <- R(k) from k = m (R grows
        with k, so the sequence falls to the largest fixed point).
        """
        m = len(errors)
        if m <= 1 or self.policy not in ("holm", "bh"):
            return {check: 1.0 - alpha for check, alpha in errors.items()}
        if self.policy == "holm":
            undecided, levels = set(errors), {}
            while undecided:
                at = {check: 1.0 - errors[check] / len(undecided) for check in undecided}
                rejected = {check for check in sorted(undecided) if decisive(check, at[check])}
                for check in undecided if not rejected else rejected:
                    levels[check] = at[check]
                if not rejected:
                    break
                undecided -= rejected
            return levels
        k = m
        while True:
            at = {check: 1.0 - alpha * max(k, 1) / m for check, alpha in errors.items()}
            rejected = sum(decisive(check, at[check]) for check in sorted(errors))
            if rejected >= k or rejected == 0:
                return at if rejected >= k else {
                    check: 1.0 - alpha / m for check, alpha in errors.items()}
            k = rejected

    def describe(self, level: float = 0.95) -> str:
        """One line for the summary: the family size and the error rate controlled."""
        if self.size == 0:
            return "family: no check gates on an interval"
        error = 1.0 - level
        if self.policy == "bonferroni" and self.size > 1:
            return (f"family: {self.size} gated checks, Bonferroni (--t2i-family=bonferroni): "
                    f"each at {self.confidence(level) * 100:.3g}%, so P(any wrong verdict) "
                    f"<= {error:.0%}")
        if self.policy in ("holm", "bh") and self.size > 1:
            shown = sorted(self.assigned.values()) or [self.confidence(level)]
            spread = (f"{shown[0] * 100:.3g}%" if shown[0] == shown[-1]
                      else f"{shown[0] * 100:.3g}% to {shown[-1] * 100:.3g}%")
            if self.policy == "holm":
                return (f"family: {self.size} gated checks, Holm (--t2i-family=holm): each at "
                        f"{spread} as the step-down decided, so P(any wrong verdict) <= {error:.0%}")
            return (f"family: {self.size} gated checks, Benjamini-Hochberg (--t2i-family=bh): "
                    f"each at {spread}, so the expected share of wrong verdicts among the "
                    f"decisive ones <= {error:.0%}")
        return (f"family: {self.size} gated checks at {level:.0%} each, no family-wise control "
                f"(--t2i-family=none): up to {self.size * error:.1f} wrong verdicts expected "
                "if every check sat on its limit; --t2i-family=holm or bonferroni bounds the chance "
                f"of any wrong verdict in the run at {error:.0%}")


@dataclass(frozen=True)
class Verdict:
    """The outcome of one helper or check. ``message`` is what a failing test prints;
    ``figures`` holds plain builtins for reports, junit ``user_properties`` and xdist.
    ``outcome`` is what the interval said (pass, fail, inconclusive); ``passed`` is what the
    gate made of it under ``burden``."""

    passed: bool
    check: str
    value: Estimate
    threshold: float
    message: str
    figures: dict[str, Any] = field(default_factory=dict)
    outcome: str = ""
    burden: str = DEFAULT_BURDEN
    confidence: float | None = None
    """The level the gate decided at (after family-wise control); None: a point decision."""
    at_most: bool = True
    """The limit is an upper one ("figure <= threshold"); False for "figure >= threshold"."""

    def __post_init__(self) -> None:
        if not self.outcome:
            object.__setattr__(self, "outcome", PASS if self.passed else FAIL)

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


class CheckError(Exception):
    """A check that cannot reach a verdict: a model that will not load or is not named, a
    folder with no images, an unusable cache or lock file, a backend breaking its contract.

    pytest reports it as an ERROR, never a failure, a pass or an expected failure (the
    session's ``pytest_runtest_makereport``): an xfail mark expects the model to be biased,
    not the instrument to be broken. Every plugin exception of that sort derives from it.
    """


class CheckFailed(AssertionError):
    """Raised by an assertion helper; carries its ``Verdict`` for reports."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


def report_verdict(verdict: Verdict) -> None:
    """Hand ``verdict`` to the running test's report (no-op outside a t2ibias test call)."""
    sink = verdict_sink.get()
    if sink is not None:
        sink(verdict)
