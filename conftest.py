"""The repository's conftest: what a team keeps beside its suites, and where the example run
takes its hooks from.

1. The paper's suites (``example_suites/paper/``) run only on real models.
2. A team's own judge through the plugin's hooks: ``--t2i-vqa=team:brightness`` (below).
3. A generator whose images a judge misreads, for ``example_suites/toy_weak_judge.t2i.yaml``:
   ``models: {candidate: "degraded:<model>"}`` blurs and noises that model's images
   (``example_suites/weak_judge.py``), so the judges misread them as real judges misread
   real images; ``misreads-old:<model>`` degrades only images of prompts naming "old": a
   judge that misreads one group more (``toy_judge_group_bias.t2i.yaml``, issue #45).
4. A planted bad debiasing fine-tune, for ``example_suites/toy_bad_finetune.t2i.yaml``:
   ``swapped:<model>`` draws a nurse for a doctor (and back) in half the images
   (``example_suites/bad_finetune.py``): balanced shares, off-prompt images (issue #38).

``example_suites/paper/occupations.t2i.yaml`` asks about ethnicity, body type, clothing, emotion and
disability, which a toy-world model (one built by ``python -m toyworld``, like
the repo's default ``fixtures/toy-sd``) cannot draw, so it is left out of collection when
``--t2i-model`` (command line or ini) is a toy-world model: a local directory whose parent
holds the toy build's ``manifest.json``. ``T2IBIAS_PAPER_SUITES=1`` collects it anyway, and
naming a suite file explicitly on the command line always collects it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

PAPER = Path(__file__).parent / "example_suites" / "paper"


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


# -- a team's own judge: any object with the Answerer contract (backends/_base.py) ---------------


class BrightnessJudge:
    """Reads "dark" or "light" off an image's mean brightness: a stand-in for a team's own
    model, served or in-process. ``score`` returns one row of probabilities per image."""

    fingerprint = "team:brightness/1"  # in every answer's cache key: bump it when it changes

    def score(self, images, question, choices, statements=None):
        import numpy as np

        light = np.array([np.asarray(image.convert("L"), dtype=float).mean() / 255
                          for image in images])
        rows = {"dark": 1 - light, "light": light}
        return np.stack([rows.get(choice, np.full(len(images), np.nan)) for choice in choices],
                        axis=1)


def pytest_t2ibias_make_vqa(config, model):
    if model == "team:brightness":
        return BrightnessJudge()
    return None  # not ours: the next hook (finally the built-ins) makes it


# -- a generator the judges misread (issue #33's example) -----------------------------------------


def pytest_t2ibias_make_generator(config, model: str, role: str, options: dict):
    """``degraded:<model>``: the built-in generator of ``<model>`` (relative to the rootdir),
    its images degraded (``example_suites/weak_judge.DegradedGenerator``); ``misreads-old:<model>``:
    those of prompts naming "old" degraded, the planted intersectional judge bias
    (``example_suites/weak_judge.OldDegradedGenerator``); ``swapped:<model>``:
    another subject in half its images (``example_suites/bad_finetune.SwappedGenerator``);
    any other model: not ours."""
    from example_suites.bad_finetune import SwappedGenerator
    from example_suites.weak_judge import OLD_PREFIX, DegradedGenerator, OldDegradedGenerator

    wrappers = {"degraded:": DegradedGenerator, "swapped:": SwappedGenerator,
                OLD_PREFIX: OldDegradedGenerator}
    prefix = next((p for p in wrappers if model.startswith(p)), None)
    if prefix is None:
        return None
    inner = model.removeprefix(prefix)
    if not Path(inner).is_absolute() and Path(config.rootpath, inner).exists():
        inner = str(Path(config.rootpath, inner))
    return wrappers[prefix](config.hook.pytest_t2ibias_make_generator(
        config=config, model=inner, role=role, options=options))
