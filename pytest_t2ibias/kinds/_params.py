"""The validators of the kinds' own parameters (the typed ``Params`` machinery and the
parameters every kind takes live in ``pytest_t2ibias.params``, a value below the kinds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..params import (
    AXIS_LIST,
    COMMON_PARAMS,
    NUMBER,
    TEXT_SCHEMA,
    Param,
    Params,
    build,
    check_at_least_one,
    check_burden,
    check_confidence,
    check_images,
    check_judge_correction,
    check_margin,
    check_unit_interval,
    constraint,
    declared,
    param,
    params_class,
)

if TYPE_CHECKING:
    from ..suite_spec import AxisSpec

__all__ = ["AXIS_LIST", "COMMON_PARAMS", "TEXT_SCHEMA", "constraint", "NUMBER", "Param", "Params", "build",
           "check_at_least_one", "check_burden", "check_confidence", "check_images",
           "check_judge_correction", "check_margin", "check_unit_interval", "declared", "param",
           "params_class"]


INDEX_COST_DOC = (
    "true: W1 over the categories' indices on every axis (BiasConnect's Eq. 1, the paper "
    "protocol's), so moving mass from the first of four nominal values to the last costs 3; "
    "false: positional cost on ordered axes, 0/1 on nominal ones (indices order a nominal "
    "axis arbitrarily)")


def with_index_cost(suite: Any) -> Any:
    """``suite`` with every axis costed by index (``ordered``), as BiasConnect's Eq. 1 costs
    them: what ``index_cost: true`` reads W1 through in the kinds that take a whole suite."""
    from dataclasses import replace

    return replace(suite, axes={name: replace(axis, ordered=True)
                                for name, axis in suite.axes.items()})


@constraint({"minProperties": 1, "additionalProperties": {"type": "number", "minimum": 0},
             "not": {"additionalProperties": {"maximum": 0}}},
            "mapping axis → weight ≥ 0 (one > 0)")
def check_priority(value: Any) -> str | None:
    weights = list(value.values())
    if any(not isinstance(w, (int, float)) or isinstance(w, bool) for w in weights):
        return "must map axes to numbers (weights)"
    if any(w < 0 for w in weights):
        return f"weights must be >= 0, got {value}"
    if not any(w > 0 for w in weights):
        return "needs at least one positive weight"
    return None


ALERT_ON = ("prioritised", "any")


@constraint({"enum": list(ALERT_ON)}, "`prioritised` or `any`")
def check_alert_on(value: Any) -> str | None:
    return None if value in ALERT_ON else f"must be one of {', '.join(ALERT_ON)}, got {value!r}"


KNOWLEDGE_BASE_MODES = ("floor", "off", "only")
SEVERITY_CONTEXTS = ("context_free", "context_aware", "worst_caption")


@constraint({"enum": list(KNOWLEDGE_BASE_MODES)}, "`floor`, `off` or `only`")
def check_knowledge_base(value: Any) -> str | None:
    return None if value in KNOWLEDGE_BASE_MODES else (
        f"must be one of {', '.join(KNOWLEDGE_BASE_MODES)}, got {value!r}")


@constraint({"enum": list(SEVERITY_CONTEXTS)},
            "`context_free`, `context_aware` or `worst_caption`")
def check_severity_context(value: Any) -> str | None:
    return None if value in SEVERITY_CONTEXTS else (
        f"must be one of {', '.join(SEVERITY_CONTEXTS)}, got {value!r}")


@constraint({"properties": {"axis": {"type": "string"}, "value": {"type": "string"}},
             "required": ["axis", "value"], "additionalProperties": False},
            "`{axis: NAME, value: CHOICE}`")
def check_target(value: Any) -> str | None:
    keys = set(value) if isinstance(value, dict) else set()
    if keys != {"axis", "value"} or not all(isinstance(value[k], str) for k in keys):
        return "must be a mapping {axis: NAME, value: CHOICE}, e.g. {axis: gender, value: male}"
    return None


def check_target_in_suite(value: Any, axes: Mapping[str, AxisSpec]) -> str | None:
    axis = axes.get(value["axis"])
    if axis is None:
        return f"names unknown axis {value['axis']!r} (axes: {', '.join(axes)})"
    if value["value"] not in axis.choices:
        return (f"value {value['value']!r} is not a choice of axis {axis.name!r} "
                f"(choices: {', '.join(axis.choices)})")
    return None


@constraint({"exclusiveMinimum": 0}, "> 0")
def check_positive(value: Any) -> str | None:
    return None if value > 0 else f"must be > 0, got {value}"


@constraint({"minimum": 0}, "≥ 0")
def check_non_negative(value: Any) -> str | None:
    return None if value >= 0 else f"must be >= 0, got {value}"


@constraint({"items": TEXT_SCHEMA, "minItems": 1}, "list of non-empty strings")
def check_text_list(value: Any) -> str | None:
    if not value or not all(isinstance(v, str) and v.strip() for v in value):
        return "must be a non-empty list of non-empty strings"
    return None


@constraint({"items": TEXT_SCHEMA, "minItems": 2, "maxItems": 2, "uniqueItems": True},
            "two different non-empty strings")
def check_text_pair(value: Any) -> str | None:
    """Two different captions, in order (``image_quality``'s ``antonyms``: positive, negative)."""
    problem = check_text_list(value)
    if problem:
        return problem
    if len(value) != 2 or value[0].strip() == value[1].strip():
        return ("must be two different captions, the positive then the negative "
                "(e.g. [Sharp photo., Blurry photo.])")
    return None


@constraint({"minProperties": 1, "additionalProperties": {"type": "number", "exclusiveMinimum": 0}},
            "mapping value → share > 0")
def check_shares(value: Any) -> str | None:
    if not value or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                            for v in value.values()):
        return "must map values to positive shares, e.g. {male: 0.5, female: 0.5}"
    return None


