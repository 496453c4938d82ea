"""The content-addressed cache: keys, atomic writes, corrupt entries moved aside."""

from __future__ import annotations

import warnings

import pytest
from PIL import Image

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.store.cache import (
    Cache,
    CacheWarning,
    answer_key,
    content_hash,
    image_key,
)


def test_image_key_changes_with_every_input():
    base = image_key("model-a/steps=20", ImageRequest("a photo of a doctor", 0, 3))
    variants = [
        image_key("model-b/steps=20", ImageRequest("a photo of a doctor", 0, 3)),
        image_key("model-a/steps=25", ImageRequest("a photo of a doctor", 0, 3)),
        image_key("model-a/steps=20", ImageRequest("a photo of a nurse", 0, 3)),
        image_key("model-a/steps=20", ImageRequest("a photo of a doctor", 1, 3)),
        image_key("model-a/steps=20", ImageRequest("a photo of a doctor", 0, 4)),
    ]
    assert len({base, *variants}) == 6
    assert base == image_key("model-a/steps=20", ImageRequest("a photo of a doctor", 0, 3))


def test_answer_key_changes_with_question_choices_and_extractor():
    keys = {
        answer_key("img", "clip", "gender?", ("male", "female"), None),
        answer_key("img", "clip", "gender?", ("female", "male"), None),
        answer_key("img", "blip", "gender?", ("male", "female"), None),
        answer_key("img", "clip", "age?", ("male", "female"), None),
        answer_key("img2", "clip", "gender?", ("male", "female"), None),
        answer_key("img", "clip", "gender?", ("male", "female"), ("a man", "a woman")),
    }
    assert len(keys) == 6


def test_noise_seed_depends_on_seed_and_index_not_prompt():
    assert ImageRequest("a", 0, 1).noise_seed == ImageRequest("b", 0, 1).noise_seed
    assert ImageRequest("a", 0, 1).noise_seed != ImageRequest("a", 0, 2).noise_seed
    assert ImageRequest("a", 0, 1).noise_seed != ImageRequest("a", 1, 1).noise_seed
    assert 0 <= ImageRequest("a", 7, 9).noise_seed < 2**63


def test_image_round_trip_keeps_pixels_and_provenance(tmp_path):
    cache = Cache(tmp_path)
    picture = Image.new("RGB", (8, 8), (10, 200, 30))
    request = ImageRequest("a photo of a nurse", 5, 2)
    cache.put_image("ab" * 32, picture, request)
    stored = tmp_path / "images" / "ab" / ("ab" * 32 + ".png")
    assert stored.exists()
    with Image.open(stored) as opened:
        assert opened.text["prompt"] == "a photo of a nurse"
        assert opened.text["seed"] == "5"
    assert content_hash(cache.get_image("ab" * 32)) == content_hash(picture)
    assert not list(stored.parent.glob("*.tmp"))


def test_corrupt_image_is_moved_aside_not_deleted(tmp_path):
    cache = Cache(tmp_path)
    key = "cd" * 32
    cache.put_image(key, Image.new("RGB", (4, 4)), ImageRequest("p", 0, 0))
    path = tmp_path / "images" / "cd" / f"{key}.png"
    path.write_bytes(b"not a png")
    with pytest.warns(CacheWarning, match="corrupt cache entry"):
        assert cache.get_image(key) is None
    moved = list((tmp_path / "corrupt").iterdir())
    assert len(moved) == 1 and moved[0].read_bytes() == b"not a png"
    assert not path.exists()


def test_corrupt_answer_is_a_miss(tmp_path):
    cache = Cache(tmp_path)
    cache.put_answer("ef" * 32, {"probabilities": [0.2, 0.8]})
    assert cache.get_answer("ef" * 32)["probabilities"] == [0.2, 0.8]
    (tmp_path / "answers" / "ef" / ("ef" * 32 + ".json")).write_text('{"probabilities": [0.2,')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.get_answer("ef" * 32) is None
    assert any(issubclass(w.category, CacheWarning) for w in caught)


def test_refresh_skips_reads_and_no_cache_writes_nothing(tmp_path):
    Cache(tmp_path).put_answer("aa" * 32, {"probabilities": [1.0]})
    assert Cache(tmp_path, read=False).get_answer("aa" * 32) is None
    disabled = Cache(None)
    disabled.put_answer("bb" * 32, {"probabilities": [1.0]})
    assert disabled.get_answer("bb" * 32) is None
    assert not (tmp_path / "answers" / "bb").exists()
