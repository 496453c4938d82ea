"""Minimal suite and check specs for plan and gate tests."""

from __future__ import annotations

from pathlib import Path

from pytest_t2ibias.suite_spec import CheckSpec, Location, Suite


def suite(**fields) -> Suite:
    return Suite(name="s", path=Path("s.t2i.yaml"), prompt="a photo of a {subject}",
                 subjects=("doctor",), axes={}, checks=(), **fields)


def check(**params) -> CheckSpec:
    from pytest_t2ibias.kinds.w1_below import W1BelowParams

    return CheckSpec(id="c", kind="w1_below",
                     params=W1BelowParams(axes=("gender",), threshold=0.5, **params),
                     axes=("gender",),
                     subjects=("doctor",), location=Location(Path("s.t2i.yaml"), 3))


