"""InterMit (Shukla et al. 2025, BiasConnect Sec. 4, Algorithm 1) with prompt modification.

Inputs: the selected axes B*, a priority vector p over B* (normalised, ||p||_1 = 1), the
ideal D* of every axis, a threshold epsilon (paper: 0.35) and a sequential mitigation method.

    tau = <wbar(B*), p>                                   (Alg. 1, line 2; wbar as in Eq. 1)
    while tau > epsilon:
        S' = S[:, B*]                                     (Eq. 4 matrix, columns B*)
        gamma_i = <S'_i, p>  for every axis i not yet mitigated
        i* = argmax gamma;  mitigate i*;  regenerate;  recompute wbar, S, tau

Mitigation method: prompt modification (PM, paper A.7). After mitigating a1..am the prompt
set is every combination of their counterfactual phrasings ("a photo of a female nurse
working indoors", ...), composed from the suite's counterfactual templates as word
insertions into the base prompt; N images are split equally across the combinations
(ceil(N / combinations) each) and pooled with equal weight. The counterfactuals of a
candidate axis x in that state are the combinations extended by each value of x, so
S[x][y] is exactly what mitigating x next would do (Eq. 3 pooling), and the images of the
chosen row are the images of the next state (same prompts, counts and seeds: cache hits).

Reported: MitAmt (final tau), MitSteps (steps / |B*|), the order, and alerts when a step
made an axis worse beyond its interval (by more than ``tolerance``) or tau did not reach
epsilon. ``alert_on``: ``prioritised`` (the default) watches the axes of B*; ``any`` every
axis of the suite, as the paper's Sec. 6 alerts on any negative impact (the others are read,
weighted 0 in tau and gamma, so the path is the same).

Sampled in rounds (issue #26), every look reruns Algorithm 1 on the first n images of each
prompt. The paper's rule passes a run in which no step was *shown* to make a prioritised
axis worse; that absence of evidence is only the verdict at the last look. Before it, a
pass needs the evidence: every step's IS[i*][y], y in B*, wholly at least -tolerance
(``InterMitResult.harm_ruled_out``), else the run draws the next round.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._types import Estimate
from ..metrics import ISMatrix, ideal_shares, normalised_w1
from ..metrics.distributions import mean_of_shares
from ..metrics.intersectional import INITIAL, posterior_matrix

if TYPE_CHECKING:
    from .._types import ImageSet
    from ..instrument import Instrument
    from ..suite_spec import Suite

Combination = tuple[tuple[str, str], ...]
"""Mitigated (axis, value) pairs, in the suite's axis order; () is the base prompt."""


class PromptEditError(ValueError):
    """A counterfactual template is not the base prompt with words inserted."""


# -- prompt modification (A.7): counterfactual templates as insertions -------------------------


@dataclass(frozen=True)
class Insertion:
    """Words a counterfactual template inserts before base token ``position``; ``article``
    is the form ("a"/"an") the template gave the article just before them."""

    position: int
    words: tuple[str, ...]
    article: str | None = None


def _key(token: str) -> str:
    """Diff key: the articles "a" and "an" match ("an old {subject}" inserts "old")."""
    return "a" if token.lower() in ("a", "an") else token


def insertions_of(base: str, template: str, where: str = "") -> tuple[Insertion, ...]:
    """The word-level insertions turning ``base`` into ``template`` (difflib on tokens)."""
    base_tokens, tokens = base.split(), template.split()
    matcher = difflib.SequenceMatcher(None, [_key(t) for t in base_tokens],
                                      [_key(t) for t in tokens], autojunk=False)
    insertions = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag != "insert":
            removed = " ".join(base_tokens[i1:i2])
            added = " ".join(tokens[j1:j2])
            change = f"replaces {removed!r} with {added!r}" if added else f"deletes {removed!r}"
            raise PromptEditError(
                f"{where + ': ' if where else ''}counterfactual {template!r} is not the base "
                f"prompt {base!r} with words inserted (it {change}); InterMit's prompt "
                "modification combines insertions only: rewrite it as the base prompt plus words")
        before = tokens[j1 - 1] if j1 > 0 else ""
        article = before if i1 > 0 and _key(before) == "a" and before != base_tokens[i1 - 1] else None
        insertions.append(Insertion(i1, tuple(tokens[j1:j2]), article))
    return tuple(insertions)


