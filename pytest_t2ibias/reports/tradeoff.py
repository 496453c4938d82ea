"""A fine-tune's trade-off on one page (issue #38): each subject's bias figures beside what
they cost.

A merge gate asks two questions of a candidate: is it less biased, and what did that cost
(prompt alignment, diversity, quality, the subject still drawn)? Its rows answer them one check
at a time; a release engineer reads them together, per subject: "doctor: gender W1 0.45 ->
0.05; prompt alignment -0.3% [-1.1%, +0.4%]". A suite holding both kinds of check gets one
trade-off per subject; a kind says which it measures (``CheckKind.measures_cost``). The
grouping lives with the rows (``rows.tradeoffs``, which the JSON writes); here, how a figure
of it reads.
"""

from __future__ import annotations

from .rows import ReportRow, Tradeoff, tradeoffs

__all__ = ["Tradeoff", "figure_line", "tradeoffs", "verdict_word"]


def verdict_word(row: ReportRow) -> str:
    """A row's verdict in one word for a trade-off cell: pass, FAIL, xfail, XPASS, ERROR, or
    inconclusive."""
    status = row.status
    if status in ("error", "xfailed", "xpassed"):
        return {"error": "ERROR", "xfailed": "xfail", "xpassed": "XPASS"}[status]
    if row.outcome == "inconclusive":
        return "inconclusive"
    return "pass" if row.passed else "FAIL"


def figure_line(row: ReportRow) -> str:
    """``name: value [low, high] verdict``, one figure of a trade-off: a bias row named by its
    check and what it is about, a cost by what it measures (its check's id when that says
    more), a relative change in percent."""
    about = row.about or row.axis
    check = row.check_id or row.check
    cost = row.figures.get("cost")
    if isinstance(cost, dict):
        name = about if check in (row.check, about) else f"{check} ({about})"
    else:
        name = f"{check} ({about})" if about else check
    if row.status == "error":
        return f"{name}: {verdict_word(row)}"
    percent = isinstance(cost, dict) and bool(cost.get("relative"))
    value, low, high = (_number(x, percent) for x in (row.value, row.low, row.high))
    return f"{name}: {value} [{low}, {high}] {verdict_word(row)}"


def _number(x: float, percent: bool) -> str:
    return f"{x * 100:+.1f}%" if percent else f"{x:.3f}"
