"""InterMit (BiasConnect Algorithm 1) with prompt modification, on a fake world whose answers
follow the prompt exactly, so the chosen order, tau per step and alerts are known by hand;
and the word-level composition of counterfactual templates."""

from __future__ import annotations

import json
import math
import textwrap

import numpy as np
import pytest
from support.intermit_world import FAKE_WORLD, SUITE, FakeWorldPlugin

from pytest_t2ibias._session import session_of
from pytest_t2ibias.kinds.intermit import QUALITY_TITLE, evaluate_intermit, quality_of, tables
from pytest_t2ibias.methods.costs import IQA_QUESTION
from pytest_t2ibias.methods.intermit import (
    PromptEditError,
    compose,
    insertions_of,
    intermit,
    normalised_priority,
)
from pytest_t2ibias.metrics.costs import IQA_PROMPTS, iqa_scores
from pytest_t2ibias.suite.load import load_suite


def _fake_facade(pytester: pytest.Pytester, vqa: str):
    namespace: dict = {}
    exec(FAKE_WORLD, namespace)
    plugin = FakeWorldPlugin()
    plugin.pytest_t2ibias_make_generator = namespace["pytest_t2ibias_make_generator"]
    plugin.pytest_t2ibias_make_vqa = namespace["pytest_t2ibias_make_vqa"]
    config = pytester.parseconfigure("--t2i-model=male", "--t2i-baseline-model=male",
                                     f"--t2i-vqa={vqa}", "--t2i-no-cache", "--t2i-bootstrap=200",
                                     "-p", "no:cacheprovider")
    config.pluginmanager.register(plugin, "fake-world")
    return session_of(config).facade


@pytest.fixture
def fake_t2ibias(pytester: pytest.Pytester):
    """A real facade (cache off) whose hooks make the fake world's generator and answerer."""
    return _fake_facade(pytester, "fake")


@pytest.fixture
def contrastive_t2ibias(pytester: pytest.Pytester):
    """The fake world read by a contrastive judge (it embeds images and gives CLIP-IQA)."""
    return _fake_facade(pytester, "contrastive")


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "fake.t2i.yaml"
    path.write_text(SUITE)
    return load_suite(path)


# -- prompt composition (PM, paper A.7) ------------------------------------------------------------

BASE = "a photo of a {subject}"


def test_insertions_combine_into_every_phrasing():
    female = insertions_of(BASE, "a photo of a female {subject}")
    indoors = insertions_of(BASE, "a photo of a {subject} working indoors")
    old = insertions_of(BASE, "a photo of an old {subject}")
    assert compose(BASE, [female, indoors]).format(subject="nurse") == \
        "a photo of a female nurse working indoors"
    assert compose(BASE, [old, indoors]).format(subject="nurse") == \
        "a photo of an old nurse working indoors"
    # the first insertion before a word decides its article
    assert compose(BASE, [female, old]) == "a photo of a female old {subject}"
    assert compose(BASE, [old, female]) == "a photo of an old female {subject}"
    assert compose(BASE, []) == BASE


def test_a_template_that_is_not_an_insertion_is_an_error_naming_it():
    with pytest.raises(PromptEditError, match=r"axis 'gender', value 'female'.*replaces 'photo'"):
        insertions_of(BASE, "a picture of a female {subject}", "axis 'gender', value 'female'")
    with pytest.raises(PromptEditError, match="deletes 'a photo of'"):
        insertions_of(BASE, "a {subject}")


def test_priority_is_normalised_and_validated():
    assert normalised_priority({"gender": 3, "age": 1}, ["gender", "age"]) == \
        {"gender": 0.75, "age": 0.25}
    assert normalised_priority(None, ["gender", "age"]) == {"gender": 0.5, "age": 0.5}
    with pytest.raises(ValueError, match=">= 0"):
        normalised_priority({"gender": -1, "age": 2}, ["gender", "age"])
    with pytest.raises(ValueError, match="positive weight"):
        normalised_priority({"gender": 0}, ["gender", "age"])
    with pytest.raises(ValueError, match="does not have"):
        normalised_priority({"colour": 1}, ["gender", "age"])


