"""Words the generator never read make no verdict: unknown words and prompts cut at the text
encoder's length are flagged in the table and the JSON, and the check is inconclusive."""

from __future__ import annotations

import json
import textwrap

import pytest

from pytest_t2ibias.backends.readings import prompt_problems
from pytest_t2ibias.backends.vocabulary import cut_words, unread_words
from pytest_t2ibias.testing import make_tiny_clip, make_tiny_pipeline
from pytest_t2ibias.testing.tokenizer import build_word_tokenizer

WORDS = "a photo of an doctor nurse male female person".split()


def test_unknown_words_and_cuts_are_named():
    tokenizer = build_word_tokenizer(WORDS, model_max_length=8)
    assert unread_words(tokenizer, "a photo of a pilot") == ["pilot"]
    assert unread_words(tokenizer, "a photo of a nurse") == []
    # <bos> + 8 words + <eos> = 10 tokens > 8: the last two words are never read
    assert cut_words(tokenizer, "a photo of a male nurse a doctor") == ["a", "doctor"]
    problems = prompt_problems([("tokenizer", tokenizer)],
                               ["a photo of a pilot", "a photo of a nurse"])
    assert problems == {"a photo of a pilot": "pilot unknown to tokenizer (read as <unk>)"}


SUITE = """\
suite: oov
defaults: {images_per_prompt: 4, seed: 0, steps: 2}
prompt: "a photo of a {subject}"
subjects: [nurse, pilot]
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
checks:
  - {id: lenient, kind: entropy_below, axes: [gender], threshold: 1.0}
"""


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """Built once: a pytester run forgets modules it first imported (torch's among them)."""
    root = tmp_path_factory.mktemp("oov-models")
    return {"model": make_tiny_pipeline(root / "sd", words=WORDS),
            "vqa": make_tiny_clip(root / "clip", words=WORDS)}


@pytest.fixture
def project(pytester: pytest.Pytester, tiny_models, tmp_path) -> pytest.Pytester:
    pytester.makefile(".t2i.yaml", oov=SUITE)
    pytester.makeini(textwrap.dedent(f"""\
        [pytest]
        t2i_model = {tiny_models['model']}
        t2i_vqa = {tiny_models['vqa']}
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_device = cpu
        t2i_bootstrap = 100
    """))
    return pytester


def test_an_unknown_subject_is_inconclusive_and_flagged_in_table_and_json(project, tmp_path):
    report = tmp_path / "report.json"
    result = project.runpytest("-p", "no:cacheprovider", f"--t2i-json={report}")
    result.assert_outcomes(passed=1, failed=1)  # burden model: inconclusive fails
    result.stdout.fnmatch_lines([
        "*the generator cannot read its prompts whole*'a photo of a pilot': pilot unknown*",
        "*pilot / gender*inconclusive: FAIL unread words*",
        "*unread words: the generator's tokenizer cannot read the prompt whole*"])
    rows = {row["subject"]: row for row in json.loads(report.read_text())["checks"]}
    assert rows["pilot"]["outcome"] == "inconclusive"
    assert rows["pilot"]["figures"]["unread_prompts"] == {
        "a photo of a pilot": "pilot unknown to tokenizer (read as <unk>)"}
    assert rows["nurse"]["outcome"] == "pass" and "unread_prompts" not in rows["nurse"]["figures"]

    # warm: nothing generated, and still flagged (the tokenizer is read from the folder)
    again = project.runpytest("-p", "no:cacheprovider", "--t2i-strict-prompts")
    again.assert_outcomes(passed=1, errors=1)
    again.stdout.fnmatch_lines(["*UnreadPrompt*pilot unknown to tokenizer*"])


def test_the_plan_flags_an_unknown_subject_before_any_image(project):
    result = project.runpytest("-p", "no:cacheprovider", "--t2i-plan")
    result.stdout.fnmatch_lines(["*lenient[[]pilot-gender[]]*unread words: pilot unknown to "
                                 "tokenizer (read as <unk>)*"])
    result.stdout.no_fnmatch_line("*lenient[[]nurse-gender[]]*unread*")


def test_the_plan_says_a_tokenizer_it_cannot_read_rather_than_hiding_it(monkeypatch):
    """A planner swallows no error: a tokenizer that fails to load is the item's plan note."""
    from types import SimpleNamespace

    import pytest_t2ibias.backends.readings as readings
    import pytest_t2ibias.kinds as kinds
    from pytest_t2ibias.kinds._work import Draw, Work
    from pytest_t2ibias.reports.terminal import unread_in_plan

    def broken(model, memo):
        raise OSError(f"{model}/tokenizer/vocab.json: truncated")

    monkeypatch.setattr(readings, "pipeline_readers", broken)
    monkeypatch.setattr(kinds, "work_of", lambda item: Work(planned=(
        Draw("generator", f"a photo of a {item.subject}", 4),)))
    plan = SimpleNamespace(model=lambda role: "/models/sd")
    items = [("a", SimpleNamespace(subject="nurse", plan=plan)),
             ("b", SimpleNamespace(subject="pilot", plan=plan))]
    said = unread_in_plan(items)
    assert said == dict.fromkeys("ab", "the generator's tokenizer (/models/sd) cannot be read: "
                                       "OSError: /models/sd/tokenizer/vocab.json: truncated")


