"""ENTIGEN's improvement under optional stopping (validation/entigen_stopping.py, reduced:
fewer sequences and bootstrap draws, cap 128). Where the paired bootstrap is not one point,
its intervals at the spent levels hold the true improvement at every look, and the same
replicates read at 95% every look do not; where the first looks see pairs all alike, the
one-point interval [0, 0] excludes a real improvement (docs/coverage.md's section says how
often at the plugin's 1,000 draws). The full grid is that section."""

import numpy as np
from support.validation_scripts import validation_script

stopping = validation_script("entigen_stopping")
REPS = 120
SLACK = 2 * np.sqrt(0.05 * 0.95 / REPS)  # two binomial sd of a 5% rate


def test_spent_bootstrap_holds_the_improvement_and_naive_looks_do_not():
    """No effect (80% "a" before and after), independent pairs, up to 160 pairs."""
    row = stopping.entigen_row(0.8, 0.8, "independent", REPS, seed=1, cap=160, draws=300)
    assert row.looks == [16, 32, 64, 160]
    assert row.true_improvement == 0
    assert row.ever_excluded <= 0.05 + SLACK, row
    assert row.fixed_excluded <= 0.05 + SLACK, row
    # the same replicates at 95% lie inside the spent ones at every look: looking without
    # spending excludes the truth more often (14.5% against 5.0% in the full grid)
    assert row.naive_ever_excluded >= row.ever_excluded + 0.03, row
    # the kind's rule ("improves" only wholly above 0): a null intervention rarely passes
    assert row.guarded_passed <= 0.05 + SLACK, row


def test_one_point_intervals_at_the_first_looks_exclude_a_real_improvement():
    """The harness can fail: 95% of originals and 90% of intervened images "a", 80% of pairs
    sharing their draw, so 16 pairs are often all alike and the interval is [0, 0]; the
    true improvement 0.1 is then excluded at some look far more often than 5% (40.5% in the
    full grid), and than by the 95% interval on all the pairs (5.0%)."""
    row = stopping.entigen_row(0.95, 0.90, "shared", 60, seed=1, cap=128, draws=300)
    assert row.ever_excluded > 0.15, row
    assert row.degenerate_stops > 0.15, row  # stopped on a one-point interval
    assert row.ever_excluded > row.fixed_excluded + 0.15, row
    # the kind's rule reads a one-point interval before the cap as none: far fewer misses
    assert row.guarded_ever_excluded <= row.ever_excluded - 0.15, row
    assert row.guarded_wrong == 0.0, row  # the real improvement is never declared absent
