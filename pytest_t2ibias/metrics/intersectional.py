"""BiasConnect intersectional sensitivity (Shukla et al. 2025, Sec. 3, Eqs. 1-4; A.5, A.9).

For every pair of bias axes (x, y): does mitigating x bring y closer to its ideal?

    w̄_init(y) = w̄(D_init(y), D*(y))         Eq. 1, normalised as in Eq. 4
    w̄_x(y)    = w̄(D_x(y), D*(y))            Eq. 3; D_x pools the counterfactual prompts of x
    IS[x][y]  = w̄_init(y) - w̄_x(y)          Eq. 4, in [-1, 1]

IS > 0: mitigating x helps y; IS < 0: it pushes y away from its ideal (the warning case).
Pooling weighs every counterfactual prompt equally (``pooled_shares``). The default interval
is ``"profile"`` (below), the one whose coverage holds at the ideal; ``"bootstrap"`` is one
joint bootstrap over images: each replicate
resamples every prompt's images once and recomputes the whole matrix, so entries of one
replicate are mutually consistent. ``interval="posterior"`` draws every prompt's shares from
its Jeffreys-Dirichlet posterior instead, jointly per draw, and adds 0 to an entry's interval
when the data cannot reject "all these prompts answer like the ideal" (``metrics.posterior``;
measured coverage in docs/coverage.md). ``interval="profile"`` is the construction that covers
where one or both distances sit at their ideal (the kink of |.|): the range of the entry over
an ellipsoid of the prompts' shares (a profile likelihood-ratio interval under the normal
approximation), traced by joint posterior draws pushed onto its boundary
(``metrics.posterior.profile_range``; docs/STATISTICS.md).

``mitigation_effect`` is IS_mit (A.5, A.9): the same difference with a really mitigated model
in place of the pooled counterfactuals, which is the baseline-vs-candidate merge gate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_t2ibias._types import ABSTAINED, Answers, Estimate
from pytest_t2ibias.metrics.distances import normalised_w1
from pytest_t2ibias.metrics.distributions import (
    check_labels,
    ideal_shares,
    label_shares,
    mean_of_shares,
)
from pytest_t2ibias.metrics.intervals import MatrixEstimate, bootstrap_matrix
from pytest_t2ibias.metrics.judge import corrected_draws, corrected_point
from pytest_t2ibias.metrics.posterior import (
    dirichlet_draws,
    ideal_not_rejected,
    kink_forms,
    percentile_bounds,
    profile_critical_value,
    profile_range,
    share_draws,
)

Labels = np.ndarray | Sequence[int] | Answers
"""One prompt's answers to one axis' question: a label array (or ``Answers``)."""

INITIAL = "initial"
"""Key of the original prompt in ``ISMatrix.n_images``; counterfactuals are ``"axis=value"``."""


@dataclass(frozen=True, eq=False)
class ISMatrix:
    """The intersectional sensitivity matrix: rows = mitigated axis x, columns = affected axis y.

    ``value``, ``low`` and ``high`` are (axes x axes) arrays; a row is NaN when its axis has no
    counterfactual prompts. ``w_init`` is each axis' normalised distance from its ideal in the
    original prompt's images, ``n_images`` the number of images of every prompt.
    """

    axes: tuple[str, ...]
    value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    w_init: dict[str, Estimate]
    n_images: dict[str, int]
    confidence: float = 0.95
    method: str = "bootstrap"

    def entry(self, x: str, y: str) -> Estimate:
        """IS[x][y] with its interval; n counts the initial and x's counterfactual images."""
        i, j = self._index(x), self._index(y)
        n = self.n_images[INITIAL] + sum(
            count for prompt, count in self.n_images.items() if prompt.startswith(f"{x}=")
        )
        return Estimate(
            float(self.value[i, j]),
            float(self.low[i, j]),
            float(self.high[i, j]),
            n,
            self.confidence,
            self.method,
        )

    def negative_entries(
        self, tolerance: float = 0.0, confidence_aware: bool = True
    ) -> list[tuple[str, str]]:
        """(x, y) pairs where mitigating x worsens y by more than ``tolerance``.

        Confidence-aware: the whole interval lies below -tolerance, so sampling noise alone
        cannot explain it. Otherwise the point value is compared. NaN entries are never listed.
        """
        bound = self.high if confidence_aware else self.value
        return [
            (x, y)
            for i, x in enumerate(self.axes)
            for j, y in enumerate(self.axes)
            if bound[i, j] < -tolerance  # NaN compares False
        ]

    def to_dict(self) -> dict:
        """Plain builtins (NaN stays a float, as in ``Estimate.to_dict``)."""
        return {
            "axes": list(self.axes),
            "value": self.value.tolist(),
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "w_init": {axis: estimate.to_dict() for axis, estimate in self.w_init.items()},
            "n_images": dict(self.n_images),
            "confidence": self.confidence,
            "method": self.method,
        }

    def _index(self, axis: str) -> int:
        try:
            return self.axes.index(axis)
        except ValueError:
            raise KeyError(f"{axis!r} is not one of the axes {self.axes}") from None


