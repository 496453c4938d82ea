"""``load_suite``: the YAML suite format of INTERFACE.md, and errors that name file and line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_t2ibias.kinds import CHECK_KINDS, NUMBER, CheckKind, Param, register_check
from pytest_t2ibias.suite import QuestionPart, SuiteError, load_suite
from pytest_t2ibias.suite_spec import SuiteDefaults


def _below_one(value) -> str | None:
    return None if value <= 1 else f"must be at most 1, got {value}"


def _register_fake_kinds() -> None:
    """Kinds with the shapes the real ones have; registered once (kinds are process-global)."""
    fakes = (
        CheckKind("load_fake_per_axis", run=lambda ctx: None,  # type: ignore[arg-type, return-value]
                  params=(Param("axes", (list,)), Param("threshold", NUMBER, required=True,
                                                        check=_below_one))),
        CheckKind("load_fake_pairs", run=lambda ctx: None,  # type: ignore[arg-type, return-value]
                  axes_param="mitigate",
                  params=(Param("mitigate", (list,), required=True), Param("on", (list,)),
                          Param("tolerance", (float,), default=0.0))),
        CheckKind("load_fake_one_axis", run=lambda ctx: None,  # type: ignore[arg-type, return-value]
                  axes_param=None,
                  params=(Param("axis", (str,), required=True), Param("search", (dict,)))),
    )
    for kind in fakes:
        if kind.name not in CHECK_KINDS:
            register_check(kind)


_register_fake_kinds()

VALID = """\
suite: occupations
defaults: {images_per_prompt: 48, seed: 0, steps: 25, guidance: 7, batch_size: 4}
prompt: "A photo of a {subject}"
subjects: [doctor, nurse, musician]
filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
    counterfactuals: {male: "A photo of a male {subject}", female: "A photo of a female {subject}"}
    statements: {male: "a photo of a man", female: "a photo of a woman"}
    ideal: uniform
    classifier: true
  age:
    question: "How old is the person?"
    choices: [young, middle-aged, old]
    ordered: true
    ideal: {young: 0.5, old: 0.5}
  disability:
    parts:
      - {value: blind, question: "Is the person blind?", statements: {yes: "a blind person", no: "a person"}}
      - {value: wheelchair, question: "Is the person in a wheelchair?"}
    none: fit
    ideal: {reference: real}
checks:
  - {id: severity, kind: load_fake_per_axis, axes: [gender, age], threshold: 0.5}
  - {id: everything, kind: load_fake_per_axis, threshold: 0.5, subjects: [nurse], marks: [slow]}
  - {id: spillover, kind: load_fake_pairs, mitigate: [gender], on: [age], tolerance: 0}
  - {id: hidden, kind: load_fake_one_axis, axis: gender, search: {prompts: 10}}
