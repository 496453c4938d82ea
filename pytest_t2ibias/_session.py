"""Per-process session state, kept in ``config.stash``: settings, backends, cache, results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ._options import Settings, read_settings
from .report import ReportRow
from .verdict import Verdict


@dataclass
class T2ISession:
    config: pytest.Config
    settings: Settings
    results: list[ReportRow] = field(default_factory=list)
    worker_counters: dict[str, int] = field(default_factory=dict)
    _facade: Any = None

    @property
    def facade(self):
        """The ``t2ibias`` facade; built on first use so collection never loads a model."""
        if self._facade is None:
            from .facade import T2IBias

            self._facade = T2IBias.from_session(self)
        return self._facade

    def record(self, nodeid: str, verdict: Verdict, *, check: str | None = None,
               subject: str = "", axis: str = "") -> ReportRow:
        """Keep a verdict for the end-of-run report; returns the row (plain builtins)."""
        figures = {k: v for k, v in verdict.to_dict().items()
                   if k not in ("check", "passed", "value", "threshold", "message")}
        row = ReportRow(
            nodeid=nodeid,
            check=check or verdict.check,
            subject=subject,
            axis=axis,
            value=verdict.value.value,
            low=verdict.value.low,
            high=verdict.value.high,
            n=verdict.value.n,
            confidence=verdict.value.confidence,
            threshold=verdict.threshold,
            passed=verdict.passed,
            figures=figures,
        )
        self.results.append(row)
        return row

    @property
    def counters(self) -> dict[str, int]:
        """Work done by this process; zero for a session that never built the facade."""
        if self._facade is None:
            return {}
        return dict(self._facade.layer.counters.__dict__)

    @property
    def total_counters(self) -> dict[str, int]:
        """This process's work plus what xdist workers reported."""
        total = dict(self.counters)
        for name, count in self.worker_counters.items():
            total[name] = total.get(name, 0) + count
        return total


SESSION_KEY = pytest.StashKey[T2ISession]()


def start_session(config: pytest.Config) -> T2ISession:
    session = T2ISession(config=config, settings=read_settings(config))
    config.stash[SESSION_KEY] = session
    return session


def session_of(config: pytest.Config) -> T2ISession:
    return config.stash[SESSION_KEY]
