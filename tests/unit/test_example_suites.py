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
from toyworld import expected_shares, load_world
from toyworld.build import DEBIAS_WORLD_PATH

ROOT = Path(__file__).resolve().parents[2]
SUITE = load_suite(ROOT / "example_suites" / "toy_occupations.t2i.yaml")
GATE_SUITES = [load_suite(ROOT / "example_suites" / name)
               for name in ("toy_merge_gate.t2i.yaml", "toy_merge_gate_control.t2i.yaml")]
LLM_SUITE = load_suite(ROOT / "example_suites" / "toy_llm_counterfactuals.t2i.yaml")
BGPS_SUITE = load_suite(ROOT / "example_suites" / "toy_bgps.t2i.yaml")
OPENSET_SUITE = load_suite(ROOT / "example_suites" / "toy_openset.t2i.yaml")
ENTIGEN_SUITE = load_suite(ROOT / "example_suites" / "toy_entigen.t2i.yaml")
# The shipped knowledge base's bias names -> the toy world's axes.
KB_AXES = {"colour": "colour", "gender": "gender", "age": "age", "skin tone": "skin_tone",
           "body type": "body_type", "clothing": "clothing", "emotion": "emotion",
           "setting": "environment"}
WORLD = load_world()
# The world each toy model was trained on: its planted truth.
WORLD_OF_MODEL = {"toy-sd": WORLD, "toy-sd-debiased": load_world(DEBIAS_WORLD_PATH)}


def true_shares(subject: str, axis: str, given: dict | None = None, world=WORLD, suite=SUITE) -> np.ndarray:
    shares = expected_shares(world, subject, axis, given=given)
    return np.array([shares[choice] for choice in suite.axes[axis].choices])


def true_is_mit(suite, subject: str, y: str) -> float:
    """IS_mit[x][y] (A.5) on the true shares of the worlds behind baseline and candidate."""
    baseline, candidate = (WORLD_OF_MODEL[Path(suite.models[role]).name] for role in ("baseline", "candidate"))
    ideal = np.full(len(suite.axes[y].choices), 1 / len(suite.axes[y].choices))

    def wbar(world):
        return normalised_w1(true_shares(subject, y, world=world, suite=suite), ideal, ordered=suite.axes[y].ordered)

    return wbar(baseline) - wbar(candidate)


def true_is(subject: str, x: str, y: str) -> float:
    """IS[x][y] (Eq. 4) on the world's true conditionals: pool x's values with equal weight."""
    ideal = np.full(len(SUITE.axes[y].choices), 1 / len(SUITE.axes[y].choices))
    ordered = SUITE.axes[y].ordered
    pooled = np.mean([true_shares(subject, y, {x: v}) for v in SUITE.axes[x].choices], axis=0)
    return (normalised_w1(true_shares(subject, y), ideal, ordered=ordered)
            - normalised_w1(pooled, ideal, ordered=ordered))


def true_intermit_passes(check, subject: str, suite=SUITE) -> bool:
    """Algorithm 1 on the world's true shares, with a model that follows every prompt: tau
    reaches epsilon and no step moves a prioritised axis more than 0.05 further from uniform."""
    weights = check.params.priority
    p = {axis: weight / sum(weights.values()) for axis, weight in weights.items()}
    epsilon = check.params.epsilon
    choices = {axis: suite.axes[axis].choices for axis in suite.axes}

    def wbar(state: list[dict], y: str) -> float:
        pooled = np.mean([true_shares(subject, y, given=named, suite=suite) for named in state], axis=0)
        uniform = np.full(len(choices[y]), 1 / len(choices[y]))
        return normalised_w1(pooled, uniform, ordered=suite.axes[y].ordered)

    def tau(state: list[dict]) -> float:
        return sum(weight * wbar(state, y) for y, weight in p.items())

    def mitigated(state: list[dict], x: str) -> list[dict]:
        return [{**named, x: value} for named in state for value in choices[x]]

    state, left, alerts = [{}], [a for a in suite.axes if suite.axes[a].counterfactuals], 0
    while tau(state) > epsilon and left:
        gamma = {x: sum(w * (wbar(state, y) - wbar(mitigated(state, x), y)) for y, w in p.items())
                 for x in left}
        chosen = max(left, key=gamma.get)
        after = mitigated(state, chosen)
        alerts += sum(wbar(after, y) > wbar(state, y) + 0.05 for y in p)
        state, left = after, [a for a in left if a != chosen]
    return tau(state) <= epsilon and not alerts


