"""Report rows: one judged item as plain builtins, their tally, and the JSON report."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._settings import BURDENS
from ..verdict import DEFAULT_BURDEN, ERROR, STRICT_XFAIL, XFAIL, passes, status
from .output import write_report_text

STATUSES = ("passed", "failed", "xfailed", "xpassed", "error")

REPORT_SCHEMA_VERSION = 2
"""docs/report-schema.md; 2 added the run header, check ids, pytest status, a margin that is
positive within the limit, the gate's confidence (null for point decisions) and errors."""


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
    figures: dict[str, Any]
    outcome: str
    """What the interval said: pass, fail, inconclusive (error: no figure)."""
    check_id: str = ""
    """The suite's check id (a Python test: its function name)."""
    burden: str = DEFAULT_BURDEN
    """Who must prove its case when the interval is inconclusive (the verdict's)."""
    readable: bool = True
    """False: the judge could not read an axis, so nothing passes (the verdict's)."""
    xfail: str = ""
    """The test's xfail mark: ``xfail`` (a pass is ``xpassed``, a failure ``xfailed``),
    ``strict`` (a pass fails the test: pytest's XPASS(strict)), or none."""
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

    @property
    def passed(self) -> bool:
        """Whether the gate passed it: ``verdict.passes``, as the verdict's own ``passed``."""
        return self.outcome != ERROR and passes(self.outcome, self.burden, self.readable)

    @property
    def status(self) -> str:
        """pytest's word: passed, failed, xfailed, xpassed or error (``verdict.status``)."""
        return status(self.outcome, self.burden, self.readable, self.xfail)

    @property
    def protocol(self) -> str:
        """What produced the figure: ``gate`` (the project's) or ``paper`` (issue #44); a
        Python test's row, which no suite's protocol reaches, is ``gate``."""
        return str(self.figures.get("protocol") or "gate")

    @property
    def drawn(self) -> int:
        """Images drawn for the figure: ``n`` judged plus those a filter question dropped or
        the judge abstained on (0 when the figures do not say)."""
        shown = self.figures.get("distribution")
        if not isinstance(shown, dict):
            return self.n
        dropped = [shown.get("filtered"), shown.get("abstentions")]
        return self.n + sum(k for k in dropped if isinstance(k, int) and k > 0)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReportRow:
        return cls(**data)

    @classmethod
    def from_json(cls, check: Mapping[str, Any]) -> ReportRow:
        """A row back from a JSON report's ``checks`` entry (``to_json``; version 1 too)."""
        def number(key: str) -> float:  # a hand-edited file may hold anything: NaN then
            value = check.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            return float("nan")

        def optional(key: str) -> float | None:
            return None if check.get(key) is None else number(key)

        v2 = "interval_confidence" in check
        # a saved run stores its status as a word; the row keeps what that word follows from
        said = str(check.get("status", ""))
        stored = check.get("passed")
        passed = stored if isinstance(stored, bool) else said in ("passed", "xpassed")
        outcome = ERROR if said == ERROR else str(check.get("outcome") or ("pass" if passed else "fail"))
        burden = str(check.get("burden")) if check.get("burden") in BURDENS else DEFAULT_BURDEN
        xfail = check.get("xfail") if check.get("xfail") in ("", XFAIL, STRICT_XFAIL) else (
            XFAIL if said in ("xfailed", "xpassed") else
            STRICT_XFAIL if said == "failed" and passed else "")  # before xfail was saved
        figures = dict(check["figures"]) if isinstance(check.get("figures"), dict) else {}
        readable = check["readable"] if isinstance(check.get("readable"), bool) \
            else not figures.get("judge_unreadable")
        return cls(nodeid=str(check.get("nodeid", "")), check=str(check.get("check") or
                                                                  check.get("kind") or ""),
                   subject=str(check.get("subject", "")), axis=str(check.get("axis", "")),
                   value=number("value"), low=number("low"), high=number("high"),
                   n=check["n"] if isinstance(check.get("n"), int) else 0,
                   confidence=number("interval_confidence" if v2 else "confidence"),
                   threshold=number("threshold"), figures=figures,
                   check_id=str(check.get("check_id", "")), outcome=outcome, burden=burden,
                   readable=readable, xfail=str(xfail),
                   margin=optional("margin"),
                   gate_confidence=optional("confidence") if v2 else None,
                   about=str(check.get("about", "")), reason=str(check.get("reason", "")),
                   message=str(check.get("message", "")))

    def to_dict(self) -> dict[str, Any]:
        """The row's fields (``from_dict``): what its status follows from, not the word."""
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
            "margin": self.margin, "burden": None if self.outcome == ERROR else self.burden, "readable": self.readable,
            "xfail": self.xfail,
            "protocol": self.protocol, "as_read": self.figures.get("as_read"),
            "verdict_used": verdict_used(self),
            "reason": self.reason, "message": self.message, "figures": self.figures,
        })


AS_READ_LEGEND = (
    "as read: the figure on the judge's answers as read (the paper's formula, no correction) "
    "beside the value corrected for the judge's measured confusion; a gated verdict under "
    "bounds used the interval spanning both, a point decision and full correction the "
    "corrected value")


