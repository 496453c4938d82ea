"""Per-process session state, kept in ``config.stash``: settings, backends, cache, results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ._options import Settings, read_settings
from .verdict import Verdict


@dataclass
class ItemResult:
    nodeid: str
    verdict: Verdict


@dataclass
class T2ISession:
    config: pytest.Config
    settings: Settings
    results: list[ItemResult] = field(default_factory=list)
    _facade: Any = None

    @property
    def facade(self):
        """The ``t2ibias`` facade; built on first use so collection never loads a model."""
        if self._facade is None:
            from .facade import T2IBias

            self._facade = T2IBias.from_session(self)
        return self._facade

    def record(self, nodeid: str, verdict: Verdict) -> None:
        self.results.append(ItemResult(nodeid, verdict))


SESSION_KEY = pytest.StashKey[T2ISession]()


def start_session(config: pytest.Config) -> T2ISession:
    session = T2ISession(config=config, settings=read_settings(config))
    config.stash[SESSION_KEY] = session
    return session


def session_of(config: pytest.Config) -> T2ISession:
    return config.stash[SESSION_KEY]
