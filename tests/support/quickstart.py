"""The README's quick-start files and commands, as the wheel and docs tests read them."""

from __future__ import annotations

import re


def quickstart_blocks(readme: str) -> dict[str, str]:
    """The README's quick-start files: ``<!-- quickstart: PATH -->`` then a fenced block."""
    return dict(re.findall(r"<!-- quickstart: (\S+) -->\n```\w*\n(.*?)```\n", readme, re.S))


def quickstart_commands(readme: str) -> list[str]:
    """The README's indented ``pytest ...`` and ``t2ibias ...`` lines, in order."""
    return re.findall(r"^    ((?:pytest|t2ibias) .*)$", readme, re.M)


