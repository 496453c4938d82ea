"""Public names that load on first use (PEP 562), for a package's thin ``__init__``.

pytest imports the plugin's packages in every run of the environment, fairness tests or
not; their public names bring numpy, PyYAML and more, so they load when first asked for.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_exports(package: str, homes: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: each name of ``homes`` (name -> the
    module defining it) is imported on first access and kept as a module attribute."""

    def __getattr__(name: str) -> Any:
        try:
            home = homes[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(import_module(home), name)
        setattr(sys.modules[package], name, value)  # once loaded, an ordinary attribute
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(homes))

    return __getattr__, __dir__