def intersectional_sensitivity(
    initial: Mapping[str, Labels],
    counterfactual: Mapping[str, Mapping[str, Mapping[str, Labels]]],
    choices: Mapping[str, Sequence[str]],
    ideal: Mapping[str, np.ndarray | str | Mapping[str, float]] | None = None,
    ordered: Mapping[str, bool] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    interval: str = "profile",
    calibration: Mapping[str, np.ndarray] | None = None,
) -> ISMatrix:
    """The IS matrix (BiasConnect Eq. 4) with joint intervals (``interval``: module doc).

    ``calibration[y]``: the judge's confusion counts on axis y (``metrics.judge``); every
    prompt's shares on y are then corrected for it, draws with one confusion draw shared by
    all prompts (one judge reads them all). Profile and posterior intervals only.

    ``initial[y]``: labels of the original prompt's images on axis y.
    ``counterfactual[x][value][y]``: labels on axis y of the images of x's counterfactual
    prompt for ``value``. An axis a prompt was not asked about counts as all abstained.
    ``ideal[y]`` defaults to uniform; ``ordered[y]`` (positional W1 cost) to False.
    ``n_resamples`` counts bootstrap replicates or posterior draws.
    """
    _check_interval(interval, calibration)
    axes = tuple(choices)
    ideals, is_ordered = _axis_settings(axes, choices, ideal, ordered)
    _check_axes("counterfactual", counterfactual, axes)
    confusion = _confusions(calibration, axes)

    tables = [_label_table(INITIAL, initial, axes, choices)]
    n_images = {INITIAL: len(tables[0])}
    prompts_of: dict[str, list[int]] = {}
    for x, by_value in counterfactual.items():
        for value, labels in by_value.items():
            name = f"{x}={value}"
            prompts_of.setdefault(x, []).append(len(tables))
            tables.append(_label_table(name, labels, axes, choices))
            n_images[name] = len(tables[-1])

    n_axes = len(axes)

    def from_shares(shares: list[list[np.ndarray]]) -> np.ndarray:
        # shares[p][j]: (replicates, choices of axis j) of prompt p; returns IS rows + w_init.
        w_init = [normalised_w1(shares[0][j], ideals[y], is_ordered[y]) for j, y in enumerate(axes)]
        out = np.full((len(shares[0][0]), n_axes + 1, n_axes), np.nan)
        out[:, n_axes, :] = np.stack(w_init, axis=-1)
        for i, x in enumerate(axes):
            if x not in prompts_of:
                continue  # nothing to pool: the row stays NaN
            for j, y in enumerate(axes):
                pooled = mean_of_shares(  # Eq. 3: each counterfactual prompt weighs the same
                    [shares[p][j] for p in prompts_of[x]], len(choices[y])
                )
                w_x = normalised_w1(pooled, ideals[y], is_ordered[y])
                out[:, i, j] = w_init[j] - w_x
        return out

    if interval == "bootstrap":
        joint = bootstrap_matrix(
            _on_label_shares(from_shares, choices, axes), tables, confidence=confidence, n_resamples=n_resamples, seed=seed
        )
    elif interval == "profile":
        joint = _profile_matrix(
            from_shares, tables, axes, choices, ideals, is_ordered, prompts_of, confidence,
            n_resamples, seed, confusion,
        )
    else:
        joint = posterior_matrix(
            from_shares, tables, axes, choices, confidence, n_resamples, seed,
            confusion=confusion,
        )
        for j, y in enumerate(axes):
            _include_ideal(joint, (n_axes, j), [tables[0][:, j]], choices[y], ideals[y],
                           is_ordered[y], confidence, seed)
            for i, x in enumerate(axes):
                if x in prompts_of:
                    members = [tables[p][:, j] for p in prompts_of[x]]
                    _include_ideal(joint, (i, j), [tables[0][:, j]] + members, choices[y],
                                   ideals[y], is_ordered[y], confidence, seed)
    w_init = {
        y: Estimate(
            float(joint.value[n_axes, j]),
            float(joint.low[n_axes, j]),
            float(joint.high[n_axes, j]),
            n_images[INITIAL],
            confidence,
            joint.method,
        )
        for j, y in enumerate(axes)
    }
    return ISMatrix(
        axes=axes,
        value=joint.value[:n_axes],
        low=joint.low[:n_axes],
        high=joint.high[:n_axes],
        w_init=w_init,
        n_images=n_images,
        confidence=confidence,
        method=joint.method,
    )


