"""What the cache holds, and giving space back: ``python -m pytest_t2ibias cache stats|prune``.

The cache (``_cache.Cache``) is content-addressed, so any entry can go: a later run computes
it again. Pruning removes the least recently used first. "Used" is the later of a file's
access and modification times: reads update the access time on most mounts only once a day
(``relatime``) and never under ``noatime``, where it falls back to when the entry was written.
An image or answer is deleted only under its key's claim (``Cache.claim``), so an entry a
running process is computing or quarantining is never touched: it is skipped and counted.
Probes (``probes/<axis>-<key>/``, BGPS) are whole directories and have no claims; temp
files of writes in progress, locks (``locks/``, ``*.lock``) and the index of image hashes
(``index/``: a record goes with its image, removed along with it) are no entries. Sizes are
given twice: the data, and what it takes on disk (blocks, directories and lock files
included: what ``du`` says), since thousands of small files take far more than their bytes.
Lock files are removed after use; ``prune`` removes those an older version left behind.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

import filelock

from .._files import inside
from ..errors import CacheError
from .cache import CACHEDIR_TAG, Cache, index_path, is_marked_cache, release_removing

KINDS = ("images", "answers", "probes", "other")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}


@dataclass(frozen=True)
class Entry:
    """One thing in the cache: a file (an image, an answer) or a probe's directory."""

    path: Path
    kind: str
    size: int
    used: float
    """When it was last read or written (seconds since the epoch)."""
    key: str | None = None
    """The cache key whose claim guards it (images and answers)."""
    prunable: bool = True
    disk: int = 0
    """Bytes it takes on disk (whole blocks), not counting its directory."""


@dataclass(frozen=True)
class CacheStats:
    root: Path
    entries: dict[str, int]
    size: dict[str, int]
    oldest: float | None
    newest: float | None
    on_disk: int = 0
    """Everything under the root as ``du`` counts it: blocks of files, directories and locks."""
    lock_files: int = 0
    """Lock files left on disk (none after a run of this version; ``prune`` removes them)."""

    @property
    def total_entries(self) -> int:
        return sum(self.entries.values())

    @property
    def total_size(self) -> int:
        return sum(self.size.values())


@dataclass
class Pruned:
    """What a prune removed (or, dry, would remove) and what it had to keep."""

    removed: list[Entry] = field(default_factory=list)
    claimed: list[Entry] = field(default_factory=list)
    """Entries it chose but left: another process held their key's claim."""
    remaining: int = 0
    """Bytes left on disk afterwards, as ``du`` (and ``cache stats``) counts them."""
    lock_files: int = 0
    """Lock files no process held, removed (or, dry, that would be)."""
    freed_on_disk: int = 0
    """Disk bytes the removed entries took (with their images' index records)."""

    @property
    def freed(self) -> int:
        """Data bytes of the removed entries."""
        return sum(entry.size for entry in self.removed)


def entries(root: Path) -> list[Entry]:
    """Every entry under ``root``: ``images/ab/<key>.png``, ``answers/ab/<key>.json``, probe
    directories, and anything else (``corrupt/``, stray files) as ``other``. Only regular
    files and real folders count: a symbolic link is never followed nor listed (the cache
    writes none; one planted there may point anywhere), nor is a FIFO or a device."""
    root = Path(root)
    found: list[Entry] = []
    for top in _children(root):
        if top.name in ("locks", "index", CACHEDIR_TAG):  # claims, records, the marker
            continue
        if top.name == "probes" and _is_folder(top):
            for probe in _children(top):
                if _is_folder(probe):
                    found.append(_directory(probe))
                elif _is_regular(probe):
                    found.append(_file(probe, "other"))
            continue
        kind, suffix = {"images": ("images", ".png"), "answers": ("answers", ".json")}.get(
            top.name, ("other", None))
        for path in _regular_files(top):
            if path.suffix == ".lock":  # a lock is no entry
                continue
            if suffix and path.suffix == suffix and not path.name.startswith("."):
                found.append(_file(path, kind, key=path.stem))
            else:
                found.append(_file(path, "other"))
    return found


def _children(folder: Path) -> list[Path]:
    """``folder``'s entries by name; none if it is no real folder (a link is not one)."""
    if not _is_folder(folder):
        return []
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _regular_files(top: Path) -> list[Path]:
    """The regular files at or under ``top``, links neither followed nor listed."""
    if _is_regular(top):
        return [top]
    found = []
    for folder, _, names in os.walk(top) if _is_folder(top) else ():  # never follows links
        found += [path for name in names if _is_regular(path := Path(folder) / name)]
    return sorted(found)


def _file(path: Path, kind: str, key: str | None = None) -> Entry:
    info = path.stat()
    in_progress = path.name.startswith(".") and path.name.endswith(".tmp")
    return Entry(path, kind, info.st_size, max(info.st_atime, info.st_mtime), key,
                 prunable=not in_progress, disk=_blocks(info))


def _directory(path: Path) -> Entry:
    stats = [p.stat() for p in _regular_files(path)] or [path.stat()]
    in_progress = path.name.startswith(".")  # a probe being staged (load_or_train_probe)
    return Entry(path, "probes", sum(s.st_size for s in stats),
                 max(max(s.st_atime, s.st_mtime) for s in stats), prunable=not in_progress,
                 disk=sum(_blocks(s) for s in stats))


