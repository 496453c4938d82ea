"""Saved runs: JSON reports kept under a name in a storage directory, to compare later runs with.

``<storage>/<NAME>.json`` is exactly the report ``--t2i-json`` writes (report.write_json,
docs/report-schema.md), so a saved run can also be read, diffed or rendered by hand. Names are
chosen (``--t2i-save=NAME``, replaced when saved again, as a snapshot is updated) or counted
(``--t2i-autosave``: ``0001_<git revision>_<UTC date>``, pytest-benchmark's scheme). A run
to compare with is named exactly, by a prefix only it has, or ``latest`` (the last saved).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._files import parse_json, read_bounded
from ..errors import RunError
from ..reports.rows import REPORT_SCHEMA_VERSION, ReportRow, write_json

SCHEMA = "pytest-t2ibias report"
MAX_REPORT_BYTES = 256 * 2**20
"""Largest saved run read: a run of 10,000 checks with galleries takes tens of MB."""
LATEST = "latest"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+=@-]*$")
_COUNTED = re.compile(r"^(\d{4,})_")


def check_name(name: str, option: str = "--t2i-save") -> str:
    """``name`` if it can be a file name in the storage directory, else a ``RunError``."""
    if name == LATEST or not _NAME.match(name) or name.endswith(".json"):
        raise RunError(f"{option}={name!r}: a run's name is letters, digits and . _ + = @ -, "
                       f"starting with a letter or digit, without .json, and not {LATEST!r}")
    return name


def saved_runs(storage: Path) -> list[Path]:
    """The saved runs in ``storage``, by name (an absent directory has none)."""
    try:
        return sorted((p for p in Path(storage).glob("*.json") if p.is_file()),
                      key=lambda p: p.stem)
    except OSError:
        return []


def find_run(storage: Path, name: str) -> Path:
    """The saved run ``name``: ``latest``, an exact name, or a prefix only one name has."""
    runs = saved_runs(storage)
    if not runs:
        raise RunError(f"no saved run {name!r}: no saved runs in {storage} (save one with "
                       f"--t2i-save=NAME or --t2i-autosave; --t2i-storage sets the directory)")
    if name == LATEST:
        return max(runs, key=lambda p: (p.stat().st_mtime_ns, p.name))
    exact = [p for p in runs if p.stem == name]
    matches = exact or [p for p in runs if p.stem.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(p.stem for p in runs[-10:])
    if not matches:
        raise RunError(f"no saved run named {name!r} (or starting so) in {storage}; saved: "
                       f"{known}")
    raise RunError(f"{len(matches)} saved runs in {storage} start with "
                   f"{name!r}: {', '.join(p.stem for p in matches)}; give more of the name")


def locate(spec: str, storage: Path) -> Path:
    """A path to a report file, or a saved run's name in ``storage``."""
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    if path.suffix == ".json" or os.sep in spec:
        raise RunError(f"{spec}: no such file")
    return find_run(storage, spec)


