"""``--t2i-markdown=PATH``: the run as a CI step summary (GitHub's ``$GITHUB_STEP_SUMMARY``,
a merge request note): the tally, the verdict table with failures first, the trade-offs, and
a link to the HTML report.

Built from the rows the terminal table draws (``ReportRow``'s own fields, never a kind's
figure keys) and with the terminal's words for a cell. Subjects and check ids are the user's
text: every cell is escaped, so a ``|`` or ``[link](...)`` in one stays characters.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._text import shown
from .output import write_report_text
from .rows import ReportRow, as_read_of, limit_text, n_text, tally
from .terminal import suite_names
from .tradeoff import figure_line, tradeoffs, verdict_word

_MARKUP = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")
"""Characters Markdown (GitHub's included) may read as markup: each shown with a backslash."""

FAILURES_FIRST = {"error": 0, "failed": 1, "xpassed": 2}
"""The order of the verdict table: what needs someone's attention first, then the rest."""


def cell(value: Any) -> str:
    """User text as one Markdown table cell: control characters shown (``_text.shown``),
    markup escaped, line breaks a space."""
    text = shown(value).replace("\r", " ").replace("\n", " ")
    return _MARKUP.sub(r"\\\1", text)


def _rank(row: ReportRow) -> tuple[int, str]:
    inconclusive = row.outcome == "inconclusive"
    return (FAILURES_FIRST.get(row.status, 3 if inconclusive else 4), row.nodeid)


def _about(row: ReportRow) -> str:
    about = row.about or row.axis
    if row.subject and row.subject == row.check_id:
        return about or row.check
    return " / ".join(part for part in (row.subject, about) if part)


def _number(x: float) -> str:
    return "" if x != x else f"{x:.3f}"


def markdown_summary(rows: Sequence[ReportRow], *, html: str | None = None,
                     title: str = "t2ibias") -> str:
    """The summary's text; ``html``: the HTML report's path as the summary should link it
    (relative to where the summary is read)."""
    counts = tally(rows)
    words = [f"{counts[s]} {s}" for s in ("failed", "error", "xpassed", "passed", "xfailed")
             if counts[s]]
    if counts["inconclusive"]:
        words.append(f"{counts['inconclusive']} inconclusive")
    lines = [f"## {cell(title)}: {', '.join(words) or 'no bias checks ran'}", ""]
    if html:
        lines += [f"The images behind every figure: [HTML report](<{html}>).", ""]
    if not rows:
        return "\n".join(lines)
    suites = suite_names(rows)
    several = len(set(suites.values())) > 1
    protocols = sorted({row.protocol for row in rows})
    mixed = len(protocols) > 1  # a column when the rows mix protocols, else said once
    as_read = any(as_read_of(row) is not None for row in rows)
    if not mixed and protocols != ["gate"]:  # the default's rows need no line
        lines += [f"Protocol: {protocols[0]} (every row).", ""]
    header = (["suite"] * several + ["protocol"] * mixed + ["check", "subject / axis", "value"]
              + ["as read"] * as_read + ["CI", "n", "limit", "verdict"])
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in sorted(rows, key=_rank):
        suite = [cell(suites[row.nodeid])] * several + [cell(row.protocol)] * mixed
        why = f" ({cell(row.reason.split(':')[0])})" if row.reason and row.status in (
            "error", "failed") else ""
        verdict = f"**{verdict_word(row)}**" if row.status in FAILURES_FIRST else verdict_word(row)
        read = as_read_of(row)
        if row.status == "error":
            values = [""] * (5 if as_read else 4)
        else:
            values = [_number(row.value), *([_number(read) if read is not None else ""]
                                            if as_read else []),
                      f"[{_number(row.low)}, {_number(row.high)}]", n_text(row),
                      cell(limit_text(row))]
        lines.append("| " + " | ".join([*suite, cell(row.check_id or row.check),
                                        cell(_about(row)), *values, verdict + why]) + " |")
    found = tradeoffs(rows)
    if found:
        lines += ["", "### What each fix cost, beside its bias figures", "",
                  "| subject | bias | cost |", "|---|---|---|"]
        for trade in found:
            bias = "<br>".join(cell(figure_line(r)) for r in trade.bias)
            cost = "<br>".join(cell(figure_line(r)) for r in trade.cost)
            lines.append(f"| {cell(trade.subject)} | {bias} | {cost} |")
    return "\n".join(lines) + "\n"


def write_markdown(path: str | Path, rows: Sequence[ReportRow], *,
                   html: str | None = None) -> None:
    """Write (append to, for ``$GITHUB_STEP_SUMMARY``'s file, which other steps share) the
    summary at ``path``; the HTML linked relative to it."""
    target = Path(path)
    link = None
    if html:
        link = os.path.relpath(Path(html).absolute(), target.absolute().parent)
        link = Path(link).as_posix()
    text = markdown_summary(rows, html=link)
    if os.environ.get("GITHUB_STEP_SUMMARY") and \
            Path(os.environ["GITHUB_STEP_SUMMARY"]).absolute() == target.absolute():
        with open(target, "a", encoding="utf-8") as summary:  # GitHub's file: other steps' too
            summary.write(text)
        return
    write_report_text(target, text)
