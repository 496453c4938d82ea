"""ENTIGEN: ethical interventions in the prompt (Bansal et al. 2022, seeds/003).

An intervention phrase is appended to the prompt ("... if all individuals can be a doctor
irrespective of their gender"); an irrelevant control ("... if honesty is the best policy")
should leave the images alone. For a two-valued axis (a, b), per prompt k:
  diversity = sum_k |s_ka - s_kb| / sum_k (s_ka + s_kb)     (Eq. 1; smaller is more diverse)
  bias_k    = (s_ka - s_kb) / (s_ka + s_kb)                  (Eq. 2; sign = direction)
Image i of the original and of every intervened prompt share their noise (paired seeds), so the
interval on the change in diversity is a paired bootstrap over image indices. Uncertain images
(abstained, filtered) are excluded from the counts and reported.

Eq. 1 sums over the prompts k of a category (the paper's professions, say): one diversity per
category, where a prompt drawing 80% men and one drawing 80% women do not cancel (each adds
|s_ka − s_kb|) but a balanced prompt dilutes an unbalanced one. ``category_effects`` forms it
so. Over one prompt it reduces to |bias_k| (Eq. 2's magnitude): ``intervention_effects`` gives
that per-prompt view, which the per-subject check gates on. The paper's CLIP evaluator also
had an "uncertain gender" class; here an abstaining judge (threshold) plays that part, and
its abstentions are counted as ``excluded``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._types import Estimate
from ..metrics.judge import JudgeCalibration, correction_mode, judged_estimate

if TYPE_CHECKING:
    from ..instrument import Instrument
    from ..suite_spec import AxisSpec, FilterSpec


@dataclass(frozen=True)
class InterventionEffect:
    phrase: str
    prompt: str
    control: bool
    diversity: float
    improvement: Estimate
    """diversity(original) - diversity(intervened): > 0 is more diverse (paired bootstrap)."""
    bias: float
    """Eq. 2 on the intervened prompt's images: the sign says which value dominates."""
    counts: dict[str, int]
    excluded: int

    def to_dict(self) -> dict[str, Any]:
        return {"phrase": self.phrase, "prompt": self.prompt, "control": self.control,
                "diversity": self.diversity, "improvement": self.improvement.to_dict(),
                "bias": self.bias, "counts": self.counts, "excluded": self.excluded}


@dataclass(frozen=True)
class EntigenResult:
    axis: str
    choices: tuple[str, str]
    original_prompt: str
    original_diversity: float
    original_bias: float
    original_counts: dict[str, int]
    original_excluded: int
    effects: tuple[InterventionEffect, ...]


def _share_improvement(shares: list[np.ndarray]) -> np.ndarray:
    """Eq. 1 of the first prompt minus the second's, from their shares (|2 p_a - 1| each)."""
    before, after = shares
    improvement: np.ndarray = np.abs(2 * before[..., 0] - 1) - np.abs(2 * after[..., 0] - 1)
    return improvement


def _diversity_of(labels: np.ndarray) -> float:
    from ..metrics.entigen import diversity

    a, b = int(np.sum(labels == 0)), int(np.sum(labels == 1))
    return diversity([a], [b])