def compose(base: str, edits: Sequence[Sequence[Insertion]]) -> str:
    """``base`` with every edit's insertions; at one position, earlier edits come first and
    the first one decides the article before it ("an old female", "a female old")."""
    tokens = base.split()
    inserted: dict[int, list[str]] = {}
    article: dict[int, str] = {}
    for insertions in edits:
        for insertion in insertions:
            if insertion.position not in inserted and insertion.article:
                article[insertion.position] = insertion.article
            inserted.setdefault(insertion.position, []).extend(insertion.words)
    words: list[str] = []
    for i in range(len(tokens) + 1):
        words.extend(inserted.get(i, ()))
        if i < len(tokens):
            follows = i + 1
            words.append(article[follows] if follows in article and follows in inserted
                         and _key(tokens[i]) == "a" else tokens[i])
    return " ".join(words)


def suite_insertions(suite: Suite, axes: Sequence[str] | None = None
                     ) -> dict[str, dict[str, tuple[Insertion, ...]]]:
    """axis -> value -> insertions, for every axis with counterfactual templates."""
    suite.require_phrased(axes or list(suite.axes))
    return {
        name: {value: insertions_of(suite.prompt, template,
                                    f"{suite.path}: axis {name!r}, counterfactual {value!r}")
               for value, template in suite.axes[name].counterfactuals.items()}
        for name in (axes or suite.axes)
        if suite.axes[name].counterfactuals
    }


def combination_prompt(suite: Suite, subject: str, combination: Combination,
                       insertions: Mapping[str, Mapping[str, Sequence[Insertion]]]) -> str:
    """The prompt of one combination: insertions in the suite's axis order."""
    order = list(suite.axes)
    chosen = sorted(combination, key=lambda pair: order.index(pair[0]))
    return compose(suite.prompt, [insertions[a][v] for a, v in chosen]).format(subject=subject)


# -- the result -----------------------------------------------------------------------------


@dataclass(frozen=True)
class InterMitStep:
    """One iteration of Algorithm 1: the choice (gamma over candidates) and its outcome."""

    number: int
    axis: str
    gamma: dict[str, float]
    tau_before: Estimate
    tau_after: Estimate
    wbar_before: dict[str, Estimate]
    wbar_after: dict[str, Estimate]
    prompts: tuple[str, ...]
    matrix: ISMatrix = field(repr=False)
    alerts: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "axis": self.axis,
            "gamma": dict(self.gamma),
            "tau_before": self.tau_before.to_dict(),
            "tau_after": self.tau_after.to_dict(),
            "wbar_before": {a: e.to_dict() for a, e in self.wbar_before.items()},
            "wbar_after": {a: e.to_dict() for a, e in self.wbar_after.items()},
            "prompts": list(self.prompts),
            "alerts": list(self.alerts),
        }


