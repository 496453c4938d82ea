"""``counterfactuals: llm``: the phrasings the LLM ranks, and the lock file that freezes them.

The real ranking runs on the committed toy LM (fixtures/toy-lm, a GPT-2 trained on the toy
world's captions, 32 tokens of context); the lock's behaviour is pinned with an LLM that
counts its loads or refuses to load at all.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest
from support.counterfactual_world import E2E_SUITE, TOY_LM, WORDS

from pytest_t2ibias._settings import Settings
from pytest_t2ibias.backends.llm import CausalLM
from pytest_t2ibias.errors import LockfileError, SuiteError
from pytest_t2ibias.facade import T2IBias
from pytest_t2ibias.locks.counterfactual import lock_path
from pytest_t2ibias.methods.biasconnect import counterfactual_prompts
from pytest_t2ibias.methods.counterfactuals import (
    as_template,
    choose_counterfactual,
    indefinite_article,
    rule_candidates,
    template_examples,
)
from pytest_t2ibias.methods.intermit import combination_prompt, suite_insertions
from pytest_t2ibias.suite.load import load_suite
from pytest_t2ibias.testing import make_tiny_clip, make_tiny_pipeline

SUITE = """\
prompt: "a photo of a {subject}"
subjects: [doctor, farmer]
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
  age:
    question: "What is the age (young, old) of the person?"
    choices: [young, old]
    counterfactuals: llm
  environment:
    question: "Is the person indoors or outdoors?"
    choices: [indoors, outdoors]
    counterfactuals: llm
    phrases: {indoors: working indoors, outdoors: working outdoors}
