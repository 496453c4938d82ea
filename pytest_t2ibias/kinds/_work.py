"""What one item draws, described once: ``Work``, from its kind's ``work(item)``, folded over
by every planner (the session's prefetch, the run's progress total, ``--t2i-plan``'s prompts
and its judge-calibration images).

A kind names the images it knows up front (``Work.planned``: prefetched, counted, listed),
and, when it does more than that (a search choosing its prompts, OpenBias' judge audit), an
estimate of everything it computes (``Work.expected``: the progress total and ETA).
``kinds._base.work_of`` is the one place an item's work is worked out: a failure there (an LLM-phrased
axis before its lock) is kept on the ``Work``, never dropped, and each planner says so while
the item's own run reports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..plan import Plan
    from ..suite_spec import AxisSpec, Suite


class Planned(Protocol):
    """What ``planned`` reads of an item (``kinds.PlannedItem``)."""

    @property
    def plan(self) -> Plan: ...


class Subjected(Protocol):
    """What ``deciding_prompts`` reads of an item (``kinds.PlannedItem``)."""

    @property
    def suite(self) -> Suite: ...

    @property
    def subject(self) -> str: ...


@dataclass(frozen=True)
class Draw:
    """The first ``images`` images of one prompt on one model role, and what is asked of each.

    ``axes``: the axes read off them (planned draws: prefetch answers them through the
    instrument, as the check will); ``questions``: what an estimate says is asked (one answer
    each; the run's progress counts them). ``role`` None: images that exist (a folder)."""

    role: str | None
    prompt: str
    images: int
    axes: tuple[AxisSpec, ...] = ()
    questions: tuple[str, ...] = ()
    own: bool = True
    """Whether the prompt is the kind's own, so a word of it the generator cannot read makes
    the check inconclusive (``deciding_prompts``). False: a prompt the kind did not write (a
    search's find, an LLM's, a judge audit's or calibration's) or a placeholder for one."""


@dataclass(frozen=True)
class Work:
    """What one item draws, as far as its plan knows."""

    planned: tuple[Draw, ...] = ()
    """Named up front: prefetched, counted, listed by ``--t2i-plan -v``."""
    expected: tuple[Draw, ...] | None = None
    """An estimate of everything the item computes (search placeholders for prompts it will
    choose); None: ``planned`` is all of it."""
    listed: tuple[tuple[str, str, int], ...] | None = None
    """(role, prompt, images) for ``--t2i-plan -v`` where ``planned`` does not say it (the
    judge audit's prompts from a lock); None: ``planned``'s."""
    calibration: tuple[Draw, ...] = ()
    """The planned draws that calibrate the item's judge (``kinds._judge.calibration_needs``),
    also in ``planned``: ``--t2i-plan`` counts their images apart."""
    error: BaseException | None = field(default=None, compare=False)
    """Why the work could not be worked out (the item's run reports it)."""

    @property
    def own(self) -> tuple[Draw, ...]:
        """The planned draws of the kind's own prompts (``planned`` less the calibration's,
        which come last)."""
        return self.planned[:len(self.planned) - len(self.calibration)]

    @property
    def deciding(self) -> tuple[Draw, ...]:
        """The draws whose unread words decide the check (issue #47): ``own`` and every
        ``expected`` draw the kind did not mark ``own=False``."""
        return (*self.own, *(d for d in self.expected or () if d.own and d.role is not None))

    @property
    def searches(self) -> bool:
        """Whether the item decides its prompts as it runs (nothing planned up front)."""
        return not self.planned and self.listed is None

    @property
    def complete(self) -> bool:
        """Whether ``planned`` is everything the item draws."""
        return self.expected is None and self.error is None

    def at(self, images: int, full: int) -> Work:
        """This work at an adaptive look of ``images`` a prompt, for a plan of ``full``: each
        own draw of ``full`` images drawn at the look (the calibration's are fixed), so the
        look's work is its item's, scaled, not worked out again (#42)."""
        if images == full:
            return self
        own = tuple(replace(draw, images=images) if draw.images == full else draw
                    for draw in self.own)
        return replace(self, planned=(*own, *self.calibration))

    def prompts(self) -> list[tuple[str, str, int]] | None:
        """(role, prompt, images) as ``--t2i-plan -v`` lists them; None: a search."""
        if self.listed is not None:
            return list(self.listed)
        if not self.planned:
            return None
        return [(d.role or "", d.prompt, d.images) for d in self.planned]


def planned(item: Planned, needs: list[tuple[str, list[str]]], axes: list[AxisSpec],
            *, calibration: list[Draw] | None = None) -> Work:
    """Work that is all planned: each (role, prompts) at the plan's images a prompt, ``axes``
    read off every image, then the judge's calibration draws."""
    n = item.plan.images_per_prompt
    own = [Draw(role, prompt, n, tuple(axes)) for role, prompts in needs
           for prompt in dict.fromkeys(prompts)]
    extra = tuple(calibration or ())
    return Work(planned=(*own, *extra), calibration=extra)


def deciding_prompts(item: Subjected, work: Work) -> frozenset[str]:
    """The prompts a word of which, unread by the generator, makes the item's check
    inconclusive (``figures.unread_prompts``), one rule for every kind (issue #47): the
    subject's base prompt and every prompt the kind draws (``Work.deciding``), planned or
    expected, unless the kind marks it ``own=False``."""
    base = {item.suite.prompt_for(item.subject)} if item.subject else set()
    return frozenset(base | {draw.prompt for draw in work.deciding})