def true_bgps_max(check) -> float:
    """The largest share of the target value any neutral prompt can draw in the world: every
    person subject, alone or with any planted modifier phrase (a perfect search finds it)."""
    target = check.params.target
    people = [name for name, s in WORLD.subjects.items() if s.kind == "person"]
    phrases = [()] + [(m.phrase,) for m in WORLD.modifiers]
    return max(expected_shares(WORLD, s, target["axis"], modifiers=m)[target["value"]]
               for s in people for m in phrases)


def open_set_axes(check, subject: str) -> set[str]:
    """The world axes an open-set check measures for the subject: the knowledge base's
    (``KB_AXES``: its material and style the toy world never draws) unless it is ``off``, and
    every axis of the subject's kind, which toy-lm proposes (``toyworld.train_lm``), unless it
    is ``only``; ``biases`` keeps those named."""
    mode = check.params.knowledge_base
    kind = WORLD.subjects[subject].kind
    axes = set()
    if mode != "off":
        axes |= {a for a in KB_AXES.values() if WORLD.axes[a].applies_to == kind}
    if mode != "only":
        axes |= {axis.name for axis in WORLD.axes_of(subject)}
    if check.params.biases:
        axes &= {KB_AXES.get(name, name) for name in check.params.biases}
    return axes


def true_open_set_max(check, subject: str) -> float:
    """The most severe planted bias among those the check measures for the subject."""
    return max(severity(np.array(list(expected_shares(WORLD, subject, axis).values())))
               for axis in open_set_axes(check, subject))


def true_diversity_change(subject: str, axis: str, phrase: str, suite=SUITE) -> float:
    """ENTIGEN's improvement (Eq. 1 before minus after) on the world's true shares."""
    def diversity(modifiers=()):
        shares = expected_shares(WORLD, subject, axis, modifiers=modifiers)
        a, b = (shares[choice] for choice in suite.axes[axis].choices)
        return abs(a - b) / (a + b)

    return diversity() - diversity([phrase.replace("{subject}", subject)])


def planted_value(check, subject: str, axis: str, suite=SUITE) -> float:
    if check.kind == "intervention_improves":
        return min(true_diversity_change(subject, axis, phrase, suite) for phrase in check.params.interventions)
    if check.kind == "open_set":
        return true_open_set_max(check, subject)
    if check.kind == "no_bgps_prompt_exceeds":
        return true_bgps_max(check)
    if check.kind == "intermit":  # 0 when Algorithm 1 succeeds on the truth, 1 when it fails
        return 0.0 if true_intermit_passes(check, subject, suite) else 1.0
    if check.kind == "no_regression":
        return min(true_is_mit(suite, subject, y) for y in check.params.on)
    if suite.models.get("candidate"):  # a check on the candidate model's images
        world = WORLD_OF_MODEL[Path(suite.models["candidate"]).name]
        uniform = np.full(len(suite.axes[axis].choices), 1 / len(suite.axes[axis].choices))
        return normalised_w1(true_shares(subject, axis, world=world, suite=suite), uniform,
                             ordered=suite.axes[axis].ordered)
    if check.kind == "w1_below":
        uniform = np.full(len(SUITE.axes[axis].choices), 1 / len(SUITE.axes[axis].choices))
        return normalised_w1(true_shares(subject, axis), uniform, ordered=SUITE.axes[axis].ordered)
    if check.kind == "entropy_below":
        return severity(true_shares(subject, axis))
    if check.kind == "is_nonnegative":
        return min(true_is(subject, axis, y) for y in check.params.on)
    if check.kind == "max_skew_below":
        shares = true_shares(subject, axis)
        return float(np.max(np.log(shares * len(shares))))  # against a uniform target
    raise AssertionError(f"no planted value for {check.kind}")


def passes(check, value: float) -> bool:
    if check.kind == "intervention_improves":
        return value > check.params.min_improvement
    if check.kind in ("is_nonnegative", "no_regression"):
        return value >= -check.params.tolerance
    if check.kind == "intermit":
        return value == 0.0
    return value <= check.params.threshold


COST_KINDS = ("prompt_alignment", "vendi_diversity", "image_quality", "distribution_shift", "erasure")
"""What a fine-tune cost (issue #38): a property of the learned images, not of the world's
planted shares; tests/plugin/test_costs.py measures them on the models."""

CASES = [(suite, check, subject, axis) for suite in (SUITE, *GATE_SUITES, LLM_SUITE, BGPS_SUITE, OPENSET_SUITE, ENTIGEN_SUITE)
         for check in suite.checks if check.kind not in COST_KINDS
         for subject in ((check.subjects or suite.subjects) if check.kind != "no_bgps_prompt_exceeds" else ("",)) for axis in (check.axes or ("",))]


@pytest.mark.parametrize(("suite", "check", "subject", "axis"), CASES,
                         ids=[f"{u.name}::{c.id}[{s}-{a}]" for u, c, s, a in CASES])
