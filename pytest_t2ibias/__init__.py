"""pytest-t2ibias: fairness tests for text-to-image models, as pytest checks.

The names below load on first use (PEP 562): pytest imports this package in every run of the
environment, fairness tests or not, and the helpers bring numpy and more (issue #14).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._exports import lazy_exports

if TYPE_CHECKING:
    from ._types import (
        ABSTAINED,
        FILTERED,
        Answers,
        Estimate,
        GeneratedImage,
        ImageRequest,
        ImageSet,
    )
    from .assertions import (
        assert_entropy_below,
        assert_is_nonnegative,
        assert_no_bgps_prompt_exceeds,
        assert_no_regression,
        assert_open_set,
        assert_w1_below,
    )
    from .kinds import CheckContext, CheckKind, Param, register_check
    from .kinds.entropy_below import evaluate_entropy_below
    from .kinds.intermit import evaluate_intermit
    from .kinds.intervention_improves import evaluate_intervention_improves
    from .kinds.is_nonnegative import evaluate_is_nonnegative
    from .kinds.judge_agrees import evaluate_judge_agrees
    from .kinds.max_skew_below import evaluate_max_skew_below
    from .kinds.no_bgps_prompt_exceeds import evaluate_no_bgps_prompt_exceeds
    from .kinds.no_regression import evaluate_no_regression
    from .kinds.open_set import evaluate_open_set
    from .kinds.w1_below import evaluate_w1_below
    from .methods.bgps import BGPSGateResult, MeasuredPrompt
    from .metrics import Distribution, ISMatrix
    from .params import Params, param
    from .verdict import CheckFailed, Verdict

_HOME = {
    "ABSTAINED": "pytest_t2ibias._types",
    "FILTERED": "pytest_t2ibias._types",
    "Answers": "pytest_t2ibias._types",
    "Estimate": "pytest_t2ibias._types",
    "GeneratedImage": "pytest_t2ibias._types",
    "ImageRequest": "pytest_t2ibias._types",
    "ImageSet": "pytest_t2ibias._types",
    "assert_entropy_below": "pytest_t2ibias.assertions",
    "assert_open_set": "pytest_t2ibias.assertions",
    "evaluate_intermit": "pytest_t2ibias.kinds.intermit",
    "evaluate_intervention_improves": "pytest_t2ibias.kinds.intervention_improves",
    "evaluate_judge_agrees": "pytest_t2ibias.kinds.judge_agrees",
    "evaluate_max_skew_below": "pytest_t2ibias.kinds.max_skew_below",
    "evaluate_open_set": "pytest_t2ibias.kinds.open_set",
    "assert_is_nonnegative": "pytest_t2ibias.assertions",
    "assert_no_bgps_prompt_exceeds": "pytest_t2ibias.assertions",
    "assert_no_regression": "pytest_t2ibias.assertions",
    "assert_w1_below": "pytest_t2ibias.assertions",
    "evaluate_entropy_below": "pytest_t2ibias.kinds.entropy_below",
    "evaluate_is_nonnegative": "pytest_t2ibias.kinds.is_nonnegative",
    "evaluate_no_bgps_prompt_exceeds": "pytest_t2ibias.kinds.no_bgps_prompt_exceeds",
    "evaluate_no_regression": "pytest_t2ibias.kinds.no_regression",
    "evaluate_w1_below": "pytest_t2ibias.kinds.w1_below",
    "CheckContext": "pytest_t2ibias.kinds",
    "CheckKind": "pytest_t2ibias.kinds",
    "Param": "pytest_t2ibias.kinds",
    "Params": "pytest_t2ibias.params",
    "param": "pytest_t2ibias.params",
    "register_check": "pytest_t2ibias.kinds",
    "Distribution": "pytest_t2ibias.metrics",
    "BGPSGateResult": "pytest_t2ibias.methods.bgps",
    "MeasuredPrompt": "pytest_t2ibias.methods.bgps",
    "ISMatrix": "pytest_t2ibias.metrics",
    "CheckFailed": "pytest_t2ibias.verdict",
    "Verdict": "pytest_t2ibias.verdict",
}
"""Where each public name lives: the one table the exports are read from."""

__all__ = sorted(_HOME)


__getattr__, __dir__ = lazy_exports(__name__, _HOME)
