"""Issue #45: the planted intersectional judge bias of the example suites
(``example_suites/weak_judge.py``, ``misreads-old:``): a judge that misreads one group more,
deterministic, its ground truth written down."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from example_suites.weak_judge import (
    OLD,
    OLD_PREFIX,
    DegradedGenerator,
    OldDegradedGenerator,
    degrade_folder,
    names_old,
)
from pytest_t2ibias._types import ImageRequest

FLAT = (200, 120, 90)


class _Flat:
    fingerprint = "flat"

    def generate(self, requests):
        return [Image.new("RGB", (32, 32), FLAT) for _ in requests]

    def with_options(self, **options):
        return self


def test_only_images_of_prompts_naming_old_are_degraded_and_always_alike():
    generator = OldDegradedGenerator(_Flat())
    requests = [ImageRequest("a photo of an old doctor", 0, 0),
                ImageRequest("a photo of a young doctor", 0, 0),
                ImageRequest("a photo of a bold doctor", 0, 1),
                ImageRequest("a photo of an Old doctor", 0, 2)]
    old, young, bold, capital = (np.asarray(i) for i in generator.generate(requests))
    flat = np.asarray(Image.new("RGB", (32, 32), FLAT))
    assert np.array_equal(young, flat) and np.array_equal(bold, flat)
    assert not np.array_equal(old, flat) and not np.array_equal(capital, flat)
    assert np.array_equal(np.asarray(generator.generate(requests[:1])[0]), old)  # seeded
    assert names_old("an old doctor") and not names_old("a doctor, not so bold")
    assert generator.judge_side and generator.around(_Flat()).fingerprint == generator.fingerprint
    assert generator.fingerprint != DegradedGenerator(_Flat()).fingerprint
    assert isinstance(generator.with_options(steps=4), OldDegradedGenerator)
    assert OLD_PREFIX == "misreads-old:"


def test_a_labelled_folder_is_degraded_by_its_rows_true_age(tmp_path):
    source, target = tmp_path / "clean", tmp_path / "degraded"
    source.mkdir()
    rows = [{"file": f"{i}.png", "gender": "male", "age": age}
            for i, age in enumerate(("young", "old", "middle-aged", "old"))]
    for row in rows:
        Image.new("RGB", (32, 32), FLAT).save(source / row["file"])
    (source / "index.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    degrade_folder(source, target, by_label=OLD)
    changed = [not np.array_equal(np.asarray(Image.open(target / r["file"])),
                                  np.asarray(Image.open(source / r["file"]))) for r in rows]
    assert changed == [False, True, False, True]
    assert (target / "index.jsonl").read_text() == (source / "index.jsonl").read_text()