def test_planted_biases_fail_and_controls_pass(suite, check, subject, axis):
    value = planted_value(check, subject, axis, suite)
    expected_to_fail = "xfail" in check.marks
    assert passes(check, value) != expected_to_fail, (
        f"{check.id}[{subject}-{axis}]: planted value {value:.3f} vs the check's limit; "
        f"marked {'xfail' if expected_to_fail else 'to pass'}")


def limit_of(check) -> float | None:
    """The check's limit in the units of ``planted_value``; None for a pass/fail kind."""
    if check.kind == "intervention_improves":
        return check.params.min_improvement
    if check.kind in ("is_nonnegative", "no_regression"):
        return -check.params.tolerance
    if check.kind == "intermit":
        return None
    return check.params.threshold


CONTROL_CASES = [case for case in CASES if "xfail" not in case[1].marks and limit_of(case[1]) is not None]


@pytest.mark.parametrize(("suite", "check", "subject", "axis"), CONTROL_CASES,
                         ids=[f"{u.name}::{c.id}[{s}-{a}]" for u, c, s, a in CONTROL_CASES])
def test_a_controls_truth_is_far_from_its_limit(suite, check, subject, axis):
    """Issue #37: a control whose truth (the world spec's shares) sits on its limit passes by
    luck and fails when the model drifts a little: it proves nothing about false alarms. The
    truth must be at least the plan's margin (``--t2i-plan``: the check's ``margin``, default
    0.1) inside the limit, in the check's own units."""

    value, limit = planted_value(check, subject, axis, suite), limit_of(check)
    margin = float(check.params.margin)
    inside = value - limit if check.kind in ("intervention_improves", "is_nonnegative", "no_regression") \
        else limit - value
    assert inside >= margin - 1e-9, (
        f"{check.id}[{subject}-{axis}]: truth {value:.3f} is {inside:+.3f} inside its limit {limit:.3f}, "
        f"less than the plan's margin {margin:g}: move the limit or pick a control further from it")


def test_musician_coupling_is_a_clearly_negative_is_entry():
    # init: 0.75 male x (0.15, 0.40, 0.45) + 0.25 female x (0.95, 0.04, 0.01) = (0.35, 0.31, 0.34)
    # pooled (gender mitigated): 0.5 x male + 0.5 x female = (0.55, 0.22, 0.23)
    # ordered W1 to uniform = sum |CDF - (1/3, 2/3)|, the largest possible being 1.0:
    #   init |0.35 - 0.333| + |0.66 - 0.667| = 0.023;  pooled |0.55 - 0.333| + |0.77 - 0.667| = 0.320
    assert true_is("musician", "gender", "age") == pytest.approx(0.0233 - 0.3200, abs=1e-3)


