"""The pytest11 entry point: options, fixtures and hooks. No math lives here."""

from __future__ import annotations

import pytest

from . import hookspecs
from ._options import add_options
from ._session import start_session


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    start_session(config)
