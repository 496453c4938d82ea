"""MkDocs hooks for the documentation site (``hooks:`` in mkdocs.yml).

``<!-- options table -->`` in a page becomes the table of every ``--t2i-`` option, from the
plugin's own list (``_settings.OPTIONS``, what ``pytest --help`` prints), so the reference
cannot miss one.

The docs write matrix entries as ``IS[x][y]``, which Markdown reads as a reference link and
mkdocs-autorefs (mkdocstrings' cross-references) then reports as a missing target, failing
``mkdocs build --strict``. The docs define no reference links, so the brackets of such a pair
outside code are escaped before Markdown sees them; the page renders the same text.
"""

from __future__ import annotations

import re

_PAIR = re.compile(r"(?<![\\`])\[([^\]\[`]+)\]\[([^\]\[`]*)\]")
_FENCE = re.compile(r"^\s*(```|~~~)")


def escape_bracket_pairs(markdown: str) -> str:
    """``a[x][y]`` -> ``a\\[x\\]\\[y\\]`` outside fenced blocks and inline code."""
    lines, fenced = [], False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced or _FENCE.match(line):
            lines.append(line)
            continue
        parts = line.split("`")  # odd parts are inside inline code
        parts[::2] = [_PAIR.sub(r"\\[\1\\]\\[\2\\]", part) for part in parts[::2]]
        lines.append("`".join(parts))
    return "".join(lines)


OPTIONS_MARKER = "<!-- options table -->"


def options_table() -> str:
    """Option, ini key, what it does and its default, one row per ``--t2i-`` option."""
    from pytest_t2ibias._settings import OPTIONS

    rows = ["| option | ini key | what it sets | default |", "| --- | --- | --- | --- |"]
    for option in OPTIONS:
        value = option.metavar or ("" if option.flag else "VALUE")
        shown = f"`{option.cli}`" + (f" `{value}`" if value else "")
        if option.repeatable:
            shown += " (repeatable)"
        default = "" if option.default in (None, False, ()) else f"`{option.default}`"
        words = option.help.replace("|", "\\|")
        rows.append(f"| {shown} | `{option.name}` | {words} | {default} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, **_: object) -> str:
    if OPTIONS_MARKER in markdown:
        markdown = markdown.replace(OPTIONS_MARKER, options_table())
    return escape_bracket_pairs(markdown)