# -- Algorithm 1 on the fake world -------------------------------------------------------------------


def test_intermit_order_tau_and_alerts_follow_the_world(fake_t2ibias, suite):
    # Start: wbar gender 1, age 0, environment 1 -> tau = 2/3.
    # Step 1: IS rows (gender, age, env): gender (+1, -0.5, 0), age (0, 0, 0), env (0, 0, +1)
    #   gamma = 1/6, 0, 1/3 -> mitigate environment; tau -> (1 + 0 + 0)/3.
    # Step 2: gamma gender 1/6, age 0 -> mitigate gender; female nurses are all young, so
    #   age goes 0 -> 0.5 (an alert); tau -> (0 + 0.5 + 0)/3 = 1/6 <= 0.2.
    result = intermit(fake_t2ibias.instrument(suite), suite, "nurse", epsilon=0.2,
                      tolerance=0.0, confidence=0.95, n_resamples=200)
    assert result.order == ("environment", "gender")
    assert result.initial_tau.value == pytest.approx(2 / 3)
    first, second = result.steps
    assert first.gamma == pytest.approx({"gender": 1 / 6, "age": 0.0, "environment": 1 / 3})
    assert first.tau_after.value == pytest.approx(1 / 3)
    assert first.prompts == ("a photo of a nurse working indoors", "a photo of a nurse working outdoors")
    assert second.gamma == pytest.approx({"gender": 1 / 6, "age": 0.0})
    assert second.wbar_after["age"].value == pytest.approx(0.5)
    assert second.tau_after.value == pytest.approx(1 / 6)
    assert set(second.prompts) == {f"a photo of a {g} nurse working {e}"
                                   for g in ("male", "female") for e in ("indoors", "outdoors")}
    assert result.mit_amount == pytest.approx(1 / 6)
    assert result.mit_steps == pytest.approx(2 / 3)
    assert result.reached
    assert len(result.alerts) == 1 and "mitigating gender) made age worse: IS[gender][age] = -0.500" in result.alerts[0]
    verdict = evaluate_intermit(result, label="nurse")
    assert not verdict.passed  # reached epsilon, but skewed age on the way
    assert "step 2: mitigate gender" in verdict.message and "MitAmt 0.167" in verdict.message
    assert result.to_dict()["order"] == ["environment", "gender"]
    assert result.matrix is not None and result.matrix.entry("gender", "age").value == \
        pytest.approx(-0.5)


def test_intermit_alerts_when_tau_cannot_reach_epsilon(fake_t2ibias, suite):
    result = intermit(fake_t2ibias.instrument(suite), suite, "nurse", tolerance=0.0, confidence=0.95,
                      n_resamples=200, priority={"gender": 1, "environment": 1},
                      epsilon=0.1, max_steps=1)
    # p = (1/2, 1/2) over gender, environment: tau 1 -> 0.5 after mitigating either; ties go
    # to the first axis in the suite's order.
    assert result.order == ("gender",)
    assert result.steps[0].tau_after.value == pytest.approx(0.5)
    assert not result.reached
    assert result.alerts[-1].startswith("tau = 0.500 did not reach epsilon 0.100 within 1 step")
    assert not evaluate_intermit(result).passed


