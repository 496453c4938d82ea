"""End-of-run reports: a rich table in the terminal, JSON for machines, HTML for people."""

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


def summary_table(rows: Sequence[ReportRow]) -> Table:
    table = Table(title="t2ibias: bias checks", title_justify="left", box=None,
                  padding=(0, 1, 0, 0), header_style="bold underline")
    # Fits 80 columns: numbers keep their width, long names give way (the nodeid has them).
    table.add_column("check", overflow="ellipsis", no_wrap=True, max_width=16)
    table.add_column("subject / axis", overflow="ellipsis", no_wrap=True, max_width=22)
    for numeric in ("value", "CI", "n", "limit"):
        table.add_column(numeric, justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for row in rows:
        verdict = "[green]pass[/]" if row.passed else "[bold red]FAIL[/]"
        where = f"{row.subject} / {row.axis}" if row.axis else row.subject
        table.add_row(row.check, where, _fmt(row.value), f"{_fmt(row.low)}–{_fmt(row.high)}",
                      str(row.n), _fmt(row.threshold), verdict)
    levels = sorted({round(row.confidence * 100) for row in rows})
    table.caption = f"CI: {', '.join(map(str, levels))}% bootstrap over images"
    return table


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

    console = Console(record=True, file=io.StringIO(), width=140)
    console.print(summary_table(rows))
    page = console.export_html(inline_styles=True)
    figures = []
    for row in rows:
        if "matrix" in row.figures:
            png = io.BytesIO()
            render_png(row.figures["matrix"], title=f"IS[x -> y]: {row.subject}").save(png, "PNG")
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
