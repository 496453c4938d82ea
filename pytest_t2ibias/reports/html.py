"""The HTML report (``--t2i-html``): one self-contained page a person reads after a run.

A header (plugin version, date, the models and judges with their fingerprints, the
settings), the tally, a table of contents with the checks that need attention first, then
per check: its verdict (expected failures as expected, inconclusive as such), the message a
failing test prints, its figures against the limit with their intervals, its share bars
against the ideal, its IS heatmap (one colour scale for the whole report) and the images its
judges saw, per prompt, labelled with their answers (``figures["gallery"]``).

Thumbnails are read from the cache directory when the page is written and inlined as data
URIs: no external file, no script. A missing image is a placeholder. It works as well from a
saved JSON report (``report.read_json``) and its cache directory.
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..figures import Interval, mappings
from .charts import (
    escape,
    finite,
    heatmap_legend,
    heatmap_table,
    interval_chart,
    matrix_scale,
    share_bars,
)
from .output import write_report_text
from .paper_sections import paper_sections
from .rows import ReportRow, as_read_of, judge_calibrations, n_text, tally, verdict_used

THUMB_PX = 160
"""Larger images are shrunk to this many pixels on their long side (JPEG); smaller ones are
kept as they are (PNG) and drawn enlarged, pixel-sharp."""
IMAGE_KEY = re.compile(r"[0-9a-fA-F]{8,128}")
"""What a cache key looks like; anything else (a hand-edited JSON) is never read as a path."""
PALETTE = ("#d7f0ec", "#fdecc8", "#e6defc", "#e3f1d4", "#fbdde3", "#d9e8fb", "#ffe2cc",
           "#e5e7eb")
"""Label pill backgrounds: one per distinct answer, the same answer the same colour."""


def write_html(path: str | Path, rows: Sequence[ReportRow],
               run: Mapping[str, Any] | None = None,
               cache_dir: str | Path | None = None) -> None:
    """Write the report of ``rows`` to ``path``; ``run`` is the JSON report's run header,
    ``cache_dir`` where the images are (None: placeholders instead of thumbnails)."""
    page = render_html(rows, run=run, cache_dir=cache_dir)
    write_report_text(path, page)


def render_html(rows: Sequence[ReportRow], *, run: Mapping[str, Any] | None = None,
                cache_dir: str | Path | None = None) -> str:
    ordered = sorted(rows, key=_rank)  # stable: the rows' (nodeid) order within a rank
    scale = matrix_scale([row.figures["matrix"] for row in rows
                          if isinstance(row.figures.get("matrix"), Mapping)])
    thumbnails = Thumbnails(Path(cache_dir) if cache_dir is not None else None)
    pills = Pills()
    sections = [_check(row, f"c{i}", scale, thumbnails, pills) for i, row in enumerate(ordered)]
    body = [thumbnails.sprite(), _header(rows, run or {}), _contents(ordered), _tradeoffs(rows),
            *sections, _footer(thumbnails)]
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>t2ibias report</title><style>{CSS}</style></head><body><main>'
            + "\n".join(body) + "</main></body></html>\n")


# -- order and words --------------------------------------------------------------------------


def _rank(row: ReportRow) -> int:
    """Failures and errors first, then unexpected passes, expected failures, inconclusive
    passes, passes."""
    status = row.status
    if status in ("failed", "error"):
        return 0
    if status == "xpassed":
        return 1
    if status == "xfailed":
        return 2
    return 3 if _inconclusive(row) else 4


def _inconclusive(row: ReportRow) -> bool:
    return row.outcome == "inconclusive" or row.figures.get("outcome") == "inconclusive"


def verdict_badge(row: ReportRow) -> str:
    """The verdict as a coloured word; expected failures and undecided figures say so."""
    status = row.status
    undecided = " · inconclusive" if _inconclusive(row) else ""
    word, css = {
        "error": ("ERROR", "error"),
        "failed": ("FAIL" + undecided, "fail"),
        "xpassed": ("XPASS · expected to fail", "xpass"),
        "xfailed": ("expected failure" + undecided, "xfail"),
    }.get(status, ("pass" + undecided, "undecided" if undecided else "pass"))
    return f'<span class="badge {css}">{escape(word)}</span>'


def _where(row: ReportRow) -> str:
    """Subject / what the figure is about; a Python test's subject is its name: left out."""
    from ..kinds import CHECK_KINDS

    kind = CHECK_KINDS.get(row.check)
    about = row.about or row.axis or (kind.about(row.figures) if kind and kind.about else "")
    subject = "" if row.subject in (row.check_id, row.nodeid.rsplit("::", 1)[-1]) else row.subject
    return " / ".join(part for part in (subject, about) if part)


