"""Progress of generation and scoring: one phase per batch of work, in the form the reader can
use (live bar, log lines, one line under -q), user text kept as characters."""

from __future__ import annotations

import io

import numpy as np
import pytest
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


def test_a_log_gets_one_line_for_the_whole_run_every_interval_not_a_line_a_phase():
    from pytest_t2ibias.reports.progress import RunTally

    stream, clock = io.StringIO(), Clock()
    progress = TerminalProgress(stream, "lines", every_s=30, clock=clock,
                                tally=RunTally(planned_images=160, planned_answers=1600))
    # two phases of images, 10 batches of 8 at 10 s each, then the answers: 0.1 s a batch
    run_phase(progress, clock, [(10.0, 8)] * 10, total=80)
    run_phase(progress, clock, [(10.0, 8)] * 10, total=80)
    run_phase(progress, clock, [(0.1, 100)] * 16, total=1600, what="answering 'gender?'")
    lines = stream.getvalue().splitlines()
    assert lines[0] == ("t2ibias: run: 0/160 images, 0/1600 answers planned (before the cache; "
                        "a line every 30 s)")
    # 200 s of images: a line at 30, 60, ..., 180 s; none per phase, none per batch
    assert len(lines) == 1 + 6
    # 1.25 s an image; answers, whose rate is not known yet, at a hundredth of that (not free)
    assert lines[1] == ("t2ibias: run: 24/160 images, 0/1600 answers · generating images · "
                        "toy-sd · 0:30 elapsed, ETA 3:10")
    assert lines[3] == ("t2ibias: run: 72/160 images, 0/1600 answers · generating images · "
                        "toy-sd · 1:30 elapsed, ETA 2:10")  # the whole run's, not the phase's


def test_the_eta_counts_each_kind_at_its_own_rate_and_grows_with_unplanned_work():
    from pytest_t2ibias.reports.progress import PLAN, RunTally

    tally = RunTally(planned_images=100, planned_answers=1000)
    assert tally.eta_seconds() is None
    with tally.working_on(PLAN):
        tally.add("images", 50, 100.0, now=100.0)
        tally.add("answers", 500, 5.0, now=105.0)
        assert tally.eta_seconds(now=105.0) == 50 * 2.0 + 500 * 0.01
        # time spent computing nothing (loading, statistics) stretches the ETA alike
        assert tally.eta_seconds(now=210.0) == pytest.approx(2 * (50 * 2.0 + 500 * 0.01))
        tally.add("images", 70, 140.0, now=350.0)  # more than the plan named
    assert tally.total("images") == 120 and tally.describe().startswith("120/120 images")


def test_each_search_is_a_bucket_that_grows_past_its_estimate_and_closes_when_it_ends():
    from pytest_t2ibias.reports.progress import PLAN, RunTally

    tally = RunTally(planned_images=100, planned_answers=0,
                     expected={"s.yaml::bgps": {"images": 50, "answers": 50},
                               "s.yaml::intermit": {"images": 300, "answers": 900}})
    assert tally.planned == {"images": 450, "answers": 950}
    with tally.working_on(PLAN):
        tally.add("images", 80, 80.0, now=80.0)  # the Python tests had made 20 of them
    assert tally.total("images") == 80 + 350  # the plan is done: what it did not make, it won't
    with tally.working_on("s.yaml::bgps"):
        tally.add("images", 70, 70.0, now=150.0)  # it found more prompts than its estimate
        assert tally.total("images") == 80 + 70 + 300  # grown, never "done" before it is
    with tally.working_on("s.yaml::intermit"):
        tally.add("images", 200, 200.0, now=350.0)
        assert tally.left("images") == 100 and tally.eta_seconds(now=350.0) == pytest.approx(
            100 * 1.0 + 900 * 0.01)
    # it stopped a step early: the rest of its estimate goes, and the work is done
    assert tally.total("images") == 350 and tally.eta_seconds(now=350.0) == 0.0
    with tally.working_on("test_py.py::test_fixture"):  # unknown up front: counted as it goes
        tally.add("images", 10, 10.0, now=360.0)
        assert tally.total("images") == 360


