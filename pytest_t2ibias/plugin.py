"""The pytest11 entry point: options, fixtures and the hooks that build the session.

No math lives here. The session object (``_session.T2ISession``), registered as a plugin in
``pytest_configure``, owns the hooks that carry verdicts into reports.
"""

from __future__ import annotations

from fnmatch import fnmatch
from typing import TYPE_CHECKING

import pytest

from . import _builtin, hookspecs
from ._lock_usage import start_lock_usage
from ._pytest_options import add_options, get_option
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
    start_lock_usage(config)
    # only the plugin's own marker: a generic one (``slow``) is the user project's to define
    config.addinivalue_line("markers", "t2ibias: a bias check (a YAML suite item, or a test "
                                       "that uses a t2ibias fixture)")


T2I_FIXTURES = frozenset({"t2ibias", "t2i_generator", "t2i_baseline_generator", "vqa",
                          "attribute_classifier", "t2i_llm"})
"""The plugin's fixtures: a test that uses one (directly or through a fixture of its own) is
a bias check, marked ``t2ibias``."""


@pytest.hookimpl(tryfirst=True)  # before pytest's -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that uses a t2ibias fixture carries the ``t2ibias`` marker (YAML items carry
    it already), so ``-m "not t2ibias"`` deselects them all; ``--t2i-skip`` skips them and
    ``--t2i-only`` skips every other test (as pytest-benchmark's ``--benchmark-skip`` and
    ``--benchmark-only``)."""
    skip, only = bool(get_option(config, "t2i_skip")), bool(get_option(config, "t2i_only"))
    if skip and only:
        raise pytest.UsageError("--t2i-skip and --t2i-only exclude each other: pick one")
    for item in items:
        if item.get_closest_marker("t2ibias") is None and _uses_a_t2i_fixture(item):
            item.add_marker("t2ibias")
        is_check = item.get_closest_marker("t2ibias") is not None
        if skip and is_check:
            item.add_marker(pytest.mark.skip(reason="a bias check, skipped by --t2i-skip"))
        elif only and not is_check:
            item.add_marker(pytest.mark.skip(reason="not a bias check, skipped by --t2i-only"))


def _uses_a_t2i_fixture(item: pytest.Item) -> bool:
    """Whether ``item`` requests one of the plugin's fixtures (a user's fixture of the same
    name, defined elsewhere, does not count)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for name in T2I_FIXTURES & set(getattr(item, "fixturenames", ())):
        definitions = info.name2fixturedefs.get(name) or ()
        if definitions and getattr(definitions[-1].func, "__module__", "") == __name__:
            return True
    return False


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
