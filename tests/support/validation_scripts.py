"""The scripts under validation/ (not a package), loaded by path for the tests of what they
measure: once a session, under ``<name>_script``, where their dataclasses look themselves up."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

VALIDATION = Path(__file__).resolve().parents[2] / "validation"


def validation_script(name: str) -> ModuleType:
    """``validation/<name>.py`` as a module."""
    key = f"{name}_script"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, VALIDATION / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]