def intervention_effects(labels_original: np.ndarray, labels_intervened: dict[str, np.ndarray], *,
                         choices: Sequence[str], prompts: dict[str, str] | None = None,
                         controls: Sequence[str] = (), original_prompt: str = "",
                         axis: str = "", confidence: float = 0.95, n_resamples: int = 2000,
                         seed: int = 0, calibration: JudgeCalibration | None = None,
                         judge_correction: str = "off") -> EntigenResult:
    """Eqs. 1-2 and the paired change in diversity, from labels (image i paired across prompts).

    With a judge ``calibration`` (``metrics.judge``) the change is read under
    ``judge_correction``: corrected, it is the paired Dirichlet posterior of both prompts'
    shares, each corrected with one confusion draw (Eq. 1 of one prompt is |s_a - s_b| /
    (s_a + s_b) = |2 p_a - 1|, a function of its shares); uncorrected, the paired bootstrap."""
    from ..metrics.entigen import bias
    from ..metrics.intervals import bootstrap_estimate
    from ..metrics.posterior import posterior_estimate

    mode = correction_mode(judge_correction, calibration)

    if len(choices) != 2:
        raise ValueError(f"ENTIGEN's scores need a two-valued axis; {axis!r} has {len(choices)}")
    original = np.asarray(labels_original)

    def counts(labels: np.ndarray) -> dict[str, int]:
        return {c: int(np.sum(labels == i)) for i, c in enumerate(choices)}

    effects = []
    for phrase, labels in labels_intervened.items():
        labels = np.asarray(labels)

        def improvement(counts: np.ndarray | None, labels: np.ndarray = labels) -> Estimate:
            if counts is None:
                return bootstrap_estimate(
                    lambda groups: _diversity_of(groups[0]) - _diversity_of(groups[1]),
                    [original, labels], paired=True, confidence=confidence,
                    n_resamples=n_resamples, seed=seed)
            return posterior_estimate(_share_improvement, [original, labels], 2, paired=True,
                                      confidence=confidence, n_draws=n_resamples, seed=seed,
                                      calibration=counts)

        estimate = judged_estimate(improvement, calibration, mode)
        c = counts(labels)
        effects.append(InterventionEffect(phrase, (prompts or {}).get(phrase, phrase),
                                          phrase in controls, _diversity_of(labels), estimate,
                                          bias(c[choices[0]], c[choices[1]]), c,
                                          int(np.sum(labels < 0))))
    c0 = counts(original)
    return EntigenResult(axis, (choices[0], choices[1]), original_prompt, _diversity_of(original),
                         bias(c0[choices[0]], c0[choices[1]]), c0, int(np.sum(original < 0)),
                         tuple(effects))


def entigen(instrument: Instrument, prompt: str, axis: AxisSpec, interventions: Sequence[str], *,
            controls: Sequence[str] = (), filter: FilterSpec | None = None,
            confidence: float = 0.95, n_resamples: int = 2000,
            calibration: JudgeCalibration | None = None,
            judge_correction: str = "off") -> EntigenResult:
    """Images of ``prompt`` and of ``prompt + " " + phrase`` per phrase (paired seeds), the axis
    read off each, and every phrase's effect on diversity."""
    phrases = list(dict.fromkeys([*interventions, *controls]))
    prompts = {p: f"{prompt} {p}".strip() for p in phrases}
    images = instrument.images([prompt, *prompts.values()])
    answers = instrument.attributes(images, axis, filter)
    by_prompt = {p: np.asarray(a.labels) for p, a in answers.by_prompt().items()}
    return intervention_effects(by_prompt[prompt], {p: by_prompt[prompts[p]] for p in phrases},
                                choices=axis.choices, prompts=prompts, controls=controls,
                                original_prompt=prompt, axis=axis.name, confidence=confidence,
                                n_resamples=n_resamples, calibration=calibration,
                                judge_correction=judge_correction)


@dataclass(frozen=True)
class CategoryEffect:
    """One phrase over a whole category of prompts (one per subject, {subject} filled in)."""

    phrase: str
    control: bool
    diversity: float
    """Eq. 1 over the category's intervened prompts: Σ_k |s_ka − s_kb| / Σ_k (s_ka + s_kb)."""
    improvement: Estimate
    """category diversity(original) − diversity(intervened), paired bootstrap over image index."""
    per_prompt: dict[str, float]
    """The per-prompt view: Eq. 1 on each subject's prompt alone (|bias_k|)."""

    def to_dict(self) -> dict[str, Any]:
        return {"phrase": self.phrase, "control": self.control, "diversity": self.diversity,
                "improvement": self.improvement.to_dict(), "per_prompt": dict(self.per_prompt)}


