"""Content-addressed disk cache for generated images and scored answers.

Keys are hashes of everything that determines the value (see ``image_key``/``answer_key``),
so a cached entry is never stale: change the weights, steps, seed or prompt and the key
changes. Writes are atomic (temp file + ``os.replace``), so pytest-xdist workers and
concurrent runs can share one directory; temp files a killed process left behind are swept
when the cache is first written. A process computing an entry holds a *claim* on its key
(a file lock under ``locks/``, released by the OS if the process dies), so others wait for
it instead of computing the same image twice.

Every read is verified. An image's key -> content hash is recorded in ``index/ab/<key>.sha256``
(written before the PNG), so an image altered and re-saved without its ``content_hash`` chunk,
two swapped entries or a replaced file no longer match; an answer carries its own ``hash`` (of
its probabilities and of the image, question, choices and judge it answers), and its
probabilities must be a whole row of numbers in [0, 1] summing to 1 (or all null: an
abstention). An entry that fails (unreadable, a decompression bomb, wrong-typed, tampered) is
moved aside to ``corrupt/`` (never deleted), with a ``CacheWarning`` naming it, and recomputed.

What the cache promises: integrity against accidents (a half-written file, a kill -9, a full
disk, a bit flip, a file from another entry or an older version) -- a served entry is one
this code wrote, for this key. Against a hand that edits the directory it promises detection
of anything the records do not vouch for: an entry without its record (an image whose index
record is gone, an answer without its ``hash``) is never trusted nor re-sealed, it is moved
aside and recomputed. Someone who rewrites an entry *and* its record consistently (the
hash is not a secret) is not detected: the directory is as trusted as the code reading it.
Only regular files of bounded size are read (``read_entry``): a symlink to ``/dev/zero``, a
FIFO or a device in the cache is caught like any corrupt entry, never read or waited on.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import filelock
import numpy as np
from PIL import Image, PngImagePlugin

from .._files import parse_json, read_bounded
from .._types import ImageRequest
from ..errors import CacheError

if TYPE_CHECKING:
    from .._settings import Settings
    from .remote import RemoteCache

log = logging.getLogger("pytest_t2ibias.cache")

CACHE_VERSION = 1
LOCK_WAIT_LOG_SECONDS = 10.0
LOCK_GIVE_UP_SECONDS = 600.0
STALE_TMP_SECONDS = 600.0
"""A temp file this old was left by a killed writer (a live one renames it within seconds)."""
CONTENT_HASH_TEXT = "content_hash"
"""PNG text chunk holding ``content_hash`` of the pixels, checked on every read."""
ANSWER_HASH_FIELD = "hash"
"""An answer entry's own hash: of every other field (``answer_hash``)."""
SUM_TOLERANCE = 0.01
"""How far a row of probabilities may sum from 1 (float16 judges round each to ~1e-3)."""
MAX_IMAGE_BYTES = 128 * 2**20
"""Largest PNG read: a ``budgets.MAX_IMAGE_SIDE`` square of noise (the largest image a plan
asks for) is about 50 MB; anything much larger is no entry this code wrote."""
MAX_ANSWER_BYTES = 2**20
"""Largest answer entry read: a row of at most 64 choices with its question and statements
is a few kB."""
MAX_RECORD_BYTES = 1024
"""Largest index record read: a key and a hash, 64 hex digits each."""
CACHEDIR_TAG = "CACHEDIR.TAG"
CACHEDIR_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"
"""The Cache Directory Tagging Specification's first line (https://bford.info/cachedir/):
backup tools skip a folder that has it, and ``cache prune`` touches only such a folder."""
CACHEDIR_TAG_TEXT = (f"{CACHEDIR_SIGNATURE}\n# This file is a cache directory tag created by "
                     f"pytest-t2ibias.\n# For information about cache directory tags, see:\n"
                     f"#\thttps://bford.info/cachedir/\n")


class CacheWarning(UserWarning):
    """A cache entry could not be read; it was moved aside and will be recomputed."""


