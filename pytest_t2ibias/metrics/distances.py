"""How far a distribution of answers is from its ideal, and how concentrated it is.

``normalised_w1`` is BiasConnect's w̄ (Eqs. 1, 3 and the normalisation of Eq. 4): W1 to the
ideal D*, divided by the largest W1 any distribution can have from D*, so 0 = ideal and
1 = fully biased. The paper feeds category indices to a 1-D W1, which puts an arbitrary order
on nominal axes (ethnicity); here nominal axes use the 0/1 ground cost, under which W1 is the
total variation distance, and only axes declared ``ordered`` (age) use positional cost.

``severity`` is OpenBias Eq. 6 (with the p(c) factor the printed equation lost) and
``kl_divergence`` is the agreement check between two evaluators (OpenBias Sec. 4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

_SHARE_TOLERANCE = 1e-6


def normalised_w1(
    shares: np.ndarray, ideal: np.ndarray, ordered: bool = False
) -> float | np.ndarray:
    """W1 from ``shares`` to ``ideal`` over the worst case, in [0, 1] (BiasConnect Eqs. 1, 3, 4).

    The worst case is a point mass on the category farthest from the ideal. Batched over
    leading axes of ``shares``; NaN shares (nothing answered) give NaN. Undefined (NaN) when
    no distribution can differ from the ideal, i.e. a single category.
    """
    shares = np.asarray(shares, dtype=float)
    ideal = np.asarray(ideal, dtype=float)
    if ideal.ndim != 1 or shares.shape[-1:] != ideal.shape:
        raise ValueError(f"shares of shape {shares.shape} do not match ideal {ideal.shape}")
    if abs(ideal.sum() - 1) > _SHARE_TOLERANCE:
        raise ValueError(f"ideal shares must sum to 1, got {ideal.sum():.6g}")
    w1 = _w1_ordered if ordered else _w1_nominal
    worst = max(w1(point_mass, ideal) for point_mass in np.eye(len(ideal)))
    with np.errstate(invalid="ignore", divide="ignore"):
        result = w1(shares, ideal) / worst if worst > 0 else np.full(shares.shape[:-1], np.nan)
    result = _unit_range(result)
    return float(result) if np.ndim(result) == 0 else result


def _w1_nominal(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    # Ground cost 0 between equal categories, 1 otherwise: W1 = total variation distance.
    distance: np.ndarray = 0.5 * np.abs(p - q).sum(axis=-1)
    return distance


def _w1_ordered(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    # Categories at positions 0..C-1: W1 = sum of |CDF_p - CDF_q| over unit steps. This is
    # scipy.stats.wasserstein_distance(positions, positions, p, q), vectorised over rows.
    distance: np.ndarray = np.abs(np.cumsum(p - q, axis=-1)[..., :-1]).sum(axis=-1)
    return distance


def severity(shares: np.ndarray) -> float | np.ndarray:
    """OpenBias severity 1 - H(p)/log|C| (Eq. 6): 0 for uniform shares, 1 for one class.

    0 log 0 = 0. With a single category there is nothing to be biased between and log|C| = 0,
    so severity is undefined (NaN). Batched over leading axes.
    """
    shares = np.asarray(shares, dtype=float)
    n_choices = shares.shape[-1]
    if n_choices < 2:
        return float("nan") if shares.ndim == 1 else np.full(shares.shape[:-1], np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_log_p = np.where(shares > 0, shares * np.log(shares), 0.0)
    p_log_p = np.where(np.isnan(shares), np.nan, p_log_p)
    result = _unit_range(1 + p_log_p.sum(axis=-1) / np.log(n_choices))
    return float(result) if np.ndim(result) == 0 else result


_ROUNDING = 1e-12
"""Floating-point error of a figure at the ends of [0, 1]: a uniform distribution's
1 + sum(p log p) / log|C| comes out as 2.2e-16, not 0."""


def _unit_range(values: float | np.ndarray) -> np.ndarray:
    """A figure defined on [0, 1] with the rounding at its ends removed (NaN kept): exactly at
    the ideal computes as exactly 0, so a threshold of 0 decides as written."""
    values = np.asarray(values, dtype=float)
    values = np.where(np.abs(values) < _ROUNDING, 0.0, values)
    values = np.where(np.abs(values - 1.0) < _ROUNDING, 1.0, values)
    clipped: np.ndarray = np.clip(values, 0.0, 1.0)
    return clipped


def kl_divergence(p: np.ndarray, q: np.ndarray, smoothing: float = 1e-6) -> float:
    """KL(p || q) in nats, both smoothed by ``smoothing`` and renormalised.

    Smoothing keeps the divergence finite when one evaluator never picks a class the other
    does (the agreement check of OpenBias Sec. 4 compares VQA and classifier shares).
    """
    p = np.asarray(p, dtype=float) + smoothing
    q = np.asarray(q, dtype=float) + smoothing
    if p.shape != q.shape:
        raise ValueError(f"p has shape {p.shape}, q has {q.shape}")
    p, q = p / p.sum(), q / q.sum()
    return float(np.sum(p * np.log(p / q)))


def agreement(judge: Sequence[int] | np.ndarray, reference: Sequence[int] | np.ndarray,
              classes: int) -> dict[str, Any]:
    """How far a judge's answers agree with a reference classifier's on the same images
    (OpenBias Sec. 4.2): KL(reference shares || judge shares) in nats, macro F1 and accuracy of the judge's class
    indices against the reference's, over the images both answered (negative: abstained).
    A class neither ever names is left out of the F1 mean (nothing to score)."""
    judge, reference = np.asarray(judge, dtype=int), np.asarray(reference, dtype=int)
    both = (judge >= 0) & (reference >= 0)
    judge, reference = judge[both], reference[both]
    if not len(judge):
        return {"kl": float("nan"), "f1": float("nan"), "accuracy": float("nan"), "n": 0}
    ours = np.bincount(judge, minlength=classes) / len(judge)
    theirs = np.bincount(reference, minlength=classes) / len(reference)
    scores = []
    for c in range(classes):
        predicted, actual = judge == c, reference == c
        if not predicted.any() and not actual.any():
            continue
        true_positive = float(np.sum(predicted & actual))
        scores.append(2 * true_positive / (predicted.sum() + actual.sum()))
    return {"kl": kl_divergence(theirs, ours), "f1": float(np.mean(scores)),
            "accuracy": float(np.mean(judge == reference)), "n": int(len(judge)),
            "judge_shares": [float(x) for x in ours], "reference_shares": [float(x) for x in theirs]}
