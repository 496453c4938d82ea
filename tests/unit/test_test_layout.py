"""Issue #42: the tests are laid out by layer (unit, plugin, slow), and what several test
modules share lives in the support package, so no test module imports another one."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
LAYERS = ("unit", "plugin", "slow")


def layered_modules() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def imported_test_modules(source: str) -> list[str]:
    """The ``test_*`` modules a source imports: ``import test_x``, ``from test_x import ...``,
    ``from tests.unit.test_x import ...``, ``from tests.unit import test_x``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and _names_a_test_module(node.module or ""):
            names = [node.module or ""]
        elif isinstance(node, ast.ImportFrom):  # from a package: its test_* submodules
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [name for name in names if _names_a_test_module(name)]
    return found


def _names_a_test_module(dotted: str) -> bool:
    return any(part.startswith("test_") for part in dotted.split("."))


def test_the_scan_finds_every_way_of_importing_a_test_module():
    source = ("import test_cli\nimport test_plan as plan\nfrom test_intermit import SUITE\n"
              "from tests.test_requests import requests\nfrom tests.unit import test_kinds\n"
              "from support.intermit_world import SUITE\nimport pytest\n")
    assert imported_test_modules(source) == [
        "test_cli", "test_plan", "test_intermit", "tests.test_requests", "tests.unit.test_kinds"]


def test_no_test_module_imports_another_test_module():
    offenders = {str(path.relative_to(TESTS)): imported
                 for path in layered_modules()
                 if (imported := imported_test_modules(path.read_text(encoding="utf-8")))}
    assert offenders == {}, "import shared helpers from tests/support instead"


def test_every_test_module_sits_in_a_layer_directory():
    misplaced = [str(path.relative_to(TESTS)) for path in layered_modules()
                 if path.relative_to(TESTS).parts[0] not in LAYERS]
    assert len(layered_modules()) > 100
    assert misplaced == [], f"put test modules in one of tests/{{{','.join(LAYERS)}}}/"


def test_test_module_basenames_are_unique_across_layers():
    """pytest's default import mode imports a test module by its basename (the layers are not
    packages), so two layers cannot hold the same name."""
    counts = Counter(path.name for path in layered_modules())
    assert [name for name, count in counts.items() if count > 1] == []
