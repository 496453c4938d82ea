"""The committed toy fixtures meet the issue's bars: recomputed, not read from quality.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from toyworld import load_world
from toyworld.quality import CLASSIFIER_ACCURACY_BAR, MAE_BAR, quality_report

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report():
    if not (FIXTURES / "toy-sd").exists() or not (FIXTURES / "classifiers").exists():
        pytest.skip("fixtures not built; run `python -m toyworld build --out fixtures`")
    return quality_report(FIXTURES, load_world(), write=False)


def test_fixtures_were_built_from_this_spec(report):
    assert not report["warnings"]


def test_classifiers_meet_the_accuracy_bar(report):
    below = {axis: a["clean"] for axis, a in report["classifier_accuracy"].items() if a["clean"] < CLASSIFIER_ACCURACY_BAR}
    assert not below, f"held-out accuracy below {CLASSIFIER_ACCURACY_BAR}: {below}"


def test_generated_shares_match_the_world(report):
    """The issue's bar: over subjects and axes, the plain prompts' generated shares are within
    a mean absolute error of 0.10 of the spec (read by the classifiers)."""
    plain = report["toy_sd"]["summary"]["plain"]
    assert plain["mean_mae"] <= MAE_BAR, f"over the bar: {plain['pairs_over_bar']}"


def test_explicit_and_modifier_prompts_are_followed(report):
    for kind in ("explicit", "modifier"):
        summary = report["toy_sd"]["summary"][kind]
        assert summary["mean_mae"] <= MAE_BAR, f"{kind}: over the bar: {summary['pairs_over_bar']}"


INTERVENTION = "irrespective of their"
"""The ENTIGEN intervention's words: its prompts are judged apart (below)."""


def _far_pairs(report, *, intervened: bool) -> dict[str, float]:
    """Pairs (prompt, axis) further than 0.25 from the world, on axes the classifiers read
    reliably on VAE-decoded images (emotion is not one: mouth detail does not survive the
    8x8 latent)."""
    readable = {axis for axis, accuracy in report["toy_sd"]["classifier_accuracy_on_vae_roundtrip"].items()
                if accuracy >= CLASSIFIER_ACCURACY_BAR}
    return {f"{prompt} / {axis}": round(result["mae"], 3)
            for prompt, entry in report["toy_sd"]["prompts"].items()
            if (INTERVENTION in prompt) == intervened
            for axis, result in entry["axes"].items() if axis in readable and result["mae"] > 0.25}


def test_no_subject_is_far_off_where_the_judge_can_see(report):
    """Per pair, every share is within 0.25 of the world's (ENTIGEN prompts: next test)."""
    far = _far_pairs(report, intervened=False)
    assert not far, far


def test_the_entigen_intervention_is_learned_where_the_judge_can_see(report):
    """Was a strict xfail (nurse 0.297, teacher 0.258 from the planted 50/50 after two continued
    runs); the three pattern-world runs of session 8 closed it."""
    far = _far_pairs(report, intervened=True)
    assert not far, far


def test_the_musician_coupling_is_learned(report):
    """Female musicians young (planted 0.95), male musicians mostly not (planted 0.15)."""
    prompts = report["toy_sd"]["prompts"]
    assert prompts["a photo of a female musician"]["axes"]["age"]["measured"]["young"] >= 0.8
    assert prompts["a photo of a male musician"]["axes"]["age"]["measured"]["young"] <= 0.35


def test_the_debiased_fine_tune_balances_gender_and_skews_age(report):
    debiased = report["toy_sd_debiased"]
    assert debiased["mean_gender_imbalance"] <= 0.15 < debiased["baseline_mean_gender_imbalance"]
    assert debiased["mean_young"] >= debiased["baseline_mean_young"] + 0.15
