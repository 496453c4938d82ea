"""Adaptive sampling (issue #26): looks at 16, 32, 64 ... images per prompt, intervals spent
over the looks so that stopping once decided keeps their coverage, rounds batched across
checks, and a warm rerun that stops at the same look with the same verdict."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from pytest_t2ibias._settings import Settings
from pytest_t2ibias.metrics import jeffreys_interval
from pytest_t2ibias.metrics.sequential import (
    betting_share_interval,
    doubling_looks,
    look_confidence,
    look_confidences,
    spent_alpha,
)
from pytest_t2ibias.plan import Levels, plan_for
from pytest_t2ibias.suite.load import load_suite

# -- the looks and their levels --------------------------------------------------------------


def test_looks_double_from_16_up_to_the_cap():
    assert doubling_looks(600) == (16, 32, 64, 128, 256, 600)  # not 512: 85% of the cap
    assert doubling_looks(128) == (16, 32, 64, 128)
    assert doubling_looks(200) == (16, 32, 64, 128, 200)
    assert doubling_looks(140) == (16, 32, 64, 140)
    assert doubling_looks(10) == (10,) and doubling_looks(20) == (20,)
    with pytest.raises(ValueError, match="cap"):
        doubling_looks(0)


def test_obrien_fleming_spends_next_to_nothing_early_and_almost_all_of_alpha_at_the_cap():
    # Lan & DeMets (1983): alpha(t) = 2 - 2 Phi(z_{0.975} / sqrt(t)); alpha(1/4) = 2 - 2 Phi(3.92)
    assert spent_alpha(0.05, 0.25) == pytest.approx(8.86e-5, rel=1e-2)
    assert spent_alpha(0.05, 0.5) == pytest.approx(0.00557, rel=1e-2)
    assert spent_alpha(0.05, 1.0) == pytest.approx(0.05)
    assert spent_alpha(0.05, 0.5, "pocock") == pytest.approx(0.05 * np.log(1 + (np.e - 1) / 2))
    looks = (16, 32, 64, 120)
    union = look_confidences(0.95, looks, calibration=1, exact=False)
    assert sum(1 - c for c in union) == pytest.approx(0.05)  # the whole budget, no more
    assert union[0] > 0.9999999 and union[-1] == pytest.approx(1 - (0.05 - spent_alpha(
        0.05, 64 / 120)))
    bare = look_confidences(0.95, looks, calibration=1)  # exact: the looks share images
    assert bare[0] == pytest.approx(union[0], abs=1e-12)  # the first look has no past
    assert all(b <= u for b, u in zip(bare, union)) and 1 - bare[-1] > 1 - union[-1] + 0.002
    assert 0.95 < bare[-1] < 0.955  # the cap reads almost the fixed-n interval
    levels = look_confidences(0.95, looks)  # with the measured factor 1.5: alpha/1.5 in all
    assert sum(1 - c for c in look_confidences(0.95, looks, exact=False)) == pytest.approx(
        0.05 / 1.5)
    assert 0.965 < levels[-1] < 0.975
    assert look_confidence(0.95, looks, 120) == levels[-1]
    assert look_confidence(0.95, looks, 32) == levels[1]
    assert Levels(0.95, 0.9).spent_over(looks, 120, "obrien_fleming") == Levels(
        levels[-1], look_confidences(0.9, looks)[-1])
    assert Levels(None, 0.9).spent_over((16, 32), 16, "bonferroni") == Levels(
        None, pytest.approx(0.975))  # even, with its measured factor 2: 1 - 0.1/(2 * 2)
    assert look_confidences(0.95, (16,)) == (pytest.approx(0.95),)  # one look: fixed n
    from pytest_t2ibias._settings import ADAPTIVE_SPENDING
    from pytest_t2ibias.metrics.sequential import DEFAULT_SPENDING, SPENDING_FUNCTIONS

    assert ADAPTIVE_SPENDING == SPENDING_FUNCTIONS and DEFAULT_SPENDING == SPENDING_FUNCTIONS[0]
    with pytest.raises(ValueError, match="spending"):
        look_confidences(0.95, looks, "linear")
    with pytest.raises(ValueError, match="looks"):
        look_confidences(0.95, (32, 16))


# -- the betting confidence sequence of a share -----------------------------------------------


def test_betting_sequence_holds_the_truth_at_every_n_at_the_nominal_rate():
    """P(some n <= 256 excludes the truth) <= 5%: 300 sequences, every n checked (the
    running intersection makes the last interval the intersection of all of them)."""
    rng = np.random.default_rng(3)
    for p in (0.5, 0.8):
        ever_excluded = 0
        for _ in range(300):
            x = (rng.random(256) < p).astype(int)
            e = betting_share_interval(x, 0.95)
            ever_excluded += not e.low <= p <= e.high
        assert ever_excluded / 300 <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 300)


def test_betting_sequence_narrows_and_is_wider_than_one_fixed_n_interval():
    x = (np.random.default_rng(0).random(600) < 0.3).astype(int)
    at_100, at_600 = betting_share_interval(x[:100]), betting_share_interval(x)
    assert at_600.high - at_600.low < at_100.high - at_100.low
    fixed = jeffreys_interval(int(x.sum()), 600)
    assert at_600.low <= fixed.low and fixed.high <= at_600.high  # the price of validity
    assert at_600.low < 0.3 < at_600.high
    assert betting_share_interval(np.ones(20)).high == 1.0
    with pytest.raises(ValueError, match="0 or 1"):
        betting_share_interval(np.array([0, 2]))


# -- plans ------------------------------------------------------------------------------------

SUITE = """\
suite: fair
defaults: {images_per_prompt: 48, seed: 0}
prompt: "a photo of a {subject}"
subjects: [doctor, nurse]
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
checks:
  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.35, confidence: 0.95,
     images_per_prompt: {max: 256}}
  - {id: severity, kind: entropy_below, axes: [gender], threshold: 0.2, confidence: 0.95}
  - {id: ungated, kind: w1_below, axes: [gender], threshold: 0.35}