def mitigation_effect(
    initial: Mapping[str, Labels],
    mitigated: Mapping[str, Labels],
    choices: Mapping[str, Sequence[str]],
    ideal: Mapping[str, np.ndarray | str | Mapping[str, float]] | None = None,
    ordered: Mapping[str, bool] | None = None,
    paired: bool = True,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    interval: str = "profile",
    calibration: Mapping[str, np.ndarray] | None = None,
) -> dict[str, Estimate]:
    """IS_mit(y) = w̄(D_init(y)) - w̄(D_mit(y)) per axis (BiasConnect A.5, A.9 Eqs. 5-6).

    The merge gate: ``initial`` = baseline model, ``mitigated`` = candidate, same prompt.
    Paired by default: image i of both came from the same seed, so both are resampled with
    one index vector and the shared noise cancels (needs equally many images on both sides);
    ``interval="posterior"`` then draws both sides from one Dirichlet over the joint cells.
    ``calibration[y]``: as for ``intersectional_sensitivity``; one judge reads both models, so
    both sides are corrected with the same confusion draw.
    """
    _check_interval(interval, calibration)
    axes = tuple(choices)
    ideals, is_ordered = _axis_settings(axes, choices, ideal, ordered)
    confusion = _confusions(calibration, axes)
    tables = [
        _label_table(INITIAL, initial, axes, choices),
        _label_table("mitigated", mitigated, axes, choices),
    ]

    def from_shares(shares: list[list[np.ndarray]]) -> np.ndarray:
        before, after = shares
        effect = [
            normalised_w1(before[j], ideals[y], is_ordered[y])
            - normalised_w1(after[j], ideals[y], is_ordered[y])
            for j, y in enumerate(axes)
        ]
        return np.stack(effect, axis=-1)

    if interval == "bootstrap":
        joint = bootstrap_matrix(
            _on_label_shares(from_shares, choices, axes),
            tables,
            paired=paired,
            confidence=confidence,
            n_resamples=n_resamples,
            seed=seed,
        )
    elif interval == "profile":
        rng = np.random.default_rng(seed)
        observed = [
            [_corrected_point(label_shares(t[:, j], len(choices[y])), confusion.get(y))
             for j, y in enumerate(axes)] for t in tables
        ]
        value = np.asarray(from_shares([[s[None] for s in row] for row in observed]))[0]
        low, high = np.empty(len(axes)), np.empty(len(axes))
        for j, y in enumerate(axes):
            if paired:
                draws = share_draws([t[:, j] for t in tables], len(choices[y]), n_resamples,
                                    rng, paired=True)
            else:
                draws = [_prompt_draws(t[:, j], len(choices[y]), n_resamples, rng) for t in tables]
            if y in confusion:
                draws = corrected_draws(draws, confusion[y], rng)
            critical = profile_critical_value(confidence, len(choices[y]), is_ordered[y])
            forms = kink_forms(ideals[y], is_ordered[y])
            low[j], high[j] = profile_range(
                _Difference(ideals[y], is_ordered[y], pooled=False), draws, critical,
                kinks=[([1, 0], *forms), ([0, 1], *forms)],
            )
        n = sum(len(t) for t in tables)
        joint = MatrixEstimate(value, np.clip(low, -1, 1), np.clip(high, -1, 1), n, confidence,
                               "paired profile" if paired else "profile")
    else:
        joint = posterior_matrix(
            from_shares, tables, axes, choices, confidence, n_resamples, seed, paired=paired,
            confusion=confusion,
        )
        for j, y in enumerate(axes):
            _include_ideal(joint, (j,), [t[:, j] for t in tables], choices[y], ideals[y],
                           is_ordered[y], confidence, seed)
    return {
        y: Estimate(
            float(joint.value[j]),
            float(joint.low[j]),
            float(joint.high[j]),
            joint.n,
            confidence,
            joint.method,
        )
        for j, y in enumerate(axes)
    }


