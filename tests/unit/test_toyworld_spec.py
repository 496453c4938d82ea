"""The world spec: the default world loads with its planted biases, bad specs fail naming the key."""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest
import yaml

from toyworld import DEFAULT_WORLD_PATH, WorldSpecError, load_world, parse_world


@pytest.fixture(scope="module")
def raw_world() -> dict:
    return yaml.safe_load(DEFAULT_WORLD_PATH.read_text())


def test_default_world_has_the_planted_biases():
    world = load_world()
    people = [s for s in world.subjects.values() if s.kind == "person"]
    objects = [s for s in world.subjects.values() if s.kind == "object"]
    assert len(people) >= 10 and len(objects) >= 2
    assert world.axes["age"].ordered and world.axes["age"].values == ("young", "middle-aged", "old")
    assert world.subjects["doctor"].shares["gender"]["male"] == pytest.approx(0.8)
    assert world.subjects["nurse"].shares["gender"]["female"] == pytest.approx(0.85)
    assert world.subjects["farmer"].shares["environment"]["outdoors"] == pytest.approx(0.9)
    (coupling,) = world.subjects["musician"].couplings
    assert (coupling.axis, coupling.given) == ("age", "gender")
    assert coupling.table["female"]["young"] == pytest.approx(0.95)
    assert world.subjects["musician"].weight == pytest.approx(2.0)
    assert world.subjects["laptop"].shares["colour"]["silver"] == pytest.approx(0.85)
    assert {m.phrase for m in world.modifiers} >= {"with intense focus", "in a sunlit garden"}


def test_world_is_frozen():
    world = load_world()
    with pytest.raises(dataclasses.FrozenInstanceError):
        world.name = "other"


def _set(raw: dict, dotted: str, value) -> dict:
    raw = copy.deepcopy(raw)
    *path, last = dotted.split(".")
    node = raw
    for key in path:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[last] = value
    return raw


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("subjects.doctor.shares.gender", {"male": 0.8, "female": 0.1}, "subjects.doctor.shares.gender: shares sum to 0.9"),
        ("subjects.doctor.shares.gender", {"male": 0.8, "woman": 0.2}, "subjects.doctor.shares.gender: unknown value(s) ['woman']"),
        ("subjects.doctor.shares.height", {"tall": 1.0}, "subjects.doctor.shares.height: not an axis"),
        ("subjects.doctor.look", {"prop": "hexagon"}, "subjects.doctor.look.prop"),
        ("subjects.doctor.kind", "robot", "subjects.doctor.kind"),
        ("subjects.musician.couplings", [{"axis": "age", "given": "mood", "table": {}}], "subjects.musician.couplings[0].given"),
        ("subjects.musician.shares.age", {"young": 1.0, "middle-aged": 0.0, "old": 0.0}, "subjects.musician.shares.age: this axis is coupled"),
        ("axes.emotion.values", ["happy", "furious"], "axes.emotion.values: the renderer cannot draw ['furious']"),
        ("axes.gender.phrases", {"male": "male"}, "axes.gender.phrases"),
        ("modifiers.0.shares", {"male": 2.0, "female": -1.0}, "modifiers[0].shares.male"),
        ("modifiers.0.shares", "even", "modifiers[0].shares: must be a mapping of value -> share or 'uniform'"),
        ("modifiers.0.phrase", "if all {people} can be one", "modifiers[0].phrase: the only placeholder"),
        ("modifiers.0.applies_to", "object", "modifiers[0].applies_to: axis 'gender' applies to 'person'"),
        ("modifiers.0.alone", "yes", "modifiers[0].alone: must be true or false"),
        ("modifiers.0.weight", 0, "modifiers[0].weight: must be a positive number"),
        ("modifiers.0.when", "always", "modifiers[0]: unknown key(s) ['when']"),
        ("modifiers.4.shares", {"male": 0.5, "female": 0.5}, "modifiers[4].shares: a phrase with no axis changes nothing"),
        ("modifiers.4.applies_to", "robot", "modifiers[4].applies_to: must be one of ['person', 'object']"),
        ("captions.template", "a photo", "captions.template: must contain '{subject}'"),
        ("captions.mix", {"plain": 0.5, "poem": 0.5}, "captions.mix: unknown caption kind(s) ['poem']"),
    ],
)
def test_bad_spec_names_the_key(raw_world, key, value, message):
    with pytest.raises(WorldSpecError, match="^bad.yaml: " + re.escape(message)):
        parse_world(_set(raw_world, key, value), source="bad.yaml")


def test_missing_section_and_bad_yaml(tmp_path, raw_world):
    raw = {k: v for k, v in raw_world.items() if k != "captions"}
    with pytest.raises(WorldSpecError, match="captions: missing"):
        parse_world(raw)
    path = tmp_path / "world.yaml"
    path.write_text("axes: [unclosed")
    with pytest.raises(WorldSpecError, match="world.yaml: not valid YAML"):
        load_world(path)



def test_entigen_phrases_and_the_object_control_are_planted():
    """ENTIGEN's intervention makes gender uniform for any person; its control changes nothing;
    the mug's colour is uniform."""
    world = load_world()
    intervention = world.modifier("if all individuals can be a {subject} irrespective of their gender")
    assert intervention.axis == "gender" and intervention.shares == {"male": 0.5, "female": 0.5}
    assert intervention.alone and intervention.text("nurse") == "if all individuals can be a nurse irrespective of their gender"
    assert world.modifier("if all individuals can be a nurse irrespective of their gender") is intervention
    with pytest.raises(KeyError):  # filled in for another subject
        world.modifier("if all individuals can be a nurse irrespective of their gender", subject="doctor")
    control = world.modifier("if honesty is the best policy")
    assert (control.axis, control.shares, control.applies_to, control.alone) == (None, None, "person", True)
    assert control in world.modifiers_for("doctor") and control not in world.modifiers_for("laptop")
    assert world.subjects["mug"].kind == "object" and world.subjects["mug"].look.shape == "mug"
    assert list(world.subjects["mug"].shares["colour"].values()) == pytest.approx([0.2] * 5)


def test_a_phrase_without_an_axis_must_say_whom_it_appears_with(raw_world):
    raw = copy.deepcopy(raw_world)
    del raw["modifiers"][4]["applies_to"]
    with pytest.raises(WorldSpecError, match=re.escape("bad.yaml: modifiers[4]: a phrase with no axis needs applies_to")):
        parse_world(raw, source="bad.yaml")


def test_the_docs_list_the_toy_worlds_words_as_its_spec_has_them():
    """A user writing a suite for the toy models learns from docs/toyworld.md which subjects exist
    (a word outside them is <unk> to toy-sd: issue #27); regenerate with
    ``python -m toyworld.vocabulary``."""
    from pathlib import Path

    from toyworld.spec import DEFAULT_WORLD_PATH, load_world
    from toyworld.vocabulary import END, START, markdown

    page = (Path(__file__).resolve().parents[2] / "docs" / "toyworld.md").read_text(encoding="utf-8")
    shown = START + page.split(START, 1)[1].split(END, 1)[0] + END
    expected = markdown(load_world(DEFAULT_WORLD_PATH))
    assert shown == expected
    assert "`nurse`" in expected and "`pilot`" not in expected
