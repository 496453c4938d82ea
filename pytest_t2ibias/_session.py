"""The session: one object per pytest process, registered as a plugin (pytest-xdist's DSession
pattern). It holds the settings and, built on first use, the models, the request layer and
the lock files; its methods are the hooks that carry verdicts into reports.

Verdicts: ``pytest_runtest_call`` points ``verdict.verdict_sink`` at the item's stash for
the duration of the call; ``pytest_runtest_makereport`` turns what arrived into report rows
and junit properties. xdist workers send their rows to the controller, which alone writes
the reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pytest

from ._options import read_settings
from .report import ReportRow, render_text, write_html, write_json
from .verdict import CheckError, Family, Verdict, verdict_properties, verdict_sink

if TYPE_CHECKING:
    from ._bgps_lock import BGPSLocks
    from ._prompt_lock import PromptLocks
    from ._requests import RequestLayer
    from ._settings import Settings
    from .facade import T2IBias
    from .instrument import Instrument, Models
    from .plan import Plan

VERDICTS = pytest.StashKey[list[Verdict]]()
WORKER_RESULTS = "t2ibias_results"
WORKER_COUNTERS = "t2ibias_counters"


class T2ISession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.results: list[ReportRow] = []
        self.worker_counters: dict[str, int] = {}
        self.family = Family(settings.family)
        """The gated checks of this run, for family-wise control (set after collection)."""

    # -- what the checks measure with, built on first use (collection never loads a model) ----

    @cached_property
    def models(self) -> Models:
        from .backends._providers import HookBackends
        from .instrument import Models

        return Models(self.settings, HookBackends(self.config))

    @cached_property
    def requests(self) -> RequestLayer:
        from ._cache import Cache
        from ._requests import RequestLayer

        settings = self.settings
        cache = Cache(None if settings.no_cache else settings.cache_dir, read=not settings.refresh)
        return RequestLayer(cache, batch_size=settings.batch_size)

    @cached_property
    def locks(self) -> PromptLocks:
        from ._prompt_lock import PromptLocks

        return PromptLocks(llm_model=self.settings.llm, load_llm=lambda: self.models.llm,
                           update=self.settings.update_locks)

    @cached_property
    def bgps_locks(self) -> BGPSLocks:
        from ._bgps_lock import BGPSLocks

        return BGPSLocks(self.settings, self.models, update=self.settings.update_locks)

    @cached_property
    def facade(self) -> T2IBias:
        """The ``t2ibias`` fixture, on the same models, cache and lock files as the items."""
        from .facade import T2IBias

        return T2IBias(self.settings, self.models, self.requests, self.locks,
                       bgps_locks=self.bgps_locks, progress=self.progress_writer())

    def progress_writer(self) -> Callable[[str], None] | None:
        """One line at a time on stderr through a terminal writer, past output capture;
        None under -q (and on xdist workers, whose output nobody sees)."""
        if self.config.get_verbosity() < 0 or getattr(self.config, "workerinput", None) is not None:
            return None
        import sys
        from contextlib import nullcontext

        from _pytest._io import TerminalWriter

        capture = self.config.pluginmanager.getplugin("capturemanager")

        def write(line: str) -> None:
            with capture.global_and_fixture_disabled() if capture else nullcontext():
                TerminalWriter(sys.stderr).line(line)

        return write

    def instrument(self, plan: Plan) -> Instrument:
        from .instrument import Instrument

        return Instrument(self.models, self.requests, plan)

    @property
    def started(self) -> bool:
        """Whether anything that can load a model or touch the cache has been built."""
        return "models" in self.__dict__ or "requests" in self.__dict__

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        gated = [item for item in session.items if getattr(item, "gated", False)]
        self.family = Family(self.settings.family, len(gated))
        if self.settings.plan:
            self._write_plan(session)

    def _write_plan(self, session: pytest.Session) -> None:
        """``--t2i-plan``: each check's images, prompts and the images its threshold needs."""
        from .report import render_plan

        plans = [item.planned() for item in session.items if hasattr(item, "planned")]
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        reporter.write(render_plan(plans, self.settings.power, reporter._tw.fullwidth,
                                   color=reporter.hasmarkup))
        reporter.write_line(self.family.describe(self.settings.confidence))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        """``--t2i-plan`` plans and stops: nothing runs, no model loads."""
        return True if self.settings.plan else None

    # -- verdicts -> report rows --------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        verdicts = item.stash.setdefault(VERDICTS, [])
        token = verdict_sink.set(verdicts.append)
        try:
            return (yield)
        finally:
            verdict_sink.reset(token)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Iterator[Any]:
        """Verdicts -> rows and junit properties; a check that could not run -> an ERROR.

        ``tryfirst`` makes this the outermost wrapper, so it sees the report after pytest's
        xfail handling: a ``CheckError`` (``verdict.CheckError``: a model that will not load,
        no images, an unusable cache or lock file) is reported as an error of the item's
        setup, whatever its marks, so the terminal says ERROR, junit counts it in
        ``errors`` (never ``failures``), and an xfail mark cannot hide a broken instrument.
        """
        if call.when == "call":
            for verdict in item.stash.get(VERDICTS, ()):
                if hasattr(item, "report_axis"):  # a suite's check knows its subject and axis
                    subject, axis = item.report_subject, item.report_axis
                else:  # a Python test: its name, and the helper's label
                    subject, axis = item.name, verdict.figures.get("label", "")
                self.record(item.nodeid, verdict, subject=subject, axis=axis)
                item.user_properties.extend(verdict_properties(verdict))
        report = yield
        if call.excinfo is not None and isinstance(call.excinfo.value, CheckError):
            as_error(report)
        return report

    def record(self, nodeid: str, verdict: Verdict, *, subject: str = "", axis: str = "") -> ReportRow:
        """Keep a verdict for the end-of-run report; returns the row (plain builtins)."""
        figures = {k: v for k, v in verdict.to_dict().items()
                   if k not in ("check", "passed", "value", "threshold", "message")}
        estimate = verdict.value
        row = ReportRow(nodeid=nodeid, check=verdict.check, subject=subject, axis=axis,
                        value=estimate.value, low=estimate.low, high=estimate.high, n=estimate.n,
                        confidence=estimate.confidence, threshold=verdict.threshold,
                        passed=verdict.passed, figures=figures)
        self.results.append(row)
        return row

    # -- work counters ------------------------------------------------------------------------

    @property
    def counters(self) -> dict[str, int]:
        """Work done by this process; empty for a session that never built its requests."""
        if "requests" not in self.__dict__:
            return {}
        return dict(self.requests.counters.__dict__)

    @property
    def total_counters(self) -> dict[str, int]:
        """This process's work plus what xdist workers reported."""
        total = dict(self.counters)
        for name, count in self.worker_counters.items():
            total[name] = total.get(name, 0) + count
        return total

    # -- end of session: xdist workers send, the controller reports ----------------------------

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[WORKER_RESULTS] = [row.to_dict() for row in self.results]
            workeroutput[WORKER_COUNTERS] = self.counters
            return
        rows = self.sorted_results()
        if self.settings.json:
            write_json(self.settings.json, rows, self.total_counters)
        if self.settings.html:
            write_html(self.settings.html, rows)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {})
        self.results.extend(ReportRow.from_dict(d) for d in output.get(WORKER_RESULTS, []))
        for name, count in output.get(WORKER_COUNTERS, {}).items():
            self.worker_counters[name] = self.worker_counters.get(name, 0) + count

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if getattr(self.config, "workerinput", None) is not None or not self.results:
            return
        terminalreporter.section("t2ibias summary")
        terminalreporter.write(render_text(self.sorted_results(), terminalreporter._tw.fullwidth,
                                           color=terminalreporter.hasmarkup))
        terminalreporter.write_line(self.family.describe(self.settings.confidence))
        work = self.total_counters
        if work:
            terminalreporter.write_line(
                "work: {images_generated} images generated, {images_from_cache} from cache; "
                "{answers_scored} answers scored, {answers_from_cache} from cache".format(**work))

    def sorted_results(self) -> list[ReportRow]:
        return sorted(self.results, key=lambda row: row.nodeid)


def as_error(report: pytest.TestReport) -> None:
    """Make ``report`` an error: failed, in the setup phase (how pytest, its junit writer
    and xdist tell an error from a failure), and no longer an expected failure."""
    report.outcome = "failed"
    report.when = "setup"
    if hasattr(report, "wasxfail"):
        del report.wasxfail
    report.user_properties.append(("outcome", "error"))


SESSION_KEY = pytest.StashKey[T2ISession]()
PLUGIN_NAME = "t2ibias-session"


def start_session(config: pytest.Config) -> T2ISession:
    """Build the session from the options and register it as a plugin."""
    session = T2ISession(config, read_settings(config))
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(session, PLUGIN_NAME)
    return session


def session_of(config: pytest.Config) -> T2ISession:
    return config.stash[SESSION_KEY]
