"""The run's ETA on a slice of the example run: the work it counts down is all the run's work.

Issue #36: while the Python test files ran, the remaining work stayed at 9,747 images and the
total grew with every image they made (``0/9747``, ``128/9875`` ... ``728/10475``), the ETA
from 3:21:11 to 10:03:45. The ETA is the work left at each kind's rate, so its error is that
of the work left: this runs a Python test of the example suites and a suite check drawing the
same prompt, cold, one progress line a batch, and measures the work left line by line.
(The ETA's error in seconds on the whole cold example run is ``benchmarks/eta_error.py``'s.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN_LINE = re.compile(r"t2ibias: run: (\d+)/(\d+) images, (\d+)/(\d+) answers")
SLICE = ["example_suites/test_toy_occupations.py::test_nurses_are_gender_balanced",
         "example_suites/toy_occupations.t2i.yaml::gender_balance[nurse-gender]"]


@pytest.fixture
def every_batch(monkeypatch):
    """A progress line after every batch, not every 30 s: each step of the count seen."""
    from pytest_t2ibias.reports.progress import TerminalProgress

    defaults = {**TerminalProgress.__init__.__kwdefaults__, "every_s": 0.0}
    monkeypatch.setattr(TerminalProgress.__init__, "__kwdefaults__", defaults)


def test_the_work_left_only_falls_and_ends_at_zero_python_tests_included(pytester, tmp_path,
                                                                        every_batch):
    result = pytester.runpytest_inprocess(
        *(str(ROOT / nodeid) for nodeid in SLICE), f"--rootdir={ROOT}",
        f"-c={ROOT / 'pyproject.toml'}", f"--t2i-cache-dir={tmp_path / 'cache'}",
        "--t2i-judge-correction=off",  # no calibration images: a shorter run, the same count
        "--t2i-fixed-n",  # the plan's count is the run's; adaptive rounds revise it as they stop
        "--t2i-batch-size=8",  # many small batches: each step of the count is seen
        "-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(xfailed=2)
    lines = [line for line in result.outlines if RUN_LINE.search(line)]
    counts = [tuple(map(int, RUN_LINE.search(line).groups())) for line in lines]
    assert len(counts) > 10, result.outlines
    planned = counts[0]
    assert planned[0] == 0 and planned[2] == 0
    left = [(total_images - images, total_answers - answers)
            for images, total_images, answers, total_answers in counts]
    # never more left than before: the Python test's images are the plan's, done early
    assert all(a[0] >= b[0] and a[1] >= b[1] for a, b in zip(left, left[1:])), counts
    assert left[-1] == (0, 0), counts[-1]
    # the plan expected every image the run made (the Python test's 48 nurses are its
    # first 48) and every answer but the Python test's own question on them, 48 answers
    # the run could not know of before the test asked
    assert counts[-1][1] == planned[1] == 120  # the suite's nurses
    assert counts[-1][3] == planned[3] + 48, (planned, counts[-1])
    # ... added when asked, not found at the end: an answer to another question on the
    # plan's images is not the plan's (it was credited so, and the ETA said 0:00 early)
    asked = next(i for i, line in enumerate(lines) if "What is the gender of the person" in line)
    assert {total for _, _, _, total in counts[asked:]} == {planned[3] + 48}, lines[asked:]
