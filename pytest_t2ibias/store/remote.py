"""A shared second tier behind the local cache directory, at any fsspec URL.

``--t2i-cache-remote=s3://bucket/t2ibias`` (or ``gs://``, ``az://``, ``file:///shared/...``,
any protocol fsspec and its plugins know): an entry missing locally is looked for there and
copied in; every entry written locally is also written there. The local directory stays the
working copy (claims, quarantine, atomic writes are local), so a slow or failing store costs
at most a warning: the run goes on with the local cache, and nothing is lost. Entries are
content-addressed, so two machines writing one key write the same bytes.
"""

from __future__ import annotations

import warnings
from typing import Any


class RemoteCacheWarning(UserWarning):
    """The remote tier failed; the run goes on with the local cache only."""


class RemoteCache:
    def __init__(self, url: str) -> None:
        try:
            import fsspec
        except ImportError as exc:  # fsspec comes with huggingface_hub; say so if it is gone
            raise ValueError(f"--t2i-cache-remote={url}: needs fsspec "
                             f"(pip install 'pytest-t2ibias[remote]')") from exc
        self.url = url
        self.fs, self.root = fsspec.core.url_to_fs(url)
        self.root = self.root.rstrip("/")
        self.failed: str | None = None
        self.fetched = 0
        self.pushed = 0

    def fetch(self, relative: str, limit: int) -> bytes | None:
        """The entry's bytes, or None when the store lacks it (or has failed). Read through
        one guarded path: a regular file of at most ``limit`` bytes; anything else there (a
        FIFO, a link to ``/dev/zero``, a folder, a huge file) is refused unread, with a
        warning, and counts as absent."""
        if self.failed:
            return None
        path = f"{self.root}/{relative}"
        try:
            payload = self._read_bounded(path, limit)
        except FileNotFoundError:
            return None
        except ValueError as exc:  # no entry this cache wrote: skip it, keep the tier
            warnings.warn(RemoteCacheWarning(f"remote cache {self.url}: {relative} refused "
                                             f"({exc}); computed here instead"), stacklevel=3)
            return None
        except Exception as exc:  # any store error: warn once, go local
            self._fail(exc)
            return None
        self.fetched += 1
        return payload

    def _read_bounded(self, path: str, limit: int) -> bytes:
        from fsspec.implementations.local import LocalFileSystem

        from .._files import read_bounded

        if isinstance(self.fs, LocalFileSystem):  # the open file checked, never a link's
            return read_bounded(path, limit, follow_links=False)
        info = self.fs.info(path)
        if info.get("type") != "file":
            raise ValueError(f"not a file ({info.get('type')})")
        if (info.get("size") or 0) > limit:
            raise ValueError(f"{info['size']:,} bytes, more than the {limit:,} it may take")
        with self.fs.open(path, "rb") as handle:
            payload: bytes = handle.read(limit + 1)
        if len(payload) > limit:
            raise ValueError(f"more than the {limit:,} bytes it may take")
        return payload

    def push(self, relative: str, payload: bytes) -> None:
        if self.failed:
            return
        path = f"{self.root}/{relative}"
        try:
            self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
            self.fs.pipe_file(path, payload)
        except Exception as exc:
            self._fail(exc)
            return
        self.pushed += 1

    def _fail(self, exc: Any) -> None:
        self.failed = f"{type(exc).__name__}: {exc}"
        warnings.warn(RemoteCacheWarning(
            f"remote cache {self.url} failed ({self.failed}); going on with the local cache "
            f"only for the rest of this run"), stacklevel=3)
