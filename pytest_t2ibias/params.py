"""A check's parameters as a frozen, typed dataclass: the base every kind's ``Params``
extends (the parameters every kind takes), the ``param(...)`` field that carries a key's doc,
default and validator, and what the suite loader and the YAML reference read off it.

A kind's ``Params`` subclasses ``Params``; its fields are its ``checks:`` keys: the annotation
is the type, ``param(...)`` the doc, the one default and the validator. The suite loader
validates an entry against ``declared(cls)`` and builds the object (``build``); a kind's run
reads ``ctx.params.threshold``. A validator returns None for a good value, else the message
the loader reports at the parameter's file:line; ``docgen/reference_data.py`` gives each its
JSON Schema. A value, like ``suite_spec``: it imports no kind.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ._settings import ADAPTIVE_KINDS, BURDENS, JUDGE_CORRECTIONS, PROTOCOLS
from .budgets import MAX_IMAGES_PER_PROMPT

NUMBER = (int, float)
AXIS_LIST = (list,)

Validator = Callable[[Any], "str | None"]
AxesValidator = Callable[[Any, Mapping[str, Any]], "str | None"]
"""A validator given the suite's axes (name -> ``suite_spec.AxisSpec``; suite_spec builds on this module)."""

TEXT_SCHEMA: dict[str, Any] = {"type": "string", "pattern": r"\S"}
"""JSON Schema of a non-empty string (not blank)."""
IMAGES_SCHEMA: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": MAX_IMAGES_PER_PROMPT}
ADAPTIVE_SCHEMA: dict[str, Any] = {"type": "object", "required": ["max"],
                                   "additionalProperties": False,
                                   "properties": {"max": IMAGES_SCHEMA}}
"""``{max: N}``: adaptive sampling up to N images a prompt."""


@dataclass(frozen=True)
class Constraint:
    """What a validator accepts, said for the JSON Schema (keywords merged into the value's
    type; ``anyOf`` names its own types) and for the reference (words)."""

    schema: Mapping[str, Any]
    words: str


CONSTRAINTS: dict[Callable[..., Any], Constraint] = {}
"""Each validator's ``Constraint`` (``constraint`` fills it in beside the validator)."""

F = TypeVar("F", bound=Callable[..., Any])


def constraint(schema: Mapping[str, Any], words: str) -> Callable[[F], F]:
    """Declare, beside a validator, the JSON Schema keywords and the words that say what it
    accepts: the suite schema and the YAML reference read them (``suite.schema``)."""
    def register(check: F) -> F:
        CONSTRAINTS[check] = Constraint(schema, words)
        return check
    return register


@constraint({"minimum": 0, "maximum": 1}, "in [0, 1]")
def check_unit_interval(value: Any) -> str | None:
    return None if 0.0 <= float(value) <= 1.0 else f"must lie in [0, 1], got {value}"


@constraint({"minimum": 0.5, "exclusiveMaximum": 1}, "in [0.5, 1)")
def check_confidence(value: Any) -> str | None:
    return None if 0.5 <= float(value) < 1.0 else f"must lie in [0.5, 1), got {value}"


@constraint({"minimum": 1}, "≥ 1")
def check_at_least_one(value: Any) -> str | None:
    return None if value >= 1 else f"must be at least 1, got {value}"


@constraint({"anyOf": [IMAGES_SCHEMA, {"const": "auto"}, ADAPTIVE_SCHEMA]},
            "integer ≥ 1, `auto`, or `{max: N}` (adaptive)")
def check_images(value: Any) -> str | None:
    if isinstance(value, dict):
        cap = value.get("max")
        if set(value) != {"max"} or not isinstance(cap, int) or isinstance(cap, bool):
            return ("must be a number, auto, or {max: N} (adaptive: rounds of 16, 32, ... "
                    f"images per prompt up to N), got {value!r}")
        if not 1 <= cap <= MAX_IMAGES_PER_PROMPT:
            return f"max must lie in [1, {MAX_IMAGES_PER_PROMPT:,}], got {cap:,}"
        return None
    if isinstance(value, str):
        return None if value == "auto" else f"must be a number or auto, got {value!r}"
    if value > MAX_IMAGES_PER_PROMPT:
        return f"must be at most {MAX_IMAGES_PER_PROMPT:,}, got {value:,}"
    return check_at_least_one(value)


