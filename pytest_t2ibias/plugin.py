"""The pytest11 entry point: options, fixtures and the hooks that build the session.

No math lives here. The session object (``_session.T2ISession``), registered as a plugin in
``pytest_configure``, owns the hooks that carry verdicts into reports.
"""

from __future__ import annotations

from fnmatch import fnmatch
from typing import TYPE_CHECKING

import pytest

from . import _builtin, hookspecs
from ._pytest_options import add_options
from ._save_and_compare import start_saved_runs
from ._session import session_of, start_session

if TYPE_CHECKING:
    from .backends._base import LanguageModel
    from .facade import ClassifierHandle, GeneratorHandle, T2IBias, VQAHandle


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    start_saved_runs(config, start_session(config))
    config.pluginmanager.register(_builtin, "t2ibias-builtin-backends")
    config.addinivalue_line("markers", "t2ibias: a bias check (YAML suite item or helper use)")
    config.addinivalue_line("markers", "slow: trains or evaluates models; minutes, not seconds")


def pytest_collect_file(file_path, parent):
    """YAML suites (``*.t2i.yaml``, or the ini's space-separated ``t2i_suite_pattern`` globs)
    become pytest items. Every file of every run passes here: the suite machinery loads only
    for a suite."""
    patterns = session_of(parent.config).settings.suite_pattern.split()
    if not any(fnmatch(file_path.name, pattern) for pattern in patterns):
        return None
    from .items.file import SuiteFile

    return SuiteFile.from_parent(parent, path=file_path)


# -- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def t2ibias(pytestconfig: pytest.Config) -> T2IBias:
    """Generate, ask and run the methods (BiasConnect, ...) behind the cache."""
    return session_of(pytestconfig).facade


@pytest.fixture(scope="session")
def t2i_generator(t2ibias: T2IBias) -> GeneratorHandle:
    """``.generate(prompts, n=None, seed=None) -> ImageSet`` with the --t2i-model pipeline."""
    from .facade import GeneratorHandle

    return GeneratorHandle(t2ibias)


@pytest.fixture(scope="session")
def t2i_baseline_generator(t2ibias: T2IBias) -> GeneratorHandle:
    """Same as ``t2i_generator``, for --t2i-baseline-model (paired seeds)."""
    from .facade import GeneratorHandle

    return GeneratorHandle(t2ibias, baseline=True)


@pytest.fixture(scope="session")
def vqa(t2ibias: T2IBias) -> VQAHandle:
    """``.ask(images, question, choices) -> Answers`` with the --t2i-vqa model."""
    from .facade import VQAHandle

    return VQAHandle(t2ibias)


@pytest.fixture(scope="session")
def attribute_classifier(t2ibias: T2IBias):
    """``attribute_classifier(axis).classify(images) -> Answers`` (--t2i-classifier)."""
    from .facade import ClassifierHandle

    def for_axis(axis: str) -> ClassifierHandle:
        return ClassifierHandle(t2ibias, axis)

    return for_axis


@pytest.fixture(scope="session")
def t2i_llm(t2ibias: T2IBias) -> LanguageModel:
    """The --t2i-llm causal LM."""
    return t2ibias.llm
