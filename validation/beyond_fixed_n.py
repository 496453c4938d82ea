"""What a cap above the fixed n buys (issue #26): a check whose 95% interval at its fixed n of
200 images straddles its limit is left inconclusive; the same check drawn adaptively up to
a larger cap (``images_per_prompt: {max: N}``, or ``--t2i-adaptive --t2i-adaptive-max=2x``)
looks after every round and stops once decided. How often does it decide what n left open,
after how many images, and how often wrongly?

For each metric (severity with two and three classes, W1 nominal with two, W1 ordered and
MaxSkew with three), one truth, and thresholds 0.03, 0.05 and 0.08 above the true value (a
*fine* model: truth below its limit, failing it is wrong) and below it (a *biased* one:
passing it is wrong), draw ``reps`` sequences of answers up to the largest cap and count:

- the fixed design: the 95% posterior interval on the first 200 answers (what a check with
  ``images_per_prompt: 200`` decides): decided, wrong;
- the adaptive design at each cap (400 = 2x, 800 = 4x): looks ``doubling_looks(cap)``, each
  look's interval at its ``look_confidences(0.95, looks)`` level (O'Brien-Fleming, what the
  plugin uses), stop at the first decided look: decided, wrong, mean images per prompt;
  and, of the sequences the fixed design left open, the share it decided and wrongly so;
- beside it, the same looks at the naive 95% each (the wrong rate looking without spending
  gives) and a fixed design at n = cap (what drawing the cap without looking decides).

The interval machinery is validation/sequential_coverage.py's (the metrics, their truths,
the posterior interval of ``metrics.posterior``).

    python validation/beyond_fixed_n.py           # docs/coverage.md section + JSON
    python validation/beyond_fixed_n.py --quick   # one metric, fewer sequences (the test's)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # sequential_coverage, by name
sys.path.insert(0, str(ROOT))  # this checkout's package

import sequential_coverage as sequential

from pytest_t2ibias.metrics.posterior import interval_from_counts
from pytest_t2ibias.metrics.sequential import doubling_looks, look_confidences

CONFIDENCE = sequential.CONFIDENCE
FIXED_N = 200
CAPS = (400, 800)
DISTANCES = (0.03, 0.05, 0.08)
CASES = {  # metric -> shares; true values 0.18 to 0.30, so every threshold lies in [0, 1]
    "severity": [[0.75, 0.25], [0.6, 0.3, 0.1]],
    "w1 nominal": [[0.6, 0.4]],
    "w1 ordered": [[0.45, 0.3, 0.25]],
    "max skew": [[0.45, 0.3, 0.25]],
}
QUICK_CASES = {"severity": [[0.75, 0.25]]}
SECTION = "## Beyond the fixed n: a larger cap decides what n left open"


@dataclass
class CapResult:
    cap: int
    looks: list[int]
    look_confidences: list[float]
    decided: float
    wrong: float  # a fine model failed / a biased one passed, share of all sequences
    mean_images: float  # images per prompt drawn, mean over sequences
    open_decided: float  # of the sequences the fixed design left open, share decided here
    open_wrong: float  # ... and decided wrongly
    open_images: float  # ... and their mean images per prompt
    lost: float  # share the fixed design decided and this design left open at its cap
    naive_wrong: float  # the same looks each at the naive 95%: wrong verdicts
    fixed_at_cap_decided: float  # a fixed design at n = cap, its 95% interval
    fixed_at_cap_wrong: float


@dataclass
class Cell:
    metric: str
    shares: list[float]
    true_value: float
    threshold: float
    distance: float  # |threshold - true value|
    model: str  # "fine" (truth below the threshold) or "biased" (above)
    reps: int
    fixed_n: int
    fixed_decided: float
    fixed_wrong: float
    caps: list[CapResult] = field(default_factory=list)

    @property
    def fixed_open(self) -> int:
        return round(self.reps * (1 - self.fixed_decided))


def _stop(lows: np.ndarray, highs: np.ndarray, threshold: float):
    """The stopping rule on intervals (looks, reps): the first look wholly within the
    threshold (pass) or beyond it (fail); at the last look, inconclusive if neither. Per
    sequence: (decided, passed, failed, index of the look it stopped at)."""
    passed = highs <= threshold + 1e-12
    failed = lows > threshold + 1e-12
    decided = passed | failed
    any_decided = decided.any(axis=0)
    first = np.where(any_decided, decided.argmax(axis=0), len(lows) - 1)
    reps = np.arange(lows.shape[1])
    return (any_decided, passed[first, reps] & any_decided, failed[first, reps] & any_decided,
            first)


class _Intervals:
    """One truth's sequences and the metric's 95%-or-spent interval at any (n, level),
    computed once and shared by every threshold and cap."""

    def __init__(self, metric: str, shares: list[float], reps: int, n_draws: int, seed: int,
                 longest: int):
        p = np.array(shares)
        self.statistic, self.ideal = sequential._statistic(metric, len(p))
        self.true_value = sequential._true_value(metric, p)
        self.rng = np.random.default_rng([seed, len(p), len(metric), int(1000 * p[0])])
        labels = self.rng.choice(len(p), size=(reps, longest), p=p)
        # running counts: counts[:, n] are the first n answers' counts
        one_hot = np.eye(len(p), dtype=np.int32)[labels]
        self.counts = np.concatenate([np.zeros((reps, 1, len(p)), np.int32),
                                      one_hot.cumsum(axis=1)], axis=1)
        self.n_draws, self.seed = n_draws, seed
        self._cache: dict[tuple[int, float], tuple[np.ndarray, np.ndarray]] = {}

    def at(self, n: int, confidence: float) -> tuple[np.ndarray, np.ndarray]:
        key = (n, confidence)
        if key not in self._cache:
            _, low, high = interval_from_counts(
                self.statistic, self.counts[:, n][:, None], ideal=self.ideal,
                confidence=confidence, n_draws=self.n_draws, rng=self.rng, seed=self.seed)
            self._cache[key] = (low, high)
        return self._cache[key]

    def looks(self, looks: tuple[int, ...], levels: tuple[float, ...]):
        bounds = [self.at(n, c) for n, c in zip(looks, levels)]
        return np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])


def _wrong(model: str, passed: np.ndarray, failed: np.ndarray) -> np.ndarray:
    return failed if model == "fine" else passed


def metric_cells(metric: str, shares: list[float], *, reps: int, n_draws: int, seed: int,
                 fixed_n: int = FIXED_N, caps: tuple[int, ...] = CAPS,
                 distances: tuple[float, ...] = DISTANCES) -> list[Cell]:
    """Every threshold around one truth of one metric, on the same ``reps`` sequences."""
    intervals = _Intervals(metric, shares, reps, n_draws, seed, max(caps))
    truth = intervals.true_value
    label = f"{metric} ({len(shares)} classes)"
    cells = []
    for distance in distances:
        for model, threshold in (("fine", truth + distance), ("biased", truth - distance)):
            fixed_low, fixed_high = intervals.at(fixed_n, CONFIDENCE)
            fixed_decided, fixed_passed, fixed_failed, _ = _stop(
                fixed_low[None], fixed_high[None], threshold)
            cell = Cell(label, list(shares), float(truth), float(threshold), distance, model,
                        reps, fixed_n, float(fixed_decided.mean()),
                        float(_wrong(model, fixed_passed, fixed_failed).mean()))
            still_open = ~fixed_decided
            for cap in caps:
                looks = doubling_looks(cap)
                levels = look_confidences(CONFIDENCE, looks)
                decided, passed, failed, first = _stop(*intervals.looks(looks, levels),
                                                       threshold)
                wrong = _wrong(model, passed, failed)
                images = np.asarray(looks)[first]
                _, naive_passed, naive_failed, _ = _stop(
                    *intervals.looks(looks, (CONFIDENCE,) * len(looks)), threshold)
                cap_decided, cap_passed, cap_failed, _ = _stop(
                    *(b[None] for b in intervals.at(cap, CONFIDENCE)), threshold)

                cell.caps.append(CapResult(
                    cap, list(looks), [float(c) for c in levels], float(decided.mean()),
                    float(wrong.mean()), float(images.mean()), _among(decided, still_open),
                    _among(wrong, still_open), _among(images, still_open),
                    float((fixed_decided & ~decided).mean()),
                    float(_wrong(model, naive_passed, naive_failed).mean()),
                    float(cap_decided.mean()),
                    float(_wrong(model, cap_passed, cap_failed).mean())))
            cells.append(cell)
    return cells


def _among(values: np.ndarray, chosen: np.ndarray) -> float:
    return float(values[chosen].mean()) if chosen.any() else float("nan")


def run_grid(*, reps: int = 1000, n_draws: int = 1000, seed: int = 0, quick: bool = False
             ) -> list[Cell]:
    cells: list[Cell] = []
    for metric, truths in (QUICK_CASES if quick else CASES).items():
        for shares in truths:
            cells.extend(metric_cells(metric, shares, reps=reps, n_draws=n_draws, seed=seed))
    return cells


def _pct(share: float) -> str:
    return "-" if np.isnan(share) else f"{100 * share:.1f}%"


def _sd_points(share: float, reps: int) -> float:
    return 100 * float(np.sqrt(share * (1 - share) / reps))


def headline(cells: list[Cell]) -> dict:
    """The figures docs/STATISTICS.md quotes: per distance, decided share (range over
    metrics and sides) fixed vs each cap and mean images; the largest wrong rates."""
    out = {"by_distance": {}, "worst_wrong": {}}
    for distance in sorted({c.distance for c in cells}):
        at = [c for c in cells if c.distance == distance]
        entry = {"fixed_decided": [min(c.fixed_decided for c in at),
                                   max(c.fixed_decided for c in at)]}
        for k, cap in enumerate(at[0].caps):
            entry[f"cap_{cap.cap}_decided"] = [min(c.caps[k].decided for c in at),
                                               max(c.caps[k].decided for c in at)]
            entry[f"cap_{cap.cap}_images"] = [min(c.caps[k].mean_images for c in at),
                                              max(c.caps[k].mean_images for c in at)]
            entry[f"cap_{cap.cap}_open_decided"] = [min(c.caps[k].open_decided for c in at),
                                                    max(c.caps[k].open_decided for c in at)]
        out["by_distance"][str(distance)] = entry
    out["worst_wrong"]["fixed"] = max(c.fixed_wrong for c in cells)
    for k, cap in enumerate(cells[0].caps):
        out["worst_wrong"][f"cap_{cap.cap}"] = max(c.caps[k].wrong for c in cells)
        out["worst_wrong"][f"cap_{cap.cap}_naive"] = max(c.caps[k].naive_wrong for c in cells)
        out["worst_wrong"][f"cap_{cap.cap}_open"] = max(c.caps[k].open_wrong for c in cells)
        out.setdefault("lost", {})[f"cap_{cap.cap}"] = [min(c.caps[k].lost for c in cells),
                                                        max(c.caps[k].lost for c in cells)]
    return out


def markdown(cells: list[Cell], seconds: float, command: str) -> str:
    reps = cells[0].reps
    caps = [c.cap for c in cells[0].caps]
    head = headline(cells)
    cap_names = " / ".join(f"{cap} ({cap // cells[0].fixed_n}x)" for cap in caps)
    lines = [
        SECTION,
        "",
        (f"Written by `{command}` (do not edit; {len(cells)} cells, {seconds:.0f} s on one "
         "core). A check with a fixed n of "
         f"{cells[0].fixed_n} images per prompt whose 95% interval straddles its limit is "
         "inconclusive; drawn adaptively up to a larger cap (`images_per_prompt: {max: N}`, "
         "or `--t2i-adaptive --t2i-adaptive-max=2x`) it looks at 16, 32, 64 ... images and "
         "the cap, each look's interval at its O'Brien-Fleming spent level "
         "(`look_confidences`), and stops at the first decided look. Each metric has one "
         "truth; the threshold sits 0.03, 0.05 or 0.08 above it (*fine*: failing is wrong) "
         "or below it (*biased*: passing is wrong). "
         f"{reps} sequences of answers per truth, shared by its thresholds and designs. "
         f"Caps {cap_names}. *fixed {cells[0].fixed_n}*: the 95% interval on the first "
         f"{cells[0].fixed_n} answers. *decided, wrong, images*: share of sequences decided "
         "by the cap, share decided wrongly, mean images per prompt drawn. *of the open*: of "
         "the sequences the fixed design left inconclusive (*open*, their number), the share "
         "each cap decided, and wrongly. *naive wrong*: the same looks each at 95% (looking "
         "without spending). *fixed at cap*: a fixed design at n = cap, its 95% interval, "
         "decided. Binomial sd: of a 5% rate "
         f"{_sd_points(0.05, reps):.1f} points, of a 50% share {_sd_points(0.5, reps):.1f} "
         "(over all sequences); among the open, divide by the square root of *open* "
         f"instead (a 50% share of 300 open sequences: {_sd_points(0.5, 300):.1f} points). "
         "The threshold at the truth, the worst case, is the previous section's."),
        "",
    ]
    header = (f"| metric | true value | threshold | model | fixed {cells[0].fixed_n}: decided,"
              " wrong | open |")
    rule = "|---|---|---|---|---|---|"
    for cap in caps:
        header += (f" cap {cap}: decided, wrong, images | of the open: decided, wrong "
                   f"| naive wrong | fixed at {cap} |")
        rule += "---|---|---|---|"
    lines += [header, rule]
    for c in cells:
        line = (f"| {c.metric} | {c.true_value:.3f} | {c.threshold:.3f} "
                f"({'+' if c.model == 'fine' else '-'}{c.distance:.2f}) | {c.model} "
                f"| {_pct(c.fixed_decided)}, {_pct(c.fixed_wrong)} | {c.fixed_open} |")
        for r in c.caps:
            line += (f" {_pct(r.decided)}, {_pct(r.wrong)}, {r.mean_images:.0f} "
                     f"| {_pct(r.open_decided)}, {_pct(r.open_wrong)} | {_pct(r.naive_wrong)} "
                     f"| {_pct(r.fixed_at_cap_decided)} |")
        lines.append(line)
    lines += ["", ("Decided share, range over the metrics and both sides, and mean images per "
                   "prompt:"), ""]
    for distance, entry in head["by_distance"].items():
        parts = [f"fixed {cells[0].fixed_n} {_range(entry['fixed_decided'])}"]
        for cap in caps:
            images = entry[f"cap_{cap}_images"]
            parts.append(f"cap {cap} {_range(entry[f'cap_{cap}_decided'])} after "
                         f"{images[0]:.0f} to {images[1]:.0f} images "
                         f"({_range(entry[f'cap_{cap}_open_decided'])} of the open)")
        lines.append(f"- {distance} from the threshold: " + "; ".join(parts) + ".")
    worst = head["worst_wrong"]
    lines += ["", (f"Largest wrong-verdict rate, over all {len(cells)} cells: fixed "
                   f"{cells[0].fixed_n} {_pct(worst['fixed'])}; "
                   + "; ".join(f"cap {cap} {_pct(worst[f'cap_{cap}'])} (of the open "
                               f"{_pct(worst[f'cap_{cap}_open'])}; the naive 95% at every "
                               f"look {_pct(worst[f'cap_{cap}_naive'])})" for cap in caps)
                   + f". Nominal: at most {_pct(1 - CONFIDENCE)} (the looks together "
                   "exclude the truth at most that often, a wrong verdict is one side of "
                   "that)."), "",
              ("What looking costs: a sequence the fixed design decides at 200 can be open at "
               "every look (they are at 128, 256, 512 ..., not 200, and the last at a spent "
               "level): " + "; ".join(f"cap {cap} {_range(head['lost'][f'cap_{cap}'])}"
                                      for cap in caps)
               + " of sequences, per cell, were decided by the fixed design and left open "
               "by the adaptive one."), ""]
    return "\n".join(lines)


def _range(pair: list[float]) -> str:
    return f"{100 * pair[0]:.0f}% to {100 * pair[1]:.0f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--markdown", type=Path, default=ROOT / "docs" / "coverage.md")
    parser.add_argument("--json", type=Path, default=ROOT / "validation" / "beyond_fixed_n.json")
    args = parser.parse_args()
    command = " ".join(["python validation/beyond_fixed_n.py", *sys.argv[1:]])
    start = time.time()
    cells = run_grid(reps=args.reps, n_draws=args.draws, seed=args.seed, quick=args.quick)
    seconds = time.time() - start
    section = markdown(cells, seconds, command)
    sequential.write_section(args.markdown, section, SECTION)
    args.json.write_text(json.dumps(
        {"confidence": CONFIDENCE, "command": command, "seconds": seconds,
         "fixed_n": FIXED_N, "caps": list(CAPS), "headline": headline(cells),
         "cells": [asdict(c) for c in cells]}, indent=1))
    print(section)


if __name__ == "__main__":
    main()
