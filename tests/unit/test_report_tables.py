"""Summary tables for CI logs: every row on one line and unique, whatever the names' length."""

from __future__ import annotations

import pytest

from pytest_t2ibias.reports.rows import ReportRow
from pytest_t2ibias.reports.terminal import render_plan, render_text, suite_names, table_width

LONG_CHECK = "test_base_model_against_itself_passes_the_gate_on_every_subject"


def _row(nodeid: str, *, check_id: str, subject: str = "nurse", about: str = "gender -> age",
         check: str = "no_regression", value: float = 0.0, outcome: str = "pass",
         burden: str = "model") -> ReportRow:
    axis = about.split(" ->")[0]  # a Python test without a label has neither
    return ReportRow(nodeid=nodeid, check=check, subject=subject, axis=axis, value=value,
                     low=value - 0.1, high=value + 0.1, n=400, confidence=0.95, threshold=-0.05,
                     figures={}, check_id=check_id, burden=burden,
                     outcome=outcome, margin=0.05, about=about)


ROWS = [
    _row("example_suites/toy_merge_gate.t2i.yaml::merge_gate[nurse-gender]",
         check_id="merge_gate", value=-0.44),
    _row("example_suites/toy_merge_gate_control.t2i.yaml::merge_gate[nurse-gender]",
         check_id="merge_gate", value=0.0, outcome="inconclusive", burden="check"),
    # one Python test, two helpers: its name twice, the helper's kind tells them apart
    _row("example_suites/test_toy_occupations.py::test_accountants",
         check_id="test_accountants", subject="test_accountants", about="", check="w1_below"),
    _row("example_suites/test_toy_occupations.py::test_accountants",
         check_id="test_accountants", subject="test_accountants", about="", check="entropy_below"),
    _row(f"example_suites/test_toy_merge_gate.py::{LONG_CHECK}", check_id=LONG_CHECK,
         subject=LONG_CHECK),
]


