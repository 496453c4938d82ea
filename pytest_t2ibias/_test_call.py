"""What the session listens to during each test call: the verdicts the test reaches
(``verdict_sink``) and what its judges saw (``test_sightings``, for the report's image grids,
``figures.py``).

Its own small module: the session wraps every test call in both, fairness test or not, and
must not load the verdicts, numpy or the instrument to do so (issue #14).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._types import Answers


class Sightings:
    """What one check's judges saw: every answer set an instrument read (with the axis or
    question it answers) and the role whose generator made each image. Reports draw a
    check's image grid from it (``figures.py``); copies of the instrument share it."""

    def __init__(self) -> None:
        self.answers: list[tuple[str, Answers]] = []
        self.roles: dict[str, str] = {}
        """Image key -> "candidate" or "baseline"."""
        self.unread: dict[str, str] = {}
        """Prompt -> what its generator's tokenizer could not read (unknown words, cut)."""

    def saw(self, about: str, answers: Answers) -> None:
        self.answers.append((about, answers))


test_sightings: ContextVar[Sightings | None] = ContextVar("t2ibias_test_sightings",
                                                        default=None)
"""What the running Python test's judges saw: the session sets it around each test call and
the facade's instruments note into it (outside pytest: None, nothing noted)."""


verdict_sink: ContextVar[Callable[[Any], None] | None] = ContextVar(
    "t2ibias_verdict_sink", default=None)
"""Where the running test's verdicts (``verdict.Verdict``, whose module imports this one) go:
``verdict.report_verdict`` hands them here. A pytest run nested in a test (pytester) sets its
own for its own items and restores the outer one after."""


shown_per_prompt: ContextVar[int | None] = ContextVar("t2ibias_shown_per_prompt", default=8)
"""The run's ``--t2i-html-images``: images a prompt a gallery keeps (None: all); the session
sets it when it starts (``figures.gallery_figure`` reads it)."""
