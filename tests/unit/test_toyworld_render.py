"""The renderer: deterministic, and every axis legible at 32x32 (a linear probe reads it)."""

from __future__ import annotations

import numpy as np
import pytest

from toyworld import load_world, render_dataset, render_image, sample_people


@pytest.fixture(scope="module")
def world():
    return load_world()


def test_render_is_deterministic(world):
    records = sample_people(world, 20, seed=0)
    first, second = render_dataset(records), render_dataset(records)
    assert first.shape == (20, 32, 32, 3) and first.dtype == np.uint8
    assert np.array_equal(first, second)
    record = records[0]
    other = render_image(record.attributes, record.look, record.seed + 1)
    assert not np.array_equal(np.asarray(other), first[0])


def test_resolution_is_a_parameter(world):
    (record,) = sample_people(world, 1, seed=0)
    assert render_dataset([record], resolution=64).shape == (1, 64, 64, 3)


def test_every_axis_is_legible(world):
    """A ridge-regression probe on raw pixels reads each axis well (a CNN does better)."""
    records = sample_people(world, 2400, seed=3)
    people = [r for r in records if r.look.kind == "person"]
    pixels = render_dataset(people).reshape(len(people), -1).astype(np.float64) / 255
    pixels = pixels.reshape(len(people), 32, 32, 3)[:, ::2, ::2].reshape(len(people), -1)  # 768 features
    axes = [a for a in world.axes.values() if a.applies_to == "person"]
    targets = np.concatenate([np.eye(len(a.values))[[a.values.index(r.attributes[a.name]) for r in people]] for a in axes], axis=1)
    train, test = slice(0, len(people) * 3 // 4), slice(len(people) * 3 // 4, None)
    x = np.hstack([pixels, np.ones((len(people), 1))])
    weights = np.linalg.solve(x[train].T @ x[train] + 1.0 * np.eye(x.shape[1]), x[train].T @ targets[train])
    scores, start = x[test] @ weights, 0
    for axis in axes:
        stop = start + len(axis.values)
        accuracy = np.mean(scores[:, start:stop].argmax(1) == targets[test, start:stop].argmax(1))
        assert accuracy > 0.8, (axis.name, accuracy)
        start = stop

    # Colour on plain objects (a pattern's marks are a colour of their own), then the
    # pattern by a probe on every object.
    objects = [r for r in records if r.look.kind == "object"]
    plain = [r for r in objects if r.attributes.get("pattern", "plain") == "plain"]
    mean_colour = render_dataset(plain).reshape(len(plain), -1, 3).mean(1)
    for colour in ("silver", "red"):
        a = mean_colour[[r.attributes["colour"] == colour for r in plain]]
        b = mean_colour[[r.attributes["colour"] != colour for r in plain]]
        assert np.abs(a.mean(0) - b.mean(0)).max() > 15, colour
    pattern = world.axes["pattern"]
    pixels = render_dataset(objects).reshape(len(objects), -1).astype(np.float64) / 255
    x = np.hstack([pixels, np.ones((len(objects), 1))])
    targets = np.eye(len(pattern.values))[[pattern.values.index(r.attributes["pattern"]) for r in objects]]
    train, test = slice(0, len(objects) * 3 // 4), slice(len(objects) * 3 // 4, None)
    weights = np.linalg.solve(x[train].T @ x[train] + 1.0 * np.eye(x.shape[1]), x[train].T @ targets[train])
    accuracy = np.mean((x[test] @ weights).argmax(1) == targets[test].argmax(1))
    assert accuracy > 0.75, ("pattern", accuracy)  # 0.85 measured; the majority class (striped mugs) is 0.55


def test_the_mug_is_its_own_shape_and_shows_its_colour(world):
    """At 32 px a mug differs from a laptop and a car of the same colour, and its colour is
    what sets its mean pixel apart (the classifiers and the toy CLIP read it from there)."""
    from toyworld.spec import Look

    def mean_image(shape, colour):
        return np.mean([np.asarray(render_image({"colour": colour}, Look(kind="object", shape=shape), seed), dtype=float)
                        for seed in range(8)], axis=0)

    for colour in world.axes["colour"].values:
        mug = mean_image("mug", colour)
        for other in ("laptop", "car"):
            assert np.abs(mug - mean_image(other, colour)).mean() > 15, (colour, other)
    means = {c: mean_image("mug", c).reshape(-1, 3).mean(0) for c in world.axes["colour"].values}
    for colour, mean in means.items():
        nearest = min((c for c in means if c != colour), key=lambda c: np.abs(means[c] - mean).max())
        assert np.abs(means[nearest] - mean).max() > 10, (colour, nearest)


def test_a_labelled_folder_through_a_vae_keeps_its_labels_and_loses_detail(tmp_path):
    import json
    from pathlib import Path

    from PIL import Image

    from toyworld.labelled import vae_roundtrip_folder
    from toyworld.render import write_labelled_folder

    toy_sd = Path(__file__).resolve().parents[2] / "fixtures" / "toy-sd"
    rows = write_labelled_folder(tmp_path / "rendered", 6, seed=3, subjects=["doctor", "car"])
    assert vae_roundtrip_folder(tmp_path / "rendered", tmp_path / "vae", toy_sd, batch_size=4) == 6
    assert (tmp_path / "vae" / "index.jsonl").read_text() == (tmp_path / "rendered" / "index.jsonl").read_text()
    for row in rows:
        before = np.asarray(Image.open(tmp_path / "rendered" / row["file"]), dtype=float)
        after = np.asarray(Image.open(tmp_path / "vae" / row["file"]), dtype=float)
        assert after.shape == before.shape
        # The same picture (colours and layout survive), not the same pixels (an 8x8 latent).
        assert 0 < np.abs(after - before).mean() < 40
    assert json.loads((tmp_path / "vae" / "index.jsonl").read_text().splitlines()[0])["subject"] in ("doctor", "car")
