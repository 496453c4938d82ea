"""What a check kind is: its parameters, its run, and what the rest of the plugin may ask of
it (the requests it can name up front, its power model, its figure) — and the registry.

A kind is one module of this package (``w1_below.py`` ...), declaring one ``CheckKind``; a
user's kind is the same object given to ``register_check``, with the same powers: prefetch,
power planning and the HTML figure read these fields, never a kind's name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from ..params import Param, Params, declared, params_class
from ._work import Work

if TYPE_CHECKING:
    from ..figures import Interval, Table
    from ..instrument import Instrument
    from ..plan import Levels, Plan
    from ..suite_spec import AxisSpec, CheckSpec, Suite
    from ..verdict import Verdict
    from ._work import Work


P = TypeVar("P", bound=Params)


@dataclass(frozen=True)
class CheckContext(Generic[P]):
    """What one item's ``run`` receives: where it sits in its suite, how it samples (and who
    carries the burden of proof: ``plan.burden``), and the instrument to measure with.

    ``levels`` are the item's two confidence levels (``plan.Levels``): ``levels.gate`` is the
    level the check gates at (its ``confidence:``, adjusted for the family of gated checks
    under ``--t2i-family``; None decides on the point value) and ``levels.interval`` the level
    every interval is computed at. ``n_resamples`` is the bootstrap size."""

    check: CheckSpec
    suite: Suite
    subject: str
    axis: AxisSpec | None
    plan: Plan
    instrument: Instrument
    levels: Levels
    n_resamples: int
    phrase: Callable[[Suite, str], Suite]
    """Fills in a suite's ``counterfactuals: llm`` axes for one subject (its lock file)."""
    progress: Callable[[str], None] | None = None
    """Where a long run (a BGPS search) reports one line per step; None: quiet."""
    bgps_locks: Any = None
    """The suites' BGPS lock files (``locks.bgps.BGPSLocks``) for ``no_bgps_prompt_exceeds``."""

    @property
    def params(self) -> P:
        """The check's parameters, as its kind's ``Params`` (built by the suite loader), under
        the plan's protocol (``protocol_params``)."""
        return cast(P, protocol_params(self.check, self.plan))

    @property
    def confidence(self) -> float | None:
        """The level the check gates at (None: a point decision)."""
        return self.levels.gate

    @property
    def interval_confidence(self) -> float:
        """The level every interval of the check is computed at."""
        return self.levels.interval

    @property
    def label(self) -> str:
        """``subject/axis``, or the subject for kinds without axes."""
        return f"{self.subject}/{self.axis.name}" if self.axis else self.subject

    def counterfactual_suite(self) -> Suite:
        """The suite with every counterfactual prompt written out for this subject."""
        return self.phrase(self.suite, self.subject)


@dataclass(frozen=True)
class PlannedItem:
    """One selected item, as the session's prefetch and power planning see it."""

    suite: Suite
    check: CheckSpec
    subject: str
    axis: AxisSpec | None
    plan: Plan

    def params_as(self, cls: type[P]) -> P:
        """The check's parameters as its kind's ``Params`` (the loader built them so)."""
        if not isinstance(self.check.params, cls):
            raise TypeError(f"check {self.check.id!r}: parameters are "
                            f"{type(self.check.params).__name__}, not {cls.__name__}")
        return cast(P, protocol_params(self.check, self.plan))


def axis_of(ctx: CheckContext[Any]) -> AxisSpec:
    """The item's axis, for a kind that expands over axes (``axes_param``): every item of it
    has one (``ctx.axis`` is None only for kinds without axes)."""
    if ctx.axis is None:
        raise TypeError(f"check {ctx.check.id!r}: its kind runs per axis, and this item has none")
    return ctx.axis


Run = Callable[[CheckContext[Any]], "Verdict"]
WorkOf = Callable[[PlannedItem], "Work"]


