"""Example suites: the paper's suites (``paper/``) run only on real models.

``paper/occupations.t2i.yaml`` asks about ethnicity, body type, clothing, emotion and
disability, which the embedded toy models (``fixtures/``, the repo's ini default) cannot
draw, so it is left out of collection unless ``--t2i-model`` (command line or ini) names a
model outside ``fixtures/``, or ``T2IBIAS_PAPER_SUITES=1`` is set. Naming a suite file
explicitly on the command line always collects it.
"""

from __future__ import annotations

import os
from pathlib import Path

PAPER = Path(__file__).parent / "paper"


def pytest_ignore_collect(collection_path: Path, config):
    if collection_path != PAPER and PAPER not in collection_path.parents:
        return None
    return None if _real_generator(config) else True


def _real_generator(config) -> bool:
    if os.environ.get("T2IBIAS_PAPER_SUITES") == "1":
        return True
    from pytest_t2ibias._session import session_of

    model = session_of(config).settings.model
    if not model:
        return False
    path = Path(model) if Path(model).is_absolute() else config.rootpath / model
    return not path.resolve().is_relative_to((config.rootpath / "fixtures").resolve())
