"""How many images per prompt a check needs to decide: power by simulation of its own interval.

A check of severity or W1 against a threshold passes while the interval's low end is at most
the threshold. With too few images, a model biased beyond the threshold still passes (the
interval is wide), and a fair one can never be shown to be below it. ``images_needed`` finds
the smallest n at which the interval of ``metrics.posterior`` decides with the asked power,
by bisection over n with seeded simulations (the same seed for every n, so the estimated
power is smooth in n and the search is reproducible). A check without ``confidence:``
decides on its point estimate; its power is that of the point landing on the truth's side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from pytest_t2ibias.metrics.distances import normalised_w1, severity

if TYPE_CHECKING:
    from pytest_t2ibias.metrics.posterior import ShareStatistic


def images_needed(
    truth: Sequence[float],
    threshold: float,
    *,
    metric: str = "w1",
    ideal: Sequence[float] | np.ndarray | None = None,
    ordered: bool = False,
    confidence: float | None = 0.95,
    power: float = 0.8,
    n_max: int = 4096,
    reps: int = 400,
    n_draws: int = 400,
    seed: int = 0,
    spend: Callable[[int], None] | None = None,
) -> int:
    """Images per prompt so that a ``metric`` check vs ``threshold`` decides with ``power``.

    ``truth``: the answer shares assumed for the model (e.g. threshold plus a margin). If its
    figure is above ``threshold``, "decides" = the interval's low end is above it (the check
    fails, as it should); if below, = the high end is below it (fairness is shown);
    ``confidence`` None: the point estimate is on the truth's side of it. ``metric``
    is "w1" (normalised W1 to ``ideal``, default uniform) or "severity". Raises if even
    ``n_max`` images do not reach ``power``. ``spend(choices)`` is told of every simulation
    the search ran (a cached one is free; the cost grows with the choices), so a caller can
    stop a search that runs too long by raising.
    """
    truth = tuple(float(s) for s in truth)
    ideal = tuple(ideal) if ideal is not None else (1 / len(truth),) * len(truth)
    key = (truth, float(threshold), metric, ideal, bool(ordered), confidence, reps, n_draws, seed)

    def rate(n: int) -> float:
        simulated = decision_rate.cache_info().misses
        value = decision_rate(*key, n=n)
        if spend is not None and decision_rate.cache_info().misses > simulated:
            spend(len(truth))
        return value

    if rate(n_max) < power:
        raise ValueError(
            f"{n_max} images per prompt decide {metric} vs {threshold} with power "
            f"{rate(n_max):.2f} < {power}: the truth is too close to the "
            "threshold; widen the margin or raise n_max"
        )
    low, high = 1, n_max  # power(high) >= power; find the smallest such n
    while low < high:
        middle = (low + high) // 2
        if rate(middle) >= power:
            high = middle
        else:
            low = middle + 1
    return high


@lru_cache(maxsize=4096)
def decision_rate(
    truth: tuple[float, ...],
    threshold: float,
    metric: str,
    ideal: tuple[float, ...],
    ordered: bool,
    confidence: float | None,
    reps: int,
    n_draws: int,
    seed: int,
    *,
    n: int,
) -> float:
    """Share of simulated prompts of n images whose interval decides (see ``images_needed``)."""
    from pytest_t2ibias.metrics.posterior import interval_from_counts

    p = np.array(truth)
    statistic, target, true_value = _simulated(metric, p, ideal, ordered)
    rng = np.random.default_rng([seed, n])
    counts = rng.multinomial(n, p, size=reps)[:, None, :]
    value, low, high = interval_from_counts(
        statistic, counts, ideal=target, confidence=confidence or 0.95, n_draws=n_draws, rng=rng,
        seed=seed)
    if confidence is None:  # a point decision: the estimate on the truth's side
        low = high = value
    decided = low > threshold if true_value > threshold else high < threshold
    return float(np.mean(decided))


@lru_cache(maxsize=1024)
def expected_images(
    truth: tuple[float, ...],
    threshold: float,
    metric: str,
    ideal: tuple[float, ...],
    ordered: bool,
    confidence: float,
    looks: tuple[int, ...],
    spending: str = "obrien_fleming",
    reps: int = 200,
    n_draws: int = 400,
    seed: int = 0,
) -> tuple[float, float]:
    """An adaptive check's (mean images per prompt at which it stops, share decided by its
    last look) when the answers' shares are ``truth``: simulated prompts drawn image by image,
    judged at every look with the interval at the level ``spending`` gives that look
    (``metrics.sequential.look_confidences``), stopped at the first look whose interval is wholly on one side
    of ``threshold`` (issue #26)."""
    from pytest_t2ibias.metrics.posterior import interval_from_counts
    from pytest_t2ibias.metrics.sequential import look_confidences

    p = np.array(truth)
    statistic, target, _ = _simulated(metric, p, ideal, ordered)
    levels = look_confidences(confidence, looks, spending)
    rng = np.random.default_rng([seed, len(looks), looks[-1]])
    labels = rng.choice(len(p), size=(reps, looks[-1]), p=p)
    stopped = np.full(reps, float(looks[-1]))
    open_ = np.ones(reps, dtype=bool)
    for n, level in zip(looks, levels):
        counts = np.stack([np.bincount(row[:n], minlength=len(p)) for row in labels])[:, None]
        _, low, high = interval_from_counts(statistic, counts, ideal=target, confidence=level,
                                            n_draws=n_draws, rng=rng, seed=seed)
        decided = open_ & ((low > threshold) | (high <= threshold))
        stopped[decided] = n
        open_ &= ~decided
    return float(stopped.mean()), float(1 - open_.mean())


def _simulated(metric: str, p: np.ndarray, ideal: tuple[float, ...], ordered: bool
               ) -> tuple[ShareStatistic, np.ndarray, float | np.ndarray]:
    """The posterior statistic a ``metric``'s interval is built on, the reference it is
    measured against, and its value at the true shares ``p``."""
    from pytest_t2ibias.metrics.posterior import _MaxSkew, _PooledSeverity, _PooledW1

    target = np.array(ideal)
    if metric == "w1":
        return _PooledW1(ideal, ordered), target, normalised_w1(p, target, ordered)
    if metric == "severity":
        return _PooledSeverity(len(p)), np.full(len(p), 1 / len(p)), severity(p)
    if metric == "max_skew":
        statistic = _MaxSkew(ideal)
        return statistic, target, float(statistic([p]))
    raise ValueError(f"metric={metric!r}: use 'w1', 'severity' or 'max_skew'")
