"""Issue #45: a judge that errs differently by intersectional group. The audit names the
group; the correction uses the group's own confusion, or says it cannot correct."""

from __future__ import annotations

import numpy as np
from validation_scripts import validation_script

from pytest_t2ibias.kinds._judge import JudgeReading
from pytest_t2ibias.kinds.entropy_below import evaluate_entropy_below
from pytest_t2ibias.metrics.judge import COUNTERFACTUAL, LABELLED, JudgeCalibration
from pytest_t2ibias.metrics.judge_groups import depends_on_group, group_counts

CHOICES = ("male", "female")
FAIR = np.array([[95, 5], [5, 95]])
MISREADS_WOMEN = np.array([[95, 5], [50, 50]])


def test_group_counts_split_the_confusion_by_group_and_leave_out_abstentions():
    counts = group_counts(np.array([0, 1, 1, 1]), np.array([0, 0, 1, -1]), ["a", "a", "b", "b"], 2)
    assert counts["a"].tolist() == [[1, 0], [1, 0]] and counts["b"].tolist() == [[0, 0], [0, 1]]


def test_the_audit_fails_naming_the_group_the_judge_misreads_and_passes_an_even_judge():
    planted = depends_on_group({"light": FAIR, "dark": MISREADS_WOMEN}, CHOICES, 0.1)
    assert planted.outcome == "fail"
    assert (planted.deciding.worse, planted.deciding.value) == ("dark", "female")
    assert "group 'dark'" in planted.describe()
    even = depends_on_group({"light": FAIR * 10, "dark": FAIR * 10}, CHOICES, 0.1)
    assert even.outcome == "pass"
    small = depends_on_group({"light": np.array([[9, 1], [1, 9]]), "dark": np.array([[8, 2], [3, 7]])},
                             CHOICES, 0.1)
    assert small.outcome == "inconclusive"  # 10 images a cell show neither


def _grouped(source=COUNTERFACTUAL) -> JudgeCalibration:
    groups = {"light": FAIR, "dark": MISREADS_WOMEN}
    return JudgeCalibration("toy judge", "gender", CHOICES, FAIR + MISREADS_WOMEN, source,
                            groups=groups)


def test_where_groups_differ_the_correction_uses_the_items_group_or_cannot_correct():
    counts = {"male": 900, "female": 100}
    own = evaluate_entropy_below(counts, 0.5, confidence=0.95,
                                 judge=JudgeReading(_grouped(LABELLED), "full", group="dark"))
    assert own.figures["judge_calibration"]["confusion"]["female"] == {"male": 50, "female": 50}
    assert "corrected with group 'dark''s own confusion" in own.message
    assert "judge_unreadable" not in own.figures
    pooled = evaluate_entropy_below(counts, 0.5, confidence=0.95,
                                    judge=JudgeReading(_grouped(LABELLED), "full"))
    assert pooled.outcome == "inconclusive" and not pooled.passed
    assert "differs by group" in pooled.message and "'dark'" in pooled.message
    assert "cannot correct" in pooled.figures["judge_unreadable"]


def test_groups_that_err_alike_are_pooled_and_said_so():
    even = JudgeCalibration("toy judge", "gender", CHOICES, FAIR * 20, LABELLED,
                            groups={"light": FAIR * 10, "dark": FAIR * 10})
    verdict = evaluate_entropy_below({"male": 700, "female": 300}, 0.5, confidence=0.95,
                                     judge=JudgeReading(even, "full"))
    assert verdict.outcome == "pass" and "errs the same within 0.1 across 2 groups" in verdict.message


def test_the_toy_world_with_a_planted_intersectional_judge_bias():
    """validation/judge_groups_world.py at 30 worlds: the audit names the dark group every
    time; the group's calibration covers the true severity, the pooled one mostly does not."""
    world = validation_script("judge_groups_world").simulate(30, m=200, n=1000, misread=0.45)
    assert world["audit_fails_naming_dark"] == 30
    assert world["coverage"]["group"] >= 26
    assert world["coverage"]["pooled"] <= 12 and world["coverage"]["uncorrected"] <= 3
    assert world["outcomes"]["group_unknown"]["inconclusive"] == 30