@dataclass(frozen=True)
class InterMitResult:
    """What InterMit did for one subject; ``mit_amount`` and ``mit_steps`` as in Sec. 5.3."""

    subject: str
    priority: dict[str, float]
    epsilon: float
    max_steps: int
    initial_tau: Estimate
    initial_wbar: dict[str, Estimate]
    steps: tuple[InterMitStep, ...]
    alerts: tuple[str, ...]
    tolerance: float = 0.0
    """How much worse (IS) a step may make a watched axis before it is an alert."""
    alert_on: str = "prioritised"
    """Which axes a step's harm is watched on: ``prioritised`` (B*) or ``any``."""
    watched: tuple[str, ...] = ()
    """The axes watched (B* under ``prioritised``, every axis under ``any``)."""
    initial_prompts: tuple[str, ...] = ()
    """The prompt set before mitigation (the base prompt)."""

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(step.axis for step in self.steps)

    @property
    def final_tau(self) -> Estimate:
        return self.steps[-1].tau_after if self.steps else self.initial_tau

    @property
    def final_prompts(self) -> tuple[str, ...]:
        """The mitigated prompt set: the last step's combinations (no step: the base prompt)."""
        return self.steps[-1].prompts if self.steps else self.initial_prompts

    @property
    def mit_amount(self) -> float:
        """MitAmt: tau after the last step."""
        return self.final_tau.value

    @property
    def mit_steps(self) -> float:
        """MitSteps: steps taken / |B*|."""
        return len(self.steps) / len(self.priority)

    @property
    def reached(self) -> bool:
        return bool(self.final_tau.value <= self.epsilon)

    @property
    def harm_ruled_out(self) -> bool:
        """Whether every step is shown not to make a watched axis worse by more than
        ``tolerance``: IS[i*][y] wholly at least -tolerance for every step and watched y."""
        return all(step.matrix.entry(step.axis, y).low >= -self.tolerance
                   for step in self.steps for y in (self.watched or self.priority))

    def negative_is_mit(self) -> dict[str, Any]:
        """BiasConnect A.5's figure: of the (mitigated axis x, other watched axis y) pairs of
        the steps taken, the share whose IS_mit[x][y] (the IS of the mitigation actually made:
        its images are the next state's) is negative, x's mitigation moving y away from its
        ideal (the paper: over 29% of the cases, SD 1.4 with ITI-GEN); ``shown`` counts those
        whose whole interval is below 0. No step: no pairs, share NaN."""
        pairs = [(step.axis, y, step.matrix.entry(step.axis, y)) for step in self.steps
                 for y in (self.watched or self.priority) if y != step.axis]
        negative = [(x, y, e) for x, y, e in pairs if e.value < 0]
        return {"share": len(negative) / len(pairs) if pairs else math.nan,
                "negative": len(negative), "pairs": len(pairs),
                "shown": sum(1 for _, _, e in negative if e.high < 0),
                "cases": [{"mitigated": x, "axis": y, **e.to_dict()} for x, y, e in negative]}

    @property
    def matrix(self) -> ISMatrix | None:
        """S of the original prompt (the first step's choice), restricted to the watched
        columns."""
        return self.steps[0].matrix if self.steps else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "priority": dict(self.priority),
            "epsilon": self.epsilon,
            "tolerance": self.tolerance,
            "alert_on": self.alert_on,
            "watched": list(self.watched or self.priority),
            "max_steps": self.max_steps,
            "initial_tau": self.initial_tau.to_dict(),
            "initial_wbar": {a: e.to_dict() for a, e in self.initial_wbar.items()},
            "steps": [step.to_dict() for step in self.steps],
            "order": list(self.order),
            "mit_amount": self.mit_amount,
            "mit_steps": self.mit_steps,
            "reached": self.reached,
            "harm_ruled_out": self.harm_ruled_out,
            "alerts": list(self.alerts),
        }

    def summary(self) -> str:
        weights = ", ".join(f"{a}={w:.2f}" for a, w in self.priority.items())
        lines = [(f"InterMit for {self.subject} (p: {weights}; epsilon {self.epsilon:.3f}, "
                  f"at most {self.max_steps} steps)"),
                 f"  start: tau = {self.initial_tau}"]
        for step in self.steps:
            gamma = ", ".join(f"{a} {g:+.3f}" for a, g in
                              sorted(step.gamma.items(), key=lambda kv: -_finite(kv[1])))
            lines.append(f"  step {step.number}: mitigate {step.axis} (gamma: {gamma}); "
                         f"tau {step.tau_before.value:.3f} -> {step.tau_after}; "
                         f"{len(step.prompts)} prompt(s)")
        verdict = "reached" if self.reached else "did not reach"
        lines.append(f"  MitAmt {self.mit_amount:.3f} ({verdict} epsilon), MitSteps "
                     f"{self.mit_steps:.2f}, order: {' -> '.join(self.order) or '(none)'}")
        negative = self.negative_is_mit()
        if negative["pairs"]:
            lines.append(f"  negative IS_mit (BiasConnect A.5): {negative['negative']} of "
                         f"{negative['pairs']} (mitigated, other axis) pairs "
                         f"({100 * negative['share']:.0f}%), {negative['shown']} shown by "
                         f"their interval")
        lines += [f"  ALERT: {alert}" for alert in self.alerts]
        return "\n".join(lines)