def test_alert_on_any_axis_sees_harm_outside_the_priorities(fake_t2ibias, suite):
    """Issue #44: the paper's Sec. 6 alerts on any negative impact. With B* = {gender},
    mitigating gender reaches tau 0 but makes the unprioritised age worse (0 -> 0.5): silent
    under alert_on prioritised (the default), an alert under any, on the same path."""
    def run(alert_on):
        return intermit(fake_t2ibias.instrument(suite), suite, "nurse", priority={"gender": 1},
                        epsilon=0.2, tolerance=0.0, confidence=0.95, n_resamples=200,
                        alert_on=alert_on)

    quiet, watchful = run("prioritised"), run("any")
    assert quiet.order == watchful.order == ("gender",)
    assert quiet.final_tau.value == watchful.final_tau.value == pytest.approx(0.0)
    assert quiet.alerts == () and evaluate_intermit(quiet).passed
    assert len(watchful.alerts) == 1 and "made age worse: IS[gender][age] = -0.500" in \
        watchful.alerts[0]
    verdict = evaluate_intermit(watchful)
    assert not verdict.passed and "a step made an axis worse" in verdict.message
    assert watchful.to_dict()["watched"] == ["gender", "age", "environment"]
    with pytest.raises(ValueError, match="alert_on must be one of"):
        run("some")


def test_the_share_of_negative_is_mit_is_reported(fake_t2ibias, suite):
    """BiasConnect A.5: of the (mitigated, other) axis pairs, the share the mitigation made
    worse. Mitigating gender moves age 0 -> 0.5 (IS_mit -0.5) and leaves environment: 1 of 2
    watched pairs under alert_on any; none under prioritised (B* = {gender} has no other)."""
    def run(alert_on):
        return intermit(fake_t2ibias.instrument(suite), suite, "nurse", priority={"gender": 1},
                        epsilon=0.2, tolerance=0.0, confidence=0.95, n_resamples=200,
                        alert_on=alert_on)

    watchful = run("any").negative_is_mit()
    assert (watchful["negative"], watchful["pairs"], watchful["share"]) == (1, 2, 0.5)
    assert watchful["cases"][0]["mitigated"] == "gender" and watchful["cases"][0]["axis"] == "age"
    assert watchful["cases"][0]["value"] == pytest.approx(-0.5) and watchful["shown"] == 1
    assert run("prioritised").negative_is_mit()["pairs"] == 0
    verdict = evaluate_intermit(run("any"))
    assert verdict.figures["negative_is_mit"]["share"] == 0.5
    assert "negative IS_mit (BiasConnect A.5): 1 of 2" in verdict.message


def test_clip_iqa_before_and_after_mitigation_is_reported(contrastive_t2ibias, suite):
    """InterMit's Table 1 quality column on the images Algorithm 1 read: before, the base
    prompt's 48 (all male: 0.3 + (i % 5) / 100, mean 0.319375); after mitigating gender, the
    male and female prompts' 24 each (mean 0.6 + 46 / 2400); each iqa_scores' mean over the
    same images, with its interval and n, in the row's figures, its message and its table."""
    instrument = contrastive_t2ibias.instrument(suite)
    result = intermit(instrument, suite, "nurse", priority={"gender": 1}, epsilon=0.2,
                      tolerance=0.0, confidence=0.95, n_resamples=200)
    assert result.final_prompts == ("a photo of a male nurse", "a photo of a female nurse")
    generated = instrument.requests.counters.images_generated
    quality = quality_of(instrument, result, confidence=0.95)
    assert instrument.requests.counters.images_generated == generated  # no new image

    def expected(prompts, per_prompt):
        images = instrument.images(list(prompts), per_prompt=per_prompt)
        return float(np.mean(iqa_scores(
            instrument.models.vqa.score(images.images, IQA_QUESTION, ["good", "bad"],
                                        list(IQA_PROMPTS)))))

    before, after = quality["before"], quality["after"]
    assert before["value"] == pytest.approx(expected(result.initial_prompts, 48))
    assert before["value"] == pytest.approx(0.319375)
    assert after["value"] == pytest.approx(expected(result.final_prompts, 24))
    assert after["value"] == pytest.approx(0.6 + 46 / 2400)
    assert (before["n"], after["n"], quality["prompts_after"]) == (48, 48, 2)
    for figure in (before, after):
        assert figure["low"] < figure["value"] < figure["high"]
    verdict = evaluate_intermit(result, quality=quality)
    assert verdict.figures["quality"] == quality
    assert "CLIP-IQA (InterMit Table 1): before mitigation 0.319 [" in verdict.message
    table = next(t for t in tables(verdict.figures) if t.title == QUALITY_TITLE)
    assert table.rows[1] == ("after mitigation (2 prompt(s))",
                             f"0.619 [{after['low']:.3f}, {after['high']:.3f}] (n=48)")


