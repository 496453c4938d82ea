"""Write a report file without ever removing what the path named before.

A report path is the user's: a regular file (the last run's report, or nothing yet) is
replaced atomically (a temp file beside it, then ``os.replace``), so a failed write leaves
the old file whole and removes only the temp file this module made; anything else (a
device such as ``/dev/stdout`` or ``/dev/full``, a FIFO) is written in place and never
unlinked nor replaced by a regular file (issue #35: a cleanup once deleted ``/dev/full``).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def write_report_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``; an ``OSError`` naming ``path`` (not a temp file)
    says why it could not be."""
    try:
        _write(path, text.encode("utf-8"))
    except OSError as exc:
        if exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def _write(path: str | Path, data: bytes) -> None:
    target = Path(os.path.realpath(path))  # a symlink's file is written, the link kept
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        _write_in_place(target, data)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, _new_file_mode() if mode is None else stat.S_IMODE(mode))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)  # ours alone: the target is never touched
        raise


def _new_file_mode() -> int:
    """What ``open`` would give a new file (``mkstemp`` makes it private)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _write_in_place(target: Path, data: bytes) -> None:
    """A device or FIFO: opened without blocking (a FIFO nobody reads is ENXIO, not a hang),
    then written as a stream."""
    fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)
        write_all(fd, data)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Every byte of ``data`` to ``fd`` (``os.write`` may write part of it)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
