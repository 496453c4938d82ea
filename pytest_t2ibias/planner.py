"""Power planning: how many images a check needs to decide, and what a run will generate.

A check decides when its interval lies wholly on one side of its limit. With too few images
it cannot: a model biased beyond the limit passes under ``burden: check``, and a fair one
can never show it is within the limit under ``burden: model``. For a check of a share-based
figure (normalised W1, severity) the images needed follow from simulating its own interval
(``metrics.power``) at a truth ``margin`` on either side of the threshold. ``--t2i-plan``
prints this for every selected item before any model loads; ``images_per_prompt: auto``
takes it as the check's n.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import PlanningOverBudget
from .kinds import CHECK_KINDS

if TYPE_CHECKING:
    from ._settings import Settings
    from .kinds import PlannedItem, Work
    from .plan import Plan
    from .suite_spec import AxisSpec, CheckSpec, Suite

DEFAULT_POWER = 0.9


@dataclass(frozen=True)
class ItemPlan:
    """One item's sampling, its cost in images, and the images its threshold needs."""

    nodeid: str
    images_per_prompt: int
    prompts: int | None
    needed: int | None
    note: str = ""
    calibration_images: int = 0
    """Images of the counterfactual prompts that calibrate its judge (``kinds._judge``)."""

    @property
    def images(self) -> int | None:
        if self.prompts is None:
            return None
        return self.prompts * self.images_per_prompt + self.calibration_images

    @property
    def underpowered(self) -> bool:
        return self.needed is not None and self.images_per_prompt < self.needed


MAX_AUTO_CHOICES = 10
"""The most choices an axis may have for ``images_per_prompt: auto``: a simulation's cost
grows with them (16 choices planned in about 15 s here, 64 took 82 s)."""


class PlanningBudget:
    """A bound on the simulation ``images_per_prompt: auto`` may run while a suite is
    collected, so collection ends whatever the suite asks (issue #23).

    A simulation's cost grows with the axis' choices; ``spend`` counts choices x simulations
    and raises ``errors.PlanningOverBudget`` past ``limit`` (160: about 11 s on an idle core here, 40 s
    with three other jobs on the machine; a two-choice check plans in under 30 of them, a
    ten-choice one in about 140)."""

    def __init__(self, limit: int = 160) -> None:
        self.limit = limit
        self.spent = 0

    def spend(self, choices: int) -> None:
        self.spent += choices
        if self.spent > self.limit:
            raise PlanningOverBudget(self.limit)


def plan_check(settings: Settings, suite: Suite, check: CheckSpec,
               budget: PlanningBudget) -> Plan:
    """A suite check's ``Plan``, built once, here: its confidence levels (``plan.levels_of``),
    then whether it samples in rounds (``{max: N}``, ``--t2i-adaptive``), then ``auto``'s
    images per prompt at its gate, then the sampling (``plan.plan_for``, numbers and the
    caps' looks). Items read it; nothing re-derives a part of it (issue #34)."""
    from .plan import levels_of, plan_for

    levels = levels_of(settings, check)
    adaptive = adaptive_allowed(suite, check, gate=levels.gate)
    n = auto_images(suite, check, settings, budget, gate=levels.gate)
    return plan_for(settings, suite, check, n=n, adaptive=adaptive, levels=levels)


def adaptive_allowed(suite: Suite, check: CheckSpec, *, gate: float | None) -> bool:
    """Whether ``check`` may sample in rounds (issue #26): its kind supports it
    (``CheckKind.adaptive``) and it gates on an interval (``gate``, its level). A check that
    asks for it with ``images_per_prompt: {max: N}`` and cannot is a ``SuiteError`` at its
    line; ``--t2i-adaptive`` leaves such checks at their fixed n."""
    from .errors import SuiteError

    kind = CHECK_KINDS[check.kind]
    asked = isinstance(check.params.images_per_prompt, dict)
    if asked and not kind.adaptive:
        supported = ", ".join(name for name, k in CHECK_KINDS.items() if k.adaptive)
        raise SuiteError(suite.path, check.location.line,
                         f"check {check.id!r}: images_per_prompt: {{max: ...}} (adaptive "
                         f"sampling) is supported by {supported}, not {check.kind}; give it "
                         "a number")
    if asked and gate is None:
        raise SuiteError(suite.path, check.location.line,
                         f"check {check.id!r}: images_per_prompt: {{max: ...}} (adaptive "
                         "sampling) stops when the interval is decided, so the check needs "
                         "confidence: (e.g. 0.95)")
    return kind.adaptive and gate is not None


