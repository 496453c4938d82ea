"""Coverage under optional stopping: adaptive checks look after every round of images (16, 32,
64 ... then a cap) and stop once decided, so what must hold is that the interval *ever*
excluding the truth, over every look up to the cap, happens at most 1 - confidence of the
time; and that the stopping rule fails a truly fine model, or passes a truly biased one, at
most that often (issue #26; the construction is in ``pytest_t2ibias.metrics.sequential``).

For every metric and truth of docs/coverage.md's grid and every cap of ``CAPS`` (the default
caps, ``DEFAULT_CAP_MULTIPLE`` times the example suites' images per prompt), draw ``reps``
sequences of answers up to the cap, compute the interval at every look, and count:

- ``ever_excluded``: some look's interval, at the level the default spending function
  (O'Brien-Fleming, ``look_confidences``, exact recursive boundaries) gives that look,
  excludes the truth (what adaptive checks use; 1 minus it is the coverage held to issue
  #46's band [93%, 97.5%]);
- ``union_ever_excluded``: the same at the union bound's levels (each look at 1 minus its
  increment, ``exact=False``: the construction before the exact boundaries);
- ``even_ever_excluded``: the same with alpha spent evenly, 1 - 0.05/(2K) at every look (the
  ``bonferroni`` choice, with its measured factor 2);
- ``naive_ever_excluded``: the same with the fixed-n 95% interval at every look (why the
  level is spent: this is what looking without it would do);
- for thresholds at the truth (the worst case: the model is exactly at its limit) and 0.1
  either side, the stopping rule's outcome: a *wrong* verdict (a fine model, truth <=
  threshold, failed; a biased one, truth > threshold, passed), decided, and the mean images
  per prompt it drew, beside the fixed design's decided share at the cap.

Shares are also checked with the betting confidence sequence (``betting_share_interval``,
valid at every n, not only at the looks). IS[x][y] rows use the profile interval (2 classes,
a smaller cap and fewer sequences: it is the slowest interval).

    python validation/sequential_coverage.py --workers 2   # docs/coverage.md section + JSON
    python validation/sequential_coverage.py --quick       # the unit test's reduced grid
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package


def _fixed_n_grid():
    """validation/coverage.py, by path: its name is also coverage.py's (pytest-cov)."""
    import importlib.util

    name = "coverage_script"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).resolve().parent / "coverage.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


TRUTHS = _fixed_n_grid().TRUTHS  # the grid of docs/coverage.md
IS_TRUTHS = _fixed_n_grid().IS_TRUTHS

from pytest_t2ibias.metrics import intersectional_sensitivity, normalised_w1, severity
from pytest_t2ibias.metrics.posterior import (
    _MaxSkew,
    _PooledSeverity,
    _PooledW1,
    interval_from_counts,
)
from pytest_t2ibias.metrics.sequential import (
    DEFAULT_CAP_MULTIPLE,
    DEFAULT_SPENDING,
    FUTILE_BELOW,
    betting_share_sequence,
    chances_to_decide,
    doubling_looks,
    look_confidences,
)

ROOT = Path(__file__).resolve().parent.parent
CONFIDENCE = 0.95
CAP = 600
CAPS = tuple(int(DEFAULT_CAP_MULTIPLE * n) for n in (48, 200, 600))
"""The caps the grid runs at: the default cap (1.25 times a check's images per prompt) of the
example suites' checks at 48, 200 and 600 images per prompt: 60, 250 and 750."""
IS_CAP = 250
BAND = (0.93, 0.975)  # issue #46: coverage under stopping within it
SECTION = "## Coverage under optional stopping (adaptive sampling)"


@dataclass
class Decision:
    threshold: float
    model: str  # "fine" (truth <= threshold) or "biased"
    wrong: float  # share of sequences whose verdict is wrong (fine failed / biased passed)
    decided: float  # share decided by the cap
    mean_images: float  # images per prompt drawn, mean over sequences
    fixed_decided: float  # the fixed design at n = cap, its 95% interval: share decided
    fixed_wrong: float
    will_not_decide: float = float("nan")
    """Share stopped before the cap as unable to decide by it (``FUTILE_BELOW``); NaN: the
    rule was not applied (the even spending's columns)."""
    mean_images_to_cap: float = float("nan")
    """Mean images per prompt without that rule: undecided sequences run to the cap."""
    decided_to_cap: float = float("nan")
    """Share decided without that rule."""


