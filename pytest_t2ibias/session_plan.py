"""The session plan (issue #42): what every selected check will draw, built once when
collection finishes and executed once before the first item runs.

Check items register themselves (``SessionPlan.register``); at ``pytest_collection_finish``
the session builds one ``PlanEntry`` per registered item still selected: the item as the plan
sees it (its suite phrased from its ``counterfactuals: llm`` lock), its ``Work`` (computed
once, ``SessionPlan.work``), the level it gates at and the error that keeps it from running.
Progress, budgets and ``--t2i-plan`` read the entries. The session's ``pytest_runtestloop``
wrapper then calls ``execute``: prefetch, the adaptive rounds, the family's levels (Holm/BH);
each failure is kept on its own entry, which its item raises in full. An item then only
judges (``SessionPlan.verdict``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from ._settings import Settings
    from ._test_call import Sightings
    from .family import Family
    from .instrument import Instrument
    from .kinds import PlannedItem, Work
    from .plan import Levels, Plan
    from .planner import ItemPlan
    from .reports.progress import RunTally
    from .suite_spec import AxisSpec
    from .verdict import Verdict


class Plannable(Protocol):
    """What a check item registers with the plan (``items.check.CheckItem``)."""

    @property
    def nodeid(self) -> str: ...

    def as_written(self) -> PlannedItem:
        """The item as its suite writes it, whether or not it will run."""

    def will_run(self) -> bool:
        """False for an item pytest will skip (a skip mark)."""

    def refusal(self) -> BaseException | None:
        """Why the item cannot run although selected (a classifier it needs and lacks)."""


class Equipped(Protocol):
    """What the plan uses of the session (``_session.T2ISession``)."""

    settings: Settings

    @property
    def family(self) -> Family: ...

    @property
    def locks(self) -> Any: ...

    @property
    def bgps_locks(self) -> Any: ...

    @property
    def tally(self) -> Any: ...

    @property
    def worker(self) -> bool: ...

    def instrument(self, plan: Plan, sightings: Sightings | None = None) -> Instrument: ...

    def progress_writer(self) -> Callable[[str], None] | None: ...

    def decide_family(self, errors: dict[str, float],
                      decisive: Callable[[str, float], bool]) -> None: ...


@dataclass(eq=False)
class PlanEntry:
    """One selected check item in the session plan."""

    nodeid: str
    written: PlannedItem
    """The item as its suite writes it (unphrased)."""
    runs: bool
    """False: pytest skips it (a skip mark); it is planned as written, calibrating nothing."""
    error: BaseException | None = None
    """Why it cannot run (a missing classifier, a model that will not load, an unwritable
    lock): its item raises it in full, as its own."""
    item: PlannedItem | None = None
    """As the plan sees it: phrased from its lock (None until phrased)."""
    work: Work | None = None
    """Its ``Work``, computed once (``SessionPlan.work``)."""
    stopped_at: int | None = None
    """An adaptive item: the images per prompt its rounds stopped at (None: not sampled)."""
    chances: list[float | None] = field(default_factory=list)
    """An adaptive item: at each undecided look before its cap, its chance to decide at the
    cap (``SessionPlan.chance_to_decide``); the last below ``FUTILE_BELOW`` stopped it."""

    @property
    def plan(self) -> Plan:
        """How it samples: at the look its rounds stopped at, once they ran."""
        plan = self.written.plan
        return plan if self.stopped_at is None else replace(plan, images_per_prompt=self.stopped_at)

    @property
    def gated(self) -> bool:
        return self.written.plan.levels.gate is not None


class SessionPlan:
    """The session's plan: built once (``build``), executed once (``execute``)."""

    def __init__(self, session: Equipped) -> None:
        self.session = session
        self._registered: dict[str, Plannable] = {}
        self.entries: list[PlanEntry] = []
        self.by_nodeid: dict[str, PlanEntry] = {}
        self.works_computed = 0
        """How many times an item's ``Work`` was worked out (one an entry; each adaptive look
        scales its entry's, ``Work.at``)."""
        self.executed = False
        self.execute_before_items = True
        """False: a caller runs the plan its own way (``python -m pytest_t2ibias prefetch``)."""
        self.seconds: float | None = None
        """Wall time ``execute`` took (the run header, JSON and JUnit say it apart from any
        test's time); None: not executed."""

    # -- built once, at the end of collection ------------------------------------------------

    def register(self, item: Plannable) -> None:
        self._registered[item.nodeid] = item

    def build(self, selected: Sequence[Any]) -> None:
        """One entry per registered item pytest kept (in its order); a ``--t2i-plan`` run
        phrases every entry now (it reads their prompts), a test run when it executes."""
        for item in selected:
            registered = self._registered.get(item.nodeid)
            if registered is None or registered is not item:
                continue
            entry = PlanEntry(item.nodeid, registered.as_written(), registered.will_run(),
                              error=registered.refusal())
            self.entries.append(entry)
            self.by_nodeid[entry.nodeid] = entry
        self._registered.clear()
        for entry in self.entries:
            if self.session.settings.plan or not _phrased_by_llm(entry.written):
                self._phrase(entry)

    def running(self) -> list[PlanEntry]:
        """The entries that will run and have no error yet."""
        return [entry for entry in self.entries if entry.runs and entry.error is None]

    def _phrase(self, entry: PlanEntry) -> None:
        """The entry as it runs (its LLM axes phrased from their lock), and its work, once."""
        if entry.item is not None:
            return
        written = entry.written
        if entry.runs and entry.error is None and _phrased_by_llm(written):
            try:
                written = replace(written, suite=self.session.locks.phrase(
                    written.suite, written.subject, written.plan.protocol))
            except Exception as error:  # a lock that cannot be read or written
                entry.error = error
        entry.item = written
        entry.work = self._work_of(written)

    def _work_of(self, item: PlannedItem) -> Work:
        from .kinds import work_of

        self.works_computed += 1
        return work_of(item)

    def work(self, entry: PlanEntry) -> Work | None:
        """The entry's work (None: its LLM-phrased prompts are not known before it executes)."""
        return entry.work

    def tally(self) -> RunTally:
        """The run's totals, for one ETA (#27) and the budgets (#35): the planned images and
        answers and each search's estimate (entries not phrased yet: unknown until then)."""
        from .kinds import Work
        from .planner import plan_item
        from .reports.progress import planned_work

        counted = [entry for entry in self.entries if entry.runs and entry.item is not None]
        unplanned = 0
        for entry in counted:  # a kind that says nothing of its work: its power plan's images
            assert entry.item is not None and entry.work is not None
            if not _declares_work(entry.item):
                unplanned += plan_item(entry.nodeid, entry.item, power=self.session.settings.power,
                                       work=entry.work).images or 0
        pending = [entry.nodeid for entry in self.entries if entry.runs and entry.item is None]
        tally = planned_work([entry.item for entry in counted], unplanned,
                             nodeids=[entry.nodeid for entry in counted],
                             works=[entry.work or Work() for entry in counted])
        tally.unknown = [*tally.unknown, *pending]
        return tally

    def item_plans(self) -> list[ItemPlan]:
        """``--t2i-plan``'s rows: each entry's cost and the images its threshold needs."""
        from .instrument import judge_name
        from .planner import measured_confusion, plan_item
        from .store.calibrations import recalled

        settings = self.session.settings
        remembered = recalled(None if settings.no_cache else settings.cache_dir)

        def confusion_of(axis: AxisSpec) -> tuple[np.ndarray, str] | None:
            return measured_confusion(remembered, judge_name(settings, axis), axis)

        return [plan_item(entry.nodeid, entry.item or entry.written, power=settings.power,
                          calibrates=entry.runs, work=entry.work, confusion_of=confusion_of)
                for entry in self.entries]

    def planned(self) -> list[tuple[str, PlannedItem, Work]]:
        """(nodeid, item, work) of every entry that will run, as far as the plan knows it."""
        return [(entry.nodeid, entry.item, entry.work) for entry in self.entries
                if entry.runs and entry.item is not None and entry.work is not None]

    def first_looks(self) -> tuple[list[PlannedItem], list[Work | None]]:
        """The running entries as a prefetch sees them, with their work: an adaptive one at
        its first look (its later looks depend on what that one shows)."""
        items: list[PlannedItem] = []
        works: list[Work | None] = []
        for entry in self.running():
            self._phrase(entry)
            if entry.error is not None or entry.item is None:
                continue
            plan, work = entry.item.plan, entry.work
            if plan.adaptive:
                first = plan.looks[0]
                items.append(replace(entry.item, plan=replace(plan, images_per_prompt=first)))
                works.append(work.at(first, plan.images_per_prompt) if work is not None else None)
            else:
                items.append(entry.item)
                works.append(work)
        return items, works

    # -- executed once, before the first item runs -------------------------------------------

    def execute(self) -> None:
        """Phrase what is left, prefetch (or sample in rounds), then fix the family's levels.

        Under xdist every worker plans the whole selection: the cache's per-key claims split
        the batches between the workers, so nothing is computed twice (without a cache they
        could not share, so a worker plans nothing and each adaptive item samples alone)."""
        if self.executed:
            return
        self.executed = True
        started = time.perf_counter()
        from .reports.progress import PLAN

        with self.session.tally.working_on(PLAN):  # the progress line's bucket for the plan
            for entry in self.entries:
                self._phrase(entry)
            if not (self.session.settings.no_cache and self.session.worker):
                self._prefetch()
            self._decide_family()
        self.seconds = time.perf_counter() - started

    def _prefetch(self) -> None:
        from .prefetch import prefetch

        running = [entry for entry in self.running() if entry.item is not None]
        adaptive = [entry for entry in running if entry.plan.adaptive]
        fixed = [entry for entry in running if not entry.plan.adaptive]
        keep = self._keep_errors()
        if adaptive:
            self.sample_adaptively(adaptive, fixed=fixed, on_error=keep)
        else:
            prefetch([entry.item or entry.written for entry in fixed], self.session.instrument,
                     on_error=keep, works=[entry.work for entry in fixed])

    def _keep_errors(self) -> Callable[[Any, BaseException], None]:
        """The prefetch's ``on_error``: a ``BackendError`` (its model or image source cannot
        be used) is kept on the entry it belongs to, which its item raises in full; the first
        check run must not take it, nor a later one see only its short repeat. Other errors
        (a lock its own run may write) are left to that run."""
        from .errors import BackendError

        owners = {_key(entry.written): entry for entry in self.entries}
        said: set[int] = set()  # load failures kept in full on an entry already

        def keep(planned: Any, error: BaseException) -> None:
            owner = owners.get(_key(planned))
            if owner is None or not isinstance(error, BackendError) or owner.error is not None:
                return
            if error.first is not None and id(error.first) not in said:
                error = error.first  # the plan swallowed the whole one: its first item says it
            said.add(id(error))
            owner.error = error

        return keep

    def sample_adaptively(self, entries: list[PlanEntry], fixed: Sequence[PlanEntry] = (),
                          on_error: Callable[[Any, BaseException], None] | None = None) -> None:
        """Draw the adaptive entries' images in rounds batched across them (and the ``fixed``
        entries' in the first round), judging each at every look until decided
        (``prefetch.adaptive_rounds``); each then runs at the images it stopped at."""
        from ._test_call import verdict_sink
        from .metrics.sequential import FUTILE_BELOW
        from .prefetch import adaptive_rounds
        from .verdict import FAIL, PASS

        def decided(index: int, plan: Plan) -> bool:
            entry = entries[index]
            if entry.error is not None:
                raise entry.error
            token = verdict_sink.set(None)  # a look's verdict is nobody's report
            try:
                gate = self.gate(entry)
                verdict = self.judge(entry, gate, plan=plan)
                if verdict.outcome in (PASS, FAIL) or not plan.before_cap:
                    return True
                chance = self.chance_to_decide(entry, gate, plan)
            finally:
                verdict_sink.reset(token)
            entry.chances.append(chance)
            return chance is not None and chance < FUTILE_BELOW

        items = [entry.item or entry.written for entry in entries]
        stopped = adaptive_rounds(items, self.session.instrument, decided,
                                  fixed=[entry.item or entry.written for entry in fixed],
                                  on_error=on_error,
                                  works=[entry.work for entry in entries],
                                  fixed_works=[entry.work for entry in fixed])
        for index, entry in enumerate(entries):
            entry.stopped_at = stopped.get(index, entry.written.plan.images_per_prompt)

    def chance_to_decide(self, entry: PlanEntry, gate: float | None, plan: Plan) -> float | None:
        """The chance that the entry, undecided at ``plan``'s look, decides at its cap if its
        figure's truth is the look's estimate (``metrics.sequential.chance_to_decide``): the
        look's images judged at the level the cap's look computes at."""
        from .metrics.sequential import chance_to_decide, look_confidence

        if gate is None:
            return None
        cap = plan.looks[-1]
        at_cap_level = look_confidence(gate, plan.looks, cap, plan.spending)
        verdict = self.judge(entry, at_cap_level, plan=replace(plan, looks=()))
        estimate = verdict.value
        return chance_to_decide(estimate.value, estimate.low, estimate.high, verdict.threshold,
                                confidence=at_cap_level, n=plan.images_per_prompt, cap=cap)

    def _decide_family(self) -> None:
        """Under ``--t2i-family=holm|bh``, find the level every gated check gates at
        (``Family.levels``) by judging the gated checks at the levels the procedure asks
        about; their images and answers are in the memo by then, so this re-runs only the
        statistics. A check that cannot run counts in the family and is never decisive (its
        own run reports the error). Under xdist every worker finds the same levels."""
        if self.session.family.policy not in ("holm", "bh"):
            return
        from ._test_call import verdict_sink
        from .verdict import FAIL, PASS

        gated = {entry.nodeid: entry for entry in self.entries if entry.gated}
        errors = {nodeid: 1.0 - entry.written.plan.levels.gate  # type: ignore[operator]
                  for nodeid, entry in gated.items()}

        def decisive(nodeid: str, level: float) -> bool:
            entry = gated[nodeid]
            if entry.error is not None or not entry.runs:
                return False
            token = verdict_sink.set(None)  # these verdicts are nobody's report
            try:
                verdict = self.judge(entry, level)
            except Exception:  # reported when the item itself runs
                return False
            finally:
                verdict_sink.reset(token)
            return verdict.outcome == (PASS if verdict.burden == "model" else FAIL)

        self.session.decide_family(errors, decisive)

    # -- what an item does: judge at its gate and its stopping point -------------------------

    def gate(self, entry: PlanEntry) -> float | None:
        """The level the entry gates at, the family's adjustment included."""
        return self.session.family.confidence(entry.written.plan.levels.gate, entry.nodeid)

    def judge(self, entry: PlanEntry, gate: float | None, sightings: Sightings | None = None,
              plan: Plan | None = None) -> Verdict:
        """The check's verdict gating at ``gate`` (None: on the point value); ``sightings``
        notes the answers its judges gave; ``plan``: another look of an adaptive check
        (default: where its rounds stopped). An adaptive plan computes its intervals at the
        level spent over its looks (``Plan.levels_at``)."""
        from .kinds import CHECK_KINDS, CheckContext
        from .verdict import CheckFailed

        session, written = self.session, entry.written
        plan = plan or entry.plan
        context: CheckContext[Any] = CheckContext(
            check=written.check, suite=written.suite, subject=written.subject,
            axis=written.axis, plan=plan, instrument=session.instrument(plan, sightings),
            levels=plan.levels_at(gate), n_resamples=session.settings.bootstrap,
            phrase=partial(session.locks.phrase, protocol=plan.protocol),
            progress=session.progress_writer(),
            bgps_locks=session.bgps_locks)
        try:
            verdict = CHECK_KINDS[written.check.kind].run(context)
        except CheckFailed as failed:  # a kind built on the assertion helpers
            verdict = failed.verdict
        # every row says which protocol produced it (issue #44), whatever kind made it
        return replace(verdict, figures={**verdict.figures, "protocol": plan.protocol})

    def verdict(self, entry: PlanEntry, sightings: Sightings) -> Verdict:
        """The entry's verdict as its item reports it: at its gate and the look its rounds
        stopped at (said in the message), its unread prompts deciding (#27)."""
        from .figures import unread_prompts

        if entry.error is not None:
            raise entry.error
        if entry.written.plan.adaptive and entry.stopped_at is None:  # no session plan ran it
            self.sample_adaptively([entry])
        self._phrase(entry)
        gate = self.gate(entry)
        verdict = self.judge(entry, gate, sightings)
        if entry.written.plan.adaptive:
            verdict = with_rounds(verdict, entry.plan, entry.plan.levels_at(gate), entry.chances)
        work = entry.work
        if work is not None and work.error is not None:
            raise work.error
        # issue #27: words the generator never read make no verdict; the kind's own prompts
        # decide that, one rule for every kind (kinds.deciding_prompts, issue #47), not a
        # search's finds nor the prompts a method writes around them (a judge audit's)
        from .kinds import Work, deciding_prompts

        own = deciding_prompts(entry.item or entry.written, work or Work())
        return unread_prompts(verdict, sightings.unread, decisive=own,
                              strict=self.session.settings.strict_prompts)


