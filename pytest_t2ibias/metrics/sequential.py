"""Intervals that stay valid when a check looks after every round of images and stops as soon
as it is decided (issue #26).

Looking at a fixed-n 95% interval after each round and stopping once it clears the limit
breaks its coverage: the chance that *some* look excludes the truth grows with the number of
looks. Two constructions keep it at most 1 - confidence (docs/STATISTICS.md, "Adaptive
sampling"):

- **Alpha spent over the looks** (what the check kinds use). The looks are fixed before any
  image is drawn: ``FIRST_LOOK`` images per prompt, then doubling, then the cap
  (``doubling_looks``). Each look computes the kind's own fixed-n interval (W1, severity,
  MaxSkew, IS, ENTIGEN's improvement: ``metrics.posterior``, ``metrics.intersectional``,
  the bootstrap) at its own level (``look_confidences``): a spending function alpha(t) of
  the information fraction t = images so far / the cap (Lan & DeMets 1983, *Discrete
  sequential boundaries for clinical trials*, Biometrika 70(3)) gives look k the increment
  alpha(t_k) - alpha(t_{k-1}), and the look's level is Lan & DeMets' boundary for it: the
  chance of first excluding the truth at look k equals the increment when the looks'
  standardised estimates follow the canonical joint law of a Brownian motion in information
  time (``recursive_levels``; Jennison & Turnbull 2000, Sec. 3.1: what the estimate of a
  smooth figure of the shares does as images accumulate, asymptotically). The looks share
  their images, so this level is below 1 minus the increment: the union bound over the
  increments (``exact=False``, the construction before issue #46) needs no joint law but
  spends less than alpha, most where a late look sits close to the cap (a cap of 750,
  looking at 512, read 97.67% at the cap where the exact boundary reads 97.04%). That the
  posterior intervals follow the law at the n the checks use is measured, not assumed:
  docs/coverage.md's last section, at the default caps. The default is the
  O'Brien-Fleming-type function alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)): early looks
  spend next to nothing and so stop only clear-cut cases, and the cap keeps almost all of
  alpha, its interval close to the fixed-n one (96.8% to 97.0% at the default caps 60, 250
  and 750, with the factor below), so a check that runs to its cap reaches about the
  fixed-n verdict. ``pocock`` (alpha log(1 + (e - 1) t)) and ``bonferroni`` (alpha/K a
  look, the first construction, still the union bound) spread it more evenly: more early
  stops, a wider last interval. Calibration (``LOOK_CALIBRATION``) is measured, not
  derived: the posterior intervals at ~99.3% (even spending) held 98% to 99%, so even
  spending needs alpha/(2K);
  O'Brien-Fleming spends alpha/1.5: at the cap it inherits what the fixed-n intervals
  miss there, up to 6.1% at 95% (docs/coverage.md's last section). A level beyond what the
  interval's draws resolve (1 - 2/(draws + 1)) reads the extreme draws, a little less than
  asked; the simulation runs at the plugin's 1,000 draws, so its figures include that. It
  maps to every figure exactly as the fixed-n intervals do and is valid for looks at those
  rounds only, which is all a round-based sampler ever makes.
- **A betting confidence sequence for one share** (``betting_share_interval``): the hedged
  capital process of Waudby-Smith & Ramdas (2023, JRSS-B, Sec. 4.3, Eq. 27 with the
  predictable plug-in bets of Eq. 26 and Remark 1), valid at *every* n by Ville's
  inequality. Kept for shares and as the yardstick of the simulation
  (``validation/sequential_coverage.py``); a multinomial figure built from it would need a
  per-class box (Bonferroni over classes) mapped to the figure by optimisation, wider than
  the spent posterior intervals at the n a check stops at.
"""

from __future__ import annotations

import functools
import math
from itertools import pairwise

import numpy as np

from pytest_t2ibias._types import Estimate

FIRST_LOOK = 16
"""Images per prompt at the first look; each later look doubles it, the last is the cap."""


LAST_EARLY_LOOK = 0.75
"""No look before the cap beyond this fraction of it: stopping there saves less than a
quarter of the images, and under a spending function it takes a large share of alpha from
the cap's look (a cap of 600 with a look at 512: the cap's interval at 98.4% instead of
95.3%), so a check that runs to its cap would be judged far wider than at fixed n."""


