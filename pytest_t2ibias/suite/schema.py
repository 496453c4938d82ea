"""The JSON Schema of ``*.t2i.yaml`` suites, generated from the suite language
(``suite.language``) and the check-kind registry, so that editors validate suites as they are
typed. ``python -m pytest_t2ibias schema`` prints it.

The loader (``suite/load.py``) stays the authority: it also checks what a schema cannot
(axis references, paths, sums; docs/yaml-reference.md lists them). The schema declares
draft 2020-12 but uses only keywords draft-07 editors understand (yaml-language-server
validates with draft-07 semantics): ``$defs`` reached by JSON pointers, ``if``/``then``,
``const``, numeric ``exclusiveMinimum``, and never a keyword beside ``$ref``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

from ..kinds import BUILTIN_KINDS, CHECK_KINDS, COMMON_PARAMS, CheckKind, Param, filled_in
from ..params import CONSTRAINTS
from . import language
from .language import LLM_COUNTERFACTUALS, Section

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_FILE = "t2i-suite.schema.json"
"""Its name in the package's ``data/`` directory (the committed copy)."""

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array",
               tuple: "array", dict: "object"}


class SchemaGap(LookupError):
    """A built-in check parameter whose validator says no JSON Schema (``params.constraint``)."""


def committed_schema_text() -> str:
    """The schema as the installed package ships it (``data/t2i-suite.schema.json``)."""
    return (resources.files("pytest_t2ibias") / "data" / SCHEMA_FILE).read_text("utf-8")


def schema_text(kinds: Mapping[str, CheckKind] | None = None) -> str:
    """The schema as committed: two-space JSON, non-ASCII kept, one newline at the end."""
    return json.dumps(json_schema(kinds), indent=2, ensure_ascii=False) + "\n"


def builtin_kinds() -> dict[str, CheckKind]:
    """The kinds the package declares, whatever else was registered in this process."""
    return {name: CHECK_KINDS[name] for name in BUILTIN_KINDS}


def json_schema(kinds: Mapping[str, CheckKind] | None = None) -> dict[str, Any]:
    """The suite schema; ``kinds``: the check kinds it accepts (default: the built-in ones,
    whose every parameter check must declare its schema with ``params.constraint``; a user's
    kind, ``json_schema(CHECK_KINDS)``, gets its types where a check has none)."""
    strict = kinds is None
    kinds = builtin_kinds() if kinds is None else dict(kinds)
    properties = {name: key.json_schema() for name, key in language.TOP.keys.items()}
    properties["defaults"].update(section_schema(language.DEFAULTS))
    properties["filter"].update(section_schema(language.FILTER))
    properties["models"].update(section_schema(language.MODELS))
    properties["axes"]["additionalProperties"] = axis_schema()
    properties["checks"]["items"] = {"$ref": "#/$defs/check"}
    definitions: dict[str, Any] = {"check": check_schema(kinds)}
    for name, kind in kinds.items():
        definitions[f"check.{name}"] = kind_schema(kind, strict=strict)
    return {
        "$schema": DIALECT,
        "title": "pytest-t2ibias suite (*.t2i.yaml)",
        "description": "A suite of text-to-image fairness checks, collected by pytest. "
                       "Reference: docs/yaml-reference.md.",
        "type": "object",
        "properties": properties,
        "required": list(language.TOP.required),
        "additionalProperties": False,
        "$defs": definitions,
    }


def section_schema(section: Section, *, required: bool = True) -> dict[str, Any]:
    """An object of the section's keys and no other; its required keys unless ``required``
    is False (an axis: they depend on ``parts``)."""
    schema: dict[str, Any] = {"type": "object",
                              "properties": {name: key.json_schema()
                                             for name, key in section.keys.items()},
                              "additionalProperties": False}
    if required and section.required:
        schema["required"] = list(section.required)
    return schema


def axis_schema() -> dict[str, Any]:
    """One axis: ``question`` and ``choices``, or ``parts`` and ``none``; ``phrases`` only
    with ``counterfactuals: llm``."""
    axis = section_schema(language.AXIS, required=False)
    axis["properties"]["parts"]["items"] = section_schema(language.PART)
    axis["if"] = {"required": ["parts"]}
    axis["then"] = {"required": ["none"]}
    axis["else"] = {"required": list(language.AXIS.required), "not": {"required": ["none"]}}
    axis["dependentSchemas"] = {"phrases": {"required": ["counterfactuals"], "properties": {
        "counterfactuals": {"const": LLM_COUNTERFACTUALS}}}}
    axis["description"] = "An attribute read off every image as one of its choices."
    return axis


