"""Measured coverage of the package's 95% intervals on data drawn from known distributions.

For every metric, true distribution and number of images n, draw many data sets, compute the
interval each would report, and count how often it holds the true value ("coverage") and how
often its low end is at most the truth (what a "fail when low > threshold" gate relies on).

    python validation/coverage.py                      # full grid: docs/coverage.md + JSON
    python validation/coverage.py --reps 400 --quick   # the reduced grid of the unit test

Metrics: a share (Jeffreys; exact, summed over the binomial), normalised W1 nominal (= total
variation) and ordered, OpenBias severity (single prompt, ``metrics.posterior``), the IS entry
IS[x][y] (initial prompt vs two pooled counterfactual prompts) and the paired IS_mit, each
with interval="posterior" and interval="profile" (3-class IS rows, nominal and ordered, at
n = 48, 200 and 1000 for the profile only).

    python validation/coverage.py --only-profile       # recompute the profile rows only,
                                                       # the others read from the JSON
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from pytest_t2ibias.metrics import (
    intersectional_sensitivity,
    jeffreys_interval,
    mitigation_effect,
    normalised_w1,
    severity,
)
from pytest_t2ibias.metrics.posterior import (
    _MaxSkew,
    _PooledSeverity,
    _PooledW1,
    interval_from_counts,
)

ROOT = Path(__file__).resolve().parent.parent
CONFIDENCE = 0.95
SIZES = (10, 48, 200, 1000)

TRUTHS = {  # name -> shares; near-threshold sits at a typical gate threshold (w̄ about 0.2)
    2: {"uniform": [0.5, 0.5], "near-threshold": [0.6, 0.4], "skewed": [0.8, 0.2],
        "one-class": [1.0, 0.0]},
    3: {"uniform": [1 / 3] * 3, "near-threshold": [0.45, 0.3, 0.25], "skewed": [0.6, 0.3, 0.1],
        "one-class": [1.0, 0.0, 0.0]},
}


@dataclass
class Row:
    metric: str
    truth: str
    n: int
    true_value: float
    coverage: float
    low_ok: float  # share of intervals whose low end is <= the truth
    mean_width: float
    reps: int
    method: str
    high_ok: float = float("nan")  # share whose high end is >= the truth ("IS < 0" gates)


def share_row(shares: list[float], truth: str, n: int) -> Row:
    """Jeffreys interval of the first choice's share; exact over all n + 1 outcomes."""
    from scipy.stats import binom

    p = shares[0]
    pmf = binom.pmf(np.arange(n + 1), n, p)
    intervals = [jeffreys_interval(k, n, CONFIDENCE) for k in range(n + 1)]
    covered = np.array([e.low <= p + 1e-12 and p - 1e-12 <= e.high for e in intervals])
    low_ok = np.array([e.low <= p + 1e-12 for e in intervals])
    high_ok = np.array([e.high >= p - 1e-12 for e in intervals])
    width = np.array([e.high - e.low for e in intervals])
    return Row(f"share ({len(shares)} classes)", truth, n, p, float(pmf @ covered),
               float(pmf @ low_ok), float(pmf @ width), 0, "jeffreys (exact)",
               float(pmf @ high_ok))


def distance_row(metric: str, shares: list[float], truth: str, n: int, reps: int,
                 n_draws: int, seed: int) -> Row:
    """One prompt of n images; the interval of ``metrics.posterior`` on each simulated set."""
    p = np.array(shares)
    ideal = np.full(len(p), 1 / len(p))
    if metric == "severity":
        statistic, true_value = _PooledSeverity(len(p)), float(severity(p))
    elif metric == "max skew":
        statistic = _MaxSkew(tuple(ideal.tolist()))
        true_value = float(statistic([p]))
    else:
        ordered = metric == "w1 ordered"
        statistic = _PooledW1(tuple(ideal.tolist()), ordered)
        true_value = float(normalised_w1(p, ideal, ordered))
    rng = np.random.default_rng([seed, n, len(p)])
    lows, highs = [], []
    for start in range(0, reps, 250):
        counts = rng.multinomial(n, p, size=min(250, reps - start))[:, None, :]
        _, low, high = interval_from_counts(statistic, counts, ideal=ideal, confidence=CONFIDENCE,
                                            n_draws=n_draws, rng=rng, seed=seed)
        lows.append(low)
        highs.append(high)
    return _row(f"{metric} ({len(p)} classes)", truth, n, true_value, np.concatenate(lows),
                np.concatenate(highs), "posterior")