def test_prompts_a_search_chose_are_flagged_without_changing_the_verdict():
    from pytest_t2ibias._types import Estimate
    from pytest_t2ibias.figures import unread_prompts
    from pytest_t2ibias.verdict import Verdict

    verdict = Verdict("intermit", Estimate(0.1, 0.0, 0.2, 40), 0.3, "ok", "pass")
    unread = {"a photo of a pilot": "pilot unknown to tokenizer (read as <unk>)"}
    flagged = unread_prompts(verdict, unread, decisive=False, strict=False)
    assert flagged.passed and flagged.outcome == "pass"
    assert flagged.figures["unread_prompts"] == unread
    judged = unread_prompts(verdict, unread)
    assert not judged.passed and judged.outcome == "inconclusive"


def test_only_the_suites_own_prompts_decide_the_rest_are_flagged():
    """OpenBias' judge audit writes prompts around the suite's ("a photo of an accountant in
    informal clothes"): a word of theirs the model cannot read is flagged, not a reason to
    call the suite's check inconclusive."""
    from pytest_t2ibias._types import Estimate
    from pytest_t2ibias.figures import unread_prompts
    from pytest_t2ibias.verdict import Verdict

    verdict = Verdict("open_set", Estimate(0.05, 0.0, 0.18, 48), 0.35, "ok", "pass")
    audit = {"a photo of an accountant in informal clothes": "informal unknown to tokenizer"}
    own = {"a photo of an accountant"}
    flagged = unread_prompts(verdict, audit, decisive=own, strict=True)
    assert flagged.outcome == "pass" and flagged.figures["unread_prompts"] == audit
    both = {**audit, "a photo of an accountant": "accountant unknown to tokenizer"}
    judged = unread_prompts(verdict, both, decisive=own)
    assert judged.outcome == "inconclusive" and judged.figures["unread_prompts"] == both
    assert "informal" not in judged.message.split("\n")[0]  # the deciding prompt is named


def test_readings_are_remembered_by_tokenizer_fingerprint_and_text(tmp_path):
    """Issue #36: a second run reads what the tokenizer made of a text from the memo, without
    loading the tokenizer; another tokenizer (other files) has its own memo."""
    from pytest_t2ibias.backends.readings import TokenizerReader, problems

    folder = tmp_path / "tok"
    build_word_tokenizer(WORDS, model_max_length=8).save_pretrained(folder)
    memo = tmp_path / "memo"
    first = TokenizerReader("tokenizer", folder=folder, memo=memo)
    assert problems([first], ["a photo of a pilot"]) == {
        "a photo of a pilot": "pilot unknown to tokenizer (read as <unk>)"}
    again = TokenizerReader("tokenizer", folder=folder, memo=memo)
    reading = again.readings(["a photo of a pilot"])["a photo of a pilot"]
    assert again._tokenizer is None  # never loaded
    assert reading.unknown == ("pilot",) and reading.shown == "a photo of a <unk>"
    build_word_tokenizer([*WORDS, "pilot"], model_max_length=8).save_pretrained(folder)
    retrained = TokenizerReader("tokenizer", folder=folder, memo=memo)
    assert retrained.fingerprint != first.fingerprint
    assert problems([retrained], ["a photo of a pilot"]) == {}


JUDGED = """\
suite: judged
defaults: {images_per_prompt: 2, seed: 0, steps: 2}
prompt: "a photo of a {subject}"
subjects: [nurse]
filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
    statements: {male: "a photo of a man", female: "a photo of a female person"}
checks:
  - {id: lenient, kind: entropy_below, axes: [gender], threshold: 1.0}
"""


def test_statements_the_judge_reads_alike_are_one_error_before_any_image(project, tmp_path):
    """Issue #36: toy CLIP reads 'a photo of a yes' and 'a photo of a no' as the same tokens;
    the plan says so at the filter's line, naming what the tokenizer made of them."""
    (project.path / "oov.t2i.yaml").unlink()
    project.makefile(".t2i.yaml", judged=JUDGED)
    result = project.runpytest("-p", "no:cacheprovider", "--t2i-plan")
    result.stdout.fnmatch_lines([(
        "*judged.t2i.yaml:5: the filter: the judge * cannot tell 'yes' ('a photo of a yes') and "
        "'no' ('a photo of a no') apart: its tokenizer reads each as 'a photo of a <unk>'*"
        "Give filter.statements one statement per choice*")])
    assert not (tmp_path / "cache" / "images").exists()


