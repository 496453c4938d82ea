"""Progress of generation and scoring, in the form the reader can use.

A live bar on a terminal (phase, model, done / total, rate, elapsed, ETA, on stderr); in a CI
log one line for the whole run at most every ``every_s`` seconds (done / expected images and
answers, the current phase, an ETA: a log of an hour's gate reads as one run, not 771
batches), written by pytest's terminal reporter between its own lines (``ReporterLines``),
no cursor tricks in a file; one line a phase under ``-q``. The whole run's total
(``RunTally``) is the session plan's work and each search's estimate
(``CheckKind.expected_work``), corrected as checks finish. ``RequestLayer`` drives it
through ``phase(...)``; the pytest glue chooses the form, and nothing is shown at ``-qq``.
xdist workers share the controller's terminal: they write whole lines (never a live bar)
tagged with the worker's name on stderr, so none overwrites another.

The phase names a question, which is user text: it reaches rich only as ``Text``.
"""

from __future__ import annotations

import ast
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # rich loads with the first line shown: the tally is counted in every run
    from rich.progress import Progress

Mode = Literal["live", "lines", "summary"]


KINDS = ("images", "answers")
PLAN = "the session plan"
"""The bucket of the work ``prefetch`` computes for every planned check at once."""


class RunTally:
    """The whole run's work, in buckets: the session plan's (``PLAN``), each search item's
    (by node id) and whatever else runs (a Python test's fixtures: unknown up front, 0).

    A bucket expects what its estimate says; work done while it is current counts against
    it. The total is what was done plus what each open bucket still expects, so it grows
    when a bucket outruns its estimate and shrinks when one finishes early (``close``); the
    ETA prices what is left at this run's seconds per image and per answer (an image costs
    a hundred answers), scaled by the time spent outside any computing (loading, the
    statistics): a run that computes half the time is not nearly done at half its work."""

    def __init__(self, planned_images: int = 0, planned_answers: int = 0, *,
                 expected: dict[str, dict[str, int]] | None = None) -> None:
        self.expected = {PLAN: {"images": planned_images, "answers": planned_answers},
                         **(expected or {})}
        self.done_in: dict[str, dict[str, int]] = {}
        self.closed: set[str] = set()
        self.current = PLAN
        self.seconds = {"images": 0.0, "answers": 0.0}
        """Seconds spent computing each kind (between one batch's end and the next's)."""
        self.started: float | None = None
        """When the first counted work began (the wall time the overhead is measured on)."""
        self.plan_work: dict[str, dict[tuple, dict[str, int]]] = {"images": {}, "answers": {}}
        """The session plan's work by the prefix of its identity (``work_identity`` less the
        index): the images a prompt it draws (its first n), the answers a question: what
        another bucket (a Python test drawing the same images first) computes of it is no
        longer left to the plan, so the total does not count it twice (issue #36). Per
        prompt, not per image, so it holds any run (#35)."""
        self.unknown: list[str] = []
        """Items whose work could not be worked out before they run (``Work.error``): not in
        the total until they run, which reports why."""
        self.asked_as: dict[str, str] = {}
        """A question's text as the judge is asked it -> the plan's key for it (an axis' name,
        ``<filter>``): an answer to another question, on an image the plan draws, is not the
        plan's work (a Python test asking its own question)."""
        self._credited: dict[str, Counter] = {"images": Counter(), "answers": Counter()}
        self.covered = {"images": 0, "answers": 0}
        """The plan's work computed outside its bucket."""

    def expect(self, work: RunTally) -> None:
        """Take ``work``'s expectations (``planned_work``: known once the run is collected)."""
        self.expected = dict(work.expected)
        self.plan_work = {kind: dict(work.plan_work[kind]) for kind in KINDS}
        self.asked_as = dict(work.asked_as)
        self._credited = {kind: Counter() for kind in KINDS}

    def computed(self, kind: str, identities: Sequence[tuple], question: str = "") -> None:
        """Work of ``kind`` just computed (answers: to ``question``); outside the plan's
        bucket, what of it the plan expected counts as the plan's (it will find it cached)."""
        if self.current == PLAN:
            return
        asked = "" if kind == "images" else self.asked_as.get(question)
        if asked is None:  # a question the plan never asks
            return
        for identity in identities:
            planned = self.plan_work[kind].get(tuple(identity[:-1]), {})
            credit = tuple(identity) + (asked,)  # not (*identity, asked): mypy 2.4 misreads it
            if identity[-1] < planned.get(asked, 0) and not self._credited[kind][credit]:
                self._credited[kind][credit] += 1
                self.covered[kind] += 1

    @property
    def planned(self) -> dict[str, int]:
        """Everything expected up front, per kind."""
        return {kind: sum(work.get(kind, 0) for work in self.expected.values()) for kind in KINDS}

    @property
    def done(self) -> dict[str, int]:
        return {kind: sum(work[kind] for work in self.done_in.values()) for kind in KINDS}

    def add(self, kind: str, n: int, seconds: float, now: float) -> None:
        """``n`` of ``kind`` computed in the ``seconds`` up to ``now``, for the current bucket."""
        if self.started is None:
            self.started = now - seconds
        self.done_in.setdefault(self.current, {"images": 0, "answers": 0})[kind] += n
        self.seconds[kind] += seconds

    @contextmanager
    def working_on(self, bucket: str) -> Iterator[None]:
        """Count the work computed meanwhile against ``bucket`` (an item's node id, ``PLAN``);
        the bucket is closed after: what it did not compute it will not."""
        previous, self.current = self.current, bucket
        try:
            yield
        finally:
            self.current = previous
            self.closed.add(bucket)

    def left(self, kind: str) -> int:
        """What the open buckets still expect."""
        done_in = self.done_in
        return sum(max(work.get(kind, 0) - done_in.get(bucket, {}).get(kind, 0)
                       - (self.covered[kind] if bucket == PLAN else 0), 0)
                   for bucket, work in self.expected.items() if bucket not in self.closed)

    def total(self, kind: str) -> int:
        """Done so far plus what is still expected."""
        return self.done[kind] + self.left(kind)

    def eta_seconds(self, now: float | None = None) -> float | None:
        """Seconds left: what is left of each kind at this run's rate for it, scaled by the
        share of the wall time spent outside computing; None before any rate is known.
        A kind with work left and no rate yet is priced as the other (an answer at a
        hundredth of an image) rather than as free."""
        done = self.done
        rate = {kind: self.seconds[kind] / done[kind] for kind in KINDS if done[kind]}
        if not rate:
            return None
        rate.setdefault("answers", rate.get("images", 0.0) / 100)
        rate.setdefault("images", rate["answers"] * 100)
        computing = sum(self.seconds.values())
        wall = now - self.started if now is not None and self.started is not None else computing
        overhead = max(wall / computing, 1.0) if computing > 0 else 1.0
        return overhead * sum(self.left(kind) * rate[kind] for kind in KINDS)

    def describe(self) -> str:
        return ", ".join(f"{self.done[kind]}/{self.total(kind)} {kind}" for kind in KINDS)


