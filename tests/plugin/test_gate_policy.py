"""Who carries the burden, how a family of checks is controlled, and what --t2i-plan says."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.intermit_world import FAKE_WORLD, SUITE
from support.specs import check, suite

from pytest_t2ibias import Estimate
from pytest_t2ibias._settings import Settings
from pytest_t2ibias.family import Family
from pytest_t2ibias.plan import plan_for
from pytest_t2ibias.verdict import FAIL, INCONCLUSIVE, PASS, decide, passes


@pytest.mark.parametrize(("low", "high", "at_most", "outcome"), [
    (0.1, 0.2, True, PASS), (0.4, 0.5, True, FAIL), (0.2, 0.4, True, INCONCLUSIVE),
    (-0.05, 0.1, False, PASS), (-0.3, -0.2, False, FAIL), (-0.2, 0.1, False, INCONCLUSIVE),
])
def test_the_interval_decides_against_the_limit(low, high, at_most, outcome):
    limit = 0.3 if at_most else -0.1
    estimate = Estimate((low + high) / 2, low, high, 48)
    assert decide(estimate, limit, confidence=0.95, at_most=at_most) == outcome
    assert passes(outcome, "model") == (outcome == PASS)
    assert passes(outcome, "check") == (outcome != FAIL)


def test_without_confidence_the_point_decides_and_nan_is_inconclusive():
    straddling = Estimate(0.25, 0.1, 0.4, 48)
    assert decide(straddling, 0.3, confidence=None) == PASS
    assert decide(Estimate(float("nan"), 0, 1, 0), 0.3, confidence=0.95) == INCONCLUSIVE


def test_burden_command_line_then_check_then_suite_then_model():
    assert plan_for(Settings.standalone()).burden == "model"
    assert plan_for(Settings.standalone(), suite(burden="check")).burden == "check"
    assert plan_for(Settings.standalone(), suite(burden="check"), check(burden="model")).burden == "model"
    assert plan_for(Settings.standalone(burden="check"), suite(burden="model"),
                    check(burden="model")).burden == "check"


def test_bonferroni_divides_the_error_among_the_family():
    family = Family("bonferroni", 20)
    assert family.confidence(0.95) == pytest.approx(1 - 0.05 / 20)
    assert family.confidence(None) is None  # a point decision stays one
    assert Family("none", 20).confidence(0.95) == 0.95
    assert "P(any wrong verdict) <= 5%" in family.describe(0.95)
    unguarded = Family("none", 20).describe(0.95)
    assert "up to 1.0 wrong verdicts expected" in unguarded
    assert unguarded.endswith("any wrong verdict in the run at 5%")  # a whole sentence


def _holm_reference(p: dict[str, float], alpha: float) -> set[str]:
    """Holm (1979) on p-values, as textbooks write it."""
    ordered, rejected = sorted(p, key=p.get), set()
    for j, name in enumerate(ordered):
        if p[name] > alpha / (len(p) - j):
            break
        rejected.add(name)
    return rejected


def _bh_reference(p: dict[str, float], alpha: float) -> set[str]:
    """Benjamini-Hochberg (1995) on p-values."""
    ordered = sorted(p.values())
    k = max((k for k in range(1, len(p) + 1) if ordered[k - 1] <= k * alpha / len(p)), default=0)
    return {check for check, value in p.items() if value <= k * alpha / len(p)}


@pytest.mark.parametrize("policy, reference", [("holm", _holm_reference), ("bh", _bh_reference)])
def test_holm_and_bh_from_levels_match_the_p_value_procedures(policy, reference):
    """``Family.levels`` asks only "decisive at this level?"; a check with p-value p is
    decisive at level L when p <= 1 - L. The verdicts must be the textbook procedure's."""
    rng = np.random.default_rng(0)
    asked = 0
    for trial in range(300):
        m = int(rng.integers(2, 25))
        # mixtures of true nulls (uniform p) and real effects (small p), with ties
        p = {f"c{i}": float(rng.uniform() if rng.uniform() < 0.5 else rng.beta(0.3, 8))
             for i in range(m)}
        if trial % 7 == 0:
            p["c0"] = p["c1"]

        def decisive(check, level, p=p):
            nonlocal asked
            asked += 1
            return p[check] <= 1 - level + 1e-12

        levels = Family(policy, m).levels({c: 0.05 for c in p}, decisive)
        assert set(levels) == set(p)
        decided = {c for c in p if p[c] <= 1 - levels[c] + 1e-12}
        assert decided == reference(p, 0.05), (policy, p)
    assert asked < 300 * 25 * 6  # a few passes over the family, not one per p-value grid


