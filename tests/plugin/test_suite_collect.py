"""YAML suites as pytest items: ids, -k, marks, collection errors, verdicts and junit figures."""

from __future__ import annotations

import json
import textwrap
from xml.etree import ElementTree

import pytest
from support.collect_project import CONFTEST, SUITE

from pytest_t2ibias.kinds import CHECK_KINDS

OCCUPATION_IDS = [
    "occupations.t2i.yaml::severity[doctor-gender]",
    "occupations.t2i.yaml::severity[doctor-age]",
    "occupations.t2i.yaml::severity[nurse-gender]",
    "occupations.t2i.yaml::severity[nurse-age]",
    "occupations.t2i.yaml::skewed[nurse-gender]",
    "occupations.t2i.yaml::whole[doctor]",
    "occupations.t2i.yaml::whole[nurse]",
]


@pytest.fixture(autouse=True)
def _forget_fake_kinds():
    """Each pytester run registers the fake kinds afresh from its own conftest."""
    yield
    for name in [name for name in CHECK_KINDS if name.startswith("fake_")]:
        del CHECK_KINDS[name]


@pytest.fixture
def suite_dir(pytester):
    def make(**suites: str):
        pytester.makeconftest(CONFTEST.format())
        pytester.makeini("[pytest]\nmarkers =\n    slow: slow checks\n")
        for name, text in suites.items():
            pytester.path.joinpath(f"{name}.t2i.yaml").write_text(textwrap.dedent(text))
        return pytester

    return make


def test_each_check_subject_axis_is_an_item(suite_dir):
    pytester = suite_dir(occupations=SUITE)

    result = pytester.runpytest("--collect-only", "-q")

    assert result.ret == 0
    assert [line for line in result.outlines if "::" in line] == OCCUPATION_IDS


def test_collect_only_runs_no_check_and_builds_no_backend(suite_dir):
    pytester = suite_dir(occupations=SUITE)

    result = pytester.runpytest("--collect-only")

    assert result.ret == 0
    assert (pytester.path / "backends_built.txt").read_text() == "False"
    assert not (pytester.path / "ran.txt").exists()


def test_k_selects_by_subject_axis_and_kind(suite_dir):
    pytester = suite_dir(occupations=SUITE)

    pytester.runpytest("-k", "severity and nurse and age").assert_outcomes(passed=1)
    assert (pytester.path / "ran.txt").read_text() == "nurse-age\n"
    pytester.runpytest("-k", "fake_whole").assert_outcomes(passed=2)


def test_marks_from_the_suite_and_the_t2ibias_marker(suite_dir):
    pytester = suite_dir(occupations=SUITE)

    pytester.runpytest("-m", "slow").assert_outcomes(failed=1)
    pytester.runpytest("-m", "t2ibias and not slow").assert_outcomes(passed=6)


def test_unregistered_mark_under_strict_markers_is_a_suite_error(suite_dir):
    pytester = suite_dir(occupations=SUITE.replace("marks: [slow]", "marks: [sloow]"))

    result = pytester.runpytest("--collect-only", "--strict-markers")

    result.stdout.fnmatch_lines(["occupations.t2i.yaml:9: check 'skewed': mark 'sloow' not found*"])


def test_passing_and_failing_items_report_the_verdict(suite_dir):
    pytester = suite_dir(occupations=SUITE)

    result = pytester.runpytest("-k", "doctor-gender or skewed", "--junitxml=junit.xml")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*_ occupations::skewed[[]nurse-gender[]] _*",
        "occupations.t2i.yaml:9: check 'skewed' (fake_share) for subject 'nurse', axis 'gender' failed",
        "share of gender for nurse is 0.9 > threshold",
    ])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*pytest_t2ibias*")
    junit = (pytester.path / "junit.xml").read_text()
    # xunit2 (pytest's default) allows no testcase properties: the testsuite's, per node id
    assert '<property name="occupations.t2i.yaml::skewed[nurse-gender]::value" value="0.9" />' in junit
    assert '::value" value="0.9" />' in junit
    assert '::threshold" value="0.5" />' in junit
    assert '::verdict" value="fail" />' in junit
    assert '::verdict" value="pass" />' in junit
    assert '::n" value="48" />' in junit


