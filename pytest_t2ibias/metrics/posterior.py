"""Intervals for distances and differences of shares from a Dirichlet posterior over the counts.

Why not the percentile bootstrap: a distance is biased upward at finite n, and its bootstrap
interval inherits the bias. On balanced controls (true W1 or severity exactly 0) the 95%
bootstrap interval excluded 0 in 75 of 140 results (issue #9), and when every image is one
class every resample is too, so the interval collapses to a point.

The construction (docs/STATISTICS.md; measured coverage in docs/coverage.md):

1. Each group's answered shares get a Dirichlet posterior under the Jeffreys prior
   (counts + 1/2). Groups are drawn independently and handed to ``statistic`` as they are
   drawn, so pooling (BiasConnect Eq. 3, OpenBias Eq. 5) happens inside it, with equal
   weight. Paired groups (image i of each from one seed) share one Dirichlet over the joint
   cells, so the seed's common noise cancels as in the paired bootstrap.
2. The interval is the central ``confidence`` percentile interval of the statistic's draws.
   A judge-corrected distance (``calibration=`` with ``ideal=``) takes the lower of that low
   end and the bias-corrected percentile one (``bias_corrected_low``): the correction
   amplifies the upward bias of a distance near the ideal.
3. Two points the draws can never reach are added by test inversion, since the data cannot
   reject them: the ideal, when a Monte Carlo test of "every group answers like the ideal"
   at level 1 - confidence does not reject it (so a balanced control includes 0 at the
   nominal rate); and the point mass on choice j, when every answered image is j (so one
   class gives [q, 1], never [1, 1]).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from pytest_t2ibias._types import Estimate
from pytest_t2ibias.metrics.distances import normalised_w1, severity
from pytest_t2ibias.metrics.distributions import check_labels, mean_of_shares
from pytest_t2ibias.metrics.judge import (
    confusion_draws,
    correct_shares,
    corrected_draws,
    corrected_point,
    posterior_mean_confusion,
)

JEFFREYS = 0.5
"""Prior pseudo-count per choice: the Jeffreys prior of a multinomial."""

_NULL_SAMPLES = 4000
_TIE = 1e-9  # statistics computed from equal counts in another order differ in the last bits

ShareStatistic = Callable[[list[np.ndarray]], "float | np.ndarray"]
"""Maps each group's shares, shape (..., n_choices), to the figure, shape (...)."""


def posterior_estimate(
    statistic: ShareStatistic,
    groups: Sequence[np.ndarray],
    n_choices: int,
    *,
    ideal: np.ndarray | None = None,
    paired: bool = False,
    confidence: float = 0.95,
    n_draws: int = 2000,
    seed: int = 0,
    calibration: np.ndarray | None = None,
) -> Estimate:
    """``statistic`` of the groups' shares with a Dirichlet-posterior interval (module doc).

    ``groups`` are label arrays as for ``bootstrap_estimate`` (negative labels = abstained or
    filtered); ``statistic`` takes shares, not labels. Pass ``ideal`` (shares) when the
    statistic is a distance from it, 0 there: the interval then reaches 0 whenever the data
    cannot reject the ideal. ``calibration`` (the judge's confusion counts, true x judged)
    makes every share a corrected one (``metrics.judge``): the value from M̂, the draws from
    M's posterior and the shares' jointly, the ideal's test under the judge's confusion.
    """
    groups = [check_labels(g, n_choices) for g in groups]
    rng = np.random.default_rng(seed)
    if paired and ideal is not None:
        raise ValueError("ideal= tests independent groups; with paired=True leave it out")
    if paired:
        draws = share_draws(groups, n_choices, n_draws, rng, paired=True)
        observed = [observed_shares(g, n_choices) for g in groups]
        if calibration is not None:
            draws = corrected_draws(draws, calibration, rng)
            observed = corrected_point(observed, calibration)
        value = float(statistic(observed))
        bounds = percentile_bounds(np.asarray(statistic(draws), dtype=float), confidence)
        low, high = float(bounds[0]), float(bounds[1])
        only = single_choice(groups)
        if only is not None:
            at_mass = float(statistic([np.eye(n_choices)[only]] * len(groups)))
            low, high = min(low, at_mass), max(high, at_mass)
    else:
        counts = np.stack([np.bincount(g[g >= 0], minlength=n_choices) for g in groups])
        values, lows, highs = interval_from_counts(
            statistic, counts[None], ideal=ideal, confidence=confidence, n_draws=n_draws,
            rng=rng, seed=seed, calibration=None if calibration is None else calibration[None],
        )
        value, low, high = float(values[0]), float(lows[0]), float(highs[0])
    n = sum(int(np.sum(g >= 0)) for g in groups)  # the images judged: what the interval saw
    method = "paired posterior" if paired else "posterior"
    if calibration is not None:
        method += ", judge-corrected"
    return Estimate(value, float(low), float(high), n, confidence, method)


