"""``--t2i-plan``'s word on the judges: an axis a remembered calibration shows its judge
cannot read (``store.calibrations``), named before any model loads or image is made."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._text import shown
from ..instrument import judge_name
from ..store.calibrations import recalled

if TYPE_CHECKING:
    from .._settings import Settings
    from ..kinds import PlannedItem


def unreadable_judges(planned: Sequence[tuple[str, PlannedItem]], settings: Settings,
                      cache_dir: Path | None) -> list[str]:
    """One line per (judge, axis) a remembered calibration says cannot be read, with the
    items that would read it (their verdicts will be inconclusive)."""
    records = [r for r in recalled(cache_dir) if not r.get("readable", True)]
    if not records:
        return []
    lines = []
    for record in records:
        items = [nodeid for nodeid, item in planned
                 if item.axis is not None and item.axis.name == record["axis"]
                 and item.axis.calibration_source is not None
                 and item.plan.judge_correction != "off"
                 and judge_name(settings, item.axis) == record["judge"]]
        if not items:
            continue
        readability = record.get("readability", {})
        lines.append(shown(
            f"t2ibias: WARNING the judge {record['judge']} cannot read {record['axis']!r}: on "
            f"{record.get('where') or record.get('source')} its readability was "
            f"{readability.get('value', float('nan')):.2f} [{readability.get('low', float('nan')):.2f}, "
            f"{readability.get('high', float('nan')):.2f}] (recorded {record.get('recorded', '?')}); "
            f"{len(items)} item(s) reading it will be inconclusive: {', '.join(items[:5])}"
            + (" ..." if len(items) > 5 else "")))
    return lines
