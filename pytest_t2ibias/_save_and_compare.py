"""Saving a run and comparing it with a saved one, in the pytest session (the controller's).

``--t2i-save=NAME`` / ``--t2i-autosave`` write the run's JSON report to ``--t2i-storage``;
``--t2i-compare=NAME|latest`` reads the saved run when the session starts (so a missing or
unreadable one is a usage error before any image is generated) and compares the finished
run with it; ``--t2i-compare-fail`` makes drift beyond its criteria fail the session
(``session.exitstatus``, as pytest-benchmark's ``--benchmark-compare-fail`` does). The rules
are ``runs.compare``'s, the files ``runs.saved``', the table ``runs.table``'s: no math here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the rules, files and table load when a baseline option is set (issue #14)
    from ._session import T2ISession
    from .runs.compare import Comparison

COMPLETED = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
PLUGIN_NAME = "t2ibias-baselines"


class SavedRuns:
    """The plugin behind the baseline options; registered on the xdist controller only, where
    every worker's rows have arrived by ``pytest_sessionfinish``."""

    def __init__(self, session: T2ISession) -> None:
        from .errors import RunError
        from .runs.compare import parse_criteria
        from .runs.saved import find_run, load_report, refuse_incomplete_baseline

        self.t2i = session
        settings = session.settings
        self.criteria = parse_criteria(settings.compare_fail)
        self.against: Path | None = None
        self.saved: dict[str, Any] | None = None
        if settings.compare:
            try:
                self.against = find_run(settings.storage, settings.compare)
                self.saved = load_report(self.against)
                if not settings.compare_incomplete:
                    refuse_incomplete_baseline(self.saved, self.against,
                                               "--t2i-compare-incomplete")
            except RunError as exc:
                raise pytest.UsageError(f"--t2i-compare={settings.compare}: {exc}") from None
        self.comparison: Comparison | None = None
        self.saved_as: list[Path] = []
        self.notes: list[str] = []
        self.errors: list[str] = []
        self.collection_errors: list[str] = []
        """Node ids that failed to collect (kept going by --continue-on-collection-errors)."""
        self.crashed: list[str] = []
        """Node ids a crashed xdist worker was running (xdist reports them ``when="???"``)."""

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:  # on the xdist controller too: it relays workers' failed reports
            self.collection_errors.append(report.nodeid or "<session>")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when not in ("setup", "call", "teardown"):  # xdist's crashed item ("???")
            self.crashed.append(report.nodeid)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        from .errors import RunError
        from .runs.compare import compare_runs
        from .runs.saved import as_report, autosave_name, completeness, save_run

        settings = self.t2i.settings
        if settings.plan:
            return
        if exitstatus not in COMPLETED:
            self.notes.append(f"run not saved or compared: it did not complete (exit status "
                              f"{int(exitstatus)})")
            return
        rows = self.t2i.sorted_results()
        if not rows:
            self.notes.append("run not saved or compared: no check reported a figure")
            return
        run = {**self.t2i.run_header(), **self.t2i.interruption(session)}
        run.update(completeness(run, self.collection_errors, self.crashed))
        if self.saved is not None:
            self.comparison = compare_runs(self.saved, as_report(rows, run), self.criteria)
        names = [settings.save] if settings.save else []
        if settings.autosave:
            names.append(autosave_name(settings.storage, run))
        for name in names:
            try:
                self.saved_as.append(save_run(settings.storage, name, rows,
                                              self.t2i.total_counters, run))
            except RunError as exc:
                self.errors.append(f"--t2i-save: {exc}")
        if self.saved_as and not run["complete"]:
            self.notes.append(f"saved as an incomplete run ({'; '.join(run['incomplete_reasons'])}): "
                              f"--t2i-compare refuses it as a baseline unless "
                              f"--t2i-compare-incomplete")
        failed = bool(self.errors) or bool(self.comparison and self.comparison.drifted)
        if failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(trylast=True)  # after the t2ibias summary table
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from .runs.table import render_comparison, verdict_line

        write = terminalreporter.write_line
        quiet = self.t2i.config.get_verbosity() < 0
        if self.comparison is not None and self.against is not None:
            drifted = self.comparison.drifted
            if drifted or not quiet:
                terminalreporter.section("t2ibias compare", red=bool(drifted))
                terminalreporter.write(render_comparison(
                    self.comparison, f"{self.against.stem} ({self.against})",
                    terminalreporter._tw.fullwidth, color=terminalreporter.hasmarkup,
                    verbose=self.t2i.config.get_verbosity() > 0))
            line = verdict_line(self.comparison, f"the saved run {self.against.stem}",
                                "--t2i-compare-fail")
            write(f"t2ibias {line}", red=bool(drifted), bold=bool(drifted), green=not drifted)
        for path in self.saved_as:
            write(f"t2ibias: saved this run as {path.stem} ({path})")
        for line in self.notes:
            write(f"t2ibias: {line}", yellow=True)
        for line in self.errors:
            write(f"t2ibias: ERROR {line}", red=True, bold=True)


def start_saved_runs(config: pytest.Config, session: T2ISession) -> SavedRuns | None:
    """Register the plugin when a baseline option is set, except on xdist workers (the
    controller saves and compares the rows they send)."""
    settings = session.settings
    if getattr(config, "workerinput", None) is not None:
        return None
    if not (settings.save or settings.autosave or settings.compare):
        return None
    baselines = SavedRuns(session)
    config.pluginmanager.register(baselines, PLUGIN_NAME)
    return baselines
