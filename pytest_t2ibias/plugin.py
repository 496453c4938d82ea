"""The pytest11 entry point: options, fixtures and hooks. No math lives here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import _builtin, assertions, hookspecs
from ._options import add_options
from ._session import T2ISession, session_of, start_session
from .facade import ClassifierHandle, GeneratorHandle, T2IBias, VQAHandle
from .report import ReportRow, render_text, write_html, write_json
from .verdict import verdict_properties

WORKER_RESULTS = "t2ibias_results"
WORKER_COUNTERS = "t2ibias_counters"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    start_session(config)
    config.pluginmanager.register(_builtin, "t2ibias-builtin-backends")
    config.addinivalue_line("markers", "t2ibias: a bias check (YAML suite item or helper use)")
    config.addinivalue_line("markers", "slow: trains or evaluates models; minutes, not seconds")


def pytest_collect_file(file_path, parent):
    """YAML suites (``*.t2i.yaml``) become pytest items."""
    from .suite import collect

    return collect.pytest_collect_file(file_path, parent)


# -- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def t2ibias(pytestconfig: pytest.Config) -> T2IBias:
    """Generate, ask and run the methods (BiasConnect, ...) behind the cache."""
    return session_of(pytestconfig).facade


@pytest.fixture(scope="session")
def t2i_generator(t2ibias: T2IBias) -> GeneratorHandle:
    """``.generate(prompts, n=None, seed=None) -> ImageSet`` with the --t2i-model pipeline."""
    return GeneratorHandle(t2ibias)


@pytest.fixture(scope="session")
def t2i_baseline_generator(t2ibias: T2IBias) -> GeneratorHandle:
    """Same as ``t2i_generator``, for --t2i-baseline-model (paired seeds)."""
    return GeneratorHandle(t2ibias, baseline=True)


@pytest.fixture(scope="session")
def vqa(t2ibias: T2IBias) -> VQAHandle:
    """``.ask(images, question, choices) -> Answers`` with the --t2i-vqa model."""
    return VQAHandle(t2ibias)


@pytest.fixture(scope="session")
def attribute_classifier(t2ibias: T2IBias):
    """``attribute_classifier(axis).classify(images) -> Answers`` (--t2i-classifier)."""
    return lambda axis: ClassifierHandle(t2ibias, axis)


@pytest.fixture(scope="session")
def t2i_llm(t2ibias: T2IBias):
    """The --t2i-llm causal LM."""
    return t2ibias.llm


# -- helper verdicts from plain Python tests land in the report too -------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    session = session_of(item.config)

    def observe(verdict) -> None:
        session.record(item.nodeid, verdict, subject=item.name, axis=verdict.figures.get("label", ""))
        item.user_properties.extend(verdict_properties(verdict))

    assertions.observers.append(observe)
    try:
        return (yield)
    finally:
        assertions.observers.remove(observe)


# -- xdist: workers send their rows, the controller alone reports --------------------------------


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session_of(session.config)
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[WORKER_RESULTS] = [row.to_dict() for row in state.results]
        workeroutput[WORKER_COUNTERS] = state.counters
        return
    _write_reports(state)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    output = getattr(node, "workeroutput", {})
    state = session_of(node.config)
    state.results.extend(ReportRow.from_dict(d) for d in output.get(WORKER_RESULTS, []))
    for name, count in output.get(WORKER_COUNTERS, {}).items():
        state.worker_counters[name] = state.worker_counters.get(name, 0) + count


def _write_reports(state: T2ISession) -> None:
    rows = sorted(state.results, key=lambda row: row.nodeid)
    if state.settings.json:
        write_json(state.settings.json, rows, state.total_counters)
    if state.settings.html:
        write_html(state.settings.html, rows)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = session_of(config)
    if getattr(config, "workerinput", None) is not None or not state.results:
        return
    rows = sorted(state.results, key=lambda row: row.nodeid)
    terminalreporter.section("t2ibias summary")
    terminalreporter.write(render_text(rows, terminalreporter._tw.fullwidth,
                                       color=terminalreporter.hasmarkup))
    work = state.total_counters
    if work:
        terminalreporter.write_line(
            "work: {images_generated} images generated, {images_from_cache} from cache; "
            "{answers_scored} answers scored, {answers_from_cache} from cache".format(**work))
