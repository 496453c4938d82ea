"""--t2i-save / --t2i-autosave / --t2i-compare / --t2i-compare-fail in a pytest run.

The project's tests judge fixed answer counts (no model), read from ``counts.json``, so a
test can change the figures between two runs the way a new model would.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from support.baseline_project import BALANCED, TESTS, counts, run

SKEWED = {"gender": {"male": 95, "female": 5}, "age": {"young": 40, "old": 60}}


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_counts=TESTS)
    counts(pytester, BALANCED)
    pytester.makeini("[pytest]\nt2i_bootstrap = 200\n")
    return pytester






def test_save_then_compare_an_unchanged_run_passes(project):
    first = run(project, "--t2i-save=main")
    assert first.ret == pytest.ExitCode.OK
    saved = project.path / ".t2ibias" / "runs" / "main.json"
    first.stdout.fnmatch_lines([f"t2ibias: saved this run as main ({saved})"])
    assert [c["check_id"] for c in json.loads(saved.read_text())["checks"]] == [
        "test_age", "test_gender"]

    again = run(project, "--t2i-compare=main", "--t2i-compare-fail=ci",
                "--t2i-compare-fail=value:0")
    assert again.ret == pytest.ExitCode.OK
    again.stdout.fnmatch_lines(["*t2ibias compare*", f"compared with main ({saved})",
                                "t2ibias compared with the saved run main: no figure drifted "
                                "(2 figures compared, 0 changed, 0 drifted beyond ci, value:0)"])


def test_a_run_whose_figures_moved_fails_naming_the_drifted_figures(project):
    run(project, "--t2i-save=main")
    counts(project, SKEWED)
    result = run(project, "--t2i-compare=main", "--t2i-compare-fail=ci")
    result.assert_outcomes(passed=2)  # every test passed: the comparison alone fails the run
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "figures that drifted (saved -> now, change, drifted under)",
        "  test_gender[test_gender / gender]",
        "    value  0.000 [[]0.000, *] -> 0.900 [[]0.*, *]  +0.900  ci",
        "t2ibias compare FAILED: 1 figures drifted from the saved run main beyond "
        "--t2i-compare-fail ci: test_gender[test_gender / gender] value",
    ])
    assert "test_age[" not in result.stdout.str().split("t2ibias compare")[-1]

    lenient = run(project, "--t2i-compare=main", "--t2i-compare-fail=value:0.95")
    assert lenient.ret == pytest.ExitCode.OK
    shown = run(project, "--t2i-compare=main")  # no criterion: shows what changed, never fails
    assert shown.ret == pytest.ExitCode.OK
    shown.stdout.fnmatch_lines(["figures that changed*", "  test_gender[test_gender / gender]",
                                "*(no --t2i-compare-fail criterion: nothing can fail)"])


def test_a_corrupt_saved_run_is_a_usage_error_before_any_test_runs(project):
    storage = project.path / ".t2ibias" / "runs"
    storage.mkdir(parents=True)
    (storage / "main.json").write_text('{"schema": "pytest-t2ibias report", "version": 2,')
    result = run(project, "--t2i-compare=main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --t2i-compare=main: {storage / 'main.json'}: not valid "
                                 f"JSON (Expecting*); a saved run is the --t2i-json report of a run"])
    assert "Traceback" not in result.stderr.str() and "passed" not in result.stdout.str()


def test_a_missing_saved_run_names_what_was_looked_for_and_where(project):
    run(project, "--t2i-save=main")
    result = run(project, "--t2i-compare=release")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    storage = project.path / ".t2ibias" / "runs"
    result.stderr.fnmatch_lines([f"ERROR: --t2i-compare=release: no saved run named 'release' "
                                 f"(or starting so) in {storage}; saved: main"])


@pytest.mark.parametrize("args, message", [
    (["--t2i-compare-fail=ci"], "ERROR: --t2i-compare-fail=ci needs a run to compare with: add "
                                "--t2i-compare=NAME (or latest)"),
    (["--t2i-compare=main", "--t2i-compare-fail=mean:3"],
     "ERROR: --t2i-compare-fail: 'mean:3' is not a drift criterion; use ci*"),
    (["--t2i-save=../main"], "ERROR: --t2i-save='../main': a run's name is letters, digits*"),
])
def test_bad_baseline_options_are_usage_errors(project, args, message):
    result = run(project, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_ini_keys_autosave_and_compare_with_latest_under_xdist(project):
    project.makeini(textwrap.dedent("""\
        [pytest]
        t2i_bootstrap = 200
        t2i_storage = saved
        t2i_autosave = true
        """))
    first = run(project)
    names = sorted(p.stem for p in (project.path / "saved").glob("*.json"))
    assert len(names) == 1 and names[0].startswith("0001_"), names
    first.stdout.fnmatch_lines([f"t2ibias: saved this run as {names[0]} *"])

    counts(project, SKEWED)
    project.makeini(textwrap.dedent("""\
        [pytest]
        t2i_bootstrap = 200
        t2i_storage = saved
        t2i_autosave = true
        t2i_compare = latest
        t2i_compare_fail =
            value:0.5
        """))
    second = run(project, "-n", "2")
    second.assert_outcomes(passed=2)
    assert second.ret == pytest.ExitCode.TESTS_FAILED
    second.stdout.fnmatch_lines([f"compared with {names[0]} *",
                                 "t2ibias compare FAILED: 1 figures drifted from the saved run "
                                 f"{names[0]} beyond --t2i-compare-fail value:0.5: "
                                 "test_gender[test_gender / gender] value"])
    assert sorted(p.stem for p in (project.path / "saved").glob("*.json"))[1].startswith("0002_")


def test_the_command_line_finds_what_pytest_saved_from_anywhere_in_the_project(
        project, monkeypatch, capsys):
    """Issue #36: pytest saves under its rootdir; ``python -m pytest_t2ibias compare`` run
    from another folder said "no saved runs in .t2ibias/runs". Both now find the runs the
    same way (the nearest ``.t2ibias/runs`` at or above the working directory), and a
    folder outside the project says where it looked."""
    from pytest_t2ibias.__main__ import main

    saved = run(project, "--t2i-save=main")
    where = project.path / ".t2ibias" / "runs"
    saved.stdout.fnmatch_lines([f"t2ibias: saved this run as main ({where / 'main.json'})"])
    inside = project.path / "suites" / "deeper"
    inside.mkdir(parents=True)
    monkeypatch.chdir(inside)
    assert main(["compare", "main", "latest"]) == 0
    assert "main" in capsys.readouterr().out
    outside = project.path.parent / "elsewhere"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert main(["compare", "main", "latest"]) == 2
    error = capsys.readouterr().err
    assert f"no saved runs in {outside / '.t2ibias' / 'runs'}" in error, error
