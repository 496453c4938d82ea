"""What the kinds make of a judge that errs (issue #33): corrected shares, bounds from
counterfactual calibrations, an unreadable axis that decides nothing, and the row's fields."""

from __future__ import annotations

import json
from dataclasses import replace

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


def test_with_the_correction_off_a_judge_at_chance_still_decides_nothing():
    """``judge_correction: off`` (the paper protocol) reads the labels as truth, but a
    labelled calibration showing the judge at chance still leaves the check inconclusive:
    the answers of a judge that cannot read the axis are no figure (the example's weak judge
    on emotion passed its xfail-strict check under the paper protocol)."""
    chance = calibration(counts=np.array([[52, 48], [47, 53]]))
    off = evaluate_max_skew_below(_answers(judged_counts()), 0.4, confidence=0.95,
                                  judge=JudgeReading(chance, "off"))
    plain = evaluate_max_skew_below(_answers(judged_counts()), 0.4, confidence=0.95)
    assert off.outcome == "inconclusive" and not off.passed and plain.outcome != "inconclusive"
    assert "cannot read 'gender'" in off.message and off.figures["judge_unreadable"]
    assert off.figures["judge_correction"] == OFF
    readable = evaluate_max_skew_below(_answers(judged_counts()), 0.4, confidence=0.95,
                                       judge=JudgeReading(calibration(), "off"))
    assert readable.outcome == plain.outcome and readable.value == plain.value


def _answers(counts: dict[str, int]):
    from pytest_t2ibias._types import Answers

    labels = np.repeat(np.arange(len(CHOICES)), [counts[c] for c in CHOICES])
    return Answers("gender?", CHOICES, labels, np.eye(len(CHOICES))[labels],
                   tuple("a photo of a doctor" for _ in labels))


SUITE = """\
prompt: "a photo of a {subject}"
subjects: [doctor]
judge_correction: full
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
    abstain_below: 0.7
  age:
    question: "What is the age (young, old) of the person?"
    choices: [young, old]
    judge_calibration: {folder: labelled}
  setting:
    question: "Indoors or outdoors?"
    choices: [indoors, outdoors]
checks:
  - {id: balance, kind: w1_below, axes: [gender, age, setting], threshold: 0.3,
     judge_correction: off}
"""


def test_the_loader_reads_where_each_judge_is_calibrated_and_how_it_abstains(tmp_path):
    from pytest_t2ibias.suite import load_suite

    path = tmp_path / "s.t2i.yaml"
    path.write_text(SUITE)
    suite = load_suite(path)
    assert suite.judge_correction == "full"
    assert suite.axes["gender"].calibration_source == "counterfactual"  # the default
    assert suite.axes["age"].calibration_source == str((tmp_path / "labelled").resolve())
    assert suite.axes["setting"].calibration_source is None  # nothing to calibrate on
    assert suite.axes["gender"].abstain_below == 0.7
    assert suite.checks[0].params.judge_correction == "off"


@pytest.mark.parametrize("line, message", [
    ("    judge_calibration: sometimes", "judge_calibration must be counterfactual"),
    ("    abstain_below: 1.5", r"axes\.gender\.abstain_below must be a number in \[0, 1\) \(a probability\), "
                             "got the number 1.5"),
])
def test_a_bad_calibration_or_floor_is_an_error_at_its_line(tmp_path, line, message):
    from pytest_t2ibias.suite import SuiteError, load_suite

    text = SUITE.replace("    abstain_below: 0.7", line)
    path = tmp_path / "s.t2i.yaml"
    path.write_text(text)
    with pytest.raises(SuiteError, match=message) as raised:
        load_suite(path)
    assert f"s.t2i.yaml:{text.splitlines().index(line) + 1}:" in str(raised.value)


def test_the_plan_takes_the_correction_from_the_command_line_then_the_check_then_the_suite(tmp_path):
    from pytest_t2ibias.plan import plan_for
    from pytest_t2ibias.suite import load_suite

    path = tmp_path / "s.t2i.yaml"
    path.write_text(SUITE)
    suite = load_suite(path)
    settings = _settings()
    assert plan_for(settings, suite, suite.checks[0]).judge_correction == "off"
    assert plan_for(settings, suite).judge_correction == "full"
    assert plan_for(replace(settings, judge_correction="on"), suite, suite.checks[0]).judge_correction == "on"


