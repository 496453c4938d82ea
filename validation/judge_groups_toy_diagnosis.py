"""Why the group reading of ``judge_groups_toy.py``'s first design over-shot (issue #45).

That design calibrated each world on toy-world renders through toy-sd's VAE (old rows
degraded by ``degrade_folder(by_label="old")``); its group figure averaged 0.490 against a
truth of 0.376 and its intervals were 0.69 wide at 60 images. This prints

1. the degraded judge's confusion on toy-sd's own images of "a photo of an old {subject}"
   (seeds 0-2, 60 each: the first design's worlds), each image's truth its undegraded
   reading, per subject and pooled;
2. the same judge on the renders through the VAE (2,400 people of those subjects, seed 45, as
   the first design drew them), old rows only;
3. a simulation of the group reading at 60 images a world (``metrics.posterior``'s interval,
   as ``entropy_below`` computes it): the world's confusion from 1 per subject, the
   calibration's old rows (120 men, 100 women, as the first design's) drawn from 1 (matched)
   or from 2 (the renders), and from 1 at ten times the rows.

    nice -n 10 python validation/judge_groups_toy_diagnosis.py --cache .t2ibias_cache
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import judge_groups_toy as toy


def world_confusion(layer: Any, root: Path, seeds: int, n: int) -> dict[str, np.ndarray]:
    """Subject -> (true male/female x read male/female) counts on its old images."""
    out = {}
    for subject in toy.SUBJECTS:
        counts = np.zeros((2, 2), dtype=int)
        for seed in range(seeds):
            labels = []
            for degraded in (False, True):
                instrument, axis = toy.instrument(root, layer, subject, seed, n, degraded)
                images = instrument.images([toy.age_prompt("old", subject)], per_prompt=n)
                labels.append(np.asarray(instrument.attributes(images, axis).labels))
            np.add.at(counts, (labels[0], labels[1]), 1)
        out[subject] = counts
    return out


def render_confusion(layer: Any, root: Path, pool: int) -> np.ndarray:
    """Counts on the old rows of the renders through toy-sd's VAE, degraded as the judge sees."""
    from example_suites.weak_judge import OLD, degrade_folder
    from pytest_t2ibias.methods.socialcf import labelled_folder
    from toyworld.labelled import vae_roundtrip_folder
    from toyworld.render import write_labelled_folder

    write_labelled_folder(root / "rendered", pool, seed=45, subjects=list(toy.SUBJECTS))
    vae_roundtrip_folder(root / "rendered", root / "clean", ROOT / "fixtures" / "toy-sd")
    degrade_folder(root / "clean", root / "degraded", by_label=OLD)
    images, rows = labelled_folder(root / "degraded")
    instrument, axis = toy.instrument(root, layer, "doctor", 0, 1, degraded=False)
    read = np.asarray(instrument.attributes(images, axis).labels)
    counts = np.zeros((2, 2), dtype=int)
    for row, label in zip(rows, read):
        if row.get("age") == OLD:
            counts[axis.choices.index(row["gender"]), label] += 1
    return counts


def simulate(world: dict[str, np.ndarray], calibration: np.ndarray | None, n: int,
             men: int, women: int, reps: int, rng: np.random.Generator) -> tuple[float, float, float]:
    """(coverage, mean error, mean width) of the group reading over the subjects."""
    from pytest_t2ibias.metrics import severity
    from pytest_t2ibias.metrics.posterior import _PooledSeverity, interval_from_counts

    covered, errors, widths = [], [], []
    for counts in world.values():
        truth_shares = counts.sum(axis=1) / counts.sum()
        confusion = counts / counts.sum(axis=1, keepdims=True)
        source = confusion if calibration is None else calibration / calibration.sum(axis=1, keepdims=True)
        judged = rng.multinomial(n, truth_shares @ confusion, size=reps)[:, None, :]
        drawn = np.stack([np.stack([rng.multinomial(men, source[0]), rng.multinomial(women, source[1])])
                          for _ in range(reps)])
        value, low, high = interval_from_counts(_PooledSeverity(2), judged, ideal=np.array([0.5, 0.5]),
                                                confidence=0.95, n_draws=400, rng=rng, calibration=drawn)
        truth = float(severity(truth_shares))
        covered += list((low <= truth) & (truth <= high))
        errors += list(value - truth)
        widths += list(high - low)
    return float(np.mean(covered)), float(np.mean(errors)), float(np.mean(widths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", default=str(ROOT / ".t2ibias_cache"))
    parser.add_argument("--reps", type=int, default=300)
    args = parser.parse_args()
    import torch

    from pytest_t2ibias.store.cache import Cache
    from pytest_t2ibias.store.request_layer import RequestLayer

    torch.set_num_threads(1)
    layer = RequestLayer(Cache(Path(args.cache)), batch_size=32)

    def rate(c: np.ndarray) -> str:
        return (f"men read as women {c[0, 1]}/{c[0].sum()} ({c[0, 1] / c[0].sum():.1%}), "
                f"women as men {c[1, 0]}/{c[1].sum()} ({c[1, 0] / c[1].sum():.1%})")

    with tempfile.TemporaryDirectory() as tmp:
        world = world_confusion(layer, Path(tmp), seeds=3, n=60)
        renders = render_confusion(layer, Path(tmp), 2400)
    print("1. toy-sd's own images of an old <subject>, seeds 0-2 x 60, truth = undegraded reading:")
    for subject, counts in world.items():
        print(f"   {subject:9} {rate(counts)}")
    print(f"   all       {rate(sum(world.values()))}")
    print(f"2. renders through toy-sd's VAE (2,400 people, seed 45), old rows: {rate(renders)}")
    rng = np.random.default_rng(45)
    print(f"3. the group reading simulated, 60 images a world, {args.reps} worlds a subject:")
    for label, calibration, men, women in (
            ("calibrated on its own images (120 men, 100 women)", None, 120, 100),
            ("calibrated on the renders (120 men, 100 women)", renders, 120, 100),
            ("calibrated on its own images (1,200 men, 1,000 women)", None, 1200, 1000)):
        cover, error, width = simulate(world, calibration, 60, men, women, args.reps, rng)
        print(f"   {label}: covers {cover:.1%}, mean error {error:+.3f}, mean width {width:.3f}")


if __name__ == "__main__":
    main()
