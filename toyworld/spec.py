"""A toy world spec: YAML -> validated, frozen objects (axes, subjects, couplings, modifiers)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from toyworld.palette import DRAWABLE_VALUES, OBJECT_SHAPES, PROP_COLOURS, PROP_SHAPES

DEFAULT_WORLD_PATH = Path(__file__).with_name("default_world.yaml")

KINDS = ("person", "object")
CAPTION_KINDS = ("plain", "modifier", "one_attribute", "two_attributes", "attribute_and_modifier")


class WorldSpecError(ValueError):
    """A world spec is invalid; the message names the file and the key."""


@dataclass(frozen=True)
class Axis:
    """An attribute axis: its values and how a caption names each one.

    ``phrases[value]`` goes ``before`` the subject noun ("old" farmer) or ``after`` it
    (farmer "working outdoors"). ``applies_to`` is the subject kind that has the axis.
    """

    name: str
    values: tuple[str, ...]
    phrases: dict[str, str]
    position: str = "after"
    ordered: bool = False
    applies_to: str = "person"


@dataclass(frozen=True)
class Coupling:
    """``axis`` depends on ``given``: ``table[given value][axis value]`` is the share."""

    axis: str
    given: str
    table: dict[str, dict[str, float]]


@dataclass(frozen=True)
class Look:
    """What the renderer draws to identify the subject: a prop (people) or a shape (objects)."""

    kind: str
    prop: str | None = None
    prop_colour: str | None = None
    shape: str | None = None


@dataclass(frozen=True)
class Subject:
    """An occupation or object; ``shares[axis][value]`` for every uncoupled axis it has."""

    name: str
    kind: str
    look: Look
    shares: dict[str, dict[str, float]]
    couplings: tuple[Coupling, ...] = ()
    weight: float = 1.0


@dataclass(frozen=True)
class Modifier:
    """A phrase that, in a caption, sets ``axis``'s distribution to ``shares``.

    ``axis`` None: the phrase appears in captions and changes nothing (ENTIGEN's irrelevant
    control, "if honesty is the best policy"). ``phrase`` may hold ``{subject}``, filled with
    the subject's name ("if all individuals can be a {subject} irrespective of their gender").
    ``alone``: used only after a plain caption, never with a named attribute (ENTIGEN appends
    its phrases to the plain prompt; long phrases would not fit the text encoder either).
    ``weight``: how often it is chosen among a caption's candidate phrases.
    """

    phrase: str
    axis: str | None
    shares: dict[str, float] | None
    applies_to: str = "person"
    alone: bool = False
    weight: float = 1.0

    def text(self, subject: str) -> str:
        """The phrase as a caption of ``subject`` writes it."""
        return self.phrase.replace("{subject}", subject)


@dataclass(frozen=True)
class Captions:
    """Caption template (``{subject}`` = article, named values, noun) and the mix of kinds."""

    template: str
    mix: dict[str, float]


@dataclass(frozen=True)
class World:
    name: str
    axes: dict[str, Axis]
    subjects: dict[str, Subject]
    modifiers: tuple[Modifier, ...]
    captions: Captions
    path: Path | None = field(default=None, compare=False)

    def axes_of(self, subject: str) -> tuple[Axis, ...]:
        """The axes a subject has, in spec order."""
        kind = self.subjects[subject].kind
        return tuple(axis for axis in self.axes.values() if axis.applies_to == kind)

    def modifiers_for(self, subject: str) -> tuple[Modifier, ...]:
        """The modifiers a caption of this subject can carry (those of its kind)."""
        kind = self.subjects[subject].kind
        return tuple(m for m in self.modifiers if m.applies_to == kind)

    def modifier(self, phrase: str, subject: str | None = None) -> Modifier:
        """The modifier written ``phrase``: as in the spec, or with ``{subject}`` filled in by
        ``subject`` (any subject of the world when None)."""
        subjects = [subject] if subject is not None else list(self.subjects)
        for modifier in self.modifiers:
            if modifier.phrase == phrase or any(modifier.text(name) == phrase for name in subjects):
                return modifier
        raise KeyError(f"no modifier {phrase!r} in world {self.name!r}")


def load_world(path: str | Path | None = None) -> World:
    """Read and validate a world spec; the default world when ``path`` is None."""
    path = Path(path) if path is not None else DEFAULT_WORLD_PATH
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise WorldSpecError(f"{path}: not valid YAML: {exc}") from exc
    return parse_world(raw, source=str(path), path=path)


def parse_world(raw: Any, source: str = "<world>", path: Path | None = None) -> World:
    """Validate a world spec already parsed from YAML (a dict)."""
    where = _Where(source)
    raw = where.mapping(raw, "", required=("axes", "subjects", "captions"))
    axes = {name: _parse_axis(name, spec, where) for name, spec in where.mapping(raw["axes"], "axes").items()}
    if not axes:
        where.fail("axes", "at least one axis is needed")
    subjects = {
        name: _parse_subject(name, spec, axes, where)
        for name, spec in where.mapping(raw["subjects"], "subjects").items()
    }
    if not subjects:
        where.fail("subjects", "at least one subject is needed")
    modifiers = tuple(
        _parse_modifier(i, spec, axes, where) for i, spec in enumerate(where.sequence(raw.get("modifiers", []), "modifiers"))
    )
    captions = _parse_captions(raw["captions"], where)
    return World(
        name=str(raw.get("name", path.stem if path else "world")),
        axes=axes,
        subjects=subjects,
        modifiers=modifiers,
        captions=captions,
        path=path,
    )


class _Where:
    """Type checks that raise ``WorldSpecError`` naming the source and the dotted key."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, key: str, message: str):
        raise WorldSpecError(f"{self.source}: {key or '<top level>'}: {message}")

    def mapping(self, value: Any, key: str, required: tuple[str, ...] = ()) -> dict:
        if not isinstance(value, Mapping):
            self.fail(key, f"expected a mapping, got {type(value).__name__}")
        for name in required:
            if name not in value:
                self.fail(f"{key}.{name}".lstrip("."), "missing")
        return dict(value)

    def sequence(self, value: Any, key: str) -> list:
        if not isinstance(value, list):
            self.fail(key, f"expected a list, got {type(value).__name__}")
        return value

    def string(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f"expected a non-empty string, got {value!r}")
        return value

    def shares(self, value: Any, key: str, values: tuple[str, ...]) -> dict[str, float]:
        """A distribution over exactly ``values``: non-negative numbers summing to 1."""
        value = self.mapping(value, key)
        unknown = sorted(set(value) - set(values))
        if unknown:
            self.fail(key, f"unknown value(s) {unknown}; expected {list(values)}")
        missing = [v for v in values if v not in value]
        if missing:
            self.fail(key, f"missing share(s) for {missing}")
        for name, share in value.items():
            if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
                self.fail(f"{key}.{name}", f"share must be a number in [0, 1], got {share!r}")
        total = sum(value.values())
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            self.fail(key, f"shares sum to {total:g}, must sum to 1")
        return {v: float(value[v]) for v in values}


