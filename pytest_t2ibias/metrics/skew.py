"""Skew@K and MaxSkew@K (SocialCounterfactuals, Howard et al. 2024, Sec. 4; Geyik et al. 2019).

Skew_a@K = ln(p_topK(a) / p_target(a)): how over- (> 0) or under-represented (< 0) attribute
value a is among the top K items. The public code sets Skew to 0 when a value never appears,
hiding the worst case. Here only a value that never appeared is smoothed: it is counted as
``smoothing`` items (so the figure stays finite and comparable) and flagged ``unbounded``, its
true skew being -inf. Values that appeared keep their raw share, so a top K that matches the
target exactly scores 0 (additive smoothing of every count would move a 70/30 match to 0.059).
MaxSkew is the max over the values that appeared: a value never drawn is under-represented
(-inf), and its smoothed stand-in, which can be positive under a non-uniform target (0.5 of 4
images against a 5% target reads ln 2.5 = 0.916), never names the most over-represented value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_t2ibias._types import Estimate
from pytest_t2ibias.metrics.intervals import bootstrap_estimate


@dataclass(frozen=True)
class SkewValue:
    """Skew of one attribute value; ``unbounded`` when it never appeared in the top K."""

    attribute: str
    value: float
    count: int
    unbounded: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "attribute": self.attribute,
            "value": self.value,
            "count": self.count,
            "unbounded": self.unbounded,
        }


def skew_at_k(
    topk_counts: Mapping[str, int],
    target_shares: Mapping[str, float],
    smoothing: float = 0.5,
) -> dict[str, SkewValue]:
    """Skew_a@K = ln(p_topK(a) / p_target(a)) for every value a of ``target_shares``.

    p_topK(a) = count_a / K, K = sum of counts. A zero count is replaced by ``smoothing``
    (0 keeps -inf) and flagged ``unbounded``; non-zero counts are never changed.
    """
    unknown = sorted(set(topk_counts) - set(target_shares))
    if unknown:
        raise ValueError(f"counts for {unknown}, which have no target share")
    for attribute, share in target_shares.items():
        if not share > 0:
            raise ValueError(f"target share of {attribute!r} is {share}: skew needs it > 0")
    k = sum(int(topk_counts.get(a, 0)) for a in target_shares)
    skews = {}
    for attribute, target in target_shares.items():
        count = int(topk_counts.get(attribute, 0))
        effective = count if count > 0 else smoothing
        if k > 0 and effective > 0:
            value = math.log(effective / k / target)
        else:
            value = -math.inf  # unsmoothed zero count (or an empty top K): the honest answer
        skews[attribute] = SkewValue(attribute, value, count, unbounded=count == 0)
    return skews


def max_skew_at_k(
    topk_counts: Mapping[str, int],
    target_shares: Mapping[str, float],
    smoothing: float = 0.5,
) -> SkewValue:
    """MaxSkew@K: the most over-represented value's skew, among the values that appeared (a
    value never drawn has skew -inf, whatever its smoothed figure); an empty top K: -inf."""
    skews = skew_at_k(topk_counts, target_shares, smoothing)
    return most_over_represented(skews)


def most_over_represented(skews: Mapping[str, SkewValue]) -> SkewValue:
    """The value with the largest skew, never one that was not drawn (its true skew is -inf)
    unless none was: then the first value, at -inf."""
    seen = [skew for skew in skews.values() if not skew.unbounded]
    if not seen:
        first = next(iter(skews.values()))
        return SkewValue(first.attribute, -math.inf, first.count, unbounded=True)
    return max(seen, key=lambda skew: skew.value)


def mean_max_skew_at_k(
    topk_counts_by_subject: Sequence[Mapping[str, int]],
    target_shares: Mapping[str, float],
    smoothing: float = 0.5,
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Estimate:
    """MaxSkew@K averaged over subjects (e.g. occupations), bootstrapped over subjects."""
    per_subject = np.array(
        [max_skew_at_k(counts, target_shares, smoothing).value for counts in topk_counts_by_subject]
    )
    return bootstrap_estimate(
        lambda groups: float(np.mean(groups[0])) if len(groups[0]) else float("nan"),
        [per_subject],
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
    )
