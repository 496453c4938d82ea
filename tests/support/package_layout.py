"""The package's paths, and its kinds as the registry lists them, read without importing it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


PACKAGE = ROOT / "pytest_t2ibias"


def registered_kinds(package: Path = PACKAGE) -> tuple[str, ...]:
    """The built-in kinds as the registry lists them, read without importing the plugin: the
    modules ``kinds/__init__.py`` names in ``BUILTIN_MODULES``, each its
    ``KIND = CheckKind(name=...)``. A kind added there is covered here with no edit."""
    registry = ast.parse((package / "kinds" / "__init__.py").read_text())
    modules = [element.value for node in ast.walk(registry)
               if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
               and node.target.id == "BUILTIN_MODULES" and isinstance(node.value, ast.Tuple)
               for element in node.value.elts if isinstance(element, ast.Constant)]
    names = []
    for module in modules:
        tree = ast.parse((package / "kinds" / f"{module}.py").read_text())
        names += [keyword.value.value for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "CheckKind"
                  for keyword in node.keywords
                  if keyword.arg == "name" and isinstance(keyword.value, ast.Constant)]
    return tuple(names)


