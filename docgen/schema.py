"""The JSON Schema of ``*.t2i.yaml`` suites, generated from the loader's key tables and the
check-kind registry, so that editors validate suites as they are typed.

The loader (``suite/load.py``) stays the authority: it also checks what a schema cannot
(axis references, paths, sums; ``reference_data.EDITORS`` lists them). The schema declares
draft 2020-12 but uses only keywords draft-07 editors understand (yaml-language-server
validates with draft-07 semantics): ``$defs`` reached by JSON pointers, ``if``/``then``,
``const``, numeric ``exclusiveMinimum``, and never a keyword beside ``$ref``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from docgen import reference_data as docs
from pytest_t2ibias.kinds import (
    BUILTIN_KINDS,
    CHECK_KINDS,
    COMMON_PARAMS,
    CheckKind,
    Param,
    filled_in,
)
from pytest_t2ibias.suite.load import (
    AXIS_KEYS,
    AXIS_REQUIRED_KEYS,
    CHECK_KEYS,
    DEFAULT_KEYS,
    FILTER_KEYS,
    FILTER_OPTIONAL_KEYS,
    LLM_COUNTERFACTUALS,
    MODEL_ROLES,
    PART_KEYS,
    PART_OPTIONAL_KEYS,
    REQUIRED_TOP_KEYS,
    TOP_KEYS,
)

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_FILE = "t2i-suite.schema.json"
"""Its name in the package's ``data/`` directory."""

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array",
               tuple: "array", dict: "object"}


class ReferenceGap(LookupError):
    """A key or kind of the code that ``reference_data`` does not document."""


def schema_path() -> Path:
    """Where the installed package keeps the committed schema (package data)."""
    return Path(__file__).resolve().parents[1] / "pytest_t2ibias" / "data" / SCHEMA_FILE


def builtin_kinds() -> dict[str, CheckKind]:
    """The kinds the package declares, whatever else was registered in this process."""
    return {name: CHECK_KINDS[name] for name in BUILTIN_KINDS}


def section_docs(keys: tuple[str, ...], table: Mapping[str, docs.KeyDoc], where: str
                 ) -> dict[str, docs.KeyDoc]:
    """``table``'s entries for ``keys``, in the loader's order; a gap is a ``ReferenceGap``."""
    missing = [key for key in keys if key not in table]
    extra = [key for key in table if key not in keys]
    if missing or extra:
        raise ReferenceGap(f"docgen/reference_data.py is out of step with the loader's "
                           f"keys {where}: undocumented {missing}, documented but unknown {extra}")
    return {key: table[key] for key in keys}


def json_schema(kinds: Mapping[str, CheckKind] | None = None) -> dict[str, Any]:
    """The suite schema; ``kinds``: the check kinds it accepts (default: the built-in ones,
    whose every parameter check must have its schema in ``reference_data.PARAM_CHECKS``; a
    user's kind, ``json_schema(CHECK_KINDS)``, gets its types where a check has none)."""
    strict = kinds is None
    kinds = builtin_kinds() if kinds is None else dict(kinds)
    top = section_docs(TOP_KEYS, docs.TOP, "at the top (load.TOP_KEYS)")
    properties = {key: _described(doc) for key, doc in top.items()}
    properties["defaults"].update(_object(section_docs(DEFAULT_KEYS, docs.DEFAULTS,
                                                       "in defaults (load.DEFAULT_KEYS)")))
    properties["filter"].update(_object(
        section_docs(FILTER_KEYS + FILTER_OPTIONAL_KEYS, docs.FILTER,
                     "in filter (load.FILTER_KEYS, FILTER_OPTIONAL_KEYS)"), required=FILTER_KEYS))
    properties["models"].update(_object(section_docs(MODEL_ROLES, docs.MODELS,
                                                     "in models (load.MODEL_ROLES)")))
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
        "required": list(REQUIRED_TOP_KEYS),
        "additionalProperties": False,
        "$defs": definitions,
    }


def axis_schema() -> dict[str, Any]:
    """One axis: ``question`` and ``choices``, or ``parts`` and ``none``; ``phrases`` only
    with ``counterfactuals: llm``."""
    axis = _object(section_docs(AXIS_KEYS, docs.AXIS, "in an axis (load.AXIS_KEYS)"))
    part = _object(section_docs(PART_KEYS + PART_OPTIONAL_KEYS, docs.PART,
                                "in a part (load.PART_KEYS, PART_OPTIONAL_KEYS)"),
                   required=PART_KEYS)
    axis["properties"]["parts"]["items"] = part
    axis["if"] = {"required": ["parts"]}
    axis["then"] = {"required": ["none"]}
    axis["else"] = {"required": list(AXIS_REQUIRED_KEYS), "not": {"required": ["none"]}}
    axis["dependentSchemas"] = {"phrases": {"required": ["counterfactuals"], "properties": {
        "counterfactuals": {"const": LLM_COUNTERFACTUALS}}}}
    axis["description"] = "An attribute read off every image as one of its choices."
    return axis