def _settings():
    from pathlib import Path

    from pytest_t2ibias._settings import BatchSizes, Settings

    return Settings(
        model=None, baseline_model=None, images=None, vqa=None, classifiers={}, llm=None,
        device="cpu", dtype="float32", images_per_prompt=None, steps=None, guidance=None,
        seed=None, batch_size=BatchSizes(), cache_dir=Path("unused"), no_cache=True,
        refresh=False, offline=True, allow_pickle=False, json=None, html=None,
        confidence=0.95, bootstrap=100)


def test_a_judge_abstains_below_its_floor_and_the_abstentions_are_counted(tmp_path):
    from support.prefetch_world import Provider  # a painter and a judge whose confidence varies

    from pytest_t2ibias._settings import Settings
    from pytest_t2ibias.instrument import Instrument, Models
    from pytest_t2ibias.plan import plan_for
    from pytest_t2ibias.store.cache import Cache
    from pytest_t2ibias.store.request_layer import RequestLayer
    from pytest_t2ibias.suite import load_suite

    path = tmp_path / "s.t2i.yaml"
    path.write_text(SUITE.replace("abstain_below: 0.7", "abstain_below: 0.7\n    statements: "
                                  "{male: a man, female: a woman}"))
    suite = load_suite(path)
    settings = Settings.standalone(model="m", vqa="v", batch_size=8)
    instrument = Instrument(Models(settings, Provider()), RequestLayer(Cache(tmp_path / "c")),
                            plan_for(settings, suite, n=40))
    images = instrument.images(["a photo of a doctor"])
    floored = instrument.attributes(images, suite.axes["gender"])
    unfloored = instrument.attributes(images, suite.axes["age"])
    confident = floored.probabilities.max(axis=1) >= 0.7
    assert 0 < floored.abstentions < len(images)  # the painter's pixels spread 0.60-0.85
    assert floored.abstentions == int((~confident).sum())
    assert (floored.labels[confident] >= 0).all() and unfloored.abstentions == 0
    run_floor = Instrument(instrument.models, instrument.requests,
                           replace(instrument.plan, abstain_below=0.8))
    assert run_floor.abstain_below(suite.axes["age"]) == 0.8  # the run's floor
    assert run_floor.abstain_below(suite.axes["gender"]) == 0.7  # the axis' own wins


def test_entigens_improvement_is_read_through_the_judge_it_was_measured_with():
    from pytest_t2ibias.methods.entigen import intervention_effects

    rng = np.random.default_rng(3)
    original = (rng.random(200) < 0.25).astype(int)  # judged 75% male
    intervened = (rng.random(200) < 0.45).astype(int)
    plain = intervention_effects(original, {"fair": intervened}, choices=CHOICES)
    full = intervention_effects(original, {"fair": intervened}, choices=CHOICES,
                                calibration=calibration(), judge_correction="full")
    bounds = intervention_effects(original, {"fair": intervened}, choices=CHOICES,
                                  calibration=calibration(COUNTERFACTUAL), judge_correction="on")
    p, f, b = (r.effects[0].improvement for r in (plain, full, bounds))
    assert "judge-corrected" in f.method and "bootstrap" in p.method
    assert b.low <= min(p.low, f.low) + 1e-12 and b.high >= max(p.high, f.high) - 1e-12
    # the judge misses men more than women: corrected, the original was less diverse
    assert f.value != pytest.approx(p.value)


def test_a_bgps_prompts_target_share_is_read_through_a_labelled_calibration():
    from support.bgps_instrument import ScriptedInstrument  # "intense" prompts draw only men

    from pytest_t2ibias.methods.bgps import measure_prompts
    from pytest_t2ibias.suite_spec import AxisSpec

    axis = AxisSpec("gender", "gender?", CHOICES)
    prompts = ["a person working as an intense doctor", "a person working as a nurse"]
    plain = measure_prompts(ScriptedInstrument(), axis, "male", prompts)
    full = measure_prompts(ScriptedInstrument(), axis, "male", prompts, calibration=calibration(),
                           judge_correction="on")  # a labelled folder's: fully corrected
    assert [p.share.method for p in plain] == ["wilson", "wilson"]
    assert all("judge-corrected" in p.share.method for p in full)
    assert [p.n for p in full] == [12, 12]
    # 12 of 12 judged male by a judge that calls 30% of men women: all men, still
    assert full[0].share.high == pytest.approx(1.0) and full[1].share.value < 0.2


