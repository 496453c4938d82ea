"""A call's answers reach the disk together: one flush of the disk a batch, not one fsync an
answer (issue #46: 1,024 fsyncs for 1,024 CLIP answers), each entry still whole or absent."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from PIL import Image

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.store import cache as cache_module
from pytest_t2ibias.store.cache import Cache, write_atomically_together
from pytest_t2ibias.store.request_layer import RequestLayer


class Painter:
    fingerprint = "painter-v1"

    def generate(self, requests):
        return [Image.new("RGB", (4, 4), (r.index % 251, 0, 0)) for r in requests]


class Reader:
    """Reads each image's red channel: a share of "x" that differs by image."""

    fingerprint = "reader-v1"

    def score(self, images, question, choices, statements=None):
        x = np.array([image.getpixel((0, 0))[0] / 255 for image in images])
        return np.stack([x, 1 - x], axis=1)


class Embedder:
    fingerprint = "embedder-v1"

    def embed_images(self, images):
        return [np.array([float(image.getpixel((0, 0))[0]), 1.0]) for image in images]

    def embed_texts(self, texts):
        return [np.array([float(len(text)), 1.0]) for text in texts]


def count_flushes(monkeypatch) -> list[str]:
    """Every fsync and syncfs the cache makes, by name."""
    made: list[str] = []
    real_fsync, real_sync = os.fsync, getattr(cache_module, "_sync_file_system", None)

    def fsync(fd):
        made.append("fsync")
        return real_fsync(fd)

    def sync_file_system(fd):
        made.append("syncfs")
        return real_sync(fd)

    monkeypatch.setattr(cache_module.os, "fsync", fsync)
    monkeypatch.setattr(cache_module, "_sync_file_system", sync_file_system, raising=False)
    return made


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="one flush a batch needs syncfs; elsewhere one fsync a file")


@linux_only
def test_a_batch_of_answers_is_made_durable_with_one_flush(tmp_path, monkeypatch):
    layer = RequestLayer(Cache(tmp_path), answer_batch_size=64)
    images = layer.images(Painter(), [ImageRequest("a", 0, i) for i in range(128)])
    layer.flush()
    made = count_flushes(monkeypatch)
    scored = layer.answers(Reader(), images, "q", ["x", "y"])
    layer.flush()
    assert made == ["syncfs", "syncfs"]  # two batches of 64; the old code: 128 fsyncs
    warm = RequestLayer(Cache(tmp_path))
    again = warm.answers(Reader(), images, "q", ["x", "y"])
    assert warm.counters.answers_from_cache == 128 and warm.counters.answers_scored == 0
    assert np.array_equal(again.probabilities, scored.probabilities)


@linux_only
def test_a_batch_of_embeddings_is_made_durable_with_one_flush(tmp_path, monkeypatch):
    layer = RequestLayer(Cache(tmp_path), answer_batch_size=64)
    images = layer.images(Painter(), [ImageRequest("a", 0, i) for i in range(64)])
    layer.flush()
    made = count_flushes(monkeypatch)
    vectors = layer.image_embeddings(Embedder(), images)
    layer.flush()
    assert made == ["syncfs"]  # the old code: 64 fsyncs
    warm = RequestLayer(Cache(tmp_path))
    assert np.array_equal(warm.image_embeddings(Embedder(), images), vectors)
    assert warm.counters.answers_from_cache == 64


def test_a_write_failing_midway_leaves_no_entry_and_no_temp_file(tmp_path, monkeypatch):
    folder = tmp_path / "answers" / "ab"
    folder.mkdir(parents=True)
    entries = [(folder / f"{i}.json", b'{"n": %d}' % i) for i in range(5)]
    real_replace, renamed = os.replace, []

    def replace_failing_on_the_third(source, target):
        if len(renamed) == 2:
            raise OSError(28, "No space left on device")
        renamed.append(target)
        real_replace(source, target)

    monkeypatch.setattr(cache_module.os, "replace", replace_failing_on_the_third)
    with pytest.raises(OSError, match="No space"):
        write_atomically_together(entries)
    assert sorted(p.name for p in folder.iterdir()) == ["0.json", "1.json"]  # whole or absent
    assert all(p.read_bytes() == dict(entries)[p] for p in folder.iterdir())
