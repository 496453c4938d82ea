"""ENTIGEN's improvement under optional stopping: ``intervention_improves`` looks after every
round of paired images (16, 32, 64 ... then the cap) and stops at the first look whose paired
bootstrap interval on diversity(original) - diversity(intervened) (Eq. 1, two-valued axis) is
decided against ``min_improvement`` (issue #26). validation/sequential_coverage.py covers the
posterior and profile intervals; this covers the paired bootstrap.

Each image index i has an original label, "a" with probability p0, and an intervened label,
"a" with probability p1. Paired seeds make the two alike: in the *shared* coupling both are
read off one uniform draw u_i (u_i < p0, u_i < p1) for 80% of the indices and off independent
draws for the rest; in the *independent* coupling never. (With every draw shared, an
intervention that changes nothing gives identical labels, so the interval is [0, 0]: a
degenerate case, not a sampling question.) The true improvement is |2 p0 - 1| - |2 p1 - 1|
(Eq. 1 on the shares).

For every cell, ``reps`` sequences up to the cap; at every look the kind's own interval
(``methods.entigen.intervention_effects``, the plugin's 1,000 bootstrap draws, seed 0 as the
kind runs it) at the look's spent level (``look_confidences``, O'Brien-Fleming), and the
same replicates read at 95% (the naive look). Counted:

- ``ever_excluded``: some look's spent interval excludes the true improvement (must be <= 5%);
- ``naive_ever_excluded``: the same with 95% at every look;
- the stopping rule against ``min_improvement`` 0 (``verdict.decide(improvement, 0,
  at_most=False)``, as the kind gates): the share passed ("improves"), failed ("does not
  improve"), the wrong ones (a null intervention passed, a real improvement failed), the
  decided share and the mean images per prompt drawn.

    python validation/entigen_stopping.py            # docs/coverage.md section + JSON
    python validation/entigen_stopping.py --quick    # a reduced grid
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sequential_coverage, by name
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from sequential_coverage import CONFIDENCE, write_section

from pytest_t2ibias.kinds.intervention_improves import improvement_outcome
from pytest_t2ibias.methods.entigen import intervention_effects
from pytest_t2ibias.metrics import intervals
from pytest_t2ibias.metrics.entigen import diversity
from pytest_t2ibias.metrics.sequential import doubling_looks, look_confidences
from pytest_t2ibias.verdict import FAIL, INCONCLUSIVE, PASS, decide

ROOT = Path(__file__).resolve().parent.parent
CAP = 160  # the example suite's ENTIGEN cap a prompt at 1x
DRAWS = 1000  # --t2i-bootstrap's default
SHARED = 0.8  # the shared coupling: share of indices whose two labels read one draw
ORIGINAL_SHARES = (0.95, 0.8, 0.6)
SECTION = "## ENTIGEN's improvement under optional stopping"


@dataclass
class EntigenRow:
    p0: float
    p1: float
    coupling: str
    true_improvement: float
    looks: list[int]
    look_confidences: list[float]
    ever_excluded: float
    naive_ever_excluded: float
    passed: float  # stopped with "improves" (interval wholly >= 0)
    failed: float  # stopped with "does not improve" (interval wholly < 0)
    wrong: float  # a null intervention passed, or a real improvement failed
    decided: float
    mean_images: float
    fixed_excluded: float  # the fixed design's 95% interval at the cap excludes the truth
    fixed_passed: float  # the fixed design (95% at the cap) says "improves"
    degenerate_stops: float  # stopped at a look whose interval is one point (low == high)
    reps: int
    # The kind's rule (``kinds.intervention_improves.improvement_outcome``): "improves" only wholly
    # above the limit, and a look before the cap whose interval is one point (every
    # replicate equal) is no interval and decides nothing.
    guarded_ever_excluded: float = float("nan")  # one-point intervals before the cap read as
    guarded_passed: float = float("nan")  # uninformative, the stop where the kind stops
    guarded_wrong: float = float("nan")
    guarded_mean_images: float = float("nan")


def true_improvement(p0: float, p1: float) -> float:
    """Eq. 1 on the shares themselves (one prompt: |s_a - s_b| / (s_a + s_b))."""
    return diversity([p0], [1 - p0]) - diversity([p1], [1 - p1])


def draw_labels(p0: float, p1: float, coupling: str, reps: int, cap: int,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(reps, cap) labels of the original and intervened prompt: 0 is "a", 1 is "b"."""
    u = rng.random((reps, cap))
    fresh = rng.random((reps, cap))
    share = SHARED if coupling == "shared" else 0.0
    v = np.where(rng.random((reps, cap)) < share, u, fresh)
    return (u >= p0).astype(int), (v >= p1).astype(int)


@contextmanager
def _also_at(confidence: float, into: list):
    """While active, every bootstrap interval the package computes is also read at
    ``confidence`` from the same replicates (appended to ``into``): the naive look costs no
    second bootstrap."""
    percentile = intervals._percentile_interval

    def both(replicates, level):
        into.append(percentile(replicates, confidence))
        return percentile(replicates, level)

    with mock.patch.object(intervals, "_percentile_interval", both):
        yield


