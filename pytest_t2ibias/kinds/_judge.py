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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
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
    correction_mode,
    judged_estimate,
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


CALIBRATION_IMAGES = 48
"""Images a counterfactual prompt that calibrate a judge: 48 a value put the accuracy of a
90%-accurate judge within about ±0.09 (95%), and the same number at every n keeps every look
of an adaptive check on one calibration; an IS check on the subject at n >= 48 has drawn them
already (image i of a prompt is the same whatever n)."""


def judge_calibration(ctx: CheckContext, axis: AxisSpec) -> JudgeCalibration | None:
    """The judge's confusion on ``axis`` from the axis' ``judge_calibration`` source (none
    when the correction is off: no image is drawn for it)."""
    source = axis.calibration_source
    if ctx.plan.judge_correction == OFF or source is None:
        return None
    if source == COUNTERFACTUAL_CALIBRATION:
        if ctx.plan.audits_folder:
            return None  # a folder audit draws nothing
        calibration = counterfactual_calibration(ctx, axis)
    else:
        calibration = folder_calibration(ctx.instrument, axis, Path(source), ctx.interval_confidence)
    if calibration is not None:  # for --t2i-plan's warning next time
        remember(getattr(getattr(ctx.instrument.requests, "cache", None), "root", None), calibration)
    return calibration


def labelled_calibration(ctx: CheckContext, axis: AxisSpec) -> JudgeCalibration | None:
    """The judge on ``axis`` from its labelled folder only: for a check without a subject
    whose counterfactual images could calibrate it (a BGPS gate's prompts are the search's)."""
    if axis.calibration_source == COUNTERFACTUAL_CALIBRATION:
        return None
    return judge_calibration(ctx, axis)


def counterfactual_calibration(ctx: CheckContext, axis: AxisSpec) -> JudgeCalibration | None:
    """The judge on the subject's counterfactual images of ``axis``, each labelled with the
    value its prompt asked for; ``CALIBRATION_IMAGES`` a prompt, which an IS check on the
    same subject at n >= 48 has drawn already (paired seeds): none are drawn twice."""
    from ..methods.biasconnect import counterfactual_prompts

    suite = ctx.counterfactual_suite() if axis.counterfactuals_from_llm else ctx.suite
    prompts = counterfactual_prompts(suite, ctx.subject, [axis.name]).get(axis.name, {})
    prompts = {value: prompt for value, prompt in prompts.items() if value in axis.choices}
    if len(prompts) < len(axis.choices):
        return None  # a value without its prompt: no row of the confusion can be measured
    truth, judged = [], []
    for value, prompt in prompts.items():
        images = ctx.instrument.images([prompt], per_prompt=CALIBRATION_IMAGES)
        answers = ctx.instrument.attributes(images, axis, ctx.suite.filter)
        truth.append(np.full(len(answers.labels), axis.choices.index(value)))
        judged.append(answers.labels)
    return calibration_from_labels(
        ctx.instrument.judge_name(axis), axis.name, axis.choices, np.concatenate(truth),
        np.concatenate(judged), source=COUNTERFACTUAL,
        where=f"{CALIBRATION_IMAGES} counterfactual images a value of {ctx.subject!r}",
        confidence=ctx.interval_confidence)


def folder_calibration(instrument: Instrument, axis: AxisSpec, folder: Path,
                       confidence: float) -> JudgeCalibration:
    """The judge on a labelled folder's images that carry a value of ``axis``."""
    from .._types import ImageSet
    from ..methods.socialcf import labelled_folder

    images, rows = labelled_folder(folder)
    keep = [i for i, row in enumerate(rows) if row.get(axis.name) in axis.choices]
    if not keep:
        raise ValueError(f"judge_calibration folder {folder}: no image of index.jsonl names a "
                         f"value of {axis.name!r} ({', '.join(axis.choices)})")
    answers = instrument.attributes(ImageSet(tuple(images[i] for i in keep)), axis)
    truth = np.array([axis.choices.index(rows[i][axis.name]) for i in keep])
    return calibration_from_labels(instrument.judge_name(axis), axis.name, axis.choices, truth,
                                   answers.labels, source=LABELLED, where=f"{LABELLED} {folder}",
                                   confidence=confidence)


