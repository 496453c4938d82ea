"""pytest habits (issue #43): the ``t2ibias`` marker on every test that uses a t2ibias
fixture, ``--t2i-skip``/``--t2i-only`` as pytest-benchmark's, no generic marker registered in
a user's project, options in groups in ``--help``, and JUnit XML valid under xunit2."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import collect_project as collect

from pytest_t2ibias._pytest_options import OPTION_GROUPS
from pytest_t2ibias._settings import OPTIONS
from pytest_t2ibias.kinds import CHECK_KINDS

EXAMPLE = Path(__file__).parents[2] / "example_suites" / "test_toy_occupations.py"
XUNIT2_SCHEMA = Path(__file__).parents[1] / "data" / "junit-xunit2.xsd"


def test_not_t2ibias_deselects_the_python_fairness_tests(pytester):
    shutil.copy(EXAMPLE, pytester.path / EXAMPLE.name)
    deselected = pytester.runpytest("--collect-only", "-q", "-m", "not t2ibias")
    deselected.stdout.fnmatch_lines(["no tests collected (5 deselected)*"])
    selected = pytester.runpytest("--collect-only", "-q", "-m", "t2ibias")
    selected.stdout.fnmatch_lines(["5 tests collected*"])


MIXED = """
import pytest

@pytest.fixture
def my_images(t2i_generator):
    return t2i_generator

def test_plain():
    pass

def test_check(t2ibias):
    pass

def test_through_my_fixture(my_images):
    pass

@pytest.fixture
def vqa():
    return "my project's own vqa fixture, not the plugin's"

def test_own_vqa(vqa):
    pass
"""


def test_t2i_skip_and_only_pick_the_bias_checks(pytester):
    pytester.makepyfile(test_mixed=MIXED)
    marked = pytester.runpytest("-m", "t2ibias", "-v")
    marked.assert_outcomes(passed=2, deselected=2)
    marked.stdout.fnmatch_lines(["*test_check PASSED*", "*test_through_my_fixture PASSED*"])

    skipped = pytester.runpytest("--t2i-skip", "-rs")
    skipped.assert_outcomes(passed=2, skipped=2)
    skipped.stdout.fnmatch_lines(["*a bias check, skipped by --t2i-skip*"])

    only = pytester.runpytest("--t2i-only", "-rs")
    only.assert_outcomes(passed=2, skipped=2)
    only.stdout.fnmatch_lines(["*not a bias check, skipped by --t2i-only*"])

    both = pytester.runpytest("--t2i-skip", "--t2i-only")
    both.stderr.fnmatch_lines(["*--t2i-skip and --t2i-only exclude each other*"])


def test_the_plugin_registers_no_generic_marker(pytester):
    markers = pytester.runpytest("--markers").stdout.str()
    assert "@pytest.mark.t2ibias:" in markers
    assert "@pytest.mark.slow" not in markers


def test_every_option_sits_in_one_help_group(pytester):
    grouped = [name for names in OPTION_GROUPS.values() for name in names]
    assert sorted(grouped) == sorted(option.name for option in OPTIONS)
    help_text = pytester.runpytest("--help").stdout.str()
    for title in OPTION_GROUPS:
        assert f"text-to-image bias checks: {title}:" in help_text
    models = help_text.index("text-to-image bias checks: models:")
    reports = help_text.index("text-to-image bias checks: reports:")
    assert models < help_text.index("--t2i-revision") < reports < help_text.index("--t2i-html=")


@pytest.fixture
def junit_run(pytester):
    """The suite of ``test_suite_collect`` (fake kinds: verdicts with figures, no model) run
    with ``--junitxml`` under the given ``junit_family``."""
    def run(family: str | None) -> tuple[pytest.RunResult, str]:
        pytester.makeconftest(collect.CONFTEST.format())
        ini = "[pytest]\nmarkers =\n    slow: slow checks\n"
        pytester.makeini(ini + (f"junit_family = {family}\n" if family else ""))
        pytester.path.joinpath("occupations.t2i.yaml").write_text(collect.SUITE)
        result = pytester.runpytest("-k", "doctor-gender or skewed", "--junitxml=junit.xml")
        return result, (pytester.path / "junit.xml").read_text()

    yield run
    for name in [name for name in CHECK_KINDS if name.startswith("fake_")]:
        del CHECK_KINDS[name]


def test_junit_xml_is_valid_xunit2_with_the_figures_on_the_testsuite(junit_run):
    import xmlschema

    result, xml = junit_run(None)  # pytest's default family: xunit2
    result.assert_outcomes(passed=1, failed=1)
    xmlschema.XMLSchema(XUNIT2_SCHEMA).validate(xml)
    assert '<property name="occupations.t2i.yaml::skewed[nurse-gender]::verdict" value="fail" />' \
           in xml
    result.stdout.no_fnmatch_line("*PytestWarning*")


def test_junit_xunit1_keeps_the_figures_on_each_testcase(junit_run):
    from xml.etree import ElementTree

    result, xml = junit_run("xunit1")
    result.assert_outcomes(passed=1, failed=1)
    cases = {case.get("name"): case for case in ElementTree.fromstring(xml).iter("testcase")}
    properties = {p.get("name"): p.get("value")
                  for p in cases["skewed[nurse-gender]"].iter("property")}
    assert properties["verdict"] == "fail" and properties["value"] == "0.9"


def test_the_schema_refuses_testcase_properties():
    """The schema can fail: today's per-testcase properties are what it refuses."""
    import xmlschema

    bad = ('<testsuites><testsuite name="pytest" tests="1"><testcase name="t">'
           '<properties><property name="value" value="0.9"/></properties>'
           '</testcase></testsuite></testsuites>')
    assert not xmlschema.XMLSchema(XUNIT2_SCHEMA).is_valid(bad)
