"""Does the judge err the same way on every kind of person? Its confusion on one axis per
intersectional group of the others (SocialCounterfactuals, Howard et al. 2024: the VLM's
intersectional bias), and the test the judge correction's assumption needs.

The correction of ``metrics.judge`` assumes one confusion M for every image. A judge that
reads dark-skinned women as men more often than light-skinned ones has an M per group, and a
pooled M over-corrects one group and under-corrects the other. Here, on images whose value
of ``axis`` is known (counterfactual sets, a labelled folder):

- ``group_counts``: the confusion counts on ``axis`` per group (the values of the other axes
  the image carries, "black" or "black, old");
- ``error_gaps``: for each true value a of ``axis`` and each pair of groups, the difference
  of their error rates on a (the share of a-images judged anything else) with Newcombe's
  interval, at a confidence Bonferroni-adjusted over the pairs tested, so "some pair differs"
  holds at the stated level;
- ``depends_on_group``: FAIL when some pair's gap is shown above ``tolerance`` (naming the
  groups and the value), PASS when every gap is shown below it, else INCONCLUSIVE.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_t2ibias._types import Estimate
from pytest_t2ibias.metrics.intervals import difference_of_shares

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
"""``verdict``'s outcomes (the metrics import nothing above them)."""

MIN_GROUP_IMAGES = 1
"""A group with fewer answered images of a value is left out of that value's comparisons."""


def group_counts(truth: np.ndarray, judged: np.ndarray, groups: Sequence[str],
                 classes: int) -> dict[str, np.ndarray]:
    """Group -> (classes x classes) counts of (true, judged); unanswered (judged < 0) left out."""
    truth, judged = np.asarray(truth, dtype=int), np.asarray(judged, dtype=int)
    labels = np.asarray(list(groups), dtype=object)
    out: dict[str, np.ndarray] = {}
    for group in dict.fromkeys(groups):
        keep = (labels == group) & (judged >= 0)
        counts = np.zeros((classes, classes), dtype=int)
        np.add.at(counts, (truth[keep], judged[keep]), 1)
        out[group] = counts
    return out


@dataclass(frozen=True)
class ErrorGap:
    """Group ``worse``'s error rate on true value ``value`` minus group ``better``'s."""

    value: str
    worse: str
    better: str
    gap: Estimate
    worse_error: tuple[int, int]
    """(misread, answered) of ``worse`` on ``value``."""
    better_error: tuple[int, int]

    def describe(self) -> str:
        (k1, n1), (k2, n2) = self.worse_error, self.better_error
        return (f"{self.value} misread {k1}/{n1} ({k1 / n1:.0%}) in group {self.worse!r} vs "
                f"{k2}/{n2} ({k2 / n2:.0%}) in {self.better!r}: gap {self.gap}")

    def to_dict(self) -> dict[str, object]:
        return {"value": self.value, "worse": self.worse, "better": self.better,
                "gap": self.gap.to_dict(), "worse_error": list(self.worse_error),
                "better_error": list(self.better_error)}


def error_gaps(counts: Mapping[str, np.ndarray], choices: Sequence[str],
               confidence: float = 0.95) -> list[ErrorGap]:
    """Every pair of groups' error-rate gap on each true value, the larger error first,
    each interval at ``confidence`` Bonferroni-adjusted over all the pairs (module doc)."""
    pairs = []
    for i, value in enumerate(choices):
        rows = {g: (int(c[i].sum() - c[i, i]), int(c[i].sum())) for g, c in counts.items()
                if c[i].sum() >= MIN_GROUP_IMAGES}
        pairs += [(value, a, b, rows[a], rows[b]) for a, b in itertools.combinations(rows, 2)]
    adjusted = 1 - (1 - confidence) / max(len(pairs), 1)
    gaps = []
    for value, a, b, (ka, na), (kb, nb) in pairs:
        if ka / na < kb / nb:
            a, b, (ka, na), (kb, nb) = b, a, (kb, nb), (ka, na)
        gap = difference_of_shares(ka, na, kb, nb, adjusted)
        gaps.append(ErrorGap(value, a, b, Estimate(gap.value, gap.low, gap.high, gap.n,
                                                   confidence, "newcombe, Bonferroni"),
                             (ka, na), (kb, nb)))
    return sorted(gaps, key=lambda g: -g.gap.value)


@dataclass(frozen=True)
class GroupDependence:
    """``depends_on_group``'s answer: the outcome, the gap that decides it and every gap."""

    outcome: str
    deciding: ErrorGap | None
    gaps: tuple[ErrorGap, ...]
    tolerance: float

    @property
    def groups_differ(self) -> bool:
        """Whether the judge may err differently by group: not shown the same (a pooled
        correction is safe only when PASS)."""
        return self.outcome != PASS

    def describe(self) -> str:
        if self.deciding is None:
            return "no two groups have images of one value: the dependence is not measured"
        return self.deciding.describe() + f" (tolerance {self.tolerance:g})"


def depends_on_group(counts: Mapping[str, np.ndarray], choices: Sequence[str], tolerance: float,
                     confidence: float = 0.95) -> GroupDependence:
    """FAIL when some pair's error gap is above ``tolerance`` at ``confidence``, PASS when
    every gap is below it, else INCONCLUSIVE (also when fewer than two groups are measured)."""
    gaps = error_gaps(counts, choices, confidence)
    if not gaps:
        return GroupDependence(INCONCLUSIVE, None, (), tolerance)
    outcomes = [FAIL if g.gap.low > tolerance else PASS if g.gap.high <= tolerance else INCONCLUSIVE
                for g in gaps]
    outcome = FAIL if FAIL in outcomes else INCONCLUSIVE if INCONCLUSIVE in outcomes else PASS
    deciding = gaps[outcomes.index(FAIL)] if outcome == FAIL else max(gaps, key=lambda g: g.gap.high)
    return GroupDependence(outcome, deciding, tuple(gaps), tolerance)
