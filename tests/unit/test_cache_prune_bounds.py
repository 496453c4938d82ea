"""Issue #47 item 2: ``cache prune`` never deletes outside the cache."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from PIL import Image

from pytest_t2ibias.__main__ import main
from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.errors import CacheError
from pytest_t2ibias.store.admin import cache_stats, prune
from pytest_t2ibias.store.cache import Cache, image_key


def old_cache(root: Path) -> Path:
    """A cache the plugin wrote, one image in it, 40 days unused."""
    request = ImageRequest("a photo", 0, 0)
    Cache(root).put_image(image_key("gen", request), Image.new("RGB", (8, 8)), request)
    past = time.time() - 40 * 86400
    for path in root.rglob("*.png"):
        os.utime(path, (past, past))
    return root


def victims(tmp_path: Path) -> Path:
    folder = tmp_path / "V"
    folder.mkdir()
    (folder / "f").write_text("keep me")
    os.utime(folder / "f", (0, 0))  # older than any cutoff
    return folder


def test_a_written_cache_carries_the_cachedir_tag(tmp_path):
    root = old_cache(tmp_path / "C")
    signature = "Signature: 8a477f597d28d172789f06886806bc55\n"  # bford.info/cachedir
    assert (root / "CACHEDIR.TAG").read_text().startswith(signature)
    assert cache_stats(root).entries["other"] == 0  # the tag is no entry, never pruned


def test_a_cache_made_before_the_tag_gets_one_on_its_next_write(tmp_path):
    root = old_cache(tmp_path / "C")
    (root / "CACHEDIR.TAG").unlink()
    request = ImageRequest("another", 0, 0)
    Cache(root).put_image(image_key("gen", request), Image.new("RGB", (8, 8)), request)
    assert (root / "CACHEDIR.TAG").is_file()


@pytest.mark.parametrize("where", ["root", "images"])
def test_prune_follows_no_symlink_out_of_the_cache(tmp_path, where):
    """Was: ``ln -s $PWD/V C/zz; cache prune --older-than 30 --cache-dir C`` deleted V/f."""
    root, outside = old_cache(tmp_path / "C"), victims(tmp_path)
    (root / ("zz" if where == "root" else "images/zz")).symlink_to(outside)
    (root / "answers").mkdir(exist_ok=True)
    (root / "answers" / "link.json").symlink_to(outside / "f")
    assert main(["cache", "prune", "--older-than", "30", "--cache-dir", str(root)]) == 0
    assert (outside / "f").read_text() == "keep me"
    assert not list(root.rglob("*.png"))  # the cache's own old image did go


def test_prune_refuses_a_folder_without_the_cache_marker(tmp_path, capsys):
    """Was: pointed at any folder it deleted that folder's old files."""
    outside = victims(tmp_path)
    assert main(["cache", "prune", "--older-than", "0", "--cache-dir", str(outside)]) == 2
    assert "has no CACHEDIR.TAG of pytest-t2ibias" in capsys.readouterr().err
    assert (outside / "f").exists()
    (outside / "CACHEDIR.TAG").symlink_to(old_cache(tmp_path / "C") / "CACHEDIR.TAG")
    with pytest.raises(CacheError):  # a linked tag is no tag
        prune(outside, older_than_days=0)


def test_the_cache_is_found_at_the_rootdir_never_in_an_ancestor_the_project_lacks(
        tmp_path, monkeypatch, capsys):
    """Was: from a project without a cache, ``cache prune`` walked up to any ancestor's
    ``.t2ibias_cache``, one planted in /tmp included."""
    from pytest_t2ibias.__main__ import default_folder, project_root

    planted = old_cache(tmp_path / ".t2ibias_cache")
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    monkeypatch.chdir(project / "tests")
    assert project_root()[0] == project
    assert default_folder("t2i_cache_dir", Path(".t2ibias_cache")) == project / ".t2ibias_cache"
    assert main(["cache", "prune", "--older-than", "30"]) == 2
    assert f"no cache directory at {project / '.t2ibias_cache'}" in capsys.readouterr().err
    assert list(planted.rglob("*.png"))  # untouched
    (project / "pytest.ini").write_text("[pytest]\nt2i_cache_dir = elsewhere/c\n")
    assert default_folder("t2i_cache_dir", Path(".t2ibias_cache")) == project / "elsewhere" / "c"