"""


def _suite(tmp_path, text=SUITE):
    path = tmp_path / "fair.t2i.yaml"
    path.write_text(text)
    return load_suite(path)


def test_a_check_asks_for_rounds_with_max_and_the_command_line_can_fix_n(tmp_path):
    suite = _suite(tmp_path)
    balance, severity, ungated = suite.checks
    settings = Settings.standalone(adaptive=False)  # --t2i-fixed-n
    plan = plan_for(settings, suite, balance, adaptive=True)
    assert plan.looks == (16, 32, 64, 128, 256) and plan.images_per_prompt == 256
    assert not plan_for(settings, suite, severity, adaptive=True).adaptive
    # adaptive is the default (issue #46): the severity check samples in rounds unasked
    assert plan_for(Settings.standalone(), suite, severity, adaptive=True).looks == (16, 32, 60)
    fixed = plan_for(Settings.standalone(images_per_prompt=100), suite, balance, adaptive=True)
    assert (fixed.looks, fixed.images_per_prompt) == ((), 100)
    everywhere = Settings.standalone(adaptive=True)
    # 1.25 x its 48: the cap's spent interval about as wide as the fixed 95% one
    assert plan_for(everywhere, suite, severity, adaptive=True).looks == (16, 32, 60)
    folder = Settings.standalone(adaptive=True, images=tmp_path)  # holds what it holds
    assert plan_for(folder, suite, severity, adaptive=True).looks == (16, 32, 48)
    assert plan_for(everywhere, suite, ungated, adaptive=True).looks == ()  # no gate, no stop
    assert plan_for(everywhere, suite, severity, adaptive=False).looks == ()  # kind says no
    capped = Settings.standalone(adaptive=True, adaptive_max=600)
    assert plan_for(capped, suite, severity, adaptive=True).looks[-1] == 600
    twice = Settings.standalone(adaptive=True, adaptive_max=2.0)
    assert plan_for(twice, suite, severity, adaptive=True).looks == (16, 32, 64, 96)


def test_max_in_the_suite_defaults_makes_every_gated_check_that_can_stop_adaptive(tmp_path):
    suite = _suite(tmp_path, SUITE.replace("images_per_prompt: 48",
                                           "images_per_prompt: {max: 300}").replace(
        "threshold: 0.35}", "threshold: 0.35, images_per_prompt: 40}"))
    assert (suite.defaults.images_per_prompt, suite.defaults.seed) == ({"max": 300}, 0)
    balance, severity, own_n = suite.checks
    settings = Settings.standalone(adaptive=False)  # --t2i-fixed-n: {max: N} alone asks
    assert plan_for(settings, suite, balance, adaptive=True).looks[-1] == 256  # its own max
    plan = plan_for(settings, suite, severity, adaptive=True)
    assert plan.looks == (16, 32, 64, 128, 300) and plan.images_per_prompt == 300
    fixed = plan_for(settings, suite, severity, adaptive=False)  # a kind that cannot stop
    assert (fixed.looks, fixed.images_per_prompt) == ((), 300)
    assert plan_for(settings, suite, own_n, adaptive=True).images_per_prompt == 40
    called = plan_for(settings, suite, severity, n=24, adaptive=True)  # the caller's n
    assert (called.looks, called.images_per_prompt) == ((), 24)
    for bad, words in (("{max: 0}", "max must lie in"), ("{most: 3}", "{max: N}"),
                       ("-3", "a positive integer or {max: N}")):
        with pytest.raises(Exception, match=re.escape(words)):
            _suite(tmp_path, SUITE.replace("images_per_prompt: 48", f"images_per_prompt: {bad}"))


def test_the_cap_is_images_or_a_multiple_of_the_checks_own():
    from pytest_t2ibias._settings import adaptive_cap

    assert adaptive_cap("600") == 600 and adaptive_cap("2x") == 2.0
    assert adaptive_cap("1.5X") == 1.5
    for bad in ("0", "x", "-2x", "lots"):
        with pytest.raises(ValueError, match="multiple"):
            adaptive_cap(bad)


def test_max_is_refused_where_it_cannot_stop(pytester):
    pytester.makefile(".t2i.yaml", kinds=SUITE.replace(
        "  - {id: severity", "  - {id: searched, kind: judge_agrees, axes: [gender], "
        "folder: labelled, threshold: 0.5, confidence: 0.95, images_per_prompt: {max: 64}}"
        "\n  - {id: severity"))
    result = pytester.runpytest("--collect-only", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([("*check 'searched': images_per_prompt: {max: ...} (adaptive "
                                  "sampling) is supported by *w1_below*not judge_agrees*")])
    pytester.makefile(".t2i.yaml", kinds=SUITE.replace(
        "threshold: 0.35}", "threshold: 0.35, images_per_prompt: {max: 64}}"))
    result = pytester.runpytest("--collect-only", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*check 'ungated'*needs confidence:*"])
    pytester.makefile(".t2i.yaml", kinds=SUITE.replace("{max: 256}", "{most: 256}"))
    result = pytester.runpytest("--collect-only", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*images_per_prompt must be a number, auto, or {max: N}*"])


# -- a run ------------------------------------------------------------------------------------

FAKE_WORLD = '''
import hashlib
import numpy as np
import pytest
from PIL import Image

MALE_SHARE = {"doctor": 0.95, "nurse": 0.5, "teacher": 0.62}
drawn = []


def _male(prompt, seed, index):
    subject = prompt.split()[-1]
    digest = hashlib.sha256(f"{prompt}|{seed}|{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64 < MALE_SHARE[subject]


class Generator:
    fingerprint = "fake-shares-v1"

    def generate(self, requests):
        drawn.extend((r.prompt, r.index) for r in requests)
        return [Image.new("RGB", (4, 4), (255 if _male(r.prompt, r.seed, r.index) else 0,
                                          r.index % 256, r.index // 256)) for r in requests]


class Answerer:
    fingerprint = "fake-reader-v1"

    def score(self, images, question, choices, statements=None):
        male = np.array([image.getpixel((0, 0))[0] > 127 for image in images], dtype=float)
        return np.stack([male, 1 - male], axis=1)


@pytest.hookimpl
def pytest_t2ibias_make_generator(config, model, role):
    return Generator()


@pytest.hookimpl
def pytest_t2ibias_make_vqa(config, model):
    return Answerer()


def pytest_sessionfinish(session):
    import json, pathlib
    pathlib.Path("drawn.json").write_text(json.dumps(sorted(set(map(tuple, drawn)))))
'''

RUN_SUITE = """\
suite: shares
defaults: {images_per_prompt: 200, seed: 0}
prompt: "a photo of a {subject}"
subjects: [doctor, nurse, teacher]
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
checks:
  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.45, confidence: 0.95,
     subjects: [doctor, nurse]}
  - {id: close, kind: w1_below, axes: [gender], threshold: 0.3, confidence: 0.95,
     subjects: [teacher]}