def test_holm_is_never_less_decisive_than_bonferroni():
    p = {"a": 0.001, "b": 0.012, "c": 0.02, "d": 0.3}
    levels = Family("holm", 4).levels(dict.fromkeys(p, 0.05),
                                      lambda c, level: p[c] <= 1 - level)
    assert {c for c in p if p[c] <= 1 - levels[c]} == {"a", "b", "c"}  # Bonferroni: only a
    assert levels["a"] == pytest.approx(1 - 0.05 / 4) and levels["d"] == pytest.approx(0.95)


CHECKS = """\
checks:
  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.3, confidence: 0.95}
  - {id: spill, kind: is_nonnegative, mitigate: [gender], on: [age], tolerance: 0.1,
     confidence: 0.95}
  - {id: planned, kind: w1_below, axes: [age], threshold: 0.3, confidence: 0.95,
     images_per_prompt: auto, margin: 0.2}
"""


def _run(pytester, *args):
    pytester.makeconftest(FAKE_WORLD)
    pytester.makefile(".t2i.yaml", policy=SUITE + CHECKS)
    # fixed n: these tests read the family's levels, which adaptive looks would spend further
    return pytester.runpytest("-p", "no:cacheprovider", "--t2i-model=male", "--t2i-vqa=fake",
                              "--t2i-no-cache", "--t2i-bootstrap=200", "--t2i-fixed-n", *args)


def test_the_family_widens_every_gated_interval(pytester):
    _run(pytester, "--t2i-json=none.json")
    result = _run(pytester, "--t2i-family=bonferroni", "--t2i-json=family.json")
    result.stdout.fnmatch_lines(["*family: 3 gated checks, Bonferroni*each at 98.3%*"])
    rows = {name: {r["nodeid"]: r for r in json.loads((pytester.path / name).read_text())["checks"]}
            for name in ("none.json", "family.json")}
    spill = "policy.t2i.yaml::spill[nurse-gender]"
    assert rows["none.json"][spill]["confidence"] == 0.95
    assert rows["family.json"][spill]["confidence"] == pytest.approx(1 - 0.05 / 3)
    wide = lambda r: r["high"] - r["low"]
    assert wide(rows["family.json"][spill]) > wide(rows["none.json"][spill])


@pytest.mark.parametrize("policy", ["holm", "bh"])
def test_holm_and_bh_run_each_check_at_the_level_the_procedure_found(pytester, policy):
    result = _run(pytester, f"--t2i-family={policy}", "--t2i-json=family.json")
    result.stdout.fnmatch_lines([f"*family: 3 gated checks, {'Holm' if policy == 'holm' else 'Benjamini-Hochberg'}*"])
    rows = json.loads((pytester.path / "family.json").read_text())["checks"]
    levels = {r["check_id"]: r["confidence"] for r in rows}
    if policy == "holm":  # planned passes at 1 - 0.05/3; the other two get 1 - 0.05/2 and don't
        assert levels == pytest.approx({"planned": 1 - 0.05 / 3, "balance": 1 - 0.05 / 2,
                                        "spill": 1 - 0.05 / 2})
    else:  # BH: one decisive of three: k* = 1, every check at 1 - 0.05/3
        assert levels == pytest.approx(dict.fromkeys(levels, 1 - 0.05 / 3))
    run = json.loads((pytester.path / "family.json").read_text())["run"]
    assert run["settings"]["family"] == policy


def test_plan_prints_costs_and_needs_and_runs_nothing(pytester):
    result = _run(pytester, "--t2i-plan")
    # each item's images, and those that calibrate its judge (gender's and age's
    # counterfactuals, 48 a value; spill draws gender's itself)
    result.stdout.fnmatch_lines(["*t2ibias: plan*",
                                 "*policy.t2i.yaml::balance*48*1*144*96 images calibrate the judge*",
                                 "*policy.t2i.yaml::spill*48*3*240*no power model*"])
    assert "items underpowered near their limit: 1 (n for 90% above n" in " ".join(result.stdout.str().split())
    result.assert_outcomes()  # nothing ran: no model was loaded


def test_auto_takes_the_planned_images(pytester):
    from pytest_t2ibias.planner import images_to_decide
    from pytest_t2ibias.suite.load import load_suite

    _run(pytester, "--t2i-json=auto.json", "-k", "planned")
    loaded = load_suite(pytester.path / "policy.t2i.yaml")
    planned = next(c for c in loaded.checks if c.id == "planned")
    needed = images_to_decide(planned, loaded.axes["age"], confidence=0.95)
    row = json.loads((pytester.path / "auto.json").read_text())["checks"][0]
    assert needed > 16 and row["n"] == needed  # every image answered in the fake world