def _body(text: str) -> list[str]:
    """The table's rows: the lines between the header and the caption."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("suite"))
    return [line for line in lines[start + 1:] if line.strip() and "CI:" not in line]


def test_in_a_file_every_row_is_one_line_and_unique():
    body = _body(render_text(ROWS, None, color=False))
    assert len(body) == len(ROWS)
    assert len(set(body)) == len(ROWS)
    assert any(LONG_CHECK in line for line in body)  # whole, not split across lines
    assert any(line.endswith("inconclusive: pass") for line in body)
    assert all(line == line.rstrip() for line in body)  # no padding to a terminal's width


def test_the_suite_column_tells_same_id_checks_apart():
    body = _body(render_text(ROWS, None, color=False))
    merge_gates = [line for line in body if " merge_gate " in line]
    assert [line.split()[0] for line in merge_gates] == ["toy_merge_gate.t2i.yaml",
                                                         "toy_merge_gate_control.t2i.yaml"]
    python_rows = [line for line in body if "test_accountants" in line]
    assert {line.split()[2] for line in python_rows} == {"w1_below", "entropy_below"}


def test_suite_names_drop_only_the_shared_directory():
    names = suite_names(ROWS)
    assert names[ROWS[0].nodeid] == "toy_merge_gate.t2i.yaml"
    assert names[ROWS[2].nodeid] == "test_toy_occupations.py"
    one = suite_names(ROWS[:1])
    assert one[ROWS[0].nodeid] == "toy_merge_gate.t2i.yaml"


def test_one_suite_needs_no_suite_column():
    text = render_text(ROWS[2:4], None, color=False)
    assert "suite" not in text.splitlines()[1]


@pytest.mark.parametrize(("terminal_width", "is_terminal", "given", "expected"), [
    (80, True, None, 80), (80, False, None, None), (80, False, 120, 120), (200, True, 100, 100)])
def test_width_is_the_terminals_the_options_or_the_rows(terminal_width, is_terminal, given,
                                                        expected):
    assert table_width(terminal_width, is_terminal=is_terminal, given=given) == expected


def test_a_given_width_is_kept_and_verdicts_never_wrap():
    text = render_text(ROWS, 100, color=False)
    assert max(len(line) for line in text.splitlines()) <= 100
    assert not any(line.strip() in ("pass", "inconclusiv") for line in text.splitlines())


class _Plan:
    images_per_prompt, prompts, images, needed, underpowered = 8, 3, 24, None, False
    nodeid = f"suites/a_rather_long_suite_name.t2i.yaml::{LONG_CHECK}[nurse-gender]"
    note = "a note about what this check cannot decide without more images"


def test_the_plan_in_a_file_keeps_each_item_on_one_line():
    text = render_plan([_Plan()], 0.9, None, color=False)
    assert f"{LONG_CHECK}[nurse-gender]" in text
    assert _Plan.note in text


def test_the_limit_column_says_which_side_passes():
    """Issue #36: ``0.300`` beside ``0.350`` said nothing of direction; a distance must stay
    at most its limit, an IS entry at least its."""
    from dataclasses import replace

    at_least = _row("s.t2i.yaml::spill[nurse-gender]", check_id="spill", check="is_nonnegative")
    at_least = replace(at_least, figures={"at_most": False})
    at_most = replace(_row("s.t2i.yaml::balance[nurse-gender]", check_id="balance",
                           about="gender", check="w1_below"), threshold=0.35)
    text = render_text([at_least, at_most], None, color=False)
    assert "≥ -0.050" in text and "≤ 0.350" in text


def test_n_counts_the_images_judged_and_says_how_many_were_drawn():
    """Issue #36: one image judged of 24 drawn (a filter dropped 23) read ``n 24``, as if
    the interval had seen 24; it is ``1/24``, the caption says what the slash means, and the
    interval's own n is the one image it saw."""
    import numpy as np

    from pytest_t2ibias._types import FILTERED, Answers
    from pytest_t2ibias.kinds.w1_below import evaluate_w1_below
    from pytest_t2ibias.reports.collect import verdict_row

    def row(labels: list[int]) -> ReportRow:
        answers = Answers("q", ("male", "female"), np.array(labels),
                          np.full((len(labels), 2), np.nan), ("a photo of a nurse",) * len(labels))
        verdict = evaluate_w1_below(answers, 0.3, label="nurse/gender")
        return verdict_row("s.t2i.yaml::balance[nurse-gender]", verdict, subject="nurse",
                           axis="gender", check_id="balance")

    filtered = row([FILTERED] * 23 + [0])
    assert (filtered.n, filtered.drawn) == (1, 24)
    assert "n=1]" in filtered.message.replace(" ", "")
    whole = row([0, 1] * 12)
    assert (whole.n, whole.drawn) == (24, 24)
    text = render_text([filtered, whole], None, color=False)
    # check, subject, /, axis, value, CI, n
    cells = [line.split()[6] for line in text.splitlines() if line.startswith("balance")]
    assert cells == ["1/24", "24"], text
    assert "n: images judged / drawn" in text
    assert "judged / drawn" not in render_text([whole], None, color=False)


def test_at_80_columns_no_verdict_is_cut_and_the_legend_reads_from_the_left():
    """Issue #36: at a terminal's 80 columns the verdict column was cut to its first letter
    (``p``, ``i``), the legend was centred and cut, and a plan with nothing in it drew an
    empty header over a centred block of footer."""
    from dataclasses import replace

    rows = [replace(row, figures={"unread_prompts": ["zorb"], "distribution": {"filtered": 3}})
            for row in ROWS]
    text = render_text(rows, 80, color=False)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 80, text
    words = " ".join(line[line.index("verdict"):] if "verdict" in line else line
                     for line in lines)
    assert words.count("inconclusive:") == 1 and "pass unread" in words
    for suite in ("toy_merge_gate.t2i.yaml", "toy_merge_gate_control.t2i.yaml",
                  "test_toy_occupations.py", "test_toy_merge_gate.py"):
        assert any(line.endswith(suite) for line in lines), suite  # one table a suite
    legend = lines[lines.index("CI: 95%"):]
    assert legend[1].startswith("n: images judged / drawn")
    assert legend[2].startswith("unread words:") and legend[3].startswith("  words")
    assert render_plan([], 0.9, 80, color=False) == "t2ibias: plan: no item to plan\n"
    plan = render_plan([_Plan()], 0.9, 80, color=False).splitlines()
    assert max(map(len, plan)) <= 80 and any(line.startswith("24 images in 1 items") for line in plan)
