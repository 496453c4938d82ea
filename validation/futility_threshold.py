"""Issue #46: choosing ``metrics.sequential.FUTILE_BELOW``, the chance to decide by the cap
below which an adaptive check stops, inconclusive, before its cap.

For a share (Jeffreys intervals at the O'Brien-Fleming spent levels, doubling looks, the
plugin's ``doubling_looks`` and ``look_confidences``) with truth p against a threshold, at
caps 128, 250 and 600, 1000 sequences each (seed 0): the share decided and the mean images
per prompt, for the rule off (gamma 0) and for gamma 5%, 1%, 2%, and the rule applied only
from a look at 25% or 40% of the cap (``from``). A threshold at the truth (0.6 vs 0.6) is
where the rule should save images; 0.1 or more from it, where it must not cost decisions.

    python validation/futility_threshold.py > validation/futility_threshold.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.stats import beta

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from pytest_t2ibias.metrics.sequential import (
    chances_to_decide,
    doubling_looks,
    look_confidences,
)

RULES = ((0, 0), (0.05, 0), (0.01, 0), (0.05, 0.25), (0.01, 0.25), (0.02, 0.4))
"""(gamma, the first fraction of the cap the rule applies from)."""


def run(p: float, threshold: float, cap: int, gamma: float, from_fraction: float,
        reps: int = 1000, seed: int = 0) -> tuple[float, float]:
    """The share of sequences decided and their mean images per prompt under the rule."""
    looks = list(doubling_looks(cap))
    levels = look_confidences(0.95, tuple(looks))
    rng = np.random.default_rng(seed)
    x = (rng.random((reps, cap)) < p).astype(int)

    def interval(n, confidence):
        k = x[:, :n].sum(1)
        tail = (1 - confidence) / 2
        return (k / n, np.where(k > 0, beta.ppf(tail, k + .5, n - k + .5), 0.),
                np.where(k < n, beta.ppf(1 - tail, k + .5, n - k + .5), 1.))

    done, decided, images = np.zeros(reps, bool), np.zeros(reps, bool), np.zeros(reps)
    for j, n in enumerate(looks):
        _, low, high = interval(n, levels[j])
        clear = (high <= threshold) | (low > threshold)
        last = j == len(looks) - 1
        futile = np.zeros(reps, bool)
        if not last and n / cap >= from_fraction:
            value, low_cap, high_cap = interval(n, levels[-1])
            chance = chances_to_decide(value, low_cap, high_cap, threshold,
                                       confidence=levels[-1], n=n, cap=cap)
            futile = ~clear & (np.nan_to_num(chance, nan=1) < gamma)
        stop = ~done & (clear | futile | last)
        decided[stop & clear] = True
        images[stop] = n
        done |= stop
    return float(decided.mean()), float(images.mean())


def main() -> None:
    for cap in (128, 250, 600):
        for p, threshold in ((0.6, 0.7), (0.6, 0.65), (0.6, 0.6), (0.5, 0.6), (0.6, 0.75)):
            row = [f"cap {cap} p {p} thr {threshold}:"]
            for gamma, start in RULES:
                decided, images = run(p, threshold, cap, gamma, start)
                row.append(f"g{gamma}/f{start}: {decided:.3f},{images:.0f}")
            print(" | ".join(row), flush=True)
    print("each cell: gamma/from: share decided, mean images per prompt (1000 sequences)")


if __name__ == "__main__":
    main()
