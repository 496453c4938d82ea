"""Measured coverage of the 95% intervals (validation/coverage.py, reduced grid).

400 simulated data sets a cell: at a true coverage of 95% the measured one has sd 1.1 points,
so >= 90% fails a real 95% interval with probability below 1e-5 and catches one near 85%.
"""

import numpy as np
import pytest
from support.validation_scripts import validation_script

from pytest_t2ibias.metrics import (
    intersectional_sensitivity,
    jeffreys_interval,
    severity_estimate,
    w1_estimate,
)

coverage = validation_script("coverage")


def test_balanced_controls_include_zero_at_the_nominal_rate():
    # Issue #9: the percentile bootstrap excluded 0 in 75 of 140 balanced results.
    for metric in ("w1 nominal", "severity", "w1 ordered"):
        row = coverage.distance_row(metric, [1 / 3] * 3, "uniform", 48, 400, 400, seed=1)
        assert row.true_value == pytest.approx(0.0, abs=1e-12)
        assert 0.90 <= row.coverage <= 0.995, (metric, row.coverage)


@pytest.mark.parametrize("truth", ["near-threshold", "skewed"])
@pytest.mark.parametrize("metric", ["w1 nominal", "severity", "w1 ordered"])
def test_distance_intervals_cover_away_from_the_boundary(metric, truth):
    row = coverage.distance_row(metric, coverage.TRUTHS[3][truth], truth, 200, 400, 400, seed=2)
    assert row.coverage >= 0.90, row
    assert row.low_ok >= 0.925, row  # the one-sided statement a gate uses


def test_one_class_never_collapses_and_covers():
    # Every image one class: the bootstrap gives [1, 1]; the data cannot reject the point
    # mass (truth 1), and the posterior's low end stays below it.
    estimate = w1_estimate([np.zeros(48, dtype=int)], np.array([0.5, 0.5]))
    assert estimate.high == 1.0 and 0.8 < estimate.low < 1.0
    row = coverage.distance_row("severity", [1.0, 0.0], "one-class", 10, 400, 400, seed=3)
    assert row.coverage == 1.0 and row.mean_width > 0.1


def test_five_images_of_one_class_cannot_reject_balance():
    # 5 of 5 male has probability 2/32 = 0.0625 > 0.05 under 50/50: the exact test keeps
    # balance, so the interval is [0, 1] (the bootstrap said [1, 1]).
    estimate = severity_estimate([np.zeros(5, dtype=int)], 2)
    assert (estimate.low, estimate.high) == (0.0, 1.0)
    assert estimate.method == "posterior"


def test_share_intervals_cover_exactly():
    for n in (10, 48, 200):
        for truth, shares in coverage.TRUTHS[2].items():
            row = coverage.share_row(shares, truth, n)
            assert row.coverage >= 0.92 if truth != "one-class" else row.coverage == 1.0
    assert jeffreys_interval(0, 10).high == pytest.approx(0.2172, abs=1e-4)


def test_is_difference_includes_zero_when_all_prompts_are_balanced():
    row = coverage.is_row("all balanced", 48, 150, 300, seed=4)
    assert row.coverage >= 0.90


def test_is_posterior_is_a_choice():
    rng = np.random.default_rng(0)
    choices = {"x": ["a", "b"], "y": ["u", "v"]}
    initial = {"x": rng.integers(0, 2, 48), "y": rng.integers(0, 2, 48)}
    counterfactual = {"x": {"a": {"x": np.zeros(48, int), "y": rng.integers(0, 2, 48)}}}
    default = intersectional_sensitivity(initial, counterfactual, choices, interval="bootstrap")
    posterior = intersectional_sensitivity(initial, counterfactual, choices, interval="posterior")
    assert default.entry("x", "y").method == "bootstrap"
    assert posterior.entry("x", "y").method == "posterior"
    assert default.value[0, 1] == posterior.value[0, 1]


