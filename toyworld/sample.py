"""Sample captioned records from a world, and the exact shares the world implies (ground truth).

A record's attributes are drawn from the subject's joint distribution *conditioned on what
its caption says*: the named values and the hidden modifiers. So a model trained on
"a photo of a female musician" learns P(age | female musician), the planted coupling.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from toyworld.spec import Axis, Look, World

NAMED_AXES_BY_CAPTION_KIND = {
    "plain": 0,
    "modifier": 0,
    "one_attribute": 1,
    "two_attributes": 2,
    "attribute_and_modifier": 1,
}
_WORD = re.compile(r"\w+|[^\w\s]+")  # the split of tokenizers' Whitespace pre-tokenizer


@dataclass(frozen=True)
class Record:
    """One training example: a subject, its true attributes, and the caption it is shown with.

    ``named`` holds the attribute values the caption states (a subset of ``attributes``);
    ``seed`` fixes the renderer's jitter.
    """

    subject: str
    attributes: dict[str, str]
    caption: str
    named: dict[str, str] = field(default_factory=dict)
    modifiers: tuple[str, ...] = ()
    look: Look | None = None
    seed: int = 0


def joint_distribution(world: World, subject: str, modifiers: Iterable[str] = ()) -> tuple[tuple[Axis, ...], np.ndarray]:
    """P(all axes of ``subject``) as an array with one dimension per axis, under ``modifiers``.

    A product of per-axis factors: the subject's shares, or a coupling table P(axis | given);
    a modifier replaces its axis's factor with the modifier's shares.
    """
    if subject not in world.subjects:
        raise ValueError(f"unknown subject {subject!r}; world {world.name!r} has {list(world.subjects)}")
    axes = world.axes_of(subject)
    dim = {axis.name: i for i, axis in enumerate(axes)}
    replaced = {}
    for phrase in modifiers:
        try:
            modifier = world.modifier(phrase, subject)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        if modifier.axis in dim:  # None (an irrelevant phrase) replaces nothing
            replaced[modifier.axis] = modifier.shares
    couplings = {c.axis: c for c in world.subjects[subject].couplings}
    shape = [len(axis.values) for axis in axes]
    joint = np.ones(shape)
    for axis in axes:
        i = dim[axis.name]
        factor_shape = [1] * len(axes)
        factor_shape[i] = shape[i]
        if axis.name in replaced:
            factor = np.array([replaced[axis.name][v] for v in axis.values])
        elif axis.name in couplings:
            coupling = couplings[axis.name]
            j = dim[coupling.given]
            factor = np.array([[coupling.table[g][v] for v in axis.values] for g in axes[j].values])
            factor_shape[j] = shape[j]
            if j > i:
                factor = factor.T
        else:
            factor = np.array([world.subjects[subject].shares[axis.name][v] for v in axis.values])
        joint = joint * factor.reshape(factor_shape)
    return axes, joint


def expected_shares(
    world: World,
    subject: str,
    axis: str,
    given: Mapping[str, str] | None = None,
    modifiers: Iterable[str] = (),
) -> dict[str, float]:
    """The true share of each value of ``axis`` among images of ``subject`` given named values.

    E.g. ``expected_shares(world, "musician", "age", given={"gender": "female"})`` -> young 0.9.
    """
    axes, joint = joint_distribution(world, subject, modifiers)
    names = [a.name for a in axes]
    if axis not in names:
        raise ValueError(f"subject {subject!r} has no axis {axis!r}; its axes: {names}")
    joint = _condition(axes, joint, given or {}, subject)
    i = names.index(axis)
    marginal = joint.sum(axis=tuple(k for k in range(len(axes)) if k != i))
    return {value: float(share) for value, share in zip(axes[i].values, marginal / marginal.sum())}


def caption_for(world: World, subject: str, named: Mapping[str, str] | None = None, modifiers: Sequence[str] = ()) -> str:
    """The caption stating ``named`` values and ``modifiers``: "a photo of an old male farmer working outdoors"."""
    named = named or {}
    axes = world.axes_of(subject)
    unknown = set(named) - {a.name for a in axes}
    if unknown:
        raise ValueError(f"subject {subject!r} has no axis {sorted(unknown)}")
    before = [a.phrases[named[a.name]] for a in axes if a.name in named and a.position == "before"]
    after = [a.phrases[named[a.name]] for a in axes if a.name in named and a.position == "after"]
    noun = " ".join([*before, subject])
    article = "an" if noun[0].lower() in "aeiou" else "a"
    return world.captions.template.format(subject=" ".join([article, noun, *after, *modifiers]))


def sample_people(world: World, n: int, seed: int, subjects: Sequence[str] | None = None) -> list[Record]:
    """``n`` records (people and objects): subject by weight, caption kind by the world's mix.

    Named values are drawn uniformly among those possible, so rare phrasings are as frequent
    as common ones; the remaining attributes come from the conditional given the caption.
    """
    rng = np.random.default_rng(seed)
    chosen = [world.subjects[name] for name in (subjects or world.subjects)]
    subject_p = np.array([s.weight for s in chosen])
    subject_p /= subject_p.sum()
    kinds = list(world.captions.mix)
    kind_p = np.array([world.captions.mix[k] for k in kinds])
    joints: dict[tuple[str, tuple[str, ...]], tuple[tuple[Axis, ...], np.ndarray]] = {}
    records = []
    for subject_index, kind_index in zip(rng.choice(len(chosen), size=n, p=subject_p), rng.choice(len(kinds), size=n, p=kind_p)):
        subject, kind = chosen[subject_index], kinds[kind_index]
        candidates = [m for m in world.modifiers_for(subject.name) if kind == "modifier" or not m.alone]
        modifiers = ()
        if kind in ("modifier", "attribute_and_modifier") and candidates:
            weights = np.array([m.weight for m in candidates])
            if np.all(weights == weights[0]):  # the draw earlier builds made: they stay reproducible
                chosen_modifier = candidates[rng.integers(len(candidates))]
            else:
                chosen_modifier = candidates[rng.choice(len(candidates), p=weights / weights.sum())]
            modifiers = (chosen_modifier.text(subject.name),)
        key = (subject.name, modifiers)
        if key not in joints:
            joints[key] = joint_distribution(world, subject.name, modifiers)
        axes, joint = joints[key]

        named = {}
        n_named = min(NAMED_AXES_BY_CAPTION_KIND[kind], len(axes))
        for i in sorted(rng.choice(len(axes), size=n_named, replace=False)):
            marginal = joint.sum(axis=tuple(k for k in range(len(axes)) if k != i))
            possible = np.flatnonzero(marginal > 0)
            value = int(possible[rng.integers(len(possible))])
            named[axes[i].name] = axes[i].values[value]
            joint = _condition(axes, joint, {axes[i].name: axes[i].values[value]}, subject.name)

        cumulative = np.cumsum(joint.ravel() / joint.sum())
        flat_index = min(int(np.searchsorted(cumulative, rng.random(), side="right")), cumulative.size - 1)
        cell = np.unravel_index(flat_index, joint.shape)
        attributes = {axis.name: axis.values[v] for axis, v in zip(axes, cell)}
        records.append(
            Record(
                subject=subject.name,
                attributes=attributes,
                caption=caption_for(world, subject.name, named, modifiers),
                named=named,
                modifiers=modifiers,
                look=subject.look,
                seed=int(rng.integers(2**31 - 1)),
            )
        )
    return records


def world_vocabulary(world: World) -> list[str]:
    """Every word any caption of ``world`` can contain, split as the word tokenizer splits."""
    texts = [world.captions.template.replace("{subject}", " "), "a", "an", *world.subjects]
    texts += [phrase for axis in world.axes.values() for phrase in axis.phrases.values()]
    texts += [m.phrase.replace("{subject}", " ") for m in world.modifiers]
    return sorted({word.lower() for text in texts for word in _WORD.findall(text)})


def caption_words(caption: str) -> list[str]:
    """A caption split into the words ``world_vocabulary`` lists."""
    return [word.lower() for word in _WORD.findall(caption)]


def _condition(axes: tuple[Axis, ...], joint: np.ndarray, given: Mapping[str, str], subject: str) -> np.ndarray:
    """``joint`` with every cell that contradicts ``given`` set to zero."""
    names = [a.name for a in axes]
    mask = np.zeros(joint.shape, dtype=bool)
    index: list = [slice(None)] * len(axes)
    for name, value in given.items():
        if name not in names:
            raise ValueError(f"subject {subject!r} has no axis {name!r}; its axes: {names}")
        axis = axes[names.index(name)]
        if value not in axis.values:
            raise ValueError(f"axis {name!r} has no value {value!r}; values: {list(axis.values)}")
        index[names.index(name)] = axis.values.index(value)
    mask[tuple(index)] = True
    conditioned = np.where(mask, joint, 0.0)
    if conditioned.sum() <= 0:
        raise ValueError(f"{subject!r} given {dict(given)} has probability 0 in this world")
    return conditioned
