"""The request layer: dedupe across calls, batch misses, never recompute what is cached."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from support.request_world import FixedAnswerer, GatedCache, NoiseColourGenerator, requests

from pytest_t2ibias._types import ABSTAINED
from pytest_t2ibias.errors import CacheError
from pytest_t2ibias.store.cache import Cache
from pytest_t2ibias.store.request_layer import RequestLayer


def test_generates_each_distinct_request_once_in_full_batches(tmp_path):
    layer = RequestLayer(Cache(tmp_path), batch_size=4)
    generator = NoiseColourGenerator()
    images = layer.images(generator, requests("a", 6) + requests("a", 6) + requests("b", 3))
    assert len(images) == 15
    assert generator.batches == [4, 4, 1]
    assert layer.counters.images_generated == 9
    layer.images(generator, requests("b", 3))
    assert generator.batches == [4, 4, 1]


def test_second_layer_on_same_directory_generates_nothing(tmp_path):
    first = RequestLayer(Cache(tmp_path))
    generator = NoiseColourGenerator()
    answerer = FixedAnswerer([0.9, 0.1])
    answers = first.answers(answerer, first.images(generator, requests("a", 5)), "q", ["x", "y"])
    second = RequestLayer(Cache(tmp_path))
    again = second.answers(answerer, second.images(generator, requests("a", 5)), "q", ["x", "y"])
    assert second.counters.images_generated == 0 and second.counters.answers_scored == 0
    assert second.counters.images_from_cache == 5 and second.counters.answers_from_cache == 5
    np.testing.assert_array_equal(answers.labels, again.labels)
    assert answerer.calls == 5


def test_paired_noise_across_prompts(tmp_path):
    layer = RequestLayer(Cache(tmp_path))
    images = layer.images(NoiseColourGenerator(), requests("short", 3) + requests("longer prompt", 3))
    red = [item.image.getpixel((0, 0))[0] for item in images]
    assert red[:3] == red[3:]


def test_low_confidence_and_unscorable_images_abstain(tmp_path):
    layer = RequestLayer(Cache(tmp_path))
    images = layer.images(NoiseColourGenerator(), requests("a", 3))

    class Mixed(FixedAnswerer):
        def score(self, images, question, choices, statements=None):
            return np.array([[0.9, 0.1], [0.55, 0.45], [np.nan, np.nan]])

    answers = layer.answers(Mixed([]), images, "q", ["x", "y"], abstain_below=0.6)
    assert answers.labels.tolist() == [0, ABSTAINED, ABSTAINED]
    assert answers.abstentions == 2 and answers.counts == {"x": 1, "y": 0}
    cached = RequestLayer(Cache(tmp_path)).answers(Mixed([]), images, "q", ["x", "y"])
    assert cached.labels.tolist() == [0, 0, ABSTAINED]


# -- writes behind the computation (_write_behind) ------------------------------------------


class WatchedCache(Cache):
    """Notes which thread wrote each entry, and whether it was on disk when its claim went."""

    def __init__(self, root, fail_on: str | None = None):
        super().__init__(root)
        self.writers: set[str] = set()
        self.released_before_written: list[str] = []
        self.fail_on = fail_on

    def put_image(self, key, image, request, image_hash=None):
        if request.prompt == self.fail_on:
            raise CacheError(f"disk full writing {key}")
        time.sleep(0.01)  # a slow disk: the claim must still wait for it
        self.writers.add(threading.current_thread().name)
        super().put_image(key, image, request, image_hash)

    def _release(self, key):
        if not self._path("images", key, ".png").exists():
            self.released_before_written.append(key)
        super()._release(key)


def test_images_are_written_on_a_writer_thread_each_before_its_claim_is_released(tmp_path):
    cache = WatchedCache(tmp_path)
    layer = RequestLayer(cache, batch_size=3)
    images = layer.images(NoiseColourGenerator(), requests("a", 7))
    layer.flush()
    assert cache.writers and all(name.startswith("t2ibias-cache-writer_")
                                 for name in cache.writers)
    assert cache.released_before_written == []
    assert cache._held == {}  # every claim released by the time the flush returns
    for image in images:  # and every entry on disk, readable by the next process
        assert Cache(tmp_path).get_image(image.key) is not None


def test_a_failed_write_behind_raises_from_the_flush_and_releases_every_claim(tmp_path):
    cache = WatchedCache(tmp_path, fail_on="b")
    layer = RequestLayer(cache, batch_size=2)
    layer.images(NoiseColourGenerator(), requests("a", 3) + requests("b", 2))
    with pytest.raises(CacheError, match="disk full"):
        layer.flush()
    assert cache._held == {}
    written = {path.stem for path in (tmp_path / "images").glob("*/*.png")}
    assert len(written) == 3  # prompt "a"'s entries kept


def test_without_a_cache_nothing_is_queued(tmp_path):
    layer = RequestLayer(Cache(None), batch_size=2)
    layer.images(NoiseColourGenerator(), requests("a", 3))
    assert layer._writes._executor is None


def test_an_images_call_returns_before_its_writes_and_the_flush_writes_them_all(tmp_path):
    cache = GatedCache(tmp_path)
    layer = RequestLayer(cache, batch_size=4)
    images = layer.images(NoiseColourGenerator(), requests("a", 6))  # returns, gate still shut
    assert len(images) == 6 and layer._writes.pending > 0
    assert not list((tmp_path / "images").glob("*/*.png"))  # nothing written yet
    cache.gate.set()
    layer.flush()
    assert cache._held == {}
    fresh = RequestLayer(Cache(tmp_path))  # a warm rerun computes nothing
    generator = NoiseColourGenerator()
    again = fresh.images(generator, requests("a", 6))
    assert generator.batches == [] and fresh.counters.images_from_cache == 6
    assert [i.content_hash for i in again] == [i.content_hash for i in images]


def test_another_layer_waiting_on_a_pending_write_reads_it_once_written(tmp_path):
    cache = GatedCache(tmp_path)
    layer = RequestLayer(cache, batch_size=4)
    layer.images(NoiseColourGenerator(), requests("a", 2))  # claims held until written
    threading.Timer(0.2, cache.gate.set).start()
    other, generator = RequestLayer(Cache(tmp_path)), NoiseColourGenerator()
    other.images(generator, requests("a", 2))
    assert generator.batches == [] and other.counters.images_from_cache == 2
    layer.flush()