def with_rounds(verdict: Verdict, plan: Plan, levels: Levels,
                chances: Sequence[float | None] = ()) -> Verdict:
    """An adaptive check's verdict saying where its rounds stopped and at which level its
    last look's interval was computed (``levels``: those its verdict was computed at), and,
    stopped undecided before its cap, its chance to decide there (``chances``: at each
    undecided look, ``SessionPlan.chance_to_decide``)."""
    from .metrics.sequential import FUTILE_BELOW
    from .verdict import INCONCLUSIVE

    looks = [n for n in plan.looks if n <= plan.images_per_prompt]
    level = levels.interval
    cap = plan.looks[-1]
    note = (f"\n  adaptive: stopped at {plan.images_per_prompt} of up to {cap} images "
            f"per prompt (looks {', '.join(map(str, looks))}); this look's interval at "
            f"{_percent(level)}, alpha spent {plan.spending.replace('_', '-')} over all "
            f"{len(plan.looks)} looks so that together they hold "
            f"{100 * plan.levels.interval:g}% whichever look it stops at (docs/STATISTICS.md)")
    last = chances[-1] if chances else None
    futile = (verdict.outcome == INCONCLUSIVE and plan.images_per_prompt < cap
              and last is not None and last < FUTILE_BELOW)
    if futile and last is not None:
        note += (f"\n  will not decide: at this estimate its interval would exclude the limit "
                 f"at the cap of {cap} with chance {100 * last:.1f}% (below "
                 f"{100 * FUTILE_BELOW:g}%), so it stopped inconclusive rather than draw "
                 f"{cap - plan.images_per_prompt} more images a prompt")
    figures = {**verdict.figures, "adaptive": {
        "images_per_prompt": plan.images_per_prompt, "cap": cap,
        "looks": looks, "planned_looks": list(plan.looks), "spending": plan.spending,
        "look_confidence": level, "will_not_decide": futile,
        "chances_to_decide": [None if c is None else round(c, 4) for c in chances]}}
    return replace(verdict, message=verdict.message + note, figures=figures)


def _percent(level: float) -> str:
    """A look's level: 95.73%, or 1 - 8.1e-08 where it rounds to 100% (O'Brien-Fleming's
    early looks), or 1 - <1e-16 where even that is 1 in floating point."""
    if round(100 * level, 2) < 100:
        return f"{100 * level:.2f}%"
    return f"1 - {1 - level:.1e}" if level < 1 else "1 - <1e-16"  # beyond double precision


def _phrased_by_llm(item: PlannedItem) -> bool:
    """Whether the item's prompts wait on a ``counterfactuals: llm`` lock."""
    return any(axis.counterfactuals_from_llm for axis in item.suite.axes.values())


def _declares_work(item: PlannedItem) -> bool:
    """Whether the item's kind says what it draws (``CheckKind.work``)."""
    from .kinds import CHECK_KINDS

    kind = CHECK_KINDS.get(item.check.kind)
    return kind is not None and kind.work is not None


def _key(planned: Any) -> tuple[str, str, str, str | None]:
    """Which entry a planned item is (the adaptive rounds copy it at each look, phrasing
    copies its suite)."""
    axis = planned.axis.name if planned.axis is not None else None
    return (str(planned.suite.path), planned.check.id, planned.subject, axis)
