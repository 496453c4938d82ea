"""Issue #47 item 10: ``python -m pytest_t2ibias report`` (and ``compare``) take any saved
file and answer with one clean line, never a traceback or a hang; and a seeded fuzz of
mutated saved runs (validation/fuzz_saved_runs.py, light mutations) finds none."""

from __future__ import annotations

import json
import os

import pytest
from support.validation_scripts import validation_script

from pytest_t2ibias.__main__ import main


@pytest.fixture(scope="module")
def fuzz():
    return validation_script("fuzz_saved_runs")


@pytest.fixture
def base(fuzz, tmp_path):
    return fuzz.base_runs(tmp_path)[0]


def malformed(base, kind: str):
    path = base.with_name(f"{kind}.json")
    doc = json.loads(base.read_text())
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "nested":
        path.write_text('{"schema": "pytest-t2ibias report", "checks": ' + "[" * 100_000)
    elif kind == "directory":
        path.mkdir()
    elif kind == "distribution-counts-a-list":
        doc["checks"][2]["figures"]["distribution"]["counts"] = [[1, 2, 3]]
        path.write_text(json.dumps(doc))
    elif kind == "calibration-accuracy-a-number":
        doc["checks"][2]["figures"]["judge_calibration"]["accuracy"] = {"male": 0.9}
        path.write_text(json.dumps(doc))
    elif kind == "models-of-numbers":
        doc["run"]["models"] = [1, 2]
        path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("kind", ["fifo", "nested", "directory", "distribution-counts-a-list",
                                  "calibration-accuracy-a-number", "models-of-numbers"])
def test_report_answers_a_malformed_saved_run_in_one_line(fuzz, base, kind, capsys):
    """Was: TypeError, AttributeError or RecursionError tracebacks; a FIFO hung."""
    path = malformed(base, kind)
    out = base.with_name("out.html")
    outcome, detail = fuzz.call(["report", str(path), "--html", str(out)], timeout=30)
    assert outcome == "clean", detail
    outcome, detail = fuzz.call(["compare", str(base), str(path)], timeout=30)
    assert outcome == "clean", detail


def test_what_can_be_drawn_is_written_and_the_rest_named(base, capsys):
    path = malformed(base, "distribution-counts-a-list")
    out = base.with_name("out.html")
    assert main(["report", str(path), "--html", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "1 checks: toy.t2i.yaml::gate[pilot-gender]" in error
    page = out.read_text()
    assert "nurse" in page and "doctor" in page


def test_a_seeded_fuzz_of_100_mutated_saved_runs_finds_no_traceback_or_hang(fuzz, tmp_path):
    result = fuzz.run_fuzz(100, seed=47, folder=tmp_path, light=True)
    assert result["counts"] == {"clean": 300}, result["problems"][:3]
