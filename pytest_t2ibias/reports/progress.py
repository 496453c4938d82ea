"""Progress of generation and scoring, on stderr, in the form the reader can use.

A live bar on a terminal (phase, model, done / total, rate, elapsed, ETA); in a CI log one
line for the whole run at most every ``every_s`` seconds (done / planned images and answers,
the current phase, an ETA from the plan's totals: a log of an hour's gate reads as one run,
not 771 batches), no cursor tricks in a file; one line a phase under ``-q``.
``RequestLayer`` drives it through ``phase(...)``; the pytest glue chooses the form, and
nothing is shown at ``-qq``. xdist workers share the controller's terminal: they write
whole lines (never a live bar) tagged with the worker's name, so none overwrites another.

The phase names a question, which is user text: it reaches rich only as ``Text``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import IO, Any, Literal

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


class RunTally:
    """The whole run's work: planned totals, what was computed, and the seconds it took,
    per kind (an image costs a hundred answers, so each kind has its own rate)."""

    def __init__(self, planned_images: int = 0, planned_answers: int = 0) -> None:
        self.planned = {"images": planned_images, "answers": planned_answers}
        self.done = {"images": 0, "answers": 0}
        self.seconds = {"images": 0.0, "answers": 0.0}

    def total(self, kind: str) -> int:
        """The plan's total, or what was done when search kinds asked for more."""
        return max(self.planned[kind], self.done[kind])

    def eta_seconds(self) -> float | None:
        """Seconds left at this run's rate per kind; None before any rate is known."""
        left = 0.0
        known = False
        for kind in ("images", "answers"):
            if self.done[kind]:
                known = True
                left += (self.total(kind) - self.done[kind]) * self.seconds[kind] / self.done[kind]
        return left if known else None

    def describe(self) -> str:
        return ", ".join(f"{self.done[kind]}/{self.total(kind)} {kind}"
                         for kind in ("images", "answers"))


def planned_work(planned: Sequence[Any], unplanned_images: int = 0) -> RunTally:
    """The whole run's images and answers as the session plan will ask them (``prefetch``'s
    planned kinds), each shared image counted once, plus ``unplanned_images``: what the other
    kinds' plans say they cost (``--t2i-plan``'s count; answered at the planned kinds' rate
    per image). Search kinds with no count add theirs as they go."""
    from ..prefetch import axes_read, image_needs, is_planned

    images: set[tuple] = set()
    answers: set[tuple] = set()
    for item in planned:
        if not is_planned(item):
            continue
        try:
            needs = image_needs(item)
            read = [axis.name for axis in axes_read(item)]
        except Exception:  # noqa: BLE001 - the item's own run reports what is wrong with it
            continue
        questions = read + (["<filter>"] if item.suite.filter is not None else [])
        sampling = tuple(sorted(item.plan.sampling.items(), key=lambda kv: kv[0]))
        for role, prompts in needs:
            model = item.plan.model(role)
            for prompt in prompts:
                for index in range(item.plan.images_per_prompt):
                    image = (model, prompt, item.plan.seed, index, sampling)
                    images.add(image)
                    answers.update((image, question) for question in questions)
    per_image = len(answers) / len(images) if images else 1.0
    return RunTally(len(images) + unplanned_images,
                    len(answers) + round(unplanned_images * per_image))


def kind_of(what: str) -> str:
    """The tally a phase counts in: generation is images, every question answers."""
    return "images" if what.startswith("generating") else "answers"


class TerminalProgress:
    """Shows each phase of work that ``RequestLayer`` computes (cache hits are no work)."""

    def __init__(self, stream: IO[str], mode: Mode, *,
                 pause: Callable[[], AbstractContextManager] = nullcontext,
                 before: Callable[[], None] = lambda: None,
                 every_s: float = 30.0,
                 name: str = "t2ibias",
                 clock: Callable[[], float] = time.monotonic,
                 tally: RunTally | None = None) -> None:
        self.stream = stream
        self.mode = mode
        self.pause = pause
        """Lifts output capture for the phase (pytest captures the test call's stderr)."""
        self.before = before
        """Ends the half-written line of dots pytest may have left on the terminal."""
        self.every_s = every_s
        self.name = name
        self.clock = clock
        self.tally = tally or RunTally()
        self._run_started = self._last_run_line = 0.0  # set when the first phase begins
        self._running = False

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
                kind = kind_of(what)
                if not self._running:
                    self._running = True
                    self._run_started = self._last_run_line = started
                    if self.mode == "lines":
                        self.before()
                        self._line(f"run: {self.tally.describe()} planned (before the cache; "
                                   f"a line every {self.every_s:g} s)")
                last_advance = started

                def advance(n: int) -> None:
                    nonlocal done, last_advance
                    done += n
                    now = self.clock()
                    self.tally.done[kind] += n
                    self.tally.seconds[kind] += now - last_advance
                    last_advance = now
                    if self.mode == "lines" and now - self._last_run_line >= self.every_s:
                        self._last_run_line = now
                        self.before()
                        self._line(self._run_line(title, now))

                yield advance
            if self.mode != "lines":  # in a log the run's line says it: a line a phase drowned it
                elapsed = self.clock() - started
                self._line(f"{title}: {done}/{total} in {_clock(elapsed)} ({_rate(done, elapsed)})")

    def _run_line(self, title: str, now: float) -> str:
        eta = self.tally.eta_seconds()
        elapsed = now - self._run_started
        return (f"run: {self.tally.describe()} · {title} · {_clock(elapsed)} elapsed, "
                f"ETA {'?' if eta is None else _clock(eta)}")

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


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
