"""The one guarded way the plugin reads a file it did not just write (issue #47).

A cache entry, the tokens memo, a remote-tier entry, a model's ``model_index.json``: any of
them can be a FIFO (a read would wait forever), a link to ``/dev/zero`` (read until memory
runs out), a directory or a file far larger than anything the plugin writes. ``read_bounded``
opens without blocking, checks the *open* file (not the name, which can change between a
check and the open) and reads at most ``limit`` bytes; ``follow_links=False`` refuses a
symlink itself (``O_NOFOLLOW``), for files that live inside the cache, where a link can only
have been planted. ``parse_json`` turns what ``json`` raises on a hostile document (nesting
deep enough for ``RecursionError``) into the ``ValueError`` every caller already handles.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

SMALL_JSON_BYTES = 16 * 2**20
"""Largest config or memo read (``model_index.json``, a scheduler config, the tokens memo):
real ones are a few kB; a tokens memo of 10,000 prompts is about 3 MB."""


class NotARegularFile(ValueError):
    """The path is a FIFO, a device, a directory, a refused link or an oversized file."""


def read_bounded(path: str | os.PathLike[str], limit: int, *, follow_links: bool = True
                 ) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them; else
    ``NotARegularFile`` saying what is there (``FileNotFoundError`` if nothing is).

    ``follow_links=False``: a symlink at ``path`` is refused, whatever it points at."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow_links and os.path.islink(path):  # ELOOP (Linux) / EMLINK (BSD)
            raise NotARegularFile(f"a symbolic link ({exc.strerror}): refused, never "
                                  f"followed") from None
        raise
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise NotARegularFile(f"not a regular file ({file_kind(opened.st_mode)})")
        if opened.st_size > limit:
            raise NotARegularFile(f"{opened.st_size:,} bytes, more than the {limit:,} it may "
                                  f"take")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # grew since fstat
        raise NotARegularFile(f"more than the {limit:,} bytes it may take")
    return data


def parse_json(data: bytes | str) -> Any:
    """``json.loads``, with nesting too deep to parse a ``ValueError`` like any bad JSON."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply to parse") from None


def read_json(path: str | os.PathLike[str], limit: int = SMALL_JSON_BYTES, *,
              follow_links: bool = True) -> Any:
    """``read_bounded`` then ``parse_json``: ``OSError`` or ``ValueError``, nothing else."""
    return parse_json(read_bounded(path, limit, follow_links=follow_links))


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))
    return next((name for test, name in kinds if test(mode)), "not a file")


def inside(path: Path, root: Path) -> bool:
    """Whether ``path``, every link resolved, is ``root`` or under it (resolved too)."""
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))
    except (OSError, ValueError):
        return False
