"""Progress of generation and scoring: one phase per batch of work, in the form the reader can
use (live bar, log lines, one line under -q), user text kept as characters."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.reports.progress import TerminalProgress
from pytest_t2ibias.store.cache import Cache
from pytest_t2ibias.store.request_layer import RequestLayer


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run_phase(progress: TerminalProgress, clock: Clock, steps: list[tuple[float, int]],
              total: int, what: str = "generating images") -> None:
    with progress.phase(what, total, "toy-sd") as advance:
        for seconds, n in steps:
            clock.now += seconds
            advance(n)


def test_log_lines_every_interval_with_rate_and_eta():
    stream, clock = io.StringIO(), Clock()
    progress = TerminalProgress(stream, "lines", every_s=30, clock=clock)
    # 10 batches of 8 images, 10 s each: lines at 30 s, 60 s, 90 s, then the summary
    run_phase(progress, clock, [(10.0, 8)] * 10, total=80)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "t2ibias: generating images · toy-sd: 80 to compute"
    assert lines[1] == "t2ibias: generating images · toy-sd: 24/80 (0.80/s, ETA 1:10)"
    assert len(lines) == 5  # start, 30 s, 60 s, 90 s, done
    assert lines[-1] == "t2ibias: generating images · toy-sd: 80/80 in 1:40 (0.80/s)"


def test_quiet_mode_is_one_line_a_phase():
    stream, clock = io.StringIO(), Clock()
    progress = TerminalProgress(stream, "summary", every_s=1, clock=clock)
    run_phase(progress, clock, [(5.0, 4)] * 6, total=24)
    assert stream.getvalue().splitlines() == [
        "t2ibias: generating images · toy-sd: 24/24 in 0:30 (0.80/s)"]


def test_live_bar_ends_in_the_summary_line_and_lifts_capture():
    stream, clock, events = io.StringIO(), Clock(), []

    class Pause:
        def __enter__(self):
            events.append("capture off")

        def __exit__(self, *exc):
            events.append("capture on")

    progress = TerminalProgress(stream, "live", pause=Pause, clock=clock,
                                before=lambda: events.append("newline"))
    run_phase(progress, clock, [(1.0, 8), (1.0, 8)], total=16)
    assert events == ["capture off", "newline", "capture on"]
    assert "generating images · toy-sd: 16/16 in 0:02 (8.00/s)" in stream.getvalue()


def test_a_failed_phase_claims_nothing_done():
    stream, clock = io.StringIO(), Clock()
    progress = TerminalProgress(stream, "summary", clock=clock)
    try:
        with progress.phase("generating images", 8, "toy-sd"):
            raise RuntimeError("out of memory")
    except RuntimeError:
        pass
    assert stream.getvalue() == ""


def test_question_text_is_shown_as_characters_not_markup():
    stream, clock = io.StringIO(), Clock()
    progress = TerminalProgress(stream, "summary", clock=clock)
    run_phase(progress, clock, [(1.0, 1)], total=1,
              what="answering '[bold red]x[/] [link=javascript:alert(1)]y[/link]'")
    assert "[bold red]x[/] [link=javascript:alert(1)]y[/link]" in stream.getvalue()


class CountingGenerator:
    fingerprint = "gen-v1"
    model = "org/toy-model"

    def generate(self, requests):
        return [Image.new("RGB", (8, 8), (r.index * 10 % 255, 0, 0)) for r in requests]


class RecordingProgress:
    def __init__(self) -> None:
        self.phases: list[tuple[str, int, str, int]] = []

    def phase(self, what, total, model):
        from contextlib import contextmanager

        @contextmanager
        def context():
            done = [0]
            yield lambda n: done.__setitem__(0, done[0] + n)
            self.phases.append((what, total, model, done[0]))

        return context()


def test_request_layer_shows_only_the_work_it_computes(tmp_path):
    progress = RecordingProgress()
    layer = RequestLayer(Cache(tmp_path), batch_size=4, progress=progress)
    requests = [ImageRequest(prompt="a photo of a doctor", seed=0, index=i) for i in range(10)]
    layer.images(CountingGenerator(), requests)
    assert progress.phases == [("generating images", 10, "org/toy-model", 10)]

    warm = RequestLayer(Cache(tmp_path), batch_size=4, progress=progress)
    images = warm.images(CountingGenerator(), requests + requests[:3])
    assert len(progress.phases) == 1  # all cached: no phase at all
    assert len(images) == 13 and np.asarray(images[12].image)[0, 0, 0] == 20
