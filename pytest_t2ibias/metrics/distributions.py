"""Answer distributions over one question's choices, and the ideal they are measured against.

A ``Distribution`` keeps what the shares leave out: how many images abstained or were
filtered (OpenBias's code drops "unknown" answers silently; erasure is a finding). Pooling
follows BiasConnect Eq. 3: the counterfactual prompts of an axis are weighted equally,
simulating a model where every counterfactual is equally represented.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_t2ibias._types import ABSTAINED, FILTERED, Answers, Estimate
from pytest_t2ibias.metrics.intervals import wilson_interval

_SHARE_TOLERANCE = 1e-6


@dataclass(frozen=True, eq=False)
class Distribution:
    """Counts of each choice among answered images, plus the abstained and filtered ones."""

    choices: tuple[str, ...]
    counts: np.ndarray
    abstentions: int = 0
    filtered: int = 0

    @property
    def n(self) -> int:
        """Images that got an answer; the denominator of ``shares``."""
        return int(self.counts.sum())

    @property
    def shares(self) -> np.ndarray:
        """Share of answered images per choice; all NaN when no image was answered."""
        if self.n == 0:
            return np.full(len(self.choices), np.nan)
        return self.counts / self.n

    def share(self, choice: str) -> Estimate:
        """Share of ``choice`` with its Wilson interval."""
        if choice not in self.choices:
            raise KeyError(f"{choice!r} is not one of the choices {self.choices}")
        return wilson_interval(int(self.counts[self.choices.index(choice)]), self.n)

    def to_dict(self) -> dict[str, Any]:
        """Plain builtins, for ``user_properties`` and reports."""
        return {
            "choices": list(self.choices),
            "counts": {c: int(k) for c, k in zip(self.choices, self.counts)},
            "shares": {c: float(s) for c, s in zip(self.choices, self.shares)},
            "n": self.n,
            "abstentions": self.abstentions,
            "filtered": self.filtered,
        }


def distribution_of(
    answers_or_labels: Answers | np.ndarray | Sequence[int],
    choices: Sequence[str] | None = None,
) -> Distribution:
    """Tally an ``Answers`` (or a label array over ``choices``) into a ``Distribution``."""
    labels: np.ndarray | Sequence[int]
    if isinstance(answers_or_labels, Answers):
        if choices is not None and tuple(choices) != answers_or_labels.choices:
            raise ValueError(
                f"choices {tuple(choices)} differ from the answers' {answers_or_labels.choices}"
            )
        choices = answers_or_labels.choices
        labels = answers_or_labels.labels
    elif choices is None:
        raise TypeError("choices are required when passing a label array")
    else:
        labels = answers_or_labels
    checked = check_labels(labels, len(choices))
    return Distribution(
        choices=tuple(choices),
        counts=np.bincount(checked[checked >= 0], minlength=len(choices)),
        abstentions=int(np.sum(checked == ABSTAINED)),
        filtered=int(np.sum(checked == FILTERED)),
    )


def pooled_shares(label_arrays: Sequence[np.ndarray], n_choices: int) -> np.ndarray:
    """Equal-weight mean of each array's shares (BiasConnect Eq. 3).

    Every counterfactual prompt counts once whatever its number of answered images, so a
    prompt that lost images to filtering is not under-represented. Arrays without any
    answered image are skipped; if none is left the result is all NaN.
    """
    return mean_of_shares(
        [label_shares(check_labels(labels, n_choices), n_choices) for labels in label_arrays],
        n_choices,
    )


def label_shares(labels: np.ndarray, n_choices: int) -> np.ndarray:
    """Share of each choice among the answered labels of the last axis; NaN if none answered.

    Batched over leading axes, so a whole block of bootstrap replicates costs one call.
    """
    counts = (labels[..., None] == np.arange(n_choices)).sum(axis=-2)
    answered = counts.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(answered > 0, counts / answered, np.nan)


def mean_of_shares(shares: Sequence[np.ndarray], n_choices: int) -> np.ndarray:
    """Equal-weight mean of share vectors (batched), skipping the NaN ones (nothing answered)."""
    if not shares:
        return np.full(n_choices, np.nan)
    stacked = np.stack(shares)
    defined = ~np.isnan(stacked[..., :1])
    total = np.where(defined, stacked, 0.0).sum(axis=0)
    count = defined.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def ideal_shares(
    ideal: str | Mapping[str, float] | Sequence[float] | np.ndarray, choices: Sequence[str]
) -> np.ndarray:
    """Resolve an ideal distribution D* ("uniform", {choice: share} or shares) over ``choices``.

    Choices missing from a mapping get share 0 (e.g. a reference set without one class).
    """
    n_choices = len(choices)
    if isinstance(ideal, str):
        if ideal != "uniform":
            raise ValueError(f"unknown ideal {ideal!r}: use 'uniform' or a {{choice: share}} map")
        return np.full(n_choices, 1 / n_choices)
    if isinstance(ideal, Mapping):
        unknown = sorted(set(ideal) - set(choices))
        if unknown:
            raise ValueError(f"ideal names unknown choices {unknown}; known: {list(choices)}")
        shares = np.array([float(ideal.get(c, 0.0)) for c in choices])
    else:
        shares = np.asarray(ideal, dtype=float)
        if shares.shape != (n_choices,):
            raise ValueError(f"ideal has {shares.size} shares for {n_choices} choices")
    if (shares < 0).any() or not np.isfinite(shares).all():
        raise ValueError(f"ideal shares must be finite and non-negative, got {shares.tolist()}")
    if abs(shares.sum() - 1) > _SHARE_TOLERANCE:
        raise ValueError(f"ideal shares must sum to 1, got {shares.sum():.6g}")
    return shares


def check_labels(labels: np.ndarray | Sequence[int], n_choices: int) -> np.ndarray:
    """Labels as an int array, each a choice index, ``ABSTAINED`` or ``FILTERED``."""
    labels = np.asarray(labels)
    if labels.size == 0:
        return labels.astype(int).reshape(-1)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be a 1-D integer array, got {labels.dtype} {labels.shape}")
    bad = labels[(labels >= n_choices) | (labels < FILTERED)]
    if bad.size:
        raise ValueError(
            f"labels {sorted(set(bad.tolist()))} are neither a choice index "
            f"(0..{n_choices - 1}) nor ABSTAINED ({ABSTAINED}) / FILTERED ({FILTERED})"
        )
    return labels