def _hash(*parts: Any) -> str:
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def image_key(generator_fingerprint: str, request: ImageRequest) -> str:
    """Generator fingerprint (weights, pipeline, scheduler, default sampling, dtype) + prompt +
    seed + index + the request's sampling (steps, guidance, size, scheduler)."""
    return _hash("image", CACHE_VERSION, generator_fingerprint, request.prompt, request.seed,
                 request.index, request.sampling)


def answer_key(
    content_hash: str,
    answerer_fingerprint: str,
    question: str,
    choices: tuple[str, ...],
    statements: tuple[str, ...] | None,
) -> str:
    """Image content + extractor fingerprint + question + choices (+ statements)."""
    return _hash("answer", CACHE_VERSION, content_hash, answerer_fingerprint, question,
                 list(choices), list(statements) if statements else None)


def answer_claim_key(answerer_fingerprint: str, question: str, choices: tuple[str, ...],
                     statements: tuple[str, ...] | None, prompt: str) -> str:
    """The claim under which a judge's answers to a question about one prompt's images are
    computed (``RequestLayer.answers``): one lock for them all, not one an answer."""
    return _hash("answer-claim", CACHE_VERSION, answerer_fingerprint, question, list(choices),
                 list(statements) if statements else None, prompt)


def embedding_key(of: str, what: str, embedder_fingerprint: str) -> str:
    """An image's content hash (``of="image"``) or a text (``of="text"``) + the embedder."""
    return _hash("embedding", CACHE_VERSION, of, what, embedder_fingerprint)


def sealed(record: dict[str, Any]) -> bytes:
    """An answer (or embedding) entry's bytes: ``record`` with its ``hash``."""
    record = {k: v for k, v in record.items() if k != ANSWER_HASH_FIELD}
    record[ANSWER_HASH_FIELD] = answer_hash(record)
    return json.dumps(record).encode()


def answer_hash(record: dict[str, Any]) -> str:
    """Hash of an answer entry's fields except the hash itself: edit one and it no longer
    matches."""
    return _hash("answer-record", {k: v for k, v in record.items() if k != ANSWER_HASH_FIELD})


def as_rgb(image: Image.Image) -> Image.Image:
    """``image`` in RGB, itself when it is already (``convert`` copies it anyway: 1 to 4 ms a
    512-px image, on the caller's thread of every generated image)."""
    return image if image.mode == "RGB" else image.convert("RGB")


def content_hash(image: Image.Image) -> str:
    """Hash of the decoded pixels, so an image hashes the same before and after a PNG trip."""
    rgb = as_rgb(image)
    digest = hashlib.sha256(f"{rgb.size[0]}x{rgb.size[1]}:".encode())
    digest.update(rgb.tobytes())
    return digest.hexdigest()