def planned_work(planned: Sequence[Any], unplanned_images: int = 0, *,
                 nodeids: Sequence[str] | None = None,
                 works: Sequence[Any] | None = None) -> RunTally:
    """The whole run's images and answers before anything runs: the session plan's
    (``prefetch``'s planned kinds, each shared image counted once) and each search item's
    ``CheckKind.expected_work`` (by its node id, ``nodeids[i]`` for ``planned[i]``; a planned
    kind may declare one too for what its plan does not name; less what is already counted), plus ``unplanned_images``: what the other kinds' plans say they cost
    (``--t2i-plan``'s count; answered at the planned kinds' rate per image). Python tests
    add theirs as they go. ``works``: each item's ``Work`` as the session plan has it (else
    worked out here)."""
    from ..kinds import work_of

    # Image i of a prompt is one image whoever asks, so the images counted of a (model,
    # prompt, seed, sampling) are always its first n: a count per prompt (and per prompt and
    # question), never a set per image, holds what the run plans (#35: 2.9 GB for a valid
    # suite of 10,000,000 images before the first one).
    images: dict[tuple, int] = {}
    answers: dict[tuple, int] = {}
    plan_work: dict[str, dict[tuple, dict[str, int]]] = {"images": {}, "answers": {}}
    asked_as: dict[str, str] = {}
    in_plan = True  # the session plan's part comes first, then the searches' estimates
    unknown: list[str] = []
    """Items whose work could not be worked out: counted by their runs, named by the tally."""

    def count(item: Any, role: str | None, prompt: str, n: int, questions: Sequence[str]
              ) -> tuple[int, int]:
        sampling = tuple(sorted(item.plan.sampling.items(), key=lambda kv: kv[0]))
        model = item.plan.model(role) if role is not None else None
        drawn = (model, prompt, item.plan.seed, sampling)
        new_images = 0
        if role is not None:
            new_images = max(n - images.get(drawn, 0), 0)
            images[drawn] = max(n, images.get(drawn, 0))
            if in_plan:  # its first n images, by the prefix of their identity
                planned = plan_work["images"].setdefault(
                    work_identity("images", model, prompt, item.plan.seed, 0)[:-1], {})
                planned[""] = max(n, planned.get("", 0))
        new_answers = 0
        for question in dict.fromkeys(questions):
            asked = answers.get((drawn, question), 0)
            new_answers += max(n - asked, 0)
            answers[(drawn, question)] = max(n, asked)
            if in_plan:  # the first n images' answers to each question
                planned = plan_work["answers"].setdefault(
                    work_identity("answers", model, prompt, item.plan.seed, 0)[:-1], {})
                planned[question] = max(n, planned.get(question, 0))
        return new_images, new_answers

    estimates: list[tuple[str, Any, tuple]] = []
    for position, item in enumerate(planned):
        work = works[position] if works is not None else work_of(item)
        nodeid = nodeids[position] if nodeids else f"item {position}"
        if work.error is not None:  # its run reports it; the total says it is not counted
            unknown.append(nodeid)
            continue
        if work.expected is not None:
            # a search, or a planned kind that does more than its plan names (open_set's
            # judge audit): its estimate, less what the plan counts, in its own bucket
            estimates.append((nodeid, item, work.expected))
        for draw in work.planned:  # the kind's own, then its judge's calibration
            questions = [axis.name for axis in draw.axes] + (
                ["<filter>"] if item.suite.filter is not None else [])
            for axis in draw.axes:  # the judge asks an axis as its question, a classifier
                for text in (axis.question, f"<classify {axis.name}>",  # by name, or in parts
                             *(part.question for part in axis.parts)):
                    asked_as.setdefault(text, axis.name)
            if item.suite.filter is not None:
                asked_as.setdefault(item.suite.filter.question, "<filter>")
            count(item, draw.role, draw.prompt, draw.images, questions)
    in_plan = False
    planned_images, planned_answers = sum(images.values()), sum(answers.values())
    per_image = planned_answers / planned_images if planned_images else 1.0
    tally_plan = (planned_images + unplanned_images,
                  planned_answers + round(unplanned_images * per_image))
    expected: dict[str, dict[str, int]] = {}
    for nodeid, item, work in estimates:
        bucket = expected.setdefault(nodeid, {"images": 0, "answers": 0})
        for each in work:
            new_images, new_answers = count(item, each.role, each.prompt, each.images,
                                            each.questions)
            bucket["images"] += new_images
            bucket["answers"] += new_answers
    tally = RunTally(*tally_plan, expected=expected)
    tally.plan_work = plan_work
    tally.unknown = unknown
    tally.asked_as = asked_as
    return tally