def test_words_the_judge_cannot_read_in_distinct_statements_are_a_warning(project):
    fixed = JUDGED.replace("keep: yes}", 'keep: yes,\n         statements: {yes: "a photo of a '
                                         'person", no: "a photo of a nurse"}}')
    (project.path / "oov.t2i.yaml").unlink()
    project.makefile(".t2i.yaml", judged=fixed)
    result = project.runpytest("-p", "no:cacheprovider", "--t2i-plan")
    result.stdout.fnmatch_lines([(
        "*judged.t2i.yaml:8: JudgeTextWarning: axis 'gender': the judge * cannot read all it "
        "scores: 'a photo of a man': man unknown to tokenizer (read as <unk>)*")])
    result.stdout.no_fnmatch_line("*the filter*")


def test_unread_words_are_never_a_pass_under_burden_check():
    """Issue #36: under burden: check an inconclusive check passes; one on words the model
    never read measured nothing, so it is an ERROR (UnreadPrompt), not a green pass."""
    from dataclasses import replace

    from pytest_t2ibias._types import Estimate
    from pytest_t2ibias.errors import UnreadPrompt
    from pytest_t2ibias.figures import unread_prompts
    from pytest_t2ibias.verdict import Verdict

    verdict = replace(Verdict("w1_below", Estimate(0.1, 0.0, 0.2, 40), 0.3, "ok", "pass"),
                      burden="check")
    unread = {"a photo of a pilot": "pilot unknown to tokenizer (read as <unk>)"}
    with pytest.raises(UnreadPrompt, match="pilot unknown.*under burden: check"):
        unread_prompts(verdict, unread)
    model = unread_prompts(replace(verdict, burden="model"), unread)
    assert not model.passed and model.outcome == "inconclusive"


def test_a_judge_tokenizer_that_cannot_be_read_is_said_at_collection(monkeypatch):
    """The judge-text check before any image (issue #36) hides no failure either."""
    from pathlib import Path

    import pytest_t2ibias.backends.judge_texts as judge_texts
    from pytest_t2ibias._settings import Settings
    from pytest_t2ibias.items.file import check_judge_texts
    from pytest_t2ibias.suite.load import load_suite

    root = Path(__file__).resolve().parents[2]

    def broken(question, reader, judge):
        raise OSError("tokenizer.json: truncated")

    monkeypatch.setattr(judge_texts, "same_readings", broken)
    suite = load_suite(root / "example_suites" / "toy_occupations.t2i.yaml")
    settings = Settings.standalone(vqa=str(root / "fixtures" / "toy-clip"), no_cache=True)
    with pytest.warns(judge_texts.JudgeTextWarning,
                      match=r"tokenizer cannot be read \(OSError: tokenizer.json: truncated\)"):
        check_judge_texts(suite, settings)


def test_the_memo_keeps_other_readers_texts_and_reads_back_only_their_writes(tmp_path,
                                                                             monkeypatch):
    """Issue #46: InterMit reads thousands of prompts in hundreds of calls, and every call
    re-read and re-sealed the whole memo (quadratic in the prompts). A reader now reads the
    file back only when another one has rewritten it, and still keeps what that one wrote."""
    from pytest_t2ibias.backends import readings

    folder = tmp_path / "tok"
    build_word_tokenizer(WORDS, model_max_length=8).save_pretrained(folder)
    memo = tmp_path / "memo"
    calls = []
    real = readings._read_memo_records
    monkeypatch.setattr(readings, "_read_memo_records",
                        lambda *args: calls.append(args) or real(*args))
    one = readings.TokenizerReader("tokenizer", folder=folder, memo=memo)
    for subject in ("doctor", "nurse", "male doctor", "female doctor", "male nurse"):
        one.readings([f"a photo of a {subject}"])
    assert len(calls) == 1  # read once, at the first call; its own five writes are not read back

    other = readings.TokenizerReader("tokenizer", folder=folder, memo=memo)
    other.readings(["a photo of a pilot"])
    one.readings(["a photo of a female nurse"])  # the file changed: read back once
    assert len(calls) == 3
    later = readings.TokenizerReader("tokenizer", folder=folder, memo=memo)
    known = later.readings(["a photo of a pilot", "a photo of a female nurse",
                            "a photo of a doctor"])
    assert later._tokenizer is None  # every text from the memo, the tokenizer never loaded
    assert known["a photo of a pilot"].unknown == ("pilot",)
