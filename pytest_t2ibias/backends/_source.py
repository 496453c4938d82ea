"""A model as the backends read it: resolved once from the id a hook was given.

A model id (``fixtures/toy-sd``, ``org/name``) used to be re-derived at each stop of a
generator's making: path or hub id decided again (``looks_like_path``) in the check before
loading and twice more in its error hints, its configs read again by the pipeline's own
sampling, the scheduler check and the fingerprint, its files fingerprinted once for the lazy
cache key and again after loading. A ``ModelSource`` decides path or hub id once, reads each
config once and fingerprints once; every backend that takes one reads its fields.

The values are the same as before by construction (the same ``looks_like_path``,
``config_file`` and ``model_fingerprint``), so cache keys do not change. The hooks
still take the id as a string (a user's ``conftest.py`` may wrap it, as ``degraded:``
does); the built-ins resolve it as they receive it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ._fingerprint import config_file, looks_like_path, model_fingerprint

NAME_MAX, PATH_MAX = 255, 4096
"""The longest file name and path Linux (and macOS, at 1024) opens, in bytes."""


def path_problem(text: str) -> str | None:
    """Why ``text`` cannot name a model (a NUL byte, a name or path longer than any file
    system opens), said before any ``stat`` raises ``ValueError``/``OSError`` on it; None
    when it can (issue #47)."""
    if "\0" in text:
        return "holds a NUL byte, which no path or model id can"
    size = len(os.fsencode(text))
    if size > PATH_MAX:
        return f"is {size} bytes long; a path is at most {PATH_MAX}"
    longest = max((len(os.fsencode(part)) for part in text.split("/")), default=0)
    if longest > NAME_MAX:
        return f"has a name {longest} bytes long; a file name is at most {NAME_MAX}"
    return None


@dataclass(frozen=True)
class ModelSource:
    """One model's source: the id as given, where it lives, its configs and fingerprint."""

    spec: str
    """The id as the option or hook gave it (what messages and ``--t2i-images`` compare)."""
    path: Path | None
    """The local folder it names (``~`` expanded), when it is a path; None: a hub id."""
    hub_id: str | None
    """The hub id it names; None: a path."""
    revision: str | None = None
    offline: bool = False
    _configs: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False,
                                                repr=False)
    """Each config file read once (a source is frozen; what it has read is memo, not state)."""

    @classmethod
    def of(cls, model: str | os.PathLike[str] | ModelSource, *, revision: str | None = None,
           offline: bool = False) -> ModelSource:
        """``model`` resolved (a source already is one: returned as it is, its configs and
        fingerprint read at most once whoever reads them)."""
        if isinstance(model, ModelSource):  # resolved already; another revision is another source
            return model if model.revision == revision or revision is None else cls.of(
                model.spec, revision=revision, offline=model.offline)
        spec = os.fspath(model)
        problem = path_problem(spec)
        if problem is not None:
            from ..errors import BackendError

            raise BackendError(f"model {spec[:80]!r}{'...' if len(spec) > 80 else ''} {problem}")
        if looks_like_path(model):
            return cls(spec, Path(spec).expanduser(), None, revision, offline)
        return cls(spec, None, spec, revision, offline)

    @property
    def folder(self) -> Path | None:
        """The local folder, when the path names an existing directory (what is hashed and
        searched for a diagnosis); None for a hub id or a path that is no folder."""
        return self.path if self.path is not None and self.path.is_dir() else None

    def config(self, name: str) -> dict[str, Any]:
        """A small JSON config (``model_index.json``, ``scheduler/scheduler_config.json``,
        ``config.json``) of the folder or hub repo, without loading weights; ``{}`` when it
        has none. Read once per source; a copy, so no reader changes what the fingerprint
        reads."""
        if name not in self._configs:
            self._configs[name] = config_file(self.spec, name, offline=self.offline,
                                              revision=self.revision)
        return dict(self._configs[name])

    @cached_property
    def fingerprint(self) -> str:
        """What identifies its weights (``model_fingerprint``): content hashes of a folder,
        the commit of a hub snapshot. Computed once per source."""
        return model_fingerprint(self.folder or self.spec, self.revision)

    def __fspath__(self) -> str:
        """A source passes where a path or id did (``from_pretrained``, messages)."""
        return self.spec

    def __str__(self) -> str:
        return self.spec