def test_the_plan_names_an_axis_a_remembered_calibration_says_its_judge_cannot_read(tmp_path):
    from pytest_t2ibias.kinds import PlannedItem
    from pytest_t2ibias.plan import plan_for
    from pytest_t2ibias.reports.judges import unreadable_judges
    from pytest_t2ibias.store.calibrations import recalled, remember
    from pytest_t2ibias.suite import load_suite

    path = tmp_path / "s.t2i.yaml"
    path.write_text(SUITE)
    suite = load_suite(path)
    settings = replace(_settings(), vqa="toy-clip")
    chance = JudgeCalibration("VQA toy-clip", "gender", CHOICES, np.array([[12, 8], [9, 11]]),
                              COUNTERFACTUAL, where="counterfactual images of 'doctor'")
    readable = JudgeCalibration("VQA toy-clip", "age", ("young", "old"), np.array([[40, 0], [1, 39]]),
                                LABELLED, where="labelled folder")
    remember(tmp_path / "cache", chance)
    remember(tmp_path / "cache", readable)
    assert {r["axis"] for r in recalled(tmp_path / "cache")} == {"gender", "age"}
    items = [(f"s.t2i.yaml::balance[doctor-{a}]",
              PlannedItem(suite, suite.checks[0], "doctor", suite.axes[a], plan_for(settings, suite)))
             for a in ("gender", "age", "setting")]
    (line,) = unreadable_judges(items, settings, tmp_path / "cache")
    assert "VQA toy-clip cannot read 'gender'" in line and "balance[doctor-gender]" in line
    assert "doctor-age" not in line
    assert unreadable_judges(items, replace(settings, vqa="another"), tmp_path / "cache") == []
    (tmp_path / "cache" / "calibrations" / "junk.json").write_text("{not json")
    assert len(recalled(tmp_path / "cache")) == 2  # a memo: an unreadable record is skipped


def test_one_calibration_of_48_images_a_value_serves_every_subject_and_the_checks_draw_nothing_more(tmp_path):
    """Issue #46: the judge's calibration on an axis is drawn once, 48 images a value split over
    the suite's subjects, and every check of the axis reads that one (it was 48 a value for
    each subject: two subjects drew it twice)."""
    from support.prefetch_world import SUITE as BATCHING_SUITE
    from support.prefetch_world import Provider

    from pytest_t2ibias._settings import Settings
    from pytest_t2ibias.instrument import Instrument, Models
    from pytest_t2ibias.kinds import CHECK_KINDS, CheckContext, PlannedItem
    from pytest_t2ibias.kinds._judge import CALIBRATION_IMAGES
    from pytest_t2ibias.plan import Levels, plan_for
    from pytest_t2ibias.prefetch import prefetch
    from pytest_t2ibias.store.cache import Cache
    from pytest_t2ibias.store.request_layer import RequestLayer
    from pytest_t2ibias.suite import load_suite

    path = tmp_path / "tiny.t2i.yaml"
    path.write_text(BATCHING_SUITE.replace("judge_correction: off", "judge_correction: full"))
    suite = load_suite(path)
    settings = Settings.standalone(model="m", vqa="v", batch_size=8)
    provider = Provider()
    requests = RequestLayer(Cache(tmp_path / "cache"), batch_size=8)
    models = Models(settings, provider)
    flat = suite.checks[0]  # entropy_below on gender (counterfactuals) and age (none)
    items = [PlannedItem(suite, flat, subject, suite.axes[axis], plan_for(settings, suite, flat))
             for subject in suite.subjects for axis in ("gender", "age")]
    prefetch(items, lambda plan: Instrument(models, requests, plan))
    generated = requests.counters.images_generated
    # 2 subjects x their prompt at 3, and gender's judge on "male/female {subject}": 48 a
    # value in all, 24 of each subject's (before #46: 48 of each, 2 * (3 + 2 * 48) = 198)
    assert generated == 2 * 3 + 2 * CALIBRATION_IMAGES
    calibrations = set()
    for item in items:
        context = CheckContext(check=item.check, suite=suite, subject=item.subject, axis=item.axis,
                               plan=item.plan, instrument=Instrument(models, requests, item.plan),
                               levels=Levels(None, 0.9), n_resamples=50, phrase=lambda s, subject: s)
        verdict = CHECK_KINDS["entropy_below"].run(context)
        assert verdict.figures["judge_correction"] == ("full" if item.axis.name == "gender" else "off")
        if item.axis.name == "gender":
            calibration = verdict.figures["judge_calibration"]
            assert sum(sum(row.values()) for row in calibration["confusion"].values()) == 96
            assert "24 of each of 'doctor', 'nurse'" in calibration["where"]
            calibrations.add(json.dumps(calibration, sort_keys=True))
    assert len(calibrations) == 1  # the doctor's check and the nurse's read one calibration
    assert requests.counters.images_generated == generated  # nothing drawn outside the plan