DEFAULT_CAP_MULTIPLE = 1.25
"""``--t2i-adaptive`` without ``--t2i-adaptive-max`` caps a check at 1.25 times its fixed n.
Spending alpha before the cap leaves the cap's interval at about 97% (O'Brien-Fleming,
``LOOK_CALIBRATION``), about (z_0.985 / z_0.975)^2 = 1.22 times the images' width of a fixed
95% one: at 1.25 n the last look is about as wide as fixed n, so a check that runs to its
cap reaches the fixed-n verdict. Measured on the example suites (benchmarks/adaptive.json):
at 1.25x every verdict is the fixed-n one and the run draws 0.902 of the images; at 1x one
fixed-n pass by 0.010 is left inconclusive (adaptive_1x.json). The cap's extra quarter also
places a look at 512 of 750 where 600 had none beyond 256: InterMit's musician stops there."""


def doubling_looks(cap: int, first: int = FIRST_LOOK) -> tuple[int, ...]:
    """The images per prompt at which an adaptive check looks: ``first``, doubling while at
    most ``LAST_EARLY_LOOK`` of ``cap``, then ``cap`` (one look at ``cap`` when ``first`` is
    beyond that)."""
    if cap < 1 or first < 1:
        raise ValueError(f"need cap >= 1 and first >= 1, got cap={cap}, first={first}")
    looks: list[int] = []
    n = first
    while n <= LAST_EARLY_LOOK * cap:
        looks.append(n)
        n *= 2
    looks.append(cap)
    return tuple(looks)


FUTILE_BELOW = 0.01
"""An adaptive check stops at a look before its cap, inconclusive, once its chance to decide at
the cap (``chance_to_decide``) is below this: a truth near the limit would otherwise spend the
whole cap to end inconclusive. Stopping never costs coverage (every look's interval holds
whatever rule stops the rounds); it can cost a verdict the cap would have reached. Measured
on shares (1000 sequences, caps 128/250/600, doubling looks, O'Brien-Fleming): at 1% a truth
on its limit draws 14%/18%/10% fewer images and the share decided 0.1 from the limit drops by
at most 1.7 points; at 5% the early looks' noisy estimates cost up to 13 points (a truth 0.15
inside its limit at a cap of 600 decided 87% of the time instead of 100%). docs/STATISTICS.md,
"Adaptive sampling"; validation/sequential_coverage.py's verdict table applies it."""


def chance_to_decide(value: float, low: float, high: float, threshold: float, *,
                     confidence: float, n: int, cap: int) -> float | None:
    """The chance that a check's interval at the cap excludes ``threshold`` if its figure's
    truth is the current estimate ``value`` (conditional power under the current trend,
    "stochastic curtailment": Lan, Simon & Halperin 1982, *Sequential Analysis* 1(3)).

    ``low``/``high``: the interval from the first ``n`` images per prompt at ``confidence``,
    the level the cap's look computes at. Its half-widths shrink as sqrt(n / cap) by the cap;
    the estimate at the cap, given the first n, moves with standard deviation
    sigma_n sqrt(n (cap - n)) / cap (sigma_n, the look's standard error, read off the
    interval's width). None where it cannot be read (no images left to draw, an interval of
    no width or not around its estimate)."""
    chance = chances_to_decide(np.array([value]), np.array([low]), np.array([high]), threshold,
                               confidence=confidence, n=n, cap=cap)
    return None if chance is None or np.isnan(chance[0]) else float(chance[0])


def chances_to_decide(values: np.ndarray, lows: np.ndarray, highs: np.ndarray,
                      threshold: float, *, confidence: float, n: int,
                      cap: int) -> np.ndarray | None:
    """``chance_to_decide`` for many intervals at once (NaN where it cannot be read; None
    when no images are left to draw)."""
    from scipy.special import ndtr, ndtri

    if not 0 < n < cap or not 0 < confidence < 1:
        return None
    value, low, high = (np.asarray(a, dtype=float) for a in (values, lows, highs))
    z = float(ndtri(1 - (1 - confidence) / 2))
    shrink = math.sqrt(n / cap)
    with np.errstate(all="ignore"):
        moves = (high - low) / (2 * z) * math.sqrt(n * (cap - n)) / cap
        # at the cap: decided below once its high end clears the threshold, above once its
        # low end does
        below = ndtr((threshold - (high - value) * shrink - value) / moves)
        above = ndtr((value - (value - low) * shrink - threshold) / moves)
        chance = np.minimum(1.0, below + above)
    readable = np.isfinite(chance) & (low <= value) & (value <= high) & (high > low)
    return np.where(readable, chance, np.nan)


