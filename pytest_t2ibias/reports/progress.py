"""Progress of generation and scoring, on stderr, in the form the reader can use.

A live bar on a terminal (phase, model, done / total, rate, elapsed, ETA), a line every
``every_s`` seconds in a CI log (no cursor tricks in a file), one line a phase under ``-q``.
``RequestLayer`` drives it through ``phase(...)``; the pytest glue chooses the form, and
nothing is shown at ``-qq``. xdist workers share the controller's terminal: they write
whole lines (never a live bar) tagged with the worker's name, so none overwrites another.

The phase names a question, which is user text: it reaches rich only as ``Text``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import IO, Literal

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

Mode = Literal["live", "lines", "summary"]


class TerminalProgress:
    """Shows each phase of work that ``RequestLayer`` computes (cache hits are no work)."""

    def __init__(self, stream: IO[str], mode: Mode, *,
                 pause: Callable[[], AbstractContextManager] = nullcontext,
                 before: Callable[[], None] = lambda: None,
                 every_s: float = 30.0,
                 name: str = "t2ibias",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.mode = mode
        self.pause = pause
        """Lifts output capture for the phase (pytest captures the test call's stderr)."""
        self.before = before
        """Ends the half-written line of dots pytest may have left on the terminal."""
        self.every_s = every_s
        self.name = name
        self.clock = clock

    @contextmanager
    def phase(self, what: str, total: int, model: str) -> Iterator[Callable[[int], None]]:
        """A context whose value is ``advance(n)``: call it as batches finish."""
        title = f"{what} · {model}" if model else what
        started = self.clock()
        done = 0
        with self.pause():
            if self.mode == "live":
                self.before()
                with _live_bar(self.stream) as bar:
                    task = bar.add_task(title, total=total)

                    def advance(n: int) -> None:
                        nonlocal done
                        done += n
                        bar.update(task, advance=n)

                    yield advance
            else:
                last_line = started
                if self.mode == "lines":
                    self.before()
                    self._line(f"{title}: {total} to compute")

                def advance(n: int) -> None:
                    nonlocal done, last_line
                    done += n
                    now = self.clock()
                    if self.mode == "lines" and now - last_line >= self.every_s and done < total:
                        last_line = now
                        self._line(f"{title}: {done}/{total} "
                                   f"({_rate(done, now - started)}, ETA {_eta(done, total, now - started)})")

                yield advance
            elapsed = self.clock() - started
            self._line(f"{title}: {done}/{total} in {_clock(elapsed)} ({_rate(done, elapsed)})")

    def _line(self, line: str) -> None:
        console = Console(file=self.stream, highlight=False, soft_wrap=True,
                          force_terminal=self.mode == "live", no_color=self.mode != "live")
        console.print(Text(f"{self.name}: ", style="bold") + Text(line))


def _live_bar(stream: IO[str]) -> Progress:
    console = Console(file=stream, force_terminal=True, highlight=False)
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=True,  # the phase's one-line summary replaces the bar
    )


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        return Text(f"{task.speed:.2f}/s" if task.speed else "-/s", style="progress.data.speed")


def _rate(done: int, seconds: float) -> str:
    return f"{done / seconds:.2f}/s" if seconds > 0 and done else "-/s"


def _eta(done: int, total: int, seconds: float) -> str:
    return _clock(seconds / done * (total - done)) if done else "?"


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