@dataclass(frozen=True)
class JudgeReading:
    """What the correction makes of one item's figures (module doc)."""

    calibration: JudgeCalibration | None
    asked: str = "on"
    """The plan's ``judge_correction``: on, full or off."""

    @property
    def mode(self) -> str:
        """full, bounds or off (what was applied)."""
        return correction_mode(self.asked, self.calibration)

    @property
    def unreadable(self) -> str:
        """Why the judge decides nothing on this axis (empty: it can read it)."""
        if self.mode == OFF or self.calibration is None:
            return ""
        return self.calibration.why_unreadable()

    def estimate(self, estimator: Callable[[np.ndarray | None], Estimate]) -> Estimate:
        """``estimator(calibration counts or None)`` under this reading."""
        return judged_estimate(estimator, self.calibration, self.mode)

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

        if self.unreadable:
            return " (INCONCLUSIVE: the judge cannot read this axis, below; not a pass under any burden)"
        return gate_note(confidence, outcome, burden)

    def note(self) -> str:
        """Lines for the verdict's message."""
        if self.calibration is None:
            return "" if self.asked == OFF else "\n  judge: uncorrected (no calibration for this axis)"
        if self.unreadable:
            return f"\n  INCONCLUSIVE: {self.unreadable}"
        if self.mode == OFF:
            return f"\n  judge: uncorrected (judge_correction: off); {self.calibration.describe()}"
        how = {FULL: "corrected for the judge's confusion",
               BOUNDS: "bounds between the judge's labels and its corrected confusion (the "
                       "counterfactual calibration cannot tell judge error from the generator's "
                       "non-adherence; judge_correction: full corrects fully)"}[self.mode]
        return f"\n  judge: {how}; {self.calibration.describe()}"

    def figures(self) -> dict[str, Any]:
        """The row's ``judge_correction`` and ``judge_calibration`` (plain builtins)."""
        return {"judge_correction": self.mode,
                "judge_calibration": None if self.calibration is None else self.calibration.to_dict(),
                **({"judge_unreadable": self.unreadable} if self.unreadable else {})}


def calibration_prompts(item: PlannedItem, axes: list[AxisSpec]) -> list[str]:
    """The counterfactual prompts that calibrate the judge on ``axes`` for ``item`` (none for
    another source, an LLM-phrased axis not yet phrased, or ``judge_correction: off``)."""
    from ..methods.biasconnect import counterfactual_prompts

    if item.plan.judge_correction == OFF or item.plan.audits_folder:
        return []
    prompts = []
    for axis in axes:
        axis = item.suite.axes.get(axis.name, axis)  # the phrased suite's, when phrased
        if axis.calibration_source != COUNTERFACTUAL_CALIBRATION or (
                axis.counterfactuals_from_llm and not axis.counterfactuals):
            continue  # an LLM-phrased axis not yet phrased: its check draws them as it runs
        by_value = counterfactual_prompts(item.suite, item.subject, [axis.name]).get(axis.name, {})
        prompts += [prompt for value, prompt in by_value.items() if value in axis.choices]
    return prompts


def calibration_needs(item: PlannedItem, axes: list[AxisSpec]) -> list[Draw]:
    """The images that calibrate the judge on ``axes`` for ``item`` (``calibration_prompts``),
    ``CALIBRATION_IMAGES`` a prompt whatever the item's n, so every look of an adaptive check
    reads its judge through the same calibration; ``axes`` read off each, as the check's own."""
    from ._work import Draw

    return [Draw("candidate", prompt, CALIBRATION_IMAGES, tuple(axes))
            for prompt in dict.fromkeys(calibration_prompts(item, axes))]


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


def readings_for(ctx: CheckContext, axes: list[str], suite: Any = None) -> AxisReadings:
    """One reading per axis of ``axes`` (``suite``: the phrased suite, default ctx's)."""
    suite = suite or ctx.suite
    return AxisReadings({y: reading_for(ctx, suite.axes[y]) for y in axes})


def reading_for(ctx: CheckContext, axis: AxisSpec | None) -> JudgeReading:
    """The reading of ``ctx``'s item on ``axis`` (no axis: nothing to calibrate)."""
    calibration = None if axis is None else judge_calibration(ctx, axis)
    return JudgeReading(calibration, ctx.plan.judge_correction)
