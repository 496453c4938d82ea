"""The judge's own error: its confusion, measured, and shares corrected for it (METHODS.md §6).

Every share this plugin reports is read by a judge. Let M[i][j] = P(judged j | true i), the
judge's confusion among the images it answers (rows sum to 1). The judged shares q relate to
the true shares p by

    q = Mᵀ p                                                           (6.1)

so a judge that confuses classes pulls every share toward its own confusion: with a symmetric
two-class error e, q = e + (1 − 2e) p, and a 0.9/0.1 model reads 0.74/0.26 at e = 0.2. An
interval computed as if the labels were true is then confidently wrong.

The correction (docs/STATISTICS.md, "The judge's own error"):

1. M is measured on images whose class is known (a labelled folder, or the counterfactual
   images a suite already draws) as counts: ``JudgeCalibration.counts[i][j]``.
2. Point estimate: p̂ = Π((M̂ᵀ)⁻¹ q̂), Π the Euclidean projection onto the simplex; with two
   classes this is Rogan and Gladen's (1978) p̂ = (q̂ + sp − 1)/(se + sp − 1), clipped.
3. Draws carrying both uncertainties: each row of M from its Dirichlet posterior (calibration
   counts + ``CONFUSION_PRIOR`` = 1/10 a cell), the judged shares from theirs
   (``metrics.posterior``), and p = Π((Mᵀ)⁻¹ q) per draw, one M shared by every group of a
   draw (one judge reads them all). Every figure built from shares (W1, severity, IS,
   MaxSkew, ...) is computed per corrected draw.
4. A judge that cannot tell the classes apart decides nothing: its *readability*
   r(M) = 1 / ‖(Mᵀ)⁻¹‖₁, the factor by which its errors shrink a true difference of shares
   (1 for a perfect judge, 1 − 2e for a symmetric two-class error, 0 at chance), must be
   shown above ``MIN_READABILITY`` by the calibration's own interval.

Assumption (stated in every report row that uses it): the judge's confusion on the
calibration images is its confusion on the audited ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from pytest_t2ibias._types import Estimate

CONFUSION_PRIOR = 0.1
"""Prior pseudo-count per cell of a confusion row: M's rows are Dirichlet(counts + 1/10), not
the Jeffreys 1/2 the shares get in ``metrics.posterior``. Jeffreys invents confusion in a row
the judge reads perfectly: 20 of 20 read right becomes 95.3% right and 4.7% misread with three
classes (M̂'s readability 0.91 for a perfect judge), so at small calibration sizes the
correction overshoots, pushing p̂ away from the judge's confusion. With 1/10 a cell (99.0%
right, readability 0.98) the worst borderline cell of validation/judge_coverage.py (severity,
three classes, one-sided 60%, m = 20) went from 86.2% to 92.4% on a fresh seed and an over-covering uniform cell from 99.7% to 98.0%; the full grid
with it: docs/coverage.md, "The judge's own error"; docs/STATISTICS.md, same section."""

MIN_READABILITY = 0.2
"""Below this readability a judge's errors amplify sampling noise more than fivefold
(a symmetric two-class judge under 60% accurate): the axis is "cannot read". The calibration
must show r(M) above it at the interval's level; measured in docs/coverage.md."""

COUNTERFACTUAL = "counterfactual images"
LABELLED = "labelled folder"