class Cache:
    """A directory of ``images/ab/<key>.png`` and ``answers/ab/<key>.json``.

    ``read=False`` (``--t2i-refresh``) recomputes and overwrites what was there before it
    opened (entries other processes of the same run wrote since are read, so ``-n 4
    --t2i-refresh`` still computes each once); a ``Cache`` with ``root=None``
    (``--t2i-no-cache``) neither reads nor writes. Claims on keys being
    computed live in ``locks/ab/<key>.lock``, out of the entries' folders.
    """

    def __init__(self, root: Path | None, *, read: bool = True,
                 remote: RemoteCache | None = None) -> None:
        self.root = Path(root) if root is not None else None
        self.read = read and root is not None
        self.remote = remote if root is not None else None
        """A shared tier read through on a local miss and written behind every write."""
        self._opened_at = time.time()
        self._ready = False
        self._held: dict[str, filelock.BaseFileLock] = {}  # key -> lock of a claim we hold

    @classmethod
    def from_settings(cls, settings: Settings) -> Cache:
        """The cache the options describe: ``--t2i-cache-dir``, ``--t2i-no-cache``,
        ``--t2i-refresh`` and ``--t2i-cache-remote``."""
        remote = None
        if settings.cache_remote and not settings.no_cache:
            from .remote import RemoteCache

            try:
                remote = RemoteCache(settings.cache_remote)
            except (ValueError, ImportError, OSError) as exc:
                raise CacheError(f"--t2i-cache-remote={settings.cache_remote}: {exc}") from None
        return cls(None if settings.no_cache else settings.cache_dir, read=not settings.refresh,
                   remote=remote)

    @property
    def enabled(self) -> bool:
        return self.root is not None

    def _path(self, kind: str, key: str, suffix: str) -> Path:
        assert self.root is not None
        return self.root / kind / key[:2] / f"{key}{suffix}"

    # -- images ---------------------------------------------------------------------------

    def get_image(self, key: str, request: ImageRequest | None = None) -> Image.Image | None:
        """The image stored under ``key``, verified (see the module doc); None if absent or
        caught (then moved aside). ``request``: also check the PNG says it is this request's."""
        found = self.get_image_hashed(key, request)
        return found[0] if found is not None else None

    def get_image_hashed(self, key: str, request: ImageRequest | None = None
                         ) -> tuple[Image.Image, str] | None:
        """``get_image`` and the image's ``content_hash`` (computed to verify it anyway)."""
        path = self._path("images", key, ".png") if self.enabled else None
        seen = self._readable(path) if path is not None else None
        if path is None or seen is None:
            return None
        try:
            data = read_entry(path, MAX_IMAGE_BYTES)
            _refuse_bomb(data)
            with Image.open(io.BytesIO(data)) as opened:
                opened.load()
                text = dict(getattr(opened, "text", {}))
                image = opened.convert("RGB")
        except FileNotFoundError:  # another process moved it aside meanwhile
            return None
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            self._quarantine(key, path, exc, seen)
            return None
        actual = content_hash(image)
        problem = _image_problem(actual, self._recorded_hash(key), text, request)
        if problem is not None:
            self._quarantine(key, path, ValueError(problem), seen)
            return None
        return image, actual

    def put_image(self, key: str, image: Image.Image, request: ImageRequest,
                  image_hash: str | None = None) -> None:
        """Store ``image`` (its ``content_hash``, if the caller has it, saves hashing again)."""
        if not self.enabled:
            return
        image = as_rgb(image)
        info = PngImagePlugin.PngInfo()  # so a person opening the PNG sees where it came from
        info.add_text("prompt", request.prompt)
        info.add_text("seed", str(request.seed))
        info.add_text("index", str(request.index))
        image_hash = image_hash or content_hash(image)
        info.add_text(CONTENT_HASH_TEXT, image_hash)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", pnginfo=info)
        # the record first: a reader that sees the new PNG sees its record too
        self._write(self._record_path(key), record_text(key, image_hash))
        self._write(self._path("images", key, ".png"), buffer.getvalue())

    def _record_path(self, key: str) -> Path:
        assert self.root is not None
        return index_path(self.root, key)

    def _recorded_hash(self, key: str) -> str | None:
        """The content hash recorded for image ``key`` (here, else in the remote tier); None
        when there is no record, "" when there is one that cannot be read or that is another
        key's (a swapped record: each names its key, ``record_text``)."""
        path = self._record_path(key)
        if not os.path.lexists(path) and self._fetch(path) is None:
            return None
        try:
            text = read_entry(path, MAX_RECORD_BYTES).decode("ascii")
        except FileNotFoundError:  # moved aside meanwhile
            return None
        except (OSError, ValueError):  # unreadable or no regular file: the image cannot match
            return ""
        named, _, recorded = text.strip().partition(" ")
        return recorded if named == key and recorded else ""

    # -- answers --------------------------------------------------------------------------

    def get_answer(self, key: str, expected: dict[str, Any] | None = None
                   ) -> dict[str, Any] | None:
        """The answer stored under ``key``, verified: its own hash, ``expected`` (the image's
        content hash, question, choices, statements and judge the key was made of) and its
        probabilities (``_check_answer``); None if absent or caught (then moved aside)."""
        path = self._path("answers", key, ".json") if self.enabled else None
        seen = self._readable(path) if path is not None else None
        if path is None or seen is None:
            return None
        try:
            record: dict[str, Any] = parse_json(read_entry(path, MAX_ANSWER_BYTES))
            _check_answer(record, expected or {})
        except FileNotFoundError:  # another process moved it aside meanwhile
            return None
        except (OSError, ValueError) as exc:
            self._quarantine(key, path, exc, seen)
            return None
        return record

    def put_answer(self, key: str, record: dict[str, Any]) -> None:
        """Store ``record`` with its ``hash`` (``answer_hash``)."""
        self.put_answers([(key, record)])

    def put_answers(self, entries: list[tuple[str, dict[str, Any]]]) -> None:
        """Store a call's answers (``put_answer`` each) made durable together: one flush of
        the disk for the batch, not one ``fsync`` an answer (``write_atomically_together``)."""
        if self.enabled:
            self._write_together([(self._path("answers", key, ".json"), sealed(record))
                                  for key, record in entries])

    # -- embeddings (kept beside the answers: a judge's reading of an image) --------------

    def get_embedding(self, key: str, expected: dict[str, Any]) -> np.ndarray | None:
        """The embedding stored under ``key``, verified as an answer is: its own hash, the
        image (or text) and embedder ``expected``, and a vector of finite numbers; None if
        absent or caught (then moved aside)."""
        path = self._path("answers", key, ".json") if self.enabled else None
        seen = self._readable(path) if path is not None else None
        if path is None or seen is None:
            return None
        try:
            record = parse_json(read_entry(path, MAX_ANSWER_BYTES))
            vector = _check_embedding(record, expected)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            self._quarantine(key, path, exc, seen)
            return None
        return vector

    def put_embedding(self, key: str, record: dict[str, Any], vector: np.ndarray) -> None:
        """Store ``record`` + ``embedding`` with its ``hash``."""
        self.put_embeddings([(key, record, vector)])

    def put_embeddings(self, entries: list[tuple[str, dict[str, Any], np.ndarray]]) -> None:
        """Store a call's embeddings (``put_embedding`` each), durable together."""
        if self.enabled:
            self._write_together([
                (self._path("answers", key, ".json"),
                 sealed({**record, "embedding": [float(v) for v in vector]}))
                for key, record, vector in entries])

    def _readable(self, path: Path) -> os.stat_result | None:
        """The entry's stat if present and (under ``--t2i-refresh``) written after this cache
        was opened; the stat identifies the version read, should it need quarantining."""
        stat: os.stat_result | None
        try:
            stat = path.stat()
        except OSError:  # absent here: perhaps in the remote tier
            stat = self._fetch(path)
            if stat is None:
                return None
        return stat if self.read or stat.st_mtime >= self._opened_at else None

    def _fetch(self, path: Path) -> os.stat_result | None:
        """Copy an entry the remote tier has into the local directory (not under refresh)."""
        if self.remote is None or self.root is None or not self.read:  # no root: no remote
            return None
        relative = path.relative_to(self.root).as_posix()
        limits = {"images": MAX_IMAGE_BYTES, "answers": MAX_ANSWER_BYTES}
        payload = self.remote.fetch(relative, limits.get(relative.split("/")[0],
                                                         MAX_RECORD_BYTES))
        if payload is None:
            return None
        self._write(path, payload, push=False)
        return path.stat()

    # -- claims ---------------------------------------------------------------------------

    def claim(self, key: str) -> Claim | None:
        """Claim ``key`` for computing it, without waiting: None when another process has it.

        Release the claim after writing the entry; meanwhile other processes that want the
        entry wait in ``wait_for`` and then read it instead of computing it again.
        """
        if not self.enabled or key in self._held:  # ours already: never wait on ourselves
            return Claim(None)
        self.prepare()
        unplant(self._lock_path(key))
        # released by the request layer's writer thread, once the entry is written
        lock = filelock.FileLock(str(self._lock_path(key)), thread_local=False)
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            return None
        except OSError as exc:
            raise self._unusable(exc) from None
        self._held[key] = lock
        return Claim(lambda: self._release(key))

    def wait_for(self, key: str) -> None:
        """Block until no process holds a claim on ``key`` (logging while waiting)."""
        if not self.enabled:
            return
        try:
            with locked(self._lock_path(key), lock_file=self._lock_path(key)):
                pass
        except filelock.Timeout:
            log.warning("gave up waiting for %s after %.0f s; computing it here",
                        self._lock_path(key), LOCK_GIVE_UP_SECONDS)

    def _release(self, key: str) -> None:
        lock = self._held.pop(key, None)
        if lock is not None:
            release_removing(lock)

    def _lock_path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / "locks" / key[:2] / f"{key}.lock"

    # -- mechanics ------------------------------------------------------------------------

    def prepare(self) -> None:
        """Create the directory (once), check it is writable, sweep stale temp files.

        Called before the first write or claim, not on reads: a warm read-only cache can
        still serve a run that computes nothing.
        """
        if self._ready or self.root is None:
            return
        try:
            for folder in ("images", "answers", "locks"):
                (self.root / folder).mkdir(parents=True, exist_ok=True)
            probe = self.root / "locks" / f".probe-{os.getpid()}.tmp"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise self._unusable(exc) from None
        mark_as_cache(self.root)
        self._sweep_stale_tmp()
        self._ready = True

    def _unusable(self, exc: OSError) -> CacheError:
        reason = exc.strerror or str(exc)
        where = f": {exc.filename}" if exc.filename else ""
        return CacheError(
            f"cache directory {self.root} (--t2i-cache-dir) cannot be written ({reason}{where}); "
            f"point --t2i-cache-dir (or the ini key t2i_cache_dir) at a writable directory, "
            f"or run with --t2i-no-cache"
        )

    def _sweep_stale_tmp(self) -> None:
        """Remove temp files a killed writer left (``kill -9`` between write and rename)."""
        assert self.root is not None
        cutoff = time.time() - STALE_TMP_SECONDS
        for folder in ("images", "answers"):
            for tmp in (self.root / folder).glob("*/.*.tmp"):
                try:
                    if tmp.stat().st_mtime < cutoff:
                        tmp.unlink()
                        log.info("removed stale temp file %s", tmp)
                except OSError:
                    pass  # another process swept it first

    def _write(self, path: Path, payload: bytes, *, push: bool = True) -> None:
        self.prepare()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_dir() and not path.is_symlink():  # no entry: it would block every write
                self._set_aside(path)
            write_atomically(path, payload)
        except OSError as exc:
            raise self._unusable(exc) from None
        if push and self.remote is not None and self.root is not None:  # no root: no remote
            self.remote.push(path.relative_to(self.root).as_posix(), payload)

    def _write_together(self, entries: list[tuple[Path, bytes]]) -> None:
        """``_write`` for several entries, made durable with one flush of the disk."""
        if not entries:
            return
        self.prepare()
        try:
            for path, _ in entries:
                path.parent.mkdir(parents=True, exist_ok=True)
                if path.is_dir() and not path.is_symlink():
                    self._set_aside(path)
            write_atomically_together(entries)
        except OSError as exc:
            raise self._unusable(exc) from None
        if self.remote is not None:
            assert self.root is not None
            for path, payload in entries:
                self.remote.push(path.relative_to(self.root).as_posix(), payload)

    def _set_aside(self, path: Path) -> None:
        """Move a directory found where an entry belongs into ``corrupt/``, saying so."""
        assert self.root is not None
        target = self.root / "corrupt" / f"{path.name}.{time.time_ns()}"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        warnings.warn(CacheWarning(f"{path} was a directory, no cache entry; moved to "
                                   f"{target}"), stacklevel=4)

    def _quarantine(self, key: str, path: Path, error: Exception, seen: os.stat_result) -> None:
        """Move the bad version ``seen`` of an entry to ``corrupt/``, under its key's claim
        and only if it is still that version: a good entry another process wrote since is
        never the one moved."""
        assert self.root is not None
        target = self.root / "corrupt" / f"{path.name}.{int(time.time() * 1000)}"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if key in self._held:
                _move_if_unchanged(path, target, seen)
            else:
                self.prepare()
                with locked(self._lock_path(key), lock_file=self._lock_path(key)):
                    _move_if_unchanged(path, target, seen)
        except OSError as exc:
            raise self._unusable(exc) from None
        warnings.warn(
            CacheWarning(f"corrupt cache entry {path} ({error}); moved to {target}, recomputing"),
            stacklevel=3,
        )


