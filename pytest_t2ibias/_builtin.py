"""The built-in Hugging Face backends, registered ``trylast`` so a user's hooks win."""

from __future__ import annotations

import pytest

from ._session import session_of
from .backends._providers import BuiltinBackends


def _builtins(config: pytest.Config) -> BuiltinBackends:
    return BuiltinBackends(session_of(config).settings)


@pytest.hookimpl(trylast=True)
def pytest_t2ibias_make_generator(config: pytest.Config, model: str, role: str, options: dict):
    return _builtins(config).generator(model, role, options)


@pytest.hookimpl(trylast=True)
def pytest_t2ibias_make_vqa(config: pytest.Config, model: str):
    return _builtins(config).vqa(model)


@pytest.hookimpl(trylast=True)
def pytest_t2ibias_make_classifier(config: pytest.Config, axis: str, model: str):
    return _builtins(config).classifier(axis, model)


@pytest.hookimpl(trylast=True)
def pytest_t2ibias_make_llm(config: pytest.Config, model: str):
    return _builtins(config).llm(model)
