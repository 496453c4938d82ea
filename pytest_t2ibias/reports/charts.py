"""The HTML report's figures as inline markup: SVG interval charts, SVG share bars with their
intervals against the ideal, and IS heatmaps as coloured tables on one shared scale.

Plain strings, no plotting library: the page stays one file a browser draws without scripts.
Every label is user text (subjects, prompts, choices) and goes through ``escape``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from .._text import shown
from ..figures import Interval

WITHIN, BEYOND, STRADDLES, UNJUDGED = "within", "beyond", "straddles", "unjudged"
INK = {WITHIN: "#1a7f37", BEYOND: "#c62828", STRADDLES: "#b26a00", UNJUDGED: "#6e7781"}
BAR, IDEAL, GRID, TEXT, MUTED = "#4c78a8", "#111111", "#d8dee4", "#1f2328", "#57606a"
FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif"


def escape(value: Any) -> str:
    """User text as HTML/SVG text: markup escaped, control characters shown as ``\\x1b``."""
    return html.escape(shown(value, keep_newlines=True), quote=True)


def finite(x: Any) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _short(text: str, limit: int, *, tail: bool = False) -> str:
    """``text`` cut to ``limit`` characters; ``tail`` keeps the end (where prompts differ)."""
    if len(text) <= limit:
        return text
    return "…" + text[1 - limit:] if tail else text[: limit - 1] + "…"


def _num(x: float) -> str:
    x += 0.0  # no "-0"
    return f"{x:.1f}".rstrip("0").rstrip(".") if abs(x - round(x, 1)) < 1e-9 else f"{x:.2f}"


# -- an interval chart: each figure with its interval against the limit -----------------------


def side(entry: Interval, limit: float, at_most: bool, point: bool) -> str:
    """Where ``entry`` lies against the limit, as the gate reads it (point or interval)."""
    if not entry.judged or not finite(limit) or not finite(entry.value):
        return UNJUDGED
    value, low, high = entry.value, entry.low, entry.high
    if not at_most:
        value, low, high, limit = -value, -high, -low, -limit
    if point or not (finite(low) and finite(high)):
        return WITHIN if value <= limit else BEYOND
    return WITHIN if high <= limit else BEYOND if low > limit else STRADDLES


def _domain(numbers: Sequence[float]) -> tuple[float, float]:
    numbers = [x for x in numbers if finite(x)] or [0.0, 1.0]
    lo, hi = min(numbers), max(numbers)
    if lo >= 0 and hi <= 1:
        return 0.0, 1.0  # shares, W1, severity: one scale for every chart
    span = max(hi - lo, 0.1)
    return lo - 0.08 * span, hi + 0.08 * span


def _ticks(lo: float, hi: float) -> list[float]:
    raw = (hi - lo) / 5
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if raw <= m * step)
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def interval_chart(entries: Sequence[Interval], limit: float, *, at_most: bool, point: bool,
                   what: str = "value") -> str:
    """An SVG forest plot: a dot and whisker per entry, the limit as a dashed line and the
    side beyond it shaded; dots coloured by where the gate puts them."""
    label_w, plot_w, text_w, row_h, top, bottom = 250, 260, 170, 24, 30, 26
    width, height = label_w + plot_w + text_w, top + row_h * len(entries) + bottom
    lo, hi = _domain([x for e in entries for x in (e.value, e.low, e.high)] + [limit])
    x = lambda v: label_w + (min(max(v, lo), hi) - lo) / (hi - lo) * plot_w  # noqa: E731
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" xmlns="http://www.w3.org/2000/svg" style="{FONT}">',
             f"<title>{escape(what)} with its interval against the limit</title>"]
    if finite(limit):
        x0, x1 = (x(limit), label_w + plot_w) if at_most else (label_w, x(limit))
        parts.append(f'<rect x="{x0:.1f}" y="{top - 6}" width="{max(x1 - x0, 0):.1f}" '
                     f'height="{row_h * len(entries) + 6}" fill="#fbe9e7"/>')
    for tick in _ticks(lo, hi):
        parts.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 6}" '
                     f'y2="{top + row_h * len(entries)}" stroke="{GRID}"/>'
                     f'<text x="{x(tick):.1f}" y="{height - 8}" font-size="11" fill="{MUTED}" '
                     f'text-anchor="middle">{_num(tick)}</text>')
    if finite(limit):
        sign = "≤" if at_most else "≥"
        parts.append(f'<line x1="{x(limit):.1f}" x2="{x(limit):.1f}" y1="{top - 10}" '
                     f'y2="{top + row_h * len(entries)}" stroke="#c62828" stroke-width="1.5" '
                     f'stroke-dasharray="5 3"/><text x="{x(limit):.1f}" y="{top - 14}" '
                     f'font-size="11" fill="#c62828" text-anchor="middle">limit {sign} '
                     f'{limit + 0.0:.3g}</text>')
    for i, entry in enumerate(entries):
        y = top + row_h * i + row_h / 2
        ink = INK[side(entry, limit, at_most, point)]
        tag = f"{entry.tag}: " if entry.tag else ""
        label = _short(entry.label, 38 - len(tag), tail=True)
        parts.append(f'<text x="{label_w - 10}" y="{y + 4:.1f}" font-size="12" fill="{TEXT}" '
                     f'text-anchor="end"><title>{escape(tag + entry.label)}</title>'
                     f'<tspan fill="{MUTED}">{escape(tag)}</tspan>{escape(label)}</text>')
        if not finite(entry.value):
            parts.append(f'<text x="{label_w + 6}" y="{y + 4:.1f}" font-size="12" '
                         f'fill="{MUTED}">no value (nothing answered)</text>')
            continue
        if finite(entry.low) and finite(entry.high):
            a, b = x(entry.low), x(entry.high)
            parts.append(f'<line class="whisker" x1="{a:.1f}" x2="{b:.1f}" y1="{y:.1f}" '
                         f'y2="{y:.1f}" stroke="{ink}" stroke-width="2"/>'
                         f'<line x1="{a:.1f}" x2="{a:.1f}" y1="{y - 5:.1f}" y2="{y + 5:.1f}" '
                         f'stroke="{ink}" stroke-width="2"/><line x1="{b:.1f}" x2="{b:.1f}" '
                         f'y1="{y - 5:.1f}" y2="{y + 5:.1f}" stroke="{ink}" stroke-width="2"/>')
            interval = f" [{entry.low:.3f}, {entry.high:.3f}]"
        else:
            interval = ""
        parts.append(f'<circle cx="{x(entry.value):.1f}" cy="{y:.1f}" r="4.5" fill="{ink}"/>'
                     f'<text x="{label_w + plot_w + 10}" y="{y + 4:.1f}" font-size="12" '
                     f'fill="{TEXT}">{entry.value:.3f}<tspan fill="{MUTED}">{interval}</tspan>'
                     f'</text>')
    parts.append("</svg>")
    return "".join(parts)


# -- share bars: the measured distribution, its intervals, the ideal --------------------------


def share_bars(choices: Sequence[str], shares: Mapping[str, float],
               intervals: Mapping[str, tuple[float, float]] | None,
               ideal: Mapping[str, float] | None, *, counts: Mapping[str, int] | None = None,
               title: str = "") -> str:
    """An SVG bar per choice: its share (0..1), its interval as a whisker, the ideal share as a
    black tick; the count beside it."""
    label_w, plot_w, text_w, row_h, top, bottom = 120, 280, 90, 26, 30 if title else 12, 40
    width, height = label_w + plot_w + text_w, top + row_h * len(choices) + bottom
    x = lambda v: label_w + min(max(v, 0.0), 1.0) * plot_w  # noqa: E731
    parts = [f'<svg class="chart bars" role="img" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg" '
             f'style="{FONT}"><title>shares against the ideal</title>']
    if title:
        parts.append(f'<text x="0" y="16" font-size="12.5" font-weight="600" fill="{TEXT}">'
                     f'{escape(_short(title, 80))}</text>')
    bottom_y = top + row_h * len(choices)
    for tick in (0, 0.25, 0.5, 0.75, 1):
        parts.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 4}" '
                     f'y2="{bottom_y}" stroke="{GRID}"/><text x="{x(tick):.1f}" '
                     f'y="{bottom_y + 14}" font-size="11" fill="{MUTED}" '
                     f'text-anchor="middle">{tick:.0%}</text>')
    for i, choice in enumerate(choices):
        y = top + row_h * i
        share = shares.get(choice)
        parts.append(f'<text x="{label_w - 10}" y="{y + row_h / 2 + 4:.1f}" font-size="12" '
                     f'fill="{TEXT}" text-anchor="end"><title>{escape(choice)}</title>'
                     f'{escape(_short(choice, 16))}</text>')
        if finite(share):
            parts.append(f'<rect class="bar" x="{label_w}" y="{y + 5}" '
                         f'width="{x(share) - label_w:.1f}" height="{row_h - 10}" '
                         f'fill="{BAR}" rx="2"/>')
        interval = (intervals or {}).get(choice)
        if interval and finite(interval[0]) and finite(interval[1]):
            a, b, mid = x(interval[0]), x(interval[1]), y + row_h / 2
            parts.append(f'<line class="whisker" x1="{a:.1f}" x2="{b:.1f}" y1="{mid:.1f}" '
                         f'y2="{mid:.1f}" stroke="{TEXT}" stroke-width="1.5"/>'
                         f'<line x1="{a:.1f}" x2="{a:.1f}" y1="{mid - 5:.1f}" y2="{mid + 5:.1f}" '
                         f'stroke="{TEXT}" stroke-width="1.5"/><line x1="{b:.1f}" x2="{b:.1f}" '
                         f'y1="{mid - 5:.1f}" y2="{mid + 5:.1f}" stroke="{TEXT}" '
                         f'stroke-width="1.5"/>')
        target = (ideal or {}).get(choice)
        if finite(target):
            parts.append(f'<line class="ideal" x1="{x(target):.1f}" x2="{x(target):.1f}" '
                         f'y1="{y + 1}" y2="{y + row_h - 1}" stroke="{IDEAL}" stroke-width="3"/>')
        shown = f"{share:.0%}" if finite(share) else "–"
        if counts is not None and choice in counts:
            shown += f" ({counts[choice]})"
        parts.append(f'<text x="{label_w + plot_w + 10}" y="{y + row_h / 2 + 4:.1f}" '
                     f'font-size="12" fill="{TEXT}">{escape(shown)}</text>')
    legend_y = bottom_y + 32
    parts.append(f'<rect x="{label_w}" y="{legend_y - 9}" width="14" height="10" fill="{BAR}"/>'
                 f'<text x="{label_w + 19}" y="{legend_y}" font-size="11" fill="{MUTED}">measured '
                 f'share</text>')
    if intervals:
        parts.append(f'<line x1="{label_w + 110}" x2="{label_w + 130}" y1="{legend_y - 4}" '
                     f'y2="{legend_y - 4}" stroke="{TEXT}" stroke-width="1.5"/>'
                     f'<text x="{label_w + 135}" y="{legend_y}" font-size="11" '
                     f'fill="{MUTED}">interval</text>')
    if ideal:
        parts.append(f'<line x1="{label_w + 200}" x2="{label_w + 200}" y1="{legend_y - 10}" '
                     f'y2="{legend_y + 1}" stroke="{IDEAL}" stroke-width="3"/>'
                     f'<text x="{label_w + 207}" y="{legend_y}" font-size="11" '
                     f'fill="{MUTED}">ideal</text>')
    parts.append("</svg>")
    return "".join(parts)


# -- IS heatmaps: a table per matrix, one colour scale for the whole report -------------------


def matrix_scale(matrices: Sequence[Mapping[str, Any]]) -> float:
    """The largest |IS| off the diagonal of every matrix in the report (at least 0.05): the
    shared scale. The diagonal (how far mitigating an axis fixes that axis) is large by design
    and would wash out the spillovers the heatmap is for; its cells are clipped."""
    values = [abs(v) for m in matrices for i, row in enumerate(m.get("value", []))
              for j, v in enumerate(row) if i != j and finite(v)]
    return max(values + [0.05])


def heatmap_table(matrix: Mapping[str, Any], scale: float) -> str:
    """The IS matrix as a table: rows the mitigated axis x, columns the affected axis y, each
    cell coloured on ``scale`` (``heatmap.diverging_colour``) with its value and interval."""
    from .heatmap import diverging_colour

    axes = [str(a) for a in matrix.get("axes", [])]
    value, low, high = (matrix.get(k, []) for k in ("value", "low", "high"))
    head = "".join(f'<th scope="col">{escape(y)}</th>' for y in axes)
    rows = []
    for i, x_axis in enumerate(axes):
        cells = []
        for j in range(len(axes)):
            v = _cell(value, i, j)
            red, green, blue = diverging_colour(v, scale)
            if not finite(v):
                cells.append(f'<td class="empty" style="background:rgb({red},{green},{blue})">'
                             f'–</td>')
                continue
            ink = "#fff" if abs(v) / scale > 0.6 else TEXT
            lo, hi = _cell(low, i, j), _cell(high, i, j)
            interval = (f'<br><small>[{lo:+.2f}, {hi:+.2f}]</small>'
                        if finite(lo) and finite(hi) else "")
            cells.append(f'<td style="background:rgb({red},{green},{blue});color:{ink}">'
                         f'<b>{v:+.3f}</b>{interval}</td>')
        rows.append(f'<tr><th scope="row">{escape(x_axis)}</th>{"".join(cells)}</tr>')
    return (f'<table class="heatmap"><thead><tr><th class="corner">mitigate x ↓ · on y →</th>'
            f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def heatmap_legend(scale: float) -> str:
    """The shared scale as a gradient bar: worse (red) .. 0 .. better (green)."""
    from .heatmap import diverging_colour

    stops = ", ".join("rgb({},{},{})".format(*diverging_colour(scale * (k / 10 - 1), scale))
                      for k in range(21))
    return (f'<div class="legend"><span>{-scale:+.2f} worse</span>'
            f'<span class="gradient" style="background:linear-gradient(90deg, {stops})"></span>'
            f'<span>{scale:+.2f} better</span><span class="muted">one colour scale for '
            f'every heatmap in this report, set by the largest spillover (off the diagonal; '
            f'diagonal cells beyond it are clipped)</span></div>')


def _cell(grid: Any, i: int, j: int) -> float:
    try:
        v = grid[i][j]
    except (IndexError, TypeError, KeyError):
        return float("nan")
    return float(v) if finite(v) else float("nan")
