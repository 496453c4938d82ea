"""Family-wise control: how a run's gated checks share their error rate (``--t2i-family``).

The session counts the gated checks at collection and, for Holm and Benjamini-Hochberg,
finds each check's gating level before any verdict (docs/STATISTICS.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import overload


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

    @overload
    def confidence(self, level: float, nodeid: str = "") -> float: ...

    @overload
    def confidence(self, level: None, nodeid: str = "") -> None: ...

    @overload
    def confidence(self, level: float | None, nodeid: str = "") -> float | None: ...

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
            rejections = sum(decisive(check, at[check]) for check in sorted(errors))
            if rejections >= k or rejections == 0:
                return at if rejections >= k else {
                    check: 1.0 - alpha / m for check, alpha in errors.items()}
            k = rejections

    def decided(self, errors: dict[str, float], decisive: Callable[[str, float], bool]
                ) -> Family:
        """This family with each check's level assigned (``levels``): Holm and BH decide
        every gated check's level before any verdict."""
        return replace(self, assigned=self.levels(errors, decisive))

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