ENTIGEN_OVER = ("prompt", "category")
"""What ``intervention_improves``' Eq. 1 is over: one subject's prompt, or the check's
subjects' prompts together (the paper's category)."""


@constraint({"enum": list(ENTIGEN_OVER)}, "`prompt` or `category`")
def check_entigen_over(value: Any) -> str | None:
    return None if value in ENTIGEN_OVER else f"must be one of {', '.join(ENTIGEN_OVER)}, got {value!r}"


BGPS_STATISTICS = ("worst", "mean")
"""What ``no_bgps_prompt_exceeds`` gates on: the worst found prompt, or the paper's mean."""


@constraint({"enum": list(BGPS_STATISTICS)}, "`worst` or `mean`")
def check_bgps_statistic(value: Any) -> str | None:
    return None if value in BGPS_STATISTICS else f"must be one of {', '.join(BGPS_STATISTICS)}, got {value!r}"


@constraint({"enum": ["mean_log", "log_mean"]}, "`mean_log` or `log_mean`")
def check_probe_term(value: Any) -> str | None:
    from ..methods.bgps import PROBE_TERMS

    return None if value in PROBE_TERMS else f"must be one of {', '.join(PROBE_TERMS)}, got {value!r}"


@constraint({"minLength": 1}, "`project`, `paper`, `paper_biased`, or the instruction's own text")
def check_bgps_instruction(value: Any) -> str | None:
    return None if value.strip() else "must be project, paper, paper_biased or an instruction's text"


@constraint({"enum": ["occupation", "context", "place", "object", "activity"]},
            "`occupation`, `context`, `place`, `object` or `activity`")
def check_bgps_scenario(value: Any) -> str | None:
    from ..methods.bgps import SCENARIOS

    return None if value in SCENARIOS else f"must be one of {', '.join(SCENARIOS)}, got {value!r}"


@constraint({"items": {"type": "number", "minimum": 0}, "minItems": 1}, "list of numbers ≥ 0")
def check_lambda_list(value: Any) -> str | None:
    if not value or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                            for v in value):
        return "must be a non-empty list of numbers >= 0, e.g. [1, 100]"
    return None


@constraint({"exclusiveMinimum": 0.5, "maximum": 1}, "in (0.5, 1]")
def check_complete_above(value: Any) -> str | None:
    return None if 0.5 < value <= 1 else f"must be in (0.5, 1], got {value}"
