"""Coverage of the judge-corrected 95% intervals against the uncorrected ones (issue #33).

Every share is read by a judge whose confusion M[i][j] = P(judged j | true i) is not the
identity. For every cell (classes, confusion kind, judge accuracy, calibration images per
class m, true shares, audited images n), ``reps`` data sets are drawn:

- the audited images' judged counts ~ Multinomial(n, Mᵀ p) (Eq. 6.1 of ``metrics.judge``);
- the calibration's counts, per true class i, ~ Multinomial(m, M[i]);

and each data set gets the interval the plugin would report (``metrics.posterior``'s
``interval_from_counts``, 95%) with ``calibration=`` (corrected) and without (uncorrected),
for OpenBias severity, normalised W1 (nominal; ordered too with 3 classes) and one class'
share (the pooled share of class 0, no ideal). The calibration's own verdict is recorded:
``JudgeCalibration(...).readable`` False ("cannot read": the check is inconclusive, never
wrong). Corrected coverage is counted over the readable data sets; uncorrected over all
(the uncorrected figure has no such verdict).

Confusions, at judge accuracy a:
- *symmetric*: a on the diagonal, (1 - a) / (C - 1) off it;
- *one-sided*: only class 1 is misread, as class 0 (M[1] = (1 - a, a, 0...)); every other
  class is read right. a is then the accuracy on class 1.

    python validation/judge_coverage.py                 # full grid: docs/coverage.md + JSON
    python validation/judge_coverage.py --quick         # a reduced grid, printed only
    python validation/judge_coverage.py --reps 400 --workers 2
    python validation/judge_coverage.py --from-json     # the docs section from the JSON
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sequential_coverage, by name
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from sequential_coverage import write_section

from pytest_t2ibias.metrics import normalised_w1, severity
from pytest_t2ibias.metrics.distributions import mean_of_shares
from pytest_t2ibias.metrics.judge import (
    MIN_READABILITY,
    JudgeCalibration,
    readability,
)
from pytest_t2ibias.metrics.posterior import (
    _PooledSeverity,
    _PooledW1,
    interval_from_counts,
)

ROOT = Path(__file__).resolve().parent.parent
CONFIDENCE = 0.95
BAND = (0.93, 0.975)
SECTION = "## The judge's own error: corrected against uncorrected intervals"

ACCURACIES = (0.6, 0.7, 0.8, 0.9, 1.0)
CALIBRATION_SIZES = (20, 50, 200)
SIZES = (48, 200)
CONFUSIONS = ("symmetric", "one-sided")
TRUTHS = {  # docs/coverage.md's grid, one-class left out (a judge cannot misread it there)
    2: {"uniform": [0.5, 0.5], "near-threshold": [0.6, 0.4], "skewed": [0.8, 0.2]},
    3: {"uniform": [1 / 3] * 3, "near-threshold": [0.45, 0.3, 0.25], "skewed": [0.6, 0.3, 0.1]},
}
BATCH = 100


class _Share:
    """The pooled share of class 0 (a hashable statistic, like posterior's)."""

    def __call__(self, shares: list[np.ndarray]) -> np.ndarray:
        return mean_of_shares(shares, shares[0].shape[-1])[..., 0]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Share)

    def __hash__(self) -> int:
        return hash("share of class 0")


def confusion(kind: str, accuracy: float, classes: int) -> np.ndarray:
    """M (rows: true class, columns: judged) of a judge of this kind and accuracy."""
    if kind == "symmetric":
        m = np.full((classes, classes), (1 - accuracy) / (classes - 1))
        np.fill_diagonal(m, accuracy)
        return m
    if kind == "one-sided":
        m = np.eye(classes)
        m[1, :2] = (1 - accuracy, accuracy)
        return m
    raise ValueError(kind)


