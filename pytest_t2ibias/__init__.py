"""pytest-t2ibias: fairness tests for text-to-image models, as pytest checks."""

from pytest_t2ibias._types import ABSTAINED
from pytest_t2ibias._types import FILTERED
from pytest_t2ibias._types import Answers
from pytest_t2ibias._types import Estimate
from pytest_t2ibias._types import GeneratedImage
from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias._types import ImageSet
from pytest_t2ibias.assertions import assert_entropy_below
from pytest_t2ibias.assertions import assert_open_set
from pytest_t2ibias.assertions import evaluate_intervention_improves
from pytest_t2ibias.assertions import evaluate_judge_agrees
from pytest_t2ibias.assertions import evaluate_max_skew_below
from pytest_t2ibias.assertions import evaluate_open_set
from pytest_t2ibias.assertions import assert_is_nonnegative
from pytest_t2ibias.assertions import assert_no_bgps_prompt_exceeds
from pytest_t2ibias.assertions import assert_no_regression
from pytest_t2ibias.assertions import assert_w1_below
from pytest_t2ibias.assertions import evaluate_entropy_below
from pytest_t2ibias.assertions import evaluate_is_nonnegative
from pytest_t2ibias.assertions import evaluate_no_bgps_prompt_exceeds
from pytest_t2ibias.assertions import evaluate_no_regression
from pytest_t2ibias.assertions import evaluate_w1_below
from pytest_t2ibias.kinds import CheckContext
from pytest_t2ibias.kinds import CheckKind
from pytest_t2ibias.kinds import Param
from pytest_t2ibias.kinds import register_check
from pytest_t2ibias.metrics import Distribution
from pytest_t2ibias.methods.bgps import BGPSGateResult
from pytest_t2ibias.methods.bgps import MeasuredPrompt
from pytest_t2ibias.metrics import ISMatrix
from pytest_t2ibias.verdict import CheckFailed
from pytest_t2ibias.verdict import Verdict

__all__ = [
    "ABSTAINED",
    "FILTERED",
    "Answers",
    "BGPSGateResult",
    "CheckContext",
    "CheckFailed",
    "CheckKind",
    "Distribution",
    "Estimate",
    "GeneratedImage",
    "ISMatrix",
    "ImageRequest",
    "ImageSet",
    "MeasuredPrompt",
    "Param",
    "Verdict",
    "assert_entropy_below",
    "assert_is_nonnegative",
    "assert_no_bgps_prompt_exceeds",
    "assert_no_regression",
    "assert_open_set",
    "assert_w1_below",
    "evaluate_entropy_below",
    "evaluate_intervention_improves",
    "evaluate_judge_agrees",
    "evaluate_max_skew_below",
    "evaluate_is_nonnegative",
    "evaluate_no_bgps_prompt_exceeds",
    "evaluate_no_regression",
    "evaluate_open_set",
    "evaluate_w1_below",
    "register_check",
]