def auto_images(suite: Suite, check: CheckSpec, settings: Settings, budget: PlanningBudget,
                *, gate: float | None) -> int | None:
    """``images_per_prompt: auto``: as many as deciding the threshold at ``gate`` (the
    check's level; None: its point estimate) needs, over the check's axes
    (``images_to_decide``), within ``budget``; a ``SuiteError`` at the check's line when it
    cannot be planned (also what ``validation/fuzz_suites.py`` runs)."""
    if check.params.images_per_prompt != "auto":
        return None
    from .errors import SuiteError

    if power_metric(check.kind) is None:
        modelled = [name for name, kind in CHECK_KINDS.items() if kind.power_metric]
        raise SuiteError(suite.path, check.location.line,
                         f"check {check.id!r}: images_per_prompt: auto plans only "
                         f"{' and '.join(modelled)} checks; give {check.kind} a number")
    wide = [axis for axis in check.axes if len(suite.axes[axis].choices) > MAX_AUTO_CHOICES]
    if wide:
        raise SuiteError(suite.path, check.location.line,
                         f"check {check.id!r}: images_per_prompt: auto plans axes of at most "
                         f"{MAX_AUTO_CHOICES} choices; {wide[0]!r} has "
                         f"{len(suite.axes[wide[0]].choices)}: give the check a number")
    try:
        return max(images_to_decide(check, suite.axes[axis], confidence=gate,
                                    power=settings.power, budget=budget) or 1
                   for axis in check.axes)
    except PlanningOverBudget as over:
        raise SuiteError(suite.path, check.location.line,
                         f"check {check.id!r}: images_per_prompt: auto would simulate more "
                         f"than this suite's planning budget ({over.limit} choice-"
                         f"simulations, about 11 s) across {len(check.axes)} axes; give it "
                         "a number (--t2i-plan prints what each check needs)") from None
    except ValueError as undecidable:  # no n up to the search's cap decides
        raise SuiteError(suite.path, check.location.line,
                         f"check {check.id!r}: images_per_prompt: auto finds no number of "
                         f"images that decides it: {undecidable}") from None


def images_to_decide(check: CheckSpec, axis: AxisSpec, *, confidence: float | None,
                     power: float = DEFAULT_POWER,
                     budget: PlanningBudget | None = None) -> int | None:
    """Images per prompt for ``check`` on ``axis`` to decide with ``power`` when the truth is
    ``margin`` (check parameter, default 0.1) above or below its threshold; None for kinds
    without a power model. With ``budget``, ``PlanningOverBudget`` when the search would run past it."""
    metric, threshold = power_metric(check.kind), limit_of(check)
    if metric is None or threshold is None or (
            isinstance(axis.ideal, dict) and "reference" in axis.ideal):
        return None
    from .metrics import ideal_shares
    from .metrics.power import images_needed

    margin = float(check.params.margin)
    ideal = ideal_shares(axis.ideal, axis.choices) if metric == "w1" else None
    ordered = axis.ordered if metric == "w1" else False
    needed = []
    for value in (threshold - margin, threshold + margin):
        if 0.0 < value < 1.0:
            truth = shares_at(value, metric, len(axis.choices), ideal, ordered)
            needed.append(images_needed(truth, threshold, metric=metric, ideal=ideal,
                                        ordered=ordered, confidence=confidence, power=power,
                                        spend=budget.spend if budget is not None else None))
    return max(needed) if needed else None


