"""MkDocs hooks for the documentation site (``hooks:`` in mkdocs.yml).

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


def on_page_markdown(markdown: str, **_: object) -> str:
    return escape_bracket_pairs(markdown)