SPENDING_FUNCTIONS = ("obrien_fleming", "pocock", "bonferroni")
"""The ways alpha is spent over the looks (``spent_alpha``); the first is the default.
``_settings.ADAPTIVE_SPENDING`` repeats them so the options need not import numpy."""
DEFAULT_SPENDING = "obrien_fleming"

LOOK_CALIBRATION = {"obrien_fleming": 1.5, "pocock": 2, "bonferroni": 2}
"""Per spending function, alpha is spent over this many times the budget: the margin the
posterior intervals were measured to need (module doc; docs/coverage.md's last section).
Spent evenly (``bonferroni``) the looks sit at ~99.3% and the intervals held 98% to 99%
there, so the union bound alone left cells at 5.4% to 6.3%: 2. O'Brien-Fleming spends
almost all of alpha at the cap, where the posterior intervals miss what the fixed-n ones
miss (up to 6.1% at 95% and 600 images: severity, three classes near the ideal); with no
factor 11 of the grid's 47 cells excluded the truth at some look in 5.2% to 6.6% of
sequences, with 1.5 none above 4.9% (the cap then at 96.8% for a cap of 600): 1.5. Both
measured under the union bound; with the exact boundaries (issue #46) 1.5 keeps the grid at
the default caps 60/250/750 at most 5.5% (each cell at or below its fixed-n interval's own
miss at the cap), and without it cells reach 6.6% (validation/sequential_overcoverage.py).
Pocock with 2: none above 4.0% under the union bound
(validation/sequential_coverage_pocock.json); with the exact boundaries:
validation/sequential_overcoverage_pocock.txt."""


def spent_alpha(alpha: float, fraction: float, spending: str = DEFAULT_SPENDING) -> float:
    """The alpha spent by information fraction ``fraction`` (images so far / the cap), Lan &
    DeMets (1983): ``obrien_fleming``, alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)), next to
    nothing early and almost all of it at the cap; ``pocock``, alpha log(1 + (e - 1) t),
    spread more evenly. (``bonferroni``, even over the looks, depends on the look's index,
    not its fraction: ``look_confidences``.)"""
    from scipy.stats import norm

    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    t = min(max(float(fraction), 0.0), 1.0)
    if t == 0:
        return 0.0
    if spending == "obrien_fleming":
        return min(alpha, float(2 * norm.sf(norm.isf(alpha / 2) / math.sqrt(t))))
    if spending == "pocock":
        return alpha * math.log1p((math.e - 1) * t)
    raise ValueError(f"unknown spending function {spending!r}; choose from "
                     f"{', '.join(s for s in SPENDING_FUNCTIONS if s != 'bonferroni')}")


def look_confidences(confidence: float, looks: tuple[int, ...],
                     spending: str = DEFAULT_SPENDING,
                     calibration: float | None = None,
                     exact: bool = True) -> tuple[float, ...]:
    """The level each pre-set look (images per prompt, the last the cap) computes its
    interval at so that the chance any of them excludes the truth is at most
    1 - ``confidence``: look k spends alpha(t_k) - alpha(t_{k-1}) of alpha = 1 - confidence
    (``spent_alpha``; ``bonferroni``: alpha/K each). ``exact`` (the default for the spending
    functions): each look's level is Lan & DeMets' (1983) recursive boundary, the chance of
    first excluding the truth at look k equal to its increment under the canonical joint
    law of the looks' estimates (``recursive_levels``); ``exact=False`` (and always for
    ``bonferroni``): each look at 1 minus its increment, the union bound over the looks,
    which ignores that the looks share their images and so spends less than alpha (most
    where a late look sits close to the cap: a cap of 750 with a look at 512 reads 97.67% at
    the cap instead of the exact 97.04%). ``calibration`` spends only alpha/calibration
    (None: the spending function's ``LOOK_CALIBRATION``); a single look is a fixed n, at
    ``confidence``."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if not looks or any(b <= a for a, b in pairwise(looks)) or looks[0] < 1:
        raise ValueError(f"looks must be increasing positive image counts, got {looks}")
    if len(looks) == 1 and spending in LOOK_CALIBRATION:
        return (confidence,)  # one look is a fixed n: nothing to spend, nothing to calibrate
    if calibration is None:
        if spending not in LOOK_CALIBRATION:
            raise ValueError(f"unknown spending function {spending!r}; choose from "
                             f"{', '.join(SPENDING_FUNCTIONS)}")
        calibration = LOOK_CALIBRATION[spending]
    alpha = (1 - confidence) / calibration
    if spending == "bonferroni":
        spent = [alpha * (k + 1) / len(looks) for k in range(len(looks))]
    else:
        spent = [spent_alpha(alpha, n / looks[-1], spending) for n in looks[:-1]] + [alpha]
    increments = tuple(float(a) for a in np.diff([0.0, *spent]))
    if exact and spending != "bonferroni":
        fractions = tuple(n / looks[-1] for n in looks)
        return recursive_levels(increments, fractions)
    return tuple(float(1 - a) for a in increments)


_TINY_INCREMENT = 1e-9
"""A look spending less than this reads its increment's own level: its exact boundary
differs from that by a share of the increment itself, and its boundary lies beyond 6 sd,
where the grid's truncation would be coarser than the answer."""
_BOUNDARY_GRID = 801  # points across a look's continuation region; 401 agrees to 1e-6


