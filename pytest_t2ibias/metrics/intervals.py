"""Confidence intervals: Wilson for one share, percentile bootstrap over images for the rest.

None of the five papers reports uncertainty; BiasConnect (Sec. 5.4) shows its IS score moves
about 10% when 8 of 48 images are dropped. Every figure this package reports therefore
carries an interval, and gates compare intervals, not point values.

The bootstrap resamples *images*, the unit that was sampled: each group is one prompt's
images (first array axis = image). Groups are resampled independently, except in paired mode
where image i of every group came from the same seed (baseline vs candidate, counterfactual
prompts under shared noise) and one index vector is shared by all groups.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_t2ibias._types import Estimate

_REPLICATES_PER_BATCH = 250  # bounds memory of bootstrap_matrix: batch x images x ...


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Estimate:
    """Share ``successes / n`` with its Wilson score interval.

    Wilson keeps sensible bounds at 0/n and n/n, where the normal interval collapses to a
    point. With ``n == 0`` nothing is known: value NaN, interval [0, 1].
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return Estimate(float("nan"), 0.0, 1.0, 0, confidence, "wilson")
    from scipy.stats import binomtest  # scipy only when an interval is computed

    ci = binomtest(int(successes), int(n)).proportion_ci(
        confidence_level=confidence, method="wilson"
    )
    return Estimate(successes / n, float(ci.low), float(ci.high), int(n), confidence, "wilson")