@dataclass
class SequentialRow:
    metric: str
    truth: str
    true_value: float
    looks: list[int]
    look_confidences: list[float]
    ever_excluded: float
    naive_ever_excluded: float
    reps: int
    method: str
    decisions: list[Decision] = field(default_factory=list)
    even_ever_excluded: float = float("nan")
    """The same with alpha spent evenly, 1 - alpha/(2K) at every look (``bonferroni``)."""
    even_decisions: list[Decision] = field(default_factory=list)
    union_ever_excluded: float = float("nan")
    """The same at the union bound's levels (``look_confidences(..., exact=False)``)."""
    union_decisions: list[Decision] = field(default_factory=list)
    """The stopping rule at those levels, without the will-not-decide rule."""
    union_look_confidences: list[float] = field(default_factory=list)
    fixed_excluded: float = float("nan")
    """Share whose fixed-n 95% interval on the cap's images alone excludes the truth."""

    @property
    def coverage(self) -> float:
        return 1 - self.ever_excluded


def _statistic(metric: str, n_classes: int):
    ideal = np.full(n_classes, 1 / n_classes)
    if metric == "severity":
        return _PooledSeverity(n_classes), ideal
    if metric == "max skew":
        return _MaxSkew(tuple(ideal.tolist())), ideal
    return _PooledW1(tuple(ideal.tolist()), metric == "w1 ordered"), ideal


def _true_value(metric: str, shares: np.ndarray) -> float:
    statistic, _ = _statistic(metric, len(shares))
    if metric == "severity":
        return float(severity(shares))
    if metric == "max skew":
        return float(statistic([shares]))
    return float(normalised_w1(shares, np.full(len(shares), 1 / len(shares)),
                               metric == "w1 ordered"))


def _thresholds(true_value: float, lower_bound: float, upper_bound: float
                ) -> list[tuple[float, str]]:
    """At the truth (a fine model on its limit), 0.1 above (fine) and 0.1 below (biased),
    where the figure can take those values."""
    chosen = [(true_value, "fine")]
    if true_value + 0.1 <= upper_bound:
        chosen.append((true_value + 0.1, "fine"))
    if true_value - 0.1 >= lower_bound:
        chosen.append((true_value - 0.1, "biased"))
    return chosen


def _decisions(true_value: float, looks: list[int], lows: np.ndarray, highs: np.ndarray,
               fixed_low: np.ndarray, fixed_high: np.ndarray, lower_bound: float,
               upper_bound: float, at_cap: tuple[np.ndarray, ...] | None = None,
               cap_level: float | None = None) -> list[Decision]:
    """The stopping rule on intervals (looks, reps): stop at the first look wholly within
    (PASS) or beyond (FAIL) the threshold; at the cap, inconclusive if neither. ``at_cap``:
    (values, lows, highs) per look at the cap's level ``cap_level``: an undecided look
    before the cap also stops, inconclusive, once its chance to decide by the cap is below
    ``FUTILE_BELOW`` (the plugin's default rule, ``SessionPlan.chance_to_decide``)."""
    out = []
    for threshold, model in _thresholds(true_value, lower_bound, upper_bound):
        passed = highs <= threshold + 1e-12
        failed = lows > threshold + 1e-12
        decided = passed | failed
        to_cap = np.where(decided.any(axis=0), decided.argmax(axis=0), len(looks) - 1)
        futile = np.zeros_like(decided)
        if at_cap is not None and cap_level is not None:
            for j, n in enumerate(looks[:-1]):
                chance = chances_to_decide(at_cap[0][j], at_cap[1][j], at_cap[2][j],
                                           threshold, confidence=cap_level, n=n,
                                           cap=looks[-1])
                futile[j] = ~decided[j] & (np.nan_to_num(chance, nan=1.0) < FUTILE_BELOW)
        stops = decided | futile
        first = np.where(stops.any(axis=0), stops.argmax(axis=0), len(looks) - 1)
        reps = np.arange(lows.shape[1])
        decided_any = decided[first, reps]
        passed_at_stop = passed[first, reps] & decided_any
        failed_at_stop = failed[first, reps] & decided_any
        wrong = failed_at_stop if model == "fine" else passed_at_stop
        fixed_pass = fixed_high <= threshold + 1e-12
        fixed_fail = fixed_low > threshold + 1e-12
        fixed_wrong = fixed_fail if model == "fine" else fixed_pass
        out.append(Decision(float(threshold), model, float(wrong.mean()),
                            float(decided_any.mean()),
                            float(np.mean(np.asarray(looks)[first])),
                            float((fixed_pass | fixed_fail).mean()), float(fixed_wrong.mean()),
                            float(futile[first, reps].mean()) if at_cap is not None
                            else float("nan"),
                            float(np.mean(np.asarray(looks)[to_cap])),
                            float(decided[to_cap, reps].mean())))
    return out


