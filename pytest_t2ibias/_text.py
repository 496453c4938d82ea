"""One rule for user text on its way to a terminal, a log or a page: characters are shown,
never obeyed.

Subjects, prompts, questions and what an LLM proposed reach the terminal through pytest's
failure headers, the plugin's messages and node ids; an ESC in one could clear the screen or
plant a hyperlink, a CR could overwrite a line. Every character that is not printable is
written as its escape (``\\x1b``); line breaks may be kept where a message has lines of its
own.
"""

from __future__ import annotations

from typing import Any

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Bidirectional overrides: printable to Python, yet they reorder what a reader sees."""


def shown(value: Any, *, keep_newlines: bool = False) -> str:
    """``value`` as text whose every character is shown, not obeyed."""
    kept = " \n" if keep_newlines else " "
    return "".join(c if (c.isprintable() and c not in BIDI_CONTROLS) or c in kept
                   else c.encode("unicode_escape").decode() for c in str(value))


def first_unsafe(text: str) -> str | None:
    """The first character of ``text`` that ``shown`` would escape (line breaks included),
    as written in an escape; None if there is none."""
    for c in text:
        if not c.isprintable() or c in BIDI_CONTROLS:
            return c.encode("unicode_escape").decode()
    return None
