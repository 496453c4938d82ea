"""Saved runs over many releases: the list of them and each check's figure over time, as CSV.

``--t2i-save``/``--t2i-autosave`` keep one JSON report a run; ``compare`` reads two. Here
every run in the storage is read once, in the order they were run (the header's date, then
the name), for ``python -m pytest_t2ibias runs list`` and ``runs trend --csv``. A figure is a
check's own (its ``value`` and interval, as the verdict table shows it); a report that
cannot be read is named and skipped, not the end of the list.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import RunError
from .compare import status_of
from .saved import load_report, saved_runs

TREND_COLUMNS = ("run", "date", "git_revision", "suite", "check", "subject", "about", "value",
                 "low", "high", "n", "confidence", "status")
"""The CSV's columns: which run, which check's figure, the figure with its interval."""
TEXT_COLUMNS = ("run", "suite", "check", "subject", "about")
"""The columns that hold the user's text (``_text`` keeps a spreadsheet from running it)."""


def load_runs(storage: Path, match: str | None = None
              ) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """``(name, report)`` of every readable saved run in ``storage`` whose name contains
    ``match`` (all when None), oldest first; and why each other one was skipped."""
    runs, skipped = [], []
    for path in saved_runs(storage):
        if match and match not in path.stem:
            continue
        try:
            runs.append((path.stem, load_report(path)))
        except RunError as exc:
            skipped.append(str(exc))
    runs.sort(key=lambda item: (str(_header(item[1]).get("date") or ""), item[0]))
    return runs, skipped


def _header(report: dict[str, Any]) -> dict[str, Any]:
    run = report.get("run")
    return run if isinstance(run, dict) else {}


def run_summary(name: str, report: dict[str, Any]) -> dict[str, Any]:
    """One line of ``runs list``: when, which revision and model, and the checks' tally."""
    run = _header(report)
    statuses = [status_of(check) for check in report["checks"]]
    settings = run.get("settings")
    settings = settings if isinstance(settings, dict) else {}
    return {"run": name, "date": run.get("date") or "", "git_revision": run.get("git_revision")
            or "", "model": settings.get("model") or "", "checks": len(statuses),
            **{status: statuses.count(status) for status in
               ("passed", "failed", "xfailed", "xpassed", "error")}}


