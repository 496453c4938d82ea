"""Check kinds: what a ``checks:`` entry of a suite may say and how it runs, one kind a module.

Each module declares one ``CheckKind`` (``KIND``): its parameters and docs, its run (one
method measured through the item's instrument, then judged), its ``evaluate_*``, the requests
it can name up front (prefetch), its power model and its figure. The methods load when an
item first runs, so declaring and validating a suite never imports them.
``register_check(CheckKind(...))`` gives a user's kind the same place (pytest-xdist's
``scheduler/`` is the model: one policy a module behind one type).
"""

from __future__ import annotations

from . import (
    distribution_shift,
    diversity,
    erasure,
    image_quality,
    entropy_below,
    intermit,
    intervention_improves,
    is_nonnegative,
    judge_agrees,
    max_skew_below,
    no_bgps_prompt_exceeds,
    no_regression,
    open_set,
    prompt_alignment,
    w1_below,
)
from ._base import (
    CHECK_KINDS,
    CheckContext,
    CheckKind,
    ExpectedImages,
    Param,
    PlannedItem,
    register_check,
)
from ._params import COMMON_PARAMS, NUMBER

__all__ = [
    "BUILTIN_KINDS",
    "CHECK_KINDS",
    "COMMON_PARAMS",
    "NUMBER",
    "CheckContext",
    "CheckKind",
    "ExpectedImages",
    "Param",
    "PlannedItem",
    "register_check",
]

for _module in (entropy_below, w1_below, is_nonnegative, no_regression, intermit,
                no_bgps_prompt_exceeds, open_set, max_skew_below, judge_agrees,
                intervention_improves, prompt_alignment, diversity, image_quality,
                distribution_shift, erasure):
    register_check(_module.KIND)

BUILTIN_KINDS: tuple[str, ...] = tuple(CHECK_KINDS)
"""The kinds this package declares, in the YAML reference's order (before any
``register_check`` of a user or a test)."""