def metrics(classes: int) -> dict[str, tuple[object, np.ndarray | None]]:
    """name -> (statistic, ideal or None)."""
    ideal = np.full(classes, 1 / classes)
    out = {"severity": (_PooledSeverity(classes), ideal),
           "w1 nominal": (_PooledW1(tuple(ideal.tolist()), False), ideal)}
    if classes == 3:
        out["w1 ordered"] = (_PooledW1(tuple(ideal.tolist()), True), ideal)
    out["share of class 0"] = (_Share(), None)
    return out


def true_value(metric: str, p: np.ndarray) -> float:
    ideal = np.full(len(p), 1 / len(p))
    if metric == "severity":
        return float(severity(p))
    if metric.startswith("w1"):
        return float(normalised_w1(p, ideal, metric == "w1 ordered"))
    return float(p[0])


@dataclass
class Row:
    metric: str
    classes: int
    confusion: str
    accuracy: float
    readability: float  # r(M) of the true confusion
    m: int  # calibration images per true class
    truth: str
    n: int  # audited images
    true_value: float
    reps: int
    cannot_read: float  # share of data sets whose calibration says "cannot read"
    readable: int  # data sets counted for the corrected figures
    coverage: float  # corrected, over the readable data sets
    low_ok: float
    high_ok: float
    mean_width: float
    coverage_all: float  # corrected, over every data set (as if "cannot read" were ignored)
    uncorrected: float  # over every data set
    uncorrected_low_ok: float
    uncorrected_high_ok: float
    uncorrected_width: float
    method: str = "posterior"


def cell(classes: int, kind: str, accuracy: float, m: int, truth: str, n: int, reps: int,
         n_draws: int = 1000, seed: int = 0) -> list[Row]:
    """Every metric of one design cell, computed on the same ``reps`` data sets."""
    p = np.array(TRUTHS[classes][truth])
    matrix = confusion(kind, accuracy, classes)
    judged = matrix.T @ p
    truth_index = list(TRUTHS[classes]).index(truth)
    rng = np.random.default_rng([seed, classes, CONFUSIONS.index(kind), round(100 * accuracy),
                                 m, truth_index, n])
    stats = metrics(classes)
    found = {name: {"corrected": ([], []), "uncorrected": ([], [])} for name in stats}
    readable = []
    for start in range(0, reps, BATCH):
        size = min(BATCH, reps - start)
        counts = rng.multinomial(n, judged, size=size)[:, None, :]
        calibration = np.stack([rng.multinomial(m, matrix[i], size=size)
                                for i in range(classes)], axis=1)  # (size, true, judged)
        readable.append([JudgeCalibration("sim", "axis", tuple("abc"[:classes]), table,
                                          "simulated").readable for table in calibration])
        for name, (statistic, ideal) in stats.items():
            for which, table in (("corrected", calibration), ("uncorrected", None)):
                _, low, high = interval_from_counts(
                    statistic, counts, ideal=ideal, confidence=CONFIDENCE, n_draws=n_draws,
                    rng=rng, seed=seed, calibration=table)
                found[name][which][0].append(low)
                found[name][which][1].append(high)
    readable = np.concatenate(readable).astype(bool)
    rows = []
    for name in stats:
        value = true_value(name, p)
        lows, highs = (np.concatenate(b) for b in found[name]["corrected"])
        ulows, uhighs = (np.concatenate(b) for b in found[name]["uncorrected"])
        low_ok, high_ok = lows <= value + 1e-9, highs >= value - 1e-9
        covered = low_ok & high_ok
        ulow_ok, uhigh_ok = ulows <= value + 1e-9, uhighs >= value - 1e-9

        def share(x, where=readable):
            return float(x[where].mean()) if where.any() else float("nan")

        rows.append(Row(
            name, classes, kind, accuracy, float(readability(matrix)), m, truth, n, value, reps,
            float(1 - readable.mean()), int(readable.sum()), share(covered), share(low_ok),
            share(high_ok), share(highs - lows), float(covered.mean()),
            float((ulow_ok & uhigh_ok).mean()), float(ulow_ok.mean()), float(uhigh_ok.mean()),
            float(np.mean(uhighs - ulows))))
    return rows


