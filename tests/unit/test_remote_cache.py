"""The remote cache tier (--t2i-cache-remote): read through on a local miss, written behind,
and a failing store costs a warning, never the run or its data."""

from __future__ import annotations

import uuid

import pytest
from PIL import Image

from pytest_t2ibias._settings import Settings
from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.store.cache import Cache
from pytest_t2ibias.store.remote import RemoteCache, RemoteCacheWarning

pytest.importorskip("fsspec")
REQUEST = ImageRequest("a photo of a doctor", seed=0, index=0)


@pytest.fixture
def url() -> str:
    return f"memory://t2ibias-{uuid.uuid4().hex}"


def picture() -> Image.Image:
    return Image.new("RGB", (8, 8), (200, 30, 40))


def test_an_entry_written_on_one_machine_is_read_on_another(tmp_path, url):
    first = Cache(tmp_path / "machine-a", remote=RemoteCache(url))
    first.put_image("ab" + "1" * 62, picture(), REQUEST)
    first.put_answer("cd" + "2" * 62, {"question": "q", "choices": ["a", "b"],
                                       "answerer": "x", "probabilities": [0.25, 0.75]})
    assert first.remote.pushed == 3  # the image, its index record and the answer

    remote = RemoteCache(url)
    second = Cache(tmp_path / "machine-b", remote=remote)
    image = second.get_image("ab" + "1" * 62)
    assert image is not None and image.getpixel((0, 0)) == (200, 30, 40)
    assert second.get_answer("cd" + "2" * 62)["probabilities"] == [0.25, 0.75]
    assert remote.fetched == 3
    # now local: read again without the store
    assert (tmp_path / "machine-b" / "images" / "ab").exists()
    assert second.get_image("ab" + "1" * 62) is not None and remote.fetched == 3
    assert second.get_image("ef" + "3" * 62) is None  # in neither tier


def test_refresh_does_not_read_the_remote_tier(tmp_path, url):
    Cache(tmp_path / "a", remote=RemoteCache(url)).put_image("ab" + "1" * 62, picture(), REQUEST)
    refreshing = Cache(tmp_path / "b", read=False, remote=RemoteCache(url))
    assert refreshing.get_image("ab" + "1" * 62) is None


def test_a_failing_store_warns_once_and_the_local_cache_carries_on(tmp_path, url, monkeypatch):
    remote = RemoteCache(url)

    def broken(*args, **kwargs):
        raise ConnectionError("the bucket is unreachable")

    monkeypatch.setattr(remote.fs, "pipe_file", broken)  # fsspec shares fs instances
    cache = Cache(tmp_path / "a", remote=remote)
    with pytest.warns(RemoteCacheWarning, match="the bucket is unreachable"):
        cache.put_image("ab" + "1" * 62, picture(), REQUEST)
    cache.put_image("ab" + "4" * 62, picture(), REQUEST)  # no second warning, no error
    assert cache.get_image("ab" + "1" * 62) is not None  # the local copy is there
    assert cache.get_image("ab" + "4" * 62) is not None


def test_a_corrupt_remote_entry_is_quarantined_locally_not_served(tmp_path, url):
    remote = RemoteCache(url)
    remote.fs.pipe_file(f"{remote.root}/images/ab/{'ab' + '1' * 62}.png", b"not a png")
    cache = Cache(tmp_path / "a", remote=remote)
    with pytest.warns(UserWarning):
        assert cache.get_image("ab" + "1" * 62) is None
    assert list((tmp_path / "a" / "corrupt").rglob("*"))


def test_settings_build_the_tier_and_a_bad_url_is_a_clear_error(tmp_path, url):
    cache = Cache.from_settings(Settings.standalone(cache_dir=tmp_path, cache_remote=url))
    assert cache.remote is not None and cache.remote.url == url
    assert Cache.from_settings(Settings.standalone(cache_dir=tmp_path)).remote is None
    from pytest_t2ibias.errors import CacheError

    with pytest.raises(CacheError, match="--t2i-cache-remote=nosuchprotocol://x"):
        Cache.from_settings(Settings.standalone(cache_dir=tmp_path,
                                                cache_remote="nosuchprotocol://x"))
