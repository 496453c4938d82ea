"""End-of-run reports: a rich table in the terminal and JSON for machines (the HTML page for
people is ``html_report``, built on these rows).

Subjects, prompts and check ids come from suites and tests that may be hostile, so user text
enters rich only as ``Text`` (never markup: ``[link=javascript:...]`` must stay characters)
and the HTML only escaped.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads when a report is drawn, not with the plugin (issue #14)
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
    check_id: str = ""
    """The suite's check id (a Python test: its function name)."""
    status: str = ""
    """pytest's word: passed, failed, xfailed, xpassed or error."""
    outcome: str = ""
    """What the interval said: pass, fail, inconclusive (error: no figure)."""
    margin: float | None = None
    """How far inside its limit the figure is: positive within, negative beyond."""
    gate_confidence: float | None = None
    """The level the gate decided at; None for a point decision."""
    about: str = ""
    """What the figure is about: the axis, or "gender -> age" for IS and regression checks."""
    reason: str = ""
    """Why it failed: beyond the limit, inconclusive (burden), an alert, or the error."""
    message: str = ""
    """The verdict's whole message (what a failing test prints); empty for an error."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReportRow:
        return cls(**data)

    @classmethod
    def from_json(cls, check: dict[str, Any]) -> ReportRow:
        """A row back from a JSON report's ``checks`` entry (``to_json``; version 1 too)."""
        def number(key: str) -> float:  # a hand-edited file may hold anything: NaN then
            value = check.get(key)
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            return float(value) if numeric else float("nan")

        def optional(key: str) -> float | None:
            return None if check.get(key) is None else number(key)

        v2 = "interval_confidence" in check
        return cls(nodeid=str(check.get("nodeid", "")), check=str(check.get("check") or
                                                                  check.get("kind") or ""),
                   subject=str(check.get("subject", "")), axis=str(check.get("axis", "")),
                   value=number("value"), low=number("low"), high=number("high"),
                   n=check["n"] if isinstance(check.get("n"), int) else 0,
                   confidence=number("interval_confidence" if v2 else "confidence"),
                   threshold=number("threshold"), passed=bool(check.get("passed")),
                   figures=dict(check["figures"]) if isinstance(check.get("figures"), dict) else {},
                   check_id=str(check.get("check_id", "")), status=str(check.get("status", "")),
                   outcome=str(check.get("outcome", "")), margin=optional("margin"),
                   gate_confidence=optional("confidence") if v2 else None,
                   about=str(check.get("about", "")), reason=str(check.get("reason", "")),
                   message=str(check.get("message", "")))

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def to_json(self) -> dict[str, Any]:
        """The row as the report schema has it (docs/report-schema.md)."""
        return _finite({
            "nodeid": self.nodeid, "check_id": self.check_id, "kind": self.check,
            "check": self.check, "subject": self.subject, "axis": self.axis,
            "about": self.about, "status": self.status, "outcome": self.outcome,
            "passed": self.passed, "value": self.value, "low": self.low, "high": self.high,
            "n": self.n, "confidence": self.gate_confidence,
            "interval_confidence": self.confidence, "threshold": self.threshold,
            "margin": self.margin, "burden": self.figures.get("burden"),
            "reason": self.reason, "message": self.message, "figures": self.figures,
        })


STATUSES = ("passed", "failed", "xfailed", "xpassed", "error")


def tally(rows: Sequence[ReportRow]) -> dict[str, int]:
    """Rows by pytest status, plus how many interval decisions were inconclusive."""
    counts = {status: sum(row.status == status for row in rows) for status in STATUSES}
    counts["inconclusive"] = sum(row.outcome == "inconclusive" for row in rows)
    return counts


def one_line(rows: Sequence[ReportRow]) -> str:
    """The summary under -q: ``t2ibias: 12 results: 8 passed, 2 xfailed, ...``."""
    counts = tally(rows)
    parts = [f"{counts[s]} {s if s != 'error' else 'errors'}" for s in STATUSES if counts[s]]
    if counts["inconclusive"]:
        parts.append(f"{counts['inconclusive']} inconclusive")
    return f"t2ibias: {len(rows)} results: " + ", ".join(parts)


def _finite(value: Any) -> Any:
    """NaN -> None, recursively (JSON has no NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _fmt(x: float) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x + 0.0:.3f}"


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


REPORT_SCHEMA_VERSION = 2
"""docs/report-schema.md; 2 added the run header, check ids, pytest status, a margin that is
positive within the limit, the gate's confidence (null for point decisions) and errors."""


def write_json(path: str | Path, rows: Sequence[ReportRow], counters: dict[str, int],
               run: dict[str, Any] | None = None) -> None:
    judged = [row for row in rows if row.status != "error"]
    payload = {
        "schema": "pytest-t2ibias report",
        "version": REPORT_SCHEMA_VERSION,
        "run": run or {},
        "summary": tally(rows),
        "checks": [row.to_json() for row in rows],
        "passed": sum(row.passed for row in judged),
        "failed": sum(not row.passed for row in judged),
        "work": counters,
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(payload, indent=2, default=_jsonable))


def read_json(path: str | Path) -> tuple[list[ReportRow], dict[str, Any]]:
    """A saved JSON report's rows and run header (``write_json``), e.g. to write its HTML."""
    try:
        payload = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read the JSON report {path}: {error}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("checks"), list):
        raise ValueError(f"{path} is not a pytest-t2ibias JSON report (no 'checks' list)")
    return ([ReportRow.from_json(check) for check in payload["checks"]],
            payload.get("run") or {})


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    return str(value)
