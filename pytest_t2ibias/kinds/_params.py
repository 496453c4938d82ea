"""The parameters every kind shares, and the validators the kinds' parameters use.

A validator returns None for a good value, else the message the suite loader reports at the
parameter's file:line; ``docgen/reference_data.py`` gives each its JSON Schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._settings import JUDGE_CORRECTIONS
from ..budgets import MAX_IMAGES_PER_PROMPT
from ._base import Param

if TYPE_CHECKING:
    from ..spec import AxisSpec


NUMBER = (int, float)
AXIS_LIST = (list,)


def check_unit_interval(value: Any) -> str | None:
    return None if 0.0 <= float(value) <= 1.0 else f"must lie in [0, 1], got {value}"


def check_confidence(value: Any) -> str | None:
    return None if 0.5 <= float(value) < 1.0 else f"must lie in [0.5, 1), got {value}"


def check_at_least_one(value: Any) -> str | None:
    return None if value >= 1 else f"must be at least 1, got {value}"




def check_images(value: Any) -> str | None:
    if isinstance(value, dict):
        cap = value.get("max")
        if set(value) != {"max"} or not isinstance(cap, int) or isinstance(cap, bool):
            return ("must be a number, auto, or {max: N} (adaptive: rounds of 16, 32, ... "
                    f"images per prompt up to N), got {value!r}")
        if not 1 <= cap <= MAX_IMAGES_PER_PROMPT:
            return f"max must lie in [1, {MAX_IMAGES_PER_PROMPT:,}], got {cap:,}"
        return None
    if isinstance(value, str):
        return None if value == "auto" else f"must be a number or auto, got {value!r}"
    if value > MAX_IMAGES_PER_PROMPT:
        return f"must be at most {MAX_IMAGES_PER_PROMPT:,}, got {value:,}"
    return check_at_least_one(value)


def check_margin(value: Any) -> str | None:
    return None if 0.0 < float(value) < 1.0 else f"must lie in (0, 1), got {value}"


def check_priority(value: Any) -> str | None:
    weights = list(value.values())
    if any(not isinstance(w, (int, float)) or isinstance(w, bool) for w in weights):
        return "must map axes to numbers (weights)"
    if any(w < 0 for w in weights):
        return f"weights must be >= 0, got {value}"
    if not any(w > 0 for w in weights):
        return "needs at least one positive weight"
    return None


KNOWLEDGE_BASE_MODES = ("floor", "off", "only")
SEVERITY_CONTEXTS = ("context_free", "context_aware")


def check_knowledge_base(value: Any) -> str | None:
    return None if value in KNOWLEDGE_BASE_MODES else (
        f"must be one of {', '.join(KNOWLEDGE_BASE_MODES)}, got {value!r}")


def check_severity_context(value: Any) -> str | None:
    return None if value in SEVERITY_CONTEXTS else (
        f"must be one of {', '.join(SEVERITY_CONTEXTS)}, got {value!r}")


def check_judge_correction(value: Any) -> str | None:
    return None if value in JUDGE_CORRECTIONS else (
        f"must be one of {', '.join(JUDGE_CORRECTIONS)}, got {value!r}")


def check_burden(value: Any) -> str | None:
    return None if value in ("model", "check") else f"must be model or check, got {value!r}"


COMMON_PARAMS = (
    Param("confidence", NUMBER, check=check_confidence,
          doc="gate on the interval at this level (and compute it at this level)"),
    Param("burden", (str,), check=check_burden,
          doc="model: an interval across the limit fails (default); check: it passes"),
    Param("judge_correction", (str,), check=check_judge_correction,
          doc="on (default): shares corrected for the judge's measured confusion (a labelled "
              "folder's fully, counterfactual images' as bounds); full: counterfactual "
              "calibrations fully too; off: the judge's labels as truth"),
    Param("images_per_prompt", (int, str, dict), check=check_images,
          doc="images per prompt for this check only (more images, a tighter interval), or "
              "auto: as many as deciding the threshold needs (power planning), or {max: N}: "
              "adaptive, in rounds of 16, 32, 64 ... up to N images per prompt, stopping once "
              "the interval (valid under stopping) is decided (gated w1_below, entropy_below, "
              "max_skew_below, is_nonnegative, no_regression, intervention_improves, intermit, "
              "open_set and no_bgps_prompt_exceeds checks); default: the suite's"),
    Param("margin", NUMBER, check=check_margin,
          doc="power planning: the check must decide when the truth is this far from its "
              "threshold (default 0.1)"),
)


def check_target(value: Any) -> str | None:
    keys = set(value) if isinstance(value, dict) else set()
    if keys != {"axis", "value"} or not all(isinstance(value[k], str) for k in keys):
        return "must be a mapping {axis: NAME, value: CHOICE}, e.g. {axis: gender, value: male}"
    return None


def check_target_in_suite(value: Any, axes: dict[str, AxisSpec]) -> str | None:
    axis = axes.get(value["axis"])
    if axis is None:
        return f"names unknown axis {value['axis']!r} (axes: {', '.join(axes)})"
    if value["value"] not in axis.choices:
        return (f"value {value['value']!r} is not a choice of axis {axis.name!r} "
                f"(choices: {', '.join(axis.choices)})")
    return None


def check_positive(value: Any) -> str | None:
    return None if value > 0 else f"must be > 0, got {value}"


def check_non_negative(value: Any) -> str | None:
    return None if value >= 0 else f"must be >= 0, got {value}"


def check_text_list(value: Any) -> str | None:
    if not value or not all(isinstance(v, str) and v.strip() for v in value):
        return "must be a non-empty list of non-empty strings"
    return None


def check_shares(value: Any) -> str | None:
    if not value or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                            for v in value.values()):
        return "must map values to positive shares, e.g. {male: 0.5, female: 0.5}"
    return None




BGPS_STATISTICS = ("worst", "mean")
"""What ``no_bgps_prompt_exceeds`` gates on: the worst found prompt, or the paper's mean."""


def check_bgps_statistic(value: Any) -> str | None:
    return None if value in BGPS_STATISTICS else f"must be one of {', '.join(BGPS_STATISTICS)}, got {value!r}"


def check_probe_term(value: Any) -> str | None:
    from ..methods.bgps import PROBE_TERMS

    return None if value in PROBE_TERMS else f"must be one of {', '.join(PROBE_TERMS)}, got {value!r}"


def check_complete_above(value: Any) -> str | None:
    return None if 0.5 < value <= 1 else f"must be in (0.5, 1], got {value}"