def test_table_1s_other_columns_real_natural_colorfulness_and_isp_are_reported(
        contrastive_t2ibias, suite):
    """Table 1's real, natural and colorfulness are CLIP-IQA with their own antonym pairs (the
    fake judge weighs every pair's positive as it weighs "Good photo."), on the same images;
    IsP? is the share the suite's person filter keeps (everyone, here: 48 of 48), absent and
    saying why when the suite has none."""
    from pytest_t2ibias.kinds.intermit import ASPECTS_TITLE
    from pytest_t2ibias.suite_spec import FilterSpec

    instrument = contrastive_t2ibias.instrument(suite)
    result = intermit(instrument, suite, "nurse", priority={"gender": 1}, epsilon=0.2,
                      tolerance=0.0, confidence=0.95, n_resamples=200)
    person = FilterSpec(question="Is there a person in the image?", choices=("yes", "no"),
                        keep="yes")
    quality = quality_of(instrument, result, confidence=0.95, person_filter=person)
    assert list(quality["aspects"]) == ["real", "natural", "colorfulness"]
    assert quality["aspects"]["real"]["antonyms"] == ["Real photo.", "Abstract photo."]
    for aspect in quality["aspects"].values():
        assert aspect["before"]["value"] == pytest.approx(0.319375)
        assert aspect["after"]["value"] == pytest.approx(0.6 + 46 / 2400)
        assert aspect["before"]["n"] == aspect["after"]["n"] == 48
    isp = quality["is_person"]
    assert (isp["before"]["value"], isp["after"]["value"], isp["after"]["n"]) == (1.0, 1.0, 48)
    assert isp["question"] == "Is there a person in the image?"
    verdict = evaluate_intermit(result, quality=quality)
    assert "natural 0.319 -> 0.619" in verdict.message and "IsP? before 1.000" in verdict.message
    table = next(t for t in tables(verdict.figures) if t.title == ASPECTS_TITLE)
    assert [row[0].split(" (")[0] for row in table.rows] == ["real", "natural", "colorfulness", "IsP?"]
    assert [row[3] for row in table.rows] == ["0.98", "0.58", "0.66", "99%"]
    no_filter = quality_of(instrument, result, confidence=0.95)
    assert "no filter" in no_filter["is_person"]["absent"]


def test_clip_iqa_intervals_stay_within_0_and_1():
    """A mean of scores in [0, 1] whose t interval would reach past 1 (or below 0) is clipped:
    two images of the fake world read 0.9 and 0.94 have a t interval of 0.92 +- 0.25."""
    from pytest_t2ibias.kinds.intermit import _unit_mean

    figure = _unit_mean(np.array([0.9, 0.94]), 0.95)
    assert figure["value"] == pytest.approx(0.92) and figure["high"] == 1.0
    assert figure["low"] == pytest.approx(0.92 - 12.706 * 0.02, abs=1e-3)
    assert _unit_mean(np.array([0.01, 0.05]), 0.95)["low"] == 0.0


def test_clip_iqa_is_absent_and_says_why_without_a_contrastive_judge(fake_t2ibias, suite):
    instrument = fake_t2ibias.instrument(suite)
    result = intermit(instrument, suite, "nurse", priority={"gender": 1}, epsilon=0.2,
                      tolerance=0.0, confidence=0.95, n_resamples=200)
    quality = quality_of(instrument, result, confidence=0.95)
    assert "before" not in quality and "contrastive judge" in quality["absent"]
    verdict = evaluate_intermit(result, quality=quality)
    assert "quality (InterMit Table 1): CLIP-IQA needs a contrastive judge" in verdict.message
    table = next(t for t in tables(verdict.figures) if t.title == QUALITY_TITLE)
    assert table.rows == () and "contrastive judge" in table.note