def as_read_of(row: ReportRow) -> float | None:
    """The figure on the judge's answers as read, where the row's value is corrected
    (``figures["as_read"]``, ``kinds._judge``); None where it is not."""
    as_read = row.figures.get("as_read")
    value = as_read.get("value") if isinstance(as_read, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def verdict_used(row: ReportRow) -> str:
    """Which figure the row's verdict decided on, in words (issue #44)."""
    mode = row.figures.get("judge_correction")
    if as_read_of(row) is None or mode not in ("bounds", "full"):
        return "as read"
    if mode == "bounds" and row.gate_confidence is not None:
        return "both (the interval spanning the two)"
    return "corrected"


def n_text(row: ReportRow) -> str:
    """Images judged, and drawn after a slash when a filter or the judge dropped some (one
    judged of 24 drawn is not 24 images' worth of evidence)."""
    return str(row.n) if row.drawn == row.n else f"{row.n}/{row.drawn}"


def limit_text(row: ReportRow) -> str:
    """The limit with the side a passing figure lies on: ``≤ 0.350`` for a distance or a
    severity, ``≥ -0.050`` for an IS entry or an improvement (``figures["at_most"]``)."""
    if not isinstance(row.threshold, (int, float)) or not math.isfinite(row.threshold):
        return ""
    return ("≤ " if row.figures.get("at_most", True) else "≥ ") + f"{row.threshold + 0.0:.3f}"


def tally(rows: Sequence[ReportRow]) -> dict[str, int]:
    """Rows by pytest status, plus how many interval decisions were inconclusive."""
    counts = {status: sum(row.status == status for row in rows) for status in STATUSES}
    counts["inconclusive"] = sum(row.outcome == "inconclusive" for row in rows)
    return counts


def judge_calibrations(rows: Sequence[ReportRow]) -> list[dict[str, Any]]:
    """Every judge calibration the rows read their figures through, once each (by judge,
    axis and where it was measured), for the run header: the judges a verdict rests on."""
    from ..kinds import CHECK_KINDS

    seen: dict[tuple, dict[str, Any]] = {}
    for row in rows:
        figures = row.figures
        kind = CHECK_KINDS.get(row.check)
        found = [figures.get("judge_calibration"),
                 *(figures.get("judge_calibrations") or {}).values(),
                 *(kind.judges(figures) if kind is not None and kind.judges else ())]
        for calibration in found:
            if isinstance(calibration, dict) and "judge" in calibration:
                key = (calibration["judge"], calibration.get("axis"), calibration.get("where"))
                seen.setdefault(key, {k: calibration.get(k) for k in (
                    "judge", "axis", "source", "where", "accuracy", "readability", "readable")})
    return list(seen.values())


@dataclass(frozen=True)
class Tradeoff:
    """One subject of one suite: its bias rows and its cost rows, in the run's order."""

    suite: str
    subject: str
    bias: tuple[ReportRow, ...]
    cost: tuple[ReportRow, ...]

    def to_json(self) -> dict[str, object]:
        return {"suite": self.suite, "subject": self.subject,
                "bias": [row.nodeid for row in self.bias],
                "cost": [row.nodeid for row in self.cost]}


def tradeoffs(rows: Sequence[ReportRow]) -> list[Tradeoff]:
    """Every (suite, subject) that has both a bias row and a cost row (issue #38: a fix's
    bias figures beside what it cost, ``reports.tradeoff``); none without costs."""
    from ..kinds import CHECK_KINDS

    def costs(row: ReportRow) -> bool:
        kind = CHECK_KINDS.get(row.check)
        return kind is not None and kind.measures_cost

    grouped: dict[tuple[str, str], tuple[list[ReportRow], list[ReportRow]]] = {}
    for row in rows:
        if not row.subject:
            continue
        suite = row.nodeid.split("::", 1)[0]
        bias, cost = grouped.setdefault((suite, row.subject), ([], []))
        (cost if costs(row) else bias).append(row)
    return [Tradeoff(suite, subject, tuple(bias), tuple(cost))
            for (suite, subject), (bias, cost) in grouped.items() if bias and cost]


def write_json(path: str | Path, rows: Sequence[ReportRow], counters: dict[str, int],
               run: dict[str, Any] | None = None) -> None:
    from .gating import run_warnings

    judged = [row for row in rows if row.status != "error"]
    run = dict(run or {})
    if calibrations := judge_calibrations(rows):
        run["judge_calibrations"] = calibrations
    payload = {
        "schema": "pytest-t2ibias report",
        "version": REPORT_SCHEMA_VERSION,
        "run": run,
        "summary": tally(rows),
        "checks": [row.to_json() for row in rows],
        "passed": sum(row.passed for row in judged),
        "failed": sum(not row.passed for row in judged),
        "work": counters,
        "tradeoffs": [trade.to_json() for trade in tradeoffs(rows)],
        "warnings": run_warnings(rows),
    }
    write_report_text(path, json.dumps(payload, indent=2, default=_jsonable))


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


def _finite(value: Any) -> Any:
    """NaN -> None, recursively (JSON has no NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def one_line(rows: Sequence[ReportRow]) -> str:
    """The summary under -q: ``t2ibias: 12 results: 8 passed, 2 xfailed, ...``."""
    counts = tally(rows)
    parts = [f"{counts[s]} {s if s != 'error' else 'errors'}" for s in STATUSES if counts[s]]
    if counts["inconclusive"]:
        parts.append(f"{counts['inconclusive']} inconclusive")
    return f"t2ibias: {len(rows)} results: " + ", ".join(parts)
