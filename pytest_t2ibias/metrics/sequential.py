"""Intervals that stay valid when a check looks after every round of images and stops as soon
as it is decided (issue #26).

Looking at a fixed-n 95% interval after each round and stopping once it clears the limit
breaks its coverage: the chance that *some* look excludes the truth grows with the number of
looks. Two constructions keep it at most 1 - confidence (docs/STATISTICS.md, "Adaptive
sampling"):

- **Alpha spent over the looks** (what the check kinds use). The looks are fixed before any
  image is drawn: ``FIRST_LOOK`` images per prompt, then doubling, then the cap
  (``doubling_looks``). Each look computes the kind's own fixed-n interval (W1, severity,
  MaxSkew, IS: ``metrics.posterior``, ``metrics.intersectional``) at level
  1 - (1 - confidence) / (2K) (``per_look_confidence``), K the number of looks. By the union
  (Bonferroni) bound, P(any look excludes the truth) <= K · (1 - confidence) / K if each
  look's interval held its level exactly; the factor 2 (``LOOK_CALIBRATION``) is measured,
  not derived: near the ideal the posterior intervals of W1 and severity hold about 98% to
  99% where 99.3% is asked at 16 to 32 images (their low end a little high, as at 95%:
  docs/STATISTICS.md), and with K alone the worst cell of the grid excluded the truth at
  some look in 6.3% of sequences (severity, 3 classes, 0.45/0.3/0.25), 3.9% with 2K. It maps to
  every figure exactly as the fixed-n intervals do, needs no new statistics per figure, and
  costs a factor of log(cap / 16) in alpha, not a factor of the cap. It is valid for looks
  at those rounds only, which is all a round-based sampler ever makes.
- **A betting confidence sequence for one share** (``betting_share_interval``): the hedged
  capital process of Waudby-Smith & Ramdas (2023, JRSS-B, Sec. 4.3, Eq. 27 with the
  predictable plug-in bets of Eq. 26 and Remark 1), valid at *every* n by Ville's
  inequality. Kept for shares and as the yardstick of the simulation
  (``validation/sequential_coverage.py``); a multinomial figure built from it would need a
  per-class box (Bonferroni over classes) mapped to the figure by optimisation, wider than
  the spent posterior intervals at the n a check stops at.
"""

from __future__ import annotations

import math

import numpy as np

from pytest_t2ibias._types import Estimate

FIRST_LOOK = 16
"""Images per prompt at the first look; each later look doubles it, the last is the cap."""


def doubling_looks(cap: int, first: int = FIRST_LOOK) -> tuple[int, ...]:
    """The images per prompt at which an adaptive check looks: ``first``, doubling while below
    ``cap``, then ``cap`` (one look at ``cap`` when it is at most ``first``)."""
    if cap < 1 or first < 1:
        raise ValueError(f"need cap >= 1 and first >= 1, got cap={cap}, first={first}")
    looks: list[int] = []
    n = first
    while n < cap:
        looks.append(n)
        n *= 2
    looks.append(cap)
    return tuple(looks)


LOOK_CALIBRATION = 2
"""Alpha is spent over this many times the looks: the measured margin the posterior
intervals need at the high per-look levels (module doc; docs/coverage.md's last section)."""


def per_look_confidence(confidence: float, looks: int,
                        calibration: float = LOOK_CALIBRATION) -> float:
    """The level each of ``looks`` pre-set looks computes its interval at so that the chance
    any of them excludes the truth is at most 1 - ``confidence``: Bonferroni over the looks
    (alpha spent evenly), over ``calibration`` times as many (1: the bound alone, for an
    interval that holds its level exactly)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if looks < 1:
        raise ValueError(f"need at least one look, got {looks}")
    return 1 - (1 - confidence) / (calibration * looks)


_GRID = 2001
_BET_CAP = 0.5  # c in Eq. 26: bets at most c/m (c/(1-m)) so capital never reaches 0


def betting_share_interval(outcomes: np.ndarray, confidence: float = 0.95,
                           grid: int = _GRID) -> Estimate:
    """The share of 1s in ``outcomes`` (0/1, in the order drawn) with the hedged-capital
    betting confidence sequence of Waudby-Smith & Ramdas (2023), intersected over time:
    P(the interval after *any* n excludes the true share) <= 1 - ``confidence``.

    For every candidate mean m (a grid on [0, 1]) two gamblers bet on X > m and X < m with
    predictable bets (Eq. 26: sqrt(2 log(2/alpha) / (sigma_hat^2_{i-1} i log(1 + i))),
    capped at c/m and c/(1-m)); m is rejected once half of one capital plus half of the
    other reaches 1/alpha (Ville's inequality). The interval is the hull of the grid points
    never rejected, widened by one grid step so the grid cannot make it anti-conservative.
    """
    x = np.asarray(outcomes, dtype=float).ravel()
    return betting_share_sequence(x, confidence, at=(x.size,), grid=grid)[0]


def betting_share_sequence(outcomes: np.ndarray, confidence: float = 0.95, *,
                           at: tuple[int, ...], grid: int = _GRID) -> list[Estimate]:
    """``betting_share_interval`` after the first n outcomes, for every n in ``at``, in one
    pass over the sequence."""
    x = np.asarray(outcomes, dtype=float).ravel()
    if x.size and not np.all((x == 0) | (x == 1)):
        raise ValueError("outcomes must be 0 or 1")
    if any(not 0 <= n <= x.size for n in at):
        raise ValueError(f"looks {at} must lie in [0, {x.size}]")
    alpha = 1 - confidence
    m = np.linspace(0.0, 1.0, grid)
    spacing = 1 / (grid - 1)
    n = int(x.size)
    if n:
        t = np.arange(1, n + 1)
        mean_hat = (0.5 + np.cumsum(x)) / (t + 1)  # mu_hat_t, includes X_t
        var_hat = (0.25 + np.cumsum((x - mean_hat) ** 2)) / (t + 1)
        var_before = np.concatenate([[0.25], var_hat[:-1]])  # sigma_hat^2_{t-1}: predictable
        bet = np.sqrt(2 * math.log(2 / alpha) / (var_before * t * np.log1p(t)))
        with np.errstate(divide="ignore"):
            up = np.minimum(bet[:, None], _BET_CAP / m[None, :])
            down = np.minimum(bet[:, None], _BET_CAP / (1 - m[None, :]))
        step = x[:, None] - m[None, :]
        log_up = np.cumsum(np.log1p(up * step), axis=0)
        log_down = np.cumsum(np.log1p(-down * step), axis=0)
        capital = np.logaddexp(log_up, log_down) + math.log(0.5)
        rejected = np.maximum.accumulate(capital >= math.log(1 / alpha), axis=0)
    estimates = []
    for look in at:
        if look == 0:
            estimates.append(Estimate(float("nan"), 0.0, 1.0, 0, confidence, "betting CS"))
            continue
        kept = np.flatnonzero(~rejected[look - 1])
        value = float(x[:look].mean())
        if kept.size == 0:  # cannot happen for a valid sequence; say nothing rather than lie
            estimates.append(Estimate(value, 0.0, 1.0, look, confidence, "betting CS"))
            continue
        low = max(0.0, m[kept[0]] - spacing)
        high = min(1.0, m[kept[-1]] + spacing)
        estimates.append(Estimate(value, float(low), float(high), look, confidence,
                                  "betting CS"))
    return estimates
