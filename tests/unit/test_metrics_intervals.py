import math

import numpy as np
import pytest

from pytest_t2ibias.metrics import bootstrap_estimate, bootstrap_matrix, wilson_interval


def mean_of_first(groups):
    return float(np.mean(groups[0])) if len(groups[0]) else float("nan")


class TestWilsonInterval:
    def test_known_value(self):
        # k=8, n=10, z=1.96: centre (8 + z²/2)/(10 + z²) = 9.9207/13.8415 = 0.71675,
        # half-width z/(10 + z²)·sqrt(10·0.8·0.2 + z²/4) = 0.14160·1.60012 = 0.22658.
        estimate = wilson_interval(8, 10)
        assert estimate.value == 0.8
        assert estimate.low == pytest.approx(0.4902, abs=1e-4)
        assert estimate.high == pytest.approx(0.9433, abs=1e-4)
        assert (estimate.n, estimate.confidence, estimate.method) == (10, 0.95, "wilson")

    def test_zero_successes_keeps_an_upper_bound(self):
        # Wilson at k=0: low 0, high z²/(n + z²) = 3.8415/13.8415 = 0.2775.
        estimate = wilson_interval(0, 10)
        assert estimate.low == pytest.approx(0.0, abs=1e-12)
        assert estimate.high == pytest.approx(0.2775, abs=1e-4)

    def test_higher_confidence_is_wider(self):
        narrow, wide = wilson_interval(8, 10, 0.80), wilson_interval(8, 10, 0.99)
        assert wide.low < narrow.low and wide.high > narrow.high
        assert wide.confidence == 0.99

    def test_no_images_knows_nothing(self):
        estimate = wilson_interval(0, 0)
        assert math.isnan(estimate.value)
        assert (estimate.low, estimate.high, estimate.n) == (0.0, 1.0, 0)

    def test_rejects_more_successes_than_trials(self):
        with pytest.raises(ValueError, match="successes"):
            wilson_interval(11, 10)


class TestBootstrapEstimate:
    def test_value_is_the_statistic_on_the_original_sample(self):
        labels = np.array([1] * 30 + [0] * 10)  # mean 30/40 = 0.75
        estimate = bootstrap_estimate(mean_of_first, [labels], n_resamples=200)
        assert estimate.value == 0.75
        assert estimate.low < 0.75 < estimate.high
        assert (estimate.n, estimate.method) == (40, "bootstrap")

    def test_interval_shrinks_with_sample_size(self):
        # Same share 0.75; the standard error falls like 1/sqrt(n): 20 -> 2000 is 10x.
        small = bootstrap_estimate(mean_of_first, [np.repeat([1, 0], [15, 5])], n_resamples=500)
        large = bootstrap_estimate(
            mean_of_first, [np.repeat([1, 0], [1500, 500])], n_resamples=500
        )
        assert (large.high - large.low) < (small.high - small.low) / 5
        # sqrt(0.75·0.25/2000) = 0.00968; the 95% width is about 3.92 of those = 0.038.
        assert large.high - large.low == pytest.approx(0.038, abs=0.008)

    def test_same_seed_same_interval(self):
        labels = np.arange(20.0)  # many distinct values, so different seeds give new bounds
        first = bootstrap_estimate(mean_of_first, [labels], seed=3, n_resamples=100)
        again = bootstrap_estimate(mean_of_first, [labels], seed=3, n_resamples=100)
        other = bootstrap_estimate(mean_of_first, [labels], seed=4, n_resamples=100)
        assert (first.low, first.high) == (again.low, again.high)
        assert (first.low, first.high) != (other.low, other.high)

    def test_paired_resampling_cancels_shared_noise(self):
        # Candidate = baseline with 10 of 200 labels flipped from 0 to 1: the difference of
        # means is 10/200 = 0.05. Paired, only the flips vary: sd ≈ sqrt(.05·.95/200) = 0.015.
        # Unpaired, both sides vary: sd ≈ sqrt(2·0.25/200) = 0.05.
        baseline = np.repeat([1, 0], [100, 100])
        candidate = baseline.copy()
        candidate[100:110] = 1

        def difference(groups):
            return float(np.mean(groups[1]) - np.mean(groups[0]))

        paired = bootstrap_estimate(difference, [baseline, candidate], paired=True)
        unpaired = bootstrap_estimate(difference, [baseline, candidate], paired=False)
        assert paired.value == unpaired.value == pytest.approx(0.05)
        assert paired.low > 0  # the improvement is real once the pairing is used
        assert unpaired.low < 0
        assert (paired.high - paired.low) < 0.5 * (unpaired.high - unpaired.low)
        assert paired.method == "paired bootstrap"

    def test_paired_needs_equal_sizes(self):
        with pytest.raises(ValueError, match="equal size"):
            bootstrap_estimate(mean_of_first, [np.zeros(3), np.zeros(4)], paired=True)

    def test_nan_replicates_are_dropped(self):
        # One answered image among 20 abstentions: many resamples miss it (statistic NaN).
        # The surviving replicates all see the answered label, so the interval is [1, 1].
        labels = np.array([1] + [-1] * 20)

        def answered_mean(groups):
            answered = groups[0][groups[0] >= 0]
            return float(np.mean(answered)) if len(answered) else float("nan")

        estimate = bootstrap_estimate(answered_mean, [labels], n_resamples=200)
        assert (estimate.value, estimate.low, estimate.high) == (1.0, 1.0, 1.0)

    def test_all_nan_replicates_give_nan_bounds(self):
        estimate = bootstrap_estimate(lambda groups: float("nan"), [np.zeros(5)], n_resamples=20)
        assert math.isnan(estimate.low) and math.isnan(estimate.high)


