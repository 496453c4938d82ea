"""Bad values and damaged files: each a one-paragraph error naming what and where, or a
quarantined entry that is recomputed; never a traceback, never accepted in silence."""

from __future__ import annotations

import json
import os
import time

import pytest
from PIL import Image

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.backends import BackendError
from pytest_t2ibias.backends.folder import FolderImages
from pytest_t2ibias.errors import CacheError
from pytest_t2ibias.store.cache import STALE_TMP_SECONDS, Cache, CacheWarning, answer_hash
from pytest_t2ibias.store.request_layer import RequestLayer

SUITE_WITH_CLASSIFIER_AXIS = """\
prompt: "a photo of a {subject}"
subjects: [doctor]
axes:
  gender: {question: "gender?", choices: [male, female], classifier: true}
checks:
  - {id: severity, kind: entropy_below, axes: [gender], threshold: 1.0}
"""


# -- options --------------------------------------------------------------------------------


@pytest.mark.parametrize("option, says", [
    *[(option, "must be*>=*") for option in (
        "--t2i-steps=0", "--t2i-bootstrap=0", "--t2i-guidance=nan", "--t2i-guidance=inf",
        "--t2i-guidance=-1")],
    *[(option, "must be an integer in [[]*]*") for option in (  # bounded above too (#35)
        "--t2i-images-per-prompt=0", "--t2i-images-per-prompt=-3", "--t2i-seed=-1")],
])
def test_out_of_range_option_is_a_usage_error_naming_it(pytester: pytest.Pytester, option, says):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{option.split('=')[0]}*{says}"])


@pytest.mark.parametrize("option", ["--t2i-batch-size=0", "--t2i-batch-size=vqa=-2",
                                    "--t2i-batch-size=unet=4"])
def test_bad_batch_size_is_a_usage_error_naming_it(pytester: pytest.Pytester, option):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--t2i-batch-size: *"])


def test_classifier_axis_without_a_classifier_says_so(pytester: pytest.Pytester, tmp_path):
    pytester.makefile(".t2i.yaml", suite=SUITE_WITH_CLASSIFIER_AXIS)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--t2i-cache-dir={tmp_path}")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*could not run*axis 'gender' says classifier: true*"
                                 "--t2i-classifier=gender=PATH*"])
    result.stdout.no_fnmatch_line("*Traceback*")


# -- the cache directory --------------------------------------------------------------------


@pytest.mark.parametrize("where", ["parent_is_a_file", "cannot_be_created"])
def test_unusable_cache_directory_is_one_clear_error(tmp_path, where):
    if where == "parent_is_a_file":
        (tmp_path / "file").write_text("")
        root = tmp_path / "file" / "cache"
    else:
        root = "/proc/t2ibias-cache-cannot-exist"
    cache = Cache(root)
    with pytest.raises(CacheError, match=r"--t2i-cache-dir.*writable directory.*--t2i-no-cache"):
        cache.put_answer("ab" * 32, {"probabilities": [1.0]})
    with pytest.raises(CacheError):
        cache.claim("ab" * 32)


def test_read_only_directory_is_one_clear_error(tmp_path, monkeypatch):
    cache = Cache(tmp_path / "cache")

    def refuse(*args, **kwargs):
        raise OSError(30, "Read-only file system", str(tmp_path / "cache"))

    monkeypatch.setattr("pytest_t2ibias.store.cache.Path.mkdir", refuse)
    with pytest.raises(CacheError, match="Read-only file system"):
        cache.put_image("ab" * 32, Image.new("RGB", (2, 2)), ImageRequest("p", 0, 0))


# -- integrity ------------------------------------------------------------------------------


def test_image_with_wrong_pixels_is_quarantined_and_recomputed(tmp_path):
    key = "12" * 32
    cache = Cache(tmp_path)
    cache.put_image(key, Image.new("RGB", (4, 4), (1, 2, 3)), ImageRequest("p", 0, 0))
    path = tmp_path / "images" / "12" / f"{key}.png"
    with Image.open(path) as stored:  # same format, same text chunks, other pixels
        forged = Image.new("RGB", (4, 4), (200, 0, 0))
        from PIL import PngImagePlugin
        info = PngImagePlugin.PngInfo()
        for name, value in stored.text.items():
            info.add_text(name, value)
    forged.save(path, format="PNG", pnginfo=info)
    with pytest.warns(CacheWarning, match="do not match the stored content hash"):
        assert cache.get_image(key) is None
    assert len(list((tmp_path / "corrupt").iterdir())) == 1


@pytest.mark.parametrize("probabilities", [["0.2", "0.8"], [True, False], "0.5", [[0.1]],
                                           [float("nan"), 1.0]])
def test_wrong_typed_cached_answer_is_quarantined_and_recomputed(tmp_path, probabilities):
    from support.request_world import FixedAnswerer, NoiseColourGenerator, requests

    layer = RequestLayer(Cache(tmp_path))
    images = layer.images(NoiseColourGenerator(), requests("a", 1))
    answerer = FixedAnswerer([0.9, 0.1])
    layer.answers(answerer, images, "q", ["x", "y"])
    layer.flush()
    (answer_file,) = (tmp_path / "answers").glob("*/*.json")
    record = {**json.loads(answer_file.read_text()), "probabilities": probabilities}
    record["hash"] = answer_hash(record)  # sealed: the row itself must be caught (#35)
    answer_file.write_text(json.dumps(record))
    fresh = RequestLayer(Cache(tmp_path))
    images = fresh.images(NoiseColourGenerator(), requests("a", 1))
    with pytest.warns(CacheWarning, match="probabilities"):
        answers = fresh.answers(answerer, images, "q", ["x", "y"])
    assert answers.probabilities.tolist() == [[0.9, 0.1]]
    assert fresh.counters.answers_scored == 1
    assert len(list((tmp_path / "corrupt").iterdir())) == 1


def test_stale_temp_files_are_swept_and_locks_kept_apart(tmp_path):
    folder = tmp_path / "images" / "ab"
    folder.mkdir(parents=True)
    stale, fresh = folder / ".abab.png.x1.tmp", folder / ".abab.png.x2.tmp"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    old = time.time() - STALE_TMP_SECONDS - 60
    os.utime(stale, (old, old))
    cache = Cache(tmp_path)
    claim = cache.claim("ab" * 32)
    cache.put_answer("ab" * 32, {"probabilities": [1.0]})
    assert (tmp_path / "locks" / "ab" / f"{'ab' * 32}.lock").exists()  # held: under locks/
    claim.release()
    assert not stale.exists() and fresh.exists()
    assert not list((tmp_path / "answers").rglob("*.lock"))
    assert not list(tmp_path.rglob("*.lock"))  # released: no file left behind (#27)


# -- --t2i-images ---------------------------------------------------------------------------


def test_corrupt_image_in_folder_names_the_file(tmp_path):
    (tmp_path / "a_doctor").mkdir()
    (tmp_path / "a_doctor" / "0.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    with pytest.raises(BackendError, match=r"cannot read .*0\.png.*replace the file"):
        FolderImages(tmp_path).generate([ImageRequest("a doctor", 0, 0)])


@pytest.mark.parametrize("file", ["../outside.png", "/etc/passwd", "a/../../x.png"])
def test_index_entries_stay_inside_the_folder(tmp_path, file):
    (tmp_path / "index.jsonl").write_text(json.dumps({"prompt": "p", "index": 0, "file": file}))
    with pytest.raises(BackendError, match=r"index.jsonl:1: .*outside"):
        FolderImages(tmp_path)
