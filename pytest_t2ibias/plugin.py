"""The pytest11 entry point: options, fixtures and hooks. No math lives here."""

from __future__ import annotations

import pytest

from . import hookspecs
from ._options import add_options


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
