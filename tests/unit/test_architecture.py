"""The house stays one-way: every import (module level, in functions, for type checking, and
by string: ``import_module("...")``, ``"pytest_t2ibias.x"`` homes of lazy exports) points to a
lower layer of docs/ARCHITECTURE.md, methods never import one another, the test models are a
leaf, nothing imports the toy world or the docs generators, and there is no import circle.

The layers are read from the table in docs/ARCHITECTURE.md: the document is the one source."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from support.package_layout import PACKAGE, ROOT, registered_kinds

OUTSIDE = ("toyworld", "docgen")
"""Top-level packages of the repository that are not the plugin: never imported by it."""


def read_layers(document: Path = ROOT / "docs" / "ARCHITECTURE.md"
                ) -> list[tuple[str, tuple[str, ...]]]:
    """``(name, modules)`` per row of the layer table, lowest first. A module is written as a
    path in backticks: `plan`, `metrics/` (a package), `suite/load`, `__init__` (the package)."""
    layers = []
    for line in document.read_text().splitlines():
        row = re.match(r"\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|([^|]*)\|", line)
        if not row:
            continue
        names = re.findall(r"`([^`]+)`", row.group(3))
        modules = tuple("" if n == "__init__" else n.strip("/").replace("/", ".") for n in names)
        layers.append((row.group(2), modules))
    return layers


def read_leaves(document: Path = ROOT / "docs" / "ARCHITECTURE.md") -> tuple[str, ...]:
    """The modules the line starting "Leaves" names: built on the plugin, never imported by it."""
    for line in document.read_text().splitlines():
        if line.startswith("Leaves"):
            return tuple(n.strip("/").replace("/", ".") for n in re.findall(r"`([^`]+)`", line))
    return ()


LAYERS = read_layers()
LEAVES = read_leaves()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def _owner(module: str, groups: tuple[str, ...]) -> str | None:
    """The longest group that ``module`` is, or lies inside."""
    matches = [g for g in groups if module == g or (g and module.startswith(g + "."))]
    return max(matches, key=len) if matches else None


def layer_of(module: str) -> tuple[int, str]:
    best: tuple[int, int, str] | None = None
    for index, (_, groups) in enumerate(LAYERS):
        group = _owner(module, groups)
        if group is not None and (best is None or len(group) > best[1]):
            best = (index, len(group), group)
    if best is None:
        raise AssertionError(f"{module} is in no layer of LAYERS (add it, and to ARCHITECTURE.md)")
    return best[0], best[2]


def imports_of(module: str) -> set[str]:
    """Package modules ``module`` imports, anywhere in its body (TYPE_CHECKING included)."""
    path = MODULES[module]
    parts = module.split(".") if module else []
    package = parts if path.name == "__init__.py" else parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif (node.module or "").startswith("pytest_t2ibias"):
                target = node.module.removeprefix("pytest_t2ibias").lstrip(".")
            elif (node.module or "").split(".")[0] in OUTSIDE:
                found.add("!" + node.module)
                continue
            else:
                continue
            for alias in node.names:
                candidate = f"{target}.{alias.name}".lstrip(".")
                found.add(candidate if candidate in MODULES else target)
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("pytest_t2ibias").lstrip(".") for a in node.names
                      if a.name.startswith("pytest_t2ibias")}
            found |= {"!" + a.name for a in node.names if a.name.split(".")[0] in OUTSIDE}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = STRING_IMPORT.match(node.value)
            if named and named.group(1) and named.group(1).lstrip(".") in MODULES:
                # import_module("pytest_t2ibias.x"), a lazy export's home, "module:function"
                found.add(named.group(1).lstrip("."))
            elif STRING_OUTSIDE.match(node.value):
                found.add("!" + node.value.split(":")[0])
    return {m for m in found if m != module}


STRING_IMPORT = re.compile(r"^pytest_t2ibias((?:\.\w+)*)(?::\w+)?$")
STRING_OUTSIDE = re.compile(r"^(?:toyworld|docgen)(?:\.\w+)*(?::\w+)?$")


def plugin_modules() -> list[str]:
    return sorted(m for m in MODULES if not any(m == leaf or m.startswith(leaf + ".")
                                                for leaf in LEAVES))


@pytest.mark.parametrize("module", plugin_modules())
def test_imports_look_down(module):
    layer, group = layer_of(module)
    for imported in imports_of(module):
        assert not imported.startswith("!"), (
            f"{module} imports {imported[1:]}: the toy world and the docs generators are not "
            "part of the plugin")
        assert not any(imported == leaf or imported.startswith(leaf + ".") for leaf in LEAVES), (
            f"{module} imports {imported}: the test models are a leaf")
        other, other_group = layer_of(imported)
        assert other <= layer, (f"{module} ({LAYERS[layer][0]}) imports {imported} "
                                f"({LAYERS[other][0]}), a layer above it")
        if group == "methods" and module != "methods":
            own_method = ".".join(module.split(".")[:2])  # a method may be a package (bgps)
            assert other_group != "methods" or imported == "methods" or (
                imported.startswith(own_method + ".")), (
                f"{module} imports {imported}: methods get their instrument injected and never "
                "import one another")


def test_no_import_circles():
    edges = {m: {i for i in imports_of(m) if i in MODULES} for m in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in MODULES:
        if module not in index:
            visit(module)
    assert circles == []


def test_the_layer_check_catches_an_upward_import():
    """The checker itself: an instrument that imported the facade would be refused."""
    assert layer_of("instrument")[0] < layer_of("facade")[0]
    assert layer_of("methods.intermit")[1] == "methods"
    assert "instrument" in imports_of("facade")
    assert "methods.bgps.search" in imports_of("methods.bgps.gate")  # one method's own parts


def test_the_layer_check_reads_imports_by_string(tmp_path, monkeypatch):
    """A home named by string (a lazy export, ``import_module``, ``"module:function"``) is an
    import: a kind that named the session that way would be caught."""
    module = tmp_path / "sneaky.py"
    module.write_text('import importlib\n'
                      'HOME = {"Thing": "pytest_t2ibias._session"}\n'
                      'def f():\n'
                      '    return importlib.import_module("pytest_t2ibias.facade:T2IBias")\n'
                      'WORLD = "toyworld.spec"\n')
    monkeypatch.setitem(MODULES, "sneaky", module)
    assert {"_session", "facade", "!toyworld.spec"} <= imports_of("sneaky")


def test_the_table_is_read_from_the_document():
    """docs/ARCHITECTURE.md is the one source: every module sits in exactly one of its rows."""
    assert len(LAYERS) >= 10 and LAYERS[0][0] == "values"
    assert LEAVES == ("testing",)
    for module in plugin_modules():
        layer_of(module)



PARAMS_READERS = ("kinds", "suite.load")
"""Where a check's parameters may be read by name: the kinds (through their typed ``Params``)
and the loader (which builds them from the YAML keys)."""


def string_key_reads(module: str) -> list[str]:
    """``x.params["key"]``, ``x.params.get("key")``, ``params["key"]``, ``params.get("key")``
    in ``module``: a check parameter read by its YAML key, not by its typed field."""

    def is_params(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "params") or (
            isinstance(node, ast.Name) and node.id == "params")

    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Subscript) and is_params(node.value) and isinstance(
                node.slice, ast.Constant) and isinstance(node.slice.value, str):
            found.append(f"line {node.lineno}: params[{node.slice.value!r}]")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "get" and is_params(node.func.value) and node.args
              and isinstance(node.args[0], ast.Constant)):
            found.append(f"line {node.lineno}: params.get({node.args[0].value!r})")
    return found


def test_no_check_parameter_is_read_by_its_key_outside_the_kinds_and_the_loader():
    """A kind's parameters are a typed ``Params``: read as ``ctx.params.beam``, their default
    in one place, never ``params.get("beam") or 5`` somewhere else."""
    readers = {m for m in MODULES if _owner(m, PARAMS_READERS)}
    offending = {m: string_key_reads(m) for m in sorted(set(MODULES) - readers)}
    assert {m: reads for m, reads in offending.items() if reads} == {}
    assert string_key_reads("kinds.w1_below") == []  # the kinds read fields too


def test_the_string_key_check_catches_a_read(tmp_path, monkeypatch):
    module = tmp_path / "sneaky.py"
    module.write_text('def f(check, params):\n'
                      '    return check.params["beam"], params.get("prompts") or 5\n')
    monkeypatch.setitem(MODULES, "sneaky", module)
    assert string_key_reads("sneaky") == ["line 2: params['beam']", "line 2: params.get('prompts')"]




BUILTIN = registered_kinds()
"""The built-in kinds (``kinds.BUILTIN_KINDS``), read from the registry's source so this
test imports no plugin."""


def test_the_kinds_read_from_the_registry_are_its_kinds():
    from pytest_t2ibias.kinds import BUILTIN_KINDS

    assert BUILTIN == BUILTIN_KINDS
PUBLIC_API = ("", "assertions", "facade")
"""The public ``__init__``, the ``assert_*`` helpers and the ``t2ibias`` fixture: they name a
kind's ``evaluate_*`` and method on purpose."""
DOCUMENTATION = ("suite.language",)
"""The suite language's examples, YAML a user reads in the reference: they show real checks."""


def kinds_named(module: str) -> set[str]:
    """The built-in kinds ``module`` names in code: a string (not a docstring) holding a
    kind's name as a word, or an import of a kind's module."""
    tree = ast.parse(MODULES[module].read_text())
    docstrings = {id(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    named = {k for k in BUILTIN for i in imports_of(module) if i == f"kinds.{k}"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            named |= {k for k in BUILTIN if re.search(rf"(?<![\w.]){k}(?!\w)", node.value)
                      and not node.value.startswith("pytest_t2ibias.")}
    return named


def test_no_code_outside_a_kind_names_a_built_in_kind():
    """A kind is the unit of change: its name appears in its own module, the registry
    (``kinds/__init__``) and the public API, and nowhere else (the rest reads ``CheckKind``
    fields: chart, never_passes, work, ...)."""
    offending = {}
    for module in MODULES:
        allowed = set(BUILTIN) if module in ("kinds", *PUBLIC_API, *DOCUMENTATION) else (
            {module.removeprefix("kinds.")} if module.startswith("kinds.") else set())
        named = kinds_named(module) - allowed
        if named:
            offending[module] = sorted(named)
    assert offending == {}
