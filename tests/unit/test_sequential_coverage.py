"""Coverage under optional stopping (validation/sequential_coverage.py, reduced): looking at
every round with the fixed-n 95% interval excludes the truth far more often than 5%; the
intervals adaptive checks use (alpha spent over the looks, O'Brien-Fleming) do not, and the
stopping rule's wrong verdicts stay below 5%; a rule that spends more than alpha is caught.
The full grid is docs/coverage.md's last section."""

import numpy as np
from support.validation_scripts import validation_script

from pytest_t2ibias.metrics.sequential import look_confidences

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
