"""Issue #45: a judge that errs differently by intersectional group. The audit names the
group; the correction uses the group's own confusion, or says it cannot correct."""

from __future__ import annotations

import zlib

import numpy as np
from support.validation_scripts import validation_script

from pytest_t2ibias.kinds._judge import JudgeReading
from pytest_t2ibias.kinds.entropy_below import evaluate_entropy_below
from pytest_t2ibias.metrics.judge import COUNTERFACTUAL, LABELLED, JudgeCalibration
from pytest_t2ibias.metrics.judge_groups import depends_on_group, group_counts

CHOICES = ("male", "female")
FAIR = np.array([[95, 5], [5, 95]])
MISREADS_WOMEN = np.array([[95, 5], [50, 50]])


def test_group_counts_split_the_confusion_by_group_and_leave_out_abstentions():
    counts = group_counts(np.array([0, 1, 1, 1]), np.array([0, 0, 1, -1]), ["a", "a", "b", "b"], 2)
    assert counts["a"].tolist() == [[1, 0], [1, 0]] and counts["b"].tolist() == [[0, 0], [0, 1]]


def test_the_audit_fails_naming_the_group_the_judge_misreads_and_passes_an_even_judge():
    planted = depends_on_group({"light": FAIR, "dark": MISREADS_WOMEN}, CHOICES, 0.1)
    assert planted.outcome == "fail"
    assert (planted.deciding.worse, planted.deciding.value) == ("dark", "female")
    assert "group 'dark'" in planted.describe()
    even = depends_on_group({"light": FAIR * 10, "dark": FAIR * 10}, CHOICES, 0.1)
    assert even.outcome == "pass"
    small = depends_on_group({"light": np.array([[9, 1], [1, 9]]), "dark": np.array([[8, 2], [3, 7]])},
                             CHOICES, 0.1)
    assert small.outcome == "inconclusive"  # 10 images a cell show neither


def _grouped(source=COUNTERFACTUAL) -> JudgeCalibration:
    groups = {"light": FAIR, "dark": MISREADS_WOMEN}
    return JudgeCalibration("toy judge", "gender", CHOICES, FAIR + MISREADS_WOMEN, source,
                            groups=groups)


def test_where_groups_differ_the_correction_uses_the_items_group_or_cannot_correct():
    counts = {"male": 900, "female": 100}
    own = evaluate_entropy_below(counts, 0.5, confidence=0.95,
                                 judge=JudgeReading(_grouped(LABELLED), "full", group="dark"))
    assert own.figures["judge_calibration"]["confusion"]["female"] == {"male": 50, "female": 50}
    assert "corrected with group 'dark''s own confusion" in own.message
    assert "judge_unreadable" not in own.figures
    pooled = evaluate_entropy_below(counts, 0.5, confidence=0.95,
                                    judge=JudgeReading(_grouped(LABELLED), "full"))
    assert pooled.outcome == "inconclusive" and not pooled.passed
    assert "differs by group" in pooled.message and "'dark'" in pooled.message
    assert "cannot correct" in pooled.figures["judge_unreadable"]


def test_groups_not_shown_alike_correct_an_item_of_one_group_with_its_own_confusion():
    """A calibration too small to show the groups err alike or apart (the audit is
    inconclusive): an item of one group is corrected with that group's confusion, which is
    right for its images whatever the other's, not silently with the pooled one."""
    light, dark = np.array([[45, 5], [5, 45]]), np.array([[40, 10], [12, 38]])
    small = JudgeCalibration("toy judge", "gender", CHOICES, light + dark, LABELLED,
                             groups={"light": light, "dark": dark})
    assert depends_on_group(small.groups, CHOICES, 0.1).outcome == "inconclusive"
    counts = {"male": 700, "female": 300}
    own = evaluate_entropy_below(counts, 0.5, confidence=0.95,
                                 judge=JudgeReading(small, "full", group="dark"))
    assert own.figures["judge_calibration"]["confusion"]["female"] == {"male": 12, "female": 38}
    assert "corrected with group 'dark''s own confusion" in own.message
    mixed = evaluate_entropy_below(counts, 0.5, confidence=0.95, judge=JudgeReading(small, "full"))
    assert mixed.figures["judge_calibration"]["confusion"]["female"] == {"male": 17, "female": 83}
    assert "errs not shown the same within 0.1" in mixed.message


def test_groups_that_err_alike_are_pooled_and_said_so():
    even = JudgeCalibration("toy judge", "gender", CHOICES, FAIR * 20, LABELLED,
                            groups={"light": FAIR * 10, "dark": FAIR * 10})
    verdict = evaluate_entropy_below({"male": 700, "female": 300}, 0.5, confidence=0.95,
                                     judge=JudgeReading(even, "full"))
    assert verdict.outcome == "pass" and "errs the same within 0.1 across 2 groups" in verdict.message


def test_the_toy_world_with_a_planted_intersectional_judge_bias():
    """validation/judge_groups_world.py at 30 worlds: the audit names the dark group every
    time; the group's calibration covers the true severity, the pooled one mostly does not."""
    world = validation_script("judge_groups_world").simulate(30, m=200, n=1000, misread=0.45)
    assert world["audit_fails_naming_dark"] == 30
    assert world["coverage"]["group"] >= 26
    assert world["coverage"]["pooled"] <= 12 and world["coverage"]["uncorrected"] <= 3
    assert world["outcomes"]["group_unknown"]["inconclusive"] == 30