def _levels(looks: list[int], spending: str | tuple[float, ...]) -> dict[str, tuple[float, ...]]:
    """Per look: the ``spending`` function's levels (or the levels given), the even
    (Bonferroni, 2K) ones, and the naive fixed-n level."""
    spent = (look_confidences(CONFIDENCE, tuple(looks), spending) if isinstance(spending, str)
             else tuple(spending))
    if len(spent) != len(looks):
        raise ValueError(f"{len(spent)} levels for {len(looks)} looks")
    levels = {"spent": spent, "naive": (CONFIDENCE,) * len(looks),
              "even": look_confidences(CONFIDENCE, tuple(looks), "bonferroni"),
              "at_cap": (spent[-1],) * len(looks)}  # for the will-not-decide rule
    if isinstance(spending, str) and spending != "bonferroni":
        levels["union"] = look_confidences(CONFIDENCE, tuple(looks), spending, exact=False)
    return levels


def distance_row(metric: str, shares: list[float], truth: str, reps: int, n_draws: int,
                 seed: int, cap: int = CAP,
                 spending: str | tuple[float, ...] = DEFAULT_SPENDING) -> SequentialRow:
    """One prompt; answers drawn one at a time up to ``cap``; the posterior interval at
    every look on the answers so far, at each look's level under ``spending`` (a spending
    function's name, or the levels themselves: the test's over-spending rule)."""
    p = np.array(shares)
    looks = list(doubling_looks(cap))
    levels = _levels(looks, spending)
    statistic, ideal = _statistic(metric, len(p))
    true_value = _true_value(metric, p)
    rng = np.random.default_rng([seed, len(p), len(metric), int(1000 * p[0])])
    labels = rng.choice(len(p), size=(reps, cap), p=p)
    bounds = {}
    for name, per_look in levels.items():
        values, lows, highs = [], [], []
        for n, confidence in zip(looks, per_look):
            counts = np.stack([np.bincount(row[:n], minlength=len(p)) for row in labels])[:, None]
            value, low, high = interval_from_counts(statistic, counts, ideal=ideal,
                                                    confidence=confidence, n_draws=n_draws,
                                                    rng=rng, seed=seed)
            values.append(np.broadcast_to(value, np.shape(low)))
            lows.append(low)
            highs.append(high)
        bounds[name] = ((np.array(values),) if name == "at_cap" else ()) + (
            np.array(lows), np.array(highs))
    upper = float(statistic([np.eye(len(p))[0]]))  # the largest value the figure takes
    row = _row(f"{metric} ({len(p)} classes)", truth, true_value, looks, levels["spent"],
               bounds, reps, "posterior, alpha spent over the looks", upper)
    row.union_look_confidences = list(levels.get("union", ()))
    return row


