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

    def fetch(self, relative: str) -> bytes | None:
        """The entry's bytes, or None when the store lacks it (or has failed)."""
        if self.failed:
            return None
        try:
            payload = self.fs.cat_file(f"{self.root}/{relative}")
        except FileNotFoundError:
            return None
        except Exception as exc:  # any store error: warn once, go local
            self._fail(exc)
            return None
        self.fetched += 1
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