def check_schema(kinds: Mapping[str, CheckKind]) -> dict[str, Any]:
    """A ``checks:`` entry: ``id`` and a known ``kind``, then the kind's own schema."""
    keys = language.CHECK.keys
    return {
        "type": "object",
        "description": "A check: its id, its kind and the kind's parameters.",
        "properties": {"id": keys["id"].json_schema(),
                       "kind": {**keys["kind"].json_schema(), "enum": list(kinds)}},
        "required": list(language.CHECK.required),
        "allOf": [{"if": {"properties": {"kind": {"const": name}}, "required": ["kind"]},
                   "then": {"$ref": f"#/$defs/check.{name}"}} for name in kinds],
    }


def kind_schema(kind: CheckKind, strict: bool = True) -> dict[str, Any]:
    """Every key a ``kind`` check accepts, typed; its required parameters; nothing else."""
    properties = {name: key.json_schema() for name, key in language.CHECK.keys.items()}
    properties["kind"] = {"const": kind.name, "description": kind.doc}
    for param in kind.declared:
        properties[param.name] = param_schema(param, strict=strict)
    return {
        "type": "object",
        "description": f"{kind.name}: {kind.doc}",
        "properties": properties,
        "required": [*language.CHECK.required, *(p.name for p in kind.declared if p.required)],
        "additionalProperties": False,
    }


def param_schema(param: Param, strict: bool = True) -> dict[str, Any]:
    """A check parameter's JSON Schema: its types, what its ``check`` accepts, its default.
    ``strict``: a ``check`` without a ``params.constraint`` is a ``SchemaGap`` (otherwise the
    schema says only the types, and the loader judges the rest)."""
    json_type = _json_type(param.types)
    schema: dict[str, Any] = {} if json_type is None else {"type": json_type}
    if param.names_axes and json_type == "array":
        schema.update(items={"type": "string"}, minItems=1, uniqueItems=True)
    constraint = CONSTRAINTS.get(param.check) if param.check is not None else None
    if param.check is not None and constraint is None and strict:
        raise SchemaGap(f"parameter {param.name!r}: its check {param.check.__name__} declares "
                        f"no JSON Schema (decorate it with pytest_t2ibias.params.constraint)")
    if constraint is not None:
        if "anyOf" in constraint.schema:  # names its own types
            schema = {}
        schema.update(constraint.schema)
    if param.default is not None:
        schema["default"] = param.default
    if param.doc:
        schema["description"] = filled_in(param.doc)
    return schema


def param_type_words(param: Param) -> str:
    """The parameter's type in words, for the reference."""
    base = {"string": "string", "integer": "integer", "number": "number",
            "boolean": "true or false", "array": "list", "object": "mapping"}
    json_type = _json_type(param.types)
    if json_type is None:
        words = " or ".join(t.__name__ for t in param.types)
    else:
        words = " or ".join(base[t] for t in ([json_type] if isinstance(json_type, str)
                                               else json_type))
    if param.names_axes and json_type == "array":
        words = "list of axis names"
    constraint = CONSTRAINTS.get(param.check) if param.check is not None else None
    if constraint is not None:
        checked = constraint.words
        words = f"{words} {checked}" if checked.startswith(("in ", "≥", ">")) else checked
    return words


def own_params(kind: CheckKind) -> tuple[Param, ...]:
    """The kind's parameters that are not common to every kind."""
    common = {p.name for p in COMMON_PARAMS}
    return tuple(p for p in kind.declared if p.name not in common)


def _json_type(types: tuple[type, ...]) -> str | list[str] | None:
    """The JSON type(s) of ``isinstance`` types (an int stands for a float, as in the loader);
    None when one of them has no JSON counterpart."""
    if any(t not in _JSON_TYPES for t in types):
        return None
    names = list(dict.fromkeys(_JSON_TYPES[t] for t in types))
    if "number" in names and "integer" in names:
        names.remove("integer")
    return names[0] if len(names) == 1 else names
