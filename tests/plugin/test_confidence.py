"""``confidence:`` is the level of the interval a check computes, reports and gates on, for
every kind; a helper refuses to gate at a level its intervals were not computed at."""

from __future__ import annotations

import json

import pytest
from support.intermit_world import FAKE_WORLD, SUITE

from pytest_t2ibias import Estimate, evaluate_is_nonnegative, evaluate_no_regression
from pytest_t2ibias.metrics import ISMatrix

CHECKS = """\
checks:
  - {id: at95, kind: is_nonnegative, mitigate: [gender], on: [age], confidence: 0.95}
  - {id: at99, kind: is_nonnegative, mitigate: [gender], on: [age], confidence: 0.99}
  - {id: gate99, kind: no_regression, fixes: [gender], on: [age], confidence: 0.99}
  - {id: intermit99, kind: intermit, priority: {gender: 1, age: 1}, confidence: 0.99}
"""


def test_confidence_sets_the_interval_of_every_kind(pytester: pytest.Pytester):
    pytester.makeconftest(FAKE_WORLD)
    pytester.makefile(".t2i.yaml", levels=SUITE + CHECKS)
    pytester.runpytest("-p", "no:cacheprovider", "--t2i-model=male", "--t2i-baseline-model=male",
                       "--t2i-vqa=fake", "--t2i-no-cache", "--t2i-bootstrap=400",
                       "--t2i-json=report.json", "--t2i-fixed-n")  # levels as asked, no looks
    rows = {row["nodeid"].split("::")[-1]: row
            for row in json.loads((pytester.path / "report.json").read_text())["checks"]}
    at95, at99 = rows["at95[nurse-gender]"], rows["at99[nurse-gender]"]
    # IS[gender][age] = -0.5 in the fake world (female nurses are all young); same images
    assert at95["value"] == at99["value"] == pytest.approx(-0.5, abs=0.05)
    assert (at95["confidence"], at99["confidence"]) == (0.95, 0.99)
    assert at99["high"] - at99["low"] > at95["high"] - at95["low"]
    assert at99["figures"]["pairs"]["gender->age"]["confidence"] == 0.99
    assert rows["gate99[nurse-gender]"]["confidence"] == 0.99
    assert rows["intermit99[nurse]"]["confidence"] == 0.99


def test_a_helper_refuses_a_level_its_intervals_were_not_computed_at():
    import numpy as np

    matrix = ISMatrix(axes=("gender", "age"), value=np.array([[0.0, -0.2], [0.0, 0.0]]),
                      low=np.array([[0.0, -0.3], [0.0, 0.0]]), high=np.array([[0.0, -0.1], [0.0, 0.0]]),
                      w_init={}, n_images={"initial": 48, "gender=male": 24, "gender=female": 24},
                      confidence=0.95)
    assert not evaluate_is_nonnegative(matrix, mitigate=["gender"], confidence=0.95).passed
    with pytest.raises(ValueError, match=r"confidence=0.99 asked, but the intervals were "
                                         r"computed at 0.95; compute the matrix at that level"):
        evaluate_is_nonnegative(matrix, mitigate=["gender"], confidence=0.99)
    effect = {"gender": Estimate(0.5, 0.4, 0.6, 48), "age": Estimate(-0.2, -0.3, -0.1, 48)}
    with pytest.raises(ValueError, match="t2ibias.mitigation_effect"):
        evaluate_no_regression(effect, fixes=["gender"], confidence=0.9)