def _finite(value: float) -> float:
    return -math.inf if np.isnan(value) else value


# -- Algorithm 1 ------------------------------------------------------------------------------


ALERT_ON = ("prioritised", "any")


def state_images(instrument: Instrument, prompts: Sequence[str]) -> ImageSet:
    """The images Algorithm 1 reads for a state of ``prompts``: n split equally over them
    (ceil(n / prompts) each); the same call, so the same (cached) images, as its reading."""
    return instrument.images(list(prompts),
                             per_prompt=math.ceil(instrument.images_per_prompt / len(prompts)))


def watched_axes(selected: Sequence[str], axes: Sequence[str], alert_on: str) -> list[str]:
    """The axes a step's harm is watched on: B*, then (``any``) every other axis."""
    return [*selected, *(a for a in axes if a not in selected)] if alert_on == "any" \
        else list(selected)


def normalised_priority(priority: Mapping[str, float] | None, axes: Sequence[str]) -> dict[str, float]:
    """p over B*, summing to 1; every axis equally when ``priority`` is None."""
    if priority is None:
        priority = {axis: 1.0 for axis in axes}
    unknown = [a for a in priority if a not in axes]
    if unknown:
        raise ValueError(f"priority names axes {unknown} the suite does not have; axes: {list(axes)}")
    negative = {a: w for a, w in priority.items() if w < 0}
    if negative:
        raise ValueError(f"priority weights must be >= 0, got {negative}")
    total = float(sum(priority.values()))
    if total <= 0:
        raise ValueError(f"priority needs at least one positive weight, got {dict(priority)}")
    return {a: float(w) / total for a, w in priority.items() if w > 0}


def intermit(
    instrument: Instrument,
    suite: Suite,
    subject: str,
    *,
    priority: Mapping[str, float] | None = None,
    epsilon: float,
    max_steps: int | None = None,
    tolerance: float,
    confidence: float,
    n_resamples: int,
    calibration: Mapping[str, np.ndarray] | None = None,
    alert_on: str = "prioritised",
) -> InterMitResult:
    """Algorithm 1 for ``subject``: mitigate axes one at a time by prompt modification; a
    step alerts when it makes a watched axis worse by more than ``tolerance`` (IS wholly
    below -tolerance): an axis of B* (``alert_on="prioritised"``) or any axis (``"any"``,
    the paper's Sec. 6). ``calibration``: the judge's confusion counts per axis
    (``metrics.judge``): every share, and so every choice of the path, corrected."""
    if alert_on not in ALERT_ON:
        raise ValueError(f"alert_on must be one of {', '.join(ALERT_ON)}, got {alert_on!r}")
    p = normalised_priority(priority, list(suite.axes))
    selected = list(p)
    watched = watched_axes(selected, list(suite.axes), alert_on)
    max_steps = len(suite.axes) if max_steps is None else max_steps
    insertions = suite_insertions(suite)  # every template checked before any image is made
    world = _PromptWorld(instrument, suite, subject, watched, p, insertions,
                         confidence=confidence, n_resamples=n_resamples, calibration=calibration)

    state: list[Combination] = [()]
    mitigated: list[str] = []
    current = world.evaluate(state, [])
    initial_tau, initial_wbar = current.tau, current.wbar
    steps: list[InterMitStep] = []
    alerts: list[str] = []
    while current.tau.value > epsilon and len(steps) < max_steps:  # Alg. 1 line 3
        candidates = [a for a in suite.axes if a in insertions and a not in mitigated]
        if not candidates:
            alerts.append(f"tau = {current.tau.value:.3f} > epsilon {epsilon:.3f} but no axis "
                          "with counterfactuals is left to mitigate")
            break
        choice = world.evaluate(state, candidates)
        matrix = choice.matrix
        if matrix is None:  # evaluate() builds one whenever it is given candidates
            raise ValueError("InterMit's step has candidates but no IS matrix")
        # gamma_i = <S'_i, p>, S' = S[:, B*] (Alg. 1 lines 4-5)
        gamma = {x: float(sum(matrix.entry(x, y).value * p[y] for y in selected))
                 for x in candidates}
        chosen = max(candidates, key=lambda x: _finite(gamma[x]))  # i* = argmax (ties: first)
        mitigated.append(chosen)
        state = [c + ((chosen, v),) for c in state for v in insertions[chosen]]
        after = world.evaluate(state, [])  # regenerate; recompute wbar and tau (lines 6-7)
        # The alert (a prioritised axis made worse) is the step's own IS[chosen][y] < 0 with its
        # whole interval below 0: state and counterfactual images resampled jointly, so a
        # degenerate interval on one side (a perfectly balanced state) cannot raise it alone.
        beyond = f" beyond tolerance {tolerance:.3f}" if tolerance else ""
        step_alerts = tuple(
            f"step {len(steps) + 1} (mitigating {chosen}) made {y} worse{beyond}: "
            f"IS[{chosen}][{y}] = {effect} (wbar {current.wbar[y].value:.3f} -> "
            f"{after.wbar[y].value:.3f})"
            for y in watched
            if (effect := matrix.entry(chosen, y)).high < -tolerance
        )
        alerts += step_alerts
        steps.append(InterMitStep(
            number=len(steps) + 1, axis=chosen, gamma=gamma, tau_before=current.tau,
            tau_after=after.tau, wbar_before=current.wbar, wbar_after=after.wbar,
            prompts=tuple(world.prompt(c) for c in state), matrix=matrix,
            alerts=step_alerts))
        current = after
    if current.tau.value > epsilon and (not alerts or not alerts[-1].startswith("tau ")):
        alerts.append(f"tau = {current.tau.value:.3f} did not reach epsilon {epsilon:.3f} "
                      f"within {max_steps} step(s) (mitigated: {', '.join(mitigated) or 'none'})")
    return InterMitResult(subject=subject, priority=p, epsilon=epsilon, max_steps=max_steps,
                          initial_tau=initial_tau, initial_wbar=initial_wbar, steps=tuple(steps),
                          alerts=tuple(alerts), tolerance=tolerance, alert_on=alert_on,
                          watched=tuple(watched), initial_prompts=(world.prompt(()),))


