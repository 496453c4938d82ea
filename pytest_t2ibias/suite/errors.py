"""The error a malformed suite raises: where (file:line) and what is wrong, as plain text."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class SuiteError(ValueError):
    """One problem in a suite file, rendered ``path:line: message``.

    The loader reports every problem of a file at once: the raised error is the first (by
    line) and ``problems`` lists all of them; ``str()`` renders them one per line, so the
    message survives pytest-xdist, which ships collection errors as strings.
    """

    def __init__(self, path: Path | str, line: int, message: str, column: int | None = None):
        self.path = Path(path)
        self.line = line
        self.message = message
        self.column = column
        self.problems: tuple[SuiteError, ...] = (self,)
        super().__init__(self.headline)

    @property
    def headline(self) -> str:
        return self._headline(self.path)

    def __str__(self) -> str:
        return "\n".join(problem.headline for problem in self.problems)

    def render(self, relative_to: Path | None = None) -> str:
        """All problems, one per line, with paths relative to ``relative_to`` where inside it."""
        return "\n".join(problem._headline(_relative(problem.path, relative_to))
                         for problem in self.problems)

    def _headline(self, path: Path) -> str:
        where = f"{path}:{self.line}" + (f":{self.column}" if self.column else "")
        return f"{where}: {self.message}"

    @classmethod
    def combine(cls, problems: Iterable[SuiteError]) -> SuiteError:
        """One error standing for all ``problems`` (sorted by line); they must not be empty."""
        ordered = sorted(problems, key=lambda problem: problem.line)
        first = ordered[0]
        first.problems = tuple(ordered)
        return first


def _relative(path: Path, root: Path | None) -> Path:
    if root is None:
        return path
    try:
        return path.resolve().relative_to(root.resolve())
    except ValueError:
        return path