def _on_label_shares(from_shares, choices, axes):
    """A bootstrap statistic: each resampled prompt's label table (replicates, images, axes)
    turned into per-axis shares, then ``from_shares``."""

    def statistic(batch: list[np.ndarray]) -> np.ndarray:
        return from_shares([[label_shares(table[..., j], len(choices[y]))
                             for j, y in enumerate(axes)] for table in batch])

    return statistic


def _check_interval(interval: str, calibration: Mapping[str, np.ndarray] | None = None) -> None:
    if interval not in ("bootstrap", "posterior", "profile"):
        raise ValueError(f"interval={interval!r}: use 'bootstrap', 'posterior' or 'profile'")
    if calibration and interval == "bootstrap":
        raise ValueError("calibration= corrects posterior draws: use interval='profile' or "
                         "'posterior' (the bootstrap resamples the judge's labels as truth)")


def _confusions(calibration: Mapping[str, np.ndarray] | None,
                axes: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The calibration counts of the axes that have one."""
    return {y: np.asarray(counts) for y, counts in (calibration or {}).items() if y in axes}


def _corrected_point(shares: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
    """One prompt's observed shares on an axis, corrected when the axis has a calibration."""
    return shares if counts is None else corrected_point([shares], counts)[0]


def _first_w1(ideal: np.ndarray, ordered: bool) -> Callable[[list[np.ndarray]], float | np.ndarray]:
    """w(the first group's shares): one axis' distance from its ideal (``_profile_matrix``)."""
    return lambda shares: normalised_w1(shares[0], ideal, ordered)


def _prompt_draws(labels: np.ndarray, n_choices: int, n_draws: int, rng) -> np.ndarray:
    counts = np.bincount(labels[labels >= 0], minlength=n_choices)
    return dirichlet_draws(counts[None, None], n_draws, rng)[0, :, 0]


class _Difference:
    """w(first group) - w(the rest, pooled with equal weight): an IS entry or IS_mit."""

    def __init__(self, ideal: np.ndarray, ordered: bool, pooled: bool):
        self.ideal, self.ordered, self.pooled = ideal, ordered, pooled

    def __call__(self, shares: list[np.ndarray]) -> float | np.ndarray:
        rest = mean_of_shares(shares[1:], len(self.ideal)) if self.pooled else shares[1]
        return normalised_w1(shares[0], self.ideal, self.ordered) - normalised_w1(
            rest, self.ideal, self.ordered
        )


def _profile_matrix(
    from_shares,
    tables: list[np.ndarray],
    axes: tuple[str, ...],
    choices: Mapping[str, Sequence[str]],
    ideals: Mapping[str, np.ndarray],
    is_ordered: Mapping[str, bool],
    prompts_of: Mapping[str, list[int]],
    confidence: float,
    n_draws: int,
    seed: int,
    confusion: Mapping[str, np.ndarray] | None = None,
) -> MatrixEstimate:
    """Profile intervals of the IS matrix (and w_init) from one joint set of posterior draws.

    Every prompt's shares on every axis are drawn once (one draw = one consistent matrix).
    Entry (x, y) projects the draws of the prompts it reads (the initial prompt and x's
    counterfactuals, axis y) onto its ellipsoid and takes the range of w_init(y) - w_x(y)
    there; w_init(y) uses the initial prompt alone.
    """
    rng = np.random.default_rng(seed)
    confusion = confusion or {}
    draws = [
        [_prompt_draws(t[:, j], len(choices[y]), n_draws, rng) for j, y in enumerate(axes)]
        for t in tables
    ]
    for j, y in enumerate(axes):
        if y in confusion:  # one confusion draw per draw, shared by every prompt
            for p, corrected in enumerate(corrected_draws([d[j] for d in draws], confusion[y], rng)):
                draws[p][j] = corrected
    observed = [
        [_corrected_point(label_shares(t[:, j], len(choices[y])), confusion.get(y))[None]
         for j, y in enumerate(axes)] for t in tables
    ]
    value = np.asarray(from_shares(observed))[0]
    n_axes = len(axes)
    low, high = np.full_like(value, np.nan), np.full_like(value, np.nan)
    for j, y in enumerate(axes):
        critical = profile_critical_value(confidence, len(choices[y]), is_ordered[y])
        forms = kink_forms(ideals[y], is_ordered[y])
        low[n_axes, j], high[n_axes, j] = profile_range(
            _first_w1(ideals[y], is_ordered[y]), [draws[0][j]], critical,
            kinks=[([1], *forms)],
        )
        for i, x in enumerate(axes):
            if x not in prompts_of:
                continue
            members = prompts_of[x]
            low[i, j], high[i, j] = profile_range(
                _Difference(ideals[y], is_ordered[y], pooled=True),
                [draws[0][j]] + [draws[p][j] for p in members],
                critical,
                kinks=[([1] + [0] * len(members), *forms), ([0] + [1] * len(members), *forms)],
            )
    n = sum(len(t) for t in tables)
    return MatrixEstimate(value, np.clip(low, -1, 1), np.clip(high, -1, 1), n, confidence,
                          "profile")


def posterior_matrix(
    from_shares,
    tables: list[np.ndarray],
    axes: tuple[str, ...],
    choices: Mapping[str, Sequence[str]],
    confidence: float,
    n_draws: int,
    seed: int,
    paired: bool = False,
    confusion: Mapping[str, np.ndarray] | None = None,
) -> MatrixEstimate:
    """Percentile intervals of ``from_shares`` over joint posterior draws of every prompt's shares.

    One draw gives every prompt (and every axis) new shares, so the entries of one draw are
    consistent, as with one bootstrap replicate. Paired prompts share one joint Dirichlet per axis.
    """
    rng = np.random.default_rng(seed)
    confusion = confusion or {}
    observed, draws = [], []
    for table in tables:
        observed.append([_corrected_point(label_shares(table[:, j], len(choices[y])),
                                          confusion.get(y))[None] for j, y in enumerate(axes)])
    if paired:
        per_axis = [
            share_draws([t[:, j] for t in tables], len(choices[y]), n_draws, rng, paired=True)
            for j, y in enumerate(axes)
        ]
        draws = [[per_axis[j][p] for j in range(len(axes))] for p in range(len(tables))]
    else:
        for table in tables:
            row = []
            for j, y in enumerate(axes):
                labels = table[:, j]
                counts = np.bincount(labels[labels >= 0], minlength=len(choices[y]))
                row.append(dirichlet_draws(counts[None, None], n_draws, rng)[0, :, 0])
            draws.append(row)
    for j, y in enumerate(axes):
        if y in confusion:  # one confusion draw per draw, shared by every prompt
            for p, corrected in enumerate(corrected_draws([d[j] for d in draws], confusion[y], rng)):
                draws[p][j] = corrected
    value = np.asarray(from_shares(observed))[0]
    upper, lower = percentile_bounds(np.moveaxis(np.asarray(from_shares(draws)), 0, -1), confidence)
    # Reflected ("basic") interval: a distance near its ideal is biased upward, in the draws
    # as in the estimate, so a difference of distances is reflected about the estimate.
    low = np.clip(2 * value - lower, -1.0, 1.0)
    high = np.clip(2 * value - upper, -1.0, 1.0)
    n = sum(len(t) for t in tables)
    method = "paired posterior" if paired else "posterior"
    return MatrixEstimate(value, np.asarray(low), np.asarray(high), n, confidence, method)


def _include_ideal(
    joint: MatrixEstimate,
    index: tuple[int, ...],
    groups: list[np.ndarray],
    choices: Sequence[str],
    ideal: np.ndarray,
    ordered: bool,
    confidence: float,
    seed: int,
) -> None:
    """Widen entry ``index`` to what the data cannot reject: the ideal or a point mass.

    At the ideal every distance is 0 and so is every difference of them; the test statistic
    is the sum of the groups' distances (the first group alone, the rest pooled). When every
    answer is choice c, all groups may be the point mass on c: a difference is then 0 and a
    single group's distance is w̄(point mass on c).
    """
    statistic = _DistanceSum(tuple(ideal.tolist()), ordered, len(groups))
    observed = float(statistic([label_shares(g, len(choices)) for g in groups]))
    answered = [int((g >= 0).sum()) for g in groups]
    answers = np.concatenate([g[g >= 0] for g in groups])
    one_choice = answers.size > 0 and (answers == answers[0]).all()
    keep = []
    if ideal_not_rejected(statistic, observed, answered, ideal, confidence, seed):
        keep.append(0.0)
    if one_choice:
        mass = np.eye(len(choices))[answers[0]]
        keep.append(float(normalised_w1(mass, ideal, ordered)) if len(groups) == 1 else 0.0)
    for point in keep:
        joint.low[index] = min(joint.low[index], point)
        joint.high[index] = max(joint.high[index], point)


class _DistanceSum:
    """w(first group) + w(the other groups pooled): 0 only when all answer like the ideal."""

    def __init__(self, ideal: tuple[float, ...], ordered: bool, n_groups: int):
        self.key = (ideal, ordered, n_groups)

    def __call__(self, shares: list[np.ndarray]) -> float | np.ndarray:
        shares_at_ideal, ordered, _ = self.key
        ideal = np.array(shares_at_ideal)
        first = normalised_w1(shares[0], ideal, ordered)
        if len(shares) == 1:
            return first
        return first + normalised_w1(mean_of_shares(shares[1:], len(ideal)), ideal, ordered)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _DistanceSum) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


