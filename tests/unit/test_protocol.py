"""``protocol: paper`` (issue #44): where it is set, what the plan and each kind's parameters
become under it, and the judge's reading beside the corrected estimate."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from pytest_t2ibias._settings import Settings
from pytest_t2ibias.kinds import CHECK_KINDS
from pytest_t2ibias.kinds._base import protocol_params
from pytest_t2ibias.kinds._judge import JudgeReading
from pytest_t2ibias.kinds.entropy_below import evaluate_entropy_below
from pytest_t2ibias.kinds.w1_below import W1BelowParams, evaluate_w1_below
from pytest_t2ibias.metrics.judge import COUNTERFACTUAL, LABELLED, calibration_from_labels
from pytest_t2ibias.plan import plan_for
from pytest_t2ibias.suite import load_suite
from pytest_t2ibias.suite_spec import CheckSpec, Location, Suite


def _suite(**fields) -> Suite:
    return Suite(name="s", path=Path("s.t2i.yaml"), prompt="a photo of a {subject}",
                 subjects=("doctor",), axes={}, checks=(), **fields)


def _check(**params) -> CheckSpec:
    return CheckSpec(id="c", kind="w1_below",
                     params=W1BelowParams(axes=("gender",), threshold=0.5, **params),
                     axes=("gender",), subjects=("doctor",), location=Location(Path("s"), 3))


def test_protocol_command_line_then_check_then_suite_then_gate():
    plain = Settings.standalone()
    assert plan_for(plain).protocol == "gate"
    assert plan_for(plain, _suite(protocol="paper")).protocol == "paper"
    assert plan_for(plain, _suite(protocol="paper"), _check(protocol="gate")).protocol == "gate"
    assert plan_for(plain, _suite(), _check(protocol="paper")).protocol == "paper"
    assert plan_for(Settings.standalone(protocol="gate"), _suite(protocol="paper"),
                    _check(protocol="paper")).protocol == "gate"
    assert plan_for(Settings.standalone(protocol="paper"), _suite(), _check()).protocol == "paper"


def test_the_paper_protocol_reads_the_answers_as_read_at_a_fixed_n():
    """Whatever asked for a correction or adaptive sampling: the papers did neither."""
    gate = plan_for(Settings.standalone(), _suite(judge_correction="full"),
                    _check(images_per_prompt={"max": 64}, confidence=0.95), adaptive=True)
    assert gate.judge_correction == "full" and gate.looks and gate.images_per_prompt == 64
    paper = plan_for(Settings.standalone(protocol="paper", judge_correction="full"),
                     _suite(judge_correction="full"), _check(images_per_prompt={"max": 64}, confidence=0.95),
                     adaptive=True)
    assert paper.judge_correction == "off" and paper.looks == () and paper.images_per_prompt == 64


PAPER_SETTINGS = {
    "w1_below": {"index_cost": True},  # BiasConnect Eq. 1 over category indices
    "intermit": {"alert_on": "any", "index_cost": True,  # BiasConnect Sec. 6 alerts; Eq. 1
                 "steps_within_priority": True},  # Table 1: at most |p| steps (Table 3)
    "is_nonnegative": {"index_cost": True},
    "no_regression": {"index_cost": True},
    "open_set": {"knowledge_base": "off", "unknown_answer": True},  # OpenBias: LLM only, Eq. 3
    "no_bgps_prompt_exceeds": {"statistic": "mean", "instruction": "paper",  # BGPS Sec. 4.1,
                               "max_new_tokens": 24},  # App. C, found prompts of 12-22 words
    "intervention_improves": {"over": "category"},  # ENTIGEN Eq. 1 over a category
}


@pytest.mark.parametrize("kind", sorted(PAPER_SETTINGS))
def test_each_kind_declares_what_its_paper_sets_and_its_params_take_it_only_under_paper(
        kind, tmp_path):
    assert dict(CHECK_KINDS[kind].paper_protocol) == PAPER_SETTINGS[kind]
    suite = load_suite_of(kind, tmp_path)
    (check,) = suite.checks
    gate, paper = (plan_for(Settings.standalone(protocol=p), suite, check)
                   for p in ("gate", "paper"))
    for field, value in PAPER_SETTINGS[kind].items():
        assert getattr(protocol_params(check, gate), field) == getattr(check.params, field)
        assert getattr(check.params, field) != value  # the default is not the paper's
        assert getattr(protocol_params(check, paper), field) == value


def load_suite_of(kind: str, folder: Path) -> Suite:
    from pytest_t2ibias.testing.suites import every_kind_suite

    path = folder / "every.t2i.yaml"
    path.write_text(every_kind_suite([kind]), encoding="utf-8")
    return load_suite(path)


def test_a_paper_protocol_naming_no_field_of_the_kind_is_refused():
    from pytest_t2ibias.kinds import register_check

    kind = dataclasses.replace(CHECK_KINDS["w1_below"], name="w1_typo",
                               paper_protocol={"index_costs": True})
    with pytest.raises(TypeError, match="index_costs"):
        register_check(kind)


def _counterfactual_calibration(per_value: int, faithful: float):
    """A perfect judge on counterfactual images of a generator that draws what the prompt
    names ``faithful`` of the time: its confusion reads (1 - faithful) as the judge's error."""
    wrong = round(per_value * (1 - faithful))
    truth = np.repeat([0, 1], per_value)
    judged = np.concatenate([np.r_[np.zeros(per_value - wrong), np.ones(wrong)],
                             np.r_[np.ones(per_value - wrong), np.zeros(wrong)]]).astype(int)
    return calibration_from_labels("perfect", "gender", ("male", "female"), truth, judged,
                                   source=COUNTERFACTUAL)


