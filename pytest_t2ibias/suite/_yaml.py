"""Load YAML into plain Python values while remembering the line of every key and list item.

Validation errors must point at the offending line, and plain values are what the rest of the
spec layer wants, so we compose to nodes (which carry ``start_mark``) and keep a lookup from
key paths such as ``("axes", "gender", "choices", 1)`` to 1-based lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import SuiteError

KeyPath = tuple  # of str keys and int list indexes

_BOOL_TAG = "tag:yaml.org,2002:bool"


class _Loader(yaml.SafeLoader):
    """Safe loader with YAML 1.2 booleans: only true/false, so ``keep: yes``, ``choices: [yes,
    no]`` and the key ``on:`` stay strings as the suite format means them."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


@dataclass
class Document:
    """A loaded YAML file: its plain value and the line of each key path."""

    path: Path
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line(self, *keys: Any) -> int:
        """Line of the key or item at ``keys``; the nearest enclosing one if it is absent."""
        path = tuple(keys)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 1)


def load_yaml(path: Path) -> Document:
    """Parse ``path``; syntax errors and duplicate keys become ``SuiteError`` with their line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(path, 1, f"cannot read suite: {exc}") from None
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        document = Document(path, None)
        if root is not None:
            document.lines[()] = root.start_mark.line + 1
            document.data = _to_plain(loader, root, (), document)
        return document
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(path, exc) from None
    except yaml.YAMLError as exc:
        raise SuiteError(path, 1, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()


def _syntax_error(path: Path, exc: yaml.MarkedYAMLError) -> SuiteError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or "invalid YAML"
    if exc.context:
        problem = f"{problem} ({exc.context}"
        if exc.context_mark is not None and exc.context_mark is not mark:
            problem += f" at line {exc.context_mark.line + 1}"
        problem += ")"
    line = mark.line + 1 if mark else 1
    column = mark.column + 1 if mark else None
    return SuiteError(path, line, f"YAML syntax error: {problem}", column=column)


def _to_plain(loader: _Loader, node: yaml.Node, at: KeyPath, document: Document,
              open_nodes: frozenset[int] = frozenset()) -> Any:
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
        if id(node) in open_nodes:
            raise SuiteError(document.path, node.start_mark.line + 1, "recursive YAML alias")
        open_nodes = open_nodes | {id(node)}
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # resolve ``<<`` merge keys like safe_load does
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                raise SuiteError(document.path, key_node.start_mark.line + 1,
                                 f"mapping keys must be plain scalars, got {key!r}")
            line = key_node.start_mark.line + 1
            if key in mapping:
                raise SuiteError(document.path, line,
                                 f"duplicate key {key!r} (first at line {document.lines[(*at, key)]})")
            document.lines[(*at, key)] = line
            mapping[key] = _to_plain(loader, value_node, (*at, key), document, open_nodes)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, item_node in enumerate(node.value):
            document.lines[(*at, index)] = item_node.start_mark.line + 1
            items.append(_to_plain(loader, item_node, (*at, index), document, open_nodes))
        return items
    return loader.construct_object(node, deep=True)
