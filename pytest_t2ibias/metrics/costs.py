"""What a debiasing fine-tune costs: alignment, diversity, quality, distribution shift, erasure.

Pure math on CLIP embeddings and judged shares (numpy; scipy.stats for quantiles). Each figure
is an image set's score, and each comparison is the candidate's against the baseline's on
the same prompt and the same seeds (image i of both models shares its noise), so the
intervals are paired: they resample (or leave out) image pairs, never images of one model.

- CLIPScore (Hessel et al. 2021, Eq. 1): ``w * max(cos(E_image, E_text), 0)``, w = 2.5, of
  each image with its own prompt.
- Vendi score (Friedman & Dieng 2023, Def. 3.1): ``exp(-sum_i lambda_i log lambda_i)``, the
  lambda_i the eigenvalues of K/n, K the cosine kernel of the n images' embeddings (K_ii = 1);
  the effective number of distinct images, from 1 (all alike) to n (all orthogonal).
- CLIP-IQA (Wang et al. 2023, Eq. 2): the softmax weight of "Good photo." against "Bad
  photo." in the CLIP similarities (the antonym prompt pair), per image.
- KID (Binkowski et al. 2018, Eq. 4): the unbiased MMD^2 with the cubic polynomial kernel
  ``k(x, y) = (x.y / d + 1)^3`` between the two models' image embeddings; here as the
  U-statistic over image pairs (every term i != j, cross terms included), which stays
  unbiased when x_i and y_i share their seed (the paper's estimator keeps the cross terms
  k(x_i, y_i), whose mean differs from an independent pair's when the images are paired).
- Erasure: the share of images that still show the subject (the suite filter's "yes"), as
  InterMit's "IsP?" column (seed 000, Table 1); candidate minus baseline with Newcombe's
  (1998) interval for a difference of paired proportions (method 10).

Intervals for smooth functions of image means and for the Vendi score and KID are the
delete-one jackknife (Efron & Stein 1981) with Student's t quantile at n - 1 degrees of
freedom: for a plain mean this is exactly the paired t interval; for Vendi and KID it needs
no resampling with replacement, which would duplicate images and bias a diversity score
down. ``validation/cost_coverage.py`` measures their coverage.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pytest_t2ibias._types import Estimate
from pytest_t2ibias.metrics.intervals import wilson_interval

CLIPSCORE_WEIGHT = 2.5
"""Hessel et al. (2021) rescale the clipped cosine by w = 2.5 (Section 3)."""

IQA_PROMPTS = ("Good photo.", "Bad photo.")
"""CLIP-IQA's antonym prompt pair (Wang et al. 2023, Section 3.1)."""

TABLE1_ASPECTS = {"real": ("Real photo.", "Abstract photo."),
                  "natural": ("Natural photo.", "Synthetic photo."),
                  "colorfulness": ("Colorful photo.", "Dull photo.")}
"""CLIP-IQA's abstract-perception pairs that InterMit's Table 1 reports beside quality
(Wang et al. 2023, Table 2's antonyms, as torchmetrics' ``clip_iqa`` names them)."""


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def clip_scores(image_embeddings: np.ndarray, text_embeddings: np.ndarray,
                weight: float = CLIPSCORE_WEIGHT) -> np.ndarray:
    """CLIPScore of image i with text i (rows matched; one text row broadcasts):
    ``w * max(cos, 0)`` (Hessel et al. 2021, Eq. 1)."""
    images, texts = _unit(image_embeddings), _unit(text_embeddings)
    cosine = np.sum(images * np.broadcast_to(texts, images.shape), axis=-1)
    return weight * np.maximum(cosine, 0.0)


def vendi_score(embeddings: np.ndarray) -> float:
    """exp of the Shannon entropy of the eigenvalues of K/n, K the cosine kernel (Friedman &
    Dieng 2023, Def. 3.1). The nonzero eigenvalues of K/n = U U^T / n are those of U^T U / n,
    so the smaller of the two matrices is decomposed."""
    units = _unit(embeddings)
    n, d = units.shape
    if n == 0:
        return float("nan")
    gram = units @ units.T if n <= d else units.T @ units
    eigenvalues = np.clip(np.linalg.eigvalsh(gram / n), 0.0, None)
    eigenvalues = eigenvalues[eigenvalues > 1e-12]
    return float(np.exp(-np.sum(eigenvalues * np.log(eigenvalues))))


def iqa_scores(good_bad_probabilities: np.ndarray) -> np.ndarray:
    """CLIP-IQA per image: the softmax weight of "Good photo." (column 0) against "Bad
    photo." (Wang et al. 2023, Eq. 2); a judge's abstention (NaN row) stays NaN."""
    return np.asarray(good_bad_probabilities, dtype=float)[:, 0]


