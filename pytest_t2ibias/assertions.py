"""Assertion helpers: a figure, its interval, a threshold, and a message with all three.

Each ``assert_*`` has an ``evaluate_*`` twin returning a ``Verdict`` (the suite checks use
those, so passing items report their figures too). With ``confidence=`` a helper fails only
when the whole interval lies on the wrong side of the threshold: a gate that does not flap
on sampling noise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ._types import Answers, Estimate
from .metrics import (
    ISMatrix,
    bootstrap_estimate,
    distribution_of,
    ideal_shares,
    normalised_w1,
    pooled_shares,
    severity,
)
from .metrics.distributions import Distribution
from .verdict import CheckFailed, Verdict, report_verdict

DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 1000


def _raise_unless(verdict: Verdict) -> Verdict:
    """Report the verdict (the test's report rows), then fail the test if it did not pass."""
    __tracebackhide__ = True
    report_verdict(verdict)
    if not verdict.passed:
        raise CheckFailed(verdict)
    return verdict


def _judge_upper(estimate: Estimate, threshold: float, confidence: float | None) -> bool:
    """Pass when the figure is at most ``threshold``; with ``confidence``, fail only when
    the whole interval is above it."""
    if np.isnan(estimate.value):
        return False
    if confidence is None:
        return estimate.value <= threshold
    return estimate.low <= threshold


def _gate_note(confidence: float | None, passed: bool) -> str:
    if confidence is None:
        return ""
    pct = round(confidence * 100)
    if passed:
        return f" (confidence gate: passes unless the whole {pct}% CI is on the wrong side)"
    return f" (confidence gate: the whole {pct}% CI is on the wrong side)"


# -- answers in, per-prompt labels out --------------------------------------------------------


def _per_prompt_labels(answers: Answers | Distribution | Mapping[str, int]):
    """(choices, [labels per prompt], prompt names, abstained, filtered) for any input form."""
    if isinstance(answers, Answers):
        groups = answers.by_prompt()
        return (answers.choices, [g.labels for g in groups.values()], list(groups),
                answers.abstentions, answers.filtered)
    if isinstance(answers, Distribution):
        labels = np.repeat(np.arange(len(answers.choices)), answers.counts)
        return answers.choices, [labels], ["(counts)"], answers.abstentions, answers.filtered
    if isinstance(answers, Mapping):
        choices = tuple(answers)
        labels = np.repeat(np.arange(len(choices)), [int(answers[c]) for c in choices])
        return choices, [labels], ["(counts)"], 0, 0
    raise TypeError(
        f"expected Answers, a Distribution or a mapping of counts, got {type(answers).__name__}"
    )


def _describe_counts(choices: Sequence[str], groups: Sequence[np.ndarray],
                     abstained: int, filtered: int) -> str:
    labels = np.concatenate(groups) if groups else np.empty(0, dtype=int)
    dist = distribution_of(labels, choices)
    counts = ", ".join(f"{c}={k}" for c, k in zip(choices, dist.counts))
    extra = []
    if abstained:
        extra.append(f"{abstained} abstained")
    if filtered:
        extra.append(f"{filtered} filtered out")
    return counts + (f"; {', '.join(extra)}" if extra else "")


# -- OpenBias severity ---------------------------------------------------------------------


def evaluate_entropy_below(
    answers: Answers | Distribution | Mapping[str, int],
    threshold: float,
    *,
    confidence: float | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    label: str = "",
) -> Verdict:
    """OpenBias severity (Eq. 6) of the context-free distribution (Eq. 5) vs ``threshold``."""
    choices, groups, prompts, abstained, filtered = _per_prompt_labels(answers)
    n_choices = len(choices)

    def statistic(resampled: list[np.ndarray]) -> float:
        return float(severity(pooled_shares(resampled, n_choices)))

    estimate = bootstrap_estimate(statistic, groups, confidence=confidence or DEFAULT_CONFIDENCE,
                                  n_resamples=n_resamples, seed=seed)
    passed = _judge_upper(estimate, threshold, confidence)
    per_prompt = {p: float(severity(pooled_shares([g], n_choices))) for p, g in zip(prompts, groups)}
    worst = sorted(per_prompt.items(), key=lambda kv: -np.nan_to_num(kv[1], nan=-1))[:5]
    subject = f" of {label}" if label else ""
    verb = "is within" if passed else "exceeds"
    message = (
        f"severity{subject} {estimate} {verb} threshold {threshold:.3f} "
        f"(margin {threshold - estimate.value:+.3f}){_gate_note(confidence, passed)}\n"
        f"  answers: {_describe_counts(choices, groups, abstained, filtered)}\n"
        f"  severity = 1 - H(p)/log|C|: 0 uniform, 1 one class"
    )
    if len(prompts) > 1:
        message += "\n  most severe prompts: " + "; ".join(f"{p!r} {v:.3f}" for p, v in worst)
    return Verdict(
        passed=passed,
        check="entropy_below",
        value=estimate,
        threshold=threshold,
        message=message,
        figures={"distribution": distribution_of(np.concatenate(groups), choices).to_dict(),
                 "per_prompt": per_prompt, "label": label},
    )


def assert_entropy_below(answers, threshold: float, *, confidence: float | None = None,
                         **kwargs: Any) -> Verdict:
    """Fail if OpenBias severity 1 - H(p)/log|C| is above ``threshold``."""
    __tracebackhide__ = True
    return _raise_unless(evaluate_entropy_below(answers, threshold, confidence=confidence,
                                                **kwargs))


# -- normalised Wasserstein-1 to the ideal ----------------------------------------------------


def evaluate_w1_below(
    answers: Answers | Distribution | Mapping[str, int],
    threshold: float,
    *,
    ideal: Any = "uniform",
    ordered: bool = False,
    confidence: float | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    label: str = "",
) -> Verdict:
    """Normalised W1 (BiasConnect Eq. 1) between the answers and the ideal vs ``threshold``."""
    choices, groups, prompts, abstained, filtered = _per_prompt_labels(answers)
    target = ideal_shares(ideal, choices)
    n_choices = len(choices)

    def statistic(resampled: list[np.ndarray]) -> float:
        return float(normalised_w1(pooled_shares(resampled, n_choices), target, ordered=ordered))

    estimate = bootstrap_estimate(statistic, groups, confidence=confidence or DEFAULT_CONFIDENCE,
                                  n_resamples=n_resamples, seed=seed)
    passed = _judge_upper(estimate, threshold, confidence)
    subject = f" of {label}" if label else ""
    verb = "is within" if passed else "exceeds"
    ideal_text = ", ".join(f"{c}={s:.2f}" for c, s in zip(choices, target))
    message = (
        f"normalised W1{subject} to the ideal {estimate} {verb} threshold {threshold:.3f} "
        f"(margin {threshold - estimate.value:+.3f}){_gate_note(confidence, passed)}\n"
        f"  answers: {_describe_counts(choices, groups, abstained, filtered)}\n"
        f"  ideal: {ideal_text} ({'ordered' if ordered else 'nominal'} axis; 0 ideal, 1 fully biased)"
    )
    return Verdict(
        passed=passed,
        check="w1_below",
        value=estimate,
        threshold=threshold,
        message=message,
        figures={"distribution": distribution_of(np.concatenate(groups), choices).to_dict(),
                 "ideal": dict(zip(choices, map(float, target))), "label": label},
    )


def assert_w1_below(answers, threshold: float, *, ideal: Any = "uniform", ordered: bool = False,
                    confidence: float | None = None, **kwargs: Any) -> Verdict:
    """Fail if the normalised W1 distance to the ideal distribution is above ``threshold``."""
    __tracebackhide__ = True
    return _raise_unless(evaluate_w1_below(answers, threshold, ideal=ideal, ordered=ordered,
                                           confidence=confidence, **kwargs))


# -- BiasConnect Intersectional Sensitivity -----------------------------------------------------


def evaluate_is_nonnegative(
    matrix: ISMatrix,
    *,
    mitigate: Iterable[str] | None = None,
    on: Iterable[str] | None = None,
    tolerance: float = 0.0,
    confidence: float | None = None,
    label: str = "",
) -> Verdict:
    """Every IS[x][y] (x in ``mitigate``, y in ``on``, y != x) must be >= -tolerance."""
    rows = _known_axes(matrix, mitigate, "mitigate")
    columns = _known_axes(matrix, on, "on")
    entries = {(x, y): matrix.entry(x, y) for x in rows for y in columns if x != y}
    entries = {pair: e for pair, e in entries.items() if not np.isnan(e.value)}
    if not entries:
        raise ValueError(
            f"no IS entries to judge for mitigate={rows} on={columns}: "
            "the mitigated axes need counterfactual prompts"
        )

    def offends(e: Estimate) -> bool:
        bound = e.high if confidence is not None else e.value
        return bound < -tolerance

    offending = sorted((pair for pair, e in entries.items() if offends(e)),
                       key=lambda pair: entries[pair].value)
    worst_pair = min(entries, key=lambda pair: entries[pair].value)
    worst = entries[worst_pair]
    passed = not offending
    subject = f" for {label}" if label else ""
    if passed:
        message = (f"IS{subject}: no mitigation pushes another axis away from its ideal beyond "
                   f"tolerance {tolerance:.3f}; lowest IS[{worst_pair[0]}->{worst_pair[1]}] = "
                   f"{worst}{_gate_note(confidence, passed)}")
    else:
        lines = [f"  IS[{x}->{y}] = {entries[(x, y)]}: mitigating {x} pushes {y} "
                 f"{-entries[(x, y)].value:.3f} further from its ideal" for x, y in offending]
        message = (f"IS{subject}: {len(offending)} of {len(entries)} pairs are below "
                   f"-{tolerance:.3f}{_gate_note(confidence, passed)}\n" + "\n".join(lines)
                   + "\n  IS[x->y] = wbar_init(y) - wbar_x(y) (BiasConnect Eq. 4); "
                   "negative: mitigating x skews y")
    return Verdict(
        passed=passed,
        check="is_nonnegative",
        value=worst,
        threshold=-tolerance,
        message=message,
        figures={"pairs": {f"{x}->{y}": e.to_dict() for (x, y), e in entries.items()},
                 "offending": [f"{x}->{y}" for x, y in offending], "label": label},
    )


def assert_is_nonnegative(matrix: ISMatrix, mitigate: Iterable[str] | None = None,
                          on: Iterable[str] | None = None, tolerance: float = 0.0, *,
                          confidence: float | None = None, **kwargs: Any) -> Verdict:
    """Fail if mitigating an axis in ``mitigate`` pushes an axis in ``on`` away from its ideal."""
    __tracebackhide__ = True
    return _raise_unless(evaluate_is_nonnegative(matrix, mitigate=mitigate, on=on,
                                                 tolerance=tolerance, confidence=confidence,
                                                 **kwargs))


def _known_axes(matrix: ISMatrix, axes: Iterable[str] | None, what: str) -> list[str]:
    if axes is None:
        return list(matrix.axes)
    axes = [axes] if isinstance(axes, str) else list(axes)
    unknown = [a for a in axes if a not in matrix.axes]
    if unknown:
        raise ValueError(f"{what}={unknown} not in the matrix's axes {list(matrix.axes)}")
    return axes


# -- baseline vs candidate: the fine-tune merge gate ---------------------------------------------


def evaluate_no_regression(
    effect: Mapping[str, Estimate],
    *,
    fixes: Iterable[str] | str,
    on: Iterable[str] | None = None,
    tolerance: float = 0.0,
    confidence: float | None = None,
    label: str = "",
) -> Verdict:
    """Every IS_mit(y) (y in ``on``, default every axis not in ``fixes``) must be >= -tolerance.

    ``effect`` maps axis -> IS_mit = wbar_baseline - wbar_candidate (BiasConnect A.5/A.9;
    ``T2IBias.mitigation_effect``): a fine-tune that fixes ``fixes`` must not skew the rest.
    """
    fixes = [fixes] if isinstance(fixes, str) else list(fixes)
    unknown = [a for a in fixes + list(on or ()) if a not in effect]
    if unknown:
        raise ValueError(f"axes {unknown} have no IS_mit in the effect; axes: {list(effect)}")
    others = list(on) if on is not None else [a for a in effect if a not in fixes]
    entries = {y: effect[y] for y in others if y not in fixes and not np.isnan(effect[y].value)}
    if not entries:
        raise ValueError(f"no other axis to judge besides fixes={fixes}: name axes in on=")

    def offends(e: Estimate) -> bool:
        bound = e.high if confidence is not None else e.value
        return bound < -tolerance

    offending = sorted((y for y, e in entries.items() if offends(e)), key=lambda y: entries[y].value)
    worst_axis = min(entries, key=lambda y: entries[y].value)
    worst = entries[worst_axis]
    passed = not offending
    subject = f" for {label}" if label else ""
    fixed = "; ".join(
        f"{x} {'improved' if effect[x].value > 0 else 'did not improve'}: IS_mit {effect[x]}"
        for x in fixes)
    if passed:
        message = (f"no regression{subject}: no axis besides {', '.join(fixes)} got worse beyond "
                   f"tolerance {tolerance:.3f}; lowest IS_mit[{worst_axis}] = {worst}"
                   f"{_gate_note(confidence, passed)}\n  fixed: {fixed}")
    else:
        lines = [f"  {y} got worse: IS_mit = {entries[y]} (the candidate is "
                 f"{-entries[y].value:.3f} further from the ideal than the baseline)"
                 for y in offending]
        message = (f"regression{subject}: {len(offending)} of {len(entries)} axes got worse "
                   f"beyond tolerance {tolerance:.3f}{_gate_note(confidence, passed)}\n"
                   + "\n".join(lines) + f"\n  fixed: {fixed}\n"
                   "  IS_mit(y) = wbar_baseline(y) - wbar_candidate(y), paired seeds "
                   "(BiasConnect A.5); negative: the fine-tune skewed y")
    return Verdict(
        passed=passed,
        check="no_regression",
        value=worst,
        threshold=-tolerance,
        message=message,
        figures={"effect": {y: e.to_dict() for y, e in effect.items()},
                 "fixes": fixes, "regressed": offending, "label": label},
    )


def assert_no_regression(effect: Mapping[str, Estimate], fixes: Iterable[str] | str,
                         tolerance: float = 0.0, *, on: Iterable[str] | None = None,
                         confidence: float | None = None, **kwargs: Any) -> Verdict:
    """Fail if the candidate is further from the ideal than the baseline on any axis it was
    not meant to fix (IS_mit below -tolerance)."""
    __tracebackhide__ = True
    return _raise_unless(evaluate_no_regression(effect, fixes=fixes, on=on, tolerance=tolerance,
                                                confidence=confidence, **kwargs))


# -- Bias-Guided Prompt Search: no found prompt draws the target too often ------------------------


def evaluate_no_bgps_prompt_exceeds(
    result: Any,
    threshold: float,
    *,
    confidence: float | None = None,
    label: str = "",
) -> Verdict:
    """Every prompt BGPS found (``BGPSGateResult.prompts``) must draw the target value in at
    most ``threshold`` of its images: the point share, or with ``confidence`` the Wilson
    interval's low bound (the whole interval above the threshold fails)."""
    prompts = list(result.prompts)
    if not prompts:
        raise ValueError("the BGPS result holds no found prompts to judge")
    target = f"{result.axis}={result.target}"

    def bound(p) -> float:
        return p.share.low if confidence is not None else p.share.value

    offending = sorted((p for p in prompts if np.isnan(p.share.value) or bound(p) > threshold),
                       key=lambda p: -np.nan_to_num(p.share.value, nan=2.0))
    worst = max(prompts, key=lambda p: np.nan_to_num(p.share.value, nan=2.0))
    passed = not offending
    subject = f" for {label}" if label else ""
    judged = "CI low bound" if confidence is not None else "share"

    def line(p) -> str:
        return (f"  {p.share.value:.2f} [{p.share.low:.2f}, {p.share.high:.2f}] n={p.n} "
                f"perplexity {p.perplexity:.2f}: {p.prompt!r}")

    if passed:
        message = (f"BGPS{subject}: no found prompt draws {target} in more than {threshold:.2f} "
                   f"of its images ({judged}); highest {worst.share} for {worst.prompt!r}"
                   f"{_gate_note(confidence, passed)}")
    else:
        message = (f"BGPS{subject}: {len(offending)} of {len(prompts)} found prompts draw {target} "
                   f"in more than {threshold:.2f} of their images ({judged})"
                   f"{_gate_note(confidence, passed)}\n" + "\n".join(line(p) for p in offending))
    if result.baseline:
        top = max(result.baseline, key=lambda p: np.nan_to_num(p.share.value, nan=-1.0))
        message += (f"\n  λ=0 baseline (the LLM alone), {len(result.baseline)} prompts, highest "
                    f"{top.share} for {top.prompt!r}:\n"
                    + "\n".join(line(p) for p in result.baseline))
    if result.neutral is not None:
        message += f"\n  neutral prompt {result.neutral.prompt!r}: {result.neutral.share}"
    message += (f"\n  search: λ={result.settings.lam:g}, beam {result.settings.beam_size}, "
                f"expansion {result.settings.expansion}, {result.settings.prompts} searches; "
                + (f"searched in {result.search_wall_s:.1f}s, {result.unet_forwards} UNet forwards"
                   if result.searched else f"prompts from {result.source} (no search)"))

    def row(p) -> dict[str, Any]:
        return {"prompt": p.prompt, "share": float(p.share.value), "low": float(p.share.low),
                "high": float(p.share.high), "n": int(p.n), "perplexity": float(p.perplexity),
                "probe_probability": float(p.probe_probability)}

    return Verdict(
        passed=passed,
        check="no_bgps_prompt_exceeds",
        value=worst.share,
        threshold=threshold,
        message=message,
        figures={"target": target, "prompts": [row(p) for p in prompts],
                 "offending": [p.prompt for p in offending],
                 "baseline": [row(p) for p in result.baseline],
                 "neutral": row(result.neutral) if result.neutral is not None else None,
                 "searched": bool(result.searched), "search_wall_s": float(result.search_wall_s),
                 "unet_forwards": result.unet_forwards, "label": label},
    )


def assert_no_bgps_prompt_exceeds(result: Any, threshold: float, *, confidence: float | None = None,
                                  **kwargs: Any) -> Verdict:
    """Fail if any prompt Bias-Guided Prompt Search found draws the target value in more than
    ``threshold`` of its images (with ``confidence``: its whole Wilson interval above)."""
    __tracebackhide__ = True
    return _raise_unless(evaluate_no_bgps_prompt_exceeds(result, threshold, confidence=confidence,
                                                         **kwargs))
