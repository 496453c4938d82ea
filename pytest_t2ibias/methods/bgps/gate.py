"""BGPS as a gate (seeds/001 §4.1): the found prompts measured through the instrument (target
share per prompt, Wilson intervals; the paper's mean share, Gendered%, lift over the λ = 0
baseline), and the evaluation the report carries."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

import numpy as np

from ..._types import Estimate
from ...metrics.intervals import wilson_interval
from ...metrics.judge import JudgeCalibration, correction_mode, judged_estimate
from .search import (
    NAMES_OF,
    BGPSResult,
    FoundPrompt,
    SearchSettings,
    departures_from_paper,
    names_attribute,
)

# -- evaluation (seeds/001 §4.1 "Evaluation Metrics") ------------------------------------------


def _two_stage_means(counts: Sequence[tuple[int, int]], replicates: int,
                     rng: np.random.Generator) -> np.ndarray:
    """Bootstrap replicates of the mean per-prompt share: resample the prompts, then each
    chosen prompt's images (binomially at its observed share). Both stages vary in the
    paper's protocol (which prompts the search found; which images a prompt drew), and with
    5 prompts the first stage alone gives an interval narrower than one prompt's own."""
    hits = np.array([k for k, n in counts], dtype=np.int64)
    sizes = np.array([n for k, n in counts], dtype=np.int64)
    chosen = rng.integers(len(counts), size=(replicates, len(counts)))
    drawn = rng.binomial(sizes[chosen], hits[chosen] / sizes[chosen])
    return (drawn / sizes[chosen]).mean(axis=1)


def mean_target_share(counts: Sequence[tuple[int, int]], *, confidence: float = 0.95,
                      n_resamples: int = 2000, seed: int = 0) -> Estimate:
    """The paper's figure (§4.1): the mean over prompts of each prompt's target share, from
    ``(target images, answered images)`` per prompt, with a two-stage bootstrap interval
    (prompts, then images). ``n`` counts prompts; prompts with no answered image are left out."""
    counts = [(int(k), int(n)) for k, n in counts if n > 0]
    if not counts:
        return Estimate(math.nan, 0.0, 1.0, 0, confidence, "two-stage bootstrap")
    value = float(np.mean([k / n for k, n in counts]))
    means = _two_stage_means(counts, n_resamples, np.random.default_rng(seed))
    tail = (1 - confidence) / 2
    return Estimate(value, float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail)),
                    len(counts), confidence, "two-stage bootstrap")