def _axis_settings(
    axes: tuple[str, ...],
    choices: Mapping[str, Sequence[str]],
    ideal: Mapping[str, np.ndarray | str | Mapping[str, float]] | None,
    ordered: Mapping[str, bool] | None,
) -> tuple[dict[str, np.ndarray], dict[str, bool]]:
    ideal = ideal or {}
    ordered = ordered or {}
    _check_axes("ideal", ideal, axes)
    _check_axes("ordered", ordered, axes)
    ideals = {axis: ideal_shares(ideal.get(axis, "uniform"), choices[axis]) for axis in axes}
    return ideals, {axis: bool(ordered.get(axis, False)) for axis in axes}


def _check_axes(what: str, mapping: Mapping[str, object], axes: tuple[str, ...]) -> None:
    unknown = sorted(set(mapping) - set(axes))
    if unknown:
        raise ValueError(f"{what} names axes {unknown} that have no choices; axes: {list(axes)}")


def _label_table(
    prompt: str,
    labels_by_axis: Mapping[str, Labels],
    axes: tuple[str, ...],
    choices: Mapping[str, Sequence[str]],
) -> np.ndarray:
    """One prompt's labels as an (images, axes) array; rows are images, resampled together."""
    _check_axes(f"prompt {prompt!r}", labels_by_axis, axes)
    columns = {}
    for axis, labels in labels_by_axis.items():
        if isinstance(labels, Answers):
            if labels.choices != tuple(choices[axis]):
                raise ValueError(
                    f"prompt {prompt!r}, axis {axis!r}: answers over {labels.choices}, "
                    f"expected {tuple(choices[axis])}"
                )
            labels = labels.labels
        columns[axis] = check_labels(labels, len(choices[axis]))
    sizes = {len(column) for column in columns.values()}
    if len(sizes) != 1:
        detail = {axis: len(column) for axis, column in columns.items()} or "no axis"
        raise ValueError(
            f"prompt {prompt!r}: every axis needs one label per image of the prompt, got {detail}"
        )
    (n,) = sizes
    return np.stack(
        [columns.get(axis, np.full(n, ABSTAINED)) for axis in axes], axis=-1
    ).astype(int).reshape(n, len(axes))
