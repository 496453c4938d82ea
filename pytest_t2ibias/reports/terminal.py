"""The terminal's reports: the summary table and the plan table, drawn with rich (the JSON
is ``rows``, the HTML page for people ``html``, both built on the same rows).

Subjects, prompts and check ids come from suites and tests that may be hostile, so user text
enters rich only as ``Text`` (never markup: ``[link=javascript:...]`` must stay characters)
and the HTML only escaped.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._types import three_places
from .rows import ReportRow

if TYPE_CHECKING:  # rich loads when a report is drawn, not with the plugin (issue #14)
    from rich.table import Table
    from rich.text import Text



def _fmt(x: float) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else three_places(x)


def plain_text(value: Any) -> Text:
    """User text as a rich cell, its brackets kept as characters; control characters (an
    escape sequence in a subject could rewrite the terminal) shown as ``\\x1b``."""
    from rich.text import Text

    text = str(value)
    shown = "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode()
                    for c in text)
    return Text(shown)


def summary_table(rows: Sequence[ReportRow], *, full_names: bool = False) -> Table:
    """One line per judged figure; ``full_names`` wraps long names instead of cutting them
    (the HTML report, where the reader must see exactly which subject it was)."""
    from rich.table import Table

    table = Table(title="t2ibias: bias checks", title_justify="left", box=None,
                  padding=(0, 1, 0, 0), header_style="bold underline")
    # Names wrap, never cut (the reader must see which subject and axes it was); numbers
    # keep their width. ``full_names`` is kept for the HTML report's callers.
    table.add_column("check", overflow="fold", min_width=8)
    table.add_column("subject / axis", overflow="fold", min_width=15)
    for numeric in ("value", "CI", "n", "limit", "margin"):
        table.add_column(numeric, justify="right", no_wrap=True)
    table.add_column("verdict", overflow="fold", min_width=9)  # and why, on the next line
    for row in rows:
        about = row.about or row.axis
        where = " / ".join(part for part in (row.subject, about) if part)
        if row.status == "error":
            table.add_row(plain_text(row.check_id or row.check), plain_text(where),
                          "", "", "", "", "", _verdict_cell(row, row.reason.split(":")[0]))
            continue
        margin = "" if row.margin is None else f"{row.margin:+.3f}"
        table.add_row(plain_text(row.check_id or row.check), plain_text(where), _fmt(row.value),
                      f"{_fmt(row.low)}–{_fmt(row.high)}", str(row.n), _fmt(row.threshold),
                      margin, _verdict_cell(row, _short_reason(row.reason)))
    judged = [row for row in rows if row.status != "error"] or list(rows)
    levels = sorted({f"{row.confidence * 100:g}%" for row in judged if row.confidence == row.confidence})
    methods = sorted({str(row.figures.get("value", {}).get("method", "")) for row in rows} - {""})
    if levels:
        table.caption = f"CI: {', '.join(levels)}" + (f" ({', '.join(methods)})" if methods else "")
    return table


def _short_reason(reason: str) -> str:
    """The table's word for why a check failed (the JSON has the whole reason)."""
    for word, short in (("alert", "alert"), ("inconclusive", "undecided"), ("beyond", "limit")):
        if reason.startswith(word):
            return short
    return reason


def _verdict_cell(row: ReportRow, why: str = "") -> Text:
    """pass, FAIL, xfail (expected: not red), XPASS, ERROR, then why it failed; an
    interval across the limit says so (what it came to under the burden is pass or FAIL)."""
    cell = _verdict_word(row)
    if why and not cell.plain.startswith("inconclusive"):  # the word already says why
        cell.append(" " + why, style="dim")
    return cell


def _verdict_word(row: ReportRow) -> Text:
    from rich.text import Text

    status = row.status or ("passed" if row.passed else "failed")
    if status == "error":
        return Text("ERROR", style="bold red")
    if status == "xfailed":
        return Text("xfail", style="yellow")
    if status == "xpassed":
        return Text("XPASS", style="bold yellow")
    if row.outcome == "inconclusive" or row.figures.get("outcome") == "inconclusive":
        text = "inconclusive: " + ("pass" if row.passed else "FAIL")
        return Text(text, style="yellow" if row.passed else "bold yellow")
    return Text("pass", style="green") if row.passed else Text("FAIL", style="bold red")


def plan_table(plans: Sequence[Any], power: float) -> Table:
    """``--t2i-plan``: per item, images a prompt, prompts, images, and what deciding needs."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="t2ibias: plan", title_justify="left", box=None,
                  padding=(0, 1, 0, 0), header_style="bold underline")
    table.add_column("item", overflow="fold")
    for numeric in ("n", "prompts", "images", f"n for {power:.0%}"):
        table.add_column(numeric, justify="right", no_wrap=True)
    table.add_column("note", overflow="fold")
    for plan in plans:
        needed = "-" if plan.needed is None else str(plan.needed)
        table.add_row(plain_text(plan.nodeid.rsplit("/", 1)[-1]), str(plan.images_per_prompt),
                      "?" if plan.prompts is None else str(plan.prompts),
                      "?" if plan.images is None else str(plan.images),
                      Text(needed, style="bold yellow" if plan.underpowered else ""),
                      plain_text(plan.note))
    known = [p.images for p in plans if p.images is not None]
    table.caption = (f"{sum(known)} images in {len(known)} items with a known count "
                     f"(before the cache; prompts shared between checks are generated once); "
                     f"items that cannot decide their threshold: "
                     f"{sum(p.underpowered for p in plans)}")
    return table


def render_plan(plans: Sequence[Any], power: float, width: int, *, color: bool) -> str:
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color,
                      color_system="standard" if color else None)
    console.print(plan_table(plans, power))
    return buffer.getvalue()


def render_text(rows: Sequence[ReportRow], width: int, *, color: bool) -> str:
    """The summary table as text sized to the terminal (pytest owns the writer)."""
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, color_system="standard" if color else None)
    console.print(summary_table(rows))
    return buffer.getvalue()






def write_summary(terminalreporter: Any, rows: Sequence[ReportRow], work: dict[str, int], *,
                  audit: bool, quiet: bool, family: str) -> None:
    """The ``t2ibias summary`` section through pytest's writer: the table, the tally, the
    family line and the work counted; under -q the tally and the work on one line."""
    from .rows import one_line

    made = "audited" if audit else "generated"  # a folder audit reads images
    work_line = ("work: {images_generated} images " + made + ", {images_from_cache} from "
                 "cache; {answers_scored} answers scored, {answers_from_cache} from cache"
                 ).format(**work) if work else ""
    if quiet:
        terminalreporter.write_line(one_line(rows) + (f"; {work_line}" if work_line else ""))
        return
    terminalreporter.section("t2ibias summary")
    terminalreporter.write(render_text(rows, terminalreporter._tw.fullwidth,
                                       color=terminalreporter.hasmarkup))
    terminalreporter.write_line(one_line(rows))
    terminalreporter.write_line(family)
    if work_line:
        terminalreporter.write_line(work_line)
