"""metrics.judge: a judge's confusion, its readability, and shares corrected for it."""

import numpy as np
import pytest

from pytest_t2ibias.metrics.judge import (
    CONFUSION_PRIOR,
    LABELLED,
    MIN_READABILITY,
    JudgeCalibration,
    calibration_from_labels,
    confusion_draws,
    correct_shares,
    corrected_draws,
    posterior_mean_confusion,
    project_to_simplex,
    readability,
)
from pytest_t2ibias.metrics.posterior import bias_corrected_low, severity_estimate


def calibration(counts, choices=("female", "male")):
    return JudgeCalibration("toy-judge", "gender", tuple(choices), np.array(counts), LABELLED)


class TestRoganGladen:
    """Two classes: Π((Mᵀ)⁻¹ q) is Rogan & Gladen's (q + sp - 1)/(se + sp - 1), clipped."""

    @pytest.mark.parametrize("se, sp", [(0.9, 0.8), (0.7, 0.95), (1.0, 0.6), (0.55, 0.5)])
    def test_equals_the_closed_form_clipped(self, se, sp):
        confusion = np.array([[se, 1 - se], [1 - sp, sp]])  # class 0 = "positive"
        q = np.linspace(0, 1, 41)
        judged = np.stack([q, 1 - q], axis=-1)
        expected = np.clip((q + sp - 1) / (se + sp - 1), 0, 1)
        corrected = correct_shares(judged, confusion)
        np.testing.assert_allclose(corrected[:, 0], expected, atol=1e-12)
        np.testing.assert_allclose(corrected.sum(axis=-1), 1, atol=1e-12)

    def test_inverts_the_judge_exactly_inside_the_simplex(self):
        rng = np.random.default_rng(1)
        for _ in range(50):
            p = rng.dirichlet(np.ones(3))
            confusion = rng.dirichlet(np.ones(3), size=3) + 3 * np.eye(3)
            confusion /= confusion.sum(axis=1, keepdims=True)
            np.testing.assert_allclose(correct_shares(confusion.T @ p, confusion), p, atol=1e-10)

    def test_the_issue_arithmetic(self):
        # a 0.9/0.1 model read at e = 0.2 reads 0.74/0.26 (module doc); corrected back
        confusion = np.array([[0.8, 0.2], [0.2, 0.8]])
        assert confusion.T @ [0.9, 0.1] == pytest.approx([0.74, 0.26])
        assert correct_shares(np.array([0.74, 0.26]), confusion) == pytest.approx([0.9, 0.1])


class TestProjection:
    def test_points_on_the_simplex_stay(self):
        points = np.random.default_rng(2).dirichlet(np.ones(4), size=100)
        np.testing.assert_allclose(project_to_simplex(points), points, atol=1e-12)

    def test_known_projections(self):
        assert project_to_simplex(np.array([1.4, -0.4])) == pytest.approx([1, 0])
        assert project_to_simplex(np.array([0.7, 0.7])) == pytest.approx([0.5, 0.5])
        assert project_to_simplex(np.array([0.9, 0.5, -0.2])) == pytest.approx([0.7, 0.3, 0])
        assert project_to_simplex(np.array([2.0, 0.0, 0.0])) == pytest.approx([1, 0, 0])

    def test_is_the_nearest_point_of_the_simplex(self):
        rng = np.random.default_rng(3)
        x = rng.normal(0.3, 0.8, size=(200, 3))
        y = project_to_simplex(x)
        assert (y >= 0).all()
        np.testing.assert_allclose(y.sum(axis=-1), 1, atol=1e-12)
        # KKT: x - y is constant (θ) on the support and below θ off it
        theta = np.where(y > 0, x - y, -np.inf).max(axis=-1)
        on = y > 0
        np.testing.assert_allclose(np.where(on, x - y, theta[:, None]), theta[:, None] + 0 * x,
                                   atol=1e-12)
        assert (np.where(on, -np.inf, x) <= theta[:, None] + 1e-12).all()
        # and no sampled point of the simplex is nearer
        others = rng.dirichlet(np.ones(3), size=500)
        nearest = np.linalg.norm(x - y, axis=-1)
        others_distance = np.linalg.norm(x[:, None] - others[None], axis=-1)
        assert (nearest[:, None] <= others_distance + 1e-12).all()


