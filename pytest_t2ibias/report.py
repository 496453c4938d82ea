"""End-of-run reports: a rich table in the terminal, JSON for machines, HTML for people.

Subjects, prompts and check ids come from suites and tests that may be hostile, so user text
enters rich only as ``Text`` (never markup: ``[link=javascript:...]`` must stay characters)
and the HTML only escaped.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


@dataclass(frozen=True)
class ReportRow:
    """One judged figure, as plain builtins (xdist workers send these to the controller)."""

    nodeid: str
    check: str
    subject: str
    axis: str
    value: float
    low: float
    high: float
    n: int
    confidence: float
    threshold: float
    passed: bool
    figures: dict[str, Any]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReportRow:
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _fmt(x: float) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x + 0.0:.3f}"


def _plain(value: Any) -> Text:
    """User text as a rich cell, its brackets kept as characters; control characters (an
    escape sequence in a subject could rewrite the terminal) shown as ``\\x1b``."""
    text = str(value)
    shown = "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode()
                    for c in text)
    return Text(shown)


def summary_table(rows: Sequence[ReportRow], *, full_names: bool = False) -> Table:
    """One line per judged figure; ``full_names`` wraps long names instead of cutting them
    (the HTML report, where the reader must see exactly which subject it was)."""
    table = Table(title="t2ibias: bias checks", title_justify="left", box=None,
                  padding=(0, 1, 0, 0), header_style="bold underline")
    if full_names:
        table.add_column("check", overflow="fold")
        table.add_column("subject / axis", overflow="fold")
    else:
        # Fits 80 columns: numbers keep their width, long names give way (the nodeid has them).
        table.add_column("check", overflow="ellipsis", no_wrap=True, max_width=16)
        table.add_column("subject / axis", overflow="ellipsis", no_wrap=True, max_width=22)
    for numeric in ("value", "CI", "n", "limit"):
        table.add_column(numeric, justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for row in rows:
        verdict = _verdict_cell(row)
        where = f"{row.subject} / {row.axis}" if row.axis else f"{row.subject}"
        table.add_row(_plain(row.check), _plain(where), _fmt(row.value),
                      f"{_fmt(row.low)}–{_fmt(row.high)}", str(row.n), _fmt(row.threshold), verdict)
    levels = sorted({f"{row.confidence * 100:g}%" for row in rows})
    methods = sorted({str(row.figures.get("value", {}).get("method", "")) for row in rows} - {""})
    table.caption = f"CI: {', '.join(levels)}" + (f" ({', '.join(methods)})" if methods else "")
    return table


def _verdict_cell(row: ReportRow) -> Text:
    """pass, FAIL, or what an interval across the limit came to under the suite's burden."""
    if row.figures.get("outcome") == "inconclusive":
        text = "inconclusive: " + ("pass" if row.passed else "FAIL")
        return Text(text, style="yellow" if row.passed else "bold yellow")
    return Text("pass", style="green") if row.passed else Text("FAIL", style="bold red")


def plan_table(plans: Sequence[Any], power: float) -> Table:
    """``--t2i-plan``: per item, images a prompt, prompts, images, and what deciding needs."""
    table = Table(title="t2ibias: plan", title_justify="left", box=None,
                  padding=(0, 1, 0, 0), header_style="bold underline")
    table.add_column("item", overflow="fold")
    for numeric in ("n", "prompts", "images", f"n for {power:.0%}"):
        table.add_column(numeric, justify="right", no_wrap=True)
    table.add_column("note", overflow="fold")
    for plan in plans:
        needed = "-" if plan.needed is None else str(plan.needed)
        table.add_row(_plain(plan.nodeid.rsplit("/", 1)[-1]), str(plan.images_per_prompt),
                      "?" if plan.prompts is None else str(plan.prompts),
                      "?" if plan.images is None else str(plan.images),
                      Text(needed, style="bold yellow" if plan.underpowered else ""),
                      _plain(plan.note))
    known = [p.images for p in plans if p.images is not None]
    table.caption = (f"{sum(known)} images in {len(known)} items with a known count "
                     f"(before the cache; prompts shared between checks are generated once); "
                     f"items that cannot decide their threshold: "
                     f"{sum(p.underpowered for p in plans)}")
    return table


def render_plan(plans: Sequence[Any], power: float, width: int, *, color: bool) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color,
                      color_system="standard" if color else None)
    console.print(plan_table(plans, power))
    return buffer.getvalue()


def render_text(rows: Sequence[ReportRow], width: int, *, color: bool) -> str:
    """The summary table as text sized to the terminal (pytest owns the writer)."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, color_system="standard" if color else None)
    console.print(summary_table(rows))
    return buffer.getvalue()


def write_json(path: str | Path, rows: Sequence[ReportRow], counters: dict[str, int]) -> None:
    payload = {
        "version": 1,
        "checks": [row.to_dict() for row in rows],
        "passed": sum(row.passed for row in rows),
        "failed": sum(not row.passed for row in rows),
        "work": counters,
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(payload, indent=2, default=_jsonable))


def write_html(path: str | Path, rows: Sequence[ReportRow]) -> None:
    """The summary table, then a heatmap for every check that measured an IS matrix."""
    from .heatmap import render_png

    console = Console(record=True, file=io.StringIO(), width=400)
    console.print(summary_table(rows, full_names=True))
    page = console.export_html(inline_styles=True)
    figures = []
    for row in rows:
        if "matrix" in row.figures:
            png = io.BytesIO()
            title = f"IS[x -> y]: {_plain(row.subject).plain}"
            render_png(row.figures["matrix"], title=title).save(png, "PNG")
            encoded = base64.b64encode(png.getvalue()).decode()
            figures.append(f'<h3>{html.escape(row.nodeid)}</h3>\n'
                           f'<img alt="IS heatmap" src="data:image/png;base64,{encoded}">')
    if figures:
        page = page.replace("</body>", "\n".join(figures) + "\n</body>")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(page)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    return str(value)
