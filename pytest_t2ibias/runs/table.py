"""A comparison of two runs (``baseline.Comparison``) as text: header changes, the figures
old -> new grouped by check, new and vanished checks, one summary line.

Check ids, subjects and model paths come from suites and saved files that may be hostile:
they enter rich only as ``Text``, never as markup.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..reports.terminal import plain_text
from .compare import Comparison, Figure, FigureChange

if TYPE_CHECKING:  # rich loads when a comparison is drawn (issue #14)
    from rich.text import Text

SHOWN_LIST = 20
"""New and vanished checks listed by name; the rest are counted."""


def comparison_lines(changes: Sequence[FigureChange], title: str) -> list[Text]:
    """The figures grouped by check: a line naming the check (and its status change), then one
    aligned line per figure: saved value [CI] -> new value [CI], the change, the criteria it
    drifted under. Lines, not a table: a check's name is long and the numbers must not fold."""
    from rich.text import Text

    lines = [Text(f"{title} (saved -> now, change, drifted under)", style="bold")]
    figure_width = max((len(c.figure) for c in changes), default=0)
    saved_width = max((len(_figure(c.old)) for c in changes), default=0)
    now_width = max((len(_figure(c.new)) for c in changes), default=0)
    group = None
    for change in changes:
        if (change.nodeid, change.check, change.subject, change.about) != group:
            group = (change.nodeid, change.check, change.subject, change.about)
            where = " / ".join(p for p in (change.subject, change.about) if p)
            header = plain_text(f"  {change.check}[{where}]" if where else f"  {change.check}")
            status = next((c for c in changes if (c.nodeid, c.check, c.subject, c.about) == group
                           and c.old_status != c.new_status), None)
            if status is not None:
                header.append(f"  ({status.old_status} -> {status.new_status})", style="yellow")
            lines.append(header)
        delta = change.delta
        line = plain_text(f"    {change.figure:<{figure_width}}  ")
        line.append(f"{_figure(change.old):>{saved_width}} -> {_figure(change.new):>{now_width}}"
                    f"  {'n/a' if delta is None else f'{delta:+.3f}':>6}")
        if change.drifted_by:
            line.append("  " + ", ".join(change.drifted_by), style="bold red")
        lines.append(line)
    return lines


def render_comparison(comparison: Comparison, against: str, width: int, *, color: bool,
                      verbose: bool = False) -> str:
    """The comparison with the run ``against``: header differences, the drifted figures (every
    changed one when ``verbose`` or no criterion was given), new and vanished checks, the
    summary line."""
    from rich.console import Console
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color,
                      color_system="standard" if color else None, highlight=False)
    console.print(plain_text(f"compared with {against}"), soft_wrap=True)
    for line in comparison.header:
        console.print(plain_text(f"  {line}"), soft_wrap=True)
    every = verbose or not comparison.criteria
    shown = comparison.changed if every else comparison.drifted
    if shown:
        title = "figures that changed" if every else "figures that drifted"
        for text in comparison_lines(shown, title):
            console.print(text, soft_wrap=True)
    for what, names in (("new checks (not in the saved run)", comparison.new),
                        ("vanished checks (only in the saved run)", comparison.vanished)):
        if names:
            listed = ", ".join(names[:SHOWN_LIST])
            more = f" and {len(names) - SHOWN_LIST} more" if len(names) > SHOWN_LIST else ""
            console.print(plain_text(f"{what}: {listed}{more}"), soft_wrap=True)
    console.print(Text(comparison.summary()), soft_wrap=True)
    return buffer.getvalue()


def _figure(figure: Figure) -> str:
    if figure.missing:
        return "none"
    assert figure.value is not None
    if figure.low is None or figure.high is None:
        return f"{figure.value:.3f}"
    return f"{figure.value:.3f} [{figure.low:.3f}, {figure.high:.3f}]"


NAMED = 5
"""Drifted figures named in the verdict line (the lines above it have them all)."""


def verdict_line(comparison: Comparison, against: str, option: str) -> str:
    """Whether the new run drifted from ``against`` under the criteria given with ``option``,
    naming the first drifted figures."""
    drifted = comparison.drifted
    if not comparison.criteria:
        return (f"compared with {against}: {comparison.summary()} (no {option} criterion: "
                f"nothing can fail)")
    if not drifted:
        return f"compared with {against}: no figure drifted ({comparison.summary()})"
    named = "; ".join(change.name for change in drifted[:NAMED])
    more = f"; and {len(drifted) - NAMED} more" if len(drifted) > NAMED else ""
    rules = " or ".join(c.text for c in comparison.criteria)
    return (f"compare FAILED: {len(drifted)} figures drifted from {against} beyond {option} "
            f"{rules}: {named}{more}")
