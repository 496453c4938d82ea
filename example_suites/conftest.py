"""Example suites: the paper's suites (``paper/``) run only on real models.

``paper/occupations.t2i.yaml`` asks about ethnicity, body type, clothing, emotion and
disability, which a toy-world model (one built by ``python -m toyworld``, like
the repo's default ``fixtures/toy-sd``) cannot draw, so it is left out of collection when
``--t2i-model`` (command line or ini) is a toy-world model: a local directory whose parent
holds the toy build's ``manifest.json``. ``T2IBIAS_PAPER_SUITES=1`` collects it anyway, and
naming a suite file explicitly on the command line always collects it.

``toy_weak_judge.t2i.yaml`` draws with ``models: {candidate: "degraded:<model>"}``: this
conftest's generator hook blurs and noises that model's images (``weak_judge.py``), so the
judges misread them as real judges misread real images.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

PAPER = Path(__file__).parent / "paper"


def pytest_t2ibias_make_generator(config, model: str, role: str, options: dict):
    """``degraded:<model>``: the built-in generator of ``<model>`` (relative to the rootdir),
    its images degraded (``weak_judge.DegradedGenerator``); any other model: not ours."""
    from weak_judge import PREFIX, DegradedGenerator

    if not model.startswith(PREFIX):
        return None
    inner = model.removeprefix(PREFIX)
    if not Path(inner).is_absolute() and Path(config.rootpath, inner).exists():
        inner = str(Path(config.rootpath, inner))
    return DegradedGenerator(config.hook.pytest_t2ibias_make_generator(
        config=config, model=inner, role=role, options=options))


def pytest_ignore_collect(collection_path: Path, config):
    if collection_path != PAPER and PAPER not in collection_path.parents:
        return None
    if os.environ.get("T2IBIAS_PAPER_SUITES") == "1":
        return None
    from pytest_t2ibias._session import session_of

    model = session_of(config).settings.model
    return True if not model or is_toy_world_model(Path(config.rootpath, model)) else None


def is_toy_world_model(path: Path) -> bool:
    """True for a pipeline directory written by the toy-world build (its manifest says so)."""
    manifest = path.parent / "manifest.json"
    try:
        return path.is_dir() and path.name in json.loads(manifest.read_text()).get("models", {})
    except (OSError, ValueError, AttributeError):
        return False
