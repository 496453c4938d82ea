"""A pytester project of two w1_below tests over fixed answer counts, and its runner."""

from __future__ import annotations

import json

import pytest

TESTS = """\
import json
import pathlib

from pytest_t2ibias import assert_w1_below

COUNTS = json.loads(pathlib.Path(__file__).with_name("counts.json").read_text())


def test_gender():
    assert_w1_below(COUNTS["gender"], 1.0, confidence=0.95, label="gender")


def test_age():
    assert_w1_below(COUNTS["age"], 1.0, confidence=0.95, label="age")
"""


BALANCED = {"gender": {"male": 50, "female": 50}, "age": {"young": 40, "old": 60}}


def counts(pytester: pytest.Pytester, values: dict) -> None:
    (pytester.path / "counts.json").write_text(json.dumps(values))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", *args)


