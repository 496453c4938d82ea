"""Issue #43: a run in which no check gates on an interval says so loudly, in the terminal
summary and in the JSON's ``warnings``; a run with one gated check does not."""

from __future__ import annotations

import json

import pytest

from pytest_t2ibias.reports.gating import ungated_warning
from pytest_t2ibias.reports.rows import ReportRow, write_json
from pytest_t2ibias.reports.terminal import write_summary


def row(gate: float | None, status: str = "passed") -> ReportRow:
    return ReportRow(nodeid="s.t2i.yaml::severity[doctor-gender]", check="entropy_below",
                     subject="doctor", axis="gender", value=0.461, low=0.0, high=0.911, n=8,
                     confidence=0.95, threshold=0.5, figures={}, check_id="severity",
                     outcome={"passed": "pass", "error": "error"}.get(status, "fail"),
                     gate_confidence=gate)


class Reporter:
    """What ``write_summary`` uses of pytest's terminal reporter, kept as lines."""

    hasmarkup = False

    def __init__(self) -> None:
        self.lines: list[str] = []

    def section(self, title: str) -> None:
        self.lines.append(f"== {title} ==")

    def write(self, text: str) -> None:
        self.lines += text.splitlines()

    def write_line(self, text: str, **markup: bool) -> None:
        self.lines.append(text)


@pytest.mark.parametrize("quiet", [False, True])
def test_a_run_gating_nothing_on_an_interval_says_so_in_the_summary_and_the_json(tmp_path,
                                                                                 quiet):
    rows = [row(None), row(None, status="failed"), row(0.95, status="error")]
    reporter = Reporter()
    write_summary(reporter, rows, {}, audit=False, quiet=quiet, family="family: none",
                  width=100)
    warning = ("warning: no check gated on an interval: all 2 verdicts compare a point value "
               "with its limit")
    assert any(line.startswith(warning) for line in reporter.lines)
    write_json(tmp_path / "r.json", rows, {})
    (said,) = json.loads((tmp_path / "r.json").read_text())["warnings"]
    assert said.startswith(warning) and "set confidence: on the suite" in said


def test_one_gated_check_or_nothing_judged_is_no_warning(tmp_path):
    assert ungated_warning([row(None), row(0.95)]) is None
    assert ungated_warning([row(None, status="error")]) is None
    assert ungated_warning([]) is None
    reporter = Reporter()
    write_summary(reporter, [row(None), row(0.95)], {}, audit=False, quiet=False,
                  family="family: none", width=100)
    assert not any("warning" in line for line in reporter.lines)
    write_json(tmp_path / "r.json", [row(0.95)], {})
    assert json.loads((tmp_path / "r.json").read_text())["warnings"] == []
