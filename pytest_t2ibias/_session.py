"""The session: one object per pytest process, registered as a plugin (pytest-xdist's DSession
pattern). It holds the settings and, built on first use, the models, the request layer and
the lock files; its methods are the hooks that carry verdicts into reports.

Verdicts: ``pytest_runtest_call`` points ``_test_call.verdict_sink`` at the item's stash for
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
from ._test_call import verdict_sink

if TYPE_CHECKING:  # verdicts and reports load when a check reports (issue #14)
    from ._settings import Settings
    from .equipment import Equipment
    from .facade import T2IBias
    from .family import Family
    from .instrument import Instrument, Models, Sightings
    from .locks.bgps import BGPSLocks
    from .locks.counterfactual import PromptLocks
    from .plan import Plan
    from .reports.rows import ReportRow
    from .store.request_layer import Progress, RequestLayer
    from .verdict import Verdict

VERDICTS = pytest.StashKey["list[Verdict]"]()
SIGHTINGS = pytest.StashKey["Sightings"]()
WORKER_RESULTS = "t2ibias_results"
WORKER_COUNTERS = "t2ibias_counters"
WORKER_BACKENDS = "t2ibias_backends"


class T2ISession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.results: list[ReportRow] = []
        self.worker_counters: dict[str, int] = {}
        self.worker_backends: list[dict[str, str]] = []

    @cached_property
    def family(self) -> Family:
        """The gated checks of this run, for family-wise control (sized after collection)."""
        from .family import Family

        return Family(self.settings.family)

    # -- what the checks measure with, built on first use (collection never loads a model) ----

    @cached_property
    def equipment(self) -> Equipment:
        """The models (the ``pytest_t2ibias_make_*`` hooks' backends), the request layer and
        the lock files: the same factory a script's ``T2IBias.standalone`` uses."""
        from .backends._providers import HookBackends
        from .equipment import Equipment

        return Equipment(self.settings, lambda: HookBackends(self.config), self.progress)

    @property
    def models(self) -> Models:
        return self.equipment.models

    @property
    def requests(self) -> RequestLayer:
        return self.equipment.requests

    @property
    def locks(self) -> PromptLocks:
        return self.equipment.locks

    @property
    def bgps_locks(self) -> BGPSLocks:
        return self.equipment.bgps_locks

    @cached_property
    def facade(self) -> T2IBias:
        """The ``t2ibias`` fixture, on the same models, cache and lock files as the items."""
        from .facade import T2IBias

        return T2IBias(self.equipment, progress=self.progress_writer())

    def progress(self) -> Progress | None:
        """Generation and scoring progress on stderr: a live bar on a terminal, a line every
        30 s in a log, one line a phase under -q; None under -qq. An xdist worker writes
        whole lines tagged with its name (workers share the terminal)."""
        verbosity = self.config.get_verbosity()
        if verbosity < -1:
            return None
        worker = getattr(self.config, "workerinput", {}).get("workerid")
        import sys
        from contextlib import nullcontext

        from .reports.progress import TerminalProgress

        capture = self.config.pluginmanager.getplugin("capturemanager")
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        # the real stderr, not the captured one a test call sees (capture is lifted meanwhile)
        stream = sys.__stderr__
        with capture.global_and_fixture_disabled() if capture else nullcontext():
            live = _is_terminal(stream) and worker is None  # fd 2 itself, not pytest's capture
        mode = "summary" if verbosity < 0 else "live" if live else "lines"
        return TerminalProgress(
            stream, mode, pause=capture.global_and_fixture_disabled if capture else nullcontext,
            before=reporter.ensure_newline if reporter else (lambda: None),
            name=f"t2ibias[{worker}]" if worker else "t2ibias")

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

    def instrument(self, plan: Plan, sightings: Sightings | None = None) -> Instrument:
        """An instrument on the session's models and cache; ``sightings`` notes what its
        judges saw (a check's image grid in the report)."""
        from .instrument import Instrument

        return Instrument(self.models, self.requests, plan, sightings)

    @property
    def started(self) -> bool:
        """Whether anything that can load a model or touch the cache has been built."""
        return self.equipment.started

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        gated = sum(1 for item in session.items if getattr(item, "gated", False))
        if gated:
            from .family import Family

            self.family = Family(self.settings.family, gated)
        if self.settings.plan:
            self._write_plan(session)

    def _write_plan(self, session: pytest.Session) -> None:
        """``--t2i-plan``: each check's images, prompts and the images its threshold needs."""
        from .reports.terminal import render_plan

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
        from ._test_call import Sightings, test_sightings

        verdicts = item.stash.setdefault(VERDICTS, [])
        token = verdict_sink.set(verdicts.append)
        seen = test_sightings.set(item.stash.setdefault(SIGHTINGS, Sightings()))
        try:
            return (yield)
        finally:
            test_sightings.reset(seen)
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
        report = yield
        error = call.excinfo.value if call.excinfo is not None else None
        if error is not None and _is_check_error(error):
            as_error(report)
            item.user_properties.append(("status", "error"))  # junit: the teardown report's
            self.record_error(item, f"{type(error).__name__}: {error}")
        elif call.when == "call" and item.stash.get(VERDICTS, None):
            from .verdict import verdict_properties

            status = status_of(report)
            for verdict in item.stash[VERDICTS]:
                if hasattr(item, "report_axis"):  # a suite's check knows its subject and axis
                    subject, axis = item.report_subject, item.report_axis
                else:  # a Python test: its name, and the helper's label
                    subject, axis = item.name, verdict.figures.get("label", "")
                    if "gallery" not in verdict.figures:  # what the test's judges saw
                        from .figures import with_gallery

                        verdict = with_gallery(verdict, item.stash.get(SIGHTINGS, None))
                self.record(item.nodeid, verdict, subject=subject, axis=axis, status=status,
                            check_id=_check_id(item))
                item.user_properties.extend(verdict_properties(verdict) + [("status", status)])
        return report

    def record(self, nodeid: str, verdict: Verdict, *, subject: str = "", axis: str = "",
               status: str = "", check_id: str = "") -> ReportRow:
        """Keep a verdict for the end-of-run report; returns the row (plain builtins).
        ``status`` is pytest's word for the test (passed, failed, xfailed, xpassed)."""
        from .reports.rows import ReportRow

        figures = {k: v for k, v in verdict.to_dict().items()
                   if k not in ("check", "passed", "value", "threshold", "message")}
        estimate = verdict.value
        row = ReportRow(nodeid=nodeid, check=verdict.check, subject=subject, axis=axis,
                        value=estimate.value, low=estimate.low, high=estimate.high, n=estimate.n,
                        confidence=estimate.confidence, threshold=verdict.threshold,
                        passed=verdict.passed, figures=figures,
                        check_id=check_id, status=status or ("passed" if verdict.passed else "failed"),
                        outcome=verdict.outcome, margin=verdict.margin,
                        gate_confidence=verdict.confidence,
                        about=str(verdict.figures.get("about") or axis),
                        reason=failure_reason(verdict), message=verdict.message)
        self.results.append(row)
        return row

    def record_error(self, item: pytest.Item, message: str) -> ReportRow:
        """An item that could not run: a row with no figure, status ``error``."""
        from .reports.rows import ReportRow

        nan = float("nan")
        check = getattr(item, "check", None)
        row = ReportRow(nodeid=item.nodeid, check=getattr(check, "kind", ""),
                        subject=getattr(item, "report_subject", item.name),
                        axis=getattr(item, "report_axis", ""), value=nan, low=nan, high=nan,
                        n=0, confidence=nan, threshold=nan, passed=False, figures={},
                        check_id=_check_id(item), status="error", outcome="error",
                        about=getattr(item, "report_axis", ""), reason=message)
        self.results.append(row)
        return row

    # -- work counters ------------------------------------------------------------------------

    @property
    def counters(self) -> dict[str, int]:
        """Work done by this process; empty for a session that never built its requests."""
        if not self.equipment.built("requests"):
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
            workeroutput[WORKER_BACKENDS] = self.backends_used()
            return
        rows = self.sorted_results()
        if not (self.settings.json or self.settings.html):
            return
        run = self.run_header()
        if self.settings.json:
            from .reports.rows import write_json

            write_json(self.settings.json, rows, self.total_counters, run)
        if self.settings.html:
            from .reports.html import write_html

            settings = self.settings
            write_html(settings.html, rows, run=run,
                       cache_dir=None if settings.no_cache else settings.cache_dir)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        from .reports.rows import ReportRow

        output = getattr(node, "workeroutput", {})
        self.results.extend(ReportRow.from_dict(d) for d in output.get(WORKER_RESULTS, []))
        for name, count in output.get(WORKER_COUNTERS, {}).items():
            self.worker_counters[name] = self.worker_counters.get(name, 0) + count
        self.worker_backends.extend(output.get(WORKER_BACKENDS, []))

    # -- the run header (terminal and JSON) --------------------------------------------------

    def backends_used(self) -> list[dict[str, str]]:
        """The models and judges this process made: role, model, fingerprint."""
        if not self.equipment.built("models"):
            return []
        models = self.models
        made = [("generator:" + role, model, backend)
                for (role, model), backend in models._generators.items()]
        made += [("vqa", self.settings.vqa or "", models._vqa)] if models._vqa else []
        made += [(f"classifier:{axis}", self.settings.classifiers.get(axis, ""), backend)
                 for axis, backend in models._classifiers.items()]
        made += [("llm", self.settings.llm or "", models._llm)] if models._llm else []
        made += [("eval_llm", self.settings.eval_llm or "", models._eval_llm)] if models._eval_llm else []
        return [{"role": role, "model": str(model),
                 "fingerprint": str(getattr(backend, "fingerprint", ""))}
                for role, model, backend in made]

    def run_header(self) -> dict[str, Any]:
        """Who judged what, under which settings: the JSON report's ``run``."""
        import datetime

        from .plan import plan_for

        seen = {(b["role"], b["model"]): b for b in self.backends_used() + self.worker_backends}
        settings = self.settings
        plan = plan_for(settings)
        return {
            "plugin_version": _plugin_version(),
            "git_revision": _git_revision(self.config.rootpath),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "models": sorted((b for b in seen.values() if b["role"].startswith("generator")),
                             key=lambda b: (b["role"], b["model"])),
            "judges": sorted((b for b in seen.values() if not b["role"].startswith("generator")),
                             key=lambda b: (b["role"], b["model"])),
            "settings": {
                "model": settings.images or settings.model, "baseline_model": settings.baseline_model,
                "audit": bool(settings.images), "vqa": settings.vqa,
                "classifiers": dict(settings.classifiers), "llm": settings.llm,
                "device": settings.device, "dtype": settings.dtype,
                "images_per_prompt": settings.images_per_prompt, "seed": settings.seed,
                "steps": settings.steps, "guidance": settings.guidance,
                "confidence": settings.confidence, "bootstrap": settings.bootstrap,
                "family": self.family.policy, "gated_checks": self.family.size,
                "burden": settings.burden,
                "declared_sampling": {"source": plan.sampling_source, **plan.sampling}
                if plan.sampling_source else None,
            },
        }

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """The models and the sampling the candidate declares (``plan.declared_sampling``)."""
        settings = self.settings
        lines = []
        if settings.images:
            lines.append(f"t2ibias: auditing images in {settings.images}")
        elif settings.model:
            from .plan import plan_for

            plan = plan_for(settings)
            declared = ", ".join(f"{k} {v}" for k, v in plan.sampling.items() if v is not None)
            lines.append(f"t2ibias: model {settings.model}" + (
                f"; declared sampling {declared} ({plan.sampling_source}; a suite's defaults or "
                f"the command line override it)" if plan.sampling_source else ""))
            # -- #22: each sampling value and where it came from (backends/own_sampling.py) --
            from .backends.own_sampling import own_sampling_of, sampling_line

            lines.append(sampling_line(plan, own_sampling_of(settings.model, offline=settings.offline))
                         + " (a suite's defaults: win where it sets them)")
        judges = [f"vqa {settings.vqa}"] if settings.vqa else []
        judges += [f"classifier {axis}={model}" for axis, model in settings.classifiers.items()]
        if judges:
            lines.append("t2ibias: judges " + "; ".join(judges))
        return lines

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if getattr(self.config, "workerinput", None) is not None or not self.results:
            return
        from .reports.rows import one_line
        from .reports.terminal import render_text

        rows = self.sorted_results()
        work = self.total_counters
        made = "audited" if self.settings.images else "generated"  # a folder audit reads images
        work_line = ("work: {images_generated} images " + made + ", {images_from_cache} from "
                     "cache; {answers_scored} answers scored, {answers_from_cache} from cache"
                     ).format(**work) if work else ""
        if self.config.get_verbosity() < 0:  # -q: one line
            terminalreporter.write_line(one_line(rows) + (f"; {work_line}" if work_line else ""))
            return
        terminalreporter.section("t2ibias summary")
        terminalreporter.write(render_text(rows, terminalreporter._tw.fullwidth,
                                           color=terminalreporter.hasmarkup))
        terminalreporter.write_line(one_line(rows))
        terminalreporter.write_line(self.family.describe(self.settings.confidence))
        if work_line:
            terminalreporter.write_line(work_line)

    def sorted_results(self) -> list[ReportRow]:
        return sorted(self.results, key=lambda row: row.nodeid)


def _plugin_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-t2ibias")
    except PackageNotFoundError:
        return None


def _git_revision(root: Any) -> str | None:
    """``git rev-parse HEAD`` of the rootdir (with ``-dirty`` for local changes), or None."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=5)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=5)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):  # closed or not a file
        return False


def status_of(report: pytest.TestReport) -> str:
    """pytest's word for a test's call report: passed, failed, xfailed or xpassed."""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    return report.outcome


def failure_reason(verdict: Verdict) -> str:
    """Why a verdict failed, in a few words (empty when it passed)."""
    if verdict.passed:
        return ""
    alerts = verdict.figures.get("alerts") or []
    if alerts:
        return f"alert: {alerts[0]}"
    if verdict.outcome == "inconclusive":
        return f"inconclusive (burden: {verdict.burden})"
    return "beyond the limit"


def _is_check_error(error: BaseException) -> bool:
    from .errors import CheckError

    return isinstance(error, CheckError)


def _check_id(item: pytest.Item) -> str:
    """The suite's check id of a YAML item; a Python test's function name."""
    check = getattr(item, "check", None)
    return str(getattr(check, "id", "")) or getattr(item, "originalname", "") or item.name


def as_error(report: pytest.TestReport) -> None:
    """Make ``report`` an error: failed, in the setup phase (how pytest, its junit writer
    and xdist tell an error from a failure), and no longer an expected failure."""
    report.outcome = "failed"
    report.when = "setup"
    if hasattr(report, "wasxfail"):
        del report.wasxfail


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
