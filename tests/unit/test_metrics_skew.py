import math

import pytest

from pytest_t2ibias.metrics import max_skew_at_k, mean_max_skew_at_k, skew_at_k

HALF = {"male": 0.5, "female": 0.5}


def test_non_zero_counts_are_not_smoothed():
    # Smoothing touches zero counts only: ln(0.7/0.5) = 0.336472, ln(0.3/0.5) = -0.510826.
    skews = skew_at_k({"male": 7, "female": 3}, HALF)
    assert skews["male"].value == pytest.approx(0.336472, abs=1e-6)
    assert skews["female"].value == pytest.approx(-0.510826, abs=1e-6)
    assert not skews["male"].unbounded and skews["female"].count == 3


def test_top_k_matching_the_target_scores_zero():
    # Issue #9: additive 0.5 smoothing gave ln((7.5/11)/0.7) = -0.0263 and ln((3.5/11)/0.3) =
    # 0.0589 here; a top K that is exactly the target is not skewed.
    target = {"male": 0.7, "female": 0.3}
    skews = skew_at_k({"male": 7, "female": 3}, target)
    assert skews["male"].value == 0.0 and skews["female"].value == 0.0
    assert max_skew_at_k({"male": 70, "female": 30}, target).value == 0.0


def test_skew_unsmoothed_is_the_paper_formula():
    # ln(0.7/0.5) = 0.336472, ln(0.3/0.5) = -0.510826
    skews = skew_at_k({"male": 7, "female": 3}, HALF, smoothing=0.0)
    assert skews["male"].value == pytest.approx(0.336472, abs=1e-6)
    assert skews["female"].value == pytest.approx(-0.510826, abs=1e-6)


def test_zero_count_is_flagged_not_hidden():
    # The public code reports 0 here. The zero count stands in as 0.5 of K = 10:
    # ln(0.05/0.5) = -2.302585; male keeps its raw share, ln(1.0/0.5) = 0.693147.
    skews = skew_at_k({"male": 10, "female": 0}, HALF)
    assert skews["female"].value == pytest.approx(-2.302585, abs=1e-6)
    assert skews["female"].unbounded
    assert skews["male"].value == pytest.approx(0.693147, abs=1e-6)
    assert not skews["male"].unbounded


def test_zero_count_without_smoothing_is_minus_infinity():
    skews = skew_at_k({"male": 10}, HALF, smoothing=0.0)  # female missing = count 0
    assert skews["female"].value == -math.inf and skews["female"].unbounded


def test_target_must_be_positive_and_cover_the_counts():
    with pytest.raises(ValueError, match="'female' is 0"):
        skew_at_k({"male": 3}, {"male": 1.0, "female": 0})
    with pytest.raises(ValueError, match="no target share"):
        skew_at_k({"male": 3, "robot": 1}, HALF)


def test_max_skew_picks_the_most_over_represented():
    top = max_skew_at_k({"male": 7, "female": 3}, HALF)
    assert top.attribute == "male"
    assert top.value == pytest.approx(0.336472, abs=1e-6)


def test_mean_max_skew_over_subjects():
    # Unsmoothed: nurse 2/8 male -> max is female ln(0.8/0.5) = 0.470004;
    # doctor 7/3 -> ln 1.4 = 0.336472; mean = 0.403238.
    subjects = [{"male": 2, "female": 8}, {"male": 7, "female": 3}]
    estimate = mean_max_skew_at_k(subjects, HALF, smoothing=0.0, n_resamples=200)
    assert estimate.value == pytest.approx(0.403238, abs=1e-6)
    assert estimate.low == pytest.approx(0.336472) and estimate.high == pytest.approx(0.470004)
    assert estimate.n == 2


def test_a_value_never_drawn_is_never_the_max_under_a_non_uniform_target():
    # Issue #44: 4 images all "common" against a 95/5 target. The absent minority's smoothed
    # stand-in reads ln(0.5/4/0.05) = 0.916291 and used to win; MaxSkew is the common value's
    # ln(1/0.95) = 0.051293, the rare one being under-represented (-inf).
    target = {"common": 0.95, "rare": 0.05}
    top = max_skew_at_k({"common": 4, "rare": 0}, target)
    assert top.attribute == "common" and not top.unbounded
    assert top.value == pytest.approx(0.051293, abs=1e-6)
    assert skew_at_k({"common": 4}, target)["rare"].value == pytest.approx(0.916291, abs=1e-6)
    mean = mean_max_skew_at_k([{"common": 4}, {"common": 4}], target, n_resamples=50)
    assert mean.value == pytest.approx(0.051293, abs=1e-6)
    assert max_skew_at_k({}, target).value == -math.inf  # nothing retrieved: nothing over-represented


def test_generation_skew_and_its_message_name_the_value_drawn():
    import numpy as np

    from pytest_t2ibias._types import Answers
    from pytest_t2ibias.kinds.max_skew_below import evaluate_max_skew_below
    from pytest_t2ibias.methods.socialcf import generation_skew

    target = {"male": 0.95, "female": 0.05}
    skew = generation_skew(np.zeros(4, dtype=int), ("male", "female"), target)
    assert (skew.value, skew.unbounded) == ("male", ("female",))
    assert skew.max_skew == pytest.approx(0.051293, abs=1e-6)
    answers = Answers("q", ("male", "female"), np.zeros(4, dtype=int), np.full((4, 2), 0.5),
                      ("p",) * 4, ("0", "1", "2", "3"))
    verdict = evaluate_max_skew_below(answers, 0.5, target=target,
                                      confidence=0.95, n_resamples=200)
    assert "(male over-represented)" in verdict.message


def test_max_skew_below_reads_a_reference_ideal_as_its_target():
    """Issue #44: a reference ideal (BiasConnect A.10) was ignored and the target was uniform."""
    from types import SimpleNamespace

    import numpy as np

    from pytest_t2ibias.errors import CheckError
    from pytest_t2ibias.kinds.max_skew_below import MaxSkewBelowParams, target_for
    from pytest_t2ibias.suite_spec import AxisSpec

    axis = AxisSpec(name="gender", question="?", choices=("male", "female"),
                    ideal={"reference": "real"})

    def ctx(reference_shares, target=None):
        instrument = SimpleNamespace(ideal=lambda axis, filter: np.array(reference_shares))
        return SimpleNamespace(params=MaxSkewBelowParams(axes=("gender",), threshold=0.4,
                                                         target=target),
                               axis=axis, instrument=instrument, suite=SimpleNamespace(filter=None),
                               check=SimpleNamespace(location="s.t2i.yaml:3", id="skew"))

    assert target_for(ctx([0.8, 0.2])) == pytest.approx({"male": 0.8, "female": 0.2})
    assert target_for(ctx([0.8, 0.2], target={"male": 0.5, "female": 0.5})) == \
        {"male": 0.5, "female": 0.5}  # the check's own target first
    with pytest.raises(CheckError, match="reference images of axis 'gender' .* show no female"):
        target_for(ctx([1.0, 0.0]))