def share_rows(shares: list[float], truth: str, reps: int, seed: int, cap: int = CAP,
               spending: str = DEFAULT_SPENDING, with_betting: bool = True
               ) -> list[SequentialRow]:
    """The first choice's share: Jeffreys at the spent level at every look, and (unless not
    ``with_betting``) the betting confidence sequence at every n (its running intersection
    holds all of them)."""
    from scipy.stats import beta

    p = shares[0]
    looks = list(doubling_looks(cap))
    levels = _levels(looks, spending)
    rng = np.random.default_rng([seed, int(1000 * p), 5])
    x = (rng.random((reps, cap)) < p).astype(int)
    bounds = {}
    for name, per_look in levels.items():
        values, lows, highs = [], [], []
        for n, confidence in zip(looks, per_look):
            tail = (1 - confidence) / 2
            k = x[:, :n].sum(axis=1)
            values.append(k / n)
            lows.append(np.where(k > 0, beta.ppf(tail, k + 0.5, n - k + 0.5), 0.0))
            highs.append(np.where(k < n, beta.ppf(1 - tail, k + 0.5, n - k + 0.5), 1.0))
        bounds[name] = ((np.array(values),) if name == "at_cap" else ()) + (
            np.array(lows), np.array(highs))
    jeffreys = _row(f"share ({len(shares)} classes)", truth, p, looks, levels["spent"], bounds,
                    reps, "jeffreys, alpha spent over the looks", 1.0)
    jeffreys.union_look_confidences = list(levels.get("union", ()))
    if not with_betting:
        return [jeffreys]
    betting_reps = min(reps, 500)
    sequences = [betting_share_sequence(x[r], CONFIDENCE, at=tuple(looks))
                 for r in range(betting_reps)]  # the intersection up to n, at every look
    lows_a = np.array([[e.low for e in seq] for seq in sequences]).T
    highs_a = np.array([[e.high for e in seq] for seq in sequences]).T
    betting = _row(f"share ({len(shares)} classes)", truth, p, looks, [CONFIDENCE] * len(looks),
                   {"spent": (lows_a, highs_a),
                    "naive": (bounds["naive"][0][:, :betting_reps],
                              bounds["naive"][1][:, :betting_reps])},
                   betting_reps, "betting CS (every n)", 1.0)
    return [jeffreys, betting]


def is_row(truth: str, reps: int, n_draws: int, seed: int, cap: int = IS_CAP,
           naive: bool = False, spending: str = DEFAULT_SPENDING) -> SequentialRow:
    """IS[x][y] (2 classes, profile): the initial prompt and x's two counterfactual prompts,
    image i of each drawn in order; the entry's interval at every look."""
    initial, counterfactuals = IS_TRUTHS[truth]
    ideal = np.full(2, 0.5)
    true_value = float(normalised_w1(np.array(initial), ideal)
                       - normalised_w1(np.mean(counterfactuals, axis=0), ideal))
    looks = list(doubling_looks(cap))
    levels = _levels(looks, spending)
    rng = np.random.default_rng([seed, 13])
    choices = {"x": ["a", "b"], "y": ["u", "v"]}
    bounds = {name: (np.full((len(looks), reps), np.nan), np.full((len(looks), reps), np.nan))
              for name in ("spent", "naive")}  # naive: the slowest part, only on request
    if "union" in levels:
        bounds["union"] = (np.full((len(looks), reps), np.nan),
                           np.full((len(looks), reps), np.nan))
    for r in range(reps):
        x0 = rng.choice(2, size=cap)
        y0 = rng.choice(2, size=cap, p=initial)
        ys = [rng.choice(2, size=cap, p=cf) for cf in counterfactuals]
        for j, n in enumerate(looks):
            last = j == len(looks) - 1  # the fixed design at the cap, for its verdicts
            spent_and_union = (("spent", levels["spent"][j]),) + (
                (("union", levels["union"][j]),) if "union" in levels else ())
            for name, confidence in spent_and_union + (
                    (("naive", CONFIDENCE),) if naive or last else ()):
                matrix = intersectional_sensitivity(
                    {"x": x0[:n], "y": y0[:n]},
                    {"x": {v: {"x": np.full(n, i), "y": ys[i][:n]} for i, v in enumerate("ab")}},
                    choices, confidence=confidence, n_resamples=n_draws, seed=r,
                    interval="profile")
                entry = matrix.entry("x", "y")
                bounds[name][0][j, r], bounds[name][1][j, r] = entry.low, entry.high
    row = _row("IS[x][y] (2 classes)", truth, true_value, looks, levels["spent"], bounds, reps,
               "profile, alpha spent over the looks", 1.0, lower_bound=-1.0)
    if not naive:
        row.naive_ever_excluded = float("nan")
    row.union_look_confidences = list(levels.get("union", ()))
    return row


