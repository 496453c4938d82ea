"""Coverage of the judge-corrected intervals (validation/judge_coverage.py, reduced): where the
calibration reads the axis, the corrected 95% intervals hold the truth at about the nominal
rate, and the uncorrected ones, computed as if the judge were right, collapse on a confused
judge; a judge at chance is "cannot read", not a figure. The full grid is docs/coverage.md's
section "The judge's own error"."""

import numpy as np
import pytest
from support.validation_scripts import validation_script

judge = validation_script("judge_coverage")
REPS = 160
SLACK = 2 * np.sqrt(0.05 * 0.95 / REPS)  # two binomial sd of a 95% rate
LOW, HIGH = judge.BAND[0] - SLACK, judge.BAND[1] + SLACK


def rows_of(*design, reps=REPS, n_draws=500):
    return {r.metric: r for r in judge.cell(*design, reps=reps, n_draws=n_draws, seed=1)}


@pytest.mark.parametrize("design", [
    (2, "symmetric", 0.8, 200, "skewed", 200),
    (2, "one-sided", 0.7, 50, "skewed", 48),
    (3, "symmetric", 0.9, 50, "skewed", 48),
    # three classes near the ideal at n = 48: the percentile low end missed up to 12% here
    # (87.7% at 300 data sets); the bias-corrected low end and the 1/10 prior bring it in
    (3, "symmetric", 0.8, 50, "near-threshold", 48),
])
def test_corrected_intervals_cover_where_the_judge_reads(design):
    rows = rows_of(*design)
    for row in rows.values():
        assert row.cannot_read <= 0.05, row
        assert LOW <= row.coverage <= HIGH, row


def test_uncorrected_intervals_collapse_on_a_confused_judge():
    """80% accurate on either class, a 0.8/0.2 truth, 200 images: the judge reads 0.68/0.32,
    and the intervals computed as if it were right all but never hold the truth (the issue's
    severity 0.28 read as under 0.1); the corrected ones do."""
    rows = rows_of(2, "symmetric", 0.8, 200, "skewed", 200)
    for row in rows.values():
        assert row.uncorrected <= 0.10, row
        assert row.uncorrected_high_ok <= 0.10, row  # wholly below the truth: confidently wrong
        assert row.coverage >= LOW, row


def test_a_judge_at_chance_cannot_read():
    """Symmetric, 60% accurate on two classes (readability 0.2, the threshold itself): the
    calibration never shows it above MIN_READABILITY, even with 200 images a class."""
    rows = rows_of(2, "symmetric", 0.6, 200, "near-threshold", 48, reps=60, n_draws=200)
    assert all(r.cannot_read >= 0.95 for r in rows.values())
    perfect = rows_of(2, "symmetric", 1.0, 20, "near-threshold", 48, reps=60, n_draws=200)
    assert all(r.cannot_read == 0 for r in perfect.values())
