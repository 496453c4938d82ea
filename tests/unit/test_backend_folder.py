"""FolderImages: the two layouts of --t2i-images, and what a missing image says."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.backends import BackendError, FolderImages, Generator, prompt_slug


def save(path, value):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), (value, 255 - value, 0)).save(path)


def red(image):
    return int(np.asarray(image)[0, 0, 0])


def test_prompt_slug():
    assert prompt_slug("A photo of a Doctor") == "a_photo_of_a_doctor"
    assert prompt_slug("a nurse, smiling!") == "a_nurse__smiling_"
    long_a, long_b = "x" * 130 + " a", "x" * 130 + " b"
    assert len(prompt_slug(long_a)) == 120 + 1 + 8
    assert prompt_slug(long_a).startswith("x" * 120 + "-")
    assert prompt_slug(long_a) != prompt_slug(long_b)


def test_slug_layout(tmp_path):
    for index in range(3):
        save(tmp_path / "a_photo_of_a_doctor" / f"{index}.png", 10 * index)
    save(tmp_path / "a_photo_of_a_nurse" / "0.png", 99)
    folder = FolderImages(tmp_path)
    assert isinstance(folder, Generator)
    images = folder.generate([
        ImageRequest("A photo of a doctor", seed=0, index=2),
        ImageRequest("a photo of a nurse", seed=5, index=0),
        ImageRequest("A photo of a doctor", seed=0, index=0),
    ])
    assert [red(image) for image in images] == [20, 99, 0]
    assert all(image.mode == "RGB" for image in images)


def test_missing_image_names_prompt_index_path_and_what_exists(tmp_path):
    for index in range(3):
        save(tmp_path / "a_photo_of_a_doctor" / f"{index}.png", index)
    folder = FolderImages(tmp_path)
    with pytest.raises(BackendError) as info:
        folder.generate([ImageRequest("A photo of a doctor", seed=0, index=5)])
    message = str(info.value)
    assert "no image 5 for prompt 'A photo of a doctor'" in message
    assert str(tmp_path / "a_photo_of_a_doctor" / "5.png") in message
    assert "3 image(s) exist for this prompt (indices 0..2)" in message
    with pytest.raises(BackendError, match="0 image"):
        folder.generate([ImageRequest("a photo of a pilot", seed=0, index=0)])


def test_index_jsonl_takes_precedence(tmp_path):
    save(tmp_path / "a_photo_of_a_doctor" / "0.png", 1)  # ignored: the index wins
    save(tmp_path / "imgs" / "d0.png", 50)
    save(tmp_path / "imgs" / "d1.png", 60)
    lines = [
        {"prompt": "A photo of a doctor", "index": 0, "file": "imgs/d1.png"},
        {"prompt": "A photo of a doctor", "index": 1, "file": "imgs/d0.png"},
    ]
    (tmp_path / "index.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    folder = FolderImages(tmp_path)
    images = folder.generate([ImageRequest("A photo of a doctor", 0, i) for i in (0, 1)])
    assert [red(image) for image in images] == [60, 50]
    with pytest.raises(BackendError, match=r"no line with prompt 'A photo of a doctor' and index 2 .*2 image\(s\)"):
        folder.generate([ImageRequest("A photo of a doctor", 0, 2)])


def test_bad_index_line_names_file_and_line(tmp_path):
    (tmp_path / "index.jsonl").write_text('{"prompt": "p", "index": 0, "file": "a.png"}\n{"prompt": "p"}\n')
    with pytest.raises(BackendError, match=r"index.jsonl:2: expected"):
        FolderImages(tmp_path)


def test_fingerprint_follows_image_bytes(tmp_path):
    save(tmp_path / "p" / "0.png", 1)
    save(tmp_path / "p" / "1.png", 2)
    before = FolderImages(tmp_path).fingerprint
    assert FolderImages(tmp_path).fingerprint == before
    (tmp_path / "notes.txt").write_text("not an image")
    assert FolderImages(tmp_path).fingerprint == before
    save(tmp_path / "p" / "1.png", 3)
    assert FolderImages(tmp_path).fingerprint != before


def test_missing_root(tmp_path):
    with pytest.raises(BackendError, match=r"--t2i-images=.*nope: no such directory"):
        FolderImages(tmp_path / "nope")