def jeffreys_interval(successes: int, n: int, confidence: float = 0.95) -> Estimate:
    """Share ``successes / n`` with the Jeffreys interval: Beta(k + 1/2, n - k + 1/2) quantiles.

    The share counterpart of ``metrics.posterior`` (same prior); Brown, Cai & DasGupta (2001)
    recommend it with Wilson. Bounds at 0/n and n/n are 0 and 1 exactly, as they note.
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return Estimate(float("nan"), 0.0, 1.0, 0, confidence, "jeffreys")
    from scipy.stats import beta

    tail = (1 - confidence) / 2
    low = float(beta.ppf(tail, successes + 0.5, n - successes + 0.5)) if successes > 0 else 0.0
    high = float(beta.ppf(1 - tail, successes + 0.5, n - successes + 0.5)) if successes < n else 1.0
    return Estimate(successes / n, low, high, int(n), confidence, "jeffreys")


def difference_of_shares(successes_a: int, n_a: int, successes_b: int, n_b: int,
                         confidence: float = 0.95) -> Estimate:
    """``successes_a/n_a - successes_b/n_b`` with Newcombe's hybrid score interval (1998,
    method 10): the two Wilson intervals combined, so it stays sensible at 0/n and n/n where
    the Wald difference interval collapses."""
    if min(n_a, n_b) <= 0:
        return Estimate(float("nan"), -1.0, 1.0, int(max(n_a, 0) + max(n_b, 0)), confidence,
                        "newcombe")
    a = wilson_interval(successes_a, n_a, confidence)
    b = wilson_interval(successes_b, n_b, confidence)
    difference = a.value - b.value
    low = difference - np.sqrt((a.value - a.low) ** 2 + (b.high - b.value) ** 2)
    high = difference + np.sqrt((a.high - a.value) ** 2 + (b.value - b.low) ** 2)
    return Estimate(float(difference), float(low), float(high), int(n_a + n_b), confidence,
                    "newcombe")


def bootstrap_estimate(
    statistic: Callable[[list[np.ndarray]], float],
    groups: Sequence[np.ndarray],
    *,
    paired: bool = False,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Estimate:
    """``statistic(groups)`` with a percentile bootstrap interval over the groups' images.

    Each replicate resamples every group with replacement (one shared index vector when
    ``paired``) and calls ``statistic`` on the resampled groups. Replicates whose statistic
    is NaN (e.g. a resample with no answered image) are dropped from the interval.
    """
    groups = [np.asarray(g) for g in groups]
    _check_paired(groups, paired)
    rng = np.random.default_rng(seed)
    value = float(statistic(groups))
    replicates = np.empty(n_resamples)
    for r in range(n_resamples):
        replicates[r] = statistic(_resample_once(groups, paired, rng))
    low, high = _percentile_interval(replicates[:, None], confidence)
    n = sum(len(g) for g in groups)
    method = "paired bootstrap" if paired else "bootstrap"
    return Estimate(value, float(low[0]), float(high[0]), n, confidence, method)


@dataclass(frozen=True, eq=False)
class MatrixEstimate:
    """An array of figures with element-wise percentile intervals from a joint bootstrap."""

    value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n: int
    confidence: float
    method: str


def bootstrap_matrix(
    statistic: Callable[[list[np.ndarray]], np.ndarray],
    groups: Sequence[np.ndarray],
    *,
    paired: bool = False,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
) -> MatrixEstimate:
    """Array-valued ``statistic`` bootstrapped jointly: one resample of every group per replicate.

    Batched: ``statistic`` receives each group with a leading replicate axis, shape
    ``(replicates, images, ...)``, and returns ``(replicates, *shape)``. All entries of one
    replicate see the same resampled images, so e.g. the rows of the BiasConnect IS matrix
    stay mutually consistent (and the whole matrix costs a few array operations per batch).
    NaN replicates are dropped entry by entry.
    """
    groups = [np.asarray(g) for g in groups]
    _check_paired(groups, paired)
    rng = np.random.default_rng(seed)
    value = np.asarray(statistic([g[None] for g in groups]))[0]
    batches = [
        np.asarray(statistic(_resample_batch(groups, paired, size, rng)))
        for size in _batch_sizes(n_resamples)
    ]
    replicates = np.concatenate(batches).reshape(n_resamples, -1)
    low, high = _percentile_interval(replicates, confidence)
    n = sum(len(g) for g in groups)
    method = "paired bootstrap" if paired else "bootstrap"
    return MatrixEstimate(
        value, low.reshape(value.shape), high.reshape(value.shape), n, confidence, method
    )


def _check_paired(groups: list[np.ndarray], paired: bool) -> None:
    sizes = {len(g) for g in groups}
    if paired and len(sizes) > 1:
        raise ValueError(
            f"paired resampling needs groups of equal size (image i of each shares a seed), "
            f"got sizes {sorted(sizes)}; pass paired=False for independent samples"
        )


def _resample_once(
    groups: list[np.ndarray], paired: bool, rng: np.random.Generator
) -> list[np.ndarray]:
    if paired:
        n = len(groups[0]) if groups else 0
        index = rng.integers(0, n, n) if n else np.zeros(0, dtype=int)
        return [g[index] for g in groups]
    return [g[rng.integers(0, len(g), len(g))] if len(g) else g for g in groups]


def _resample_batch(
    groups: list[np.ndarray], paired: bool, size: int, rng: np.random.Generator
) -> list[np.ndarray]:
    def draw(n: int) -> np.ndarray:
        return rng.integers(0, n, (size, n)) if n else np.zeros((size, 0), dtype=int)

    if paired:
        index = draw(len(groups[0]) if groups else 0)
        return [g[index] for g in groups]
    return [g[draw(len(g))] for g in groups]


def _batch_sizes(n_resamples: int) -> Iterator[int]:
    full, rest = divmod(n_resamples, _REPLICATES_PER_BATCH)
    yield from [_REPLICATES_PER_BATCH] * full
    if rest:
        yield rest


def _percentile_interval(
    replicates: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``replicates``: the central ``confidence`` interval, NaNs dropped."""
    tail = (1 - confidence) / 2 * 100
    with warnings.catch_warnings():
        # An all-NaN column (statistic never defined) yields NaN bounds; that is the answer.
        warnings.simplefilter("ignore", RuntimeWarning)
        low = np.nanpercentile(replicates, tail, axis=0)
        high = np.nanpercentile(replicates, 100 - tail, axis=0)
    return low, high