"""


def _run(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", "--t2i-model=fake", "--t2i-vqa=fake",
                              f"--t2i-cache-dir={pytester.path / 'cache'}",
                              "--t2i-bootstrap=300", "--t2i-json=report.json", *args)


def _verdicts(pytester):
    report = json.loads((pytester.path / "report.json").read_text())
    return {row["nodeid"].split("::")[-1]: (row["outcome"], row["n"])
            for row in report["checks"]}


def test_adaptive_rounds_stop_once_decided_and_a_warm_rerun_agrees(pytester):
    pytester.makeconftest(FAKE_WORLD)
    pytester.makefile(".t2i.yaml", shares=RUN_SUITE)
    fixed = _run(pytester, "--t2i-fixed-n")  # adaptive is the default (#46)
    fixed.assert_outcomes(passed=1, failed=2)
    fixed_verdicts = _verdicts(pytester)
    fixed_drawn = len(json.loads((pytester.path / "drawn.json").read_text()))
    assert fixed_drawn == 3 * 200

    (pytester.path / "cache").rename(pytester.path / "fixed-cache")
    adaptive = _run(pytester, "--t2i-adaptive")
    adaptive.assert_outcomes(passed=1, failed=2)
    verdicts = _verdicts(pytester)
    drawn = json.loads((pytester.path / "drawn.json").read_text())
    by_prompt = {}
    for prompt, index in drawn:
        by_prompt[prompt] = max(by_prompt.get(prompt, 0), index + 1)
    # the doctor (95% male) is beyond 0.45 at the first look; the nurse (50/50) is shown
    # within it after a few; the teacher (W1 0.24 vs 0.3) stays undecided up to the cap,
    # 1.25 x 200 (its chance to decide there stays above FUTILE_BELOW at every look)
    assert by_prompt["a photo of a doctor"] == 16
    assert 16 < by_prompt["a photo of a nurse"] < 200
    assert by_prompt["a photo of a teacher"] == 250
    assert len(drawn) == sum(by_prompt.values()) < fixed_drawn
    assert {k: v[0] for k, v in verdicts.items()} == {k: v[0] for k, v in fixed_verdicts.items()}
    adaptive.stdout.fnmatch_lines([("*adaptive: stopped at 16 of up to 250 images per prompt "
                                    "(looks 16); this look's interval at 1 - <1e-16, alpha "
                                    "spent obrien-fleming over all 5 looks so that together "
                                    "they hold 95%*")])

    rerun = _run(pytester, "--t2i-adaptive")
    rerun.assert_outcomes(passed=1, failed=2)
    assert json.loads((pytester.path / "drawn.json").read_text()) == []  # all from the cache
    assert _verdicts(pytester) == verdicts


# -- power planning ---------------------------------------------------------------------------


def test_expected_images_of_the_stopping_rule():
    from pytest_t2ibias.metrics.power import expected_images

    looks = (16, 32, 64, 128)
    clear = expected_images((0.95, 0.05), 0.35, "w1", (0.5, 0.5), False, 0.95, looks)
    assert clear[1] == 1.0 and 16 <= clear[0] <= 32  # beyond the limit by the second look
    balanced, decided = expected_images((0.5, 0.5), 0.35, "w1", (0.5, 0.5), False, 0.95, looks)
    assert 16 < balanced < 128 and decided > 0.8
    on_the_limit, decided = expected_images((0.6, 0.4), 0.2, "w1", (0.5, 0.5), False, 0.95, looks)
    assert on_the_limit > balanced and decided < 0.5


def test_the_plan_shows_adaptive_images_and_warns_where_a_check_never_passes(tmp_path):
    from pytest_t2ibias.kinds import PlannedItem
    from pytest_t2ibias.planner import never_passes, plan_item

    suite = _suite(tmp_path, SUITE + """\
  - {id: zero, kind: w1_below, axes: [gender], threshold: 0.0, confidence: 0.95}