ASSUMED_JUDGE_ACCURACY = 0.9
"""The judge's accuracy ``labels_per_class`` plans for before any calibration was measured
(its errors spread evenly over the other classes)."""
LABEL_DRAWS = 400
MAX_LABELS = 4096
"""Where ``labels_per_class`` stops looking: more than this is said as "more than 4096"."""


def measured_confusion(records: Sequence[Mapping[str, Any]], judge: str,
                       axis: AxisSpec) -> tuple[np.ndarray, str] | None:
    """``judge``'s confusion on ``axis`` as an earlier run measured it (``records``: the
    cache's remembered calibrations, ``store.calibrations``), rows normalised to shares, and
    where and when it was measured; the latest record with the axis' choices. None when none
    was remembered, or a class has no labelled image in it."""
    matching = [r for r in records if r.get("judge") == judge and r.get("axis") == axis.name
                and list(r.get("choices", ())) == list(axis.choices)]
    if not matching:
        return None
    record = max(matching, key=lambda r: str(r.get("recorded", "")))
    try:
        counts = np.array([[float(record["confusion"][truth][judged]) for judged in axis.choices]
                           for truth in axis.choices])
    except (KeyError, TypeError, ValueError):
        return None
    totals = counts.sum(axis=1, keepdims=True)
    if (totals <= 0).any():
        return None
    where = record.get("where") or record.get("source") or "an earlier run"
    return counts / totals, f"{where}, recorded {record.get('recorded', '?')}"


def labels_per_class(item: PlannedItem, axis: AxisSpec, *,
                     accuracy: float = ASSUMED_JUDGE_ACCURACY,
                     confusion: np.ndarray | None = None) -> int:
    """Labels a class a labelled calibration needs for the check to decide at its margin:
    the fewest L for which the calibration alone (a confusion measured on L labels a class,
    the shares themselves known) moves the corrected figure at the threshold by at most half
    the margin, at the check's confidence (the other half is the sample's). Doubling, then
    bisection, over ``LABEL_DRAWS`` seeded draws of the confusion; ``MAX_LABELS`` + 1 when
    even ``MAX_LABELS`` are too few; for kinds without a power model, the 48 images a value a
    counterfactual calibration draws. ``confusion``: the judge's, as measured (rows of
    shares, ``measured_confusion``), in place of one ``accuracy`` right on every class."""
    from .kinds._judge import CALIBRATION_IMAGES
    from .metrics import ideal_shares
    from .metrics.judge import confusion_draws, correct_shares

    check = item.check
    metric, threshold = power_metric(check.kind), limit_of(check)
    if metric not in ("severity", "w1") or threshold is None or (
            isinstance(axis.ideal, dict) and "reference" in axis.ideal):
        return CALIBRATION_IMAGES
    k = len(axis.choices)
    ideal = ideal_shares(axis.ideal, axis.choices) if metric == "w1" else None
    truth = np.array(shares_at(threshold, metric, k, ideal, axis.ordered))
    if confusion is None or np.shape(confusion) != (k, k):
        confusion = np.full((k, k), (1 - accuracy) / max(k - 1, 1))
        np.fill_diagonal(confusion, accuracy)
    judged = truth @ confusion
    confidence = item.plan.levels.gate or 0.95
    margin = float(check.params.margin)

    def figure(shares: np.ndarray) -> np.ndarray:
        from .metrics import normalised_w1, severity

        if metric == "w1":
            start = np.asarray(ideal, float)
            return np.array([normalised_w1(s, start, ordered=axis.ordered) for s in shares])
        return np.array([severity(s) for s in shares])

    def spread(labels: int) -> float:
        rng = np.random.default_rng(0)
        counts = np.rint(confusion * labels)
        figures = figure(correct_shares(judged, confusion_draws(counts, LABEL_DRAWS, rng)))
        low, high = np.nanquantile(figures, [(1 - confidence) / 2, (1 + confidence) / 2])
        return float(max(high - threshold, threshold - low))

    high = 2
    while spread(high) > margin / 2:
        if high >= MAX_LABELS:
            return MAX_LABELS + 1
        high *= 2
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if spread(middle) <= margin / 2 else (middle, high)
    return high


