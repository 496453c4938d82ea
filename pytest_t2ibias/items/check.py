"""YAML suites as pytest items: one ``CheckItem`` per check x subject x axis.

Follows tavern (``tavern/_core/pytest/file.py``, ``item.py``): the file (``file.SuiteFile``)
validates in ``collect()``, so a malformed suite is a collection error before any model
loads, and the items only touch the models when they run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._session import VERDICTS, session_of
from .._text import shown
from ..errors import ClassifierMissing
from ..kinds import CHECK_KINDS, CheckContext
from ..plan import Levels, Plan
from ..suite_spec import CheckSpec, Suite
from ..verdict import FAIL, PASS, CheckFailed, Verdict, report_verdict, verdict_sink

if TYPE_CHECKING:
    from .._test_call import Sightings
    from ..kinds import PlannedItem
    from ..planner import ItemPlan

ITEM_MARKER = "t2ibias"
SESSION_PLANNED = pytest.StashKey[bool]()
PLAN_ERROR = pytest.StashKey[BaseException]()
"""Why the session plan could not make this item's images (a model that will not load, a
``--t2i-images`` folder without its prompt): raised by the item in full, as its own (#35)."""
FAMILY_DECIDED = pytest.StashKey[bool]()


def item_name(check: CheckSpec, subject: str, axis: str | None) -> str:
    """``severity[doctor-gender]``, or ``severity[doctor]`` for kinds without axes; user text
    in it shown, never obeyed (node ids reach pytest's headers and every log)."""
    name = f"{check.id}[{subject}-{axis}]" if axis else f"{check.id}[{subject}]"
    return shown(name)


class CheckItem(pytest.Item):
    """One check judged for one subject (and axis): runs the kind, reports its verdict."""

    def __init__(self, *, suite: Suite, check: CheckSpec, subject: str, axis: str | None,
                 plan: Plan, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.check = check
        self.subject = subject
        self.axis = axis
        self.plan = plan
        """How this check samples, resolved at collection (``plan.plan_for``)."""
        self.verdict: Verdict | None = None
        self.stopped_at: int | None = None
        """Adaptive sampling: the images per prompt its rounds stopped at (None: not run)."""
        self.report_subject, self.report_axis = subject, axis or ""
        self.add_marker(ITEM_MARKER)
        for mark in check.marks:
            self.add_marker(mark)
        # -k also matches the kind and the suite name: -k entropy_below, -k occupations
        self.extra_keyword_matches.update({check.kind, suite.name})

    def runtest(self) -> None:
        from .._test_call import Sightings
        from ..figures import unread_prompts, with_gallery

        self._require_classifiers()  # a CheckError: reported as an ERROR (_session.as_error)
        session = session_of(self.config)
        _plan_session_once(self)
        if (planning := self.stash.get(PLAN_ERROR, None)) is not None:
            raise planning
        if self.plan.adaptive and self.stopped_at is None:  # the session plan did not run it
            _sample_adaptively(self.config, [self])
        _decide_family_once(self)
        sightings = Sightings()
        gate = session.family.confidence(self.plan.levels.gate, self.nodeid)
        verdict = self.evaluate(gate, sightings)
        if self.plan.adaptive:
            verdict = _with_rounds(verdict, self.plan, self.plan.levels_at(gate))
        # issue #27: words the generator never read make no verdict (figures.unread_prompts);
        # the kind's own prompts decide that (kinds._work.deciding_prompts, issue #47), not a
        # search's finds nor the prompts a method writes around them (a judge audit's)
        verdict = unread_prompts(verdict, sightings.unread, decisive=self._own_prompts(),
                                 strict=session.settings.strict_prompts)
        shown = with_gallery(verdict, sightings)  # the images its judges saw, for the report
        reported = self.stash.get(VERDICTS, [])
        for i, earlier in enumerate(reported):
            if earlier is verdict:  # an ``assert_*`` helper in the run reported it already
                reported[i] = shown
                break
        else:
            report_verdict(shown)
        self.verdict = shown
        if not shown.passed:
            raise CheckFailed(shown)

    def _own_prompts(self) -> frozenset[str]:
        """The prompts whose unread words decide this item (``kinds._work.deciding_prompts``),
        its ``counterfactuals: llm`` axes phrased from the lock file the check just read."""
        from ..kinds import deciding_prompts, work_of

        planned = self.as_planned()
        if planned is None:
            return frozenset()
        phrased = replace(planned, suite=session_of(self.config).locks.phrase(self.suite,
                                                                               self.subject))
        work = work_of(phrased)
        if work.error is not None:
            raise work.error
        return deciding_prompts(phrased, work)

    def evaluate(self, gate: float | None, sightings: Sightings | None = None,
                 plan: Plan | None = None) -> Verdict:
        """The check's verdict gating at ``gate`` (None: on the point value); ``sightings``
        notes the answers its judges gave, for the report's image grid; ``plan``: another
        look of an adaptive check (default: the item's). An adaptive plan computes its
        intervals at the level spent over its looks (``Plan.levels_at``)."""
        session = session_of(self.config)
        plan = plan or self.plan
        levels = plan.levels_at(gate)
        context = CheckContext(
            check=self.check,
            suite=self.suite,
            subject=self.subject,
            axis=self.suite.axes[self.axis] if self.axis else None,
            plan=plan,
            instrument=session.instrument(plan, sightings),
            levels=levels,
            n_resamples=session.settings.bootstrap,
            phrase=session.locks.phrase,
            progress=session.progress_writer(),
            bgps_locks=session.bgps_locks,
        )
        try:
            return CHECK_KINDS[self.check.kind].run(context)
        except CheckFailed as failed:  # a kind built on the assertion helpers
            return failed.verdict

    def _require_classifiers(self) -> None:
        """An axis the suite marks ``classifier: true`` must not quietly be read by VQA.

        Checked when the item runs, not at collection: ``--collect-only`` and the checks of
        other axes stay usable on a machine without the classifier.
        """
        configured = set(session_of(self.config).settings.classifiers)
        for name in self._axes_read():
            axis = self.suite.axes.get(name)
            if axis is not None and axis.classifier and name not in configured:
                raise ClassifierMissing(
                    f"axis {name!r} says classifier: true, but no classifier "
                    f"is configured for it (configured: {', '.join(sorted(configured)) or 'none'})"
                    f"; add --t2i-classifier={name}=PATH (or the ini key t2i_classifier), or "
                    f"remove classifier: true to let the VQA model read it")

    def _axes_read(self) -> list[str]:
        """The item's axis, the check's axes and every axis its parameters name."""
        names = [self.axis, *self.check.axes, *self.check.params.axes_named()]
        return [name for name in dict.fromkeys(names) if isinstance(name, str)]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        error = excinfo.value
        if self.config.getoption("fulltrace", False):
            return super().repr_failure(excinfo, style)
        if isinstance(error, CheckFailed):
            return shown(f"{self.where()}: {self.title()} failed\n{error.verdict.message}",
                         keep_newlines=True)
        if _raised_by_plugin(error):
            # Expected trouble (a model that will not load, a backend refusing): one paragraph.
            return shown(f"{self.where()}: {self.title()} could not run: "
                         f"{type(error).__name__}: {error}", keep_newlines=True)
        return super().repr_failure(excinfo, style)

    def _traceback_filter(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        """An unexpected error's traceback starts at the kind's ``run``, not inside pytest."""
        traceback = excinfo.traceback
        kind = CHECK_KINDS.get(self.check.kind)
        code = getattr(kind.run if kind else None, "__code__", None)
        if code is not None:
            traceback = traceback.cut(path=code.co_filename, firstlineno=code.co_firstlineno - 1)
        return traceback.filter(excinfo)

    def planned(self) -> ItemPlan:
        """This item's cost and the images its threshold needs (``--t2i-plan``), counted from
        its kind's ``work`` with its ``counterfactuals: llm`` axes phrased from their lock."""
        from ..planner import plan_item

        settings = session_of(self.config).settings
        runs = self.as_planned()
        if runs is None:  # it will not run: its prompts as written, no judge to calibrate
            return plan_item(self.nodeid, self._planned_item(), power=settings.power,
                             calibrates=False)
        phrased = replace(runs, suite=session_of(self.config).locks.phrase(self.suite,
                                                                           self.subject))
        return plan_item(self.nodeid, phrased, power=settings.power)

    def as_planned(self) -> PlannedItem | None:
        """This item as the session plan sees it; None when it will not run (a skip mark,
        a classifier it needs and does not have)."""
        if any(self.iter_markers("skip")) or any(self.iter_markers("skipif")):
            return None
        try:
            self._require_classifiers()
        except ClassifierMissing:
            return None
        return self._planned_item()

    def _planned_item(self) -> PlannedItem:
        """This item as a ``PlannedItem``, whether or not it will run."""
        from ..kinds import PlannedItem

        return PlannedItem(self.suite, self.check, self.subject,
                           self.suite.axes[self.axis] if self.axis else None, self.plan)

    @property
    def gated(self) -> bool:
        """Whether this check gates on an interval (counts in the family, ``--t2i-family``)."""
        return self.plan.levels.gate is not None

    def reportinfo(self) -> tuple[Path, int, str]:
        """Suite path, the check's 0-based line (pytest's convention), ``suite::id[...]``."""
        return self.path, self.check.location.line - 1, shown(f"{self.suite.name}::{self.name}")

    def where(self) -> str:
        """``path:line`` of the check entry, relative to the rootdir when inside it."""
        path = self.check.location.path
        try:
            relative = os.path.relpath(path, self.config.rootpath)
        except ValueError:  # another drive on Windows
            relative = str(path)
        if relative.startswith(".."):
            relative = str(path)
        return f"{relative}:{self.check.location.line}"

    def title(self) -> str:
        axis = f", axis {self.axis!r}" if self.axis else ""
        subject = f" for subject {self.subject!r}" if self.subject else ""
        return f"check {self.check.id!r} ({self.check.kind}){subject}{axis}"


def _plan_session_once(first: CheckItem) -> None:
    """When the first check runs, compute what every selected check will need, in full
    batches across prompts and checks (``prefetch``); the checks then read the memo.

    Under xdist every worker plans the whole selection: the cache's per-key claims split the
    batches between the workers, so nothing is computed twice (without a cache they could
    not share, so a worker plans nothing)."""
    config = first.config
    if config.stash.get(SESSION_PLANNED, False):
        return
    config.stash[SESSION_PLANNED] = True
    session = session_of(config)
    worker = getattr(config, "workerinput", None) is not None
    if session.settings.no_cache and worker:
        return
    items = [item for item in first.session.items
             if isinstance(item, CheckItem) and item.as_planned() is not None]
    adaptive = [item for item in items if item.plan.adaptive]
    fixed = [item.as_planned() for item in items if not item.plan.adaptive]
    from ..reports.progress import PLAN

    with session.tally.working_on(PLAN):  # the progress line's bucket for the plan's work
        if adaptive:
            _sample_adaptively(config, adaptive, fixed=fixed, on_error=_keep_for(items))
        else:
            from ..prefetch import prefetch

            prefetch(fixed, session.instrument, on_error=_keep_for(items))


def _keep_for(items: list[CheckItem]) -> Callable[[Any, BaseException], None]:
    """The session plan's ``on_error``: a ``BackendError`` (its model or image source cannot
    be used) is kept on the item it belongs to, which raises it in full when it runs; the
    first check run must not take it, nor a later one see only its short repeat. Other
    errors (a lock its own run may write) are left to that run."""
    from ..errors import BackendError

    owners = {_planned_key(item.as_planned()): item for item in items}
    said: set[int] = set()  # load failures kept in full on an item already

    def keep(planned: Any, error: BaseException) -> None:
        owner = owners.get(_planned_key(planned))
        if owner is None or not isinstance(error, BackendError) or PLAN_ERROR in owner.stash:
            return
        if error.first is not None and id(error.first) not in said:
            error = error.first  # the plan swallowed the whole one: its first item says it
        said.add(id(error))
        owner.stash[PLAN_ERROR] = error

    return keep


def _planned_key(planned: Any) -> tuple:
    """Which item a planned item is (the adaptive rounds copy it at each look)."""
    axis = planned.axis.name if planned.axis is not None else None
    return (id(planned.suite), planned.check.id, planned.subject, axis)


def _sample_adaptively(config: pytest.Config, items: list[CheckItem], fixed: list[Any] = (),
                       on_error: Callable[[Any, BaseException], None] | None = None) -> None:
    """Draw the adaptive items' images in rounds batched across them (and the ``fixed``
    items' in the first round), judging each at every look until decided
    (``prefetch.adaptive_rounds``); each item then runs at the images it stopped at."""
    from ..kinds import PlannedItem
    from ..prefetch import adaptive_rounds

    session = session_of(config)

    def decided(index: int, plan: Plan) -> bool:
        item = items[index]
        token = verdict_sink.set(None)  # a look's verdict is nobody's report
        try:
            item._require_classifiers()
            verdict = item.evaluate(session.family.confidence(plan.levels.gate, item.nodeid),
                                    plan=plan)
        finally:
            verdict_sink.reset(token)
        return verdict.outcome in (PASS, FAIL)

    planned = [PlannedItem(item.suite, item.check, item.subject,
                           item.suite.axes[item.axis] if item.axis else None, item.plan)
               for item in items]
    stopped = adaptive_rounds(planned, session.instrument, decided, fixed=fixed,
                              on_error=on_error)
    for index, item in enumerate(items):
        item.stopped_at = stopped.get(index, item.plan.images_per_prompt)
        item.plan = replace(item.plan, images_per_prompt=item.stopped_at)


def _with_rounds(verdict: Verdict, plan: Plan, levels: Levels) -> Verdict:
    """An adaptive check's verdict saying where its rounds stopped and at which level its
    last look's interval was computed (``levels``: those its verdict was computed at,
    ``Plan.levels_at``)."""
    looks = [n for n in plan.looks if n <= plan.images_per_prompt]
    level = levels.interval
    note = (f"\n  adaptive: stopped at {plan.images_per_prompt} of up to {plan.looks[-1]} images "
            f"per prompt (looks {', '.join(map(str, looks))}); this look's interval at "
            f"{_percent(level)}, alpha spent {plan.spending.replace('_', '-')} over all "
            f"{len(plan.looks)} looks so that together they hold "
            f"{100 * plan.levels.interval:g}% whichever look it stops at (docs/STATISTICS.md)")
    figures = {**verdict.figures, "adaptive": {
        "images_per_prompt": plan.images_per_prompt, "cap": plan.looks[-1],
        "looks": looks, "planned_looks": list(plan.looks), "spending": plan.spending,
        "look_confidence": level}}
    return replace(verdict, message=verdict.message + note, figures=figures)


def _percent(level: float) -> str:
    """A look's level: 95.73%, or 1 - 8.1e-08 where it rounds to 100% (O'Brien-Fleming's
    early looks), or 1 - <1e-16 where even that is 1 in floating point."""
    if round(100 * level, 2) < 100:
        return f"{100 * level:.2f}%"
    return f"1 - {1 - level:.1e}" if level < 1 else "1 - <1e-16"  # beyond double precision


def _decide_family_once(first: CheckItem) -> None:
    """Under ``--t2i-family=holm|bh``, when the first check runs, find the level every gated
    check gates at (``Family.levels``) by judging the gated checks at the levels the
    procedure asks about; their images and answers are in the memo by then (the session
    plan), so this re-runs only the statistics. Each item then runs at its level and
    reaches the procedure's verdict. A check that cannot run counts in the family and is
    never decisive (its own run reports the error). Under xdist every worker finds the same
    levels (the checks are deterministic)."""
    config = first.config
    session = session_of(config)
    if session.family.policy not in ("holm", "bh") or config.stash.get(FAMILY_DECIDED, False):
        return
    config.stash[FAMILY_DECIDED] = True
    gated = {item.nodeid: item for item in first.session.items
             if isinstance(item, CheckItem) and item.gated}
    errors = {nodeid: 1.0 - item.plan.levels.gate for nodeid, item in gated.items()}

    def decisive(nodeid: str, level: float) -> bool:
        item = gated[nodeid]
        token = verdict_sink.set(None)  # these verdicts are nobody's report
        try:
            item._require_classifiers()
            verdict = item.evaluate(level)
        except Exception:  # noqa: BLE001 - reported when the item itself runs
            return False
        finally:
            verdict_sink.reset(token)
        return verdict.outcome == (PASS if verdict.burden == "model" else FAIL)

    session.decide_family(errors, decisive)


def planned_checks(items: list[pytest.Item]) -> list[Any]:
    """The selected check items that will run, as the plan (``prefetch``) sees them; an
    adaptive one at its first look (its later looks depend on what that one shows)."""
    return [replace(planned, plan=replace(planned.plan, images_per_prompt=planned.plan.looks[0]))
            if planned.plan.adaptive else planned
            for item in items
            if isinstance(item, CheckItem) and (planned := item.as_planned()) is not None]


def _raised_by_plugin(error: BaseException) -> bool:
    """An exception class of our own (BackendError and kin) rather than a bug's ``KeyError``."""
    return type(error).__module__.split(".")[0] == "pytest_t2ibias"
