"""YAML suites: read a ``*.t2i.yaml`` file and validate it into a ``Suite``.

The names load on first use: pytest imports the plugin in every run, and reading YAML waits
until a suite is collected (issue #14). The pytest items a suite becomes are in ``items/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._exports import lazy_exports

if TYPE_CHECKING:
    from ..errors import SuiteError
    from ..suite_spec import AxisSpec, CheckSpec, FilterSpec, Location, QuestionPart, Suite
    from .load import load_suite

__all__ = [
    "AxisSpec",
    "CheckSpec",
    "FilterSpec",
    "Location",
    "QuestionPart",
    "Suite",
    "SuiteError",
    "load_suite",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "SuiteError": "pytest_t2ibias.errors",
    "load_suite": "pytest_t2ibias.suite.load",
    "AxisSpec": "pytest_t2ibias.suite_spec",
    "CheckSpec": "pytest_t2ibias.suite_spec",
    "FilterSpec": "pytest_t2ibias.suite_spec",
    "Location": "pytest_t2ibias.suite_spec",
    "QuestionPart": "pytest_t2ibias.suite_spec",
    "Suite": "pytest_t2ibias.suite_spec",
})