class TestReadability:
    @pytest.mark.parametrize("e", [0.0, 0.05, 0.2, 0.35, 0.49])
    def test_symmetric_two_classes_is_one_minus_twice_the_error(self, e):
        confusion = np.array([[1 - e, e], [e, 1 - e]])
        assert readability(confusion) == pytest.approx(1 - 2 * e)

    def test_one_sided_two_classes(self):
        # (Mᵀ)⁻¹ = adj / det, det = 1 - e0 - e1, largest column sum 1 + |e0 - e1|
        for e0, e1 in ((0.0, 0.3), (0.1, 0.25)):
            confusion = np.array([[1 - e0, e0], [e1, 1 - e1]])
            assert readability(confusion) == pytest.approx((1 - e0 - e1) / (1 + abs(e0 - e1)))

    def test_symmetric_three_classes(self):
        # a on the diagonal, b = (1 - a) / 2 off it: (Mᵀ)⁻¹ = (I - bJ) / (a - b), r = (a-b)/(1+b)
        a = 0.6
        b = (1 - a) / 2
        confusion = np.full((3, 3), b) + (a - b) * np.eye(3)
        assert readability(confusion) == pytest.approx((a - b) / (1 + b))

    def test_identity_is_one_and_batches(self):
        batch = np.stack([np.eye(3), np.full((3, 3), 1 / 3)])
        np.testing.assert_allclose(readability(batch), [1.0, 0.0])

    def test_it_bounds_how_much_a_true_difference_shrinks(self):
        rng = np.random.default_rng(4)
        confusion = np.array([[0.8, 0.15, 0.05], [0.1, 0.7, 0.2], [0.05, 0.1, 0.85]])
        r = readability(confusion)
        for _ in range(200):
            p, q = rng.dirichlet(np.ones(3), size=2)
            shown = np.abs(confusion.T @ (p - q)).sum()
            assert shown >= r * np.abs(p - q).sum() - 1e-12


class TestSingular:
    def test_chance_gives_nan_shares_and_zero_readability(self):
        chance = np.full((2, 2), 0.5)
        assert np.isnan(correct_shares(np.array([0.7, 0.3]), chance)).all()
        assert readability(chance) == 0.0
        # a judge that always says class 0
        constant = np.array([[1.0, 0.0], [1.0, 0.0]])
        assert np.isnan(correct_shares(np.array([1.0, 0.0]), constant)).all()

    def test_nan_shares_stay_nan_and_a_batch_keeps_its_good_rows(self):
        confusion = np.stack([np.eye(2), np.full((2, 2), 0.5)])
        out = correct_shares(np.array([[0.3, 0.7], [0.3, 0.7]]), confusion)
        assert out[0] == pytest.approx([0.3, 0.7]) and np.isnan(out[1]).all()
        assert np.isnan(correct_shares(np.array([np.nan, np.nan]), np.eye(2))).all()

    def test_a_calibration_at_chance_cannot_read(self):
        chance = calibration([[25, 25], [25, 25]])
        assert not chance.readable
        reason = chance.why_unreadable()
        assert "toy-judge" in reason and "'gender'" in reason and "cannot read" in reason
        assert chance.to_dict()["readable"] is False

    def test_a_calibration_below_chance_cannot_read(self):
        # reads the classes swapped more often than right: not a judge to correct by
        assert not calibration([[15, 35], [35, 15]]).readable

    def test_margin_above_chance_and_calibration_size(self):
        # 60% accurate (r = 0.2): never shown above MIN_READABILITY; 85% with 100 a class is
        for m in (20, 200, 2000):
            assert not calibration([[0.6 * m, 0.4 * m], [0.4 * m, 0.6 * m]]).readable
        good = calibration([[85, 15], [15, 85]])
        assert good.readable and good.why_unreadable() == ""
        value, low, high = good.readability()
        assert low > MIN_READABILITY and low < value < high
        assert value == pytest.approx(readability(good.confusion))


