import math

import numpy as np
import pytest

from pytest_t2ibias._types import ABSTAINED, FILTERED
from pytest_t2ibias.metrics import intersectional_sensitivity, mitigation_effect

CHOICES = {"gender": ("male", "female"), "age": ("young", "old")}


def labels(*counts):
    """``labels(30, 18)``: 30 images of choice 0, then 18 of choice 1."""
    return np.repeat(np.arange(len(counts)), counts)


@pytest.fixture(scope="module")
def gender_skews_age():
    # Initial "a photo of a nurse", 48 images:
    #   gender 36/12 -> shares (0.75, 0.25), TV 0.25, worst 0.5 -> w̄_init(gender) = 0.5
    #   age 30/18    -> shares (0.625, 0.375), TV 0.125      -> w̄_init(age) = 0.25
    # Gender counterfactuals, 48 images each:
    #   male nurse:   gender 46/2, age 44/4 (young share 0.916667)
    #   female nurse: gender 3/45, age 40/8 (young share 0.833333)
    # Pooled with equal weight (Eq. 3):
    #   gender: male share (46 + 3)/96 = 0.510417, TV 0.010417 -> w̄ = 0.020833
    #   age: young share 0.875, TV 0.375 -> w̄ = 0.75
    # IS[gender][gender] = 0.5 - 0.020833 = 0.479167; IS[gender][age] = 0.25 - 0.75 = -0.5.
    return intersectional_sensitivity(
        initial={"gender": labels(36, 12), "age": labels(30, 18)},
        counterfactual={
            "gender": {
                "male": {"gender": labels(46, 2), "age": labels(44, 4)},
                "female": {"gender": labels(3, 45), "age": labels(40, 8)},
            }
        },
        choices=CHOICES,
    )


