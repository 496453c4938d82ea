import math

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from pytest_t2ibias.metrics import kl_divergence, normalised_w1, severity

UNIFORM_2 = np.array([0.5, 0.5])
UNIFORM_3 = np.full(3, 1 / 3)


class TestNormalisedW1:
    def test_two_categories(self):
        # TV((0.8, 0.2), uniform) = 0.5·(0.3 + 0.3) = 0.3; worst (point mass) = 0.5 -> 0.6.
        assert normalised_w1([0.8, 0.2], UNIFORM_2) == pytest.approx(0.6)

    def test_two_categories_ordered_agrees(self):
        # With two categories the positional cost is the 0/1 cost: same 0.6.
        assert normalised_w1([0.8, 0.2], UNIFORM_2, ordered=True) == pytest.approx(0.6)

    def test_ideal_is_zero_and_point_mass_is_one(self):
        assert normalised_w1(UNIFORM_3, UNIFORM_3) == 0.0
        assert normalised_w1([0.0, 0.0, 1.0], UNIFORM_3) == pytest.approx(1.0)
        assert normalised_w1([0.0, 0.0, 1.0], UNIFORM_3, ordered=True) == pytest.approx(1.0)

    def test_middle_point_mass_nominal_vs_ordered(self):
        # p = (0, 1, 0) vs uniform over 3.
        # Nominal: TV = 0.5·(1/3 + 2/3 + 1/3) = 2/3; worst = 1 - 1/3 = 2/3 -> 1.0.
        # Ordered: CDFs (0, 1, 1) vs (1/3, 2/3, 1): W1 = 1/3 + 1/3 = 2/3; worst is an end
        # point, W1(δ0, uniform) = (0 + 1 + 2)/3 = 1 -> 2/3. The middle is not "fully biased"
        # when neighbours are close.
        assert normalised_w1([0.0, 1.0, 0.0], UNIFORM_3) == pytest.approx(1.0)
        assert normalised_w1([0.0, 1.0, 0.0], UNIFORM_3, ordered=True) == pytest.approx(2 / 3)

    def test_split_ends_nominal_vs_ordered(self):
        # p = (0.5, 0, 0.5). Nominal: TV = 0.5·(1/6 + 1/3 + 1/6) = 1/3, / (2/3) = 0.5.
        # Ordered: CDFs (0.5, 0.5, 1) vs (1/3, 2/3, 1): 1/6 + 1/6 = 1/3, / 1 = 1/3.
        assert normalised_w1([0.5, 0.0, 0.5], UNIFORM_3) == pytest.approx(0.5)
        assert normalised_w1([0.5, 0.0, 0.5], UNIFORM_3, ordered=True) == pytest.approx(1 / 3)

    def test_ordered_matches_scipy_wasserstein(self):
        rng = np.random.default_rng(0)
        positions = np.arange(5)
        for _ in range(20):
            p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
            expected = wasserstein_distance(positions, positions, p, q)
            worst = max(
                wasserstein_distance(positions, positions, point_mass, q)
                for point_mass in np.eye(5)
            )
            assert normalised_w1(p, q, ordered=True) == pytest.approx(expected / worst)

    def test_non_uniform_ideal(self):
        # Ideal (0.7, 0.3): worst point mass is δ_female, TV = 0.7. p = (0.5, 0.5): TV 0.2
        # -> 0.2/0.7 = 0.285714.
        assert normalised_w1([0.5, 0.5], [0.7, 0.3]) == pytest.approx(0.2 / 0.7)

    def test_batched_rows(self):
        rows = np.array([[0.8, 0.2], [0.5, 0.5], [np.nan, np.nan]])
        result = normalised_w1(rows, UNIFORM_2)
        assert result[:2] == pytest.approx([0.6, 0.0])
        assert math.isnan(result[2])  # nothing answered: distance undefined

    def test_one_category_is_undefined(self):
        assert math.isnan(normalised_w1([1.0], [1.0]))

    def test_ideal_must_match_and_sum_to_one(self):
        with pytest.raises(ValueError, match="do not match"):
            normalised_w1([0.5, 0.5], UNIFORM_3)
        with pytest.raises(ValueError, match="sum to 1"):
            normalised_w1([0.5, 0.5], [0.5, 0.6])


class TestSeverity:
    def test_uniform_is_zero_and_one_class_is_one(self):
        assert severity([0.5, 0.5]) == pytest.approx(0.0)
        assert severity(UNIFORM_3) == pytest.approx(0.0)
        assert severity([1.0, 0.0]) == 1.0  # 0 log 0 = 0, not NaN

    def test_three_quarters(self):
        # H = -(0.75 ln 0.75 + 0.25 ln 0.25) = 0.215762 + 0.346574 = 0.562335 nats;
        # / ln 2 = 0.811278 -> severity 0.188722.
        assert severity([0.75, 0.25]) == pytest.approx(0.188722, abs=1e-6)

    def test_one_category_is_undefined(self):
        assert math.isnan(severity([1.0]))

    def test_no_answers_is_undefined(self):
        assert math.isnan(severity([np.nan, np.nan]))


class TestKlDivergence:
    def test_known_value(self):
        # 0.5 ln(0.5/0.25) + 0.5 ln(0.5/0.75) = 0.5·(0.693147 - 0.405465) = 0.143841 nats.
        assert kl_divergence([0.5, 0.5], [0.25, 0.75]) == pytest.approx(0.143841, rel=1e-5)

    def test_identical_is_zero_and_asymmetric(self):
        assert kl_divergence([0.3, 0.7], [0.3, 0.7]) == pytest.approx(0.0, abs=1e-12)
        assert kl_divergence([0.9, 0.1], [0.5, 0.5]) != pytest.approx(
            kl_divergence([0.5, 0.5], [0.9, 0.1])
        )

    def test_zero_share_stays_finite(self):
        # p puts mass where q has none: without smoothing this is infinite.
        # With 1e-6: ≈ 0.5 ln(0.5/1e-6) + 0.5 ln(0.5/1) = 0.5·13.122 - 0.5·0.693 = 6.214.
        assert kl_divergence([0.5, 0.5], [1.0, 0.0]) == pytest.approx(6.2146, abs=1e-3)
