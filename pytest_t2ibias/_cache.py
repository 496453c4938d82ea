"""Content-addressed disk cache for generated images and scored answers.

Keys are hashes of everything that determines the value (see ``image_key``/``answer_key``),
so a cached entry is never stale: change the weights, steps, seed or prompt and the key
changes. Writes are atomic (temp file + ``os.replace``) under a per-key file lock, so
pytest-xdist workers can share one directory. A corrupt entry is moved aside to
``corrupt/`` (never deleted) and recomputed.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import filelock
from PIL import Image, PngImagePlugin

from ._types import ImageRequest

log = logging.getLogger("pytest_t2ibias.cache")

CACHE_VERSION = 1
LOCK_WAIT_LOG_SECONDS = 10.0
LOCK_GIVE_UP_SECONDS = 600.0


class CacheWarning(UserWarning):
    """A cache entry could not be read; it was moved aside and will be recomputed."""


def _hash(*parts: Any) -> str:
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def image_key(generator_fingerprint: str, request: ImageRequest) -> str:
    """Model fingerprint (weights, pipeline, scheduler, steps, guidance, size, dtype) +
    prompt + seed + index."""
    return _hash("image", CACHE_VERSION, generator_fingerprint, request.prompt, request.seed,
                 request.index)


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


def content_hash(image: Image.Image) -> str:
    """Hash of the decoded pixels, so an image hashes the same before and after a PNG trip."""
    rgb = image.convert("RGB")
    digest = hashlib.sha256(f"{rgb.size[0]}x{rgb.size[1]}:".encode())
    digest.update(rgb.tobytes())
    return digest.hexdigest()


class Cache:
    """A directory of ``images/ab/<key>.png`` and ``answers/ab/<key>.json``.

    ``read=False`` (``--t2i-refresh``) recomputes and overwrites; a ``Cache`` with
    ``root=None`` (``--t2i-no-cache``) neither reads nor writes.
    """

    def __init__(self, root: Path | None, *, read: bool = True) -> None:
        self.root = Path(root) if root is not None else None
        self.read = read and root is not None

    @property
    def enabled(self) -> bool:
        return self.root is not None

    def _path(self, kind: str, key: str, suffix: str) -> Path:
        assert self.root is not None
        return self.root / kind / key[:2] / f"{key}{suffix}"

    # -- images ---------------------------------------------------------------------------

    def get_image(self, key: str) -> Image.Image | None:
        if not self.read:
            return None
        path = self._path("images", key, ".png")
        if not path.exists():
            return None
        try:
            with Image.open(path) as opened:
                opened.load()
                return opened.convert("RGB")
        except (OSError, ValueError, SyntaxError) as exc:
            self._quarantine(path, exc)
            return None

    def put_image(self, key: str, image: Image.Image, request: ImageRequest) -> None:
        if not self.enabled:
            return
        info = PngImagePlugin.PngInfo()  # so a person opening the PNG sees where it came from
        info.add_text("prompt", request.prompt)
        info.add_text("seed", str(request.seed))
        info.add_text("index", str(request.index))
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="PNG", pnginfo=info)
        self._write(self._path("images", key, ".png"), buffer.getvalue())

    # -- answers --------------------------------------------------------------------------

    def get_answer(self, key: str) -> dict[str, Any] | None:
        if not self.read:
            return None
        path = self._path("answers", key, ".json")
        if not path.exists():
            return None
        try:
            record = json.loads(path.read_text())
            if not isinstance(record, dict) or "probabilities" not in record:
                raise ValueError("no 'probabilities' field")
            return record
        except (OSError, ValueError) as exc:
            self._quarantine(path, exc)
            return None

    def put_answer(self, key: str, record: dict[str, Any]) -> None:
        if self.enabled:
            self._write(self._path("answers", key, ".json"), json.dumps(record).encode())

    # -- mechanics ------------------------------------------------------------------------

    def _write(self, path: Path, payload: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with locked(path):
            write_atomically(path, payload)

    def _quarantine(self, path: Path, error: Exception) -> None:
        assert self.root is not None
        target = self.root / "corrupt" / f"{path.name}.{int(time.time() * 1000)}"
        target.parent.mkdir(parents=True, exist_ok=True)
        with locked(path):
            if path.exists():
                os.replace(path, target)
        warnings.warn(
            CacheWarning(f"corrupt cache entry {path} ({error}); moved to {target}, recomputing"),
            stacklevel=3,
        )


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


class locked:  # lower case: used like a function, ``with locked(path):``
    """A file lock on ``<path>.lock`` that logs while it waits instead of hanging silently."""

    def __init__(self, path: Path) -> None:
        self.lock = filelock.FileLock(str(path) + ".lock")

    def __enter__(self) -> None:
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
        self.lock.release()
