"""Load YAML into plain Python values while remembering the line of every key and list item.

Validation errors must point at the offending line, and plain values are what the rest of the
spec layer wants, so we compose to nodes (which carry ``start_mark``) and keep a lookup from
key paths such as ``("axes", "gender", "choices", 1)`` to 1-based lines.

Suites are collected on every pytest run, often from pull requests, so parsing has budgets
checked before any value is built: the file's size, how deep it nests, and how large it
becomes once aliases are expanded (a "billion laughs" file of 500 bytes expands to 10^9
nodes). Only the standard tags are accepted. Whatever a file holds, the loader answers with
a valid document or a ``SuiteError`` naming the file and the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import SuiteError, SuiteTooLarge

KeyPath = tuple[Any, ...]  # of str keys and int list indexes (and whatever a YAML key was)

_BOOL_TAG = "tag:yaml.org,2002:bool"

MAX_FILE_BYTES = 256_000
"""A suite is a page of YAML; the largest example is 5 kB (and PyYAML reads ~1 MB/s)."""
MAX_DEPTH = 32
"""Nesting levels, counted after alias expansion; suites need about 6."""
MAX_EXPANDED_NODES = 10_000
"""Nodes once every alias is expanded; the largest example has about 400."""
MAX_EXPANDED_CHARACTERS = 2_000_000
"""Characters of scalars once every alias is expanded."""
STANDARD_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in
                          ("map", "seq", "str", "int", "float", "bool", "null", "merge", "timestamp"))
"""Tags a suite may carry; ``!!python/...`` and custom tags are rejected, never ignored."""
MAX_INTEGER = 2**63 - 1
"""Largest integer magnitude a suite may write: seeds, counts and pixels fit a signed 64-bit
integer, and every number then converts to a finite float (an integer past 1e308 cannot)."""
_MAX_INTEGER_DIGITS = len(str(MAX_INTEGER)) + 8
"""Digits (and ``_`` separators) an integer scalar may have before it is built at all:
Python refuses to parse more than 4,300, and a longer one is past ``MAX_INTEGER`` anyway."""
_INT_TAG = "tag:yaml.org,2002:int"


class _Loader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types
    """Safe loader with YAML 1.2 booleans: only true/false, so ``keep: yes``, ``choices: [yes,
    no]`` and the key ``on:`` stay strings as the suite format means them.

    It also refuses to compose deeper than ``MAX_DEPTH`` (the composer recurses once per
    level, so a deep file would otherwise end in ``RecursionError``) or more than
    ``MAX_EXPANDED_NODES`` nodes (composed nodes are a lower bound of the expanded ones)."""

    _depth = 0
    _nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_DEPTH:
                raise SuiteTooLarge(self.peek_event().start_mark.line + 1,
                                  f"the suite nests deeper than {MAX_DEPTH} levels")
            if self._nodes > MAX_EXPANDED_NODES:
                raise SuiteTooLarge(self.peek_event().start_mark.line + 1,
                                  f"the suite has more than {MAX_EXPANDED_NODES} values")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


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
    """Parse ``path``; syntax errors, duplicate keys, non-standard tags and files past the
    budgets become ``SuiteError`` with their line."""
    path = Path(path)
    text = _read_text(path)
    loader = None
    try:
        loader = _Loader(text)  # the reader rejects control characters already here
        root = loader.get_single_node()
        document = Document(path, None)
        if root is not None:
            _check_budgets(root)
            document.lines[()] = root.start_mark.line + 1
            document.data = _to_plain(loader, root, (), document)
        return document
    except SuiteTooLarge as exc:
        raise SuiteError(path, exc.line, exc.message) from None
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(path, exc) from None
    except yaml.reader.ReaderError as exc:  # a control or unpaired surrogate character
        line = text.count("\n", 0, exc.position) + 1
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "?")
        raise SuiteError(path, line, f"invalid YAML: the character U+{code:04X} is not allowed; "
                                     f"remove it, or write it as an escape inside double "
                                     f"quotes") from None
    except yaml.YAMLError as exc:
        raise SuiteError(path, 1, f"invalid YAML: {exc}") from None
    except RecursionError:  # a safety net: the budgets above should make this unreachable
        raise SuiteError(path, 1, "the suite nests too deeply to read") from None
    finally:
        if loader is not None:
            loader.dispose()


def _read_text(path: Path) -> str:
    """The file's text, refusing files past ``MAX_FILE_BYTES`` before reading them whole."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SuiteError(path, 1, f"the suite is {size} bytes; suites are limited to "
                                      f"{MAX_FILE_BYTES} bytes (split it into several files)")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(path, 1, f"cannot read suite: {exc}") from None