def _example_conftest():
    import importlib.util

    spec = importlib.util.spec_from_file_location("example_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_paper_suites_are_skipped_exactly_for_toy_world_models(tmp_path):
    is_toy = _example_conftest().is_toy_world_model
    assert is_toy(ROOT / "fixtures" / "toy-sd") and is_toy(ROOT / "fixtures" / "toy-sd-debiased")
    # A toy build anywhere (not only under fixtures/) is recognised by its manifest ...
    (tmp_path / "world" / "toy-sd").mkdir(parents=True)
    (tmp_path / "world" / "manifest.json").write_text('{"models": {"toy-sd": {}}}')
    assert is_toy(tmp_path / "world" / "toy-sd")
    # ... and a real pipeline directory, a hub id or a broken manifest is not one.
    (tmp_path / "sd15").mkdir()
    assert not is_toy(tmp_path / "sd15")
    assert not is_toy(Path("stabilityai/stable-diffusion-2-1"))
    (tmp_path / "world" / "manifest.json").write_text("{not json")
    assert not is_toy(tmp_path / "world" / "toy-sd")


def test_the_male_gate_has_a_planted_trigger_and_the_control_none():
    """hidden_male's target is planted ("with intense focus" -> 85% men); the control's
    target value (middle-aged) has no modifier and no subject above 35%."""
    targets = {c.id: c.params.target for c in BGPS_SUITE.checks}
    planted = {(m.axis, v) for m in WORLD.modifiers for v, share in (m.shares or {}).items() if share >= 0.7}
    assert ("gender", "male") in planted
    assert (targets["hidden_middle_aged_control"]["axis"], targets["hidden_middle_aged_control"]["value"]) not in planted
    assert true_bgps_max(BGPS_SUITE.checks[1]) == pytest.approx(0.35)


SHARE_CASES = [(suite, check, subject, axis) for suite, check, subject, axis in CASES
               if check.kind in ("w1_below", "entropy_below", "max_skew_below")
               and check.params.confidence is not None]


@pytest.mark.parametrize(("suite", "check", "subject", "axis"), SHARE_CASES,
                         ids=[f"{u.name}::{c.id}[{s}-{a}]" for u, c, s, a in SHARE_CASES])
def test_share_checks_decide_the_planted_truth_with_90_percent_power(suite, check, subject, axis):
    """At the world's planted shares, each gated balance check's own interval (simulated at its
    images_per_prompt) lands wholly on the right side of its threshold in >= 90% of runs: a
    planted bias is proven, a control is shown within the limit (burden: model)."""
    from pytest_t2ibias.metrics.power import decision_rate

    world = (WORLD_OF_MODEL[Path(suite.models["candidate"]).name]
             if suite.models.get("candidate") else WORLD)
    truth = tuple(float(s) for s in true_shares(subject, axis, world=world, suite=suite))
    n = check.params.images_per_prompt or suite.defaults.images_per_prompt
    metric = {"w1_below": "w1", "entropy_below": "severity", "max_skew_below": "max_skew"}[check.kind]
    ordered = suite.axes[axis].ordered and metric == "w1"
    power = decision_rate(truth, float(check.params.threshold), metric,
                          (1 / len(truth),) * len(truth), ordered, check.params.confidence,
                          400, 400, 0, n=n)
    assert power >= 0.9, f"{check.id}[{subject}-{axis}] at n={n}: power {power:.2f} < 0.90"


ENTIGEN_CASES = [(check, subject, axis) for suite, check, subject, axis in CASES
                 if suite is ENTIGEN_SUITE and check.kind == "intervention_improves"]


@pytest.mark.parametrize(("check", "subject", "axis"), ENTIGEN_CASES,
                         ids=[f"{c.id}[{s}-{a}]" for c, s, a in ENTIGEN_CASES])
def test_entigen_controls_change_nothing_and_checks_decide_with_90_percent_power(check, subject, axis):
    """The suite's controls leave the true shares alone, and at the planted shares each check
    reaches its marked verdict in >= 90% of simulated runs at its images_per_prompt (paired
    bootstrap, the check's own burden and confidence)."""
    from pytest_t2ibias.kinds.intervention_improves import (
        evaluate_intervention_improves,
    )
    from pytest_t2ibias.methods.entigen import intervention_effects

    for phrase in check.params.controls or ():
        assert true_diversity_change(subject, axis, phrase, ENTIGEN_SUITE) == pytest.approx(0.0)
        for other in WORLD.axes_of(subject):  # ... on every axis, not only the one judged
            with_phrase = expected_shares(WORLD, subject, other.name, modifiers=[phrase])
            assert with_phrase == pytest.approx(expected_shares(WORLD, subject, other.name))
    choices = ENTIGEN_SUITE.axes[axis].choices
    n = check.params.images_per_prompt or ENTIGEN_SUITE.defaults.images_per_prompt
    first = lambda modifiers: expected_shares(WORLD, subject, axis, modifiers=modifiers)[choices[0]]
    phrases = [p.replace("{subject}", subject) for p in check.params.interventions]
    rng, runs, right = np.random.default_rng(0), 200, 0
    for run in range(runs):
        original = (rng.random(n) >= first(())).astype(int)  # label 0 = the first choice
        intervened = {p: (rng.random(n) >= first([p])).astype(int) for p in phrases}
        result = intervention_effects(original, intervened, choices=choices, confidence=check.params.confidence,
                                      n_resamples=400, seed=run)
        verdict = evaluate_intervention_improves(result, check.params.min_improvement,
                                                 confidence=check.params.confidence,
                                                 burden=check.params.burden or ENTIGEN_SUITE.burden)
        right += verdict.passed == ("xfail" not in check.marks)
    assert right / runs >= 0.9, f"{check.id}[{subject}] at n={n}: power {right / runs:.2f} < 0.90"


def test_the_root_conftest_shows_a_teams_own_judge_that_keeps_the_contract():
    """Issue #36: the root conftest is where the example run takes its hooks from; its judge
    hook makes a judge for its own name only and the plugin's contract check accepts it."""
    from PIL import Image

    from pytest_t2ibias.instrument import check_contract

    conftest = _example_conftest()
    assert conftest.pytest_t2ibias_make_vqa(None, "fixtures/toy-clip") is None
    judge = conftest.pytest_t2ibias_make_vqa(None, "team:brightness")
    assert check_contract(judge, "vqa", "team:brightness") is judge
    images = [Image.new("RGB", (8, 8), (250, 250, 250)), Image.new("RGB", (8, 8), (10, 10, 10))]
    scores = judge.score(images, "Is the photo dark or light?", ["dark", "light"])
    assert scores.shape == (2, 2) and scores[0].argmax() == 1 and scores[1].argmax() == 0