@dataclass(frozen=True, eq=False)
class JudgeCalibration:
    """One judge's confusion on one axis: ``counts[i][j]`` images of true class i judged j.

    ``source`` says where the true classes came from (``LABELLED``: a user's labels;
    ``COUNTERFACTUAL``: the prompt asked for the class, so the generator's non-adherence to
    an explicit prompt reads as judge error). ``abstained[i]`` counts the images of class i
    the judge did not answer; they do not enter ``counts``.
    """

    judge: str
    axis: str
    choices: tuple[str, ...]
    counts: np.ndarray
    source: str
    where: str = ""
    abstained: tuple[int, ...] = ()
    confidence: float = 0.95
    groups: dict[str, np.ndarray] | None = field(default=None, repr=False)
    """Group (the values of the suite's other axes an image carries) -> its own counts, when
    the images' groups are known (``metrics.judge_groups``); ``counts`` pools them."""
    _readability: tuple[float, float, float] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        counts = np.asarray(self.counts, dtype=int)
        c = len(self.choices)
        if counts.shape != (c, c) or (counts < 0).any():
            raise ValueError(f"judge calibration of {self.axis!r}: counts must be a "
                             f"{c}x{c} table of non-negative counts, got shape {counts.shape}")
        object.__setattr__(self, "counts", counts)

    @property
    def n(self) -> tuple[int, ...]:
        """Calibration images answered per true class."""
        return tuple(int(k) for k in self.counts.sum(axis=1))

    @property
    def confusion(self) -> np.ndarray:
        """M̂: each row's posterior mean under ``CONFUSION_PRIOR`` (a row without images is
        uniform)."""
        return posterior_mean_confusion(self.counts)

    def accuracy(self) -> dict[str, tuple[float, float, float, int]]:
        """Per true class: (share judged right, low, high, n), Jeffreys intervals."""
        from scipy.stats import beta  # scipy only when a calibration is reported

        tail = (1 - self.confidence) / 2
        out = {}
        for i, choice in enumerate(self.choices):
            n, k = int(self.counts[i].sum()), int(self.counts[i, i])
            if n == 0:
                out[choice] = (float("nan"), 0.0, 1.0, 0)
                continue
            low = 0.0 if k == 0 else float(beta.ppf(tail, k + 0.5, n - k + 0.5))
            high = 1.0 if k == n else float(beta.ppf(1 - tail, k + 0.5, n - k + 0.5))
            out[choice] = (k / n, low, high, n)
        return out

    def readability(self, n_draws: int = 2000, seed: int = 0) -> tuple[float, float, float]:
        """r(M) at M̂ and its central interval at ``confidence`` over the rows' posterior."""
        if self._readability is None:
            rng = np.random.default_rng([seed, 0x5EAD])
            draws = readability(confusion_draws(self.counts, n_draws, rng))
            tail = (1 - self.confidence) / 2
            low, high = np.quantile(draws, [tail, 1 - tail])
            value = float(readability(self.confusion))
            object.__setattr__(self, "_readability", (value, float(low), float(high)))
        return self._readability  # type: ignore[return-value]

    @property
    def readable(self) -> bool:
        """Whether the calibration shows the judge tells the classes apart (module doc, 4)."""
        return self.readability()[1] > MIN_READABILITY

    def why_unreadable(self) -> str:
        """One sentence naming the judge, the axis and the figures (empty when readable)."""
        if self.readable:
            return ""
        value, low, high = self.readability()
        worst = min(self.accuracy().items(), key=lambda kv: np.nan_to_num(kv[1][0], nan=-1))
        return (f"the judge {self.judge} cannot read {self.axis!r}: on {self.where or self.source} "
                f"its readability is {value:.2f} [{low:.2f}, {high:.2f}] (0 = chance, 1 = "
                f"perfect; needs > {MIN_READABILITY:g}), accuracy on {worst[0]!r} "
                f"{worst[1][0]:.2f} (n={worst[1][3]}); no figure it reads can decide")

    def to_dict(self) -> dict[str, Any]:
        """Plain builtins for rows, junit and xdist."""
        value, low, high = self.readability()
        return {
            "judge": self.judge,
            "axis": self.axis,
            "source": self.source,
            "where": self.where,
            "choices": list(self.choices),
            "confusion": {t: {j: int(self.counts[i, k]) for k, j in enumerate(self.choices)}
                          for i, t in enumerate(self.choices)},
            "abstained": dict(zip(self.choices, map(int, self.abstained))) if self.abstained else {},
            "accuracy": {c: {"value": v, "low": lo, "high": hi, "n": n}
                         for c, (v, lo, hi, n) in self.accuracy().items()},
            "readability": {"value": value, "low": low, "high": high,
                            "confidence": self.confidence},
            "readable": self.readable,
            **({"groups": {g: {t: {j: int(c[i, k]) for k, j in enumerate(self.choices)}
                               for i, t in enumerate(self.choices)}
                           for g, c in self.groups.items()}} if self.groups else {}),
        }

    def describe(self) -> str:
        """One line: source, n, accuracy per class."""
        per_class = ", ".join(f"{c} {v:.2f} [{lo:.2f}, {hi:.2f}] n={n}"
                              for c, (v, lo, hi, n) in self.accuracy().items())
        return f"judge {self.judge} on {self.axis!r} from {self.where or self.source}: {per_class}"