def w1_estimate(
    groups: Sequence[np.ndarray],
    ideal: np.ndarray,
    *,
    ordered: bool = False,
    confidence: float = 0.95,
    n_draws: int = 2000,
    seed: int = 0,
    calibration: np.ndarray | None = None,
) -> Estimate:
    """Normalised W1 of the pooled groups to ``ideal`` (BiasConnect Eqs. 1, 3) with its
    posterior interval; the drop-in for ``bootstrap_estimate`` in a W1 check."""
    ideal = np.asarray(ideal, dtype=float)
    return posterior_estimate(
        _PooledW1(tuple(ideal.tolist()), ordered),
        groups,
        len(ideal),
        ideal=ideal,
        confidence=confidence,
        n_draws=n_draws,
        seed=seed,
        calibration=calibration,
    )


def severity_estimate(
    groups: Sequence[np.ndarray],
    n_choices: int,
    *,
    confidence: float = 0.95,
    n_draws: int = 2000,
    seed: int = 0,
    calibration: np.ndarray | None = None,
) -> Estimate:
    """OpenBias severity (Eq. 6) of the context-free shares (Eq. 5: the groups pooled) with
    its posterior interval; the drop-in for ``bootstrap_estimate`` in a severity check."""
    return posterior_estimate(
        _PooledSeverity(n_choices),
        groups,
        n_choices,
        ideal=np.full(n_choices, 1 / n_choices),
        confidence=confidence,
        n_draws=n_draws,
        seed=seed,
        calibration=calibration,
    )


def mean_severity_estimate(
    groups: Sequence[np.ndarray],
    n_choices: int,
    *,
    confidence: float = 0.95,
    n_draws: int = 2000,
    seed: int = 0,
    calibration: np.ndarray | None = None,
) -> Estimate:
    """OpenBias' context-aware severity as its authors average it: Eq. 6 on each group's own
    shares (Eq. 4, one group a caption), then the mean over the groups (``make_plots.py`` in
    the OpenBias code), with its posterior interval. Unlike ``severity_estimate`` a caption
    drawing only men and one drawing only women average to 1, not 0."""
    return posterior_estimate(
        _MeanSeverity(n_choices),
        groups,
        n_choices,
        ideal=np.full(n_choices, 1 / n_choices),
        confidence=confidence,
        n_draws=n_draws,
        seed=seed,
        calibration=calibration,
    )


def max_skew_estimate(
    labels: np.ndarray,
    target: np.ndarray,
    *,
    confidence: float = 0.95,
    n_draws: int = 2000,
    seed: int = 0,
    calibration: np.ndarray | None = None,
) -> Estimate:
    """SocialCounterfactuals' MaxSkew of one prompt's answers against ``target`` shares,
    max_a ln(p(a) / target(a)), with its posterior interval. Like a distance it is >= 0 and
    0 only at the target, so the target joins the interval whenever the data cannot reject
    it; a value never drawn has skew -inf, which never decides the max."""
    target = np.asarray(target, dtype=float) / np.sum(target)
    return posterior_estimate(_MaxSkew(tuple(target.tolist())), [labels], len(target),
                              ideal=target, confidence=confidence, n_draws=n_draws, seed=seed,
                              calibration=calibration)


class _PooledW1:
    """Hashable statistic (so the null test's cache hits across calls)."""

    def __init__(self, ideal: tuple[float, ...], ordered: bool):
        self.ideal, self.ordered = ideal, ordered

    def __call__(self, shares: list[np.ndarray]) -> float | np.ndarray:
        pooled = mean_of_shares(shares, len(self.ideal))
        return normalised_w1(pooled, np.array(self.ideal), self.ordered)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _PooledW1) and (self.ideal, self.ordered) == (
            other.ideal,
            other.ordered,
        )

    def __hash__(self) -> int:
        return hash((self.ideal, self.ordered))


class _PooledSeverity:
    def __init__(self, n_choices: int):
        self.n_choices = n_choices

    def __call__(self, shares: list[np.ndarray]) -> float | np.ndarray:
        return severity(mean_of_shares(shares, self.n_choices))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _PooledSeverity) and self.n_choices == other.n_choices

    def __hash__(self) -> int:
        return hash(("severity", self.n_choices))