def grid(quick: bool = False) -> list[tuple]:
    """(classes, kind, accuracy, m, truth, n) of every cell; ``quick``: a reduced one."""
    accuracies = (0.6, 0.8, 1.0) if quick else ACCURACIES
    sizes = (50, 200) if quick else CALIBRATION_SIZES
    ns = (48,) if quick else SIZES
    cells = []
    for classes in (2, 3):
        for kind in CONFUSIONS:
            for accuracy in accuracies:
                if kind == "one-sided" and accuracy == 1.0:
                    continue  # the identity, as the symmetric row
                for m in sizes:
                    for truth in TRUTHS[classes]:
                        for n in ns:
                            cells.append((classes, kind, accuracy, m, truth, n))
    return cells


def run_grid(*, reps: int, n_draws: int = 1000, quick: bool = False, workers: int = 1,
             seed: int = 0) -> list[Row]:
    jobs = [(*c, reps, n_draws, seed) for c in grid(quick)]
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            done = list(pool.map(_cell, jobs))
    else:
        done = [_cell(j) for j in jobs]
    return [row for rows in done for row in rows]


def _cell(job):
    return cell(*job)


def _pct(x: float) -> str:
    return "-" if np.isnan(x) else f"{100 * x:.1f}%"


def _flag(x: float) -> str:
    return "" if np.isnan(x) or BAND[0] <= x <= BAND[1] else " *"


READS, CANNOT = 0.05, 0.95
"""A cell *reads* when at most 5% of its calibrations say "cannot read" (the judge is above
chance by a margin for that calibration size), *cannot read* when at least 95% do; between,
*borderline*: coverage there is over the readable data sets, a selected minority or
majority."""


def zone(row: Row) -> str:
    if row.cannot_read <= READS:
        return "reads"
    if row.cannot_read >= CANNOT:
        return "cannot read"
    return "borderline"


def significantly_outside(row: Row) -> bool:
    """Outside the band by more than two binomial sd of its readable data sets."""
    if not row.readable:
        return False
    sd = np.sqrt(0.95 * 0.05 / row.readable)
    return not BAND[0] - 2 * sd <= row.coverage <= BAND[1] + 2 * sd


def summary(rows: list[Row]) -> dict:
    """Per metric and accuracy: the worst corrected coverage over the cells that read (and over
    the borderline ones), the worst uncorrected coverage over the same accuracy's cells."""
    out = {}
    for metric in dict.fromkeys(r.metric for r in rows):
        for accuracy in sorted({r.accuracy for r in rows}):
            mine = [r for r in rows if r.metric == metric and r.accuracy == accuracy]
            entry = {"cells": len(mine),
                     "uncorrected_worst": min(r.uncorrected for r in mine)}
            for name in ("reads", "borderline"):
                cells = [r for r in mine if zone(r) == name]
                worst = min(cells, key=lambda r: r.coverage, default=None)
                entry[name] = {
                    "cells": len(cells),
                    "worst": None if worst is None else worst.coverage,
                    "worst_cell": None if worst is None else asdict(worst),
                    "highest": max((r.coverage for r in cells), default=None),
                    "mean": float(np.mean([r.coverage for r in cells])) if cells else None,
                    "uncorrected_worst": min((r.uncorrected for r in cells), default=None),
                    "outside": sum(not BAND[0] <= r.coverage <= BAND[1] for r in cells),
                    "significantly_outside": sum(significantly_outside(r) for r in cells),
                }
            out[f"{metric} @ {accuracy:g}"] = entry
    return out


