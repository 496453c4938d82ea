"""Report rows from what a test reached (``reports.collect``), without a pytest session: pytest's
status words, an error row, a Python test's label, and the rows xdist workers send."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import pytest

from pytest_t2ibias._session import T2ISession, _error_text
from pytest_t2ibias._settings import Settings
from pytest_t2ibias._types import Estimate
from pytest_t2ibias.family import Family
from pytest_t2ibias.reports.collect import (
    RunResults,
    error_row,
    failure_reason,
    item_rows,
    verdict_row,
    xfail_of,
)
from pytest_t2ibias.verdict import INCONCLUSIVE, Verdict


def verdict(passed=True, **fields) -> Verdict:
    fields.setdefault("outcome", "pass" if passed else "fail")
    return Verdict(check="w1_below", value=Estimate(0.2, 0.1, 0.3, 40, 0.9),
                   threshold=0.25, message="W1 0.2 <= 0.25", **fields)


def suite_item(**fields):
    return SimpleNamespace(nodeid="s.t2i.yaml::w1[doctor-gender]", name="w1[doctor-gender]",
                           check=SimpleNamespace(id="w1", kind="w1_below"),
                           report_subject="doctor", report_axis="gender", **fields)


@pytest.mark.parametrize("report, passed, word", [
    (SimpleNamespace(outcome="passed", failed=False), True, "passed"),
    (SimpleNamespace(outcome="failed", failed=True, longrepr="assert"), False, "failed"),
    (SimpleNamespace(outcome="skipped", failed=False, wasxfail=""), False, "xfailed"),
    (SimpleNamespace(outcome="passed", failed=False, wasxfail=""), True, "xpassed"),
    # xfail_strict (this repository's setting): a planted bias that passes fails the test
    (SimpleNamespace(outcome="failed", failed=True, longrepr="[XPASS(strict)] planted"), True,
     "failed"),
])
def test_status_is_pytests_word_for_the_test(report, passed, word):
    [(_, row)] = item_rows(suite_item(), [verdict(passed)], xfail_of(report))
    assert row.status == word


def test_a_suite_items_verdict_becomes_a_row_with_its_subject_axis_and_status():
    reached = verdict(passed=False, outcome=INCONCLUSIVE, burden="model", confidence=0.9)
    [(kept, row)] = item_rows(suite_item(), [reached], "xfail")

    assert kept is reached
    assert (row.nodeid, row.check, row.check_id) == ("s.t2i.yaml::w1[doctor-gender]", "w1_below", "w1")
    assert (row.subject, row.axis, row.about, row.status) == ("doctor", "gender", "gender", "xfailed")
    assert (row.value, row.low, row.high, row.n, row.confidence) == (0.2, 0.1, 0.3, 40, 0.9)
    assert row.gate_confidence == 0.9 and row.margin == pytest.approx(0.05)
    assert row.reason == "inconclusive (burden: model)" and row.message == "W1 0.2 <= 0.25"
    assert "message" not in row.figures and row.figures["burden"] == "model"


def test_a_python_tests_row_names_the_test_and_the_helpers_label():
    item = SimpleNamespace(nodeid="test_x.py::test_fair", name="test_fair", originalname="test_fair")
    [(_, row)] = item_rows(item, [verdict(figures={"label": "gender"})], "")

    assert (row.subject, row.axis, row.check_id, row.status) == ("test_fair", "gender", "test_fair", "passed")


def test_failure_reasons_in_a_few_words():
    assert failure_reason(verdict()) == ""
    assert failure_reason(verdict(passed=False)) == "beyond the limit"
    # a kind's own words come through its CheckKind.reason (intermit's alerts, #42)
    alerted = replace(verdict(passed=False, figures={"alerts": ["erased: 40% filtered"]}),
                      check="intermit")
    assert failure_reason(alerted) == "alert: erased: 40% filtered"
    assert verdict_row("n", verdict(passed=False)).status == "failed"  # no xfail mark


def test_a_check_that_could_not_run_is_an_error_row_without_a_figure():
    row = error_row(suite_item(), "MissingModel: --t2i-vqa is not set")

    assert (row.status, row.outcome, row.passed, row.n) == ("error", "error", False, 0)
    assert (row.check, row.check_id, row.subject, row.axis) == ("w1_below", "w1", "doctor", "gender")
    assert math.isnan(row.value) and row.reason == "MissingModel: --t2i-vqa is not set"


def test_the_controller_gathers_what_each_worker_sent():
    workers = []
    for name, nodeid in (("gw0", "b::t"), ("gw1", "a::t")):
        results = RunResults()
        results.add(verdict_row(nodeid, verdict()))
        output: dict = {}
        results.send(output, {"images_generated": 3}, [{"role": "vqa", "model": name}])
        workers.append(output)

    controller = RunResults()
    for output in workers:
        controller.receive(output)
    controller.receive({})  # a worker that crashed sends nothing

    assert [row.nodeid for row in controller.sorted()] == ["a::t", "b::t"]
    assert controller.sorted()[0] == verdict_row("a::t", verdict())
    assert controller.total_counters({"images_generated": 1, "answers_scored": 2}) == {
        "images_generated": 7, "answers_scored": 2}
    assert [b["model"] for b in controller.worker_backends] == ["gw0", "gw1"]


def test_the_family_is_decided_through_the_session():
    session = T2ISession(config=None, settings=Settings.standalone(family="holm"))
    assert session.family == Family("holm")
    errors = {"a": 0.05, "b": 0.05}

    session.decide_family(errors, lambda check, level: check == "a")

    # Holm: both at 97.5%; "a" rejects, then "b" alone at 95% does not
    assert session.family.assigned == pytest.approx({"a": 0.975, "b": 0.95})
    assert session.family == Family("holm").decided(errors, lambda check, level: check == "a")


def test_an_unexpected_error_in_code_without_a_file_names_its_place():
    # pytest gives a traceback entry's path as a str when no file holds the code (#42: mypy)
    with pytest.raises(ZeroDivisionError) as excinfo:
        exec(compile("1 / 0", "<string>", "exec"))  # code without a source file
    assert _error_text(excinfo.value, excinfo) == (
        "unexpected ZeroDivisionError at <string>:1: division by zero")