def _file(row: ReportRow) -> str:
    """The suite or test file the check lives in (its nodeid's path, last part)."""
    return row.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


def _fmt(x: Any, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if finite(x) else "–"


# -- header, contents, footer -----------------------------------------------------------------


def _header(rows: Sequence[ReportRow], run: Mapping[str, Any]) -> str:
    counts = tally(rows)
    words = (("failed", "failed", "failed", "fail"), ("error", "error", "errors", "error"),
             ("xpassed", "unexpected pass", "unexpected passes", "xpass"),
             ("xfailed", "expected failure", "expected failures", "xfail"),
             ("passed", "passed", "passed", "pass"),
             ("inconclusive", "inconclusive", "inconclusive", "undecided"))
    tallies = "".join(f'<span class="badge {css}">{counts[key]} '
                      f'{one if counts[key] == 1 else many}</span>'
                      for key, one, many, css in words if counts.get(key))
    meta = [f"pytest-t2ibias {escape(run.get('plugin_version') or '(version unknown)')}"]
    if run.get("date"):
        meta.append(escape(run["date"]))
    if run.get("git_revision"):
        meta.append(f"git {escape(run['git_revision'])}")
    parts = [f'<header><h1>t2ibias report</h1><p class="meta">{" · ".join(meta)}</p>'
             f'{_interrupted(run)}'
             f'<p class="tally"><b>{len(rows)} results</b> {tallies}</p></header>']
    backends = [("Models", run.get("models") or []), ("Judges", run.get("judges") or [])]
    tables = "".join(_backends(title, entries) for title, entries in backends if entries)
    tables += _calibrations(judge_calibrations(rows))
    settings = run.get("settings") or {}
    if tables or settings:
        parts.append(f'<section class="run"><h2>Run</h2><div class="run-grid"><div>{tables}'
                     f'</div>{_settings(settings)}</div></section>')
    return "\n".join(parts)


def _calibrations(calibrations: Sequence[Mapping[str, Any]]) -> str:
    """The run's judge calibrations, one line each: accuracy per class with n, readability."""
    if not calibrations:
        return ""
    lines = []
    for c in calibrations:
        accuracy = ", ".join(f"{escape(str(k))} {_fmt(v.get('value'), 2)} (n={int(v.get('n', 0))})"
                             for k, v in (c.get("accuracy") or {}).items())
        readability = c.get("readability") or {}
        state = "" if c.get("readable", True) else " · <b>cannot read</b>"
        lines.append(f"<li>{escape(str(c.get('judge')))} on {escape(str(c.get('axis')))}: "
                     f"{accuracy} · readability {_fmt(readability.get('value'), 2)}{state}"
                     f' <span class="muted small">({escape(str(c.get("where") or c.get("source")))})</span></li>')
    return f'<h3>Judge calibrations</h3><ul class="small">{"".join(lines)}</ul>'


def _interrupted(run: Mapping[str, Any]) -> str:
    """A banner over the tally of a run that stopped early: its results are not the suite's."""
    if not run.get("interrupted"):
        reasons = run.get("incomplete_reasons") or []
        if run.get("complete", True) or not reasons:
            return ""
        return (f'<p class="interrupted"><b>Incomplete run</b>: {len(reasons)} could not run '
                f'({escape("; ".join(map(str, reasons[:5])))}); each is an ERROR row below.</p>')
    not_run, collected = run.get("items_not_run"), run.get("items_collected")
    return (f'<p class="interrupted"><b>Interrupted run</b>: {escape(str(not_run))} of '
            f'{escape(str(collected))} items did not run '
            f'({escape(str(run.get("interrupted_by") or "stopped early"))}); the results below '
            f'are only those that did.</p>')


def _backends(title: str, entries: Sequence[Mapping[str, Any]]) -> str:
    rows = "".join(f'<tr><td>{escape(e.get("role", ""))}</td><td class="path">'
                   f'{escape(e.get("model", ""))}</td><td><code class="fp">'
                   f'{escape(e.get("fingerprint", ""))}</code></td></tr>' for e in entries)
    return (f'<div><h3>{title}</h3><table class="plain"><thead><tr><th>role</th><th>model</th>'
            f'<th>fingerprint</th></tr></thead><tbody>{rows}</tbody></table></div>')


def _settings(settings: Mapping[str, Any]) -> str:
    if not settings:
        return ""

    def shown(value: Any) -> str:
        if value is None:
            return '<span class="muted">default</span>'
        if isinstance(value, Mapping):
            return "<br>".join(f"{escape(k)}: {shown(v)}" for k, v in value.items()) or \
                '<span class="muted">none</span>'
        return escape(value if isinstance(value, str) else json.dumps(value))

    rows = "".join(f"<tr><th>{escape(key)}</th><td>{shown(value)}</td></tr>"
                   for key, value in settings.items())
    return (f'<div><h3>Settings</h3><table class="plain settings"><tbody>{rows}</tbody>'
            f'</table></div>')


def _contents(ordered: Sequence[ReportRow]) -> str:
    lines = []
    for i, row in enumerate(ordered):
        margin = f"{row.margin + 0.0:+.3f}" if finite(row.margin) else ""
        interval = (f"[{_fmt(row.low)}, {_fmt(row.high)}]" if row.status != "error" else "")
        limit = _limit(row) if row.status != "error" else ""
        lines.append(
            f'<tr><td>{verdict_badge(row)}</td><td><a href="#c{i}">'
            f'{escape(row.check_id or row.check)}</a><div class="muted small">'
            f'{escape(row.check)} · {escape(_file(row))}</div></td>'
            f'<td>{escape(_where(row))}</td>'
            f'<td class="num">{_fmt(row.value) if row.status != "error" else ""}</td>'
            f'<td class="num">{interval}</td><td class="num">{n_text(row) if row.n else ""}</td>'
            f'<td class="num">{escape(limit)}</td><td class="num">{margin}</td></tr>')
    attention = sum(_rank(row) <= 1 for row in ordered)
    expected = any(_rank(row) == 2 for row in ordered)
    note = (f"{attention} need attention (failed, errors, unexpected passes): listed first"
            if attention else "nothing failed unexpectedly" + (
                "; expected failures are listed first" if expected else ""))
    return (f'<section class="contents" id="checks"><h2>Checks</h2><p class="muted">{note}. '
            f'A row links to its check.</p><table class="toc"><thead><tr><th>verdict</th>'
            f'<th>check</th>'
            f'<th>subject / about</th><th class="num">value</th><th class="num">CI</th>'
            f'<th class="num" title="images judged (/ drawn, when a filter or the judge '
            f'dropped some)">n</th><th class="num">limit</th><th class="num">margin</th></tr>'
            f'</thead><tbody>{"".join(lines)}</tbody></table></section>')


def _tradeoffs(rows: Sequence[ReportRow]) -> str:
    """Each subject's bias figures beside what they cost (``reports.tradeoff``); empty when
    no suite holds both."""
    from .tradeoff import figure_line, tradeoffs

    found = tradeoffs(rows)
    if not found:
        return ""

    def cell(group: Sequence[ReportRow]) -> str:
        return "<br>".join(escape(figure_line(row)) for row in group)

    lines = "".join(f"<tr><td>{escape(trade.suite)}</td><td>{escape(trade.subject)}</td>"
                    f"<td>{cell(trade.bias)}</td><td>{cell(trade.cost)}</td></tr>"
                    for trade in found)
    return ('<section class="contents" id="tradeoff"><h2>What each fix cost</h2>'
            '<p class="muted">Per subject, the bias figures beside the costs of the same '
            'candidate (alignment, diversity, quality, the subject still drawn).</p>'
            '<table class="toc"><thead><tr><th>suite</th><th>subject</th><th>bias</th>'
            f'<th>cost</th></tr></thead><tbody>{lines}</tbody></table></section>')


def _limit(row: ReportRow) -> str:
    from .rows import limit_text

    return limit_text(row)


def _footer(thumbnails: Thumbnails) -> str:
    note = ("Thumbnails are the cached images, inlined." if thumbnails.root is not None else
            "No cache directory was given: images are shown as placeholders.")
    if thumbnails.missing:
        note += f" {thumbnails.missing} images were not in the cache (placeholders)."
    return (f'<footer class="muted">{note} Interval charts: a dot for the figure, a whisker for '
            f'its interval, the shaded side is beyond the limit (green within, red beyond, amber '
            f'across it, grey not judged). Share bars: whiskers are Wilson intervals of each '
            f'share; the black tick is the ideal share.</footer>')


# -- one check --------------------------------------------------------------------------------


def _check(row: ReportRow, anchor: str, scale: float, thumbnails: Thumbnails,
           pills: Pills) -> str:
    title = (f'<h2>{verdict_badge(row)} {escape(row.check_id or row.check)}'
             f' <span class="where">{escape(_where(row))}</span></h2>'
             f'<p class="muted small">{escape(row.check)} · <code>{escape(row.nodeid)}</code>'
             f' · <a href="#checks">back to the list</a></p>')
    parts = [title]
    if row.status != "error":
        parts.append(f'<p class="figure">{_figure_line(row)}</p>')
    if row.reason:
        parts.append(f'<p class="reason">{escape(row.reason)}</p>')
    if row.message:
        parts.append(f'<pre class="message">{escape(row.message)}</pre>')
    if row.status != "error":
        charts = [_interval_chart(row), *_bar_charts(row)]
        parts.append(f'<div class="charts">{"".join(c for c in charts if c)}</div>')
    calibration = row.figures.get("judge_calibration")
    if isinstance(calibration, Mapping):
        parts.append(_judge_calibration(calibration, str(row.figures.get("judge_correction", ""))))
    by_axis = row.figures.get("judge_calibrations")
    modes = row.figures.get("judge_corrections")
    if isinstance(by_axis, Mapping):  # IS and IS_mit: one judge per affected axis
        parts += [_judge_calibration(c, str(modes.get(axis, "")) if isinstance(modes, Mapping) else "")
                  for axis, c in by_axis.items() if isinstance(c, Mapping)]
    parts += paper_sections(_tables(row))
    matrix = row.figures.get("matrix")
    if isinstance(matrix, Mapping):
        parts.append(f'<div class="matrix"><h3>Intersectional sensitivity IS[x → y]</h3>'
                     f'{heatmap_table(matrix, scale)}{heatmap_legend(scale)}</div>')
    gallery = row.figures.get("gallery")
    if isinstance(gallery, Mapping) and gallery.get("groups"):
        parts.append(_gallery(gallery, row, thumbnails, pills))
    css = {0: "attention", 1: "attention"}.get(_rank(row), "")
    return f'<section class="check {css}" id="{anchor}">{"".join(parts)}</section>'


def _judge_calibration(calibration: Mapping[str, Any], correction: str) -> str:
    """The judge's confusion on the row's axis (true class x judged class, counts), its
    accuracy per class with n, its readability and how the figures used it."""
    choices = [str(c) for c in calibration.get("choices", [])]
    confusion = calibration.get("confusion", {})
    accuracy = calibration.get("accuracy", {})
    head = "".join(f"<th>judged {escape(c)}</th>" for c in choices)
    body = []
    for true in choices:
        row = confusion.get(true, {}) if isinstance(confusion, Mapping) else {}
        share = accuracy.get(true, {}) if isinstance(accuracy, Mapping) else {}
        cells = "".join(f"<td>{int(row.get(c, 0))}</td>" for c in choices)
        body.append(f"<tr><th>true {escape(true)}</th>{cells}<td>{_fmt(share.get('value'), 2)} "
                    f"[{_fmt(share.get('low'), 2)}, {_fmt(share.get('high'), 2)}] "
                    f"n={int(share.get('n', 0))}</td></tr>")
    readability = calibration.get("readability", {})
    verdict = "reads the axis" if calibration.get("readable") else "<b>cannot read the axis</b>"
    return (f'<div class="judge"><h3>Judge calibration · {escape(str(calibration.get("judge", "")))}'
            f' on {escape(str(calibration.get("axis", "")))}</h3>'
            f'<p class="muted small">from {escape(str(calibration.get("where") or calibration.get("source", "")))}'
            f' · readability {_fmt(readability.get("value"), 2)} [{_fmt(readability.get("low"), 2)}, '
            f'{_fmt(readability.get("high"), 2)}] · {verdict} · correction: {escape(correction)}</p>'
            f'<table class="confusion"><tr><th></th>{head}<th>accuracy</th></tr>{"".join(body)}'
            f"</table></div>")


def _figure_line(row: ReportRow) -> str:
    level = f"{row.confidence * 100:g}% CI" if finite(row.confidence) else "CI"
    gate = (f"gated on its {row.gate_confidence * 100:g}% interval" if row.gate_confidence
            else "decided on the point value")
    burden = row.figures.get("burden")
    margin = f" · margin <b>{row.margin:+.3f}</b>" if finite(row.margin) else ""
    as_read = as_read_of(row)
    read = ("" if as_read is None else
            f" (corrected for the judge) · as read <b>{_fmt(as_read)}</b> · the verdict used "
            f"{escape(verdict_used(row))}")
    return (f"value <b>{_fmt(row.value)}</b>{read} · {level} [{_fmt(row.low)}, {_fmt(row.high)}] · "
            f"n {n_text(row)} · limit {escape(_limit(row))}{margin} · {gate}"
            + (f" (burden: {escape(burden)})" if burden else "")
            + f" · protocol <b>{escape(row.protocol)}</b>")


def _tables(row: ReportRow) -> list[Any]:
    """The kind's paper tables from the row's figures (``CheckKind.tables``)."""
    from ..kinds import CHECK_KINDS

    kind = CHECK_KINDS.get(row.check)
    return list(kind.tables(row.figures)) if kind is not None and kind.tables else []


def _interval_chart(row: ReportRow) -> str:
    """Each figure the check judged, with its interval, against the limit."""
    from ..kinds import CHECK_KINDS

    f = row.figures
    kind = CHECK_KINDS.get(row.check)
    entries: list[Interval] = list(kind.chart(f)) if kind is not None and kind.chart else []
    if not entries:  # one figure: the verdict's own value
        name = figure_name(row.check)
        entries = [Interval(f"{name} ({row.about or row.axis})" if row.about or row.axis
                            else name, row.value, row.low, row.high)]
    chart = interval_chart(entries[:30], row.threshold, at_most=bool(f.get("at_most", True)),
                           point=row.gate_confidence is None, what=row.check)
    more = (f'<p class="muted small">{len(entries) - 30} more in the JSON report</p>'
            if len(entries) > 30 else "")
    return (f'<figure class="chart-box"><figcaption>against the limit</figcaption>{chart}{more}'
            f'</figure>')


def _float(value: Any) -> float:
    return float(value) if finite(value) else float("nan")


def _bar_charts(row: ReportRow) -> list[str]:
    """The measured distribution(s) against the ideal, with an interval per share."""
    from ..metrics import wilson_interval

    f = row.figures
    level = row.confidence if finite(row.confidence) else 0.95
    found: list[tuple[str, list[str], dict[str, float], dict[str, int] | None, Any]] = []
    distribution = f.get("distribution")
    if isinstance(distribution, Mapping) and distribution.get("choices"):
        choices = [str(c) for c in distribution["choices"]]
        ideal = f.get("ideal") if isinstance(f.get("ideal"), Mapping) else \
            {c: 1 / len(choices) for c in choices}  # severity is 0 at the uniform distribution
        found.append(("", choices, dict(distribution.get("shares") or {}),
                      dict(distribution.get("counts") or {}), ideal))
    elif isinstance(f.get("counts"), Mapping) and isinstance(f.get("target"), Mapping):
        counted = {str(c): int(k) for c, k in f["counts"].items()}
        n = sum(counted.values())
        found.append(("", list(counted), {c: k / n if n else float("nan")
                                           for c, k in counted.items()}, counted, f["target"]))
    for bias in mappings(f.get("biases")):
        if isinstance(bias.get("classes"), list):
            classes = [str(c) for c in bias["classes"]]
            found.append((f"{bias.get('name', '')}: shares", classes,
                          dict(bias.get("shares") or {}), None,
                          {c: 1 / len(classes) for c in classes}))
    charts = []
    for title, choices, shares, counts, ideal in found[:6]:
        intervals = None
        if counts:
            n = sum(int(k) for k in counts.values())
            intervals = {}
            for c in choices:
                if n:
                    e = wilson_interval(int(counts.get(c, 0)), n, level)
                    intervals[c] = (e.low, e.high)
        chart = share_bars(choices, shares, intervals, ideal, counts=counts, title=title)
        extra = []
        if isinstance(distribution, Mapping) and not title:
            if distribution.get("filtered"):
                extra.append(f"{distribution['filtered']} filtered out")
            if distribution.get("abstentions"):
                extra.append(f"{distribution['abstentions']} abstained")
        caption = "shares against the ideal" + (f" ({', '.join(extra)})" if extra else "")
        charts.append(f'<figure class="chart-box"><figcaption>{escape(caption)}</figcaption>'
                      f'{chart}</figure>')
    return charts


# -- the image grid ---------------------------------------------------------------------------


class Pills:
    """One background colour per distinct answer across the report."""

    def __init__(self) -> None:
        self.colours: dict[str, str] = {}

    def __call__(self, label: str) -> str:
        if label not in self.colours:
            self.colours[label] = PALETTE[len(self.colours) % len(PALETTE)]
        return self.colours[label]


class Thumbnails:
    """Cached images as data URIs, each read and encoded once; None for a missing one.

    Each distinct image is inlined once in the page, as an SVG ``<image id="imN">`` in one
    sprite (``sprite``), and every tile that shows it draws a ``<use href="#imN">``: a check
    that shows an image another showed costs a few bytes, not the image again (the example
    run inlined 48 images 104 times, 304 of its 356 KB)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.missing = 0
        self._uris: dict[str, tuple[str, int, int] | None] = {}
        self._ids: dict[str, str] = {}

    def __call__(self, key: Any) -> tuple[str, int, int] | None:
        """``(#id, width, height)`` of the image at cache ``key``; None: not in the cache."""
        key = str(key)
        if key not in self._uris:
            self._uris[key] = self._load(key)
            self.missing += self._uris[key] is None
            if self._uris[key] is not None:
                self._ids[key] = f"im{len(self._ids)}"
        found = self._uris[key]
        return None if found is None else (f"#{self._ids[key]}", found[1], found[2])

    def sprite(self) -> str:
        """Every image shown, inlined once (``<image>`` in an SVG's ``<defs>``); empty for
        none. Drawn after every tile asked for its image, so it holds exactly those."""
        images = "".join(
            f'<image id="{self._ids[key]}" href="{found[0]}" width="84" height="84" '
            f'preserveAspectRatio="xMidYMid meet"/>'
            for key, found in self._uris.items() if found is not None)
        return (f'<svg class="sprite" width="0" height="0" aria-hidden="true"><defs>{images}'
                f'</defs></svg>' if images else "")

    def _load(self, key: str) -> tuple[str, int, int] | None:
        if self.root is None or not IMAGE_KEY.fullmatch(key):
            return None
        path = self.root / "images" / key[:2] / f"{key}.png"
        from PIL import Image

        from ..store.cache import MAX_IMAGE_BYTES, read_entry

        try:  # a regular file of bounded size only: never a FIFO waited on (#35)
            with Image.open(io.BytesIO(read_entry(path, MAX_IMAGE_BYTES))) as opened:
                image = opened.convert("RGB")
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
            return None  # absent, unreadable, not a file, not an image or a decompression bomb
        buffer = io.BytesIO()
        if max(image.size) <= THUMB_PX:
            image.save(buffer, "PNG", optimize=True)
            kind = "png"
        else:
            image.thumbnail((THUMB_PX, THUMB_PX))
            image.save(buffer, "JPEG", quality=82)
            kind = "jpeg"
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        return f"data:image/{kind};base64,{data}", image.size[0], image.size[1]


def _gallery(gallery: Mapping[str, Any], row: ReportRow, thumbnails: Thumbnails,
             pills: Pills) -> str:
    axes = [str(a) for a in gallery.get("axes") or []]
    named = [a for a in axes if a] or [row.about or row.axis or "answer"]
    groups = [g for g in gallery.get("groups") or [] if isinstance(g, Mapping)]
    blocks = [_group(g, thumbnails, pills) for g in groups]
    total = int(gallery.get("prompts") or len(groups))
    more = (f'<p class="muted small">{total - len(groups)} more prompts not shown</p>'
            if total > len(groups) else "")
    return (f'<div class="gallery"><h3>What the judges saw</h3><p class="muted small">labels: '
            f'{escape(" · ".join(named))}; {escape(_shown(gallery))} of each prompt '
            f'(--t2i-html-images)</p><div class="groups">{"".join(blocks)}</div>{more}</div>')


def _shown(gallery: Mapping[str, Any]) -> str:
    """Which images a prompt the gallery kept: all, or the first N."""
    cap = gallery.get("per_prompt")
    return "all images" if cap is None else f"the first {cap} images"


def _group(group: Mapping[str, Any], thumbnails: Thumbnails, pills: Pills) -> str:
    images = [i for i in group.get("images") or [] if isinstance(i, Mapping)]
    role = str(group.get("role") or "")
    badge = f' <span class="role {escape(role)}">{escape(role)}</span>' if role else ""
    tiles = "".join(_tile(image, thumbnails, pills) for image in images)
    n = group.get("n", len(images))
    return (f'<div class="group"><h4>{escape(group.get("prompt", ""))}{badge}</h4>'
            f'<p class="muted small">{len(images)} of {escape(n)} images</p>'
            f'<div class="grid">{tiles}</div></div>')


def _tile(image: Mapping[str, Any], thumbnails: Thumbnails, pills: Pills) -> str:
    labels = [str(label) for label in image.get("labels") or [] if label is not None]
    mark = str(image.get("mark") or "")
    if mark not in ("filtered", "abstained"):
        mark = ""
    words = "".join(f'<span class="pill" style="background:{pills(label)}">{escape(label)}'
                    f'</span>' for label in labels)
    if mark:
        words += f'<span class="pill mark">{mark}</span>'
    alt = escape(" · ".join(labels + ([mark] if mark else [])) or "no answer")
    found = thumbnails(image.get("key", ""))
    if found is None:
        picture = f'<div class="missing" title="{escape(image.get("key", ""))}">not in cache</div>'
    else:
        ref, width, height = found
        small = " pixel" if max(width, height) <= 64 else ""
        picture = (f'<svg class="thumb{small}" viewBox="0 0 84 84" width="84" height="84" '
                   f'role="img" aria-label="{alt}"><use href="{ref}"/></svg>')
    return (f'<figure class="tile {mark}">{picture}<figcaption>{words or "–"}</figcaption>'
            f'</figure>')


CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #f6f8fa; color: #1f2328;
       font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; }
main { max-width: 1360px; margin: 0 auto; padding: 24px 28px 48px; }
header h1 { margin: 0 0 4px; font-size: 26px; }
h2 { font-size: 18px; margin: 0 0 6px; }
h3 { font-size: 14px; margin: 14px 0 6px; color: #424a53; }
h4 { font-size: 13px; margin: 0 0 2px; font-weight: 600; }
.meta, .muted { color: #57606a; }
.small { font-size: 12px; }
.tally { font-size: 15px; margin: 10px 0 18px; }
.tally .badge { margin-left: 6px; }
.interrupted { background: #c62828; color: #fff; padding: 6px 12px; border-radius: 6px; }
section { background: #fff; border: 1px solid #d0d7de; border-radius: 8px;
          padding: 16px 20px; margin: 0 0 18px; }
section.attention { border-left: 5px solid #c62828; }
.badge { display: inline-block; padding: 1px 9px; border-radius: 12px; font-size: 12px;
         font-weight: 600; vertical-align: 2px; white-space: nowrap; }
.badge.pass { background: #dafbe1; color: #116329; }
.badge.fail, .badge.error { background: #c62828; color: #fff; }
.badge.xfail { background: #ede9fe; color: #5b21b6; }
.badge.xpass { background: #fb8c00; color: #fff; }
.badge.undecided { background: #fff4d6; color: #7a4d00; border: 1px dashed #b26a00; }
.run-grid { display: grid; grid-template-columns: minmax(0, 1.6fr) minmax(0, 1fr); gap: 4px 28px; }
table { border-collapse: collapse; }
table.plain td, table.plain th { border-bottom: 1px solid #eaeef2; padding: 3px 8px;
                                 text-align: left; vertical-align: top; font-size: 12.5px; }
table.plain thead th { color: #57606a; font-weight: 600; }
table.settings th { font-weight: 500; color: #424a53; white-space: nowrap; }
td.path { overflow-wrap: anywhere; }
code.fp { font-size: 11px; overflow-wrap: anywhere; color: #424a53; }
table.toc { width: 100%; }
table.toc th, table.toc td { padding: 5px 8px; border-bottom: 1px solid #eaeef2;
                             text-align: left; vertical-align: top; }
table.toc thead th { font-size: 12px; color: #57606a; }
table.toc td.num, table.toc th.num { text-align: right; font-variant-numeric: tabular-nums;
                                     white-space: nowrap; }
a { color: #0969da; text-decoration: none; }
a:hover { text-decoration: underline; }
.where { font-weight: 400; color: #424a53; }
p.figure { margin: 6px 0; font-variant-numeric: tabular-nums; }
p.reason { margin: 6px 0; color: #c62828; font-weight: 600; }
pre.message { background: #f6f8fa; border: 1px solid #eaeef2; border-radius: 6px;
               padding: 10px 12px; font-size: 12px; line-height: 1.45; white-space: pre-wrap;
               word-break: break-word; margin: 8px 0; }
.charts { display: flex; flex-wrap: wrap; gap: 10px 28px; align-items: flex-start; }
figure { margin: 0; }
.chart-box figcaption { font-size: 12px; color: #57606a; margin: 6px 0 2px; }
svg.chart { max-width: 100%; height: auto; }
table.heatmap { margin: 4px 0; }
table.heatmap th { font-size: 12px; font-weight: 600; padding: 4px 10px; text-align: center; }
table.heatmap th[scope=row] { text-align: right; }
table.heatmap th.corner { color: #57606a; font-weight: 400; font-size: 11px; }
table.heatmap td { width: 128px; height: 52px; text-align: center; font-size: 13px;
                   border: 2px solid #fff; font-variant-numeric: tabular-nums; }
table.heatmap td small { font-size: 11px; }
.legend { display: flex; gap: 10px; align-items: center; font-size: 12px; margin: 6px 0; }
.legend .gradient { display: inline-block; width: 240px; height: 12px; border-radius: 2px; }
.groups { display: flex; flex-wrap: wrap; gap: 12px 14px; align-items: flex-start; }
.gallery .group { width: 400px; border: 1px solid #eaeef2; border-radius: 6px; padding: 8px;
                  background: #fbfcfd; }
.gallery h4 { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px;
             word-break: break-word; }
.gallery .group p { margin: 0 0 6px; }
.role { font-family: system-ui, sans-serif; font-size: 11px; padding: 0 6px; border-radius: 8px;
        background: #eaeef2; color: #424a53; font-weight: 500; }
.role.baseline { background: #fff1e5; color: #8a4600; }
.role.candidate { background: #ddf4ff; color: #0550ae; }
.grid { display: grid; grid-template-columns: repeat(4, 90px); gap: 6px; }
.tile { width: 90px; border: 1px solid #d0d7de; border-radius: 5px; padding: 2px;
        background: #fff; }
.sprite { position: absolute; }
.tile svg.thumb, .tile .missing { display: block; width: 84px; height: 84px; object-fit: contain;
                            border-radius: 3px; background: #f6f8fa; }
.tile svg.pixel { image-rendering: pixelated; }
.tile .missing { display: flex; align-items: center; justify-content: center; color: #8c959f;
                 font-size: 11px; border: 1px dashed #d0d7de; }
.tile figcaption { display: flex; flex-wrap: wrap; gap: 3px; margin-top: 3px; min-height: 18px; }
.pill { font-size: 10.5px; line-height: 15px; padding: 0 4px; border-radius: 7px;
        color: #1f2328; white-space: nowrap; }
.pill.mark { background: #fff; border: 1px dashed #8c959f; color: #57606a; }
.tile.filtered svg.thumb, .tile.abstained svg.thumb { opacity: 0.45; filter: grayscale(0.7); }
.tile.filtered { border-style: dashed; }
footer { font-size: 12px; margin-top: 8px; }
"""


def figure_name(check: str) -> str:
    """What a kind's single figure is called on its chart (``CheckKind.figure``)."""
    from ..kinds import CHECK_KINDS

    kind = CHECK_KINDS.get(check)
    return kind.figure_name if kind is not None else check
