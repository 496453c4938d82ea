"""The house stays one-way: every import (module level, in functions, and for type checking
alike) points to a lower layer of docs/ARCHITECTURE.md, methods never import one another,
the toy world is a leaf, and there is no import circle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_t2ibias"

# Lowest first; a module may import its own layer (except methods) and the layers below.
# The same list, with what each layer is for, is in docs/ARCHITECTURE.md.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("values", ("_exports", "_types", "_settings", "_test_call", "suite.spec", "suite.errors",
                "verdict")),
    ("math", ("metrics",)),
    ("plan", ("plan",)),
    ("backends", ("backends",)),
    ("store", ("_cache", "_cache_admin", "_remote_cache", "_write_behind", "_requests")),
    ("instrument", ("instrument",)),
    ("kinds", ("kinds", "suite._yaml", "suite.load", "suite.reference_data", "suite.schema",
               "suite.reference")),
    ("methods", ("methods",)),
    ("composition", ("assertions", "_prompt_lock", "_bgps_lock", "_openbias_lock", "checks",
                     "facade", "gallery", "heatmap", "html_charts", "html_report", "planning",
                     "prefetch", "progress", "report", "baseline", "runs", "comparison_table")),
    ("pytest", ("_options", "_session", "_baselines", "suite.file", "suite.collect", "suite", "_builtin",
                "hookspecs", "plugin", "__main__", "")),
]
LEAVES = ("toyworld", "testing")
"""Built on the plugin's pieces, never imported by them."""


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
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif (node.module or "").startswith("pytest_t2ibias"):
                target = node.module.removeprefix("pytest_t2ibias").lstrip(".")
            else:
                continue
            for alias in node.names:
                candidate = f"{target}.{alias.name}".lstrip(".")
                found.add(candidate if candidate in MODULES else target)
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("pytest_t2ibias").lstrip(".") for a in node.names
                      if a.name.startswith("pytest_t2ibias")}
    return {m for m in found if m != module}


def plugin_modules() -> list[str]:
    return sorted(m for m in MODULES if not any(m == leaf or m.startswith(leaf + ".")
                                                for leaf in LEAVES))


@pytest.mark.parametrize("module", plugin_modules())
def test_imports_look_down(module):
    layer, group = layer_of(module)
    for imported in imports_of(module):
        assert not any(imported == leaf or imported.startswith(leaf + ".") for leaf in LEAVES), (
            f"{module} imports {imported}: the toy world and test models are leaves")
        other, other_group = layer_of(imported)
        assert other <= layer, (f"{module} ({LAYERS[layer][0]}) imports {imported} "
                                f"({LAYERS[other][0]}), a layer above it")
        if group == "methods" and module != "methods":
            assert other_group != "methods" or imported == "methods", (
                f"{module} imports {imported}: methods get their instrument injected and never "
                "import one another")


def test_no_import_circles():
    edges = {m: imports_of(m) for m in MODULES}
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
