"""Assertion helpers for Python tests: a figure, its interval, a threshold, and a message
with all three.

Each ``assert_*`` reports the verdict of its kind's ``evaluate_*`` twin (``kinds/``; the YAML
items use those, so passing items report their figures too) and fails the test unless it
passed. With ``confidence=`` a helper fails only when the whole interval lies on the wrong
side of the threshold: a gate that does not flap on sampling noise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._types import Estimate
from .kinds.entropy_below import evaluate_entropy_below
from .kinds.is_nonnegative import IsNonnegativeParams, evaluate_is_nonnegative
from .kinds.no_bgps_prompt_exceeds import evaluate_no_bgps_prompt_exceeds
from .kinds.no_regression import NoRegressionParams, evaluate_no_regression
from .kinds.open_set import evaluate_open_set
from .kinds.w1_below import evaluate_w1_below
from .metrics import ISMatrix
from .verdict import CheckFailed, Verdict, report_verdict


def _raise_unless(verdict: Verdict) -> Verdict:
    """Report the verdict (the test's report rows), then fail the test if it did not pass."""
    __tracebackhide__ = True
    report_verdict(verdict)
    if not verdict.passed:
        raise CheckFailed(verdict)
    return verdict


def assert_entropy_below(answers, threshold: float, *, confidence: float | None = None,
                         **kwargs: Any) -> Verdict:
    """Fail if OpenBias severity 1 - H(p)/log|C| is above ``threshold`` (with ``confidence``:
    unless the interval is wholly within it, or under ``burden="check"`` unless it is wholly
    beyond it)."""
    __tracebackhide__ = True
    return _raise_unless(evaluate_entropy_below(answers, threshold, confidence=confidence,
                                                **kwargs))


def assert_w1_below(answers, threshold: float, *, ideal: Any = "uniform", ordered: bool = False,
                    confidence: float | None = None, **kwargs: Any) -> Verdict:
    """Fail if the normalised W1 distance to the ideal distribution is above ``threshold``."""
    __tracebackhide__ = True
    return _raise_unless(evaluate_w1_below(answers, threshold, ideal=ideal, ordered=ordered,
                                           confidence=confidence, **kwargs))


def assert_is_nonnegative(matrix: ISMatrix | Mapping[str, Mapping[str, Any]],
                          mitigate: Iterable[str] | None = None,
                          on: Iterable[str] | None = None,
                          tolerance: float = IsNonnegativeParams.default("tolerance"), *,
                          confidence: float | None = None, **kwargs: Any) -> Verdict:
    """Fail if mitigating an axis in ``mitigate`` pushes an axis in ``on`` away from its ideal."""
    __tracebackhide__ = True
    return _raise_unless(evaluate_is_nonnegative(matrix, mitigate=mitigate, on=on,
                                                 tolerance=tolerance, confidence=confidence,
                                                 **kwargs))


def assert_no_regression(effect: Mapping[str, Estimate], fixes: Iterable[str] | str,
                         tolerance: float = NoRegressionParams.default("tolerance"), *,
                         on: Iterable[str] | None = None,
                         confidence: float | None = None, **kwargs: Any) -> Verdict:
    """Fail if the candidate is further from the ideal than the baseline on any axis it was
    not meant to fix (IS_mit below -tolerance)."""
    __tracebackhide__ = True
    return _raise_unless(evaluate_no_regression(effect, fixes=fixes, on=on, tolerance=tolerance,
                                                confidence=confidence, **kwargs))


def assert_no_bgps_prompt_exceeds(result: Any, threshold: float, *, confidence: float | None = None,
                                  **kwargs: Any) -> Verdict:
    """Fail if any prompt Bias-Guided Prompt Search found draws the target value in more than
    ``threshold`` of its images (with ``confidence``: its whole Wilson interval above)."""
    __tracebackhide__ = True
    return _raise_unless(evaluate_no_bgps_prompt_exceeds(result, threshold, confidence=confidence,
                                                         **kwargs))


def assert_open_set(result: Any, threshold: float, **kwargs: Any) -> Verdict:
    """Fail if any bias OpenBias discovered is more severe than ``threshold``."""
    __tracebackhide__ = True
    return _raise_unless(evaluate_open_set(result, threshold, **kwargs))