def calibration_from_labels(judge: str, axis: str, choices: Sequence[str], truth: np.ndarray,
                            judged: np.ndarray, *, source: str, where: str = "",
                            confidence: float = 0.95,
                            groups: Sequence[str] | None = None) -> JudgeCalibration:
    """Counts of (true, judged) over images whose class is known; judged < 0 (abstained or
    filtered) is left out of the table and counted per true class. ``groups``: each image's
    group (its values of other axes), for the counts per group too."""
    truth, judged = np.asarray(truth, dtype=int), np.asarray(judged, dtype=int)
    c = len(choices)
    answered = judged >= 0
    counts = np.zeros((c, c), dtype=int)
    np.add.at(counts, (truth[answered], judged[answered]), 1)
    abstained = tuple(int(np.sum((truth == i) & (judged < 0))) for i in range(c))
    by_group = None
    if groups is not None:
        from pytest_t2ibias.metrics.judge_groups import group_counts

        by_group = group_counts(truth, judged, groups, c)
    return JudgeCalibration(judge, axis, tuple(choices), counts, source, where, abstained,
                            confidence, by_group)


# -- the math ------------------------------------------------------------------------------------


def posterior_mean_confusion(counts: np.ndarray) -> np.ndarray:
    """M̂ from counts (..., C, C): (counts + CONFUSION_PRIOR) / row sums, never singular from an
    empty cell."""
    counts = np.asarray(counts, dtype=float) + CONFUSION_PRIOR
    return counts / counts.sum(axis=-1, keepdims=True)