def load_report(path: str | Path) -> dict[str, Any]:
    """A JSON report (version 2) as a dict; a ``RunError`` naming the file and the problem."""
    path = Path(path)
    try:  # the guarded read: a FIFO, a link to /dev/zero or a folder is refused, not read
        text = read_bounded(path, MAX_REPORT_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise RunError(f"{path}: no such file") from None
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and NotARegularFile among them
        raise RunError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        report = parse_json(text)
    except ValueError as exc:
        raise RunError(f"{path}: not valid JSON ({exc}); a saved run is the --t2i-json "
                       f"report of a run") from None
    if not isinstance(report, dict) or report.get("schema") != SCHEMA:
        raise RunError(f"{path}: not a pytest-t2ibias report (no \"schema\": \"{SCHEMA}\")")
    if report.get("version") != REPORT_SCHEMA_VERSION:
        raise RunError(f"{path}: report version {report.get('version')!r}; this pytest-t2ibias "
                       f"reads version {REPORT_SCHEMA_VERSION} (docs/report-schema.md): run the "
                       f"suite again to save it anew")
    checks = report.get("checks")
    if not isinstance(checks, list) or not all(isinstance(c, dict) for c in checks):
        raise RunError(f"{path}: \"checks\" must be a list of objects (docs/report-schema.md)")
    if not isinstance(report.get("run", {}), dict):
        raise RunError(f"{path}: \"run\" must be an object (docs/report-schema.md)")
    return report


def incomplete_reasons(report: Mapping[str, Any]) -> list[str]:
    """Why a saved run did not complete, in words; empty for a complete run. Its header says
    so (``complete`` false and ``incomplete_reasons``); a run saved before that was recorded
    counts as complete unless its ``interrupted`` says otherwise."""
    run = report.get("run")
    run = run if isinstance(run, Mapping) else {}
    said = run.get("incomplete_reasons")
    reasons = [str(reason) for reason in said] if isinstance(said, list) else []
    if run.get("complete") is False and not reasons:
        reasons = ["its header says it did not complete"]
    if run.get("interrupted") is True and not reasons:
        reasons = [f"interrupted ({run.get('interrupted_by') or 'stopped early'})"]
    return reasons


def completeness(header: Mapping[str, Any], collection_errors: Sequence[str],
                 crashed: Sequence[str]) -> dict[str, Any]:
    """``complete`` and ``incomplete_reasons`` for a saved run's header: the session's own
    (``header``: items not run, suites that did not load) and any collection error or item
    lost to a crashed xdist worker they do not already name."""
    reasons = [str(reason) for reason in header.get("incomplete_reasons") or []]
    if header.get("interrupted") and not reasons:
        reasons.append(f"{header.get('items_not_run', '?')} of "
                       f"{header.get('items_collected', '?')} items did not run "
                       f"({header.get('interrupted_by') or 'stopped early'})")
    said = " ".join(reasons)
    for nodeid in dict.fromkeys(collection_errors):
        if nodeid not in said:
            reasons.append(f"{nodeid}: could not be collected")
    for nodeid in dict.fromkeys(crashed):
        if nodeid not in said:
            reasons.append(f"{nodeid}: lost to a crashed xdist worker")
    return {"complete": not reasons, "incomplete_reasons": reasons}


def refuse_incomplete_baseline(report: Mapping[str, Any], path: Path, option: str) -> None:
    """``RunError`` when the saved run at ``path`` did not complete: its missing checks
    would compare as nothing ("0 figures compared") and pass."""
    reasons = incomplete_reasons(report)
    if reasons:
        raise RunError(f"{path.stem} ({path}) did not complete: {'; '.join(reasons)}; a "
                       f"baseline missing checks compares as nothing. Save a complete run, or "
                       f"pass {option} to compare against it anyway")


def as_report(rows: Sequence[ReportRow], run: Mapping[str, Any]) -> dict[str, Any]:
    """This run as a saved one reads back: the header and every row, through JSON."""
    payload = {"schema": SCHEMA, "version": REPORT_SCHEMA_VERSION, "run": dict(run),
               "checks": [row.to_json() for row in rows]}
    report: dict[str, Any] = json.loads(json.dumps(payload, default=str))
    return report


def save_run(storage: Path, name: str, rows: Sequence[ReportRow], counters: dict[str, int],
             run: dict[str, Any]) -> Path:
    """Write the run's JSON report as ``<storage>/<name>.json`` (atomically: a reader sees the
    old run or the new one, never half)."""
    storage = Path(storage)
    try:
        storage.mkdir(parents=True, exist_ok=True)
        write_json(storage / f"{name}.json", rows, counters, run)  # atomic (reports.output)
    except OSError as exc:
        raise RunError(f"cannot save the run in {storage} ({exc.strerror or exc}); point "
                       f"--t2i-storage at a writable directory") from None
    return storage / f"{name}.json"


def autosave_name(storage: Path, run: Mapping[str, Any]) -> str:
    """``NNNN_<revision>_<date>``: one more than the highest counter saved, the git revision
    (12 characters, ``-dirty`` for uncommitted changes; ``norev`` outside git) and the run's
    UTC date as ``YYYYMMDDTHHMMSSZ``."""
    counters = [int(m.group(1)) for p in saved_runs(storage) if (m := _COUNTED.match(p.stem))]
    revision = str(run.get("git_revision") or "norev")
    dirty = revision.endswith("-dirty")
    revision = revision.removesuffix("-dirty")[:12] + ("-dirty" if dirty else "")
    date = re.sub(r"[^0-9T]", "", str(run.get("date") or ""))[:15]
    return f"{max(counters, default=0) + 1:04d}_{revision}_{date or 'nodate'}Z"


def rows_of(report: Mapping[str, Any]) -> list[ReportRow]:
    """The report's checks as ``ReportRow``s again (``ReportRow.to_json`` read backwards)."""
    return [ReportRow.from_json(check) for check in report.get("checks") or []
            if isinstance(check, Mapping)]