class _PlantedWorld:
    """A fake instrument: counterfactual sets whose judge misreads old women as men in every
    other set (young women, and every man, read right); CLIP-like embeddings that put each
    image near its own prompt, so the 0.2 filter keeps every set."""

    class _Generator:  # no diffusers pipeline: the sets share their noise only
        fingerprint = "toy"

    sightings = None

    def __init__(self):
        from types import SimpleNamespace

        self.plan = SimpleNamespace(seed=0, sampling={})

    def generator(self, role="candidate"):
        return self._Generator()

    def images(self, prompts, per_prompt=None):
        from PIL import Image

        from pytest_t2ibias._types import GeneratedImage, ImageSet

        blank = Image.new("RGB", (4, 4))
        return ImageSet(tuple(GeneratedImage(p, 0, i, blank, f"{p}#{i}", f"{p}#{i}")
                              for p in prompts for i in range(per_prompt)))

    def attributes(self, images, axis, filter=None):
        from pytest_t2ibias._types import Answers

        labels = []
        for item in images:
            truth = 1 if " female " in item.prompt else 0
            misread = "old female" in item.prompt and item.index % 2 == 0
            labels.append(0 if misread else truth)
        return Answers(axis.question, axis.choices, np.array(labels), np.full((len(labels), 2), np.nan),
                       tuple(i.prompt for i in images), tuple(i.key for i in images))

    def _text(self, text):
        rng = np.random.default_rng(zlib.crc32(text.encode()))
        vector = rng.normal(size=32)
        return vector / np.linalg.norm(vector)

    def text_embeddings(self, texts):
        return np.stack([self._text(t) for t in texts])

    def image_embeddings(self, images):
        rows = np.stack([self._text(i.prompt) + 0.1 * self._text(i.key) for i in images])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def judge_name(self, axis):
        return "planted judge"


def test_the_judge_audit_on_counterfactual_sets_fails_naming_the_group_it_misreads():
    from pytest_t2ibias.kinds.judge_across_groups import evaluate_judge_across_groups, group_prompts
    from pytest_t2ibias.methods.socialcf import judge_across_groups
    from pytest_t2ibias.suite_spec import AxisSpec

    gender = AxisSpec("gender", "What is the gender?", ("male", "female"))
    age = AxisSpec("age", "What is the age?", ("young", "old"))
    prompts = group_prompts("a photo of a {} {subject}", "doctor", gender, [age])
    assert [p for *_, p in prompts][:2] == ["a photo of a young male doctor",
                                            "a photo of a young female doctor"]
    audit = judge_across_groups(_PlantedWorld(), gender, prompts, 40, neutral=["a photo of a doctor"],
                                k=None, tolerance=0.1)
    assert audit.kept == 40 and audit.calibration.groups["old"].tolist() == [[40, 0], [20, 20]]
    verdict = evaluate_judge_across_groups(audit, 0.1, confidence=0.95, burden="model")
    assert verdict.outcome == "fail" and not verdict.passed
    assert "female misread 20/40 (50%) in group 'old' vs 0/40 (0%) in 'young'" in verdict.message
    assert verdict.figures["about"] == "old vs young"
    grid = verdict.figures["gallery"]["groups"]
    assert len(grid) == 4 and all(len(g["images"]) == 40 for g in grid)  # a row a group, a column a set


def test_an_item_whose_prompt_names_a_group_is_of_that_group():
    """Through the plugin an item's group is the one its prompt names as words (issue #45):
    "a photo of an old doctor" is corrected with group old's confusion, a prompt naming no
    group, or two, with none (then the correction cannot apply, as before)."""
    from pytest_t2ibias.kinds._judge import item_group

    ages = JudgeCalibration("toy judge", "gender", CHOICES, FAIR * 3, LABELLED,
                            groups={"young": FAIR, "middle-aged": FAIR, "old": MISREADS_WOMEN})
    assert item_group("a photo of an old doctor", ages) == "old"
    assert item_group("a photo of a Middle-aged doctor", ages) == "middle-aged"
    assert item_group("a photo of a doctor", ages) is None
    assert item_group("a photo of a young or old doctor", ages) is None
    assert item_group("an aged doctor, not so young-looking", ages) is None  # words, not parts
    two = JudgeCalibration("toy judge", "gender", CHOICES, FAIR * 2, LABELLED,
                           groups={"young, dark": FAIR, "old, dark": MISREADS_WOMEN})
    assert item_group("a photo of an old doctor with dark skin", two) == "old, dark"
    assert item_group("a photo of an old doctor", two) is None
    assert item_group("a photo of an old doctor", JudgeCalibration(
        "toy judge", "gender", CHOICES, FAIR, LABELLED)) is None


def test_a_check_on_a_prompt_naming_the_misread_group_is_corrected_with_its_confusion(tmp_path):
    """``reading_for`` names the item's group from the subject's prompt, so an entropy_below
    check on "an old doctor" with a labelled folder whose old people the judge misreads is
    corrected with group old's confusion, not left inconclusive (the old code: no group)."""
    from types import SimpleNamespace

    from pytest_t2ibias.kinds import _judge

    calibration = JudgeCalibration("toy judge", "gender", CHOICES, FAIR + MISREADS_WOMEN, LABELLED,
                                   groups={"young": FAIR, "old": MISREADS_WOMEN})
    ctx = SimpleNamespace(subject="doctor", suite=SimpleNamespace(prompt_for="a photo of an old {}".format),
                          plan=SimpleNamespace(judge_correction="on", audits_folder=False))
    original = _judge.judge_calibration
    _judge.judge_calibration = lambda ctx, axis: calibration
    try:
        reading = _judge.reading_for(ctx, SimpleNamespace(name="gender"))
    finally:
        _judge.judge_calibration = original
    assert reading.group == "old"
    verdict = evaluate_entropy_below({"male": 700, "female": 300}, 0.5, confidence=0.95,
                                     judge=reading)
    assert "corrected with group 'old''s own confusion" in verdict.message
    assert "judge_unreadable" not in verdict.figures
