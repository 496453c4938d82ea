"""The structured ``Value`` kinds of ``suite.language`` (``names``, ``template``,
``per_choice``): the loader reads each key through the one its section declares, so changing
the declaration changes what the loader accepts, and the schema says the same rule."""

from __future__ import annotations

import pytest

from pytest_t2ibias.errors import SuiteError
from pytest_t2ibias.suite import language, load_suite
from pytest_t2ibias.suite.language import AXIS, FILTER, PART, Key, Value

SUITE = """\
prompt: "a photo of a {subject}"
subjects: [doctor, nurse]
filter:
  question: "Is there a person?"
  choices: [yes, no]
  keep: yes
  statements: {yes: "a person"}
axes:
  age:
    question: "How old?"
    choices: [young, middle-aged, old]
"""


def load(tmp_path, text: str = SUITE):
    path = tmp_path / "s.t2i.yaml"
    path.write_text(text, encoding="utf-8")
    return load_suite(path)


def redeclared(section: language.Section, name: str, value: Value) -> Key:
    key = section.keys[name]
    return Key(key.type, key.meaning, key.example, default=key.default,
               required=key.required, value=value)


def test_a_partial_mapping_is_refused_where_the_spec_says_complete(tmp_path):
    with pytest.raises(SuiteError, match=r"filter: statements must give one for every choice; "
                                         r"missing \['no'\]"):
        load(tmp_path)


def test_the_loader_follows_the_declared_completeness(tmp_path, monkeypatch):
    monkeypatch.setitem(FILTER.keys, "statements",  # type: ignore[attr-defined]
                        redeclared(FILTER, "statements", Value("per_choice")))
    assert load(tmp_path).filter.statements == {"yes": "a person"}


def test_the_loader_follows_the_declared_number_of_choices(tmp_path, monkeypatch):
    fixed = SUITE.replace('  statements: {yes: "a person"}\n', "")
    assert load(tmp_path, fixed).axes["age"].choices == ("young", "middle-aged", "old")
    monkeypatch.setitem(AXIS.keys, "choices",  # type: ignore[attr-defined]
                        redeclared(AXIS, "choices", Value("names", minimum=2, maximum=2)))
    with pytest.raises(SuiteError, match="axis 'age': 3 choices, more than the 2 an axis may"):
        load(tmp_path, fixed)


def test_the_loader_follows_the_declared_item_kind(tmp_path, monkeypatch):
    phrased = SUITE.replace('  statements: {yes: "a person"}\n', "").replace(
        '    choices: [young, middle-aged, old]\n',
        '    choices: [young, old]\n    statements: {young: "a young {subject}", old: "x"}\n')
    assert load(tmp_path, phrased).axes["age"].statements["old"] == "x"
    monkeypatch.setitem(AXIS.keys, "statements",  # type: ignore[attr-defined]
                        redeclared(AXIS, "statements", Value("per_choice", item="template",
                                                             complete=True)))
    with pytest.raises(SuiteError, match=r"statements\.old must contain \{subject\}"):
        load(tmp_path, phrased)


@pytest.mark.parametrize(("value", "says"), [
    ("a {subject}", None),
    ("{{literal}} {subject}", None),
    ("a person", "must contain {subject}"),
    ("a {subject!r}", "may use only the placeholder {subject}"),
    ("a {subject", "has unbalanced braces"),
    (3, "must be a non-empty string, got the number 3"),
])
def test_a_template_value_says_what_is_wrong(value, says):
    problem = Value("template").problem(value)
    assert problem is None if says is None else says in problem


def test_each_structured_value_writes_its_schema():
    assert Value("names", minimum=2, maximum=64).schema() == {
        **language.NAMES, "minItems": 2, "maxItems": 64}
    assert Value("template").schema() == language.TEMPLATE
    assert PART.keys["statements"].json_schema()["required"] == ["yes", "no"]
    counterfactuals = AXIS.keys["counterfactuals"].json_schema()["anyOf"]
    assert counterfactuals == [{"const": "llm"},
                               {"type": "object", "additionalProperties": language.TEMPLATE}]


def test_a_suite_path_resolves_beside_the_suite_and_must_exist_where_declared(tmp_path):
    (tmp_path / "real").mkdir()
    base = SUITE.replace('  statements: {yes: "a person"}\n', "")
    found = base + "    ideal: {reference: real}\n    judge_calibration: {folder: labels}\n"
    axis = load(tmp_path, found).axes["age"]
    assert axis.ideal == {"reference": tmp_path / "real"}
    assert axis.calibration == str(tmp_path / "labels")  # declared without exists: may be absent
    with pytest.raises(SuiteError, match="ideal.reference 'nowhere' does not exist"):
        load(tmp_path, found.replace("reference: real", "reference: nowhere"))
    assert Value("suite_path").problem("  ") == "must be a non-empty string"