def list_text(runs: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """``runs list`` as aligned text, one saved run a line, oldest first."""
    lines = [run_summary(name, report) for name, report in runs]
    if not lines:
        return ""
    width = max(len(line["run"]) for line in lines)
    out = []
    for line in lines:
        tally = ", ".join(f"{line[s]} {s}" for s in ("failed", "error", "xpassed", "passed",
                                                      "xfailed") if line[s])
        revision = str(line["git_revision"])[:12]
        out.append(f"{line['run']:<{width}}  {line['date'] or '?':<25}  {revision or '-':<12}  "
                   f"{line['checks']} checks: {tally or 'none'}  {line['model']}")
    return "\n".join(out) + "\n"


def trend_rows(runs: Sequence[tuple[str, dict[str, Any]]], check: str | None = None
               ) -> list[dict[str, Any]]:
    """Each run's figure of each check (``check``: only checks whose id or node id contains
    it), oldest run first: one CSV row each."""
    rows = []
    for name, report in runs:
        run = _header(report)
        for item in report["checks"]:
            nodeid = str(item.get("nodeid") or "")
            check_id = str(item.get("check_id") or item.get("check") or "")
            if check and check not in check_id and check not in nodeid:
                continue
            rows.append({"run": name, "date": run.get("date") or "",
                         "git_revision": run.get("git_revision") or "",
                         "suite": nodeid.split("::", 1)[0], "check": check_id,
                         "subject": str(item.get("subject") or ""),
                         "about": str(item.get("about") or ""),
                         **{key: _blank(item.get(key)) for key in
                            ("value", "low", "high", "n", "confidence")},
                         "status": status_of(item)})
    return rows


def _text(value: Any) -> str:
    """User text as a CSV cell a spreadsheet shows as text: one starting ``=``, ``+``, ``-``
    or ``@`` would be read as a formula, so it gets a leading apostrophe (OWASP's advice)."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def _blank(value: Any) -> Any:
    return "" if value is None else value


def trend_csv(rows: Sequence[dict[str, Any]]) -> str:
    """The trend as CSV (a spreadsheet's, or a plotting script's, input)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=TREND_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({**row, **{key: _text(row[key]) for key in TEXT_COLUMNS}} for row in rows)
    return buffer.getvalue()


# -- the picture ------------------------------------------------------------------------------

_W, _H, _PAD = 560, 180, 40
"""One figure's chart: width, height and the margin its axis labels take (pixels)."""


def trend_html(rows: Sequence[dict[str, Any]]) -> str:
    """The trend as one self-contained page (no script, no external file): a chart per
    figure (suite, check, subject / axis), a dot and an interval whisker per saved run,
    oldest on the left; user text escaped."""
    from html import escape

    order = list(dict.fromkeys(row["run"] for row in rows))  # every chart's x axis: all runs
    series: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        key = (row["suite"], row["check"], row["subject"], row["about"])
        series.setdefault(key, []).append(row)
    charts = []
    for (suite, check, subject, about), points in series.items():
        title = " / ".join(part for part in (subject, about) if part)
        charts.append(f'<section><h2>{escape(check)} <small>{escape(title)} · '
                      f'{escape(suite)}</small></h2>{_chart(points, order)}</section>')
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>t2ibias '
            'trend</title><style>body{font:14px system-ui,sans-serif;margin:24px;color:#1f2328}'
            'h2{font-size:15px;margin:18px 0 4px}small{color:#57606a;font-weight:400}'
            'text{font-size:10px;fill:#57606a}</style></head><body><h1>t2ibias: each figure '
            'over the saved runs</h1>' + ("".join(charts) or "<p>No figures.</p>")
            + "</body></html>\n")


def _chart(points: Sequence[dict[str, Any]], order: Sequence[str]) -> str:
    from html import escape

    numbers = [float(p[k]) for p in points for k in ("value", "low", "high")
               if isinstance(p[k], (int, float))]
    low, high = (min(numbers), max(numbers)) if numbers else (0.0, 1.0)
    span = (high - low) or 1.0
    step = (_W - 2 * _PAD) / max(1, len(order) - 1)

    def y(value: float) -> float:
        return round(_H - _PAD - (value - low) / span * (_H - 2 * _PAD), 1)

    marks = []
    for point in points:
        x = round(_PAD + order.index(point["run"]) * step, 1)
        if isinstance(point["low"], (int, float)) and isinstance(point["high"], (int, float)):
            marks.append(f'<line class="ci" x1="{x}" x2="{x}" y1="{y(point["low"])}" '
                         f'y2="{y(point["high"])}" stroke="#57606a"/>')
        if isinstance(point["value"], (int, float)):
            colour = "#cf222e" if point["status"] in ("failed", "error") else "#1a7f37"
            marks.append(f'<circle class="figure" cx="{x}" cy="{y(point["value"])}" r="4" '
                         f'fill="{colour}"><title>{escape(str(point["run"]))}: '
                         f'{point["value"]:.3f} [{point["low"]}, {point["high"]}] '
                         f'{escape(str(point["status"]))}</title></circle>')
        marks.append(f'<text x="{x}" y="{_H - 8}" text-anchor="middle">'
                     f'{escape(str(point["run"]))[:16]}</text>')
    axis = (f'<text x="4" y="{y(high) + 4}">{high:.3f}</text>'
            f'<text x="4" y="{y(low) + 4}">{low:.3f}</text>')
    return (f'<svg class="trend" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" role="img">'
            f'{axis}{"".join(marks)}</svg>')
