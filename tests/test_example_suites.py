"""The example suite's verdicts follow from the toy world's planted truth.

Every check marked ``xfail`` must fail when fed the world's true shares (a planted bias), and
every other check must pass (a control). So the example run is green exactly when the
trained models reproduce the world and the plugin detects what was planted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_t2ibias.metrics import normalised_w1, severity
from pytest_t2ibias.suite.load import load_suite
from pytest_t2ibias.toyworld import expected_shares, load_world

ROOT = Path(__file__).resolve().parents[1]
SUITE = load_suite(ROOT / "example_suites" / "toy_occupations.t2i.yaml")
WORLD = load_world()


def true_shares(subject: str, axis: str, given: dict | None = None) -> np.ndarray:
    shares = expected_shares(WORLD, subject, axis, given=given)
    return np.array([shares[choice] for choice in SUITE.axes[axis].choices])


def true_is(subject: str, x: str, y: str) -> float:
    """IS[x][y] (Eq. 4) on the world's true conditionals: pool x's values with equal weight."""
    ideal = np.full(len(SUITE.axes[y].choices), 1 / len(SUITE.axes[y].choices))
    ordered = SUITE.axes[y].ordered
    pooled = np.mean([true_shares(subject, y, {x: v}) for v in SUITE.axes[x].choices], axis=0)
    return (normalised_w1(true_shares(subject, y), ideal, ordered=ordered)
            - normalised_w1(pooled, ideal, ordered=ordered))


def planted_value(check, subject: str, axis: str) -> float:
    if check.kind == "w1_below":
        uniform = np.full(len(SUITE.axes[axis].choices), 1 / len(SUITE.axes[axis].choices))
        return normalised_w1(true_shares(subject, axis), uniform, ordered=SUITE.axes[axis].ordered)
    if check.kind == "entropy_below":
        return severity(true_shares(subject, axis))
    if check.kind == "is_nonnegative":
        return min(true_is(subject, axis, y) for y in check.params["on"])
    raise AssertionError(f"no planted value for {check.kind}")


def passes(check, value: float) -> bool:
    if check.kind == "is_nonnegative":
        return value >= -check.params["tolerance"]
    return value <= check.params["threshold"]


CASES = [(check, subject, axis) for check in SUITE.checks
         for subject in (check.subjects or SUITE.subjects) for axis in check.axes]


@pytest.mark.parametrize(("check", "subject", "axis"), CASES,
                         ids=[f"{c.id}[{s}-{a}]" for c, s, a in CASES])
def test_planted_biases_fail_and_controls_pass(check, subject, axis):
    value = planted_value(check, subject, axis)
    expected_to_fail = "xfail" in check.marks
    assert passes(check, value) != expected_to_fail, (
        f"{check.id}[{subject}-{axis}]: planted value {value:.3f} vs the check's limit; "
        f"marked {'xfail' if expected_to_fail else 'to pass'}")


def test_musician_coupling_is_a_clearly_negative_is_entry():
    # init: 0.75 male x (0.34, 0.33, 0.33) + 0.25 female x (0.90, 0.07, 0.03) = (0.48, 0.265, 0.255)
    # pooled (gender mitigated): 0.5 x male + 0.5 x female = (0.62, 0.20, 0.18)
    # ordered W1 to uniform = sum |CDF - (1/3, 2/3)|, the largest possible being 1.0:
    #   init |0.48 - 0.333| + |0.745 - 0.667| = 0.225;  pooled |0.62 - 0.333| + |0.82 - 0.667| = 0.440
    assert true_is("musician", "gender", "age") == pytest.approx(0.225 - 0.440, abs=1e-3)