class _MeanSeverity(_PooledSeverity):
    """The mean over groups of each group's severity (a group with nothing answered skipped)."""

    def __call__(self, shares: list[np.ndarray]) -> float | np.ndarray:
        each = np.stack([np.asarray(severity(s), dtype=float) for s in shares])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # every group unanswered: NaN
            return np.nanmean(each, axis=0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _MeanSeverity) and self.n_choices == other.n_choices

    def __hash__(self) -> int:
        return hash(("mean severity", self.n_choices))


class _MaxSkew:
    """max_a ln(p(a) / target(a)); hashable like the others."""

    def __init__(self, target: tuple[float, ...]):
        self.target = target

    def __call__(self, shares: list[np.ndarray]) -> float | np.ndarray:
        (pooled,) = shares
        with np.errstate(divide="ignore"):
            return np.max(np.log(pooled / np.array(self.target)), axis=-1)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _MaxSkew) and self.target == other.target

    def __hash__(self) -> int:
        return hash(("max skew", self.target))


def interval_from_counts(
    statistic: ShareStatistic,
    counts: np.ndarray,
    *,
    ideal: np.ndarray | None = None,
    confidence: float = 0.95,
    n_draws: int = 2000,
    rng: np.random.Generator,
    seed: int = 0,
    calibration: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value, low, high) for a batch of independent data sets, counts (batch, groups, choices).

    The unpaired ``posterior_estimate``, vectorised over data sets for coverage simulations;
    ``calibration`` (batch, choices, choices): each data set's judge confusion counts.
    """
    counts = np.asarray(counts)
    batch, n_groups, n_choices = counts.shape
    answered = counts.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(answered[..., None] > 0, counts / answered[..., None], np.nan)
    draws = dirichlet_draws(counts, n_draws, rng)
    if calibration is not None:
        calibration = np.asarray(calibration)
        shares = correct_shares(shares, posterior_mean_confusion(calibration)[:, None])
        confusion = np.swapaxes(confusion_draws(calibration, n_draws, rng), 0, 1)
        draws = correct_shares(draws, confusion[:, :, None])
    value = np.asarray(statistic([shares[:, i] for i in range(n_groups)]), dtype=float)
    values = np.asarray(statistic([draws[:, :, i] for i in range(n_groups)]), dtype=float)
    low, high = (np.atleast_1d(b).astype(float) for b in percentile_bounds(values, confidence))
    if calibration is not None and ideal is not None:
        low = np.fmin(low, bias_corrected_low(values, value, confidence))
    if ideal is not None:
        ideal = np.asarray(ideal, dtype=float)
        at_ideal = float(statistic([ideal] * n_groups))
        for k in range(batch):
            if calibration is None:
                kept = ideal_not_rejected(statistic, value[k], answered[k], ideal, confidence, seed)
            else:
                kept = corrected_ideal_not_rejected(statistic, value[k], answered[k], ideal,
                                                    calibration[k], confidence, seed)
            if kept:
                low[k], high[k] = min(low[k], at_ideal), max(high[k], at_ideal)
    used = (counts.sum(axis=1) > 0).sum(axis=-1) == 1  # every answer was the same choice
    for k in np.flatnonzero(used).tolist():
        only = int(np.argmax(counts[k].sum(axis=0)))
        at_mass = float(statistic([np.eye(n_choices)[only]] * n_groups))
        low[k], high[k] = min(low[k], at_mass), max(high[k], at_mass)
    return value, low, high


def share_draws(
    groups: Sequence[np.ndarray],
    n_choices: int,
    n_draws: int,
    rng: np.random.Generator,
    *,
    paired: bool = False,
) -> list[np.ndarray]:
    """Posterior draws of each group's answered shares, each of shape (n_draws, n_choices).

    A group without an answered image gives NaN draws (pooling skips it, as it skips the
    group's NaN shares). Paired: one Dirichlet over the joint cells of the groups, where
    "not answered" is one more level; each group's shares are its answered marginal.
    """
    if not paired:
        counts = np.stack([np.bincount(g[g >= 0], minlength=n_choices) for g in groups])
        draws = dirichlet_draws(counts[None], n_draws, rng)[0]  # (draws, groups, choices)
        return [draws[:, i] for i in range(len(groups))]
    if len({len(g) for g in groups}) > 1:
        raise ValueError(
            f"paired groups need equal sizes (image i of each shares a seed), got sizes "
            f"{sorted({len(g) for g in groups})}; pass paired=False for independent samples"
        )
    levels = n_choices + 1
    if levels ** len(groups) > 100_000:
        raise ValueError(f"{len(groups)} paired groups of {n_choices} choices: too many cells")
    cells = np.zeros(len(groups[0]), dtype=int)
    for g in groups:
        cells = cells * levels + np.where(g >= 0, g, n_choices)
    counts = np.bincount(cells, minlength=levels ** len(groups)).astype(float)
    # Each group's marginal gets the Jeffreys 1/2 per choice: the prior spread over the cells.
    prior = JEFFREYS / levels ** (len(groups) - 1)
    gamma = rng.standard_gamma(counts + prior, size=(n_draws, counts.size))
    joint = gamma.reshape((n_draws,) + (levels,) * len(groups))
    marginals = []
    for i, g in enumerate(groups):
        other_axes = tuple(1 + k for k in range(len(groups)) if k != i)
        answered = joint.sum(axis=other_axes)[:, :n_choices]
        total = answered.sum(axis=-1, keepdims=True)
        marginals.append(answered / total if (g >= 0).any() else np.full_like(answered, np.nan))
    return marginals


def dirichlet_draws(counts: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Jeffreys-posterior draws of shares for counts of shape (batch, groups, choices).

    Returns (batch, n_draws, groups, choices); groups with no count are NaN.
    """
    counts = np.asarray(counts, dtype=float)
    batch, n_groups, n_choices = counts.shape
    gamma = rng.standard_gamma(counts[:, None] + JEFFREYS, size=(batch, n_draws, n_groups, n_choices))
    shares = gamma / gamma.sum(axis=-1, keepdims=True)
    empty = counts.sum(axis=-1) == 0
    return np.where(empty[:, None, :, None], np.nan, shares)


def percentile_bounds(values: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Central ``confidence`` interval of the draws along the last axis, NaN draws dropped."""
    tail = (1 - confidence) / 2
    with warnings.catch_warnings():
        # Draws that are all NaN (nothing answered anywhere) give NaN bounds: the answer.
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(values, [tail, 1 - tail], axis=-1)
    return low, high


def bias_corrected_low(values: np.ndarray, value: np.ndarray, confidence: float) -> np.ndarray:
    """The low end of Efron's (1981) bias-corrected percentile interval of draws ``values``
    (batch, draws) around ``value`` (batch): the quantile at Φ(2 z0 + z_tail), z0 = Φ⁻¹ of the
    share of draws below the value (ties half), NaN draws dropped.

    For a judge-corrected distance near the ideal the draws sit above the value (the
    correction amplifies the shares' noise by up to 1/r, and a distance of noisy shares is
    biased up), z0 < 0, and this end is lower than the percentile one; the corrected
    ``interval_from_counts`` takes the lower of the two, so it never raises a low end. Measured:
    three classes near the ideal (0.45/0.3/0.25) at n = 48, where the percentile low end missed
    up to 12% (docs/coverage.md, "The judge's own error")."""
    from scipy.stats import norm  # scipy only when a corrected interval is computed

    values = np.atleast_2d(np.asarray(values, dtype=float))
    value = np.atleast_1d(np.asarray(value, dtype=float))
    kept = ~np.isnan(values)
    size = kept.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        below = ((values < value[:, None]) & kept).sum(axis=-1) + 0.5 * (
            (values == value[:, None]) & kept).sum(axis=-1)
        share = np.clip(below / size, 0.5 / np.maximum(size, 1), 1 - 0.5 / np.maximum(size, 1))
    z0 = norm.ppf(share)
    level = norm.cdf(2 * z0 + norm.ppf((1 - confidence) / 2))
    out = np.full(value.shape, np.nan)
    for k in np.flatnonzero((size > 0) & ~np.isnan(value) & ~np.isnan(level)):
        out[k] = np.quantile(values[k][kept[k]], level[k])
    return out


def ideal_not_rejected(
    statistic: ShareStatistic,
    observed: float,
    answered: Sequence[int],
    ideal: np.ndarray,
    confidence: float,
    seed: int = 0,
) -> bool:
    """Does a level 1 - confidence test keep "every group answers like ``ideal``"?

    The test statistic is ``statistic`` itself, its null distribution simulated with the
    groups' answered counts; it rejects when the observed value is above the null's
    ``confidence`` quantile. Under pooling, groups that differ but average to the ideal make
    the pooled shares vary less than identical groups, so this null is the least favourable.
    """
    if np.isnan(observed):
        return False
    critical = null_critical_value(
        statistic, tuple(int(a) for a in answered), tuple(ideal.tolist()), confidence, seed
    )
    return bool(observed <= critical + _TIE)


def null_critical_value(
    statistic: ShareStatistic,
    answered: tuple[int, ...],
    ideal: tuple[float, ...],
    confidence: float,
    seed: int = 0,
) -> float:
    """The ``confidence`` quantile of ``statistic`` when every group is drawn from ``ideal``."""
    try:
        return _cached_critical_value(statistic, answered, ideal, confidence, seed)
    except TypeError:  # an unhashable statistic: no cache
        return _critical_value(statistic, answered, ideal, confidence, seed)


@lru_cache(maxsize=512)
def _cached_critical_value(statistic, answered, ideal, confidence, seed) -> float:
    return _critical_value(statistic, answered, ideal, confidence, seed)


def _critical_value(statistic, answered, ideal, confidence, seed) -> float:
    rng = np.random.default_rng([seed, 0x1DEA1])
    ideal = np.asarray(ideal)
    shares = []
    for n in answered:
        if n == 0:
            shares.append(np.full((_NULL_SAMPLES, len(ideal)), np.nan))
        else:
            shares.append(rng.multinomial(n, ideal, size=_NULL_SAMPLES) / n)
    null = np.sort(np.asarray(statistic(shares), dtype=float))
    null = null[~np.isnan(null)]
    if not null.size:
        return float("nan")
    return float(null[int(np.ceil(confidence * null.size)) - 1])


def corrected_ideal_not_rejected(
    statistic: ShareStatistic,
    observed: float,
    answered: Sequence[int],
    ideal: np.ndarray,
    calibration: np.ndarray,
    confidence: float,
    seed: int = 0,
) -> bool:
    """``ideal_not_rejected`` when the shares are judge-corrected: under the null every group's
    true shares are ``ideal``, so its judged counts are multinomial on Mᵀ ideal (Eq. 6.1 of
    ``metrics.judge``) and the calibration's counts on M's rows; M itself is drawn from the
    calibration's posterior, and each simulated data set is corrected as the observed one was
    (a parametric bootstrap of the whole estimator)."""
    if np.isnan(observed):
        return False
    key = (tuple(int(a) for a in answered), tuple(ideal.tolist()),
           tuple(map(tuple, np.asarray(calibration, dtype=int).tolist())), confidence, seed)
    try:
        critical = _cached_corrected_critical_value(statistic, *key)
    except TypeError:  # an unhashable statistic: no cache
        critical = _corrected_critical_value(statistic, *key)
    return bool(observed <= critical + _TIE)


@lru_cache(maxsize=512)
def _cached_corrected_critical_value(statistic, answered, ideal, calibration, confidence, seed):
    return _corrected_critical_value(statistic, answered, ideal, calibration, confidence, seed)


def _corrected_critical_value(statistic, answered, ideal, calibration, confidence, seed):
    shares = _corrected_null_shares(answered, ideal, calibration, seed)
    null = np.sort(np.asarray(statistic(list(shares)), dtype=float))
    null = null[~np.isnan(null)]
    if not null.size:
        return float("nan")
    return float(null[int(np.ceil(confidence * null.size)) - 1])


@lru_cache(maxsize=256)
def _corrected_null_shares(answered, ideal, calibration, seed) -> tuple[np.ndarray, ...]:
    """Each group's corrected shares under the null, (_NULL_SAMPLES, C) each: one simulation
    serves every statistic of the same data and calibration (severity and W1 of one axis)."""
    rng = np.random.default_rng([seed, 0x1DEA2])
    ideal = np.asarray(ideal)
    calibration = np.asarray(calibration)
    confusion = confusion_draws(calibration, _NULL_SAMPLES, rng)  # (samples, C, C)
    judged = confusion.transpose(0, 2, 1) @ ideal  # Mᵀ ideal per sample
    rows = calibration.sum(axis=1)
    simulated = np.stack([rng.multinomial(rows[i], confusion[:, i]) for i in range(len(ideal))],
                         axis=1)  # (samples, C, C): a calibration table per sample
    estimate = posterior_mean_confusion(simulated)
    shares = []
    for n in answered:
        if n == 0:
            shares.append(np.full((_NULL_SAMPLES, len(ideal)), np.nan))
        else:
            shares.append(correct_shares(rng.multinomial(n, judged) / n, estimate))
    for s in shares:
        s.flags.writeable = False
    return tuple(shares)


def observed_shares(labels: np.ndarray, n_choices: int) -> np.ndarray:
    """Answered shares of one group; NaN when nothing was answered."""
    counts = np.bincount(labels[labels >= 0], minlength=n_choices)
    return counts / counts.sum() if counts.sum() else np.full(n_choices, np.nan)


def single_choice(groups: Sequence[np.ndarray]) -> int | None:
    """The one choice every answered image of every group gave, if there is one."""
    answered = np.unique(np.concatenate([g[g >= 0] for g in groups] or [np.zeros(0, int)]))
    return int(answered[0]) if answered.size == 1 else None


PROFILE_TAIL_FACTOR = 0.7
"""The two-class profile critical value is the chi-square(1) quantile at 1 - 0.7 (1 - confidence)
(4.44 at 95%, not 3.84): where the truth sits at the kink of one distance, the level set of a
difference of distances is a V of two half-lines, whose likelihood-ratio statistic is slightly
larger than chi-square(1); 0.7 is the factor measured to bring that vertex to 95% (coverage.md).
More classes: scaled by ``kink_lr_quantile`` (``profile_critical_value``)."""

MORE_CHOICES_FACTOR = 1.2
"""With three or more choices the scaled critical value still under-covered the "hurts" design
by 1.5 to 3 points at n = 48 to 1000 (the misses all on the low end, the one a
``burden: model`` gate relies on); 1.2 is the factor measured to bring it into the band
(coverage.md: 3 classes, nominal and ordered)."""

KINK_LR_SAMPLES = 20000
"""Normal draws behind one ``kink_lr_quantile`` (seeded; its Monte Carlo sd is about 1%)."""

KINK_LR_MAX_CHOICES = 5
"""``kink_lr_quantile`` enumerates up to 3**C faces (seconds at 5 choices); more choices use
the value at this many, which under-states their quantile (not measured)."""


def profile_critical_value(
    confidence: float, n_choices: int = 2, ordered: bool = False
) -> float:
    """Squared radius of the profile ellipsoid for a difference of distances on ``n_choices``.

    Two choices: the chi-square(1) quantile at 1 - ``PROFILE_TAIL_FACTOR`` (1 - confidence)
    (measured). More: that value times ``MORE_CHOICES_FACTOR`` (measured) times
    ``kink_lr_quantile(n_choices, ordered, confidence) / kink_lr_quantile(2, False, confidence)``, the growth of the likelihood ratio's null
    quantile at the kink vertex with the number of choices (5.76 / 4.58 nominal, 5.40 / 4.58
    ordered at three choices and 95%), so that the two-class calibration carries over.
    """
    from scipy.stats import chi2  # scipy only when an interval is computed

    base = float(chi2.ppf(1 - PROFILE_TAIL_FACTOR * (1 - confidence), 1))
    if n_choices <= 2:
        return base
    n_choices = min(n_choices, KINK_LR_MAX_CHOICES)
    return MORE_CHOICES_FACTOR * base * kink_lr_quantile(n_choices, ordered, confidence) / (
        kink_lr_quantile(2, False, confidence))


@lru_cache(maxsize=64)
def kink_lr_quantile(n_choices: int, ordered: bool, confidence: float) -> float:
    """Null quantile of the likelihood ratio of w(p) - w(q) = its true value, p at the ideal.

    The worst case of an IS entry: the initial prompt p at the uniform ideal (the vertex of
    every kink of its distance), the pooled counterfactuals q off it (``q = (ideal + e_0) / 2``,
    where the distance is linear with gradient g) with half p's variance (two prompts of as
    many images). Locally the level set is {K(u) = g'v}, u and v the deviations of p's and
    q's first C - 1 shares and K the distance's directional derivative at the ideal, linear on
    each cone of a sign pattern of its kink forms (the shares' deviations, nominal; the
    cumulative ones, ordered). The statistic, the squared Mahalanobis distance of a normal draw
    (multinomial covariances) to that set, is exact: the minimum, over every cone and every
    face (a subset of its kink forms held at 0), of the distance to the linear subspace they span, among
    those whose nearest point lies in the cone. Seeded, ``KINK_LR_SAMPLES`` draws; cached.
    """
    import itertools

    c, d = n_choices, n_choices - 1
    ideal = np.full(c, 1 / c)
    if ordered:
        forms = np.tril(np.ones((d, d)))  # F_k(u) = u_1 + ... + u_k, k < C
        cones = [np.diff(np.concatenate([[0.0], s])) for s in itertools.product((-1.0, 1.0), repeat=d)]
    else:
        forms = np.vstack([np.eye(d), -np.ones((1, d))])  # u_1 .. u_{C-1}, u_C = -sum
        cones = [np.where(s > 0, 1 / (s > 0).sum(), -1 / (s < 0).sum())[:d]
                 for s in map(np.array, itertools.product((-1.0, 1.0), repeat=c))
                 if 0 < (s > 0).sum() < c]

    def distance(head: np.ndarray) -> float:
        return float(normalised_w1(np.append(head, 1 - head.sum()), ideal, ordered))

    def gradient(head: np.ndarray, step: float) -> np.ndarray:
        return np.array([(distance(head + step * e) - distance(head - step * e)) / (2 * step)
                         for e in np.eye(d)])

    def multinomial(p: np.ndarray) -> np.ndarray:
        return np.diag(p[:d]) - np.outer(p[:d], p[:d])

    smooth = (ideal + np.eye(c)[0]) / 2
    g = gradient(smooth[:d], 1e-7)
    covariance = np.zeros((2 * d, 2 * d))
    covariance[:d, :d] = multinomial(ideal)
    covariance[d:, d:] = multinomial(smooth) / 2
    rng = np.random.default_rng(20261123)
    z = rng.multivariate_normal(np.zeros(2 * d), covariance, size=KINK_LR_SAMPLES)
    best = np.full(len(z), np.inf)
    seen = set()
    for interior in cones:
        signs = np.sign(forms @ interior)
        slope = gradient(ideal[:d] + 1e-3 * interior, 1e-7)  # K on this cone
        faces = np.hstack([signs[:, None] * forms, np.zeros((len(forms), d))])
        level = np.concatenate([slope, -g])
        for r in range(len(forms) + 1):
            for active in itertools.combinations(range(len(forms)), r):
                face = tuple(0.0 if k in active else signs[k] for k in range(len(forms)))
                if face in seen:  # a face shared by several cones: the same subspace
                    continue
                seen.add(face)
                m = np.vstack([level, faces[list(active)]])
                weight = np.linalg.pinv(m @ covariance @ m.T)
                mz = z @ m.T
                lr = np.einsum("ni,ij,nj->n", mz, weight, mz)
                nearest = z - (mz @ weight) @ (m @ covariance)
                inside = (nearest @ faces.T >= -1e-9).all(axis=1)
                best = np.where(inside & (lr < best), lr, best)
    return float(np.quantile(best, confidence))


def kink_forms(ideal: np.ndarray, ordered: bool) -> tuple[np.ndarray, np.ndarray]:
    """Hyperplanes where ``normalised_w1(., ideal, ordered)`` bends, over the first C - 1 shares:
    (rows, offsets) with rows @ head = offsets; nominal: every share (the last = 1 - the rest)
    at its ideal; ordered: every cumulative share below the last."""
    ideal = np.asarray(ideal, dtype=float)
    d = len(ideal) - 1
    if ordered:
        rows = np.tril(np.ones((d, d)))
        return rows, np.cumsum(ideal)[:d]
    return np.vstack([np.eye(d), -np.ones((1, d))]), np.append(ideal[:d], ideal[-1] - 1)


def profile_range(
    statistic: ShareStatistic,
    shares: Sequence[np.ndarray],
    critical: float,
    kinks: Sequence[tuple[Sequence[float], np.ndarray, np.ndarray]] = (),
) -> tuple[float, float]:
    """Range of ``statistic`` over the profile ellipsoid of the groups' shares.

    ``shares``: each group's posterior draws, (n_draws, n_choices), drawn jointly (row k of
    every group is one draw; paired groups correlated, others independent). The parameter is
    every group's first n_choices - 1 shares, stacked; its centre and covariance are the
    draws' mean and covariance, and the ellipsoid is {Mahalanobis distance² <= critical}:
    the statistic's range over it is the normal-approximation profile likelihood-ratio
    interval. For a difference of two convex distances the extremes lie on the boundary, so
    it is traced by (1) every draw pushed radially onto the boundary, with its mirror image
    through the centre, and (2) for every linear piece of the statistic met there (gradient
    by finite differences), the boundary points where that piece is largest and smallest,
    which random directions miss in more than a few dimensions, and (3) the same on every
    face of the kinks: ``kinks`` = (weights over the groups, rows, offsets) per distance of
    the statistic, whose kinks are rows @ (weighted mean of the groups' heads) = offsets
    (``kink_forms``; weights renormalised over the groups that have answers). A face holds
    up to C - 1 of each distance's hyperplanes; there the statistic is one linear piece of an
    adjacent cone, and its extremes on the ellipsoid's section are taken in closed form. At
    an ideal that is a vertex of several kinks (three classes and more) the extremes sit on
    such faces, which (1) and (2) miss. Every point is inside the ellipsoid, so (2) and (3)
    only move the ends towards the true range. Groups with no answered image stay NaN;
    shares leaving the simplex are clipped to it.
    """
    # Draws on a face of the simplex (a class never seen) make the ellipsoid degenerate: some
    # of its points leave the simplex so far that they give 0/0, inf/inf or the root of a
    # rounding's negative. They come out NaN and are dropped below; numpy's warnings about
    # them would only alarm a user reading the run's output.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return _profile_range(statistic, shares, critical, kinks)


def _profile_range(
    statistic: ShareStatistic,
    shares: Sequence[np.ndarray],
    critical: float,
    kinks: Sequence[tuple[Sequence[float], np.ndarray, np.ndarray]],
) -> tuple[float, float]:
    n_draws, n_choices = shares[0].shape
    defined = [i for i, s in enumerate(shares) if not np.isnan(s).any()]
    if not defined or n_choices < 2 or n_draws < 2:
        return float("nan"), float("nan")
    width = n_choices - 1
    x = np.concatenate([shares[i][:, :width] for i in defined], axis=1)
    centre = x.mean(axis=0)
    deviation = x - centre
    covariance = deviation.T @ deviation / (n_draws - 1)
    inverse = np.linalg.pinv(covariance)
    distance = np.einsum("ni,ij,nj->n", deviation, inverse, deviation)
    scaled = deviation * np.sqrt(critical / np.maximum(distance, 1e-300))[:, None]

    def evaluate(points: np.ndarray) -> np.ndarray:
        groups = [np.full((len(points), n_choices), np.nan) for _ in shares]
        for k, i in enumerate(defined):
            head = points[:, k * width : (k + 1) * width]
            full = np.clip(np.concatenate([head, 1 - head.sum(1, keepdims=True)], 1), 0, None)
            groups[i] = full / full.sum(axis=1, keepdims=True)
        return np.asarray(statistic(groups), dtype=float)

    points = centre + np.concatenate([scaled, -scaled])
    values = evaluate(points)
    step = 1e-6
    pieces = []
    for _ in range(2):  # extremes of the pieces seen, then of the pieces seen there
        base = evaluate(points)
        gradient = np.stack(
            [(evaluate(points + step * np.eye(x.shape[1])[d]) - base) / step
             for d in range(x.shape[1])], axis=1)
        gradient = np.unique(np.round(gradient[~np.isnan(gradient).any(axis=1)], 4), axis=0)
        pieces.append(gradient)
        spread = np.sqrt(np.einsum("gi,ij,gj->g", gradient, covariance, gradient))
        keep = spread > 1e-12
        direction = (gradient[keep] @ covariance) / spread[keep, None] * np.sqrt(critical)
        points = centre + np.concatenate([direction, -direction])
        values = np.concatenate([values, evaluate(points)])
    faces = np.unique(np.concatenate(pieces), axis=0)
    if kinks and len(faces):
        values = np.concatenate([values, _face_extremes(
            evaluate, kinks, defined, centre, covariance, critical, faces)])
    values = values[~np.isnan(values)]
    if not values.size:
        return float("nan"), float("nan")
    return float(values.min()), float(values.max())


def _face_extremes(evaluate, kinks, defined, centre, covariance, critical, gradient):
    """The statistic at the extremes of every known linear piece on every kink face."""
    import itertools

    families = []
    for weights, rows, offsets in kinks:
        weights = np.asarray(weights, dtype=float)
        if not weights[defined].sum():
            continue
        weights = weights[defined] / weights[defined].sum()
        full = np.hstack([w * rows for w in weights])  # on the stacked heads
        faces: list[tuple[int, ...]] = [()]
        for r in range(1, rows.shape[1] + 1):
            faces += list(itertools.combinations(range(len(rows)), r))
        seen, family = set(), []
        for face in faces:
            key = face if len(face) < rows.shape[1] else "vertex"  # rank C - 1: one point
            if key in seen or np.linalg.matrix_rank(rows[list(face)]) < len(face):
                continue
            seen.add(key)
            family.append((full[list(face)], np.asarray(offsets)[list(face)]))
        families.append(family)
    out = []
    for combination in itertools.product(*families):
        m = np.vstack([c[0] for c in combination])
        if not len(m):
            continue
        b = np.concatenate([c[1] for c in combination])
        weight = np.linalg.pinv(m @ covariance @ m.T)
        residual = m @ centre - b
        radius = critical - residual @ weight @ residual
        if radius <= 0:
            continue
        section = covariance - covariance @ m.T @ weight @ m @ covariance
        middle = centre - covariance @ m.T @ weight @ residual
        spread = np.sqrt(np.maximum(np.einsum("gi,ij,gj->g", gradient, section, gradient), 0))
        keep = spread > 1e-12
        direction = (gradient[keep] @ section) / spread[keep, None] * np.sqrt(radius)
        out.append(evaluate(middle + np.concatenate([direction, -direction, [0 * middle]])))
    return np.concatenate(out) if out else np.zeros(0)
