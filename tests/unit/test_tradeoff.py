"""Issue #38: the merge gate's report shows each subject's bias figures beside what the fix
cost, in the terminal, the JSON and the HTML."""

from __future__ import annotations

import json

from pytest_t2ibias.reports.html import render_html
from pytest_t2ibias.reports.rows import ReportRow, write_json
from pytest_t2ibias.reports.terminal import render_text
from pytest_t2ibias.reports.tradeoff import figure_line, tradeoffs

HOSTILE = "doctor<script>alert(1)</script>\x1b[31m"


def _row(check_id: str, kind: str, subject: str, value: float, low: float, high: float, *,
         suite: str = "gate.t2i.yaml", status: str = "passed", **changes) -> ReportRow:
    fields = dict(nodeid=f"{suite}::{check_id}[{subject}]", check=kind, subject=subject,
                  axis="", value=value, low=low, high=high, n=200, confidence=0.95,
                  threshold=0.1, figures={}, check_id=check_id,
                  outcome={"passed": "pass", "error": "error"}.get(status, "fail"),
                  xfail="xfail" if status in ("xfailed", "xpassed") else "")
    fields.update(changes)
    return ReportRow(**fields)


def _gate(subject: str = "doctor") -> list[ReportRow]:
    return [
        _row("gender_balance", "w1_below", subject, 0.05, 0.0, 0.12, about="gender"),
        _row("prompt_alignment", "prompt_alignment", subject, -0.003, -0.011, 0.004,
             about="prompt alignment", figures={"cost": {"relative": True}}),
        _row("merge_gate", "no_regression", subject, -0.2, -0.3, -0.1, status="failed",
             about="gender -> age"),
        _row("erasure", "erasure", subject, -0.02, -0.05, 0.01, about="erasure",
             figures={"cost": {"relative": False}}),
    ]


def test_each_subject_gets_its_bias_rows_beside_its_cost_rows():
    rows = _gate("doctor") + _gate("nurse") + [
        _row("only_bias", "w1_below", "farmer", 0.1, 0.0, 0.2, suite="other.t2i.yaml")]
    found = tradeoffs(rows)
    assert [(t.subject, [r.check_id for r in t.bias], [r.check_id for r in t.cost])
            for t in found] == [
        ("doctor", ["gender_balance", "merge_gate"], ["prompt_alignment", "erasure"]),
        ("nurse", ["gender_balance", "merge_gate"], ["prompt_alignment", "erasure"])]


def test_a_run_without_costs_has_no_tradeoff_anywhere():
    rows = [r for r in _gate() if r.check in ("w1_below", "no_regression")]
    assert tradeoffs(rows) == []
    assert "what each fix cost" not in render_text(rows, None, color=False)
    assert "What each fix cost" not in render_html(rows)


def test_a_relative_cost_reads_in_percent_and_a_bias_figure_as_is():
    gate = _gate()
    assert figure_line(gate[1]) == "prompt alignment: -0.3% [-1.1%, +0.4%] pass"
    assert figure_line(gate[2]) == "merge_gate (gender -> age): -0.200 [-0.300, -0.100] FAIL"
    assert figure_line(gate[3]) == "erasure: -0.020 [-0.050, 0.010] pass"


def test_the_terminal_json_and_html_carry_it_and_user_text_stays_data(tmp_path):
    rows = _gate(HOSTILE)
    text = render_text(rows, None, color=False)
    tradeoff = text[text.index("what each fix cost"):]
    line = next(line for line in tradeoff.splitlines() if "gender_balance" in line)
    assert "prompt alignment: -0.3% [-1.1%, +0.4%] pass" in line  # side by side, one line
    assert "\x1b" not in text and "\\x1b[31m" in text

    write_json(tmp_path / "r.json", rows, {})
    saved = json.loads((tmp_path / "r.json").read_text())["tradeoffs"]
    assert saved == [{"suite": "gate.t2i.yaml", "subject": HOSTILE,
                      "bias": [rows[0].nodeid, rows[2].nodeid],
                      "cost": [rows[1].nodeid, rows[3].nodeid]}]

    page = render_html(rows)
    section = page[page.index('id="tradeoff"'):]
    assert "<script>" not in page and "&lt;script&gt;" in section
    assert "prompt alignment: -0.3% [-1.1%, +0.4%] pass" in section
