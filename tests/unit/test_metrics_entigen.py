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


def test_category_diversity_sums_over_the_categorys_prompts_and_keeps_the_per_prompt_view():
    """Eq. 1 over a category: a doctor at 8/2 and a nurse at 2/8 do not cancel (0.6), a
    balanced teacher dilutes them (0.4); per prompt each is |bias| (0.6, 0.6, 0.0). An
    intervention that balances everyone improves the category by 0.4, a control by 0."""
    import numpy as np

    from pytest_t2ibias.methods.entigen import category_effects

    def labels(tenths, n=60):  # image i of every prompt shares its seed: shuffle alike
        a = n * tenths // 10
        return np.random.default_rng(0).permutation(np.array([0] * a + [1] * (n - a)))

    original = {"doctor": labels(8), "nurse": labels(2), "teacher": labels(5)}
    balanced = {s: labels(5) for s in original}
    result = category_effects(original, {"if all ...": balanced, "if honesty ...": dict(original)},
                              choices=["male", "female"], controls=["if honesty ..."], axis="gender",
                              n_resamples=300)
    assert result.original_diversity == pytest.approx(0.4)
    assert result.original_per_prompt == pytest.approx({"doctor": 0.6, "nurse": 0.6, "teacher": 0.0})
    intervention, control = result.effects
    assert intervention.diversity == 0.0 and intervention.improvement.value == pytest.approx(0.4)
    assert intervention.improvement.low > 0 and intervention.per_prompt["doctor"] == 0.0
    assert control.control and control.improvement.value == 0.0
    assert result.to_dict()["effects"][0]["per_prompt"]["nurse"] == 0.0
    with pytest.raises(ValueError, match="no labels for nurse"):
        category_effects(original, {"x": {"doctor": labels(5), "teacher": labels(5)}}, choices=["m", "f"])