def _row(metric, truth, true_value, looks, levels, bounds, reps, method, upper,
         lower_bound: float = 0.0) -> SequentialRow:
    def ever_excluded(lows, highs):
        out = (lows > true_value + 1e-9) | (highs < true_value - 1e-9)
        return float(out.any(axis=0).mean())

    lows, highs = bounds["spent"]
    naive_lows, naive_highs = bounds["naive"]
    decisions = _decisions(true_value, looks, lows, highs, naive_lows[-1], naive_highs[-1],
                           lower_bound, upper, bounds.get("at_cap"), levels[-1])
    even, even_decisions = float("nan"), []
    if "even" in bounds:
        even = ever_excluded(*bounds["even"])
        even_decisions = _decisions(true_value, looks, *bounds["even"], naive_lows[-1],
                                    naive_highs[-1], lower_bound, upper)
    row = SequentialRow(metric, truth, float(true_value), looks, [float(c) for c in levels],
                        ever_excluded(lows, highs), ever_excluded(naive_lows, naive_highs),
                        int(reps), method, decisions, even, even_decisions)
    row.fixed_excluded = ever_excluded(naive_lows[-1:], naive_highs[-1:])
    if "union" in bounds:
        row.union_ever_excluded = ever_excluded(*bounds["union"])
        row.union_decisions = _decisions(true_value, looks, *bounds["union"], naive_lows[-1],
                                         naive_highs[-1], lower_bound, upper)
    return row


def run_grid(*, reps: int = 1000, is_reps: int = 150, n_draws: int = 1000, seed: int = 0,
             quick: bool = False, caps: tuple[int, ...] = CAPS,
             spending: str = DEFAULT_SPENDING, workers: int = 1) -> list[SequentialRow]:
    """Every cell at every cap of ``caps`` (the IS rows at ``IS_CAP`` once), in the order
    written; ``workers`` processes share the cells (each cell seeds its own generator, so
    the figures do not depend on it)."""
    tasks: list[tuple] = []
    for cap in caps:
        for n_classes, truths in TRUTHS.items():
            for truth, shares in truths.items():
                if quick and truth not in ("uniform", "near-threshold"):
                    continue
                tasks.append((share_rows, (shares, truth, reps, seed, cap, spending)))
                metrics = ["w1 nominal", "severity", "max skew"] + (
                    ["w1 ordered"] if n_classes == 3 else [])
                for metric in metrics:
                    if quick and metric != "w1 nominal":
                        continue
                    tasks.append((distance_row, (metric, shares, truth, reps, n_draws, seed,
                                                 cap, spending)))
    for truth in (["hurts"] if quick else ["all balanced", "helps", "hurts"]):
        tasks.append((is_row, (truth, is_reps, n_draws, seed, min(max(caps), IS_CAP), False,
                               spending)))
    if workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(_run, tasks))
    else:
        results = [_run(task) for task in tasks]
    rows: list[SequentialRow] = []
    for result in results:
        rows.extend(result if isinstance(result, list) else [result])
    return rows


def _run(task: tuple):
    function, args = task
    return function(*args)