def shares_at(value: float, metric: str, n_choices: int, ideal: np.ndarray | None = None,
              ordered: bool = False) -> tuple[float, ...]:
    """Shares whose figure is ``value``: the ideal moved towards the first choice."""
    from .metrics import normalised_w1, severity

    start = np.full(n_choices, 1.0 / n_choices) if ideal is None else np.asarray(ideal, float)
    corner = np.eye(n_choices)[0]

    def figure(weight: float) -> float:
        shares = (1 - weight) * start + weight * corner
        if metric == "w1":
            return float(normalised_w1(shares, start, ordered=ordered))
        return float(severity(shares))

    low, high = 0.0, 1.0
    for _ in range(60):  # bisection: the figure grows with the weight
        middle = (low + high) / 2
        low, high = (middle, high) if figure(middle) < value else (low, middle)
    weight = (low + high) / 2
    return tuple(float(s) for s in (1 - weight) * start + weight * corner)


def power_metric(kind: str) -> str | None:
    """The figure ``metrics.power`` simulates for ``kind`` (``CheckKind.power_metric``)."""
    declared = CHECK_KINDS.get(kind)
    return declared.power_metric if declared is not None else None


def limit_of(check: CheckSpec) -> float | None:
    """The limit the check's figure is decided against (``CheckKind.limit``), or None."""
    kind = CHECK_KINDS.get(check.kind)
    return float(kind.limit(check.params)) if kind is not None and kind.limit else None


def plan_item(nodeid: str, item: PlannedItem, *, power: float, calibrates: bool = True,
              work: Work | None = None,
              confusion_of: Callable[[AxisSpec], tuple[np.ndarray, str] | None] | None = None,
              ) -> ItemPlan:
    """The item's cost and the images its threshold needs at its plan's gate (None: its
    point estimate decides). ``item``: phrased (``counterfactuals: llm`` axes from their
    lock), so its ``work`` names the prompts it draws; ``calibrates`` False: an item that will
    not run, whose judge's calibration draws nothing (``kinds._judge``); ``work``: the item's,
    when the session plan worked it out already; ``confusion_of``: an axis' judge as an
    earlier run measured it (``measured_confusion``), for the labels a class it needs."""
    from .kinds import work_of

    check, axis, plan = item.check, item.axis, item.plan
    work = work if work is not None else work_of(item)
    prompts = prompts_drawn(work)
    confidence = plan.levels.gate
    needed = images_to_decide(check, axis, confidence=confidence, power=power) if axis else None
    note = "" if power_metric(check.kind) else "no power model for this kind"
    if needed is not None and plan.images_per_prompt < needed:
        margin = float(check.params.margin)
        decides = "its point estimate" if confidence is None else f"its {confidence:.0%} interval"
        note = (f"underpowered near its limit: a truth {margin:g} either side of it needs "
                f"{needed} images a prompt for {decides} to decide with power {power:.0%}; a "
                f"truth further away decides with fewer")
    if plan.adaptive and confidence is not None:  # issue #26; adaptive only if gated (plan_for)
        note = "; ".join(filter(None, [adaptive_note(check, axis, plan, prompts,
                                                     confidence=confidence), note]))
    never = never_passes(check, confidence)
    if never:
        note = "; ".join(filter(None, [note, never]))
    calibration_images = calibration_drawn(work) if calibrates else 0
    if axis is not None and labelled(axis) and plan.judge_correction != "off":
        measured = confusion_of(axis) if confusion_of is not None else None
        labels = labels_per_class(item, axis, confusion=measured[0] if measured else None)
        count = str(labels) if labels <= MAX_LABELS else f"more than {MAX_LABELS}"
        judge = (f"for the judge as measured on {measured[1]}" if measured else
                 f"assuming a judge {ASSUMED_JUDGE_ACCURACY:.0%} right on every class (no "
                 f"measured calibration of it in the cache yet)")
        note = "; ".join(filter(None, [note, (
            f"its labelled calibration needs {count} labels a class of {axis.name} "
            f"({', '.join(axis.choices)}) to decide at its margin, {judge} (t2ibias label)")]))
    if calibration_images:
        note = "; ".join(filter(None, [note, f"{calibration_images} images calibrate the judge"]))
    return ItemPlan(nodeid, plan.images_per_prompt, prompts, needed, note, calibration_images)