def markdown(rows: list[Row], seconds: float, command: str) -> str:
    reps = max(r.reps for r in rows)
    lines = [
        SECTION,
        "",
        f"Written by `{command}` ({seconds:.0f} s; the method: docs/STATISTICS.md, \"The",
        "judge's own error\"). Each cell: `reps` data sets of n audited images judged by a",
        "judge of confusion M (judged counts ~ Multinomial(n, Mᵀp)) and a calibration of m",
        "images per true class (counts ~ Multinomial(m, M[i])); the plugin's 95% interval with",
        "`calibration=` (corrected) and without (uncorrected). *Symmetric*: accuracy a on every",
        "class, the errors spread evenly; *one-sided*: only class 1 misread, as class 0, a its",
        "accuracy. r(M) = 1/‖(Mᵀ)⁻¹‖₁ (0 at chance, 1 perfect); *cannot read*: the share of",
        "data sets whose calibration's 95% interval of r reaches MIN_READABILITY = "
        f"{MIN_READABILITY:g}",
        "(`JudgeCalibration.readable` False: inconclusive, never a verdict). Corrected coverage",
        "is over the readable data sets; uncorrected over all. A cell *reads* when at most "
        f"{100 * READS:g}%",
        f"of its calibrations say \"cannot read\", *cannot read* when at least {100 * CANNOT:g}% "
        "do, *borderline*",
        "between. Binomial sd of a 95% rate: "
        f"{100 * np.sqrt(0.95 * 0.05 / reps):.1f} points at {reps} data sets, so some of the "
        "hundreds of",
        "cells fall outside the band by chance; \"significantly outside\" = by more than two "
        "sd. Target band:",
        "93% to 97.5% (\\* outside it).",
        "",
    ]
    lines += _summary_lines(rows)
    metrics_ = list(dict.fromkeys(r.metric for r in rows))
    lines += ["", "### Every cell", "",
              "Corrected (over the readable data sets) / uncorrected coverage; *cannot read*: at "
              f"least {100 * CANNOT:g}% of the calibrations say so.", "",
              "| classes | confusion | a | r(M) | m | truth | n | cannot read | "
              + " | ".join(metrics_) + " |",
              "|---|---|---|---|---|---|---|---|" + "---|" * len(metrics_)]
    by_cell: dict = {}
    for r in rows:
        by_cell.setdefault((r.classes, r.confusion, r.accuracy, r.m, r.truth, r.n), {})[
            r.metric] = r
    for (classes, kind, a, m, truth, n), cell_rows in by_cell.items():
        first = next(iter(cell_rows.values()))
        values = []
        for metric in metrics_:
            r = cell_rows.get(metric)
            if r is None:
                values.append("")
            elif zone(r) == "cannot read":
                values.append(f"cannot read / {_pct(r.uncorrected)}")
            else:
                values.append(f"{_pct(r.coverage)}{_flag(r.coverage)} / {_pct(r.uncorrected)}")
        lines.append(f"| {classes} | {kind} | {a:g} | {first.readability:.2f} | {m} | {truth} "
                     f"| {n} | {_pct(first.cannot_read)} | " + " | ".join(values) + " |")
    lines.append("")
    return "\n".join(lines)


