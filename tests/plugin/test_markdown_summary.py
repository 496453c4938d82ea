"""``--t2i-markdown`` (issue #43): a CI step summary from the rows the terminal table draws:
the tally, the verdict table failures first, trade-offs, a link to the HTML; user text
escaped, never Markdown."""

from __future__ import annotations

from support import collect_project as collect
from support.report_rows import sample_rows

from pytest_t2ibias.kinds import CHECK_KINDS
from pytest_t2ibias.reports.markdown import cell, markdown_summary
from pytest_t2ibias.reports.rows import ReportRow


def test_failures_come_first_and_the_html_is_linked():
    text = markdown_summary(sample_rows(), html="t2ibias.html")
    lines = text.splitlines()
    assert lines[0] == "## t2ibias: 1 failed, 1 error, 2 passed, 1 xfailed"
    assert "[HTML report](<t2ibias.html>)" in text
    table = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    checks = [line.split(" | ")[0].removeprefix("| ") for line in table]
    assert checks[:2] == ["broken", "gender\\_balance"]  # the error, the failure, then the rest
    assert "**ERROR** (BackendError)" in table[0] and "**FAIL**" in table[1]
    assert table[1].count("[0.") == 1  # the interval


def test_user_text_stays_characters():
    assert cell("a | b") == "a \\| b"
    assert cell("[click](javascript:alert(1))") == "\\[click\\]\\(javascript:alert\\(1\\)\\)"
    assert cell("<b>x</b> # y") == "\\<b\\>x\\</b\\> \\# y"
    assert "\n" not in cell("two\nlines")  # one table row, whatever the text
    hostile = ReportRow(**{**sample_rows()[0].to_dict(), "subject": "nurse | [x](http://evil)"})
    text = markdown_summary([hostile])
    assert "](http" not in text and "nurse \\| \\[x\\]" in text


def test_the_option_writes_the_summary_beside_the_reports(pytester):
    pytester.makeconftest(collect.CONFTEST.format())
    pytester.makeini("[pytest]\nmarkers =\n    slow: slow checks\n")
    pytester.path.joinpath("occupations.t2i.yaml").write_text(collect.SUITE)
    try:
        result = pytester.runpytest("-k", "doctor-gender or skewed", "--t2i-markdown=out/summary.md",
                                    "--t2i-html=out/report.html")
    finally:
        for name in [name for name in CHECK_KINDS if name.startswith("fake_")]:
            del CHECK_KINDS[name]
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*t2ibias: Markdown report written to *summary.md*"])
    summary = (pytester.path / "out" / "summary.md").read_text()
    assert summary.startswith("## t2ibias: 1 failed, 1 passed")
    assert "[HTML report](<report.html>)" in summary  # relative to the summary
    assert summary.index("skewed") < summary.index("severity")