IS_TRUTHS = {  # name -> (initial shares, [counterfactual shares]); 2 classes on axis y
    "all balanced": ([0.5, 0.5], [[0.5, 0.5], [0.5, 0.5]]),
    "helps": ([0.7, 0.3], [[0.5, 0.5], [0.5, 0.5]]),
    "equal, not ideal": ([0.7, 0.3], [[0.9, 0.1], [0.5, 0.5]]),
    "hurts": ([0.5, 0.5], [[0.8, 0.2], [0.6, 0.4]]),
}

MIT_TRUTHS = {  # name -> (before shares, after shares); image i of both from one seed
    "both balanced": ([0.5, 0.5], [0.5, 0.5]),
    "fixed": ([0.7, 0.3], [0.5, 0.5]),
    "unchanged skew": ([0.7, 0.3], [0.7, 0.3]),
}
SAME_SEED_AGREEMENT = 0.5  # share of paired images whose attribute the seed alone decides


IS3_TRUTHS = {  # 3 classes on axis y, nominal and ordered; counterfactuals = values of x
    "all balanced": ([1 / 3] * 3, [[1 / 3] * 3] * 2),
    "helps": ([0.6, 0.3, 0.1], [[1 / 3] * 3] * 2),
    "hurts": ([1 / 3] * 3, [[0.7, 0.2, 0.1], [0.5, 0.3, 0.2]]),
}


def is_row(truth: str, n: int, reps: int, n_draws: int, seed: int,
           interval: str = "posterior", classes: int = 2, ordered: bool = False) -> Row:
    """IS[x][y]: the initial prompt and x's two counterfactual prompts, n images each."""
    initial, counterfactuals = (IS_TRUTHS if classes == 2 else IS3_TRUTHS)[truth]
    ideal = np.full(classes, 1 / classes)
    pooled = np.mean(counterfactuals, axis=0)
    true_value = float(normalised_w1(np.array(initial), ideal, ordered)
                       - normalised_w1(pooled, ideal, ordered))
    rng = np.random.default_rng([seed, n, 7])
    choices = {"x": ["a", "b"], "y": ["u", "v", "w"][:classes]}
    lows, highs = [], []
    for r in range(reps):
        def labels(shares):
            return rng.choice(len(shares), size=n, p=shares)

        matrix = intersectional_sensitivity(
            {"x": labels([0.5, 0.5]), "y": labels(initial)},
            {"x": {v: {"x": np.full(n, i), "y": labels(cf)}
                   for i, (v, cf) in enumerate(zip("ab", counterfactuals))}},
            choices, ordered={"y": ordered}, confidence=CONFIDENCE, n_resamples=n_draws,
            seed=r, interval=interval,
        )
        entry = matrix.entry("x", "y")
        lows.append(entry.low)
        highs.append(entry.high)
    kind = f"{classes} classes{', ordered' if ordered else ''}"
    return _row(f"IS[x][y] ({kind})", truth, n, true_value, np.array(lows), np.array(highs),
                interval)


def mitigation_row(truth: str, n: int, reps: int, n_draws: int, seed: int,
                   interval: str = "posterior") -> Row:
    """IS_mit(y), paired: image i of the candidate keeps the baseline's attribute with
    probability SAME_SEED_AGREEMENT, else draws it so that its marginal is the candidate's."""
    before, after = (np.array(s) for s in MIT_TRUTHS[truth])
    rho = SAME_SEED_AGREEMENT
    fresh = (after - rho * before) / (1 - rho)
    ideal = np.array([0.5, 0.5])
    true_value = float(normalised_w1(before, ideal) - normalised_w1(after, ideal))
    rng = np.random.default_rng([seed, n, 11])
    choices = {"y": ["u", "v"]}
    lows, highs = [], []
    for r in range(reps):
        base = rng.choice(2, size=n, p=before)
        candidate = np.where(rng.random(n) < rho, base, rng.choice(2, size=n, p=fresh))
        effect = mitigation_effect({"y": base}, {"y": candidate}, choices,
                                   confidence=CONFIDENCE, n_resamples=n_draws, seed=r,
                                   interval=interval)["y"]
        lows.append(effect.low)
        highs.append(effect.high)
    return _row("IS_mit (paired, 2 classes)", truth, n, true_value, np.array(lows),
                np.array(highs), f"paired {interval}")