def work_identity(kind: str, model: str | None, prompt: str, seed: int | None, index: int
                  ) -> tuple:
    """What names one image (its generator's name, prompt, seed, index) or one answer (its
    image's prompt, seed and index: an answer does not know its generator), alike for the
    plan and for the request layer's work."""
    if kind == "images":
        name = Path(model).name if model and Path(model).exists() else model
        return (name, prompt, seed, index)
    return (prompt, seed, index)


def question_of(what: str) -> str:
    """The question a phase answers (``answering 'What is ...?'``); "" for images."""
    prefix = "answering "
    if not what.startswith(prefix):
        return ""
    try:
        return str(ast.literal_eval(what[len(prefix):]))
    except (ValueError, SyntaxError):
        return what[len(prefix):]


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
                 tally: RunTally | None = None,
                 write_line: Callable[[str], None] | None = None) -> None:
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
        self.write_line = write_line
        """Where a log's lines go (``ReporterLines``: pytest's own stream, between its lines);
        None: ``stream``."""
        self._run_started = self._last_run_line = 0.0  # set when the first phase begins
        self._running = False

    def computed(self, what: str, model: str, items: Sequence[Any]) -> None:
        """The request layer's note of which images or answers a batch computed."""
        kind = kind_of(what)
        self.tally.computed(kind, [work_identity(kind, model, item.prompt, item.seed, item.index)
                                   for item in items], question=question_of(what))

    @contextmanager
    def phase(self, what: str, total: int, model: str) -> Iterator[Callable[[int], None]]:
        """A context whose value is ``advance(n)``: call it as batches finish."""
        title = f"{what} · {model}" if model else what
        started = self.clock()
        done = 0
        # a live bar holds the terminal for the phase; a log's lines lift capture as they write
        with self.pause() if self.mode == "live" else nullcontext():
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
                        self._line(f"run: {self.tally.describe()} planned (before the cache; "
                                   f"a line every {self.every_s:g} s)")
                last_advance = started

                def advance(n: int) -> None:
                    nonlocal done, last_advance
                    done += n
                    now = self.clock()
                    self.tally.add(kind, n, now - last_advance, now)
                    last_advance = now
                    if self.mode == "lines" and now - self._last_run_line >= self.every_s:
                        self._last_run_line = now
                        self._line(self._run_line(title, now))

                yield advance
            if self.mode != "lines":  # in a log the run's line says it: a line a phase drowned it
                elapsed = self.clock() - started
                self._line(f"{title}: {done}/{total} in {_clock(elapsed)} ({_rate(done, elapsed)})")

    def _run_line(self, title: str, now: float) -> str:
        eta = self.tally.eta_seconds(now)
        elapsed = now - self._run_started
        return (f"run: {self.tally.describe()} · {title} · {_clock(elapsed)} elapsed, "
                f"ETA {'?' if eta is None else _clock(eta)}")

    def _line(self, line: str) -> None:
        if self.mode != "live" and self.write_line is not None:
            self.write_line(f"{self.name}: {line}")
            return
        with self.pause() if self.mode != "live" else nullcontext():
            if self.mode != "live":
                self.before()
            self._print(line)

    def _print(self, line: str) -> None:
        from rich.console import Console
        from rich.text import Text

        console = Console(file=self.stream, highlight=False, soft_wrap=True,
                          force_terminal=self.mode == "live", no_color=self.mode != "live")
        console.print(Text(f"{self.name}: ", style="bold") + Text(line))