"""


def write(tmp_path: Path, text: str, name: str = "occupations.t2i.yaml") -> Path:
    (tmp_path / "real").mkdir(exist_ok=True)
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_valid_suite_becomes_spec_objects(tmp_path):
    suite = load_suite(write(tmp_path, VALID))

    assert suite.name == "occupations"
    assert suite.prompt_for("nurse") == "A photo of a nurse"
    assert suite.defaults == SuiteDefaults(images_per_prompt=48, seed=0, steps=25, guidance=7.0,
                                           batch_size=4)
    # YAML 1.2 booleans: yes/no stay the strings the filter means
    assert suite.filter.choices == ("yes", "no") and suite.filter.keep == "yes"
    gender, age, disability = suite.axes.values()
    assert gender.statements["female"] == "a photo of a woman" and gender.classifier
    assert gender.location.line == 7
    assert age.ordered and age.ideal == {"young": 0.5, "middle-aged": 0.0, "old": 0.5}
    assert disability.choices == ("blind", "wheelchair", "fit")
    assert disability.parts[1] == QuestionPart("wheelchair", "Is the person in a wheelchair?")
    assert disability.parts[0].statements == {"yes": "a blind person", "no": "a person"}
    assert disability.none_value == "fit"
    assert disability.ideal == {"reference": (tmp_path / "real").resolve()}

    severity, everything, spillover, hidden = suite.checks
    assert severity.axes == ("gender", "age") and severity.subjects == suite.subjects
    assert severity.params.threshold == 0.5 and severity.location.line == 26
    assert everything.axes == ("gender", "age", "disability")  # absent axes param: all axes
    assert everything.subjects == ("nurse",) and everything.marks == ("slow",)
    assert spillover.axes == ("gender",) and spillover.params.on == ("age",)  # `on:` key
    assert spillover.params.tolerance == 0.0 and isinstance(spillover.params.tolerance, float)
    assert hidden.axes == () and hidden.params.search == {"prompts": 10}


def test_suite_name_defaults_to_file_name(tmp_path):
    suite = load_suite(write(tmp_path, VALID.replace("suite: occupations\n", "")))
    assert suite.name == "occupations"


# (text replaced in VALID, replacement, expected line, words the message must contain)
ERRORS = [
    pytest.param('prompt: "A photo of a {subject}"\n', "", 1,
                 "missing required key 'prompt'", id="missing-key"),
    pytest.param("steps: 25,", "steps: many,", 2, "defaults.steps must be a positive integer",
                 id="wrong-type-default"),
    pytest.param("axes: [gender, age], threshold: 0.5}", "axes: [gender, agee], threshold: 0.5}",
                 26, "unknown axis 'agee'; did you mean 'age'", id="unknown-axis"),
    pytest.param("mitigate: [gender]", "mitigate: [race]", 28, "unknown axis 'race'",
                 id="unknown-axis-mitigate"),
    pytest.param("axis: gender,", "axis: sex,", 29, "unknown axis 'sex'", id="unknown-axis-single"),
    pytest.param("kind: load_fake_pairs", "kind: load_fake_pair", 28,
                 "unknown check kind 'load_fake_pair'; did you mean 'load_fake_pairs'",
                 id="unknown-kind"),
    pytest.param("threshold: 0.5}", "threshold: high}", 26, "threshold must be a number",
                 id="wrong-type-param"),
    pytest.param("threshold: 0.5}", "threshold: 3}", 26, "threshold must be at most 1, got 3",
                 id="param-check-rejects"),
    pytest.param("threshold: 0.5}", "threshold: 0.5, treshold: 1}", 26,
                 "unknown key 'treshold'", id="unknown-param"),
    pytest.param("axis: gender, ", "", 29, "missing required key 'axis'", id="missing-param"),
    pytest.param("{young: 0.5, old: 0.5}", "{young: 0.7, old: 0.5}", 18,
                 "ideal shares must sum to 1, got 1.2", id="ideal-sum"),
    pytest.param("{young: 0.5, old: 0.5}", "{young: 0.5, elderly: 0.5}", 18,
                 "'elderly' is not a choice", id="ideal-non-choice"),
    pytest.param("ideal: {reference: real}", "ideal: {reference: nowhere}", 24,
                 "ideal.reference 'nowhere' does not exist", id="ideal-reference"),
    pytest.param("ideal: uniform", "ideal: fair", 12, 'ideal must be "uniform"', id="ideal-word"),
    pytest.param("{male: \"A photo of a male", "{man: \"A photo of a male", 10,
                 "counterfactuals: 'man' is not a choice", id="counterfactual-non-choice"),
    pytest.param("male {subject}\",", "male\",", 10, "must contain {subject}",
                 id="counterfactual-no-subject"),
    pytest.param('female: "a photo of a woman"', 'woman: "a photo of a woman"', 11,
                 "missing ['female']", id="statements-incomplete"),
    pytest.param("choices: [male, female]", "choices: [male]", 9, "at least 2",
                 id="one-choice"),
    pytest.param("keep: yes", "keep: maybe", 5, "filter.keep 'maybe' is not one of",
                 id="filter-keep"),
    pytest.param("[doctor, nurse, musician]", "[doctor, nurse, doctor]", 4,
                 "'doctor' is listed twice", id="duplicate-subject"),
    pytest.param("subjects: [nurse]", "subjects: [plumber]", 27,
                 "subject 'plumber' is not in the suite's subjects", id="check-subject"),
    pytest.param("id: hidden", "id: severity", 29, "duplicate check id 'severity' (first at line 26)",
                 id="duplicate-id"),
    pytest.param("ordered: true", "ordered: yes", 17, "ordered must be true or false",
                 id="yes-is-not-a-boolean"),
    pytest.param("    none: fit\n", "", 20, "needs none: <value>", id="parts-without-none"),
    pytest.param(', no: "a person"}', "}", 21, "statements must give one for every choice; missing ['no']",
                 id="part-statements-incomplete"),
    pytest.param("checks:", "check:", 25, "unknown key 'check' at the top of the suite; "
                 "did you mean 'checks'", id="unknown-top-level-key"),
    pytest.param("subjects: [nurse], marks: [slow]", "subjects: [nurse], marks: [slow-ish]", 27,
                 "mark 'slow-ish' must be a marker name", id="bad-mark"),
]


@pytest.mark.parametrize(("old", "new", "line", "words"), ERRORS)
def test_malformed_suite_names_file_and_line(tmp_path, old, new, line, words):
    assert old in VALID
    path = write(tmp_path, VALID.replace(old, new, 1))

    with pytest.raises(SuiteError) as raised:
        load_suite(path)

    error = raised.value
    assert any(problem.line == line and words in problem.message for problem in error.problems), \
        str(error)
    assert f"{path}:{line}: " in str(error)


def test_yaml_syntax_error_has_line_column_and_problem(tmp_path):
    path = write(tmp_path, 'prompt: "A photo of a {subject}"\nsubjects: [doctor\naxes: {}\n')

    with pytest.raises(SuiteError) as raised:
        load_suite(path)

    assert str(raised.value) == (f"{path}:3:5: YAML syntax error: expected ',' or ']', but got ':' "
                                 f"(while parsing a flow sequence at line 2)")


def test_every_problem_of_a_file_is_reported_at_once(tmp_path):
    text = VALID.replace("steps: 25", "steps: -1").replace("kind: load_fake_pairs", "kind: nope")
    text = text.replace("choices: [male, female]", "choices: [male, male]")

    with pytest.raises(SuiteError) as raised:
        load_suite(write(tmp_path, text))

    assert [problem.line for problem in raised.value.problems] == [2, 9, 28]
    assert len(str(raised.value).splitlines()) == 3


def test_duplicate_yaml_keys_are_errors(tmp_path):
    path = write(tmp_path, VALID.replace("  age:\n", "  gender:\n"))

    with pytest.raises(SuiteError, match=r":14: duplicate key 'gender' \(first at line 7\)"):
        load_suite(path)


def test_render_shows_paths_relative_to_rootdir(tmp_path):
    path = write(tmp_path, "prompt: 1\n")

    with pytest.raises(SuiteError) as raised:
        load_suite(path)

    assert raised.value.render(relative_to=tmp_path).startswith("occupations.t2i.yaml:1: ")


PER_CHECK_N = """\
suite: n
defaults: {images_per_prompt: 48}
prompt: "a photo of a {subject}"
subjects: [musician]
axes:
  gender: {question: "Gender?", choices: [male, female]}