@constraint({"exclusiveMinimum": 0, "exclusiveMaximum": 1}, "in (0, 1)")
def check_margin(value: Any) -> str | None:
    return None if 0.0 < float(value) < 1.0 else f"must lie in (0, 1), got {value}"


@constraint({"enum": list(JUDGE_CORRECTIONS)},
            " or ".join(", ".join(f"`{c}`" for c in JUDGE_CORRECTIONS).rsplit(", ", 1)))
def check_judge_correction(value: Any) -> str | None:
    return None if value in JUDGE_CORRECTIONS else (
        f"must be one of {', '.join(JUDGE_CORRECTIONS)}, got {value!r}")


@constraint({"enum": list(BURDENS)}, " or ".join(f"`{b}`" for b in BURDENS))
def check_burden(value: Any) -> str | None:
    return None if value in BURDENS else f"must be {' or '.join(BURDENS)}, got {value!r}"


@constraint({"enum": list(PROTOCOLS)}, " or ".join(f"`{p}`" for p in PROTOCOLS))
def check_protocol(value: Any) -> str | None:
    return None if value in PROTOCOLS else f"must be {' or '.join(PROTOCOLS)}, got {value!r}"


@dataclass(frozen=True)
class Param:
    """One key of a check entry, as the loader and the docs read it (derived from a ``Params``
    field by ``declared``). ``types`` as for ``isinstance``; ``check`` may reject a value with a
    message (returned string) after the type matched."""

    name: str
    types: tuple[type, ...]
    required: bool = False
    default: Any = None
    check: Validator | None = None
    doc: str = ""
    check_with_axes: AxesValidator | None = None
    """Like ``check``, with the suite's axes (a target naming an axis and one of its values)."""
    names_axes: bool = False
    """The value names axes of the suite (a name, a list, or a mapping keyed by axis)."""
    field: str = ""
    """The ``Params`` attribute holding it (the key, unless the key is a Python keyword)."""


@dataclass(frozen=True)
class _Meta:
    doc: str
    check: Validator | None
    check_with_axes: AxesValidator | None
    key: str | None
    names_axes: bool
    types: tuple[type, ...] | None


def param(doc: str, *, default: Any = dataclasses.MISSING, required: bool = False,
          check: Validator | None = None, check_with_axes: AxesValidator | None = None,
          key: str | None = None, names_axes: bool = False,
          types: tuple[type, ...] | None = None) -> Any:
    """A ``Params`` field: its doc, its one default (None when neither ``default`` nor
    ``required`` is given: absent means off, or the suite's), its validators; ``key`` when the
    YAML key is no Python name (``lambda``); ``types`` only where the annotation cannot say."""
    if required:
        default = dataclasses.MISSING
    elif default is dataclasses.MISSING:
        default = None
    meta = _Meta(doc, check, check_with_axes, key, names_axes, types)
    return dataclasses.field(default=default, kw_only=True, metadata={"t2ibias": meta})


P = TypeVar("P", bound="Params")


@dataclass(frozen=True, kw_only=True)
class Params:
    """The parameters every kind takes (a kind's own ``Params`` subclasses it)."""

    confidence: float | None = param(
        "gate on the interval at this level (and compute it at this level)",
        check=check_confidence)
    burden: str | None = param(
        "model: an interval across the limit fails (default); check: it passes",
        check=check_burden)
    protocol: str | None = param(
        "gate (default): the project's figure (the judge's confusion corrected, a release "
        "gate's statistics); paper: the kind's paper's own figure on the judge's answers as "
        "read, at a fixed n, still with an interval and gated (docs/paper-departures.md)",
        check=check_protocol)
    judge_correction: str | None = param(
        "on (default): shares corrected for the judge's measured confusion (a labelled "
        "folder's fully, counterfactual images' as bounds); full: counterfactual "
        "calibrations fully too; off: the judge's labels as truth",
        check=check_judge_correction)
    images_per_prompt: int | str | dict[str, int] | None = param(
        "images per prompt for this check only (more images, a tighter interval), or "
        "auto: as many as deciding the threshold needs (power planning), or {max: N}: "
        "adaptive, in rounds of 16, 32, 64 ... up to N images per prompt, stopping once "
        f"the interval (valid under stopping) is decided (gated {ADAPTIVE_KINDS} checks); "
        "default: the suite's",
        check=check_images)
    margin: float = param(
        "power planning: the check must decide when the truth is this far from its "
        "threshold (default 0.1)",
        default=0.1, check=check_margin)

    @classmethod
    def default(cls, name: str) -> Any:
        """The default of field ``name``: for a caller outside a suite (the ``t2ibias``
        fixture's methods) that takes a kind's setting without a default of its own."""
        for f in dataclasses.fields(cls):
            if f.name == name and f.default is not dataclasses.MISSING:
                return f.default
        raise KeyError(f"{cls.__qualname__} has no field {name!r} with a default")

    def axes_named(self) -> list[str]:
        """Every axis name the parameters hold (``names_axes`` fields), in field order."""
        names: list[str] = []
        for p in declared(type(self)):
            if p.names_axes:
                value = getattr(self, p.field)
                names.extend([value] if isinstance(value, str) else list(value or ()))
        return names