def test_intermit_passes_when_already_below_epsilon(fake_t2ibias, suite):
    result = fake_t2ibias.intermit(suite, "nurse", priority={"age": 1})
    assert result.steps == () and result.reached and result.alerts == ()
    assert evaluate_intermit(result).passed and result.mit_steps == 0


# -- the check kind, end to end ----------------------------------------------------------------------


def test_intermit_check_kind_in_a_suite(pytester: pytest.Pytester):
    pytester.makeconftest(FAKE_WORLD)
    pytester.makefile(".t2i.yaml", fake=SUITE + textwrap.dedent("""\
        checks:
          - {id: mitigate_all, kind: intermit, epsilon: 0.2}
          - {id: mitigate_env, kind: intermit, priority: {environment: 1}, epsilon: 0.2}
    """))
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-model=male", "--t2i-vqa=fake",
                                "--t2i-no-cache", "--t2i-bootstrap=100")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*step 2: mitigate gender*",
                                 "*ALERT: step 2 (mitigating gender) made age worse*"])


def test_the_intermit_row_carries_clip_iqa_before_and_after(pytester: pytest.Pytester):
    """The check's JSON row and its message carry the quality figure (contrastive judge)."""
    pytester.makeconftest(FAKE_WORLD)
    pytester.makefile(".t2i.yaml", fake=SUITE + textwrap.dedent("""\
        checks:
          - {id: mitigate_gender, kind: intermit, priority: {gender: 1}, epsilon: 0.2}
    """))
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-model=male",
                                "--t2i-vqa=contrastive", "--t2i-no-cache", "--t2i-bootstrap=100",
                                "--t2i-json=report.json")
    result.assert_outcomes(passed=1)
    row, = json.loads((pytester.path / "report.json").read_text())["checks"]
    quality = row["figures"]["quality"]
    assert quality["before"]["value"] == pytest.approx(0.319375)
    assert quality["after"]["value"] == pytest.approx(0.6 + 46 / 2400)
    assert quality["before"]["n"] == quality["after"]["n"] == 48
    assert "CLIP-IQA (InterMit Table 1): before mitigation 0.319" in row["message"]


def test_a_judge_that_cannot_read_quality_leaves_the_intermit_verdict_as_it_was(
        pytester: pytest.Pytester):
    """A contrastive judge giving every image 0.5 (toy-clip's CLIP-IQA) is degenerate: the
    figure is absent and says so; the check still passes (no ERROR row)."""
    pytester.makeconftest(FAKE_WORLD)
    pytester.makefile(".t2i.yaml", fake=SUITE + textwrap.dedent("""\
        checks:
          - {id: mitigate_gender, kind: intermit, priority: {gender: 1}, epsilon: 0.2}
    """))
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-model=male",
                                "--t2i-vqa=contrastive-blind", "--t2i-no-cache",
                                "--t2i-bootstrap=100", "--t2i-json=report.json")
    result.assert_outcomes(passed=1)
    row, = json.loads((pytester.path / "report.json").read_text())["checks"]
    assert "same probabilities" in row["figures"]["quality"]["absent"]
    assert "quality (InterMit Table 1): CLIP-IQA could not be read" in row["message"]


def test_priority_must_name_axes_at_collection(pytester: pytest.Pytester):
    pytester.makefile(".t2i.yaml", fake=SUITE + textwrap.dedent("""\
        checks:
          - {id: bad, kind: intermit, priority: {gendre: 1}}
          - {id: negative, kind: intermit, priority: {gender: -1}}
    """))
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only")
    result.stdout.fnmatch_lines(["*priority names unknown axis 'gendre'*",
                                 "*priority weights must be >= 0*"])


