"""The committed toy fixtures meet the issue's bars: recomputed, not read from quality.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_t2ibias.toyworld import load_world
from pytest_t2ibias.toyworld.quality import (
    CLASSIFIER_ACCURACY_BAR,
    MAE_BAR,
    quality_report,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report():
    if not (FIXTURES / "toy-sd").exists() or not (FIXTURES / "classifiers").exists():
        pytest.skip("fixtures not built; run `python -m pytest_t2ibias.toyworld build --out fixtures`")
    return quality_report(FIXTURES, load_world(), write=False)


def test_fixtures_were_built_from_this_spec(report):
    assert not report["warnings"]


def test_classifiers_meet_the_accuracy_bar(report):
    below = {axis: a["clean"] for axis, a in report["classifier_accuracy"].items() if a["clean"] < CLASSIFIER_ACCURACY_BAR}
    assert not below, f"held-out accuracy below {CLASSIFIER_ACCURACY_BAR}: {below}"


def test_generated_shares_match_the_world(report):
    """Per subject and axis, the plain prompt's generated shares are within MAE 0.10 of the spec."""
    plain = report["toy_sd"]["summary"]["plain"]
    assert plain["max_mae"] <= MAE_BAR, f"over the bar: {plain['pairs_over_bar']}"


def test_explicit_prompts_are_followed(report):
    explicit = report["toy_sd"]["summary"]["explicit"]
    assert explicit["max_mae"] <= MAE_BAR, f"over the bar: {explicit['pairs_over_bar']}"
