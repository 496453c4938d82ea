"""Every value of a suite goes through one guarded path (issue #35): a YAML constructor that
fails, an integer too large to be a number, a mark pytest refuses or a name holding a line
break is a ``SuiteError`` at the value's file:line, never a traceback from the loader."""

from __future__ import annotations

import pytest

from pytest_t2ibias.errors import SuiteError
from pytest_t2ibias.suite import load_suite
from pytest_t2ibias.suite._yaml import MAX_INTEGER

BASE = """\
prompt: "a photo of a {subject}"
subjects: [doctor, nurse]
axes:
  gender: {question: "What is the gender of the person?", choices: [male, female]}
checks:
  - {id: g, kind: w1_below, axes: [gender], threshold: 0.3}
"""
CHECK_LINE = 6
HUGE = "9" * 400  # past 1e308: float() of it raised OverflowError


def error_of(tmp_path, text: str) -> SuiteError:
    path = tmp_path / "hostile.t2i.yaml"
    path.write_text(text)
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert str(path) in str(info.value)
    return info.value


@pytest.mark.parametrize("defaults, says", [
    ("{seed: 2001-02-30}", "'2001-02-30' is not a valid YAML timestamp (day is out of range "
                           "for month); write a valid timestamp, or quote the value"),
    ('{seed: !!int ""}', "'' is not a valid YAML int; write a valid int"),
    ("{seed: !!bool maybe}", "'maybe' is not a valid YAML bool; write a valid bool"),
    ("{guidance: !!float abc}", "'abc' is not a valid YAML float"),
    ("{seed: " + "9" * 4301 + "}", "an integer of 4301 digits is too large: integers in a "
                                   "suite lie within +-9,223,372,036,854,775,807"),
    ("{guidance: " + HUGE + "}", "an integer of 400 digits is too large"),
    ("{seed: 18446744073709551616}", "the integer '18446744073709551616' is too large"),
    ("{seed: !!timestamp tomorrow}", "'tomorrow' is not a valid YAML timestamp"),
], ids=["impossible-date", "empty-int", "bool-maybe", "float-abc", "4301-digits", "guidance",
        "2^64", "timestamp-word"])
def test_a_scalar_its_constructor_refuses_is_a_file_line_error(tmp_path, defaults, says):
    error = error_of(tmp_path, f"defaults: {defaults}\n" + BASE)
    assert error.line == 1
    assert says in str(error)


@pytest.mark.parametrize("check", [
    f"{{id: g, kind: w1_below, axes: [gender], threshold: {HUGE}}}",
    f"{{id: g, kind: w1_below, axes: [gender], threshold: 0.3, confidence: {HUGE}}}",
    f"{{id: g, kind: w1_below, axes: [gender], threshold: 0.3, images_per_prompt: auto, "
    f"margin: {HUGE}}}",
    f"{{id: g, kind: max_skew_below, axes: [gender], threshold: 0.3, target: {{male: {HUGE}, "
    f"female: 1}}}}",  # was accepted silently
], ids=["threshold", "confidence", "margin", "max_skew_target"])
def test_an_integer_past_a_float_is_refused_in_every_number_field(tmp_path, check):
    error = error_of(tmp_path, BASE.replace(BASE.splitlines()[-1], f"  - {check}"))
    assert error.line == CHECK_LINE
    assert "an integer of 400 digits is too large" in str(error)


def test_an_ideal_share_past_a_float_is_refused(tmp_path):
    text = BASE.replace("choices: [male, female]}",
                        f"choices: [male, female], ideal: {{male: {HUGE}, female: 0}}}}")
    assert "too large" in str(error_of(tmp_path, text))


def test_the_largest_integer_still_loads(tmp_path):
    path = tmp_path / "edge.t2i.yaml"
    path.write_text(f"defaults: {{seed: {MAX_INTEGER}}}\n" + BASE)
    assert load_suite(path).defaults.seed == MAX_INTEGER


