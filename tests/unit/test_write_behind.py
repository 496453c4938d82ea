"""The writers hold only unfinished work: a long run's cache writes cost memory and time in
proportion to the writes in flight, not to every write the run made (issue #46)."""

from __future__ import annotations

import threading

import pytest

from pytest_t2ibias.store import write_behind
from pytest_t2ibias.store.write_behind import WriteBehind


def submit_like_a_run(writes: WriteBehind, batches: int, per_batch: int) -> None:
    """A run's pattern: a batch's writes, then each of its claims released ``after`` them."""
    for _ in range(batches):
        for _ in range(per_batch):
            writes.submit(lambda: None)
        for _ in range(per_batch):
            writes.submit(lambda: None, after=True)


def test_the_futures_held_stay_bounded_however_many_tasks_are_submitted(monkeypatch):
    waited_on: list[int] = []
    real_wait = write_behind.wait_for_all

    def noting_wait(futures):
        waited_on.append(len(futures))
        return real_wait(futures)

    monkeypatch.setattr(write_behind, "wait_for_all", noting_wait)
    writes = WriteBehind(threads=2, max_pending=64)
    submit_like_a_run(writes, batches=100, per_batch=16)  # 3,200 tasks
    # held before the flush: at most the cap (the old code held all 3,200, and each release
    # copied them all: 1,600 lists of up to 3,200 futures); a release waits on a batch's
    # writes and the release before it at most
    assert len(writes._queued) <= 64
    writes.wait()
    assert waited_on and max(waited_on) <= 16 + 1
    assert len(writes._queued) == 0


def test_a_release_still_runs_after_the_writes_queued_before_it():
    order: list[str] = []
    gate = threading.Event()
    writes = WriteBehind(threads=4)

    def slow_write() -> None:
        gate.wait(timeout=10)
        order.append("write")

    writes.submit(slow_write)
    writes.submit(lambda: order.append("release"), after=True)
    gate.set()
    writes.wait()
    assert order == ["write", "release"]


def test_the_first_failure_is_kept_when_its_future_is_dropped_and_raises_from_wait():
    writes = WriteBehind(threads=1, max_pending=4)

    def fail(message: str):
        def task() -> None:
            raise OSError(message)
        return task

    writes.submit(fail("first"))
    writes.submit(fail("second"))
    submit_like_a_run(writes, batches=10, per_batch=4)  # the failed futures are dropped
    assert len(writes._queued) <= 4
    with pytest.raises(OSError, match="first"):
        writes.wait()
    writes.wait()  # reported once: the next flush is clean


def test_the_writers_falling_behind_hold_up_the_caller_at_the_cap():
    gate = threading.Event()
    writes = WriteBehind(threads=1, max_pending=3)
    for _ in range(3):
        writes.submit(lambda: gate.wait(timeout=10))
    blocked = threading.Thread(target=writes.submit, args=(lambda: None,))
    blocked.start()
    blocked.join(timeout=0.2)
    assert blocked.is_alive()  # waiting for room, not queueing a fourth image
    gate.set()
    blocked.join(timeout=10)
    assert not blocked.is_alive()
    writes.wait()


def test_a_failed_write_is_the_next_calls_error_and_its_images_are_kept(tmp_path):
    from PIL import Image

    from pytest_t2ibias._types import ImageRequest
    from pytest_t2ibias.errors import CacheError
    from pytest_t2ibias.store.cache import Cache
    from pytest_t2ibias.store.request_layer import RequestLayer

    class FullDisk(Cache):
        def put_image(self, key, image, request, image_hash=None):
            raise CacheError("no space left on the cache's disk")

    class Painter:
        fingerprint = "painter-v1"

        def generate(self, requests):
            return [Image.new("RGB", (4, 4), (r.index, 0, 0)) for r in requests]

    layer = RequestLayer(FullDisk(tmp_path), batch_size=2)
    first = layer.images(Painter(), [ImageRequest("a", 0, i) for i in range(3)])
    assert len(first) == 3  # computed, in memory: the call's own results stand
    for future in list(layer._writes._queued):
        future.exception()  # the writes have run (and failed)
    with pytest.raises(CacheError, match="no space"):
        layer.images(Painter(), [ImageRequest("b", 0, 0)])  # a check's ERROR row, as before
    assert layer.cache._held == {}  # every claim released all the same