def _summary_lines(rows: list[Row]) -> list[str]:
    table = summary(rows)
    accuracies = sorted({r.accuracy for r in rows})
    metrics_ = list(dict.fromkeys(r.metric for r in rows))
    lines = ["Worst corrected coverage over the cells that read (the judge above chance by a "
             "margin for its",
             "calibration), and beside it the worst uncorrected coverage over every cell of that "
             "accuracy:", "",
             "| metric | " + " | ".join(f"a = {a:g}" for a in accuracies) + " |",
             "|---|" + "---|" * len(accuracies)]
    for metric in metrics_:
        cells = []
        for a in accuracies:
            entry = table[f"{metric} @ {a:g}"]
            reads = entry["reads"]
            corrected = "cannot read" if reads["worst"] is None else (
                f"{_pct(reads['worst'])}{_flag(reads['worst'])}")
            cells.append(f"{corrected} (uncorr. {_pct(entry['uncorrected_worst'])})")
        lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    lines += ["", "Borderline cells (the calibration reads the axis in some data sets, not "
              "all): worst corrected coverage over the readable ones, and the cells' count:", "",
              "| metric | " + " | ".join(f"a = {a:g}" for a in accuracies) + " |",
              "|---|" + "---|" * len(accuracies)]
    for metric in metrics_:
        cells = []
        for a in accuracies:
            b = table[f"{metric} @ {a:g}"]["borderline"]
            cells.append("-" if b["worst"] is None else
                         f"{_pct(b['worst'])}{_flag(b['worst'])} ({b['cells']} cells)")
        lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    sizes = sorted({r.m for r in rows})
    lines += ["", "Share of data sets whose calibration says \"cannot read\" (mean over truths "
              "and n), per accuracy and calibration size m; each entry: 2-class symmetric / "
              "3-class symmetric / 2-class one-sided / 3-class one-sided (one figure per class "
              "count at a = 1):", "",
              "| m | " + " | ".join(f"a = {a:g}" for a in accuracies) + " |",
              "|---|" + "---|" * len(accuracies)]
    first = metrics_[0]
    for m in sizes:
        cells = []
        for a in accuracies:
            parts = []
            for kind in CONFUSIONS:
                for classes in (2, 3):
                    mine = [r.cannot_read for r in rows if r.metric == first and r.m == m
                            and r.accuracy == a and r.confusion == kind and r.classes == classes]
                    if mine:
                        parts.append(_pct(float(np.mean(mine))))
            cells.append(" / ".join(parts))
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    for name in ("reads", "borderline"):
        cells = [r for r in rows if zone(r) == name]
        outside = [r for r in cells if not BAND[0] <= r.coverage <= BAND[1]]
        significant = [r for r in cells if significantly_outside(r)]
        mean = float(np.mean([r.coverage for r in cells])) if cells else float("nan")
        lines += ["", f"Corrected, {name} ({len(cells)} metric-cells): mean coverage "
                  f"{_pct(mean)}, {len(outside)} outside the band, {len(significant)} "
                  "significantly" + (": " + "; ".join(
                      f"{r.metric}, {r.classes} classes {r.confusion} a={r.accuracy:g} m={r.m} "
                      f"{r.truth} n={r.n}: {_pct(r.coverage)} (low <= truth {_pct(r.low_ok)}, "
                      f"{r.readable} readable)" for r in significant) if significant else "")
                  + "."]
    return lines


def write_json(path: Path, rows: list[Row], seconds: float, command: str) -> None:
    """The rows as lists under ``fields``, one a line, figures to 4 decimals."""
    fields = list(asdict(rows[0]))

    def compact(row: Row) -> str:
        return json.dumps([round(v, 4) if isinstance(v, float) else v
                           for v in asdict(row).values()])

    head = json.dumps({"confidence": CONFIDENCE, "seconds": round(seconds), "command": command,
                       "min_readability": MIN_READABILITY, "fields": fields})
    path.write_text(head[:-1] + ', "rows": [\n' + ",\n".join(map(compact, rows)) + "\n]}\n")


def read_json(path: Path) -> tuple[list[Row], dict]:
    stored = json.loads(path.read_text())
    return [Row(**dict(zip(stored["fields"], values))) for values in stored["rows"]], stored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--markdown", type=Path, default=ROOT / "docs" / "coverage.md")
    parser.add_argument("--json", type=Path, default=ROOT / "validation" / "judge_coverage.json")
    parser.add_argument("--from-json", action="store_true",
                        help="rewrite the docs section from --json without simulating")
    args = parser.parse_args()
    if args.from_json:
        rows, stored = read_json(args.json)
        section = markdown(rows, stored["seconds"], stored["command"])
        write_section(args.markdown, section, heading=SECTION)
        print(section)
        return
    command = f"python validation/judge_coverage.py --reps {args.reps} --workers {args.workers}"
    if args.draws != 1000:
        command += f" --draws {args.draws}"
    start = time.time()
    rows = run_grid(reps=args.reps, n_draws=args.draws, quick=args.quick, workers=args.workers)
    seconds = time.time() - start
    section = markdown(rows, seconds, command)
    if args.quick:  # the reduced grid writes neither the docs nor the JSON
        print(section)
        return
    write_section(args.markdown, section, heading=SECTION)
    write_json(args.json, rows, seconds, command)
    print(section)


if __name__ == "__main__":
    main()
