"""Issue #45's must-show on the real toy models, small: toy-sd read through the planted judge
bias (``misreads-old:``), two worlds of validation/judge_groups_toy.py. The group's own
labelled calibration brings the gender severity of "an old <subject>" nearest the
undegraded truth, the pooled one part of the way, and uncorrected is furthest (the study's
first two worlds: the same seeds and calibration draws). Minutes on 2 cores (60 images a
world through toy-sd), hence slow."""

from __future__ import annotations

import pytest
from support.validation_scripts import validation_script

pytestmark = pytest.mark.slow


def test_the_groups_own_calibration_reads_the_misread_group_closest_to_the_truth(tmp_path):
    result = validation_script("judge_groups_toy").run(
        seeds=1, n=60, m=600, pool=2400, subjects=("doctor", "nurse"), cache=tmp_path / "cache")
    assert result["group_used"] == 2  # group old's own confusion, never pooled silently
    for world in result["worlds"]:
        truth = result["truth"][world["subject"]]["severity"]
        error = {r: abs(world[r]["value"] - truth) for r in ("uncorrected", "pooled", "group")}
        assert error["group"] < error["pooled"] < error["uncorrected"], (world["subject"], error)
        assert world["group"]["low"] <= truth <= world["group"]["high"]