def test_biasconnect_rows_limited_to_the_mitigated_axes(fake_t2ibias, suite):
    """IS[gender][age] needs the original and gender's counterfactuals only: age's and
    environment's counterfactual prompts are never generated, and their rows stay NaN."""
    only_gender = fake_t2ibias.biasconnect(suite, "nurse", mitigate=["gender"])
    assert fake_t2ibias.requests.counters.images_generated == 3 * 48
    full = fake_t2ibias.biasconnect(suite, "nurse")

    assert only_gender.n_images == {"initial": 48, "gender=male": 48, "gender=female": 48}
    assert only_gender.entry("gender", "age") == full.entry("gender", "age")
    assert math.isnan(only_gender.entry("age", "gender").value)


# -- adaptive: a look before the last passes only on evidence -----------------------------------


def test_an_early_look_passes_only_once_no_step_can_have_made_a_prioritised_axis_worse(
        fake_t2ibias, suite):
    """Mitigating environment leaves age as it was (balanced by image parity), so
    IS[environment][age] is 0 with an interval across it: no alert, and tau (about 0) is
    decided below epsilon. The paper's rule passes that at the last look; before it the harm
    is not ruled out at tolerance 0 (inconclusive: draw more), and is at tolerance 0.3."""
    instrument = fake_t2ibias.instrument(suite)
    strict = intermit(instrument, suite, "nurse", priority={"environment": 1, "age": 1},
                      epsilon=0.2, tolerance=0.0, confidence=0.95, n_resamples=200)
    assert strict.order == ("environment",) and strict.alerts == ()
    effect = strict.matrix.entry("environment", "age")
    assert effect.value == pytest.approx(0.0) and effect.low < 0 < effect.high
    assert not strict.harm_ruled_out
    assert evaluate_intermit(strict, confidence=0.95).outcome == "pass"
    early = evaluate_intermit(strict, confidence=0.95, early=True)
    assert early.outcome == "inconclusive"
    assert "no step is yet shown not to make a prioritised axis worse" in early.message

    tolerant = intermit(instrument, suite, "nurse", priority={"environment": 1, "age": 1},
                        epsilon=0.2, tolerance=0.3, confidence=0.95, n_resamples=200)
    assert tolerant.harm_ruled_out and tolerant.to_dict()["tolerance"] == 0.3
    assert evaluate_intermit(tolerant, confidence=0.95, early=True).outcome == "pass"


def test_a_step_worse_only_within_tolerance_raises_no_alert(fake_t2ibias, suite):
    """Mitigating gender moves age's wbar from about 0 to 0.5: an alert while the whole
    interval of IS[gender][age] lies below -tolerance, none once it does not."""
    instrument = fake_t2ibias.instrument(suite)
    effect = None
    for tolerance in (0.0, 0.3, 0.45):
        result = intermit(instrument, suite, "nurse", priority={"gender": 1, "age": 1},
                          epsilon=0.3, tolerance=tolerance, confidence=0.95, n_resamples=200)
        assert result.order[0] == "gender"
        effect = result.steps[0].matrix.entry("gender", "age")
        assert effect.value == pytest.approx(-0.5, abs=0.1)
        alerted = any("made age worse" in a for a in result.alerts)
        assert alerted is (effect.high < -tolerance), (tolerance, effect)
        assert alerted is (tolerance < 0.4)  # IS -0.500 [95% CI -0.907, -0.408]


