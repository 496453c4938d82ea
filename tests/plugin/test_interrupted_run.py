"""A run that stops early (Ctrl-C, -x) says so in its reports: the JSON's ``run.interrupted``
with the count of items not run, and a banner at the top of the HTML (issue #35: after
Ctrl-C the HTML said "7 results" and nothing else while 49 of 56 items never ran)."""

from __future__ import annotations

import json

import pytest

pytest_plugins = "pytester"

TESTS = """
import pytest
from pytest_t2ibias import assert_w1_below

def test_balanced():
    assert_w1_below({"male": 50, "female": 50}, 0.5, label="gender")

def test_skewed():
    assert_w1_below({"male": 100, "female": 0}, 0.1, label="gender")

def test_stop():
    {stop}

def test_never_1():
    assert_w1_below({"male": 50, "female": 50}, 0.5, label="gender")

def test_never_2():
    assert_w1_below({"male": 50, "female": 50}, 0.5, label="gender")
"""


def run(pytester, stop: str, *options: str, subprocess: bool = False):
    pytester.makepyfile(test_checks=TESTS.replace("{stop}", stop))
    runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = runner("-p", "no:cacheprovider", "--t2i-json=report.json",
                                "--t2i-html=report.html", "--t2i-bootstrap=200", *options)
    return (result, json.loads((pytester.path / "report.json").read_text())["run"],
            (pytester.path / "report.html").read_text())


def test_a_keyboard_interrupt_is_stated_with_the_items_not_run(pytester):
    result, header, page = run(pytester, "raise KeyboardInterrupt", subprocess=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert header["interrupted"] is True
    assert (header["items_not_run"], header["items_collected"]) == (3, 5)
    assert "Interrupted run</b>: 3 of 5 items did not run" in page
    assert page.index("Interrupted run") < page.index('class="tally"')  # at the top


def test_x_is_stated_with_pytests_reason(pytester):
    result, header, page = run(pytester, "pass", "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert header["interrupted"] is True and header["items_not_run"] == 3
    assert header["interrupted_by"] == "stopping after 1 failures"
    assert "3 of 5 items did not run (stopping after 1 failures)" in page


def test_a_complete_run_is_not_interrupted(pytester):
    result, header, page = run(pytester, "pass")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert header["interrupted"] is False and "items_not_run" not in header
    assert "Interrupted run" not in page
