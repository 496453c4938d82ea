"""Issue #47: cache entries planted or broken by hand are caught, set aside and recomputed;
locks cannot be planted; nothing outside the cache is read (items 3, 5, 9)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from PIL import Image
from support.cache_world import (
    answer_file,
    image_file,
    pixels,
    rerun_answers,
    rerun_images,
    warm,
)

from pytest_t2ibias.store import cache as store
from pytest_t2ibias.store.cache import Cache, CacheWarning


def _strip_chunks(path: Path) -> None:
    with Image.open(path) as opened:
        plain = opened.convert("RGB")
    plain.save(path, format="PNG")  # no prompt/seed/index/content_hash chunks


def _swap(first: Path, second: Path) -> None:
    parked = first.with_suffix(".parked")
    first.rename(parked)
    second.rename(first)
    parked.rename(second)


def test_two_pngs_swapped_with_their_records_after_stripping_chunks_are_caught(tmp_path):
    """Was: both served (w1[nurse-gender] went 1.0 -> 0.5): each record matched its PNG."""
    images, _ = warm(tmp_path)
    first, second = (image_file(tmp_path, item) for item in images)
    for path in (first, second):
        _strip_chunks(path)
    _swap(first, second)
    _swap(store.index_path(tmp_path, images[0].key), store.index_path(tmp_path, images[1].key))
    with pytest.warns(CacheWarning, match="names another key|swapped or planted"):
        layer, _, again = rerun_images(tmp_path)
    assert layer.counters.images_generated == 2
    assert pixels(again) == pixels(images)
    assert rerun_images(tmp_path)[0].counters.images_generated == 0  # healed


def test_an_answer_of_nested_brackets_is_quarantined_and_recomputed(tmp_path):
    """Was: RecursionError on every run, its checks ERROR forever."""
    warm(tmp_path, n=1)
    answer_file(tmp_path).write_text("[" * 100_000 + "]" * 100_000)
    with pytest.warns(CacheWarning, match="nested too deeply"):
        layer, _, _ = rerun_answers(tmp_path)
    assert layer.counters.answers_scored == 1
    assert rerun_answers(tmp_path)[0].counters.answers_scored == 0  # healed


def test_an_index_record_that_is_a_directory_is_set_aside_and_the_image_heals(tmp_path):
    """Was: the image regenerated on every run, the record's write failing silently."""
    images, _ = warm(tmp_path, n=1)
    record = store.index_path(tmp_path, images[0].key)
    record.unlink()
    record.mkdir()
    (record / "inside").write_text("x")
    with pytest.warns(CacheWarning):
        layer, _, again = rerun_images(tmp_path, n=1)
    assert layer.counters.images_generated == 1
    assert record.is_file() and pixels(again) == pixels(images)
    assert rerun_images(tmp_path, n=1)[0].counters.images_generated == 0  # healed


def test_a_planted_lock_symlink_does_not_truncate_its_target(tmp_path):
    """Was: with filelock 3.12 (allowed by the old floor) the target was emptied."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    cache = Cache(tmp_path / "cache")
    key = "ab" + "0" * 62
    lock = cache._lock_path(key)
    lock.parent.mkdir(parents=True)
    lock.symlink_to(victim)
    with pytest.warns(CacheWarning, match="symbolic link"):
        claim = cache.claim(key)
    assert claim is not None
    claim.release()
    with pytest.warns(CacheWarning, match="symbolic link"):
        lock.symlink_to(victim)
        cache.wait_for(key)
    assert victim.read_text() == "precious"


def test_the_filelock_floor_is_a_version_that_refuses_lock_symlinks():
    """filelock < 3.20.1 opened the lock with O_TRUNC and followed a link (CVE-2025-68146);
    3.20.3 closed the same race in SoftFileLock (CVE-2026-22701)."""
    text = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    floor = re.search(r'"filelock>=([\d.]+)"', text)
    assert floor is not None, "pyproject.toml names no filelock floor"
    version = tuple(int(part) for part in floor.group(1).split("."))
    assert version >= (3, 20, 3)


def test_the_guarded_read_refuses_a_fifo_and_a_link_without_waiting(tmp_path):
    from pytest_t2ibias._files import NotARegularFile, read_bounded

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotARegularFile, match="FIFO"):
        read_bounded(fifo, 100)
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(NotARegularFile, match="character device"):
        read_bounded(tmp_path / "zero", 100)
    with pytest.raises(NotARegularFile, match="symbolic link"):
        read_bounded(tmp_path / "zero", 100, follow_links=False)
