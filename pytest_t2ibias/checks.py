"""Check kinds: what a ``checks:`` entry of a suite may say, and how it is judged.

A kind declares its parameters (validated at collection, before any model loads), which
parameter names the axes its items expand over, and a ``run`` that returns a ``Verdict``.
Later methods register more kinds with ``register_check``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .suite.spec import AxisSpec, CheckSpec, Suite
    from .verdict import Verdict


@dataclass(frozen=True)
class Param:
    """One key of a check entry. ``types`` as for ``isinstance``; ``check`` may reject a value
    with a message (returned string) after the type matched."""

    name: str
    types: tuple[type, ...]
    required: bool = False
    default: Any = None
    check: Callable[[Any], str | None] | None = None
    doc: str = ""


@dataclass(frozen=True)
class CheckContext:
    """Everything one item needs: its spec, where it sits in the suite, and the facade."""

    check: CheckSpec
    suite: Suite
    subject: str
    axis: AxisSpec | None
    t2ibias: Any


@dataclass(frozen=True)
class CheckKind:
    name: str
    run: Callable[[CheckContext], Verdict]
    params: tuple[Param, ...] = ()
    axes_param: str | None = "axes"
    """Parameter listing the axes to expand items over (one item per subject x axis);
    None for kinds with one item per subject."""
    doc: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


CHECK_KINDS: dict[str, CheckKind] = {}


def register_check(kind: CheckKind) -> CheckKind:
    if kind.name in CHECK_KINDS:
        raise ValueError(f"check kind {kind.name!r} is already registered")
    CHECK_KINDS[kind.name] = kind
    return kind


def _unit_interval(value: Any) -> str | None:
    return None if 0.0 <= float(value) <= 1.0 else f"must lie in [0, 1], got {value}"


def _confidence(value: Any) -> str | None:
    return None if 0.5 <= float(value) < 1.0 else f"must lie in [0.5, 1), got {value}"


NUMBER = (int, float)
AXIS_LIST = (list,)
COMMON_PARAMS = (
    Param("confidence", NUMBER, check=_confidence,
          doc="fail only when the whole CI is on the wrong side of the threshold"),
)