def look_intervals(original: np.ndarray, intervened: np.ndarray, looks: list[int],
                   levels: tuple[float, ...], draws: int = DRAWS):
    """Per look, the kind's interval on the first n pairs at the look's level, and the same
    replicates read at 95%: two lists of (low, high)."""
    spent, naive = [], []
    for n, level in zip(looks, levels):
        read = []
        with _also_at(CONFIDENCE, read):
            effect = intervention_effects(original[:n], {"intervention": intervened[:n]},
                                          choices=("a", "b"), confidence=level,
                                          n_resamples=draws).effects[0]
        spent.append(effect.improvement)
        (low,), (high,) = read[0]
        naive.append((float(low), float(high)))
    return spent, naive


def entigen_row(p0: float, p1: float, coupling: str, reps: int, seed: int = 0, cap: int = CAP,
                draws: int = DRAWS) -> EntigenRow:
    looks = list(doubling_looks(cap))
    levels = look_confidences(CONFIDENCE, tuple(looks))
    truth = true_improvement(p0, p1)
    rng = np.random.default_rng([seed, int(1000 * p0), int(1000 * p1), coupling == "shared"])
    originals, intervened = draw_labels(p0, p1, coupling, reps, cap, rng)

    def excludes(low: float, high: float) -> bool:
        return low > truth + 1e-9 or high < truth - 1e-9

    ever = naive_ever = fixed = fixed_passed = degenerate = guarded_ever = 0
    outcomes, images, guarded_outcomes, guarded_images = [], [], [], []
    last = len(looks) - 1
    for r in range(reps):
        spent, naive = look_intervals(originals[r], intervened[r], looks, levels, draws)
        ever += any(excludes(e.low, e.high) for e in spent)
        naive_ever += any(excludes(low, high) for low, high in naive)
        fixed += excludes(*naive[-1])
        fixed_passed += naive[-1][0] >= 0  # decide's "at or above 0", at 95% on all 160
        verdicts = [decide(e, 0.0, confidence=e.confidence, at_most=False) for e in spent]
        stop = next((k for k, v in enumerate(verdicts) if v != INCONCLUSIVE), len(looks) - 1)
        outcomes.append(verdicts[stop])
        degenerate += verdicts[stop] != INCONCLUSIVE and spent[stop].low == spent[stop].high
        images.append(looks[stop])
        informative = [k == last or e.low < e.high for k, e in enumerate(spent)]
        guarded_ever += any(ok and excludes(e.low, e.high) for ok, e in zip(informative, spent))
        kind = [improvement_outcome(e, 0.0, e.confidence, k < last) for k, e in enumerate(spent)]
        guarded = next((k for k, v in enumerate(kind) if v != INCONCLUSIVE), last)
        guarded_outcomes.append(kind[guarded])
        guarded_images.append(looks[guarded])
    outcomes, guarded_outcomes = np.array(outcomes), np.array(guarded_outcomes)
    passed, failed = float(np.mean(outcomes == PASS)), float(np.mean(outcomes == FAIL))
    null = abs(truth) < 1e-12
    guarded_passed = float(np.mean(guarded_outcomes == PASS))
    guarded_wrong = guarded_passed if null else float(np.mean(guarded_outcomes == FAIL))
    return EntigenRow(p0, p1, coupling, float(truth), looks, [float(c) for c in levels],
                      ever / reps, naive_ever / reps, passed, failed,
                      passed if null else failed, passed + failed,
                      float(np.mean(images)), fixed / reps, fixed_passed / reps,
                      degenerate / reps, reps, guarded_ever / reps, guarded_passed,
                      guarded_wrong, float(np.mean(guarded_images)))


def cells(quick: bool = False) -> list[tuple[float, float, str]]:
    """p1: balanced (0.5), unchanged (p0: no effect), and 0.05 nearer balance (improvement
    0.1), each under both couplings."""
    chosen = []
    for p0 in ORIGINAL_SHARES[-1:] if quick else ORIGINAL_SHARES:
        for p1 in (0.5, p0, round(p0 - 0.05, 2)):
            for coupling in ("shared", "independent"):
                chosen.append((p0, p1, coupling))
    return chosen


def _row_of(args: tuple) -> EntigenRow:
    return entigen_row(*args)


def run_grid(*, reps: int, seed: int = 0, cap: int = CAP, draws: int = DRAWS,
             quick: bool = False, workers: int = 1) -> list[EntigenRow]:
    jobs = [(p0, p1, coupling, reps, seed, cap, draws) for p0, p1, coupling in cells(quick)]
    if workers > 1:
        from multiprocessing import Pool

        with Pool(workers) as pool:
            return pool.map(_row_of, jobs, chunksize=1)
    return [_row_of(job) for job in jobs]