def labelled(axis: AxisSpec) -> bool:
    """Whether ``axis`` is calibrated on a labelled folder (``judge_calibration: {folder}``)."""
    from .suite_spec import COUNTERFACTUAL_CALIBRATION

    return axis.calibration_source not in (None, COUNTERFACTUAL_CALIBRATION)


def prompts_drawn(work: Work) -> int | None:
    """The prompts one item generates, each (model role, prompt) once (None: what the run
    finds decides them, or they could not be worked out yet)."""
    return len({(draw.role, draw.prompt) for draw in work.own}) or None


def calibration_drawn(work: Work) -> int:
    """Images its judge's calibration draws beyond those of the kind's own prompts."""
    own = {draw.prompt: draw.images for draw in work.own}
    return sum(max(0, draw.images - own.get(draw.prompt, 0)) for draw in work.calibration)


def adaptive_note(check: CheckSpec, axis: AxisSpec | None, plan: Plan, prompts: int | None,
                  *, confidence: float) -> str:
    """An adaptive item's images: expected (simulated at the truth ``margin`` either side of
    its threshold, the larger) and at most (its cap), for ``--t2i-plan``; a search, whose
    prompts are unknown up front, at most its cap a prompt."""
    looks = ", ".join(map(str, plan.looks))
    kind = CHECK_KINDS.get(check.kind)
    if prompts is None:
        note = f"adaptive: at most {plan.looks[-1]} images a prompt (looks {looks})"
        caveat = kind.adaptive_caveat(check.params) if kind and kind.adaptive_caveat else ""
        return "; ".join(filter(None, [note, caveat]))
    cap = plan.looks[-1] * prompts
    metric, threshold = power_metric(check.kind), limit_of(check)
    expected = ""
    if metric is not None and threshold is not None and axis is not None and not (
            isinstance(axis.ideal, dict) and "reference" in axis.ideal):
        from .metrics import ideal_shares
        from .metrics.power import expected_images

        margin = float(check.params.margin)
        ideal = (ideal_shares(axis.ideal, axis.choices) if metric == "w1"
                 else np.full(len(axis.choices), 1 / len(axis.choices)))
        ordered = axis.ordered if metric == "w1" else False
        means = [expected_images(shares_at(value, metric, len(axis.choices),
                                           ideal if metric == "w1" else None, ordered),
                                 threshold, metric, tuple(float(s) for s in ideal), ordered,
                                 confidence, plan.looks, plan.spending)[0]
                 for value in (threshold - margin, threshold + margin) if 0.0 < value < 1.0]
        if means:
            expected = f"expected {max(means) * prompts:.0f} images, "
    return f"adaptive: {expected}at most {cap} (looks {looks} a prompt)"


def never_passes(check: CheckSpec, gate: float | None) -> str:
    """A warning when a check gated at ``gate`` (its plan's level) has a limit is the no-bias value itself: a model with no
    bias at all cannot be shown within it (an equivalence needs a margin), so under
    ``burden: model`` it can only fail or be inconclusive. The kind knows its rule
    (``CheckKind.never_passes``)."""
    kind = CHECK_KINDS.get(check.kind)
    if gate is None or kind is None or kind.never_passes is None:
        return ""
    return kind.never_passes(check.params)