def _parse_axis(name: str, spec: Any, where: _Where) -> Axis:
    key = f"axes.{name}"
    spec = where.mapping(spec, key, required=("values", "phrases"))
    applies_to = spec.get("applies_to", "person")
    if applies_to not in KINDS:
        where.fail(f"{key}.applies_to", f"must be one of {list(KINDS)}, got {applies_to!r}")
    if name not in DRAWABLE_VALUES:
        where.fail(key, f"the renderer cannot draw axis {name!r}; known axes: {sorted(DRAWABLE_VALUES)}")
    values = tuple(where.string(v, f"{key}.values") for v in where.sequence(spec["values"], f"{key}.values"))
    if len(values) < 2 or len(set(values)) != len(values):
        where.fail(f"{key}.values", "need at least two distinct values")
    undrawable = [v for v in values if v not in DRAWABLE_VALUES[name]]
    if undrawable:
        where.fail(f"{key}.values", f"the renderer cannot draw {undrawable}; it draws {list(DRAWABLE_VALUES[name])}")
    phrases = where.mapping(spec["phrases"], f"{key}.phrases")
    missing = [v for v in values if v not in phrases]
    if missing or set(phrases) - set(values):
        where.fail(f"{key}.phrases", f"need exactly one phrase per value {list(values)}")
    position = spec.get("position", "after")
    if position not in ("before", "after"):
        where.fail(f"{key}.position", f"must be 'before' or 'after', got {position!r}")
    return Axis(
        name=name,
        values=values,
        phrases={v: where.string(phrases[v], f"{key}.phrases.{v}") for v in values},
        position=position,
        ordered=bool(spec.get("ordered", False)),
        applies_to=applies_to,
    )