def record_text(key: str, image_hash: str) -> bytes:
    """An index record: the key and its image's content hash, so a record moved to another
    key's name (with its PNG, chunks stripped) names the wrong key and is caught."""
    return f"{key} {image_hash}\n".encode("ascii")


def mark_as_cache(root: Path) -> None:
    """Write ``CACHEDIR.TAG`` in ``root`` if it has none (a cache made before the tag gets
    one on its next write); a tag that cannot be written costs only ``cache prune``."""
    tag = Path(root) / CACHEDIR_TAG
    if os.path.lexists(tag):
        return
    try:
        write_atomically(tag, CACHEDIR_TAG_TEXT.encode("ascii"))
    except OSError:
        pass


def is_marked_cache(root: Path) -> bool:
    """Whether ``root`` carries this cache's tag: a regular file (not a link) that starts
    with the tagging signature."""
    try:
        head = read_bounded(Path(root) / CACHEDIR_TAG, 4096, follow_links=False)
    except (OSError, ValueError):
        return False
    return head.startswith(CACHEDIR_SIGNATURE.encode("ascii"))


def index_path(root: Path, key: str) -> Path:
    """Where the content hash of image ``key`` is recorded: ``index/ab/<key>.sha256``."""
    return Path(root) / "index" / key[:2] / f"{key}.sha256"


