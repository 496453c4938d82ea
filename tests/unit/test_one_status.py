"""One status in one place (issue #42): whether a figure passed, and pytest's word for its row,
follow from its outcome, burden and readability through ``verdict.passes``/``verdict.status``
alone; a verdict and a row store no status of their own, and every reader (the rows, their
JSON, a saved run read back, compare and trend) gets the same word."""

from __future__ import annotations

import ast
import itertools
from dataclasses import fields
from pathlib import Path

import pytest

from pytest_t2ibias._settings import BURDENS
from pytest_t2ibias._types import Estimate
from pytest_t2ibias.reports.collect import verdict_row
from pytest_t2ibias.reports.rows import STATUSES, ReportRow
from pytest_t2ibias.runs.compare import status_of
from pytest_t2ibias.runs.trend import run_summary, trend_rows
from pytest_t2ibias.verdict import (
    FAIL,
    INCONCLUSIVE,
    PASS,
    STRICT_XFAIL,
    XFAIL,
    Verdict,
    passes,
    status,
)

PACKAGE = Path(__import__("pytest_t2ibias").__file__).parent
CASES = list(itertools.product((PASS, FAIL, INCONCLUSIVE), BURDENS, (True, False),
                               ("", XFAIL, STRICT_XFAIL)))


def test_neither_a_verdict_nor_a_row_stores_a_status():
    assert "passed" not in {f.name for f in fields(Verdict)}
    assert {"passed", "status"}.isdisjoint(f.name for f in fields(ReportRow))


@pytest.mark.parametrize("outcome, burden, readable, xfail", CASES)
def test_every_reader_gets_the_one_functions_word(outcome, burden, readable, xfail):
    verdict = Verdict(check="w1_below", value=Estimate(0.2, 0.1, 0.3, 40, 0.9), threshold=0.25,
                      message="m", outcome=outcome, burden=burden, readable=readable)
    word = status(outcome, burden, readable, xfail)
    assert verdict.passed == passes(outcome, burden, readable)
    row = verdict_row("s.t2i.yaml::c[x]", verdict, xfail=xfail)
    assert (row.passed, row.status) == (verdict.passed, word)
    saved = row.to_json()
    assert saved["status"] == word and ReportRow.from_json(saved).status == word
    assert status_of(saved) == word  # compare
    report = {"run": {}, "checks": [saved]}
    assert trend_rows([("r", report)])[0]["status"] == word
    assert run_summary("r", report)[word] == 1


def test_the_rule_itself():
    """An inconclusive interval passes only under burden: check, and never where the judge
    could not read the axis; an xfail mark turns the word round."""
    passing = {(o, b, r) for o, b, r, _ in CASES if passes(o, b, r)}
    assert passing == {(PASS, "model", True), (PASS, "model", False), (PASS, "check", True),
                       (PASS, "check", False), (INCONCLUSIVE, "check", True)}
    assert status(FAIL, "model", xfail=XFAIL) == "xfailed"
    assert status(PASS, "model", xfail=XFAIL) == "xpassed"
    # xfail_strict: a pass fails the test (pytest's XPASS(strict)); a failure is xfailed
    assert status(PASS, "model", xfail=STRICT_XFAIL) == "failed"
    assert status(FAIL, "model", xfail=STRICT_XFAIL) == "xfailed"
    assert status("error", "check") == "error"


@pytest.mark.parametrize("said", STATUSES)
def test_a_run_saved_by_an_older_version_reads_its_stored_word(said):
    """Before #42 a saved check stored ``status`` and ``passed`` beside its outcome."""
    passed = said in ("passed", "xpassed")
    for outcome in ((PASS, INCONCLUSIVE) if passed else (FAIL, INCONCLUSIVE)):
        burden = "check" if passed and outcome == INCONCLUSIVE else "model"
        old = {"nodeid": "s::c", "status": said, "passed": passed, "burden": burden,
               "outcome": "error" if said == "error" else outcome, "n": 4, "value": 0.1,
               "figures": {"burden": burden}}
        assert ReportRow.from_json(old).status == said
        assert status_of(old) == said
    strict_xpass = {"status": "failed", "passed": True, "outcome": PASS, "burden": "model"}
    assert ReportRow.from_json(strict_xpass).status == "failed"  # xfail_strict's XPASS
    unreadable = {"status": "failed", "passed": False, "outcome": INCONCLUSIVE,
                  "burden": "check", "figures": {"judge_unreadable": "below chance"}}
    assert ReportRow.from_json(unreadable).status == "failed"


def _derivations(tree: ast.AST) -> list[int]:
    """Lines that set a stored status (``passed=``/``status=`` to a Verdict or ReportRow, or
    ``replace(..., passed=)``) or spell one out of a bool (``"passed" if ... else "failed"``)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and any(k.arg in ("passed", "status") for k in node.keywords):
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name in ("Verdict", "ReportRow", "replace", "verdict_row", "item_rows"):
                lines.append(node.lineno)
        if isinstance(node, ast.IfExp):
            words = {getattr(n, "value", None) for n in (node.body, node.orelse)}
            if words & {"passed", "failed", "xpassed", "xfailed"}:
                lines.append(node.lineno)
    return lines


def test_no_second_derivation_in_the_package():
    found = {f"{path.relative_to(PACKAGE)}:{line}" for path in sorted(PACKAGE.rglob("*.py"))
             if path.name != "verdict.py" for line in _derivations(ast.parse(path.read_text()))}
    assert found == set(), "a status derived outside verdict.passes/status: " + ", ".join(sorted(found))


def test_the_scan_finds_a_second_derivation():
    assert _derivations(ast.parse('Verdict(passed=True)\nw = "passed" if ok else "failed"\n')) \
        == [1, 2]

