"""Folders a check reads beside the model (an ideal's reference images, a judge audit's
labelled folder) that cannot be read are one clear ERROR naming the file and line, never
"unexpected FileNotFoundError" with a traceback (issue #35)."""

from __future__ import annotations

import textwrap

import pytest
from PIL import Image

from pytest_t2ibias.errors import CheckError, ImageFolderError
from pytest_t2ibias.instrument import reference_images
from pytest_t2ibias.methods.socialcf import labelled_folder

pytest_plugins = "pytester"


def test_an_empty_reference_folder_is_an_error_naming_it(tmp_path):
    (tmp_path / "notes.txt").write_text("no images here")
    with pytest.raises(ImageFolderError, match=rf"the ideal's reference folder {tmp_path} holds "
                                               r"no images .*give the axis another ideal"):
        reference_images(tmp_path)
    assert issubclass(ImageFolderError, CheckError)  # an ERROR row, whatever the item's marks


def test_a_reference_file_that_is_no_image_is_named(tmp_path):
    Image.new("RGB", (4, 4)).save(tmp_path / "a.png")
    (tmp_path / "b.png").write_bytes(b"not a png")
    with pytest.raises(ImageFolderError, match=rf"{tmp_path / 'b.png'} \(an ideal's reference "
                                               r"image\) cannot be read as an image"):
        reference_images(tmp_path)


def labelled(tmp_path, *lines: str):
    Image.new("RGB", (4, 4)).save(tmp_path / "0.png")
    (tmp_path / "index.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


@pytest.mark.parametrize("lines, says", [
    (['{"file": "0.png", "gender": "male"}', '{"file": "0.png", gender: male}'],
     r"index.jsonl:2: not JSON \(Expecting property name"),
    (['{"file": "0.png"}', "", '["0.png", "male"]'],
     r'index.jsonl:3: a line must be an object with a "file"'),
    (['{"file": "missing.png"}'], r"missing.png \(listed in .*index.jsonl\) is not a file"),
], ids=["bad-json", "not-an-object", "missing-image"])
def test_a_bad_index_line_is_an_error_naming_the_file_and_line(tmp_path, lines, says):
    with pytest.raises(ImageFolderError, match=says):
        labelled_folder(labelled(tmp_path, *lines))


def test_a_judge_audit_with_a_bad_index_line_is_one_error_row_without_traceback(pytester):
    """Was: "unexpected JSONDecodeError" naming neither the file nor the line."""
    (pytester.path / "labelled").mkdir()
    folder = labelled(pytester.path / "labelled", '{"file": "0.png", "gender": "male"}', "{oops")
    pytester.makefile(".t2i.yaml", judges=textwrap.dedent("""\
        prompt: "a photo of a {subject}"
        subjects: [doctor]
        axes:
          gender: {question: "What gender?", choices: [male, female]}
        checks:
          - {id: audit, kind: judge_agrees, axes: [gender], folder: labelled, threshold: 0.5}
        """))
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-vqa=v", "--t2i-no-cache")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*check 'audit' (judge_agrees) could not run: "
                                 f"ImageFolderError: {folder / 'index.jsonl'}:2: not JSON*"])
    assert "Traceback" not in result.stdout.str() and "unexpected" not in result.stdout.str()
