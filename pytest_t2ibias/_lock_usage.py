"""Unused lock entries, warned at the end of a run (as syrupy warns of unused snapshots).

A BGPS or OpenBias lock file keeps one entry per gate or check; a check renamed or removed
leaves its entry behind, read by nothing. Each process notes the entries its checks read or
wrote (``locks._file.note_used``); xdist workers send theirs to the controller, which lists what
is left over in each file, but only after a run that selected and ran every check (a ``-k``,
``-m`` or skipped check leaves entries unread that are not unused).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

WORKER_KEY = "t2ibias_lock_entries"
PLUGIN_NAME = "t2ibias-lock-usage"


class LockUsage:
    def __init__(self) -> None:
        self._noted().clear()  # one session's reads (a pytester run shares the process)
        self.used: dict[str, set[str]] = {}
        self.partial = False
        """Whether some check was deselected, skipped or not run: unread is then not unused."""

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.partial = self.partial or bool(items)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped:
            self.partial = True

    @pytest.hookimpl(optionalhook=True)  # xdist's: unknown under -p no:xdist
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        sent = getattr(node, "workeroutput", {}).get(WORKER_KEY) or {}
        self.partial = self.partial or bool(sent.get("partial")) or error is not None
        for path, keys in (sent.get("used") or {}).items():
            self.used.setdefault(path, set()).update(keys)

    @staticmethod
    def _noted() -> dict[str, set[str]]:
        """``locks._file.used_entries`` if a lock was read (the module costs numpy and PIL to
        import: a run without locks never does)."""
        module = sys.modules.get(f"{__package__}.locks._file")
        return module.used_entries if module is not None else {}

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        for path, keys in self._noted().items():
            self.used.setdefault(path, set()).update(keys)
        if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) \
                or session.shouldstop or session.shouldfail:
            self.partial = True
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[WORKER_KEY] = {"used": {p: sorted(k) for p, k in self.used.items()},
                                        "partial": self.partial}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.lines():
            terminalreporter.write_line(line, yellow=True)

    def lines(self) -> list[str]:
        """One warning line per lock file with unused entries; none after a partial run."""
        if self.partial or not self.used:
            return []
        from .locks._file import unused_entries

        return [f"t2ibias: unused lock entries in {os.path.relpath(path)}: {', '.join(keys)} "
                f"(no check of this run reads them: a check renamed or removed; delete them "
                f"from the file)"
                for path, keys in unused_entries(self.used).items()]


def start_lock_usage(config: pytest.Config) -> None:
    if config.pluginmanager.get_plugin(PLUGIN_NAME) is None:
        config.pluginmanager.register(LockUsage(), PLUGIN_NAME)
