"""YAML suites: load and validate ``*.t2i.yaml`` files, and collect them as pytest items."""

from .collect import CheckItem
from .collect import SuiteFile
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
