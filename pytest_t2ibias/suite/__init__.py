"""YAML suites: load and validate ``*.t2i.yaml`` files, and collect them as pytest items.

The names load on first use: the plugin makes a ``SuiteFile`` for every suite file pytest
passes by, and reading YAML waits until one is collected (issue #14).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._exports import lazy_exports

if TYPE_CHECKING:
    from .collect import CheckItem
    from .file import SuiteFile
    from .errors import SuiteError
    from .load import load_suite
    from .spec import AxisSpec
    from .spec import CheckSpec
    from .spec import FilterSpec
    from .spec import Location
    from .spec import QuestionPart
    from .spec import Suite

__all__ = [
    "AxisSpec",
    "CheckItem",
    "CheckSpec",
    "FilterSpec",
    "Location",
    "QuestionPart",
    "Suite",
    "SuiteError",
    "SuiteFile",
    "load_suite",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "CheckItem": "pytest_t2ibias.suite.collect",
    "SuiteFile": "pytest_t2ibias.suite.file",
    "SuiteError": "pytest_t2ibias.suite.errors",
    "load_suite": "pytest_t2ibias.suite.load",
    "AxisSpec": "pytest_t2ibias.suite.spec",
    "CheckSpec": "pytest_t2ibias.suite.spec",
    "FilterSpec": "pytest_t2ibias.suite.spec",
    "Location": "pytest_t2ibias.suite.spec",
    "QuestionPart": "pytest_t2ibias.suite.spec",
    "Suite": "pytest_t2ibias.suite.spec",
})