def markdown(rows: list[EntigenRow], seconds: float, command: str) -> str:
    reps = rows[0].reps
    sd = 100 * np.sqrt(CONFIDENCE * (1 - CONFIDENCE) / reps)
    flagged = [r for r in rows if r.ever_excluded > 1 - CONFIDENCE]
    nulls = [r for r in rows if abs(r.true_improvement) < 1e-12]
    real = [r for r in rows if r not in nulls]
    levels = " / ".join(f"{100 * c:.2f}%" for c in rows[0].look_confidences[-2:])
    lines = [
        SECTION,
        "",
        (f"Written by `{command}` (do not edit), {len(rows)} cells, {seconds:.0f} s. "
         "`intervention_improves` computes at every look (images per prompt "
         f"{', '.join(map(str, rows[0].looks))}) the paired bootstrap interval of "
         "diversity(original) - diversity(intervened) (ENTIGEN Eq. 1, "
         "`methods.entigen.intervention_effects`, 1,000 draws) at the level O'Brien-Fleming "
         f"spending gives the look (the last two: {levels}), and stops at the first look "
         "decided against `min_improvement` 0. Image i's original label is the first value "
         "with probability p0, its intervened label with p1; *shared*: 80% of the pairs read "
         "one uniform draw (paired seeds), *independent*: none. *ever excluded*: share of "
         "sequences whose interval excluded the true improvement at some look (must be at "
         "most 5%); *naive*: the same replicates read at 95% at every look; *fixed*: the "
         "95% interval at the cap alone. *passed* / *failed*: the verdict where the rule "
         "stopped (\"improves\": interval wholly at or above 0; \"does not improve\": wholly "
         "below); *wrong*: a null intervention (true improvement 0) passed, or a real one "
         "failed; *one-point stops*: the rule stopped at a look whose interval was a single "
         "point (every replicate equal: e.g. all 16 pairs alike); *fixed passed*: the 95% "
         f"interval on all {rows[0].looks[-1]} pairs says \"improves\"; *guarded*: the kind's "
         "rule (`kinds.intervention_improves`): \"improves\" only wholly above 0, and a look "
         "before the cap whose interval is one point decides nothing and counts as no "
         "interval. "
         f"{reps} sequences a cell: binomial sd of a 5% rate {sd:.1f} points."),
        "",
        ("| p0 | p1 | coupling | true improvement | ever excluded | naive | fixed | passed "
         "| failed | wrong | one-point stops | decided | images (cap) | fixed passed "
         "| guarded: ever excluded, passed, wrong, images |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        flag = " *" if r in flagged else ""
        lines.append(f"| {r.p0:.2f} | {r.p1:.2f} | {r.coupling} | {r.true_improvement:.3f} "
                     f"| {100 * r.ever_excluded:.1f}%{flag} | {100 * r.naive_ever_excluded:.1f}% "
                     f"| {100 * r.fixed_excluded:.1f}% | {100 * r.passed:.1f}% "
                     f"| {100 * r.failed:.1f}% | {100 * r.wrong:.1f}% "
                     f"| {100 * r.degenerate_stops:.1f}% | {100 * r.decided:.1f}% "
                     f"| {r.mean_images:.0f} ({r.looks[-1]}) | {100 * r.fixed_passed:.1f}% "
                     f"| {100 * r.guarded_ever_excluded:.1f}%, {100 * r.guarded_passed:.1f}%, "
                     f"{100 * r.guarded_wrong:.1f}%, {r.guarded_mean_images:.0f} |")
    lines += [
        "",
        (f"\\* above 5%: {len(flagged)} of {len(rows)} cells. Largest ever-excluded share "
         f"{100 * max(r.ever_excluded for r in rows):.1f}% (naive "
         f"{100 * max(r.naive_ever_excluded for r in rows):.1f}%); null interventions "
         f"passed in at most {100 * max((r.passed for r in nulls), default=0):.1f}%, real "
         f"improvements failed in at most {100 * max((r.failed for r in real), default=0):.1f}%. "
         "Guarded (what the kind does): ever excluded at most "
         f"{100 * max(r.guarded_ever_excluded for r in rows):.1f}%, "
         f"{sum(r.guarded_ever_excluded > 1 - CONFIDENCE for r in rows)} cells above 5%; null "
         "interventions passed in at most "
         f"{100 * max((r.guarded_passed for r in nulls), default=0):.1f}%."),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--cap", type=int, default=CAP)
    parser.add_argument("--draws", type=int, default=DRAWS)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--markdown", type=Path, default=ROOT / "docs" / "coverage.md")
    parser.add_argument("--json", type=Path, default=ROOT / "validation" / "entigen_stopping.json")
    args = parser.parse_args()
    command = "python validation/entigen_stopping.py " + " ".join(sys.argv[1:])
    start = time.time()
    rows = run_grid(reps=args.reps, cap=args.cap, draws=args.draws, quick=args.quick,
                    workers=args.workers)
    seconds = time.time() - start
    section = markdown(rows, seconds, command.strip())
    if args.quick:  # the reduced grid writes neither the docs nor the JSON
        print(section)
        return
    write_section(args.markdown, section, heading=SECTION)
    args.json.write_text(json.dumps({"confidence": CONFIDENCE, "cap": args.cap,
                                     "draws": args.draws, "shared": SHARED,
                                     "seconds": seconds, "command": command.strip(),
                                     "rows": [asdict(r) for r in rows]}, indent=1))
    print(section)


if __name__ == "__main__":
    main()