class TestBootstrapMatrix:
    def test_entries_share_each_replicate(self):
        # Statistic (mean, 1 - mean): the entries always sum to 1, so their bounds mirror.
        labels = np.repeat([1, 0], [30, 18])

        def mean_and_complement(batch):
            mean = batch[0].mean(axis=-1)
            return np.stack([mean, 1 - mean], axis=-1)

        joint = bootstrap_matrix(mean_and_complement, [labels], n_resamples=400)
        assert joint.value == pytest.approx([0.625, 0.375])
        assert joint.low[0] == pytest.approx(1 - joint.high[1])
        assert joint.high[0] == pytest.approx(1 - joint.low[1])
        assert joint.low[0] < 0.625 < joint.high[0]
        assert joint.n == 48

    def test_batches_agree_with_the_scalar_bootstrap_in_distribution(self):
        # Not the same random stream, but both estimate sd(mean) ≈ sqrt(.25/100) = 0.05.
        labels = np.repeat([1, 0], [50, 50])
        scalar = bootstrap_estimate(mean_of_first, [labels], n_resamples=600)
        joint = bootstrap_matrix(lambda b: b[0].mean(axis=-1), [labels], n_resamples=600)
        assert joint.high - joint.low == pytest.approx(scalar.high - scalar.low, abs=0.04)
        assert joint.high - joint.low == pytest.approx(0.196, abs=0.04)

    def test_nan_entries_are_dropped_entry_by_entry(self):
        def defined_and_undefined(batch):
            mean = batch[0].mean(axis=-1)
            return np.stack([mean, np.full_like(mean, np.nan)], axis=-1)

        joint = bootstrap_matrix(defined_and_undefined, [np.repeat([1, 0], [5, 5])], n_resamples=50)
        assert np.isfinite(joint.low[0]) and np.isnan(joint.low[1])


def test_difference_of_shares_newcombe_matches_the_published_example():
    # Newcombe (1998), Table II, example (a): 56/70 - 48/80 = 0.2000, 95% CI [0.0524, 0.3339]
    from pytest_t2ibias.metrics import difference_of_shares

    d = difference_of_shares(56, 70, 48, 80)
    assert d.value == pytest.approx(0.2)
    assert (d.low, d.high) == (pytest.approx(0.0524, abs=5e-4), pytest.approx(0.3339, abs=5e-4))
    assert difference_of_shares(10, 10, 0, 10).high <= 1.0