def test_planned_work_counts_shared_images_once():
    from types import SimpleNamespace

    from pytest_t2ibias.reports.progress import planned_work

    plan = SimpleNamespace(images_per_prompt=4, seed=0, sampling={"steps": 2},
                           model=lambda role: "sd", judge_correction="off")
    suite = SimpleNamespace(prompt_for=lambda subject: f"a {subject}", filter=None,
                            axes={})
    axis = SimpleNamespace(name="gender", question="What is the gender?", parts=())

    def item(kind, subject):
        return SimpleNamespace(check=SimpleNamespace(kind=kind, params={}), suite=suite,
                               subject=subject, axis=axis, plan=plan)

    # two checks on the nurse share their images; a search kind is not planned
    tally = planned_work([item("w1_below", "nurse"), item("entropy_below", "nurse"),
                          item("w1_below", "doctor"), item("intermit", "pilot")])
    assert tally.planned == {"images": 8, "answers": 8}
    # kinds the session plan does not compute add what their own plans say they cost
    assert planned_work([item("w1_below", "nurse")], unplanned_images=12).planned == {
        "images": 16, "answers": 16}


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
    layer.flush()  # the session's end: the next run finds every entry

    warm = RequestLayer(Cache(tmp_path), batch_size=4, progress=progress)
    images = warm.images(CountingGenerator(), requests + requests[:3])
    assert len(progress.phases) == 1  # all cached: no phase at all
    assert len(images) == 13 and np.asarray(images[12].image)[0, 0, 0] == 20


def test_a_python_test_drawing_the_plans_images_first_does_not_grow_the_total():
    """Issue #36: a Python test that computed images the session plan also expects counted
    them as done while the plan still expected them: the total grew with the done count
    (128/9875 ... 728/10475) and the ETA with it. Now they are the plan's, done early."""
    from pytest_t2ibias.reports.progress import PLAN, RunTally, work_identity

    tally = RunTally(10, 20)
    # the plan's work per prompt (#35): the nurse's first 10 images, two questions of each
    tally.plan_work = {
        "images": {work_identity("images", "toy-sd", "a photo of a nurse", 0, 0)[:-1]: {"": 10}},
        "answers": {work_identity("answers", None, "a photo of a nurse", 0, 0)[:-1]:
                    {"gender": 10, "<filter>": 10}}}
    tally.asked_as = {"What is the gender?": "gender", "Is there a person?": "<filter>"}
    with tally.working_on("example_suites/test_toy_occupations.py::test_nurses"):
        tally.add("images", 4, 1.0, 1.0)
        tally.computed("images", [work_identity("images", "toy-sd", "a photo of a nurse", 0, i)
                                  for i in range(4)])
        tally.add("answers", 8, 0.1, 1.1)
        for question in ("What is the gender?", "Is there a person?"):
            tally.computed("answers", [work_identity("answers", "toy-sd", "a photo of a nurse",
                                                     0, i) for i in range(4)], question)
        # its own question on the same images: not the plan's, in the total as it comes
        tally.add("answers", 4, 0.05, 1.15)
        tally.computed("answers", [work_identity("answers", "toy-sd", "a photo of a nurse", 0, i)
                                   for i in range(4)], "Is the nurse smiling?")
        # its own image the plan does not draw: done, and in the total
        tally.add("images", 1, 0.25, 1.35)
        tally.computed("images", [work_identity("images", "toy-sd", "a photo of a pilot", 0, 0)])
    assert tally.done == {"images": 5, "answers": 12}
    assert tally.total("images") == 11 and tally.total("answers") == 24
    assert tally.left("images") == 6 and tally.left("answers") == 12
    with tally.working_on(PLAN):  # the plan draws the rest, finds the others cached
        tally.add("images", 6, 1.0, 3.0)
        tally.computed("images", [])
    assert tally.total("images") == 11 and tally.left("images") == 0