COMMON_FIELDS = frozenset(f.name for f in dataclasses.fields(Params))


_DECLARED: dict[type[Params], tuple[Param, ...]] = {}
"""``declared``'s answers: a class' fields do not change once it is made."""


def declared(cls: type[Params]) -> tuple[Param, ...]:
    """The ``Param`` descriptions of ``cls``'s fields: the kind's own first, then the common
    ones (the loader's and the YAML reference's order)."""
    if cls not in _DECLARED:
        _DECLARED[cls] = _described(cls)
    return _DECLARED[cls]


def _described(cls: type[Params]) -> tuple[Param, ...]:
    hints = typing.get_type_hints(cls)
    own: list[Param] = []
    common: list[Param] = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get("t2ibias")
        if meta is None:
            raise TypeError(f"{cls.__qualname__}.{f.name}: declare it with param(...)")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        described = Param(meta.key or f.name, meta.types or _isinstance_types(hints[f.name]),
                          required=required, default=None if required else f.default,
                          check=meta.check, doc=meta.doc, check_with_axes=meta.check_with_axes,
                          names_axes=meta.names_axes, field=f.name)
        (common if f.name in COMMON_FIELDS else own).append(described)
    return (*own, *common)


def build(cls: type[P], values: Mapping[str, Any]) -> P:
    """``cls`` from a validated check entry (keys as in YAML; absent keys take the default).
    Lists become tuples: the object is frozen all through, as a plan should be."""
    given: dict[str, Any] = {}
    for p in declared(cls):
        if p.name in values:
            value = values[p.name]
            given[p.field] = tuple(value) if isinstance(value, list) else value
    return cls(**given)


def params_class(name: str, params: tuple[Param, ...]) -> type[Params]:
    """A ``Params`` subclass from ``Param`` descriptions: how a kind declared its keys before
    typed parameters (0.1.0), still accepted from a user's ``CheckKind(params=(Param(...),))``."""
    fields = []
    for p in params:
        if p.name in COMMON_FIELDS:
            continue
        fields.append((p.name, Any, param(p.doc, default=p.default, required=p.required,
                                          check=p.check, check_with_axes=p.check_with_axes,
                                          names_axes=p.names_axes or p.name in LEGACY_AXIS_KEYS,
                                          types=p.types)))
    return dataclasses.make_dataclass(f"{name}_params", fields, bases=(Params,), frozen=True,
                                      kw_only=True)


_ANNOTATION_TYPES: dict[Any, tuple[type, ...]] = {
    float: NUMBER, int: (int,), str: (str,), bool: (bool,), list: (list,), tuple: (list,),
    dict: (dict,), Mapping: (dict,)}


def _isinstance_types(annotation: Any) -> tuple[type, ...]:
    """What a YAML value of a field annotated ``annotation`` may be (``isinstance`` types; a
    number for ``float``, a YAML list for a tuple); None in a union means the key may be absent."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        found: list[type] = []
        for member in typing.get_args(annotation):
            if member is not type(None):
                found += _isinstance_types(member)
        return tuple(dict.fromkeys(found))
    origin = typing.get_origin(annotation) or annotation
    if origin not in _ANNOTATION_TYPES:
        raise TypeError(f"a check parameter cannot be {annotation!r}: use float, int, str, bool, "
                        "tuple[...], dict[...] or a union of them")
    return _ANNOTATION_TYPES[origin]


COMMON_PARAMS = declared(Params)
"""The parameters every kind takes, described (the YAML reference's table)."""


LEGACY_AXIS_KEYS = frozenset({"axes", "axis", "mitigate", "on", "fixes", "priority"})
"""Keys a 0.1.0 ``Param`` tuple named axes with (the loader recognised them by name)."""
