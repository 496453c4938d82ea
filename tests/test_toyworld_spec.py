"""The world spec: the default world loads with its planted biases, bad specs fail naming the key."""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest
import yaml

from pytest_t2ibias.toyworld import DEFAULT_WORLD_PATH, WorldSpecError, load_world, parse_world


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