""")
    balance, _, ungated, zero = suite.checks
    settings = Settings.standalone()
    plan = plan_for(settings, suite, balance, adaptive=True)
    item = plan_item("balance", PlannedItem(suite, balance, "doctor", suite.axes["gender"], plan),
                     power=0.9)
    assert "adaptive: expected" in item.note and "at most 256 (looks 16, 32, 64, 128, 256" in item.note
    def warned(check):  # at the gate its plan resolved
        return never_passes(check, plan_for(settings, suite, check).levels.gate)

    assert warned(balance) == "" and warned(ungated) == ""
    assert "never passes" in warned(zero)
    spill = _suite(tmp_path, SUITE.replace(
        "checks:\n", "checks:\n  - {id: spill, kind: is_nonnegative, mitigate: [gender], "
        "on: [gender], tolerance: 0, confidence: 0.95}\n")).checks[0]
    assert "tolerance 0 is the no-effect value" in never_passes(spill, 0.95)
    # InterMit's tolerance is not its limit: the paper's rule passes at the cap with no
    # alert, so it is not "never passes"; in rounds, tolerance 0 only means no early pass.
    searched = _suite(tmp_path, SUITE.replace(
        "checks:\n", "checks:\n  - {id: mitigate, kind: intermit, priority: {gender: 1}, "
        "confidence: 0.95}\n")).checks[0]
    assert never_passes(searched, 0.95) == ""
    note = plan_item("mitigate", PlannedItem(suite, searched, "doctor", None, plan_for(
        Settings.standalone(adaptive=True), suite, searched, adaptive=True)), power=0.9).note
    assert "adaptive: at most 60 images a prompt (looks 16, 32, 60)" in note
    assert "passes only at its cap" in note


ENTIGEN_SUITE = """\
suite: interventions
defaults: {images_per_prompt: 200, seed: 0}
prompt: "a photo of a {subject}"
subjects: [doctor]
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
checks:
  - {id: works, kind: intervention_improves, axes: [gender], min_improvement: 0.3,
     interventions: ["if all individuals can be a {subject} irrespective of their gender"],
     confidence: 0.95}
  - {id: does_nothing, kind: intervention_improves, axes: [gender], min_improvement: 0.3,
     interventions: ["if honesty is the best policy"], confidence: 0.95}