def test_intermit_checks_stop_at_the_look_that_decides_them(pytester: pytest.Pytester):
    """Fixed at 96 images a prompt, then in rounds (looks 16, 32, 64, 120: the cap 1.25 x
    96): the failing check's alert (IS -0.5 planted) is shown at the first look; the strict
    check's pass is never proven before the cap, nor the tolerant one's (its steps' reflected
    posterior intervals reach below -0.3 until then); every verdict is the fixed-n one."""
    pytester.makeconftest(FAKE_WORLD)
    pytester.makefile(".t2i.yaml", fake=SUITE.replace("images_per_prompt: 48",
                                                      "images_per_prompt: 96") + textwrap.dedent("""\
        checks:
          - {id: mitigate_all, kind: intermit, epsilon: 0.2, confidence: 0.95}
          - {id: strict, kind: intermit, priority: {environment: 1, age: 1}, epsilon: 0.2,
             confidence: 0.95}
          - {id: tolerant, kind: intermit, priority: {environment: 1, age: 1}, epsilon: 0.2,
             tolerance: 0.3, confidence: 0.95}
    """))

    def run(*args):
        result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-model=male", "--t2i-vqa=fake",
                                    f"--t2i-cache-dir={pytester.path / 'cache'}",
                                    "--t2i-bootstrap=200", "--t2i-json=report.json", *args)
        result.assert_outcomes(passed=2, failed=1)
        rows = json.loads((pytester.path / "report.json").read_text())["checks"]
        return {row["check_id"]: (row["outcome"], row["figures"].get("adaptive", {})
                                  .get("images_per_prompt")) for row in rows}

    fixed = run()
    adaptive = run("--t2i-adaptive")
    assert {k: v[0] for k, v in adaptive.items()} == {k: v[0] for k, v in fixed.items()} == {
        "mitigate_all": "fail", "strict": "pass", "tolerant": "pass"}
    assert {k: v[1] for k, v in adaptive.items()} == {"mitigate_all": 16, "strict": 120,
                                                      "tolerant": 120}


def test_the_paper_protocol_takes_at_most_one_step_per_prioritised_axis(pytester: pytest.Pytester):
    """Table 1's budget (issue #44): MitSteps is steps over |p| and never passes 100%, and
    every Table 3 row above epsilon stopped at exactly |p| steps. With an ideal of 90% male
    the all-male nurses sit at wbar 0.111 > epsilon 0.05, and mitigating gender (50/50, wbar
    0.444) is the worst step: the gate tries every axis (age, environment, then gender: three
    steps, tau 0.444); the paper protocol stops after |B*| = 1 (age, tau 0.111). Both fail."""
    pytester.makeconftest(FAKE_WORLD)
    pytester.makefile(".t2i.yaml", fake=SUITE.replace(
        'counterfactuals: {male: "a photo of a male {subject}"',
        'ideal: {male: 0.9, female: 0.1}\n    counterfactuals: {male: "a photo of a male {subject}"'
    ) + textwrap.dedent("""\
        checks:
          - {id: gate, kind: intermit, priority: {gender: 1}, epsilon: 0.05}
          - {id: paper, kind: intermit, priority: {gender: 1}, epsilon: 0.05, protocol: paper}
          - {id: capped, kind: intermit, priority: {gender: 1, age: 1}, epsilon: 0.0,
             max_steps: 1, protocol: paper}
    """))
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-model=male", "--t2i-vqa=fake",
                                "--t2i-no-cache", "--t2i-bootstrap=100", "--t2i-json=report.json")
    result.assert_outcomes(failed=3)
    rows = {row["check_id"]: row["figures"]["intermit"]
            for row in json.loads((pytester.path / "report.json").read_text())["checks"]}
    assert rows["gate"]["order"] == ["age", "environment", "gender"]
    assert rows["gate"]["max_steps"] == 3
    assert rows["gate"]["mit_amount"] == pytest.approx(4 / 9)
    assert rows["paper"]["order"] == ["age"] and rows["paper"]["max_steps"] == 1
    assert rows["paper"]["mit_amount"] == pytest.approx(1 / 9)
    assert rows["paper"]["mit_steps"] == 1.0
    assert rows["capped"]["max_steps"] == 1  # max_steps below |B*| still holds
    result.stdout.fnmatch_lines(["*did not reach epsilon 0.050 within 1 step*"])