class TestCalibration:
    def test_counts_from_labels_leave_out_abstentions(self):
        truth = np.array([0, 0, 0, 1, 1, 1, 1])
        judged = np.array([0, 1, -1, 1, 1, 0, -1])
        cal = calibration_from_labels("j", "gender", ("f", "m"), truth, judged, source=LABELLED)
        assert cal.counts.tolist() == [[1, 1], [1, 2]]
        assert cal.abstained == (1, 1) and cal.n == (2, 3)

    def test_an_empty_cell_never_makes_m_singular(self):
        confusion = posterior_mean_confusion(np.array([[30, 0], [0, 30]]))
        assert CONFUSION_PRIOR == 0.1  # not Jeffreys' 1/2: it invents confusion (module doc)
        assert confusion[0] == pytest.approx([30.1 / 30.2, 0.1 / 30.2])
        assert readability(confusion) > 0.99

    def test_rejects_a_table_of_the_wrong_shape(self):
        with pytest.raises(ValueError, match="2x2"):
            calibration([[1, 2, 3], [4, 5, 6]])

    def test_draws_share_one_confusion_across_groups(self):
        rng = np.random.default_rng(5)
        draws = [np.tile([0.6, 0.4], (1000, 1)), np.tile([0.6, 0.4], (1000, 1))]
        first, second = corrected_draws(draws, np.array([[40, 10], [10, 40]]), rng)
        np.testing.assert_array_equal(first, second)  # same shares, same M per draw
        assert confusion_draws(np.array([[40, 10], [10, 40]]), 7, rng).shape == (7, 2, 2)


def test_the_issues_example_confidently_wrong_uncorrected_covered_corrected():
    """Issue #33: a subject whose true gender severity is 0.28 (0.8/0.2), read by a judge that
    errs on 20% of either class, reads 0.68/0.32: severity 0.096. Uncorrected, the interval
    sits wholly below the truth and below a 0.20 limit (a confident pass of a biased model);
    corrected with a 100-a-class calibration it holds the truth and does not pass."""
    p, e, n = np.array([0.8, 0.2]), 0.2, 200
    confusion = np.array([[1 - e, e], [e, 1 - e]])
    judged = confusion.T @ p  # 0.68 / 0.32
    labels = np.repeat([0, 1], np.round(n * judged).astype(int))
    table = np.array([[80, 20], [20, 80]])
    truth = 1 - (-(p * np.log2(p)).sum())  # OpenBias severity: 1 - normalised entropy
    assert truth == pytest.approx(0.278, abs=1e-3)

    plain = severity_estimate([labels], 2)
    assert plain.high < truth and plain.high < 0.20  # confidently wrong: a pass at 0.20
    corrected = severity_estimate([labels], 2, calibration=table)
    assert corrected.low <= truth <= corrected.high
    assert corrected.value == pytest.approx(truth, abs=0.03)
    assert corrected.high > 0.20  # the gate no longer passes it
    assert "judge-corrected" in corrected.method and "judge" not in plain.method
    assert calibration(table).readable


class TestBiasCorrectedLowEnd:
    """A judge-corrected distance's low end is the lower of the percentile and Efron's
    bias-corrected percentile one (metrics.posterior.bias_corrected_low)."""

    def test_draws_centred_on_the_value_give_the_percentile_end(self):
        draws = np.linspace(-1, 1, 2001)[None]
        low = bias_corrected_low(draws, np.array([0.0]), 0.95)
        assert low[0] == pytest.approx(np.quantile(draws[0], 0.025))

    def test_draws_above_the_value_lower_the_end(self):
        draws = np.random.default_rng(4).normal(0.3, 0.1, size=(1, 4000))
        percentile = np.quantile(draws[0], 0.025)
        low = bias_corrected_low(draws, np.array([0.2]), 0.95)  # 16% of draws below the value
        assert low[0] < percentile - 0.05
        assert low[0] == pytest.approx(0.3 + 0.1 * (2 * -0.994 - 1.96), abs=0.02)

    def test_a_near_ideal_corrected_severity_reaches_below_its_percentile_end(self, monkeypatch):
        # three classes near the ideal read by an 80%-accurate judge: the corrected draws sit
        # above the value, so the bias-corrected end is the lower one; uncorrected is untouched
        import pytest_t2ibias.metrics.posterior as posterior

        labels = np.repeat([0, 1, 2], [26, 12, 10])
        table = np.array([[40, 5, 5], [5, 40, 5], [5, 5, 40]])
        corrected = severity_estimate([labels], 3, calibration=table, seed=3)
        plain = severity_estimate([labels], 3, seed=3)
        monkeypatch.setattr(posterior, "bias_corrected_low",
                            lambda values, value, confidence: np.full(np.shape(value), np.inf))
        percentile = severity_estimate([labels], 3, calibration=table, seed=3)
        assert plain == severity_estimate([labels], 3, seed=3)
        assert 0 < corrected.low < percentile.low
        assert (corrected.value, corrected.high) == (percentile.value, percentile.high)
