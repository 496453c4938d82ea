"""Every cache read verified (#23, #35): a tampered entry of any kind is caught, moved aside,
recomputed and never served; nothing the records do not vouch for (an unsealed answer, an
image without its index record) is trusted or re-sealed; only regular files of bounded size
are read (no symlink to /dev/zero read without end, no FIFO waited on)."""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import warnings
import zlib

import numpy as np
import pytest
from PIL import Image
from support.cache_world import answer_file, image_file, pixels, rerun_answers, rerun_images, warm
from support.request_world import FixedAnswerer, NoiseColourGenerator, requests

from pytest_t2ibias.errors import BackendError
from pytest_t2ibias.store import cache as store
from pytest_t2ibias.store.cache import Cache, CacheWarning
from pytest_t2ibias.store.request_layer import RequestLayer


def corrupt(tmp_path):
    return sorted((tmp_path / "corrupt").iterdir()) if (tmp_path / "corrupt").exists() else []


# -- images ---------------------------------------------------------------------------------


def test_an_image_altered_and_resaved_without_its_chunk_is_caught_and_recomputed(tmp_path):
    images, _ = warm(tmp_path)
    path = image_file(tmp_path, images[0])
    altered = images[0].image.copy()
    altered.putpixel((0, 0), (255, 255, 255))
    altered.save(path, format="PNG")  # no text chunks at all: nothing in the PNG to check
    with pytest.warns(CacheWarning, match=rf"{images[0].key}.*replaced or swapped"):
        layer, generator, again = rerun_images(tmp_path)
    assert layer.counters.images_generated == 1 and layer.counters.images_from_cache == 1
    assert pixels(again) == pixels(images)
    assert len(corrupt(tmp_path)) == 1 and not corrupt(tmp_path)[0].name.endswith(".sha256")
    assert rerun_images(tmp_path)[0].counters.images_generated == 0  # the rewrite is good


def test_two_swapped_image_entries_are_both_caught_and_recomputed(tmp_path):
    images, _ = warm(tmp_path)
    first, second = image_file(tmp_path, images[0]), image_file(tmp_path, images[1])
    swap = first.with_suffix(".swap")
    first.rename(swap)
    second.rename(first)
    swap.rename(second)
    with pytest.warns(CacheWarning) as caught:
        layer, _, again = rerun_images(tmp_path)
    assert {str(first), str(second)} <= {str(w.message).split(" (")[0].split()[-1]
                                         for w in caught}
    assert layer.counters.images_generated == 2 and layer.counters.images_from_cache == 0
    assert pixels(again) == pixels(images)
    assert len(corrupt(tmp_path)) == 2


def test_an_image_replaced_by_a_plain_magenta_png_is_caught_and_recomputed(tmp_path):
    images, _ = warm(tmp_path)
    Image.new("RGB", (4, 4), (255, 0, 255)).save(image_file(tmp_path, images[1]))
    with pytest.warns(CacheWarning, match=images[1].key):
        layer, _, again = rerun_images(tmp_path)
    assert layer.counters.images_generated == 1
    assert pixels(again) == pixels(images)
    assert (255, 0, 255) not in [item.image.getpixel((0, 0)) for item in again]


def forged_png(image: Image.Image, request) -> bytes:
    """A PNG as ``put_image`` writes it (prompt, seed, index and a matching content_hash
    chunk) of other pixels: what a hand replacing an entry would write."""
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    for name, value in (("prompt", request.prompt), ("seed", str(request.seed)),
                        ("index", str(request.index)),
                        (store.CONTENT_HASH_TEXT, store.content_hash(image))):
        info.add_text(name, value)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", pnginfo=info)
    return buffer.getvalue()