@pytest.mark.slow
def test_full_grid_coverage():
    # The full table of docs/coverage.md. Known departures (docs/STATISTICS.md): one-class
    # truths cover 100% (the data are always the same), and the IS differences under-cover
    # when one side sits at its ideal. Everything else must be in [93%, 97.5%] up to noise.
    rows = coverage.run_grid(reps=2000, difference_reps=400, n_draws=1000)
    for row in rows:
        if row.truth == "one-class":
            assert row.coverage == 1.0
        elif row.metric.startswith("IS") and "profile" in row.method:
            if "balanced" in row.truth:  # both sides at the kink: over-covers (STATISTICS.md)
                assert row.coverage >= 0.97, row
            elif "3 classes" in row.metric:  # vertex of several kinks: 94.3% to 99.0%
                assert row.coverage >= 0.88, row
                assert max(row.low_ok, row.high_ok) >= 0.985, row  # misses one-sided
            else:
                assert row.coverage >= (0.88 if row.n == 10 else 0.90), row
                if row.truth in ("helps", "hurts", "fixed"):  # one side at its kink:
                    assert max(row.low_ok, row.high_ok) >= 0.985, row  # misses one-sided
        elif row.metric.startswith("IS"):
            assert row.coverage >= (0.70 if row.n == 10 else 0.84), row
        elif row.n == 10:
            assert row.coverage >= 0.85, row  # discreteness: see docs/coverage.md
        else:
            assert 0.915 <= row.coverage <= 0.99, row


# interval="profile" (issue #9, IS entries and IS_mit). 150 data sets a cell: at a true 95%
# the measured coverage has sd 1.8 points, so >= 0.89 fails a real 95% interval with
# probability about 5e-4, and it fails the reflected posterior (85% on "helps" at n = 48).
# The width bound fails a construction that buys coverage with a trivially wide interval.
@pytest.mark.parametrize("truth", ["helps", "hurts"])
def test_is_profile_interval_covers_at_a_kink(truth):
    row = coverage.is_row(truth, 48, 150, 500, seed=5, interval="profile")
    assert row.coverage >= 0.89, row
    assert row.mean_width < 0.8, row  # posterior 0.55 to 0.57, profile 0.62 to 0.66
    if truth == "hurts":
        assert row.high_ok >= 0.96, row  # the end a "fail when high < -tolerance" gate reads
    else:
        assert row.low_ok >= 0.96, row


def test_mitigation_profile_interval_covers_a_fix():
    row = coverage.mitigation_row("fixed", 48, 150, 500, seed=6, interval="profile")
    assert row.coverage >= 0.89, row
    assert row.low_ok >= 0.96, row  # a harmless (helpful) candidate must not fire the gate
    assert row.mean_width < 0.85, row


def test_profile_is_the_default_and_one_matrix():
    rng = np.random.default_rng(0)
    choices = {"x": ["a", "b"], "y": ["u", "v", "w"]}
    initial = {"x": rng.integers(0, 2, 48), "y": rng.integers(0, 3, 48)}
    counterfactual = {"x": {v: {"x": np.full(48, i), "y": rng.integers(0, 3, 48)}
                            for i, v in enumerate("ab")}}
    default = intersectional_sensitivity(initial, counterfactual, choices, interval="bootstrap")
    profile = intersectional_sensitivity(initial, counterfactual, choices)
    assert default.method == "bootstrap" and profile.entry("x", "y").method == "profile"
    np.testing.assert_array_equal(default.value, profile.value)
    defined = ~np.isnan(profile.value)
    assert (profile.low[defined] <= profile.value[defined]).all()
    assert (profile.value[defined] <= profile.high[defined]).all()
    assert np.isnan(profile.low[1]).all()  # y has no counterfactuals: its row stays NaN
    again = intersectional_sensitivity(initial, counterfactual, choices, interval="profile")
    np.testing.assert_array_equal(profile.low, again.low)


# Three classes, the initial prompt at the uniform ideal: a vertex of several kinks, where the
# likelihood ratio is heavier than at a two-class kink and the extremes lie on kink faces
# (posterior.kink_lr_quantile, profile_range's kinks). The calibration before this (chi-square
# (1) at 1 - 0.7 (1 - confidence), no faces) covered this cell 83.5% at 400 data sets and
# this seeded run of 150 84.7% (fails); now 95.3%. sd at 95%: 1.8 points.
def test_is_profile_interval_covers_a_three_class_vertex():
    row = coverage.is_row("hurts", 200, 150, 500, seed=7, interval="profile", classes=3)
    assert row.coverage >= 0.89, row
    assert row.high_ok >= 0.96, row  # the end a "fail when high < -tolerance" gate reads
    assert row.mean_width < 0.4, row