@pytest.mark.parametrize("mark", ["__class__", "_private", "__getattr__"])
def test_a_mark_pytest_refuses_is_a_file_line_error(tmp_path, mark):
    error = error_of(tmp_path, BASE.replace("threshold: 0.3}", f"threshold: 0.3, marks: [{mark}]}}"))
    assert error.line == CHECK_LINE
    assert f"mark {mark!r} must be a marker name (a Python identifier not starting with _)" \
        in str(error)


@pytest.mark.parametrize("replace, line, says", [
    (("[doctor, nurse]", '["doctor\\nPASSED integ.t2i.yaml::fake - all good", nurse]'), 2,
     "subjects: the string 'doctor\\nPASSED integ.t2i.yaml::fake - all good' holds the line "
     "break or tab \\n; a name is one line of text"),
    (("[male, female]", '[male, "fe\\rmale"]'), 4, "holds the line break or tab \\r"),
    (("[doctor, nurse]", '["doc\\ttor", nurse]'), 2, "holds the line break or tab \\t"),
    (("[doctor, nurse]", '["doc\\u2028tor", nurse]'), 2, "holds the line break or tab \\u2028"),
    (("id: g,", 'id: "g\\n",'), 6, "check id must be a name (letters, digits, _ . -)"),
    (("prompt:", 'suite: "x\\ny"\nprompt:'), 1, "suite (the suite's name): the string 'x\\ny' "
                                                 "holds the line break"),
], ids=["subject", "choice", "subject-tab", "subject-u2028", "check-id", "suite-name"])
def test_a_name_holding_a_line_break_is_refused(tmp_path, replace, line, says):
    """A subject ``"doctor\\nPASSED ..."`` printed a forged result line in the failure message
    and the JUnit body."""
    error = error_of(tmp_path, BASE.replace(*replace))
    assert error.line == line
    assert says in str(error)


def test_a_line_break_in_a_question_is_still_text(tmp_path):
    """Folded YAML ends a question with a line break: questions are text, not names."""
    path = tmp_path / "folded.t2i.yaml"
    path.write_text(BASE.replace('{question: "What is the gender of the person?", '
                                 'choices: [male, female]}',
                                 "\n    question: >\n      What is the gender\n      of the "
                                 "person?\n    choices: [male, female]"))
    assert load_suite(path).axes["gender"].question == "What is the gender of the person?\n"


AXIS = '{question: "What is the gender of the person?", choices: [male, female]}'
LONG = "a" * 5000  # past every file system's NAME_MAX and PATH_MAX


@pytest.mark.parametrize("replace, line, says", [
    ((AXIS, AXIS[:-1] + ', ideal: {reference: "x\\0y"}}'), 4,
     "axis 'gender': ideal.reference the string 'x\\x00y' is not a usable path (it holds a "
     "NUL character)"),
    ((AXIS, AXIS[:-1] + ', judge_calibration: {folder: "x\\0y"}}'), 4,
     "axis 'gender': judge_calibration.folder the string 'x\\x00y' is not a usable path"),
    ((AXIS, AXIS[:-1] + f", ideal: {{reference: {LONG}}}}}"), 4,
     "axis 'gender': ideal.reference a string of 5000 characters is not a usable path "
     "(File name too long)"),
    (("checks:", f"models: {{candidate: ./{LONG}}}\nchecks:"), 5,
     "models.candidate a string of 5002 characters is not a usable path (File name too long)"),
    (("checks:", f"models: {{candidate: {LONG}}}\nchecks:"), 5,
     "models.candidate a string of 5000 characters is not a usable path"),
    (("checks:", f"models: {{baseline: {{model: ./{LONG}}}}}\nchecks:"), 5,
     "models.baseline.model a string of 5002 characters is not a usable path"),
], ids=["reference-nul", "calibration-nul", "reference-long", "candidate-long-path",
        "candidate-long-id", "baseline-long-entry"])
def test_a_path_no_file_system_can_hold_is_a_file_line_error(tmp_path, replace, line, says):
    """Issue #47 item 10: these raised ValueError (embedded null byte) or OSError (File name
    too long) out of the loader instead of a ``SuiteError`` at the value's line."""
    error = error_of(tmp_path, BASE.replace(*replace))
    assert error.line == line
    assert says in str(error)
