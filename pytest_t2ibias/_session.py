"""The session: one object per pytest process, registered as a plugin (pytest-xdist's DSession
pattern). It holds the settings, the equipment (models, request layer, lock files: built on
first use by ``equipment.Equipment``) and the family of gated checks; its methods are the
hooks that carry verdicts into reports, each delegating to the code that owns the work.

Verdicts: ``pytest_runtest_call`` points ``_test_call.verdict_sink`` at the item's stash for
the duration of the call; ``pytest_runtest_makereport`` hands what arrived to
``reports.collect`` for report rows and junit properties. xdist workers send their rows to
the controller (``reports.collect.RunResults``), which alone writes the reports.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Generator, Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._pytest_options import read_settings
from ._test_call import verdict_sink

if TYPE_CHECKING:  # verdicts, reports and the equipment load when a check needs them (#14)
    from ._settings import Settings
    from ._test_call import Sightings
    from .equipment import Equipment
    from .facade import T2IBias
    from .family import Family
    from .instrument import Instrument, Models
    from .locks.bgps import BGPSLocks
    from .locks.counterfactual import PromptLocks
    from .plan import Plan
    from .reports.collect import RunResults
    from .reports.progress import Mode, RunTally
    from .reports.rows import ReportRow
    from .store.request_layer import Progress, RequestLayer
    from .verdict import Verdict

VERDICTS: pytest.StashKey[list[Verdict]] = pytest.StashKey()
SIGHTINGS: pytest.StashKey[Sightings] = pytest.StashKey()


class T2ISession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self._family: Family | None = None
        self.written_reports: list[tuple[str, str]] = []
        """(format, path) of each report written, named at the end of the terminal summary."""
        self.report_errors: list[str] = []
        """Why a report could not be written: shown last in the summary, the session failed."""
        from ._test_call import shown_per_prompt  # --t2i-html-images, for every gallery

        shown_per_prompt.set(settings.html_images)
        from .reports.progress import RunTally
        from .session_plan import SessionPlan

        self.plan = SessionPlan(self)
        """The session plan (#42): the check items register themselves, it is built when
        collection finishes and executed before the first item runs."""
        self.plan_seconds: list[float] = []
        """Wall time of the session plan in each process that executed one (xdist: each
        worker's): said in the run header, the JSON and a JUnit testsuite property."""

        self.tally = RunTally()
        """The run's work, for the progress line: expected when the request layer is built,
        counted per item (``pytest_runtest_call``) and for the session plan."""
        self._log_lines: Any = None
        self._work_counted = False
        self.finished: set[str] = set()
        """Node ids whose teardown was reported (here, or by an xdist worker): the items that
        ran to the end, against the collected count an interrupted run's reports state."""
        """``reports.progress.ReporterLines`` when progress goes to a log through pytest."""
        self.incomplete_reasons: list[str] = []
        """Why the run's results are not all its checks' (a crashed worker, a suite that did
        not load): with ``interrupted``, the run header's ``complete`` (#47)."""
        self._file_ends: set[str] = set()
        """Node ids after which pytest's line for a file is complete (not the run's last)."""
        self.threads = self._choose_threads()
        """torch's threads in this process (#36), given to torch at the first model load."""

    @property
    def worker(self) -> bool:
        """Whether this process is an xdist worker."""
        return getattr(self.config, "workerinput", None) is not None

    # -- torch's threads: chosen at startup, said in the header, set at the first model load --

    def _choose_threads(self):
        from .backends import threads

        worker = getattr(self.config, "workerinput", None)
        if worker is not None:  # the controller measured the CPUs busy before workers began
            count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")
            choice = threads.choose_threads(self.settings.threads, busy=worker.get("t2ibias_busy"),
                                            workers=int(count) if count.isdigit() else 1)
        else:
            choice = threads.choose_threads(self.settings.threads, workers=_xdist_workers(self.config))
        threads.decide(choice)
        return choice

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist: each worker divides the CPUs the controller found free (its siblings, started
        together, would count as busy if it measured itself)."""
        node.workerinput["t2ibias_busy"] = self.threads.busy

    # -- the family of gated checks: sized at collection, decided by the first check ----------

    @property
    def family(self) -> Family:
        """The gated checks of this run, for family-wise control (sized after collection)."""
        if self._family is None:
            from .family import Family

            self._family = Family(self.settings.family)
        return self._family

    def decide_family(self, errors: dict[str, float], decisive: Callable[[str, float], bool]
                      ) -> None:
        """Holm/BH: fix each gated check's level before any verdict (``Family.decided``)."""
        self._family = self.family.decided(errors, decisive)

    # -- what the checks measure with, built on first use (collection never loads a model) ----

    @cached_property
    def equipment(self) -> Equipment:
        """The models, request layer and lock files the items and the fixture share."""
        from .backends._providers import HookBackends
        from .equipment import Equipment

        return Equipment(self.settings, HookBackends(self.config), progress=self.progress)

    @property
    def models(self) -> Models:
        return self.equipment.models

    @property
    def requests(self) -> RequestLayer:
        return self.equipment.requests

    @property
    def locks(self) -> PromptLocks:
        return self.equipment.counterfactual_locks

    @property
    def bgps_locks(self) -> BGPSLocks:
        return self.equipment.bgps_locks

    @cached_property
    def facade(self) -> T2IBias:
        """The ``t2ibias`` fixture, on the session's equipment (the items' models and cache)."""
        from .facade import T2IBias

        return T2IBias(self.equipment, progress=self.progress_writer())

    @cached_property
    def results(self) -> RunResults:
        """This run's report rows (the controller's: with every worker's)."""
        from .reports.collect import RunResults

        return RunResults()

    def progress(self) -> Progress | None:
        """Generation and scoring progress: a live bar on a terminal (stderr), a line every
        30 s in a log and one line a phase under -q (through pytest's reporter, between its
        lines); None under -qq. An xdist worker writes whole lines tagged with its name on
        stderr (workers share the terminal)."""
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
        stream = sys.__stderr__ or sys.stderr  # None where Python started without a stderr
        with capture.global_and_fixture_disabled() if capture else nullcontext():
            live = _is_terminal(stream) and worker is None  # fd 2 itself, not pytest's capture
        mode: Mode = "summary" if verbosity < 0 else "live" if live else "lines"
        if not self._work_counted:
            self.tally.expect(self.run_work())
        pause = capture.global_and_fixture_disabled if capture else nullcontext
        return TerminalProgress(
            stream, mode, tally=self.tally, pause=pause,
            before=reporter.ensure_newline if reporter else (lambda: None),
            name=f"t2ibias[{worker}]" if worker else "t2ibias",
            write_line=None if mode == "live" else self._log_lines)

    def run_work(self) -> RunTally:
        """The run's totals, for one ETA (#27) and the budgets (#35): the session plan's."""
        self._work_counted = True
        return self.plan.tally()

    def _within_budgets(self, work: RunTally) -> None:
        """Refuse a selection that plans more than ``budgets`` allow, before anything is
        built for it: one usage error naming the totals and the largest check."""
        from .budgets import over_budget

        planned = work.planned
        problem = over_budget(planned["images"], planned["answers"])
        if problem is None:
            return
        largest = max(self.plan.entries, key=lambda entry: entry.plan.images_per_prompt)
        raise pytest.UsageError(
            f"t2ibias: the selected checks plan {problem} (t2ibias budgets; the largest "
            f"check: {largest.nodeid} at {largest.plan.images_per_prompt:,} images a prompt); "
            f"select fewer checks (-k, or fewer subjects and axes a check), lower "
            f"images_per_prompt or --t2i-images-per-prompt, or split the run")

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
        return self.equipment.instrument(plan, sightings)

    @property
    def started(self) -> bool:
        """Whether anything that can load a model or touch the cache has been built."""
        return "equipment" in self.__dict__ and self.equipment.started

    @pytest.hookimpl(tryfirst=True)  # before the terminal's collection lines read the plan
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.plan.build(session.items)  # each item's work, once (#42)
        gated = sum(1 for entry in self.plan.entries if entry.gated)
        if gated:
            from .family import Family

            self._family = Family(self.settings.family, gated)
        if self.plan.entries:
            work = self.run_work()  # counted per prompt, not per image: cheap at any size
            self._within_budgets(work)
            self.tally.expect(work)
        files = [item.nodeid.split("::")[0] for item in session.items]
        self._file_ends = {item.nodeid for item, file, following
                           in zip(session.items, files, files[1:]) if file != following}
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if reporter is not None and getattr(self.config, "workerinput", None) is None:
            from contextlib import nullcontext

            from .reports.progress import ReporterLines

            # a log's progress lines: between pytest's own, on its stream (#27)
            capture = self.config.pluginmanager.getplugin("capturemanager")
            self._log_lines = ReporterLines(
                reporter, pause=capture.global_and_fixture_disabled if capture else nullcontext)
        if self.settings.plan:
            self._write_plan(session)

    def _write_plan(self, session: pytest.Session) -> None:
        """``--t2i-plan``: each check's images, prompts and the images its threshold needs,
        from the session plan (each item's work worked out once, at its build)."""
        from .reports.terminal import render_plan

        plans = self.plan.item_plans()
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        from .backends.readings import memo_folder
        from .reports.terminal import unread_in_plan

        planned = self.plan.planned()
        checks = [(nodeid, item) for nodeid, item, _ in planned]
        works = [work for _, _, work in planned]
        unread = unread_in_plan(checks, memo_folder(self.settings.cache_dir, self.settings.no_cache),
                                works=works)  # unread words (#27)
        reporter.write(render_plan(plans, self.settings.power, self._table_width(reporter),
                                   color=reporter.hasmarkup, unread=unread))
        if self.config.get_verbosity() > 0:  # -v: the prompts themselves
            from .reports.terminal import plan_prompts

            for line in plan_prompts(checks, works=works):
                reporter.write_line(line)
        reporter.write_line(self.family.describe(self.settings.confidence))
        work = self.run_work().planned  # what the progress line's total starts from
        reporter.write_line(f"t2ibias: the checks expect {work['images']:,} images and "
                            f"{work['answers']:,} answers (each shared image and answer once, "
                            "searches by their estimates; before the cache; Python tests add "
                            "theirs as they run)")
        from .reports.judges import unreadable_judges

        for line in unreadable_judges(checks, self.settings,
                                      None if self.settings.no_cache else self.settings.cache_dir):
            reporter.write_line(line)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        """``--t2i-plan`` plans and stops: nothing runs, no model loads."""
        return True if self.settings.plan else None

    @pytest.hookimpl(wrapper=True, tryfirst=True, specname="pytest_runtestloop")
    def pytest_runtestloop_plan_first(
            self, session: pytest.Session) -> Generator[None, bool | None, bool | None]:
        """The session plan, executed once before the first item runs (prefetch, adaptive
        rounds, the family's levels: ``SessionPlan.execute``); its time is its own, in no
        test's (the header, the JSON and a JUnit testsuite property say it)."""
        stops = (self.settings.plan or self.config.option.collectonly
                 or (session.testsfailed and not self.config.option.continue_on_collection_errors))
        if not stops and self.plan.running() and self.plan.execute_before_items:
            self.plan.execute()
            if self.plan.seconds is not None:
                self.plan_seconds.append(self.plan.seconds)
                self._junit_plan_time()
        return (yield)

    def _junit_plan_time(self) -> None:
        """The plan's time as a property of the JUnit testsuite (the controller's file)."""
        from _pytest.junitxml import xml_key

        xml = self.config.stash.get(xml_key, None)
        if xml is not None and self.plan_seconds:
            xml.add_global_property("t2ibias_plan_seconds", f"{max(self.plan_seconds):.3f}")

    # -- verdicts -> report rows --------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        from ._test_call import Sightings, test_sightings

        verdicts = item.stash.setdefault(VERDICTS, [])
        token = verdict_sink.set(verdicts.append)
        seen = test_sightings.set(item.stash.setdefault(SIGHTINGS, Sightings()))
        try:
            with self.tally.working_on(item.nodeid):  # its work counts against its estimate
                return (yield)
        finally:
            test_sightings.reset(seen)
            verdict_sink.reset(token)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if self._log_lines is not None:
            self._log_lines.item_started(nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        carried = getattr(report, JUNIT_PROPERTIES, None)
        if carried:  # xunit2: the testsuite's properties (``junit_properties``)
            from _pytest.junitxml import xml_key

            xml = self.config.stash.get(xml_key, None)
            if xml is not None:
                for name, value in carried:
                    xml.add_global_property(f"{report.nodeid}::{name}", value)
        if report.when == "teardown":
            self.finished.add(report.nodeid)
        if report.when == "???":  # xdist's report of an item whose worker crashed
            self._not_run(report.nodeid, f"{report.longreprtext or 'its worker crashed'}")
        if self._log_lines is not None and self._log_lines.owed is not None:
            _, letter, _ = self.config.hook.pytest_report_teststatus(report=report,
                                                                     config=self.config)
            if letter:
                self._log_lines.before_result()

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A suite that did not load (kept going by ``--continue-on-collection-errors``):
        an ERROR row, and the run is incomplete (#47). A worker leaves it to the controller."""
        if report.failed and not self.worker:
            text = "; ".join(line.strip() for line in report.longreprtext.strip().splitlines())
            self._not_run(report.nodeid or ".", f"could not be collected: {text}")

    def _not_run(self, nodeid: str, why: str) -> None:
        """An item or suite that could not run: said in the header; a suite's, a row."""
        from .reports.collect import unrun_row

        self.incomplete_reasons.append(f"{nodeid}: {why}")
        if nodeid.split("::")[0].endswith(".t2i.yaml"):
            self.results.add(unrun_row(nodeid, why))

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if self._log_lines is not None and nodeid in self._file_ends:
            self._log_lines.file_ended()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Verdicts -> rows and junit properties; a check that could not run -> an ERROR.

        ``tryfirst`` makes this the outermost wrapper, so it sees the report after pytest's
        xfail handling: a ``CheckError`` (``verdict.CheckError``: a model that will not load,
        no images, an unusable cache or lock file) is reported as an error of the item's
        setup, whatever its marks, so the terminal says ERROR, junit counts it in
        ``errors`` (never ``failures``), and an xfail mark cannot hide a broken instrument.
        """
        report = yield
        excinfo = call.excinfo
        planned = item.nodeid in self.plan.by_nodeid
        if excinfo is not None and (_is_check_error(excinfo.value)
                                    or _broke_a_check(planned, excinfo.value)):
            from .reports.collect import error_row

            as_error(report)
            self.junit_properties(item, report, [("status", "error")])
            self.results.add(error_row(item, _error_text(excinfo.value, excinfo)))
        elif call.when == "call" and item.stash.get(VERDICTS, None):
            from .reports.collect import item_rows, xfail_of
            from .verdict import verdict_properties

            verdicts = item.stash[VERDICTS]
            for verdict, row in item_rows(item, verdicts, xfail_of(report),
                                          item.stash.get(SIGHTINGS, None)):
                self.results.add(row)
                self.junit_properties(item, report, verdict_properties(verdict)
                                      + [("status", row.status)])
        return report

    def junit_properties(self, item: pytest.Item, report: pytest.TestReport,
                         properties: list[tuple[str, Any]]) -> None:
        """A check's figures for JUnit XML, valid under the configured ``junit_family``:
        xunit1 allows a testcase its ``<properties>`` (the item's ``user_properties``, read
        from the teardown report); xunit2, pytest's default, does not, so they ride on this
        report (to the controller, under xdist) and become the testsuite's properties named
        ``<nodeid>::<name>`` (``pytest_runtest_logreport``)."""
        if self.config.getini("junit_family") == "xunit2":
            carried = list(getattr(report, JUNIT_PROPERTIES, None) or [])
            setattr(report, JUNIT_PROPERTIES, carried + [list(p) for p in properties])
        else:
            item.user_properties.extend(properties)

    # -- work counters ------------------------------------------------------------------------

    @property
    def counters(self) -> dict[str, int]:
        """Work done by this process; empty for a session that never built its requests."""
        return self.equipment.counters if "equipment" in self.__dict__ else {}

    @property
    def total_counters(self) -> dict[str, int]:
        """This process's work plus what xdist workers reported."""
        return self.results.total_counters(self.counters)

    # -- end of session: xdist workers send, the controller reports ----------------------------

    def flush_cache_writes(self, session: pytest.Session) -> None:
        """The cache writes still behind the last calls (issue #46), before the counters go."""
        if "equipment" not in self.__dict__:
            return
        try:
            self.equipment.flush()
        except Exception as exc:  # the results stand (they were computed); only the cache lost
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            message = f"t2ibias: a cache write failed, the entry is not cached: {exc}"
            if reporter is not None:
                reporter.write_line(message, red=True)
            else:
                print(message, file=sys.stderr)


    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.flush_cache_writes(session)
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            self.results.send(workeroutput, self.counters, self.backends_used())
            workeroutput["t2ibias_plan_seconds"] = self.plan_seconds
            return
        rows = self.sorted_results()
        if not (self.settings.json or self.settings.html or self.settings.markdown):
            return
        run = {**self.run_header(), **self.interruption(session),
               "plan_seconds": round(max(self.plan_seconds), 3) if self.plan_seconds else None}
        settings = self.settings
        if json_path := settings.json:
            from .reports.rows import write_json

            self._write_report("JSON", "--t2i-json", json_path, lambda: write_json(
                json_path, rows, self.total_counters, run))
        if html_path := settings.html:
            from .reports.html import write_html

            self._write_report("HTML", "--t2i-html", html_path, lambda: write_html(
                html_path, rows, run=run,
                cache_dir=None if settings.no_cache else settings.cache_dir))
        if markdown_path := settings.markdown:
            from .reports.markdown import write_markdown

            self._write_report("Markdown", "--t2i-markdown", markdown_path,
                               lambda: write_markdown(markdown_path, rows, html=settings.html))
        if self.report_errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def interruption(self, session: pytest.Session) -> dict[str, Any]:
        """The run header's ``interrupted`` (bool), and for an interrupted run (Ctrl-C, -x,
        --maxfail, a crashed worker) ``items_not_run`` of ``items_collected`` and why, so its
        reports never read as a complete run's; ``complete`` (bool) and
        ``incomplete_reasons``: also False for a crashed worker or a suite that did not load
        (saved runs and ``compare`` read them, #47)."""
        collected = session.testscollected
        not_run = max(0, collected - len(self.finished))
        reasons = list(self.incomplete_reasons)
        if not not_run or self.config.option.collectonly:
            return {"interrupted": False, "complete": not reasons, "incomplete_reasons": reasons}
        reason = (session.shouldfail or session.shouldstop  # -x, --maxfail: pytest's words
                  or "interrupted (Ctrl-C, or a process that ended)")
        return {"interrupted": True, "items_not_run": not_run, "items_collected": collected,
                "interrupted_by": str(reason), "complete": False,
                "incomplete_reasons": [*reasons, f"{not_run} of {collected} items did not run "
                                                 f"({reason})"]}

    def _write_report(self, what: str, option: str, path: str, write: Callable[[], None]
                      ) -> None:
        """Write one report; an OS error (a full or read-only disk, a device) is one
        paragraph at the end of the summary and a failed session, never a traceback.
        Nothing at ``path`` is removed (``reports.output``): what was there stays as it was,
        and the paragraph says it is not this run's report."""
        try:
            write()
        except OSError as exc:
            reason = exc.strerror or str(exc)
            self.report_errors.append(
                f"{option}={path}: the {what} report could not be written ({reason}"
                f"{': ' + str(exc.filename) if exc.filename else ''}); whatever {path} held "
                f"before is left as it was, not this run's report; free space there or "
                f"point {option} at a writable file")
            return
        self.written_reports.append((what, path))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {})
        self.results.receive(output)
        self.plan_seconds.extend(output.get("t2ibias_plan_seconds", []))
        self._junit_plan_time()

    # -- the run header (terminal and JSON) --------------------------------------------------

    def backends_used(self) -> list[dict[str, str]]:
        """The models and judges this process made: role, model, fingerprint."""
        return self.equipment.backends_used() if "equipment" in self.__dict__ else []

    def run_header(self) -> dict[str, Any]:
        """Who judged what, under which settings: the JSON report's ``run``."""
        from .reports.header import run_header

        return run_header(self.settings, self.family,
                          self.backends_used() + self.results.worker_backends, self.config.rootpath)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """The models and the sampling the candidate declares (``plan.declared_sampling``)."""
        from .reports.header import environment_line, gpu_sharing_line, header_lines

        lines = [*header_lines(self.settings), environment_line(), self.threads.header()]
        workers = config.getoption("numprocesses", None)
        if isinstance(workers, int) and workers > 1:
            from .backends._lazy import visible_gpu_count

            sharing = gpu_sharing_line(workers, self.settings.device, visible_gpu_count())
            lines += [sharing] if sharing else []
        return lines

    def pytest_report_collectionfinish(self, config: pytest.Config,
                                       items: list[pytest.Item]) -> list[str]:
        """A line for each suite whose ``models:``/``defaults:`` differ from the header's,
        and the work budgets the run is held to (``budgets``)."""
        suites = {id(entry.written.suite): entry.written.suite for entry in self.plan.entries}
        if not suites:
            return []
        from .budgets import describe
        from .kinds._judge import folder_audit_lines
        from .reports.header import suite_lines

        return [*suite_lines(self.settings, list(suites.values())), describe(),
                *folder_audit_lines(self.settings.images, list(suites.values()))]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if getattr(self.config, "workerinput", None) is not None:
            return
        self._write_summary(terminalreporter)
        if self.config.get_verbosity() >= 0:  # as pytest names its junit file
            for what, path in self.written_reports:
                terminalreporter.write_sep("-", f"t2ibias: {what} report written to {path}")
        for error in self.report_errors:
            terminalreporter.write_line(f"t2ibias: ERROR {error}", red=True, bold=True)

    def _write_summary(self, terminalreporter: Any) -> None:
        if not self.sorted_results():
            return
        from .reports.terminal import write_summary

        write_summary(terminalreporter, self.sorted_results(), self.total_counters,
                      audit=bool(self.settings.images), quiet=self.config.get_verbosity() < 0,
                      family=self.family.describe(self.settings.confidence),
                      width=self._table_width(terminalreporter))

    def _table_width(self, reporter: Any) -> int | None:
        from .reports.terminal import table_width

        return table_width(reporter._tw.fullwidth, is_terminal=bool(reporter.isatty),
                           given=self.settings.table_width)

    def sorted_results(self) -> list[ReportRow]:
        """This run's rows in node-id order; none (and nothing imported) if none came."""
        return self.results.sorted() if "results" in self.__dict__ else []


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):  # closed or not a file
        return False


def _is_check_error(error: BaseException) -> bool:
    from .errors import CheckError

    return isinstance(error, CheckError)


def _broke_a_check(planned: bool, error: BaseException) -> bool:
    """Whether a suite item ended in an exception that is not its verdict (``CheckFailed``)
    nor pytest's own skip or xfail: a library's ValueError, a KeyError in a method. That is
    an ERROR row like a ``CheckError``, never a missing item (issue #23)."""
    from .verdict import CheckFailed

    if not planned or isinstance(error, CheckFailed):
        return False
    return not isinstance(error, (pytest.skip.Exception, pytest.xfail.Exception,
                                  pytest.fail.Exception))


def _error_text(error: BaseException, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """``Type: message``, and for an unexpected exception where it was raised."""
    if _is_check_error(error):
        return f"{type(error).__name__}: {error}"
    entry = excinfo.traceback[-1]
    return f"unexpected {type(error).__name__} at {Path(entry.path).name}:{entry.lineno + 1}: {error}"


def as_error(report: pytest.TestReport) -> None:
    """Make ``report`` an error: failed, in the setup phase (how pytest, its junit writer
    and xdist tell an error from a failure), and no longer an expected failure."""
    report.outcome = "failed"
    report.when = "setup"
    if hasattr(report, "wasxfail"):
        del report.wasxfail


SESSION_KEY = pytest.StashKey[T2ISession]()
PLUGIN_NAME = "t2ibias-session"


def _xdist_workers(config: pytest.Config) -> int:
    """The xdist workers this run starts (1 without xdist or with ``-n 0``)."""
    option = getattr(config, "option", None)
    if getattr(option, "dist", "no") == "no":
        return 1
    count = getattr(option, "numprocesses", None)
    return count if isinstance(count, int) and count > 0 else 1


def start_session(config: pytest.Config) -> T2ISession:
    """Build the session from the options and register it as a plugin."""
    session = T2ISession(config, read_settings(config))
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(session, PLUGIN_NAME)
    return session


JUNIT_PROPERTIES = "t2ibias_junit_properties"
"""The report attribute a check's JUnit properties travel in under xunit2 (an xdist worker
sends a report's attributes with it)."""


def session_of(config: pytest.Config) -> T2ISession:
    return config.stash[SESSION_KEY]