def check_schema(kinds: Mapping[str, CheckKind]) -> dict[str, Any]:
    """A ``checks:`` entry: ``id`` and a known ``kind``, then the kind's own schema."""
    check_docs = section_docs(CHECK_KEYS, docs.CHECK, "of a check (load.CHECK_KEYS)")
    kind_property = {**_described(check_docs["kind"]), "enum": list(kinds)}
    return {
        "type": "object",
        "description": "A check: its id, its kind and the kind's parameters.",
        "properties": {"id": _described(check_docs["id"]), "kind": kind_property},
        "required": ["id", "kind"],
        "allOf": [{"if": {"properties": {"kind": {"const": name}}, "required": ["kind"]},
                   "then": {"$ref": f"#/$defs/check.{name}"}} for name in kinds],
    }


def kind_schema(kind: CheckKind, strict: bool = True) -> dict[str, Any]:
    """Every key a ``kind`` check accepts, typed; its required parameters; nothing else."""
    check_docs = section_docs(CHECK_KEYS, docs.CHECK, "of a check (load.CHECK_KEYS)")
    properties = {key: _described(doc) for key, doc in check_docs.items()}
    properties["kind"] = {"const": kind.name, "description": kind.doc}
    for param in _params(kind):
        properties[param.name] = param_schema(param, strict=strict)
    return {
        "type": "object",
        "description": f"{kind.name}: {kind.doc}",
        "properties": properties,
        "required": ["id", "kind", *(p.name for p in _params(kind) if p.required)],
        "additionalProperties": False,
    }


def param_schema(param: Param, strict: bool = True) -> dict[str, Any]:
    """A check parameter's JSON Schema: its types, what its ``check`` accepts, its default.
    ``strict``: a ``check`` without a schema in ``PARAM_CHECKS`` is a ``ReferenceGap``
    (otherwise the schema says only the types, and the loader judges the rest)."""
    json_type = _json_type(param.types)
    schema: dict[str, Any] = {} if json_type is None else {"type": json_type}
    if param.names_axes and json_type == "array":
        schema.update(items={"type": "string"}, minItems=1, uniqueItems=True)
    if param.check is not None and (strict or param.check in docs.PARAM_CHECKS):
        if param.check not in docs.PARAM_CHECKS:
            raise ReferenceGap(f"parameter {param.name!r}: its check {param.check.__name__} has no "
                               f"JSON Schema in docgen/reference_data.py PARAM_CHECKS")
        keywords = docs.PARAM_CHECKS[param.check][0]
        if "anyOf" in keywords:  # names its own types
            schema = {}
        schema.update(keywords)
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
    if param.check in docs.PARAM_CHECKS:
        checked = docs.PARAM_CHECKS[param.check][1]
        if checked.startswith(("in ", "≥", ">")):
            words = f"{words} {checked}"
        else:
            words = checked
    return words


def _params(kind: CheckKind) -> tuple[Param, ...]:
    """The kind's own parameters, then the common ones (as the loader merges them: the kind's
    declaration of a common name wins)."""
    return kind.declared


def own_params(kind: CheckKind) -> tuple[Param, ...]:
    """The kind's parameters that are not common to every kind."""
    common = {p.name for p in COMMON_PARAMS}
    return tuple(p for p in _params(kind) if p.name not in common)


def _json_type(types: tuple[type, ...]) -> str | list[str] | None:
    """The JSON type(s) of ``isinstance`` types (an int stands for a float, as in the loader);
    None when one of them has no JSON counterpart."""
    if any(t not in _JSON_TYPES for t in types):
        return None
    names = list(dict.fromkeys(_JSON_TYPES[t] for t in types))
    if "number" in names and "integer" in names:
        names.remove("integer")
    return names[0] if len(names) == 1 else names


def _described(doc: docs.KeyDoc) -> dict[str, Any]:
    return {**doc.schema, "description": doc.meaning}


def _object(keys: Mapping[str, docs.KeyDoc], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object",
                              "properties": {key: _described(doc) for key, doc in keys.items()},
                              "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema
