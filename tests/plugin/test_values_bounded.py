"""Values that cannot mean anything are refused where they are read, collection is bounded
whatever the suite asks, and a figure exactly at its ideal computes as exactly that ideal
(issue #23)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from support.fresh_process import traced_in_fresh_process

from pytest_t2ibias import assert_entropy_below, assert_w1_below
from pytest_t2ibias._types import Estimate
from pytest_t2ibias.errors import SuiteError
from pytest_t2ibias.metrics import normalised_w1, severity
from pytest_t2ibias.suite.language import MAX_CHOICES
from pytest_t2ibias.suite.load import MAX_ITEMS, load_suite

LOAD_PEAK_MB = 64
"""Traced peak of refusing the 6,000,000-item suite in a fresh process: about 6 MB now (its
YAML); building its items before counting them (as before issue #23) is 6,000,000 tuples at least (400+ MB)."""

BASE = """\
prompt: "a photo of a {subject}"
subjects: [doctor, nurse]
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
    counterfactuals: {male: "a male {subject}", female: "a female {subject}"}
  age: {question: "How old?", choices: [young, old]}
"""


def _load(tmp_path, text):
    path = tmp_path / "s.t2i.yaml"
    path.write_text(text)
    return load_suite(path)


def _error(tmp_path, text) -> SuiteError:
    with pytest.raises(SuiteError) as info:
        _load(tmp_path, text)
    return info.value


# -- numbers: finite, in range ---------------------------------------------------------------


@pytest.mark.parametrize("check, says", [
    ("{id: c, kind: entropy_below, axes: [gender], threshold: .inf}",
     "threshold must hold finite numbers, got .inf"),
    ("{id: c, kind: max_skew_below, axes: [gender], threshold: 0.5, target: {male: .inf, "
     "female: 1}}", "target must hold finite numbers, got .inf"),
    ("{id: c, kind: intermit, priority: {gender: .nan}}",
     "priority must hold finite numbers, got .nan"),
    ("{id: c, kind: no_bgps_prompt_exceeds, target: {axis: gender, value: male}, "
     "threshold: 0.5, lambda: .inf}", "lambda must hold finite numbers, got .inf"),
    ("{id: c, kind: w1_below, axes: [gender], threshold: 0.5, images_per_prompt: 1000000000000}",
     "images_per_prompt must be at most 100,000, got 1,000,000,000,000"),
    ("{id: c, kind: w1_below, axes: [gender], threshold: -.inf}",
     "threshold must hold finite numbers, got -.inf"),
])
def test_a_value_that_cannot_mean_anything_is_a_file_line_error(tmp_path, check, says):
    error = _error(tmp_path, BASE + f"checks:\n  - {check}\n")
    assert error.line == len(BASE.splitlines()) + 2
    assert says in str(error)


def test_a_huge_default_image_count_is_refused(tmp_path):
    error = _error(tmp_path, "defaults: {images_per_prompt: 1000000000000}\n" + BASE +
                   "checks:\n  - {id: c, kind: w1_below, axes: [gender], threshold: 0.5}\n")
    assert "defaults.images_per_prompt must be at most 100,000" in str(error)
    assert error.line == 1


def test_a_lone_surrogate_is_refused_where_it_is(tmp_path):
    text = BASE.replace("subjects: [doctor, nurse]", 'subjects: [doctor, "nurse\\ud800"]')
    error = _error(tmp_path, text + "checks:\n  - {id: c, kind: w1_below, axes: [gender], "
                   "threshold: 0.5}\n")
    assert error.line == 2
    assert "is not valid Unicode (a lone surrogate \\ud800)" in str(error)


# -- collection bounded ------------------------------------------------------------------------


def test_a_cross_product_beyond_the_cap_is_refused_quickly_at_the_check(tmp_path):
    """1,000 subjects x 60 axes x 100 checks asked for 6,000,000 items (MemoryError after 42 s)."""
    subjects = ", ".join(f"s{i}" for i in range(1000))
    axes = "\n".join(f"  a{i}: {{question: \"q{i}\", choices: [x, y]}}" for i in range(60))
    checks = "\n".join(f"  - {{id: c{i}, kind: entropy_below, axes: [{', '.join(f'a{j}' for j in range(60))}], "
                       f"threshold: 0.5}}" for i in range(100))
    text = f'prompt: "a {{subject}}"\nsubjects: [{subjects}]\naxes:\n{axes}\nchecks:\n{checks}\n'
    path = tmp_path / "s.t2i.yaml"
    path.write_text(text)
    # Loaded in a fresh process, traced there: a full run's high-water mark cannot hide a
    # regression.
    run = traced_in_fresh_process(f"""
        from pytest_t2ibias.errors import SuiteError
        from pytest_t2ibias.suite.load import load_suite


        def operation():
            try:
                load_suite({str(path)!r})
            except SuiteError as error:
                return [str(error), error.line]
            return None
        """, cwd=tmp_path)
    assert run.result is not None, "the suite loaded"
    message, line = run.result
    assert "the suite makes 60,000 items up to here (1000 subjects x 60 axes" in message
    assert f"more than the {MAX_ITEMS:,} a suite may make" in message
    assert line == 65  # the first check (after 3 + 60 + 1 lines): 60,000 items already
    assert run.peak_mb < LOAD_PEAK_MB, run.peak_mb


def test_an_axis_with_too_many_choices_is_refused(tmp_path):
    choices = ", ".join(f"c{i}" for i in range(MAX_CHOICES + 1))
    error = _error(tmp_path, BASE + f"  colour: {{question: \"what\", choices: [{choices}]}}\n"
                   "checks:\n  - {id: c, kind: w1_below, axes: [colour], threshold: 0.5}\n")
    assert f"{MAX_CHOICES + 1} choices, more than the {MAX_CHOICES} an axis may have" in str(error)


def test_auto_that_no_image_count_decides_is_a_suite_error(pytester):
    """Was: a raw ValueError traceback from the power planner."""
    pytester.makefile(".t2i.yaml", tight=BASE + textwrap.dedent("""\
        checks:
          - {id: c, kind: entropy_below, axes: [gender], threshold: 0.5, confidence: 0.99,
             images_per_prompt: auto, margin: 0.001}
        """))
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*tight.t2i.yaml:*check 'c': images_per_prompt: auto finds no "
                                 "number of images that decides it*"])
    assert "Traceback" not in result.stdout.str()


# -- rounding ---------------------------------------------------------------------------------


def test_a_uniform_distribution_is_exactly_at_the_ideal():
    for n in (2, 3, 5, 7, 12):
        uniform = np.full(n, 1 / n)
        assert severity(uniform) == 0.0
        assert normalised_w1(uniform, uniform) == 0.0
    assert severity(np.array([1.0, 0.0, 0.0])) == 1.0
    # a threshold at the ideal decides as written (was: severity 2.2e-16 > 0.0 failed)
    assert assert_entropy_below({"a": 1, "b": 1, "c": 1}, 0.0).passed
    assert assert_w1_below({"a": 2, "b": 2, "c": 2}, 0.0).passed


def test_an_interval_end_a_hair_below_zero_never_prints_as_minus_zero():
    shown = str(Estimate(value=0.0, low=-0.0004, high=0.01, n=10))
    assert "-0.000" not in shown and "CI 0.000, 0.010" in shown


def test_auto_over_many_choices_is_bounded_and_refused(pytester):
    """Was: 64 choices planned for 82 s (200 choices: 36 s and 1.3 GB) before any item ran."""
    choices = ", ".join(f"c{i}" for i in range(64))
    pytester.makefile(".t2i.yaml", wide=textwrap.dedent(f"""\
        prompt: "a photo of a {{subject}}"
        subjects: [mug]
        axes:
          colour: {{question: "What colour is it?", choices: [{choices}]}}
        checks:
          - {{id: c, kind: entropy_below, axes: [colour], threshold: 0.5, images_per_prompt: auto}}
        """))
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only")
    result.stdout.fnmatch_lines(["*wide.t2i.yaml:6: check 'c': images_per_prompt: auto plans "
                                 "axes of at most 10 choices; 'colour' has 64*"])


def test_the_planning_budget_stops_a_search_that_would_run_long():
    """A ten-choice search (about 14 simulations) fits; a second one in the file does not."""
    from pytest_t2ibias.errors import PlanningOverBudget
    from pytest_t2ibias.planner import PlanningBudget

    budget = PlanningBudget()
    for _ in range(16):
        budget.spend(10)  # one simulation of a ten-choice axis
    with pytest.raises(PlanningOverBudget):
        budget.spend(10)