class Claim:
    """The right to compute one entry; ``release()`` once it is written (or given up)."""

    def __init__(self, release: Callable[[], None] | None) -> None:
        self._release = release

    def release(self) -> None:
        if self._release is not None:
            self._release()
            self._release = None


def _move_if_unchanged(path: Path, target: Path, seen: os.stat_result) -> None:
    try:
        now = path.stat()
    except FileNotFoundError:
        return
    if (now.st_ino, now.st_mtime_ns, now.st_size) == (seen.st_ino, seen.st_mtime_ns, seen.st_size):
        os.replace(path, target)


def read_entry(path: Path, limit: int) -> bytes:
    """An entry's bytes through the one guarded read (``_files.read_bounded``): a regular
    file of at most ``limit`` bytes, never a link (nothing this cache writes is one)."""
    return read_bounded(path, limit, follow_links=False)


def _refuse_bomb(data: bytes) -> None:
    """Raise ``DecompressionBombError`` for a PNG whose header claims more pixels than PIL
    allows, before PIL allocates them (PIL itself only warns up to twice its limit)."""
    limit = Image.MAX_IMAGE_PIXELS
    header = data[:24]
    if limit is None or header[:8] != b"\x89PNG\r\n\x1a\n" or header[12:16] != b"IHDR":
        return
    width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
    if width * height > limit:
        raise Image.DecompressionBombError(
            f"a {width} x {height} image claims {width * height} pixels, over PIL's limit of "
            f"{limit} (a decompression bomb)")