def test_a_forged_png_whose_index_record_is_deleted_is_recomputed(tmp_path):
    """Was: a replacement PNG carrying its own content_hash chunk was served once its
    index record was deleted (a figure moved 0.50 -> 0.17)."""
    images, _ = warm(tmp_path)
    first = images[0]
    forged = Image.new("RGB", (4, 4), (255, 0, 255))
    image_file(tmp_path, first).write_bytes(forged_png(forged, requests("a", 2)[0]))
    store.index_path(tmp_path, first.key).unlink()
    with pytest.warns(CacheWarning, match=rf"{first.key}.*no index record for this key"):
        layer, _, again = rerun_images(tmp_path)
    assert layer.counters.images_generated == 1 and layer.counters.images_from_cache == 1
    assert pixels(again) == pixels(images)  # the generator's image, not the forged one
    assert store.index_path(tmp_path, first.key).read_bytes() == store.record_text(
        first.key, store.content_hash(first.image))


def png_claiming(width: int, height: int) -> bytes:
    """A PNG header claiming ``width`` x ``height`` pixels (and no pixel data)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(
            ">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


def test_a_decompression_bomb_is_moved_aside_and_recomputed(tmp_path):
    images, _ = warm(tmp_path)
    path = image_file(tmp_path, images[0])
    bomb = png_claiming(30_000, 30_000)
    path.write_bytes(bomb)
    with pytest.warns(CacheWarning, match=rf"{path}.*30000 x 30000.*decompression bomb"):
        layer, _, again = rerun_images(tmp_path)
    assert layer.counters.images_generated == 1
    assert pixels(again) == pixels(images)
    assert [moved.read_bytes() for moved in corrupt(tmp_path)] == [bomb]


def test_an_image_over_a_lowered_pixel_limit_is_moved_aside(tmp_path, monkeypatch):
    images, _ = warm(tmp_path)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 4)  # the 4 x 4 images are now "bombs"
    with pytest.warns(CacheWarning, match="decompression bomb"):
        assert Cache(tmp_path).get_image(images[0].key) is None
    assert len(corrupt(tmp_path)) == 1


# -- answers --------------------------------------------------------------------------------






def test_flipped_answer_probabilities_are_caught_and_recomputed(tmp_path):
    warm(tmp_path, n=1)
    path = answer_file(tmp_path)
    record = json.loads(path.read_text())
    record["probabilities"] = record["probabilities"][::-1]  # 0.918 -> 0.082, still sums to 1
    path.write_text(json.dumps(record))
    with pytest.warns(CacheWarning, match=rf"{path.name}.*does not match its hash"):
        layer, answerer, answers = rerun_answers(tmp_path)
    assert layer.counters.answers_scored == 1 and answerer.calls == 1
    assert answers.probabilities.tolist() == [[0.918, 0.082]]
    assert len(corrupt(tmp_path)) == 1


@pytest.mark.parametrize("resealed, says", [
    (False, "no 'hash' field"), (True, r"\[-5, 6\] are not all within \[0, 1\]")],
    ids=["plain", "hash-recomputed"])
def test_probabilities_out_of_range_are_caught_even_with_a_matching_hash(tmp_path, resealed,
                                                                         says):
    warm(tmp_path, n=1)
    path = answer_file(tmp_path)
    record = json.loads(path.read_text())
    record["probabilities"] = [-5, 6]  # sums to 1
    if resealed:
        record["hash"] = store.answer_hash(record)
    else:
        record = {"probabilities": [-5, 6]}
    path.write_text(json.dumps(record))
    with pytest.warns(CacheWarning, match=says):
        layer, _, answers = rerun_answers(tmp_path)
    assert layer.counters.answers_scored == 1
    assert answers.probabilities.tolist() == [[0.918, 0.082]]


@pytest.mark.parametrize("field, value", [("question", "another question"),
                                          ("choices", ["y", "x"]), ("image", "0" * 64)])
def test_an_answer_to_another_question_or_image_is_caught_though_sealed(tmp_path, field, value):
    warm(tmp_path, n=1)
    path = answer_file(tmp_path)
    record = {**json.loads(path.read_text()), field: value}
    record["hash"] = store.answer_hash(record)
    path.write_text(json.dumps(record))
    with pytest.warns(CacheWarning, match=f"answers {field}.*swapped entry"):
        layer, _, answers = rerun_answers(tmp_path)
    assert layer.counters.answers_scored == 1
    assert answers.probabilities.tolist() == [[0.918, 0.082]]


@pytest.mark.parametrize("row", [[-5, 6], [0.5, 0.9], [np.nan, 1.0]])
def test_a_judge_answering_no_probabilities_is_an_error_and_nothing_is_cached(tmp_path, row):
    layer = RequestLayer(Cache(tmp_path))
    images = layer.images(NoiseColourGenerator(), requests("a", 1))
    with pytest.raises(BackendError, match=r"FixedAnswerer answered 'q'.*summing to 1"):
        layer.answers(FixedAnswerer([row]), images, "q", ["x", "y"])
    assert not (tmp_path / "answers").exists() or not list(
        (tmp_path / "answers").glob("*/*.json"))


def test_a_whole_row_abstention_is_served_from_the_cache(tmp_path):
    warm(tmp_path, n=1, row=(np.nan, np.nan))
    layer, answerer, answers = rerun_answers(tmp_path, row=(0.5, 0.5))
    assert answerer.calls == 0 and np.isnan(answers.probabilities).all()


# -- nothing unsealed is trusted or re-sealed (#35) -------------------------------------------


def w1_verdict(answers):
    from pytest_t2ibias.kinds.w1_below import evaluate_w1_below

    return evaluate_w1_below(answers, 0.3, confidence=0.95).passed


def test_an_unsealed_answer_is_recomputed_never_resealed(tmp_path):
    """Was: an answer with its ``hash`` removed was taken for a legacy entry and re-sealed;
    reversing its probabilities turned a FAIL (male 4 / female 0) into a pass (2 / 2)."""
    images, answers = warm(tmp_path, n=4, row=(0.9, 0.1))  # every image answers x: fails
    assert not w1_verdict(answers)
    paths = sorted((tmp_path / "answers").glob("*/*.json"))
    for path in paths[:2]:  # two of four answers flipped, their hash removed
        record = json.loads(path.read_text())
        record["probabilities"] = record["probabilities"][::-1]
        del record["hash"]
        path.write_text(json.dumps(record))
    with pytest.warns(CacheWarning, match="no 'hash' field"):
        layer, _, _ = rerun_images(tmp_path, n=4)
        answerer = FixedAnswerer([[0.9, 0.1]])
        again = layer.answers(answerer, layer.images(NoiseColourGenerator(), requests("a", 4)),
                              "q", ["x", "y"])
    assert answerer.calls == 2 and layer.counters.answers_scored == 2
    np.testing.assert_array_equal(again.probabilities, answers.probabilities)
    assert not w1_verdict(again)  # the verdict is unchanged
    layer.flush()
    assert len(corrupt(tmp_path)) == 2
    assert all("hash" in json.loads(path.read_text()) for path in paths)  # recomputed, sealed


def test_a_cache_of_unrecorded_entries_is_recomputed_once_then_warm(tmp_path):
    """Entries written before the index and the answer hash (#23) carry nothing this cache
    vouches for: each is moved aside and recomputed once, then served."""
    images, answers = warm(tmp_path, n=3)
    shutil.rmtree(tmp_path / "index")
    for path in (tmp_path / "answers").glob("*/*.json"):
        record = json.loads(path.read_text())
        path.write_text(json.dumps({k: record[k] for k in
                                    ("question", "choices", "answerer", "probabilities")}))
    with pytest.warns(CacheWarning):
        layer, generator, served = rerun_images(tmp_path, n=3)
        layer.answers(FixedAnswerer([[0.918, 0.082]]), served, "q", ["x", "y"])
    assert layer.counters.images_generated == 3 and layer.counters.answers_scored == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layer, generator, served = rerun_images(tmp_path, n=3)
        again = layer.answers(FixedAnswerer([[0.1, 0.9]]), served, "q", ["x", "y"])
    assert generator.batches == [] and layer.counters.answers_scored == 0
    assert pixels(served) == pixels(images)
    np.testing.assert_array_equal(again.probabilities, answers.probabilities)


# -- only regular files of bounded size are read (#35) -----------------------------------------


def _entry_paths(tmp_path, images):
    answer = next((tmp_path / "answers").glob("*/*.json"))
    return {"image": image_file(tmp_path, images[0]),
            "index": store.index_path(tmp_path, images[0].key), "answer": answer}


@pytest.mark.parametrize("entry", ["image", "index", "answer"])
def test_an_entry_linked_to_dev_zero_is_not_read_and_is_recomputed(tmp_path, entry):
    """Was: an index or answer file symlinked to /dev/zero was read without limit (3.8 GB,
    then MemoryError tracebacks)."""
    images, answers = warm(tmp_path, n=1)
    path = _entry_paths(tmp_path, images)[entry]
    path.unlink()
    path.symlink_to("/dev/zero")
    with pytest.warns(CacheWarning, match="symbolic link|not a regular file|swapped or planted"):
        layer, generator, again = rerun_images(tmp_path, n=1)
        answerer = FixedAnswerer([[0.918, 0.082]])
        answered = layer.answers(answerer, again, "q", ["x", "y"])
    layer.flush()
    assert pixels(again) == pixels(images)
    np.testing.assert_array_equal(answered.probabilities, answers.probabilities)
    assert w1_verdict(answered) == w1_verdict(answers)
    assert not path.is_symlink()  # rewritten as a regular file; /dev/zero untouched
    assert os.path.exists("/dev/zero") and not os.path.isfile("/dev/zero")


@pytest.mark.parametrize("entry", ["image", "index", "answer"])
def test_a_fifo_in_place_of_an_entry_is_not_waited_on_and_is_recomputed(tmp_path, entry):
    """Was: a FIFO in place of a PNG hung the run forever (the bomb check's ``open``)."""
    images, answers = warm(tmp_path, n=1)
    path = _entry_paths(tmp_path, images)[entry]
    path.unlink()
    os.mkfifo(path)
    with pytest.warns(CacheWarning, match="a FIFO|swapped or planted"):
        layer, generator, again = rerun_images(tmp_path, n=1)
        answered = layer.answers(FixedAnswerer([[0.918, 0.082]]), again, "q", ["x", "y"])
    layer.flush()
    assert pixels(again) == pixels(images)
    np.testing.assert_array_equal(answered.probabilities, answers.probabilities)
    assert path.is_file()


def test_an_oversized_answer_is_refused_unread(tmp_path, monkeypatch):
    warm(tmp_path, n=1)
    monkeypatch.setattr(store, "MAX_ANSWER_BYTES", 64)
    with pytest.warns(CacheWarning, match="bytes, more than the 64 it may take"):
        layer, answerer, answers = rerun_answers(tmp_path)
    assert answerer.calls == 1 and answers.probabilities.tolist() == [[0.918, 0.082]]


def test_index_records_are_no_entries_and_go_with_their_image_when_pruned(tmp_path):
    from pytest_t2ibias.store.admin import cache_stats, prune

    warm(tmp_path, n=3)
    assert cache_stats(tmp_path).entries == {"images": 3, "answers": 3, "probes": 0, "other": 0}
    prune(tmp_path, max_size=0)
    assert list((tmp_path / "images").rglob("*.png")) == []
    assert list((tmp_path / "index").rglob("*.sha256")) == []


def test_the_html_report_shows_no_thumbnail_for_a_bomb_and_does_not_break(tmp_path):
    from pytest_t2ibias.reports.html import Thumbnails

    images, _ = warm(tmp_path, n=1)
    image_file(tmp_path, images[0]).write_bytes(png_claiming(30_000, 30_000))
    assert Thumbnails(tmp_path)(images[0].key) is None


def test_the_html_report_waits_on_no_fifo(tmp_path):
    from pytest_t2ibias.reports.html import Thumbnails

    images, _ = warm(tmp_path, n=1)
    path = image_file(tmp_path, images[0])
    path.unlink()
    os.mkfifo(path)
    assert Thumbnails(tmp_path)(images[0].key) is None
