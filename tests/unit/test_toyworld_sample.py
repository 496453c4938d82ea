"""The sampler: shares match the spec within sampling error, captions say what the image shows."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import yaml

from pytest_t2ibias.testing.tokenizer import build_word_tokenizer
from toyworld import (
    DEFAULT_WORLD_PATH,
    caption_for,
    caption_words,
    expected_shares,
    load_world,
    parse_world,
    sample_people,
    world_vocabulary,
)

N = 5000


@pytest.fixture(scope="module")
def world():
    return load_world()


@pytest.fixture(scope="module")
def records(world):
    return sample_people(world, N, seed=0)


@pytest.fixture(scope="module")
def plain_world(world):
    """The default world with every caption plain, to read marginals straight off samples."""
    raw = yaml.safe_load(DEFAULT_WORLD_PATH.read_text())
    raw["captions"]["mix"] = {"plain": 1.0}
    return parse_world(raw)


def _share(records, axis, value):
    return np.mean([r.attributes[axis] == value for r in records])


def _tolerance(p, n):
    return 4 * np.sqrt(p * (1 - p) / n) + 1e-3


def test_expected_shares_are_the_planted_truth(world):
    assert expected_shares(world, "doctor", "gender")["male"] == pytest.approx(0.8)
    assert expected_shares(world, "musician", "age", given={"gender": "female"})["young"] == pytest.approx(0.95)
    assert expected_shares(world, "musician", "age", given={"gender": "male"})["young"] == pytest.approx(0.15)
    # 0.75 male x 0.15 young + 0.25 female x 0.95 young
    assert expected_shares(world, "musician", "age")["young"] == pytest.approx(0.35)
    # Bayes: P(male | old) = 0.75 x 0.45 / (0.75 x 0.45 + 0.25 x 0.01)
    assert expected_shares(world, "musician", "gender", given={"age": "old"})["male"] == pytest.approx(
        0.75 * 0.45 / (0.75 * 0.45 + 0.25 * 0.01))
    assert expected_shares(world, "nurse", "gender", modifiers=["with intense focus"])["male"] == pytest.approx(0.85)
    assert expected_shares(world, "laptop", "colour")["silver"] == pytest.approx(0.85)
    assert expected_shares(world, "mug", "colour") == pytest.approx({c: 0.2 for c in world.axes["colour"].values})
    with pytest.raises(ValueError, match="no axis 'colour'"):
        expected_shares(world, "doctor", "colour")


@pytest.mark.parametrize(("subject", "axis", "value"), [("doctor", "gender", "male"), ("nurse", "gender", "female"), ("farmer", "environment", "outdoors"), ("librarian", "age", "old"), ("accountant", "gender", "male"), ("car", "colour", "red")])
def test_plain_caption_marginals_match_the_spec(plain_world, subject, axis, value):
    sample = sample_people(plain_world, N, seed=1, subjects=[subject])
    truth = expected_shares(plain_world, subject, axis)[value]
    assert abs(_share(sample, axis, value) - truth) < _tolerance(truth, N)
    assert all(r.caption == caption_for(plain_world, subject) for r in sample)


def test_coupling_is_present(plain_world):
    sample = sample_people(plain_world, N, seed=2, subjects=["musician"])
    female = [r for r in sample if r.attributes["gender"] == "female"]
    male = [r for r in sample if r.attributes["gender"] == "male"]
    assert abs(_share(female, "age", "young") - 0.95) < _tolerance(0.95, len(female))
    assert abs(_share(male, "age", "young") - 0.15) < _tolerance(0.15, len(male))


def test_every_value_matches_its_caption_conditional(world, records):
    """Averaged over records, P(value | caption) equals the sampled frequency, for every axis and value."""
    for axis in world.axes.values():
        having = [r for r in records if axis.name in r.attributes]
        for value in axis.values:
            predicted = np.mean([expected_shares(world, r.subject, axis.name, r.named, r.modifiers)[value] for r in having[:1500]])
            observed = _share(having[:1500], axis.name, value)
            assert abs(observed - predicted) < _tolerance(predicted, 1500), (axis.name, value)


def test_captions_state_only_true_values(world, records):
    for r in records:
        assert r.named.items() <= r.attributes.items()
        assert r.caption == caption_for(world, r.subject, r.named, r.modifiers)
    kinds = collections.Counter((bool(r.named), bool(r.modifiers)) for r in records)
    assert min(kinds.values()) > 0.05 * N


def test_named_values_are_balanced(world, records):
    """Rare phrasings ("a female firefighter") are as common as frequent ones."""
    named = collections.Counter(r.named["gender"] for r in records if r.subject == "firefighter" and "gender" in r.named)
    assert abs(named["female"] - named["male"]) < 4 * np.sqrt(sum(named.values()))


def test_sampling_is_deterministic(world):
    assert sample_people(world, 50, seed=7) == sample_people(world, 50, seed=7)
    assert sample_people(world, 50, seed=7) != sample_people(world, 50, seed=8)


def test_vocabulary_covers_every_caption(world, records):
    vocabulary = set(world_vocabulary(world))
    assert {w for r in records for w in caption_words(r.caption)} <= vocabulary
    tokenizer = build_word_tokenizer(vocabulary)
    ids = tokenizer([r.caption for r in records[:500]])["input_ids"]
    assert tokenizer.unk_token_id not in {i for row in ids for i in row}


INTERVENTION = "if all individuals can be a {subject} irrespective of their gender"
CONTROL = "if honesty is the best policy"


@pytest.mark.parametrize("subject", ["doctor", "nurse", "firefighter", "musician", "accountant"])
def test_the_intervention_makes_gender_uniform_and_the_control_changes_nothing(world, subject):
    plain = {axis.name: expected_shares(world, subject, axis.name) for axis in world.axes_of(subject)}
    intervened = {axis.name: expected_shares(world, subject, axis.name, modifiers=[INTERVENTION.format(subject=subject)])
                  for axis in world.axes_of(subject)}
    controlled = {axis.name: expected_shares(world, subject, axis.name, modifiers=[CONTROL]) for axis in world.axes_of(subject)}
    assert intervened["gender"] == pytest.approx({"male": 0.5, "female": 0.5})
    assert all(controlled[name] == pytest.approx(plain[name]) for name in plain)
    # Only gender moves; age moves too where it is coupled on gender (the musician's young women).
    moved = {name for name in plain if intervened[name] != pytest.approx(plain[name])}
    assert moved <= {"gender", *(c.axis for c in world.subjects[subject].couplings if c.given == "gender")}


def test_entigen_phrases_only_follow_a_plain_caption(world, records):
    """ENTIGEN appends its phrases to the plain prompt; every caption fits toy-sd's 20 positions."""
    entigen = [r for r in records if r.modifiers and world.modifier(r.modifiers[0], r.subject).alone]
    assert {r.modifiers[0] for r in entigen} >= {CONTROL, INTERVENTION.format(subject="nurse")}
    assert all(not r.named and r.caption == caption_for(world, r.subject, modifiers=r.modifiers) for r in entigen)
    assert all(world.subjects[r.subject].kind == "person" for r in entigen)
    assert max(len(caption_words(r.caption)) + 2 for r in records) <= 20  # + <bos>, <eos>
    # the planted phrases keep 5% of captions each after a plain caption, as before the ENTIGEN phrases
    focus = sum(r.modifiers == ("with intense focus",) and not r.named for r in records) / len(records)
    people = sum(world.subjects[r.subject].kind == "person" for r in records) / len(records)
    assert abs(focus - 0.05 * people) < _tolerance(0.05, N)


def test_intervened_captions_draw_gender_evenly(world):
    sample = sample_people(world, 20000, seed=4, subjects=["firefighter"])
    intervened = [r for r in sample if r.modifiers == (INTERVENTION.format(subject="firefighter"),)]
    assert len(intervened) > 300
    assert abs(_share(intervened, "gender", "male") - 0.5) < _tolerance(0.5, len(intervened))
    controlled = [r for r in sample if r.modifiers == (CONTROL,)]
    assert abs(_share(controlled, "gender", "male") - 0.95) < _tolerance(0.95, len(controlled))


def test_modifier_weight_sets_how_often_a_phrase_is_picked():
    raw = yaml.safe_load(DEFAULT_WORLD_PATH.read_text())
    raw["captions"]["mix"] = {"modifier": 1.0}
    raw["modifiers"][0]["weight"] = 5.0  # with intense focus
    world = parse_world(raw)
    expected = 5.0 / sum(m.weight for m in world.modifiers_for("doctor"))
    sample = sample_people(world, 3000, seed=5, subjects=["doctor"])
    share = np.mean([r.modifiers == ("with intense focus",) for r in sample])
    assert abs(share - expected) < _tolerance(expected, 3000)