def _image_problem(actual: str, recorded: str | None, text: dict[str, Any],
                   request: ImageRequest | None) -> str | None:
    """What is wrong with an image whose pixels hash to ``actual``; None if nothing."""
    stored = text.get(CONTENT_HASH_TEXT)
    if stored is not None and stored != actual:
        return "pixels do not match the stored content hash"
    if recorded is None:  # the PNG's own chunk cannot vouch for it: a forger writes that too
        return ("no index record for this key (index/ab/<key>.sha256): nothing this cache "
                "wrote vouches for the image")
    if not recorded:
        return ("the index record (index/ab/<key>.sha256) is unreadable, no file, or names "
                "another key: a swapped or planted record")
    if recorded != actual:
        return (f"pixels hash to {actual[:12]}, but the index records {recorded[:12]} for "
                f"this key: a replaced or swapped image")
    if request is not None:
        said = {"prompt": request.prompt, "seed": str(request.seed), "index": str(request.index)}
        for name, value in said.items():
            if name in text and text[name] != value:
                return (f"the PNG is the image of {name} {text[name][:60]!r}, not of "
                        f"{value[:60]!r}: a swapped image")
    return None


def _check_answer(record: Any, expected: dict[str, Any]) -> None:
    """A cached answer is ``{"probabilities": [...], ...}`` matching its own hash and
    ``expected``, its probabilities one row (see ``check_probabilities``); else ValueError."""
    if not isinstance(record, dict) or "probabilities" not in record:
        raise ValueError("no 'probabilities' field")
    if ANSWER_HASH_FIELD not in record:  # never sealed now: nothing vouches for what it says
        raise ValueError(f"no '{ANSWER_HASH_FIELD}' field: an entry this cache did not write, "
                         f"or one from before answers were sealed")
    if record[ANSWER_HASH_FIELD] != answer_hash(record):
        raise ValueError("the answer does not match its hash: edited since it was written")
    for field, value in expected.items():
        if record.get(field) != value:
            raise ValueError(f"the entry answers {field} {str(record.get(field))[:80]!r}, not "
                             f"{str(value)[:80]!r}: a swapped entry")
    choices = expected.get("choices", record.get("choices"))
    check_probabilities(record["probabilities"],
                        len(choices) if isinstance(choices, list) else None)


