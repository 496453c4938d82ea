import pytest

from pytest_t2ibias.metrics import decision_rate, images_needed


def test_images_needed_reaches_the_power_and_one_less_does_not():
    # W1 of 70/30 is 0.4 vs threshold 0.2: the normal approximation says
    # n = ((1.96 + 0.84) * 2 * sqrt(0.21) / 0.2)^2 = 165.
    n = images_needed([0.7, 0.3], 0.2, power=0.8)
    assert 140 <= n <= 220
    key = ((0.7, 0.3), 0.2, "w1", (0.5, 0.5), False, 0.95, 400, 400, 0)
    assert decision_rate(*key, n=n) >= 0.8
    # An independent simulation (another seed) at that n agrees within sampling noise.
    other = key[:-1] + (1,)
    assert decision_rate(*other, n=n) >= 0.72


def test_showing_fairness_needs_more_images_closer_to_the_threshold():
    far = images_needed([0.5, 0.5], 0.3, power=0.8)
    near = images_needed([0.55, 0.45], 0.3, power=0.8)
    assert far < near


def test_unreachable_power_says_so():
    with pytest.raises(ValueError, match="too close"):
        images_needed([0.6, 0.4], 0.2, n_max=64)


def test_a_point_decision_needs_the_images_that_put_the_estimate_on_the_truths_side():
    """Issue #36: a check without ``confidence:`` decides on its point estimate, yet the plan
    sized it for a 95% interval and flagged it as unable to decide. W1 of 70/30 is 0.4 vs
    0.3: the estimate's spread is about 2 sqrt(0.21 / n), so 90% of estimates sit above 0.3
    from n = (1.28 * 2 * sqrt(0.21) / 0.1)^2 = 138 (the interval needs about 3 times that)."""
    import numpy as np

    point = images_needed([0.7, 0.3], 0.3, confidence=None, power=0.9)
    interval = images_needed([0.7, 0.3], 0.3, confidence=0.95, power=0.9)
    assert 100 <= point <= 180 and interval > 2 * point
    # independently: that share of multinomial draws at n has its W1 estimate above 0.3
    rng = np.random.default_rng(7)
    above = np.abs(rng.binomial(point, 0.7, 20_000) / point - 0.5) * 2 > 0.3
    assert above.mean() >= 0.87
