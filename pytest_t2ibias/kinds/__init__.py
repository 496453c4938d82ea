"""Check kinds: what a ``checks:`` entry of a suite may say and how it runs, one kind a module.

Each module declares one ``CheckKind`` (``KIND``): its parameters and docs, its run (one
method measured through the item's instrument, then judged), its ``evaluate_*``, the requests
it can name up front (prefetch), its power model and its figure. The methods load when an
item first runs, so declaring and validating a suite never imports them.
``register_check(CheckKind(...))`` gives a user's kind the same place (pytest-xdist's
``scheduler/`` is the model: one policy a module behind one type).
"""

from __future__ import annotations

from importlib import import_module

from .._settings import ADAPTIVE_KINDS
from ._base import (
    CHECK_KINDS,
    CheckContext,
    CheckKind,
    PlannedItem,
    register_check,
    work_of,
)
from ._params import COMMON_PARAMS, NUMBER, Param, Params, param
from ._work import Draw, Work, deciding_prompts, planned

__all__ = [
    "BUILTIN_KINDS",
    "BUILTIN_MODULES",
    "CHECK_KINDS",
    "COMMON_PARAMS",
    "NUMBER",
    "CheckContext",
    "CheckKind",
    "Draw",
    "Param",
    "Params",
    "PlannedItem",
    "Work",
    "deciding_prompts",
    "filled_in",
    "param",
    "planned",
    "work_of",
    "register_check",
]

BUILTIN_MODULES: tuple[str, ...] = (
    "entropy_below",
    "w1_below",
    "is_nonnegative",
    "no_regression",
    "intermit",
    "no_bgps_prompt_exceeds",
    "open_set",
    "max_skew_below",
    "judge_agrees",
    "judge_across_groups",
    "intervention_improves",
    "prompt_alignment",
    "vendi_diversity",
    "image_quality",
    "distribution_shift",
    "erasure",
)
"""The built-in kinds' modules, one line a kind, in the YAML reference's order: a new kind is
its module plus its line here (the names, classes and exports below follow from it)."""

for _module in BUILTIN_MODULES:
    register_check(import_module(f"{__name__}.{_module}").KIND)


def filled_in(text: str) -> str:
    """A help text or doc with the kinds it names read from the registry: ``<adaptive
    kinds>`` (``_settings.ADAPTIVE_KINDS``) becomes the kinds that sample in rounds."""
    names = [name for name, kind in CHECK_KINDS.items() if kind.adaptive]
    words = ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1] \
        if names else "(none)"
    return text.replace(ADAPTIVE_KINDS, words)


BUILTIN_KINDS: tuple[str, ...] = tuple(CHECK_KINDS)
"""The kinds this package declares, in the YAML reference's order (before any
``register_check`` of a user or a test)."""