@dataclass(frozen=True)
class _Evaluation:
    wbar: dict[str, Estimate]
    tau: Estimate
    matrix: ISMatrix | None


class _PromptWorld:
    """Generates and reads the images of a PM state and its candidates' counterfactuals on
    the watched axes (``selected``: B* first; an axis outside B* weighs 0 in tau)."""

    def __init__(self, instrument: Instrument, suite: Suite, subject: str, selected: list[str],
                 p: dict[str, float], insertions: dict[str, dict[str, tuple[Insertion, ...]]],
                 *, confidence: float, n_resamples: int,
                 calibration: Mapping[str, np.ndarray] | None = None):
        self.instrument, self.suite, self.subject = instrument, suite, subject
        self.selected, self.p, self.insertions = selected, p, insertions
        self.confidence, self.n_resamples = confidence, n_resamples
        self.calibration = dict(calibration or {})
        self.choices = {y: suite.axes[y].choices for y in selected}
        self.ideals = {y: ideal_shares(instrument.ideal(suite.axes[y], suite.filter),
                                       self.choices[y]) for y in selected}
        self.ordered = {y: suite.axes[y].ordered for y in selected}

    def prompt(self, combination: Combination) -> str:
        return combination_prompt(self.suite, self.subject, combination, self.insertions)

    def labels(self, prompts: list[str]) -> list[np.ndarray]:
        """(images x selected axes) label tables, one per prompt, ``state_images``' count each.
        Each axis is asked once over every prompt's images, then split by prompt: a state of
        m prompts at one image each is one judge call an axis in full batches, not m."""
        images = state_images(self.instrument, prompts)
        table = np.stack([self.instrument.attributes(images, self.suite.axes[y],
                                                     self.suite.filter).labels
                          for y in self.selected], axis=-1)
        rows: dict[str, list[int]] = {}
        for i, item in enumerate(images):
            rows.setdefault(item.prompt, []).append(i)
        return [table[rows[prompt]] for prompt in prompts]

    def evaluate(self, state: list[Combination], candidates: list[str]) -> _Evaluation:
        """wbar and tau of ``state`` (its combinations pooled with equal weight), and with
        ``candidates`` the matrix S[x][y] = wbar_state(y) - wbar_x(y) (Eqs. 3-4)."""
        state_prompts = [self.prompt(c) for c in state]
        tables = self.labels(state_prompts)
        state_index = list(range(len(tables)))
        n_images = {INITIAL: sum(len(t) for t in tables)}
        counterfactual_index: dict[str, list[int]] = {}
        for x in candidates:
            values = list(self.insertions[x])
            combos = [c + ((x, v),) for c in state for v in values]
            prompts = [self.prompt(c) for c in combos]
            counterfactual_index[x] = list(range(len(tables), len(tables) + len(prompts)))
            tables += self.labels(prompts)
            for v in values:
                n_images[f"{x}={v}"] = sum(len(tables[i]) for i, c in
                                           zip(counterfactual_index[x], combos) if c[-1][1] == v)
        selected, n_cand = self.selected, len(candidates)
        weights = np.array([self.p.get(y, 0.0) for y in selected])

        def from_shares(shares: list[list[np.ndarray]]) -> np.ndarray:
            # shares[prompt][axis]: (draws, choices) of one prompt on one selected axis
            def wbar(indices: list[int], j: int, y: str) -> float | np.ndarray:
                pooled = mean_of_shares([shares[i][j] for i in indices], len(self.choices[y]))
                return normalised_w1(pooled, self.ideals[y], self.ordered[y])

            w_state = np.stack([wbar(state_index, j, y) for j, y in enumerate(selected)], axis=-1)
            out = np.full((len(shares[0][0]), n_cand + 2, len(selected)), np.nan)
            out[:, n_cand] = w_state
            out[:, n_cand + 1, 0] = w_state @ weights  # tau = <wbar(B*), p>
            for i, x in enumerate(candidates):
                for j, y in enumerate(selected):
                    out[:, i, j] = w_state[:, j] - wbar(counterfactual_index[x], j, y)
            return out

        # The posterior machinery of every other kind (metrics.intersectional): the
        # percentile bootstrap is biased for distances (docs/STATISTICS.md); each axis'
        # shares corrected for its judge when calibrated.
        joint = posterior_matrix(from_shares, tables, tuple(selected), self.choices,
                                 self.confidence, self.n_resamples, seed=0,
                                 confusion=self.calibration)
        # The S entries (differences of distances) keep the reflected interval, as IS does;
        # wbar and tau are distances, read as w1_below reads one: the posterior percentile
        # interval (un-reflected: reflection sends a distance at its ideal below 0), with
        # the estimate inside it.
        value = joint.value[n_cand:]
        low, high = 2 * value - joint.high[n_cand:], 2 * value - joint.low[n_cand:]
        joint.low[n_cand:] = np.maximum(np.fmin(low, value), 0.0)
        joint.high[n_cand:] = np.fmax(high, value)

        def estimate(row: int, column: int, n: int) -> Estimate:
            return Estimate(float(joint.value[row, column]), float(joint.low[row, column]),
                            float(joint.high[row, column]), n, joint.confidence, joint.method)

        wbar_estimates = {y: estimate(n_cand, j, n_images[INITIAL]) for j, y in enumerate(selected)}
        tau = estimate(n_cand + 1, 0, n_images[INITIAL])
        matrix = None
        if candidates:
            axes = tuple(dict.fromkeys([*candidates, *selected]))
            shape = (len(axes), len(axes))
            value, low, high = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
            for i, x in enumerate(candidates):
                for j, y in enumerate(selected):
                    a, b = axes.index(x), axes.index(y)
                    value[a, b], low[a, b], high[a, b] = (joint.value[i, j], joint.low[i, j],
                                                          joint.high[i, j])
            matrix = ISMatrix(axes=axes, value=value, low=low, high=high, w_init=wbar_estimates,
                              n_images=n_images, confidence=joint.confidence)
        return _Evaluation(wbar=wbar_estimates, tau=tau, matrix=matrix)