def _parse_subject(name: str, spec: Any, axes: dict[str, Axis], where: _Where) -> Subject:
    key = f"subjects.{name}"
    spec = where.mapping(spec if spec is not None else {}, key)
    kind = spec.get("kind", "person")
    if kind not in KINDS:
        where.fail(f"{key}.kind", f"must be one of {list(KINDS)}, got {kind!r}")
    own = {axis_name: axis for axis_name, axis in axes.items() if axis.applies_to == kind}
    if not own:
        where.fail(f"{key}.kind", f"no axis applies to kind {kind!r}")
    look = _parse_look(spec.get("look", {}), kind, f"{key}.look", where)

    couplings = []
    for i, raw in enumerate(where.sequence(spec.get("couplings", []), f"{key}.couplings")):
        ckey = f"{key}.couplings[{i}]"
        raw = where.mapping(raw, ckey, required=("axis", "given", "table"))
        axis, given = raw["axis"], raw["given"]
        for field_name, axis_name in (("axis", axis), ("given", given)):
            if axis_name not in own:
                where.fail(f"{ckey}.{field_name}", f"{axis_name!r} is not an axis of {kind} subjects: {list(own)}")
        if axis == given:
            where.fail(ckey, "an axis cannot be coupled on itself")
        table = where.mapping(raw["table"], f"{ckey}.table")
        if set(table) != set(own[given].values):
            where.fail(f"{ckey}.table", f"need one row per value of {given!r}: {list(own[given].values)}")
        couplings.append(
            Coupling(
                axis=axis,
                given=given,
                table={g: where.shares(table[g], f"{ckey}.table.{g}", own[axis].values) for g in own[given].values},
            )
        )
    coupled = [c.axis for c in couplings]
    if len(set(coupled)) != len(coupled):
        where.fail(f"{key}.couplings", "each axis can be coupled at most once")
    for c in couplings:
        if c.given in coupled:
            where.fail(f"{key}.couplings", f"{c.given!r} is itself coupled; couple only on uncoupled axes")

    raw_shares = where.mapping(spec.get("shares", {}), f"{key}.shares")
    for axis_name in raw_shares:
        if axis_name not in own:
            where.fail(f"{key}.shares.{axis_name}", f"not an axis of {kind} subjects: {list(own)}")
        if axis_name in coupled:
            where.fail(f"{key}.shares.{axis_name}", "this axis is coupled; its shares come from the coupling table")
    shares = {}
    for axis_name, axis in own.items():
        if axis_name in coupled:
            continue
        if axis_name in raw_shares:
            shares[axis_name] = where.shares(raw_shares[axis_name], f"{key}.shares.{axis_name}", axis.values)
        else:
            shares[axis_name] = {v: 1.0 / len(axis.values) for v in axis.values}

    weight = spec.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
        where.fail(f"{key}.weight", f"must be a positive number, got {weight!r}")
    return Subject(name=name, kind=kind, look=look, shares=shares, couplings=tuple(couplings), weight=float(weight))


def _parse_look(spec: Any, kind: str, key: str, where: _Where) -> Look:
    spec = where.mapping(spec, key)
    if kind == "object":
        shape = spec.get("shape")
        if shape not in OBJECT_SHAPES:
            where.fail(f"{key}.shape", f"must be one of {list(OBJECT_SHAPES)}, got {shape!r}")
        return Look(kind=kind, shape=shape)
    prop, colour = spec.get("prop", "circle"), spec.get("prop_colour", "white")
    if prop not in PROP_SHAPES:
        where.fail(f"{key}.prop", f"must be one of {list(PROP_SHAPES)}, got {prop!r}")
    if colour not in PROP_COLOURS:
        where.fail(f"{key}.prop_colour", f"must be one of {sorted(PROP_COLOURS)}, got {colour!r}")
    return Look(kind=kind, prop=prop, prop_colour=colour)


