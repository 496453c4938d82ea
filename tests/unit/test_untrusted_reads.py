"""Issue #47 items 4 and 8: the tokens memo is sealed or read again, and the memo, a
remote-tier entry and a model's ``model_index.json`` are read through one guarded path (no
FIFO waited on, no link to /dev/zero read without end)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PIL import Image

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.backends.readings import TokenizerReader, pipeline_readers, problems
from pytest_t2ibias.store.cache import Cache
from pytest_t2ibias.testing.tokenizer import build_word_tokenizer

WORDS = "a photo of an doctor nurse male female person".split()
PILOT = "a photo of a pilot"


@pytest.fixture
def make_fifo(tmp_path):
    """``make_fifo(path)``: a FIFO there; a reader still blocked on it after 30 s is released
    (given EOF) and fails the test: a hang turned into a failure, not a hung run."""
    from support.validation_scripts import validation_script

    watches = []

    def make(path: Path) -> Path:
        os.mkfifo(path)
        watches.append(validation_script("fuzz_saved_runs").FifoWatch(path, 30))
        return path

    yield make
    assert not any(watch.stop() for watch in watches), "a read waited on a FIFO"


def memo_of(tmp_path: Path) -> tuple[Path, Path]:
    """A tokenizer that cannot read ``pilot``, and its memo after one reading."""
    folder, memo = tmp_path / "tok", tmp_path / "memo"
    build_word_tokenizer(WORDS, model_max_length=8).save_pretrained(folder)
    reader = TokenizerReader("tokenizer", folder=folder, memo=memo)
    assert problems([reader], [PILOT])  # pilot is unknown
    return folder, memo / f"{reader.fingerprint}.json"


def test_a_forged_memo_cannot_make_an_unread_prompt_read(tmp_path):
    """Was: ``"unknown": []`` typed into the memo turned an inconclusive FAIL into a pass."""
    folder, path = memo_of(tmp_path)
    payload = json.loads(path.read_text())
    payload["readings"][PILOT]["unknown"] = []
    path.write_text(json.dumps(payload))
    again = TokenizerReader("tokenizer", folder=folder, memo=path.parent)
    assert problems([again], [PILOT]) == {PILOT: "pilot unknown to tokenizer (read as <unk>)"}
    assert again._tokenizer is not None  # read again with the tokenizer, not the memo


@pytest.mark.parametrize("planted", ["fifo", "dev-zero", "nested"])
def test_a_memo_that_is_a_fifo_a_dev_zero_link_or_nested_brackets_is_read_again(tmp_path,
                                                                               planted, make_fifo):
    """Was: a FIFO hung collection; a link to /dev/zero was read until MemoryError."""
    folder, path = memo_of(tmp_path)
    path.unlink()
    if planted == "fifo":
        make_fifo(path)
    elif planted == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_text("[" * 200_000)
    again = TokenizerReader("tokenizer", folder=folder, memo=path.parent)
    assert problems([again], [PILOT]) == {PILOT: "pilot unknown to tokenizer (read as <unk>)"}


@pytest.mark.parametrize("planted", ["fifo", "dev-zero"])
def test_a_model_index_that_is_a_fifo_or_dev_zero_is_not_read(tmp_path, planted, make_fifo):
    from pytest_t2ibias.backends._fingerprint import config_file
    from pytest_t2ibias.errors import BackendError

    model = tmp_path / "model"
    model.mkdir()
    if planted == "fifo":
        make_fifo(model / "model_index.json")
    else:
        (model / "model_index.json").symlink_to("/dev/zero")
    assert pipeline_readers(model, None) == []
    with pytest.raises(BackendError, match="model_index.json is not a model config "
                                           r"\(not a regular file"):
        config_file(str(model), "model_index.json", offline=True)


@pytest.mark.parametrize("planted", ["fifo", "dev-zero", "huge"])
def test_a_remote_tier_entry_that_is_no_regular_bounded_file_is_refused(tmp_path, planted,
                                                                       make_fifo):
    """Was: a FIFO in ``--t2i-cache-remote=file://...`` hung the run; a /dev/zero link was
    read without end."""
    pytest.importorskip("fsspec")
    from pytest_t2ibias.store.remote import RemoteCache, RemoteCacheWarning

    shared = tmp_path / "shared"
    request = ImageRequest("a photo", 0, 0)
    key = "ab" + "1" * 62
    Cache(tmp_path / "a", remote=RemoteCache(f"file://{shared}")).put_image(
        key, Image.new("RGB", (8, 8)), request)
    entry = shared / "images" / "ab" / f"{key}.png"
    entry.unlink()
    if planted == "fifo":
        make_fifo(entry)
    elif planted == "dev-zero":
        entry.symlink_to("/dev/zero")
    else:
        with entry.open("wb") as handle:
            handle.truncate(200 * 2**20)  # sparse: over the 128 MiB an image may take
    remote = RemoteCache(f"file://{shared}")
    with pytest.warns(RemoteCacheWarning, match="refused"):
        assert Cache(tmp_path / "b", remote=remote).get_image(key) is None
    assert remote.failed is None  # one bad entry: the tier goes on serving the others


@pytest.mark.parametrize("planted", ["fifo", "dev-zero", "nested"])
def test_a_suite_lock_file_that_is_a_fifo_dev_zero_or_nested_is_a_lockfile_error(tmp_path,
                                                                                 planted, make_fifo):
    """Was: a ``*.lock.json`` linked to /dev/zero (a git commit can carry that link) was read
    without end; a FIFO hung."""
    from pytest_t2ibias.errors import LockfileError
    from pytest_t2ibias.locks import bgps

    path = tmp_path / "suite.bgps.lock.json"
    if planted == "fifo":
        make_fifo(path)
    elif planted == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_text("[" * 200_000)
    with pytest.raises(LockfileError):
        bgps.FORMAT.read(path)