def _row(metric, truth, n, true_value, lows, highs, method) -> Row:
    covered = (lows <= true_value + 1e-9) & (highs >= true_value - 1e-9)
    return Row(metric, truth, n, true_value, float(covered.mean()),
               float((lows <= true_value + 1e-9).mean()), float(np.mean(highs - lows)),
               len(lows), method, float((highs >= true_value - 1e-9).mean()))


def run_grid(*, sizes=SIZES, reps=2000, difference_reps=1000, n_draws=1000, seed=0,
             quick=False, reuse: dict | None = None, jobs: int = 1,
             keep_profile: bool = False) -> list[Row]:
    """Every (metric, truth, n) of the grid; ``quick`` keeps a subset for the unit test.

    ``reuse``: rows keyed by (metric, truth, n, method) to take instead of computing every
    row whose method is not a profile one (``--only-profile``), or every stored row with
    ``keep_profile`` (``--only-missing``); ``jobs``: processes for the IS rows."""
    rows = _grid_rows(sizes=sizes, reps=reps, difference_reps=difference_reps,
                      n_draws=n_draws, seed=seed, quick=quick, reuse=reuse,
                      keep_profile=keep_profile)
    pending = [i for i, r in enumerate(rows) if callable(r)]
    if jobs > 1 and pending:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            done = list(pool.map(_call, [rows[i] for i in pending]))
    else:
        done = [_call(rows[i]) for i in pending]
    for i, row in zip(pending, done):
        rows[i] = row
    return rows


def _call(job):
    return job()


class _Job:
    def __init__(self, function, *args, **kwargs):
        self.function, self.args, self.kwargs = function, args, kwargs

    def __call__(self):
        return self.function(*self.args, **self.kwargs)


def _grid_rows(*, sizes, reps, difference_reps, n_draws, seed, quick, reuse,
               keep_profile=False) -> list:
    def is_row(*args, **kwargs):
        return _Job(globals()["is_row"], *args, **kwargs)

    def mitigation_row(*args, **kwargs):
        return _Job(globals()["mitigation_row"], *args, **kwargs)

    def distance_row(metric, shares, truth, n, *args):
        return _Job(globals()["distance_row"], metric, shares, truth, n, *args)

    rows = []
    for n in sizes:
        for n_classes, truths in TRUTHS.items():
            for truth, shares in truths.items():
                rows.append(share_row(shares, truth, n))
                metrics = ["w1 nominal", "severity", "max skew"] + (
                    ["w1 ordered"] if n_classes == 3 else [])
                for metric in metrics:
                    if quick and truth == "near-threshold" and n == 10:
                        continue
                    rows.append(distance_row(metric, shares, truth, n, reps, n_draws, seed))
        is_truths = ["all balanced", "hurts"] if quick else list(IS_TRUTHS)
        for interval in ("posterior", "profile"):
            for truth in is_truths:
                rows.append(is_row(truth, n, difference_reps, n_draws, seed, interval))
            mit_truths = ["both balanced"] if quick else list(MIT_TRUTHS)
            for truth in mit_truths:
                rows.append(mitigation_row(truth, n, difference_reps, n_draws, seed, interval))
        if n >= 48 and not quick:  # 3 classes, nominal and ordered (profile only: cost)
            for truth in IS3_TRUTHS:
                for ordered in (False, True):
                    rows.append(is_row(truth, n, difference_reps, n_draws, seed, "profile",
                                       classes=3, ordered=ordered))
    if reuse is not None:
        rows = [_reused(r, reuse, keep_profile) for r in rows]
    return rows


def _reused(job, reuse, keep_profile=False):
    """The stored row of a job that is not a profile one (any job with ``keep_profile``),
    if there is one."""
    if not isinstance(job, _Job):
        return job
    function = job.function.__name__
    kwargs = dict(job.kwargs)
    interval = str(kwargs.get("interval", job.args[5] if len(job.args) > 5 else ""))
    if "profile" in interval:
        if not keep_profile:
            return job
        truth, n = job.args[:2]
        if function == "mitigation_row":
            key = ("IS_mit (paired, 2 classes)", truth, n, "paired profile")
        else:
            classes = kwargs.get("classes", 2)
            kind = f"{classes} classes{', ordered' if kwargs.get('ordered') else ''}"
            key = (f"IS[x][y] ({kind})", truth, n, "profile")
        return Row(**reuse[key]) if key in reuse else job
    if function == "distance_row":
        metric, shares, truth, n = job.args[:4]
        key = (f"{metric} ({len(shares)} classes)", truth, n, "posterior")
    elif function == "is_row":
        truth, n = job.args[:2]
        key = ("IS[x][y] (2 classes)", truth, n, "posterior")
    else:
        truth, n = job.args[:2]
        key = ("IS_mit (paired, 2 classes)", truth, n, "paired posterior")
    return Row(**reuse[key]) if key in reuse else job