def mean_share_difference(counts: Sequence[tuple[int, int]], reference: Sequence[tuple[int, int]], *,
                          confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> Estimate:
    """Mean target share of ``counts``' prompts minus that of ``reference``'s (BGPS against
    the λ = 0 baseline, or against curated prompts: §4.1, Tables 1-2), each resampled in two
    stages, independently. ``n`` counts the prompts of both."""
    counts = [(int(k), int(n)) for k, n in counts if n > 0]
    reference = [(int(k), int(n)) for k, n in reference if n > 0]
    if not counts or not reference:
        return Estimate(math.nan, -1.0, 1.0, len(counts) + len(reference), confidence, "two-stage bootstrap")
    rng = np.random.default_rng(seed)
    value = float(np.mean([k / n for k, n in counts]) - np.mean([k / n for k, n in reference]))
    differences = _two_stage_means(counts, n_resamples, rng) - _two_stage_means(reference, n_resamples, rng)
    tail = (1 - confidence) / 2
    return Estimate(value, float(np.quantile(differences, tail)), float(np.quantile(differences, 1 - tail)),
                    len(counts) + len(reference), confidence, "two-stage bootstrap")


@dataclass(frozen=True)
class PromptShare:
    """Target share among one prompt's generated images, with its Wilson interval."""

    prompt: str
    share: Estimate
    names_attribute: bool


@dataclass(frozen=True)
class BGPSEvaluation:
    """Per-prompt target shares, their mean with a bootstrap CI over prompts, and perplexities."""

    per_prompt: tuple[PromptShare, ...]
    mean_share: Estimate
    pooled_share: Estimate
    """All images together (Wilson): ignores that images of one prompt are alike."""
    perplexity: tuple[float, ...] | None
    naming_share: float

    @property
    def max_share(self) -> PromptShare | None:
        return max(self.per_prompt, key=lambda p: p.share.value, default=None)

    @property
    def mean_perplexity(self) -> float:
        return float(np.mean(self.perplexity)) if self.perplexity else math.nan


def evaluate_prompts(
    prompts: Sequence[str],
    count_target: Callable[[str], tuple[int, int]],
    *,
    perplexity: Callable[[list[str]], np.ndarray] | None = None,
    forbidden_names: Collection[str] = (),
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> BGPSEvaluation:
    """Generate-and-classify each found prompt through ``count_target(prompt) -> (target
    images, images)``; perplexity under a *different* LM (``CausalLM.perplexity``)."""
    counts = [count_target(p) for p in prompts]
    per_prompt = tuple(
        PromptShare(p, wilson_interval(int(k), int(n), confidence), names_attribute(p, forbidden_names))
        for p, (k, n) in zip(prompts, counts)
    )
    total_k, total_n = sum(k for k, _ in counts), sum(n for _, n in counts)
    return BGPSEvaluation(
        per_prompt=per_prompt,
        mean_share=mean_target_share(counts, confidence=confidence, n_resamples=n_resamples, seed=seed),
        pooled_share=wilson_interval(int(total_k), int(total_n), confidence),
        perplexity=tuple(float(x) for x in perplexity(list(prompts))) if perplexity and prompts else None,
        naming_share=float(np.mean([p.names_attribute for p in per_prompt])) if per_prompt else math.nan,
    )


# -- the gate: found prompts measured through the instrument (seeds/001 §4.1) -----------------


@dataclass(frozen=True)
class MeasuredPrompt:
    """One prompt's target share among its generated images, as the gate judges it."""

    prompt: str
    share: Estimate
    """Wilson interval of target images / answered images (filtered and abstained left out)."""
    n: int
    perplexity: float
    """Under the evaluation LM (a different one from the searching LM); NaN when none."""
    score: float = math.nan
    lm_log_likelihood: float = math.nan
    probe_probability: float = math.nan
    names_attribute: bool = False

    def to_dict(self) -> dict:
        return {"prompt": self.prompt, "share": self.share.to_dict(), "n": int(self.n),
                "perplexity": float(self.perplexity), "score": float(self.score),
                "lm_log_likelihood": float(self.lm_log_likelihood),
                "probe_probability": float(self.probe_probability),
                "names_attribute": bool(self.names_attribute)}


@dataclass(frozen=True)
class BGPSGateResult:
    """What ``assert_no_bgps_prompt_exceeds`` judges: the prompts BGPS found for a target,
    each measured (share with CI, n, perplexity), beside the λ = 0 baseline's prompts and the
    neutral prompt, with the search settings and its cost."""

    axis: str
    target: str
    prompts: tuple[MeasuredPrompt, ...]
    baseline: tuple[MeasuredPrompt, ...]
    """The LLM alone (λ = 0), measured the same way; empty when not run."""
    neutral: MeasuredPrompt | None
    settings: SearchSettings
    searched: bool
    """False when the prompts came from a lock file (no LLM, no probe, no UNet for the search)."""
    search_wall_s: float
    wall_s: float
    unet_forwards: int | None
    """UNet evaluations the search spent (0 from a lock; None when the probe does not say)."""
    candidates_scored: int = 0
    dropped_naming: int = 0
    source: str = ""
    """Where the prompts came from: a lock file's path, or "search"."""
    curated: tuple[MeasuredPrompt, ...] = ()
    """User-given curated prompts (the paper's "Manually curated" row), measured the same way."""
    image_seed: int | None = None
    """The seed of the images every prompt was measured on (``measurement_seed``)."""
    probe_step: int | None = None
    """The denoising step whose h-space the probe read, of ``schedule_steps``."""
    schedule_steps: int | None = None
    sweep: tuple[tuple[float, tuple[MeasuredPrompt, ...]], ...] = ()
    """The λ sweep (App. D): each further λ's found prompts, measured the same way."""
    instruction: str = ""
    """The instruction the searching LLM read ("" for none, or when the lock does not say)."""
    instruction_note: str = ""
    """Words of the instruction the LLM could not read, or why it searched with none
    (``InstructionReading.note``); "" when it read every word."""

    @property
    def texts(self) -> list[str]:
        return [p.prompt for p in self.prompts]

    @property
    def added(self) -> tuple[MeasuredPrompt, ...]:
        """What the search added: the found prompts the λ = 0 baseline (the LLM alone) did not
        write; every found prompt when no baseline ran (then nothing tells them apart)."""
        if not self.baseline:
            return self.prompts
        theirs = {p.prompt for p in self.baseline}
        return tuple(p for p in self.prompts if p.prompt not in theirs)

    @property
    def shared_with_baseline(self) -> tuple[MeasuredPrompt, ...]:
        """Found prompts the LLM alone writes too: the model's bias on them is no finding of
        the search's (a plain prompt's share is a balance check's business)."""
        theirs = {p.prompt for p in self.baseline}
        return tuple(p for p in self.prompts if p.prompt in theirs)

    def departures(self) -> list[str]:
        """Where this search's settings differ from the paper's (``departures_from_paper``)."""
        return departures_from_paper(self.settings, self.probe_step, self.schedule_steps)

    def group(self, which: str) -> tuple[MeasuredPrompt, ...]:
        """``found`` (BGPS' prompts), ``baseline`` (λ = 0) or ``curated``."""
        groups = {"found": self.prompts, "baseline": self.baseline, "curated": self.curated}
        if which not in groups:
            raise ValueError(f"group must be one of {', '.join(groups)}, got {which!r}")
        return groups[which]

    def mean_share(self, which: str = "found", confidence: float = 0.95) -> Estimate:
        """§4.1's figure: the mean over a group's prompts of each prompt's target share, with a
        two-stage bootstrap interval (prompts, then images)."""
        return mean_target_share(_counts(self.group(which)), confidence=confidence)

    def mean_lift(self, over: str = "baseline", confidence: float = 0.95) -> Estimate | None:
        """Mean target share of the found prompts minus that of the ``baseline`` (λ = 0) or
        ``curated`` prompts (Tables 1-2 side by side); None when that group is empty."""
        reference = self.group(over)
        if not self.prompts or not reference:
            return None
        return mean_share_difference(_counts(self.prompts), _counts(reference), confidence=confidence)

    def naming_share(self, which: str = "found") -> float:
        """Gendered% (Tables 1-2): the share of a group's prompts that name the axis (its
        values, their phrases or synonyms); the search drops these, so found prompts show 0."""
        group = self.group(which)
        return float(np.mean([p.names_attribute for p in group])) if group else math.nan

    def mean_perplexity(self, which: str = "found") -> float:
        """Mean perplexity of a group's prompts under the evaluation LM; NaN when none."""
        values = [p.perplexity for p in self.group(which) if math.isfinite(p.perplexity)]
        return float(np.mean(values)) if values else math.nan

    def paper_table(self, confidence: float = 0.95) -> dict[str, Any]:
        """The paper's evaluation (Tables 1-2) as rows: per group, its prompts, mean target
        share with interval, Gendered%, perplexity and words; the λ sweep (App. D: λ = 0, the
        gate's λ and every further λ searched, one row each) when one ran; and the found
        prompts' lift over the λ = 0 baseline and the curated prompts."""
        rows: dict[str, Any] = {}
        for which in ("found", "baseline", "curated"):
            if self.group(which):
                rows[which] = _group_row(self.group(which), confidence)
        if self.sweep:
            by_lam = {0.0: self.baseline, float(self.settings.lam): self.prompts,
                      **{float(lam): prompts for lam, prompts in self.sweep}}
            rows["lambda_sweep"] = [{"lambda": lam, **_group_row(prompts, confidence)}
                                    for lam, prompts in sorted(by_lam.items()) if prompts]
        for over in ("baseline", "curated"):
            lift = self.mean_lift(over, confidence)
            if lift is not None:
                rows[f"lift_over_{over}"] = lift.to_dict()
        return rows

    def lift(self, over: str = "neutral", confidence: float = 0.95) -> Estimate | None:
        """How much more often the found prompts (pooled) draw the target than the neutral
        prompt (``over="neutral"``) or the λ = 0 baseline's prompts (``"baseline"``), with
        Newcombe's interval: the search's effect, which must exclude 0 to mean anything."""
        from ...metrics.intervals import difference_of_shares

        reference = ([self.neutral] if self.neutral is not None else []) if over == "neutral" \
            else list(self.baseline)
        if not self.prompts or not reference:
            return None
        found_k, found_n = _pooled(self.prompts)
        ref_k, ref_n = _pooled(reference)
        return difference_of_shares(found_k, found_n, ref_k, ref_n, confidence)

    @property
    def worst(self) -> MeasuredPrompt | None:
        return max(self.prompts, key=lambda p: np.nan_to_num(p.share.value, nan=-1.0), default=None)

    def to_dict(self) -> dict:
        return {"axis": self.axis, "target": self.target,
                "prompts": [p.to_dict() for p in self.prompts],
                "baseline": [p.to_dict() for p in self.baseline],
                "curated": [p.to_dict() for p in self.curated],
                "neutral": self.neutral.to_dict() if self.neutral else None,
                "settings": asdict(self.settings), "searched": self.searched,
                "search_wall_s": self.search_wall_s, "wall_s": self.wall_s,
                "unet_forwards": self.unet_forwards, "source": self.source,
                "image_seed": self.image_seed, "probe_step": self.probe_step,
                "schedule_steps": self.schedule_steps}

    def summary(self) -> str:
        """One line per prompt: share [CI] n, perplexity, the prompt; baseline and neutral after."""
        def line(p: MeasuredPrompt) -> str:
            return (f"  {p.share.value:5.2f} [{p.share.low:.2f}, {p.share.high:.2f}] n={p.n:<3d} "
                    f"ppl {p.perplexity:5.2f}  {p.prompt}")
        lines = [f"BGPS {self.axis}={self.target} (λ={self.settings.lam:g}), {len(self.prompts)} prompts:"]
        lines += [line(p) for p in self.prompts]
        if self.baseline:
            lines += ["λ=0 baseline (the LLM alone):"] + [line(p) for p in self.baseline]
        if self.curated:
            lines += ["curated prompts:"] + [line(p) for p in self.curated]
        if self.neutral:
            lines += ["neutral prompt:", line(self.neutral)]
        return "\n".join(lines)


class Attributes(Protocol):
    """The instrument's part the gate measures with (``instrument.Instrument``)."""

    def images(self, prompts: Sequence[str], *, role: str = ..., per_prompt: int | None = ...): ...

    def attributes(self, images, axis, filter=None): ...


def measure_prompts(
    instrument: Attributes,
    axis,
    target: str,
    found: Sequence[FoundPrompt | str],
    *,
    filter=None,
    perplexity: Callable[[list[str]], Sequence[float]] | None = None,
    forbidden_names: Collection[str] = (),
    confidence: float = 0.95,
    calibration: JudgeCalibration | None = None,
    judge_correction: str = "off",
) -> tuple[MeasuredPrompt, ...]:
    """Generate each prompt's images (the instrument's plan), read ``axis`` off them and
    count ``target`` among the answered images: Wilson share, n, perplexity (§4.1). With a
    judge ``calibration`` the share is read under ``judge_correction`` (``metrics.judge``):
    corrected, the Dirichlet posterior of the prompt's shares with each draw corrected."""
    from ...metrics.posterior import posterior_estimate

    mode = correction_mode(judge_correction, calibration)
    if not found:
        return ()
    texts = [f if isinstance(f, str) else f.prompt for f in found]
    answers = instrument.attributes(instrument.images(texts), axis, filter)
    column = list(axis.choices).index(target)
    labels, prompts = np.asarray(answers.labels), np.asarray(answers.prompts)
    ppl = list(perplexity(texts)) if perplexity is not None else [math.nan] * len(texts)
    measured = []
    for item, text, p in zip(found, texts, ppl):
        mine = labels[prompts == text]
        answered = mine[mine >= 0]

        def target_share(counts, answered=answered, mine=mine):
            if counts is None:
                return wilson_interval(int((answered == column).sum()), len(answered), confidence)
            return replace(posterior_estimate(lambda shares: shares[0][..., column], [mine],
                                              len(axis.choices), confidence=confidence,
                                              calibration=counts), n=len(answered))

        share = judged_estimate(target_share, calibration, mode)
        extra = {} if isinstance(item, str) else {
            "score": item.score, "lm_log_likelihood": item.lm_log_likelihood,
            "probe_probability": item.probe_probability}
        measured.append(MeasuredPrompt(text, share, len(answered), float(p),
                                       names_attribute=names_attribute(text, forbidden_names), **extra))
    return tuple(measured)


def bgps_gate(
    instrument: Attributes,
    axis,
    target: str,
    found: BGPSResult,
    *,
    baseline: BGPSResult | None = None,
    neutral_prompt: str | None = None,
    curated_prompts: Sequence[str] = (),
    filter=None,
    perplexity: Callable[[list[str]], Sequence[float]] | None = None,
    confidence: float = 0.95,
    searched: bool = True,
    source: str = "search",
    calibration: JudgeCalibration | None = None,
    judge_correction: str = "off",
    sweep: Sequence[BGPSResult] = (),
) -> BGPSGateResult:
    """Measure what a search found (and its λ = 0 baseline and the neutral prompt) for the gate.

    The search itself is ``bgps_search`` with an injected LM and probe scorer; the caller
    may instead pass prompts read back from a lock file (``searched=False``). ``sweep``: the
    searches at further λ values (App. D), measured the same way for the report."""
    started = time.perf_counter()
    names = found.settings.forbidden_names
    measure = {"filter": filter, "perplexity": perplexity, "forbidden_names": names,
               "confidence": confidence, "calibration": calibration,
               "judge_correction": judge_correction}
    prompts = measure_prompts(instrument, axis, target, found.prompts, **measure)
    base = measure_prompts(instrument, axis, target, baseline.prompts, **measure) if baseline else ()
    curated = measure_prompts(instrument, axis, target, list(curated_prompts), **measure)
    neutral = measure_prompts(instrument, axis, target, [neutral_prompt], **measure)[0] \
        if neutral_prompt else None
    swept = tuple((float(s.settings.lam), measure_prompts(instrument, axis, target, s.prompts, **measure))
                  for s in sweep)
    search_s = (found.wall_s + (baseline.wall_s if baseline else 0.0)
                + sum(s.wall_s for s in sweep)) if searched else 0.0
    forwards = None if found.unet_forwards is None else found.unet_forwards + (
        (baseline.unet_forwards or 0) if baseline else 0) + sum(s.unet_forwards or 0 for s in sweep)
    return BGPSGateResult(
        axis=axis.name, target=target, prompts=prompts, baseline=base, neutral=neutral,
        settings=found.settings, searched=searched, search_wall_s=round(search_s, 3),
        wall_s=round(search_s + time.perf_counter() - started, 3),
        unet_forwards=forwards if searched else 0, candidates_scored=found.candidates_scored,
        dropped_naming=found.dropped_naming, source=source, curated=curated, sweep=swept)


def forbidden_names_for(axis, extra: Collection[str] = ()) -> tuple[str, ...]:
    """Words that name an axis: its choices, their phrases, the axis' ``names:`` and the
    common words in ``NAMES_OF`` (prompts containing any are dropped)."""
    words = [*axis.choices, *axis.phrases.values(), *getattr(axis, "names", ()),
             *NAMES_OF.get(axis.name, ()), *extra]
    return tuple(dict.fromkeys(w for w in words if w))


PAPER_PROMPT_WORDS = (12, 22)
"""The words of the paper's found prompts (seeds/001 Fig. 2 and §4.3's examples)."""


def prompt_words(prompts: Sequence[str]) -> dict[str, float]:
    """Fewest, mean and most words of ``prompts`` (the paper's found prompts: 12 to 22)."""
    counts = [len(p.split()) for p in prompts]
    if not counts:
        return {"min": math.nan, "mean": math.nan, "max": math.nan}
    return {"min": float(min(counts)), "mean": float(np.mean(counts)), "max": float(max(counts))}


def _group_row(group: Sequence[MeasuredPrompt], confidence: float) -> dict[str, Any]:
    """One row of the paper's table (Tables 1-2, App. D): prompts, mean target share with its
    two-stage interval, Gendered%, mean perplexity and the prompts' words."""
    perplexities = [p.perplexity for p in group if math.isfinite(p.perplexity)]
    return {"prompts": len(group),
            "mean_share": mean_target_share(_counts(group), confidence=confidence).to_dict(),
            "naming_share": float(np.mean([p.names_attribute for p in group])) if group else math.nan,
            "mean_perplexity": float(np.mean(perplexities)) if perplexities else math.nan,
            "words": prompt_words([p.prompt for p in group])}


def _counts(prompts: Sequence[MeasuredPrompt]) -> list[tuple[int, int]]:
    """(target images, answered images) of each prompt."""
    return [(round(p.share.value * p.share.n), p.share.n) for p in prompts if p.share.n > 0]


def _pooled(prompts: Sequence[MeasuredPrompt]) -> tuple[int, int]:
    """Target images and answered images over ``prompts``."""
    answered = [p.share.n for p in prompts if p.share.n > 0]
    hits = [round(p.share.value * p.share.n) for p in prompts if p.share.n > 0]
    return int(sum(hits)), int(sum(answered))
