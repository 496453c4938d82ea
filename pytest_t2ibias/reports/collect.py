"""From tests to report rows: each verdict a test reached becomes a row carrying pytest's word
for the test, a check that could not run an error row; xdist workers send their rows and the
controller gathers them (syrupy's and pytest-xdist's ``workeroutput`` road).

No pytest import: an item is read through what it has (``nodeid``, ``name``; a suite's item
also ``check``, ``report_subject`` and ``report_axis``), so the rows are testable alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..verdict import ERROR, STRICT_XFAIL, XFAIL
from .rows import ReportRow

if TYPE_CHECKING:
    from .._test_call import Sightings
    from ..verdict import Verdict

WORKER_RESULTS = "t2ibias_results"
WORKER_COUNTERS = "t2ibias_counters"
WORKER_BACKENDS = "t2ibias_backends"


def xfail_of(report: Any) -> str:
    """The xfail mark a test's call report ran under, as pytest left it on the report:
    ``wasxfail`` (xfailed, or a non-strict xpass), or a strict XPASS's ``[XPASS(strict)]``."""
    if hasattr(report, "wasxfail"):
        return XFAIL
    if report.failed and str(report.longrepr).startswith("[XPASS(strict)]"):
        return STRICT_XFAIL
    return ""


def failure_reason(verdict: Verdict) -> str:
    """Why a verdict failed, in a few words (empty when it passed)."""
    if verdict.passed:
        return ""
    from ..kinds import CHECK_KINDS

    kind = CHECK_KINDS.get(verdict.check)
    said = kind.reason(verdict.figures) if kind is not None and kind.reason else ""
    if said:  # the kind's own words (intermit: its first alert)
        return said
    if verdict.outcome == "inconclusive":
        return f"inconclusive (burden: {verdict.burden})"
    return "beyond the limit"


def check_id_of(item: Any) -> str:
    """The suite's check id of a YAML item; a Python test's function name."""
    check = getattr(item, "check", None)
    return str(getattr(check, "id", "")) or getattr(item, "originalname", "") or item.name


def verdict_row(nodeid: str, verdict: Verdict, *, subject: str = "", axis: str = "",
                xfail: str = "", check_id: str = "") -> ReportRow:
    """One verdict as a row of plain builtins; its status follows from the verdict's outcome,
    burden and readability (``verdict.status``), turned round by an xfail mark (``xfail``)."""
    figures = {k: v for k, v in verdict.to_dict().items()
               if k not in ("check", "passed", "readable", "value", "threshold", "message")}
    estimate = verdict.value
    return ReportRow(nodeid=nodeid, check=verdict.check, subject=subject, axis=axis,
                     value=estimate.value, low=estimate.low, high=estimate.high, n=estimate.n,
                     confidence=estimate.confidence, threshold=verdict.threshold,
                     figures=figures, check_id=check_id, outcome=verdict.outcome,
                     burden=verdict.burden, readable=verdict.readable,
                     xfail=xfail, margin=verdict.margin,
                     gate_confidence=verdict.confidence,
                     about=str(verdict.figures.get("about") or axis),
                     reason=failure_reason(verdict), message=verdict.message)


def item_rows(item: Any, verdicts: Sequence[Verdict], xfail: str,
              sightings: Sightings | None = None) -> list[tuple[Verdict, ReportRow]]:
    """Each verdict ``item`` reached, with its row. A suite's item knows its subject and
    axis; a Python test gives its name and the helper's label, and its verdicts gain the
    images its judges saw (``sightings``) unless they carry a gallery already."""
    judged = []
    for verdict in verdicts:
        if hasattr(item, "report_axis"):
            subject, axis = item.report_subject, item.report_axis
        else:
            subject, axis = item.name, verdict.figures.get("label", "")
            if "gallery" not in verdict.figures:
                from ..figures import with_gallery

                verdict = with_gallery(verdict, sightings)
        row = verdict_row(item.nodeid, verdict, subject=subject, axis=axis,
                          xfail=xfail, check_id=check_id_of(item))
        kind = getattr(getattr(item, "check", None), "kind", None)
        if kind is not None and kind != row.check:  # a suite's row is its kind's (its chart,
            row = replace(row, check=kind)          # its hooks), whoever's evaluate it used
        judged.append((verdict, row))
    return judged


def error_row(item: Any, message: str) -> ReportRow:
    """An item that could not run: a row with no figure, status ``error``."""
    nan = float("nan")
    check = getattr(item, "check", None)
    axis = getattr(item, "report_axis", "")
    return ReportRow(nodeid=item.nodeid, check=getattr(check, "kind", ""),
                     subject=getattr(item, "report_subject", item.name), axis=axis,
                     value=nan, low=nan, high=nan, n=0, confidence=nan, threshold=nan,
                     figures=_protocol_of(item), check_id=check_id_of(item), outcome=ERROR,
                     about=axis, reason=message)


def _protocol_of(item: Any) -> dict[str, Any]:
    """The protocol a suite item would have run under (``plan.protocol``), for its ERROR row."""
    protocol = getattr(getattr(item, "plan", None), "protocol", None)
    return {"protocol": protocol} if isinstance(protocol, str) else {}


def unrun_row(nodeid: str, message: str) -> ReportRow:
    """A check that never ran (its xdist worker crashed, its suite did not load under
    ``--continue-on-collection-errors``): an ERROR row named by its node id alone (#47)."""
    nan = float("nan")
    path, _, name = nodeid.partition("::")
    check_id, _, rest = name.partition("[")
    subject = rest.rstrip("]").split("-", 1)[0] if rest else Path(path).name
    return ReportRow(nodeid=nodeid, check="", subject=subject, axis="", value=nan, low=nan,
                     high=nan, n=0, confidence=nan, threshold=nan, figures={},
                     check_id=check_id or Path(path).name, outcome=ERROR, reason=message)


class RunResults:
    """A process's rows and the work behind them; on the xdist controller also what every
    worker sent (``receive``), so the controller alone writes the reports."""

    def __init__(self) -> None:
        self.rows: list[ReportRow] = []
        self.worker_counters: dict[str, int] = {}
        self.worker_backends: list[dict[str, str]] = []

    def add(self, row: ReportRow) -> None:
        self.rows.append(row)

    def sorted(self) -> list[ReportRow]:
        """The rows in node-id order, however the workers interleaved."""
        return sorted(self.rows, key=lambda row: row.nodeid)

    def send(self, workeroutput: dict[str, Any], counters: dict[str, int],
             backends: list[dict[str, str]]) -> None:
        """On a worker: its rows, work counters and backends, as plain builtins (execnet)."""
        workeroutput[WORKER_RESULTS] = [row.to_dict() for row in self.rows]
        workeroutput[WORKER_COUNTERS] = counters
        workeroutput[WORKER_BACKENDS] = backends

    def receive(self, workeroutput: dict[str, Any]) -> None:
        """On the controller, as a worker goes down: what it ``send``-ed."""
        self.rows.extend(ReportRow.from_dict(d) for d in workeroutput.get(WORKER_RESULTS, []))
        for name, count in workeroutput.get(WORKER_COUNTERS, {}).items():
            self.worker_counters[name] = self.worker_counters.get(name, 0) + count
        self.worker_backends.extend(workeroutput.get(WORKER_BACKENDS, []))

    def total_counters(self, own: dict[str, int]) -> dict[str, int]:
        """``own`` work (this process's) plus what the workers reported."""
        total = dict(own)
        for name, count in self.worker_counters.items():
            total[name] = total.get(name, 0) + count
        return total