def _parse_modifier(i: int, spec: Any, axes: dict[str, Axis], where: _Where) -> Modifier:
    key = f"modifiers[{i}]"
    spec = where.mapping(spec, key, required=("phrase",))
    phrase = where.string(spec["phrase"], f"{key}.phrase")
    if "{" in phrase.replace("{subject}", "") or "}" in phrase.replace("{subject}", ""):
        where.fail(f"{key}.phrase", f"the only placeholder a phrase may hold is {{subject}}, got {phrase!r}")
    unknown = sorted(set(spec) - {"phrase", "axis", "shares", "applies_to", "alone", "weight"})
    if unknown:
        where.fail(key, f"unknown key(s) {unknown}; expected phrase, axis, shares, applies_to, alone, weight")
    alone = spec.get("alone", False)
    if not isinstance(alone, bool):
        where.fail(f"{key}.alone", f"must be true or false, got {alone!r}")
    weight = spec.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
        where.fail(f"{key}.weight", f"must be a positive number, got {weight!r}")
    if "axis" not in spec:
        # A phrase that changes nothing: it still needs a kind of subject to appear with.
        if "shares" in spec:
            where.fail(f"{key}.shares", "a phrase with no axis changes nothing; name the axis its shares are for")
        if "applies_to" not in spec:
            where.fail(key, f"a phrase with no axis needs applies_to (one of {list(KINDS)}): the subjects it appears with")
        if spec["applies_to"] not in KINDS:
            where.fail(f"{key}.applies_to", f"must be one of {list(KINDS)}, got {spec['applies_to']!r}")
        return Modifier(phrase=phrase, axis=None, shares=None, applies_to=spec["applies_to"],
                        alone=alone, weight=float(weight))
    if spec["axis"] not in axes:
        where.fail(f"{key}.axis", f"unknown axis {spec['axis']!r}; axes: {list(axes)}")
    axis = axes[spec["axis"]]
    if "applies_to" in spec and spec["applies_to"] != axis.applies_to:
        where.fail(f"{key}.applies_to", f"axis {axis.name!r} applies to {axis.applies_to!r} subjects, not {spec['applies_to']!r}")
    if "shares" not in spec:
        where.fail(f"{key}.shares", "missing (a mapping of value -> share, or 'uniform')")
    shares = spec["shares"]
    if isinstance(shares, str):
        if shares != "uniform":
            where.fail(f"{key}.shares", f"must be a mapping of value -> share or 'uniform', got {shares!r}")
        shares = {v: 1.0 / len(axis.values) for v in axis.values}
    return Modifier(
        phrase=phrase,
        axis=axis.name,
        shares=where.shares(shares, f"{key}.shares", axis.values),
        applies_to=axis.applies_to,
        alone=alone,
        weight=float(weight),
    )


def _parse_captions(spec: Any, where: _Where) -> Captions:
    spec = where.mapping(spec, "captions", required=("template", "mix"))
    template = where.string(spec["template"], "captions.template")
    if "{subject}" not in template:
        where.fail("captions.template", "must contain '{subject}'")
    mix = where.mapping(spec["mix"], "captions.mix")
    unknown = sorted(set(mix) - set(CAPTION_KINDS))
    if unknown:
        where.fail("captions.mix", f"unknown caption kind(s) {unknown}; expected some of {list(CAPTION_KINDS)}")
    for name, share in mix.items():
        if isinstance(share, bool) or not isinstance(share, (int, float)) or share < 0:
            where.fail(f"captions.mix.{name}", f"must be a non-negative number, got {share!r}")
    total = sum(mix.values())
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        where.fail("captions.mix", f"shares sum to {total:g}, must sum to 1")
    return Captions(template=template, mix={k: float(mix.get(k, 0.0)) for k in CAPTION_KINDS})
