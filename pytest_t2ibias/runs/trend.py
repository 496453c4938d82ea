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
from .saved import load_report, saved_runs

TREND_COLUMNS = ("run", "date", "git_revision", "suite", "check", "subject", "about", "value",
                 "low", "high", "n", "confidence", "status")
"""The CSV's columns: which run, which check's figure, the figure with its interval."""


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
    statuses = [str(check.get("status") or "") for check in report["checks"]]
    settings = run.get("settings") if isinstance(run.get("settings"), dict) else {}
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
                         "suite": _text(nodeid.split("::", 1)[0]), "check": _text(check_id),
                         "subject": _text(item.get("subject")), "about": _text(item.get("about")),
                         **{key: _blank(item.get(key)) for key in
                            ("value", "low", "high", "n", "confidence", "status")}})
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
    writer.writerows(rows)
    return buffer.getvalue()
