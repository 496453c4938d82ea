"""Hooks a ``conftest.py`` implements to supply its own models (e.g. an HTTP API).

Each is ``firstresult``: the first implementation that returns non-None wins. The built-in
Hugging Face backends are registered ``trylast``, so a user's hook always comes first.
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("pytest")


@hookspec(firstresult=True)
def pytest_t2ibias_make_generator(config, model: str, role: str, options: dict):
    """Return a ``Generator`` for ``model`` (``role`` is "candidate" or "baseline";
    ``options``: its loading keywords, from ``--t2i-model-option`` or the suite's
    ``models.<role>.options``, ``{}`` when none; an implementation may leave it out)."""


@hookspec(firstresult=True)
def pytest_t2ibias_make_vqa(config, model: str):
    """Return an ``Answerer`` answering free multiple-choice questions about images."""


@hookspec(firstresult=True)
def pytest_t2ibias_make_classifier(config, axis: str, model: str):
    """Return an ``Answerer`` for one axis (its ``score`` may ignore the question)."""


@hookspec(firstresult=True)
def pytest_t2ibias_make_llm(config, model: str):
    """Return a ``LanguageModel``."""