"""


@pytest.fixture(scope="module")
def toy_lm() -> CausalLM:
    return CausalLM.from_pretrained(TOY_LM, device="cpu", offline=True)


class CountingBackends:
    """Backends for ``T2IBias`` that hand out ``lm`` and count how often it was asked for;
    without ``lm``, asking is a test failure (the lock must be enough)."""

    def __init__(self, lm=None) -> None:
        self.lm = lm
        self.loads = 0

    def llm(self, model: str):
        self.loads += 1
        if self.lm is None:
            raise AssertionError(f"the LLM {model} was loaded although a valid lock exists")
        return self.lm


def facade(tmp_path: Path, backends: CountingBackends, *, llm: Path | str | None = TOY_LM,
           update: bool = False) -> T2IBias:
    settings = Settings.standalone(llm=str(llm) if llm else None, cache_dir=tmp_path / "cache",
                                   update_locks=update)
    return T2IBias.from_provider(settings, backends)


def write_suite(folder: Path, text: str = SUITE) -> Path:
    path = folder / "occupations.t2i.yaml"
    path.write_text(text)
    return path


# -- the YAML ---------------------------------------------------------------------------------


def test_suite_reads_llm_counterfactuals_and_phrases(tmp_path):
    suite = load_suite(write_suite(tmp_path))
    age, environment, gender = suite.axes["age"], suite.axes["environment"], suite.axes["gender"]
    assert age.counterfactuals_from_llm and age.counterfactuals == {}
    assert environment.phrase("outdoors") == "working outdoors"
    assert age.phrase("old") == "old"  # default: the choice itself
    assert not gender.counterfactuals_from_llm and gender.counterfactuals["male"].endswith("{subject}")


@pytest.mark.parametrize(("axis_lines", "line", "message"), [
    ("    counterfactuals: gpt\n", 5,
     "counterfactuals must be a mapping choice -> template or 'llm', got the string 'gpt'"),
    ("    counterfactuals: {old: 'an old {subject}'}\n    phrases: {old: elderly}\n", 6,
     "phrases are only used with counterfactuals: llm"),
    ("    counterfactuals: llm\n    phrases: {aged: elderly}\n", 6,
     "phrases: 'aged' is not a choice of the axis"),
])
def test_bad_llm_counterfactuals_are_suite_errors_with_line(tmp_path, axis_lines, line, message):
    path = tmp_path / "bad.t2i.yaml"
    path.write_text('prompt: "a photo of a {subject}"\nsubjects: [doctor]\naxes:\n'
                    "  age:\n" + axis_lines + "    question: Age?\n    choices: [young, old]\n")
    with pytest.raises(SuiteError) as raised:
        load_suite(path)
    assert f"{path}:{line}: axis 'age': {message}" in str(raised.value)


# -- the candidates and the ranking -----------------------------------------------------------


@pytest.mark.parametrize(("phrase", "article"), [
    ("old", "an"), ("young", "a"), ("elderly person", "an"), ("middle-aged", "a"),
    ("uniformed", "a"), ("honest", "an"), ("European", "a"),
])
def test_indefinite_article_follows_the_sound(phrase, article):
    assert indefinite_article(phrase) == article


def test_rule_candidates_fix_the_article_and_keep_the_rest():
    prompts = [c.prompt for c in rule_candidates("A photo of a {subject} at work.", "doctor", "old")]
    assert prompts == ["A photo of an old doctor at work.",
                       "A photo of a doctor who is old at work.",
                       "A photo of a doctor at work old"]


def test_toy_lm_picks_the_caption_word_order_with_the_right_article(toy_lm):
    old = choose_counterfactual(toy_lm, "a photo of a {subject}", "doctor", "old")
    assert old.prompt == "a photo of an old doctor"
    ranked = [c for c in old.candidates if c.rejected is None]
    assert {c.prompt for c in ranked} >= {"a photo of a doctor who is old", "a photo of a doctor old"}
    scores = [c.mean_log_likelihood for c in ranked]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[1]
    outdoors = choose_counterfactual(toy_lm, "a photo of a {subject}", "farmer", "working outdoors")
    assert outdoors.prompt == "a photo of a farmer working outdoors"


class ScriptedLM:
    """An LLM with fixed mean scores per text (others -100) and one fixed continuation."""

    fingerprint = "scripted"

    def __init__(self, scores: dict[str, float], continuation: str) -> None:
        self.scores, self.continuation, self.prompts = scores, continuation, []

    def log_likelihood(self, texts):  # sums; the ranking divides by words + 1
        return np.array([self.scores.get(t, -100.0) * (len(t.split()) + 1) for t in texts])

    def complete(self, prompt, max_new_tokens=32):
        self.prompts.append(prompt)
        return self.continuation


def test_few_shot_continuation_uses_the_template_axes_and_can_win(tmp_path):
    suite = load_suite(write_suite(tmp_path))
    examples = template_examples(suite, "doctor")
    assert examples == [("a photo of a doctor", "male", "a photo of a male doctor"),
                        ("a photo of a doctor", "female", "a photo of a female doctor")]
    own = "a photo of an elderly doctor smiling"
    lm = ScriptedLM({own: -0.5}, continuation=own + "\na photo of a doctor + young ->")
    choice = choose_counterfactual(lm, suite.prompt, "doctor", "elderly", examples)
    assert choice.prompt == own
    assert lm.prompts == [("a photo of a doctor + male -> a photo of a male doctor\n"
                          "a photo of a doctor + female -> a photo of a female doctor\n"
                          "a photo of a doctor + elderly ->")]


def test_a_continuation_that_does_not_name_the_value_is_rejected_however_likely(tmp_path):
    suite = load_suite(write_suite(tmp_path))
    lm = ScriptedLM({"a photo of a doctor": 0.0, "a photo of a doctor who is elderly": -1.0},
                    continuation="a photo of a doctor")
    choice = choose_counterfactual(lm, suite.prompt, "doctor", "elderly",
                                   template_examples(suite, "doctor"))
    assert choice.prompt == "a photo of a doctor who is elderly"
    assert [(c.source, c.rejected) for c in choice.candidates if c.rejected] == [
        ("few_shot", "does not name 'elderly'")]


def test_as_template_and_intermit_compose_the_locked_prompts():
    assert as_template("a photo of an old doctor", "doctor") == "a photo of an old {subject}"
    assert as_template("a {x} doctor", "doctor") == "a {{x}} {subject}"


# -- the lock file ------------------------------------------------------------------------------


def test_missing_lock_is_written_and_a_second_run_loads_no_llm(tmp_path, toy_lm):
    suite_path = write_suite(tmp_path)
    first = CountingBackends(toy_lm)
    resolved = facade(tmp_path, first).counterfactual_suite(load_suite(suite_path), "doctor")
    assert first.loads == 1
    assert resolved.axes["age"].counterfactuals == {"young": "a photo of a young {subject}",
                                                    "old": "a photo of an old {subject}"}
    assert counterfactual_prompts(resolved, "doctor", ["age", "environment"]) == {
        "age": {"young": "a photo of a young doctor", "old": "a photo of an old doctor"},
        "environment": {"indoors": "a photo of a doctor working indoors",
                        "outdoors": "a photo of a doctor working outdoors"},
    }
    combined = combination_prompt(resolved, "doctor", (("age", "old"), ("environment", "outdoors")),
                                  suite_insertions(resolved))
    assert combined == "a photo of an old doctor working outdoors"  # InterMit's PM state

    lock = json.loads((tmp_path / "occupations.t2i.lock.json").read_text())
    assert lock["llm"]["model"].endswith("fixtures/toy-lm")  # relative to the lock file
    assert lock["llm"]["weights"].startswith("sha256:") and lock["llm"]["fingerprint"] == toy_lm.fingerprint
    assert lock["settings"]["decoding"]["do_sample"] is False
    assert lock["prompt"] == "a photo of a {subject}" and lock["subjects"] == ["doctor", "farmer"]
    farmer_old = lock["axes"]["age"]["prompts"]["farmer"]["old"]
    assert farmer_old["prompt"] == "a photo of an old farmer"
    assert next(iter(farmer_old["candidates"])) == "a photo of an old farmer"  # best first, scored
    assert all(isinstance(score, float) for score in farmer_old["candidates"].values())

    refusing = CountingBackends(lm=None)  # a valid lock: loading the LLM fails this test
    again = facade(tmp_path, refusing).counterfactual_suite(load_suite(suite_path), "farmer")
    assert refusing.loads == 0
    assert again.axes["age"].counterfactuals["old"] == "a photo of an old {subject}"
    no_llm = facade(tmp_path, refusing, llm=None).counterfactual_suite(load_suite(suite_path), "doctor")
    assert no_llm.axes["environment"].counterfactuals == resolved.axes["environment"].counterfactuals


def test_changed_suite_is_stale_until_update_locks_rewrites_it(tmp_path, toy_lm):
    suite_path = write_suite(tmp_path)
    facade(tmp_path, CountingBackends(toy_lm)).counterfactual_suite(load_suite(suite_path), "doctor")
    lock_file = lock_path(suite_path)
    written = lock_file.read_text()
    suite_path.write_text(SUITE.replace("[doctor, farmer]", "[doctor, farmer, nurse]")
                               .replace("choices: [young, old]", "choices: [young, middle-aged, old]"))
    changed = load_suite(suite_path)
    with pytest.raises(LockfileError) as raised:
        facade(tmp_path, CountingBackends()).counterfactual_suite(changed, "doctor")
    message = str(raised.value)
    assert message.startswith(f"{lock_file}:1: counterfactual lock file is stale")
    assert "subjects changed (added ['nurse'], removed [])" in message
    assert "axis 'age': values/phrases are now" in message and "--t2i-update-locks" in message
    assert lock_file.read_text() == written  # never silently replaced

    backends = CountingBackends(toy_lm)
    updated = facade(tmp_path, backends, update=True).counterfactual_suite(changed, "nurse")
    assert backends.loads == 1
    assert updated.axes["age"].counterfactuals["middle-aged"] == "a photo of a middle-aged {subject}"
    lock = json.loads(lock_file.read_text())
    assert lock["subjects"] == ["doctor", "farmer", "nurse"]
    assert list(lock["axes"]["age"]["prompts"]["nurse"]) == ["young", "middle-aged", "old"]


def test_the_lock_is_keyed_by_protocol_and_the_other_protocols_lock_is_refused(tmp_path, toy_lm):
    """A run under ``protocol: paper`` writes and reads its own ``.paper.lock.json``; a gate
    run handed a file the paper protocol wrote refuses it, naming the file and both."""
    suite_path = write_suite(tmp_path)
    facade(tmp_path, CountingBackends(toy_lm)).counterfactual_suite(load_suite(suite_path), "doctor")
    gate_file, paper_file = lock_path(suite_path), lock_path(suite_path, protocol="paper")
    written = gate_file.read_text()
    settings = Settings.standalone(llm=str(TOY_LM), cache_dir=tmp_path / "cache", protocol="paper")
    backends = CountingBackends(toy_lm)
    T2IBias.from_provider(settings, backends).counterfactual_suite(load_suite(suite_path), "doctor")
    assert backends.loads == 1  # the gate's lock was not reused
    assert paper_file.name == "occupations.t2i.paper.lock.json"
    assert json.loads(paper_file.read_text())["protocol"] == "paper"
    assert gate_file.read_text() == written and "protocol" not in json.loads(written)
    gate_file.write_text(paper_file.read_text())
    with pytest.raises(LockfileError) as raised:
        facade(tmp_path, CountingBackends()).counterfactual_suite(load_suite(suite_path), "doctor")
    assert str(raised.value).startswith(
        f"{gate_file}:1: occupations.t2i.lock.json holds counterfactual lock entries written "
        f"under protocol: paper, and this run's protocol is gate")


def test_a_different_llm_makes_the_lock_stale(tmp_path, toy_lm):
    suite_path = write_suite(tmp_path)
    facade(tmp_path, CountingBackends(toy_lm)).counterfactual_suite(load_suite(suite_path), "doctor")
    other = tmp_path / "other-lm"
    shutil.copytree(TOY_LM, other)
    config = json.loads((other / "generation_config.json").read_text())
    (other / "generation_config.json").write_text(json.dumps({**config, "max_length": 20}))
    with pytest.raises(LockfileError, match=r"--t2i-llm .*other-lm \(weights sha256:.*\) is not "
                                            r"the LLM that wrote it"):
        facade(tmp_path, CountingBackends(), llm=other).counterfactual_suite(
            load_suite(suite_path), "doctor")


@pytest.mark.parametrize(("content", "line", "message"), [
    ('{\n  "lock_version": 1,\n  "prompt": oops\n}\n', 3, "counterfactual lock file is not valid JSON"),
    ('{"lock_version": 1, "prompt": "a photo of a {subject}"}', 1,
     "not a counterfactual lock file ('subjects' missing or not a list)"),
    ("[]", 1, "not a counterfactual lock file (expected a JSON object)"),
])
def test_corrupt_lock_is_an_error_naming_the_file_and_is_kept(tmp_path, content, line, message):
    suite_path = write_suite(tmp_path)
    lock_file = lock_path(suite_path)
    lock_file.write_text(content)
    with pytest.raises(LockfileError) as raised:
        facade(tmp_path, CountingBackends()).counterfactual_suite(load_suite(suite_path), "doctor")
    assert str(raised.value).startswith(f"{lock_file}:{line}: {message}")
    assert lock_file.read_text() == content


def test_no_lock_and_no_llm_names_the_axis_line_and_the_option(tmp_path):
    suite_path = write_suite(tmp_path)
    with pytest.raises(LockfileError) as raised:
        facade(tmp_path, CountingBackends(), llm=None).counterfactual_suite(
            load_suite(suite_path), "doctor")
    assert str(raised.value).startswith(
        f"{suite_path}:8: axis 'age' has counterfactuals: llm, but its lock file "
        f"occupations.t2i.lock.json does not exist and --t2i-llm is not set")
    assert not lock_path(suite_path).exists()


def test_unphrased_llm_axes_are_refused_not_skipped(tmp_path):
    suite = load_suite(write_suite(tmp_path))
    with pytest.raises(ValueError, match=r"axes \['age'\] .* have counterfactuals: llm"):
        counterfactual_prompts(suite, "doctor", ["gender", "age"])
    assert counterfactual_prompts(suite, "doctor", ["gender"])["gender"]["male"] == "a photo of a male doctor"


# -- end to end ---------------------------------------------------------------------------------




@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-models")
    return {"model": make_tiny_pipeline(root / "sd", words=WORDS),
            "vqa": make_tiny_clip(root / "clip", words=WORDS)}


def test_plugin_writes_uses_and_guards_the_lock(pytester: pytest.Pytester, tiny_models, tmp_path):
    suite_path = pytester.makefile(".t2i.yaml", tiny=E2E_SUITE)
    pytester.makeini(textwrap.dedent(f"""\
        [pytest]
        t2i_model = {tiny_models['model']}
        t2i_vqa = {tiny_models['vqa']}
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_device = cpu
        t2i_bootstrap = 50
        # random-weight judges read nothing: every calibration would say "cannot read"
        t2i_judge_correction = off
    """))
    run = lambda *args: pytester.runpytest("-p", "no:cacheprovider", *args)
    lock_file = pytester.path / "tiny.t2i.lock.json"

    missing = run()  # no --t2i-llm and no lock: the item says which line and which option
    missing.assert_outcomes(errors=1)
    missing.stdout.fnmatch_lines([("*could not run: LockfileError: *tiny.t2i.yaml:9: axis 'age' "
                                  "has counterfactuals: llm*--t2i-llm*")])
    missing.stdout.no_fnmatch_line("*Traceback*")

    run(f"--t2i-llm={TOY_LM}").assert_outcomes(passed=1)
    lock = json.loads(lock_file.read_text())
    assert lock["axes"]["age"]["prompts"]["doctor"]["old"]["prompt"] == "a photo of an old doctor"

    run().assert_outcomes(passed=1)  # the committed lock is enough: no LLM configured

    suite_path.write_text(E2E_SUITE.replace("[doctor]", "[doctor, nurse]"))
    stale = run("-k", "nurse")
    stale.assert_outcomes(errors=1)
    stale.stdout.fnmatch_lines([("*tiny.t2i.lock.json:1: counterfactual lock file is stale for "
                                "suite tiny.t2i.yaml: subjects changed (added ?'nurse'?, "
                                "removed ??). Rerun with --t2i-update-locks*")])
    run(f"--t2i-llm={TOY_LM}", "-o", "t2i_update_locks=true").assert_outcomes(passed=2)  # ini key
    assert json.loads(lock_file.read_text())["axes"]["age"]["prompts"]["nurse"]["old"]["prompt"] \
        == "a photo of an old nurse"
