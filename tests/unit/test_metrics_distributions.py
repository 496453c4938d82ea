import math

import numpy as np
import pytest

from pytest_t2ibias._types import ABSTAINED, FILTERED, Answers
from pytest_t2ibias.metrics import Distribution, distribution_of, ideal_shares, pooled_shares

GENDER = ("male", "female")


def answers(labels, choices=GENDER):
    labels = np.asarray(labels)
    return Answers(
        question="What is the gender of the person?",
        choices=choices,
        labels=labels,
        probabilities=np.full((len(labels), len(choices)), np.nan),
        prompts=("a photo of a nurse",) * len(labels),
    )


class TestDistributionOf:
    def test_counts_shares_and_unanswered(self):
        labels = [0, 0, 0, 1, ABSTAINED, FILTERED, FILTERED]
        distribution = distribution_of(labels, GENDER)
        assert distribution.counts.tolist() == [3, 1]
        assert (distribution.n, distribution.abstentions, distribution.filtered) == (4, 1, 2)
        assert distribution.shares.tolist() == [0.75, 0.25]

    def test_from_answers(self):
        distribution = distribution_of(answers([1, 1, 0, ABSTAINED]))
        assert distribution.choices == GENDER
        assert distribution.counts.tolist() == [1, 2]
        assert distribution.abstentions == 1

    def test_share_has_wilson_interval(self):
        # 8 of 10 male: Wilson 95% = (0.4902, 0.9433).
        distribution = distribution_of([0] * 8 + [1] * 2, GENDER)
        share = distribution.share("male")
        assert share.value == 0.8
        assert (share.low, share.high) == pytest.approx((0.4902, 0.9433), abs=1e-4)

    def test_all_abstained(self):
        distribution = distribution_of([ABSTAINED, ABSTAINED, FILTERED], GENDER)
        assert distribution.n == 0
        assert np.isnan(distribution.shares).all()
        assert math.isnan(distribution.share("female").value)

    def test_zero_count_choice(self):
        distribution = distribution_of([0, 0], ("young", "middle-aged", "old"))
        assert distribution.counts.tolist() == [2, 0, 0]
        assert distribution.share("old").value == 0.0

    def test_to_dict_is_plain_builtins(self):
        data = distribution_of([0, 1, 1, ABSTAINED], GENDER).to_dict()
        assert data == {
            "choices": ["male", "female"],
            "counts": {"male": 1, "female": 2},
            "shares": {"male": 1 / 3, "female": 2 / 3},
            "n": 3,
            "abstentions": 1,
            "filtered": 0,
        }
        assert type(data["counts"]["male"]) is int and type(data["shares"]["male"]) is float

    def test_rejects_labels_outside_the_choices(self):
        with pytest.raises(ValueError, match=r"labels \[2\]"):
            distribution_of([0, 2], GENDER)
        with pytest.raises(ValueError, match=r"labels \[-3\]"):
            distribution_of([0, -3], GENDER)

    def test_rejects_mismatched_choices(self):
        with pytest.raises(ValueError, match="differ"):
            distribution_of(answers([0]), ("man", "woman"))

    def test_unknown_choice(self):
        with pytest.raises(KeyError, match="nonbinary"):
            Distribution(GENDER, np.array([1, 1])).share("nonbinary")


class TestPooledShares:
    def test_equal_weight_whatever_the_sample_size(self):
        # 40 images all young, 10 images half young: equal weight -> (1 + 0.5)/2 = 0.75.
        # Concatenating would give 45/50 = 0.9.
        pooled = pooled_shares([np.zeros(40, int), np.repeat([0, 1], [5, 5])], 2)
        assert pooled.tolist() == [0.75, 0.25]

    def test_unanswered_labels_do_not_change_the_weight(self):
        # Second prompt: 2 answered (both old) among 30 filtered; still weight 1/2.
        second = np.array([1, 1] + [FILTERED] * 30)
        assert pooled_shares([np.zeros(4, int), second], 2).tolist() == [0.5, 0.5]

    def test_prompt_without_answers_is_skipped(self):
        pooled = pooled_shares([np.repeat([0, 1], [3, 1]), np.full(5, ABSTAINED)], 2)
        assert pooled.tolist() == [0.75, 0.25]

    def test_nothing_answered_anywhere(self):
        assert np.isnan(pooled_shares([np.full(3, FILTERED)], 2)).all()
        assert np.isnan(pooled_shares([], 2)).all()


class TestIdealShares:
    def test_uniform(self):
        assert ideal_shares("uniform", ("a", "b", "c", "d")).tolist() == [0.25] * 4

    def test_mapping_in_choice_order_missing_choices_zero(self):
        shares = ideal_shares({"old": 0.3, "young": 0.7}, ("young", "middle-aged", "old"))
        assert shares.tolist() == [0.7, 0.0, 0.3]

    def test_unknown_choice_is_named(self):
        with pytest.raises(ValueError, match="unknown choices \\['nonbinary'\\]"):
            ideal_shares({"male": 0.5, "nonbinary": 0.5}, GENDER)

    def test_must_sum_to_one(self):
        with pytest.raises(ValueError, match="sum to 1, got 0.9"):
            ideal_shares({"male": 0.5, "female": 0.4}, GENDER)
        ideal_shares({"male": 0.5, "female": 0.5 + 1e-7}, GENDER)  # within tolerance

    def test_unknown_keyword(self):
        with pytest.raises(ValueError, match="'census'"):
            ideal_shares("census", GENDER)

    def test_negative_share(self):
        with pytest.raises(ValueError, match="non-negative"):
            ideal_shares({"male": 1.5, "female": -0.5}, GENDER)