@functools.lru_cache(maxsize=256)
def recursive_levels(increments: tuple[float, ...], fractions: tuple[float, ...]
                     ) -> tuple[float, ...]:
    """Two-sided levels 1 - 2 Phi(-c_k) of the group-sequential boundaries c_k such that the
    chance of first crossing at look k is ``increments[k]``: P(|Z_j| < c_j for j < k,
    |Z_k| >= c_k) = increments[k], where Z_k = W(t_k) / sqrt(t_k) for a Brownian motion W
    at the information ``fractions`` t_k (the canonical joint distribution of the looks'
    standardised estimates: Jennison & Turnbull 2000, *Group Sequential Methods with
    Applications to Clinical Trials*, Sec. 3.1 and Ch. 19; Lan & DeMets 1983 compute their
    boundaries so). Solved look by look (Armitage, McPherson & Rowe 1969, JRSS-A 132(2)):
    the density of W(t_k) on the continuation region (-c_k sqrt(t_k), c_k sqrt(t_k)) on a
    grid, the next look's crossing chance by integrating the normal increment's tails over
    it, its boundary by root finding, and its density by convolution. Deterministic (no
    Monte Carlo), so a rerun reads the same levels."""
    from scipy.optimize import brentq
    from scipy.special import ndtr, ndtri

    levels: list[float] = []
    points: np.ndarray | None = None
    mass: np.ndarray | None = None  # density times the trapezoid weights on ``points``
    previous = 0.0
    for increment, t in zip(increments, fractions):
        if points is None or mass is None:
            c = -float(ndtri(increment / 2)) if increment > 0 else math.inf
            level = 1 - increment
            half = min(c, 8.5) * math.sqrt(t)
            points = np.linspace(-half, half, _BOUNDARY_GRID)
            density = np.exp(-points ** 2 / (2 * t)) / math.sqrt(2 * math.pi * t)
        else:
            sigma = math.sqrt(t - previous)
            widest = 8.5 * math.sqrt(t)
            if (increment < _TINY_INCREMENT
                    or _crossing(widest, points, mass, sigma) >= increment):
                c = -float(ndtri(increment / 2)) if increment > 0 else math.inf
                level = 1 - increment
                half = min(c * math.sqrt(t), widest)
            else:
                half = brentq(lambda b, at=points, weight=mass, sd=sigma, spent=increment:
                              _crossing(b, at, weight, sd) - spent, 1e-9, widest, xtol=1e-12)
                level = 1 - 2 * float(ndtr(-half / math.sqrt(t)))
            before = points
            points = np.linspace(-half, half, _BOUNDARY_GRID)
            kernel = np.exp(-(points[:, None] - before[None, :]) ** 2 / (2 * sigma ** 2))
            density = kernel @ mass / (sigma * math.sqrt(2 * math.pi))
        step = points[1] - points[0]
        mass = density * step
        mass[0] /= 2
        mass[-1] /= 2
        levels.append(float(level))
        previous = t
    return tuple(levels)


def _crossing(boundary: float, points: np.ndarray, mass: np.ndarray, sigma: float) -> float:
    """The chance that W, distributed as ``mass`` on ``points`` at one look, lies beyond
    +-``boundary`` at the next, its increment normal with sd ``sigma``."""
    from scipy.special import ndtr

    return float(mass @ (ndtr((-boundary - points) / sigma) + ndtr((points - boundary) / sigma)))


def look_confidence(confidence: float, looks: tuple[int, ...], at: int,
                    spending: str = DEFAULT_SPENDING,
                    calibration: float | None = None) -> float:
    """``look_confidences`` at the look of ``at`` images per prompt (the last look at or
    below it: a check stopped at a look reads that look's level)."""
    index = max((k for k, n in enumerate(looks) if n <= at), default=0)
    return look_confidences(confidence, looks, spending, calibration)[index]


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