def markdown(rows: list[SequentialRow], seconds: float) -> str:
    flagged = [r for r in rows if r.ever_excluded > 1 - CONFIDENCE]
    low, high = BAND
    lines = [
        SECTION,
        "",
        ("Written by `python validation/sequential_coverage.py --workers 2` (do not edit; "
         "docs/STATISTICS.md, \"Adaptive sampling\", says why). "
         f"{len(rows)} cells, {seconds:.0f} s. Caps: the default cap, "
         f"{DEFAULT_CAP_MULTIPLE:g} times a check's images per prompt, of the example suites' "
         "checks at 48, 200 and 600 images per prompt (IS at 250 only: its profile interval "
         "is the slowest). Each row draws `reps` sequences of answers up to the cap and "
         "computes the interval at every look (looks 16, 32, 64 ... while at most 3/4 of the "
         "cap, then the cap). *coverage*: share of sequences whose interval held the truth at "
         "every look, each look's interval at the level the default O'Brien-Fleming spending "
         "gives it (Lan & DeMets 1983, alpha/1.5 spent, `LOOK_CALIBRATION`), its boundaries "
         "exact for looks that share their images (`metrics.sequential.recursive_levels`); "
         f"issue #46's band is [{100 * low:g}%, {100 * high:g}%] (\u2020 outside it). "
         "*ever excluded*: 1 - coverage (\\* above 5%); *levels*: the last two looks' levels "
         "(the earlier ones are higher still); *union bound*: ever excluded with each look at "
         "1 minus its increment instead (the construction before the exact boundaries); "
         "*fixed at cap*: the fixed-n 95% interval on all the cap's images alone (what the "
         "cap's look inherits); *even*: alpha spent evenly, 1 - 0.05/(2K) at every look "
         "(`--t2i-adaptive-spending=bonferroni`, with its measured factor 2); *naive*: the "
         "fixed-n 95% interval at every look. The betting rows are valid at every n, so their "
         "looks are only where they are read. Binomial sd of a 5% rate: 0.7 points at 1000 "
         "sequences, 1.0 at 500, 1.8 at 150."),
        "",
        ("| cap | metric | truth | true value | looks | levels (last two) | coverage | ever "
         "excluded | union bound | fixed at cap | even | naive (95% every look) | reps "
         "| method |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        flag = " *" if r in flagged else ""
        band = "" if low <= r.coverage <= high else " \u2020"
        last_two = " / ".join(f"{100 * c:.2f}%" for c in r.look_confidences[-2:])
        lines.append(f"| {r.looks[-1]} | {r.metric} | {r.truth} | {r.true_value:.3f} "
                     f"| {r.looks[0]}..{r.looks[-1]} ({len(r.looks)}) | {last_two} "
                     f"| {100 * r.coverage:.1f}%{band} "
                     f"| {100 * r.ever_excluded:.1f}%{flag} | {_percent(r.union_ever_excluded)} "
                     f"| {_percent(r.fixed_excluded)} | {_percent(r.even_ever_excluded)} "
                     f"| {_percent(r.naive_ever_excluded)} "
                     f"| {r.reps} | {r.method} |")
    lines += ["", f"\\* above 5%: {len(flagged)} of {len(rows)} cells.", "",
              *_band_summary(rows), ""]
    lines += [
        "### The stopping rule's verdicts",
        "",
        ("The plugin's default rule (issue #46): stop at the first look whose interval is "
         "wholly within the threshold (pass) or wholly beyond it (fail), or, before the cap, "
         "once the chance to decide by the cap at the current estimate is below "
         f"{100 * FUTILE_BELOW:g}% (*will not decide*: inconclusive there; "
         "`metrics.sequential.chance_to_decide`, read off the look's interval at the cap's "
         "level); at the cap, inconclusive. That rule only stops earlier, so it cannot raise "
         "*ever excluded* above. *wrong*: a fine model (truth <= "
         "threshold) failed, or a biased one (truth > threshold) passed; the threshold at "
         "the truth is the worst case for a fine model. *images*: mean images per prompt "
         "drawn (*to cap*: decided and images without the will-not-decide rule; *union "
         "bound*: the same at the union bound's levels, what the exact boundaries save). "
         "*fixed*: the fixed design at "
         "n = cap with its 95% interval. *even*: decided and images with alpha spent evenly "
         "(alpha/(2K) a look, no will-not-decide rule). The IS rows do not apply it (their "
         "profile interval is the slowest; the cap's level would double it)."),
        "",
        ("| metric | truth | true value | threshold | model | wrong | decided | will not "
         "decide | images (cap) | to cap: decided, images | union bound: decided, images "
         "| even: decided, images | fixed decided | fixed wrong | method |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    worst = 0.0
    for r in rows:
        evens = r.even_decisions or [None] * len(r.decisions)
        unions = r.union_decisions or [None] * len(r.decisions)
        for d, e, u in zip(r.decisions, evens, unions):
            worst = max(worst, d.wrong)
            even = "-" if e is None else f"{100 * e.decided:.1f}%, {e.mean_images:.0f}"
            union = "-" if u is None else f"{100 * u.decided:.1f}%, {u.mean_images:.0f}"
            lines.append(f"| {r.metric} | {r.truth} | {r.true_value:.3f} | {d.threshold:.3f} "
                         f"| {d.model} | {100 * d.wrong:.1f}% | {100 * d.decided:.1f}% "
                         f"| {_percent(d.will_not_decide)} "
                         f"| {d.mean_images:.0f} ({r.looks[-1]}) "
                         f"| {_percent(d.decided_to_cap)}, {d.mean_images_to_cap:.0f} "
                         f"| {union} | {even} "
                         f"| {100 * d.fixed_decided:.1f}% "
                         f"| {100 * d.fixed_wrong:.1f}% | {r.method} |")
    lines += ["", f"Largest wrong-verdict rate of the stopping rule: {100 * worst:.1f}%.", ""]
    return "\n".join(lines)


def _band_summary(rows: list[SequentialRow]) -> list[str]:
    """How many cells lie in issue #46's band, and why each one outside it does: the truth on
    the figure's own bound, the betting sequence's construction, or the fixed-n interval's
    own coverage at the cap (discreteness at small n), with its distance in binomial sd."""
    low, high = BAND
    outside = [r for r in rows if not low <= r.coverage <= high]
    below = [r for r in outside if r.coverage < low]
    at_bound = [r for r in outside if r.ever_excluded == 0 and r.fixed_excluded == 0]
    betting = [r for r in outside if r not in at_bound and r.method.startswith("betting")]
    other = [r for r in outside if r not in at_bound + betting]
    compared = [r for r in rows if not np.isnan(r.union_ever_excluded) and r not in at_bound]
    union_outside = [r for r in compared if not low <= 1 - r.union_ever_excluded <= high]
    exact_outside = [r for r in compared if r in outside]

    def sd(r: SequentialRow) -> float:
        edge = 1 - high if r.coverage > high else 1 - low
        return abs(r.ever_excluded - edge) / np.sqrt(edge * (1 - edge) / r.reps)

    text = (f"Coverage against issue #46's band [{100 * low:g}%, {100 * high:g}%]: "
            f"{len(rows) - len(outside)} of {len(rows)} cells within it, {len(below)} below "
            f"it. Of the {len(compared)} cells with a union-bound column and the truth off "
            f"the figure's bound, {len(exact_outside)} are outside at the exact boundaries, "
            f"{len(union_outside)} were at the union bound's levels ("
            + ", ".join(f"cap {cap}: {sum(r.looks[-1] == cap for r in exact_outside)} against "
                        f"{sum(r.looks[-1] == cap for r in union_outside)}"
                        for cap in sorted({r.looks[-1] for r in compared})) + "). ")
    if at_bound:
        text += (f"{len(at_bound)} hold 100% by construction: the truth on the figure's own "
                 "bound (" + ", ".join(sorted({f"{r.truth}" for r in at_bound}))
                 + "), which no interval within the figure's range can exclude, so no level "
                 "moves them (the fixed-n 95% interval at the cap holds it every time too). ")
    if betting:
        text += (f"{len(betting)} betting rows above {100 * high:g}% ("
                 + "; ".join(f"cap {r.looks[-1]}, {r.truth} {r.metric}: "
                             f"{100 * r.coverage:.1f}%" for r in betting)
                 + "): the confidence sequence holds at every n, read here at "
                 "only the looks, and Ville's inequality is not tight for discrete bets; no "
                 "check gates on it. ")
    itself = [r for r in other if r.fixed_excluded < 1 - high]
    chance = [r for r in other if r not in itself and sd(r) <= 2]
    unexplained = [r for r in other if r not in itself + chance]

    def listed(cells: list[SequentialRow]) -> str:
        return "; ".join(f"cap {r.looks[-1]}, {r.metric} {r.truth}: {100 * r.coverage:.1f}% "
                         f"({sd(r):.1f} sd at {r.reps} sequences; the fixed-n 95% interval on "
                         f"the cap's images {100 * (1 - r.fixed_excluded):.1f}%)"
                         for r in cells)

    if itself:
        text += (f"{len(itself)} above it because the interval itself is at that n: the "
                 f"fixed-n 95% interval on the cap's images alone holds the truth more often "
                 f"than {100 * high:g}% too, the figure's few values at small n (or the truth "
                 "next to its bound) setting it, and no level of the sequential construction "
                 "lowers it below the fixed design's (" + listed(itself) + "). ")
    if chance:
        text += (f"{len(chance)} above it by at most two binomial sd, as some of "
                 f"{len(rows)} cells will be by chance (" + listed(chance) + "). ")
    if unexplained:
        text += (f"{len(unexplained)} above it by more, unexplained here ("
                 + listed(unexplained) + "). ")
    if other:
        text += ("The section \"Coverage under optional stopping, suspect by suspect\" "
                 "measures each suspect on shared sequences "
                 "(`validation/sequential_overcoverage.py`).")
    return [text]


def _percent(share: float) -> str:
    return "-" if np.isnan(share) else f"{100 * share:.1f}%"


def _sd(reps: int) -> float:
    return 2 * np.sqrt(CONFIDENCE * (1 - CONFIDENCE) / reps)


def write_section(path: Path, section: str, heading: str = SECTION) -> None:
    """Replace (or append) the section of docs/coverage.md under ``heading`` (this script's,
    or validation/beyond_fixed_n.py's); the rest is coverage.py's and the other scripts'."""
    text = path.read_text()
    start = text.find(heading)
    if start >= 0:
        end = text.find("\n## ", start + len(heading))
        text = text[:start] + section + (text[end + 1:] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def _loaded(saved: dict) -> SequentialRow:
    """A row as ``asdict`` wrote it to the JSON."""
    lists = ("decisions", "even_decisions", "union_decisions")
    row = SequentialRow(**{k: v for k, v in saved.items() if k not in lists})
    for name in lists:
        setattr(row, name, [Decision(**d) for d in saved.get(name, [])])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--is-reps", type=int, default=150)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--caps", type=lambda t: tuple(int(c) for c in t.split(",")),
                        default=CAPS, help="comma-separated caps (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--spending", default=DEFAULT_SPENDING,
                        help="the spending function measured (another than the default writes "
                             "validation/sequential_coverage_<name>.json only, not the docs)")
    parser.add_argument("--markdown", type=Path, default=ROOT / "docs" / "coverage.md")
    parser.add_argument("--render", type=Path, metavar="JSON",
                        help="write the docs section from a saved run's JSON, drawing nothing")
    parser.add_argument("--json", type=Path,
                        default=ROOT / "validation" / "sequential_coverage.json")
    args = parser.parse_args()
    if args.render:
        saved = json.loads(args.render.read_text())
        write_section(args.markdown, markdown([_loaded(r) for r in saved["rows"]],
                                              saved["seconds"]))
        return
    start = time.time()
    rows = run_grid(reps=args.reps, is_reps=args.is_reps, n_draws=args.draws,
                    quick=args.quick, caps=args.caps, spending=args.spending,
                    workers=args.workers)
    seconds = time.time() - start
    section = markdown(rows, seconds)
    if args.spending == DEFAULT_SPENDING:
        write_section(args.markdown, section)
    else:
        args.json = args.json.with_name(f"sequential_coverage_{args.spending}.json")
        worst = max(rows, key=lambda r: r.ever_excluded)
        section = (f"{args.spending}: {sum(r.ever_excluded > 1 - CONFIDENCE for r in rows)} of "
                   f"{len(rows)} cells above 5%; worst {100 * worst.ever_excluded:.1f}% "
                   f"({worst.metric}, {worst.truth}); {seconds:.0f} s")
    args.json.write_text(json.dumps({"confidence": CONFIDENCE, "spending": args.spending,
                                     "seconds": seconds,
                                     "caps": list(args.caps),
                                     "rows": [asdict(r) for r in rows]},
                                    indent=1))
    print(section)


if __name__ == "__main__":
    main()