def _check_embedding(record: Any, expected: dict[str, Any]) -> np.ndarray:
    """A cached embedding: sealed, of ``expected``'s image or text and embedder, a vector of
    finite numbers; else ValueError."""
    if not isinstance(record, dict) or not isinstance(record.get("embedding"), list):
        raise ValueError("no 'embedding' list")
    if record.get(ANSWER_HASH_FIELD) != answer_hash(record):
        raise ValueError("the embedding does not match its hash: edited since it was written, "
                         "or never sealed")
    for field, value in expected.items():
        if record.get(field) != value:
            raise ValueError(f"the entry embeds {field} {str(record.get(field))[:80]!r}, not "
                             f"{str(value)[:80]!r}: a swapped entry")
    values = record["embedding"]
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                             and math.isfinite(v) for v in values):
        raise ValueError("'embedding' must be a non-empty list of finite numbers")
    return np.asarray(values, dtype=float)


def check_probabilities(probabilities: Any, n_choices: int | None = None) -> None:
    """One answer row: ``n_choices`` numbers in [0, 1] summing to 1 (within
    ``SUM_TOLERANCE``), or all null/NaN (the judge could not score the image: an
    abstention); else ValueError saying what is wrong."""
    def shown() -> str:
        return str(probabilities)[:80]

    if not isinstance(probabilities, (list, tuple)) or not all(
            p is None or (isinstance(p, (int, float)) and not isinstance(p, bool))
            for p in probabilities):
        raise ValueError(f"'probabilities' must be a list of numbers or nulls, got {shown()}")
    if n_choices is not None and len(probabilities) != n_choices:
        raise ValueError(f"'probabilities' has {len(probabilities)} values for {n_choices} "
                         f"choices: {shown()}")
    missing = [p is None or math.isnan(p) for p in probabilities]
    if all(missing):
        return  # an abstention
    if any(missing):
        raise ValueError(f"'probabilities' {shown()} mixes numbers and nulls (only a whole row "
                         f"may be null: an abstention)")
    if not all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in probabilities):
        raise ValueError(f"'probabilities' {shown()} are not all within [0, 1]")
    if abs(math.fsum(probabilities) - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"'probabilities' {shown()} sum to {math.fsum(probabilities):.4g}, "
                         f"not 1")


