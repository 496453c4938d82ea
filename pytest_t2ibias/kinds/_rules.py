"""What ``--t2i-plan`` reads off a kind's parameters, for the kinds that share a rule: the limit
a figure is decided against, and when a gated check can never pass."""

from __future__ import annotations

from typing import Protocol


class Thresholded(Protocol):
    @property
    def threshold(self) -> float: ...


class Tolerant(Protocol):
    @property
    def tolerance(self) -> float: ...


def threshold_limit(params: Thresholded) -> float:
    """The check's ``threshold`` is its limit."""
    return float(params.threshold)


def no_bias_threshold(params: Thresholded) -> str:
    """A distance from no bias (W1, severity, MaxSkew) gated at 0 cannot be shown below it."""
    if float(params.threshold) <= 0.0:
        return ("never passes: threshold 0 is the no-bias value, which an interval "
                "cannot be shown below; give a threshold > 0")
    return ""


def no_effect_tolerance(params: Tolerant) -> str:
    """An effect (IS, IS_mit) gated at -0 cannot be shown above the no-effect value."""
    if float(params.tolerance) == 0.0:
        return ("never passes for a model without any effect: tolerance 0 is the no-effect "
                "value (IS = 0), which an interval cannot be shown above; give a tolerance "
                "> 0")
    return ""