"""


def test_an_intervention_is_judged_in_rounds_and_stops_once_decided(pytester):
    """ENTIGEN's improvement (doctors 95% male; the intervention makes them 50/50, the other
    phrase does nothing): both clear-cut against 0.3, both decided long before 200 images,
    with the fixed-n verdicts."""
    pytester.makeconftest(FAKE_WORLD.replace(
        "    subject = prompt.split()[-1]\n",
        "    subject = prompt.split()[4]\n"
        "    if 'irrespective' in prompt:\n"
        "        subject = 'nurse'  # 50/50\n"))
    pytester.makefile(".t2i.yaml", interventions=ENTIGEN_SUITE)
    _run(pytester, "--t2i-fixed-n").assert_outcomes(passed=1, failed=1)
    fixed = _verdicts(pytester)
    (pytester.path / "cache").rename(pytester.path / "fixed-cache")
    _run(pytester, "--t2i-adaptive").assert_outcomes(passed=1, failed=1)
    adaptive = _verdicts(pytester)
    assert {k: v[0] for k, v in adaptive.items()} == {k: v[0] for k, v in fixed.items()}
    report = json.loads((pytester.path / "report.json").read_text())
    stopped = {row["nodeid"].split("::")[-1]: row["figures"]["adaptive"]["images_per_prompt"]
               for row in report["checks"]}
    assert all(n <= 64 for n in stopped.values()), stopped
    drawn = json.loads((pytester.path / "drawn.json").read_text())
    assert len(drawn) < 3 * 200 / 2


BGPS_SUITE = """\
suite: searched
defaults: {images_per_prompt: 200, seed: 0}
prompt: "a photo of a {subject}"
subjects: [doctor]
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
checks:
  - {id: hidden_male, kind: no_bgps_prompt_exceeds, target: {axis: gender, value: male},
     threshold: 0.75, confidence: 0.95, baseline: false, neutral_prompt: "a photo of a nurse"}
