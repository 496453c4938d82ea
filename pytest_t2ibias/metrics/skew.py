"""Skew@K and MaxSkew@K (SocialCounterfactuals, Howard et al. 2024, Sec. 4; Geyik et al. 2019).

Skew_a@K = ln(p_topK(a) / p_target(a)): how over- (> 0) or under-represented (< 0) attribute
value a is among the top K items. The public code sets Skew to 0 when a value never appears,
hiding the worst case. Here counts get additive (Laplace) smoothing so the figure stays finite,
and a value whose raw count was 0 is flagged ``unbounded``: its true skew is -inf.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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

    def to_dict(self) -> dict:
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
    """Skew_a@K for every value a of ``target_shares``, with ``smoothing`` added to each count.

    p_topK(a) = (count_a + smoothing) / (K + smoothing * |A|), K = sum of counts.
    """
    unknown = sorted(set(topk_counts) - set(target_shares))
    if unknown:
        raise ValueError(f"counts for {unknown}, which have no target share")
    for attribute, share in target_shares.items():
        if not share > 0:
            raise ValueError(f"target share of {attribute!r} is {share}: skew needs it > 0")
    k = sum(int(topk_counts.get(a, 0)) for a in target_shares)
    denominator = k + smoothing * len(target_shares)
    skews = {}
    for attribute, target in target_shares.items():
        count = int(topk_counts.get(attribute, 0))
        if denominator > 0 and count + smoothing > 0:
            value = math.log((count + smoothing) / denominator / target)
        else:
            value = -math.inf  # unsmoothed zero count: the honest answer
        skews[attribute] = SkewValue(attribute, value, count, unbounded=count == 0)
    return skews


def max_skew_at_k(
    topk_counts: Mapping[str, int],
    target_shares: Mapping[str, float],
    smoothing: float = 0.5,
) -> SkewValue:
    """MaxSkew@K: the most over-represented value's skew."""
    skews = skew_at_k(topk_counts, target_shares, smoothing)
    return max(skews.values(), key=lambda skew: skew.value)


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