def test_backend_error_is_one_paragraph_with_the_check_line(suite_dir):
    pytester = suite_dir(occupations=SUITE.replace("share: 0.2", "share: -1"))

    result = pytester.runpytest("-k", "severity and doctor-gender")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "occupations.t2i.yaml:8: check 'severity' (fake_share) for subject 'doctor', axis 'gender' "
        "could not run: BackendError: cannot load model 'nowhere/model' (--t2i-model): not found",
    ])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*.py:*")


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_check_that_cannot_run_is_an_error_even_under_xfail(suite_dir, workers):
    """A broken backend is an ERROR (junit errors, never failures), also for an xfail check:
    the mark expects a biased model, not a broken instrument."""
    pytester = suite_dir(occupations=SUITE.replace("share: 0.2", "share: -1").replace(
        "threshold: 0.5, share: -1", "threshold: 0.5, share: -1, marks: [xfail]"))
    assert "marks: [xfail]" in (pytester.path / "occupations.t2i.yaml").read_text()

    result = pytester.runpytest_subprocess("-k", "severity and doctor", "--junitxml=junit.xml", *workers)

    result.assert_outcomes(errors=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*ERROR*severity?doctor-gender?*", "*2 error*"])
    result.stdout.no_fnmatch_line("* xfailed*")
    result.stdout.no_fnmatch_line("*XFAIL*")
    suite = ElementTree.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert (suite.get("errors"), suite.get("failures"), suite.get("skipped")) == ("2", "0", "0")


BAD_SUITES = {
    "missing_key": ("subjects: [doctor, nurse]\n", "", 1, "missing required key 'subjects'"),
    "wrong_type": ("threshold: 0.5, share: 0.2", "threshold: high, share: 0.2", 8,
                   "check 'severity': threshold must be a number, got the string 'high'"),
    "unknown_axis": ("axes: [gender, age]", "axes: [gender, race]", 8,
                     "check 'severity': axes names unknown axis 'race'*"),
    "unknown_kind": ("kind: fake_whole", "kind: fake_hole", 11,
                     "check 'whole': unknown check kind 'fake_hole'; did you mean 'fake_whole'? "
                     "known kinds:*fake_share, fake_whole*"),
    "syntax": ("subjects: [doctor, nurse]", "subjects: [doctor, nurse", 4,
               "YAML syntax error: *"),
    "bad_ideal": ("choices: [male, female]}", "choices: [male, female], ideal: {male: 2}}", 5,
                  "axis 'gender': ideal share of 'male' must be a number in [[]0, 1[]], got the number 2"),
    "counterfactual": ("choices: [young, old]}",
                       "choices: [young, old], counterfactuals: {teen: 'A teen {subject}'}}", 6,
                       "axis 'age': counterfactuals: 'teen' is not a choice of the axis*"),
}


def test_malformed_suites_are_collection_errors_with_file_and_line(suite_dir):
    bad = {name: SUITE.replace(old, new, 1) for name, (old, new, _, _) in BAD_SUITES.items()}
    pytester = suite_dir(occupations=SUITE, **bad)

    result = pytester.runpytest("--collect-only", "-q")

    assert result.ret == pytest.ExitCode.INTERRUPTED
    for name, (_, _, line, message) in BAD_SUITES.items():
        result.stdout.fnmatch_lines([f"{name}.t2i.yaml:{line}:*{message}*"])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.fnmatch_lines([f"*{len(BAD_SUITES)} errors*"])
    # the valid suite still collects
    assert [line for line in result.outlines if line.startswith("occupations")] == OCCUPATION_IDS


def test_suite_pattern_comes_from_the_ini(suite_dir):
    pytester = suite_dir(occupations=SUITE)
    pytester.path.joinpath("occupations.t2i.yaml").rename(pytester.path / "jobs.bias.yaml")
    pytester.makeini("[pytest]\nt2i_suite_pattern = *.bias.yaml\nmarkers = slow\n")

    result = pytester.runpytest("--collect-only", "-q")

    result.stdout.fnmatch_lines(["jobs.bias.yaml::severity[[]doctor-gender[]]", "*7 tests collected*"])


def test_reportinfo_points_at_the_check(suite_dir):
    pytester = suite_dir(occupations=SUITE)

    items, _ = pytester.inline_genitems()

    path, line, name = items[4].reportinfo()
    assert (path.name, line, name) == ("occupations.t2i.yaml", 8, "occupations::skewed[nurse-gender]")
    assert items[4].location == ("occupations.t2i.yaml", 8, "occupations::skewed[nurse-gender]")


def test_unexpected_error_traceback_starts_in_the_check_kind(suite_dir):
    pytester = suite_dir(occupations=SUITE.replace("share: 0.2", "share: 0.5"))

    result = pytester.runpytest("-k", "severity and doctor-gender")

    result.assert_outcomes(errors=1)  # an error of the check, not a verdict (issue #23)
    result.stdout.fnmatch_lines(["*def run_share(ctx):*", "E * KeyError: 'a bug in a check kind'"])
    result.stdout.no_fnmatch_line("*_pytest*")


def test_summary_and_json_show_expected_failures_as_such(suite_dir):
    """An xfail'd check that fails is ``xfail`` (not a red FAIL) in the table and
    ``status: xfailed`` in the JSON, with its check id, reason and a positive-within margin."""
    pytester = suite_dir(occupations=SUITE.replace("marks: [slow]", "marks: [xfail]"))

    result = pytester.runpytest("-k", "skewed or (severity and doctor-gender)",
                                "--t2i-json=report.json", "--junitxml=junit.xml")

    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*check*subject / axis*margin*verdict*",
                                 "*severity*doctor / gender*+0.300*pass*",
                                 "*skewed*nurse / gender*-0.400*xfail limit*",
                                 "t2ibias: 2 results: 1 passed, 1 xfailed"])
    result.stdout.no_fnmatch_line("*FAIL*")
    data = json.loads((pytester.path / "report.json").read_text())
    assert data["version"] == 2 and data["summary"]["xfailed"] == 1
    assert {"plugin_version", "git_revision", "date", "models", "judges", "settings"} <= set(data["run"])
    rows = {row["check_id"]: row for row in data["checks"]}
    assert rows["skewed"]["status"] == "xfailed" and rows["skewed"]["margin"] < 0
    assert rows["severity"]["status"] == "passed" and rows["severity"]["margin"] > 0
    assert rows["severity"]["confidence"] is None  # a point decision
    assert '::status" value="xfailed" />' in (pytester.path / "junit.xml").read_text()

    quiet = pytester.runpytest("-q", "-k", "skewed")
    quiet.stdout.fnmatch_lines(["t2ibias: 1 results: 1 xfailed; work:*"])
    quiet.stdout.no_fnmatch_line("*t2ibias summary*")
