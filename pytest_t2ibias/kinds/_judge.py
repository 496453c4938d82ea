"""How a kind reads its judge: the calibration of the judge on the item's axis, and what the
correction makes of an estimate (``metrics.judge``; docs/STATISTICS.md, "The judge's own
error").

Three readings, chosen by the plan's ``judge_correction`` and the calibration's source:

- ``full``: every share corrected for the measured confusion. The default for a labelled
  folder, whose labels are the truth.
- ``bounds``: the default for counterfactual images. "A photo of a female doctor" is labelled
  female, so an image the generator drew male reads as the judge's error: the calibration
  cannot tell the judge's errors from the generator's non-adherence to explicit prompts. The
  interval is the hull of the two extremes (all judge error: corrected; all non-adherence:
  the judge's labels as truth), so a verdict holds under either.
- ``off``: the judge's labels as truth (``judge_correction: off``, or no calibration).

A judge that cannot read the axis (``JudgeCalibration.readable``) decides nothing: the item
is inconclusive under every burden, with the reason, whatever its figure says.

A calibration whose images' groups are known (a labelled folder that also labels the suite's
other axes; the judge audit by group on counterfactual sets) carries the confusion per group. Where
it does not show the judge errs alike within ``GROUP_TOLERANCE`` (``metrics.judge_groups``),
the correction uses the item's group's own confusion when the item's images are of one group
(right for that group whatever the others'). Otherwise, where it shows the judge errs
differently (a gap above the tolerance), it says it cannot correct (inconclusive, naming the
groups): a pooled confusion would over-correct one group and under-correct the other; where
it shows neither, it pools and says so. An
item's images are of one group when its prompt names that group's every value as a word
("a photo of an old doctor": group ``old``; ``item_group``), as a check on a group does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._types import Estimate
from ..metrics.judge import (
    BOUNDS,
    COUNTERFACTUAL,
    FULL,
    LABELLED,
    OFF,
    JudgeCalibration,
    calibration_from_labels,
    correct_shares,
    correction_mode,
    judged_estimate,
    posterior_mean_confusion,
)
from ..store.calibrations import remember
from ..suite_spec import COUNTERFACTUAL_CALIBRATION
from ..verdict import INCONCLUSIVE

if TYPE_CHECKING:
    from ..instrument import Instrument
    from ..metrics import ISMatrix
    from ..suite_spec import AxisSpec
    from ._base import CheckContext, PlannedItem
    from ._work import Draw


GROUP_TOLERANCE = 0.1
"""Largest gap between two groups' error rates on one value that a pooled correction accepts:
a judge shown to err 10 points more on one group than another is corrected per group, or not
at all (module doc)."""

CALIBRATION_IMAGES = 48
"""Images a value that calibrate a judge on counterfactual images: 48 a value put the accuracy
of a 90%-accurate judge within about ±0.09 (95%), and the same number at every n keeps every
look of an adaptive check on one calibration. They are split over the subjects of the suite's
checks of the axis (``calibration_draws``): one calibration of an axis serves every check that
reads it (issue #46), and an IS check on a subject has drawn its share already (image i of a
prompt is the same whatever n)."""


def judge_calibration(ctx: CheckContext[Any], axis: AxisSpec) -> JudgeCalibration | None:
    """The judge's confusion on ``axis`` from the axis' ``judge_calibration`` source. With the
    correction off (the paper protocol's judge as read) a labelled folder is still read, to
    tell whether the judge can read the axis at all (it corrects nothing then, and draws no
    image); a counterfactual calibration is not drawn."""
    source = axis.calibration_source
    off = ctx.plan.judge_correction == OFF
    if source is None or (off and source == COUNTERFACTUAL_CALIBRATION):
        return None
    if source == COUNTERFACTUAL_CALIBRATION:
        # a folder audit draws nothing: the folder's own images of the prompts, if it has them
        calibration = counterfactual_calibration(ctx, axis, from_folder=ctx.plan.audits_folder)
    else:
        others = [a for a in ctx.suite.axes.values() if a.name != axis.name]
        calibration = folder_calibration(ctx.instrument, axis, Path(source), ctx.interval_confidence,
                                         across=others)
    if calibration is not None:  # for --t2i-plan's warning next time
        remember(getattr(getattr(ctx.instrument.requests, "cache", None), "root", None), calibration)
    return calibration


def labelled_calibration(ctx: CheckContext[Any], axis: AxisSpec) -> JudgeCalibration | None:
    """The judge on ``axis`` from its labelled folder only: for a check without a subject
    whose counterfactual images could calibrate it (a BGPS gate's prompts are the search's)."""
    if axis.calibration_source == COUNTERFACTUAL_CALIBRATION:
        return None
    return judge_calibration(ctx, axis)


def _counterfactual_prompts(ctx: CheckContext[Any], axis: AxisSpec) -> dict[str, str]:
    """Value -> the subject's counterfactual prompt of it (only the axis' values)."""
    suite = ctx.counterfactual_suite() if axis.counterfactuals_from_llm else ctx.suite
    return _value_prompts(suite, ctx.subject, axis)


def _value_prompts(suite: Any, subject: str, axis: AxisSpec) -> dict[str, str]:
    from ..methods.biasconnect import counterfactual_prompts

    prompts = counterfactual_prompts(suite, subject, [axis.name]).get(axis.name, {})
    return {value: prompt for value, prompt in prompts.items() if value in axis.choices}


def calibration_subjects(suite: Any, subject: str, axis: AxisSpec) -> tuple[str, ...]:
    """Whose counterfactual images calibrate the judge on ``axis`` for a check on ``subject``:
    the subjects of every check of the suite that names the axis (its ``axes``), as the suite
    writes them whichever are selected, so one calibration serves every check of the axis
    (issue #46) and measures the judge on the subjects those checks are about. The subject
    alone where no such check is on it (an IS check reading an axis no check names), or where
    an LLM phrases the axis (its lock phrases one subject at a time)."""
    pooled: dict[str, None] = {}
    for check in suite.checks:
        if axis.name in check.axes:
            pooled.update(dict.fromkeys(check.subjects or suite.subjects))
    if axis.counterfactuals_from_llm or subject not in pooled:
        return (subject,)
    return tuple(pooled)


def calibration_draws(suite: Any, subject: str, axis: AxisSpec) -> list[tuple[str, str, int]]:
    """(value, prompt, images) of the counterfactual images that calibrate the judge on
    ``axis`` for a check on ``subject``: ``CALIBRATION_IMAGES`` a value, split evenly over
    ``calibration_subjects`` (rounded up); empty when some subject lacks a value's prompt
    (no row of the confusion could be measured for it)."""
    subjects = calibration_subjects(suite, subject, axis)
    per_prompt = -(-CALIBRATION_IMAGES // len(subjects))
    by_subject = [_value_prompts(suite, s, axis) for s in subjects]
    if any(len(prompts) < len(axis.choices) for prompts in by_subject):
        return []
    return [(value, prompts[value], per_prompt) for value in axis.choices for prompts in by_subject]


def folder_holds(ctx: CheckContext[Any], axis: AxisSpec) -> dict[str, int]:
    """In a folder audit: each counterfactual prompt of ``axis`` -> the images of it the
    folder holds (capped at ``CALIBRATION_IMAGES``)."""
    generator = ctx.instrument.generator("candidate")
    holds = getattr(generator, "holds", None)
    return {prompt: min(holds(prompt), CALIBRATION_IMAGES) if holds else 0
            for prompt in _counterfactual_prompts(ctx, axis).values()}


def folder_uncorrected(ctx: CheckContext[Any], axis: AxisSpec) -> str:
    """Why a folder audit leaves ``axis`` uncorrected (empty: the folder calibrates it)."""
    if not ctx.plan.audits_folder or axis.calibration_source != COUNTERFACTUAL_CALIBRATION:
        return ""
    held = folder_holds(ctx, axis)
    lacking = [prompt for prompt, n in held.items() if n == 0]
    if len(held) < len(axis.choices):
        return (f"folder audit: {axis.name!r} has no counterfactual prompt for every value, so "
                f"the folder cannot calibrate its judge: uncorrected")
    if lacking:
        return (f"folder audit: the folder holds no image of {', '.join(map(repr, lacking))}, "
                f"so nothing calibrates the judge on {axis.name!r}: uncorrected (add the "
                f"axis' counterfactual images to the folder to correct it)")
    return ""


def counterfactual_calibration(ctx: CheckContext[Any], axis: AxisSpec,
                               from_folder: bool = False) -> JudgeCalibration | None:
    """The judge on the subject's counterfactual images of ``axis``, each labelled with the
    value its prompt asked for; ``CALIBRATION_IMAGES`` a prompt, which an IS check on the
    same subject at n >= 48 has drawn already (paired seeds): none are drawn twice.
    ``from_folder`` (a folder audit): the folder's images of those prompts, as many as it
    holds up to ``CALIBRATION_IMAGES``; none when it lacks a value's."""
    if from_folder:
        prompts = _counterfactual_prompts(ctx, axis)
        if len(prompts) < len(axis.choices):
            return None  # a value without its prompt: no row of the confusion can be measured
        held = folder_holds(ctx, axis)
        if not all(held.values()):
            return None  # said in every row (``folder_uncorrected``)
        draws = [(value, prompt, held[prompt]) for value, prompt in prompts.items()]
        where = (f"the folder's {'/'.join(map(str, held.values()))} counterfactual images a "
                 f"value of {ctx.subject!r}")
    else:
        suite = ctx.counterfactual_suite() if axis.counterfactuals_from_llm else ctx.suite
        draws = calibration_draws(suite, ctx.subject, axis)
        if not draws:
            return None  # a value without its prompt: no row of the confusion can be measured
        subjects = calibration_subjects(suite, ctx.subject, axis)
        per_value = draws[0][2] * len(subjects)
        where = (f"{per_value} counterfactual images a value of {subjects[0]!r}"
                 if len(subjects) == 1 else
                 f"{per_value} counterfactual images a value, {draws[0][2]} of each of "
                 f"{', '.join(map(repr, subjects))}")
    truth, judged = [], []
    for value, prompt, images_per_prompt in draws:
        images = ctx.instrument.images([prompt], per_prompt=images_per_prompt)
        answers = ctx.instrument.attributes(images, axis, ctx.suite.filter)
        truth.append(np.full(len(answers.labels), axis.choices.index(value)))
        judged.append(answers.labels)
    return calibration_from_labels(
        ctx.instrument.judge_name(axis), axis.name, axis.choices, np.concatenate(truth),
        np.concatenate(judged), source=COUNTERFACTUAL, where=where,
        confidence=ctx.interval_confidence)


def folder_calibration(instrument: Instrument, axis: AxisSpec, folder: Path,
                       confidence: float, across: Sequence[AxisSpec] = ()) -> JudgeCalibration:
    """The judge on a labelled folder's images that carry a value of ``axis``; per group too
    where every such image also carries a value of some of ``across`` (the suite's other
    axes: the labels say each image's group)."""
    from .._types import ImageSet
    from ..methods.socialcf import labelled_folder

    images, rows = labelled_folder(folder)
    keep = [i for i, row in enumerate(rows) if row.get(axis.name) in axis.choices]
    if not keep:
        raise ValueError(f"judge_calibration folder {folder}: no image of index.jsonl names a "
                         f"value of {axis.name!r} ({', '.join(axis.choices)})")
    answers = instrument.attributes(ImageSet(tuple(images[i] for i in keep)), axis)
    truth = np.array([axis.choices.index(rows[i][axis.name]) for i in keep])
    grouping = [a for a in across if all(rows[i].get(a.name) in a.choices for i in keep)]
    groups = [", ".join(str(rows[i][a.name]) for a in grouping) for i in keep] if grouping else None
    return calibration_from_labels(instrument.judge_name(axis), axis.name, axis.choices, truth,
                                   answers.labels, source=LABELLED, where=f"{LABELLED} {folder}",
                                   confidence=confidence, groups=groups)


@dataclass(frozen=True)
class JudgeReading:
    """What the correction makes of one item's figures (module doc)."""

    measured: JudgeCalibration | None
    asked: str = "on"
    """The plan's ``judge_correction``: on, full or off."""
    as_read: list[Estimate] = field(default_factory=list, compare=False, repr=False,
                                 kw_only=True)
    """The figure on the judge's answers as read (the paper's formula, no correction), kept by
    ``estimate`` so a corrected row shows it beside the corrected one (issue #44)."""
    group: str | None = None
    """The group every image of the item is of (``JudgeCalibration.groups``' key), if any."""
    uncorrected: str = ""
    """Why no calibration was measured, when the run should say (a folder audit's)."""

    @cached_property
    def _by_group(self) -> tuple[JudgeCalibration | None, str, str]:
        """(the calibration applied, why none can be, what the groups showed)."""
        from ..metrics.judge_groups import depends_on_group
        from ..verdict import FAIL, PASS

        measured = self.measured
        if measured is None or not measured.groups or self.asked == OFF:
            return measured, "", ""
        dependence = depends_on_group(measured.groups, measured.choices, GROUP_TOLERANCE,
                                      measured.confidence)
        shown = {"pass": "the same within", "fail": "differently beyond"}.get(
            dependence.outcome, "not shown the same within")
        told = (f"\n  judge by group: errs {shown} {GROUP_TOLERANCE:g} across "
                f"{len(measured.groups)} groups; {dependence.describe()}")
        if dependence.outcome == PASS:
            return measured, "", told
        if self.group in measured.groups:
            # not shown the same: the group's own confusion is right for its images whatever
            # the others', where a pooled one is off by the gap the audit could not rule out
            own = replace(measured, counts=measured.groups[self.group], groups=None,
                          where=f"{measured.where or measured.source}, group {self.group!r} "
                                f"only", _readability=None)
            return own, "", told + f"; corrected with group {self.group!r}'s own confusion"
        if dependence.outcome != FAIL:
            return measured, "", told
        return measured, (f"the judge's confusion on {measured.axis!r} differs by group "
                          f"({dependence.describe()}) and this item's images are of no one "
                          f"group: a pooled correction would be wrong for both, so it "
                          f"cannot correct"), told

    @property
    def calibration(self) -> JudgeCalibration | None:
        """The calibration applied: the group's own where the groups differ (module doc)."""
        return self._by_group[0]

    @property
    def mode(self) -> str:
        """full, bounds or off (what was applied)."""
        return correction_mode(self.asked, self.calibration)

    @property
    def unreadable(self) -> str:
        """Why the judge decides nothing on this axis (empty: it can read it), or why its
        confusion cannot be applied (it differs by group). A labelled calibration read with
        the correction off still says whether the judge reads the axis at all: the answers
        as read of a judge at chance are no figure (issue #44: the paper protocol passed the
        weak judge's unreadable emotion)."""
        if self.calibration is None:
            return ""
        if self.mode == OFF:
            return self.calibration.why_unreadable()
        return self._by_group[1] or self.calibration.why_unreadable()

    def estimate(self, estimator: Callable[[np.ndarray | None], Estimate]) -> Estimate:
        """``estimator(calibration counts or None)`` under this reading; the uncorrected
        figure is kept (``as_read``)."""
        if self._by_group[1]:
            return estimator(None)

        def keeping_as_read(counts: np.ndarray | None) -> Estimate:
            estimate = estimator(counts)
            if counts is None:
                self.as_read[:] = [estimate]
            return estimate

        return judged_estimate(keeping_as_read, self.calibration, self.mode)

    def outcome(self, outcome: str) -> str:
        """An unreadable axis decides nothing."""
        return INCONCLUSIVE if self.unreadable else outcome

    @property
    def readable(self) -> bool:
        """The verdict's ``readable``: under every burden an unreadable axis fails the gate
        (``verdict.passes``), since it measured nothing."""
        return not self.unreadable

    def gate_note(self, confidence: float | None, outcome: str, burden: str) -> str:
        """``_verdicts.gate_note``, unless the judge cannot read the axis (then that decides)."""
        from ._verdicts import gate_note

        if self._by_group[1]:
            return " (INCONCLUSIVE: the judge correction cannot apply, below; not a pass under any burden)"
        if self.unreadable:
            return " (INCONCLUSIVE: the judge cannot read this axis, below; not a pass under any burden)"
        return gate_note(confidence, outcome, burden)

    def note(self) -> str:
        """Lines for the verdict's message."""
        if self.calibration is None:
            if self.asked == OFF:
                return ""
            return f"\n  judge: {self.uncorrected or 'uncorrected (no calibration for this axis)'}"
        if self.unreadable:
            return f"\n  INCONCLUSIVE: {self.unreadable}"
        if self.mode == OFF:
            return f"\n  judge: uncorrected (judge_correction: off); {self.calibration.describe()}"
        how = {FULL: "corrected for the judge's confusion",
               BOUNDS: "bounds between the judge's labels and its corrected confusion (the "
                       "counterfactual calibration cannot tell judge error from the generator's "
                       "non-adherence; judge_correction: full corrects fully)"}[self.mode]
        groups = self._by_group[2] or (
            "\n  judge by group: one confusion assumed for every group (the calibration's "
            "images carry no group; the judge audit by group measures it)")
        return f"\n  judge: {how}; {self.calibration.describe()}{groups}"

    def figures(self) -> dict[str, Any]:
        """The row's ``judge_correction`` and ``judge_calibration`` (plain builtins)."""
        corrected = self.mode != OFF and not self.unreadable and self.as_read
        return {"judge_correction": self.mode,
                "judge_calibration": None if self.calibration is None else self.calibration.to_dict(),
                **({"as_read": self.as_read[-1].to_dict()} if corrected else {}),
                **({"judge_uncorrected": self.uncorrected}
                   if self.uncorrected and self.calibration is None else {}),
                **({"judge_unreadable": self.unreadable} if self.unreadable else {})}


def reference_as_judged(shares: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
    """A reference ideal's shares (BiasConnect A.10: real images read by the same judge) read
    as the generated shares they are compared with: corrected with the same confusion when
    those are (``counts``), as read when they are not (issue #44: it was always as read, so a
    corrected share sat beside a reference still shrunk by the judge's errors). The point
    correction: the reference is fixed while the generated shares' posterior is drawn."""
    shares = np.asarray(shares, dtype=float)
    if counts is None:
        return shares
    corrected = correct_shares(shares, posterior_mean_confusion(counts))
    return shares if np.isnan(corrected).any() else corrected


def is_reference_ideal(axis: AxisSpec | None) -> bool:
    """Whether ``axis``' ideal is measured on reference images (``ideal: {reference: DIR}``)."""
    return axis is not None and isinstance(axis.ideal, dict) and "reference" in axis.ideal


def calibration_prompts(item: PlannedItem, axes: list[AxisSpec]) -> list[str]:
    """The counterfactual prompts that calibrate the judge on ``axes`` for ``item`` (none for
    another source, an LLM-phrased axis not yet phrased, or ``judge_correction: off``)."""
    return list(dict.fromkeys(prompt for prompt, _ in _calibration_images(item, axes)))


def _calibration_images(item: PlannedItem, axes: list[AxisSpec]) -> list[tuple[str, int]]:
    """(prompt, images) of ``calibration_prompts``: ``calibration_draws`` of each axis."""
    if item.plan.judge_correction == OFF or item.plan.audits_folder:
        return []
    images: list[tuple[str, int]] = []
    for axis in axes:
        axis = item.suite.axes.get(axis.name, axis)  # the phrased suite's, when phrased
        if axis.calibration_source != COUNTERFACTUAL_CALIBRATION or (
                axis.counterfactuals_from_llm and not axis.counterfactuals):
            continue  # an LLM-phrased axis not yet phrased: its check draws them as it runs
        images += [(prompt, n) for _, prompt, n in calibration_draws(item.suite, item.subject, axis)]
    return images


def calibration_needs(item: PlannedItem, axes: list[AxisSpec]) -> list[Draw]:
    """The images that calibrate the judge on ``axes`` for ``item`` (``calibration_draws``:
    ``CALIBRATION_IMAGES`` a value over ``calibration_subjects`` whatever the item's n, so every
    look of an adaptive check, and every check of the axis, reads one calibration); ``axes``
    read off each, as the check's own."""
    from ._work import Draw

    return [Draw("candidate", prompt, n, tuple(axes))
            for prompt, n in dict.fromkeys(_calibration_images(item, axes))]


@dataclass(frozen=True)
class AxisReadings:
    """The readings of a kind that judges several axes at once (an IS matrix, IS_mit): an
    entry on axis y is corrected with y's judge, bounded when y's calibration gives bounds,
    and undecidable when y's judge cannot read it."""

    readings: dict[str, JudgeReading]

    def calibration(self) -> dict[str, np.ndarray]:
        """Confusion counts of the axes whose figures are corrected (fully or as bounds)."""
        return {y: r.calibration.counts for y, r in self.readings.items()  # type: ignore[union-attr]
                if r.mode != OFF and not r.unreadable}

    def mode(self, axis: str) -> str:
        reading = self.readings.get(axis)
        return OFF if reading is None else reading.mode

    def unreadable(self, axes: list[str]) -> dict[str, str]:
        """Axis -> why its judge decides nothing, for the axes among ``axes``."""
        return {y: self.readings[y].unreadable for y in axes
                if y in self.readings and self.readings[y].unreadable}

    def judged(self, axis: str, plain: Estimate, corrected: Estimate) -> Estimate:
        """The estimate on ``axis`` under its reading (``JudgeReading.estimate``)."""
        reading = self.readings.get(axis)
        if reading is None:
            return plain
        return reading.estimate(lambda counts: plain if counts is None else corrected)

    def judged_matrix(self, plain: ISMatrix, corrected: ISMatrix) -> ISMatrix:
        """Column y of the IS matrix (every entry read on axis y) under y's reading."""
        value, low, high = corrected.value.copy(), corrected.low.copy(), corrected.high.copy()
        for j, y in enumerate(plain.axes):
            mode = self.mode(y)
            if mode == OFF or self.unreadable([y]):
                value[:, j], low[:, j], high[:, j] = plain.value[:, j], plain.low[:, j], plain.high[:, j]
            elif mode == BOUNDS:
                low[:, j] = np.fmin(plain.low[:, j], corrected.low[:, j])
                high[:, j] = np.fmax(plain.high[:, j], corrected.high[:, j])
        return replace(corrected, value=value, low=low, high=high,
                       method=corrected.method + ", judge-corrected")

    def decided(self, outcome: str, axes: list[str]) -> tuple[str, bool, str]:
        """(outcome, readable, note) once the judges of ``axes`` are accounted for: an axis
        its judge cannot read leaves the verdict inconclusive, failing under every burden."""
        unreadable = self.unreadable(axes)
        if unreadable:
            return INCONCLUSIVE, False, "".join(f"\n  INCONCLUSIVE: {why}" for why in unreadable.values())
        return outcome, True, self.note()

    def note(self) -> str:
        return "".join(r.note() for r in self.readings.values() if not r.unreadable)

    def figures(self) -> dict[str, Any]:
        """``judge_correction`` (one mode, or ``mixed``) and ``judge_calibrations`` by axis."""
        modes = {r.mode for r in self.readings.values()} or {OFF}
        unreadable = {y: r.unreadable for y, r in self.readings.items() if r.unreadable}
        return {"judge_correction": modes.pop() if len(modes) == 1 else "mixed",
                "judge_corrections": {y: r.mode for y, r in self.readings.items()},
                "judge_calibrations": {y: r.calibration.to_dict()
                                       for y, r in self.readings.items() if r.calibration},
                **({"judge_unreadable": unreadable} if unreadable else {})}


def readings_for(ctx: CheckContext[Any], axes: list[str], suite: Any = None) -> AxisReadings:
    """One reading per axis of ``axes`` (``suite``: the phrased suite, default ctx's)."""
    suite = suite or ctx.suite
    return AxisReadings({y: reading_for(ctx, suite.axes[y]) for y in axes})


def item_group(prompt: str | None, calibration: JudgeCalibration | None) -> str | None:
    """The group of ``calibration.groups`` that every image of an item on ``prompt`` is of:
    the one group whose every value the prompt names as a whole word ("a photo of an old
    doctor": ``old``; "young" is not named by "a photo of a youngster", nor "aged" by
    "middle-aged"); None when the prompt names no group, or more than one."""
    if not prompt or calibration is None or not calibration.groups:
        return None

    def names(value: str) -> bool:
        return re.search(rf"(?<![\w-]){re.escape(value.strip())}(?![\w-])", prompt,
                         flags=re.IGNORECASE) is not None

    named = [group for group in calibration.groups if all(map(names, group.split(",")))]
    return named[0] if len(named) == 1 else None


def reading_for(ctx: CheckContext[Any], axis: AxisSpec | None) -> JudgeReading:
    """The reading of ``ctx``'s item on ``axis`` (no axis: nothing to calibrate); its group
    is the one the subject's prompt names (``item_group``), if any."""
    calibration = None if axis is None else judge_calibration(ctx, axis)
    why = folder_uncorrected(ctx, axis) if axis is not None and calibration is None \
        and ctx.plan.judge_correction != OFF else ""
    prompt = ctx.suite.prompt_for(ctx.subject) if ctx.subject else None
    return JudgeReading(calibration, ctx.plan.judge_correction, group=item_group(prompt, calibration),
                        uncorrected=why)


def folder_audit_lines(folder: str | None, suites: list[Any]) -> list[str]:
    """The run header's word on a folder audit's judge: each (suite, subject, axis) whose
    counterfactual images the folder lacks, so its rows are uncorrected (none: no folder)."""
    if not folder:
        return []
    from ..backends.folder import FolderImages
    from ..errors import BackendError
    from ..methods.biasconnect import counterfactual_prompts

    try:
        images = FolderImages(folder)
    except BackendError:  # the run reports the folder itself
        return []
    lacking = []
    for suite in suites:
        for axis in suite.axes.values():
            if axis.calibration_source != COUNTERFACTUAL_CALIBRATION or axis.counterfactuals_from_llm \
                    or suite.judge_correction == OFF:
                continue
            for subject in suite.subjects:
                prompts = counterfactual_prompts(suite, subject, [axis.name]).get(axis.name, {})
                missing = [p for v, p in prompts.items() if v in axis.choices and not images.holds(p)]
                if missing or len(prompts) < len(axis.choices):
                    lacking.append(f"{suite.name}: {subject} / {axis.name}")
    if not lacking:
        return []
    return [f"t2ibias: folder audit: the folder holds no counterfactual images of "
            f"{', '.join(lacking[:8])}{' ...' if len(lacking) > 8 else ''}: the judge is "
            f"uncorrected there (each row says so)"]