def test_the_issues_worked_example_shows_the_reading_as_read_beside_the_corrected():
    """Issue #44: true shares 0.8/0.2, a perfect judge, a generator 85% faithful to the
    counterfactual prompts (48 images a value, the default): severity as read 0.278 against
    corrected 0.617, W1 0.60 against 0.85; the row carries both, the verdict the bounds."""
    calibration = _counterfactual_calibration(48, 0.85)
    severity = evaluate_entropy_below({"male": 800, "female": 200}, 0.5, confidence=0.95,
                                      judge=JudgeReading(calibration, "on"))
    assert severity.figures["as_read"]["value"] == pytest.approx(0.278, abs=5e-4)
    assert severity.value.value == pytest.approx(0.617, abs=5e-4)
    assert severity.figures["judge_correction"] == "bounds"
    w1 = evaluate_w1_below({"male": 800, "female": 200}, 0.5, confidence=0.95,
                           judge=JudgeReading(calibration, "on"))
    assert w1.figures["as_read"]["value"] == pytest.approx(0.60)
    assert w1.value.value == pytest.approx(0.85, abs=5e-3)
    # the bounds' interval spans both readings; off, the figure is the one as read, alone
    assert w1.value.low <= 0.60 and w1.value.high >= 0.85
    off = evaluate_w1_below({"male": 800, "female": 200}, 0.5, confidence=0.95,
                            judge=JudgeReading(calibration, "off"))
    assert off.value.value == pytest.approx(0.60) and "as_read" not in off.figures


def test_a_reference_ideal_is_read_through_the_same_correction_as_the_shares():
    """BiasConnect A.10: the reference photos are read by the same judge. A judge 80%
    accurate on a labelled folder reads true 0.8/0.2 as 0.68/0.32 on the reference and the
    generations alike; the generations corrected back to 0.8/0.2 against a reference still
    as read (0.68/0.32) put a model drawing the reference's own shares 0.176 from it (W1
    0.12 of the largest, 0.68, a point mass on female); corrected alike, 0."""
    per = 2000
    truth = np.repeat([0, 1], per)
    judged = np.concatenate([np.r_[np.zeros(int(per * 0.8)), np.ones(int(per * 0.2))],
                             np.r_[np.ones(int(per * 0.8)), np.zeros(int(per * 0.2))]]).astype(int)
    calibration = calibration_from_labels("judge", "gender", ("male", "female"), truth, judged,
                                          source=LABELLED)
    read = {"male": 680, "female": 320}  # true 0.8/0.2 through the 80% judge
    reference = [0.68, 0.32]  # the reference photos, true 0.8/0.2, through the same judge
    verdict = evaluate_w1_below(read, 0.1, ideal=reference, judge=JudgeReading(calibration, "on"),
                                reference_ideal=True)
    assert verdict.figures["judge_correction"] == "full"
    assert verdict.value.value == pytest.approx(0.0, abs=0.01)
    as_if_raw = evaluate_w1_below(read, 0.1, ideal=reference,
                                  judge=JudgeReading(calibration, "on"))
    assert as_if_raw.value.value == pytest.approx(0.12 / 0.68, abs=0.005)


def test_entigen_over_a_category_is_eq1_over_its_prompts():
    """ENTIGEN's Eq. 1 over doctors (10 male) and nurses (8 female, 2 male), each 5/5 with
    the intervention: sum |s_a - s_b| / sum (s_a + s_b) = (10 + 6) / 20 = 0.8 before, 0
    after, an improvement of 0.8 (the doctor's prompt alone improves by 1.0)."""
    from pytest_t2ibias.kinds.intervention_improves import evaluate_category_improves
    from pytest_t2ibias.methods.entigen import category_effects

    before = {"doctor": np.zeros(10, int), "nurse": np.r_[np.ones(8, int), np.zeros(2, int)]}
    after = {"anyone": {s: np.r_[np.zeros(5, int), np.ones(5, int)] for s in before}}
    result = category_effects(before, after, choices=("male", "female"), axis="gender",
                              n_resamples=200)
    verdict = evaluate_category_improves(result, 0.5, confidence=0.95)
    assert result.original_diversity == pytest.approx(0.8)
    assert verdict.value.value == pytest.approx(0.8)
    assert verdict.figures["category"] == ["doctor", "nurse"]
    assert result.original_per_prompt == {"doctor": pytest.approx(1.0), "nurse": pytest.approx(0.6)}
