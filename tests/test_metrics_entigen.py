import math

import pytest

from pytest_t2ibias.metrics import bias, diversity


def test_diversity_sums_over_prompts():
    # |8-2| + |2-8| = 12 over (8+2) + (2+8) = 20 -> 0.6; each prompt is skewed although
    # the two together are balanced, and Eq. 1 must not let them cancel.
    assert diversity([8, 2], [2, 8]) == pytest.approx(0.6)


def test_diversity_balanced_and_one_sided():
    assert diversity([5, 3], [5, 3]) == 0.0
    assert diversity([10, 0], [0, 4]) == 1.0


def test_diversity_without_images_is_undefined():
    assert math.isnan(diversity([0, 0], [0, 0]))


def test_diversity_needs_one_pair_per_prompt():
    with pytest.raises(ValueError, match="one pair per prompt"):
        diversity([1, 2, 3], [1, 2])


def test_bias_sign_gives_direction():
    # (8 - 2)/(8 + 2) = 0.6 towards a; swapped, -0.6 towards b.
    assert bias(8, 2) == pytest.approx(0.6)
    assert bias(2, 8) == pytest.approx(-0.6)
    assert bias(4, 4) == 0.0
    assert math.isnan(bias(0, 0))
