"""Measured coverage of the cost figures' 95% intervals (``metrics.costs``) where the truth is known.

Synthetic CLIP-like embeddings (d = 16): image i of the baseline and of the candidate share a
latent z_i (the shared seed), so the pairs are correlated as the models' images are; the
candidate's distribution is shifted, narrowed (less variety) or left alone. Each population
figure is computed once on a very large sample (the truth); then many data sets of n image
pairs are drawn, and we count how often each reported interval holds the truth.

    python validation/cost_coverage.py                 # full grid -> validation/cost_coverage.json
    python validation/cost_coverage.py --reps 300 --sizes 48   # what the unit test runs

Figures: the CLIPScore change (relative, paired jackknife = ratio of paired means), the Vendi
score change (relative, paired jackknife), KID (U-statistic over pairs, jackknife), the paired
change of the erasure share (Newcombe method 10), and one model's CLIPScore and Vendi against
a limit.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from pytest_t2ibias.metrics.costs import (
    clip_scores,
    erasure_change,
    kid_estimate,
    mean_change,
    mean_estimate,
    vendi_change,
    vendi_estimate,
)

ROOT = Path(__file__).resolve().parent.parent
CONFIDENCE = 0.95
DIM = 16
SIZES = (48, 200)


@dataclass(frozen=True)
class World:
    """How a baseline and a candidate draw embeddings from the shared latent."""

    name: str
    shift: float       # the candidate's mean moves this far along one direction
    spread: float      # the candidate's latent is scaled by this (< 1: less variety)
    erase: float       # extra share of candidate images that no longer show the subject


WORLDS = (World("no change", 0.0, 1.0, 0.0),
          World("shifted", 0.6, 1.0, 0.1),
          World("collapsed", 0.0, 0.4, 0.25))

_BASIS = np.random.default_rng(1234)
MEAN = _BASIS.normal(size=DIM) * 0.8
MIX = _BASIS.normal(size=(DIM, DIM)) / np.sqrt(DIM)
DIRECTION = _BASIS.normal(size=DIM)
TEXT = MEAN + 0.5 * DIRECTION  # the prompt's text embedding


def draw(world: World, n: int, rng: np.random.Generator):
    """n image pairs: baseline and candidate embeddings, and who still shows the subject."""
    z = rng.normal(size=(n, DIM))
    baseline = MEAN + z @ MIX + 0.3 * rng.normal(size=(n, DIM))
    candidate = (MEAN + world.shift * DIRECTION + world.spread * (z @ MIX)
                 + 0.3 * rng.normal(size=(n, DIM)))
    u = rng.random(n)
    baseline_kept = u < 0.9
    candidate_kept = u < 0.9 - world.erase  # paired: the same draw decides both
    return baseline, candidate, baseline_kept, candidate_kept


def _cubic(x, y):
    return (np.sum(x * y, axis=1) / DIM + 1.0) ** 3


def truths(world: World, rng: np.random.Generator, big: int = 400_000) -> dict[str, float]:
    b, c, bk, ck = draw(world, big, rng)
    b2, c2, _, _ = draw(world, big, rng)  # independent copies for the kernel means
    units = lambda e: e / np.linalg.norm(e, axis=1, keepdims=True)  # noqa: E731

    def population_vendi(e):
        u = units(e)
        eig = np.clip(np.linalg.eigvalsh(u.T @ u / len(u)), 1e-15, None)
        return float(np.exp(-np.sum(eig * np.log(eig))))

    mmd = float(np.mean(_cubic(b, b2)) + np.mean(_cubic(c, c2)) - 2 * np.mean(_cubic(b, c2)))
    sb, sc = clip_scores(b, TEXT).mean(), clip_scores(c, TEXT).mean()
    vb, vc = population_vendi(b), population_vendi(c)
    return {"clipscore change": float(sc / sb - 1), "clipscore": float(sb),
            "vendi change": vc / vb - 1, "vendi": vb, "kid": mmd,
            "erasure change": -world.erase}


@dataclass
class Row:
    figure: str
    world: str
    n: int
    truth: float
    coverage: float
    below: float
    """Share of intervals wholly below the truth (their high end < truth)."""
    above: float
    mean_width: float
    mean_value: float
    reps: int


def coverage_rows(world: World, n: int, reps: int, seed: int = 0,
                  truth: dict[str, float] | None = None) -> list[Row]:
    rng = np.random.default_rng(seed)
    truth = truth or truths(world, np.random.default_rng(seed + 10_000))
    estimates: dict[str, list] = {k: [] for k in truth}
    for _ in range(reps):
        b, c, bk, ck = draw(world, n, rng)
        estimates["clipscore change"].append(
            mean_change(clip_scores(b, TEXT), clip_scores(c, TEXT), confidence=CONFIDENCE))
        estimates["clipscore"].append(mean_estimate(clip_scores(b, TEXT), confidence=CONFIDENCE))
        estimates["vendi change"].append(vendi_change(b, c, confidence=CONFIDENCE))
        estimates["vendi"].append(vendi_estimate(b, confidence=CONFIDENCE))
        estimates["kid"].append(kid_estimate(b, c, confidence=CONFIDENCE))
        estimates["erasure change"].append(erasure_change(bk, ck, confidence=CONFIDENCE))
    rows = []
    for figure, found in estimates.items():
        t = truth[figure]
        low = np.array([e.low for e in found])
        high = np.array([e.high for e in found])
        rows.append(Row(figure, world.name, n, t,
                        float(np.mean((low <= t) & (t <= high))), float(np.mean(high < t)),
                        float(np.mean(low > t)), float(np.mean(high - low)),
                        float(np.mean([e.value for e in found])), reps))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--out", type=Path, default=ROOT / "validation" / "cost_coverage.json")
    args = parser.parse_args()
    started = time.time()
    rows = []
    for world in WORLDS:
        truth = truths(world, np.random.default_rng(99))
        for n in args.sizes:
            for row in coverage_rows(world, n, args.reps, seed=n, truth=truth):
                rows.append(row)
                print(f"{row.figure:18s} {row.world:10s} n={row.n:4d} truth {row.truth:+.4f} "
                      f"coverage {row.coverage:.3f} (below {row.below:.3f}, above "
                      f"{row.above:.3f}) width {row.mean_width:.4f}", flush=True)
    args.out.write_text(json.dumps({"confidence": CONFIDENCE, "reps": args.reps,
                                    "seconds": round(time.time() - started),
                                    "rows": [asdict(r) for r in rows]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
