"""Coverage under optional stopping (validation/sequential_coverage.py, reduced): looking at
every round with the fixed-n 95% interval excludes the truth far more often than 5%; the
intervals adaptive checks use (alpha spent over the looks, O'Brien-Fleming) do not, and the
stopping rule's wrong verdicts stay below 5%; a rule that spends more than alpha is caught.
The full grid is docs/coverage.md's last section."""

import numpy as np
import pytest
from support.validation_scripts import validation_script

from pytest_t2ibias.metrics.sequential import doubling_looks, look_confidences

sequential = validation_script("sequential_coverage")
REPS = 400
SLACK = 2 * np.sqrt(0.05 * 0.95 / REPS)  # two binomial sd of a 5% rate


def test_spent_intervals_hold_the_truth_at_every_look_and_naive_ones_do_not():
    for truth, shares in (("uniform", [0.5, 0.5]), ("near-threshold", [0.6, 0.4])):
        row = sequential.distance_row("w1 nominal", shares, truth, REPS, 400, seed=2, cap=128)
        assert row.looks == [16, 32, 64, 128]
        assert row.ever_excluded <= 0.05 + SLACK, (truth, row.ever_excluded)
        assert row.naive_ever_excluded > 0.08, (truth, row.naive_ever_excluded)  # why spend
        for decision in row.decisions:
            assert decision.wrong <= 0.05 + SLACK, (truth, decision)
        far = [d for d in row.decisions if abs(d.threshold - row.true_value) > 0.05]
        assert all(d.mean_images < 128 for d in far if d.decided > 0.9)


def test_betting_and_spent_jeffreys_rows_for_a_share():
    jeffreys, betting = sequential.share_rows([0.6, 0.4], "near-threshold", REPS, seed=3, cap=128)
    assert jeffreys.ever_excluded <= 0.05 + SLACK and betting.ever_excluded <= 0.05 + SLACK
    assert jeffreys.look_confidences == list(look_confidences(0.95, (16, 32, 64, 128)))
    # a threshold 0.1 from the truth: decided early, rightly
    (_, fine, biased) = jeffreys.decisions
    assert fine.wrong == 0 and biased.wrong <= SLACK
    # O'Brien-Fleming keeps the cap's interval near the fixed-n one: nearly as many decided
    # at 128 as fixed n, more than alpha spent evenly
    even_fine = jeffreys.even_decisions[1]
    assert fine.fixed_decided - 0.1 <= fine.decided <= fine.fixed_decided
    assert fine.decided > even_fine.decided + 0.1


def test_a_rule_that_spends_more_than_alpha_is_caught():
    """The harness can fail: each look given four times its O'Brien-Fleming share (20% in
    all) excludes the truth at some look well above 5%, where the true share stays below."""
    looks = (16, 32, 64, 128)
    over = tuple(1 - 4 * (1 - c) for c in look_confidences(0.95, looks))
    spent = sequential.distance_row("w1 nominal", [0.6, 0.4], "near-threshold", REPS, 400,
                                    seed=4, cap=128)
    overspent = sequential.distance_row("w1 nominal", [0.6, 0.4], "near-threshold", REPS, 400,
                                        seed=4, cap=128, spending=over)
    assert overspent.look_confidences == list(over)
    assert spent.ever_excluded <= 0.05 + SLACK < overspent.ever_excluded


BAND_REPS = 4000
LOW, HIGH = sequential.BAND


def _band_slack(edge: float) -> float:
    """Two binomial sd of a miss rate of 1 - ``edge`` at ``BAND_REPS`` sequences."""
    return 2 * np.sqrt(edge * (1 - edge) / BAND_REPS)


@pytest.mark.parametrize("cap", [250, 750])
@pytest.mark.parametrize("shares", [[0.5, 0.5], [0.6, 0.4]])
def test_coverage_at_a_default_cap_lies_in_issue_46s_band(cap, shares):
    """The share's interval at the default spending and the default caps (1.25 times 200 and
    600 images per prompt) holds the truth at every look in [93%, 97.5%] of the sequences,
    up to two binomial sd at 4000 sequences (0.8 and 0.5 points)."""
    (row,) = sequential.share_rows(shares, "cell", BAND_REPS, seed=5, cap=cap, with_betting=False)
    assert LOW - _band_slack(LOW) <= row.coverage <= HIGH + _band_slack(HIGH), row.coverage


def test_an_interval_made_too_narrow_falls_below_the_band():
    """The band test can fail: each look given twice its exact level's miss (alpha spent
    twice over) covers less than 93% at the cap of 750, beyond the slack."""
    looks = doubling_looks(750)
    narrow = tuple(1 - 2 * (1 - c) for c in look_confidences(0.95, looks, calibration=1))
    (row,) = sequential.share_rows([0.5, 0.5], "cell", BAND_REPS, seed=5, cap=750,
                                   spending=narrow, with_betting=False)
    assert row.coverage < LOW - _band_slack(LOW), row.coverage


def test_the_exact_boundaries_remove_the_union_bounds_excess_at_a_cap_of_750():
    """The same 4000 sequences of a fair share at a cap of 750 (a late look at 512): the
    union bound's levels held the truth at every look in 97.9% of them, above the band; the
    exact boundaries in 96.9%. The gap is many sd of its paired difference (sequences that
    one holds and the other misses)."""
    looks = doubling_looks(750)
    (exact,) = sequential.share_rows([0.5, 0.5], "cell", BAND_REPS, seed=5, cap=750,
                                     with_betting=False)
    (union,) = sequential.share_rows([0.5, 0.5], "cell", BAND_REPS, seed=5, cap=750,
                                     spending=look_confidences(0.95, looks, exact=False),
                                     with_betting=False)
    gap = union.coverage - exact.coverage
    assert gap > 4 * np.sqrt(gap / BAND_REPS), (union.coverage, exact.coverage)
    assert union.coverage > HIGH and LOW <= exact.coverage <= HIGH
