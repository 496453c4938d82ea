"""Judge calibrations a run measured, remembered beside the cache.

A calibration is a few counts (``metrics.judge.JudgeCalibration``); keeping the last one of
each (judge, axis, source) lets ``--t2i-plan`` say, before any model loads or image is made,
that a judge the cache has already measured cannot read an axis: its checks would end
inconclusive. A memo, not a cache entry: nothing is served from it, so a lost or unreadable
record only loses the warning.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._files import read_json
from .cache import write_atomically

if TYPE_CHECKING:
    from ..metrics.judge import JudgeCalibration

DIRECTORY = "calibrations"
MAX_RECORD_BYTES = 1_000_000
"""A record is a few hundred bytes; a larger file is not one of ours."""


def remember(root: Path | None, calibration: JudgeCalibration) -> None:
    """Keep ``calibration`` under ``root`` (the cache directory; None: no cache, no memo)."""
    if root is None:
        return
    key = hashlib.sha256("\0".join((calibration.judge, calibration.axis, calibration.where))
                         .encode()).hexdigest()
    record = {**calibration.to_dict(),
              "recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    try:
        (Path(root) / DIRECTORY).mkdir(parents=True, exist_ok=True)
        write_atomically(Path(root) / DIRECTORY / f"{key}.json",
                         json.dumps(record, ensure_ascii=False).encode("utf-8"))
    except OSError:  # a memo: a read-only or full cache loses the warning, not the run
        return


def recalled(root: Path | None) -> list[dict[str, Any]]:
    """Every remembered calibration under ``root`` (unreadable records skipped)."""
    folder = Path(root) / DIRECTORY if root is not None else None
    if folder is None or not folder.is_dir():
        return []
    records = []
    for path in sorted(folder.glob("*.json")):
        try:  # the guarded read: no FIFO waited on, no link followed out of the cache
            record = read_json(path, MAX_RECORD_BYTES, follow_links=False)
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and {"judge", "axis", "readable"} <= set(record):
            records.append(record)
    return records
