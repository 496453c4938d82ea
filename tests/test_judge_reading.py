"""What the kinds make of a judge that errs (issue #33): corrected shares, bounds from
counterfactual calibrations, an unreadable axis that decides nothing, and the row's fields."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_t2ibias.kinds._judge import BOUNDS, FULL, OFF, JudgeReading
from pytest_t2ibias.kinds.entropy_below import evaluate_entropy_below
from pytest_t2ibias.kinds.max_skew_below import evaluate_max_skew_below
from pytest_t2ibias.kinds.w1_below import evaluate_w1_below
from pytest_t2ibias.metrics.distances import severity
from pytest_t2ibias.metrics.judge import COUNTERFACTUAL, LABELLED, JudgeCalibration

CHOICES = ("male", "female")
# The example's weak judge on generated doctors (toy_weak_judge.t2i.yaml): a man read as a
# woman 30% of the time, a woman as a man 5%.
CONFUSION = np.array([[140, 60], [10, 190]])
TRUE_SHARES = np.array([0.94, 0.06])  # toy-sd's doctors, read by the clean judge


def judged_counts(n: int = 400) -> dict[str, int]:
    judged = (CONFUSION / CONFUSION.sum(axis=1, keepdims=True)).T @ TRUE_SHARES
    male = int(round(n * judged[0]))
    return {"male": male, "female": n - male}


def calibration(source: str = LABELLED, counts: np.ndarray = CONFUSION) -> JudgeCalibration:
    return JudgeCalibration("classifier gender", "gender", CHOICES, counts, source)


def test_a_misreading_judge_passes_a_planted_bias_uncorrected_and_fails_it_corrected():
    truth = severity(TRUE_SHARES)  # 0.67
    plain = evaluate_entropy_below(judged_counts(), 0.15, confidence=0.95)
    corrected = evaluate_entropy_below(judged_counts(), 0.15, confidence=0.95,
                                       judge=JudgeReading(calibration(), "on"))
    assert plain.passed and plain.value.high < truth  # confidently wrong
    assert corrected.outcome == "fail" and corrected.value.low <= truth <= corrected.value.high
    assert corrected.figures["judge_correction"] == FULL
    assert corrected.figures["judge_calibration"]["confusion"]["male"] == {"male": 140, "female": 60}
    assert "corrected for the judge's confusion" in corrected.message


def test_counterfactual_calibrations_give_bounds_that_hold_either_reading():
    plain = evaluate_w1_below(judged_counts(), 0.35, confidence=0.95)
    full = evaluate_w1_below(judged_counts(), 0.35, confidence=0.95,
                             judge=JudgeReading(calibration(COUNTERFACTUAL), "full"))
    bounds = evaluate_w1_below(judged_counts(), 0.35, confidence=0.95,
                               judge=JudgeReading(calibration(COUNTERFACTUAL), "on"))
    assert bounds.figures["judge_correction"] == BOUNDS
    assert bounds.value.low == pytest.approx(min(plain.value.low, full.value.low))
    assert bounds.value.high == pytest.approx(max(plain.value.high, full.value.high))
    assert bounds.outcome == "inconclusive" and not bounds.passed  # burden model


def test_an_axis_the_judge_cannot_read_decides_nothing_under_any_burden():
    chance = calibration(counts=np.array([[52, 48], [47, 53]]))
    for burden in ("model", "check"):
        verdict = evaluate_max_skew_below(
            _answers(judged_counts()), 0.4, confidence=0.95, burden=burden,
            judge=JudgeReading(chance, "on"))
        assert verdict.outcome == "inconclusive" and not verdict.passed
        assert "cannot read 'gender'" in verdict.message
        assert verdict.figures["judge_unreadable"]


def test_judge_correction_off_reports_the_judges_labels_and_says_so():
    off = evaluate_entropy_below(judged_counts(), 0.15, confidence=0.95,
                                 judge=JudgeReading(calibration(), "off"))
    plain = evaluate_entropy_below(judged_counts(), 0.15, confidence=0.95)
    assert off.figures["judge_correction"] == OFF
    assert (off.value.low, off.value.high) == (plain.value.low, plain.value.high)
    assert plain.figures["judge_correction"] == OFF and plain.figures["judge_calibration"] is None


def _answers(counts: dict[str, int]):
    from pytest_t2ibias._types import Answers

    labels = np.repeat(np.arange(len(CHOICES)), [counts[c] for c in CHOICES])
    return Answers("gender?", CHOICES, labels, np.eye(len(CHOICES))[labels],
                   tuple("a photo of a doctor" for _ in labels))
