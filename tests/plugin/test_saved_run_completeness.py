"""Issue #47 item 6: a saved run knows whether it completed, and ``compare`` (the command and
``--t2i-compare``) refuses an incomplete one as a baseline unless told."""

from __future__ import annotations

import json

import pytest
from support.baseline_project import BALANCED, TESTS, counts, run

from pytest_t2ibias.__main__ import main

SECOND_FAILS = TESTS.replace('''def test_age():''', '''def test_fails():
    assert False


def test_age():''')


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_counts=SECOND_FAILS)
    counts(pytester, BALANCED)
    pytester.makeini("[pytest]\nt2i_bootstrap = 200\n")
    return pytester


def saved(project, name: str) -> dict:
    return json.loads((project.path / ".t2ibias" / "runs" / f"{name}.json").read_text())


def test_a_run_stopped_by_x_is_saved_as_incomplete_and_refused_as_a_baseline(
        project, monkeypatch, capsys):
    """Was: ``pytest -x --t2i-save=xrun`` saved a run with no word of it, and
    ``--t2i-compare-fail=ci`` against it passed with "0 figures compared"."""
    stopped = run(project, "-p", "no:randomly", "-x", "--t2i-save=xrun")
    stopped.stdout.fnmatch_lines(["*saved as an incomplete run (1 of 3 items did not run*"])
    header = saved(project, "xrun")["run"]
    assert header["complete"] is False
    assert "1 of 3 items did not run" in header["incomplete_reasons"][-1]

    whole = run(project, "-k", "gender", "--t2i-save=whole")
    assert saved(project, "whole")["run"]["complete"] is True
    assert whole.ret == 0

    refused = run(project, "-k", "gender", "--t2i-compare=xrun", "--t2i-compare-fail=ci")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*--t2i-compare=xrun: xrun (*) did not complete: 1 of 3 "
                                  "items did not run*--t2i-compare-incomplete*"])
    allowed = run(project, "-k", "gender", "--t2i-compare=xrun", "--t2i-compare-fail=ci",
                  "--t2i-compare-incomplete")
    assert allowed.ret == 0

    monkeypatch.chdir(project.path)
    assert main(["compare", "xrun", "whole"]) == 2
    assert "did not complete" in capsys.readouterr().err
    assert main(["compare", "xrun", "whole", "--allow-incomplete"]) == 0


def test_collection_errors_kept_going_make_the_saved_run_incomplete(project):
    project.makepyfile(test_broken="import no_such_module_here\n")
    result = run(project, "--continue-on-collection-errors", "-k", "gender",
                 "--t2i-save=broken")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    header = saved(project, "broken")["run"]
    assert header["complete"] is False
    assert any(why.startswith("test_broken.py: could not be collected")
               for why in header["incomplete_reasons"]), header


def test_an_item_lost_to_a_crashed_worker_makes_the_saved_run_incomplete(project):
    pytest.importorskip("xdist")
    project.makepyfile(test_crash="import os\n\n\ndef test_crash():\n    os._exit(3)\n")
    result = run(project, "-n", "2", "--dist", "loadfile", "--max-worker-restart=0",
                 "-k", "gender or crash",
                 "--t2i-save=crashed")  # the check on a worker that survives
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    header = saved(project, "crashed")["run"]
    assert header["complete"] is False
    assert any(why.startswith("test_crash.py::test_crash") for why in
               header["incomplete_reasons"]), header