def cache_stats(root: Path) -> CacheStats:
    """Entries and bytes by kind, and the least and most recently used entry's time."""
    found = entries(root)
    used = [entry.used for entry in found]
    on_disk, lock_files, _ = _walk_disk(Path(root))
    return CacheStats(Path(root), {k: sum(e.kind == k for e in found) for k in KINDS},
                      {k: sum(e.size for e in found if e.kind == k) for k in KINDS},
                      min(used, default=None), max(used, default=None),
                      on_disk=on_disk, lock_files=lock_files)


def _walk_disk(root: Path) -> tuple[int, int, int]:
    """Bytes ``du`` would count under ``root`` (each inode once), the lock files there and
    their bytes."""
    seen: set[tuple[int, int]] = set()
    total = locks = lock_bytes = 0
    for folder, _, names in os.walk(root):
        for path in [folder, *(os.path.join(folder, name) for name in names)]:
            try:
                info = os.lstat(path)
            except FileNotFoundError:  # removed meanwhile by a running process
                continue
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += _blocks(info)
                if path.endswith(".lock"):
                    lock_bytes += _blocks(info)
        locks += sum(name.endswith(".lock") for name in names)
    return total, locks, lock_bytes


def _blocks(info: os.stat_result) -> int:
    """Allocated bytes; the apparent size where a platform does not say (Windows)."""
    return info.st_blocks * 512 if hasattr(info, "st_blocks") else info.st_size


def remove_stale_locks(root: Path, *, dry_run: bool = False) -> int:
    """Remove the lock files no process holds (an older version left one a key); returns
    how many. One held now is a claim in use: it stays."""
    removed = 0
    for path in _regular_files(Path(root)):
        if path.suffix != ".lock":
            continue
        lock = filelock.FileLock(str(path), thread_local=False)
        try:
            lock.acquire(timeout=0)
        except (filelock.Timeout, OSError):
            continue
        if dry_run:
            lock.release()
        else:
            release_removing(lock)
        removed += 1
    return removed


def prune(root: Path, *, older_than_days: float | None = None, max_size: int | None = None,
          dry_run: bool = False, now: float | None = None) -> Pruned:
    """Remove the lock files no process holds and entries unused for ``older_than_days``,
    then the least recently used until the cache takes at most ``max_size`` bytes on disk
    (as ``du`` and ``cache stats`` count: thousands of small files take far more than their
    data); ``dry_run`` says what would go and removes nothing. Each image or answer is
    removed holding its claim; one claimed elsewhere is kept."""
    refuse_unmarked(root)
    now = time.time() if now is None else now
    result = Pruned()
    result.lock_files = remove_stale_locks(root, dry_run=dry_run)
    found = entries(root)
    total, _, lock_bytes = _walk_disk(Path(root))
    if dry_run:
        total -= lock_bytes  # as if they were gone (a held one stays: a little more is left)
    cache = Cache(Path(root))
    cutoff = None if older_than_days is None else now - older_than_days * 86400
    for entry in sorted((e for e in found if e.prunable), key=lambda e: (e.used, str(e.path))):
        too_old = cutoff is not None and entry.used < cutoff
        too_big = max_size is not None and total > max_size
        if not (too_old or too_big):
            continue
        freed = entry.disk + _record_blocks(entry)
        if _remove(cache, entry, dry_run):
            result.removed.append(entry)
            result.freed_on_disk += freed
            total -= freed
        else:
            result.claimed.append(entry)
    result.remaining = max(total, 0)
    return result


def refuse_unmarked(root: Path) -> None:
    """``CacheError`` unless ``root`` carries the cache's ``CACHEDIR.TAG``: prune deletes
    files, and only in a folder that says it is a cache this plugin made."""
    if not is_marked_cache(Path(root)):
        raise CacheError(
            f"{root} has no {CACHEDIR_TAG} of pytest-t2ibias: not a cache this plugin made, so "
            f"nothing in it is removed. A cache made before the tag gets one on the next run "
            f"that writes to it (pytest with --t2i-cache-dir={root}); or check the path")


def _record_blocks(entry: Entry) -> int:
    """Disk bytes of an image's index record (removed with it)."""
    if entry.kind != "images" or not entry.key:
        return 0
    try:
        return _blocks(os.lstat(index_path(entry.path.parents[2], entry.key)))
    except OSError:  # an image from before the index
        return 0


def _remove(cache: Cache, entry: Entry, dry_run: bool) -> bool:
    """Remove one entry under its key's claim; False when another process holds the claim."""
    claim = cache.claim(entry.key) if entry.key else None
    if entry.key and claim is None:
        return False
    try:
        if not dry_run:
            assert cache.root is not None
            if not inside(entry.path.parent, cache.root):  # a folder swapped for a link
                return True
            if _is_folder(entry.path):
                shutil.rmtree(entry.path, ignore_errors=True)  # unlinks links, never follows
            else:
                paths = [entry.path]
                if entry.kind == "images" and entry.key:
                    paths.append(index_path(entry.path.parents[2], entry.key))
                for path in paths:
                    if _is_regular(path):  # gone (another prune), or no file this cache wrote
                        try:
                            os.unlink(path)
                        except FileNotFoundError:
                            pass  # another prune was first
        return True
    finally:
        if claim is not None:
            claim.release()


def parse_size(text: str) -> int:
    """``500M``, ``2G``, ``1.5GiB``, ``300k`` or plain bytes (K, M, G, T are powers of 1024)."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size; use bytes or a number with K, M, G or T "
                         f"(powers of 1024), e.g. 500M or 2G")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * _UNITS[unit])


def human_size(size: int) -> str:
    """Bytes for people: ``1.4 GiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