def markdown(rows: list[Row], seconds: float, only_profile: bool = False) -> str:
    lines = [
        "# Measured coverage of the 95% intervals",
        "",
        "Written by `python validation/coverage.py` (do not edit; see docs/STATISTICS.md for the",
        f"constructions). {len(rows)} cells, {seconds:.0f} s. Coverage = share of simulated data",
        "sets whose interval holds the true value; low <= truth = share whose low end does (the",
        "statement a gate that fails when low > threshold relies on). Shares are exact (summed",
        "over the binomial); the rest simulated, `reps` data sets each (binomial sd at 95%:",
        "0.5 points with 2000 reps, 0.7 with 1000). Target band: 93% to 97.5%.",
        *(["", "Not every row comes from one run: `--only-profile` recomputes the profile rows,",
           "`--only-missing` the rows of a metric just added, and the others are read from the",
           "previous run's JSON."] if only_profile else []),
        "",
        "| metric | truth | true value | n | coverage | low <= truth | high >= truth | mean width "
        "| reps | method |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        flag = "" if 0.93 <= r.coverage <= 0.975 else " *"
        lines.append(
            f"| {r.metric} | {r.truth} | {r.true_value:.3f} | {r.n} | {100 * r.coverage:.1f}%{flag} "
            f"| {100 * r.low_ok:.1f}% | {100 * r.high_ok:.1f}% | {r.mean_width:.3f} "
            f"| {r.reps or 'exact'} | {r.method} |"
        )
    outside = [r for r in rows if not 0.93 <= r.coverage <= 0.975]
    lines += ["", f"\\* outside [93%, 97.5%]: {len(outside)} of {len(rows)} cells; "
              "docs/STATISTICS.md explains each kind.", ""]
    return "\n".join(lines)


KEPT_SECTIONS = ("## Coverage under optional stopping (adaptive sampling)",
                 "## Beyond the fixed n: a larger cap decides what n left open",
                 "## ENTIGEN's improvement under optional stopping",
                 "## The judge's own error: corrected against uncorrected intervals")
"""The sections of docs/coverage.md other scripts write (validation/sequential_coverage.py,
validation/beyond_fixed_n.py, validation/entigen_stopping.py, validation/judge_coverage.py):
kept, from the first of them
on, when this one rewrites it."""


def _kept_sections(path: Path) -> str:
    text = path.read_text() if path.exists() else ""
    starts = [i for i in (text.find(heading) for heading in KEPT_SECTIONS) if i >= 0]
    return "\n" + text[min(starts):] if starts else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--difference-reps", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only-profile", action="store_true",
                        help="recompute the profile rows; read the others from --json")
    parser.add_argument("--only-missing", action="store_true",
                        help="compute only the rows --json lacks (a metric just added)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--markdown", type=Path, default=ROOT / "docs" / "coverage.md")
    parser.add_argument("--json", type=Path, default=ROOT / "validation" / "coverage_results.json")
    args = parser.parse_args()
    reuse, seconds, profile_seconds = None, 0.0, 0.0
    if args.only_profile or args.only_missing:
        stored = json.loads(args.json.read_text())
        reuse = {(r["metric"], r["truth"], r["n"], r["method"]): r for r in stored["rows"]}
        seconds = stored["seconds"]
        if args.only_profile:
            seconds -= stored.get("profile_seconds", 0.0)
        else:
            profile_seconds = stored.get("profile_seconds", 0.0)
    start = time.time()
    rows = run_grid(reps=args.reps, difference_reps=args.difference_reps, n_draws=args.draws,
                    quick=args.quick, reuse=reuse, jobs=args.jobs,
                    keep_profile=args.only_missing)
    if args.only_profile:
        profile_seconds = time.time() - start
    seconds += time.time() - start
    partial = args.only_profile or args.only_missing or bool(reuse and stored.get("only_profile"))
    args.markdown.write_text(markdown(rows, seconds, partial) + _kept_sections(args.markdown))
    args.json.write_text(json.dumps({"confidence": CONFIDENCE, "seconds": seconds,
                                     "profile_seconds": profile_seconds,
                                     "only_profile": partial,
                                     "rows": [asdict(r) for r in rows]}, indent=1))
    print(markdown(rows, seconds, partial))


if __name__ == "__main__":
    main()