def _check_budgets(root: yaml.Node) -> None:
    """Depth, expanded size and tags of the node graph, before anything is expanded.

    Aliases make the composed graph a DAG whose expansion can be exponential in its size, so
    sizes are summed bottom-up with one memo entry per node (linear in the graph, without
    recursion), and the walk stops at the first node past a budget.
    """
    nodes: dict[int, int] = {}  # id -> expanded nodes
    characters: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in nodes:
            continue
        line = node.start_mark.line + 1
        if node.tag not in STANDARD_TAGS:
            raise SuiteTooLarge(line, f"tag {node.tag!r} is not allowed in a suite (only plain "
                                    f"YAML values: mappings, lists, strings, numbers, booleans)",
                              budget=False)
        children = _children(node)
        if not children_done:
            if key in on_path:
                continue  # a recursive alias: ``_to_plain`` reports it with its line
            on_path.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in nodes)
            continue
        on_path.discard(key)
        known = [child for child in children if id(child) in nodes]
        nodes[key] = 1 + sum(nodes[id(child)] for child in known)
        characters[key] = (len(node.value) if isinstance(node, yaml.ScalarNode) else 0) + sum(
            characters[id(child)] for child in known)
        depth[key] = 1 + max((depth[id(child)] for child in known), default=0)
        if nodes[key] > MAX_EXPANDED_NODES:
            raise SuiteTooLarge(line, f"aliases expand the suite past {MAX_EXPANDED_NODES} values")
        if characters[key] > MAX_EXPANDED_CHARACTERS:
            raise SuiteTooLarge(line, f"aliases expand the suite past {MAX_EXPANDED_CHARACTERS} "
                                    f"characters")
        if depth[key] > MAX_DEPTH:
            raise SuiteTooLarge(line, f"aliases nest the suite deeper than {MAX_DEPTH} levels")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


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
            key = _construct(loader, key_node, document)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                raise SuiteError(document.path, key_node.start_mark.line + 1,
                                 f"mapping keys must be plain scalars, got {key!r}")
            line = key_node.start_mark.line + 1
            if key in mapping:
                raise SuiteError(document.path, line,
                                 f"duplicate key {key!r} (first at line {document.lines[at + (key,)]})")
            document.lines[at + (key,)] = line
            mapping[key] = _to_plain(loader, value_node, (*at, key), document, open_nodes)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, item_node in enumerate(node.value):
            document.lines[at + (index,)] = item_node.start_mark.line + 1
            items.append(_to_plain(loader, item_node, (*at, index), document, open_nodes))
        return items
    return _construct(loader, node, document)


def _construct(loader: _Loader, node: yaml.Node, document: Document) -> Any:
    """A scalar's value, every constructor's failure a ``SuiteError`` at its line: an
    impossible date (``2001-02-30``), ``!!int ""``, ``!!bool maybe``, ``!!float abc``, an
    integer of thousands of digits or past ``MAX_INTEGER``."""
    line = node.start_mark.line + 1
    written = node.value if isinstance(node.value, str) else ""
    kind = node.tag.rsplit(":", 1)[-1]
    if node.tag == _INT_TAG and len(written) > _MAX_INTEGER_DIGITS:
        raise SuiteError(document.path, line, _too_large(f"an integer of {len(written)} digits"))
    try:
        value = loader.construct_object(node, deep=True)
    except yaml.YAMLError:
        raise  # a marked error: ``load_yaml`` reports it with its line and column
    except Exception as exc:  # any constructor's failure (!!timestamp tomorrow
        # is an AttributeError inside PyYAML) means the value cannot be read
        why = f" ({exc})" if isinstance(exc, (ValueError, OverflowError)) else ""
        raise SuiteError(document.path, line,
                         f"{_shown_scalar(written)} is not a valid YAML {kind}{why}; write a "
                         f"valid {kind}, or quote the value to make it a string") from None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
        raise SuiteError(document.path, line, _too_large(f"the integer {_shown_scalar(written)}"))
    return value


def _too_large(what: str) -> str:
    return (f"{what} is too large: integers in a suite lie within +-{MAX_INTEGER:,} (2^63 - 1; "
            f"no seed, count or share needs more); write a smaller number")


def _shown_scalar(written: str) -> str:
    return repr(written) if len(written) <= 40 else f"{written[:20]!r}... ({len(written)} characters)"