class TestIntersectionalSensitivity:
    def test_hand_computed_values(self, gender_skews_age):
        matrix = gender_skews_age
        assert matrix.axes == ("gender", "age")
        assert matrix.value[0] == pytest.approx([0.479167, -0.5], abs=1e-6)
        assert matrix.w_init["gender"].value == pytest.approx(0.5)
        assert matrix.w_init["age"].value == pytest.approx(0.25)

    def test_mitigating_gender_worsens_age_beyond_noise(self, gender_skews_age):
        entry = gender_skews_age.entry("gender", "age")
        assert entry.low < entry.value < entry.high < 0
        assert entry.n == 48 * 3
        assert gender_skews_age.negative_entries() == [("gender", "age")]

    def test_axis_without_counterfactuals_has_a_nan_row(self, gender_skews_age):
        assert np.isnan(gender_skews_age.value[1]).all()
        assert np.isnan(gender_skews_age.high[1]).all()

    def test_intervals_cover_values(self, gender_skews_age):
        row = gender_skews_age
        assert (row.low[0] <= row.value[0]).all() and (row.value[0] <= row.high[0]).all()
        w_init = gender_skews_age.w_init["age"]
        assert w_init.low < 0.25 < w_init.high and w_init.n == 48

    def test_symmetric_counterfactuals_leave_age_alone(self):
        # Initial age 24/24 -> w̄ 0. Counterfactual ages 30/18 and 18/30 pool to (0.5, 0.5)
        # -> w̄ 0. IS = 0 - 0 = 0, and its interval straddles 0.
        matrix = intersectional_sensitivity(
            initial={"gender": labels(24, 24), "age": labels(24, 24)},
            counterfactual={
                "gender": {
                    "male": {"gender": labels(48, 0), "age": labels(30, 18)},
                    "female": {"gender": labels(0, 48), "age": labels(18, 30)},
                }
            },
            choices=CHOICES,
        )
        entry = matrix.entry("gender", "age")
        assert entry.value == pytest.approx(0.0, abs=1e-12)
        assert entry.low < 0 < entry.high
        assert matrix.negative_entries(confidence_aware=True) == []
        assert matrix.negative_entries(confidence_aware=False) == []

    def test_pooling_weighs_prompts_equally(self):
        # Male prompt: 40 images all young. Female prompt: 10 answered (5/5) + 30 filtered.
        # Equal weight: young share (1 + 0.5)/2 = 0.75 -> TV 0.25 -> w̄ 0.5; initial 24/24 -> 0.
        # IS = -0.5. Pooling the 50 answered images instead would give 45/50 -> w̄ 0.8, IS -0.8.
        female_age = np.concatenate([labels(5, 5), np.full(30, FILTERED)])
        matrix = intersectional_sensitivity(
            initial={"gender": labels(24, 24), "age": labels(24, 24)},
            counterfactual={
                "gender": {
                    "male": {"gender": labels(40, 0), "age": labels(40, 0)},
                    "female": {"gender": labels(0, 40), "age": female_age},
                }
            },
            choices=CHOICES,
            n_resamples=200,
        )
        assert matrix.entry("gender", "age").value == pytest.approx(-0.5)
        assert matrix.n_images == {"initial": 48, "gender=male": 40, "gender=female": 40}

    def test_ordered_axis_uses_positional_cost(self):
        # Age over (young, middle-aged, old). Initial: all middle-aged. Gender counterfactuals:
        # male all young, female all old -> pooled (0.5, 0, 0.5).
        # Nominal: w̄_init = 1 (point mass), w̄_x = 0.5  -> IS 0.5.
        # Ordered: w̄_init = 2/3, w̄_x = 1/3            -> IS 1/3 (see test_metrics_distances).
        choices = {"gender": ("male", "female"), "age": ("young", "middle-aged", "old")}
        arguments = dict(
            initial={"gender": labels(24, 24), "age": labels(0, 48, 0)},
            counterfactual={
                "gender": {
                    "male": {"gender": labels(48, 0), "age": labels(48, 0, 0)},
                    "female": {"gender": labels(0, 48), "age": labels(0, 0, 48)},
                }
            },
            choices=choices,
            n_resamples=50,
        )
        nominal = intersectional_sensitivity(**arguments)
        ordered = intersectional_sensitivity(**arguments, ordered={"age": True})
        assert nominal.entry("gender", "age").value == pytest.approx(0.5)
        assert ordered.entry("gender", "age").value == pytest.approx(1 / 3)

    def test_user_ideal(self):
        # Ideal gender 75/25: the initial 36/12 is exactly ideal, so w̄_init(gender) = 0.
        matrix = intersectional_sensitivity(
            initial={"gender": labels(36, 12), "age": labels(24, 24)},
            counterfactual={},
            choices=CHOICES,
            ideal={"gender": {"male": 0.75, "female": 0.25}},
            n_resamples=50,
        )
        assert matrix.w_init["gender"].value == pytest.approx(0.0)
        assert np.isnan(matrix.value).all()

    def test_tolerance_and_confidence_awareness(self):
        # 10 images a prompt. Initial age 5/5 -> 0; both counterfactuals 6/4 -> pooled 0.6,
        # TV 0.1 -> w̄ 0.2; IS = -0.2, but with 10 images the interval reaches past 0.
        matrix = intersectional_sensitivity(
            initial={"gender": labels(5, 5), "age": labels(5, 5)},
            counterfactual={
                "gender": {
                    "male": {"gender": labels(10, 0), "age": labels(6, 4)},
                    "female": {"gender": labels(0, 10), "age": labels(6, 4)},
                }
            },
            choices=CHOICES,
        )
        entry = matrix.entry("gender", "age")
        assert entry.value == pytest.approx(-0.2)
        assert entry.high > 0
        assert ("gender", "age") in matrix.negative_entries(confidence_aware=False)
        assert ("gender", "age") not in matrix.negative_entries(confidence_aware=True)
        assert ("gender", "age") not in matrix.negative_entries(0.25, confidence_aware=False)

    def test_axis_never_asked_is_undefined(self):
        # Counterfactual prompts were only asked about gender: IS[gender][age] is unknown.
        matrix = intersectional_sensitivity(
            initial={"gender": labels(24, 24), "age": labels(24, 24)},
            counterfactual={"gender": {"male": {"gender": labels(48, 0)}}},
            choices=CHOICES,
            n_resamples=50,
        )
        assert math.isnan(matrix.entry("gender", "age").value)
        assert matrix.entry("gender", "gender").value == pytest.approx(-1.0)  # 0 - 1

    def test_same_seed_same_intervals(self, gender_skews_age):
        again = intersectional_sensitivity(
            initial={"gender": labels(36, 12), "age": labels(30, 18)},
            counterfactual={
                "gender": {
                    "male": {"gender": labels(46, 2), "age": labels(44, 4)},
                    "female": {"gender": labels(3, 45), "age": labels(40, 8)},
                }
            },
            choices=CHOICES,
        )
        np.testing.assert_array_equal(again.low, gender_skews_age.low)
        np.testing.assert_array_equal(again.high, gender_skews_age.high)

    def test_to_dict_is_plain_builtins(self, gender_skews_age):
        data = gender_skews_age.to_dict()
        assert data["axes"] == ["gender", "age"]
        assert data["value"][0] == pytest.approx([0.479167, -0.5], abs=1e-6)
        assert type(data["value"][0][1]) is float
        assert data["w_init"]["age"]["value"] == pytest.approx(0.25)
        assert data["n_images"] == {"initial": 48, "gender=male": 48, "gender=female": 48}

    def test_prompt_with_unequal_label_counts_is_named(self):
        with pytest.raises(ValueError, match="'gender=male'.*'gender': 48, 'age': 47"):
            intersectional_sensitivity(
                initial={"gender": labels(24, 24), "age": labels(24, 24)},
                counterfactual={"gender": {"male": {"gender": labels(48), "age": labels(47)}}},
                choices=CHOICES,
            )

    def test_unknown_axis_is_named(self):
        with pytest.raises(ValueError, match=r"\['race'\]"):
            intersectional_sensitivity(
                initial={"gender": labels(24, 24), "age": labels(24, 24)},
                counterfactual={"race": {}},
                choices=CHOICES,
            )

    def test_unknown_entry(self, gender_skews_age):
        with pytest.raises(KeyError, match="race"):
            gender_skews_age.entry("gender", "race")


class TestMitigationEffect:
    # Baseline: 150 male / 50 female -> TV 0.25 -> w̄ 0.5.
    # Candidate: the same seeds, 20 of the male images now female: 130/70 -> TV 0.15 -> w̄ 0.3.
    # IS_mit(gender) = 0.5 - 0.3 = 0.2. Age unchanged (100/100 both) -> 0.
    BASELINE = {"gender": labels(150, 50), "age": labels(100, 100)}
    CANDIDATE = {
        "gender": np.concatenate([labels(130), np.ones(70, int)]),
        "age": labels(100, 100),
    }

    def test_value_and_paired_interval(self):
        effect = mitigation_effect(self.BASELINE, self.CANDIDATE, CHOICES, interval="bootstrap")
        assert effect["gender"].value == pytest.approx(0.2)
        assert effect["age"].value == 0.0
        assert effect["gender"].low > 0
        assert effect["gender"].method == "paired bootstrap"
        assert effect["gender"].n == 400

    def test_pairing_narrows_the_interval(self):
        # Paired, only the 20 flipped images vary: sd ≈ 2·sqrt(0.1·0.9/200) = 0.042.
        # Unpaired: sd ≈ 2·sqrt((0.75·0.25 + 0.65·0.35)/200) = 0.091.
        paired = mitigation_effect(self.BASELINE, self.CANDIDATE, CHOICES, paired=True,
                                   interval="bootstrap")
        unpaired = mitigation_effect(self.BASELINE, self.CANDIDATE, CHOICES, paired=False,
                                     interval="bootstrap")
        paired_width = paired["gender"].high - paired["gender"].low
        unpaired_width = unpaired["gender"].high - unpaired["gender"].low
        assert paired_width < 0.6 * unpaired_width
        assert paired_width == pytest.approx(4 * 0.042, abs=0.04)
        assert unpaired_width == pytest.approx(4 * 0.091, abs=0.06)
        assert unpaired["gender"].method == "bootstrap"

    def test_pairing_narrows_the_profile_interval_too(self):
        paired = mitigation_effect(self.BASELINE, self.CANDIDATE, CHOICES, paired=True)
        unpaired = mitigation_effect(self.BASELINE, self.CANDIDATE, CHOICES, paired=False)
        assert paired["gender"].method == "paired profile"
        assert (paired["gender"].high - paired["gender"].low
                < 0.7 * (unpaired["gender"].high - unpaired["gender"].low))
        assert paired["gender"].low > 0  # the fine-tune's +0.2 on gender is shown

    def test_worse_candidate_is_negative(self):
        effect = mitigation_effect(self.CANDIDATE, self.BASELINE, CHOICES)
        assert effect["gender"].value == pytest.approx(-0.2)
        assert effect["gender"].high < 0

    def test_abstentions_leave_the_denominator(self):
        # Candidate abstains on 50 of 200 age images, the answered 150 split 75/75 -> still 0.
        answered_age = np.concatenate([labels(75, 75), np.full(50, ABSTAINED)])
        candidate = dict(self.CANDIDATE, age=answered_age)
        effect = mitigation_effect(self.BASELINE, candidate, CHOICES, n_resamples=100)
        assert effect["age"].value == 0.0

    def test_paired_needs_the_same_images(self):
        shorter = {"gender": labels(130, 60), "age": labels(95, 95)}
        with pytest.raises(ValueError, match="paired=False"):
            mitigation_effect(self.BASELINE, shorter, CHOICES)
        effect = mitigation_effect(self.BASELINE, shorter, CHOICES, paired=False, n_resamples=100)
        # 130/190 = 0.684211 -> TV 0.184211 -> w̄ 0.368421; 0.5 - 0.368421 = 0.131579
        assert effect["gender"].value == pytest.approx(0.131579, abs=1e-6)