class ReporterLines:
    """A log's progress lines written by pytest's terminal reporter, on its stream and
    between its lines, never inside one. pytest's line of results for a file is ended
    first; a line due while it holds results waits for the file to end (``file_ended``), at
    most ``hold_s``. A line written mid-file is followed by the file's name again before the
    next result, as pytest does after its own live logging; under ``-q`` (no file names) the
    results simply go on below it."""

    def __init__(self, reporter: Any, *, pause: Callable[[], AbstractContextManager] = nullcontext,
                 hold_s: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.reporter = reporter
        self.pause = pause
        self.hold_s = hold_s
        self.clock = clock
        self.pending: tuple[str, float] | None = None
        self.owed: str | None = None
        """The running test's node id when its file's name must be written again before its
        result (our line is left open until then: pytest's name starts with a newline)."""
        self.running: str | None = None
        self._header: tuple[Any, int] | None = None  # (file, line width right after its name)

    def __call__(self, text: str) -> None:
        held_since = self.pending[1] if self.pending else self.clock()
        if self._results_on_line() and self.clock() - held_since < self.hold_s:
            self.pending = (text, held_since)  # the newest figures, once the file's line ends
            return
        self._write(text, resume=self.running)

    def item_started(self, nodeid: str) -> None:
        """After pytest wrote a test's start (its file's name, for the first of a file, or
        after our line)."""
        self.running, self.owed = nodeid, None
        tw = getattr(self.reporter, "_tw", None)
        file = self.reporter.currentfspath
        if tw is not None and file is not None and (self._header is None or self._header[0] != file):
            self._header = (file, tw.width_of_current_line)

    def before_result(self) -> None:
        """pytest is about to write a result: its file's name first, if our line ended it."""
        if self.owed is not None:
            nodeid, self.owed = self.owed, None
            with self.pause():
                self.reporter.write_fspath_result(nodeid, "")  # a newline, then the name
                self._header = (self.reporter.currentfspath, self.reporter._tw.width_of_current_line)

    def file_ended(self) -> None:
        """pytest's line for a file is complete (not the run's last): a held line goes out
        now, after the file's percentage; the next file's name starts on a line of its own."""
        self.running = None
        if self.pending is not None:
            fill = getattr(self.reporter, "_write_progress_information_filling_space", None)
            if fill is not None and getattr(self.reporter, "_show_progress_info", False) \
                    and self.reporter.currentfspath is not None:
                with self.pause():
                    fill()  # what pytest writes when the next file starts
            self._write(self.pending[0], resume=None)

    def _results_on_line(self) -> bool:
        tw = getattr(self.reporter, "_tw", None)
        file = self.reporter.currentfspath
        if tw is None or file is None:
            return False
        start = self._header[1] if self._header is not None and self._header[0] == file else 0
        return tw.width_of_current_line > start

    def _write(self, text: str, *, resume: str | None) -> None:
        self.pending = None
        reporter = self.reporter
        tw = getattr(reporter, "_tw", None)
        with self.pause():
            if tw is None:  # not pytest's reporter as we know it: a whole line of its own
                reporter.write_line(text)
                return
            if reporter.currentfspath is not None:
                reporter.ensure_newline()  # ends pytest's line (a file's name only, or results)
            elif tw.width_of_current_line:
                tw.line()  # our own open line, or -q's results
            if reporter.showlongtestinfo:  # -v: pytest starts each test's line afresh
                tw.write(text, flush=True)
            elif reporter.showfspath:  # the file's name comes back before the next result
                tw.write(text, flush=True)
                self.owed = resume
            else:  # -q: the results go on below
                tw.line(text)
                tw.flush()


def _live_bar(stream: IO[str]) -> Progress:
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

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(f"{task.speed:.2f}/s" if task.speed else "-/s", style="progress.data.speed")

    console = Console(file=stream, force_terminal=True, highlight=False)
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=True,  # the phase's one-line summary replaces the bar
    )


def _rate(done: int, seconds: float) -> str:
    return f"{done / seconds:.2f}/s" if seconds > 0 and done else "-/s"


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