@dataclass(frozen=True)
class CheckKind:
    """A check kind: what a ``checks:`` entry of this ``name`` may say, and how it runs.

    Only ``name`` and ``run`` are required; each other field lets the kind take part in one
    more piece of the plugin."""

    name: str
    run: Run
    params: type[Params] = Params
    """The kind's ``Params`` dataclass: its keys, their types, defaults, validators and docs
    (a tuple of ``Param``, the 0.1.0 form, is turned into one)."""
    axes_param: str | None = "axes"
    """Parameter listing the axes to expand items over (one item per subject x axis);
    None for kinds with one item per subject."""
    doc: str = ""
    per_subject: bool = True
    """False: one item per check (``id``), not per subject (a search over the whole model)."""
    work: WorkOf | None = None
    """What one item draws (``kinds._work.Work``): the images and answers it names up front
    (prefetched, counted by the progress total, listed by ``--t2i-plan -v``, with the images
    that calibrate its judge), and an estimate of what it computes beyond them (a search's
    prompts, an audit); None: nothing known until it runs."""
    power_metric: str | None = None
    """The figure ``metrics.power`` simulates for power planning (``"w1"``, ``"severity"``);
    None: no power model. It needs ``limit``."""
    limit: Callable[[Any], float] | None = None
    """The limit a check's figure is decided against, from its ``Params`` (its threshold):
    what power planning simulates either side of."""
    never_passes: Callable[[Any], str] | None = None
    """A warning for ``--t2i-plan`` when a gated check of these ``Params`` cannot pass for a
    model without any bias (its limit is the no-bias value itself); "" when it can."""
    adaptive_caveat: Callable[[Any], str] | None = None
    """A note for ``--t2i-plan`` on an adaptive check of these ``Params`` (when a look before
    the cap cannot pass); "" when there is none."""
    adaptive: bool = False
    """Whether a gated check of this kind may draw its images in rounds and stop once its
    interval is decided (``images_per_prompt: {max: N}``, ``--t2i-adaptive``; issue #26):
    its run reads its images through the plan's ``images_per_prompt`` and its interval at
    the context's ``interval_confidence``, so a look is the kind's own fixed-n run."""
    figure: str = ""
    """What the kind's single figure is called on a chart (the HTML report); default: name."""
    measures_cost: bool = False
    """True: its figure is what a fine-tune cost (issue #38: alignment, diversity, quality,
    erasure), which a report shows beside the same subject's bias figures, not as one more."""
    chart: Callable[[Mapping[str, Any]], list[Interval]] | None = None
    """The lines of its interval chart from a verdict's figures (``figures.Interval``: each
    figure it judged, with its interval, and context in grey); None: one line, the
    verdict's value named ``figure``."""
    reason: Callable[[Mapping[str, Any]], str] | None = None
    """Why a verdict of its that did not pass failed, in a few words, when the kind says more
    than the gate does (intermit: its first alert); "" or None: the gate's words."""
    judges: Callable[[Mapping[str, Any]], list[Any]] | None = None
    """The judge calibrations its figures carry beyond the shared ``judge_calibration(s)``
    (open_set: each proposed bias'), for the run header's list of judges."""
    about: Callable[[Mapping[str, Any]], str] | None = None
    """What its figure is about where its row names no axis (max_skew_below: the target)."""
    tables: Callable[[Mapping[str, Any]], list[Table]] | None = None
    """Its paper's own figures as tables from a verdict's figures (``figures.Table``: BGPS'
    evaluation and λ sweep, OpenBias' agreement with a classifier, BiasConnect A.5's
    negative IS_mit), drawn in the HTML report; the JSON report holds the figures."""
    sample: str | None = None
    """The keys of a small ``checks:`` entry of this kind (``axes: [gender], threshold: 0.5``;
    "" when it needs none) for the sample suite (``testing.suites.every_kind_suite``: a
    subject, axes gender and age with counterfactuals, a labelled folder ``labelled``): the
    tests over the registry (report integrity, adding a kind) check every kind from it."""
    paper_protocol: Mapping[str, Any] = field(default_factory=dict, hash=False)
    """What its paper's protocol sets (``protocol: paper``): ``Params`` field -> the value the
    paper used (``{"statistic": "mean"}``), over whatever the check said. What every kind's
    paper shares (the judge's answers as read, a fixed n) is the plan's (``plan.plan_for``)."""
    paper: str = ""
    """Where the measure comes from (paper, section, equation): the YAML reference's line."""
    example: str = ""
    """A ``checks:`` fragment using the kind, for the YAML reference."""
    example_source: str = ""
    """The example suite ``example`` is copied from; a test holds the copy to the suite."""

    def __post_init__(self) -> None:
        if isinstance(self.params, tuple):
            object.__setattr__(self, "params", params_class(self.name, self.params))

    @property
    def figure_name(self) -> str:
        return self.figure or self.name

    @property
    def declared(self) -> tuple[Param, ...]:
        """Every key a check of this kind may have: its own, then the common ones."""
        return declared(self.params)


CHECK_KINDS: dict[str, CheckKind] = {}


def protocol_params(check: CheckSpec, plan: Plan) -> Params:
    """``check``'s parameters under ``plan``'s protocol: as the suite says under ``gate``; with
    its kind's ``paper_protocol`` settings put over them under ``paper``."""
    kind = CHECK_KINDS.get(check.kind)
    if plan.protocol != "paper" or kind is None or not kind.paper_protocol:
        return check.params
    return replace(check.params, **dict(kind.paper_protocol))


def register_check(kind: CheckKind) -> CheckKind:
    """Add a check kind to the registry suites are validated against."""
    if kind.name in CHECK_KINDS:
        raise ValueError(f"check kind {kind.name!r} is already registered")
    if not callable(kind.run):
        raise TypeError(f"check kind {kind.name!r}: run must be a callable taking a CheckContext")
    if not (isinstance(kind.params, type) and issubclass(kind.params, Params)):
        raise TypeError(f"check kind {kind.name!r}: params must be a Params dataclass "
                        "(kinds._params.Params subclassed, each field a param(...))")
    declared(kind.params)  # a field without param(...) or of an unknown type fails here
    unknown = set(kind.paper_protocol) - {p.field for p in declared(kind.params)}
    if unknown:
        raise TypeError(f"check kind {kind.name!r}: paper_protocol sets {sorted(unknown)}, "
                        f"which are not fields of {kind.params.__name__}")
    CHECK_KINDS[kind.name] = kind
    return kind


def work_of(item: PlannedItem) -> Work:
    """The item's ``Work`` from its kind (``CheckKind.work``); an unknown kind draws nothing.
    A kind whose work cannot be worked out for this item gives a ``Work`` holding the error."""
    kind = CHECK_KINDS.get(item.check.kind)
    if kind is None or kind.work is None:
        return Work()
    try:
        return kind.work(item)
    except Exception as error:  # kept on the Work; every planner says so
        return Work(error=error)