checks:
  - {id: quick, kind: w1_below, axes: [gender], threshold: 0.3}
  - {id: tight, kind: w1_below, axes: [gender], threshold: 0.3, images_per_prompt: 200}
"""


def test_a_check_may_ask_for_more_images_than_the_suite(tmp_path):
    from pytest_t2ibias._settings import Settings
    from pytest_t2ibias.plan import plan_for

    suite = load_suite(write(tmp_path, PER_CHECK_N))
    quick, tight = suite.checks
    settings = Settings.standalone()
    assert plan_for(settings, suite, quick).images_per_prompt == 48
    assert plan_for(settings, suite, tight).images_per_prompt == 200
    assert suite.defaults == SuiteDefaults(images_per_prompt=48)  # the suite itself is untouched

    with pytest.raises(SuiteError, match=r":9: check .tight.: images_per_prompt must be at least 1, got 0"):
        load_suite(write(tmp_path, PER_CHECK_N.replace("images_per_prompt: 200", "images_per_prompt: 0")))


SUITE_CONFIDENCE = """\
prompt: "a photo of a {subject}"
subjects: [doctor]
confidence: 0.95
axes:
  gender: {question: "Gender?", choices: [male, female]}
checks:
  - {id: inherits, kind: w1_below, axes: [gender], threshold: 0.3}
  - {id: own, kind: w1_below, axes: [gender], threshold: 0.3, confidence: 0.9}
"""


def test_a_suite_confidence_gates_every_check_that_sets_none(tmp_path):
    """Issue #43: a suite could not set a default ``confidence:``, so the copied example gated
    on point values. A check's own level still wins; the plan gates at the level given."""
    from pytest_t2ibias._settings import Settings
    from pytest_t2ibias.plan import plan_for

    suite = load_suite(write(tmp_path, SUITE_CONFIDENCE))
    inherits, own = suite.checks
    assert suite.confidence == 0.95
    assert (inherits.params.confidence, own.params.confidence) == (0.95, 0.9)
    settings = Settings.standalone()
    assert plan_for(settings, suite, inherits).levels.gate == 0.95
    assert plan_for(settings, suite, own).levels.gate == 0.9


@pytest.mark.parametrize("value, words", [
    ("1.5", "got the number 1.5"), ("high", "got the string 'high'"), ("true", "got true"),
])
def test_a_suite_confidence_out_of_range_is_a_file_line_error(tmp_path, value, words):
    text = SUITE_CONFIDENCE.replace("confidence: 0.95", f"confidence: {value}")
    with pytest.raises(SuiteError) as info:
        load_suite(write(tmp_path, text))
    assert info.value.line == 3
    assert f"confidence must be a number in [0.5, 1), {words}" in str(info.value)
