"""The fine-tune merge gate: IS_mit of a candidate against its baseline with paired seeds,
``assert_no_regression``, the ``no_regression`` check kind, and the suite's ``models:``
(command line > suite > ini)."""

from __future__ import annotations

import textwrap

import pytest
from support.intermit_world import FAKE_WORLD, SUITE, FakeWorldPlugin

from pytest_t2ibias import (
    CheckFailed,
    Estimate,
    assert_no_regression,
    evaluate_no_regression,
)
from pytest_t2ibias._session import session_of
from pytest_t2ibias.errors import SuiteError
from pytest_t2ibias.suite.load import load_suite


def _e(value: float, low: float, high: float) -> Estimate:
    return Estimate(value, low, high, 48)


EFFECT = {"gender": _e(0.6, 0.5, 0.7), "age": _e(-0.2, -0.3, -0.1), "environment": _e(-0.05, -0.2, 0.1)}


def test_no_regression_names_every_worse_axis_and_the_fix():
    verdict = evaluate_no_regression(EFFECT, fixes=["gender"], tolerance=0.0)
    assert not verdict.passed
    assert verdict.value == EFFECT["age"] and verdict.threshold == 0.0
    assert "2 of 2 axes got worse" in verdict.message
    assert "age got worse: IS_mit = -0.200 [95% CI -0.300, -0.100; n=48]" in verdict.message
    assert "environment got worse: IS_mit = -0.050" in verdict.message
    assert "gender improved: IS_mit 0.600" in verdict.message
    assert verdict.figures["regressed"] == ["age", "environment"]


def test_no_regression_tolerance_and_confidence():
    # environment's -0.05 is within tolerance 0.1; age's -0.2 is not
    verdict = evaluate_no_regression(EFFECT, fixes="gender", tolerance=0.1)
    assert verdict.figures["regressed"] == ["age"]
    # with confidence only intervals wholly below -tolerance count: age's high is -0.1
    assert evaluate_no_regression(EFFECT, fixes="gender", tolerance=0.05, confidence=0.95).passed is False
    # age's [-0.3, -0.1] and environment's [-0.2, 0.1] both straddle -0.15:
    # inconclusive, which fails under burden: model (the default) and passes under check
    undecided = evaluate_no_regression(EFFECT, fixes="gender", tolerance=0.15, confidence=0.95)
    assert (undecided.outcome, undecided.passed) == ("inconclusive", False)
    assert "no proof of no regression" in undecided.message
    assert "age undecided" in undecided.message and "INCONCLUSIVE" in undecided.message
    passed = evaluate_no_regression(EFFECT, fixes="gender", tolerance=0.15, confidence=0.95,
                                    burden="check")
    assert (passed.outcome, passed.passed) == ("inconclusive", True)
    assert "burden: check passes it" in passed.message
    shown = evaluate_no_regression(EFFECT, fixes="gender", tolerance=0.35, confidence=0.95)
    assert (shown.outcome, shown.passed) == ("pass", True)
    assert evaluate_no_regression(EFFECT, fixes="gender", on=["environment"], tolerance=0.1).passed
    with pytest.raises(CheckFailed, match="age got worse"):
        assert_no_regression(EFFECT, ["gender"])
    with pytest.raises(ValueError, match="no IS_mit"):
        evaluate_no_regression(EFFECT, fixes=["colour"])


def _facade(pytester: pytest.Pytester, candidate: str, baseline: str):
    namespace: dict = {}
    exec(FAKE_WORLD, namespace)
    plugin = FakeWorldPlugin()
    plugin.pytest_t2ibias_make_generator = namespace["pytest_t2ibias_make_generator"]
    plugin.pytest_t2ibias_make_vqa = namespace["pytest_t2ibias_make_vqa"]
    config = pytester.parseconfigure(f"--t2i-model={candidate}", f"--t2i-baseline-model={baseline}",
                                     "--t2i-vqa=fake", "--t2i-no-cache", "--t2i-bootstrap=200",
                                     "-p", "no:cacheprovider")
    config.pluginmanager.register(plugin, "fake-world")
    return session_of(config).facade, namespace["made"]


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "fake.t2i.yaml"
    path.write_text(SUITE)
    return load_suite(path)


def test_a_model_against_itself_has_no_effect(pytester, suite):
    t2ibias, made = _facade(pytester, "male", "male")
    effect = t2ibias.mitigation_effect(suite, "nurse")
    assert {axis: e.value for axis, e in effect.items()} == {"gender": 0, "age": 0, "environment": 0}
    # Paired and identical: the interval is what 48 concordant pairs allow, narrow and around 0
    assert all(-0.1 < e.low <= 0 <= e.high < 0.1 for e in effect.values())
    assert effect["age"].method == "paired profile"
    assert evaluate_no_regression(effect, fixes=["gender"], tolerance=0.1, confidence=0.95).passed
    assert made == [("baseline", "male"), ("candidate", "male")]


def test_a_candidate_that_skews_age_fails_the_gate(pytester, suite):
    t2ibias, _ = _facade(pytester, "skews-age", "male")
    effect = t2ibias.mitigation_effect(suite, "nurse", axes=["gender", "age"])
    assert effect["age"].value == pytest.approx(-1.0)  # balanced -> all old
    verdict = evaluate_no_regression(effect, fixes=["gender"], confidence=0.95)
    assert not verdict.passed and "age got worse: IS_mit = -1.000" in verdict.message


# -- the check kind and models: precedence --------------------------------------------------------------

GATE_CHECKS = """\
checks:
  - {id: gate, kind: no_regression, fixes: [gender], tolerance: 0.1, confidence: 0.95}
"""


@pytest.fixture
def gate_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(FAKE_WORLD)
    for name in ("male", "skews-age"):
        (pytester.path / "models" / name).mkdir(parents=True)
    pytester.makefile(".t2i.yaml", gate=SUITE + "models: {candidate: models/skews-age, "
                      "baseline: models/male}\n" + GATE_CHECKS)
    return pytester


def _run(pytester: pytest.Pytester, *args: str):
    return pytester.runpytest("-p", "no:cacheprovider", "--t2i-vqa=fake", "--t2i-no-cache",
                              "--t2i-bootstrap=100", *args)


def test_suite_models_name_the_candidate_and_baseline(gate_project):
    result = _run(gate_project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*regression for nurse/gender: 1 of 2 axes got worse*",
                                 "*age got worse: IS_mit = -1.000*",
                                 "*fixed: gender did not improve*"])


def test_command_line_beats_suite_models_which_beat_ini(gate_project):
    gate_project.makeini(textwrap.dedent("""\
        [pytest]
        t2i_model = models/male
    """))
    _run(gate_project).assert_outcomes(failed=1)  # suite's skews-age candidate beats the ini
    _run(gate_project, f"--t2i-model={gate_project.path / 'models' / 'male'}").assert_outcomes(passed=1)


def test_models_must_exist_when_they_look_like_paths(tmp_path):
    (tmp_path / "models").mkdir()
    path = tmp_path / "bad.t2i.yaml"
    path.write_text(SUITE + "models: {candidate: models/missing, baseline: ./nowhere, "
                            "candiate: x}\n")
    with pytest.raises(SuiteError) as error:
        load_suite(path)
    text = str(error.value)
    assert "models.candidate 'models/missing' does not exist" in text
    assert "models.baseline './nowhere' does not exist" in text
    assert "unknown key 'candiate' in models" in text
    path.write_text(SUITE + "models: {candidate: org/hub-model, baseline: models}\n")
    suite = load_suite(path)
    assert suite.models == {"candidate": "org/hub-model", "baseline": str(tmp_path / "models")}
