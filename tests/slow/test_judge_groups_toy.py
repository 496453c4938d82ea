"""Issue #45's must-show on the real toy models, small: toy-sd read through the planted judge
bias (``misreads-old:``), two worlds of validation/judge_groups_toy.py on "an old doctor",
each calibrated on 200 of toy-sd's own images an age. Through the plugin the check is
corrected with group old's own labelled confusion (not pooled silently), its interval holds
the truth of the other world's undegraded images, which the uncorrected reading misses, and
the pooled confusion corrects less than the group's. Minutes on 2 cores, hence slow."""

from __future__ import annotations

import pytest
from support.validation_scripts import validation_script

pytestmark = pytest.mark.slow


def test_a_check_on_the_misread_group_is_corrected_with_its_own_calibration(tmp_path):
    result = validation_script("judge_groups_toy").run(
        seeds=2, n=60, m=200, pool=200, subjects=("doctor",), cache=tmp_path / "cache")
    assert result["group_used"] == 2  # group old's own confusion, never pooled silently
    for world in result["worlds"]:
        truth = world["truth_severity"]
        assert world["group"]["low"] <= truth <= world["group"]["high"], world["seed"]
        assert world["uncorrected"]["high"] < truth, world["seed"]
        # old men read as women: the pooled confusion (diluted by the ages read right)
        # corrects toward men less than group old's own
        assert world["uncorrected"]["value"] < world["pooled"]["value"] < world["group"]["value"]