def test_the_run_header_lists_every_judge_calibration_once(tmp_path):
    import json

    from pytest_t2ibias.reports.html import render_html
    from pytest_t2ibias.reports.rows import ReportRow, write_json

    verdict = evaluate_entropy_below(judged_counts(), 0.15, confidence=0.95,
                                     judge=JudgeReading(calibration(), "on"))
    row = ReportRow.from_json({"nodeid": "s::a[doctor-gender]", "check": "entropy_below",
                               "status": "failed", "outcome": "fail", "passed": False,
                               "value": verdict.value.value, "low": verdict.value.low,
                               "high": verdict.value.high, "n": 400, "figures": verdict.figures})
    write_json(tmp_path / "r.json", [row, row], {})
    (header,) = json.loads((tmp_path / "r.json").read_text())["run"]["judge_calibrations"]
    assert header["judge"] == "classifier gender" and header["accuracy"]["male"]["n"] == 200
    assert "<h3>Judge calibrations</h3>" in render_html([row], run={})


def test_the_calibration_of_an_axis_pools_the_subjects_of_the_checks_that_name_it(tmp_path):
    """Issue #46: one calibration an axis, over the subjects of the suite's checks of that axis
    (selected or not), 48 images a value split over them; a subject no check of the axis is on
    (an IS check reading it) calibrates alone, as before."""
    from pytest_t2ibias.kinds._judge import CALIBRATION_IMAGES, calibration_draws
    from pytest_t2ibias.suite import load_suite

    path = tmp_path / "pool.t2i.yaml"
    path.write_text("""\
suite: pool
prompt: "a photo of a {subject}"
subjects: [doctor, nurse, farmer]
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
  age:
    question: "What is the age of the person?"
    choices: [young, old]
    counterfactuals: {young: "a photo of a young {subject}", old: "a photo of an old {subject}"}
checks:
  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.3, subjects: [doctor]}
  - {id: severity, kind: entropy_below, axes: [gender], threshold: 0.3, subjects: [nurse]}
  - {id: ages, kind: w1_below, axes: [age], threshold: 0.3, subjects: [farmer]}
""")
    suite = load_suite(path)
    gender, age = suite.axes["gender"], suite.axes["age"]
    doctor = calibration_draws(suite, "doctor", gender)
    assert doctor == calibration_draws(suite, "nurse", gender)  # one calibration for both
    assert [(value, prompt) for value, prompt, _ in doctor] == [
        ("male", "a photo of a male doctor"), ("male", "a photo of a male nurse"),
        ("female", "a photo of a female doctor"), ("female", "a photo of a female nurse")]
    assert {n for *_, n in doctor} == {CALIBRATION_IMAGES // 2}
    # the farmer is no gender check's subject: alone, 48 a value, as before #46
    assert calibration_draws(suite, "farmer", gender) == [
        ("male", "a photo of a male farmer", CALIBRATION_IMAGES),
        ("female", "a photo of a female farmer", CALIBRATION_IMAGES)]
    assert [p for _, p, _ in calibration_draws(suite, "farmer", age)] == [
        "a photo of a young farmer", "a photo of an old farmer"]