def write_atomically(path: Path, payload: bytes) -> None:
    """Temp file + ``os.replace``: readers see the old file or the new, never half of one.
    Hold ``locked(path)`` around it when other processes may write the same path."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomically_together(entries: list[tuple[Path, bytes]]) -> None:
    """``write_atomically`` for many small files, made durable together before any is
    renamed: each is still whole or absent after a crash, for one flush of the disk
    instead of one ``fsync`` a file (1,024 answers: 7.1 to 8.0 s of fsyncs on the
    development box's ext4, 0.3 to 1.1 s with one ``syncfs``; the figures in CHANGELOG.md)."""
    opened: list[int] = []  # closed exactly once: another thread may reuse the number
    written: list[tuple[str, Path]] = []
    try:
        for path, payload in entries:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            opened.append(fd)
            written.append((tmp, path))
            with memoryview(payload) as view:
                while view:
                    view = view[os.write(fd, view):]
        if not _sync_file_system(opened[0]):
            for fd in opened:
                os.fsync(fd)
        while opened:
            os.close(opened.pop())
        for tmp, path in written:
            os.replace(tmp, path)
    except BaseException:
        while opened:
            os.close(opened.pop())
        for tmp, _ in written:
            Path(tmp).unlink(missing_ok=True)  # the renamed ones are gone from here already
        raise


def _sync_file_system(fd: int) -> bool:
    """Flush the file system holding ``fd`` to the disk (Linux ``syncfs``: one journal
    commit for every file written to it); False where there is no such call."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):  # a libc without it
        return False
    if syncfs(fd) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    return True


class locked:  # lower case: used like a function, ``with locked(path):``
    """A file lock on ``<path>.lock`` (or ``lock_file``) that logs while it waits instead of
    hanging silently."""

    def __init__(self, path: Path, *, lock_file: Path | None = None) -> None:
        self.lock = filelock.FileLock(str(lock_file) if lock_file else str(path) + ".lock")

    def __enter__(self) -> None:
        unplant(Path(self.lock.lock_file))
        waited = 0.0
        while True:
            try:
                self.lock.acquire(timeout=LOCK_WAIT_LOG_SECONDS)
                return
            except filelock.Timeout:
                waited += LOCK_WAIT_LOG_SECONDS
                if waited >= LOCK_GIVE_UP_SECONDS:
                    raise
                log.warning("still waiting for lock %s (%.0f s)", self.lock.lock_file, waited)

    def __exit__(self, *exc_info: object) -> None:
        release_removing(self.lock)


def unplant(lock_file: Path) -> None:
    """Remove a symbolic link found where a lock file goes (this code never makes one): the
    link, never its target. filelock >= 3.20.1 refuses to open one (O_NOFOLLOW) instead of
    truncating its target, but a refused lock would stop every run; unlinked, the claim
    is taken as usual."""
    if os.path.islink(lock_file):
        try:
            os.unlink(lock_file)
        except FileNotFoundError:
            return
        warnings.warn(CacheWarning(f"{lock_file} was a symbolic link, no lock this cache made; "
                                   f"removed (its target untouched)"), stacklevel=3)


def release_removing(lock: filelock.BaseFileLock) -> None:
    """Release ``lock`` and leave no file behind (a run used to leave one a key: 40,450
    empty files, 160 MB of blocks). Unlinked while still held: a process that opened the
    old file and then gets the lock sees it unlinked and takes a new one (filelock checks
    ``st_nlink``), so two never hold one key."""
    try:
        Path(lock.lock_file).unlink(missing_ok=True)
    except OSError:  # a read-only or odd mount: the file stays, the lock still works
        pass
    lock.release()
