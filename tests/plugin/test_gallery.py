"""A check's image grid: per prompt and role, the first images with every axis' answer, marks
for filtered and abstained images, and caps that keep the JSON small."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_t2ibias._types import ABSTAINED, FILTERED, Answers, Estimate
from pytest_t2ibias.figures import gallery_figure, with_gallery
from pytest_t2ibias.instrument import Sightings
from pytest_t2ibias.verdict import Verdict


def _answers(choices, labels, prompts, keys) -> Answers:
    labels = np.array(labels)
    return Answers("q", tuple(choices), labels, np.full((len(labels), len(choices)), 0.5),
                   tuple(prompts), tuple(keys))


def test_images_are_grouped_by_prompt_and_role_and_labelled_on_every_axis():
    prompts = ["a nurse"] * 3 + ["a male nurse"] * 2
    keys = ["k1", "k2", "k3", "k4", "k5"]
    gender = _answers(("male", "female"), [1, FILTERED, 0, 0, ABSTAINED], prompts, keys)
    age = _answers(("young", "old"), [0, FILTERED, 1, ABSTAINED, 1], prompts, keys)
    roles = {"k1": "baseline", "k2": "baseline", "k3": "candidate", "k4": "candidate",
             "k5": "candidate"}
    figure = gallery_figure([("gender", gender), ("age", age), ("gender", gender)], roles)
    assert figure == {
        "axes": ["gender", "age"], "per_prompt": 8, "prompts": 3,
        "groups": [
            {"prompt": "a nurse", "role": "baseline", "n": 2, "images": [
                {"key": "k1", "labels": ["female", "young"]},
                {"key": "k2", "labels": [None, None], "mark": "filtered"}]},
            {"prompt": "a nurse", "role": "candidate", "n": 1, "images": [
                {"key": "k3", "labels": ["male", "old"]}]},
            {"prompt": "a male nurse", "role": "candidate", "n": 2, "images": [
                {"key": "k4", "labels": ["male", None], "mark": "abstained"},
                {"key": "k5", "labels": [None, "old"], "mark": "abstained"}]},
        ]}


def test_caps_keep_the_first_images_and_prompts_and_count_the_rest():
    prompts = [f"p{i // 10}" for i in range(30)]
    answers = _answers(("a", "b"), [i % 2 for i in range(30)], prompts,
                       [f"{i:04x}" for i in range(30)])
    figure = gallery_figure([("x", answers)], per_prompt=3, max_prompts=2)
    assert figure["prompts"] == 3 and [g["prompt"] for g in figure["groups"]] == ["p0", "p1"]
    assert [g["n"] for g in figure["groups"]] == [10, 10]
    assert [i["key"] for i in figure["groups"][1]["images"]] == ["000a", "000b", "000c"]
    assert [i["labels"] for i in figure["groups"][0]["images"]] == [["a"], ["b"], ["a"]]


def test_answers_without_image_keys_make_no_gallery_and_leave_the_verdict_alone():
    keyless = _answers(("a", "b"), [0, 1], ["p", "p"], [])
    assert gallery_figure([("x", keyless)]) is None
    verdict = Verdict("w1_below", Estimate(0.1, 0.0, 0.2, 2), 0.3, "ok", "pass", {"label": "x"})
    sightings = Sightings()
    sightings.saw("x", keyless)
    assert with_gallery(verdict, sightings) is verdict
    sightings.saw("x", _answers(("a", "b"), [0], ["p"], ["k"]))
    shown = with_gallery(verdict, sightings)
    assert shown.figures["label"] == "x"
    assert shown.figures["gallery"]["groups"][0]["images"] == [{"key": "k", "labels": ["a"]}]


def test_the_runs_html_images_setting_keeps_n_or_all_images_a_prompt():
    from pytest_t2ibias._test_call import shown_per_prompt

    prompts = ["p"] * 20
    answers = _answers(("a", "b"), [i % 2 for i in range(20)], prompts,
                       [f"{i:04x}" for i in range(20)])
    assert len(gallery_figure([("x", answers)])["groups"][0]["images"]) == 8  # the default
    token = shown_per_prompt.set(None)  # --t2i-html-images=all
    try:
        figure = gallery_figure([("x", answers)])
    finally:
        shown_per_prompt.reset(token)
    assert figure["per_prompt"] is None and len(figure["groups"][0]["images"]) == 20


def test_html_images_option_reads_a_number_or_all(pytester):
    from pytest_t2ibias._settings import images_shown

    assert images_shown("all") is None and images_shown("12") == 12
    with pytest.raises(ValueError, match="positive number of images or all"):
        images_shown("0")
    pytester.makepyfile(test_it="""
        from pytest_t2ibias._test_call import shown_per_prompt

        def test_seen():
            assert shown_per_prompt.get() is None
    """)
    pytester.runpytest("-p", "no:cacheprovider", "--t2i-html-images=all").assert_outcomes(passed=1)