def _cubic_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x @ y.T / x.shape[1] + 1.0) ** 3


def _kid_pair_matrix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """h(z_i, z_j) = k(x_i,x_j) + k(y_i,y_j) - k(x_i,y_j) - k(x_j,y_i), diagonal zeroed."""
    xy = _cubic_kernel(x, y)
    h = _cubic_kernel(x, x) + _cubic_kernel(y, y) - xy - xy.T
    np.fill_diagonal(h, 0.0)
    return h


def kid(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """Unbiased MMD^2 with the cubic polynomial kernel (Binkowski et al. 2018, Eq. 4), as the
    U-statistic over image pairs (module docstring: unbiased under paired seeds too)."""
    x, y = np.asarray(baseline, float), np.asarray(candidate, float)
    if x.shape != y.shape:
        raise ValueError(f"KID pairs image i of both models: shapes {x.shape} and {y.shape}")
    n = len(x)
    return float(_kid_pair_matrix(x, y).sum() / (n * (n - 1))) if n > 1 else float("nan")


# -- intervals ----------------------------------------------------------------------------------


def _t_interval(value: float, leave_one_out: np.ndarray, confidence: float,
                method: str, *, bias_corrected: bool = False) -> Estimate:
    """Delete-one jackknife standard error, Student's t at n - 1 degrees of freedom;
    ``bias_corrected``: the figure is the jackknife's ``n T - (n - 1) mean(T_(i))``
    (Quenouille's correction, for a plug-in figure biased at O(1/n), as the Vendi score)."""
    from scipy.stats import t

    loo = np.asarray(leave_one_out, dtype=float)
    loo = loo[np.isfinite(loo)]
    n = len(loo)
    if n < 2 or not np.isfinite(value):
        return Estimate(float(value), float("nan"), float("nan"), n, confidence, method)
    se = float(np.sqrt((n - 1) / n * np.sum((loo - loo.mean()) ** 2)))
    if bias_corrected:
        value, method = n * value - (n - 1) * float(loo.mean()), method + " (bias-corrected)"
    half = float(t.ppf(0.5 + confidence / 2, n - 1)) * se
    return Estimate(float(value), float(value) - half, float(value) + half, n, confidence, method)


def _leave_one_out_means(values: np.ndarray) -> np.ndarray:
    total, n = values.sum(axis=0), len(values)
    return (total[None] - values) / (n - 1)


def _paired_rows(baseline: np.ndarray, candidate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    b, c = np.asarray(baseline, float), np.asarray(candidate, float)
    if b.shape != c.shape:
        raise ValueError(f"a paired figure needs image i of both models: {b.shape} vs {c.shape}")
    keep = np.isfinite(b) & np.isfinite(c)  # a judge's abstention drops the pair
    return b[keep], c[keep]


def mean_estimate(values: np.ndarray, *, confidence: float = 0.95) -> Estimate:
    """The mean of per-image scores with Student's t interval (one model against a limit)."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return Estimate(float(v.mean()) if len(v) else float("nan"), float("nan"),
                        float("nan"), len(v), confidence, "t")
    return _t_interval(float(v.mean()), _leave_one_out_means(v), confidence, "t")


def mean_change(baseline: np.ndarray, candidate: np.ndarray, *, relative: bool = True,
                confidence: float = 0.95) -> Estimate:
    """Candidate's mean score against the baseline's on paired images: ``mean_c / mean_b - 1``
    (``relative``) or ``mean_c - mean_b``, with the paired jackknife-t interval (for the
    plain difference, the paired t interval)."""
    b, c = _paired_rows(baseline, candidate)
    if len(b) < 2:
        return Estimate(float("nan"), float("nan"), float("nan"), len(b), confidence,
                        "paired jackknife")

    def change(mb, mc):
        return mc / mb - 1.0 if relative else mc - mb

    value = float(change(b.mean(), c.mean()))
    loo = change(_leave_one_out_means(b), _leave_one_out_means(c))
    return _t_interval(value, loo, confidence, "paired jackknife")


def _leave_one_out(statistic: Callable[..., float], *arrays: np.ndarray) -> np.ndarray:
    n = len(arrays[0])
    keep = np.ones(n, dtype=bool)
    out = np.empty(n)
    for i in range(n):
        keep[i] = False
        out[i] = statistic(*(a[keep] for a in arrays))
        keep[i] = True
    return out


def vendi_estimate(embeddings: np.ndarray, *, confidence: float = 0.95) -> Estimate:
    """One model's Vendi score with its jackknife-t interval; the plug-in score is biased
    down at finite n (a sample's eigenvalues spread more than the population's), so the
    figure is the jackknife's bias-corrected one (``validation/cost_coverage.py``)."""
    e = np.asarray(embeddings, float)
    return _t_interval(vendi_score(e), _leave_one_out(vendi_score, e), confidence, "jackknife",
                       bias_corrected=True)


def vendi_change(baseline: np.ndarray, candidate: np.ndarray, *, relative: bool = True,
                 confidence: float = 0.95) -> Estimate:
    """Candidate's Vendi score against the baseline's on the same prompt and seeds:
    ``V_c / V_b - 1`` (``relative``) or ``V_c - V_b``; jackknife over image pairs,
    bias-corrected as ``vendi_estimate``."""
    b, c = np.asarray(baseline, float), np.asarray(candidate, float)
    if b.shape[0] != c.shape[0]:
        raise ValueError(f"a paired Vendi change needs image i of both models: "
                         f"{len(b)} vs {len(c)} images")

    def change(b, c):
        vb, vc = vendi_score(b), vendi_score(c)
        return vc / vb - 1.0 if relative else vc - vb

    return _t_interval(change(b, c), _leave_one_out(change, b, c), confidence,
                       "paired jackknife", bias_corrected=True)


def kid_estimate(baseline: np.ndarray, candidate: np.ndarray, *,
                 confidence: float = 0.95) -> Estimate:
    """KID (unbiased MMD^2, cubic kernel) between the models' image embeddings, with the
    jackknife-t interval of the U-statistic over image pairs (closed-form leave-one-out)."""
    x, y = np.asarray(baseline, float), np.asarray(candidate, float)
    if x.shape != y.shape:
        raise ValueError(f"KID pairs image i of both models: shapes {x.shape} and {y.shape}")
    n = len(x)
    if n < 3:
        return Estimate(kid(x, y) if n > 1 else float("nan"), float("nan"), float("nan"), n,
                        confidence, "paired jackknife")
    h = _kid_pair_matrix(x, y)
    total = h.sum()
    loo = (total - 2.0 * h.sum(axis=1)) / ((n - 1) * (n - 2))
    return _t_interval(float(total / (n * (n - 1))), loo, confidence, "paired jackknife")


def kept_share(kept: np.ndarray, *, confidence: float = 0.95) -> Estimate:
    """The share of one model's images that still show the subject (Wilson interval)."""
    kept = np.asarray(kept, dtype=bool)
    return wilson_interval(int(kept.sum()), len(kept), confidence)


def erasure_change(baseline_kept: np.ndarray, candidate_kept: np.ndarray, *,
                   confidence: float = 0.95) -> Estimate:
    """Candidate's share of images still showing the subject minus the baseline's, paired by
    seed, with Newcombe's (1998) method 10 interval: Wilson limits of each share combined
    with the pairs' phi correlation, phi computed from AD - BC reduced by N/2 when positive
    (0 when AD - BC is in [0, N/2]), as the method and its reference implementations do (R's
    contingencytables, biostatUZH); the plain phi gave a narrower interval."""
    b = np.asarray(baseline_kept, dtype=bool)
    c = np.asarray(candidate_kept, dtype=bool)
    if b.shape != c.shape:
        raise ValueError(f"a paired share needs image i of both models: {b.shape} vs {c.shape}")
    n = len(b)
    if n == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0, confidence, "newcombe paired")
    both, only_c = int(np.sum(b & c)), int(np.sum(c & ~b))
    only_b, neither = int(np.sum(b & ~c)), int(np.sum(~b & ~c))
    pc, pb = (both + only_c) / n, (both + only_b) / n
    wc, wb = wilson_interval(both + only_c, n, confidence), wilson_interval(both + only_b, n, confidence)
    denominator = (both + only_c) * (only_b + neither) * (both + only_b) * (only_c + neither)
    phi = _newcombe_phi(both * neither - only_c * only_b, n, denominator)
    dl, du = pc - wc.low, wc.high - pc
    el, eu = pb - wb.low, wb.high - pb
    low = (pc - pb) - np.sqrt(max(dl ** 2 - 2 * phi * dl * eu + eu ** 2, 0.0))
    high = (pc - pb) + np.sqrt(max(du ** 2 - 2 * phi * du * el + el ** 2, 0.0))
    return Estimate(float(pc - pb), float(max(low, -1.0)), float(min(high, 1.0)), n, confidence,
                    "newcombe paired")


def _newcombe_phi(ad_minus_bc: int, n: int, margins: int) -> float:
    """Newcombe's (1998) corrected phi: (AD - BC - N/2) / sqrt(margins) when AD - BC > N/2,
    0 when AD - BC is in [0, N/2], the plain phi when negative; 0 when a margin is empty."""
    if margins <= 0:
        return 0.0
    if ad_minus_bc > n / 2:
        return float((ad_minus_bc - n / 2) / np.sqrt(margins))
    return float(min(ad_minus_bc, 0) / np.sqrt(margins))
