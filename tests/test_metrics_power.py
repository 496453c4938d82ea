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