"""


def _bgps_lock(pytester, prompts):
    """The lock a search would have written for ``hidden_male`` on the fake generator."""
    from pytest_t2ibias.kinds.no_bgps_prompt_exceeds import gate_of
    from pytest_t2ibias.locks.bgps import LOCK_VERSION, bgps_lock_path

    suite = load_suite(pytester.path / "searched.t2i.yaml")
    identity = gate_of("hidden_male", suite, suite.checks[0].params).identity()
    found = [{"prompt": f"{identity['settings']['model_prompt']} {word}", "continuation": word,
              "score": -1.0, "lm_log_likelihood": -1.0, "probe_probability": 0.9, "tokens": 1,
              "finished": True, "runs": [1]} for word in prompts]
    entry = {**identity, "llm": None, "generator": "fake-shares-v1", "probe_given": None,
             "search": {"settings": identity["settings"], "prompts": found}, "baseline": None}
    bgps_lock_path(suite.path).write_text(json.dumps({
        "about": "test", "lock_version": LOCK_VERSION, "suite": suite.path.name,
        "gates": {"hidden_male": entry}}))


@pytest.mark.parametrize(("found", "outcome", "stops_before_cap"), [
    (["doctor", "nurse"], "fail", True),  # the doctor's prompt draws 95% male
    (["nurse", "kind nurse"], "pass", True),  # 50% male, shown below 0.75
    (["nurse", "teacher"], "pass", False),  # the teacher, 62%, is shown below only at 200
])
def test_a_bgps_gate_measures_its_found_prompts_in_rounds(pytester, found, outcome,
                                                          stops_before_cap):
    pytester.makeconftest(FAKE_WORLD)
    pytester.makefile(".t2i.yaml", searched=BGPS_SUITE)
    _bgps_lock(pytester, found)
    fixed = _run(pytester, "--t2i-fixed-n")  # adaptive is the default (#46)
    fixed_verdict = _verdicts(pytester)["hidden_male"]
    fixed_drawn = len(json.loads((pytester.path / "drawn.json").read_text()))
    (pytester.path / "cache").rename(pytester.path / "fixed-cache")
    adaptive = _run(pytester, "--t2i-adaptive")
    verdict = _verdicts(pytester)["hidden_male"]
    drawn = len(json.loads((pytester.path / "drawn.json").read_text()))
    assert fixed.ret == adaptive.ret
    assert fixed_verdict[0] == verdict[0] == outcome
    assert fixed_drawn == 3 * 200  # two found prompts and the neutral one
    row, = json.loads((pytester.path / "report.json").read_text())["checks"]
    stopped = row["figures"]["adaptive"]["images_per_prompt"]
    assert (stopped < 200) is stops_before_cap
    assert drawn == 3 * stopped  # a look draws only the images the earlier ones did not


def test_an_intervention_improves_only_wholly_above_its_limit_and_never_on_one_point_early():
    """ENTIGEN's paired bootstrap is discrete: a phrase that changes nothing can put the low
    end exactly on 0 (it must not pass), and 16 pairs all alike give the one-point interval
    [0, 0], which excluded a real improvement of 0.1 in up to 40% of sequences
    (validation/entigen_stopping.py): before the cap it decides nothing."""
    from pytest_t2ibias._types import Estimate
    from pytest_t2ibias.kinds.intervention_improves import improvement_outcome

    def effect(low, high):
        return Estimate((low + high) / 2, low, high, 16, 0.99, "paired bootstrap")

    assert improvement_outcome(effect(0.0, 0.2), 0.0, 0.95, early=False) == "inconclusive"
    assert improvement_outcome(effect(0.05, 0.2), 0.0, 0.95, early=False) == "pass"
    assert improvement_outcome(effect(-0.2, -0.05), 0.0, 0.95, early=False) == "fail"
    assert improvement_outcome(effect(0.0, 0.0), 0.3, 0.95, early=True) == "inconclusive"
    assert improvement_outcome(effect(0.0, 0.0), 0.3, 0.95, early=False) == "fail"  # the cap decides
    assert improvement_outcome(effect(0.4, 0.4), 0.3, 0.95, early=True) == "inconclusive"
    assert improvement_outcome(effect(0.0, 0.2), 0.0, None, early=False) == "pass"  # point decision


def test_the_chance_to_decide_at_the_cap_is_read_off_a_looks_interval():
    """Issue #46: an undecided look before the cap projects its interval (computed at the
    cap's level) to the cap; a truth far inside its limit is sure to decide there, one on the
    limit is not, and the chance grows with the distance."""
    from pytest_t2ibias.metrics.sequential import FUTILE_BELOW, chance_to_decide

    def chance(value, half=0.1, n=64, cap=250):
        return chance_to_decide(value, value - half, value + half, 0.3, confidence=0.97,
                                n=n, cap=cap)

    on_limit, near, far = chance(0.3), chance(0.25), chance(0.1)
    assert far > 0.99 and on_limit < 0.05 and on_limit < near < far
    assert chance(0.3, n=32) > on_limit  # a wider look's estimate can still move further
    assert chance(0.3, half=0.3, n=128) < FUTILE_BELOW  # a wide look, half the cap to go
    assert chance(0.3, n=250) is None  # no images left to draw
    assert chance_to_decide(0.5, 0.1, 0.3, 0.3, confidence=0.97, n=64, cap=250) is None


def test_a_check_on_its_limit_stops_before_its_cap_when_it_will_not_decide(pytester):
    """Issue #46: the teacher's W1 is 0.24 and so is its limit: fixed n (200) is
    inconclusive, and the rounds stop at a look before the cap of 250 once the chance to
    decide there is below FUTILE_BELOW, inconclusive too, saying so."""
    from pytest_t2ibias.metrics.sequential import FUTILE_BELOW

    pytester.makeconftest(FAKE_WORLD)
    pytester.makefile(".t2i.yaml", shares=RUN_SUITE.replace(
        "subjects: [doctor, nurse, teacher]", "subjects: [teacher]").replace(
        "threshold: 0.3,", "threshold: 0.24,").replace(
        "  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.45, confidence: 0.95,\n"
        "     subjects: [doctor, nurse]}\n", ""))
    _run(pytester, "--t2i-fixed-n")
    assert _verdicts(pytester) == {"close[teacher-gender]": ("inconclusive", 200)}
    adaptive = _run(pytester)  # the default
    adaptive.stdout.fnmatch_lines(["*sampling design: adaptive (the default*"])
    row = json.loads((pytester.path / "report.json").read_text())["checks"][0]
    rounds = row["figures"]["adaptive"]
    assert row["outcome"] == "inconclusive" and rounds["will_not_decide"]
    assert rounds["images_per_prompt"] < rounds["cap"] == 250
    assert rounds["chances_to_decide"][-1] < FUTILE_BELOW
    adaptive.stdout.fnmatch_lines(["*will not decide: at this estimate its interval would "
                                   "exclude the limit at the cap of 250 with chance *"])