def confusion_draws(counts: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Posterior draws of M, shape (n_draws, ..., C, C): each row
    Dirichlet(counts + CONFUSION_PRIOR)."""
    counts = np.asarray(counts, dtype=float)
    gamma = rng.standard_gamma(counts + CONFUSION_PRIOR, size=(n_draws,) + counts.shape)
    return gamma / gamma.sum(axis=-1, keepdims=True)


def readability(confusion: np.ndarray) -> np.ndarray:
    """r(M) = 1 / ‖(Mᵀ)⁻¹‖₁ (largest absolute column sum), for M of shape (..., C, C); 0 when
    M is singular. The L1 norm is the one shares live in: a judged difference ‖δq‖₁ can stand
    for a true one as large as ‖(Mᵀ)⁻¹‖₁ ‖δq‖₁."""
    confusion = np.asarray(confusion, dtype=float)
    transposed = np.swapaxes(confusion, -1, -2)
    with np.errstate(all="ignore"):
        singular = np.abs(np.linalg.det(transposed)) < 1e-12
        safe = np.where(singular[..., None, None], np.eye(confusion.shape[-1]), transposed)
        norm = np.abs(np.linalg.inv(safe)).sum(axis=-2).max(axis=-1)
    return np.where(singular, 0.0, 1.0 / norm)


def correct_shares(judged: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """p = Π((Mᵀ)⁻¹ q) (Eq. 6.1 inverted, projected onto the simplex).

    ``judged`` (..., C) shares, NaN rows kept NaN; ``confusion`` broadcastable (..., C, C).
    A singular M gives NaN (no share can be recovered)."""
    judged = np.asarray(judged, dtype=float)
    confusion = np.asarray(confusion, dtype=float)
    transposed = np.swapaxes(confusion, -1, -2)
    shape = np.broadcast_shapes(judged.shape[:-1], transposed.shape[:-2])
    transposed = np.broadcast_to(transposed, shape + transposed.shape[-2:])
    q = np.broadcast_to(judged, shape + judged.shape[-1:])
    with np.errstate(all="ignore"):
        singular = np.abs(np.linalg.det(transposed)) < 1e-12
        safe = np.where(singular[..., None, None], np.eye(judged.shape[-1]), transposed)
        raw = np.linalg.solve(safe, np.nan_to_num(q)[..., None])[..., 0]
    corrected = project_to_simplex(raw)
    bad = singular | np.isnan(q).any(axis=-1)
    return np.where(bad[..., None], np.nan, corrected)


def project_to_simplex(x: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row (..., C) onto the probability simplex (the sort-based
    algorithm of Wang & Carreira-Perpiñán 2013)."""
    x = np.asarray(x, dtype=float)
    c = x.shape[-1]
    ordered = -np.sort(-x, axis=-1)
    cumulative = np.cumsum(ordered, axis=-1) - 1
    ranks = np.arange(1, c + 1)
    support = ordered - cumulative / ranks > 0
    rho = c - 1 - np.argmax(support[..., ::-1], axis=-1)  # last index where the test holds
    theta = np.take_along_axis(cumulative, rho[..., None], axis=-1) / (rho[..., None] + 1)
    return np.maximum(x - theta, 0.0)


def corrected_draws(share_draws: Sequence[np.ndarray], calibration_counts: np.ndarray,
                    rng: np.random.Generator) -> list[np.ndarray]:
    """Each group's judged-share draws (n_draws, C) corrected with one M draw per row k,
    shared by every group (one judge reads them all); module doc, step 3."""
    n_draws = share_draws[0].shape[0]
    confusion = confusion_draws(calibration_counts, n_draws, rng)
    return [correct_shares(draws, confusion) for draws in share_draws]


FULL, BOUNDS, OFF = "full", "bounds", "off"
"""How a figure reads its judge: corrected fully, bounded between the judge's labels and the
corrected reading (a counterfactual calibration, which cannot tell the judge's errors from the
generator's non-adherence to explicit prompts), or the labels taken as truth."""


def correction_mode(asked: str, calibration: JudgeCalibration | None) -> str:
    """FULL, BOUNDS or OFF for ``judge_correction`` ``asked`` (on, full, off) and a calibration:
    ``on`` corrects a labelled folder's fully and a counterfactual one's as bounds."""
    if calibration is None or asked == OFF:
        return OFF
    return BOUNDS if calibration.source == COUNTERFACTUAL and asked == "on" else FULL


def judged_estimate(estimator: Callable[[np.ndarray | None], Estimate],
                    calibration: JudgeCalibration | None, mode: str) -> Estimate:
    """``estimator(confusion counts or None)`` read under ``mode``: OFF (or a judge that cannot
    read the axis) the labels as truth, FULL corrected, BOUNDS the hull of both."""
    plain = estimator(None)
    if mode == OFF or calibration is None or not calibration.readable:
        return plain
    corrected = estimator(calibration.counts)
    if mode == FULL:
        return corrected
    return replace(corrected, low=min(plain.low, corrected.low),
                   high=max(plain.high, corrected.high),
                   method=corrected.method + " (bounds: judge error or non-adherence)")


def corrected_point(shares: Sequence[np.ndarray], calibration_counts: np.ndarray) -> list[np.ndarray]:
    """Each group's observed judged shares corrected with M̂ (module doc, step 2)."""
    confusion = posterior_mean_confusion(calibration_counts)
    return [correct_shares(s, confusion) for s in shares]