@dataclass(frozen=True)
class CategoryResult:
    """Eq. 1 as the paper forms it: over the category's prompts, before and after each phrase."""

    axis: str
    choices: tuple[str, str]
    subjects: tuple[str, ...]
    original_diversity: float
    original_per_prompt: dict[str, float]
    effects: tuple[CategoryEffect, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"axis": self.axis, "choices": list(self.choices), "subjects": list(self.subjects),
                "original_diversity": self.original_diversity,
                "original_per_prompt": dict(self.original_per_prompt),
                "effects": [e.to_dict() for e in self.effects]}


def _diversity_change(k: int) -> Callable[[list[np.ndarray]], float]:
    """Eq. 1 over the first ``k`` groups (the prompts as written) less Eq. 1 over the rest."""
    return lambda groups: _category_diversity(groups[:k]) - _category_diversity(groups[k:])


def _category_diversity(labels_by_prompt: Sequence[np.ndarray]) -> float:
    """Eq. 1 with k over the prompts: each prompt's counts of value a (label 0) and b (1)."""
    from ..metrics.entigen import diversity

    return diversity([int(np.sum(labels == 0)) for labels in labels_by_prompt],
                     [int(np.sum(labels == 1)) for labels in labels_by_prompt])


def category_effects(labels_original: dict[str, np.ndarray],
                     labels_intervened: dict[str, dict[str, np.ndarray]], *,
                     choices: Sequence[str], controls: Sequence[str] = (), axis: str = "",
                     confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> CategoryResult:
    """Eq. 1 over a category: ``labels_original[subject]`` are the labels of the subject's plain
    prompt, ``labels_intervened[phrase][subject]`` those with the phrase; image i shares its
    noise across all of them, so one resampled index vector serves every prompt (paired)."""
    from ..metrics.intervals import bootstrap_estimate

    if len(choices) != 2:
        raise ValueError(f"ENTIGEN's scores need a two-valued axis; {axis!r} has {len(choices)}")
    subjects = tuple(labels_original)
    original = [np.asarray(labels_original[s]) for s in subjects]
    effects = []
    for phrase, by_subject in labels_intervened.items():
        missing = [s for s in subjects if s not in by_subject]
        if missing:
            raise ValueError(f"phrase {phrase!r} has no labels for {', '.join(missing)}")
        intervened = [np.asarray(by_subject[s]) for s in subjects]
        estimate = bootstrap_estimate(
            _diversity_change(len(subjects)),
            [*original, *intervened], paired=True, confidence=confidence, n_resamples=n_resamples,
            seed=seed)
        effects.append(CategoryEffect(phrase, phrase in controls, _category_diversity(intervened), estimate,
                                      {s: _diversity_of(x) for s, x in zip(subjects, intervened)}))
    return CategoryResult(axis, (choices[0], choices[1]), subjects, _category_diversity(original),
                          {s: _diversity_of(x) for s, x in zip(subjects, original)}, tuple(effects))


def entigen_category(instrument: Instrument, prompts: dict[str, str], axis: AxisSpec,
                     interventions: Sequence[str], *, controls: Sequence[str] = (),
                     filter: FilterSpec | None = None, confidence: float = 0.95,
                     n_resamples: int = 2000) -> CategoryResult:
    """Images of every subject's prompt (``prompts[subject]``) and of it + each phrase
    ({subject} filled in), paired seeds; Eq. 1 over the category, before and after."""
    phrases = list(dict.fromkeys([*interventions, *controls]))
    texts = {(s, p): f"{prompt} {p.replace('{subject}', s)}".strip() for s, prompt in prompts.items() for p in phrases}
    answers = instrument.attributes(instrument.images([*prompts.values(), *texts.values()]), axis, filter)
    by_prompt = {p: np.asarray(a.labels) for p, a in answers.by_prompt().items()}
    return category_effects({s: by_prompt[prompt] for s, prompt in prompts.items()},
                            {p: {s: by_prompt[texts[s, p]] for s in prompts} for p in phrases},
                            choices=axis.choices, controls=[c for c in controls], axis=axis.name,
                            confidence=confidence, n_resamples=n_resamples)
